/* pread_loop.c — the hook-cost workload: 4 KiB preads from a file in the
 * page cache, sequential, wrapping at the end of the file.
 *
 *   pread_loop FILE CALLS              "ns_per_call cpu_ns_per_call" of the
 *       timed loop: wall time, and the CPU time (user + system) of the
 *       calling thread alone (CLOCK_THREAD_CPUTIME_ID); bench/bench_cost.py
 *       compares it with the whole process's CPU time (wait4)
 *   pread_loop FILE CALLS --idle-thread  the same with one more thread that
 *       only sleeps: a multi-threaded process without the collector (glibc
 *       takes its cancellation path around each system call then, and the
 *       kernel counts references on the file of each call, since the
 *       descriptor table is shared)
 *   pread_loop FILE CALLS --idle-thread-own-table  the same, the extra
 *       thread having a descriptor table of its own (unshare(CLONE_FILES),
 *       then it closes what it inherited): what a collector thread costs the
 *       program when it does not share the program's table
 *   pread_loop FILE CALLS --alternate  (run under LD_PRELOAD) blocks of
 *       calls through the hooked pread alternate with blocks through libc's
 *       own pread (found with dlopen("libc.so.6", RTLD_NOLOAD)), so both see
 *       the same machine; prints "traced_ns untraced_ns added_ns", each the
 *       median over blocks, added = median of per-pair differences.
 *   pread_loop FILE CALLS --alternate-cpu  the same, then the same three
 *       figures in CPU time of the calling thread (CLOCK_THREAD_CPUTIME_ID),
 *       the number of hooked calls, and the calling thread's CPU time over
 *       the whole process in ns: with the process's CPU time from wait4,
 *       the rest is the other threads' (the collector's writer).
 *   pread_loop FILE CALLS --alternate-read  the same as --alternate with
 *       read() at the file position (lseek back to 0 at the end) instead
 *       of pread; --alternate-read-worker the same after a role record
 *       loader_worker (gpustarve_role, found with dlsym): each hooked read
 *       then also looks up its file position (read_at, docs/trace-format.md).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "bench_clock.h"
#include "bench_median.h"

typedef ssize_t (*pread_fn)(int, void *, size_t, off_t);

static _Atomic int idle_ready;

static void *idle_main(void *arg)
{
    if (arg && (unshare(CLONE_FILES) != 0 || syscall(SYS_close_range, 0u, ~0u, 0u) != 0))
        exit(1);
    idle_ready = 1;
    for (;;)
        pause();
    return arg;
}

static char buf[4096];
static off_t off, span;

static double last_cpu; /* CPU ns per call of the last run_block */

/* --alternate-read*: a read() at the file position through g_read (the
 * hooked read or libc's), in the shape of a pread_fn for run_block */
typedef ssize_t (*read_fn)(int, void *, size_t);
static read_fn g_read;

static ssize_t read_at_pos(int fd, void *b, size_t n, off_t o)
{
    if (o == 0 && lseek(fd, 0, SEEK_SET) != 0)
        return -1;
    return g_read(fd, b, n);
}

static double run_block(pread_fn fn, int fd, long calls)
{
    const double c0 = thread_ns();
    const double t0 = now_ns();
    for (long i = 0; i < calls; i++) {
        if (fn(fd, buf, 4096, off) != 4096)
            exit(1);
        off += 4096;
        if (off >= span)
            off = 0;
    }
    const double wall = calls > 0 ? (now_ns() - t0) / (double)calls : 0;
    last_cpu = calls > 0 ? (thread_ns() - c0) / (double)calls : 0;
    return wall;
}

int main(int argc, char **argv)
{
    const int with_cpu = argc == 4 && strcmp(argv[3], "--alternate-cpu") == 0;
    const int worker = argc == 4 && strcmp(argv[3], "--alternate-read-worker") == 0;
    const int reads = worker || (argc == 4 && strcmp(argv[3], "--alternate-read") == 0);
    const int alternate = with_cpu || reads || (argc == 4 && strcmp(argv[3], "--alternate") == 0);
    const int own_table = argc == 4 && strcmp(argv[3], "--idle-thread-own-table") == 0;
    const int idle = own_table || (argc == 4 && strcmp(argv[3], "--idle-thread") == 0);
    if (argc < 3 || argc > 4 || (argc == 4 && !alternate && !idle)) {
        fprintf(stderr, "usage: pread_loop FILE CALLS [--alternate | --alternate-cpu | "
                        "--alternate-read | --alternate-read-worker | --idle-thread | "
                        "--idle-thread-own-table]\n");
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
    if (!alternate) {
        pthread_t th;
        if (idle && pthread_create(&th, NULL, idle_main, own_table ? &th : NULL) != 0)
            return 1;
        while (idle && !idle_ready)
            sched_yield();
        const double wall = run_block(pread, fd, calls);
        printf("%.2f %.2f\n", wall, last_cpu);
        return 0;
    }
    void *libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
    pread_fn plain = libc ? (pread_fn)dlsym(libc, "pread") : NULL;
    if (!plain || plain == pread) {
        fprintf(stderr, "pread_loop: cannot find libc's own pread\n");
        return 1;
    }
    read_fn libc_read = libc ? (read_fn)dlsym(libc, "read") : NULL;
    if (reads) { /* both ways read at the position: hooked read, then libc's */
        void (*role)(const char *, unsigned long, unsigned) =
            (void (*)(const char *, unsigned long, unsigned))dlsym(RTLD_DEFAULT, "gpustarve_role");
        if (!libc_read || libc_read == read || (worker && !role)) {
            fprintf(stderr, "pread_loop: cannot find libc's own read%s\n",
                    worker ? " or gpustarve_role (not preloaded?)" : "");
            return 1;
        }
        if (worker)
            role("loader_worker", 0, 0);
    }
    enum { BLOCK = 5000 };
    int pairs = (int)(calls / BLOCK / 2);
    if (pairs < 3)
        pairs = 3;
    double *t = malloc(sizeof(double) * (size_t)pairs * 6);
    double *u = t + pairs, *d = u + pairs, *tc = d + pairs, *uc = tc + pairs, *dc = uc + pairs;
    for (int i = 0; i < pairs; i++) {
        /* alternate which goes first, so neither always follows the other */
        for (int k = 0; k < 2; k++) {
            const int traced = (i + k) % 2; /* odd pairs start traced */
            g_read = traced ? read : libc_read;
            pread_fn fn = reads ? read_at_pos : traced ? pread : plain;
            (traced ? t : u)[i] = run_block(fn, fd, BLOCK);
            (traced ? tc : uc)[i] = last_cpu;
        }
        d[i] = t[i] - u[i];
        dc[i] = tc[i] - uc[i];
    }
    const double md = median(d, pairs);
    printf("%.2f %.2f %.2f", median(t, pairs), median(u, pairs), md);
    if (with_cpu)
        printf(" %.2f %.2f %.2f %ld %.0f", median(tc, pairs), median(uc, pairs),
               median(dc, pairs), (long)pairs * BLOCK, thread_ns());
    printf("\n");
    return 0;
}
