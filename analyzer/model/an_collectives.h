/* an_collectives.h — the collectives of a job's ranks matched across the
 * ranks, and what they say: each rank's clock on the job's (the ends of a
 * collective are one instant on every rank), who arrived last at each
 * collective and how long every other rank waited for it, the wait each
 * rank caused per step and over the job, the straggler (the rank whose
 * late arrivals cost the others most) and why it was late, measured on
 * its own timeline between its previous collective and the late one
 * (docs/report-schema.md, "Ranks and the straggler").
 *
 * Must never: read trace files, print, or name a straggler when no rank
 * caused more than half of the waiting (the last arriver changes: said so
 * instead).
 */
#ifndef AN_COLLECTIVES_H
#define AN_COLLECTIVES_H

#include <stddef.h>
#include <stdint.h>

/* What a late rank spent the time before a collective on, beyond what the
 * other ranks spent in the same interval (docs/report-schema.md). */
enum an_cause {
    AN_CAUSE_DATA_WAIT,     /* GPU idle, the training thread waiting for data */
    AN_CAUSE_HOST,          /* GPU idle, the training thread busy otherwise */
    AN_CAUSE_PAGEABLE_COPY, /* pageable host-to-device copies (the call or the GPU copy) */
    AN_CAUSE_COMPUTE,       /* GPU compute: more kernel time than the others (load imbalance) */
    AN_CAUSE_COMM,          /* other collectives (another communicator's) */
    AN_CAUSE_OTHER,         /* pinned and other copies, memsets */
    AN_NCAUSE,
};

/* The JSON keys of the causes ("data_wait", ...). */
extern const char *const an_cause_names[AN_NCAUSE];

typedef struct an_coll_sum {
    int used;             /* the collectives decided the waits and the straggler */
    char why_not[320];    /* when every rank has collectives but they were not used: why */
    size_t comms;         /* communicators (streams of collectives) matched on every rank */
    size_t matched;       /* collectives matched on every rank */
    size_t counted;       /* of them, ending in a measured aligned step */
    size_t names_differ;  /* matched collectives whose kernel names differ between ranks */
    uint64_t cost_ns;     /* the ranks' waiting in the counted collectives, summed */
    int straggler;        /* index into the job's ranks; -1 */
    double share;         /* the straggler's cost over the other ranks' aligned step time */
    int changes;          /* waiting of 5% or more, but no rank caused more than half */
    /* the straggler's late arrivals, measured on its own timeline */
    size_t late;          /* counted collectives it arrived last at (after a previous one) */
    size_t late_measured; /* of them, with its and another rank's interval split */
    double late_ms;       /* its lateness over them, against the other ranks' median arrival */
    double parts_ms[AN_NCAUSE]; /* its time per cause beyond the others' median, summed */
    double late_start_ms; /* how much later than the others it began the step, where the
                           * interval holds a step start, summed */
    int cause;            /* enum an_cause that explains the lateness; -1 unknown */
    /* per step index (the ranks' common steps): the rank index that caused
     * the most waiting in it (-1: none), the ns it caused, the step's total */
    int *step_rank;
    uint64_t *step_ns, *step_total;
    size_t nsteps;
} an_coll_sum;

struct an_job;

/* Match the collectives of the job's analysed ranks (their trainers'
 * communication kernels: the n-th of each communicator, in stream order,
 * on every rank), set each rank's clock from their ends, the waits, the
 * per-step and job straggler into job->coll and the ranks (an_ranks.h).
 * Leaves job->coll.used 0 (and the rest as an_job_align set it) when some
 * analysed rank ran no collective. Returns 0, or -1 out of memory. */
int an_job_collectives(struct an_job *job);
void an_coll_sum_free(an_coll_sum *s);

#endif
