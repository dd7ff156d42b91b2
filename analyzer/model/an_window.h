/* an_window.h — a run in progress seen over its last seconds: per rank (or
 * the one trainer of a run without ranks) the steps that ended inside a
 * window of time, and what those steps spent their time on. What
 * `gpustarve top` and `gpustarve run --live` show (docs/report-outputs.md,
 * "Live view").
 *
 * Must never: read trace files (an_load.c did), print, or count a step (or
 * a marked batch) that ended outside the window.
 */
#ifndef AN_WINDOW_H
#define AN_WINDOW_H

#include <stddef.h>
#include <stdint.h>

#include "model/an_ranks.h"

typedef struct an_window_row {
    int32_t rank;         /* -1: a run without ranks */
    uint64_t pid;         /* the rank's trainer, 0 when it has none yet */
    const char *host;     /* points into the run */
    int ok;               /* the rank could be analysed (steps seen) */
    int running;          /* processes of the rank still running */
    size_t steps_total;   /* every step cut so far */
    size_t steps;         /* steps that ended inside the window */
    double span_s;        /* the window's length actually covered (s) */
    double steps_per_s;   /* steps / span_s; 0 when no step ended inside */
    /* shares of the window's step time, -1 when no step ended inside */
    double data_wait, gpu_busy, pageable;
    double batch_ms;      /* loader: mean over workers of each one's time per
                           * batch: over its batches that ended in the window
                           * for a worker process that marks its batches
                           * (fetch_begin/fetch_end), else over the run so far
                           * (an_worker_batch_ms); -1 when no worker is traced
                           * or none finished a batch in the window */
    int batch_run_so_far; /* batch_ms holds a worker's run-so-far figure */
} an_window_row;

/* The row of one analysed rank (res may be NULL: no steps yet): steps with
 * end in (end_ns - window_ns, end_ns]. */
void an_window_of(const an_result *res, uint64_t end_ns, uint64_t window_ns, an_window_row *row);

/* The rows of a job (an_job_analyze), one per rank, or one for a run
 * without ranks (job NULL: not analysable yet, one row without steps); at
 * most max, returns how many. now_ns is CLOCK_MONOTONIC of this host: a rank whose trainer ran on another host, or a run no process
 * of which still runs, ends its window at its own last step end. */
size_t an_window_rows(const an_run *run, const an_job *job, uint64_t now_ns, uint64_t window_ns,
                      const char *this_host, an_window_row *rows, size_t max);

#endif
