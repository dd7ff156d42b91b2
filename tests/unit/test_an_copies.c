/* test_an_copies.c — the copies waiting for their CUPTI record
 * (analyzer/load/an_copies.c): put, take and drain against a plain array, with
 * the collisions and deletions a long run makes; and the rule that decides
 * between the hooks' word and CUPTI's. */
#include <string.h>

#include "load/an_copies.h"
#include "gs_check.h"
#include "gs_format.h"

static int drained[4096];

static void on_drain(void *ctx, const an_copy *c)
{
    (void)ctx;
    if (c->corr < 4096)
        drained[c->corr]++;
}

static void test_table(void)
{
    an_copies t;
    memset(&t, 0, sizeof t);
    static uint8_t in[4096]; /* reference: is corr waiting */
    memset(in, 0, sizeof in);
    uint32_t x = 12345;
    for (int step = 0; step < 200000; step++) {
        x = x * 1103515245u + 12345u;
        uint32_t corr = 1 + (x >> 8) % 4095;
        if ((x >> 4) & 1) {
            an_copy c = {.corr = corr, .dir = GS_DIR_HTOD, .ts = corr, .bytes = corr * 2u};
            ASSERT_EQ(an_copies_put(&t, &c), 0);
            in[corr] = 1;
        } else {
            an_copy out;
            int got = an_copies_take(&t, corr, &out);
            if (got != in[corr] || (got && (out.corr != corr || out.bytes != corr * 2u)))
                ASSERT_TRUE(0);
            in[corr] = 0;
        }
    }
    uint32_t n = 0;
    for (int i = 0; i < 4096; i++)
        n += in[i];
    ASSERT_EQ(t.n, n);
    an_copies_drain(&t, on_drain, NULL);
    for (int i = 0; i < 4096; i++)
        if (drained[i] != in[i])
            ASSERT_TRUE(0);
    ASSERT_EQ(t.n, 0);
    an_copy out;
    ASSERT_EQ(an_copies_take(&t, 5, &out), 0);
    an_copy zero = {.corr = 0};
    ASSERT_EQ(an_copies_put(&t, &zero), -1);
    an_copies_free(&t);
}

static void test_limit(void)
{
    an_copies t;
    memset(&t, 0, sizeof t);
    for (uint32_t i = 1; i <= AN_COPIES_MAX; i++) {
        an_copy c = {.corr = i};
        if (an_copies_put(&t, &c) != 0)
            ASSERT_TRUE(0);
    }
    an_copy c = {.corr = AN_COPIES_MAX + 1};
    ASSERT_EQ(an_copies_put(&t, &c), -1);
    an_copies_free(&t);
}

static void test_decide(void)
{
    an_copy_kinds k;
    memset(&k, 0, sizeof k);
    ASSERT_EQ(an_copy_kind_decide(&k, GS_MEM_PAGEABLE, GS_MEM_PINNED), GS_MEM_PINNED);
    ASSERT_EQ(an_copy_kind_decide(&k, GS_MEM_PINNED, GS_MEM_PAGEABLE), GS_MEM_PAGEABLE);
    ASSERT_EQ(an_copy_kind_decide(&k, GS_MEM_PINNED, GS_MEM_PINNED), GS_MEM_PINNED);
    ASSERT_EQ(an_copy_kind_decide(&k, GS_MEM_PAGEABLE, GS_MEM_UNKNOWN), GS_MEM_PAGEABLE);
    ASSERT_EQ(an_copy_kind_decide(&k, GS_MEM_UNKNOWN, GS_MEM_PAGEABLE), GS_MEM_PAGEABLE);
    ASSERT_EQ(k.matched, 5);
    ASSERT_EQ(k.pageable_by_hooks_pinned_by_cupti, 1);
    ASSERT_EQ(k.pinned_by_hooks_pageable_by_cupti, 1);
}

int main(void)
{
    test_table();
    test_limit();
    test_decide();
    return gs_check_done("test_an_copies");
}
