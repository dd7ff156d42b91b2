/* an_trainer.c — which process trains and which of its threads drives the
 * training loop (docs/report-schema.md, "Trainer, training thread, workers"),
 * and the process tree the loader workers are found in.
 *
 * Must never: read trace files, or prefer a process that said it is a
 * loader worker.
 */
#include <string.h>

#include "model/an_result.h"

uint64_t an_proc_gpu_busy(const an_proc *p)
{
    uint64_t b = 0;
    for (int c = 0; c < AN_NBUSY; c++)
        b += p->tl.busy[c];
    return b;
}

static uint64_t nvtx_steps(const an_proc *p)
{
    uint64_t n = 0;
    for (size_t i = 0; i < p->nth; i++)
        n += p->th[i].n_nvtx_steps;
    return n;
}

static const an_proc *find_proc(const an_run *run, uint64_t pid)
{
    const an_proc *best = NULL;
    for (size_t i = 0; i < run->nprocs; i++)
        if (run->procs[i].pid == pid && (!best || run->procs[i].exec_seq < best->exec_seq))
            best = &run->procs[i];
    return best;
}

int an_descends(const an_run *run, uint64_t pid, uint64_t anc)
{
    for (int depth = 0; depth < 64; depth++) {
        const an_proc *p = find_proc(run, pid);
        if (!p)
            return 0;
        if (p->ppid == anc)
            return 1;
        if (p->ppid == pid)
            return 0;
        pid = p->ppid;
    }
    return 0;
}

uint64_t an_root_of(const an_run *run, uint64_t pid)
{
    for (int depth = 0; depth < 64; depth++) {
        const an_proc *p = find_proc(run, pid);
        if (!p || p->ppid == pid)
            return pid;
        const an_proc *parent = find_proc(run, p->ppid);
        if (!parent || parent == p)
            return pid;
        pid = p->ppid;
    }
    return pid;
}

static size_t file_reading_descendants(const an_run *run, const an_proc *p)
{
    size_t n = 0;
    for (size_t i = 0; i < run->nprocs; i++) {
        const an_proc *q = &run->procs[i];
        if (q->pid != p->pid && q->rd_reqs && an_descends(run, q->pid, p->pid))
            n++;
    }
    return n;
}

int an_trains(const an_proc *p)
{
    if (p->imported || an_is_worker_role(p))
        return 0;
    /* RATIONALE: not the file-reading descendants of the trainer choice's
     * tier 1: counting them is quadratic in the processes, per process */
    return strcmp(p->role, "trainer") == 0 || p->gpu_events || p->n_step_markers ||
           p->n_fetch_markers || nvtx_steps(p) || p->cuda_calls;
}

/* Tiered choice: a higher tier always wins, the score breaks ties. */
const an_proc *an_choose_trainer(const an_run *run)
{
    const an_proc *best = NULL;
    int best_tier = -1;
    double best_score = -1;
    for (size_t i = 0; i < run->nprocs; i++) {
        const an_proc *p = &run->procs[i];
        int tier;
        double score;
        if (strcmp(p->role, "trainer") == 0) {
            tier = 6;
            score = (double)p->events;
        } else if (p->gpu_events) {
            tier = 5;
            score = (double)an_proc_gpu_busy(p);
        } else if (an_is_worker_role(p)) {
            continue;
        } else if (p->n_step_markers + p->n_fetch_markers) {
            tier = 4;
            score = (double)(p->n_step_markers + p->n_fetch_markers);
        } else if (nvtx_steps(p)) {
            tier = 3;
            score = (double)nvtx_steps(p);
        } else if (p->cuda_calls) {
            tier = 2;
            score = (double)p->cuda_calls;
        } else if (file_reading_descendants(run, p)) {
            tier = 1;
            score = (double)file_reading_descendants(run, p) * 1e12 + (double)p->wait_ns;
        } else {
            /* a root: no traced parent; the earliest wins */
            tier = 0;
            if (find_proc(run, p->ppid) && find_proc(run, p->ppid) != p)
                continue;
            score = 1e30 - (double)p->mono_ns;
        }
        if (tier > best_tier || (tier == best_tier && score > best_score)) {
            best = p;
            best_tier = tier;
            best_score = score;
        }
    }
    if (!best && run->nprocs)
        best = &run->procs[0];
    return best;
}

const an_thread *an_choose_thread(const an_proc *p)
{
    const an_thread *best = NULL;
    double best_score = -1;
    int best_tier = -1;
    for (size_t i = 0; i < p->nth; i++) {
        const an_thread *t = &p->th[i];
        int tier;
        double score;
        if (t->n_step_markers + t->n_fetch_markers) {
            tier = 5;
            score = (double)(t->n_step_markers + t->n_fetch_markers);
        } else if (t->n_nvtx_steps) {
            tier = 4;
            score = (double)t->n_nvtx_steps;
        } else if (t->n_cuda_calls) {
            tier = 3;
            score = (double)t->n_cuda_calls;
        } else if (t->wait_ns) {
            tier = 2;
            score = (double)t->wait_ns;
        } else if (t->io_ns + t->meta_ns) {
            tier = 1;
            score = (double)(t->io_ns + t->meta_ns);
        } else {
            tier = 0;
            score = t->tid == p->pid ? 1 : 0;
        }
        if (tier > best_tier || (tier == best_tier && score > best_score)) {
            best = t;
            best_tier = tier;
            best_score = score;
        }
    }
    return best;
}

/* ---- separate runs in one directory ---------------------------------------------- */

#define AN_MAX_ROOTS 64

typedef struct root_job {
    uint64_t pid;          /* the root */
    uint64_t first, last;  /* span of its training processes */
    uint64_t ranks;        /* bit r: a training process with RANK r (r < 64) */
    int unranked;          /* a training process without a rank (or >= 64) */
    const char *host;
    size_t group;          /* union-find parent */
} root_job;

static size_t group_of(root_job *r, size_t i)
{
    while (r[i].group != i)
        i = r[i].group = r[r[i].group].group;
    return i;
}

size_t an_separate_runs(const an_run *run, const an_proc *trainer, uint64_t *others,
                        size_t max_others, size_t *nothers)
{
    root_job roots[AN_MAX_ROOTS];
    size_t n = 0;
    *nothers = 0;
    for (size_t i = 0; i < run->nprocs; i++) {
        const an_proc *p = &run->procs[i];
        if (p != trainer && !an_trains(p))
            continue;
        const uint64_t root = an_root_of(run, p->pid);
        size_t k = 0;
        while (k < n && roots[k].pid != root)
            k++;
        if (k == n) {
            if (n == AN_MAX_ROOTS)
                continue;
            roots[n] = (root_job){root, p->first_ts, p->last_ts, 0, 0, p->host, n};
            n++;
        }
        root_job *r = &roots[k];
        if (p->first_ts < r->first)
            r->first = p->first_ts;
        if (p->last_ts > r->last)
            r->last = p->last_ts;
        if (p->rank >= 0 && p->rank < 64)
            r->ranks |= 1ull << p->rank;
        else
            r->unranked = 1;
    }
    /* RATIONALE: ranks of one job launched without a traced common parent
     * (srun, per-node launches) are separate roots too; they are told from
     * two runs by their ranks (each rank once) and by running together */
    for (size_t i = 0; i < n; i++)
        for (size_t j = i + 1; j < n; j++) {
            const root_job *a = &roots[i], *b = &roots[j];
            if (a->unranked || b->unranked || (a->ranks & b->ranks))
                continue;
            const int same_host = a->host && b->host && !strcmp(a->host, b->host);
            if (same_host && (a->last < b->first || b->last < a->first))
                continue;
            roots[group_of(roots, j)].group = group_of(roots, i);
        }
    const uint64_t mine = trainer ? an_root_of(run, trainer->pid) : 0;
    size_t mine_group = n;
    for (size_t i = 0; i < n; i++)
        if (roots[i].pid == mine)
            mine_group = group_of(roots, i);
    size_t groups = 0;
    for (size_t i = 0; i < n; i++) {
        if (group_of(roots, i) == i)
            groups++;
        if (group_of(roots, i) != mine_group && *nothers < max_others)
            others[(*nothers)++] = roots[i].pid;
    }
    return groups ? groups : 1;
}
