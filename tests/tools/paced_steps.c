/* paced_steps.c — a training loop whose data comes from stdin, one byte per
 * step, so a test decides when each step's data arrives. Each step: step
 * marker, fetch marker around the blocking read of the byte (the data
 * wait), then B milliseconds of busy work (B = the byte's value), step end.
 * After each step prints "STEP WAIT_NS STEP_NS" (its own CLOCK_MONOTONIC
 * measure of the wait and of the whole step) and flushes: the ground truth
 * tests/e2e/test_top.py holds `gpustarve top` against. Ends at EOF.
 *
 * `paced_steps worker`: a loader worker process (role loader_worker, worker
 * 0 of loader 0) loads each step's batch: inside the step's fetch the byte
 * goes to it through a pipe, it marks the batch (fetch_begin, B ms of busy
 * work, fetch_end: the marker pair of docs/trace-format.md) and answers;
 * the step line then ends with the worker's own measure of that batch,
 * "STEP WAIT_NS STEP_NS BATCH_NS".
 *
 * Must never: sleep (the busy work is CPU time, the wait is the read), or
 * print anything but the step lines.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "gpustarve.h"

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static volatile uint64_t sink;

static void busy_ms(unsigned ms)
{
    const uint64_t t = now_ns();
    while (now_ns() - t < (uint64_t)ms * 1000000ull)
        sink++;
}

/* The worker: one batch per byte from in, its time (ns, 8 bytes) to out. */
static int worker(int in, int out)
{
    gpustarve_role("loader_worker", 0, 0);
    unsigned char ms;
    for (uint64_t k = 0; read(in, &ms, 1) == 1; k++) {
        const uint64_t t0 = now_ns();
        gpustarve_fetch_begin(k, 0);
        busy_ms(ms);
        gpustarve_fetch_end(k, 0);
        const uint64_t ns = now_ns() - t0;
        if (write(out, &ns, sizeof ns) != (ssize_t)sizeof ns)
            return 1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    const int with_worker = argc > 1 && strcmp(argv[1], "worker") == 0;
    int to_w[2] = {-1, -1}, from_w[2] = {-1, -1};
    pid_t child = -1;
    if (with_worker) {
        if (pipe(to_w) || pipe(from_w))
            return 1;
        child = fork();
        if (child < 0)
            return 1;
        if (child == 0) {
            close(to_w[1]);
            close(from_w[0]);
            _exit(worker(to_w[0], from_w[1]));
        }
        close(to_w[0]);
        close(from_w[1]);
    }
    int rc = 0;
    for (uint64_t i = 0;; i++) {
        const uint64_t t0 = now_ns();
        gpustarve_step_begin(i, 0);
        gpustarve_fetch_begin(i, 0);
        unsigned char ms;
        ssize_t n = read(STDIN_FILENO, &ms, 1);
        uint64_t batch = 0;
        if (n == 1 && with_worker &&
            (write(to_w[1], &ms, 1) != 1 || read(from_w[0], &batch, sizeof batch) != sizeof batch))
            n = 0, rc = 1;
        gpustarve_fetch_end(i, 0);
        if (n != 1)
            break;
        const uint64_t tw = now_ns();
        busy_ms(ms);
        gpustarve_step_end(i, 0);
        const uint64_t t1 = now_ns();
        if (with_worker)
            printf("%llu %llu %llu %llu\n", (unsigned long long)i, (unsigned long long)(tw - t0),
                   (unsigned long long)(t1 - t0), (unsigned long long)batch);
        else
            printf("%llu %llu %llu\n", (unsigned long long)i, (unsigned long long)(tw - t0),
                   (unsigned long long)(t1 - t0));
        fflush(stdout);
    }
    if (with_worker) {
        close(to_w[1]);
        int st = 0;
        if (waitpid(child, &st, 0) != child || !WIFEXITED(st) || WEXITSTATUS(st))
            rc = 1;
    }
    return rc;
}
