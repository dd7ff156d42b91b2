/* an_samples.c — the per-thread log of clock samples (an_samples.h): kept
 * sorted by time as the pass adds them, thinned when long, and read at any
 * time between two samples.
 *
 * Must never: read trace files, print, or scan more than AN_CPU_SCAN_MAX
 * samples for one question.
 */
#include "load/an_samples.h"

#include <stdlib.h>
#include <string.h>

#include "base/an_grow.h"
#include "gs_trace.h"

/* Every other periodic sample goes (markers stay): the values are
 * cumulative, so what remains still sums exactly over any window. */
static void thin(an_cpu_log *l)
{
    size_t o = 0, k = 0;
    for (size_t i = 0; i < l->n; i++) {
        const int periodic = l->s[i].src == GS_CPU_SRC_PERIODIC;
        if (periodic && (k++ & 1) && i + 1 < l->n)
            continue;
        l->s[o++] = l->s[i];
    }
    l->n = o;
    l->nperiodic = 0;
    for (size_t i = 0; i < l->n; i++)
        l->nperiodic += l->s[i].src == GS_CPU_SRC_PERIODIC;
}

int an_cpu_add(an_cpu_log **lp, const gs_event *e, const an_cpu_now *now)
{
    an_cpu_log *l = *lp;
    if (!l) {
        l = calloc(1, sizeof *l);
        if (!l)
            return -1;
        *lp = l;
    }
    if (an_grow(&l->s, &l->cap, l->n + 1, sizeof *l->s, 64) < 0)
        return -1;
    const unsigned has = gs_cpu_has(e);
    /* a birth: before the thread existed, so before any of its events too,
     * whenever the writer put it: an_cpu_now's totals are 0 then (its
     * faults unknown, as in the thread's own samples without them) */
    static const an_cpu_now unborn = {.faults = -1};
    if (gs_cpu_source(e) == GS_CPU_SRC_BIRTH)
        now = &unborn;
    an_cpu_sample x;
    memset(&x, 0, sizeof x);
    x.ts = e->ts;
    x.cpu_ns = gs_cpu_ns(e);
    x.runq_ns = (has & GS_CPU_HAS_RUNQ) ? (int64_t)gs_cpu_runq_ns(e) : -1;
    x.majflt = (has & GS_CPU_HAS_FAULTS) ? (int64_t)gs_cpu_majflt(e) : now->faults;
    x.nvcsw = (has & GS_CPU_HAS_SWITCHES) ? (int64_t)gs_cpu_nvcsw(e) : -1;
    x.nivcsw = (has & GS_CPU_HAS_SWITCHES) ? (int64_t)gs_cpu_nivcsw(e) : -1;
    x.io_ns = now->io_ns;
    x.wait_ns = now->wait_ns;
    x.sock_ns = now->sock_ns;
    x.reads = now->reads;
    x.rd_bytes = now->rd_bytes;
    x.storage = (has & GS_CPU_HAS_STORAGE) ? (int64_t)gs_cpu_storage_bytes(e) : -1;
    x.src = (uint8_t)gs_cpu_source(e);
    /* a thread's records come in the order it finished them; a periodic
     * sample is taken after the events drained with it, so a few may
     * arrive later with earlier stamps: keep the log sorted by ts */
    size_t i = l->n;
    while (i > 0 && l->s[i - 1].ts > x.ts && l->n - i < AN_CPU_SCAN_MAX)
        i--;
    if (i > 0 && l->s[i - 1].ts > x.ts)
        return 0; /* far out of order: never in a collector's trace; ignored */
    memmove(&l->s[i + 1], &l->s[i], (l->n - i) * sizeof *l->s);
    l->s[i] = x;
    l->n++;
    if (x.src == GS_CPU_SRC_PERIODIC && ++l->nperiodic > AN_CPU_PERIODIC_MAX)
        thin(l);
    return 0;
}

void an_cpu_marker(an_cpu_log *l, unsigned kind, uint64_t ts, unsigned mark, uint64_t key,
                   uint32_t loader)
{
    if (!l || !l->n)
        return;
    an_cpu_sample *x = NULL;
    for (size_t i = l->n; i-- > 0 && l->s[i].ts >= ts && l->n - i <= AN_CPU_SCAN_MAX;)
        if (l->s[i].ts == ts && l->s[i].src == GS_CPU_SRC_MARKER && !l->s[i].marker) {
            x = &l->s[i];
            break;
        }
    if (!x)
        return;
    x->marker = (uint8_t)kind;
    x->mark = (uint8_t)mark;
    if (kind == GS_K_STEP_END && (mark == GS_MARK_OPTIMIZER || mark == GS_MARK_BACKWARD)) {
        memset(&l->upd, 0, sizeof l->upd);
        l->upd.t0 = ts;
        l->upd.cpu0 = x->cpu_ns;
        l->upd.key = key;
        l->upd.mark = GS_MARK_FORWARD;
        l->upd.loader = loader;
    } else if (kind == GS_K_FETCH_END && mark == GS_MARK_FORWARD) {
        an_cpu_fetch f = l->upd;
        l->upd.t0 = 0;
        if (!f.t0 || ts < f.t0 || x->cpu_ns < f.cpu0 ||
            an_grow(&l->f, &l->capf, l->nf + 1, sizeof *l->f, 64) < 0)
            return;
        f.t1 = ts;
        f.cpu1 = x->cpu_ns;
        l->f[l->nf++] = f;
    } else if (kind == GS_K_FETCH_BEGIN) {
        if (l->nopen == AN_CPU_OPEN_MAX) { /* the oldest open one goes */
            memmove(&l->open[0], &l->open[1], (AN_CPU_OPEN_MAX - 1) * sizeof l->open[0]);
            l->nopen--;
        }
        an_cpu_fetch *o = &l->open[l->nopen++];
        memset(o, 0, sizeof *o);
        o->t0 = ts;
        o->cpu0 = x->cpu_ns;
        o->key = key;
        o->mark = mark;
        o->loader = loader;
    } else if (kind == GS_K_FETCH_END) {
        unsigned j = l->nopen;
        while (j > 0 && (l->open[j - 1].mark != mark || l->open[j - 1].key != key ||
                         l->open[j - 1].loader != loader))
            j--;
        if (!j)
            return;
        an_cpu_fetch f = l->open[j - 1];
        memmove(&l->open[j - 1], &l->open[j], (l->nopen - j) * sizeof l->open[0]);
        l->nopen--;
        if (ts < f.t0 || x->cpu_ns < f.cpu0 ||
            an_grow(&l->f, &l->capf, l->nf + 1, sizeof *l->f, 64) < 0)
            return;
        f.t1 = ts;
        f.cpu1 = x->cpu_ns;
        l->f[l->nf++] = f;
    }
}

/* The thread's own sample (source marker) at ts, or 1 ns after it, or
 * NULL. RATIONALE: a collector converts a record's start and its duration
 * from clock ticks to ns apart, each rounded down, so the end of a CUDA
 * call (ts + dur) can read 1 ns before the sample stamped at it. */
static an_cpu_sample *own_at(an_cpu_log *l, uint64_t ts)
{
    for (size_t i = an_cpu_lower(l, ts); i < l->n && l->s[i].ts - ts <= 1; i++)
        if (l->s[i].src == GS_CPU_SRC_MARKER)
            return &l->s[i];
    return NULL;
}

int an_cpu_pieces(an_cpu_log *l, uint64_t ts, const uint64_t piece[][2], unsigned n)
{
    if (!l || !l->n)
        return 0;
    const an_cpu_fetch u = l->upd;
    l->upd.t0 = 0;
    an_cpu_sample *fwd = own_at(l, ts);
    if (!u.t0 || !n || n > AN_CPU_PIECES_MAX || !fwd ||
        an_grow(&l->f, &l->capf, l->nf + n, sizeof *l->f, 64) < 0)
        return 0;
    an_cpu_fetch f[AN_CPU_PIECES_MAX];
    for (unsigned i = 0; i < n; i++) {
        const an_cpu_sample *a = own_at(l, piece[i][0]);
        const an_cpu_sample *b = a ? own_at(l, piece[i][1]) : NULL;
        if (!b || b->ts < a->ts || b->cpu_ns < a->cpu_ns)
            return 0; /* a collector that did not sample its cuts: not measured */
        f[i] = u;
        f[i].t0 = a->ts; /* a piece is measured between its samples */
        f[i].t1 = b->ts;
        f[i].cpu0 = a->cpu_ns;
        f[i].cpu1 = b->cpu_ns;
    }
    fwd->marker = GS_K_FETCH_END;
    fwd->mark = GS_MARK_FORWARD;
    memcpy(&l->f[l->nf], f, n * sizeof *f);
    l->nf += n;
    return 1;
}

void an_cpu_forget_update(an_cpu_log *l)
{
    if (l)
        l->upd.t0 = 0;
}

void an_cpu_log_free(an_cpu_log *l)
{
    if (!l)
        return;
    free(l->s);
    free(l->f);
    free(l);
}

/* ---- reading a log ----------------------------------------------------------------- */

static int known(const an_cpu_sample *x, int v)
{
    switch (v) {
    case AN_CV_CPU: return 1;
    case AN_CV_RUNQ: return x->runq_ns >= 0;
    case AN_CV_STORAGE: return x->storage >= 0;
    case AN_CV_SOCK: return 1;
    default: return x->majflt >= 0;
    }
}

static double value(const an_cpu_sample *x, int v)
{
    switch (v) {
    case AN_CV_CPU: return (double)x->cpu_ns;
    case AN_CV_RUNQ: return (double)x->runq_ns;
    case AN_CV_STORAGE: return (double)x->storage;
    case AN_CV_SOCK: return (double)x->sock_ns;
    default: return (double)x->majflt;
    }
}

size_t an_cpu_lower(const an_cpu_log *l, uint64_t t)
{
    size_t lo = 0, hi = l->n;
    while (lo < hi) {
        const size_t mid = lo + (hi - lo) / 2;
        if (l->s[mid].ts < t)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

double an_cpu_value_at(const an_cpu_log *l, uint64_t t, int v)
{
    if (!l || !l->n)
        return -1;
    const size_t at = an_cpu_lower(l, t);
    size_t r = at;
    while (r < l->n && !known(&l->s[r], v) && r - at < AN_CPU_SCAN_MAX)
        r++;
    if (r == l->n || !known(&l->s[r], v))
        return -1;
    if (l->s[r].ts == t)
        return value(&l->s[r], v);
    size_t i = at;
    while (i > 0 && !known(&l->s[i - 1], v) && at - i < AN_CPU_SCAN_MAX)
        i--;
    if (i == 0 || !known(&l->s[i - 1], v))
        return -1;
    const an_cpu_sample *a = &l->s[i - 1], *b = &l->s[r];
    const double f = (double)(t - a->ts) / (double)(b->ts - a->ts);
    return value(a, v) + f * (value(b, v) - value(a, v));
}

/* The span [first, last] of the samples that measured v. */
static int known_span(const an_cpu_log *l, int v, uint64_t *a, uint64_t *b)
{
    size_t i = 0, j = l ? l->n : 0;
    while (i < j && !known(&l->s[i], v) && i < AN_CPU_SCAN_MAX)
        i++;
    while (j > i && !known(&l->s[j - 1], v) && l->n - j < AN_CPU_SCAN_MAX)
        j--;
    if (j <= i || !known(&l->s[i], v) || !known(&l->s[j - 1], v))
        return 0;
    if (j <= i + 1)
        return 0;
    *a = l->s[i].ts;
    *b = l->s[j - 1].ts;
    return 1;
}

double an_cpu_delta(const an_cpu_log *l, uint64_t a, uint64_t b, int v, uint64_t *covered)
{
    uint64_t ka, kb;
    *covered = 0;
    if (!known_span(l, v, &ka, &kb))
        return -1;
    if (a < ka)
        a = ka;
    if (b > kb)
        b = kb;
    if (b <= a)
        return -1;
    const double x = an_cpu_value_at(l, a, v), y = an_cpu_value_at(l, b, v);
    if (x < 0 || y < 0)
        return -1;
    *covered = b - a;
    return y > x ? y - x : 0;
}
