/* test_an_replica.c — copies among loader workers' positioned reads
 * (analyzer/model/an_replica.c): workers that each read every record count
 * each byte as many times; workers that split the records, one worker
 * reading a record twice, the same record read again an epoch later, and
 * the threads of a thread pool do not; the share of bytes positioned reads
 * returned; the storage's speed by reads in flight. */
#include <string.h>

#include "model/an_replica.h"
#include "gs_check.h"

#define MS 1000000ull
#define NW 4
#define RECS 64

static an_proc procs[NW];
static an_pread reads[NW][2 * RECS];
static an_worker workers[NW];

/* Worker i reads the records rec(i, j) for j < n, record j at j ms plus
 * `lag` ms for each worker index, 1 MB each in 1 ms. */
static void setup(an_result *res, size_t n, uint64_t (*rec)(size_t, size_t), uint64_t lag)
{
    memset(res, 0, sizeof *res);
    memset(procs, 0, sizeof procs);
    memset(workers, 0, sizeof workers);
    for (size_t i = 0; i < NW; i++) {
        for (size_t j = 0; j < n; j++)
            reads[i][j] = (an_pread){1000 + rec(i, j), (j + i * lag) * MS, 1000000, MS};
        procs[i].preads.v = reads[i];
        procs[i].preads.n = n;
        workers[i].p = &procs[i];
        workers[i].bytes = n * 1000000ull;
    }
    res->workers = workers;
    res->nworkers = NW;
    res->batch_ms = 10; /* a window of 80 ms */
}

static uint64_t every(size_t i, size_t j) { (void)i; return j; }
static uint64_t own(size_t i, size_t j) { return j * NW + i; }
static uint64_t twice(size_t i, size_t j) { return (j / 2) * NW + i; }

int main(void)
{
    an_result res;
    /* each worker reads every record, within a few ms of the others */
    setup(&res, RECS, every, 2);
    ASSERT_EQ(an_replica(&res), 0);
    ASSERT_RANGE(res.read_copies, 4 - 1e-9, 4 + 1e-9);
    ASSERT_RANGE(res.read_positioned, 1 - 1e-9, 1 + 1e-9);
    /* each reads its own records: one copy */
    setup(&res, RECS, own, 2);
    ASSERT_EQ(an_replica(&res), 0);
    ASSERT_RANGE(res.read_copies, 1 - 1e-9, 1 + 1e-9);
    /* each reads its own records twice in a row: still one worker a byte */
    setup(&res, 2 * RECS, twice, 0);
    ASSERT_EQ(an_replica(&res), 0);
    ASSERT_RANGE(res.read_copies, 1 - 1e-9, 1 + 1e-9);
    /* every record again, but each worker 1 s after the one before (the
     * next epoch's): beyond the window, one copy */
    setup(&res, RECS, every, 1000);
    ASSERT_EQ(an_replica(&res), 0);
    ASSERT_RANGE(res.read_copies, 1 - 1e-9, 1 + 1e-9);
    /* half the workers' bytes came from reads without an offset */
    setup(&res, RECS, every, 2);
    for (size_t i = 0; i < NW; i++)
        workers[i].bytes *= 2;
    ASSERT_EQ(an_replica(&res), 0);
    ASSERT_RANGE(res.read_positioned, 0.5 - 1e-9, 0.5 + 1e-9);
    /* as many positioned reads past the kept ones (AN_PREADS_MAX), and
     * the bytes of both: still every byte from positioned reads */
    setup(&res, RECS, every, 2);
    for (size_t i = 0; i < NW; i++) {
        procs[i].preads.past = RECS;
        workers[i].bytes *= 2;
    }
    ASSERT_EQ(an_replica(&res), 0);
    ASSERT_RANGE(res.read_positioned, 1 - 1e-9, 1 + 1e-9);
    ASSERT_RANGE(res.read_copies, 4 - 1e-9, 4 + 1e-9);
    /* the threads of one process (a thread pool): not measured */
    setup(&res, RECS, every, 2);
    for (size_t i = 0; i < NW; i++) {
        workers[i].p = &procs[0];
        workers[i].th = (const an_thread *)&procs[i];
    }
    ASSERT_EQ(an_replica(&res), 0);
    ASSERT_TRUE(res.read_copies == 0 && res.read_positioned == 0);
    /* the speed by reads in flight: worker 0 reads 1 MB in 0-10 ms and
     * 0.5 MB in 20-30 ms, worker 1 1 MB in 0-10 ms: two at 0.1 bytes/ns
     * each with 2 in flight, 0.2 in all; one at 0.05; 1.5 in flight on
     * average while any is */
    setup(&res, 2, own, 0);
    res.nworkers = 2;
    reads[0][0] = (an_pread){1, 0, 1000000, 10 * MS};
    reads[0][1] = (an_pread){2, 20 * MS, 500000, 10 * MS};
    reads[1][0] = (an_pread){3, 0, 1000000, 10 * MS};
    procs[1].preads.n = 1;
    ASSERT_EQ(an_replica(&res), 0);
    ASSERT_RANGE(res.read_speed[2], 0.2 - 1e-12, 0.2 + 1e-12);
    ASSERT_RANGE(res.read_speed[1], 0.05 - 1e-12, 0.05 + 1e-12);
    ASSERT_TRUE(res.read_speed[3] == 0 && res.read_speed[0] == 0);
    ASSERT_RANGE(res.read_inflight, 1.5 - 1e-12, 1.5 + 1e-12);
    /* a read that overlaps another for a fifth of its time counts as alone
     * (its mean in flight 1.2 rounds to 1); one without a duration is left out */
    reads[1][0] = (an_pread){3, 8 * MS, 1000000, 10 * MS};
    reads[0][1].dur = 0;
    ASSERT_EQ(an_replica(&res), 0);
    ASSERT_RANGE(res.read_speed[1], 0.1 - 1e-12, 0.1 + 1e-12);
    ASSERT_TRUE(res.read_speed[2] == 0);
    ASSERT_RANGE(res.read_inflight, 20.0 / 18, 20.0 / 18 + 1e-12);
    /* a count whose reads took under AN_SPEED_MIN_SHARE of the reads' time: not told */
    reads[0][1] = (an_pread){2, 40 * MS, 1000, MS / 10};
    reads[1][0] = (an_pread){3, 40 * MS, 1000, MS / 10};
    reads[0][0].ts = 0;
    ASSERT_EQ(an_replica(&res), 0);
    ASSERT_TRUE(res.read_speed[2] == 0 && res.read_speed[1] > 0);
    /* one worker process: nothing to compare */
    setup(&res, RECS, every, 2);
    res.nworkers = 1;
    ASSERT_EQ(an_replica(&res), 0);
    ASSERT_TRUE(res.read_copies == 0);
    return gs_check_done("test_an_replica");
}
