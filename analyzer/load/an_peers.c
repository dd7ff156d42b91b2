/* an_peers.c — the other processes busy as `gpustarve run` started the
 * program: <host>-<pid>.peers beside the traces (docs/trace-format.md,
 * "A run"; analyzer/cmd/run_peers.c writes it), onto that process and
 * every traced process below it.
 *
 * RATIONALE: the process `run` started is the root of the job in the
 * directory; its workers and the images it exec'd into are the same start.
 * A process whose trace carries the older `gpustarve_peers` config record
 * (an_events.c) keeps what it says.
 *
 * Must never: block on what stands at that name (a FIFO, a device), read
 * more than a line of it, or take a value that is not a count of cores.
 */
#include <fcntl.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "load/an_peers.h"
#include "gs_format.h"

#define PEERS_LINE 96      /* "same=S other=O\n" and room */
#define PEERS_CORES 1e6    /* more cores than a machine has: not a count */
#define PEERS_DEPTH 64     /* parents followed up to the process run started */

/* p's file, read: 0 with same and other set, -1 when absent or not one */
static int read_file(const an_proc *p, double *same, double *other)
{
    if (!p->path || !p->host)
        return -1;
    const char *slash = strrchr(p->path, '/');
    const int dl = slash ? (int)(slash - p->path) : 1;
    char path[4096];
    const int n = snprintf(path, sizeof path, "%.*s/%s-%llu" GS_PEERS_SUFFIX, dl,
                           slash ? p->path : ".", p->host, (unsigned long long)p->pid);
    if (n < 0 || (size_t)n >= sizeof path)
        return -1;
    const int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
        return -1;
    struct stat st;
    char buf[PEERS_LINE + 1];
    ssize_t got = -1;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode))
        got = read(fd, buf, PEERS_LINE);
    close(fd);
    if (got <= 0)
        return -1;
    buf[got] = '\0';
    return an_peers_parse(buf, same, other);
}

int an_peers_parse(const char *s, double *same, double *other)
{
    double sa, ot;
    if (sscanf(s, "same=%lf other=%lf", &sa, &ot) != 2 || !isfinite(sa) || !isfinite(ot) ||
        sa < 0 || ot < 0 || sa > PEERS_CORES || ot > PEERS_CORES)
        return -1;
    *same = sa;
    *other = ot;
    return 0;
}

/* the processes by pid, for their parents: n log n over a run of many */
static int by_pid(const void *a, const void *b)
{
    const an_proc *p = *(const an_proc *const *)a, *q = *(const an_proc *const *)b;
    return p->pid < q->pid ? -1 : p->pid > q->pid;
}

static int same_host(const an_proc *p, const an_proc *q)
{
    return p->host == q->host || (p->host && q->host && !strcmp(p->host, q->host));
}

static const an_proc *parent_of(an_proc *const *idx, size_t n, const an_proc *p)
{
    size_t lo = 0, hi = n;
    while (lo < hi) { /* the first of that pid */
        const size_t mid = lo + (hi - lo) / 2;
        if (idx[mid]->pid < p->ppid)
            lo = mid + 1;
        else
            hi = mid;
    }
    for (; lo < n && idx[lo]->pid == p->ppid; lo++)
        if (idx[lo] != p && idx[lo]->pid != p->pid && same_host(idx[lo], p))
            return idx[lo];
    return NULL;
}

void an_run_read_peers(an_run *run)
{
    size_t found = 0;
    for (size_t i = 0; i < run->nprocs; i++) {
        an_proc *p = &run->procs[i];
        if (!p->peers_known && read_file(p, &p->peers_same_cores, &p->peers_other_cores) == 0) {
            p->peers_known = 1;
            found++;
        }
    }
    an_proc **idx = found ? malloc(run->nprocs * sizeof *idx) : NULL;
    if (!idx)
        return; /* none found, or no memory: the processes keep what they have */
    for (size_t i = 0; i < run->nprocs; i++)
        idx[i] = &run->procs[i];
    qsort(idx, run->nprocs, sizeof *idx, by_pid);
    for (size_t i = 0; i < run->nprocs; i++) {
        an_proc *p = &run->procs[i];
        if (p->peers_known)
            continue;
        const an_proc *up = p;
        for (int depth = 0; depth < PEERS_DEPTH && up && !up->peers_known; depth++)
            up = parent_of(idx, run->nprocs, up);
        if (up && up->peers_known) {
            p->peers_same_cores = up->peers_same_cores;
            p->peers_other_cores = up->peers_other_cores;
            p->peers_known = 1;
        }
    }
    free(idx);
}
