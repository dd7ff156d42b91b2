/* cmd_report.c — `gpustarve report`: per training step, how long the GPU
 * computed, copied and waited, and why; a verdict and advice. Terminal text
 * (default) or JSON (docs/report-schema.md).
 *
 * Responsible for: options, finding the run directory, progress on stderr,
 * and writing the an_result that an_load.c / an_analyze.c produce.
 *
 * Must never: print diagnostics on stdout, colour output that is not a
 * terminal (or when NO_COLOR is set), or exit 0 without a report.
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

static const char usage_text[] =
    "usage: gpustarve report [options] [DIR]\n"
    "\n"
    "Say, per training step, how long the GPU computed, copied and waited, and\n"
    "why: waiting for the next batch, behind a pageable host-to-device copy, or\n"
    "on the host. Then a verdict (input-bound or not) and advice (num_workers,\n"
    "pin_memory) with the predicted step time. DIR is a run directory written by\n"
    "'gpustarve run' (default: the newest gpustarve-* directory here).\n"
    "\n"
    "options:\n"
    "  --json              JSON (schema gpustarve.report/1, docs/report-schema.md)\n"
    "  --per-step          add every step's numbers (text: a table; JSON: per_step)\n"
    "  --step-range REGEX  NVTX ranges that are steps (extended regex, any case;\n"
    "                      default covers ProfilerStep#N, train_step, step, ...)\n"
    "  --fetch-range REGEX NVTX ranges that are batch waits (default covers\n"
    "                      enumerate(DataLoader)#..__next__, next_batch, data_wait)\n"
    "  --skip N            leave the first N steps out as warm-up (default: the\n"
    "                      first, plus leading steps over 2x the median)\n"
    "  --cores N           CPU cores the loader may use (default: online CPUs - 1)\n"
    "  --probe FILE        ceilings measured by 'gpustarve probe' (JSON: read_MBps,\n"
    "                      h2d_pinned_GBps, h2d_pageable_GBps)\n"
    "  -q, --quiet         fewer messages on stderr\n"
    "  -v, --verbose       more messages on stderr\n"
    "  -h, --help          show this help\n"
    "\n"
    "Steps come from step/fetch markers, else NVTX ranges, else they are inferred\n"
    "from the periodic arrival of batches (labelled inferred).\n"
    "\n"
    "Exit status: 0 a report was written (damaged files are used as far as they\n"
    "read, and listed); 2 bad usage, no run directory, no readable trace, or no\n"
    "steps found.\n";

/* ---- helpers ------------------------------------------------------------------------ */

typedef struct prog {
    int on;
    struct timespec start;
    int shown;
} prog;

static double since(const struct timespec *a)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)(t.tv_sec - a->tv_sec) + (double)(t.tv_nsec - a->tv_nsec) / 1e9;
}

static void on_progress(void *ctx, uint64_t done, uint64_t total)
{
    prog *p = ctx;
    if (!p->on || since(&p->start) < 2.0 || done >= total)
        return;
    fprintf(stderr, "\rgpustarve: reading traces: %3.0f%% (%.1f of %.1f MB)",
            total ? 100.0 * (double)done / (double)total : 0.0, (double)done / 1e6,
            (double)total / 1e6);
    fflush(stderr);
    p->shown = 1;
}

static int newest_run(char *out, size_t n)
{
    DIR *d = opendir(".");
    if (!d)
        return -1;
    struct dirent *de;
    time_t best = 0;
    char bestname[256] = "";
    while ((de = readdir(d)) != NULL) {
        if (strncmp(de->d_name, "gpustarve-", 10) != 0)
            continue;
        struct stat st;
        if (stat(de->d_name, &st) != 0 || !S_ISDIR(st.st_mode))
            continue;
        if (!bestname[0] || st.st_mtime > best ||
            (st.st_mtime == best && strcmp(de->d_name, bestname) > 0)) {
            best = st.st_mtime;
            snprintf(bestname, sizeof bestname, "%s", de->d_name);
        }
    }
    closedir(d);
    if (!bestname[0])
        return -1;
    snprintf(out, n, "%s", bestname);
    return 0;
}

/* The number after "key": in a small JSON object; 0 when absent. */
static double json_number(const char *text, const char *key)
{
    char pat[64];
    snprintf(pat, sizeof pat, "\"%s\"", key);
    const char *p = strstr(text, pat);
    if (!p)
        return 0;
    p += strlen(pat);
    while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')
        p++;
    if (*p != ':')
        return 0;
    return strtod(p + 1, NULL);
}

static int read_probe(const char *path, an_opts *o)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        gs_cli_error("report: --probe %s: %s", path, strerror(errno));
        return -1;
    }
    char buf[16384];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    if (!strchr(buf, '{')) {
        gs_cli_error("report: --probe %s: not a JSON object", path);
        return -1;
    }
    o->probe_read_MBps = json_number(buf, "read_MBps");
    o->probe_h2d_pinned_GBps = json_number(buf, "h2d_pinned_GBps");
    o->probe_h2d_pageable_GBps = json_number(buf, "h2d_pageable_GBps");
    return 0;
}

/* ---- text ----------------------------------------------------------------------------- */

typedef struct style {
    const char *bold, *red, *yellow, *green, *dim, *off;
} style;

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

static void write_text(gs_out *o, const an_run *run, const an_result *r, int per_step,
                       const style *st)
{
    const an_proc *tr = r->trainer;
    size_t ndev = tr->ndevs;
    gs_out_printf(o, "%srun%s   ", st->bold, st->off);
    text_shorten(o, tr->argv[0] ? tr->argv : tr->file, 60);
    gs_out_printf(o, "   1 trainer (pid %llu), %zu loader %s%s", (unsigned long long)tr->pid,
                  r->nworkers,
                  r->nworkers && r->workers[0].p == tr ? "thread" : "worker",
                  r->nworkers == 1 ? "" : "s");
    if (ndev) {
        gs_out_printf(o, ", %zu GPU%s (", ndev, ndev == 1 ? "" : "s");
        gs_text_str(o, tr->devs[0].name, strlen(tr->devs[0].name));
        gs_out_str(o, ndev > 1 ? ", ...)" : ")");
    } else if (!r->no_gpu) {
        gs_out_str(o, ", GPU activity seen");
    }
    gs_out_char(o, '\n');
    gs_out_printf(o, "%ssteps%s %zu from %s (%zu warm-up left out%s), median %.1f ms, p90 %.1f ms\n",
                  st->bold, st->off, r->measured, r->source_detail ? r->source_detail : "?",
                  r->warmup, r->skip_auto ? ", automatic" : "", r->step_ms_median, r->step_ms_p90);
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
            gs_out_str(o, "   trainer blocked waiting for the next batch");
        gs_out_char(o, '\n');
    }
    const char *col = r->verdict == AN_V_HIGHLY ? st->red
                      : r->verdict == AN_V_NOT  ? st->green
                                                : st->yellow;
    gs_out_printf(o, "\n%sverdict%s  %s%s%s\n", st->bold, st->off, col, r->verdict_text, st->off);
    if (r->nworkers) {
        uint64_t io = 0, meta = 0, cpu = 0;
        double b = 0;
        for (size_t i = 0; i < r->nworkers; i++) {
            const an_worker *w = &r->workers[i];
            io += w->io_ns;
            meta += w->meta_ns;
            cpu += w->cpu_ns;
            b += w->batches;
        }
        const double per = b > 0 ? 1.0 / b / 1e6 : 0;
        gs_out_printf(o,
                      "%sloader%s   %zu %s, %.1f ms per batch each (file I/O %.1f ms, metadata %.1f "
                      "ms, CPU %.1f ms), %.1f MB/s\n",
                      st->bold, st->off, r->nworkers,
                      r->workers[0].p == tr ? (r->nworkers == 1 ? "thread" : "threads")
                                            : (r->nworkers == 1 ? "worker" : "workers"),
                      r->batch_ms, (double)io * per, (double)meta * per, (double)cpu * per,
                      r->worker_MBps_total);
    } else {
        gs_out_printf(o, "%sloader%s   no loader worker traced\n",
                      st->bold, st->off);
    }
    if (!r->nadvice)
        gs_out_printf(o, "%sadvice%s   none: nothing in the loader settings would help\n", st->bold,
                      st->off);
    for (size_t i = 0; i < r->nadvice; i++) {
        const an_advice *a = &r->advice[i];
        char set[48];
        if (a->setting == AN_ADV_NUM_WORKERS)
            a->has_value ? snprintf(set, sizeof set, "num_workers=%ld", a->value)
                         : snprintf(set, sizeof set, "num_workers");
        else
            snprintf(set, sizeof set, "pin_memory=True");
        gs_out_printf(o, "%s%-8s%s %-17s", st->bold, i ? "" : "advice", st->off, set);
        if (!a->has_value)
            gs_out_str(o, "will not help");
        else if (a->setting == AN_ADV_NUM_WORKERS)
            gs_out_printf(o, "predicted step %.1f ms (-%.0f%%)", a->predicted_step_ms,
                          r->step_ms_median > 0
                              ? 100 * a->predicted_saving_ms / r->step_ms_median
                              : 0.0);
        else
            gs_out_printf(o, "predicted -%.2f ms per step (step %.1f ms)", a->predicted_saving_ms,
                          a->predicted_step_ms);
        gs_out_printf(o, "\n         %s%s%s\n", st->dim, a->why, st->off);
    }
    for (size_t i = 0; i < r->nnotes; i++)
        gs_out_printf(o, "%snote%s     %s\n", st->bold, st->off, r->notes[i]);
    for (size_t i = 0; i < run->nskipped; i++) {
        const an_skipped *s = &run->skipped[i];
        gs_out_printf(o, "%sskipped%s  %s: %s%s\n", st->bold, st->off, s->file, s->reason,
                      s->whole ? " (file not used)" : " (the part before was used)");
    }
    if (per_step) {
        gs_out_str(o, "\n  step    start_ms   dur_ms  compute  comm   h2d_pin  h2d_pg  other  "
                      "data_wait  pg_copy    host\n");
        const uint64_t t0 = r->nsteps ? r->steps[0].v.t0 : 0;
        for (size_t i = 0; i < r->nsteps; i++) {
            const an_step *s = &r->steps[i];
            const an_stepv *v = &s->v;
            gs_out_printf(o,
                          "%6llu%s %10.3f %8.3f %8.3f %5.3f %8.3f %7.3f %6.3f %10.3f %8.3f %7.3f\n",
                          (unsigned long long)s->num, s->warmup ? "w" : " ",
                          (double)(v->t0 - t0) / 1e6, (double)(v->t1 - v->t0) / 1e6,
                          v->busy[AN_BUSY_COMPUTE] / 1e6, v->busy[AN_BUSY_COMM] / 1e6,
                          v->busy[AN_BUSY_H2D_PINNED] / 1e6, v->busy[AN_BUSY_H2D_PAGEABLE] / 1e6,
                          v->busy[AN_BUSY_OTHER] / 1e6, v->idle_dw / 1e6, v->idle_pg / 1e6,
                          v->idle_host / 1e6);
        }
    }
}

/* ---- JSON ---------------------------------------------------------------------------------- */

static void jkey(gs_out *o, const char *k)
{
    gs_json_cstr(o, k);
    gs_out_char(o, ':');
}

static void jnum(gs_out *o, double v)
{
    if (v != v || v > 1e300 || v < -1e300)
        gs_out_str(o, "null");
    else
        gs_out_printf(o, "%.9g", v);
}

static void jms(gs_out *o, uint64_t ns)
{
    gs_out_printf(o, "%.6f", (double)ns / 1e6);
}

/* a config value as JSON: number, true/false, else a string */
static void jcfg(gs_out *o, const char *v)
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

static const char *cfg_get(const an_proc *p, const char *key)
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
    jkey(o, "pid");
    gs_out_u64(o, p->pid);
    gs_out_str(o, ",");
    jkey(o, "file");
    gs_json_cstr(o, p->file);
    gs_out_str(o, ",");
    jkey(o, "kind");
    gs_json_cstr(o, thread ? "thread" : "process");
    gs_out_str(o, ",");
    jkey(o, "role");
    if (p->role[0] && !thread)
        gs_json_cstr(o, p->role);
    else
        gs_out_str(o, "null");
    gs_out_str(o, ",");
    jkey(o, "batches");
    jnum(o, w->batches);
    gs_out_str(o, ",");
    jkey(o, "batches_source");
    gs_json_cstr(o, w->batches_from_markers ? "markers" : "estimated");
    gs_out_str(o, ",");
    const double b = w->batches > 0 ? w->batches : 0;
    jkey(o, "ms_per_batch");
    gs_out_str(o, "{");
    const uint64_t parts[4] = {w->io_ns, w->meta_ns, w->cpu_ns, w->idle_ns};
    const char *names[4] = {"file_io", "metadata", "cpu", "idle"};
    jkey(o, "busy");
    jnum(o, b ? (double)(w->io_ns + w->meta_ns + w->cpu_ns) / 1e6 / b : 0);
    for (int i = 0; i < 4; i++) {
        gs_out_str(o, ",");
        jkey(o, names[i]);
        jnum(o, b ? (double)parts[i] / 1e6 / b : 0);
    }
    gs_out_str(o, "},");
    jkey(o, "active_ms");
    jms(o, w->active_ns);
    gs_out_str(o, ",");
    jkey(o, "bytes_read");
    gs_out_u64(o, w->bytes);
    gs_out_str(o, ",");
    jkey(o, "requests");
    gs_out_u64(o, w->reqs);
    gs_out_str(o, ",");
    jkey(o, "request_size_hist");
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
            jkey(o, "min_bytes");
            gs_out_u64(o, i ? 1ull << (i - 1) : 0);
            gs_out_str(o, ",");
            jkey(o, "max_bytes");
            if (i == 0)
                gs_out_str(o, "0");
            else if (i == AN_HIST - 1)
                gs_out_str(o, "null");
            else
                gs_out_u64(o, (1ull << i) - 1);
            gs_out_str(o, ",");
            jkey(o, "count");
            gs_out_u64(o, p->hist[i]);
            gs_out_str(o, "}");
        }
        gs_out_str(o, "]");
    }
    gs_out_str(o, ",");
    jkey(o, "read_MBps");
    jnum(o, w->MBps);
    gs_out_str(o, ",");
    jkey(o, "in_read_MBps");
    jnum(o, w->io_MBps);
    gs_out_str(o, ",");
    jkey(o, "major_faults");
    gs_out_u64(o, w->faults);
    gs_out_str(o, "}");
}

static void write_json(gs_out *o, const an_run *run, const an_result *r, int per_step)
{
    const an_proc *tr = r->trainer;
    gs_out_str(o, "{");
    jkey(o, "schema");
    gs_json_cstr(o, "gpustarve.report/1");
    gs_out_str(o, ",\n");

    /* run */
    jkey(o, "run");
    gs_out_str(o, "{");
    jkey(o, "dir");
    gs_json_cstr(o, run->dir);
    gs_out_str(o, ",");
    jkey(o, "files");
    gs_out_u64(o, run->nfiles);
    gs_out_str(o, ",");
    jkey(o, "processes");
    gs_out_u64(o, run->nprocs);
    gs_out_str(o, ",");
    jkey(o, "events");
    gs_out_u64(o, run->events);
    gs_out_str(o, ",");
    jkey(o, "trainer");
    gs_out_str(o, "{");
    jkey(o, "pid");
    gs_out_u64(o, tr->pid);
    gs_out_str(o, ",");
    jkey(o, "file");
    gs_json_cstr(o, tr->file);
    gs_out_str(o, ",");
    jkey(o, "argv");
    gs_json_cstr(o, tr->argv);
    gs_out_str(o, ",");
    jkey(o, "rank");
    if (tr->rank >= 0)
        gs_out_i64(o, tr->rank);
    else
        gs_out_str(o, "null");
    gs_out_str(o, ",");
    jkey(o, "training_tid");
    if (r->thread)
        gs_out_u64(o, r->thread->tid);
    else
        gs_out_str(o, "null");
    gs_out_str(o, ",");
    jkey(o, "training_thread_name");
    gs_json_cstr(o, r->thread && r->thread->name[0] ? r->thread->name : NULL);
    gs_out_str(o, "},");
    jkey(o, "gpus");
    gs_out_str(o, "[");
    for (size_t i = 0; i < tr->ndevs; i++) {
        gs_out_str(o, i ? ",{" : "{");
        jkey(o, "dev");
        gs_out_u64(o, tr->devs[i].dev);
        gs_out_str(o, ",");
        jkey(o, "name");
        gs_json_cstr(o, tr->devs[i].name);
        gs_out_str(o, "}");
    }
    gs_out_str(o, "],");
    jkey(o, "gpu_activity");
    gs_out_str(o, r->no_gpu ? "false" : "true");
    gs_out_str(o, ",");
    jkey(o, "late_ms");
    jms(o, r->late_ns);
    gs_out_str(o, ",");
    jkey(o, "skipped");
    gs_out_str(o, "[");
    for (size_t i = 0; i < run->nskipped; i++) {
        const an_skipped *s = &run->skipped[i];
        gs_out_str(o, i ? ",{" : "{");
        jkey(o, "file");
        gs_json_cstr(o, s->file);
        gs_out_str(o, ",");
        jkey(o, "reason");
        gs_json_cstr(o, s->reason);
        gs_out_str(o, ",");
        jkey(o, "unread_bytes");
        gs_out_u64(o, s->unread);
        gs_out_str(o, ",");
        jkey(o, "used");
        gs_out_str(o, s->whole ? "false" : "true");
        gs_out_str(o, "}");
    }
    gs_out_str(o, "]},\n");

    jkey(o, "no_gpu_activity");
    gs_out_str(o, r->no_gpu ? "true" : "false");
    gs_out_str(o, ",\n");

    /* steps */
    jkey(o, "steps");
    gs_out_str(o, "{");
    jkey(o, "count");
    gs_out_u64(o, r->nsteps);
    gs_out_str(o, ",");
    jkey(o, "measured");
    gs_out_u64(o, r->measured);
    gs_out_str(o, ",");
    jkey(o, "warmup");
    gs_out_u64(o, r->warmup);
    gs_out_str(o, ",");
    jkey(o, "warmup_auto");
    gs_out_str(o, r->skip_auto ? "true" : "false");
    gs_out_str(o, ",");
    jkey(o, "source");
    gs_json_cstr(o, an_source_name(r->source));
    gs_out_str(o, ",");
    jkey(o, "source_detail");
    gs_json_cstr(o, r->source_detail);
    gs_out_str(o, "},\n");

    jkey(o, "step_ms");
    gs_out_str(o, "{");
    jkey(o, "median");
    jnum(o, r->step_ms_median);
    gs_out_str(o, ",");
    jkey(o, "p90");
    jnum(o, r->step_ms_p90);
    gs_out_str(o, ",");
    jkey(o, "mean");
    jnum(o, r->step_ms_mean);
    gs_out_str(o, ",");
    jkey(o, "min");
    jnum(o, r->step_ms_min);
    gs_out_str(o, ",");
    jkey(o, "max");
    jnum(o, r->step_ms_max);
    gs_out_str(o, "},\n");

    jkey(o, "share");
    gs_out_str(o, "{");
    for (int k = 0; k < AN_NSH; k++) {
        if (k)
            gs_out_str(o, ",");
        jkey(o, an_share_names[k]);
        gs_out_printf(o, "%.9f", r->share[k]);
    }
    gs_out_str(o, "},\n");
    jkey(o, "median_ms");
    gs_out_str(o, "{");
    for (int k = 0; k < AN_NSH; k++) {
        if (k)
            gs_out_str(o, ",");
        jkey(o, an_share_names[k]);
        jnum(o, r->median_ms[k]);
    }
    gs_out_str(o, "},\n");
    jkey(o, "input_bound_share");
    jnum(o, r->input_share);
    gs_out_str(o, ",\n");

    jkey(o, "verdict");
    gs_out_str(o, "{");
    jkey(o, "label");
    gs_json_cstr(o, an_verdict_label(r->verdict));
    gs_out_str(o, ",");
    jkey(o, "text");
    gs_json_cstr(o, r->verdict_text);
    gs_out_str(o, "},\n");

    /* dataloader configuration */
    jkey(o, "dataloader");
    gs_out_str(o, "{");
    jkey(o, "known");
    gs_out_str(o, tr->ncfg ? "true" : "false");
    static const char *const keys[] = {"num_workers", "pin_memory", "batch_size",
                                       "prefetch_factor", "persistent_workers"};
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        gs_out_str(o, ",");
        jkey(o, keys[i]);
        jcfg(o, cfg_get(tr, keys[i]));
    }
    gs_out_str(o, ",");
    jkey(o, "config");
    gs_out_str(o, "[");
    for (size_t i = 0; i < tr->ncfg; i++) {
        gs_out_str(o, i ? ",{" : "{");
        jkey(o, "loader");
        gs_out_u64(o, tr->cfg[i].loader);
        gs_out_str(o, ",");
        jkey(o, "key");
        gs_json_cstr(o, tr->cfg[i].key);
        gs_out_str(o, ",");
        jkey(o, "value");
        gs_json_cstr(o, tr->cfg[i].value);
        gs_out_str(o, "}");
    }
    gs_out_str(o, "]},\n");

    /* loader workers */
    jkey(o, "loader");
    gs_out_str(o, "{");
    jkey(o, "workers_seen");
    gs_out_u64(o, r->nworkers);
    gs_out_str(o, ",");
    jkey(o, "batch_ms");
    jnum(o, r->batch_ms);
    gs_out_str(o, ",");
    jkey(o, "bytes_read");
    gs_out_u64(o, r->worker_bytes);
    gs_out_str(o, ",");
    jkey(o, "read_MBps");
    jnum(o, r->worker_MBps_total);
    gs_out_str(o, ",");
    jkey(o, "workers");
    gs_out_str(o, "[");
    for (size_t i = 0; i < r->nworkers; i++) {
        if (i)
            gs_out_str(o, ",\n  ");
        write_worker_json(o, r, &r->workers[i]);
    }
    gs_out_str(o, "]},\n");

    jkey(o, "advice");
    gs_out_str(o, "[");
    for (size_t i = 0; i < r->nadvice; i++) {
        const an_advice *a = &r->advice[i];
        gs_out_str(o, i ? ",{" : "{");
        jkey(o, "setting");
        gs_json_cstr(o, a->setting == AN_ADV_NUM_WORKERS ? "num_workers" : "pin_memory");
        gs_out_str(o, ",");
        jkey(o, "value");
        if (!a->has_value)
            gs_out_str(o, "null");
        else if (a->setting == AN_ADV_PIN_MEMORY)
            gs_out_str(o, "true");
        else
            gs_out_i64(o, a->value);
        gs_out_str(o, ",");
        jkey(o, "predicted_step_ms");
        jnum(o, a->predicted_step_ms);
        gs_out_str(o, ",");
        jkey(o, "predicted_saving_ms");
        jnum(o, a->predicted_saving_ms);
        gs_out_str(o, ",");
        jkey(o, "why");
        gs_json_cstr(o, a->why);
        gs_out_str(o, "}");
    }
    gs_out_str(o, "],\n");
    jkey(o, "cores");
    gs_out_i64(o, r->cores);
    gs_out_str(o, ",\n");
    jkey(o, "notes");
    gs_out_str(o, "[");
    for (size_t i = 0; i < r->nnotes; i++) {
        if (i)
            gs_out_str(o, ",");
        gs_json_cstr(o, r->notes[i]);
    }
    gs_out_str(o, "]");

    if (per_step) {
        gs_out_str(o, ",\n");
        jkey(o, "per_step");
        gs_out_str(o, "[");
        for (size_t i = 0; i < r->nsteps; i++) {
            const an_step *s = &r->steps[i];
            gs_out_str(o, i ? ",\n {" : "\n {");
            jkey(o, "index");
            gs_out_u64(o, i);
            gs_out_str(o, ",");
            jkey(o, "number");
            gs_out_u64(o, s->num);
            gs_out_str(o, ",");
            jkey(o, "warmup");
            gs_out_str(o, s->warmup ? "true" : "false");
            gs_out_str(o, ",");
            jkey(o, "start_ns");
            gs_out_u64(o, s->v.t0);
            gs_out_str(o, ",");
            jkey(o, "dur_ms");
            jms(o, s->v.t1 - s->v.t0);
            const uint64_t parts[AN_NSH] = {
                s->v.busy[AN_BUSY_COMPUTE], s->v.busy[AN_BUSY_COMM],
                s->v.busy[AN_BUSY_H2D_PINNED], s->v.busy[AN_BUSY_H2D_PAGEABLE],
                s->v.busy[AN_BUSY_OTHER], s->v.idle_dw, s->v.idle_pg, s->v.idle_host};
            for (int k = 0; k < AN_NSH; k++) {
                gs_out_str(o, ",");
                char key[48];
                snprintf(key, sizeof key, "%s_ms", an_share_names[k]);
                jkey(o, key);
                jms(o, parts[k]);
            }
            gs_out_str(o, "}");
        }
        gs_out_str(o, "]");
    }
    gs_out_str(o, "}\n");
}

/* ---- the command --------------------------------------------------------------------------- */

int gs_cmd_report(int argc, char **argv)
{
    static const struct option opts[] = {
        {"json", no_argument, NULL, 'j'},
        {"per-step", no_argument, NULL, 'P'},
        {"step-range", required_argument, NULL, 'S'},
        {"fetch-range", required_argument, NULL, 'F'},
        {"skip", required_argument, NULL, 'k'},
        {"cores", required_argument, NULL, 'c'},
        {"probe", required_argument, NULL, 'p'},
        {"quiet", no_argument, NULL, 'q'},
        {"verbose", no_argument, NULL, 'v'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    static const char optstring[] = "qvh";
    int json = 0, per_step = 0, opt;
    const char *step_re = NULL, *fetch_re = NULL, *probe = NULL;
    long skip = -1, cores = 0;
    optind = 0;
    opterr = 0;
    while ((opt = getopt_long(argc, argv, optstring, opts, NULL)) != -1) {
        char *end;
        switch (opt) {
        case 'j': json = 1; break;
        case 'P': per_step = 1; break;
        case 'S': step_re = optarg; break;
        case 'F': fetch_re = optarg; break;
        case 'k':
            errno = 0;
            skip = strtol(optarg, &end, 10);
            if (*end || errno || skip < 0 || skip > 1000000000)
                return gs_cli_usage_error("report", "--skip needs a number >= 0, not '%s'", optarg);
            break;
        case 'c':
            errno = 0;
            cores = strtol(optarg, &end, 10);
            if (*end || errno || cores < 1 || cores > 100000)
                return gs_cli_usage_error("report", "--cores needs a number >= 1, not '%s'", optarg);
            break;
        case 'p': probe = optarg; break;
        case 'q': gs_verbosity--; break;
        case 'v': gs_verbosity++; break;
        case 'h': fputs(usage_text, stdout); return GS_EXIT_OK;
        default: return gs_cli_bad_option("report", argc, argv, optstring, opts);
        }
    }
    if (argc - optind > 1)
        return gs_cli_usage_error("report", "takes one run directory");
    char dirbuf[512];
    const char *dir;
    if (optind < argc) {
        dir = argv[optind];
    } else {
        if (newest_run(dirbuf, sizeof dirbuf) < 0) {
            gs_cli_error("report: no run directory given and no gpustarve-* directory here");
            return GS_EXIT_USAGE;
        }
        dir = dirbuf;
        gs_cli_msg(1, "report: reading %s", dir);
    }
    struct stat st;
    if (stat(dir, &st) != 0) {
        gs_cli_error("report: %s: %s", dir, strerror(errno));
        return GS_EXIT_USAGE;
    }
    if (!S_ISDIR(st.st_mode)) {
        gs_cli_error("report: %s: not a directory (give the run directory)", dir);
        return GS_EXIT_USAGE;
    }

    an_opts o;
    const char *bad = NULL;
    if (an_opts_init(&o, step_re, fetch_re, &bad) < 0)
        return gs_cli_usage_error("report", "bad regular expression '%s'", bad);
    o.skip = (int)skip;
    o.cores = (int)cores;
    if (probe && read_probe(probe, &o) < 0) {
        an_opts_free(&o);
        return GS_EXIT_USAGE;
    }
    prog pg = {0};
    pg.on = gs_verbosity >= 1 && isatty(2);
    clock_gettime(CLOCK_MONOTONIC, &pg.start);
    o.progress = on_progress;
    o.progress_ctx = &pg;

    an_run run;
    char err[512];
    int rc = GS_EXIT_OK;
    if (an_run_load(&run, dir, &o, err, sizeof err) < 0) {
        if (pg.shown)
            fputs("\n", stderr);
        gs_cli_error("report: %s", err);
        an_run_free(&run);
        an_opts_free(&o);
        return GS_EXIT_USAGE;
    }
    if (pg.shown)
        fputs("\r\033[K", stderr);
    gs_cli_msg(2, "report: %llu events in %zu files, %.2f s",
               (unsigned long long)run.events, run.nfiles, since(&pg.start));
    for (size_t i = 0; i < run.nskipped; i++)
        gs_cli_msg(1, "%s: %s%s", run.skipped[i].file, run.skipped[i].reason,
                   run.skipped[i].whole ? "; file skipped" : "; the readable part is used");
    if (!run.nprocs) {
        gs_cli_error("report: %s: no readable trace file (%zu skipped)", dir, run.nskipped);
        an_run_free(&run);
        an_opts_free(&o);
        return GS_EXIT_USAGE;
    }
    an_result res;
    if (an_analyze(&run, &o, &res, err, sizeof err) < 0) {
        gs_cli_error("report: %s", err);
        rc = GS_EXIT_USAGE;
    } else {
        gs_out *out = malloc(sizeof *out);
        if (!out) {
            gs_cli_error("out of memory");
            rc = GS_EXIT_FAIL;
        } else {
            gs_out_init(out, stdout);
            if (json) {
                write_json(out, &run, &res, per_step);
            } else {
                const int color = isatty(1) && !getenv("NO_COLOR");
                const style on = {"\033[1m", "\033[31m", "\033[33m", "\033[32m", "\033[2m", "\033[0m"};
                const style off = {"", "", "", "", "", ""};
                write_text(out, &run, &res, per_step, color ? &on : &off);
            }
            gs_out_flush(out);
            free(out);
        }
    }
    an_result_free(&res);
    an_run_free(&run);
    an_opts_free(&o);
    return rc;
}
