/* test_an_index.c — the analyzer's key -> index map (analyzer/base/an_index.h)
 * against a plain reference table: random puts, gets and deletes (keys
 * dense, sparse, colliding in their low bits, near 2^64), memory bounded by
 * the keys stored, not their values. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/an_index.h"
#include "gs_check.h"

#define NKEYS 5000


static void test_against_reference(int shape)
{
    static uint64_t keys[NKEYS];
    static long ref[NKEYS]; /* index stored for keys[i], -1 = absent */
    for (int i = 0; i < NKEYS; i++) {
        switch (shape) {
        case 0: keys[i] = (uint64_t)i; break;                    /* dense tids */
        case 1: keys[i] = gs_check_rand(); break;                         /* anything */
        case 2: keys[i] = (uint64_t)i << 32; break;              /* same low bits */
        default: keys[i] = UINT64_MAX - (uint64_t)i * 4096; break; /* near 2^64 */
        }
        ref[i] = -1;
    }
    an_index m;
    memset(&m, 0, sizeof m);
    int bad = 0;
    for (int step = 0; step < 60000; step++) {
        const int i = (int)(gs_check_rand() % NKEYS);
        const unsigned op = (unsigned)(gs_check_rand() % 4);
        if (op < 2) {
            const uint32_t v = (uint32_t)(gs_check_rand() % 1000000);
            ASSERT_EQ(an_index_put(&m, keys[i], v), 0);
            ref[i] = v;
        } else if (op == 2) {
            an_index_del(&m, keys[i]);
            ref[i] = -1;
        }
        const int j = (int)(gs_check_rand() % NKEYS);
        bad += an_index_get(&m, keys[j]) != ref[j];
    }
    size_t live = 0;
    for (int i = 0; i < NKEYS; i++) {
        bad += an_index_get(&m, keys[i]) != ref[i];
        live += ref[i] >= 0;
    }
    ASSERT_EQ(bad, 0);
    ASSERT_EQ(m.n, live);
    ASSERT_TRUE(m.cap <= 4 * (live + 64)); /* by the keys stored, never their values */
    an_index_free(&m);
    ASSERT_EQ(an_index_get(&m, 7), -1);
}

int main(void)
{
    for (int shape = 0; shape < 4; shape++)
        test_against_reference(shape);
    return gs_check_done("test_an_index");
}
