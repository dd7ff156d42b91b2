/* fork_cost.c — what a forked worker costs: the parent (with HEAP_MIB of
 * touched heap, as a trainer has) forks CHILDREN workers one after another;
 * each makes READS 4 KiB preads of FILE (in the page cache) and _exits,
 * the parent waits for it before the next.
 *
 *   fork_cost FILE CHILDREN READS HEAP_MIB
 *
 * prints one line: "wall_us child_cpu_us parent_cpu_us child_minflt
 * child_majflt parent_minflt", each per child: wall from the fork to the
 * reap, the children's CPU time (user + system, wait4), the parent's over
 * the forks (its own threads included: a traced parent's writer), the
 * children's minor and major page faults and the parent's minor faults.
 * Run untraced and preloaded (bench/bench_collector.py alternates them),
 * the difference is the collector's share; faults are exact counts, CPU
 * and wall move with the machine's load.
 *
 * Must never: be used by a test (benchmarks print numbers).
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double tv_us(struct timeval t)
{
    return (double)t.tv_sec * 1e6 + (double)t.tv_usec;
}

static double now_us(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e6 + (double)t.tv_nsec / 1e3;
}

int main(int argc, char **argv)
{
    if (argc != 5) {
        fprintf(stderr, "usage: fork_cost FILE CHILDREN READS HEAP_MIB\n");
        return 2;
    }
    const int fd = open(argv[1], O_RDONLY);
    const int n = atoi(argv[2]), reads = atoi(argv[3]);
    const size_t heap = (size_t)atoi(argv[4]) << 20;
    char *h = malloc(heap ? heap : 1);
    if (fd < 0 || n <= 0 || reads < 0 || !h)
        return 2;
    memset(h, 1, heap);
    struct rusage s0, s1, c;
    getrusage(RUSAGE_SELF, &s0);
    const double t0 = now_us();
    for (int i = 0; i < n; i++) {
        const pid_t p = fork();
        if (p < 0)
            return 1;
        if (p == 0) {
            char buf[4096];
            for (int j = 0; j < reads; j++)
                if (pread(fd, buf, sizeof buf, (off_t)(j % 256) * 4096) < 0)
                    _exit(1);
            _exit(0);
        }
        int st;
        if (waitpid(p, &st, 0) != p || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
            return 1;
    }
    const double wall = now_us() - t0;
    getrusage(RUSAGE_SELF, &s1);
    getrusage(RUSAGE_CHILDREN, &c);
    printf("%.1f %.1f %.1f %.2f %.2f %.2f\n", wall / n,
           (tv_us(c.ru_utime) + tv_us(c.ru_stime)) / n,
           (tv_us(s1.ru_utime) + tv_us(s1.ru_stime) - tv_us(s0.ru_utime) - tv_us(s0.ru_stime)) / n,
           (double)c.ru_minflt / n, (double)c.ru_majflt / n,
           (double)(s1.ru_minflt - s0.ru_minflt) / n);
    free(h);
    return 0;
}
