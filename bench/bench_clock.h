/* bench_clock.h — the two clocks the C benchmarks time with (pread_loop,
 * bench_cuda, cpustat_cost, frame_cost, clock_cost): wall time
 * (CLOCK_MONOTONIC) and the calling thread's CPU time, in ns as doubles.
 *
 * Must never: be used by a test (benchmarks print numbers; tests assert
 * behaviour), or stand for the hooks' own clock (clock_cost times that).
 */
#ifndef BENCH_CLOCK_H
#define BENCH_CLOCK_H

#include <time.h>

static inline double bench_clock_ns(clockid_t id)
{
    struct timespec t;
    clock_gettime(id, &t);
    return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

static inline double now_ns(void)
{
    return bench_clock_ns(CLOCK_MONOTONIC);
}

static inline double thread_ns(void)
{
    return bench_clock_ns(CLOCK_THREAD_CPUTIME_ID);
}

#endif
