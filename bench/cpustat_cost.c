/* cpustat_cost.c — what the threads' own clocks cost (preload/gs_cpustat.c,
 * docs/performance.md "Thread CPU samples"), run under LD_PRELOAD:
 *
 *  1. a batch boundary: blocks of 5000 fetch_begin markers (each takes the
 *     thread's CPU sample first) alternate with blocks of 5000 step_begin
 *     markers (no sample); the median over blocks of the per-call
 *     difference is the sample's cost when the thread ran on since its last
 *     sample (its run-queue delay is known unread); then the same with a
 *     1 µs sleep before each marker (blocks of 500), so that every sample
 *     reads the run-queue delay from /proc (a training thread's fetch_end,
 *     after it slept waiting for the batch);
 *  2. periodic sampling: THREADS threads that each made one hooked call
 *     (so each has a ring: sampled with its faults and storage reads) then
 *     sleep; the whole process's CPU time over SECONDS of that is what the
 *     collector's writer spends with nothing to write but the samples (and
 *     the fault counts it read before them), in % of one core.
 *
 * usage: cpustat_cost [THREADS [SECONDS]]   (defaults 16, 5)
 * Prints numbers; never fails on them (docs/performance.md).
 */
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "bench_clock.h"
#include "bench_median.h"
#include "gpustarve.h"

#define BLOCK 5000
#define ROUNDS 15

static void pause_ms(int ms)
{
    struct timespec t = {0, ms * 1000000L};
    nanosleep(&t, NULL);
}

static double proc_cpu_ns(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ((double)ru.ru_utime.tv_sec + (double)ru.ru_stime.tv_sec) * 1e9 +
           ((double)ru.ru_utime.tv_usec + (double)ru.ru_stime.tv_usec) * 1e3;
}

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_cv = PTHREAD_COND_INITIALIZER;
static int g_stop;

static void *idle_thread(void *arg)
{
    (void)arg;
    char c;
    int fd = open("/dev/zero", O_RDONLY);
    if (fd >= 0) {
        if (pread(fd, &c, 1, 0) < 0)
            perror("pread");
        close(fd);
    }
    pthread_mutex_lock(&g_mu);
    while (!g_stop)
        pthread_cond_wait(&g_cv, &g_mu);
    pthread_mutex_unlock(&g_mu);
    return NULL;
}

int main(int argc, char **argv)
{
    int nthreads = argc > 1 ? atoi(argv[1]) : 16;
    int seconds = argc > 2 ? atoi(argv[2]) : 5;
    if (nthreads < 0 || nthreads > 4000 || seconds < 1) {
        fprintf(stderr, "usage: cpustat_cost [THREADS [SECONDS]]\n");
        return 2;
    }
    printf("traced: %s\n", gpustarve_active() ? "yes" : "no (run under LD_PRELOAD)");
    double with[ROUNDS], without[ROUNDS], diff[ROUNDS];
    for (int r = 0; r < ROUNDS; r++) {
        double t0 = now_ns();
        for (int i = 0; i < BLOCK; i++)
            gpustarve_step_begin((uint64_t)i, 0);
        double t1 = now_ns();
        pause_ms(60); /* the writer drains: no ring ever fills */
        double t2 = now_ns();
        for (int i = 0; i < BLOCK; i++)
            gpustarve_fetch_begin((uint64_t)i, 0);
        double t3 = now_ns();
        pause_ms(60);
        without[r] = (t1 - t0) / BLOCK;
        with[r] = (t3 - t2) / BLOCK;
        diff[r] = with[r] - without[r];
    }
    printf("batch boundary: marker with the CPU sample %.0f ns, without %.0f ns: "
           "sample %.0f ns per boundary (median of %d blocks of %d)\n",
           median(with, ROUNDS), median(without, ROUNDS), median(diff, ROUNDS), ROUNDS, BLOCK);

    /* after a switch: every sample reads /proc/thread-self/schedstat */
    prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
    const struct timespec us1 = {0, 1000};
    for (int r = 0; r < ROUNDS; r++) {
        double t0 = now_ns();
        for (int i = 0; i < BLOCK / 10; i++) {
            nanosleep(&us1, NULL);
            gpustarve_step_begin((uint64_t)i, 0);
        }
        double t1 = now_ns();
        pause_ms(20);
        double t2 = now_ns();
        for (int i = 0; i < BLOCK / 10; i++) {
            nanosleep(&us1, NULL);
            gpustarve_fetch_begin((uint64_t)i, 0);
        }
        double t3 = now_ns();
        pause_ms(20);
        diff[r] = (t3 - t2 - (t1 - t0)) / (BLOCK / 10);
    }
    printf("batch boundary after a switch (the run-queue delay read from /proc): sample %.0f ns "
           "per boundary (median of %d blocks of %d, each marker after a 1 us sleep)\n",
           median(diff, ROUNDS), ROUNDS, BLOCK / 10);

    pthread_t *th = calloc((size_t)nthreads + 1, sizeof *th);
    for (int i = 0; i < nthreads; i++)
        pthread_create(&th[i], NULL, idle_thread, NULL);
    pause_ms(500); /* every thread made its call and sleeps */
    double c0 = proc_cpu_ns(), w0 = now_ns();
    for (int s = 0; s < seconds * 10; s++)
        pause_ms(100);
    double c1 = proc_cpu_ns(), w1 = now_ns();
    printf("periodic sampling: %d idle threads + main, %d s: process CPU %.2f ms/s = %.3f%% of "
           "one core\n",
           nthreads, seconds, (c1 - c0) / 1e6 / ((w1 - w0) / 1e9),
           100 * (c1 - c0) / (w1 - w0));
    pthread_mutex_lock(&g_mu);
    g_stop = 1;
    pthread_cond_broadcast(&g_cv);
    pthread_mutex_unlock(&g_mu);
    for (int i = 0; i < nthreads; i++)
        pthread_join(th[i], NULL);
    free(th);
    return 0;
}
