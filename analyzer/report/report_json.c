/* report_json.c — the report as JSON, schema gpustarve.report/1
 * (docs/report-schema.md), through the analyzer's JSON writer (out_json.h).
 * The pieces compare prints too are report_json_parts.c.
 *
 * Must never: change a field's meaning without changing the schema version.
 */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "report/report_callsites.h"
#include "model/an_model.h"
#include "base/out_buf.h"
#include "base/out_json.h"
#include "report/report_cost.h"
#include "report/report_json.h"
#include "report/report_json_parts.h"
#include "report/report_measured.h"
#include "report/report_ranks.h"

/* What the model said (docs/report-schema.md, "The model"); null when the
 * older rule sized num_workers (no measured time) or none was sized. */
static void write_model_json(gs_jw *w, const an_model_info *m)
{
    gs_jw_key(w, "model");
    if (!m->used) {
        gs_jw_null(w);
        return;
    }
    gs_jw_obj(w);
    gs_jw_key(w, "cpus");
    rep_json_num(w, m->cpus);
    gs_jw_kstr(w, "cpus_source", m->cpus_source);
    rep_json_num_or_null(w, "runq_per_cpu", m->runq_per_cpu);
    gs_jw_key(w, "other_process_threads");
    rep_json_num(w, m->ext_threads);
    gs_jw_key(w, "other_process_groups");
    rep_json_num(w, m->ext_groups);
    rep_json_num_or_null(w, "other_load_cores", m->other_load_cores);
    rep_json_num_or_null(w, "other_load_worst_cores", m->other_load_worst_cores);
    rep_json_num_or_null(w, "busy_at_start_same_group_cores", m->peers_same_cores);
    rep_json_num_or_null(w, "busy_at_start_other_groups_cores", m->peers_other_cores);
    rep_json_bool_or_null(w, "other_load_yields", m->other_load_yields);
    rep_json_num_or_null(w, "free_cores", m->free_cores);
    gs_jw_kbool(w, "other_load_bounds", m->load_bound);
    gs_jw_kbool(w, "other_load_capped", m->load_capped);
    rep_json_bool_or_null(w, "saturated", m->saturated);
    gs_jw_key(w, "storage_ms");
    rep_json_num(w, m->store_ms);
    gs_jw_key(w, "storage_at_once");
    rep_json_num(w, m->store_par);
    gs_jw_key(w, "trainer_weight");
    rep_json_num(w, m->t_weight);
    gs_jw_ki64(w, "workers_now", m->cur);
    gs_jw_key(w, "handoff_ms");
    rep_json_num(w, m->handoff_ms);
    gs_jw_key(w, "now");
    gs_jw_obj(w);
    gs_jw_key(w, "fitted_ms");
    rep_json_num(w, m->now_fit_ms);
    gs_jw_key(w, "alike_ms");
    rep_json_num(w, m->now_fair_ms);
    gs_jw_end(w);
    gs_jw_key(w, "more_workers");
    gs_jw_arr(w);
    for (size_t i = 0; i < m->npred; i++) {
        gs_jw_obj(w);
        gs_jw_ki64(w, "workers", m->pred[i].workers);
        gs_jw_key(w, "fitted_ms");
        rep_json_num(w, m->pred[i].fit_ms);
        gs_jw_key(w, "alike_ms");
        rep_json_num(w, m->pred[i].fair_ms);
        gs_jw_key(w, "groups_ms");
        rep_json_num(w, m->pred[i].grp_ms);
        gs_jw_key(w, "worst_ms");
        if (m->other_load_worst_cores < 0)
            gs_jw_null(w);
        else
            rep_json_num(w, m->pred[i].worst_ms);
        gs_jw_end(w);
    }
    gs_jw_end(w);
    gs_jw_key(w, "held_back");
    if (m->held_back) {
        gs_jw_obj(w);
        gs_jw_ki64(w, "workers", m->held_back);
        gs_jw_key(w, "range_ms");
        gs_jw_arr(w);
        rep_json_num(w, m->held_lo_ms);
        rep_json_num(w, m->held_hi_ms);
        gs_jw_end(w);
        gs_jw_end(w);
    } else {
        gs_jw_null(w);
    }
    gs_jw_kstr(w, "sweep", m->sweep[0] ? m->sweep : NULL);
    gs_jw_end(w);
}

/* key: [{name: v[j], "replayed_ms": ms[j]}, ...] */
static void write_replayed(gs_jw *w, const char *key, const char *name, const int *v,
                           const double *ms, int n)
{
    gs_jw_key(w, key);
    gs_jw_arr(w);
    for (int j = 0; j < n; j++) {
        gs_jw_obj(w);
        gs_jw_ki64(w, name, v[j]);
        gs_jw_key(w, "replayed_ms");
        rep_json_num(w, ms[j]);
        gs_jw_end(w);
    }
    gs_jw_end(w);
}

/* The DataLoader's batches replayed in order (docs/report-schema.md,
 * "Advice": the replay); null when not replayed. */
static void write_replay_json(gs_jw *w, const an_replay_result *r)
{
    gs_jw_key(w, "replay");
    if (!r->ok) {
        gs_jw_null(w);
        return;
    }
    gs_jw_obj(w);
    gs_jw_ki64(w, "num_workers", r->workers);
    gs_jw_ki64(w, "prefetch_factor", r->prefetch);
    gs_jw_ku64(w, "steps", r->at.steps);
    gs_jw_key(w, "measured_ms");
    rep_json_num(w, r->at.measured_ms);
    gs_jw_key(w, "replayed_ms");
    rep_json_num(w, r->at.now_ms);
    gs_jw_key(w, "handover_ms");
    rep_json_num(w, r->recv_ms);
    write_replayed(w, "deeper", "prefetch_factor", r->at.pf, r->at.pf_ms, r->at.npf);
    write_replayed(w, "more_workers", "num_workers", r->at.nw, r->at.nw_ms, r->at.nnw);
    gs_jw_end(w);
}

/* ---- the report ---------------------------------------------------------------------------- */

static void write_worker_json(gs_jw *j, const an_result *r, const an_worker *w)
{
    const an_proc *p = w->p;
    const int thread = p == r->trainer;
    gs_jw_obj(j);
    gs_jw_ku64(j, "pid", p->pid);
    gs_jw_kstr(j, "file", p->file);
    gs_jw_kstr(j, "kind", thread ? "thread" : "process");
    gs_jw_key(j, "tid"); /* a loader thread's; null for a process */
    if (thread && w->th)
        gs_jw_u64(j, w->th->tid);
    else
        gs_jw_null(j);
    gs_jw_kstr(j, "role", p->role[0] && !thread ? p->role : NULL);
    gs_jw_key(j, "batches");
    rep_json_num(j, w->batches);
    gs_jw_kstr(j, "batches_source", w->batches_from_markers ? "markers" : "estimated");
    const double b = w->batches > 0 ? w->batches : 0;
    gs_jw_key(j, "ms_per_batch");
    gs_jw_obj(j);
    const uint64_t parts[4] = {w->io_ns, w->meta_ns, w->cpu_ns, w->idle_ns};
    const char *names[4] = {"file_io", "metadata", "cpu", "idle"};
    gs_jw_key(j, "busy");
    rep_json_num(j, b ? (double)(w->io_ns + w->meta_ns + w->cpu_ns) / 1e6 / b : 0);
    for (int i = 0; i < 4; i++) {
        gs_jw_key(j, names[i]);
        rep_json_num(j, b ? (double)parts[i] / 1e6 / b : 0);
    }
    gs_jw_end(j);
    gs_jw_key(j, "active_ms");
    rep_json_ms(j, w->active_ns);
    gs_jw_ku64(j, "bytes_read", w->bytes);
    gs_jw_ku64(j, "requests", w->reqs);
    rep_json_loader_time(j, "measured", &w->time);
    gs_jw_key(j, "request_size_hist");
    if (thread) {
        gs_jw_null(j);
    } else {
        gs_jw_arr(j);
        for (int i = 0; i < AN_HIST; i++) {
            if (!p->hist[i])
                continue;
            gs_jw_obj(j);
            gs_jw_ku64(j, "min_bytes", i ? 1ull << (i - 1) : 0);
            gs_jw_key(j, "max_bytes");
            if (i == 0)
                gs_jw_u64(j, 0);
            else if (i == AN_HIST - 1)
                gs_jw_null(j);
            else
                gs_jw_u64(j, (1ull << i) - 1);
            gs_jw_ku64(j, "count", p->hist[i]);
            gs_jw_end(j);
        }
        gs_jw_end(j);
    }
    gs_jw_key(j, "read_MBps");
    rep_json_num(j, w->MBps);
    gs_jw_key(j, "in_read_MBps");
    rep_json_num(j, w->io_MBps);
    gs_jw_ku64(j, "major_faults", w->faults);
    gs_jw_end(j);
}

static void write_run(gs_jw *w, const an_run *run, const an_result *r)
{
    const an_proc *tr = r->trainer;
    gs_jw_key(w, "run");
    gs_jw_obj(w);
    gs_jw_kstr(w, "dir", run->dir);
    gs_jw_key(w, "dirs");
    gs_jw_arr(w);
    for (size_t d = 0; d < run->ndirs; d++)
        gs_jw_str(w, run->dirs[d]);
    gs_jw_end(w);
    gs_jw_ku64(w, "files", run->nfiles);
    gs_jw_ku64(w, "processes", run->nprocs);
    gs_jw_ku64(w, "events", run->events);
    gs_jw_ku64(w, "dropped", run->dropped);
    gs_jw_ku64(w, "lost", run->lost);
    gs_jw_ku64(w, "recovered", run->recovered);
    gs_jw_ku64(w, "ended_abruptly", run->abrupt);
    gs_jw_ku64(w, "live_files_damaged", run->live_damaged);
    gs_jw_kbool(w, "in_progress", run->running != 0);
    gs_jw_ku64(w, "running", run->running);
    gs_jw_ku64(w, "separate_runs", r->separate_runs);
    gs_jw_key(w, "other_run_roots");
    gs_jw_arr(w);
    for (size_t i = 0; i < r->nother_roots; i++)
        gs_jw_u64(w, r->other_roots[i]);
    gs_jw_end(w);
    gs_jw_kstr(w, "source", tr->imported ? "pytorch_profiler" : "gpustarve");
    gs_jw_key(w, "trainer");
    gs_jw_obj(w);
    gs_jw_ku64(w, "pid", tr->pid);
    gs_jw_kstr(w, "file", tr->file);
    gs_jw_kstr(w, "argv", tr->argv);
    gs_jw_key(w, "rank");
    if (rep_result_rank(r) >= 0)
        gs_jw_i64(w, rep_result_rank(r));
    else
        gs_jw_null(w);
    gs_jw_key(w, "training_tid");
    if (r->thread)
        gs_jw_u64(w, r->thread->tid);
    else
        gs_jw_null(w);
    gs_jw_kstr(w, "training_thread_name", r->thread && r->thread->name[0] ? r->thread->name : NULL);
    gs_jw_end(w);
    gs_jw_key(w, "gpus");
    gs_jw_arr(w);
    for (size_t i = 0; i < tr->ndevs; i++) {
        gs_jw_obj(w);
        gs_jw_ku64(w, "dev", tr->devs[i].dev);
        gs_jw_kstr(w, "name", tr->devs[i].name);
        gs_jw_end(w);
    }
    gs_jw_end(w);
    gs_jw_kbool(w, "gpu_activity", !r->no_gpu);
    gs_jw_key(w, "late_ms");
    rep_json_ms(w, r->late_ns);
    gs_jw_key(w, "skipped");
    gs_jw_arr(w);
    for (size_t i = 0; i < run->nskipped; i++) {
        const an_skipped *s = &run->skipped[i];
        gs_jw_obj(w);
        gs_jw_kstr(w, "file", s->file);
        gs_jw_kstr(w, "reason", s->reason);
        gs_jw_ku64(w, "unread_bytes", s->unread);
        gs_jw_kbool(w, "used", !s->whole);
        gs_jw_end(w);
    }
    gs_jw_end(w);
    gs_jw_end(w);
}

/* GPU time by kernel name, the ten largest of the trainer's whole run. */
static void write_kernels(gs_jw *w, const an_proc *tr)
{
    gs_jw_key(w, "kernels");
    gs_jw_arr(w);
    const an_kstat *top[10];
    const size_t nk = an_kstats_top(&tr->kstats, top, 10);
    for (size_t i = 0; i < nk; i++) {
        char shown[4096];
        gs_jw_obj(w);
        gs_jw_kstr(w, "name", an_kernel_display(top[i]->name, shown, sizeof shown));
        gs_jw_kstr(w, "mangled", top[i]->name);
        gs_jw_kstr(w, "class", top[i]->comm ? "communication" : "compute");
        gs_jw_kfixed(w, "total_ms", top[i]->ns / 1e6, 3);
        gs_jw_ku64(w, "count", top[i]->count);
        gs_jw_end(w);
    }
    gs_jw_end(w);
}

static void write_per_step(gs_jw *w, const an_result *r)
{
    gs_jw_key(w, "per_step");
    gs_jw_arr(w);
    for (size_t i = 0; i < r->nsteps; i++) {
        const an_step *s = &r->steps[i];
        gs_jw_newline(w, "\n ");
        gs_jw_obj(w);
        gs_jw_ku64(w, "index", i);
        gs_jw_ku64(w, "number", s->num);
        gs_jw_kbool(w, "warmup", s->warmup);
        gs_jw_ku64(w, "start_ns", s->v.t0);
        gs_jw_key(w, "dur_ms");
        rep_json_ms(w, s->v.t1 - s->v.t0);
        rep_json_step_parts(w, &s->v);
        gs_jw_key(w, "trainer_fetch_ms");
        rep_json_ms(w, s->v.fetch);
        if (rep_has_step_stragglers(r))
            rep_step_straggler_json(w, r, i);
        gs_jw_end(w);
    }
    gs_jw_end(w);
}

/* "steps": how many and where from; "step_ms": their statistics. */
static void write_steps(gs_jw *w, const an_result *r)
{
    gs_jw_key(w, "steps");
    gs_jw_obj(w);
    gs_jw_ku64(w, "count", r->nsteps);
    gs_jw_ku64(w, "measured", r->measured);
    gs_jw_ku64(w, "warmup", r->warmup);
    gs_jw_kbool(w, "warmup_auto", r->skip_auto);
    gs_jw_kstr(w, "source", an_source_name(r->source));
    gs_jw_kstr(w, "source_detail", r->source_detail);
    gs_jw_end(w);
    gs_jw_newline(w, "\n");

    gs_jw_key(w, "step_ms");
    gs_jw_obj(w);
    const char *const stat_names[5] = {"median", "p90", "mean", "min", "max"};
    const double stats[5] = {r->step_ms_median, r->step_ms_p90, r->step_ms_mean, r->step_ms_min,
                             r->step_ms_max};
    for (int i = 0; i < 5; i++) {
        gs_jw_key(w, stat_names[i]);
        rep_json_num(w, stats[i]);
    }
    gs_jw_end(w);
}

/* Where the step time went: "share" and its split, "median_ms", the
 * input-bound share with its interval, and "trainer_fetch". */
static void write_shares(gs_jw *w, const an_result *r)
{
    gs_jw_key(w, "share");
    gs_jw_obj(w);
    for (int k = 0; k < AN_NSH; k++)
        gs_jw_kfixed(w, an_share_names[k], r->share[k], 9);
    gs_jw_end(w);
    gs_jw_newline(w, "\n");
    rep_json_share_split(w, r);
    gs_jw_newline(w, "\n");
    gs_jw_key(w, "median_ms");
    gs_jw_obj(w);
    for (int k = 0; k < AN_NSH; k++) {
        gs_jw_key(w, an_share_names[k]);
        rep_json_num(w, r->median_ms[k]);
    }
    gs_jw_end(w);
    gs_jw_newline(w, "\n");
    gs_jw_key(w, "input_bound_share");
    rep_json_num(w, r->input_share);
    gs_jw_key(w, "input_bound_share_interval");
    gs_jw_arr(w);
    rep_json_num(w, r->input_share_lo);
    rep_json_num(w, r->input_share_hi);
    gs_jw_end(w);
    gs_jw_newline(w, "\n");
    gs_jw_key(w, "trainer_fetch");
    if (r->has_fetch) {
        gs_jw_obj(w);
        gs_jw_kfixed(w, "share", r->fetch_share, 9);
        gs_jw_key(w, "median_ms");
        rep_json_num(w, r->fetch_median_ms);
        gs_jw_end(w);
    } else {
        gs_jw_null(w);
    }
}

/* "dataloader": the DataLoader's settings and the trainer's configuration. */
static void write_dataloader(gs_jw *w, const an_result *r)
{
    const an_proc *tr = r->trainer;
    gs_jw_key(w, "dataloader");
    gs_jw_obj(w);
    rep_json_dataloader_settings(w, r);
    gs_jw_key(w, "config");
    gs_jw_arr(w);
    for (size_t i = 0; i < tr->ncfg; i++) {
        gs_jw_obj(w);
        gs_jw_ku64(w, "loader", tr->cfg[i].loader);
        gs_jw_kstr(w, "key", tr->cfg[i].key);
        gs_jw_kstr(w, "value", tr->cfg[i].value);
        gs_jw_end(w);
    }
    gs_jw_end(w);
    gs_jw_end(w);
}

/* "loader": the loader workers, in all and one by one. */
static void write_loader(gs_jw *w, const an_result *r)
{
    gs_jw_key(w, "loader");
    gs_jw_obj(w);
    gs_jw_ku64(w, "workers_seen", r->nworker_slots);
    gs_jw_ku64(w, "worker_processes", r->nworkers);
    gs_jw_key(w, "in_training_thread");
    gs_jw_bool(w, an_own_making(r));
    gs_jw_key(w, "batch_ms");
    rep_json_num(w, r->batch_ms);
    gs_jw_ku64(w, "bytes_read", r->worker_bytes);
    gs_jw_key(w, "read_MBps");
    rep_json_num(w, r->worker_MBps_total);
    /* the workers' reads of the same bytes (model/an_replica.h); null: not measured */
    rep_json_num_or_null(w, "read_copies", r->read_copies > 0 ? r->read_copies : -1);
    rep_json_num_or_null(w, "read_positioned_share", r->read_copies > 0 ? r->read_positioned : -1);
    /* the storage's speed by their positioned reads in flight (model/an_replica.h) */
    rep_json_num_or_null(w, "reads_in_flight", r->read_inflight > 0 ? r->read_inflight : -1);
    gs_jw_key(w, "read_MBps_by_in_flight");
    gs_jw_arr(w);
    for (int k = 1; k <= AN_READ_K; k++) {
        if (!(r->read_speed[k] > 0))
            continue;
        gs_jw_obj(w);
        gs_jw_ki64(w, "in_flight", k);
        gs_jw_key(w, "MBps");
        rep_json_num(w, r->read_speed[k] * 1e3);
        gs_jw_end(w);
    }
    gs_jw_end(w);
    gs_jw_key(w, "workers");
    gs_jw_arr(w);
    for (size_t i = 0; i < r->nworkers; i++) {
        if (i)
            gs_jw_newline(w, "\n  ");
        write_worker_json(w, r, &r->workers[i]);
    }
    gs_jw_end(w);
    gs_jw_end(w);
}

/* "host_copy_kinds": whether the hooks and CUPTI agree on each copy's memory. */
static void write_copy_kinds(gs_jw *w, const an_copy_kinds *ck)
{
    gs_jw_key(w, "host_copy_kinds");
    gs_jw_obj(w);
    gs_jw_ku64(w, "matched", ck->matched);
    gs_jw_ku64(w, "pageable_by_hooks_pinned_by_cupti", ck->pageable_by_hooks_pinned_by_cupti);
    gs_jw_ku64(w, "pinned_by_hooks_pageable_by_cupti", ck->pinned_by_hooks_pageable_by_cupti);
    gs_jw_end(w);
}

void rep_write_json(gs_out *o, const an_run *run, const an_result *r, int per_step)
{
    gs_jw jw, *w = &jw;
    gs_jw_init(w, o);
    gs_jw_obj(w);
    gs_jw_kstr(w, "schema", "gpustarve.report/1");
    gs_jw_newline(w, "\n");
    write_run(w, run, r);
    gs_jw_newline(w, "\n");
    rep_write_ranks_json(w, r->job);
    gs_jw_newline(w, "\n");
    gs_jw_kbool(w, "no_gpu_activity", r->no_gpu);
    gs_jw_newline(w, "\n");
    write_steps(w, r);
    gs_jw_newline(w, "\n");
    write_shares(w, r);
    gs_jw_newline(w, "\n");
    rep_json_verdict(w, r);
    gs_jw_newline(w, "\n");
    write_dataloader(w, r);
    gs_jw_newline(w, "\n");
    write_loader(w, r);
    gs_jw_newline(w, "\n");
    rep_json_trainer_time(w, r);
    gs_jw_newline(w, "\n");

    rep_json_advice(w, r);
    gs_jw_newline(w, "\n");
    gs_jw_kstr(w, "advice_none_why", r->advice_none_why[0] ? r->advice_none_why : NULL);
    gs_jw_newline(w, "\n");
    gs_jw_ki64(w, "cores", r->cores);
    gs_jw_newline(w, "\n");
    rep_json_cost(w, r);
    gs_jw_newline(w, "\n");
    write_model_json(w, &r->model);
    gs_jw_newline(w, "\n");
    write_replay_json(w, &r->replay);
    gs_jw_newline(w, "\n");
    gs_jw_key(w, "notes");
    gs_jw_arr(w);
    for (size_t i = 0; i < r->nnotes; i++)
        gs_jw_str(w, r->notes[i]);
    gs_jw_end(w);
    gs_jw_newline(w, "\n");
    write_kernels(w, r->trainer);
    gs_jw_newline(w, "\n");
    write_copy_kinds(w, &r->trainer->copy_kinds);

    if (per_step) {
        gs_jw_newline(w, "\n");
        write_per_step(w, r);
    }
    if (r->callsites && an_cs_has_stacks(r->callsites)) {
        gs_jw_key(w, "call_sites");
        rep_cs_write_json(r->callsites, w);
    }
    gs_jw_end(w);
    gs_out_char(o, '\n');
}
