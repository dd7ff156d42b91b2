/* pread_counted.c — FILE COUNTS THREADS [SPIN]: THREADS threads pread 4 KiB
 * of FILE in a loop until the process is killed. After each completed call a
 * thread adds one to its own u64 in COUNTS (a file of at least 512 bytes,
 * mapped shared), so the counts outlive the process however it dies. Prints
 * "go" once the threads run. SPIN: busy iterations between calls (0, the
 * default: a tight loop). tests/tools/death_survival.py kills it and holds the
 * counts against its trace.
 *
 * Must never: count a call before it returned (the count is a lower bound of
 * the calls made: at most one per thread is made and not counted). */
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

enum { max_threads = 64 };

static int g_fd;
static long g_spin;
static _Atomic uint64_t *g_counts;

static void *loop(void *arg)
{
    const long k = (long)arg;
    char buf[4096];
    for (uint64_t i = 0;; i++) {
        if (pread(g_fd, buf, sizeof buf, (off_t)(4096 * ((i + (uint64_t)k) % 16))) < 0)
            _exit(1);
        atomic_fetch_add_explicit(&g_counts[k], 1, memory_order_relaxed);
        for (volatile long s = 0; s < g_spin; s++)
            ;
    }
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc < 4)
        return 2;
    g_fd = open(argv[1], O_RDONLY);
    const int cfd = open(argv[2], O_RDWR);
    const long n = atol(argv[3]);
    g_spin = argc > 4 ? atol(argv[4]) : 0;
    if (g_fd < 0 || cfd < 0 || n < 1 || n > max_threads)
        return 2;
    void *m = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, cfd, 0);
    if (m == MAP_FAILED)
        return 1;
    g_counts = m;
    for (long k = 1; k < n; k++) {
        pthread_t t;
        if (pthread_create(&t, NULL, loop, (void *)k) != 0)
            return 1;
    }
    if (write(1, "go\n", 3) != 3)
        return 1;
    loop((void *)0);
    return 0;
}
