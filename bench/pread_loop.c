/* pread_loop.c — the hook-cost workload: 4 KiB preads from a file in the
 * page cache, sequential, wrapping at the end of the file.
 *
 *   pread_loop FILE CALLS              mean ns per call of the timed loop
 *   pread_loop FILE CALLS --alternate  (run under LD_PRELOAD) blocks of
 *       calls through the hooked pread alternate with blocks through libc's
 *       own pread (found with dlopen("libc.so.6", RTLD_NOLOAD)), so both see
 *       the same machine; prints "traced_ns untraced_ns added_ns", each the
 *       median over blocks, added = median of per-pair differences.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

typedef ssize_t (*pread_fn)(int, void *, size_t, off_t);

static double now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

static char buf[4096];
static off_t off, span;

static double run_block(pread_fn fn, int fd, long calls)
{
    const double t0 = now_ns();
    for (long i = 0; i < calls; i++) {
        if (fn(fd, buf, 4096, off) != 4096)
            exit(1);
        off += 4096;
        if (off >= span)
            off = 0;
    }
    return (now_ns() - t0) / (double)calls;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

int main(int argc, char **argv)
{
    if (argc < 3 || argc > 4 || (argc == 4 && strcmp(argv[3], "--alternate") != 0)) {
        fprintf(stderr, "usage: pread_loop FILE CALLS [--alternate]\n");
        return 2;
    }
    const long calls = atol(argv[2]);
    int fd = open(argv[1], O_RDONLY);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) < 0 || st.st_size < 4096) {
        perror(argv[1]);
        return 1;
    }
    span = st.st_size / 4096 * 4096;
    for (off_t o = 0; o < span; o += 4096) /* warm the page cache */
        if (pread(fd, buf, 4096, o) != 4096)
            return 1;
    if (argc == 3) {
        printf("%.2f\n", run_block(pread, fd, calls));
        return 0;
    }
    void *libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
    pread_fn plain = libc ? (pread_fn)dlsym(libc, "pread") : NULL;
    if (!plain || plain == pread) {
        fprintf(stderr, "pread_loop: cannot find libc's own pread\n");
        return 1;
    }
    enum { BLOCK = 5000 };
    int pairs = (int)(calls / BLOCK / 2);
    if (pairs < 3)
        pairs = 3;
    double *t = malloc(sizeof(double) * (size_t)pairs * 3);
    double *u = t + pairs, *d = u + pairs;
    for (int i = 0; i < pairs; i++) {
        /* alternate which goes first, so neither always follows the other */
        if (i % 2) {
            t[i] = run_block(pread, fd, BLOCK);
            u[i] = run_block(plain, fd, BLOCK);
        } else {
            u[i] = run_block(plain, fd, BLOCK);
            t[i] = run_block(pread, fd, BLOCK);
        }
        d[i] = t[i] - u[i];
    }
    const double md = median(d, pairs);
    printf("%.2f %.2f %.2f\n", median(t, pairs), median(u, pairs), md);
    return 0;
}
