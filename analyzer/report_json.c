/* report_json.c — the report as JSON, schema gpustarve.report/1
 * (docs/report-schema.md).
 *
 * Must never: change a field's meaning without changing the schema version.
 */
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "an_model.h"
#include "cli_util.h"
#include "gs_format.h"
#include "gs_trace.h"
#include "an_callsites.h"
#include "report_out.h"

/* ---- JSON ---------------------------------------------------------------------------------- */

void rep_json_key(gs_out *o, const char *k)
{
    gs_json_cstr(o, k);
    gs_out_char(o, ':');
}

void rep_json_advice_setting(gs_out *o, const an_advice *a)
{
    rep_json_key(o, "setting");
    gs_json_cstr(o, a->setting == AN_ADV_NUM_WORKERS ? "num_workers" : "pin_memory");
    gs_out_str(o, ",");
    rep_json_key(o, "value");
    if (!a->has_value)
        gs_out_str(o, "null");
    else if (a->setting == AN_ADV_PIN_MEMORY)
        gs_out_str(o, "true");
    else
        gs_out_i64(o, a->value);
}

const char *const rep_cfg_keys[REP_NCFG] = {"num_workers", "pin_memory", "batch_size",
                                            "prefetch_factor", "persistent_workers"};

void rep_json_verdict(gs_out *o, const an_result *r)
{
    rep_json_key(o, "verdict");
    gs_out_str(o, "{");
    rep_json_key(o, "label");
    gs_json_cstr(o, an_verdict_label(r->verdict));
    gs_out_str(o, ",");
    rep_json_key(o, "text");
    gs_json_cstr(o, r->verdict_text);
    gs_out_str(o, "}");
}

void rep_json_dataloader_settings(gs_out *o, const an_proc *tr)
{
    rep_json_key(o, "known");
    gs_out_str(o, tr->ncfg ? "true" : "false");
    for (size_t i = 0; i < REP_NCFG; i++) {
        gs_out_str(o, ",");
        rep_json_key(o, rep_cfg_keys[i]);
        rep_json_cfg(o, rep_cfg_value(tr, rep_cfg_keys[i]));
    }
}

void rep_json_num(gs_out *o, double v)
{
    if (v != v || v > 1e300 || v < -1e300)
        gs_out_str(o, "null");
    else
        gs_out_printf(o, "%.9g", v);
}

void rep_json_ms(gs_out *o, uint64_t ns)
{
    gs_out_printf(o, "%.6f", (double)ns / 1e6);
}

void rep_json_cfg(gs_out *o, const char *v)
{
    if (!v) {
        gs_out_str(o, "null");
        return;
    }
    if (!strcasecmp(v, "true") || !strcasecmp(v, "false")) {
        gs_out_str(o, !strcasecmp(v, "true") ? "true" : "false");
        return;
    }
    char *end;
    errno = 0;
    long long n = strtoll(v, &end, 10);
    if (*v && !*end && !errno) {
        gs_out_printf(o, "%lld", n);
        return;
    }
    gs_json_cstr(o, v);
}

const char *rep_cfg_value(const an_proc *p, const char *key)
{
    const an_kv *best = NULL;
    for (size_t i = 0; i < p->ncfg; i++)
        if (strcmp(p->cfg[i].key, key) == 0 && (!best || p->cfg[i].loader < best->loader))
            best = &p->cfg[i];
    return best ? best->value : NULL;
}

static void write_worker_json(gs_out *o, const an_result *r, const an_worker *w)
{
    const an_proc *p = w->p;
    const int thread = p == r->trainer;
    gs_out_str(o, "{");
    rep_json_key(o, "pid");
    gs_out_u64(o, p->pid);
    gs_out_str(o, ",");
    rep_json_key(o, "file");
    gs_json_cstr(o, p->file);
    gs_out_str(o, ",");
    rep_json_key(o, "kind");
    gs_json_cstr(o, thread ? "thread" : "process");
    gs_out_str(o, ",");
    rep_json_key(o, "role");
    if (p->role[0] && !thread)
        gs_json_cstr(o, p->role);
    else
        gs_out_str(o, "null");
    gs_out_str(o, ",");
    rep_json_key(o, "batches");
    rep_json_num(o, w->batches);
    gs_out_str(o, ",");
    rep_json_key(o, "batches_source");
    gs_json_cstr(o, w->batches_from_markers ? "markers" : "estimated");
    gs_out_str(o, ",");
    const double b = w->batches > 0 ? w->batches : 0;
    rep_json_key(o, "ms_per_batch");
    gs_out_str(o, "{");
    const uint64_t parts[4] = {w->io_ns, w->meta_ns, w->cpu_ns, w->idle_ns};
    const char *names[4] = {"file_io", "metadata", "cpu", "idle"};
    rep_json_key(o, "busy");
    rep_json_num(o, b ? (double)(w->io_ns + w->meta_ns + w->cpu_ns) / 1e6 / b : 0);
    for (int i = 0; i < 4; i++) {
        gs_out_str(o, ",");
        rep_json_key(o, names[i]);
        rep_json_num(o, b ? (double)parts[i] / 1e6 / b : 0);
    }
    gs_out_str(o, "},");
    rep_json_key(o, "active_ms");
    rep_json_ms(o, w->active_ns);
    gs_out_str(o, ",");
    rep_json_key(o, "bytes_read");
    gs_out_u64(o, w->bytes);
    gs_out_str(o, ",");
    rep_json_key(o, "requests");
    gs_out_u64(o, w->reqs);
    gs_out_str(o, ",");
    rep_json_key(o, "request_size_hist");
    if (thread) {
        gs_out_str(o, "null");
    } else {
        gs_out_str(o, "[");
        int first = 1;
        for (int i = 0; i < AN_HIST; i++) {
            if (!p->hist[i])
                continue;
            gs_out_str(o, first ? "{" : ",{");
            first = 0;
            rep_json_key(o, "min_bytes");
            gs_out_u64(o, i ? 1ull << (i - 1) : 0);
            gs_out_str(o, ",");
            rep_json_key(o, "max_bytes");
            if (i == 0)
                gs_out_str(o, "0");
            else if (i == AN_HIST - 1)
                gs_out_str(o, "null");
            else
                gs_out_u64(o, (1ull << i) - 1);
            gs_out_str(o, ",");
            rep_json_key(o, "count");
            gs_out_u64(o, p->hist[i]);
            gs_out_str(o, "}");
        }
        gs_out_str(o, "]");
    }
    gs_out_str(o, ",");
    rep_json_key(o, "read_MBps");
    rep_json_num(o, w->MBps);
    gs_out_str(o, ",");
    rep_json_key(o, "in_read_MBps");
    rep_json_num(o, w->io_MBps);
    gs_out_str(o, ",");
    rep_json_key(o, "major_faults");
    gs_out_u64(o, w->faults);
    gs_out_str(o, "}");
}

static void cs_emit(void *ctx, const char *s, size_t n)
{
    gs_out_mem(ctx, s, n);
}

void rep_write_json(gs_out *o, const an_run *run, const an_result *r, int per_step)
{
    const an_proc *tr = r->trainer;
    gs_out_str(o, "{");
    rep_json_key(o, "schema");
    gs_json_cstr(o, "gpustarve.report/1");
    gs_out_str(o, ",\n");

    /* run */
    rep_json_key(o, "run");
    gs_out_str(o, "{");
    rep_json_key(o, "dir");
    gs_json_cstr(o, run->dir);
    gs_out_str(o, ",");
    rep_json_key(o, "files");
    gs_out_u64(o, run->nfiles);
    gs_out_str(o, ",");
    rep_json_key(o, "processes");
    gs_out_u64(o, run->nprocs);
    gs_out_str(o, ",");
    rep_json_key(o, "events");
    gs_out_u64(o, run->events);
    gs_out_str(o, ",");
    rep_json_key(o, "trainer");
    gs_out_str(o, "{");
    rep_json_key(o, "pid");
    gs_out_u64(o, tr->pid);
    gs_out_str(o, ",");
    rep_json_key(o, "file");
    gs_json_cstr(o, tr->file);
    gs_out_str(o, ",");
    rep_json_key(o, "argv");
    gs_json_cstr(o, tr->argv);
    gs_out_str(o, ",");
    rep_json_key(o, "rank");
    if (tr->rank >= 0)
        gs_out_i64(o, tr->rank);
    else
        gs_out_str(o, "null");
    gs_out_str(o, ",");
    rep_json_key(o, "training_tid");
    if (r->thread)
        gs_out_u64(o, r->thread->tid);
    else
        gs_out_str(o, "null");
    gs_out_str(o, ",");
    rep_json_key(o, "training_thread_name");
    gs_json_cstr(o, r->thread && r->thread->name[0] ? r->thread->name : NULL);
    gs_out_str(o, "},");
    rep_json_key(o, "gpus");
    gs_out_str(o, "[");
    for (size_t i = 0; i < tr->ndevs; i++) {
        gs_out_str(o, i ? ",{" : "{");
        rep_json_key(o, "dev");
        gs_out_u64(o, tr->devs[i].dev);
        gs_out_str(o, ",");
        rep_json_key(o, "name");
        gs_json_cstr(o, tr->devs[i].name);
        gs_out_str(o, "}");
    }
    gs_out_str(o, "],");
    rep_json_key(o, "gpu_activity");
    gs_out_str(o, r->no_gpu ? "false" : "true");
    gs_out_str(o, ",");
    rep_json_key(o, "late_ms");
    rep_json_ms(o, r->late_ns);
    gs_out_str(o, ",");
    rep_json_key(o, "skipped");
    gs_out_str(o, "[");
    for (size_t i = 0; i < run->nskipped; i++) {
        const an_skipped *s = &run->skipped[i];
        gs_out_str(o, i ? ",{" : "{");
        rep_json_key(o, "file");
        gs_json_cstr(o, s->file);
        gs_out_str(o, ",");
        rep_json_key(o, "reason");
        gs_json_cstr(o, s->reason);
        gs_out_str(o, ",");
        rep_json_key(o, "unread_bytes");
        gs_out_u64(o, s->unread);
        gs_out_str(o, ",");
        rep_json_key(o, "used");
        gs_out_str(o, s->whole ? "false" : "true");
        gs_out_str(o, "}");
    }
    gs_out_str(o, "]},\n");

    rep_json_key(o, "no_gpu_activity");
    gs_out_str(o, r->no_gpu ? "true" : "false");
    gs_out_str(o, ",\n");

    /* steps */
    rep_json_key(o, "steps");
    gs_out_str(o, "{");
    rep_json_key(o, "count");
    gs_out_u64(o, r->nsteps);
    gs_out_str(o, ",");
    rep_json_key(o, "measured");
    gs_out_u64(o, r->measured);
    gs_out_str(o, ",");
    rep_json_key(o, "warmup");
    gs_out_u64(o, r->warmup);
    gs_out_str(o, ",");
    rep_json_key(o, "warmup_auto");
    gs_out_str(o, r->skip_auto ? "true" : "false");
    gs_out_str(o, ",");
    rep_json_key(o, "source");
    gs_json_cstr(o, an_source_name(r->source));
    gs_out_str(o, ",");
    rep_json_key(o, "source_detail");
    gs_json_cstr(o, r->source_detail);
    gs_out_str(o, "},\n");

    rep_json_key(o, "step_ms");
    gs_out_str(o, "{");
    rep_json_key(o, "median");
    rep_json_num(o, r->step_ms_median);
    gs_out_str(o, ",");
    rep_json_key(o, "p90");
    rep_json_num(o, r->step_ms_p90);
    gs_out_str(o, ",");
    rep_json_key(o, "mean");
    rep_json_num(o, r->step_ms_mean);
    gs_out_str(o, ",");
    rep_json_key(o, "min");
    rep_json_num(o, r->step_ms_min);
    gs_out_str(o, ",");
    rep_json_key(o, "max");
    rep_json_num(o, r->step_ms_max);
    gs_out_str(o, "},\n");

    rep_json_key(o, "share");
    gs_out_str(o, "{");
    for (int k = 0; k < AN_NSH; k++) {
        if (k)
            gs_out_str(o, ",");
        rep_json_key(o, an_share_names[k]);
        gs_out_printf(o, "%.9f", r->share[k]);
    }
    gs_out_str(o, "},\n");
    rep_json_key(o, "median_ms");
    gs_out_str(o, "{");
    for (int k = 0; k < AN_NSH; k++) {
        if (k)
            gs_out_str(o, ",");
        rep_json_key(o, an_share_names[k]);
        rep_json_num(o, r->median_ms[k]);
    }
    gs_out_str(o, "},\n");
    rep_json_key(o, "input_bound_share");
    rep_json_num(o, r->input_share);
    gs_out_str(o, ",\n");

    rep_json_verdict(o, r);
    gs_out_str(o, ",\n");

    /* dataloader configuration */
    rep_json_key(o, "dataloader");
    gs_out_str(o, "{");
    rep_json_dataloader_settings(o, tr);
    gs_out_str(o, ",");
    rep_json_key(o, "config");
    gs_out_str(o, "[");
    for (size_t i = 0; i < tr->ncfg; i++) {
        gs_out_str(o, i ? ",{" : "{");
        rep_json_key(o, "loader");
        gs_out_u64(o, tr->cfg[i].loader);
        gs_out_str(o, ",");
        rep_json_key(o, "key");
        gs_json_cstr(o, tr->cfg[i].key);
        gs_out_str(o, ",");
        rep_json_key(o, "value");
        gs_json_cstr(o, tr->cfg[i].value);
        gs_out_str(o, "}");
    }
    gs_out_str(o, "]},\n");

    /* loader workers */
    rep_json_key(o, "loader");
    gs_out_str(o, "{");
    rep_json_key(o, "workers_seen");
    gs_out_u64(o, r->nworkers);
    gs_out_str(o, ",");
    rep_json_key(o, "batch_ms");
    rep_json_num(o, r->batch_ms);
    gs_out_str(o, ",");
    rep_json_key(o, "bytes_read");
    gs_out_u64(o, r->worker_bytes);
    gs_out_str(o, ",");
    rep_json_key(o, "read_MBps");
    rep_json_num(o, r->worker_MBps_total);
    gs_out_str(o, ",");
    rep_json_key(o, "workers");
    gs_out_str(o, "[");
    for (size_t i = 0; i < r->nworkers; i++) {
        if (i)
            gs_out_str(o, ",\n  ");
        write_worker_json(o, r, &r->workers[i]);
    }
    gs_out_str(o, "]},\n");

    rep_json_key(o, "advice");
    gs_out_str(o, "[");
    for (size_t i = 0; i < r->nadvice; i++) {
        const an_advice *a = &r->advice[i];
        gs_out_str(o, i ? ",{" : "{");
        rep_json_advice_setting(o, a);
        gs_out_str(o, ",");
        rep_json_key(o, "predicted_step_ms");
        rep_json_num(o, a->predicted_step_ms);
        gs_out_str(o, ",");
        rep_json_key(o, "predicted_saving_ms");
        rep_json_num(o, a->predicted_saving_ms);
        gs_out_str(o, ",");
        rep_json_key(o, "why");
        gs_json_cstr(o, a->why);
        gs_out_str(o, "}");
    }
    gs_out_str(o, "],\n");
    rep_json_key(o, "cores");
    gs_out_i64(o, r->cores);
    gs_out_str(o, ",\n");
    rep_json_key(o, "notes");
    gs_out_str(o, "[");
    for (size_t i = 0; i < r->nnotes; i++) {
        if (i)
            gs_out_str(o, ",");
        gs_json_cstr(o, r->notes[i]);
    }
    gs_out_str(o, "],\n");
    rep_json_key(o, "kernels");
    gs_out_str(o, "[");
    const an_kstat *top[10];
    size_t nk = an_kstats_top(&r->trainer->kstats, top, 10);
    for (size_t i = 0; i < nk; i++) {
        char shown[4096];
        gs_out_str(o, i ? ",{" : "{");
        rep_json_key(o, "name");
        gs_json_cstr(o, an_kernel_display(top[i]->name, shown, sizeof shown));
        gs_out_str(o, ",");
        rep_json_key(o, "mangled");
        gs_json_cstr(o, top[i]->name);
        gs_out_str(o, ",");
        rep_json_key(o, "class");
        gs_json_cstr(o, top[i]->comm ? "communication" : "compute");
        gs_out_str(o, ",");
        rep_json_key(o, "total_ms");
        gs_out_printf(o, "%.3f", top[i]->ns / 1e6);
        gs_out_str(o, ",");
        rep_json_key(o, "count");
        gs_out_u64(o, top[i]->count);
        gs_out_str(o, "}");
    }
    gs_out_str(o, "],\n");
    const an_copy_kinds *ck = &r->trainer->copy_kinds;
    rep_json_key(o, "host_copy_kinds");
    gs_out_str(o, "{");
    rep_json_key(o, "matched");
    gs_out_u64(o, ck->matched);
    gs_out_str(o, ",");
    rep_json_key(o, "pageable_by_hooks_pinned_by_cupti");
    gs_out_u64(o, ck->pageable_by_hooks_pinned_by_cupti);
    gs_out_str(o, ",");
    rep_json_key(o, "pinned_by_hooks_pageable_by_cupti");
    gs_out_u64(o, ck->pinned_by_hooks_pageable_by_cupti);
    gs_out_str(o, "}");

    if (per_step) {
        gs_out_str(o, ",\n");
        rep_json_key(o, "per_step");
        gs_out_str(o, "[");
        for (size_t i = 0; i < r->nsteps; i++) {
            const an_step *s = &r->steps[i];
            gs_out_str(o, i ? ",\n {" : "\n {");
            rep_json_key(o, "index");
            gs_out_u64(o, i);
            gs_out_str(o, ",");
            rep_json_key(o, "number");
            gs_out_u64(o, s->num);
            gs_out_str(o, ",");
            rep_json_key(o, "warmup");
            gs_out_str(o, s->warmup ? "true" : "false");
            gs_out_str(o, ",");
            rep_json_key(o, "start_ns");
            gs_out_u64(o, s->v.t0);
            gs_out_str(o, ",");
            rep_json_key(o, "dur_ms");
            rep_json_ms(o, s->v.t1 - s->v.t0);
            const uint64_t parts[AN_NSH] = {
                s->v.busy[AN_BUSY_COMPUTE], s->v.busy[AN_BUSY_COMM],
                s->v.busy[AN_BUSY_H2D_PINNED], s->v.busy[AN_BUSY_H2D_PAGEABLE],
                s->v.busy[AN_BUSY_OTHER], s->v.idle_dw, s->v.idle_pg, s->v.idle_host};
            for (int k = 0; k < AN_NSH; k++) {
                gs_out_str(o, ",");
                char key[48];
                snprintf(key, sizeof key, "%s_ms", an_share_names[k]);
                rep_json_key(o, key);
                rep_json_ms(o, parts[k]);
            }
            gs_out_str(o, "}");
        }
        gs_out_str(o, "]");
    }
    if (r->callsites && an_cs_has_stacks(r->callsites)) {
        gs_out_str(o, ",");
        rep_json_key(o, "call_sites");
        an_cs_write_json(r->callsites, cs_emit, o);
    }
    gs_out_str(o, "}\n");
}

