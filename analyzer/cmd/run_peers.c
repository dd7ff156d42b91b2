/* run_peers.c — the other processes busy on this machine when `gpustarve
 * run` starts the program, by whether the kernel shares the CPUs with them
 * thread by thread or group by group (docs/report-schema.md, "The model":
 * "Whether the other load yields").
 *
 * Responsible for: the processes there before the program starts, two
 * readings of their threads' CPU time (/proc/<pid>/task/<tid>/schedstat,
 * ns) PEERS_WINDOW_NS apart while it starts, and each busy one's
 * scheduling group: its cpu cgroup (/proc/<pid>/cgroup) and, where
 * autogroups apply (kernel.sched_autogroup_enabled, a task in the root cpu
 * cgroup), its autogroup (/proc/<pid>/autogroup, one per session); the
 * cores they kept busy in the run's own group (the program inherits this
 * process's session and cgroup) and in others, as the text
 * "same=S other=O" of <host>-<pid>.peers in the run directory
 * (docs/trace-format.md, "A run"), which the analyzer reads.
 *
 * RATIONALE: one busy process beside a loader that burns CPU decides
 * whether more loader threads help, and how depends on its group: in the
 * run's own session the kernel shares the CPUs thread by thread, and 3
 * spinning loader threads made the step 50.0 -> 33.7 ms beside it; in its
 * own session (setsid) the CPUs are shared session by session, and the
 * same change gave 51.2 -> 50.0 ms (2-CPU VM, 2026-12-05). A run shows
 * neither when its own threads left a CPU free.
 *
 * RATIONALE: the window lies beside the program's start, not before it
 * (40 ms a run, 2 points of a 2-second job's wall time, docs/performance.md);
 * the processes read are those that were there before the program, so it
 * and its children are never counted. Before the fork only their ids are
 * listed (a directory read); their threads and clocks, three system calls
 * a thread, are read after it, beside the program's start.
 *
 * Must never: fail the run (whatever cannot be read is left out; no file
 * when /proc cannot be listed), count this process or its ancestors, or
 * replace a file that is there.
 */
#include <ctype.h>
#include <stdint.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "cmd/run_peers.h"
#include "gs_format.h"
#include "load/an_run.h"
#include "machine/mc_cgroup.h"
#include "machine/mc_file.h"

#define PEERS_WINDOW_NS 40000000L /* 40 ms: a busy process's share within a few % */
#define PEERS_WINDOW_MIN_NS 5e6   /* a program done sooner: nothing said */
#define PEERS_MAX 16384           /* threads read; a larger machine's rest is left out */
#define PIDS_MAX 16384            /* processes listed; the same */
#define PEER_BUSY 0.05            /* cores: below, a process is not counted as busy */

typedef struct {
    int pid, tid;
    unsigned long long cpu_ns;
} peer;

/* a thread's CPU time, ns (schedstat: a thread's own, the main thread's
 * for /proc/<pid>/schedstat, so every thread is read) */
static int cpu_ns(int pid, int tid, unsigned long long *v)
{
    char path[64];
    int64_t ns;
    snprintf(path, sizeof path, "/proc/%d/task/%d/schedstat", pid, tid);
    if (mc_read_i64(path, &ns) != 0 || ns < 0)
        return -1;
    *v = (unsigned long long)ns;
    return 0;
}

/* The scheduling group of pid, as text: its cpu cgroup, and its autogroup
 * where autogroups apply. 0, or -1 when unreadable. */
static int group_of(int pid, int autogroups, char *out, size_t cap)
{
    char path[64], buf[4096];
    snprintf(path, sizeof path, "/proc/%d/cgroup", pid);
    if (mc_read_text(path, buf, sizeof buf) < 0 || mc_cgroup_path(buf, "cpu", out, cap) != 0)
        return -1;
    const int n = (int)strlen(out);
    if (autogroups && strcmp(out, "/") == 0) { /* the root cpu cgroup: autogroups share */
        snprintf(path, sizeof path, "/proc/%d/autogroup", pid);
        char ag[128];
        if (mc_read_text(path, ag, sizeof ag) > 0) {
            ag[strcspn(ag, " \n")] = '\0';
            snprintf(out + n, cap - (size_t)n, " %s", ag);
        }
    }
    return 0;
}

/* pid is this process or one above it: left out */
static int is_ancestor(int pid, const int *up, int nup)
{
    for (int i = 0; i < nup; i++)
        if (up[i] == pid)
            return 1;
    return 0;
}

static int ancestors(int *up, int cap)
{
    int n = 0, pid = getpid();
    while (pid > 1 && n < cap) {
        up[n++] = pid;
        char path[64], buf[512];
        snprintf(path, sizeof path, "/proc/%d/stat", pid);
        if (mc_read_text(path, buf, sizeof buf) <= 0)
            break;
        const char *p = strrchr(buf, ')');
        int ppid;
        if (!p || sscanf(p + 1, " %*c %d", &ppid) != 1)
            break;
        pid = ppid;
    }
    return n;
}

static int list_tasks(int pid, peer *ps, int n, int cap)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/task", pid);
    DIR *d = opendir(path);
    if (!d)
        return n;
    struct dirent *e;
    while ((e = readdir(d)) && n < cap) {
        if (!isdigit((unsigned char)e->d_name[0]))
            continue;
        ps[n].pid = pid;
        ps[n].tid = atoi(e->d_name);
        if (cpu_ns(pid, ps[n].tid, &ps[n].cpu_ns) == 0)
            n++;
    }
    closedir(d);
    return n;
}

/* the ids of every other process (this one and its ancestors left out);
 * -1 when /proc cannot be listed */
static int list_pids(int *pids, int cap)
{
    int up[64];
    const int nup = ancestors(up, 64);
    DIR *d = opendir("/proc");
    if (!d)
        return -1;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) && n < cap) {
        if (!isdigit((unsigned char)e->d_name[0]))
            continue;
        const int pid = atoi(e->d_name);
        if (pid > 0 && !is_ancestor(pid, up, nup))
            pids[n++] = pid;
    }
    closedir(d);
    return n;
}

struct gs_peers {
    int pids[PIDS_MAX];
    int npids;
    peer ps[PEERS_MAX];
    int n;
    struct timespec t0;
};

gs_peers *gs_run_peers_begin(void)
{
    static gs_peers one; /* one run, one reading */
    one.npids = list_pids(one.pids, PIDS_MAX);
    one.n = 0;
    return one.npids < 0 ? NULL : &one;
}

/* The first reading: the listed processes' threads and their clocks (the
 * program, child, is never one of them: a pid listed before its fork). */
static void first_reading(gs_peers *pe, int child)
{
    pe->n = 0;
    for (int i = 0; i < pe->npids && pe->n < PEERS_MAX; i++)
        if (pe->pids[i] != child)
            pe->n = list_tasks(pe->pids[i], pe->ps, pe->n, PEERS_MAX);
    clock_gettime(CLOCK_MONOTONIC, &pe->t0);
}

static double since(const struct timespec *t0)
{
    struct timespec t1;
    clock_gettime(CLOCK_MONOTONIC, &t1);
    return (double)(t1.tv_sec - t0->tv_sec) * 1e9 + (double)(t1.tv_nsec - t0->tv_nsec);
}

/* Until PEERS_WINDOW_NS after the first reading, or until the program
 * exits (its pidfd readable), whichever comes first; signals (forwarded
 * to the program) do not cut it short. */
static void wait_window(const gs_peers *pe, int child)
{
    const int pfd = (int)syscall(SYS_pidfd_open, child, 0);
    for (;;) {
        const double left = PEERS_WINDOW_NS - since(&pe->t0);
        if (left <= 0)
            break;
        struct timespec w = {0, (long)left};
        if (pfd >= 0) {
            struct pollfd p = {pfd, POLLIN, 0};
            const int r = ppoll(&p, 1, &w, NULL);
            if (r > 0 || (r < 0 && errno != EINTR))
                break; /* it exited (or cannot be waited on: the reading now) */
        } else if (nanosleep(&w, NULL) == 0) {
            break;
        }
    }
    if (pfd >= 0)
        close(pfd);
}

int gs_run_peers_end(gs_peers *pe, int child, char *out, size_t cap)
{
    first_reading(pe, child);
    wait_window(pe, child);
    const double dt = since(&pe->t0);
    if (dt < PEERS_WINDOW_MIN_NS)
        return -1; /* too short to say: the program was done at once */
    char buf[8] = "";
    const int autogroups =
        mc_read_text("/proc/sys/kernel/sched_autogroup_enabled", buf, sizeof buf) > 0 && buf[0] == '1';
    char mine[512];
    if (group_of(getpid(), autogroups, mine, sizeof mine) != 0)
        return -1;
    const peer *ps = pe->ps;
    const int n = pe->n;
    double same = 0, other = 0;
    for (int i = 0; i < n;) { /* a process's threads are listed together */
        const int pid = ps[i].pid;
        double cores = 0;
        for (; i < n && ps[i].pid == pid; i++) {
            unsigned long long v;
            if (cpu_ns(pid, ps[i].tid, &v) == 0 && v >= ps[i].cpu_ns)
                cores += (double)(v - ps[i].cpu_ns) / dt;
        }
        char g[512];
        if (cores < PEER_BUSY || group_of(pid, autogroups, g, sizeof g) != 0)
            continue;
        if (strcmp(g, mine) == 0)
            same += cores;
        else
            other += cores;
    }
    snprintf(out, cap, "same=%.2f other=%.2f", same, other);
    return 0;
}

int gs_run_peers_save(int dir_fd, int pid, const char *text)
{
    /* the host the collector names its files by, the test hook's included
     * (README, "Preloading by hand") */
    char host[256], name[320];
    an_host_name(getenv("GPUSTARVE_TEST_HOST"), host, sizeof host);
    snprintf(name, sizeof name, "%s-%d" GS_PEERS_SUFFIX, host, pid);
    const int fd = openat(dir_fd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0)
        return -1;
    char line[96];
    const int len = snprintf(line, sizeof line, "%s\n", text);
    const int ok = len > 0 && write(fd, line, (size_t)len) == (ssize_t)len;
    close(fd);
    return ok ? 0 : -1;
}
