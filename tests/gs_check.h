/* gs_check.h — the one assertion helper of every C test (tests/unit,
 * tests/hooks, tests/simcuda and those to come), in the manner of LTTng's
 * tap.h: each check counts as passed or failed, a failure prints where and
 * what (file:line, the expression, the values) on stderr and the test goes
 * on; a check that cannot run here (a feature this machine lacks) is counted
 * as skipped, with the reason; the program ends with one summary line
 *
 *     NAME: P passed, F failed[, S skipped]
 *
 * on stdout and exit status 1 when anything failed.
 *
 *     ASSERT_TRUE(cond)           cond is true
 *     ASSERT_EQ(a, b)             equal as long long (each evaluated once)
 *     ASSERT_RANGE(v, lo, hi)     lo <= v <= hi, as double
 *     ASSERT_MSG(cond, fmt, ...)  cond is true; printf-style message if not
 *     SKIP(n, fmt, ...)           n checks skipped, and why
 *     return gs_check_done("name");   the summary line, the exit status
 *     gs_check_rand()             the next of a fixed pseudo-random sequence
 *                                 (xorshift64; the same in every run)
 *
 * Timing checks belong in simulated time or with bounds that hold on a
 * loaded machine (docs/testing.md); speed belongs to `make bench`.
 *
 * Header-only. The counters are one weak definition per translation unit,
 * merged by the linker, so a test program made of several files (a test and
 * its helpers, as tests/hooks/) counts in one place.
 */
#ifndef GS_CHECK_H
#define GS_CHECK_H

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h> /* the tests that came before this header expect it */

struct gs_check_counts {
    int passed, failed, skipped;
};

__attribute__((weak)) struct gs_check_counts gs_check_counts;

static inline void gs_check_fail_at(const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static inline void gs_check_fail_at(const char *file, int line, const char *fmt, ...)
{
    va_list ap;
    gs_check_counts.failed++;
    fprintf(stderr, "%s:%d: FAILED: ", file, line);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

#define ASSERT_MSG(cond, ...)                                                   \
    do {                                                                        \
        if (cond)                                                               \
            gs_check_counts.passed++;                                           \
        else                                                                    \
            gs_check_fail_at(__FILE__, __LINE__, __VA_ARGS__);                  \
    } while (0)

#define ASSERT_TRUE(c) ASSERT_MSG((c), "%s", #c)

#define ASSERT_EQ(a, b)                                                         \
    do {                                                                        \
        long long a_ = (long long)(a), b_ = (long long)(b);                     \
        ASSERT_MSG(a_ == b_, "%s == %s (%lld != %lld)", #a, #b, a_, b_);        \
    } while (0)

#define ASSERT_RANGE(v, lo, hi)                                                 \
    do {                                                                        \
        double v_ = (double)(v), lo_ = (double)(lo), hi_ = (double)(hi);        \
        ASSERT_MSG(v_ >= lo_ && v_ <= hi_, "%s = %.6g not in [%.6g, %.6g]", #v, \
                   v_, lo_, hi_);                                               \
    } while (0)

#define SKIP(n, ...)                                                            \
    do {                                                                        \
        gs_check_counts.skipped += (n);                                         \
        fprintf(stderr, "%s:%d: skipped %d: ", __FILE__, __LINE__, (int)(n));   \
        fprintf(stderr, __VA_ARGS__);                                           \
        fputc('\n', stderr);                                                    \
    } while (0)

/* Random inputs that are the same in every run, so a failure repeats. */
static inline uint64_t gs_check_rand(void)
{
    static uint64_t s = 88172645463325252ull;
    s ^= s << 13;
    s ^= s >> 7;
    s ^= s << 17;
    return s;
}

/* The summary line ("NAME: " left out when name is NULL); exit status. */
static inline int gs_check_done(const char *name)
{
    const struct gs_check_counts *c = &gs_check_counts;
    if (name)
        printf("%s: ", name);
    printf("%d passed, %d failed", c->passed, c->failed);
    if (c->skipped)
        printf(", %d skipped", c->skipped);
    printf("\n");
    fflush(stdout);
    return c->failed ? 1 : 0;
}

#endif
