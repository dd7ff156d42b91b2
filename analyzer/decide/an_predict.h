/* an_predict.h — the prediction model behind the num_workers advice: a
 * small fluid simulation of one trainer and its loader workers sharing the
 * CPUs the process may use (docs/report-schema.md, "The model").
 *
 * A worker's batch is a blocking part (file I/O, page-fault I/O, sleep,
 * locks: it runs in parallel across workers, so more workers shrink it in
 * proportion) and a CPU part (it needs a core, so more workers shrink it
 * only as far as cores are free). Of the blocking part, the storage reads
 * (file I/O, page-fault I/O) may be served only so many at once: beyond
 * that, the workers reading share the storage's speed, and the step is
 * averaged over the phases their reads may keep (an_predict.c). The trainer's step is its own CPU (the
 * receive included), its off-CPU time outside the wait for a batch (a GPU
 * sync, a sleep) and that wait. Runnable threads share the cores in
 * proportion to a weight (max-min fair, none above one core): all alike,
 * or the trainer's threads weighted up, as the kernel favours threads
 * that sleep often; the caller fits the weight and the load of other
 * processes to the run-queue delays it measured. That load is either
 * threads that share the cores with the process's own one by one, or
 * groups that the kernel shares the cores with first (the process's
 * runnable threads then get one group's weight between them, spread over
 * the cores they run on).
 *
 * Must never: look at anything but its inputs, or loop without bound (the
 * simulation stops after a fixed number of steps and events).
 */
#ifndef AN_PREDICT_H
#define AN_PREDICT_H

typedef struct an_pred_in {
    double cpus;          /* cores the process may use (affinity, cgroup quota) */
    double ext_threads;   /* always-runnable threads of other processes sharing them */
    double ext_groups;    /* or (when ext_threads is 0) busy groups of other processes
                           * that the kernel shares the cores with first (autogroups:
                           * one per session; cgroups): each has the weight of this
                           * whole process on every core, spread over all of them */
    double other_cores;   /* steady CPU demand of the process's other threads */
    /* the trainer, per step */
    double t_cpu_ms;      /* the training thread's CPU (receiving the batch included) */
    double t_par_ms;      /* CPU of its intra-op threads, run beside its own */
    int t_par_threads;    /* how many of those */
    double t_off_ms;      /* off-CPU outside the wait for a batch (GPU sync, sleep) */
    /* one worker, per batch */
    double w_block_ms;    /* blocking part: I/O, page faults, sleep, locks */
    double w_store_ms;    /* of it, storage reads (file I/O, page-fault I/O) */
    double store_par;     /* storage reads served at once at their measured speed; more
                           * share it (k reading: each at store_par / k); 0: no limit */
    double w_cpu_ms;      /* CPU part */
    int workers;          /* 0: the training thread loads each batch itself */
    int prefetch;         /* batches each worker may hold ready (DataLoader: prefetch_factor) */
    double t_weight;      /* the trainer's threads' weight in sharing the cores (1: all
                           * alike; more: the scheduler favours them, as it favours
                           * threads that sleep often); 0 is taken as 1 */
} an_pred_in;

typedef struct an_pred_out {
    double step_ms;       /* steady step time */
    double runq_per_cpu;  /* run-queue delay over CPU time of the training thread and
                           * the workers, as the kernel would measure it */
    double t_runq_per_cpu, w_runq_per_cpu; /* the same of the training thread, of the
                                            * workers (0 when it has no CPU) */
    double ext_cores;     /* cores the other processes' threads got, on average */
} an_pred_out;

/* Simulate; returns 0, or -1 when the inputs cannot make a step (no time at
 * all, or no CPU for work that needs it). */
int an_predict(const an_pred_in *in, an_pred_out *out);

#endif
