/* hk_cpulimits.c — every process image records the CPUs it may use once, at its
 * start: the parent the CPUs of its affinity mask as it began, a child
 * forked after the parent narrowed its mask to one CPU the one CPU; both
 * the online CPU count, and the same cgroup quota; with HK_QUOTA_MILLI set
 * (tests/hooks/run.sh, where it can make a cgroup with a quota and start
 * the program in it) that quota in milli-CPUs. */
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "hk_util.h"

static int act(void)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    ASSERT_EQ(sched_getaffinity(0, sizeof set, &set), 0);
    int at_start = CPU_COUNT(&set), first = -1;
    for (int c = 0; c < CPU_SETSIZE && first < 0; c++)
        if (CPU_ISSET(c, &set))
            first = c;
    CPU_ZERO(&set);
    CPU_SET(first, &set);
    ASSERT_EQ(sched_setaffinity(0, sizeof set, &set), 0);
    pid_t pid = fork();
    if (pid == 0)
        _exit(0);
    int st = 0;
    ASSERT_EQ(waitpid(pid, &st, 0), pid);
    char pp[4096];
    FILE *pf = fopen(hk_tmp(pp, sizeof pp, "cpulimits.txt"), "w");
    fprintf(pf, "%d %d %d %ld\n", (int)getpid(), (int)pid, at_start, sysconf(_SC_NPROCESSORS_ONLN));
    fclose(pf);
    return hk_report();
}

static int verify(const char *dir)
{
    char pp[4096];
    int ppid = 0, cpid = 0, at_start = 0;
    long online = 0;
    FILE *pf = fopen(hk_tmp(pp, sizeof pp, "cpulimits.txt"), "r");
    ASSERT_TRUE(pf && fscanf(pf, "%d %d %d %ld", &ppid, &cpid, &at_start, &online) == 4);
    hk_file *files;
    int n = hk_load_dir(dir, &files);
    ASSERT_EQ(n, 2);
    hk_check_files(files, n);
    hk_file *p = hk_find(files, n, (uint64_t)ppid, 0);
    hk_file *c = hk_find(files, n, (uint64_t)cpid, 0);
    ASSERT_TRUE(p && c);
    if (!p || !c)
        return hk_report();
    ASSERT_EQ(hk_count(p, GS_K_CPU_LIMITS, NULL), 1);
    ASSERT_EQ(hk_count(c, GS_K_CPU_LIMITS, NULL), 1);
    const hk_ev *pe = hk_first(p, GS_K_CPU_LIMITS, NULL), *ce = hk_first(c, GS_K_CPU_LIMITS, NULL);
    if (pe && ce) {
        ASSERT_EQ(pe->e.aux, (uint64_t)at_start);
        ASSERT_EQ(ce->e.aux, 1);
        ASSERT_EQ(pe->e.bytes, (uint64_t)online);
        ASSERT_EQ(ce->e.bytes, (uint64_t)online);
        ASSERT_EQ(pe->e.aux2, ce->e.aux2); /* the same cgroup */
        const char *q = getenv("HK_QUOTA_MILLI");
        if (q)
            ASSERT_EQ(pe->e.aux2, (uint64_t)strtoull(q, NULL, 10));
    }
    return hk_report();
}

int main(int argc, char **argv)
{
    return (argc > 2 && strcmp(argv[1], "verify") == 0) ? verify(argv[2]) : act();
}
