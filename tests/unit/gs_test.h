/* gs_test.h — the tiny assertion helpers every C unit test uses: count
 * checks, print the failing expression with file:line, finish with the
 * "N passed, N failed" line the CI log reader understands. */
#ifndef GS_TEST_H
#define GS_TEST_H

#include <stdio.h>
#include <stdlib.h>

static int gs_t_pass, gs_t_fail;

#define ASSERT_TRUE(c)                                                          \
    do {                                                                        \
        if (c) {                                                                \
            gs_t_pass++;                                                        \
        } else {                                                                \
            gs_t_fail++;                                                        \
            fprintf(stderr, "%s:%d: FAILED: %s\n", __FILE__, __LINE__, #c);     \
        }                                                                       \
    } while (0)

#define ASSERT_EQ(a, b)                                                         \
    do {                                                                        \
        long long a_ = (long long)(a), b_ = (long long)(b);                     \
        if (a_ == b_) {                                                         \
            gs_t_pass++;                                                        \
        } else {                                                                \
            gs_t_fail++;                                                        \
            fprintf(stderr, "%s:%d: FAILED: %s == %s (%lld != %lld)\n", __FILE__, \
                    __LINE__, #a, #b, a_, b_);                                  \
        }                                                                       \
    } while (0)

static inline int gs_t_finish(const char *name)
{
    printf("%s: %d passed, %d failed\n", name, gs_t_pass, gs_t_fail);
    return gs_t_fail ? 1 : 0;
}

#endif
