/* report_pass2.h — the report's second pass (report_pass2.c) and the state
 * it shares with what consumes it: the Perfetto writer (report_perfetto.c),
 * the HTML page's timelines (report_timeline.c) and the page itself
 * (report_html.c).
 *
 * Must never: grow with the number of events (only the Perfetto file does).
 */
#ifndef REPORT_PASS2_H
#define REPORT_PASS2_H

#include "base/an_index.h"
#include "gs_trace.h"
#include "model/an_model.h"
#include "base/out_buf.h"
#include "base/out_json.h"

/* ---- the second pass: Perfetto trace and the HTML page's timelines ------------------------
 *
 * Both need events, not just the per-step results, so they read the files a
 * second time through the same loader (an_load.c) with hooks: every event is
 * written to the Perfetto file as it is decoded, the training thread's
 * timeline pieces (an_timeline.c) become the starvation track, and the HTML
 * page keeps only what falls inside the few slowest steps, merged to what a
 * pixel can show. Nothing here grows with the number of events except the
 * Perfetto file itself. */

#define PF_BIN_NS 10000000ull       /* counter bins: 10 ms */
#define PF_PID_ANALYSIS 999999999ull /* pseudo-process: steps, starvation, counters */
#define PF_PID_GPU 1000000000ull     /* pseudo-processes: + 1000 x image + device */
#define PF_PID_HOST_STRIDE 4194304ull /* 2^22, Linux's largest pid + 1: a host's pids */
#define PF_MAX_HOSTS 238ull          /* hosts below PF_PID_ANALYSIS; more share */
#define PF_TID_RANK_STEPS 16ull     /* analysis tracks: + rank index, each rank's steps */
#define PF_MAX_THREADS 4096
#define PF_MAX_STREAMS 256           /* GPU stream tracks per image; the rest share one */
#define HX_MAX_ROWS 64               /* HTML timeline rows (threads, streams) */
#define PF_NVTX_DEPTH 32
#define PF_MAX_RANGES 4096
#define HX_WINDOWS 3                 /* the page shows the slowest 3 steps */
#define HX_MAX_ITEMS 40000           /* per window, after merging */
#define HX_MERGE 1500                /* merge gaps below 1/1500 of the window */

/* HTML item classes: the eight attribution classes (an_share_names order),
 * then the loader's own activity. */
enum { HX_READ = AN_NSH, HX_META, HX_WAIT, HX_NCLS };
static const char *const hx_cls_names[HX_NCLS] __attribute__((unused)) = {
    "gpu_compute", "gpu_comm", "gpu_h2d_pinned", "gpu_h2d_pageable", "gpu_copy_other",
    "idle_data_wait", "idle_pageable_copy", "idle_host", "file_read", "open_stat", "pipe_wait",
};

typedef struct pf_thread {
    uint32_t tid;
    uint64_t last_end; /* end of the latest leaf slice: later leaves never cross it */
    int nv;
    struct { uint64_t ts; uint32_t str, dom; } nv_stack[PF_NVTX_DEPTH];
} pf_thread;

typedef struct pf_stream {
    uint32_t dev;
    uint64_t stream;
    uint32_t tid;
    uint64_t last_end;
} pf_stream;

typedef struct pf_range {
    uint64_t id, ts;
    uint32_t tid;
    char name[96];
} pf_range;

typedef struct hx_item {
    uint64_t t0, t1;
    uint32_t row;
    uint32_t cls;
} hx_item;

typedef struct hx_row {
    int type; /* 0 training thread, 1 GPU stream, 2 loader worker, 3 other trainer thread */
    uint64_t a, b; /* type 1: dev, stream; 2: image index; 3: tid */
    char name[96];
} hx_row;

typedef struct hx_window {
    uint64_t t0, t1, tol;
    size_t step; /* index into res->steps */
    hx_item *it;
    size_t n, cap;
    size_t *last; /* per row: index of its latest item + 1, 0 none */
    size_t nlast;
    int full;
} hx_window;

typedef struct pass2 {
    const an_run *run;
    const an_result *res;
    const struct an_job *job; /* its ranks' clocks; NULL: one clock */
    uint64_t base;    /* ts origin, ns, on the job's clock */
    int64_t off;      /* the current file's offset to the job's clock (an_job_clock_offset) */
    int64_t top_off;  /* res's trainer's: its steps and pieces */
    /* Perfetto: the JSON writer over the output (NULL: no --perfetto) */
    gs_out *pf;
    gs_jw *pj;
    /* per file */
    const an_proc *p1; /* the image in the analysis pass */
    size_t img;        /* its index */
    int is_trainer, is_worker;
    uint64_t pid;
    uint64_t tpid; /* its Perfetto pid (track_pid) */
    uint32_t *hostk; /* per image of the run: its host's number (host_numbers) */
    pf_thread *th;
    size_t nth, capth;
    long last_th;
    an_index thx; /* tid -> index in th */
    pf_stream *st;
    size_t nst, capst;
    uint32_t gpu_named[8]; /* devices whose pseudo-process got a name, +1 */
    int ngpu_named;
    pf_range *rg;
    size_t nrg;
    int64_t rbin; /* read counter bin, -1 none */
    uint64_t rbytes;
    /* trainer pieces */
    int64_t gbin;
    uint64_t gbusy;
    int glast; /* last emitted busy %, -1 none */
    size_t pk; /* step cursor */
    double *step_bytes;
    /* HTML */
    int html;
    hx_window win[HX_WINDOWS];
    size_t nwin;
    hx_row *rows;
    size_t nrows, caprows;
} pass2;

/* A time of a host's CLOCK_MONOTONIC on the job's clock (0 stays 0: "none"). */
static inline uint64_t jt(int64_t off, uint64_t t)
{
    if (!t)
        return 0;
    const int64_t v = (int64_t)t + off;
    return v > 0 ? (uint64_t)v : 1;
}

static inline uint64_t rel(const pass2 *x, uint64_t t)
{
    return t > x->base ? t - x->base : 0;
}

/* A string of the file being read, or NULL for id 0. */
static inline const char *rep_p2_str(struct gs_reader *r, uint32_t id)
{
    return id ? gs_reader_string(r, id) : NULL;
}


/* Write the HTML page from the pass's windows (report_html.c). */
void rep_write_html(gs_out *o, const pass2 *x);

/* Read the files again for --perfetto FILE and/or --html FILE (either may be
 * NULL), every time on the job's clock (job: its ranks' clock offsets; NULL
 * when the run has one clock). Returns 0, or -1 with a message printed. */
int rep_second_pass(const char *dir, const an_opts *o1, const an_run *run, const an_result *res,
                    const struct an_job *job, const char *perfetto, const char *html);

#endif
