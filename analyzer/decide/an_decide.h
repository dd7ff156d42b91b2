/* an_decide.h — where the verdict and the advice are decided.
 *
 * Input: an_decide_in, a handful of numbers measured by the rest of the
 * analysis (shares and step times of the measured steps, the loader's cost
 * per batch, the settings in force, the machine). It holds no pointer into
 * the trace model, so the rules can be read, tested and changed here alone:
 * a new measurement (per-thread CPU and run-queue time, the trainer's
 * receive time, cores from affinity and cgroup quota) becomes a field here,
 * filled by an_decide_in_build (an_analyze.c), and a rule below.
 *
 * Output: an_decision — the verdict, its one-line text, the advice entries
 * with their predictions, and notes that say why nothing (more) is advised.
 *
 * Every threshold and rule is written down in docs/report-schema.md; change
 * both together.
 *
 * Must never: read trace files, print, or divide by zero: every ratio checks
 * its denominator.
 */
#ifndef AN_DECIDE_H
#define AN_DECIDE_H

#include <stddef.h>

#include "decide/an_shares.h"

#define AN_READ_K 8 /* reads in flight told apart (an_decide_in.read_speed) */
#define AN_REPLAY_NPF 3 /* deeper prefetch factors replayed (model/an_replay.h) */
#define AN_REPLAY_NNW 4 /* more workers replayed: 1 to 4 more */

/* A DataLoader's batches replayed in order (model/an_replay.h), per step
 * of the stretches replayed: measured, replayed with the settings in force
 * (now_ms), with each deeper prefetch_factor pf[j] (pf_ms[j]), and with
 * nw[j] workers (nw_ms[j]); steps 0: not replayed (the other fields 0). */
typedef struct an_replayed {
    size_t steps;
    double measured_ms, now_ms;
    int npf, nnw;
    int pf[AN_REPLAY_NPF], nw[AN_REPLAY_NNW];
    double pf_ms[AN_REPLAY_NPF], nw_ms[AN_REPLAY_NNW];
} an_replayed;

typedef struct an_decide_in {
    /* the measured steps */
    int no_gpu;              /* no GPU activity: the training thread is what waits */
    size_t measured;         /* steps measured (warm-up left out) */
    double step_ms;          /* median step time */
    double step_mean_ms;     /* mean step time: the time per step the run took (the
                              * model's step, and its per-step parts below, are means) */
    double step_p90_ms;      /* 90th percentile step time */
    double gpu_bound_ms;     /* median of (step - data wait): a step whose batch is ready */
    double share[AN_NSH];    /* of all measured step time */
    double input_share;      /* data wait: the larger of the median per-step share and
                              * share[AN_SH_DATA_WAIT] (an_summarize says why) */
    double input_share_lo, input_share_hi; /* input_share's step-to-step 95% interval */
    double data_wait_ms;     /* median data wait per step */
    double fetch_ms;         /* median time per step in the training thread's batch
                              * fetches, GPU busy or idle; 0 when it has none */
    /* pageable host-to-device copies */
    double pageable_ms;      /* per measured step: GPU time in pageable H2D copies plus
                              * GPU idle inside pageable copy calls */
    double pageable_bytes_per_step; /* pageable H2D bytes over all steps, per step */
    double pageable_GBps;    /* bandwidth seen for them; 0 unknown */
    double pinned_GBps_seen; /* pinned H2D bandwidth seen in this run (>= 1 MiB copied);
                              * 0 none */
    /* the loader */
    size_t nworkers;         /* loader workers traced (processes, or threads of the trainer) */
    double batch_ms;         /* mean busy time per batch of one worker (file I/O, metadata, CPU) */
    double worker_MB_per_batch;      /* MB the workers read per batch; 0 unknown */
    double worker_best_in_read_MBps; /* fastest in-read rate of one worker */
    double read_copies;      /* workers that read each positioned byte at about the same
                              * time (model/an_replica.h): 1 none shared; 0 not measured */
    double read_positioned;  /* share of the workers' bytes those reads returned */
    /* the storage's speed by reads in flight (model/an_replica.h): bytes per ns the
     * workers' positioned reads made in all with k of them in flight (k from 1 to
     * AN_READ_K; 0: too few reads to say), and their mean count in flight while any
     * was (0: not measured) */
    double read_speed[AN_READ_K + 1];
    double read_inflight;
    int cur_workers;         /* num_workers in force; -1 unknown */
    int cur_pin_memory;      /* 1, 0, or -1 unknown */
    int waits_without_workers; /* the training thread waits on pipes/sockets more than it
                                * reads, yet no worker was traced */
    /* an imported PyTorch profiler trace (docs/import.md): no worker process
     * in it; workers_unseen: its DataLoader ran some (their count unknown) */
    int imported, workers_unseen;
    /* the machine */
    int cores;               /* CPU cores the workers may use; 0 unknown (an imported
                              * trace's machine, without --cores) */
    double cpus;             /* cores the process may use (affinity, cgroup quota, or
                              * --cores); 0 unknown */
    char cpus_source[96];    /* where cpus comes from, in words */
    /* measured time (an_cputime.h), for the model (an_predict.h); time_measured 0:
     * the trace has none (format 1.2 and older, imported) and the older rule
     * below sizes num_workers */
    int time_measured;
    double t_cpu_ms, t_runq_ms;  /* training thread per step (means): CPU, run-queue delay (-1) */
    double t_blocked_ms;         /* off-CPU waiting for the batch per step (runq excluded) */
    double t_socket_ms;          /* of it, inside waits on sockets (each tensor's hand-over
                                  * from a worker process under the file_descriptor
                                  * sharing strategy); 0 none or unknown */
    double t_receiving_ms;       /* its CPU inside the fetch per step */
    double t_par_cores;          /* the trainer's other threads (intra-op): cores */
    double w_io_ms, w_fault_ms, w_blocked_ms, w_cpu_ms, w_runq_ms; /* a worker's batch */
    double w_wall_ms;            /* its wall time (the parts' sum); 0 unknown */
    double w_storage_share;      /* of the bytes its hooked reads returned, the share it
                                  * made the storage read (task I/O accounting, readahead
                                  * included); -1 unknown */
    double other_cores;          /* every other traced thread: cores */
    double other_load_cores;     /* other processes' load on the CPUs it may run on,
                                  * measured (machine CPU time less the run's own,
                                  * an_host_time); -1 unknown */
    double host_cpus;            /* the CPUs that load was measured on; 0 unknown */
    double host_busy_cores;      /* of those, busy (every process, the run's included),
                                  * measured; -1 unknown */
    double other_load_worst_cores; /* other processes' load in the busiest window of the
                                    * measured steps (at least 0.5 s), measured as
                                    * other_load_cores is; -1 unknown */
    double peers_same_cores, peers_other_cores; /* other processes busy as `gpustarve run`
                                    * started the program, cores: in the run's scheduling
                                    * group and in others (the .peers file); -1 unknown */
    int loader_unseen;           /* the loader's threads were not told apart: its
                                  * batch is the other threads' time, one a step */
    int prefetch;                /* batches a worker may hold ready */
    an_replayed replay;          /* the DataLoader's batches replayed in order */
    /* the loader in the program's own terms (what the trace shows) */
    int loader_kind;             /* enum an_loader_kind */
    int interp_lock;             /* the trainer is a Python interpreter (the Python side's
                                  * markers): its threads share one interpreter lock */
    int own_making;              /* the training thread makes its batches itself, in its
                                  * own code (an_own_making): one iterator */
    int batch_size;              /* samples a batch (DataLoader batch_size); 0 unknown */
    double collate_ms;           /* the collate function's time per batch on the training
                                  * thread; -1 not measured */
    int persistent_workers;      /* the DataLoader's setting: 1, 0, -1 unknown */
    int dataset_iterable;        /* its dataset is an IterableDataset: 1, 0, -1 unknown */
    int sharing_fd;              /* torch.multiprocessing shares tensors by file descriptor
                                  * (the default): 1; by name (file_system): 0; -1 unknown;
                                  * the workers' own strategy where they said it */
    int workers_spawned;         /* the workers start by spawn or forkserver: each has a
                                  * torch.multiprocessing of its own */
    int restarts;                /* times the workers started again within the measured
                                  * steps (a new epoch's iterator without persistent_workers) */
    double restart_ms;           /* what those starts cost the steps they fell in, beyond
                                  * the median step, in all (ms); 0 none */
    char argv[400];              /* the trainer's command line, for a sweep command */
    double probe_read_MBps;  /* storage ceiling from 'gpustarve probe'; 0 unknown */
    double probe_h2d_pinned_GBps;
} an_decide_in;

enum an_verdict {
    AN_V_NONE,
    AN_V_HIGHLY,
    AN_V_MODERATELY,
    AN_V_NOT,
    AN_V_HOST,
};

enum {
    AN_ADV_NUM_WORKERS,
    AN_ADV_PIN_MEMORY,
    AN_ADV_PERSISTENT_WORKERS,
    AN_ADV_SHARING_STRATEGY,
    AN_ADV_PREFETCH_FACTOR,
};
#define AN_ADVICE_MAX 5 /* one entry a setting at most */

/* What runs the loader, as the trace shows it; it names the count the
 * advice sizes (an_advice_name). */
enum an_loader_kind {
    AN_LOADER_DATALOADER, /* a PyTorch DataLoader (its configuration was recorded) */
    AN_LOADER_DECLARED,   /* the program declared num_workers itself (marker API) */
    AN_LOADER_THREADS,    /* threads of the trainer, no configuration: a thread pool */
    AN_LOADER_PROCESSES,  /* processes, no configuration */
};

/* The statistic of the step a prediction is on: the model predicts the
 * mean step (the time per step), the older rule the median. */
enum an_base { AN_BASE_MEAN, AN_BASE_MEDIAN };

/* The workers read the same bytes: read_copies from AN_REPLICA_MIN, and
 * positioned reads returned AN_REPLICA_POSITIONED of their bytes or more;
 * then their reading grows with their count (an_workers_model.c). */
#define AN_REPLICA_MIN 1.5
#define AN_REPLICA_POSITIONED 0.5
static inline int an_decide_replicated(const an_decide_in *in)
{
    return in->read_copies >= AN_REPLICA_MIN && in->read_positioned >= AN_REPLICA_POSITIONED;
}

/* One loader thread at most: the training thread loads now (count cur 0)
 * and makes its batches in its own code (own_making: a generator, its own
 * iterator). RATIONALE: it can hand that making to one thread that runs
 * ahead of it; two threads calling one generator's next() stop with
 * "generator already executing", so more need the making cut into items
 * first, a change the model cannot see. The ladder (an_workers_model.c)
 * and a suggested sweep (an_decision.c) both stop there. */
static inline int an_decide_one_thread(const an_decide_in *in, int cur)
{
    return cur == 0 && in->own_making;
}

/* num_workers advice must save at least this share of a step */
#define AN_WORKERS_MIN_SAVING 0.02

typedef struct an_advice {
    int setting;
    int loader_kind; /* enum an_loader_kind: names a count (an_advice_name) */
    int has_value;   /* 0: value is not a number (storage is the wall) */
    long value;      /* num_workers: workers; pin_memory: 1 */
    double predicted_step_ms, predicted_saving_ms;
    int base;             /* enum an_base: the step both are on */
    double base_step_ms;  /* that step now: predicted + saving */
    /* the step if other processes' load stays at its worst
     * (other_load_worst_cores); 0: no range (the load was not measured) */
    double worst_step_ms;
    /* loader threads of a Python trainer: the step if the training
     * thread's CPU and the loading's hold the interpreter lock throughout
     * (run one at a time); 0: not such threads */
    double lock_step_ms;
    char why[512];
} an_advice;

/* What the model (an_predict.h) said, for the report: the cores, the load
 * of other processes and the trainer's weight it fitted to the measured
 * run-queue delays, the current setting modelled, and the step it predicts
 * for more workers with that fit and with the cores shared alike. */
#define AN_MODEL_NPRED 8
typedef struct an_model_info {
    int used;                /* 1 when the measured model sized num_workers */
    double cpus;
    char cpus_source[96];
    double ext_threads;      /* other processes' runnable threads inferred */
    double t_weight;         /* the trainer's weight in sharing the cores, fitted */
    double runq_per_cpu;     /* measured run-queue delay over CPU time; -1 unknown */
    double now_fit_ms, now_fair_ms; /* the current setting, modelled: fitted, all alike */
    double handoff_ms;       /* the trainer's wait for ready batches, per step (0 none) */
    int cur;
    size_t npred;
    double ext_groups;       /* or busy groups of other processes, fitted (the third way) */
    double other_load_cores; /* other processes' load measured (machine CPU time less
                              * the run's own), cores; -1 not measured */
    int load_bound;          /* 1: that load raised ext_threads or ext_groups above their fit
                              * to the run-queue delays (it bounds them from below) */
    int load_capped;         /* 1: it lowered one: the fit counted more cores than other
                              * processes took (an_workers_model.c OTHER_LOAD_SLACK) */
    int saturated;           /* 1: the machine had no idle CPU over the measured steps
                              * (an_workers_model.c SATURATED); -1 not measured */
    double store_ms;         /* storage reads of a worker's batch (file I/O, page-fault I/O) */
    double store_par;        /* storage reads the model serves at once at their measured
                              * speed (an_workers_model.c): as many as the run had at
                              * once on average, at least 1; 0: no limit (reads under
                              * STORE_MIN_SHARE of the batch) */
    struct { int workers; double fit_ms, fair_ms, grp_ms, worst_ms; } pred[AN_MODEL_NPRED];
    /* the range (an_choose.h): other processes' load at its worst and the
     * CPUs it left (-1 and 0: not measured); the cores free for the loader
     * (-1 unknown); a count the free cores held back (0 none) with its
     * step at the two ends of the range */
    double other_load_worst_cores, worst_cpus, free_cores;
    double peers_same_cores, peers_other_cores; /* an_decide_in's: busy at start */
    int other_load_yields; /* the worst load shares the CPUs thread by thread (busy
                            * processes in the run's scheduling group): 1; 0 it keeps
                            * its cores; -1 the worst was not measured */
    int held_back;
    double held_lo_ms, held_hi_ms;
    char sweep[600];         /* the command that would settle what the model cannot */
} an_model_info;

#define AN_DECIDE_NOTES 4
typedef struct an_decision {
    int verdict; /* enum an_verdict */
    int borderline; /* input_share's interval straddles the band edge of the verdict */
    char verdict_text[320];
    an_advice advice[AN_ADVICE_MAX];
    size_t nadvice;
    char notes[AN_DECIDE_NOTES][640];
    size_t nnotes;
    an_model_info model;
    /* input-bound with no advice: why nothing is advised ("" otherwise; a
     * copy of the note that says so, when there is one) */
    char none_why[640];
} an_decision;

/* The verdict and its text (an_verdict.c). */
void an_decide_verdict(const an_decide_in *in, an_decision *out);
/* The advice for out->verdict (an_advice.c): num_workers, then pin_memory. */
void an_decide_advice(const an_decide_in *in, an_decision *out);
/* The whole decision (an_advice.c): *out cleared, then the verdict, then
 * the advice for it. */
void an_decide(const an_decide_in *in, an_decision *out);
/* num_workers from measured time with the model (an_workers_model.c);
 * called by an_decide_advice when in->measured. */
void an_decide_workers_model(const an_decide_in *in, an_decision *out);
/* A note of the decision (an_decision.c). */
void an_decide_note(an_decision *out, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The setting an advice changes, in the program's own terms: "num_workers"
 * (a DataLoader, or a program that declared it), "loader_threads" (a
 * thread pool: its max_workers), "loader_processes", "pin_memory",
 * "persistent_workers" (an_decision.c). */
const char *an_advice_name(const an_advice *a);
/* The advice as the program would be set: "num_workers=3",
 * "loader_threads=4", "pin_memory=True", "persistent_workers=True". */
void an_advice_text(const an_advice *a, char *buf, size_t n);

/* An entry sizing the loaders' count (value; has_value 0: no number), the
 * step predicted with it on base (enum an_base) whose step now is
 * base_step_ms; the rest zero (an_decision.c). */
an_advice an_advice_count(const an_decide_in *in, int has_value, long value, double predicted_ms,
                          int base, double base_step_ms);
/* The name of the count of loaders of this kind: "num_workers",
 * "loader_threads", "loader_processes" (an_decision.c). */
const char *an_count_name(int loader_kind);
/* out->model.sweep: the command that tries the counts cur and n and one
 * past them (an_decision.c). */
void an_decide_sweep(const an_decide_in *in, an_decision *out, int cur, int n);

/* "HIGHLY_INPUT_BOUND", ... "NONE" (an_decision.c). */
const char *an_verdict_label(int v);

#endif
