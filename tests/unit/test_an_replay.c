/* test_an_replay.c — a DataLoader's batches replayed in order
 * (analyzer/model/an_replay.c): the rule by hand on small cases (a slow
 * batch holds up the ones behind it; a worker is given a batch only when
 * the trainer takes one), the two steady states (trainer-bound and
 * worker-bound), a deeper prefetch never slower; and from a hand-built
 * trace: each trainer fetch matched to its worker's batch, the stretches
 * that start at an iterator's first batch (the trainer's index counting
 * on over the loader's iterators), the epoch's last fetch (no batch) and
 * another loader's fetches left out, a batch not marked never matched to
 * the last epoch's, and no replay when too few batches match. */
#include <math.h>
#include <string.h>

#include "load/an_samples.h"
#include "model/an_replay.h"
#include "gs_check.h"

#define NEAR(a, b, e) (fabs((a) - (b)) < (e))
#define MS 1000000ull

static void test_by_hand(void)
{
    /* 2 workers, 1 batch ahead each; batch 1 takes 10 ms: the trainer has
     * batch 1 at 10, and batch 2 (given to worker 0 when batch 0 was
     * taken, at 1) was ready since 2 */
    const double d[] = {1, 10, 1, 1, 1, 1}, comp[] = {2, 2, 2, 2, 2, 2};
    /* g: 1, 10, 12, 14, 16, 18 */
    ASSERT_MSG(NEAR(an_replay_sim(d, comp, 6, NULL, 2, 1, 0), 17, 1e-9), "%g",
               an_replay_sim(d, comp, 6, NULL, 2, 1, 0));
    /* one worker, one ahead: each batch is asked for when the last is taken */
    const double d1[] = {3, 3, 3}, c0[] = {0, 0, 0};
    ASSERT_TRUE(NEAR(an_replay_sim(d1, c0, 3, NULL, 1, 1, 0), 6, 1e-9));
    /* the hand-over is added to every batch; a worker's start delays its first */
    const double start[] = {0, 20};
    /* g0 = 1 + 0.5; batch 1 done at 20 + 10: g1 = 30.5; batch 2 (worker 0)
     * ready since 2.5: g2 = 30.5 + 2 + 0.5 */
    ASSERT_TRUE(NEAR(an_replay_sim(d, comp, 3, start, 2, 1, 0.5), 33 - 1.5, 1e-9));
    /* bad input */
    ASSERT_TRUE(an_replay_sim(d, comp, 0, NULL, 2, 1, 0) < 0);
    ASSERT_TRUE(an_replay_sim(d, comp, 6, NULL, 0, 1, 0) < 0);
    ASSERT_TRUE(an_replay_sim(d, comp, 6, NULL, 2, 0, 0) < 0);
}

#define N 400
static double dd[N], cc[N];

static void test_steady(void)
{
    /* workers quicker than the trainer: a step is its own time and the
     * hand-over */
    for (size_t i = 0; i < N; i++) {
        dd[i] = 5;
        cc[i] = 9;
    }
    ASSERT_TRUE(NEAR(an_replay_sim(dd, cc, N, NULL, 2, 2, 1) / (N - 1), 10, 1e-9));
    /* workers slower: 2 workers of 20 ms give a batch each 10 ms */
    for (size_t i = 0; i < N; i++) {
        dd[i] = 20;
        cc[i] = 1;
    }
    ASSERT_TRUE(NEAR(an_replay_sim(dd, cc, N, NULL, 2, 2, 0) / (N - 1), 10, 0.1));
    /* one batch in 8, scattered, 60 ms slower, the trainer 8 ms a step:
     * deeper is never slower, never under the trainer's own 8.5 ms, and
     * prefetch_factor 8 is over 20% quicker than 2 */
    for (size_t i = 0; i < N; i++) {
        dd[i] = 8.5 + ((uint32_t)(i * 2654435761u) < (1u << 29) ? 60 : 0); /* scattered */
        cc[i] = 8;
    }
    double prev = INFINITY;
    for (int pf = 1; pf <= 16; pf *= 2) {
        const double s = an_replay_sim(dd, cc, N, NULL, 2, pf, 0.5) / (N - 1);
        ASSERT_MSG(s <= prev + 1e-9 && s >= 8.5 - 1e-9, "pf %d: %g after %g", pf, s, prev);
        prev = s;
    }
    ASSERT_TRUE(an_replay_sim(dd, cc, N, NULL, 2, 2, 0.5) >
                1.2 * an_replay_sim(dd, cc, N, NULL, 2, 8, 0.5));
}

/* ---- from a trace ------------------------------------------------------------------- */

#define NB 40 /* batches an epoch */
static an_proc trainer, wprocs[4];
static an_thread tth, wth[4];
static an_cpu_log tlog, wlog[4];
static an_cpu_fetch tf[2 * (NB + 1) + 5], wf[4][NB];
static an_worker workers[4];
static an_kv cfg[1];

/* Two epochs of NB batches, each with 2 workers of its own (processes
 * wprocs[2e], [2e+1]); the trainer's fetch of batch i at 10 i ms (+ the
 * epoch's start) takes 1 ms, its batch done 1 ms before: 9 ms between
 * fetches, a hand-over of 1 ms; each epoch's last fetch ends it (no
 * batch), and the next epoch's first has its index (the Python side's
 * index counts the loader's batches). Batch i of each epoch takes 5 ms, in
 * worker i % 2. Between the epochs, 5 fetches of another loader (1). */
static void setup(an_result *res)
{
    memset(res, 0, sizeof *res);
    memset(wf, 0, sizeof wf);
    size_t nt = 0, nw[4] = {0};
    for (uint64_t e = 0; e < 2; e++) {
        const uint64_t at = 1000 * MS + e * 2000 * MS;
        for (uint64_t i = 0; i <= NB; i++) {
            const uint64_t t0 = at + i * 10 * MS;
            tf[nt++] = (an_cpu_fetch){t0, t0 + MS, 0, 0, e * NB + i, GS_MARK_PLAIN, 0};
            if (i == NB)
                continue;
            const int w = (int)(2 * e + i % 2);
            wf[w][nw[w]++] = (an_cpu_fetch){t0 - 6 * MS, t0 - MS, 0, 0, i, GS_MARK_PLAIN, 0};
        }
        for (uint64_t i = 0; e == 0 && i < 5; i++) {
            const uint64_t t0 = at + (NB + 10 + i) * 10 * MS;
            tf[nt++] = (an_cpu_fetch){t0, t0 + MS, 0, 0, i, GS_MARK_PLAIN, 1};
        }
    }
    tlog.f = tf;
    tlog.nf = nt;
    tth.cpu = &tlog;
    trainer.th = &tth;
    trainer.nth = 1;
    for (int w = 0; w < 4; w++) {
        wlog[w].f = wf[w];
        wlog[w].nf = nw[w];
        wth[w].cpu = &wlog[w];
        wprocs[w].th = &wth[w];
        wprocs[w].nth = 1;
        workers[w] = (an_worker){0};
        workers[w].p = &wprocs[w];
    }
    res->trainer = &trainer;
    res->thread = &tth;
    res->workers = workers;
    res->nworkers = 4;
    res->cur_workers = 2;
}

static void test_from_trace(void)
{
    an_result res;
    setup(&res);
    an_replay(&res);
    const an_replay_result *r = &res.replay;
    ASSERT_TRUE(r->ok && r->workers == 2 && r->prefetch == 2);
    ASSERT_MSG(r->at.steps == 2 * (NB - 1), "%zu", r->at.steps);
    ASSERT_TRUE(NEAR(r->at.measured_ms, 10, 1e-9) && NEAR(r->recv_ms, 1, 1e-9));
    ASSERT_MSG(NEAR(r->at.now_ms, 10, 1e-9), "%g", r->at.now_ms);
    ASSERT_TRUE(r->at.npf == 3 && r->at.pf[0] == 4 && r->at.pf[1] == 8 && r->at.pf[2] == 16);
    for (int j = 0; j < r->at.npf; j++)
        ASSERT_TRUE(NEAR(r->at.pf_ms[j], 10, 1e-9)); /* the trainer is the limit */
    /* the factor in force, from the DataLoader's configuration */
    snprintf(cfg[0].key, sizeof cfg[0].key, "prefetch_factor");
    snprintf(cfg[0].value, sizeof cfg[0].value, "3");
    trainer.cfg = cfg;
    trainer.ncfg = 1;
    an_replay(&res);
    ASSERT_TRUE(r->ok && r->prefetch == 3 && r->at.pf[0] == 6 && r->at.pf[2] == 24);
    trainer.cfg = NULL;
    trainer.ncfg = 0;
    /* too few batches matched: no replay */
    setup(&res);
    wlog[0].nf = 5; /* worker 0 of epoch 0 marked only its first 5 batches */
    an_replay(&res);
    ASSERT_TRUE(!r->ok); /* 15 of 82 fetches unmatched: under AN_REPLAY_MATCHED */
    /* epoch 1's batch 10 not marked: not taken for epoch 0's batch 10 */
    setup(&res);
    for (size_t k = 5; k + 1 < NB / 2; k++)
        wf[2][k] = wf[2][k + 1];
    wlog[2].nf--;
    an_replay(&res);
    ASSERT_MSG(r->ok && r->at.steps == (NB - 1) + 9, "%zu", r->at.steps);
    /* a batch no worker marked ends the stretch: the rest of that epoch is
     * not replayed */
    setup(&res);
    wf[0][NB / 2 - 1].key = 1000; /* its last batch's index unknown to the trainer */
    an_replay(&res);
    ASSERT_MSG(r->ok && r->at.steps == (NB - 3) + (NB - 1), "%zu", r->at.steps);
    /* no workers, or the trainer's fetches unknown: nothing */
    setup(&res);
    res.cur_workers = 0;
    an_replay(&res);
    ASSERT_TRUE(!r->ok && r->at.steps == 0);
    setup(&res);
    res.thread = NULL;
    an_replay(&res);
    ASSERT_TRUE(!r->ok);
}

int main(void)
{
    test_by_hand();
    test_steady();
    test_from_trace();
    return gs_check_done("test_an_replay");
}
