/* report_text.c — the terminal report: the share table, verdict, loader,
 * advice and notes, optionally per step; colour only when the caller says
 * the output is a terminal.
 *
 * Must never: compute anything the JSON report would not show (both write
 * the same an_result).
 */
#include "report/report_text.h"

#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "model/an_model.h"
#include "base/out_buf.h"
#include "base/out_json.h"
#include "gs_format.h"
#include "gs_trace.h"
#include "report/report_callsites.h"
#include "report/report_cost.h"
#include "report/report_measured.h"
#include "report/report_ranks.h"
#include "report/report_style.h"

/* ---- text ----------------------------------------------------------------------------- */

static const char *const row_gpu[AN_NSH] = {
    "GPU compute",    "GPU communication",   "GPU H2D pinned",   "GPU H2D pageable",
    "GPU other copies", "GPU idle: data wait", "GPU idle: pageable copy", "GPU idle: host",
};
static const char *const row_nogpu[AN_NSH] = {
    "", "", "", "", "", "data wait", "pageable copy", "host (not waiting)",
};

static void text_shorten(gs_out *o, const char *s, size_t max)
{
    size_t n = strlen(s);
    if (n <= max) {
        gs_text_str(o, s, n);
        return;
    }
    gs_text_str(o, s, max - 3);
    gs_out_str(o, "...");
}

static void cs_emit(void *ctx, const char *s, size_t n)
{
    gs_out_mem(ctx, s, n);
}

/* The run line (command, rank, trainer, loader, GPUs), the warnings on an
 * unfinished or mixed run, and the steps line. */
static void text_header(gs_out *o, const an_run *run, const an_result *r, const style *st)
{
    const an_proc *tr = r->trainer;
    size_t ndev = tr->ndevs;
    gs_out_printf(o, "%srun%s   ", st->bold, st->off);
    text_shorten(o, tr->argv[0] ? tr->argv : tr->file, 60);
    const int32_t rank = r->job ? rep_result_rank(r) : -1;
    if (rank >= 0)
        gs_out_printf(o, "   rank %d,", rank);
    /* one count of workers, the loader line's: traced, else configured */
    const int configured = !r->nworkers && r->cur_workers > 0;
    const size_t nw = configured ? (size_t)r->cur_workers : r->nworker_slots;
    gs_out_printf(o, "%s1 trainer (pid %llu), %zu loader %s%s%s", rank >= 0 ? " " : "   ",
                  (unsigned long long)tr->pid, nw,
                  r->nworkers && r->workers[0].p == tr ? "thread" : "worker", nw == 1 ? "" : "s",
                  configured ? " (configuration)" : "");
    if (ndev) {
        gs_out_printf(o, ", %zu GPU%s (", ndev, ndev == 1 ? "" : "s");
        gs_text_str(o, tr->devs[0].name, strlen(tr->devs[0].name));
        gs_out_str(o, ndev > 1 ? ", ...)" : ")");
    } else if (!r->no_gpu) {
        gs_out_str(o, ", GPU activity seen");
    }
    gs_out_char(o, '\n');
    if (run->running)
        gs_out_printf(o, "%sIN PROGRESS%s  %zu of %zu processes still running: their traces are "
                         "unfinished, the numbers cover what was written so far\n",
                      st->yellow, st->off, run->running, run->nprocs);
    if (r->separate_runs > 1)
        gs_out_printf(o, "%sMIXED%s  this directory holds %zu separate runs; this report is of one "
                         "(see the note)\n",
                      st->yellow, st->off, r->separate_runs);
    gs_out_printf(o, "%ssteps%s %zu from %s (%zu warm-up left out%s), median %.1f ms, p90 %.1f ms\n",
                  st->bold, st->off, r->measured, r->source_detail ? r->source_detail : "?",
                  r->warmup, r->skip_auto ? ", automatic" : "", r->step_ms_median, r->step_ms_p90);
}

/* The share table (the training thread's time without a GPU) and the fetch
 * line beside the data wait. */
static void text_shares(gs_out *o, const an_result *r, const style *st)
{
    if (r->no_gpu)
        gs_out_printf(o, "%sno GPU activity seen: shares of the training thread's time%s\n",
                      st->yellow, st->off);
    gs_out_str(o, "\n                         median ms   share\n");
    for (int k = 0; k < AN_NSH; k++) {
        if (r->no_gpu && k < AN_SH_DATA_WAIT)
            continue;
        const char *name = r->no_gpu ? row_nogpu[k] : row_gpu[k];
        gs_out_printf(o, "%-24s %9.1f   %5.1f%%", name, r->median_ms[k], 100 * r->share[k]);
        if (k == AN_SH_DATA_WAIT && r->share[k] > 0)
            gs_out_str(o, an_own_making(r) ? "   the training thread making its next batch itself"
                                           : "   trainer blocked waiting for the next batch");
        gs_out_char(o, '\n');
        if (k == AN_SH_DATA_WAIT && r->share[k] > 0)
            rep_text_measured_trainer(o, r);
    }
    if (r->has_fetch) {
        /* the raw fetch time beside the data wait (docs/report-schema.md,
         * "Summary numbers": trainer_fetch); the data wait also holds the
         * thread's waits and file calls outside its fetches, if any */
        const double f = 100 * r->fetch_share, dw = 100 * r->share[AN_SH_DATA_WAIT];
        gs_out_printf(o, "%sfetch%s    trainer in batch fetch %.1f%% of step time (median %.1f ms); ",
                      st->bold, st->off, f, r->fetch_median_ms);
        if (!r->no_gpu && dw <= f)
            gs_out_printf(o, "the GPU idle for %.1f points of it (data wait)\n", dw);
        else /* a CPU-only run: its data wait is all of its fetches */
            gs_out_printf(o, "data wait %.1f%%%s\n", dw,
                          dw > f ? " (with waits and file calls outside fetches)" : "");
    }
}

/* The loader line of traced workers: per batch, their I/O, metadata and CPU. */
static void text_workers(gs_out *o, const an_result *r, const style *st)
{
    const an_proc *tr = r->trainer;
    uint64_t io = 0, meta = 0, cpu = 0;
    double b = 0;
    int marked = 0; /* batch_ms from marked batches (an_worker_batch_ms) */
    for (size_t i = 0; i < r->nworkers; i++) {
        const an_worker *w = &r->workers[i];
        marked |= w->batches_from_markers && !w->th && w->p->batch_ns;
        io += w->io_ns;
        meta += w->meta_ns;
        cpu += w->cpu_ns;
        b += w->batches;
    }
    const double per = b > 0 ? 1.0 / b / 1e6 : 0;
    char respawned[80] = "";
    if (r->nworkers > r->nworker_slots)
        snprintf(respawned, sizeof respawned, " (%zu processes: started again each epoch)",
                 r->nworkers);
    /* RATIONALE: the rest of the active time is CPU only as a guess; where
     * the measured line follows, it says what it is (CPU, waiting for a
     * CPU, blocking), so this one does not call it CPU */
    char copies[96] = "";
    if (r->read_copies >= AN_REPLICA_MIN)
        snprintf(copies, sizeof copies, ", each byte of their positioned reads read by %.1f of them",
                 r->read_copies);
    gs_out_printf(o,
                  "%sloader%s   %zu %s%s, %.1f ms per batch each (%sfile I/O %.1f ms, "
                  "metadata %.1f ms, %s %.1f ms), %.1f MB/s%s\n",
                  st->bold, st->off, r->nworker_slots,
                  r->workers[0].p == tr ? (r->nworker_slots == 1 ? "thread" : "threads")
                                        : (r->nworker_slots == 1 ? "worker" : "workers"),
                  respawned, r->batch_ms,
                  marked ? "their marked batches; their whole active time per batch: " : "", (double)io * per, (double)meta * per,
                  r->loader_time.measured ? "the rest" : "CPU", (double)cpu * per,
                  r->worker_MBps_total, copies);
    rep_text_measured_loader(o, r, st);
}

/* The loader line: traced workers, configured ones, or why none. */
static void text_loader(gs_out *o, const an_result *r, const style *st)
{
    const an_proc *tr = r->trainer;
    if (r->nworkers) {
        text_workers(o, r, st);
    } else if (r->loader_time.measured && r->loader_time.in_thread) {
        gs_out_printf(o, "%sloader%s   the training thread loads its batches itself (no loader "
                         "worker or thread): its waits for data, one batch a step\n",
                      st->bold, st->off);
        rep_text_measured_loader(o, r, st);
    } else if (r->cur_workers > 0) {
        /* configured workers that did no traced I/O of their own: threads
         * of the trainer, or processes outside the trace */
        gs_out_printf(o, "%sloader%s   num_workers=%d (configuration); none traced as a reading "
                         "process, so no per-worker numbers\n",
                      st->bold, st->off, r->cur_workers);
    } else if (tr->imported) {
        gs_out_printf(o, "%sloader%s   %s\n", st->bold, st->off,
                      r->cur_workers == 0
                          ? "num_workers=0 (the trace's single-process iterator): the main "
                            "process loads; its I/O and CPU are not in a PyTorch profiler trace"
                          : tr->workers_unseen ? "worker processes (multi-process iterator): not in "
                                             "a PyTorch profiler trace, count unknown"
                                           : "not in a PyTorch profiler trace");
    } else if (an_own_making(r)) {
        gs_out_printf(o, "%sloader%s   the training thread makes its batches itself, between an "
                         "update and the next forward; their parts are not measured (CUDA "
                         "calls cut those spans with no clock sample at them, or too few "
                         "steps waited)\n",
                      st->bold, st->off);
    } else {
        gs_out_printf(o, "%sloader%s   no loader worker traced\n",
                      st->bold, st->off);
    }
}

/* The advice lines (or why none) and the notes. */
static void text_advice(gs_out *o, const an_result *r, const style *st)
{
    if (!r->nadvice && r->advice_none_why[0])
        gs_out_printf(o, "%sadvice%s   none: %s\n", st->bold, st->off, r->advice_none_why);
    else if (!r->nadvice)
        gs_out_printf(o, "%sadvice%s   none: %s\n", st->bold, st->off,
                      r->verdict == AN_V_HOST
                          ? "the wait is the host's, not the loader's (nothing in the loader "
                            "settings would help)"
                          : "not input-bound: nothing in the loader settings would help");
    for (size_t i = 0; i < r->nadvice; i++) {
        const an_advice *a = &r->advice[i];
        char set[48];
        an_advice_text(a, set, sizeof set);
        gs_out_printf(o, "%s%-8s%s %-17s%s", st->bold, i ? "" : "advice", st->off, set,
                      strlen(set) >= 17 ? " " : "");
        /* the prediction on the statistic it was made on (docs/report-schema.md, "Advice") */
        const char *base = a->base == AN_BASE_MEDIAN ? "median" : "mean";
        if (!a->has_value)
            gs_out_str(o, "will not help");
        else if (a->setting != AN_ADV_PIN_MEMORY)
            gs_out_printf(o, "predicted %s step %.1f ms (-%.0f%% of %.1f ms)", base,
                          a->predicted_step_ms,
                          a->base_step_ms > 0 ? 100 * a->predicted_saving_ms / a->base_step_ms
                                              : 0.0,
                          a->base_step_ms);
        else
            gs_out_printf(o, "predicted -%.2f ms per step (%s step %.1f ms)",
                          a->predicted_saving_ms, base, a->predicted_step_ms);
        if (a->has_value && a->worst_step_ms > 0 && a->worst_step_ms > 1.02 * a->predicted_step_ms)
            gs_out_printf(o, ", %.1f ms if the other load stays at its worst", a->worst_step_ms);
        if (a->has_value && a->lock_step_ms > 1.02 * a->predicted_step_ms)
            gs_out_printf(o, ", up to %.1f ms where the loading and the training hold the "
                             "Python interpreter lock", a->lock_step_ms);
        if (a->loader_kind == AN_LOADER_THREADS && a->setting == AN_ADV_NUM_WORKERS)
            gs_out_str(o, an_own_making(r) ? " (a thread that runs the loop's next() one batch "
                                             "ahead: a thread pool of max_workers=1)"
                                           : " (a thread pool's max_workers)");
        gs_out_printf(o, "\n         %s%s%s\n", st->dim, a->why, st->off);
    }
    rep_text_cost(o, r, st);
    for (size_t i = 0; i < r->nnotes; i++)
        if (strcmp(r->notes[i], r->advice_none_why) != 0) /* said on the advice line */
            gs_out_printf(o, "%snote%s     %s\n", st->bold, st->off, r->notes[i]);
}

/* The kernels with the most GPU time, and where the findings' calls come
 * from (sampled call stacks). */
static void text_kernels_calls(gs_out *o, const an_result *r, const style *st)
{
    const an_proc *tr = r->trainer;
    const an_kstat *top[5];
    size_t nk = an_kstats_top(&tr->kstats, top, 5);
    if (nk)
        gs_out_printf(o, "%skernels%s  GPU time by kernel, whole run (%u kernel name%s)\n", st->bold,
                      st->off, tr->kstats.n, tr->kstats.n == 1 ? "" : "s");
    for (size_t i = 0; i < nk; i++) {
        char shown[512];
        gs_out_printf(o, "%12.1f ms %6llux  %-13s  ", top[i]->ns / 1e6,
                      (unsigned long long)top[i]->count, top[i]->comm ? "communication" : "compute");
        text_shorten(o, an_kernel_display(top[i]->name, shown, sizeof shown), 90);
        gs_out_char(o, '\n');
    }
    if (r->callsites && an_cs_has_stacks(r->callsites)) {
        /* where the findings' calls come from: sampled call stacks */
        gs_out_printf(o, "%scalls%s    where they come from (sampled call stacks)\n", st->bold,
                      st->off);
        rep_cs_write_text(r->callsites, cs_emit, o, 9, 6);
    }
}

/* The trace line (processes, events, losses) and the files skipped. */
static void text_trace(gs_out *o, const an_run *run, const style *st)
{
    gs_out_printf(o, "%strace%s    %zu process%s, %llu events, %llu dropped, %llu lost", st->bold,
                  st->off, run->nprocs, run->nprocs == 1 ? "" : "es",
                  (unsigned long long)run->events, (unsigned long long)run->dropped,
                  (unsigned long long)run->lost);
    if (run->abrupt)
        gs_out_printf(o, ", %zu ended abruptly (%llu events recovered)", run->abrupt,
                      (unsigned long long)run->recovered);
    if (run->running)
        gs_out_printf(o, ", %zu still running", run->running);
    if (run->live_damaged)
        gs_out_printf(o, ", %zu live file%s unreadable (the events %s held are missing)",
                      run->live_damaged, run->live_damaged == 1 ? "" : "s",
                      run->live_damaged == 1 ? "it" : "they");
    gs_out_char(o, '\n');
    for (size_t i = 0; i < run->nskipped; i++) {
        const an_skipped *s = &run->skipped[i];
        gs_out_printf(o, "%sskipped%s  %s: %s%s\n", st->bold, st->off, s->file, s->reason,
                      s->whole ? " (file not used)" : " (the part before was used)");
    }
}

/* --per-step: one line per step, in ms. */
static void text_per_step(gs_out *o, const an_result *r)
{
    const int strag = rep_has_step_stragglers(r);
    gs_out_str(o, "\n  step    start_ms   dur_ms  compute  comm   h2d_pin  h2d_pg  other  "
                  "data_wait  pg_copy    host    fetch");
    gs_out_str(o, strag ? "  straggler  ms\n" : "\n");
    const uint64_t t0 = r->nsteps ? r->steps[0].v.t0 : 0;
    for (size_t i = 0; i < r->nsteps; i++) {
        const an_step *s = &r->steps[i];
        const an_stepv *v = &s->v;
        gs_out_printf(o,
                      "%6llu%s %10.3f %8.3f %8.3f %5.3f %8.3f %7.3f %6.3f %10.3f %8.3f %7.3f "
                      "%8.3f",
                      (unsigned long long)s->num, s->warmup ? "w" : " ",
                      (double)(v->t0 - t0) / 1e6, (double)(v->t1 - v->t0) / 1e6,
                      v->busy[AN_BUSY_COMPUTE] / 1e6, v->busy[AN_BUSY_COMM] / 1e6,
                      v->busy[AN_BUSY_H2D_PINNED] / 1e6, v->busy[AN_BUSY_H2D_PAGEABLE] / 1e6,
                      v->busy[AN_BUSY_OTHER] / 1e6, v->idle_dw / 1e6, v->idle_pg / 1e6,
                      v->idle_host / 1e6, v->fetch / 1e6);
        if (strag)
            rep_step_straggler_text(o, r, i);
        gs_out_char(o, '\n');
    }
}

void rep_write_text(gs_out *o, const an_run *run, const an_result *r, int per_step,
                       const style *st)
{
    rep_write_ranks_text(o, r->job, st);
    text_header(o, run, r, st);
    text_shares(o, r, st);
    const char *col = r->verdict == AN_V_HIGHLY ? st->red
                      : r->verdict == AN_V_NOT  ? st->green
                                                : st->yellow;
    gs_out_printf(o, "\n%sverdict%s  %s%s%s\n", st->bold, st->off, col, r->verdict_text, st->off);
    text_loader(o, r, st);
    text_advice(o, r, st);
    text_kernels_calls(o, r, st);
    text_trace(o, run, st);
    if (per_step)
        text_per_step(o, r);
}
