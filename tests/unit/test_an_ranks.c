/* test_an_ranks.c — a job's ranks from hand-built per-rank steps
 * (analyzer/model/an_ranks.h): the wait for other ranks measured from
 * communication kernels or inferred from the others' data wait, the rank
 * that limits each aligned step and the job, the straggler and its why,
 * balanced ranks with no straggler, warm-up and unequal step counts; and
 * the rank of a process from its own header or its ancestors'. The rules
 * are docs/report-schema.md's ("Ranks and the straggler"). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "model/an_ranks.h"
#include "gs_check.h"

#define NEAR(a, b, tol) (fabs((a) - (b)) < (tol))
#define MS 1000000ull

typedef struct part {
    uint64_t dw, host, compute, comm;
} part;

/* rank k of job: n steps of the given parts (ms), the first `warm` warm-up */
static void set_rank(an_job *job, size_t k, int32_t rank, size_t n, size_t warm, part p)
{
    an_rank *R = &job->ranks[k];
    memset(R, 0, sizeof *R);
    R->rank = rank;
    R->host = "h";
    R->ok = 1;
    R->res.steps = calloc(n, sizeof *R->res.steps);
    R->res.nsteps = n;
    uint64_t t = 0;
    for (size_t i = 0; i < n; i++) {
        an_stepv *v = &R->res.steps[i].v;
        v->t0 = t;
        v->idle_dw = p.dw * MS;
        v->idle_host = p.host * MS;
        v->busy[AN_BUSY_COMPUTE] = p.compute * MS;
        v->busy[AN_BUSY_COMM] = p.comm * MS;
        t += (p.dw + p.host + p.compute + p.comm) * MS;
        v->t1 = t;
        R->res.steps[i].warmup = i < warm;
    }
    R->res.measured = n - warm;
    R->res.step_ms_median = (double)(p.dw + p.host + p.compute + p.comm);
    R->res.share[AN_SH_COMM] = p.comm ? 0.5 : 0; /* only "any" matters */
}

static void job_init(an_job *job, size_t n)
{
    memset(job, 0, sizeof *job);
    job->ranks = calloc(n, sizeof *job->ranks);
    job->nranks = n;
}

static void job_done(an_job *job)
{
    for (size_t k = 0; k < job->nranks; k++)
        free(job->ranks[k].res.steps);
    free(job->ranks);
}

static void test_inferred_gloo(void)
{
    an_job job;
    job_init(&job, 2);
    set_rank(&job, 0, 0, 10, 1, (part){2, 98, 0, 0});
    set_rank(&job, 1, 1, 10, 1, (part){96, 4, 0, 0});
    an_job_align(&job);
    ASSERT_EQ(job.aligned, 9);
    ASSERT_EQ(job.ranks[0].peer_src, AN_PEER_INFERRED);
    ASSERT_TRUE(NEAR(job.ranks[0].peer_wait_share, 0.94, 1e-9)); /* min(98, 96 - 2) */
    ASSERT_TRUE(NEAR(job.ranks[1].peer_wait_share, 0, 1e-9));
    ASSERT_EQ(job.limiting, 1);
    ASSERT_EQ(job.straggler, 1);
    ASSERT_EQ(job.ranks[1].limits_steps, 9);
    ASSERT_TRUE(NEAR(job.step_ms, 100, 1e-9));
    ASSERT_MSG(strstr(job.why, "rank 1 waits for data 96% of its step; rank 0 waits for rank 1 "
                               "in collectives 94% of its step time (inferred") != NULL,
               "%s", job.why);
    job_done(&job);
}

static void test_measured_nccl_host_straggler(void)
{
    /* rank 2 is busy on the host; ranks 0 and 1 sit in NCCL kernels */
    an_job job;
    job_init(&job, 3);
    set_rank(&job, 0, 0, 6, 1, (part){0, 5, 10, 85});
    set_rank(&job, 1, 1, 6, 1, (part){0, 5, 10, 85});
    set_rank(&job, 2, 2, 6, 1, (part){0, 85, 10, 5});
    an_job_align(&job);
    ASSERT_EQ(job.ranks[0].peer_src, AN_PEER_MEASURED);
    ASSERT_TRUE(NEAR(job.ranks[0].peer_wait_share, 0.85, 1e-9));
    ASSERT_TRUE(NEAR(job.ranks[2].peer_wait_share, 0.05, 1e-9));
    ASSERT_EQ(job.straggler, 2);
    ASSERT_MSG(strstr(job.why, "rank 2 is busy on the host 85% of its step") != NULL, "%s", job.why);
    ASSERT_MSG(strstr(job.why, "ranks 0, 1 wait for rank 2 in collectives 85%, 85% of their step "
                               "time (measured") != NULL,
               "%s", job.why);
    job_done(&job);
}

static void test_balanced_no_straggler(void)
{
    an_job job;
    job_init(&job, 2);
    set_rank(&job, 0, 0, 5, 1, (part){3, 97, 0, 0});
    set_rank(&job, 1, 1, 5, 1, (part){3, 97, 0, 0});
    an_job_align(&job);
    ASSERT_EQ(job.straggler, -1);
    ASSERT_EQ(job.limiting, 0); /* a tie goes to the lower rank */
    ASSERT_EQ(job.why[0], '\0');
    ASSERT_TRUE(NEAR(job.ranks[1].peer_wait_share, 0, 1e-9));
    /* just under the 5% threshold: still none */
    free(job.ranks[1].res.steps);
    set_rank(&job, 1, 1, 5, 1, (part){7, 93, 0, 0});
    free(job.ranks[0].res.steps);
    set_rank(&job, 0, 0, 5, 1, (part){3, 97, 0, 0});
    an_job_align(&job);
    ASSERT_TRUE(NEAR(job.ranks[0].peer_wait_share, 0.04, 1e-9));
    ASSERT_EQ(job.straggler, -1);
    ASSERT_EQ(job.limiting, 1);
    job_done(&job);
}

static void test_unequal_steps_warmup_failed_rank(void)
{
    an_job job;
    job_init(&job, 3);
    set_rank(&job, 0, 0, 8, 1, (part){1, 99, 0, 0});
    set_rank(&job, 1, 1, 6, 2, (part){90, 10, 0, 0}); /* fewer steps, longer warm-up */
    set_rank(&job, 2, 2, 8, 1, (part){1, 99, 0, 0});
    job.ranks[2].ok = 0; /* no analysis: left out */
    an_job_align(&job);
    ASSERT_EQ(job.aligned, 4); /* steps 2..5 */
    ASSERT_EQ(job.straggler, 1);
    ASSERT_EQ(job.ranks[2].peer_src, AN_PEER_NONE);
    ASSERT_TRUE(strstr(job.why, "rank 0 waits for rank 1") != NULL);
    job_done(&job);
}

static void test_proc_rank(void)
{
    an_proc p[5];
    memset(p, 0, sizeof p);
    const struct {
        uint64_t pid, ppid;
        int32_t rank;
        const char *host;
    } rows[] = {
        {100, 1, -1, "a"},  /* the launcher */
        {101, 100, 0, "a"}, /* rank 0 */
        {102, 101, -1, "a"}, /* its worker, environment scrubbed */
        {103, 102, -1, "a"}, /* a grandchild */
        {102, 7, -1, "b"},  /* the same pid on another host: not rank 0's */
    };
    for (int i = 0; i < 5; i++) {
        p[i].pid = rows[i].pid;
        p[i].ppid = rows[i].ppid;
        p[i].rank = rows[i].rank;
        p[i].host = (char *)rows[i].host;
    }
    an_run run;
    memset(&run, 0, sizeof run);
    run.procs = p;
    run.nprocs = 5;
    ASSERT_EQ(an_proc_rank(&run, &p[0]), -1);
    ASSERT_EQ(an_proc_rank(&run, &p[1]), 0);
    ASSERT_EQ(an_proc_rank(&run, &p[2]), 0);
    ASSERT_EQ(an_proc_rank(&run, &p[3]), 0);
    ASSERT_EQ(an_proc_rank(&run, &p[4]), -1);
}

int main(void)
{
    test_inferred_gloo();
    test_measured_nccl_host_straggler();
    test_balanced_no_straggler();
    test_unequal_steps_warmup_failed_rank();
    test_proc_rank();
    return gs_check_done("test_an_ranks");
}
