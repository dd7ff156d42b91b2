/* an_samples.h — the log of one thread's own clocks that the pass keeps:
 * each `cpu` record (docs/trace-format.md, "Thread CPU samples") as a
 * cumulative sample of its CPU time, run-queue delay, major faults, context
 * switches and storage reads, beside what the pass counted of the thread so
 * far (hooked I/O time, waits, reads), and its batch fetches with their CPU
 * at both ends; and how to read the log at any time between two samples.
 * What the samples mean for a loader's batch or the trainer's wait is
 * model/an_cputime.h.
 *
 * Must never: grow without bound (periodic samples are thinned past
 * AN_CPU_PERIODIC_MAX; marker samples are per batch, like step candidates),
 * or scan more than AN_CPU_SCAN_MAX samples for one question.
 */
#ifndef AN_SAMPLES_H
#define AN_SAMPLES_H

#include <stddef.h>
#include <stdint.h>

#include "gs_trace.h"

/* RATIONALE: a collector's samples are out of order by a few at most, and
 * between two periodic samples (200 ms) a thread takes at most a few
 * thousand marker samples; scans stop here, so no trace, however made,
 * makes the analysis quadratic. */
#define AN_CPU_SCAN_MAX 4096u

/* One sample of a thread's clocks, cumulative values; -1: not measured. */
typedef struct an_cpu_sample {
    uint64_t ts;
    uint64_t cpu_ns;   /* CPU time (user + system) */
    int64_t runq_ns;   /* run-queue delay (periodic samples; marker samples of a
                        * collector that reads it there) */
    int64_t majflt;    /* major page faults */
    int64_t nvcsw, nivcsw;
    uint64_t io_ns;    /* the thread's hooked file I/O and metadata time so far */
    uint64_t wait_ns;  /* its hooked waits on pipes and sockets so far */
    uint64_t sock_ns;  /* of them, on sockets */
    uint64_t reads;    /* its hooked file reads so far (batches in a window are
                        * counted in proportion to them) */
    uint64_t rd_bytes; /* bytes those reads returned so far */
    int64_t storage;   /* bytes it had read from storage (page faults included) */
    uint8_t src;       /* GS_CPU_SRC_* */
    uint8_t marker;    /* the marker kind it stands at (fetch_begin, ...), 0 none */
    uint8_t mark;      /* that marker's class (gs_mark_class) */
} an_cpu_sample;

/* One fetch of a thread (a begin and end marker of one class and index,
 * each with its sample), with its CPU at both ends. */
typedef struct an_cpu_fetch {
    uint64_t t0, t1, cpu0, cpu1;
    uint64_t key;    /* the markers' index */
    uint32_t mark;   /* their class (gs_mark_class) */
    uint32_t loader; /* their loader (gs_mark_loader) */
} an_cpu_fetch;

/* RATIONALE: fetches of different classes nest (a collate inside a
 * batch, a wait for a pool's result inside a DataLoader's fetch, a memmap
 * that outlives the next one's creation); a few levels are real, past
 * this the oldest open one is dropped. */
#define AN_CPU_OPEN_MAX 8

/* RATIONALE: periodic samples come 5 a second per thread; past this many a
 * thread's periodic samples are thinned to every other one (cumulative
 * values, so sums over a window stay exact; only where a window may be cut
 * coarsens). Marker samples are per batch, like step candidates, and kept. */
#define AN_CPU_PERIODIC_MAX 4096

typedef struct an_cpu_log {
    an_cpu_sample *s;  /* by ts */
    size_t n, cap, nperiodic;
    an_cpu_fetch *f;   /* completed fetches, in the order they ended */
    size_t nf, capf;
    an_cpu_fetch open[AN_CPU_OPEN_MAX]; /* begun, not ended yet */
    unsigned nopen;
    an_cpu_fetch upd; /* the last update's step_end (optimizer, backward): the
                       * begin of a `forward` fetch_end's fetch; t0 0 none */
} an_cpu_log;

/* What the pass knows of the thread when its sample arrives (cumulative). */
typedef struct an_cpu_now {
    uint64_t io_ns;    /* hooked file I/O and metadata time */
    uint64_t wait_ns;  /* hooked waits on pipes and sockets */
    uint64_t reads;    /* hooked file reads */
    uint64_t rd_bytes; /* bytes they returned */
    int64_t faults;    /* largest major-fault count of its faults records, -1 none */
    uint64_t sock_ns;  /* of wait_ns, the waits on sockets */
} an_cpu_now;

struct gs_event;
/* A cpu record of the thread whose log is *lp (created at the first).
 * Returns 0, or -1 out of memory (the sample is lost, nothing else). */
int an_cpu_add(an_cpu_log **lp, const struct gs_event *e, const an_cpu_now *now);
/* A marker of the thread at ts, of class mark, index key and loader: a
 * marker sample of the same ts stands at it; a fetch_begin and the
 * fetch_end of the same class, index and loader, both with samples, become
 * a fetch; so do the last step_end of class optimizer or backward and the
 * next fetch_end of class forward (docs/trace-format.md). */
void an_cpu_marker(an_cpu_log *l, unsigned kind, uint64_t ts, unsigned mark, uint64_t key,
                   uint32_t loader);
/* Pieces of one batch making at most: its cuts (gs_trace.h), and one more. */
#define AN_CPU_PIECES_MAX (GS_PREP_SAMPLED_CUTS + 1)
/* The forward at ts whose span since the last update was cut by CUDA
 * calls into n pieces [piece[i][0], piece[i][1]): each a fetch of class
 * forward when the thread sampled its clocks at both ends of every piece
 * (a collector that samples around those calls, docs/trace-format.md);
 * returns 1 then, else 0 and none. The update begins no other fetch. */
int an_cpu_pieces(an_cpu_log *l, uint64_t ts, const uint64_t piece[][2], unsigned n);
/* The last update's step_end begins no fetch (its forward counted none). */
void an_cpu_forget_update(an_cpu_log *l);
void an_cpu_log_free(an_cpu_log *l);

/* ---- reading a log ------------------------------------------------------------------ */

/* The cumulative values a log can be asked for. */
enum an_cpu_value { AN_CV_CPU, AN_CV_RUNQ, AN_CV_STORAGE, AN_CV_MAJFLT, AN_CV_SOCK };

/* First sample with ts >= t. */
size_t an_cpu_lower(const an_cpu_log *l, uint64_t t);
/* Cumulative value v at time t, linear between the samples around t that
 * measured it; -1 when t is outside them (or l is NULL or empty). */
double an_cpu_value_at(const an_cpu_log *l, uint64_t t, int v);
/* v's growth over [a, b], clipped to where it was measured; -1 unknown.
 * *covered: the ns of [a, b] it covers. */
double an_cpu_delta(const an_cpu_log *l, uint64_t a, uint64_t b, int v, uint64_t *covered);

#endif
