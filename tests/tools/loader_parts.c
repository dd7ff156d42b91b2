/* loader_parts.c — a training loop with one loader thread whose time per
 * batch is known: it reads --read-kib from a file (hooked pread; in --reads
 * calls of equal size, so a batch can be many events), sleeps
 * --sleep-ms, burns --burn-ms of its own CPU time (CLOCK_THREAD_CPUTIME_ID,
 * so load on the machine stretches the wall time, never the CPU time), and
 * with --map touches --map-pages pages of a file it maps after dropping them
 * from the page cache (posix_fadvise DONTNEED): major faults, page-fault
 * I/O. The training thread marks its steps and fetches (include/gpustarve.h)
 * and "trains" by sleeping --step-ms (a trainer asleep in a GPU sync).
 * Ground truth for tests/e2e/test_measured_time.py.
 *
 * Its final line: "batches N loader_majflt M", M the loader thread's own
 * major faults (getrusage RUSAGE_THREAD): a page of its code read back from
 * storage after the machine dropped it is one, mapped file or not.
 *
 * Must never: time anything by the wall clock but the sleeps, or print
 * anything but its final line.
 */
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "gpustarve.h"

static int g_batches = 30, g_sleep_ms = 20, g_burn_ms = 15, g_step_ms = 5, g_read_kib = 64, g_reads = 1;
static const char *g_file, *g_map;
static long g_map_pages;

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_cv = PTHREAD_COND_INITIALIZER;
static int g_ready; /* batches made and not yet taken */
static volatile uint64_t g_sink;
static long g_loader_majflt; /* the loader thread's own major faults, at its end */

static uint64_t thread_cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void burn(int ms)
{
    const uint64_t end = thread_cpu_ns() + (uint64_t)ms * 1000000u;
    uint64_t x = 1;
    while (thread_cpu_ns() < end)
        for (int i = 0; i < 1000; i++)
            x = x * 6364136223846793005u + 1442695040888963407u;
    g_sink += x;
}

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0)
        ;
}

static void *loader(void *arg)
{
    (void)arg;
    int fd = open(g_file, O_RDONLY);
    if (fd < 0) {
        perror(g_file);
        exit(2);
    }
    struct stat st;
    fstat(fd, &st);
    const size_t chunk = (size_t)g_read_kib * 1024;
    char *buf = malloc(chunk ? chunk : 1);
    unsigned char *map = NULL;
    size_t map_len = 0;
    long page = sysconf(_SC_PAGESIZE);
    if (g_map) {
        int mfd = open(g_map, O_RDONLY);
        struct stat ms;
        if (mfd < 0 || fstat(mfd, &ms) != 0) {
            perror(g_map);
            exit(2);
        }
        map_len = (size_t)ms.st_size;
        posix_fadvise(mfd, 0, 0, POSIX_FADV_DONTNEED);
        map = mmap(NULL, map_len, PROT_READ, MAP_PRIVATE, mfd, 0);
        if (map == MAP_FAILED) {
            perror("mmap");
            exit(2);
        }
        /* no readahead: each touched page is one major fault */
        madvise(map, map_len, MADV_RANDOM);
        close(mfd);
    }
    off_t off = 0;
    size_t mpos = 0;
    for (int b = 0; b < g_batches; b++) {
        const size_t piece = chunk / (size_t)g_reads;
        for (int k = 0; piece && k < g_reads; k++) {
            if (off + (off_t)piece > st.st_size)
                off = 0;
            ssize_t n = pread(fd, buf, piece, off);
            off += n > 0 ? n : 0;
        }
        if (g_sleep_ms)
            sleep_ms(g_sleep_ms);
        if (g_burn_ms)
            burn(g_burn_ms);
        for (long p = 0; map && p < g_map_pages; p++) {
            g_sink += map[mpos];
            mpos = (mpos + (size_t)page * 7) % map_len; /* skip around: no neighbour read ahead */
        }
        pthread_mutex_lock(&g_mu);
        g_ready++;
        pthread_cond_signal(&g_cv);
        pthread_mutex_unlock(&g_mu);
    }
    close(fd);
    free(buf);
    struct rusage ru;
    if (getrusage(RUSAGE_THREAD, &ru) == 0)
        g_loader_majflt = ru.ru_majflt;
    return NULL;
}

int main(int argc, char **argv)
{
    for (int i = 1; i + 1 < argc; i += 2) {
        const char *k = argv[i], *v = argv[i + 1];
        if (!strcmp(k, "--batches")) g_batches = atoi(v);
        else if (!strcmp(k, "--sleep-ms")) g_sleep_ms = atoi(v);
        else if (!strcmp(k, "--burn-ms")) g_burn_ms = atoi(v);
        else if (!strcmp(k, "--step-ms")) g_step_ms = atoi(v);
        else if (!strcmp(k, "--read-kib")) g_read_kib = atoi(v);
        else if (!strcmp(k, "--reads")) g_reads = atoi(v) > 0 ? atoi(v) : 1;
        else if (!strcmp(k, "--file")) g_file = v;
        else if (!strcmp(k, "--map")) g_map = v;
        else if (!strcmp(k, "--map-pages")) g_map_pages = atol(v);
        else {
            fprintf(stderr, "loader_parts: unknown option %s\n", k);
            return 2;
        }
    }
    if (!g_file) {
        fprintf(stderr, "usage: loader_parts --file F [--batches N --sleep-ms X --burn-ms Y "
                        "--step-ms G --read-kib K --reads R --map F --map-pages P]\n");
        return 2;
    }
    gpustarve_config("num_workers", "0", 0);
    pthread_t th;
    pthread_create(&th, NULL, loader, NULL);
    for (int k = 0; k < g_batches; k++) {
        gpustarve_step_begin((uint64_t)k, 0);
        gpustarve_fetch_begin((uint64_t)k, 0);
        pthread_mutex_lock(&g_mu);
        while (!g_ready)
            pthread_cond_wait(&g_cv, &g_mu);
        g_ready--;
        pthread_mutex_unlock(&g_mu);
        gpustarve_fetch_end((uint64_t)k, 0);
        if (g_step_ms)
            sleep_ms(g_step_ms);
        gpustarve_step_end((uint64_t)k, 0);
    }
    pthread_join(th, NULL);
    printf("batches %d loader_majflt %ld\n", g_batches, g_loader_majflt);
    return 0;
}
