/* an_result.h — the answer the analysis derives from a loaded run (an_run.h):
 * the trainer and its training thread, the steps and what each spent its
 * time on, the summary shares, the loader workers, the verdict and the
 * advice; and the stages that compute it, one file each:
 *
 *   which process trains, which thread drives the loop   an_trainer.c
 *   where a step is cut (markers, NVTX, inferred), warm-up an_steps.c
 *   where a step's time goes, the run's shares            an_attrib.c (an_attrib.h)
 *   what the loader workers do                            an_loader.c
 *   the verdict and the advice                            an_verdict.c, an_advice.c
 *                                                         (an_decide.h)
 *   the order of the stages, notes                        an_analyze.c
 *
 * Must never: print, or know about the command line.
 */
#ifndef AN_RESULT_H
#define AN_RESULT_H

#include <stddef.h>
#include <stdint.h>

#include "model/an_attrib.h"
#include "model/an_cputime.h"
#include "decide/an_decide.h"
#include "load/an_run.h"
#include "base/an_stats.h"

enum an_source { AN_SRC_NONE, AN_SRC_MARKERS, AN_SRC_NVTX, AN_SRC_INFERRED };

typedef struct an_step {
    an_stepv v;
    uint64_t num; /* marker number, else index */
    int warmup;
} an_step;

typedef struct an_worker {
    const an_proc *p;
    const an_thread *th; /* a loader thread of the trainer; NULL: the process p */
    double batches;
    int batches_from_markers;
    uint64_t active_ns; /* first to last event */
    uint64_t io_ns, meta_ns, idle_ns, cpu_ns;
    uint64_t bytes, reqs, faults;
    double MBps; /* bytes over active time */
    double io_MBps; /* bytes over time inside reads */
    /* measured per batch from the thread CPU samples (an_cputime.h); every
     * field -1 and time.measured 0 when the trace has none */
    an_loader_time time;
} an_worker;

/* A DataLoader's batches replayed in order (an_replay.h): the settings in
 * force, the hand-over, and what was replayed (an_replayed, an_decide.h:
 * what the decision reads); ok 0: not replayed (the other fields 0). */
typedef struct an_replay_result {
    int ok;
    int workers, prefetch;
    double recv_ms; /* the hand-over, median: a batch done to the trainer having it */
    an_replayed at;
} an_replay_result;

typedef struct an_result {
    const an_proc *trainer;
    const an_thread *thread;
    int no_gpu;
    int source; /* enum an_source */
    const char *source_detail; /* "step markers", "fetch markers", ... */
    an_step *steps;
    size_t nsteps, measured, warmup;
    int skip_auto;
    double step_ms_median, step_ms_p90, step_ms_mean, step_ms_min, step_ms_max;
    double share[AN_NSH];
    double median_ms[AN_NSH];
    double input_share; /* median over measured steps of idle_dw / step */
    double input_share_lo, input_share_hi; /* its step-to-step 95% interval (an_spread.c) */
    /* the training thread inside a batch fetch, GPU busy or idle (an_stepv.fetch):
     * its share of all measured step time and the median per step; has_fetch 0
     * when no fetch of that thread falls in a measured step */
    double fetch_share, fetch_median_ms;
    int has_fetch;
    int verdict;
    int borderline; /* the verdict's band edge lies inside input_share's interval */
    char verdict_text[320];
    /* loader */
    an_worker *workers;
    size_t nworkers;     /* worker processes (or threads) traced */
    size_t nworker_slots; /* distinct workers: processes that said they are worker W of
                           * loader L count once per (L, W), as DataLoader workers
                           * re-spawned each epoch are the same worker */
    double batch_ms; /* mean per-worker time per batch (an_worker_batch_ms) */
    uint64_t worker_bytes;
    double worker_MBps_total;
    /* the workers' reads of the same bytes (model/an_replica.c): the times
     * each positioned byte they read was read by distinct workers at about
     * the same time (1: each by one; 0 not measured), and the share of
     * their bytes that positioned reads returned */
    double read_copies, read_positioned;
    /* the storage's speed by the workers' positioned reads in flight, and their
     * mean count in flight (as an_decide_in.read_speed, read_inflight) */
    double read_speed[AN_READ_K + 1];
    double read_inflight;
    int cur_workers; /* from config, or workers seen; -1 unknown */
    int cur_pin_memory; /* 1/0, -1 unknown */
    int pin_effective;  /* pin_memory_effective: the iterator pins (1) or not (0: pin_memory=True
                         * without CUDA is a no-op); -1 not recorded */
    an_replay_result replay;
    /* advice */
    an_advice advice[AN_ADVICE_MAX];
    size_t nadvice;
    an_model_info model; /* what the model said (model.used 0: the older rule sized it) */
    char advice_none_why[640]; /* input-bound, no advice: why ("" otherwise) */
    /* notes for the reader ("GPU records arrived late", ...) */
    char notes[8][640];
    size_t nnotes;
    int cores;
    uint64_t late_ns;
    /* separate runs in the directory (an_separate_runs): 1 normally; the
     * roots of the others, whose processes are left out of the loader */
    size_t separate_runs;
    uint64_t other_roots[8];
    size_t nother_roots;
    /* measured from the thread CPU samples (an_cputime.h): the training
     * thread's wait cut into blocked and receiving, its CPU per step, and
     * the CPU of every other traced thread; fields -1 and .measured 0 when
     * the trace has no samples (format 1.2 and older) */
    an_trainer_time trainer_time;
    /* the loader pool as one: each part of one worker's batch, averaged over
     * the measured workers weighted by their batches (per_batch: the weakest
     * source among them); .measured 0 when none is */
    an_loader_time loader_time;
    an_other_time other_time;
    an_host_time host_time; /* the machine beside the run (1.4 traces) */
    /* call sites from sampled call stacks (an_callsites.h): set and freed by
     * the caller (cmd_report.c) after an_analyze; NULL when not computed */
    struct an_cs *callsites;
    /* report --price: per GPU-hour, set by the caller (cmd_report.c); 0 none */
    double price_per_gpu_hour;
    /* the job this result describes the limiting rank of (an_ranks.h): set
     * by an_job_analyze on its top result; NULL for a run without ranks */
    const struct an_job *job;
} an_result;

/* Analyse a loaded run. Returns 0, or -1 with a message in err when there is
 * nothing to report (no process, no steps). */
int an_analyze(const an_run *run, const an_opts *o, an_result *res, char *err, size_t errlen);
void an_result_free(an_result *res);

const char *an_source_name(int s);

/* ---- the stages of an_analyze ---------------------------------------------------- */

/* an_trainer.c: the process that trains (tiered choice, docs/report-schema.md
 * "Trainer"), never NULL when the run has a process; its training thread,
 * NULL when it has no thread. */
const an_proc *an_choose_trainer(const an_run *run);
const an_thread *an_choose_thread(const an_proc *p);
/* 1 when pid descends from anc through the traced processes' ppids. */
int an_descends(const an_run *run, uint64_t pid, uint64_t anc);
/* The traced process at the top of pid's chain of traced parents (pid
 * itself when its parent was not traced). */
uint64_t an_root_of(const an_run *run, uint64_t pid);
/* 1 when the process shows it trains (a trainer role, GPU activity, step,
 * fetch or NVTX step markers, CUDA calls) and is neither a loader worker nor
 * imported. */
int an_trains(const an_proc *p);
/* How many separate runs the directory holds: groups of traced process trees
 * (by root) that hold the trainer or a process that trains (an_trains),
 * trees being one run when they are ranks of one job
 * (each rank in one tree only, running at the same time). At least 1. The
 * roots of the trees not in the trainer's run go to others (up to
 * max_others, *nothers of them). */
size_t an_separate_runs(const an_run *run, const an_proc *trainer, uint64_t *others,
                        size_t max_others, size_t *nothers);
/* GPU busy time of a process (its timeline totals). */
uint64_t an_proc_gpu_busy(const an_proc *p);

/* an_steps.c: cut the training thread's candidates into res->steps (source,
 * source_detail set). Returns 0 (possibly no steps) or -1 out of memory. */
int an_cut_steps(an_result *res, const an_thread *t);
/* Mark the warm-up steps (skip >= 0: that many; -1: automatic) and set
 * res->warmup, res->measured, res->skip_auto; a note on a slow first step. */
void an_mark_warmup(an_result *res, int skip);
/* The measured steps' span: [*a, *b] from the first one's start to the
 * last one's end; *a UINT64_MAX and *b 0 when none is measured. */
void an_measured_window(const an_result *res, uint64_t *a, uint64_t *b);
/* Why res (of trainer res->trainer) has no step, and what to add: the
 * marker API (docs/python.md, "Marking your own steps"). */
void an_no_steps_message(const an_result *res, char *err, size_t errlen);

/* an_attrib.c: step time statistics, the shares and per-step medians of the
 * measured steps, and the input-bound share. */
void an_summarize(an_result *res);
/* an_spread.c: res->input_share_lo/hi from the measured steps (after
 * an_summarize). */
void an_input_share_interval(an_result *res);

/* an_loader.c: the loader workers of the trainer (processes, else threads of
 * the trainer that read files) and their per-batch cost; the DataLoader
 * settings in force (res->cur_workers, res->cur_pin_memory). Returns 0 or
 * -1 out of memory. */
int an_find_workers(const an_run *run, an_result *res);
/* One worker's time per batch (ms; -1 without batches): a worker process
 * that marks its batches (fetch_begin..fetch_end), their mean; else its
 * busy time (file I/O, metadata, CPU: active less idle) over its batches. */
double an_worker_batch_ms(const an_worker *w);
/* 1 when w is a worker process that marks its batches (fetch pairs). */
int an_worker_marks_batches(const an_worker *w);
/* an_cputime.c: the measured time of the loaders (workers[i].time,
 * loader_time), the trainer (trainer_time) and every other thread
 * (other_time) over the measured steps, from the threads' cpu samples;
 * left absent where the trace has none. After an_find_workers. */
void an_measure_time(const an_run *run, an_result *res);
/* A DataLoader configuration value of the process (lowest loader id that
 * has it), or NULL. */
const char *an_cfg_value(const an_proc *p, const char *key);
/* The DataLoader setting key as it applies to the run: sharing_strategy is
 * the worker processes' own where one recorded it (a worker sends the
 * tensors, by its own strategy: a spawned one keeps its default whatever
 * the trainer set), every key else the trainer's; NULL unknown. After
 * an_find_workers. */
const char *an_loader_cfg(const an_result *res, const char *key);
/* The DataLoader's prefetch_factor as it applies to the run: its
 * configuration's, else torch's default, 2. */
int an_loader_prefetch(const an_result *res);
/* 1 when the training thread makes its batches itself: measured so
 * (loader_time.in_thread), or, with no loader worker, most of its waits
 * for data are its own code between an update and the next forward
 * (docs/report-schema.md, "The loop's own batch making"). */
int an_own_making(const an_result *res);

#endif
