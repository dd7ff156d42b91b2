/* an_advice.c — the advice: which num_workers and pin_memory to use, with
 * the step time each change should give.
 *
 * num_workers (docs/report-schema.md, "Advice"): only for an input-bound
 * verdict. A worker needs batch_ms per batch and a step needs gpu_bound_ms
 * of GPU-bound time, so ceil(batch / step) workers keep up; capped by the
 * free cores; no number when the workers already read near the storage
 * ceiling; no entry when the capped count would save under
 * AN_WORKERS_MIN_SAVING of a step (a note says what limits it).
 * pin_memory: when pageable copies cost at least PIN_MIN_SHARE of a step,
 * predicting their time at the pinned bandwidth seen, probed, or assumed.
 *
 * Must never: look at anything but its an_decide_in, or advise a setting
 * already in force.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "decide/an_decide.h"
#include "decide/an_replay_advice.h"

#define STORAGE_NEAR 0.8      /* reading at >= 80% of the ceiling: storage is the wall */
#define PIN_MIN_SHARE 0.02    /* pageable copies must cost >= 2% of a step */
#define PIN_DEFAULT_SPEEDUP 2.0 /* pinned H2D assumed 2x pageable when nothing better */
#define COLLATE_MIN_SHARE 0.05 /* collate on the training thread: named from this share */
#define SHARING_MIN_SAVING 0.05 /* the tensors' hand-over must cost >= 5% of a step */

static void add(an_decision *out, const an_advice *a)
{
    if (out->nadvice < sizeof out->advice / sizeof out->advice[0])
        out->advice[out->nadvice++] = *a;
}

/* The storage is the wall: the workers already read near its ceiling
 * (probed; else, with several workers, what they would read together if
 * each read all the time at the best in-read rate seen). Adds the entry
 * that says so and returns 1; else 0. */
static int storage_wall(const an_decide_in *in, an_decision *out)
{
    const double step = in->step_ms;
    double ceil_MBps = in->probe_read_MBps;
    const int probed = ceil_MBps > 0;
    if (!probed && in->nworkers >= 2)
        ceil_MBps = in->worker_best_in_read_MBps * (double)in->nworkers;
    const double mb_per_batch = in->worker_MB_per_batch;
    const double now_MBps = step > 0 ? mb_per_batch / (step / 1e3) : 0;
    if (!(ceil_MBps > 0 && mb_per_batch > 0 && now_MBps >= STORAGE_NEAR * ceil_MBps))
        return 0;
    an_advice a = an_advice_count(in, 0, 0, step, AN_BASE_MEDIAN, step);
    snprintf(a.why, sizeof a.why,
             "the workers already read %.0f MB/s, near the storage ceiling of %.0f MB/s (%s): "
             "more workers will not help; faster storage, caching or smaller samples will",
             now_MBps, ceil_MBps,
             probed ? "probed" : "the workers read nearly all the time at the best rate seen");
    add(out, &a);
    return 1;
}

static void advise_workers(const an_decide_in *in, an_decision *out)
{
    if (out->verdict != AN_V_HIGHLY && out->verdict != AN_V_MODERATELY)
        return;
    const double tg = in->gpu_bound_ms; /* what a step takes when the batch is ready */
    if (tg <= 0)
        return;
    if (in->imported && !in->nworkers && in->cur_workers < 0) {
        an_decide_note(out, "%s: their number and time per batch are not in a PyTorch profiler trace, so "
                  "num_workers cannot be sized from it; 'gpustarve run' measures them, 'gpustarve "
                  "sweep' tries settings",
             in->workers_unseen ? "the DataLoader ran worker processes"
                                : "the DataLoader's workers are unknown");
        return;
    }
    if (!in->nworkers && in->waits_without_workers) {
        an_decide_note(out, "the training thread waits on pipes/sockets but no loader worker was traced: "
                  "cannot size num_workers");
        return;
    }
    if (in->time_measured) {
        /* workers that read the same bytes read less when fewer: the model */
        if (an_decide_replicated(in) || !storage_wall(in, out))
            an_decide_workers_model(in, out);
        return;
    }
    /* Time one worker takes per batch: measured on traced workers; else,
     * with W workers we cannot see (threads, untraced processes) and an
     * input-bound loop, they deliver one batch per step, so each takes about
     * W steps; else (loading inline, num_workers=0) the batch fetch itself,
     * GPU busy or idle (a worker would take all of it), or without fetch
     * markers or ranges the data wait. */
    double tb = in->fetch_ms > in->data_wait_ms ? in->fetch_ms : in->data_wait_ms;
    if (in->nworkers)
        tb = in->batch_ms;
    else if (in->cur_workers >= 1)
        tb = in->step_ms * (double)in->cur_workers;
    if (tb <= 0)
        return;
    long need = (long)ceil(tb / tg - 1e-9);
    if (need < 1)
        need = 1;
    const long cur = in->cur_workers >= 0 ? in->cur_workers : (long)in->nworkers;
    if (need <= cur) {
        an_decide_note(out,
             "the loader should keep up: %ld worker(s) at %.1f ms per batch for %.1f ms of %s per "
             "step, yet the %s waits; look at prefetch_factor, persistent_workers or uneven batches",
             cur, tb, tg, in->no_gpu ? "the training thread's own work" : "GPU-bound time",
             in->no_gpu ? "training thread" : "GPU");
        return;
    }
    if (storage_wall(in, out))
        return;
    const double step = in->step_ms;
    double ceil_MBps = in->probe_read_MBps;
    const int probed = ceil_MBps > 0;
    const double mb_per_batch = in->worker_MB_per_batch;
    long n = need;
    int capped = 0;
    if (in->cores > 0 && n > in->cores) {
        n = in->cores;
        capped = 1;
    }
    if (n <= cur) {
        an_decide_note(out, "%ld loader workers are needed but only %d CPU cores are free: the CPUs are the "
                  "limit (a faster decode/augment or more cores will help)",
             need, in->cores);
        return;
    }
    double pred = tg > tb / (double)n ? tg : tb / (double)n;
    int storage_cap = 0;
    if (probed && mb_per_batch > 0) {
        const double tmin = mb_per_batch / ceil_MBps * 1e3; /* ms per batch at the ceiling */
        if (tmin > pred) {
            pred = tmin;
            storage_cap = 1;
        }
    }
    if (pred > step)
        pred = step;
    if (step - pred < AN_WORKERS_MIN_SAVING * step) {
        /* RATIONALE: an entry that predicts a saving within the noise is not
         * advice; the note says what limits it */
        an_decide_note(out, "%ld loader workers would keep up, but %ld (%s) would save under %.0f%% of a "
                  "step",
             need, n, capped ? "all the free CPU cores" : "what the storage allows",
             100 * AN_WORKERS_MIN_SAVING);
        return;
    }
    /* the older rule works on medians */
    an_advice a = an_advice_count(in, 1, n, pred, AN_BASE_MEDIAN, step);
    if (in->imported && !in->nworkers) {
        /* what a PyTorch profiler trace cannot know, said where the number is */
        snprintf(a.why, sizeof a.why,
                 "with num_workers=0 the main process loads a batch in %.1f ms (the DataLoader "
                 "span; the trace does not split it into I/O and CPU) and a step needs %.1f ms of "
                 "%s: %ld worker%s keep%s up if the traced machine has %ld CPU core%s free (%s)",
                 tb, tg, in->no_gpu ? "other work" : "GPU-bound time", need, need == 1 ? "" : "s",
                 need == 1 ? "s" : "", n, n == 1 ? "" : "s",
                 in->cores > 0 ? "capped by --cores" : "its cores are not in the trace");
        add(out, &a);
        return;
    }
    snprintf(a.why, sizeof a.why,
             "each worker needs %.1f ms per batch and a step needs %.1f ms of %s: "
             "%ld worker%s keep%s up%s%s",
             tb, tg, in->no_gpu ? "the training thread's own work" : "GPU-bound time", need,
             need == 1 ? "" : "s", need == 1 ? "s" : "",
             capped ? "; capped by the free CPU cores" : "",
             storage_cap ? "; the storage ceiling limits the gain" : "");
    add(out, &a);
}

static void advise_pin(const an_decide_in *in, an_decision *out)
{
    if (in->cur_pin_memory == 1 || !in->measured)
        return;
    const double cost_ms = in->pageable_ms;
    const double step = in->step_ms;
    if (step <= 0 || cost_ms < PIN_MIN_SHARE * step)
        return;
    /* how fast pinned memory would move the pageable bytes of a step */
    const double bytes_step = in->pageable_bytes_per_step;
    double pinned_GBps = 0;
    const char *src;
    if (in->pinned_GBps_seen > 0) {
        pinned_GBps = in->pinned_GBps_seen;
        src = "pinned copies seen in this run";
    } else if (in->probe_h2d_pinned_GBps > 0) {
        pinned_GBps = in->probe_h2d_pinned_GBps;
        src = "probed pinned bandwidth";
    } else {
        pinned_GBps = in->pageable_GBps * PIN_DEFAULT_SPEEDUP;
        src = "assumed 2x the pageable bandwidth seen";
    }
    double after_ms = pinned_GBps > 0 ? bytes_step / pinned_GBps / 1e6 : cost_ms / PIN_DEFAULT_SPEEDUP;
    if (after_ms > cost_ms)
        after_ms = cost_ms;
    const double saving = cost_ms - after_ms;
    if (saving < 0.01 * step)
        return;
    an_advice a;
    memset(&a, 0, sizeof a);
    a.setting = AN_ADV_PIN_MEMORY;
    a.has_value = 1;
    a.value = 1;
    a.predicted_saving_ms = saving;
    /* of the time per step, as the num_workers model's (an_decide.h) */
    a.base = in->step_mean_ms > 0 ? AN_BASE_MEAN : AN_BASE_MEDIAN;
    a.base_step_ms = in->step_mean_ms > 0 ? in->step_mean_ms : step;
    a.predicted_step_ms = a.base_step_ms - saving;
    snprintf(a.why, sizeof a.why,
             "pageable host-to-device copies cost %.2f ms per step (%.1f MB per step); pinned they "
             "would take about %.2f ms (%s, %.1f GB/s)",
             cost_ms, bytes_step / 1e6, after_ms, src, pinned_GBps);
    add(out, &a);
}

/* persistent_workers=True where the DataLoader's workers started again
 * within the measured steps and those starts cost at least
 * AN_WORKERS_MIN_SAVING of a step (docs/report-schema.md, "Advice"):
 * persistent workers still make a new epoch's first batch, so a batch of
 * a worker's time is left out of each start's cost. */
static void advise_persistent(const an_decide_in *in, an_decision *out)
{
    const double step = in->step_mean_ms > 0 ? in->step_mean_ms : in->step_ms;
    if (in->loader_kind != AN_LOADER_DATALOADER || in->persistent_workers != 0 ||
        in->cur_workers < 1 || in->restarts < 1 || !in->measured || step <= 0)
        return;
    const double batch = in->w_wall_ms > 0 ? in->w_wall_ms : in->batch_ms;
    const double each = in->restart_ms / in->restarts - (batch > 0 ? batch : 0);
    double saving = each > 0 ? each * in->restarts / (double)in->measured : 0;
    if (saving > step - in->step_ms) /* the starts are the slow steps, the median none */
        saving = step - in->step_ms;
    if (saving < AN_WORKERS_MIN_SAVING * step)
        return;
    an_advice a = an_advice_count(in, 1, 1, step - saving, AN_BASE_MEAN, step);
    a.setting = AN_ADV_PERSISTENT_WORKERS;
    snprintf(a.why, sizeof a.why,
             "the workers started again %d time%s in the measured steps (a new epoch's "
             "iterator), each costing the steps it fell in %.1f ms beyond the median step, of "
             "which persistent workers would still spend a batch (%.1f ms) on the epoch's "
             "first: %.2f ms per step",
             in->restarts, in->restarts == 1 ? "" : "s", in->restart_ms / in->restarts,
             batch > 0 ? batch : 0, saving);
    add(out, &a);
}

/* torch.multiprocessing.set_sharing_strategy('file_system') where the
 * training thread waits on sockets inside its fetches from DataLoader
 * worker processes (docs/report-schema.md, "Advice"). Under the default
 * file_descriptor strategy every tensor of a batch comes as a descriptor
 * that the worker's resource-sharer thread hands over: a connection and a
 * handshake per tensor, each message waiting for that thread to get a
 * CPU beside the worker's own busy one. By name the trainer opens the
 * shared memory itself. Without those waits the step is what the loader
 * and the CPUs allow: the model's step for the current setting, which
 * leaves the hand-over out; without the model, no advice. */
static void advise_sharing(const an_decide_in *in, an_decision *out)
{
    const double step = in->step_mean_ms > 0 ? in->step_mean_ms : in->step_ms;
    const double floor = out->model.now_fit_ms;
    if (in->loader_kind != AN_LOADER_DATALOADER || in->cur_workers < 1 || in->sharing_fd == 0 ||
        !(in->t_socket_ms > 0) || !(floor > 0) || step <= 0)
        return;
    const double after = step - in->t_socket_ms > floor ? step - in->t_socket_ms : floor;
    if (step - after < SHARING_MIN_SAVING * step)
        return;
    an_advice a = an_advice_count(in, 1, 1, after, AN_BASE_MEAN, step);
    a.setting = AN_ADV_SHARING_STRATEGY;
    /* RATIONALE: the sender's strategy decides; a spawned worker does not
     * inherit the trainer's */
    snprintf(a.why, sizeof a.why,
             "the training thread waited %.1f ms a step on sockets in its fetches: each "
             "tensor comes as a descriptor from its worker's resource-sharer thread, which "
             "waits for a CPU; by name the step is what the loader and the CPUs allow, %.1f ms "
             "(torch.multiprocessing.set_sharing_strategy('file_system')%s; to try it: "
             "GPUSTARVE_SHARING_STRATEGY=file_system gpustarve run ...)",
             in->t_socket_ms, floor,
             in->workers_spawned ? " in the workers, which start by spawn: at module level "
                                   "or in worker_init_fn"
                                 : "");
    add(out, &a);
}

/* The collate function on the training thread (measured): with no workers
 * they would run it; with workers it is the trainer's own code. */
static void note_collate(const an_decide_in *in, an_decision *out)
{
    const double step = in->step_mean_ms > 0 ? in->step_mean_ms : in->step_ms;
    if (!(in->collate_ms > 0) || step <= 0 || in->collate_ms < COLLATE_MIN_SHARE * step)
        return;
    an_decide_note(out,
                   "the collate function takes %.1f ms per batch on the training thread (%.0f%% "
                   "of the mean step): %s",
                   in->collate_ms, 100 * in->collate_ms / step,
                   in->cur_workers == 0 ? "move it into the workers (num_workers >= 1 runs it "
                                          "there) or make it cheaper"
                                        : "make it cheaper, or do its work in __getitem__, "
                                          "which the workers run");
}

/* More workers for an IterableDataset: each iterates its own copy of it,
 * so the prediction holds only for one that splits its stream among them. */
static void note_iterable(const an_decide_in *in, an_decision *out)
{
    if (in->dataset_iterable != 1 || in->cur_workers >= 2)
        return;
    for (size_t i = 0; i < out->nadvice; i++) {
        const an_advice *a = &out->advice[i];
        if (a->setting != AN_ADV_NUM_WORKERS || !a->has_value || a->value < 2)
            continue;
        an_decide_note(out,
                       "the dataset is an IterableDataset: with num_workers=%ld each worker "
                       "iterates its own copy of it, so the prediction holds only if it splits "
                       "its stream among them (torch.utils.data.get_worker_info(): worker k "
                       "takes its share); without that each sample comes %ld times an epoch",
                       a->value, a->value);
        return;
    }
}

void an_decide(const an_decide_in *in, an_decision *out)
{
    memset(out, 0, sizeof *out);
    an_decide_verdict(in, out);
    an_decide_advice(in, out);
}

void an_decide_advice(const an_decide_in *in, an_decision *out)
{
    const size_t before = out->nnotes;
    advise_workers(in, out);
    advise_pin(in, out);
    advise_persistent(in, out);
    advise_sharing(in, out);
    an_advise_prefetch(in, out);
    note_collate(in, out);
    note_iterable(in, out);
    out->none_why[0] = '\0';
    if (out->nadvice || (out->verdict != AN_V_HIGHLY && out->verdict != AN_V_MODERATELY))
        return;
    /* input-bound and nothing advised: say why, in the advice's place (the
     * first reason advise_workers gave; it stays a note too) */
    size_t why = before; /* the model's contention note is not the reason */
    while (why < out->nnotes && strncmp(out->notes[why], "CPU contention", 14) == 0)
        why++;
    if (why < out->nnotes) {
        snprintf(out->none_why, sizeof out->none_why, "%s", out->notes[why]);
    } else {
        snprintf(out->none_why, sizeof out->none_why,
                 "num_workers cannot be sized: no loader time per batch, or no step time outside "
                 "the data wait, was measured%s",
                 in->pageable_ms < PIN_MIN_SHARE * in->step_ms
                     ? "; pageable copies cost under 2% of a step, so pin_memory would not help"
                     : "");
    }
}
