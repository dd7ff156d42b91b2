/* an_ranks.h — a run as a job of ranks: which processes belong to which
 * rank (the rank each trace header carries, else its nearest traced
 * ancestor's), each rank analysed alone as if it were a run of its own (its
 * trainer, its steps, its own loader workers, its verdict and advice), then
 * the ranks' steps aligned by index to find the rank the others wait for
 * (docs/report-schema.md, "Ranks and the straggler").
 *
 * Must never: read trace files (an_load.c did), print, or let one rank's
 * loader workers count for another rank.
 */
#ifndef AN_RANKS_H
#define AN_RANKS_H

#include <stddef.h>
#include <stdint.h>

#include "model/an_collectives.h"
#include "model/an_result.h"

/* How a rank's wait for the other ranks was found. */
enum an_peer_src {
    AN_PEER_NONE,     /* no aligned step: nothing known */
    AN_PEER_MEASURED, /* its GPU's communication kernels (NCCL) in each step */
    AN_PEER_INFERRED, /* host time matched against the other ranks' data wait */
};

/* How a rank's clock was put on the job's clock (the reference rank's). */
enum an_clock_src {
    AN_CLOCK_SAME_HOST,   /* the reference rank's host: the same CLOCK_MONOTONIC */
    AN_CLOCK_REALTIME,    /* another host: the trace headers' realtime/monotonic pairs */
    AN_CLOCK_COLLECTIVES, /* another host: the pairs, refined on the collectives' ends */
    AN_CLOCK_STEP_ENDS,   /* another host: the pairs, refined on the aligned step ends
                           * (no collective kernel: gloo on the CPU) */
};

/* RATIONALE: realtime - monotonic moves on one machine only by what NTP
 * steps its realtime clock: two processes of one host name whose pairs lie
 * farther apart than this are on two machines that share a name. */
#define AN_SAME_HOST_PAIR_NS 1000000000ll

/* RATIONALE: a rank is named the straggler only when another rank waits
 * for the others at least this share of its step time: the same 5% that
 * makes a step MODERATELY input-bound (docs/report-schema.md, "Verdict"). */
#define AN_STRAGGLER_MIN_SHARE 0.05

typedef struct an_rank {
    int32_t rank, local_rank, world_size;
    const char *host; /* its trainer's host name (points into the run) */
    an_run view;      /* its processes: copies of the run's an_proc (pointers shared) */
    an_result res;    /* its analysis; valid when ok */
    int ok;
    char err[300]; /* why it could not be analysed, when !ok */
    /* over the aligned steps (an_job.aligned) */
    double step_ms;           /* median step time */
    double peer_wait_share;   /* time waiting for the other ranks / step time */
    double own_share;         /* 1 - peer_wait_share */
    int peer_src;             /* enum an_peer_src */
    size_t limits_steps;      /* aligned steps this rank limited */
    size_t roots;             /* its processes that no process of the rank started: 1,
                               * more when several runs or restarts of it were read */
    /* its clock on the job's: job time = its CLOCK_MONOTONIC + clock_offset_ns */
    int clock_src;            /* enum an_clock_src */
    int64_t clock_offset_ns;  /* clock_realtime_ns + clock_refined_ns */
    int64_t clock_realtime_ns; /* from the header pairs (0 on the reference's host) */
    int64_t clock_refined_ns;  /* median correction from the aligned step ends */
    uint64_t clock_spread_ns;  /* median distance of its step ends (or collective ends)
                                * from the reference's, after the correction */
    uint64_t clock_max_ns;     /* the largest such distance (collectives) */
    size_t clock_colls;        /* collectives its clock was compared on; 0: none */
    int clock_separate;        /* its host name is the reference's, its clock another
                                * machine's (AN_SAME_HOST_PAIR_NS) */
    /* from the matched collectives (an_collectives.h; job->coll.used), else 0 */
    uint64_t caused_ns;        /* the other ranks' waiting for it, measured aligned steps */
    uint64_t waited_ns;        /* its own waiting for the others */
    uint64_t *waited_for_ns;   /* by rank index: its waiting for each rank; NULL */
    size_t last_arrivals;      /* counted collectives it arrived last at, with a wait */
    int top_name;              /* index into the reference trainer's collective names of
                                * the collective it caused most waiting at; -1 */
    int duplicated;            /* roots > 1 running at the same time: the rank twice */
} an_rank;

typedef struct an_job {
    an_rank *ranks; /* by rank number */
    size_t nranks;
    size_t nhosts;
    size_t unranked;       /* processes of no rank (the launcher), left out */
    size_t aligned;        /* steps measured in every rank, aligned by index */
    double step_ms;        /* median over aligned steps of the slowest rank's step */
    int limiting;          /* index into ranks of the rank that limits the job; -1 */
    int clock_ref;         /* index of the rank whose clock is the job's; -1 */
    int straggler;         /* index of the straggler, or -1 (no rank waits for others) */
    uint64_t straggler_ns; /* the other ranks' waiting for it (aligned measured steps) */
    double straggler_share; /* straggler_ns over the other ranks' aligned step time */
    char why[1024];        /* why the straggler is one; when none, why the last arriver
                            * changes (coll.changes), else "" */
    an_coll_sum coll;      /* the collectives matched across the ranks */
    an_result whole;       /* the whole run's analysis, when it has no ranks */
    /* one job or several (an_jobs.h): how many the traces hold, which one this is (0..) */
    size_t jobs;
    int32_t job_index;
    size_t other_jobs;     /* processes of the other jobs, left out */
    int32_t world;         /* the ranks' largest world size; -1 unknown */
    int32_t *missing;      /* ranks of 0..world-1 with no process here */
    size_t nmissing;
    an_result *top;        /* what the report's top-level fields describe */
} an_job;

/* Analyse a loaded run: rank by rank when its processes carry ranks (any
 * rank that has steps), else the run as one. job->top is the limiting
 * rank's result, or the whole run's. When the ranked processes are of
 * several jobs (an_jobs.h), only the o->job-th is analysed, and without a
 * choice (o->job 0, or out of range) nothing is: -1 with the jobs named in
 * err. Returns 0, or -1 with a message in err when there is nothing to
 * report. The run must outlive the job. */
int an_job_analyze(const an_run *run, const an_opts *o, an_job *job, char *err, size_t errlen);
void an_job_free(an_job *job);

/* The alignment alone, over ranks whose res is filled (ok set): peer waits,
 * the limiting rank, the straggler and why (exposed for tests). */
void an_job_align(an_job *job);

/* The rank of process p of the run: its own, else its nearest traced
 * ancestor's on the same host; -1 when neither has one. */
int32_t an_proc_rank(const an_run *run, const an_proc *p);

/* What to add to process p's timestamps (its host's CLOCK_MONOTONIC) to put
 * them on the job's clock: its rank's clock_offset_ns, else (a process of no
 * rank: the launcher) that of a rank on its host; 0 when neither is known.
 * Every output that draws several hosts on one time axis goes through this
 * (docs/report-outputs.md). */
int64_t an_job_clock_offset(const an_job *job, const an_run *run, const an_proc *p);

#endif
