/* test_an_timeline.c — the streaming sweep (analyzer/load/an_timeline.c) against
 * hand-computed answers and against a brute-force reference on random
 * interval sets: union across overlapping streams, class priority, steps with
 * no GPU work, idle at step edges, work straddling step boundaries (clipped
 * by snapshot differences), out-of-order arrival within the lag window;
 * random sets with and without a watched slot, and sets where each interval
 * starts after the last one ended (the path for one interval active alone). */
#include <stdint.h>
#include <string.h>

#include "model/an_model.h"
#include "load/an_timeline.h"
#include "gs_check.h"

#define MAXQ 4096

typedef struct qres {
    int have;
    an_snap s;
} qres;
static qres Q[MAXQ];

static void on_snap(void *ctx, unsigned slot, uint64_t qid, const an_snap *s)
{
    (void)ctx;
    (void)slot;
    if (qid < MAXQ) {
        Q[qid].have = 1;
        Q[qid].s = *s;
    }
}

/* step value of [Q[a], Q[b]) */
static an_stepv stepv(unsigned a, unsigned b)
{
    an_stepv v;
    an_stepv_from_snaps(&v, &Q[a].s, &Q[b].s);
    return v;
}

static void test_basic(void)
{
    memset(Q, 0, sizeof Q);
    an_tl *tl = an_tl_new(on_snap, NULL);
    int s0 = an_tl_gpu_source(tl, 0, 7), s1 = an_tl_gpu_source(tl, 0, 8);
    ASSERT_TRUE(s0 >= AN_TL_MAX_SLOTS && s1 >= AN_TL_MAX_SLOTS && s0 != s1);
    ASSERT_EQ(an_tl_gpu_source(tl, 0, 7), s0);
    /* step 1 = [100, 200): kernel 90..130 straddles the start, copy (pinned)
     * 120..150 overlaps it on another stream, kernel 190..230 straddles the
     * end. Host slot 0 waits (data) 150..170 and is in a pageable copy call
     * 160..185. */
    an_tl_query(tl, 0, 100, 0);
    an_tl_add_gpu(tl, s0, 90, 130, AN_BUSY_COMPUTE);
    an_tl_add_gpu(tl, s1, 120, 150, AN_BUSY_H2D_PINNED);
    an_tl_add_host(tl, 0, 150, 170, AN_CLS_DW);
    an_tl_add_host(tl, 0, 160, 185, AN_CLS_PG);
    an_tl_add_gpu(tl, s0, 190, 230, AN_BUSY_COMPUTE);
    an_tl_query(tl, 0, 200, 1);
    /* step 2 = [200, 300): no GPU work after 230; idle at the end */
    an_tl_query(tl, 0, 300, 2);
    /* step 3 = [300, 400): nothing at all */
    an_tl_query(tl, 0, 400, 3);
    an_tl_finish(tl);
    for (int i = 0; i < 4; i++)
        ASSERT_TRUE(Q[i].have);
    an_stepv v = stepv(0, 1);
    ASSERT_EQ(v.t1 - v.t0, 100);
    ASSERT_EQ(v.busy[AN_BUSY_COMPUTE], 30 + 10);   /* 100..130, 190..200 */
    ASSERT_EQ(v.busy[AN_BUSY_H2D_PINNED], 20);     /* 130..150 */
    ASSERT_EQ(v.idle_dw, 20);                      /* 150..170 */
    ASSERT_EQ(v.idle_pg, 15);                      /* 170..185 */
    ASSERT_EQ(v.idle_host, 5);                     /* 185..190 */
    v = stepv(1, 2);
    ASSERT_EQ(v.busy[AN_BUSY_COMPUTE], 30);
    ASSERT_EQ(v.idle_host, 70);
    v = stepv(2, 3);
    ASSERT_EQ(an_stepv_busy(&v), 0);
    ASSERT_EQ(v.idle_host, 100);
    an_tl_stats st;
    an_tl_get_stats(tl, &st);
    ASSERT_EQ(st.late_items, 0);
    an_tl_free(tl);
}

static void test_priority(void)
{
    memset(Q, 0, sizeof Q);
    an_tl *tl = an_tl_new(on_snap, NULL);
    int a = an_tl_gpu_source(tl, 0, 1), b = an_tl_gpu_source(tl, 0, 2),
        c = an_tl_gpu_source(tl, 1, 1);
    an_tl_query(tl, 3, 0, 0);
    /* comm 0..100 under compute 20..50; pageable H2D 90..130 (under comm to
     * 100) and pinned 100..140
     * 100..140; memset 140..160 */
    an_tl_add_gpu(tl, a, 0, 100, AN_BUSY_COMM);
    an_tl_add_gpu(tl, b, 20, 50, AN_BUSY_COMPUTE);
    an_tl_add_gpu(tl, c, 90, 130, AN_BUSY_H2D_PAGEABLE);
    an_tl_add_gpu(tl, b, 100, 140, AN_BUSY_H2D_PINNED);
    an_tl_add_gpu(tl, a, 140, 160, AN_BUSY_OTHER);
    /* slot 3: data wait and pageable copy overlap while the GPU is idle */
    an_tl_add_host(tl, 3, 150, 200, AN_CLS_PG);
    an_tl_add_host(tl, 3, 170, 180, AN_CLS_DW);
    an_tl_query(tl, 3, 200, 1);
    an_tl_finish(tl);
    an_stepv v = stepv(0, 1);
    ASSERT_EQ(v.busy[AN_BUSY_COMPUTE], 30);
    ASSERT_EQ(v.busy[AN_BUSY_COMM], 70); /* 0..20, 50..100 */
    ASSERT_EQ(v.busy[AN_BUSY_H2D_PAGEABLE], 30); /* 100..130 */
    ASSERT_EQ(v.busy[AN_BUSY_H2D_PINNED], 10);   /* 130..140 */
    ASSERT_EQ(v.busy[AN_BUSY_OTHER], 20);
    ASSERT_EQ(v.idle_dw, 10);
    ASSERT_EQ(v.idle_pg, 30);
    ASSERT_EQ(v.idle_host, 0);
    an_tl_free(tl);
}

/* Fetch time beside the split (AN_CLS_FE): a fetch that overlaps GPU work
 * counts fully as fetch and only its GPU-idle part as data wait; fetches
 * that overlap are counted once; a fetch across a step boundary is split
 * between the steps; another slot's fetch is not this slot's. */
static void test_fetch(void)
{
    memset(Q, 0, sizeof Q);
    an_tl *tl = an_tl_new(on_snap, NULL);
    const int g = an_tl_gpu_source(tl, 0, 7);
    an_tl_query(tl, 1, 0, 0);
    /* step [0, 100): a kernel 0..40 runs while the fetch 20..60 begins */
    an_tl_add_gpu(tl, g, 0, 40, AN_BUSY_COMPUTE);
    an_tl_add_host(tl, 1, 20, 60, AN_CLS_DW);
    an_tl_add_host(tl, 1, 20, 60, AN_CLS_FE);
    an_tl_query(tl, 1, 100, 1);
    /* step [100, 200): fetches 110..150 and 130..170 overlap (as a marker
     * pair and an NVTX range of one fetch might); slot 2 fetches 100..200 */
    an_tl_add_host(tl, 1, 110, 150, AN_CLS_FE);
    an_tl_add_host(tl, 1, 130, 170, AN_CLS_FE);
    an_tl_add_host(tl, 2, 100, 200, AN_CLS_FE);
    an_tl_query(tl, 1, 200, 2);
    /* steps [200, 300) and [300, 400): the fetch 260..330 crosses the
     * boundary; then 350..360 and 370..375, each alone on the timeline
     * (the gaps are no fetch time) */
    an_tl_add_host(tl, 1, 260, 330, AN_CLS_DW);
    an_tl_add_host(tl, 1, 260, 330, AN_CLS_FE);
    an_tl_query(tl, 1, 300, 3);
    an_tl_add_host(tl, 1, 350, 360, AN_CLS_FE);
    an_tl_add_host(tl, 1, 370, 375, AN_CLS_FE);
    an_tl_query(tl, 1, 400, 4);
    an_tl_finish(tl);
    for (int i = 0; i < 5; i++)
        ASSERT_TRUE(Q[i].have);
    an_stepv v = stepv(0, 1);
    ASSERT_EQ(v.fetch, 40);   /* 20..60 */
    ASSERT_EQ(v.idle_dw, 20); /* 40..60: the GPU was busy before */
    ASSERT_EQ(v.busy[AN_BUSY_COMPUTE] + v.idle_dw + v.idle_pg + v.idle_host, 100);
    v = stepv(1, 2);
    ASSERT_EQ(v.fetch, 60);   /* 110..170 once */
    ASSERT_EQ(v.idle_dw, 0);  /* no data-wait interval: fetch takes no part in the split */
    ASSERT_EQ(v.idle_host, 100);
    v = stepv(2, 3);
    ASSERT_EQ(v.fetch, 40);   /* 260..300 */
    ASSERT_EQ(v.idle_dw, 40);
    v = stepv(3, 4);
    ASSERT_EQ(v.fetch, 30 + 10 + 5); /* 300..330, 350..360, 370..375 */
    ASSERT_EQ(v.idle_dw, 30);
    ASSERT_EQ(v.idle_host, 70);
    an_tl_free(tl);
}

/* ---- random sets against a brute-force reference ------------------------------ */

typedef struct iv {
    uint64_t s, e;
    int kind; /* 0..4 busy class, 5 DW, 6 PG, 8 FE (enum an_cls) */
    int src;  /* GPU: stream index; host: slot */
} iv;

static uint64_t rs = 88172645463325252ull;
static uint64_t rnd(void)
{
    rs ^= rs << 13;
    rs ^= rs >> 7;
    rs ^= rs << 17;
    return rs;
}

/* Reference snapshot of `slot` at t: walk unit time steps from origin. */
static void ref_snap(const iv *v, int n, uint64_t origin, uint64_t t, int slot, an_snap *out)
{
    memset(out, 0, sizeof *out);
    for (uint64_t x = origin; x < t; x++) {
        int best = 99, dw = 0, pg = 0, fe = 0;
        for (int i = 0; i < n; i++) {
            if (x < v[i].s || x >= v[i].e)
                continue;
            if (v[i].kind < AN_NBUSY) {
                if (v[i].kind < best)
                    best = v[i].kind;
            } else if (v[i].src == slot) {
                if (v[i].kind == AN_CLS_DW)
                    dw = 1;
                else if (v[i].kind == AN_CLS_PG)
                    pg = 1;
                else
                    fe = 1;
            }
        }
        out->fetch += fe; /* whatever the GPU does */
        if (best < AN_NBUSY) {
            out->busy[best]++;
        } else {
            out->idle++;
            if (dw)
                out->idle_dw++;
            else if (pg)
                out->idle_pg++;
        }
    }
}

/* pieces of the watched slot (an_tl_set_piece_fn) */
#define MAXP 8192
typedef struct pc {
    uint64_t t0, t1;
    unsigned cls;
} pc;
static pc P[MAXP];
static int NP;

static void on_piece(void *ctx, uint64_t t0, uint64_t t1, unsigned cls)
{
    (void)ctx;
    if (NP < MAXP)
        P[NP++] = (pc){t0, t1, cls};
}

/* Time of class cls in the pieces, clipped to [a, b). */
static uint64_t piece_sum(uint64_t a, uint64_t b, unsigned cls)
{
    uint64_t sum = 0;
    for (int i = 0; i < NP; i++) {
        if (P[i].cls != cls)
            continue;
        uint64_t s = P[i].t0 > a ? P[i].t0 : a, e = P[i].t1 < b ? P[i].t1 : b;
        if (e > s)
            sum += e - s;
    }
    return sum;
}

/* Flags of a random round: pieces of slot 0 watched; every interval after
 * the one before it ended (at most one active at a time: the sweep's path
 * for the next interval of one active alone, against the same reference). */
enum { RND_WATCH = 1, RND_SERIAL = 2 };

/* A host interval's class: data wait, pageable copy or fetch. */
static int host_kind(void)
{
    const int k = (int)(rnd() % 3);
    return k == 2 ? AN_CLS_FE : AN_CLS_DW + k;
}

static void test_random(int round, int flags)
{
    memset(Q, 0, sizeof Q);
    enum { N = 120, NQ = 30 };
    iv v[N];
    int nstreams = 1 + (int)(rnd() % 4);
    /* per source, intervals in start order (non-overlapping for host slots) */
    uint64_t next_gpu[4] = {0}, next_host[2] = {0}, next_any = 0;
    for (int i = 0; i < N; i++) {
        if (flags & RND_SERIAL) {
            /* one source, class and slot at a time, often the same again */
            if (i && rnd() % 3 == 0) {
                v[i] = v[i - 1];
            } else if (rnd() % 3) {
                v[i].kind = (int)(rnd() % AN_NBUSY);
                v[i].src = (int)(rnd() % (unsigned)nstreams);
            } else {
                v[i].kind = host_kind();
                v[i].src = (int)(rnd() % 2);
            }
            v[i].s = next_any + rnd() % 20;
            v[i].e = v[i].s + 1 + rnd() % 30;
            next_any = v[i].e;
            continue;
        }
        if (rnd() % 3) {
            int st = (int)(rnd() % (unsigned)nstreams);
            uint64_t s = next_gpu[st] + rnd() % 40;
            uint64_t e = s + 1 + rnd() % 30;
            next_gpu[st] = e;
            v[i] = (iv){s, e, (int)(rnd() % AN_NBUSY), st};
        } else {
            int sl = (int)(rnd() % 2);
            uint64_t s = next_host[sl] + rnd() % 60;
            uint64_t e = s + 1 + rnd() % 40;
            next_host[sl] = e;
            v[i] = (iv){s, e, host_kind(), sl};
        }
    }
    uint64_t qt[NQ];
    int qslot[NQ];
    for (int q = 0; q < NQ; q++) {
        qt[q] = (uint64_t)q * 40;
        qslot[q] = q % 2;
    }
    an_tl *tl = an_tl_new(on_snap, NULL);
    NP = 0;
    if (flags & RND_WATCH)
        an_tl_set_piece_fn(tl, 0, on_piece, NULL);
    int src[4];
    for (int k = 0; k < 4; k++)
        src[k] = an_tl_gpu_source(tl, (uint32_t)k / 2, (uint64_t)k);
    /* feed: queries first (they are in time order per slot), then the
     * intervals in an interleaving that keeps each source in order; sweep now
     * and then (the lag window of 1 s covers everything) */
    for (int q = 0; q < NQ; q++)
        an_tl_query(tl, (unsigned)qslot[q], qt[q], (uint64_t)q);
    for (int i = 0; i < N; i++) {
        if (v[i].kind < AN_NBUSY)
            an_tl_add_gpu(tl, src[v[i].src], v[i].s, v[i].e, (unsigned)v[i].kind);
        else
            an_tl_add_host(tl, (unsigned)v[i].src, v[i].s, v[i].e, (unsigned)v[i].kind);
        if (i % 17 == 0)
            an_tl_sweep(tl);
    }
    an_tl_finish(tl);
    int bad = 0;
    for (int q = 1; q < NQ; q++) {
        if (!Q[q].have || !Q[0].have) {
            bad++;
            continue;
        }
        an_snap a, b;
        ref_snap(v, N, 0, qt[0], qslot[q], &a);
        ref_snap(v, N, 0, qt[q], qslot[q], &b);
        /* compare increments from query 0 (the engine's origin) */
        for (int c = 0; c < AN_NBUSY; c++)
            bad += (b.busy[c] - a.busy[c]) != (Q[q].s.busy[c] - Q[0].s.busy[c]);
        bad += (b.idle - a.idle) != (Q[q].s.idle - Q[0].s.idle);
        /* idle_dw/pg are per slot: compare against the same slot's earlier query */
        int p = q - 2;
        if (p >= 0) {
            an_snap c0;
            ref_snap(v, N, 0, qt[p], qslot[q], &c0);
            bad += (b.idle_dw - c0.idle_dw) != (Q[q].s.idle_dw - Q[p].s.idle_dw);
            bad += (b.idle_pg - c0.idle_pg) != (Q[q].s.idle_pg - Q[p].s.idle_pg);
            bad += (b.fetch - c0.fetch) != (Q[q].s.fetch - Q[p].s.fetch);
        }
    }
    /* pieces: ordered, disjoint, merged, and between two queries of slot 0
     * they sum to the snapshot difference class by class */
    for (int i = 1; i < NP; i++)
        bad += P[i].t0 < P[i - 1].t1 || (P[i].t0 == P[i - 1].t1 && P[i].cls == P[i - 1].cls);
    for (int q = 2; (flags & RND_WATCH) && q < NQ; q += 2) {
        const an_snap *a = &Q[q - 2].s, *b = &Q[q].s;
        an_stepv sv;
        an_stepv_from_snaps(&sv, a, b);
        for (unsigned c = 0; c < AN_NBUSY; c++)
            bad += piece_sum(a->t, b->t, c) != sv.busy[c];
        bad += piece_sum(a->t, b->t, AN_PC_DW) != sv.idle_dw;
        bad += piece_sum(a->t, b->t, AN_PC_PG) != sv.idle_pg;
        bad += piece_sum(a->t, b->t, AN_PC_HOST) != sv.idle_host;
    }
    if (bad)
        fprintf(stderr, "random round %d (flags %d): %d mismatches\n", round, flags, bad);
    ASSERT_EQ(bad, 0);
    an_tl_free(tl);
}

/* GPU records that arrive after host records far ahead (CUPTI buffers):
 * within the lag window the answer is exact; behind it, clipped and counted. */
static void test_late(void)
{
    memset(Q, 0, sizeof Q);
    an_tl *tl = an_tl_new(on_snap, NULL);
    int g = an_tl_gpu_source(tl, 0, 0);
    const uint64_t MS = 1000000;
    an_tl_query(tl, 0, 0, 0);
    an_tl_query(tl, 0, 100 * MS, 1);
    an_tl_add_host(tl, 0, 400 * MS, 500 * MS, AN_CLS_DW);
    an_tl_sweep(tl); /* watermark 500ms - 1s: nothing swept */
    an_tl_add_gpu(tl, g, 10 * MS, 60 * MS, AN_BUSY_COMPUTE);
    an_tl_query(tl, 0, 600 * MS, 2);
    an_tl_finish(tl);
    an_stepv v = stepv(0, 1);
    ASSERT_EQ(v.busy[AN_BUSY_COMPUTE], 50 * MS);
    v = stepv(1, 2);
    ASSERT_EQ(v.idle_dw, 100 * MS);
    an_tl_stats st;
    an_tl_get_stats(tl, &st);
    ASSERT_EQ(st.late_items, 0);

    /* now 3 s late: the sweep has passed it */
    memset(Q, 0, sizeof Q);
    an_tl *t2 = an_tl_new(on_snap, NULL);
    g = an_tl_gpu_source(t2, 0, 0);
    an_tl_query(t2, 0, 0, 0);
    an_tl_add_host(t2, 0, 1000 * MS, 4000 * MS, AN_CLS_DW);
    an_tl_query(t2, 0, 4000 * MS, 1);
    an_tl_add_host(t2, 0, 4500 * MS, 4600 * MS, AN_CLS_DW);
    an_tl_sweep(t2); /* watermark 3.5 s */
    an_tl_add_gpu(t2, g, 500 * MS, 1500 * MS, AN_BUSY_COMPUTE);
    an_tl_finish(t2);
    an_tl_get_stats(t2, &st);
    ASSERT_EQ(st.late_items, 1);
    ASSERT_EQ(st.late_ns, 500 * MS); /* swept to the DW start (1 s) before it came */
    ASSERT_TRUE(st.lag_ns > 1000 * MS);
    an_tl_free(t2);
    an_tl_free(tl);
}

/* Items of one source out of start order: a host thread's two overlapping
 * stretches of work fed one after the other (each item of the second goes
 * back among the first's), GPU records in blocks written backwards, in a
 * ring whose start is not at index 0 (an earlier stretch was swept): the
 * snapshots are the brute-force reference's. */
static void test_interleaved(void)
{
    memset(Q, 0, sizeof Q);
    enum { NA = 90, NG = 60, NV = 200 + 2 * NA + NG, NQ = 20 };
    static iv v[NV];
    int n = 0;
    an_tl *tl = an_tl_new(on_snap, NULL);
    const int g = an_tl_gpu_source(tl, 0, 0);
    an_tl_query(tl, 0, 0, 0);
    /* 200 intervals swept away first: slot 0's ring (256 items) then starts
     * at index 200, and what follows wraps around its end */
    for (int i = 0; i < 200; i++, n++) {
        v[n] = (iv){(uint64_t)i * 4, (uint64_t)i * 4 + 2, AN_CLS_DW, 0};
        an_tl_add_host(tl, 0, v[n].s, v[n].e, AN_CLS_DW);
    }
    an_tl_finish(tl);
    const uint64_t t0 = 1000;
    for (int q = 1; q < NQ; q++)
        an_tl_query(tl, 0, t0 + (uint64_t)q * 100, (uint64_t)q);
    /* stretch A, then stretch B starting inside it (pipe reads, class DW,
     * and pageable copies, class PG, alternate) */
    for (int b = 0; b < 2; b++)
        for (int i = 0; i < NA; i++, n++) {
            const uint64_t s = t0 + (uint64_t)b * 333 + (uint64_t)i * 17 + rnd() % 5;
            const int cls = (i % 3) ? AN_CLS_DW : AN_CLS_PG;
            v[n] = (iv){s, s + 4 + rnd() % 9, cls, 0};
            an_tl_add_host(tl, 0, v[n].s, v[n].e, (unsigned)cls);
        }
    /* GPU: blocks of 6 kernels, each block written last kernel first */
    for (int blk = 0; blk < NG / 6; blk++)
        for (int k = 5; k >= 0; k--, n++) {
            const uint64_t s = t0 + (uint64_t)blk * 190 + (uint64_t)k * 30;
            v[n] = (iv){s, s + 20, AN_BUSY_COMPUTE, 0};
            an_tl_add_gpu(tl, g, v[n].s, v[n].e, AN_BUSY_COMPUTE);
        }
    an_tl_finish(tl);
    an_tl_stats st;
    an_tl_get_stats(tl, &st);
    ASSERT_EQ(st.late_items, 0);
    int bad = 0;
    for (int q = 2; q < NQ; q++) {
        an_snap a, b;
        ref_snap(v, n, 0, t0 + (uint64_t)(q - 1) * 100, 0, &a);
        ref_snap(v, n, 0, t0 + (uint64_t)q * 100, 0, &b);
        const an_snap *x = &Q[q - 1].s, *y = &Q[q].s;
        bad += !Q[q].have || !Q[q - 1].have;
        bad += (b.busy[0] - a.busy[0]) != (y->busy[0] - x->busy[0]);
        bad += (b.idle - a.idle) != (y->idle - x->idle);
        bad += (b.idle_dw - a.idle_dw) != (y->idle_dw - x->idle_dw);
        bad += (b.idle_pg - a.idle_pg) != (y->idle_pg - x->idle_pg);
    }
    ASSERT_EQ(bad, 0);
    an_tl_free(tl);

    /* further back than the insertion looks (4096 items): the item stays
     * out of order, is swept late and counted; later ones still find their
     * place among the rest */
    an_tl *t2 = an_tl_new(on_snap, NULL);
    for (uint64_t k = 0; k < 5000; k++)
        an_tl_add_host(t2, 1, 100 + k * 10, 100 + k * 10 + 5, AN_CLS_DW);
    an_tl_add_host(t2, 1, 1, 3, AN_CLS_DW);         /* 2 ns, all of it behind */
    an_tl_add_host(t2, 1, 10055, 10057, AN_CLS_PG); /* in its place: on time */
    an_tl_finish(t2);
    an_tl_get_stats(t2, &st);
    ASSERT_EQ(st.late_items, 1);
    ASSERT_EQ(st.late_ns, 2);
    ASSERT_EQ(st.first_ts, 100);
    ASSERT_EQ(st.idle, 49995); /* from the first start to the last end: no GPU */
    an_tl_free(t2);
}

/* Many intervals on one stream: the queue grows and shrinks, memory stays
 * bounded by the lag window. */
static void test_volume(void)
{
    memset(Q, 0, sizeof Q);
    an_tl *tl = an_tl_new(on_snap, NULL);
    int g = an_tl_gpu_source(tl, 0, 0);
    an_tl_query(tl, 0, 0, 0);
    uint64_t t = 0;
    for (int i = 0; i < 2000000; i++) {
        an_tl_add_gpu(tl, g, t, t + 700, (unsigned)(i % 2));
        t += 1000;
        if (i % 4096 == 0)
            an_tl_sweep(tl);
    }
    an_tl_query(tl, 0, t, 1);
    an_tl_finish(tl);
    an_stepv v = stepv(0, 1);
    ASSERT_EQ(v.busy[0] + v.busy[1], 2000000ull * 700);
    ASSERT_EQ(v.idle_host, 2000000ull * 300);
    an_tl_free(tl);
}

static void test_percentile(void)
{
    const double v[] = {5, 1, 4, 2, 3, 10};
    ASSERT_TRUE(an_percentile(v, 6, 0.5) == 3.5);
    ASSERT_TRUE(an_percentile(v, 5, 0.5) == 3);
    ASSERT_TRUE(an_percentile(v, 6, 0.9) == 10); /* nearest rank: ceil(5.4) = 6th */
    ASSERT_TRUE(an_percentile(v, 0, 0.5) == 0);
    /* snapshots out of order never give negative parts; rest goes to host */
    an_snap a = {0}, b = {0};
    a.t = 100;
    b.t = 200;
    b.busy[0] = 30;
    b.idle_dw = 20;
    an_stepv sv;
    an_stepv_from_snaps(&sv, &a, &b);
    ASSERT_EQ(sv.idle_host, 50);
    ASSERT_EQ(an_stepv_busy(&sv), 30);
}

int main(void)
{
    test_percentile();
    test_basic();
    test_priority();
    test_fetch();
    for (int r = 0; r < 200; r++)
        for (int flags = 0; flags < 4; flags++)
            test_random(r, flags);
    test_late();
    test_interleaved();
    test_volume();
    return gs_check_done("test_an_timeline");
}
