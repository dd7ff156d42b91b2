/* test_an_collectives.c — collectives matched across a job's ranks
 * (analyzer/model/an_collectives.h), from hand-built trainers: one
 * all-reduce a step, ending on every rank at the same instant. Who waited
 * for whom and how long, the straggler with its cost, share and cause
 * from the timeline snapshots between collectives; a rank on another host
 * put on the job's clock by the ends; the last arriver changing from step
 * to step (no straggler, said so); a balanced job; a rank without
 * collectives (not used). The rules are docs/report-schema.md's ("Ranks
 * and the straggler"). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "model/an_ranks.h"
#include "gs_check.h"

#define NEAR(a, b, tol) (fabs((a) - (b)) < (tol))
#define MS 1000000ull
#define STEP (100 * MS)
#define END (95 * MS) /* every all-reduce ends 95 ms into its step */
#define NSTEPS 6      /* the first is warm-up */
#define TID 77

/* One rank: its trainer, training thread and steps, and an all-reduce a
 * step. In step i it waits dw[i] ms for data (GPU idle), computes 20 ms,
 * then reaches the all-reduce (dw + 20 ms in), which runs to END; then 5 ms
 * of host to the step's end. shift: its clock ahead of the job's (ns). */
typedef struct fake {
    an_proc p;
    an_thread th;
} fake;

static an_snap snap_at(const uint64_t *dw, size_t i, int at_end, uint64_t shift)
{
    /* cumulative over steps 0..i-1, plus step i up to the collective's start or end */
    an_snap s;
    memset(&s, 0, sizeof s);
    for (size_t j = 0; j < i; j++) {
        s.idle_dw += dw[j] * MS;
        s.busy[AN_BUSY_COMPUTE] += 20 * MS;
        s.busy[AN_BUSY_COMM] += END - (dw[j] + 20) * MS;
        s.idle += dw[j] * MS + 5 * MS;
    }
    s.idle_dw += dw[i] * MS;
    s.idle += dw[i] * MS;
    s.busy[AN_BUSY_COMPUTE] += 20 * MS;
    if (at_end)
        s.busy[AN_BUSY_COMM] += END - (dw[i] + 20) * MS;
    s.t = shift + i * STEP + (at_end ? END : (dw[i] + 20) * MS);
    return s;
}

static void set_rank(an_job *job, size_t k, fake *f, int32_t rank, const char *host,
                     const uint64_t *dw, uint64_t shift, int64_t pair, int with_colls)
{
    an_rank *R = &job->ranks[k];
    memset(R, 0, sizeof *R);
    memset(f, 0, sizeof *f);
    R->rank = rank;
    R->host = host;
    R->ok = 1;
    f->p.host = (char *)host;
    f->p.mono_ns = 1000 * MS;
    f->p.real_ns = (uint64_t)((int64_t)f->p.mono_ns + pair);
    f->th.tid = TID;
    R->res.trainer = &f->p;
    R->res.thread = &f->th;
    R->res.steps = calloc(NSTEPS, sizeof *R->res.steps);
    R->res.nsteps = NSTEPS;
    R->res.measured = NSTEPS - 1;
    R->res.share[AN_SH_COMM] = 0.5;
    for (size_t i = 0; i < NSTEPS; i++) {
        an_stepv *v = &R->res.steps[i].v;
        v->t0 = shift + i * STEP;
        v->t1 = v->t0 + STEP;
        v->idle_dw = dw[i] * MS;
        v->busy[AN_BUSY_COMPUTE] = 20 * MS;
        v->busy[AN_BUSY_COMM] = END - (dw[i] + 20) * MS;
        v->idle_host = 5 * MS;
        R->res.steps[i].warmup = i == 0;
    }
    for (size_t i = 0; with_colls && i < NSTEPS; i++) {
        const uint64_t t0 = shift + i * STEP;
        long prev;
        const long c = an_colls_add(&f->p.colls, t0 + (dw[i] + 20) * MS, t0 + END, 0, 13, 5,
                                    "ncclDevKernel_AllReduce_Sum_f32_RING_LL", TID, &prev);
        ASSERT_EQ(c, (long)i);
        ASSERT_EQ(prev, (long)i - 1);
        const an_snap a = snap_at(dw, i, 0, shift), b = snap_at(dw, i, 1, shift);
        an_colls_snap(&f->p.colls, an_coll_qid((size_t)c, 0), &a);
        an_colls_snap(&f->p.colls, an_coll_qid((size_t)c, 1), &b);
    }
}

static void job_init(an_job *job, size_t n)
{
    memset(job, 0, sizeof *job);
    job->ranks = calloc(n, sizeof *job->ranks);
    job->nranks = n;
}

static void job_done(an_job *job, fake *f)
{
    for (size_t k = 0; k < job->nranks; k++) {
        free(job->ranks[k].res.steps);
        free(job->ranks[k].waited_for_ns);
        an_colls_free(&f[k].p.colls);
    }
    an_coll_sum_free(&job->coll);
    free(job->ranks);
}

static const uint64_t FAST[NSTEPS] = {2, 2, 2, 2, 2, 2};
static const uint64_t SLOW[NSTEPS] = {60, 60, 60, 60, 60, 60};

static void test_data_straggler_and_clock(void)
{
    an_job job;
    fake f[3];
    job_init(&job, 3);
    set_rank(&job, 0, &f[0], 0, "h0", FAST, 0, 0, 1);
    /* rank 1: another host whose clock reads 2 s more; its realtime pair is
     * 3 ms off the truth, which the collectives' ends take out */
    set_rank(&job, 1, &f[1], 1, "h1", FAST, 2000 * MS, -2000 * (int64_t)MS + 3 * (int64_t)MS, 1);
    set_rank(&job, 2, &f[2], 2, "h0", SLOW, 0, 0, 1);
    an_job_align(&job);
    const an_coll_sum *cs = &job.coll;
    ASSERT_TRUE(cs->used);
    ASSERT_EQ(cs->matched, NSTEPS);
    ASSERT_EQ(cs->counted, NSTEPS - 1);
    /* rank 2 arrives 58 ms after the others at every all-reduce */
    ASSERT_EQ(job.ranks[2].caused_ns, (NSTEPS - 1) * 2 * 58 * MS);
    ASSERT_EQ(job.ranks[0].waited_for_ns[2], (NSTEPS - 1) * 58 * MS);
    ASSERT_EQ(job.ranks[1].waited_for_ns[2], (NSTEPS - 1) * 58 * MS);
    ASSERT_EQ(job.ranks[2].waited_ns, 0);
    ASSERT_EQ(job.ranks[2].last_arrivals, NSTEPS - 1);
    ASSERT_EQ(job.straggler, 2);
    ASSERT_EQ(job.limiting, 2);
    ASSERT_TRUE(NEAR(job.straggler_share, 2 * 58.0 / 200.0, 1e-9));
    ASSERT_EQ(cs->cause, AN_CAUSE_DATA_WAIT);
    ASSERT_EQ(cs->late, NSTEPS - 1);
    ASSERT_EQ(cs->late_measured, NSTEPS - 1);
    ASSERT_TRUE(NEAR(cs->parts_ms[AN_CAUSE_DATA_WAIT], (NSTEPS - 1) * 58.0, 1e-6));
    ASSERT_TRUE(NEAR(cs->parts_ms[AN_CAUSE_COMPUTE], 0, 1e-6));
    ASSERT_TRUE(NEAR(cs->late_ms, (NSTEPS - 1) * 58.0, 1e-6));
    ASSERT_MSG(strstr(job.why, "rank 2 arrived last at 5 of 5 collectives") != NULL, "%s",
               job.why);
    ASSERT_MSG(strstr(job.why, "58.00 ms more than the other ranks waiting for data") != NULL,
               "%s", job.why);
    for (size_t i = 1; i < NSTEPS; i++)
        ASSERT_EQ(cs->step_rank[i], 2);
    ASSERT_EQ(cs->step_rank[0], -1); /* warm-up */
    /* the clocks: rank 1 put back by exactly its 2 s */
    ASSERT_EQ(job.ranks[1].clock_src, AN_CLOCK_COLLECTIVES);
    ASSERT_EQ(job.ranks[1].clock_offset_ns, -2000 * (int64_t)MS);
    ASSERT_EQ(job.ranks[1].clock_refined_ns, -3 * (int64_t)MS);
    ASSERT_EQ(job.ranks[1].clock_max_ns, 0);
    ASSERT_EQ(job.ranks[2].clock_src, AN_CLOCK_SAME_HOST);
    ASSERT_EQ(job.ranks[2].clock_colls, NSTEPS);
    job_done(&job, f);
}

static void test_last_arriver_changes(void)
{
    /* rank 1 late in steps 1 and 3, rank 2 in steps 2 and 4: each caused half */
    static const uint64_t A[NSTEPS] = {2, 60, 2, 60, 2, 2}, B[NSTEPS] = {2, 2, 60, 2, 60, 2};
    an_job job;
    fake f[3];
    job_init(&job, 3);
    set_rank(&job, 0, &f[0], 0, "h", FAST, 0, 0, 1);
    set_rank(&job, 1, &f[1], 1, "h", A, 0, 0, 1);
    set_rank(&job, 2, &f[2], 2, "h", B, 0, 0, 1);
    an_job_align(&job);
    ASSERT_TRUE(job.coll.used);
    ASSERT_EQ(job.straggler, -1);
    ASSERT_TRUE(job.coll.changes);
    ASSERT_EQ(job.ranks[1].caused_ns, 2 * 2 * 58 * MS);
    ASSERT_EQ(job.ranks[2].caused_ns, 2 * 2 * 58 * MS);
    ASSERT_EQ(job.coll.step_rank[1], 1);
    ASSERT_EQ(job.coll.step_rank[2], 2);
    ASSERT_EQ(job.coll.step_rank[5], -1);
    ASSERT_MSG(strstr(job.why, "the last arriver changes") != NULL &&
                   strstr(job.why, "rank 1 caused 50%, most at ncclDevKernel_AllReduce") != NULL &&
                   strstr(job.why, "rank 2 caused 50%") != NULL,
               "%s", job.why);
    job_done(&job, f);
}

static void test_balanced_and_unmatched(void)
{
    an_job job;
    fake f[2];
    job_init(&job, 2);
    set_rank(&job, 0, &f[0], 0, "h", FAST, 0, 0, 1);
    set_rank(&job, 1, &f[1], 1, "h", FAST, 0, 0, 1);
    an_job_align(&job);
    ASSERT_TRUE(job.coll.used);
    ASSERT_EQ(job.coll.cost_ns, 0);
    ASSERT_EQ(job.straggler, -1);
    ASSERT_TRUE(!job.coll.changes);
    job_done(&job, f);
    /* ends that do not agree (point-to-point sends between other pairs of
     * ranks): not one operation on every rank, not used, the clocks as the
     * aligned steps put them */
    job_init(&job, 2);
    set_rank(&job, 0, &f[0], 0, "h", FAST, 0, 0, 1);
    set_rank(&job, 1, &f[1], 1, "h", SLOW, 0, 0, 1);
    for (size_t i = 0; i < NSTEPS; i++)
        f[1].p.colls.v[i].end -= i * 3 * MS;
    an_job_align(&job);
    ASSERT_TRUE(!job.coll.used);
    ASSERT_MSG(strstr(job.coll.why_not, "the collectives' ends do not agree across the ranks "
                                        "(rank 1's lie a median ") != NULL,
               "%s", job.coll.why_not);
    ASSERT_EQ(job.ranks[1].clock_colls, 0);
    ASSERT_EQ(job.straggler, 1); /* the aligned steps: rank 1 waits for data */
    job_done(&job, f);
    /* a rank without collective kernels: the aligned steps decide */
    job_init(&job, 2);
    set_rank(&job, 0, &f[0], 0, "h", FAST, 0, 0, 1);
    set_rank(&job, 1, &f[1], 1, "h", SLOW, 0, 0, 0);
    an_job_align(&job);
    ASSERT_TRUE(!job.coll.used);
    ASSERT_MSG(strstr(job.coll.why_not, "1 of 2 ranks ran collective kernels") != NULL, "%s",
               job.coll.why_not);
    job_done(&job, f);
}

int main(void)
{
    test_data_straggler_and_clock();
    test_last_arriver_changes();
    test_balanced_and_unmatched();
    return gs_check_done("test_an_collectives");
}
