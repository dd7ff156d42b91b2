/* test_an_window.c — the live view's window (analyzer/model/an_window.c): which
 * steps count (those that end inside (end - window, end]), the rate over a
 * run younger than the window, the shares summed over the counted
 * steps only, and the loader's time per batch: over the batches a worker
 * marked that ended in the window, else over the run so far. */
#include <string.h>

#include "model/an_window.h"
#include "gs_check.h"

#define S 1000000000ull
#define MS 1000000ull

/* step i: [i s, i s + 1 s), 100 ms data wait, busy ms_busy compute,
 * 50 ms of it pageable H2D, 10 ms idle in a pageable copy call */
static void make(an_step *st, size_t n, uint64_t busy_ms)
{
    memset(st, 0, n * sizeof *st);
    for (size_t i = 0; i < n; i++) {
        an_stepv *v = &st[i].v;
        v->t0 = (i + 1) * S;
        v->t1 = v->t0 + S;
        v->idle_dw = 100 * MS;
        v->busy[AN_BUSY_COMPUTE] = busy_ms * MS;
        v->busy[AN_BUSY_H2D_PAGEABLE] = 50 * MS;
        v->idle_pg = 10 * MS;
        v->idle_host = S - v->idle_dw - v->idle_pg - (busy_ms + 50) * MS;
    }
}

static void test_window(void)
{
    an_step st[20];
    make(st, 20, 500);
    an_result res;
    memset(&res, 0, sizeof res);
    res.steps = st;
    res.nsteps = 20;
    an_window_row row;
    /* steps end at 2..21 s; window (15.5, 21] holds the steps ending 16..21 */
    an_window_of(&res, 21 * S, 5 * S + S / 2, &row);
    ASSERT_EQ(row.ok, 1);
    ASSERT_EQ(row.steps_total, 20);
    ASSERT_EQ(row.steps, 6);
    ASSERT_RANGE(row.span_s, 5.49, 5.51);
    ASSERT_RANGE(row.steps_per_s, 6 / 5.5 - 1e-9, 6 / 5.5 + 1e-9);
    ASSERT_RANGE(row.data_wait, 0.0999, 0.1001);
    ASSERT_RANGE(row.gpu_busy, 0.5499, 0.5501);
    ASSERT_RANGE(row.pageable, 0.0599, 0.0601); /* idle in the call + the GPU's pageable copy */
    ASSERT_RANGE(row.batch_ms, -1.0, -1.0);     /* no workers */
    /* a window past the last step: nothing counted, shares unknown */
    an_window_of(&res, 40 * S, 10 * S, &row);
    ASSERT_EQ(row.steps, 0);
    ASSERT_RANGE(row.steps_per_s, 0.0, 0.0);
    ASSERT_RANGE(row.data_wait, -1.0, -1.0);
    /* a run younger than the window: the rate over the time since its first step began */
    an_window_of(&res, 21 * S, 3600 * S, &row);
    ASSERT_EQ(row.steps, 20);
    ASSERT_RANGE(row.span_s, 19.99, 20.01);
    ASSERT_RANGE(row.steps_per_s, 0.999, 1.001);
    /* only the counted steps' shares: make the old ones all data wait */
    for (size_t i = 0; i < 14; i++) {
        memset(st[i].v.busy, 0, sizeof st[i].v.busy);
        st[i].v.idle_pg = st[i].v.idle_host = 0;
        st[i].v.idle_dw = S;
    }
    an_window_of(&res, 21 * S, 5 * S + S / 2, &row);
    ASSERT_RANGE(row.data_wait, 0.0999, 0.1001);
    /* the step ending exactly at the window's start is out, at its end in */
    an_window_of(&res, 10 * S, 2 * S, &row);
    ASSERT_EQ(row.steps, 2); /* ends at 9 s and 10 s, not 8 s */
}

/* Worker process 0 marks its batches: batch k of it is [k s + 0.2 s,
 * k s + 0.2 s + (k + 1) * 10 ms] (its fetch pairs with CPU samples);
 * worker 1 does not: 30 ms busy per batch over the run. */
static void test_window_batches(void)
{
    an_step st[20];
    make(st, 20, 500);
    an_cpu_fetch f[20];
    for (size_t k = 0; k < 20; k++) {
        f[k].t0 = k * S + S / 5;
        f[k].t1 = f[k].t0 + (k + 1) * 10 * MS;
        f[k].cpu0 = f[k].cpu1 = 0;
    }
    an_cpu_log log;
    memset(&log, 0, sizeof log);
    log.f = f;
    log.nf = 20;
    an_thread th[2];
    memset(th, 0, sizeof th);
    th[1].cpu = &log; /* not the first thread: every thread's batches count */
    an_proc procs[2];
    memset(procs, 0, sizeof procs);
    procs[0].th = th;
    procs[0].nth = 2;
    procs[0].n_batch_markers = 20;
    for (size_t k = 0; k < 20; k++)
        procs[0].batch_ns += f[k].t1 - f[k].t0;
    an_worker w[2];
    memset(w, 0, sizeof w);
    w[0].p = &procs[0];
    w[0].batches = 20;
    w[0].batches_from_markers = 1;
    w[1].p = &procs[1];
    w[1].batches = 10;
    w[1].io_ns = 100 * MS;
    w[1].cpu_ns = 200 * MS;
    an_result res;
    memset(&res, 0, sizeof res);
    res.steps = st;
    res.nsteps = 20;
    res.workers = w;
    res.nworkers = 1;
    an_window_row row;
    /* window (15.5 s, 21 s]: batches 16..19 end inside (15 ends at 15.36 s):
     * the mean of 170..200 ms */
    an_window_of(&res, 21 * S, 5 * S + S / 2, &row);
    ASSERT_RANGE(row.batch_ms, 184.999, 185.001);
    ASSERT_EQ(row.batch_run_so_far, 0);
    /* a batch ending exactly at the window's start is out, at its end in:
     * batch 4 ends at 4.25 s, batch 5 at 5.26 s, batch 6 at 6.27 s */
    an_window_of(&res, 6 * S + 270 * MS, 2 * S + 10 * MS, &row);
    ASSERT_RANGE(row.batch_ms, 64.999, 65.001); /* batches 5 and 6: 60, 70 ms */
    /* the whole run: the mean of 10..200 ms; no batch in the window: none */
    an_window_of(&res, 21 * S, 3600 * S, &row);
    ASSERT_RANGE(row.batch_ms, 104.999, 105.001);
    an_window_of(&res, 40 * S, 10 * S, &row);
    ASSERT_RANGE(row.batch_ms, -1.0, -1.0);
    /* with a worker without markers: its run-so-far 30 ms, said so */
    res.nworkers = 2;
    an_window_of(&res, 21 * S, 5 * S + S / 2, &row);
    ASSERT_RANGE(row.batch_ms, (185.0 + 30.0) / 2 - 1e-3, (185.0 + 30.0) / 2 + 1e-3);
    ASSERT_EQ(row.batch_run_so_far, 1);
    an_window_of(&res, 40 * S, 10 * S, &row);
    ASSERT_RANGE(row.batch_ms, 29.999, 30.001);
}

static void test_no_result(void)
{
    an_window_row row;
    an_window_of(NULL, 5 * S, S, &row);
    ASSERT_EQ(row.ok, 0);
    ASSERT_EQ(row.steps_total, 0);
    ASSERT_RANGE(row.gpu_busy, -1.0, -1.0);
}

int main(void)
{
    test_window();
    test_window_batches();
    test_no_result();
    return gs_check_done("test_an_window");
}
