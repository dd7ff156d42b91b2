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
} rseq;

/* The job's matched collectives: position p = base[j] + n is the n-th of
 * communicator j on every rank. */
typedef struct match {
    rseq *S;        /* by rank index (an ok rank's, else empty) */
    size_t ncomm;
    size_t *m;      /* collectives of communicator j on every rank */
    size_t *base;
    size_t npos;
    int *last;      /* position -> the last arriver's rank index; -1: not counted */
    int *step;      /* position -> the step index it ends in (reference's clock); -1 */
} match;

static const an_coll *at(const rseq *s, size_t j, size_t n)
{
    return &s->c->v[s->ix[s->off[j] + n]];
}

static double ms(uint64_t ns)
{
    return (double)ns / 1e6;
}

/* ---- the communicators of one rank --------------------------------------------- */

typedef struct key {
    uint64_t first, ts; /* its stream's first start, its own start */
    uint32_t stream;
    size_t i;
} key;

static int cmp_key(const void *a, const void *b)
{
    const key *x = a, *y = b;
    if (x->first != y->first)
        return x->first < y->first ? -1 : 1;
    if (x->stream != y->stream)
        return x->stream < y->stream ? -1 : 1;
    return (x->ts > y->ts) - (x->ts < y->ts);
}

static int build_seq(rseq *s, const an_colls *c, uint32_t tid)
{
    memset(s, 0, sizeof *s);
    s->c = c;
    s->tid = tid;
    uint64_t *first = malloc((c->nstreams ? c->nstreams : 1) * sizeof *first);
    key *k = malloc((c->n ? c->n : 1) * sizeof *k);
    s->ix = malloc((c->n ? c->n : 1) * sizeof *s->ix);
    s->off = calloc(c->nstreams + 1, sizeof *s->off);
    if (!first || !k || !s->ix || !s->off) {
        free(first);
        free(k);
        return -1;
    }
    for (size_t j = 0; j < c->nstreams; j++)
        first[j] = UINT64_MAX;
    for (size_t i = 0; i < c->n; i++)
        if (c->v[i].ts < first[c->v[i].stream])
            first[c->v[i].stream] = c->v[i].ts;
    for (size_t i = 0; i < c->n; i++)
        k[i] = (key){first[c->v[i].stream], c->v[i].ts, c->v[i].stream, i};
    qsort(k, c->n, sizeof *k, cmp_key);
    for (size_t i = 0; i < c->n; i++) {
        s->ix[i] = k[i].i;
        if (!i || k[i].stream != k[i - 1].stream)
            s->off[s->ns++] = i;
    }
    s->off[s->ns] = c->n;
    free(first);
    free(k);
    return 0;
}

/* ---- clocks ------------------------------------------------------------------------ */

static int cmp_i64(const void *a, const void *b)
{
    const int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

static uint64_t dist(int64_t a, int64_t b)
{
    return a > b ? (uint64_t)(a - b) : (uint64_t)(b - a);
}

/* Rank k's clock from the ends of every matched collective: the same
 * clock as the reference's when it is on the same machine (the ends then
 * only say how well they agree), else the header pairs' offset moved by
 * the median difference of the ends. d: room for npos values. */
static void clock_one(an_job *job, const match *M, size_t k, int64_t *d)
{
    const size_t f = (size_t)job->clock_ref;
    an_rank *R = &job->ranks[k];
    const int same = k == f || R->clock_src == AN_CLOCK_SAME_HOST;
    const int64_t off0 = R->clock_realtime_ns; /* an_ranks.c: the header pairs' */
    size_t nd = 0;
    for (size_t j = 0; j < M->ncomm; j++)
        for (size_t n = 0; n < M->m[j]; n++)
            d[nd++] = (int64_t)at(&M->S[f], j, n)->end - ((int64_t)at(&M->S[k], j, n)->end + off0);
    if (!nd)
        return;
    qsort(d, nd, sizeof *d, cmp_i64);
    const int64_t refined = same ? 0 : d[nd / 2];
    uint64_t max = 0;
    for (size_t i = 0; i < nd; i++) {
        d[i] = (int64_t)dist(d[i], refined);
        if ((uint64_t)d[i] > max)
            max = (uint64_t)d[i];
    }
    qsort(d, nd, sizeof *d, cmp_i64);
    R->clock_colls = nd;
    R->clock_spread_ns = (uint64_t)d[nd / 2];
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
    if (!d)
        return -1;
    for (size_t k = 0; k < job->nranks; k++)
        if (job->ranks[k].ok)
            clock_one(job, M, k, d);
    free(d);
    return 0;
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

static int step_counted(const an_job *job, size_t i)
{
    for (size_t k = 0; k < job->nranks; k++)
        if (job->ranks[k].ok && job->ranks[k].res.steps[i].warmup)
            return 0;
    return 1;
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

/* Who arrived last at each counted collective and who waited how long:
 * the ranks' totals, the job's, the per-step top; M->last and M->step. */
static int waits(an_job *job, match *M)
{
    an_coll_sum *cs = &job->coll;
    const size_t N = job->nranks, f = (size_t)job->clock_ref, ns = common_steps(job);
    uint64_t *per = calloc((ns ? ns : 1) * N, sizeof *per);
    cs->step_rank = malloc((ns ? ns : 1) * sizeof *cs->step_rank);
    cs->step_ns = calloc(ns ? ns : 1, sizeof *cs->step_ns);
    cs->step_total = calloc(ns ? ns : 1, sizeof *cs->step_total);
    if (!per || !cs->step_rank || !cs->step_ns || !cs->step_total) {
        free(per);
        return -1;
    }
    cs->nsteps = ns;
    for (size_t k = 0; k < N; k++)
        if (job->ranks[k].ok && !(job->ranks[k].waited_for_ns = calloc(N, sizeof(uint64_t)))) {
            free(per);
            return -1;
        }
    for (size_t j = 0; j < M->ncomm; j++)
        for (size_t n = 0; n < M->m[j]; n++) {
            const size_t p = M->base[j] + n;
            const int i = step_of(&job->ranks[f].res, ns, at(&M->S[f], j, n)->end);
            M->step[p] = i;
            M->last[p] = -1;
            if (i < 0 || !step_counted(job, (size_t)i))
                continue;
            cs->counted++;
            size_t L = (size_t)-1;
            uint64_t dl = 0;
            for (size_t k = 0; k < N; k++) {
                if (!job->ranks[k].ok)
                    continue;
                const an_coll *c = at(&M->S[k], j, n);
                if (L == (size_t)-1 || c->end - c->ts < dl) {
                    L = k;
                    dl = c->end - c->ts;
                }
            }
            uint64_t cost = 0;
            for (size_t k = 0; k < N; k++) {
                if (!job->ranks[k].ok)
                    continue;
                const an_coll *c = at(&M->S[k], j, n);
                const uint64_t w = c->end - c->ts - dl;
                job->ranks[k].waited_for_ns[L] += w;
                job->ranks[k].waited_ns += w;
                cost += w;
            }
            M->last[p] = (int)L;
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
    const rseq *F = &M->S[job->clock_ref];
    const size_t nn = F->c->nnames, N = job->nranks;
    uint64_t *by = calloc((nn ? nn : 1) * N, sizeof *by);
    if (!by)
        return -1;
    for (size_t j = 0; j < M->ncomm; j++)
        for (size_t n = 0; n < M->m[j]; n++) {
            const int L = M->last[M->base[j] + n];
            if (L < 0)
                continue;
            uint64_t cost = 0;
            for (size_t k = 0; k < N; k++)
                if (job->ranks[k].ok)
                    cost += (at(&M->S[k], j, n)->end - at(&M->S[k], j, n)->ts) -
                            (at(&M->S[L], j, n)->end - at(&M->S[L], j, n)->ts);
            by[(size_t)L * nn + at(F, j, n)->name] += cost;
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
static uint64_t others_time(const an_job *job, size_t s)
{
    const size_t ns = common_steps(job);
    uint64_t t = 0;
    for (size_t k = 0; k < job->nranks; k++) {
        if (k == s || !job->ranks[k].ok)
            continue;
        for (size_t i = 0; i < ns; i++)
            if (step_counted(job, i))
                t += job->ranks[k].res.steps[i].v.t1 - job->ranks[k].res.steps[i].v.t0;
    }
    return t;
}

/* ---- why the straggler was late ---------------------------------------------------- */

/* The parts (enum an_cause, ns) of rank k's time between the end of its
 * previous collective of communicator j and the start of the n-th; 0 when
 * its snapshots are not there or not of its training thread. */
static int interval_parts(const match *M, size_t k, size_t j, size_t n, double *part)
{
    const rseq *s = &M->S[k];
    const an_coll *a = at(s, j, n - 1), *b = at(s, j, n);
    if (!s->tid || a->tid != s->tid || b->tid != s->tid || !(a->have & 2) || !(b->have & 1))
        return 0;
    an_stepv v;
    an_stepv_from_snaps(&v, &a->b, &b->a);
    part[AN_CAUSE_DATA_WAIT] = (double)v.idle_dw;
    part[AN_CAUSE_HOST] = (double)v.idle_host;
    part[AN_CAUSE_PAGEABLE_COPY] = (double)(v.idle_pg + v.busy[AN_BUSY_H2D_PAGEABLE]);
    part[AN_CAUSE_COMPUTE] = (double)v.busy[AN_BUSY_COMPUTE];
    part[AN_CAUSE_COMM] = (double)v.busy[AN_BUSY_COMM];
    part[AN_CAUSE_OTHER] = (double)(v.busy[AN_BUSY_H2D_PINNED] + v.busy[AN_BUSY_OTHER]);
    return 1;
}

/* How long after the end of its previous collective rank k began a step
 * (ns), when a step of it begins before the n-th; -1 otherwise. */
static double step_start_in(const an_job *job, const match *M, size_t k, size_t j, size_t n)
{
    const an_result *r = &job->ranks[k].res;
    const uint64_t e = at(&M->S[k], j, n - 1)->end, s = at(&M->S[k], j, n)->ts;
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

/* The straggler s's time per cause before each collective it was late
 * at, beyond the other ranks' median in the same interval. */
static int why_late(an_job *job, const match *M, size_t s)
{
    an_coll_sum *cs = &job->coll;
    const size_t N = job->nranks;
    double *o = malloc(N * (AN_NCAUSE + 2) * sizeof *o), mine[AN_NCAUSE], part[AN_NCAUSE];
    if (!o)
        return -1;
    double *durs = o + N * AN_NCAUSE, *pre = durs + N;
    for (size_t j = 0; j < M->ncomm; j++)
        for (size_t n = 1; n < M->m[j]; n++) {
            if (M->last[M->base[j] + n] != (int)s)
                continue;
            cs->late++;
            size_t no = 0, nd = 0, np = 0;
            for (size_t k = 0; k < N; k++)
                if (k != s && job->ranks[k].ok)
                    durs[nd++] = (double)(at(&M->S[k], j, n)->end - at(&M->S[k], j, n)->ts);
            const an_coll *c = at(&M->S[s], j, n);
            cs->late_ms += (an_percentile(durs, nd, 0.5) - (double)(c->end - c->ts)) / 1e6;
            if (!interval_parts(M, s, j, n, mine))
                continue;
            for (size_t k = 0; k < N; k++) {
                if (k == s || !job->ranks[k].ok || !interval_parts(M, k, j, n, part))
                    continue;
                for (int x = 0; x < AN_NCAUSE; x++)
                    o[(size_t)x * N + no] = part[x];
                no++;
            }
            if (!no)
                continue;
            cs->late_measured++;
            for (int x = 0; x < AN_NCAUSE; x++)
                cs->parts_ms[x] += (mine[x] - an_percentile(&o[(size_t)x * N], no, 0.5)) / 1e6;
            const double ps = step_start_in(job, M, s, j, n);
            for (size_t k = 0; ps >= 0 && k < N; k++)
                if (k != s && job->ranks[k].ok && step_start_in(job, M, k, j, n) >= 0)
                    pre[np++] = step_start_in(job, M, k, j, n);
            if (ps >= 0 && np)
                cs->late_start_ms += (ps - an_percentile(pre, np, 0.5)) / 1e6;
        }
    free(o);
    cs->cause = -1;
    for (int x = 0; cs->late_measured && x < AN_NCAUSE; x++)
        if (cs->cause < 0 || cs->parts_ms[x] > cs->parts_ms[cs->cause])
            cs->cause = x;
    return 0;
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
    const uint64_t others = others_time(job, s);
    cs->share = others ? (double)job->ranks[s].caused_ns / (double)others : 0;
    if (cs->share < AN_STRAGGLER_MIN_SHARE)
        return;
    if (job->ranks[s].caused_ns * 2 <= cs->cost_ns) {
        cs->changes = 1;
        say_changes(job, M);
        return;
    }
    cs->straggler = (int)s;
    if (why_late(job, M, s) < 0)
        return;
    say_straggler(job, s);
}

/* ---- the whole ----------------------------------------------------------------------- */

static void match_free(match *M, size_t nranks)
{
    for (size_t k = 0; M->S && k < nranks; k++) {
        free(M->S[k].ix);
        free(M->S[k].off);
    }
    free(M->S);
    free(M->m);
    free(M->base);
    free(M->last);
    free(M->step);
}

/* The communicators every rank has, and how many collectives of each. */
static int match_build(an_job *job, match *M)
{
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
    if (!M->m || !M->base)
        return -1;
    for (size_t j = 0; j < M->ncomm; j++) {
        M->m[j] = (size_t)-1;
        for (size_t k = 0; k < job->nranks; k++)
            if (job->ranks[k].ok && M->S[k].off[j + 1] - M->S[k].off[j] < M->m[j])
                M->m[j] = M->S[k].off[j + 1] - M->S[k].off[j];
        M->base[j + 1] = M->base[j] + M->m[j];
    }
    M->npos = M->base[M->ncomm];
    M->last = malloc((M->npos ? M->npos : 1) * sizeof *M->last);
    M->step = malloc((M->npos ? M->npos : 1) * sizeof *M->step);
    return M->last && M->step ? 0 : -1;
}

/* Matched positions whose names differ on some rank from the reference's. */
static size_t names_differ(const an_job *job, const match *M)
{
    const rseq *F = &M->S[job->clock_ref];
    size_t bad = 0;
    for (size_t j = 0; j < M->ncomm; j++)
        for (size_t n = 0; n < M->m[j]; n++) {
            const char *want = F->c->names[at(F, j, n)->name];
            int differ = 0;
            for (size_t k = 0; k < job->nranks && !differ; k++)
                differ = job->ranks[k].ok &&
                         strcmp(M->S[k].c->names[at(&M->S[k], j, n)->name], want) != 0;
            bad += (size_t)differ;
        }
    return bad;
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
    if (!M.S || match_build(job, &M) < 0)
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
    if (clocks(job, &M) < 0 || waits(job, &M) < 0 || top_names(job, &M) < 0) {
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
