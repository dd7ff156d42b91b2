/* hk_births.c — a thread that begins while the process is traced gets a
 * birth record: a CPU record of source birth, every value 0, stamped before
 * the thread existed, before any other record of it (preload/gs_births.h,
 * docs/trace-format.md "Thread CPU samples"); a forked child's writer
 * takes no pass as it starts, and its thread is still measured from the
 * fork.
 *
 *   hk_births            (act, preloaded; GPUSTARVE_FLUSH_MS=60000: no tick
 *                         comes in the processes' lives)
 *   hk_births verify DIR
 *
 * The parent makes 4 preads, then starts a joinable thread A (burns 10 ms
 * of its own CPU, 5 preads), then a detached thread B (5 preads), then
 * forks a child that burns 10 ms of CPU before it starts a joinable thread
 * C (5 preads) and ends with _exit, as a DataLoader worker does. Each thread stays, blocked, until its process
 * exits, where the writer's last pass samples it. The tids go to
 * HK_TMP/births.tids ("A B" by the parent, "C" by the child).
 *
 * verify: A, C and the child's first thread each have exactly one birth,
 * with zero values, stamped no later than any other record of the thread;
 * B (detached: its tid is not asked for) and the parent's first thread
 * (it began before tracing) have none. The child's first thread has one
 * periodic sample only (its writer's last pass, no first pass), and it
 * holds the CPU the child burned before its writer started. (Its exit
 * takes the last pass only: _exit runs no destructor, whose pass would
 * sample too.)
 */
#include <fcntl.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "hk_util.h"

static int g_fd = -1;
static _Atomic long g_tid;
static sem_t g_ready, g_never;

static void preads(int n)
{
    char buf[8];
    for (int i = 0; i < n; i++)
        ASSERT_EQ(pread(g_fd, buf, 8, 0), 8);
}

/* Burn ms of this thread's own CPU time (load stretches the wall time only). */
static void burn(long ms)
{
    struct timespec t0, t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t0);
    volatile unsigned long x = 0;
    do {
        for (int i = 0; i < 10000; i++)
            x += (unsigned long)i;
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    } while ((t.tv_sec - t0.tv_sec) * 1000L + (t.tv_nsec - t0.tv_nsec) / 1000000L < ms);
}

/* A thread: its tid, its work, then blocked until the process exits, so
 * that the writer's last pass, at the exit, still finds it. */
static void *thread_main(void *arg)
{
    g_tid = syscall(SYS_gettid);
    if (arg)
        burn(10);
    preads(5);
    sem_post(&g_ready);
    for (;;)
        sem_wait(&g_never);
    return NULL;
}

static long start(int detach, void *arg)
{
    pthread_t th;
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, detach ? PTHREAD_CREATE_DETACHED : PTHREAD_CREATE_JOINABLE);
    ASSERT_EQ(pthread_create(&th, &attr, thread_main, arg), 0);
    pthread_attr_destroy(&attr);
    while (sem_wait(&g_ready) != 0)
        ;
    return g_tid;
}

static void write_tids(const char *mode, long a, long b)
{
    char path[4096];
    hk_tmp(path, sizeof path, "births.tids");
    FILE *f = fopen(path, mode);
    ASSERT_TRUE(f != NULL);
    if (f) {
        fprintf(f, "%ld %ld\n", a, b);
        fclose(f);
    }
}

static int act(void)
{
    g_fd = hk_small_file("births.dat");
    sem_init(&g_ready, 0, 0);
    sem_init(&g_never, 0, 0);
    preads(4);
    const long a = start(0, (void *)1);
    const long b = start(1, NULL);
    write_tids("w", a, b);
    pid_t pid = fork();
    if (pid == 0) {
        burn(10);
        const long c = start(0, NULL);
        /* RATIONALE: time for the pass a writer once took as it started
         * (3 ms after it), which this test would then count; the test
         * cannot fail for want of it */
        struct timespec ts = {0, 30 * 1000000L};
        nanosleep(&ts, NULL);
        write_tids("a", c, 0);
        _exit(hk_report()); /* as a DataLoader worker ends: no destructors */
    }
    int st = -1;
    ASSERT_EQ(waitpid(pid, &st, 0), pid);
    ASSERT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    return hk_report();
}

/* Records of thread tid (the records it wrote, and CPU records of it). */
static int of_thread(const gs_event *e, uint32_t tid)
{
    return e->kind == GS_K_CPU ? gs_cpu_tid(e) == tid : e->tid == tid;
}

static size_t cpu_records(const hk_file *f, uint32_t tid, unsigned src, const gs_event **last)
{
    size_t n = 0;
    for (size_t i = 0; i < f->n; i++) {
        const gs_event *e = &f->ev[i].e;
        if (e->kind == GS_K_CPU && gs_cpu_tid(e) == tid && gs_cpu_source(e) == src) {
            n++;
            if (last)
                *last = e;
        }
    }
    return n;
}

/* One birth of tid, all zero, no later than every other record of tid. */
static void born_once(const hk_file *f, uint32_t tid)
{
    const gs_event *b = NULL;
    ASSERT_EQ(cpu_records(f, tid, GS_CPU_SRC_BIRTH, &b), 1);
    if (!b)
        return;
    ASSERT_EQ(gs_cpu_ns(b), 0);
    ASSERT_EQ(b->aux2, 0); /* run-queue delay */
    ASSERT_EQ(b->dev, 0);  /* major faults */
    ASSERT_EQ(b->ret, 0);  /* storage reads */
    size_t others = 0;
    for (size_t i = 0; i < f->n; i++) {
        const gs_event *e = &f->ev[i].e;
        if (e == b || !of_thread(e, tid) || !e->ts)
            continue;
        others++;
        ASSERT_TRUE(e->ts >= b->ts);
    }
    ASSERT_TRUE(others > 0);
}

static int verify(const char *dir)
{
    char path[4096];
    long a = 0, b = 0, c = 0, zero = -1;
    hk_tmp(path, sizeof path, "births.tids");
    FILE *t = fopen(path, "r");
    ASSERT_TRUE(t != NULL);
    if (!t || fscanf(t, "%ld %ld %ld %ld", &a, &b, &c, &zero) != 4)
        return hk_report();
    fclose(t);
    hk_file *files = NULL;
    const int n = hk_load_dir(dir, &files);
    ASSERT_EQ(n, 2);
    if (n != 2)
        return hk_report();
    hk_check_files(files, n);
    const int ci = (files[0].info.flags & GS_HDR_F_FORKED) ? 0 : 1;
    const hk_file *parent = &files[1 - ci], *child = &files[ci];
    ASSERT_TRUE((child->info.flags & GS_HDR_F_FORKED) && !(parent->info.flags & GS_HDR_F_FORKED));
    const uint32_t ppid = (uint32_t)parent->info.pid, cpid = (uint32_t)child->info.pid;
    born_once(parent, (uint32_t)a);
    ASSERT_EQ(cpu_records(parent, (uint32_t)b, GS_CPU_SRC_BIRTH, NULL), 0);
    ASSERT_EQ(cpu_records(parent, ppid, GS_CPU_SRC_BIRTH, NULL), 0);
    born_once(child, cpid);
    born_once(child, (uint32_t)c);
    /* the child's writer took no pass as it started: its first thread's
     * one periodic sample is the last pass's, and it holds the 10 ms */
    const gs_event *s = NULL;
    ASSERT_EQ(cpu_records(child, cpid, GS_CPU_SRC_PERIODIC, &s), 1);
    if (s)
        ASSERT_TRUE(gs_cpu_ns(s) >= 10000000u);
    return hk_report();
}

int main(int argc, char **argv)
{
    if (argc > 2 && strcmp(argv[1], "verify") == 0)
        return verify(argv[2]);
    return act();
}
