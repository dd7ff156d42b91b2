/* paced_steps.c — a training loop whose data comes from stdin, one byte per
 * step, so a test decides when each step's data arrives. Each step: step
 * marker, fetch marker around the blocking read of the byte (the data
 * wait), then B milliseconds of busy work (B = the byte's value), step end.
 * After each step prints "STEP WAIT_NS STEP_NS" (its own CLOCK_MONOTONIC
 * measure of the wait and of the whole step) and flushes: the ground truth
 * tests/e2e/test_top.py holds `gpustarve top` against. Ends at EOF.
 *
 * Must never: sleep (the busy work is CPU time, the wait is the read), or
 * print anything but the step lines.
 */
#include <stdint.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#include "gpustarve.h"

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

int main(void)
{
    volatile uint64_t sink = 0;
    for (uint64_t i = 0;; i++) {
        const uint64_t t0 = now_ns();
        gpustarve_step_begin(i, 0);
        gpustarve_fetch_begin(i, 0);
        unsigned char ms;
        ssize_t n = read(STDIN_FILENO, &ms, 1);
        gpustarve_fetch_end(i, 0);
        if (n != 1)
            break;
        const uint64_t tw = now_ns();
        while (now_ns() - tw < (uint64_t)ms * 1000000ull)
            sink += i;
        gpustarve_step_end(i, 0);
        const uint64_t t1 = now_ns();
        printf("%llu %llu %llu\n", (unsigned long long)i, (unsigned long long)(tw - t0),
               (unsigned long long)(t1 - t0));
        fflush(stdout);
    }
    return 0;
}
