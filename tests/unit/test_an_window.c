/* test_an_window.c — the live view's window (analyzer/an_window.c): which
 * steps count (those that end inside (end - window, end]), the rate over a
 * run younger than the window, and the shares summed over the counted
 * steps only. */
#include <string.h>

#include "an_window.h"
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
    test_no_result();
    return gs_check_done("test_an_window");
}
