/* an_collectives.c — the collectives of a job's ranks matched across the
 * ranks (an_collectives.h): the n-th collective of each communicator is the
 * same operation on every rank, and ends at the same instant on every rank,
 * so its ends put the ranks on one clock and its kernel's start on each
 * rank is that rank's arrival. A rank's wait at a collective is how much
 * longer its kernel ran than the last arriver's (the same end, an earlier
 * start: no clock enters it). The straggler is the rank whose late
 * arrivals the others waited for most; why it was late is read from the
 * timeline snapshots at each collective's start and end (load/an_colls.h):
 * between its previous collective and the late one, against the other
 * ranks' in the same interval (docs/report-schema.md, "Ranks and the
 * straggler").
 *
 * Must never: read trace files, print, divide by zero, or compare
 * snapshots taken on another thread than the rank's training thread.
 */
#include "model/an_collectives.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/an_ranks.h"

const char *const an_cause_names[AN_NCAUSE] = {"data_wait", "host", "pageable_copy", "compute",
                                                "communication", "other"};

/* One rank's communicators: its trainer's collectives per stream in stream
 * order (by start), the streams in the order of their first collective. */
typedef struct rseq {
    const an_colls *c;
    size_t *ix;  /* collective indexes, stream after stream */
    size_t *off; /* stream j's: ix[off[j]] .. ix[off[j + 1] - 1] */
    size_t ns;   /* streams */
    uint32_t tid; /* its training thread */
    int32_t *to_ref; /* its name index -> the reference's (-1: a name the reference lacks) */
} rseq;

/* The job's matched collectives: position p = base[j] + n is the n-th of
 * communicator j on every rank. */
typedef struct match {
    rseq *S;        /* by rank index (an ok rank's, else empty) */
    size_t N;       /* ranks (job->nranks) */
    size_t ncomm;
    size_t *m;      /* collectives of communicator j on every rank */
    size_t *base;
    size_t npos;
    /* position p, rank k at [p * N + k], position-major (RATIONALE: the loops
     * over the ranks of a collective read one row, not 64 ranks' arrays) */
    const an_coll **cp; /* the collective (NULL: k not analysed) */
    uint64_t *dur, *end; /* its kernel's duration and end, copied */
    int *last;      /* position -> the last arriver's rank index; -1: not counted */
    uint64_t *cost; /* position -> the others' waiting there */
    size_t ns;      /* steps common to every analysed rank */
    uint8_t *counted; /* step -> measured in every analysed rank (no one's warm-up) */
} match;

/* Rank k's collective at position p. */
static const an_coll *at(const match *M, size_t p, size_t k)
{
    return M->cp[p * M->N + k];
}

static uint64_t dur(const match *M, size_t p, size_t k)
{
    return M->dur[p * M->N + k];
}

static uint64_t end_of(const match *M, size_t p, size_t k)
{
    return M->end[p * M->N + k];
}

static double ms(uint64_t ns)
{
    return (double)ns / 1e6;
}

/* ---- the communicators of one rank --------------------------------------------- */

/* A stream of the rank: its first start and its index, to order them. */
typedef struct skey {
    uint64_t first;
    uint32_t stream;
} skey;

static int cmp_skey(const void *a, const void *b)
{
    const skey *x = a, *y = b;
    if (x->first != y->first)
        return x->first < y->first ? -1 : 1;
    return (x->stream > y->stream) - (x->stream < y->stream);
}

static int cmp_start(const void *a, const void *b, void *ctx)
{
    const an_coll *v = ctx;
    const uint64_t x = v[*(const size_t *)a].ts, y = v[*(const size_t *)b].ts;
    if (x != y)
        return x < y ? -1 : 1;
    return (*(const size_t *)a > *(const size_t *)b) - (*(const size_t *)a < *(const size_t *)b);
}

/* The collective indexes ix[0..n) by start. RATIONALE: they come in nearly
 * that order (CUPTI writes a stream's records in turn), which an insertion
 * sort takes in one pass; a file that is not gets the sort it needs. */
static void sort_by_start(size_t *ix, size_t n, const an_coll *v)
{
    size_t moves = 0;
    for (size_t i = 1; i < n; i++) {
        const size_t x = ix[i];
        size_t j = i;
        while (j > 0 && v[ix[j - 1]].ts > v[x].ts && moves++ < 8 * n) {
            ix[j] = ix[j - 1];
            j--;
        }
        ix[j] = x;
    }
    if (moves >= 8 * n)
        qsort_r(ix, n, sizeof *ix, cmp_start, (void *)v);
}

/* A rank's communicators: its streams in the order of their first
 * collective, each one's collectives in the order they started. */
static int build_seq(rseq *s, const an_colls *c, uint32_t tid)
{
    memset(s, 0, sizeof *s);
    s->c = c;
    s->tid = tid;
    const size_t ns = c->nstreams;
    skey *k = malloc((ns ? ns : 1) * sizeof *k);
    size_t *at = calloc(ns + 1, sizeof *at); /* stream -> its place in the order */
    s->ix = malloc((c->n ? c->n : 1) * sizeof *s->ix);
    s->off = calloc(ns + 1, sizeof *s->off);
    if (!k || !at || !s->ix || !s->off) {
        free(k);
        free(at);
        return -1;
    }
    for (size_t j = 0; j < ns; j++)
        k[j] = (skey){UINT64_MAX, (uint32_t)j};
    size_t *count = s->off + 1; /* counts, then the running offsets */
    for (size_t i = 0; i < c->n; i++) {
        skey *x = &k[c->v[i].stream];
        x->first = c->v[i].ts < x->first ? c->v[i].ts : x->first;
    }
    qsort(k, ns, sizeof *k, cmp_skey);
    for (size_t j = 0; j < ns; j++)
        at[k[j].stream] = j;
    for (size_t i = 0; i < c->n; i++)
        count[at[c->v[i].stream]]++;
    for (size_t j = 1; j <= ns; j++)
        s->off[j] += s->off[j - 1];
    size_t *fill = calloc(ns + 1, sizeof *fill);
    if (!fill) {
        free(k);
        free(at);
        return -1;
    }
    for (size_t i = 0; i < c->n; i++) {
        const size_t j = at[c->v[i].stream];
        s->ix[s->off[j] + fill[j]++] = i;
    }
    for (size_t j = 0; j < ns; j++)
        sort_by_start(s->ix + s->off[j], s->off[j + 1] - s->off[j], c->v);
    s->ns = ns;
    free(fill);
    free(k);
    free(at);
    return 0;
}

/* ---- clocks ------------------------------------------------------------------------ */

/* The median of d[0..n) (as an_percentile takes it: the mean of the two
 * middle ones for n even), to the nearest ns; e: room for n doubles. */
static int64_t median_i64(const int64_t *d, size_t n, double *e)
{
    for (size_t i = 0; i < n; i++)
        e[i] = (double)d[i];
    return llround(an_percentile(e, n, 0.5));
}

static uint64_t dist(int64_t a, int64_t b)
{
    return a > b ? (uint64_t)(a - b) : (uint64_t)(b - a);
}

/* Rank k's clock from the ends of every matched collective: the same
 * clock as the reference's when it is on the same machine (the ends then
 * only say how well they agree), else the header pairs' offset moved by
 * the median difference of the ends. d, e: room for npos values. */
static void clock_one(an_job *job, const match *M, size_t k, int64_t *d, double *e)
{
    const size_t f = (size_t)job->clock_ref;
    an_rank *R = &job->ranks[k];
    const int same = k == f || R->clock_src == AN_CLOCK_SAME_HOST;
    const int64_t off0 = R->clock_realtime_ns; /* an_ranks.c: the header pairs' */
    size_t nd = 0;
    for (size_t p = 0; p < M->npos; p++)
        d[nd++] = (int64_t)end_of(M, p, f) - ((int64_t)end_of(M, p, k) + off0);
    if (!nd)
        return;
    const int64_t refined = same ? 0 : median_i64(d, nd, e);
    uint64_t max = 0;
    for (size_t i = 0; i < nd; i++) {
        d[i] = (int64_t)dist(d[i], refined);
        if ((uint64_t)d[i] > max)
            max = (uint64_t)d[i];
    }
    R->clock_colls = nd;
    R->clock_spread_ns = (uint64_t)median_i64(d, nd, e);
    R->clock_max_ns = max;
    if (!same) {
        R->clock_src = AN_CLOCK_COLLECTIVES;
        R->clock_realtime_ns = off0;
        R->clock_refined_ns = refined;
        R->clock_offset_ns = off0 + refined;
    }
}

static int clocks(an_job *job, const match *M)
{
    int64_t *d = malloc((M->npos ? M->npos : 1) * sizeof *d);
    double *e = malloc((M->npos ? M->npos : 1) * sizeof *e);
    if (d && e)
        for (size_t k = 0; k < job->nranks; k++)
            if (job->ranks[k].ok)
                clock_one(job, M, k, d, e);
    free(d);
    free(e);
    return d && e ? 0 : -1;
}

/* ---- steps ------------------------------------------------------------------------- */

/* Steps common to every analysed rank, and whether step i is measured in
 * all of them (no rank's warm-up). */
static size_t common_steps(const an_job *job)
{
    size_t n = (size_t)-1;
    for (size_t k = 0; k < job->nranks; k++)
        if (job->ranks[k].ok && job->ranks[k].res.nsteps < n)
            n = job->ranks[k].res.nsteps;
    return n == (size_t)-1 ? 0 : n;
}

/* M->ns and M->counted. */
static int count_steps(const an_job *job, match *M)
{
    M->ns = common_steps(job);
    if (!(M->counted = malloc(M->ns ? M->ns : 1)))
        return -1;
    for (size_t i = 0; i < M->ns; i++) {
        M->counted[i] = 1;
        for (size_t k = 0; k < job->nranks; k++)
            if (job->ranks[k].ok && job->ranks[k].res.steps[i].warmup)
                M->counted[i] = 0;
    }
    return 0;
}

/* The step of r (among its first n) holding time t: the last starting at
 * or before t, if t is before its end; -1. */
static int step_of(const an_result *r, size_t n, uint64_t t)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        const size_t mid = (lo + hi) / 2;
        if (r->steps[mid].v.t0 <= t)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo && t < r->steps[lo - 1].v.t1 ? (int)lo - 1 : -1;
}

/* ---- waits ------------------------------------------------------------------------- */

/* The last arriver at position p (the rank whose kernel ran shortest; the
 * lowest of equals): its index, its kernel's duration in *dl. */
static size_t last_at(const an_job *job, const match *M, size_t p, uint64_t *dl)
{
    size_t L = (size_t)-1;
    for (size_t k = 0; k < M->N; k++)
        if (job->ranks[k].ok && (L == (size_t)-1 || dur(M, p, k) < *dl)) {
            L = k;
            *dl = dur(M, p, k);
        }
    return L;
}

/* The per-step tables of job->coll; each analysed rank's waited_for_ns. */
static int waits_alloc(an_job *job, size_t ns)
{
    an_coll_sum *cs = &job->coll;
    cs->step_rank = malloc((ns ? ns : 1) * sizeof *cs->step_rank);
    cs->step_ns = calloc(ns ? ns : 1, sizeof *cs->step_ns);
    cs->step_total = calloc(ns ? ns : 1, sizeof *cs->step_total);
    if (!cs->step_rank || !cs->step_ns || !cs->step_total)
        return -1;
    cs->nsteps = ns;
    for (size_t k = 0; k < job->nranks; k++)
        if (job->ranks[k].ok && !(job->ranks[k].waited_for_ns = calloc(job->nranks, sizeof(uint64_t))))
            return -1;
    return 0;
}

/* Who arrived last at each counted collective and who waited how long:
 * the ranks' totals, the job's, the per-step top; M->last. */
static int waits(an_job *job, match *M)
{
    an_coll_sum *cs = &job->coll;
    const size_t N = job->nranks, f = (size_t)job->clock_ref, ns = M->ns;
    uint64_t *per = calloc((ns ? ns : 1) * N, sizeof *per);
    if (!per || waits_alloc(job, ns) < 0) {
        free(per);
        return -1;
    }
    for (size_t p = 0; p < M->npos; p++) {
        const int i = step_of(&job->ranks[f].res, ns, end_of(M, p, f));
        M->last[p] = -1;
        M->cost[p] = 0;
        if (i < 0 || !M->counted[i])
            continue;
        cs->counted++;
        uint64_t dl = 0, cost = 0;
        const size_t L = last_at(job, M, p, &dl);
        for (size_t k = 0; k < N; k++) {
            if (!job->ranks[k].ok)
                continue;
            const uint64_t w = dur(M, p, k) - dl;
            job->ranks[k].waited_for_ns[L] += w;
            job->ranks[k].waited_ns += w;
            cost += w;
        }
        M->last[p] = (int)L;
        M->cost[p] = cost;
        job->ranks[L].caused_ns += cost;
        job->ranks[L].last_arrivals += cost > 0;
        per[(size_t)i * N + L] += cost;
        cs->step_total[i] += cost;
        cs->cost_ns += cost;
    }
    for (size_t i = 0; i < ns; i++) {
        cs->step_rank[i] = -1;
        for (size_t k = 0; k < N; k++)
            if (per[i * N + k] > cs->step_ns[i]) {
                cs->step_ns[i] = per[i * N + k];
                cs->step_rank[i] = (int)k;
            }
    }
    free(per);
    return 0;
}

/* Each rank's collective (by the reference's names) it caused most waiting at. */
static int top_names(an_job *job, const match *M)
{
    const size_t f = (size_t)job->clock_ref, nn = M->S[f].c->nnames, N = job->nranks;
    uint64_t *by = calloc((nn ? nn : 1) * N, sizeof *by);
    if (!by)
        return -1;
    for (size_t p = 0; p < M->npos; p++) {
        const int L = M->last[p];
        if (L >= 0)
            by[(size_t)L * nn + at(M, p, f)->name] += M->cost[p];
    }
    for (size_t k = 0; k < N; k++) {
        uint64_t best = 0;
        job->ranks[k].top_name = -1;
        for (size_t x = 0; x < nn; x++)
            if (by[k * nn + x] > best) {
                best = by[k * nn + x];
                job->ranks[k].top_name = (int)x;
            }
    }
    free(by);
    return 0;
}

/* The other ranks' aligned measured step time (ns), but rank s's. */
static uint64_t others_time(const an_job *job, const match *M, size_t s)
{
    uint64_t t = 0;
    for (size_t k = 0; k < job->nranks; k++) {
        if (k == s || !job->ranks[k].ok)
            continue;
        for (size_t i = 0; i < M->ns; i++)
            if (M->counted[i])
                t += job->ranks[k].res.steps[i].v.t1 - job->ranks[k].res.steps[i].v.t0;
    }
    return t;
}

/* ---- why the straggler was late ---------------------------------------------------- */

/* RATIONALE: the others' median in each interval is taken over at most
 * this many of them, spread evenly over the ranks: a job of a thousand ranks
 * costs what one of 16 does, and a median of 16 is as steady. */
#define WHY_OTHERS 16

/* The parts (enum an_cause, ns) of rank k's time between the end of its
 * collective at position p - 1 (the previous of the same communicator) and
 * the start of the one at p; 0 when its snapshots are not there or not of
 * its training thread. */
static int interval_parts(const match *M, size_t k, size_t p, double *part)
{
    const uint32_t tid = M->S[k].tid;
    const an_coll *a = at(M, p - 1, k), *b = at(M, p, k);
    if (!tid || a->tid != tid || b->tid != tid || !(a->have & 2) || !(b->have & 1))
        return 0;
    an_stepv v;
    an_snap x, y;
    an_coll_snap_get(a, 1, &x);
    an_coll_snap_get(b, 0, &y);
    an_stepv_from_snaps(&v, &x, &y);
    part[AN_CAUSE_DATA_WAIT] = (double)v.idle_dw;
    part[AN_CAUSE_HOST] = (double)v.idle_host;
    part[AN_CAUSE_PAGEABLE_COPY] = (double)(v.idle_pg + v.busy[AN_BUSY_H2D_PAGEABLE]);
    part[AN_CAUSE_COMPUTE] = (double)v.busy[AN_BUSY_COMPUTE];
    part[AN_CAUSE_COMM] = (double)v.busy[AN_BUSY_COMM];
    part[AN_CAUSE_OTHER] = (double)(v.busy[AN_BUSY_H2D_PINNED] + v.busy[AN_BUSY_OTHER]);
    return 1;
}

/* How long after the end of its previous collective rank k began a step
 * (ns), when a step of it begins before the one at position p; -1. */
static double step_start_in(const an_job *job, const match *M, size_t k, size_t p)
{
    const an_result *r = &job->ranks[k].res;
    const uint64_t e = at(M, p - 1, k)->end, s = at(M, p, k)->ts;
    size_t lo = 0, hi = r->nsteps; /* the first step starting at or after e */
    while (lo < hi) {
        const size_t mid = (lo + hi) / 2;
        if (r->steps[mid].v.t0 < e)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < r->nsteps && r->steps[lo].v.t0 < s ? (double)(r->steps[lo].v.t0 - e) : -1;
}

/* The ranks the others' medians are taken over: up to WHY_OTHERS analysed
 * ranks but s, evenly spread; returns how many, into o. */
static size_t pick_others(const an_job *job, size_t s, size_t *o)
{
    size_t n = 0;
    for (size_t k = 0; k < job->nranks; k++)
        n += k != s && job->ranks[k].ok;
    const size_t step = n > WHY_OTHERS ? (n + WHY_OTHERS - 1) / WHY_OTHERS : 1;
    size_t got = 0, seen = 0;
    for (size_t k = 0; k < job->nranks && got < WHY_OTHERS; k++)
        if (k != s && job->ranks[k].ok && seen++ % step == 0)
            o[got++] = k;
    return got;
}

/* The median of v[0..n) (n <= WHY_OTHERS; v reordered): as an_percentile
 * takes it, without a copy per call. */
static double median_small(double *v, size_t n)
{
    for (size_t i = 1; i < n; i++)
        for (size_t j = i; j > 0 && v[j - 1] > v[j]; j--) {
            const double t = v[j];
            v[j] = v[j - 1];
            v[j - 1] = t;
        }
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* One late collective at position p of the straggler s, against the others
 * in o (no of them): its lateness, and its parts beyond theirs. */
static void why_one(an_job *job, const match *M, size_t s, size_t p, const size_t *o, size_t no)
{
    an_coll_sum *cs = &job->coll;
    double v[WHY_OTHERS], parts[WHY_OTHERS][AN_NCAUSE], mine[AN_NCAUSE];
    for (size_t i = 0; i < no; i++)
        v[i] = (double)dur(M, p, o[i]);
    cs->late++;
    cs->late_ms += (median_small(v, no) - (double)dur(M, p, s)) / 1e6;
    if (p == 0 || !interval_parts(M, s, p, mine))
        return;
    size_t n = 0;
    for (size_t i = 0; i < no; i++)
        n += (size_t)interval_parts(M, o[i], p, parts[n]);
    if (!n)
        return;
    cs->late_measured++;
    for (int x = 0; x < AN_NCAUSE; x++) {
        for (size_t i = 0; i < n; i++)
            v[i] = parts[i][x];
        cs->parts_ms[x] += (mine[x] - median_small(v, n)) / 1e6;
    }
    const double ps = step_start_in(job, M, s, p);
    n = 0;
    for (size_t i = 0; ps >= 0 && i < no; i++)
        if ((v[n] = step_start_in(job, M, o[i], p)) >= 0)
            n++;
    if (ps >= 0 && n)
        cs->late_start_ms += (ps - median_small(v, n)) / 1e6;
}

/* The straggler s's time per cause before each collective it was late at
 * (not the first of its communicator), beyond the other ranks' median in
 * the same interval. */
static void why_late(an_job *job, const match *M, size_t s)
{
    an_coll_sum *cs = &job->coll;
    size_t o[WHY_OTHERS];
    const size_t no = pick_others(job, s, o);
    for (size_t j = 0; no && j < M->ncomm; j++)
        for (size_t n = 1; n < M->m[j]; n++)
            if (M->last[M->base[j] + n] == (int)s)
                why_one(job, M, s, M->base[j] + n, o, no);
    cs->cause = -1;
    for (int x = 0; cs->late_measured && x < AN_NCAUSE; x++)
        if (cs->cause < 0 || cs->parts_ms[x] > cs->parts_ms[cs->cause])
            cs->cause = x;
}

/* ---- the straggler and its sentence ------------------------------------------------ */

static const char *cause_words(int c)
{
    switch (c) {
    case AN_CAUSE_DATA_WAIT: return "waiting for data";
    case AN_CAUSE_HOST: return "busy on the host (not waiting for data or the GPU)";
    case AN_CAUSE_PAGEABLE_COPY: return "in pageable host-to-device copies";
    case AN_CAUSE_COMPUTE: return "computing on its GPU (more kernel time than the others: "
                                  "load imbalance)";
    case AN_CAUSE_COMM: return "in other collectives";
    default: return "in other GPU copies";
    }
}

static void say_straggler(an_job *job, size_t s)
{
    const an_coll_sum *cs = &job->coll;
    const an_rank *S = &job->ranks[s];
    size_t len = (size_t)snprintf(
        job->why, sizeof job->why,
        "rank %d arrived last at %zu of %zu collectives; the other ranks waited %.1f ms for it, "
        "%.0f%% of their step time (measured: collective kernels end together on every rank)",
        S->rank, S->last_arrivals, cs->counted, ms(S->caused_ns), 100 * cs->share);
    if (len < sizeof job->why && cs->late)
        len += (size_t)snprintf(job->why + len, sizeof job->why - len,
                                "; %.2f ms late on average", cs->late_ms / (double)cs->late);
    if (len < sizeof job->why && cs->cause >= 0)
        len += (size_t)snprintf(job->why + len, sizeof job->why - len,
                                "; before each collective it was late at, it spent %.2f ms more "
                                "than the other ranks %s",
                                cs->parts_ms[cs->cause] / (double)cs->late_measured,
                                cause_words(cs->cause));
    if (len < sizeof job->why && cs->cause >= 0 && cs->late_start_ms > 0.5 * cs->late_ms)
        snprintf(job->why + len, sizeof job->why - len,
                 ", and began its step %.2f ms after them on average",
                 cs->late_start_ms / (double)cs->late_measured);
}

/* No rank caused more than half: the ranks that caused a tenth or more. */
static void say_changes(an_job *job, const match *M)
{
    const an_coll_sum *cs = &job->coll;
    const rseq *F = &M->S[job->clock_ref];
    size_t len = (size_t)snprintf(job->why, sizeof job->why,
                                  "the last arriver changes: no rank caused more than half of the "
                                  "waiting (%.1f ms in %zu collectives)", ms(cs->cost_ns),
                                  cs->counted);
    for (size_t k = 0; k < job->nranks && len < sizeof job->why; k++) {
        const an_rank *R = &job->ranks[k];
        if (!R->ok || R->caused_ns * 10 < cs->cost_ns)
            continue;
        len += (size_t)snprintf(job->why + len, sizeof job->why - len, "; rank %d caused %.0f%%",
                                R->rank, 100.0 * (double)R->caused_ns / (double)cs->cost_ns);
        if (len < sizeof job->why && R->top_name >= 0)
            len += (size_t)snprintf(job->why + len, sizeof job->why - len, ", most at %s",
                                    F->c->names[R->top_name]);
    }
}

static void decide(an_job *job, const match *M)
{
    an_coll_sum *cs = &job->coll;
    size_t s = (size_t)-1;
    for (size_t k = 0; k < job->nranks; k++)
        if (job->ranks[k].ok && (s == (size_t)-1 || job->ranks[k].caused_ns > job->ranks[s].caused_ns))
            s = k;
    const uint64_t others = others_time(job, M, s);
    cs->share = others ? (double)job->ranks[s].caused_ns / (double)others : 0;
    if (cs->share < AN_STRAGGLER_MIN_SHARE)
        return;
    if (job->ranks[s].caused_ns * 2 <= cs->cost_ns) {
        cs->changes = 1;
        say_changes(job, M);
        return;
    }
    cs->straggler = (int)s;
    why_late(job, M, s);
    say_straggler(job, s);
}

/* ---- the whole ----------------------------------------------------------------------- */

static void match_free(match *M, size_t nranks)
{
    for (size_t k = 0; M->S && k < nranks; k++) {
        free(M->S[k].ix);
        free(M->S[k].off);
        free(M->S[k].to_ref);
    }
    free(M->S);
    free(M->m);
    free(M->base);
    free(M->cp);
    free(M->dur);
    free(M->end);
    free(M->last);
    free(M->cost);
    free(M->counted);
}

/* Each rank's names by the reference's (its to_ref). */
static int name_maps(const an_job *job, match *M)
{
    const an_colls *F = M->S[job->clock_ref].c;
    for (size_t k = 0; k < job->nranks; k++) {
        rseq *R = &M->S[k];
        if (!job->ranks[k].ok)
            continue;
        if (!(R->to_ref = malloc((R->c->nnames ? R->c->nnames : 1) * sizeof *R->to_ref)))
            return -1;
        for (size_t x = 0; x < R->c->nnames; x++) {
            R->to_ref[x] = -1;
            for (size_t y = 0; y < F->nnames && R->to_ref[x] < 0; y++)
                if (strcmp(R->c->names[x], F->names[y]) == 0)
                    R->to_ref[x] = (int32_t)y;
        }
    }
    return 0;
}

/* The communicators every rank has, how many collectives of each, and the
 * table of them by position and rank. */
static int match_build(an_job *job, match *M)
{
    M->N = job->nranks;
    M->ncomm = (size_t)-1;
    for (size_t k = 0; k < job->nranks; k++) {
        const an_rank *R = &job->ranks[k];
        if (!R->ok)
            continue;
        if (build_seq(&M->S[k], &R->res.trainer->colls, R->res.thread ? R->res.thread->tid : 0) < 0)
            return -1;
        if (M->S[k].ns < M->ncomm)
            M->ncomm = M->S[k].ns;
    }
    M->m = calloc(M->ncomm + 1, sizeof *M->m);
    M->base = calloc(M->ncomm + 1, sizeof *M->base);
    if (!M->m || !M->base || name_maps(job, M) < 0)
        return -1;
    for (size_t j = 0; j < M->ncomm; j++) {
        M->m[j] = (size_t)-1;
        for (size_t k = 0; k < job->nranks; k++)
            if (job->ranks[k].ok && M->S[k].off[j + 1] - M->S[k].off[j] < M->m[j])
                M->m[j] = M->S[k].off[j + 1] - M->S[k].off[j];
        M->base[j + 1] = M->base[j] + M->m[j];
    }
    M->npos = M->base[M->ncomm];
    const size_t cells = (M->npos ? M->npos : 1) * M->N;
    M->cp = calloc(cells, sizeof *M->cp);
    M->dur = calloc(cells, sizeof *M->dur);
    M->end = calloc(cells, sizeof *M->end);
    M->last = malloc((M->npos ? M->npos : 1) * sizeof *M->last);
    M->cost = malloc((M->npos ? M->npos : 1) * sizeof *M->cost);
    if (!M->cp || !M->dur || !M->end || !M->last || !M->cost)
        return -1;
    /* rank by rank (each one's collectives read in order) */
    for (size_t k = 0; k < M->N; k++) {
        const rseq *R = &M->S[k];
        for (size_t j = 0; job->ranks[k].ok && j < M->ncomm; j++)
            for (size_t n = 0; n < M->m[j]; n++) {
                const size_t x = (M->base[j] + n) * M->N + k;
                const an_coll *c = &R->c->v[R->ix[R->off[j] + n]];
                M->cp[x] = c;
                M->dur[x] = c->end - c->ts;
                M->end[x] = c->end;
            }
    }
    return 0;
}

/* Matched positions whose names differ on some rank from the reference's. */
static size_t names_differ(const an_job *job, const match *M)
{
    const size_t f = (size_t)job->clock_ref;
    size_t bad = 0;
    for (size_t p = 0; p < M->npos; p++) {
        const int32_t want = (int32_t)at(M, p, f)->name;
        int differ = 0;
        for (size_t k = 0; k < M->N && !differ; k++)
            differ = job->ranks[k].ok && M->S[k].to_ref[at(M, p, k)->name] != want;
        bad += (size_t)differ;
    }
    return bad;
}

/* RATIONALE: a collective's kernel ends on every rank within a few tens of
 * microseconds of the others (NCCL's last transfer); on one machine's clock,
 * or once a rank's clock is moved by the median of the differences, the
 * ends of the same operations then agree far better than this. Ends a
 * median of more apart are not of one operation on every rank (point-to-point
 * sends between pairs of ranks, communicators of some ranks only). */
#define AN_COLL_ENDS_AGREE_NS 1000000ull

/* 1 when some rank's collective ends lie a median of more than
 * AN_COLL_ENDS_AGREE_NS from the reference's: then each rank's clock is put
 * back as it was (before) and why says so. */
static int ends_disagree(an_job *job, const an_rank *before, char *why, size_t n)
{
    size_t worst = (size_t)-1;
    for (size_t k = 0; k < job->nranks; k++)
        if (job->ranks[k].ok && job->ranks[k].clock_spread_ns > AN_COLL_ENDS_AGREE_NS &&
            (worst == (size_t)-1 || job->ranks[k].clock_spread_ns > job->ranks[worst].clock_spread_ns))
            worst = k;
    if (worst == (size_t)-1)
        return 0;
    snprintf(why, n, "the collectives' ends do not agree across the ranks (rank %d's lie a median "
                     "%.3f ms from rank %d's): not one operation on every rank (point-to-point "
                     "sends, or communicators of some ranks only); waits inferred from the "
                     "aligned steps",
             job->ranks[worst].rank, (double)job->ranks[worst].clock_spread_ns / 1e6,
             job->ranks[job->clock_ref].rank);
    for (size_t k = 0; k < job->nranks; k++) {
        an_rank *R = &job->ranks[k];
        R->clock_src = before[k].clock_src;
        R->clock_offset_ns = before[k].clock_offset_ns;
        R->clock_realtime_ns = before[k].clock_realtime_ns;
        R->clock_refined_ns = before[k].clock_refined_ns;
        R->clock_spread_ns = before[k].clock_spread_ns;
        R->clock_max_ns = before[k].clock_max_ns;
        R->clock_colls = before[k].clock_colls;
    }
    return 1;
}

int an_job_collectives(an_job *job)
{
    an_coll_sum *cs = &job->coll;
    an_coll_sum_free(cs);
    cs->straggler = cs->cause = -1;
    for (size_t k = 0; k < job->nranks; k++) {
        an_rank *R = &job->ranks[k];
        free(R->waited_for_ns);
        R->waited_for_ns = NULL;
        R->caused_ns = R->waited_ns = 0;
        R->last_arrivals = 0;
        R->top_name = -1;
    }
    size_t nok = 0, with = 0;
    for (size_t k = 0; k < job->nranks; k++) {
        nok += job->ranks[k].ok;
        with += job->ranks[k].ok && job->ranks[k].res.trainer && job->ranks[k].res.trainer->colls.n;
    }
    if (nok < 2 || job->clock_ref < 0 || !with)
        return 0;
    if (with < nok) {
        snprintf(cs->why_not, sizeof cs->why_not,
                 "%zu of %zu ranks ran collective kernels: waits inferred from the aligned steps",
                 with, nok);
        return 0;
    }
    match M = {0};
    int rc = -1;
    M.S = calloc(job->nranks, sizeof *M.S);
    if (!M.S || count_steps(job, &M) < 0 || match_build(job, &M) < 0)
        goto done;
    cs->comms = M.ncomm;
    cs->matched = M.npos;
    cs->names_differ = names_differ(job, &M);
    rc = 0;
    /* RATIONALE: a tenth of the positions named differently means the
     * sequences do not line up (a trace that starts inside a step on one
     * rank): nothing is said from them */
    if (!M.npos || cs->names_differ * 10 > M.npos) {
        snprintf(cs->why_not, sizeof cs->why_not,
                 "the ranks' collectives do not line up (%zu of %zu differ in name): waits "
                 "inferred from the aligned steps", cs->names_differ, M.npos);
        goto done;
    }
    an_rank *before = malloc(job->nranks * sizeof *before);
    if (!before) {
        rc = -1;
        goto done;
    }
    memcpy(before, job->ranks, job->nranks * sizeof *before);
    if (clocks(job, &M) < 0) {
        free(before);
        rc = -1;
        goto done;
    }
    if (ends_disagree(job, before, cs->why_not, sizeof cs->why_not)) {
        free(before);
        goto done;
    }
    free(before);
    if (waits(job, &M) < 0 || top_names(job, &M) < 0) {
        rc = -1;
        goto done;
    }
    cs->used = 1;
    decide(job, &M);
done:
    match_free(&M, job->nranks);
    return rc;
}

void an_coll_sum_free(an_coll_sum *s)
{
    free(s->step_rank);
    free(s->step_ns);
    free(s->step_total);
    memset(s, 0, sizeof *s);
}
