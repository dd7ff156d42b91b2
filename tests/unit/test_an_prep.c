/* test_an_prep.c — a training thread's own batch making (analyzer/load/
 * an_prep.c): the span from its update to its next forward, cut around
 * its CUDA calls; none when it waited for data otherwise, was not armed,
 * is too long, or was cut too often. */
#include <string.h>

#include "load/an_prep.h"
#include "gs_check.h"

#define US 1000ull
#define MAXNS (1000000 * US)

static void test_whole_span(void)
{
    an_prep g;
    uint64_t p[AN_PREP_PIECES + 1][2];
    an_prep_arm(&g, 100 * US, 7);
    ASSERT_EQ(an_prep_end(&g, 900 * US, 7, MAXNS, p), 1);
    ASSERT_EQ(p[0][0], 100 * US);
    ASSERT_EQ(p[0][1], 900 * US);
    /* disarmed: the next forward without an update counts nothing */
    ASSERT_EQ(an_prep_end(&g, 950 * US, 7, MAXNS, p), 0);
}

static void test_cut_by_cuda_calls(void)
{
    an_prep g;
    uint64_t p[AN_PREP_PIECES + 1][2];
    an_prep_arm(&g, 100 * US, 0);
    an_prep_cut(&g, 50 * US, 90 * US);    /* ended before the update: not in it */
    an_prep_cut(&g, 200 * US, 300 * US);  /* a loss.item() waiting for the GPU */
    an_prep_cut(&g, 600 * US, 650 * US);  /* the batch copied to the GPU */
    an_prep_cut(&g, 650 * US, 700 * US);  /* its labels, right after */
    ASSERT_EQ(g.cut, 3);
    ASSERT_EQ(an_prep_end(&g, 800 * US, 0, MAXNS, p), 3);
    ASSERT_EQ(p[0][0], 100 * US);
    ASSERT_EQ(p[0][1], 200 * US);
    ASSERT_EQ(p[1][0], 300 * US);
    ASSERT_EQ(p[1][1], 600 * US);
    ASSERT_EQ(p[2][0], 700 * US);
    ASSERT_EQ(p[2][1], 800 * US);
}

static void test_no_span(void)
{
    an_prep g;
    uint64_t p[AN_PREP_PIECES + 1][2];
    memset(&g, 0, sizeof g);
    ASSERT_EQ(an_prep_end(&g, 900 * US, 0, MAXNS, p), 0); /* never armed */
    an_prep_arm(&g, 100 * US, 3);
    ASSERT_EQ(an_prep_end(&g, 900 * US, 4, MAXNS, p), 0); /* waited for data otherwise */
    an_prep_arm(&g, 100 * US, 3);
    ASSERT_EQ(an_prep_end(&g, 100 * US + MAXNS + 1, 3, MAXNS, p), 0); /* too long */
    an_prep_arm(&g, 100 * US, 3);
    for (unsigned i = 0; i <= AN_PREP_PIECES; i++)
        an_prep_cut(&g, (200 + 20 * i) * US, (210 + 20 * i) * US);
    ASSERT_EQ(an_prep_end(&g, 900 * US, 3, MAXNS, p), 0); /* cut too often */
}

int main(void)
{
    test_whole_span();
    test_cut_by_cuda_calls();
    test_no_span();
    return gs_check_done("test_an_prep");
}
