/* pread_loop.c — the hook-cost workload: N preads of 4 KiB from a file in
 * the page cache, sequential, wrapping at the end of the file. Prints the
 * mean ns per call of the timed loop (after a warm-up pass).
 *
 *   pread_loop FILE CALLS
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static double now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: pread_loop FILE CALLS\n");
        return 2;
    }
    const long calls = atol(argv[2]);
    int fd = open(argv[1], O_RDONLY);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) < 0 || st.st_size < 4096) {
        perror(argv[1]);
        return 1;
    }
    const off_t span = st.st_size / 4096 * 4096;
    static char buf[4096];
    off_t off = 0;
    for (off_t o = 0; o < span; o += 4096) /* warm the page cache */
        if (pread(fd, buf, 4096, o) != 4096)
            return 1;
    const double t0 = now_ns();
    for (long i = 0; i < calls; i++) {
        if (pread(fd, buf, 4096, off) != 4096)
            return 1;
        off += 4096;
        if (off >= span)
            off = 0;
    }
    const double t1 = now_ns();
    printf("%.2f\n", (t1 - t0) / (double)calls);
    return 0;
}
