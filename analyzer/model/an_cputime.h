/* an_cputime.h — what the threads' own clocks say: each traced thread's CPU
 * time, run-queue delay (runnable, not running), major page faults and
 * context switches, from the `cpu` records (docs/trace-format.md, "Thread
 * CPU samples"), turned into the measured parts of a loader's batch and of
 * the trainer's wait for it (docs/report-schema.md, "Measured time").
 *
 * Responsible for: the result structs the verdict and the advice read
 * (the per-thread sample log they come from is load/an_samples.h):
 * an_loader_time (per loader worker process or loader thread), an_trainer_time
 * (the training thread inside and outside its batch fetches) and
 * an_other_time (every other traced thread).
 *
 * Absent is never zero: a field that was not measured (a trace of format
 * 1.2 or older has no `cpu` record; a kernel without schedstat gives no
 * run-queue delay) is -1, and each struct says with `measured` whether any
 * of it was.
 *
 * Must never: read trace files, print, or divide by zero.
 */
#ifndef AN_CPUTIME_H
#define AN_CPUTIME_H

#include <stddef.h>
#include <stdint.h>

/* How a loader's per-batch numbers were cut (an_loader_time.per_batch). */
enum an_per_batch {
    AN_PB_NONE = 0,     /* not measured: every field below is -1 */
    AN_PB_MARKERS = 1,  /* each batch is the time between two of the loader's own
                         * batch markers (step_end in a worker, C marker API):
                         * the *_ms fields are medians over batches */
    AN_PB_PERIODIC = 2, /* no batch markers: the loader's samples (every flush of the
                         * collector, GPUSTARVE_FLUSH_MS) summed over its active
                         * time and divided by its batches: the *_ms fields are
                         * means per batch */
    AN_PB_ITEMS = 3,    /* a pool thread's work items (`item` markers) cut at their
                         * own samples, summed over the measured steps and divided
                         * by its share of their batches: means per batch */
};

/* One loader (a worker process, or a loader thread of the trainer): where
 * the time of one batch goes. The five time parts sum to wall_ms (within
 * rounding) when they are means (AN_PB_PERIODIC); as medians over batches
 * (AN_PB_MARKERS) each is its own batch's, so they sum to it only nearly:
 *
 *   wall = io + fault + cpu + runq + blocked
 *
 * CPU spent inside hooked calls (copying page-cache data in read()) is
 * counted once: in io (docs/report-schema.md, "Measured time"). */
typedef struct an_loader_time {
    int measured;     /* 1 when cpu records of this loader were found */
    int per_batch;    /* enum an_per_batch */
    double batches;   /* batches this loader delivered (markers, else steps / loaders) */
    double wall_ms;   /* the loader's time per batch (active span / batches, or
                       * marker to marker) */
    double io_ms;     /* file I/O: wall time inside hooked read, open and stat calls */
    double fault_ms;  /* page-fault I/O: off-CPU time outside hooked calls in the
                       * sampling intervals where the thread took major faults
                       * (mmap datasets: numpy memmap, Arrow, safetensors) */
    double cpu_ms;    /* its own CPU (user + system) outside hooked calls */
    double runq_ms;   /* runnable but waiting for a CPU (schedstat run delay);
                       * -1 when the kernel gives none */
    double blocked_ms;/* other blocking: off-CPU outside hooked calls without major
                       * faults (sleep, locks, network, anything not hooked) */
    double read_bytes;      /* bytes actually read per batch (hooked reads' results) */
    double requested_bytes; /* bytes asked for per batch (>= read_bytes: a read past
                             * the end of a file asks for more than it gets) */
    double majflt;          /* major page faults per batch */
    double storage_bytes;   /* bytes it made the storage read per batch (read() misses
                             * and page faults, with readahead); -1 unknown */
    double fault_bytes;     /* bytes read through page faults per batch: its storage
                             * reads beyond what its hooked reads returned, in the
                             * intervals with major faults; at least majflt x the
                             * page size */
    double fault_MBps;      /* fault_bytes over fault_ms; -1 when fault_ms is 0 */
    double vol_switches;    /* voluntary context switches per batch (-1 unknown) */
    double invol_switches;  /* involuntary (preempted) per batch (-1 unknown) */
    double cpu_cores;       /* CPU time over active wall time: cores this loader keeps
                             * busy */
    int in_thread;          /* the training thread's own loading (no loader worker or
                             * thread): its waits for data cut as a loader's batch, one
                             * a step (an_trainer_time.c) */
    double units;           /* pool thread (AN_PB_ITEMS): its work items in the window */
    double collate_ms;      /* the collate function per batch (`collate` markers), wall
                             * time, mean; -1 not marked. Part of the batch, not
                             * another part: its time is in the five above */
    double collate_cpu_ms;  /* its CPU time */
    /* wall, io, fault, cpu, runq and blocked as means per batch, what the
     * model uses (it predicts the mean step); with markers the fields
     * above are medians, periodic ones are means already; -1 unknown */
    double wall_mean_ms, io_mean_ms, fault_mean_ms, cpu_mean_ms, runq_mean_ms, blocked_mean_ms;
} an_loader_time;

/* The training thread: its wait for each batch cut in two, and its own CPU.
 * Medians over the measured steps. */
typedef struct an_trainer_time {
    int measured;         /* 1 when the training thread has cpu samples at its fetch
                           * markers (fetch_begin/fetch_end) */
    double blocked_ms;    /* per step: asleep inside the fetch, waiting for the batch
                           * (worker queue, pipe, socket, futex): its wall time less
                           * its CPU and its run-queue delay there */
    double receiving_ms;  /* per step: its own CPU inside the fetch (unpickling,
                           * shared-memory rebuild, collate, pin-thread handoff;
                           * with no workers, making the batch) */
    double fetch_runq_ms; /* per step: runnable inside the fetch but not running
                           * (waiting for a core); estimated from the periodic
                           * samples' run-queue delay spread evenly over their
                           * interval; -1 unknown (then counted as blocked) */
    double cpu_ms;        /* per step: the training thread's CPU, whole step */
    double runq_ms;       /* per step: its run-queue delay, whole step; -1 unknown */
    double cpu_cores;     /* cpu_ms / step: 0 for a trainer asleep in a GPU sync,
                           * about 1 for CPU-only training */
    double proc_cpu_cores;/* every thread of the trainer process but the loader
                           * threads: training thread, intra-op threads, pin thread */
    /* the data-wait share split (fractions of measured step time; their sum is
     * share[AN_SH_DATA_WAIT]): each step's data wait cut in the proportion of
     * its fetches' blocked time, and receiving CPU plus run-queue delay (what
     * the trainer's own receiving needs: a core, then its time), to their
     * wall time. More workers shrink only the blocked share. Of the
     * receiving share, share_receiving_runq is run-queue delay: on a busy
     * machine mostly the wake-up after the batch arrived. */
    double share_blocked, share_receiving, share_receiving_runq;
    /* of the blocked share, off-CPU in sample intervals with major page
     * faults (a cold memory-mapped file read in the training thread) */
    double share_blocked_fault;
    double fetch_fault_ms; /* per step: that page-fault part of the wait, median */
    double majflt;         /* major page faults per step, whole step, mean */
    /* over the measured steps: its major faults, and the bytes they read
     * (storage reads beyond its hooked reads'); -1 unknown */
    double window_majflt, window_fault_bytes;
    /* the collate function on the training thread (no workers: `collate`
     * markers inside its fetches), per step: wall and CPU, means; -1 none */
    double collate_ms, collate_cpu_ms;
    /* the same four per step as means over the measured steps (-1 unknown):
     * they add up to the mean step, the time per step the run took, which
     * is what the model (docs/report-schema.md, "The model") reproduces and
     * predicts; the medians above do not add up when steps are uneven (a
     * pool of workers delivers its batches in bursts) */
    double blocked_mean_ms, receiving_mean_ms, cpu_mean_ms, runq_mean_ms;
    /* of the blocked time, per step: inside hooked waits on sockets (with
     * loader worker processes, torch's hand-over of each tensor's
     * shared-memory descriptor through a worker's resource-sharer thread),
     * median and mean; -1 unknown, 0 none */
    double socket_ms, socket_mean_ms;
} an_trainer_time;

/* Every traced thread that is neither the training thread nor a loader:
 * what it takes from the machine's cores over the measured steps. */
typedef struct an_other_time {
    int measured;
    size_t threads;   /* threads with samples */
    double cpu_cores; /* their CPU time over the measured wall time */
    double runq_ms_per_step; /* their run-queue delay per step; -1 unknown */
} an_other_time;

/* RATIONALE: the machine's counters tick every 10 ms per CPU; a window
 * shorter than this is mostly rounding */
#define AN_HOST_MIN_WINDOW_NS 500000000ull

/* Why the machine beside a run was not measured. */
typedef enum an_host_gap {
    AN_HOST_NO_RECORDS = 0, /* no `host_cpu` records: format 1.3 and older, or imported */
    AN_HOST_SHORT,          /* they cover under AN_HOST_MIN_WINDOW_NS of the measured steps */
    AN_HOST_PARTIAL,        /* they cover under half of the measured steps */
} an_host_gap;

/* The machine beside the run, over the measured steps (`host_cpu` records,
 * format 1.4): the cores every process of the machine kept busy on the CPUs
 * the trainer may run on, the run's own traced threads' share of them, and
 * the rest, other processes' load, measured rather than fitted
 * (docs/report-schema.md, "The model"). -1 and measured 0 when the trace
 * has no such records or they cover too little of the measured steps
 * (gap says which). */
typedef struct an_host_time {
    int measured;
    an_host_gap gap;    /* why not, when measured is 0 */
    double cpus;        /* CPUs the samples sum */
    double busy_cores;  /* busy (user, system, irq, steal) over the window */
    double own_cores;   /* every traced thread of the run: CPU over the window */
    double other_cores; /* busy_cores - own_cores, at least 0 */
    double window_s;    /* the measured window the samples cover (also when too short) */
} an_host_time;

/* an_trainer_time.c: the training thread's fields of res (trainer_time;
 * loader_time when the thread loads its batches itself) over the measured
 * steps. */
struct an_result;
void an_trainer_time_measure(struct an_result *res);

/* Every field -1, measured 0 (per_batch AN_PB_NONE): nothing measured. */
void an_loader_time_absent(an_loader_time *t);
void an_trainer_time_absent(an_trainer_time *t);
void an_other_time_absent(an_other_time *t);
void an_host_time_absent(an_host_time *t);

#endif
