/* marker_demo.c — a C training loop stand-in using the public marker API
 * (include/gpustarve.h). It must behave the same with and without
 * libgpustarve.so preloaded; tests/python/test_python_side.py builds it as
 * PIE and non-PIE and runs it both ways.
 *
 *     marker_demo STEPS      prints "active=N steps=S errno=0"
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

int main(int argc, char **argv)
{
    int steps = argc > 1 ? atoi(argv[1]) : 5;
    int active = gpustarve_active();
    gpustarve_role("trainer", 0, 0);
    gpustarve_config("num_workers", "3", 0);
    gpustarve_config("loader", "c-threaded", 0);
    errno = 0;
    for (int s = 0; s < steps; s++) {
        gpustarve_step_begin((uint64_t)s, 0);
        gpustarve_fetch_begin((uint64_t)s, 0);
        sleep_ms(2); /* waiting for the batch */
        gpustarve_fetch_end((uint64_t)s, 0);
        sleep_ms(3); /* computing */
        gpustarve_step_end((uint64_t)s, 0);
    }
    printf("active=%d steps=%d errno=%d\n", active, steps, errno);
    return 0;
}
