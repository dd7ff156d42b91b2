/* an_run.h — what one streaming pass over a run's trace files keeps:
 * processes, threads, step-boundary candidates with their attribution
 * snapshots, loader counters; the options of the analysis; the hooks a
 * second pass hangs on it.
 *
 * Who fills what: an_load.c reads the directory and the files (an_run_load);
 * an_events.c turns each event into counters, timeline intervals and
 * candidates. The analysis (an_result.h) then reads only this.
 *
 * Memory rule: nothing here grows with the number of events. What grows is
 * per process, per thread, per step-boundary candidate (a few per step).
 *
 * Must never: print, or know about the command line (cmd_*.c do).
 */
#ifndef AN_RUN_H
#define AN_RUN_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "gs_ranges.h"
#include "load/an_colls.h"
#include "load/an_copies.h"
#include "load/an_samples.h"
#include "load/an_kernels.h"
#include "load/an_prep.h"
#include "load/an_timeline.h"

/* Step-boundary candidates, logged per thread with a snapshot at `t`. */
enum an_cand_type {
    AN_C_STEP_B,     /* step_begin marker */
    AN_C_STEP_E,     /* step_end marker */
    AN_C_FETCH_B,    /* fetch_begin marker */
    AN_C_FETCH_E,    /* fetch_end marker */
    AN_C_NVTX_B,     /* start of an outermost NVTX range matching --step-range */
    AN_C_NVTX_E,     /* its end */
    AN_C_BURST_WAIT, /* start of a burst of waits on pipes/sockets */
    AN_C_BURST_H2D,  /* start of a burst of host-to-device copy calls */
    AN_C_NVTX_FETCH, /* start of an outermost NVTX range matching --fetch-range: a loader
                      * iteration (num: its index on the thread) */
    AN_C_END,        /* the end of the file's events, on a thread with AN_C_NVTX_FETCH */
    AN_C_OPT_E,      /* step_end of class optimizer: an optimizer's step() returned */
    AN_C_BWD_E,      /* step_end of class backward: a backward() returned */
    AN_C_BURST_IO,   /* start of a burst of file reads, opens and mappings */
};

typedef struct an_cand {
    uint64_t t;
    uint64_t num;  /* marker: step/batch number; burst: end time */
    uint32_t type; /* enum an_cand_type */
    uint16_t have; /* snapshot delivered */
    uint16_t mark; /* a marker's class (gs_mark_class: plain or explicit) */
    uint32_t path; /* a file burst: the string id of its first call's path */
    an_snap snap;
} an_cand;

/* Spans a thread has open that end in a data wait when they close soon
 * enough (an_events.c): a file mapping until its munmap, a `load` marker
 * until its end. RATIONALE: a loader maps one batch's file at a time; a
 * few more are mappings kept open, never closed soon. */
#define AN_SPANS_OPEN 8
typedef struct an_span_open {
    uint64_t key; /* mapping address, or AN_SPAN_LOAD | the load marker's index */
    uint64_t ts;
} an_span_open;
#define AN_SPAN_LOAD (1ull << 63)

#define AN_NVTX_DEPTH 32

typedef struct an_nvtx_open {
    uint64_t ts;
    uint32_t domain;
    uint32_t flags; /* AN_SF_STEP / AN_SF_FETCH */
} an_nvtx_open;

typedef struct an_thread {
    uint32_t tid;
    int slot; /* timeline slot, -1 when beyond AN_TL_MAX_SLOTS */
    char name[32];
    /* evidence for choosing the training thread */
    uint64_t n_step_markers, n_fetch_markers, n_nvtx_steps, n_cuda_calls;
    uint64_t n_opt_markers, n_bwd_markers; /* of those steps: optimizer, backward classes */
    /* a pool thread's work items (`item` markers) and their time */
    uint64_t n_items, item_ns, item_ts;
    uint64_t n_collates, collate_ns, collate_ts; /* `collate` markers on this thread */
    an_span_open spans[AN_SPANS_OPEN];
    int nspans;
    uint64_t wait_ns, io_ns, meta_ns; /* pipe/socket waits, file reads, open/stat */
    uint64_t sock_ns;                 /* of wait_ns: the waits on sockets */
    uint64_t faults;                  /* largest cumulative count seen */
    uint64_t rd_bytes, rd_reqs;       /* file reads (threaded loaders) */
    uint64_t ld_first, ld_last;       /* the span of those reads and its work items
                                       * (`item` markers); 0: none */
    uint64_t first_ts, last_ts;       /* span of its I/O and waits */
    /* pass state */
    int fetch_depth;
    uint64_t fetch_ts;
    uint64_t n_waits; /* data waits counted so far (outermost fetches, short spans) */
    an_prep prep;     /* its own batch preparation since its last update (an_prep.h) */
    uint64_t fwd_waits; /* n_waits at its last `forward` marker (fwd_seen) */
    uint64_t n_prep;    /* of n_waits: its own batch making before a forward */
    int fwd_seen;
    int nvtx_depth, nvtx_overflow, nvtx_step_open;
    uint64_t n_nvtx_fetch; /* AN_C_NVTX_FETCH candidates logged */
    an_nvtx_open *nvtx; /* AN_NVTX_DEPTH entries, allocated at the first push */
    uint64_t burst_end[3];
    int64_t burst_idx[3]; /* candidate index of the current burst, -1 (waits, copies, file I/O) */
    /* candidates */
    an_cand *cand;
    size_t ncand, capcand;
    uint64_t rq_bytes;   /* bytes its file reads asked for (rd_bytes: what they got) */
    int faults_seen;     /* a faults record named it */
    struct an_cpu_log *cpu; /* its cpu samples (an_samples.h), NULL: none */
} an_thread;

typedef struct an_kv {
    uint32_t loader;
    char key[32];
    char value[64];
} an_kv;

typedef struct an_dev {
    uint32_t dev;
    char name[64];
} an_dev;

/* request-size histogram: bucket 0 counts reads that returned 0 bytes,
 * bucket k+1 reads of 2^k <= bytes < 2^(k+1) (the last bucket: 2^39 and up) */
#define AN_HIST 41

/* A loader worker's positioned file reads (the pread family: the offset
 * is in the record), for telling whether loader workers read the same
 * bytes (model/an_replica.c): each read as a key (the file's path, the
 * offset and the bytes it returned, hashed), its start, bytes and duration
 * (ns, at most UINT32_MAX: a read returns at most 2^31 bytes). Kept from
 * the process's role marker saying it is a loader worker on, at most
 * AN_PREADS_MAX a process (24 bytes each, 1.5 MiB); the reads past it (or
 * when memory or the path's string is missing) are counted, not kept. */
#define AN_PREADS_MAX (1u << 16)
typedef struct an_pread {
    uint64_t key, ts;
    uint32_t bytes, dur;
} an_pread;
typedef struct an_preads {
    an_pread *v;
    size_t n, cap;
    uint64_t past;         /* positioned reads counted, not kept */
    uint32_t last_str;     /* the path string id of the last key, and its hash */
    uint64_t last_hash;
} an_preads;

typedef struct an_proc {
    char *path;  /* trace file */
    char *file;  /* base name */
    char *argv;  /* argv joined with spaces */
    char *host;
    uint64_t pid, ppid;
    uint32_t exec_seq, flags;
    uint64_t mono_ns, real_ns; /* the header's clock pair */
    int32_t rank, local_rank, world_size; /* from the header, -1 unknown */
    int damaged;     /* stopped early: gs_err */
    uint64_t unread; /* bytes not read */
    uint64_t events;
    uint64_t first_ts, last_ts;
    int exited;
    uint64_t exit_status, exit_how; /* exit_how: enum gs_exit_how */
    /* loader-side counters (whole process) */
    uint64_t rd_bytes, rd_reqs, rd_ns; /* read family on files */
    uint64_t rd_first, rd_last;        /* the span of those reads; 0: none */
    uint64_t rq_bytes;                 /* bytes those reads asked for */
    uint64_t meta_reqs, meta_ns;       /* open/stat family */
    uint64_t wait_ns, wait_reqs;       /* waits on pipes/sockets (poll/select/epoll/read) */
    uint64_t hist[AN_HIST];
    uint64_t n_step_markers, n_fetch_markers, n_batch_markers;
    uint64_t n_py_markers; /* markers of the Python side's classes (not plain) */
    uint64_t batch_ns; /* a loader worker: its batches' fetch_begin..fetch_end time */
    uint64_t n_collates, collate_ns; /* a loader worker: its collate calls and their time */
    /* GPU and CUDA */
    uint64_t gpu_events, cuda_calls;
    uint64_t h2d_pageable_bytes, h2d_pageable_ns, h2d_pinned_bytes, h2d_pinned_ns;
    uint64_t host_pageable_bytes, host_pageable_ns, host_pageable_calls;
    uint64_t dropped, lost, gpu_dropped, notes, trace_stopped;
    uint64_t recovered; /* events recovered from the live file (ended abruptly) */
    int ended;          /* enum gs_end */
    int running;        /* still running when the run was read (an_trace_running) */
    int live_damaged;   /* its live file could not be read (gs_reader_totals) */
    uint64_t cupti_lost_ts; /* CUPTI left to another client here (a note), 0 */
    an_kstats kstats; /* GPU time per kernel name */
    an_colls colls;   /* its collectives (communication kernels), for the job's ranks */
    an_copy_kinds copy_kinds; /* host copies matched with CUPTI's record, disagreements */
    /* converted by `gpustarve import` from another profiler's trace (note
     * GS_NOTE_IMPORTED): no loader worker process, nothing of its machine */
    int imported;
    int workers_unseen; /* imported: the DataLoader ran worker processes (GS_NOTE_WORKERS_UNSEEN) */
    /* the CPUs it may use (the first `cpus` record, 1.3; 0 = not recorded):
     * its affinity mask, its cgroup quota in milli-CPUs (0 none), online */
    uint64_t cpus_affinity, cpus_quota_milli, cpus_online;
    int has_cpus;
    /* the machine's CPU time over the CPUs it may run on (`host_cpu`
     * records, 1.4), cumulative; thinned to every other past AN_HOST_MAX */
    struct an_host_sample { uint64_t ts, busy_ns, idle_ns; } *hcpu;
    size_t nhcpu, caphcpu;
    uint64_t host_cpus; /* CPUs those samples sum (the last record's) */
    /* other processes busy as `gpustarve run` started it, cores: in the
     * run's scheduling group and in others (the .peers file beside the
     * traces, an_peers.c, or an older trace's `gpustarve_peers` config
     * record, or those of the nearest traced parent that has them);
     * peers_known 0 when not known */
    double peers_same_cores, peers_other_cores;
    int peers_known;
    /* role marker */
    char role[32];
    int64_t worker_id, loader_id;
    an_kv *cfg;
    size_t ncfg;
    an_dev *devs;
    size_t ndevs;
    an_thread *th;
    size_t nth, capth;
    an_tl_stats tl;
    an_preads preads; /* its positioned file reads, for model/an_replica.c */
} an_proc;

/* 1 when the process said it is a loader worker (its role marker). */
static inline int an_is_worker_role(const an_proc *p)
{
    return strstr(p->role, "worker") != NULL;
}

typedef struct an_skipped {
    char *file;
    char *reason;
    uint64_t unread;
    int whole; /* nothing of the file could be used */
} an_skipped;

/* Hooks of a second pass over the files (report --perfetto / --html): the
 * same pass as the analysis, with each file, each event and the pieces of
 * one thread's timeline handed out as they are decoded and swept. Nothing
 * is kept for them. */
struct gs_event;
struct gs_reader;
enum { AN_HOOK_EVENTS_ALL = 1, AN_HOOK_EVENTS_SMALL_FILE = 2 };
typedef struct an_hooks {
    void *ctx;
    /* a file's header was read (p: pid, ppid, file, path, argv are set) */
    void (*on_file)(void *ctx, const an_proc *p, struct gs_reader *r);
    /* every event, in file order (strings: gs_reader_string(r, e->str));
     * when event_kinds is set, only events whose kind k has event_kinds[k]
     * nonzero (a GS_K_MAX-entry table): AN_HOOK_EVENTS_ALL every one,
     * AN_HOOK_EVENTS_SMALL_FILE only those on a file (fd_kind GS_FDK_FILE)
     * asking fewer than small_bytes bytes */
    void (*on_event)(void *ctx, const an_proc *p, struct gs_reader *r, const struct gs_event *e);
    const unsigned char *event_kinds;
    uint64_t small_bytes;
    /* the file is done (after the last piece) */
    void (*on_file_end)(void *ctx, const an_proc *p);
    /* the swept pieces (an_piece_fn) of thread piece_tid of the image
     * (piece_pid, piece_exec_seq), when on_piece is set */
    an_piece_fn on_piece;
    const char *piece_path; /* when set, the image is the file at this path */
    uint64_t piece_pid;
    uint32_t piece_exec_seq, piece_tid;
    /* Files read on several threads (an_opts.threads): file_new(ctx) makes
     * the context that one file's on_file, on_event and on_file_end get
     * (called on the thread reading that file, NULL: out of memory, the
     * file's hooks are not called); file_merge(ctx, fctx) takes each back
     * once its file and every file before it are read, one call at a time
     * (under a lock, on any of the reading threads), in the order one
     * thread reads the files. Hooks without file_new (and any with
     * on_piece) make the run read on one thread. */
    void *(*file_new)(void *ctx);
    void (*file_merge)(void *ctx, void *fctx);
} an_hooks;

/* Options of the analysis. */
typedef struct an_opts {
    gs_ranges ranges; /* the step and batch-wait range patterns */
    int skip;      /* warm-up steps to leave out; -1 = automatic */
    int cores;     /* CPU cores for loader workers; 0 = online CPUs - 1 */
    double probe_read_MBps;     /* 0 = unknown */
    double probe_h2d_pinned_GBps;
    double probe_h2d_pageable_GBps;
    uint64_t burst_gap_ns; /* waits/copies closer than this form one arrival */
    /* threads reading the trace files, one file per thread at a time
     * (an_load.c); 0 = the CPUs this process may run on, at most 16
     * (an_default_threads). The result does not depend on it. */
    int threads;
    /* progress: called about every second with bytes done / total */
    void (*progress)(void *ctx, uint64_t done, uint64_t total);
    void *progress_ctx;
    const an_hooks *hooks; /* NULL in the analysis pass */
    /* the traces hold several jobs (model/an_jobs.h): report the job-th (1..);
     * 0: refuse, naming them */
    int job;
} an_opts;

/* Compile the default or given patterns (case-insensitive, extended).
 * Returns 0, or -1 with *bad naming the pattern that failed. */
int an_opts_init(an_opts *o, const char *step_re, const char *fetch_re, const char **bad);
void an_opts_free(an_opts *o);

typedef struct an_run {
    char *dir;   /* the first (or only) run directory */
    char **dirs; /* every run directory read (report DIR...), ndirs of them */
    size_t ndirs;
    an_proc *procs;
    size_t nprocs, capprocs;
    an_skipped *skipped;
    size_t nskipped, capskipped;
    uint64_t events, bytes, bytes_done;
    /* the trace's own account over every process (gs_reader_totals) */
    uint64_t dropped, lost, recovered;
    size_t abrupt; /* processes that died (signal) or were killed */
    size_t running; /* processes still running: the run is in progress */
    size_t live_damaged; /* processes whose live file could not be read: events missing */
    size_t nfiles;
} an_run;

/* an_alive.c: 1 when the process pid that writes trace_path (written on
 * host) is running now on this host: it still maps its live file. */
int an_trace_running(const char *trace_path, uint64_t pid, const char *host);
/* The host name as the collector writes it into file names and headers
 * (preload/gs_output.c): given (a test's GPUSTARVE_TEST_HOST) or this
 * machine's, "localhost" when unreadable, each '/' as '_'. */
void an_host_name(const char *given, char *out, size_t n);

/* Read every *.gst file of dir in one streaming pass (the files spread over
 * o->threads threads; the run is the same as one thread makes). Returns 0,
 * or -1 with a message in err (dir unreadable, no trace files, out of
 * memory). Damaged and unreadable files are listed in run->skipped and the
 * rest is used. */
int an_run_load(an_run *run, const char *dir, const an_opts *o, char *err, size_t errlen);
/* The same over several directories (one job's hosts, each with its own
 * run directory) read as one run. */
int an_run_load_dirs(an_run *run, char *const *dirs, size_t ndirs, const an_opts *o, char *err,
                     size_t errlen);
/* Read one file into the run, on the calling thread (exposed for tests). */
int an_run_load_file(an_run *run, const char *path, const an_opts *o);
void an_run_free(an_run *run);
/* The threads a load with o->threads == 0 uses: the CPUs this process may
 * run on (its affinity mask), at least 1, at most 16. */
int an_default_threads(void);

#endif
