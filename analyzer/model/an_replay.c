/* an_replay.c — a DataLoader's batches replayed in order (an_replay.h).
 *
 * Must never: replay a stretch that does not start at an iterator's first
 * batch (the workers' start-up is what the replay begins from), or count
 * the trainer's fetch that ended an epoch (it has no batch) as one.
 */
#include <stdlib.h>
#include <string.h>

#include "base/an_stats.h"
#include "load/an_samples.h"
#include "model/an_replay.h"

#define MAX_WORKERS 256 /* the replay's workers at most (num_workers beyond: no replay) */

static double dmax(double a, double b)
{
    return a > b ? a : b;
}

double an_replay_sim(const double *d, const double *comp, size_t n, const double *start,
                     int workers, int pf, double recv)
{
    if (!n || workers < 1 || workers > MAX_WORKERS || pf < 1)
        return -1;
    double *g = malloc(n * sizeof *g);
    double wfree[MAX_WORKERS];
    if (!g)
        return -1;
    for (int w = 0; w < workers; w++)
        wfree[w] = start ? start[w] : 0;
    const size_t ahead = (size_t)pf * (size_t)workers;
    double ask = 0;
    for (size_t i = 0; i < n; i++) {
        /* batch i is given to its worker when the trainer has batch i - ahead */
        const double sent = i < ahead ? 0 : g[i - ahead];
        const int w = (int)(i % (size_t)workers);
        const double done = dmax(sent, wfree[w]) + d[i];
        wfree[w] = done;
        g[i] = dmax(ask, done) + recv;
        ask = g[i] + comp[i];
    }
    const double r = g[n - 1] - g[0];
    free(g);
    return r;
}

/* ---- from the trace -------------------------------------------------------------------- */

typedef struct span {
    uint64_t key, t0, t1;
    uint32_t loader;
} span;

static int by_key_end(const void *a, const void *b)
{
    const span *x = a, *y = b;
    if (x->loader != y->loader)
        return x->loader < y->loader ? -1 : 1;
    if (x->key != y->key)
        return x->key < y->key ? -1 : 1;
    return x->t1 < y->t1 ? -1 : x->t1 > y->t1;
}

/* The workers' batches (their plain fetch markers), sorted by index and
 * end; *n their count. NULL when none (or out of memory). */
static span *worker_batches(const an_result *res, size_t *n)
{
    size_t cap = 0, k = 0;
    for (size_t i = 0; i < res->nworkers; i++)
        for (size_t j = 0; !res->workers[i].th && j < res->workers[i].p->nth; j++) {
            const an_cpu_log *l = res->workers[i].p->th[j].cpu;
            cap += l ? l->nf : 0;
        }
    span *s = cap ? malloc(cap * sizeof *s) : NULL;
    if (!s)
        return NULL;
    for (size_t i = 0; i < res->nworkers; i++)
        for (size_t j = 0; !res->workers[i].th && j < res->workers[i].p->nth; j++) {
            const an_cpu_log *l = res->workers[i].p->th[j].cpu;
            for (size_t f = 0; l && f < l->nf; f++)
                if (l->f[f].mark == GS_MARK_PLAIN)
                    s[k++] = (span){l->f[f].key, l->f[f].t0, l->f[f].t1, l->f[f].loader};
        }
    qsort(s, k, sizeof *s, by_key_end);
    *n = k;
    return s;
}

/* The worker's batch the trainer had at t (loader's index key): the last
 * of that index to end by t; NULL when none. */
static const span *batch_for(const span *s, size_t n, uint32_t loader, uint64_t key, uint64_t t)
{
    const span at = {key, 0, t, loader};
    size_t lo = 0, hi = n; /* the first after (loader, key, t) */
    while (lo < hi) {
        const size_t mid = lo + (hi - lo) / 2;
        if (by_key_end(&s[mid], &at) <= 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo > 0 && s[lo - 1].key == key && s[lo - 1].loader == loader ? &s[lo - 1] : NULL;
}

typedef struct tfetch {
    const an_cpu_fetch *f; /* the trainer's */
    const span *b;         /* its batch in a worker; NULL: not matched */
    uint64_t rel;          /* the batch's index in its iterator */
} tfetch;

/* The loader the trainer fetched most batches of (its plain fetches). */
static uint32_t main_loader(const an_cpu_log *l)
{
    uint32_t best = 0, cand = 0;
    size_t nbest = 0, ncand = 0;
    for (size_t i = 0; i < l->nf; i++) { /* loaders come in runs: the most in one run wins */
        if (l->f[i].mark != GS_MARK_PLAIN)
            continue;
        ncand = l->f[i].loader == cand && ncand ? ncand + 1 : 1;
        cand = l->f[i].loader;
        if (ncand > nbest) {
            nbest = ncand;
            best = cand;
        }
    }
    return best;
}

/* The trainer's fetches of loader ld, each matched to its worker's batch.
 * RATIONALE: the trainer's index counts the loader's batches over all its
 * iterators (the fetch that ends an epoch delivers none, and the next
 * iterator's first fetch has its index again), while a worker's counts
 * its iterator's: a fetch that does not match as the current iterator's
 * batch is tried as a new iterator's first, a batch 0 that began after the
 * trainer's previous fetch ended. An iterator's batches began after the
 * one before it ended, so a batch not marked is not matched to an earlier
 * epoch's of its index. Returns the fetches matched; *nt the fetches. */
static size_t match(const an_cpu_log *l, uint32_t ld, const span *b, size_t nb, tfetch *t,
                    size_t *nt)
{
    uint64_t base = 0, floor = 0, prev = 0;
    size_t n = 0, matched = 0;
    for (size_t i = 0; i < l->nf; i++) {
        const an_cpu_fetch *f = &l->f[i];
        if (f->mark != GS_MARK_PLAIN || f->loader != ld)
            continue;
        uint64_t rel = f->key - base;
        const span *s = f->key >= base ? batch_for(b, nb, ld, rel, f->t1) : NULL;
        if (s && s->t0 < floor)
            s = NULL;
        const span *z = !s && n ? batch_for(b, nb, ld, 0, f->t1) : NULL;
        if (z && z->t0 >= prev) { /* a new iterator's first batch */
            s = z;
            base = f->key;
            floor = prev;
            rel = 0;
        }
        t[n++] = (tfetch){f, s, rel};
        matched += s != NULL;
        prev = f->t1;
    }
    *nt = n;
    return matched;
}

/* One stretch [a, a + n) of the trainer's fetches (an iterator's batches
 * from its first), replayed with each prefetch factor and each count of
 * workers into r. */
static void replay_stretch(const tfetch *t, size_t n, double recv, an_replay_result *r)
{
    const int nw = r->workers;
    double *d = malloc(2 * n * sizeof *d), start[MAX_WORKERS];
    if (!d)
        return;
    double *comp = d + n;
    for (size_t i = 0; i < n; i++) {
        d[i] = (double)(t[i].b->t1 - t[i].b->t0) / 1e6;
        comp[i] = i + 1 < n && t[i + 1].f->t0 > t[i].f->t1
                      ? (double)(t[i + 1].f->t0 - t[i].f->t1) / 1e6 : 0;
    }
    /* a worker starts when its first batch began (its start-up), from the
     * iterator's first request: the trainer's first fetch; a worker more
     * as late as the latest */
    double late = 0;
    for (int w = 0; w < nw; w++) {
        start[w] = (size_t)w < n && t[w].b->t0 > t[0].f->t0
                       ? (double)(t[w].b->t0 - t[0].f->t0) / 1e6 : 0;
        late = dmax(late, start[w]);
    }
    for (int w = nw; w < MAX_WORKERS; w++)
        start[w] = late;
    const double now = an_replay_sim(d, comp, n, start, nw, r->prefetch, recv);
    double alt[AN_REPLAY_NPF], more[AN_REPLAY_NNW];
    int ok = now >= 0;
    for (int j = 0; ok && j < r->at.npf; j++)
        ok = (alt[j] = an_replay_sim(d, comp, n, start, nw, r->at.pf[j], recv)) >= 0;
    for (int j = 0; ok && j < r->at.nnw; j++)
        ok = (more[j] = an_replay_sim(d, comp, n, start, r->at.nw[j], r->prefetch, recv)) >= 0;
    free(d);
    if (!ok)
        return;
    r->at.steps += n - 1;
    r->at.measured_ms += (double)(t[n - 1].f->t1 - t[0].f->t1) / 1e6;
    r->at.now_ms += now;
    for (int j = 0; j < r->at.npf; j++)
        r->at.pf_ms[j] += alt[j];
    for (int j = 0; j < r->at.nnw; j++)
        r->at.nw_ms[j] += more[j];
}

/* The hand-over: from a batch done in its worker (or the trainer's
 * request, if later) to the trainer having it; the median. */
static double handover(const tfetch *t, size_t n)
{
    double *v = malloc(n * sizeof *v);
    size_t k = 0;
    for (size_t i = 0; v && i < n; i++) {
        if (!t[i].b)
            continue;
        const uint64_t from = t[i].b->t1 > t[i].f->t0 ? t[i].b->t1 : t[i].f->t0;
        v[k++] = t[i].f->t1 > from ? (double)(t[i].f->t1 - from) / 1e6 : 0;
    }
    const double h = k ? an_percentile(v, k, 0.5) : 0;
    free(v);
    return h;
}

void an_replay(an_result *res)
{
    an_replay_result *r = &res->replay;
    memset(r, 0, sizeof *r);
    const an_cpu_log *l = res->thread ? res->thread->cpu : NULL;
    const int nw = res->cur_workers;
    if (!l || !l->nf || nw < 1 || nw > MAX_WORKERS || !res->nworkers || !res->trainer)
        return;
    r->workers = nw;
    r->prefetch = an_loader_prefetch(res);
    static const int factors[] = AN_REPLAY_FACTORS;
    for (size_t j = 0; j < sizeof factors / sizeof factors[0] && r->at.npf < AN_REPLAY_NPF; j++)
        r->at.pf[r->at.npf++] = r->prefetch * factors[j];
    for (int j = 0; j < AN_REPLAY_NNW && nw + 1 + j <= MAX_WORKERS; j++)
        r->at.nw[r->at.nnw++] = nw + 1 + j;
    size_t nb = 0;
    span *b = worker_batches(res, &nb);
    tfetch *t = b ? malloc(l->nf * sizeof *t) : NULL;
    size_t nt = 0;
    const size_t matched = t ? match(l, main_loader(l), b, nb, t, &nt) : 0;
    if (t && nt && (double)matched >= AN_REPLAY_MATCHED * (double)nt) {
        r->recv_ms = handover(t, nt);
        /* stretches: an iterator's batches from its first (index 0), in
         * order, each matched */
        for (size_t i = 0; i < nt;) {
            size_t n = 0;
            if (t[i].b && t[i].rel == 0)
                while (i + n < nt && t[i + n].b && t[i + n].rel == (uint64_t)n)
                    n++;
            if (n >= 3)
                replay_stretch(t + i, n, r->recv_ms, r);
            i += n ? n : 1;
        }
    }
    free(t);
    free(b);
    if (r->at.steps < 3 || r->at.measured_ms <= 0) {
        r->at.steps = 0;
        return;
    }
    const double k = (double)r->at.steps;
    r->at.measured_ms /= k;
    r->at.now_ms /= k;
    for (int j = 0; j < r->at.npf; j++)
        r->at.pf_ms[j] /= k;
    for (int j = 0; j < r->at.nnw; j++)
        r->at.nw_ms[j] /= k;
    r->ok = 1;
}
