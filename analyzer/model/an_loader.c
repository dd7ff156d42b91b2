/* an_loader.c — what the loader workers do: which processes (or, for
 * threaded loaders, which threads of the trainer) load the batches, their
 * time per batch split into file I/O, metadata, CPU and idle, what they
 * read, and the DataLoader settings in force (docs/report-schema.md,
 * "Loader numbers").
 *
 * Must never: count the trainer's training thread as a worker, or divide by
 * zero.
 */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "model/an_result.h"

static double ms(uint64_t ns)
{
    return (double)ns / 1e6;
}

const char *an_cfg_value(const an_proc *p, const char *key)
{
    const an_kv *best = NULL;
    for (size_t i = 0; i < p->ncfg; i++)
        if (strcmp(p->cfg[i].key, key) == 0 && (!best || p->cfg[i].loader < best->loader))
            best = &p->cfg[i];
    return best ? best->value : NULL;
}

const char *an_loader_cfg(const an_result *res, const char *key)
{
    if (!res->trainer)
        return NULL;
    if (strcmp(key, "sharing_strategy") == 0)
        for (size_t i = 0; i < res->nworkers; i++) {
            const an_proc *p = res->workers[i].p;
            const char *v = p != res->trainer ? an_cfg_value(p, key) : NULL;
            if (v)
                return v;
        }
    return an_cfg_value(res->trainer, key);
}

int an_loader_prefetch(const an_result *res)
{
    const char *pf = an_loader_cfg(res, "prefetch_factor");
    return pf && atoi(pf) > 0 ? atoi(pf) : 2;
}

int an_own_making(const an_result *res)
{
    if (res->loader_time.measured && res->loader_time.in_thread)
        return 1;
    const an_thread *t = res->thread;
    return !res->nworkers && res->cur_workers <= 0 && t && t->n_prep > 0 &&
           2 * t->n_prep >= t->n_waits;
}

static int parse_bool(const char *v)
{
    if (!v)
        return -1;
    if (!strcasecmp(v, "true") || !strcmp(v, "1") || !strcasecmp(v, "yes"))
        return 1;
    if (!strcasecmp(v, "false") || !strcmp(v, "0") || !strcasecmp(v, "no"))
        return 0;
    return -1;
}

static void finish_worker(an_worker *w)
{
    uint64_t busy = w->io_ns + w->meta_ns + w->idle_ns;
    w->cpu_ns = w->active_ns > busy ? w->active_ns - busy : 0;
    w->MBps = w->active_ns ? (double)w->bytes / 1e6 / ((double)w->active_ns / 1e9) : 0;
    w->io_MBps = w->io_ns ? (double)w->bytes / 1e6 / ((double)w->io_ns / 1e9) : 0;
}

/* 1 when p belongs to another run of the same directory (an_separate_runs). */
static int of_other_run(const an_run *run, const an_result *res, const an_proc *p)
{
    if (!res->nother_roots)
        return 0;
    const uint64_t root = an_root_of(run, p->pid);
    for (size_t i = 0; i < res->nother_roots; i++)
        if (res->other_roots[i] == root)
            return 1;
    return 0;
}

/* 1 when [first, last] (the span of a process's file reads, or of a
 * thread's reads and work items) overlaps the measured steps' [a, b]
 * (an_measured_window). RATIONALE: a
 * process the trainer started, or a thread of it, that read files only
 * before or after them loaded none of their batches: the compiler and the
 * hashing tool torch.compile runs in the first step (warm-up), its pool of
 * compile processes (alive throughout, reading only as they start), a tool
 * started at the end. Seen as workers they made the report speak of 2
 * loader workers of a loop that makes its batches itself. */
static int in_steps(uint64_t a, uint64_t b, uint64_t first, uint64_t last)
{
    return b > a && first < b && last > a;
}

int an_worker_marks_batches(const an_worker *w)
{
    return w->batches_from_markers && !w->th && w->p->batch_ns;
}

double an_worker_batch_ms(const an_worker *w)
{
    if (w->batches <= 0)
        return -1;
    /* a worker process that marks its batches: their own time */
    if (an_worker_marks_batches(w))
        return ms(w->p->batch_ns) / w->batches;
    return ms(w->io_ns + w->meta_ns + w->cpu_ns) / w->batches;
}

static int find_workers(const an_run *run, an_result *res)
{
    const an_proc *tr = res->trainer;
    size_t cap = run->nprocs + (tr ? tr->nth : 0) + 1;
    res->workers = calloc(cap, sizeof *res->workers);
    if (!res->workers)
        return -1;
    uint64_t wa, wb;
    an_measured_window(res, &wa, &wb);
    for (size_t i = 0; i < run->nprocs; i++) {
        const an_proc *p = &run->procs[i];
        if (p == tr || (tr && p->pid == tr->pid))
            continue;
        if (!(p->rd_reqs || an_is_worker_role(p)))
            continue;
        if (tr && !an_descends(run, p->pid, tr->pid) && !an_is_worker_role(p))
            continue;
        if (of_other_run(run, res, p))
            continue;
        if (!an_is_worker_role(p) && !in_steps(wa, wb, p->rd_first, p->rd_last))
            continue;
        an_worker *w = &res->workers[res->nworkers++];
        an_loader_time_absent(&w->time);
        w->p = p;
        w->active_ns = p->last_ts > p->first_ts ? p->last_ts - p->first_ts : 0;
        w->io_ns = p->rd_ns;
        w->meta_ns = p->meta_ns;
        w->idle_ns = p->wait_ns;
        w->bytes = p->rd_bytes;
        w->reqs = p->rd_reqs;
        for (size_t t = 0; t < p->nth; t++)
            w->faults += p->th[t].faults;
        if (p->n_batch_markers) {
            w->batches = (double)p->n_batch_markers;
            w->batches_from_markers = 1;
        }
        finish_worker(w);
    }
    /* threaded loaders: no worker processes, but threads of the trainer other
     * than the training thread read files, or run a pool's work items (the
     * Python side's `item` markers: a thread pool that loads) */
    if (!res->nworkers && tr) {
        for (size_t t = 0; t < tr->nth; t++) {
            const an_thread *th = &tr->th[t];
            if (th == res->thread || !(th->rd_reqs || th->n_items) ||
                !in_steps(wa, wb, th->ld_first, th->ld_last))
                continue;
            an_worker *w = &res->workers[res->nworkers++];
            an_loader_time_absent(&w->time);
            w->p = tr;
            w->th = th;
            /* a pool thread's active time is its work items' (it idles
             * between them waiting for work) */
            w->active_ns = th->n_items ? th->item_ns
                                       : th->last_ts > th->first_ts ? th->last_ts - th->first_ts : 0;
            w->io_ns = th->io_ns;
            w->meta_ns = th->meta_ns;
            w->idle_ns = th->wait_ns;
            w->bytes = th->rd_bytes;
            w->reqs = th->rd_reqs;
            w->faults = th->faults;
            finish_worker(w);
        }
    }
    double sum_ms = 0;
    size_t nb = 0;
    for (size_t i = 0; i < res->nworkers; i++) {
        an_worker *w = &res->workers[i];
        if (!w->batches_from_markers)
            w->batches = res->nworkers ? (double)res->nsteps / (double)res->nworkers : 0;
        res->worker_bytes += w->bytes;
        res->worker_MBps_total += w->MBps;
        if (w->batches > 0) {
            sum_ms += an_worker_batch_ms(w);
            nb++;
        }
    }
    res->batch_ms = nb ? sum_ms / (double)nb : 0;
    return 0;
}

/* Distinct workers: a (loader, worker id) said by role markers counts once. */
static size_t worker_slots(const an_result *res)
{
    size_t n = 0;
    for (size_t i = 0; i < res->nworkers; i++) {
        const an_proc *p = res->workers[i].p;
        int seen = 0;
        if (p != res->trainer && p->worker_id >= 0)
            for (size_t j = 0; j < i && !seen; j++) {
                const an_proc *q = res->workers[j].p;
                seen = q != res->trainer && q->worker_id == p->worker_id &&
                       q->loader_id == p->loader_id;
            }
        n += !seen;
    }
    return n;
}

int an_find_workers(const an_run *run, an_result *res)
{
    const an_proc *tr = res->trainer;
    const char *nw = an_cfg_value(tr, "num_workers");
    if (nw)
        res->cur_workers = atoi(nw);
    res->cur_pin_memory = parse_bool(an_cfg_value(tr, "pin_memory"));
    res->pin_effective = parse_bool(an_cfg_value(tr, "pin_memory_effective"));
    if (find_workers(run, res) < 0)
        return -1;
    res->nworker_slots = worker_slots(res);
    if (res->cur_workers < 0 && res->nworkers && res->workers[0].p != tr)
        res->cur_workers = (int)res->nworker_slots;
    return 0;
}
