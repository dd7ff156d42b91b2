/* clock_cost.c — what one hook clock read costs (`make bench`,
 * docs/performance.md "The whole cost per event"): a hooked call reads the
 * clock twice (its start and, after the real call, its duration).
 *
 * Prints ns per read, the minimum over 7 passes of N back-to-back reads
 * (thread CPU time), for plain rdtsc (what the hooks use), rdtsc after
 * lfence, rdtscp, and clock_gettime(CLOCK_MONOTONIC) (the hooks' clock
 * without a usable TSC). Usage: clock_cost [N]. Prints numbers, asserts
 * nothing; must never be taken for the hook's whole cost.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#if defined(__x86_64__)
#include <x86intrin.h>
#endif

#include "bench_clock.h"

static uint64_t mono(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

#if defined(__x86_64__)
static uint64_t plain(void)
{
    return __rdtsc();
}
static uint64_t fenced(void)
{
    _mm_lfence();
    return __rdtsc();
}
static uint64_t tscp(void)
{
    unsigned aux;
    return __rdtscp(&aux);
}
#endif

static volatile uint64_t g_sink;

static double per_read(uint64_t (*fn)(void), long n)
{
    double best = 1e30;
    for (int pass = 0; pass < 7; pass++) {
        uint64_t s = 0;
        double t0 = thread_ns();
        for (long i = 0; i < n; i++)
            s += fn();
        double d = (thread_ns() - t0) / (double)n;
        g_sink = s;
        if (d < best)
            best = d;
    }
    return best;
}

int main(int argc, char **argv)
{
    long n = argc > 1 ? strtol(argv[1], NULL, 10) : 5000000;
    if (n <= 0) {
        fprintf(stderr, "usage: clock_cost [N>0]\n");
        return 2;
    }
    printf("hook clock, ns per read (min of 7 passes of %ld back-to-back reads, thread CPU time):\n",
           n);
#if defined(__x86_64__)
    printf("  rdtsc (the hooks) %.2f; lfence+rdtsc %.2f; rdtscp %.2f;", per_read(plain, n),
           per_read(fenced, n), per_read(tscp, n));
#endif
    printf(" clock_gettime(CLOCK_MONOTONIC) %.2f\n", per_read(mono, n));
    return 0;
}
