/* an_analyze.c — from a loaded run to the answer, in this order: the
 * trainer and its training thread (an_trainer.c), the steps and warm-up
 * (an_steps.c), each step's attribution and the run's shares (an_attrib.c),
 * the loader workers (an_loader.c), then the verdict and the advice
 * (an_verdict.c, an_advice.c) from the few numbers an_decide_in_build
 * gathers here; and the notes that qualify the numbers.
 *
 * Every rule is written down in docs/report-schema.md; change both together.
 *
 * Must never: read trace files (an_load.c did), print, or divide by zero.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "model/an_model.h"
#include "model/an_replay.h"
#include "model/an_replica.h"

static void note(an_result *res, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void note(an_result *res, const char *fmt, ...)
{
    if (res->nnotes >= sizeof res->notes / sizeof res->notes[0])
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(res->notes[res->nnotes++], sizeof res->notes[0], fmt, ap);
    va_end(ap);
}

static double ms(uint64_t ns)
{
    return (double)ns / 1e6;
}

/* The cores the process may use: --cores; else the trainer's cpu_limits
 * record (affinity, cgroup quota); else, for a trace without one, this
 * machine's online CPUs, said so. */
static void cpus_allowed(const an_proc *p, const an_opts *o, an_decide_in *in)
{
    if (o->cores > 0) {
        in->cpus = o->cores;
        snprintf(in->cpus_source, sizeof in->cpus_source, "--cores");
    } else if (p->has_cpus && p->cpus_affinity) {
        in->cpus = (double)p->cpus_affinity;
        const double q = (double)p->cpus_quota_milli / 1000;
        if (p->cpus_quota_milli && q < in->cpus) {
            in->cpus = q;
            snprintf(in->cpus_source, sizeof in->cpus_source,
                     "cgroup CPU quota, %llu CPUs in its affinity", (unsigned long long)p->cpus_affinity);
        } else {
            snprintf(in->cpus_source, sizeof in->cpus_source, "affinity, %llu online%s",
                     (unsigned long long)p->cpus_online, p->cpus_quota_milli ? "" : ", no cgroup quota");
        }
    } else if (!p->imported) {
        long n = sysconf(_SC_NPROCESSORS_ONLN);
        in->cpus = n > 0 ? (double)n : 1;
        snprintf(in->cpus_source, sizeof in->cpus_source,
                 "this machine's online CPUs: the trace does not record its own");
    }
}

/* The measured parts of a batch and of a step (an_cputime.h), where the
 * trace has them: in->time_measured says whether the model can use them. */
static void measured_time(const an_result *res, an_decide_in *in)
{
    const an_trainer_time *tt = &res->trainer_time;
    const an_loader_time *lt = &res->loader_time;
    const int cur = res->cur_workers >= 0 ? res->cur_workers : (int)res->nworkers;
    in->prefetch = an_loader_prefetch(res);
    in->t_runq_ms = in->w_runq_ms = -1;
    in->other_load_cores = res->host_time.measured ? res->host_time.other_cores : -1;
    in->host_cpus = res->host_time.measured ? res->host_time.cpus : 0;
    in->host_busy_cores = res->host_time.measured ? res->host_time.busy_cores : -1;
    if (in->cpus <= 0 || tt->cpu_ms < 0)
        return;
    /* loader threads no file read singled out (a C loop's threads that
     * compute or sleep): with num_workers = W known, every other thread of
     * the run is taken as the loader, one batch per step */
    const int unseen = cur > 0 && !res->nworkers && res->other_time.measured &&
                       res->other_time.cpu_cores >= 0;
    if (cur > 0 && !unseen && !(lt->measured && lt->cpu_ms >= 0))
        return;
    /* RATIONALE: means, not medians: the model reproduces the time per
     * step, and only means add up to it when steps are uneven (a pool of
     * workers delivers batches in bursts: the median step of 3 memmap
     * workers was 10.4 ms, the mean 20.8 ms; docs/report-schema.md) */
    const double step = res->step_ms_mean > 0 ? res->step_ms_mean : res->step_ms_median;
    in->t_cpu_ms = tt->cpu_mean_ms >= 0 ? tt->cpu_mean_ms : tt->cpu_ms;
    in->t_runq_ms = tt->runq_mean_ms >= 0 ? tt->runq_mean_ms : tt->runq_ms;
    if (tt->measured && tt->blocked_ms >= 0) {
        /* asleep: its run-queue delay is apart */
        in->t_blocked_ms = tt->blocked_mean_ms >= 0 ? tt->blocked_mean_ms : tt->blocked_ms;
        const double recv = tt->receiving_mean_ms >= 0 ? tt->receiving_mean_ms : tt->receiving_ms;
        in->t_receiving_ms = recv > 0 ? recv : 0;
        in->t_socket_ms = tt->socket_mean_ms > 0 ? tt->socket_mean_ms : 0;
    } else if (cur > 0) {
        /* no fetch markers (a C loop with NVTX ranges): the data wait is
         * all blocked */
        in->t_blocked_ms = res->share[AN_SH_DATA_WAIT] * step;
    } else {
        return;
    }
    if (!unseen && tt->proc_cpu_cores > tt->cpu_cores)
        in->t_par_cores = tt->proc_cpu_cores - tt->cpu_cores;
    in->other_cores = res->other_time.measured && res->other_time.cpu_cores > 0
                          ? res->other_time.cpu_cores
                          : 0;
    if (unseen) {
        in->w_cpu_ms = in->other_cores * step;
        in->w_runq_ms = res->other_time.runq_ms_per_step;
        in->w_blocked_ms = (double)cur * step - in->w_cpu_ms -
                           (in->w_runq_ms > 0 ? in->w_runq_ms : 0);
        if (in->w_blocked_ms < 0)
            in->w_blocked_ms = 0;
        in->other_cores = 0;
        in->loader_unseen = 1;
    } else if (cur > 0) {
        /* RATIONALE: per-batch means from periodic samples spread the
         * worker's whole active span (its start, the batches prefetched
         * past the last step) over its batches; the workers of a loop that
         * waits for them deliver one batch a step, so a worker's batch
         * takes at most `cur` steps: beyond that the parts are scaled down
         * alike (docs/report-schema.md, "The model") */
        double k = 1;
        if (lt->per_batch == AN_PB_PERIODIC && lt->wall_ms > (double)cur * step && step > 0)
            k = (double)cur * step / lt->wall_ms;
        /* means per batch, as the trainer's: the model's step is a mean */
        in->w_io_ms = lt->io_mean_ms > 0 ? k * lt->io_mean_ms : 0;
        in->w_fault_ms = lt->fault_mean_ms > 0 ? k * lt->fault_mean_ms : 0;
        in->w_blocked_ms = lt->blocked_mean_ms > 0 ? k * lt->blocked_mean_ms : 0;
        in->w_cpu_ms = lt->cpu_mean_ms > 0 ? k * lt->cpu_mean_ms : 0;
        in->w_runq_ms = lt->runq_mean_ms >= 0 ? k * lt->runq_mean_ms : -1;
        in->w_wall_ms = lt->wall_mean_ms > 0 ? k * lt->wall_mean_ms : 0;
        if (lt->storage_bytes >= 0 && lt->read_bytes > 0)
            in->w_storage_share = lt->storage_bytes / lt->read_bytes;
    }
    in->time_measured = 1;
}

/* RATIONALE: as an_cputime.c's window for the load over the whole run: the
 * machine's counters tick every 10 ms a CPU */
#define WORST_WINDOW_NS 500000000ull

/* Other processes' load in one window [x, y] of the host samples: the
 * machine's busy cores there less every traced thread's CPU there. */
static double window_load(const an_run *run, const struct an_host_sample *x,
                          const struct an_host_sample *y, double cpus)
{
    const double db = (double)y->busy_ns - (double)x->busy_ns;
    const double di = (double)y->idle_ns - (double)x->idle_ns;
    if (!(db >= 0 && di >= 0 && db + di > 0))
        return -1;
    double own = 0;
    for (size_t i = 0; i < run->nprocs; i++)
        for (size_t j = 0; j < run->procs[i].nth; j++) {
            const an_thread *th = &run->procs[i].th[j];
            uint64_t cov;
            const double c = th->cpu ? an_cpu_delta(th->cpu, x->ts, y->ts, AN_CV_CPU, &cov) : -1;
            if (c > 0)
                own += c;
        }
    const double load = cpus * db / (db + di) - own / (double)(y->ts - x->ts);
    return load > 0 ? load : 0;
}

/* Other processes' load at its worst over the measured steps: the largest
 * over consecutive windows of the host samples of at least WORST_WINDOW_NS
 * (docs/report-schema.md, "The model"); -1 where the load over the run was
 * not measured or no whole window lies in the steps. */
static double worst_load(const an_run *run, const an_result *res)
{
    if (!res->host_time.measured)
        return -1;
    const an_proc *hp = res->trainer && res->trainer->nhcpu >= 2 ? res->trainer : NULL;
    for (size_t i = 0; !hp && i < run->nprocs; i++)
        if (run->procs[i].nhcpu >= 2)
            hp = &run->procs[i];
    uint64_t a, b;
    an_measured_window(res, &a, &b);
    if (!hp || !hp->host_cpus || b <= a)
        return -1;
    double worst = -1;
    size_t i = 0;
    while (i < hp->nhcpu && hp->hcpu[i].ts < a)
        i++;
    for (size_t j = i + 1; j < hp->nhcpu && hp->hcpu[j].ts <= b; j++) {
        if (hp->hcpu[j].ts - hp->hcpu[i].ts < WORST_WINDOW_NS)
            continue;
        const double l = window_load(run, &hp->hcpu[i], &hp->hcpu[j], (double)hp->host_cpus);
        worst = l > worst ? l : worst;
        i = j;
    }
    return worst;
}

/* The steps where the DataLoader's workers started again: a worker
 * process is its slot's (loader, worker id) g-th start, counting the
 * slot's earlier ones; start g >= 1 of the run is the earliest of its
 * slots' g-th starts (one iterator starts all its workers). Each costs the
 * first measured step that ends after it, and the next, beyond the median
 * step. */
static void worker_restarts(const an_result *res, an_decide_in *in)
{
    uint64_t t[64] = {0}; /* the run's start g at t[g] */
    size_t n = 0;
    for (size_t i = 0; i < res->nworkers; i++) {
        const an_proc *p = res->workers[i].p;
        if (p == res->trainer || p->worker_id < 0)
            continue;
        size_t g = 0;
        for (size_t j = 0; j < res->nworkers; j++) {
            const an_proc *q = res->workers[j].p;
            g += q != p && q != res->trainer && q->worker_id == p->worker_id &&
                 q->loader_id == p->loader_id && q->first_ts < p->first_ts;
        }
        if (g < 1 || g >= sizeof t / sizeof t[0])
            continue;
        if (!t[g] || p->first_ts < t[g])
            t[g] = p->first_ts;
        n = g + 1 > n ? g + 1 : n;
    }
    for (size_t g = 1; g < n; g++) {
        for (size_t k = 0; t[g] && k < res->nsteps; k++) {
            if (res->steps[k].warmup || res->steps[k].v.t1 <= t[g])
                continue;
            for (size_t m = k; m < k + 2 && m < res->nsteps; m++) {
                const an_stepv *v = &res->steps[m].v;
                const double d = ms(v->t1 - v->t0) - res->step_ms_median;
                in->restart_ms += d > 0 && !res->steps[m].warmup ? d : 0;
            }
            in->restarts++;
            break;
        }
    }
}

/* What runs the loader, as the trace shows it (an_decide.h). */
static int loader_kind(const an_result *res)
{
    const an_proc *p = res->trainer;
    /* RATIONALE: the Python side records the DataLoader's dataset and
     * sampler with its settings; a program that declares num_workers
     * through the marker API records that alone */
    if (an_cfg_value(p, "dataset") || an_cfg_value(p, "sampler"))
        return AN_LOADER_DATALOADER;
    if (an_cfg_value(p, "num_workers"))
        return AN_LOADER_DECLARED;
    if (res->nworkers && !res->workers[0].th)
        return AN_LOADER_PROCESSES;
    return AN_LOADER_THREADS;
}

/* The numbers the verdict and the advice are decided from. */
static void an_decide_in_build(const an_run *run, const an_result *res, const an_opts *o,
                               an_decide_in *in)
{
    memset(in, 0, sizeof *in);
    in->no_gpu = res->no_gpu;
    in->measured = res->measured;
    in->step_ms = res->step_ms_median;
    in->step_mean_ms = res->step_ms_mean;
    in->step_p90_ms = res->step_ms_p90;
    if (res->replay.ok)
        in->replay = res->replay.at;
    memcpy(in->share, res->share, sizeof in->share);
    in->input_share = res->input_share;
    in->input_share_lo = res->input_share_lo;
    in->input_share_hi = res->input_share_hi;
    in->data_wait_ms = res->median_ms[AN_SH_DATA_WAIT];
    in->fetch_ms = res->has_fetch ? res->fetch_median_ms : 0;
    /* GPU-bound step time: what a step takes when the batch is ready; and
     * what pageable copies cost a step (on the GPU and idle in the call) */
    double *x = calloc(res->measured ? res->measured : 1, sizeof *x);
    size_t j = 0;
    uint64_t pageable = 0;
    for (size_t i = 0; i < res->nsteps; i++) {
        const an_step *s = &res->steps[i];
        if (s->warmup)
            continue;
        if (x)
            x[j++] = ms(s->v.t1 - s->v.t0 - s->v.idle_dw);
        pageable += s->v.busy[AN_BUSY_H2D_PAGEABLE] + s->v.idle_pg;
    }
    in->gpu_bound_ms = an_percentile(x, j, 0.5);
    free(x);
    in->pageable_ms = res->measured ? ms(pageable) / (double)res->measured : 0;
    /* pageable bytes per step, and the bandwidths seen */
    const an_proc *p = res->trainer;
    const uint64_t pg_bytes = p->h2d_pageable_bytes ? p->h2d_pageable_bytes : p->host_pageable_bytes;
    const uint64_t pg_ns = p->h2d_pageable_bytes ? p->h2d_pageable_ns : p->host_pageable_ns;
    in->pageable_bytes_per_step = res->nsteps ? (double)pg_bytes / (double)res->nsteps : 0;
    in->pageable_GBps = pg_ns ? (double)pg_bytes / (double)pg_ns : 0;
    if (p->h2d_pinned_bytes >= (1u << 20) && p->h2d_pinned_ns)
        in->pinned_GBps_seen = (double)p->h2d_pinned_bytes / (double)p->h2d_pinned_ns;
    /* the loader */
    in->nworkers = res->nworker_slots; /* re-spawned workers are the same worker */
    in->batch_ms = res->batch_ms;
    double batches = 0;
    for (size_t i = 0; i < res->nworkers; i++) {
        batches += res->workers[i].batches;
        if (res->workers[i].io_MBps > in->worker_best_in_read_MBps)
            in->worker_best_in_read_MBps = res->workers[i].io_MBps;
    }
    in->worker_MB_per_batch = batches > 0 ? (double)res->worker_bytes / 1e6 / batches : 0;
    in->read_copies = res->read_copies;
    in->read_positioned = res->read_positioned;
    memcpy(in->read_speed, res->read_speed, sizeof in->read_speed);
    in->read_inflight = res->read_inflight;
    in->cur_workers = res->cur_workers;
    in->cur_pin_memory = res->cur_pin_memory;
    const an_thread *th = res->thread;
    in->own_making = an_own_making(res);
    /* RATIONALE: a training thread that makes its batches itself waits for
     * no worker, whatever its pipes (torch.compile's compiler processes
     * answer it through them in the first step) */
    in->waits_without_workers = th && !in->own_making && th->wait_ns > th->io_ns + th->meta_ns;
    in->imported = p->imported;
    in->workers_unseen = p->workers_unseen;
    /* the machine */
    in->cores = res->cores;
    in->probe_read_MBps = o->probe_read_MBps;
    in->probe_h2d_pinned_GBps = o->probe_h2d_pinned_GBps;
    cpus_allowed(p, o, in);
    in->w_storage_share = -1;
    measured_time(res, in);
    in->other_load_worst_cores = worst_load(run, res);
    in->peers_same_cores = p->peers_known ? p->peers_same_cores : -1;
    in->peers_other_cores = p->peers_known ? p->peers_other_cores : -1;
    in->loader_kind = loader_kind(res);
    in->interp_lock = p->n_py_markers > 0;
    const char *bs = an_cfg_value(p, "batch_size");
    in->batch_size = bs && atoi(bs) > 0 ? atoi(bs) : 0;
    /* the collate function on the training thread (no workers: its
     * iterator's fetcher collates there), from its collate markers */
    in->collate_ms = res->trainer_time.collate_ms;
    const char *pw = an_cfg_value(p, "persistent_workers");
    in->persistent_workers = pw ? atoi(pw) != 0 || !strcasecmp(pw, "true") : -1;
    const char *it = an_cfg_value(p, "dataset_iterable");
    in->dataset_iterable = it ? atoi(it) != 0 : -1;
    /* torch.multiprocessing's sharing strategy, as the Python side read it
     * in the workers (the trainer's where they said nothing) */
    const char *ss = an_loader_cfg(res, "sharing_strategy");
    in->sharing_fd = -1;
    if (ss && !strcmp(ss, "file_descriptor"))
        in->sharing_fd = 1;
    else if (ss && !strcmp(ss, "file_system"))
        in->sharing_fd = 0;
    const char *ctx = an_cfg_value(p, "multiprocessing_context");
    in->workers_spawned = ctx && (!strcmp(ctx, "spawn") || !strcmp(ctx, "forkserver"));
    worker_restarts(res, in);
    snprintf(in->argv, sizeof in->argv, "%s", p->argv ? p->argv : "");
}

int an_analyze(const an_run *run, const an_opts *o, an_result *res, char *err, size_t errlen)
{
    memset(res, 0, sizeof *res);
    res->cur_workers = -1;
    res->cur_pin_memory = -1;
    an_trainer_time_absent(&res->trainer_time);
    an_other_time_absent(&res->other_time);
    an_host_time_absent(&res->host_time);
    an_loader_time_absent(&res->loader_time);
    res->pin_effective = -1;
    if (!run->nprocs) {
        snprintf(err, errlen, "no readable trace file");
        return -1;
    }
    const an_proc *tr = an_choose_trainer(run);
    res->trainer = tr;
    res->thread = an_choose_thread(tr);
    res->no_gpu = an_proc_gpu_busy(tr) == 0;
    res->separate_runs = an_separate_runs(run, tr, res->other_roots,
                                          sizeof res->other_roots / sizeof res->other_roots[0],
                                          &res->nother_roots);
    long cores = o->cores > 0 ? o->cores : sysconf(_SC_NPROCESSORS_ONLN) - 1;
    res->cores = (int)(cores < 1 ? 1 : cores);
    /* the cores of the machine an imported trace came from are unknown:
     * only --cores limits its advice (0 = unknown) */
    if (tr->imported && o->cores <= 0)
        res->cores = 0;
    for (size_t i = 0; i < run->nprocs; i++)
        res->late_ns += run->procs[i].tl.late_ns;

    if (res->thread && an_cut_steps(res, res->thread) < 0) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    if (!res->nsteps) {
        an_no_steps_message(res, err, errlen);
        return -1;
    }
    an_mark_warmup(res, o->skip);
    if (!res->measured) {
        snprintf(err, errlen, "all %zu steps are warm-up (--skip %d): nothing left to measure",
                 res->nsteps, o->skip);
        return -1;
    }
    an_summarize(res);
    an_input_share_interval(res);
    if (an_find_workers(run, res) < 0 || an_replica(res) < 0) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    an_measure_time(run, res);
    an_replay(res);

    if (res->separate_runs > 1) {
        char list[120] = "";
        for (size_t i = 0, at = 0; i < res->nother_roots && at < sizeof list; i++)
            at += (size_t)snprintf(list + at, sizeof list - at, "%s%llu", i ? ", " : "",
                                   (unsigned long long)res->other_roots[i]);
        note(res, "this directory holds %zu separate runs: this report is of the one with pid "
                  "%llu; the other process trees (root pid %s) are left out of the loader and "
                  "steps. Give each run its own directory",
             res->separate_runs, (unsigned long long)an_root_of(run, tr->pid), list);
    }
    if (tr->imported)
        note(res, "imported from a PyTorch profiler trace: it records no DataLoader worker "
                  "process, so worker count, worker I/O and loader CPU time are unknown, and data "
                  "wait is the part of the DataLoader __next__ spans while the GPU is idle");
    an_decide_in in;
    an_decide_in_build(run, res, o, &in);
    an_decision d;
    an_decide(&in, &d);
    res->verdict = d.verdict;
    res->borderline = d.borderline;
    memcpy(res->verdict_text, d.verdict_text, sizeof res->verdict_text);
    memcpy(res->advice, d.advice, sizeof res->advice);
    res->nadvice = d.nadvice;
    res->model = d.model;
    if (d.model.used)
        res->cores = (int)ceil(d.model.cpus);
    memcpy(res->advice_none_why, d.none_why, sizeof res->advice_none_why);
    for (size_t i = 0; i < d.nnotes; i++)
        note(res, "%s", d.notes[i]);

    if (res->cur_pin_memory == 1 && res->pin_effective == 0)
        note(res, "pin_memory=True is a no-op here: the DataLoader pins nothing (it says "
                  "pin_memory_effective=False: no CUDA device); it neither helps nor costs");
    if (res->late_ns)
        note(res, "%.1f ms of activity arrived too late in the trace to be placed exactly",
             ms(res->late_ns));
    if (tr->dropped || tr->lost || tr->gpu_dropped)
        note(res, "the collector dropped events in the trainer (%llu dropped, %llu lost, %llu GPU "
                  "records): numbers undercount",
             (unsigned long long)tr->dropped, (unsigned long long)tr->lost,
             (unsigned long long)tr->gpu_dropped);
    if (tr->trace_stopped)
        note(res, "tracing stopped early in the trainer (output failed)");
    if (tr->cupti_lost_ts && tr->gpu_events) { /* mid-run: there was GPU activity */
        size_t after = 0;
        for (size_t i = 0; i < res->nsteps; i++)
            after += !res->steps[i].warmup && res->steps[i].v.t1 > tr->cupti_lost_ts;
        note(res, "another CUPTI client (a profiler) took CUPTI %.0f ms into the trainer's trace: "
                  "GPU activity after it is not recorded, and the %zu measured steps after it "
                  "show their GPU time as idle",
             ms(tr->cupti_lost_ts - tr->first_ts), after);
    }
    const an_copy_kinds *ck = &tr->copy_kinds;
    if (ck->pageable_by_hooks_pinned_by_cupti || ck->pinned_by_hooks_pageable_by_cupti)
        note(res, "host copies: CUPTI saw pinned memory where the CUDA hooks saw pageable in %llu, "
                  "pageable where they saw pinned in %llu (of %llu matched): CUPTI's word was taken",
             (unsigned long long)ck->pageable_by_hooks_pinned_by_cupti,
             (unsigned long long)ck->pinned_by_hooks_pageable_by_cupti,
             (unsigned long long)ck->matched);
    if (res->thread && res->thread->slot < 0)
        note(res, "the training thread was not tracked (more than %d threads)", AN_TL_MAX_SLOTS);
    return 0;
}

void an_result_free(an_result *res)
{
    free(res->steps);
    free(res->workers);
    memset(res, 0, sizeof *res);
}
