/* marker_demo.c — a C training loop stand-in using the public marker API
 * (include/gpustarve.h). It must behave the same with and without
 * libgpustarve.so preloaded; tests/python/test_python_side.py builds it as
 * PIE and non-PIE and runs it both ways.
 *
 *     marker_demo STEPS      prints "active=N steps=S errno=0"
 *
 * On stderr, one line per step with six CLOCK_MONOTONIC readings (ns) that
 * bracket its markers: "step S T0 T1 T2 T3 T4 T5" where step_begin and
 * fetch_begin lie in [T0, T1], fetch_end in [T2, T3], step_end in [T4, T5].
 * The test checks the markers against them, so it needs no assumption about
 * how long the sleeps really took on a loaded machine.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "gpustarve.h"

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static unsigned long long mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (unsigned long long)ts.tv_sec * 1000000000ull + (unsigned long long)ts.tv_nsec;
}

int main(int argc, char **argv)
{
    int steps = argc > 1 ? atoi(argv[1]) : 5;
    int active = gpustarve_active();
    gpustarve_role("trainer", 0, 0);
    gpustarve_config("num_workers", "3", 0);
    gpustarve_config("loader", "c-threaded", 0);
    int err = 0; /* errno as the markers leave it (stdio below may set its own) */
    for (int s = 0; s < steps; s++) {
        unsigned long long t[6];
        errno = 0;
        t[0] = mono_ns();
        gpustarve_step_begin((uint64_t)s, 0);
        gpustarve_fetch_begin((uint64_t)s, 0);
        t[1] = mono_ns();
        sleep_ms(2); /* waiting for the batch */
        t[2] = mono_ns();
        gpustarve_fetch_end((uint64_t)s, 0);
        t[3] = mono_ns();
        sleep_ms(3); /* computing */
        t[4] = mono_ns();
        gpustarve_step_end((uint64_t)s, 0);
        t[5] = mono_ns();
        if (errno && !err)
            err = errno;
        fprintf(stderr, "step %d %llu %llu %llu %llu %llu %llu\n", s, t[0], t[1], t[2], t[3],
                t[4], t[5]);
    }
    printf("active=%d steps=%d errno=%d\n", active, steps, err);
    return 0;
}
