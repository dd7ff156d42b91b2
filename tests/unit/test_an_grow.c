/* test_an_grow.c — the analyzer's growable array (analyzer/base/an_grow.h):
 * the first capacity, doubling until the need is met, no change when there
 * is room, and a size that would overflow refused with the array and its
 * capacity left as they were. */
#include <stdint.h>
#include <stdlib.h>

#include "base/an_grow.h"
#include "gs_check.h"

typedef struct pair {
    uint64_t a, b;
} pair;

static void test_growth(void)
{
    pair *v = NULL;
    size_t cap = 0;
    ASSERT_EQ(an_grow(&v, &cap, 1, sizeof *v, 16), 0);
    ASSERT_EQ(cap, 16);
    ASSERT_TRUE(v != NULL);
    for (size_t i = 0; i < 16; i++)
        v[i] = (pair){i, i * 2};
    pair *was = v;
    ASSERT_EQ(an_grow(&v, &cap, 16, sizeof *v, 16), 0); /* room: unchanged */
    ASSERT_EQ(cap, 16);
    ASSERT_TRUE(v == was);
    ASSERT_EQ(an_grow(&v, &cap, 17, sizeof *v, 16), 0);
    ASSERT_EQ(cap, 32);
    ASSERT_EQ(an_grow(&v, &cap, 100, sizeof *v, 16), 0); /* doubled until it holds 100 */
    ASSERT_EQ(cap, 128);
    for (size_t i = 0; i < 16; i++) /* what was there is kept */
        ASSERT_TRUE(v[i].a == i && v[i].b == i * 2);
    free(v);
}

static void test_first_zero(void)
{
    char *v = NULL;
    size_t cap = 0;
    ASSERT_EQ(an_grow(&v, &cap, 5, 1, 0), 0); /* first 0: from 1, doubled */
    ASSERT_EQ(cap, 8);
    free(v);
}

static void test_overflow(void)
{
    pair *v = NULL;
    size_t cap = 0;
    ASSERT_EQ(an_grow(&v, &cap, 4, sizeof *v, 4), 0);
    pair *was = v;
    ASSERT_EQ(an_grow(&v, &cap, SIZE_MAX / 2 + 2, sizeof *v, 4), -1);
    ASSERT_EQ(an_grow(&v, &cap, SIZE_MAX / sizeof *v + 1, sizeof *v, 4), -1);
    ASSERT_TRUE(v == was);
    ASSERT_EQ(cap, 4);
    free(v);
}

int main(void)
{
    test_growth();
    test_first_zero();
    test_overflow();
    return gs_check_done("test_an_grow");
}
