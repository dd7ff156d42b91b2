/* an_trainer.c — which process trains and which of its threads drives the
 * training loop (docs/report-schema.md, "Trainer, training thread, workers"),
 * and the process tree the loader workers are found in.
 *
 * Must never: read trace files, or prefer a process that said it is a
 * loader worker.
 */
#include <string.h>

#include "an_result.h"

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

int an_is_worker_role(const an_proc *p)
{
    return strstr(p->role, "worker") != NULL;
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
