/* hk_late.c — a process with one thread runs with no thread of ours until
 * it starts one, or its ring needs the writer (docs/collector-safety.md,
 * "Threads started late"); nothing is lost either way.
 *
 *   hk_late MODE          (act, preloaded; GPUSTARVE_RING_EVENTS=1024)
 *   hk_late verify DIR MODE
 *
 * MODE exit:   50 preads, then exit: no thread of ours and no descriptor of
 *              ours in the program's table at any time; the trace holds every
 *              read and the EXIT record, and no live file is left.
 * MODE thread: 50 preads with no thread of ours; then the program starts a
 *              thread (which makes 10 preads): ours run from then on, the
 *              trace is written while the program runs, and the program's
 *              table still holds nothing of ours.
 * MODE fill:   a ring of 1024 records: 50 preads with no thread of ours,
 *              then 600 more: past half the ring the next pread starts the
 *              writer, which writes the trace while the program runs;
 *              nothing is dropped.
 * MODE fork:   as thread, then the program forks: the child has one thread
 *              (glibc's __libc_single_threaded is 0 there) and runs with no
 *              thread and no descriptor of ours through 30 preads; its
 *              trace holds them and its EXIT record.
 */
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "hk_util.h"

static int g_fd = -1;

/* Threads of this process. */
static int tasks(void)
{
    DIR *d = opendir("/proc/self/task");
    int n = 0;
    struct dirent *de;
    while (d && (de = readdir(d)) != NULL)
        n += de->d_name[0] != '.';
    if (d)
        closedir(d);
    return n;
}

/* A descriptor of the program's table that is a trace or live file. */
static int ours_in_table(void)
{
    const int fd = hk_fd_ending(".gst");
    return fd >= 0 ? fd : hk_fd_ending(".live");
}

/* Size of this process's trace file in GPUSTARVE_DIR. */
static long long trace_size(void)
{
    char p[PATH_MAX], host[256] = "";
    gethostname(host, sizeof host - 1);
    snprintf(p, sizeof p, "%s/%s-%d.gst", getenv("GPUSTARVE_DIR"), host, (int)getpid());
    struct stat st;
    return stat(p, &st) == 0 ? (long long)st.st_size : -1;
}

static void preads(int n)
{
    char buf[8];
    for (int i = 0; i < n; i++)
        ASSERT_EQ(pread(g_fd, buf, 8, 0), 8);
}

static void *worker(void *arg)
{
    (void)arg;
    preads(10);
    return NULL;
}

static int act(const char *mode)
{
    g_fd = hk_small_file("late.dat");
    preads(50);
    ASSERT_EQ(tasks(), 1);          /* no thread of ours */
    ASSERT_EQ(ours_in_table(), -1); /* and nothing of ours in the table */
    if (strcmp(mode, "thread") == 0) {
        long long before = trace_size();
        pthread_t th;
        ASSERT_EQ(pthread_create(&th, NULL, worker, NULL), 0);
        ASSERT_EQ(pthread_join(th, NULL), 0);
        ASSERT_TRUE(tasks() > 1); /* ours run from the program's first thread on */
        ASSERT_EQ(ours_in_table(), -1);
        /* the writer flushes while the program runs (synchronised, 20 s at most) */
        for (int i = 0; i < 4000 && trace_size() <= before; i++) {
            struct timespec ts = {0, 5 * 1000000L};
            nanosleep(&ts, NULL);
        }
        ASSERT_TRUE(trace_size() > before);
    } else if (strcmp(mode, "fill") == 0) {
        long long before = trace_size();
        preads(600);
        ASSERT_TRUE(tasks() > 1); /* half the ring: the writer started */
        ASSERT_EQ(ours_in_table(), -1);
        for (int i = 0; i < 4000 && trace_size() <= before; i++) {
            struct timespec ts = {0, 5 * 1000000L};
            nanosleep(&ts, NULL);
        }
        ASSERT_TRUE(trace_size() > before);
    }
    if (strcmp(mode, "fork") == 0) {
        pthread_t th;
        ASSERT_EQ(pthread_create(&th, NULL, worker, NULL), 0);
        ASSERT_EQ(pthread_join(th, NULL), 0);
        ASSERT_TRUE(tasks() > 1); /* ours run in the parent */
        pid_t pid = fork();
        if (pid == 0) {
            preads(30);
            ASSERT_EQ(tasks(), 1); /* the child: no thread of ours */
            ASSERT_EQ(ours_in_table(), -1);
            exit(hk_report());
        }
        int st = -1;
        ASSERT_EQ(waitpid(pid, &st, 0), pid);
        ASSERT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    }
    close(g_fd);
    return hk_report();
}

static size_t preads_in(const hk_file *f)
{
    return hk_count(f, GS_K_PREAD, NULL) + hk_count(f, GS_K_PREAD64, NULL);
}

static void verify_file(const hk_file *f, size_t want)
{
    ASSERT_EQ(preads_in(f), want);
    const hk_ev *drops = NULL;
    for (size_t i = 0; i < f->n; i++)
        if (f->ev[i].e.kind == GS_K_DROPS)
            drops = &f->ev[i];
    ASSERT_TRUE(drops != NULL);
    if (drops)
        ASSERT_EQ(drops->e.aux, 0);
    const hk_ev *ex = hk_first(f, GS_K_EXIT, NULL);
    ASSERT_TRUE(ex != NULL);
    if (ex)
        ASSERT_EQ(ex->e.aux, 0); /* the exit status */
}

static int verify(const char *dir, const char *mode)
{
    if (strcmp(mode, "fork") == 0) {
        hk_file *files = NULL;
        const int n = hk_load_dir(dir, &files);
        ASSERT_EQ(n, 2); /* the parent (50 + 10 preads) and the child (30) */
        if (n != 2)
            return hk_report();
        hk_check_files(files, n);
        const int child = preads_in(&files[0]) == 30 ? 0 : 1;
        verify_file(&files[child], 30);
        verify_file(&files[1 - child], 60);
    } else {
        const hk_file *f = hk_load_one(dir);
        if (!f)
            return hk_report();
        verify_file(f, strcmp(mode, "thread") == 0 ? 60 : strcmp(mode, "fill") == 0 ? 650 : 50);
    }
    DIR *d = opendir(dir);
    struct dirent *de;
    int live = 0;
    while (d && (de = readdir(d)) != NULL)
        live += strstr(de->d_name, ".live") != NULL;
    if (d)
        closedir(d);
    ASSERT_EQ(live, 0); /* everything reached the trace file */
    return hk_report();
}

int main(int argc, char **argv)
{
    if (argc > 3 && strcmp(argv[1], "verify") == 0)
        return verify(argv[2], argv[3]);
    return act(argc > 1 ? argv[1] : "exit");
}
