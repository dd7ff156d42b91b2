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
#include "gs_trace.h"

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
    "  --perfetto FILE     also write a trace for ui.perfetto.dev (Chrome JSON):\n"
    "                      every thread's I/O, every GPU stream, the steps and\n"
    "                      the GPU's idle pieces by cause, counters\n"
    "  --html FILE         also write one self-contained page: verdict, advice,\n"
    "                      per-step bars, timelines of the slowest steps\n"
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

/* ---- the second pass: Perfetto trace and the HTML page's timelines ------------------------
 *
 * Both need events, not just the per-step results, so they read the files a
 * second time through the same loader (an_load.c) with hooks: every event is
 * written to the Perfetto file as it is decoded, the training thread's
 * timeline pieces (an_timeline.c) become the starvation track, and the HTML
 * page keeps only what falls inside the few slowest steps, merged to what a
 * pixel can show. Nothing here grows with the number of events except the
 * Perfetto file itself. */

#define PF_BIN_NS 10000000ull       /* counter bins: 10 ms */
#define PF_PID_ANALYSIS 999999999ull /* pseudo-process: steps, starvation, counters */
#define PF_PID_GPU 1000000000ull     /* pseudo-processes: + 1000 x image + device */
#define PF_MAX_THREADS 4096
#define PF_NVTX_DEPTH 32
#define PF_MAX_RANGES 4096
#define HX_WINDOWS 3                 /* the page shows the slowest 3 steps */
#define HX_MAX_ITEMS 40000           /* per window, after merging */
#define HX_MERGE 1500                /* merge gaps below 1/1500 of the window */

/* HTML item classes: the eight attribution classes (an_share_names order),
 * then the loader's own activity. */
enum { HX_READ = AN_NSH, HX_META, HX_WAIT, HX_NCLS };
static const char *const hx_cls_names[HX_NCLS] = {
    "gpu_compute", "gpu_comm", "gpu_h2d_pinned", "gpu_h2d_pageable", "gpu_copy_other",
    "idle_data_wait", "idle_pageable_copy", "idle_host", "file_read", "open_stat", "pipe_wait",
};

typedef struct pf_thread {
    uint32_t tid;
    uint64_t last_end; /* end of the latest leaf slice: later leaves never cross it */
    int nv;
    struct { uint64_t ts; uint32_t str, dom; } nv_stack[PF_NVTX_DEPTH];
} pf_thread;

typedef struct pf_stream {
    uint32_t dev;
    uint64_t stream;
    uint32_t tid;
    uint64_t last_end;
} pf_stream;

typedef struct pf_range {
    uint64_t id, ts;
    uint32_t tid;
    char name[96];
} pf_range;

typedef struct hx_item {
    uint64_t t0, t1;
    uint32_t row;
    uint32_t cls;
} hx_item;

typedef struct hx_row {
    int type; /* 0 training thread, 1 GPU stream, 2 loader worker, 3 other trainer thread */
    uint64_t a, b; /* type 1: dev, stream; 2: image index; 3: tid */
    char name[96];
} hx_row;

typedef struct hx_window {
    uint64_t t0, t1, tol;
    size_t step; /* index into res->steps */
    hx_item *it;
    size_t n, cap;
    size_t *last; /* per row: index of its latest item + 1, 0 none */
    size_t nlast;
    int full;
} hx_window;

typedef struct pass2 {
    const an_run *run;
    const an_result *res;
    uint64_t base; /* ts origin, ns */
    /* Perfetto */
    gs_out *pf;
    int pf_n;
    /* per file */
    const an_proc *p1; /* the image in the analysis pass */
    size_t img;        /* its index */
    int is_trainer, is_worker;
    uint64_t pid;
    pf_thread *th;
    size_t nth, capth;
    long last_th;
    pf_stream *st;
    size_t nst, capst;
    uint32_t gpu_named[8]; /* devices whose pseudo-process got a name, +1 */
    int ngpu_named;
    pf_range *rg;
    size_t nrg;
    int64_t rbin; /* read counter bin, -1 none */
    uint64_t rbytes;
    /* trainer pieces */
    int64_t gbin;
    uint64_t gbusy;
    int glast; /* last emitted busy %, -1 none */
    size_t pk; /* step cursor */
    double *step_bytes;
    /* HTML */
    int html;
    hx_window win[HX_WINDOWS];
    size_t nwin;
    hx_row *rows;
    size_t nrows, caprows;
} pass2;

static uint64_t rel(const pass2 *x, uint64_t t)
{
    return t > x->base ? t - x->base : 0;
}

/* ---- Perfetto primitives ---- */

static void pf_open(pass2 *x, char ph, uint64_t pid, uint64_t tid)
{
    gs_out *o = x->pf;
    gs_out_str(o, x->pf_n++ ? ",\n{\"ph\":\"" : "\n{\"ph\":\"");
    gs_out_char(o, ph);
    gs_out_str(o, "\",\"pid\":");
    gs_out_u64(o, pid);
    gs_out_str(o, ",\"tid\":");
    gs_out_u64(o, tid);
}

static void pf_ts(pass2 *x, const char *key, uint64_t ns)
{
    gs_out_str(x->pf, key);
    gs_out_fixed(x->pf, (int64_t)ns, 3); /* µs with ns precision */
}

static void pf_name(pass2 *x, const char *name)
{
    gs_out_str(x->pf, ",\"name\":");
    gs_json_cstr(x->pf, name ? name : "?");
}

static void pf_meta(pass2 *x, const char *what, uint64_t pid, uint64_t tid, const char *name)
{
    pf_open(x, 'M', pid, tid);
    gs_out_str(x->pf, ",\"name\":\"");
    gs_out_str(x->pf, what);
    gs_out_str(x->pf, "\",\"args\":{\"name\":");
    gs_json_cstr(x->pf, name);
    gs_out_str(x->pf, "}}");
}

static void pf_sort(pass2 *x, uint64_t pid, long idx)
{
    pf_open(x, 'M', pid, 0);
    gs_out_str(x->pf, ",\"name\":\"process_sort_index\",\"args\":{\"sort_index\":");
    gs_out_i64(x->pf, idx);
    gs_out_str(x->pf, "}}");
}

/* A complete slice; the caller adds args (",\"args\":{...}") and the '}'. */
static void pf_slice(pass2 *x, uint64_t pid, uint64_t tid, uint64_t t0, uint64_t t1,
                     const char *name, const char *cat)
{
    pf_open(x, 'X', pid, tid);
    pf_ts(x, ",\"ts\":", rel(x, t0));
    pf_ts(x, ",\"dur\":", t1 > t0 ? t1 - t0 : 0);
    pf_name(x, name);
    gs_out_str(x->pf, ",\"cat\":\"");
    gs_out_str(x->pf, cat);
    gs_out_str(x->pf, "\"");
}

static void pf_counter(pass2 *x, uint64_t pid, const char *name, uint64_t t, double v)
{
    pf_open(x, 'C', pid, 0);
    pf_ts(x, ",\"ts\":", rel(x, t));
    pf_name(x, name);
    gs_out_str(x->pf, ",\"args\":{\"value\":");
    jnum(x->pf, v);
    gs_out_str(x->pf, "}}");
}

static void pf_instant(pass2 *x, uint64_t pid, uint64_t tid, uint64_t t, const char *name)
{
    pf_open(x, 'i', pid, tid);
    pf_ts(x, ",\"ts\":", rel(x, t));
    pf_name(x, name);
    gs_out_str(x->pf, ",\"s\":\"t\",\"cat\":\"marker\"}");
}

/* ---- per-file state ---- */

static pf_thread *pf_thread_of(pass2 *x, uint32_t tid)
{
    if (x->last_th >= 0 && x->th[x->last_th].tid == tid)
        return &x->th[x->last_th];
    for (size_t i = 0; i < x->nth; i++)
        if (x->th[i].tid == tid) {
            x->last_th = (long)i;
            return &x->th[i];
        }
    if (x->nth == x->capth) {
        if (x->capth >= PF_MAX_THREADS)
            return NULL;
        size_t nc = x->capth ? x->capth * 2 : 16;
        pf_thread *n = realloc(x->th, nc * sizeof *n);
        if (!n)
            return NULL;
        x->th = n;
        x->capth = nc;
    }
    pf_thread *t = &x->th[x->nth];
    memset(t, 0, sizeof *t);
    t->tid = tid;
    x->last_th = (long)x->nth++;
    return t;
}

static uint64_t gpu_pid(const pass2 *x, uint32_t dev)
{
    return PF_PID_GPU + 1000 * (uint64_t)x->img + (dev % 1000);
}

static pf_stream *pf_stream_of(pass2 *x, uint32_t dev, uint64_t stream)
{
    for (size_t i = 0; i < x->nst; i++)
        if (x->st[i].dev == dev && x->st[i].stream == stream)
            return &x->st[i];
    if (x->nst == x->capst) {
        size_t nc = x->capst ? x->capst * 2 : 8;
        pf_stream *n = realloc(x->st, nc * sizeof *n);
        if (!n)
            return NULL;
        x->st = n;
        x->capst = nc;
    }
    pf_stream *s = &x->st[x->nst++];
    s->dev = dev;
    s->stream = stream;
    s->last_end = 0;
    uint32_t k = 0;
    for (size_t i = 0; i + 1 < x->nst; i++)
        k += x->st[i].dev == dev;
    s->tid = k + 1;
    if (x->pf) {
        int named = 0;
        for (int i = 0; i < x->ngpu_named; i++)
            named |= x->gpu_named[i] == dev + 1;
        if (!named && x->ngpu_named < 8) {
            x->gpu_named[x->ngpu_named++] = dev + 1;
            const char *dn = "";
            for (size_t i = 0; i < x->p1->ndevs; i++)
                if (x->p1->devs[i].dev == dev)
                    dn = x->p1->devs[i].name;
            char name[200];
            snprintf(name, sizeof name, "GPU %u%s%s (pid %llu%s)", dev, dn[0] ? ": " : "", dn,
                     (unsigned long long)x->pid, x->is_trainer ? ", trainer" : "");
            pf_meta(x, "process_name", gpu_pid(x, dev), 0, name);
            pf_sort(x, gpu_pid(x, dev), x->is_trainer ? 1 : 50);
        }
        char tn[64];
        snprintf(tn, sizeof tn, "stream %llu", (unsigned long long)stream);
        pf_meta(x, "thread_name", gpu_pid(x, dev), s->tid, tn);
    }
    return s;
}

/* Leaf slices of one track never partially overlap: a start inside the
 * previous leaf moves to its end (a hook's clock read is the only way there). */
static int leaf_clip(uint64_t *last_end, uint64_t *t0, uint64_t t1)
{
    if (*t0 < *last_end && t1 > *last_end)
        *t0 = *last_end;
    if (t1 > *last_end)
        *last_end = t1;
    return 1;
}

/* ---- HTML rows and items ---- */

static long hx_row_of(pass2 *x, int type, uint64_t a, uint64_t b, const char *name)
{
    for (size_t i = 0; i < x->nrows; i++)
        if (x->rows[i].type == type && x->rows[i].a == a && x->rows[i].b == b)
            return (long)i;
    if (x->nrows == x->caprows) {
        size_t nc = x->caprows ? x->caprows * 2 : 16;
        hx_row *n = realloc(x->rows, nc * sizeof *n);
        if (!n)
            return -1;
        x->rows = n;
        x->caprows = nc;
    }
    hx_row *r = &x->rows[x->nrows];
    r->type = type;
    r->a = a;
    r->b = b;
    snprintf(r->name, sizeof r->name, "%s", name);
    return (long)x->nrows++;
}

static void hx_add(pass2 *x, long row, uint64_t t0, uint64_t t1, unsigned cls)
{
    if (row < 0)
        return;
    for (size_t w = 0; w < x->nwin; w++) {
        hx_window *v = &x->win[w];
        if (t1 <= v->t0 || t0 >= v->t1 || v->full)
            continue;
        const uint64_t a = t0 > v->t0 ? t0 : v->t0, b = t1 < v->t1 ? t1 : v->t1;
        if ((size_t)row >= v->nlast) {
            size_t nn = (size_t)row + 16;
            size_t *nl = realloc(v->last, nn * sizeof *nl);
            if (!nl)
                continue;
            memset(nl + v->nlast, 0, (nn - v->nlast) * sizeof *nl);
            v->last = nl;
            v->nlast = nn;
        }
        if (v->last[row]) {
            hx_item *l = &v->it[v->last[row] - 1];
            if (l->cls == cls && a <= l->t1 + v->tol && a >= l->t0) {
                if (b > l->t1)
                    l->t1 = b;
                continue;
            }
        }
        if (v->n == v->cap) {
            if (v->cap >= HX_MAX_ITEMS) {
                v->full = 1;
                continue;
            }
            size_t nc = v->cap ? v->cap * 2 : 256;
            hx_item *ni = realloc(v->it, nc * sizeof *ni);
            if (!ni)
                continue;
            v->it = ni;
            v->cap = nc;
        }
        v->it[v->n] = (hx_item){a, b, (uint32_t)row, cls};
        v->last[row] = ++v->n;
    }
}

static int hx_in_any(const pass2 *x, uint64_t t0, uint64_t t1)
{
    for (size_t w = 0; w < x->nwin; w++)
        if (t1 > x->win[w].t0 && t0 < x->win[w].t1)
            return 1;
    return 0;
}

/* ---- hooks ---- */

static void p2_read_counter_flush(pass2 *x)
{
    if (!x->pf || x->rbin < 0)
        return;
    const uint64_t t = x->base + (uint64_t)x->rbin * PF_BIN_NS;
    pf_counter(x, x->pid, "read MB/s", t, (double)x->rbytes / 1e6 / (PF_BIN_NS / 1e9));
    pf_counter(x, x->pid, "read MB/s", t + PF_BIN_NS, 0);
}

static void p2_file_read(pass2 *x, const gs_event *e, uint64_t bytes)
{
    if (x->pf) {
        const int64_t bin = (int64_t)(rel(x, e->ts) / PF_BIN_NS);
        if (bin > x->rbin) {
            if (x->rbin >= 0) {
                const uint64_t t = x->base + (uint64_t)x->rbin * PF_BIN_NS;
                pf_counter(x, x->pid, "read MB/s", t, (double)x->rbytes / 1e6 / (PF_BIN_NS / 1e9));
                if (bin > x->rbin + 1)
                    pf_counter(x, x->pid, "read MB/s", t + PF_BIN_NS, 0);
            }
            x->rbin = bin;
            x->rbytes = 0;
        }
        x->rbytes += bytes; /* a read behind the current bin counts in it */
    }
    /* per step, all processes */
    const an_result *r = x->res;
    size_t lo = 0, hi = r->nsteps;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (r->steps[mid].v.t0 <= e->ts)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo && e->ts < r->steps[lo - 1].v.t1 && x->step_bytes)
        x->step_bytes[lo - 1] += (double)bytes;
}

static void p2_on_file(void *ctx, const an_proc *p, struct gs_reader *r)
{
    pass2 *x = ctx;
    (void)r;
    x->p1 = NULL;
    for (size_t i = 0; i < x->run->nprocs; i++)
        if (strcmp(x->run->procs[i].path, p->path) == 0) {
            x->p1 = &x->run->procs[i];
            x->img = i;
        }
    x->pid = p->pid;
    x->nth = x->nst = x->nrg = 0;
    x->last_th = -1;
    x->ngpu_named = 0;
    x->rbin = -1;
    x->rbytes = 0;
    x->is_trainer = x->p1 && x->p1 == x->res->trainer;
    x->is_worker = 0;
    long wi = -1;
    for (size_t i = 0; i < x->res->nworkers; i++)
        if (x->p1 && x->res->workers[i].p == x->p1 && x->p1 != x->res->trainer) {
            x->is_worker = 1;
            wi = (long)i;
        }
    if (!x->p1) /* cannot happen: the same files in the same order */
        x->p1 = p;
    if (x->pf) {
        char name[200];
        const char *argv = p->argv[0] ? p->argv : p->file;
        if (x->is_trainer)
            snprintf(name, sizeof name, "trainer: %.120s", argv);
        else if (x->is_worker)
            snprintf(name, sizeof name, "loader worker %ld: %.120s", wi, argv);
        else
            snprintf(name, sizeof name, "%.150s", argv);
        pf_meta(x, "process_name", p->pid, 0, name);
        pf_sort(x, p->pid, x->is_trainer ? 0 : x->is_worker ? 10 + wi : 100);
        if (x->is_trainer && x->res->thread) {
            const an_thread *t = x->res->thread;
            char tn[96];
            snprintf(tn, sizeof tn, "%s (training thread)", t->name[0] ? t->name : "thread");
            pf_meta(x, "thread_name", p->pid, t->tid, tn);
        }
    }
    x->gbin = -1;
    x->gbusy = 0;
    x->glast = -1;
    x->pk = 0;
}

static const char *p2_str(struct gs_reader *r, uint32_t id)
{
    return id ? gs_reader_string(r, id) : NULL;
}

static void p2_io_args(pass2 *x, struct gs_reader *r, const gs_event *e)
{
    gs_out *o = x->pf;
    gs_out_str(o, ",\"args\":{\"fd\":");
    gs_out_i64(o, e->fd);
    gs_out_str(o, ",\"fd_kind\":");
    gs_json_cstr(o, gs_fdkind_name(e->fd_kind));
    const char *path = p2_str(r, e->str);
    if (path) {
        gs_out_str(o, ",\"path\":");
        gs_json_cstr(o, path);
    }
    gs_out_str(o, ",\"bytes\":");
    gs_out_u64(o, e->bytes);
    gs_out_str(o, ",\"ret\":");
    gs_out_i64(o, e->ret);
    if (e->offset >= 0) {
        gs_out_str(o, ",\"offset\":");
        gs_out_i64(o, e->offset);
    }
    gs_out_str(o, "}}");
}

static int is_read_kind(unsigned k)
{
    return (k >= GS_K_READ && k <= GS_K_PREAD64_CHK) || k == GS_K_FREAD || k == GS_K_FGETS ||
           k == GS_K_FREAD_UNLOCKED;
}

static int is_meta_kind(unsigned k)
{
    return (k >= GS_K_OPEN && k <= GS_K_CREAT) || k == GS_K_FOPEN || k == GS_K_FOPEN64 ||
           (k >= GS_K_STAT && k <= GS_K_FXSTATAT64);
}

static int is_wait_kind(unsigned k)
{
    return k >= GS_K_POLL && k <= GS_K_EPOLL_PWAIT;
}

static const char *memcpy_name(uint64_t aux)
{
    const unsigned dir = aux & 0xff, src = (aux >> 8) & 0xff;
    if (dir == GS_DIR_HTOD)
        return src == GS_MEM_PAGEABLE ? "memcpy HtoD (pageable)"
               : src == GS_MEM_PINNED ? "memcpy HtoD (pinned)"
                                      : "memcpy HtoD";
    if (dir == GS_DIR_DTOH)
        return "memcpy DtoH";
    if (dir == GS_DIR_DTOD)
        return "memcpy DtoD";
    return "memcpy";
}

static unsigned gpu_cls(struct gs_reader *r, const gs_event *e)
{
    if (e->kind == GS_K_GPU_KERNEL) {
        const char *n = p2_str(r, e->str);
        return n && (strncmp(n, "nccl", 4) == 0 || strstr(n, "Nccl")) ? AN_SH_COMM : AN_SH_COMPUTE;
    }
    if (e->kind == GS_K_GPU_MEMCPY && (e->aux & 0xff) == GS_DIR_HTOD) {
        const unsigned k = (e->aux >> 8) & 0xff;
        if (k == GS_MEM_PAGEABLE)
            return AN_SH_H2D_PAGEABLE;
        if (k == GS_MEM_PINNED)
            return AN_SH_H2D_PINNED;
    }
    return AN_SH_COPY_OTHER;
}

static void p2_gpu(pass2 *x, struct gs_reader *r, const gs_event *e)
{
    uint64_t t0 = e->ts, t1 = e->ts + e->dur;
    if (x->html && x->is_trainer && hx_in_any(x, t0, t1)) {
        char name[96];
        snprintf(name, sizeof name, "GPU %u stream %llu", e->dev, (unsigned long long)e->stream);
        hx_add(x, hx_row_of(x, 1, e->dev, e->stream, name), t0, t1, gpu_cls(r, e));
    }
    if (!x->pf)
        return;
    pf_stream *s = pf_stream_of(x, e->dev, e->stream);
    if (!s)
        return;
    leaf_clip(&s->last_end, &t0, t1);
    const char *name;
    if (e->kind == GS_K_GPU_KERNEL)
        name = p2_str(r, e->str) ? p2_str(r, e->str) : "kernel";
    else if (e->kind == GS_K_GPU_MEMCPY)
        name = memcpy_name(e->aux);
    else
        name = "memset";
    pf_slice(x, gpu_pid(x, e->dev), s->tid, t0, t1, name,
             e->kind == GS_K_GPU_KERNEL ? "gpu_kernel" : "gpu_copy");
    gs_out_str(x->pf, ",\"args\":{\"stream\":");
    gs_out_u64(x->pf, e->stream);
    gs_out_str(x->pf, ",\"correlation\":");
    gs_out_u64(x->pf, e->corr);
    if (e->kind != GS_K_GPU_KERNEL) {
        gs_out_str(x->pf, ",\"bytes\":");
        gs_out_u64(x->pf, e->bytes);
    }
    gs_out_str(x->pf, "}}");
}

static void p2_on_event(void *ctx, const an_proc *p, struct gs_reader *r, const gs_event *e)
{
    pass2 *x = ctx;
    (void)p;
    const unsigned k = e->kind;
    if (k == GS_K_GPU_KERNEL || k == GS_K_GPU_MEMCPY || k == GS_K_GPU_MEMSET) {
        p2_gpu(x, r, e);
        return;
    }
    if (!e->ts || k == GS_K_GPU_SYNC)
        return;
    const int io = k >= GS_K_OPEN && k <= GS_K_EPOLL_PWAIT;
    const int cuda = k >= GS_K_CUDA_MEMCPY && k <= GS_K_CUDA_HOST_MEM;
    if (io && e->fd_kind == GS_FDK_FILE && is_read_kind(k))
        p2_file_read(x, e, e->ret > 0 ? (uint64_t)e->ret * (k == GS_K_FREAD || k == GS_K_FREAD_UNLOCKED ? e->aux : 1) : 0);
    /* HTML: what the loader does beside the GPU */
    if (x->html && io && hx_in_any(x, e->ts, e->ts + e->dur) &&
        (x->is_worker || (x->is_trainer && (!x->res->thread || e->tid != x->res->thread->tid)))) {
        unsigned cls = HX_NCLS;
        if (is_read_kind(k))
            cls = e->fd_kind == GS_FDK_FILE                                  ? HX_READ
                  : e->fd_kind == GS_FDK_PIPE || e->fd_kind == GS_FDK_SOCKET ? HX_WAIT
                                                                             : HX_NCLS;
        else if (is_meta_kind(k) && e->fd_kind != GS_FDK_PIPE && e->fd_kind != GS_FDK_SOCKET)
            cls = HX_META;
        else if (is_wait_kind(k))
            cls = HX_WAIT;
        if (cls < HX_NCLS) {
            char name[96];
            long row;
            if (x->is_worker) {
                snprintf(name, sizeof name, "loader pid %llu", (unsigned long long)x->pid);
                row = hx_row_of(x, 2, x->img, 0, name);
            } else {
                snprintf(name, sizeof name, "trainer thread %u", e->tid);
                row = hx_row_of(x, 3, e->tid, 0, name);
            }
            hx_add(x, row, e->ts, e->ts + e->dur, cls);
        }
    }
    if (!x->pf)
        return;
    pf_thread *t = pf_thread_of(x, e->tid);
    if (!t)
        return;
    uint64_t t0 = e->ts, t1 = e->ts + e->dur;
    if (io) {
        leaf_clip(&t->last_end, &t0, t1);
        pf_slice(x, x->pid, e->tid, t0, t1, gs_kind_name(k), "io");
        p2_io_args(x, r, e);
        return;
    }
    if (cuda) {
        leaf_clip(&t->last_end, &t0, t1);
        const char *n = p2_str(r, e->str);
        pf_slice(x, x->pid, e->tid, t0, t1, n ? n : gs_kind_name(k), "cuda");
        gs_out_str(x->pf, ",\"args\":{\"bytes\":");
        gs_out_u64(x->pf, e->bytes);
        if (k == GS_K_CUDA_MEMCPY) {
            const unsigned hk = (e->aux >> 8) & 0xff;
            gs_out_str(x->pf, ",\"copy\":");
            gs_json_cstr(x->pf, memcpy_name(e->aux));
            gs_out_str(x->pf, ",\"host_memory\":");
            gs_json_cstr(x->pf, hk == GS_MEM_PAGEABLE ? "pageable" : hk == GS_MEM_PINNED ? "pinned" : "other");
        }
        gs_out_str(x->pf, ",\"ret\":");
        gs_out_i64(x->pf, e->ret);
        gs_out_str(x->pf, "}}");
        return;
    }
    char buf[64];
    switch (k) {
    case GS_K_THREAD: {
        const char *n = p2_str(r, e->str);
        char tn[96];
        const int training = x->is_trainer && x->res->thread && x->res->thread->tid == (uint32_t)e->aux;
        snprintf(tn, sizeof tn, "%s%s", n ? n : "thread", training ? " (training thread)" : "");
        pf_meta(x, "thread_name", x->pid, (uint32_t)e->aux, tn);
        return;
    }
    case GS_K_NVTX_PUSH:
        if (t->nv < PF_NVTX_DEPTH) {
            t->nv_stack[t->nv].ts = e->ts;
            t->nv_stack[t->nv].str = e->str;
            t->nv_stack[t->nv].dom = (uint32_t)e->aux;
        }
        t->nv++;
        return;
    case GS_K_NVTX_POP:
        if (t->nv > PF_NVTX_DEPTH) {
            t->nv--;
            return;
        }
        /* the innermost range of the domain; ranges opened inside it and
         * still open are dropped so that slices stay nested */
        for (int i = t->nv - 1; i >= 0; i--) {
            if (t->nv_stack[i].dom != (uint32_t)e->aux)
                continue;
            const char *n = p2_str(r, t->nv_stack[i].str);
            pf_slice(x, x->pid, e->tid, t->nv_stack[i].ts, e->ts, n ? n : "nvtx range", "nvtx");
            gs_out_str(x->pf, ",\"args\":{\"domain\":");
            gs_out_u64(x->pf, t->nv_stack[i].dom);
            gs_out_str(x->pf, "}}");
            t->nv = i;
            return;
        }
        return;
    case GS_K_NVTX_START:
        if (x->nrg < PF_MAX_RANGES) {
            if (!x->rg && !(x->rg = malloc(PF_MAX_RANGES * sizeof *x->rg)))
                return;
            pf_range *g = &x->rg[x->nrg++];
            g->id = e->aux2;
            g->ts = e->ts;
            g->tid = e->tid;
            const char *n = p2_str(r, e->str);
            snprintf(g->name, sizeof g->name, "%s", n ? n : "nvtx range");
        }
        return;
    case GS_K_NVTX_END:
        for (size_t i = 0; i < x->nrg; i++) {
            if (x->rg[i].id != e->aux2)
                continue;
            /* start/end ranges need not nest: async slices, their own tracks */
            const pf_range g = x->rg[i];
            x->rg[i] = x->rg[--x->nrg];
            for (int be = 0; be < 2; be++) {
                pf_open(x, be ? 'e' : 'b', x->pid, g.tid);
                pf_ts(x, ",\"ts\":", rel(x, be ? e->ts : g.ts));
                pf_name(x, g.name);
                gs_out_str(x->pf, ",\"cat\":\"nvtx\",\"id\":");
                gs_out_u64(x->pf, g.id);
                gs_out_str(x->pf, "}");
            }
            return;
        }
        return;
    case GS_K_NVTX_MARK:
        pf_instant(x, x->pid, e->tid, e->ts, p2_str(r, e->str));
        return;
    case GS_K_STEP_BEGIN: case GS_K_STEP_END: case GS_K_FETCH_BEGIN: case GS_K_FETCH_END:
        snprintf(buf, sizeof buf, "%s %llu", gs_kind_name(k), (unsigned long long)e->aux);
        pf_instant(x, x->pid, e->tid, e->ts, buf);
        return;
    case GS_K_EXIT:
        snprintf(buf, sizeof buf, "exit %llu", (unsigned long long)e->aux);
        pf_instant(x, x->pid, e->tid, e->ts, buf);
        return;
    default:
        return;
    }
}

static void p2_gbin_flush(pass2 *x)
{
    if (x->gbin < 0)
        return;
    const int pct = (int)((double)x->gbusy * 100.0 / (double)PF_BIN_NS + 0.5);
    if (pct != x->glast)
        pf_counter(x, PF_PID_ANALYSIS, "GPU busy %", x->base + (uint64_t)x->gbin * PF_BIN_NS, pct);
    x->glast = pct;
}

static const char *const piece_names[AN_NPC] = {
    "compute", "communication", "h2d_pageable", "h2d_pinned", "copy_other",
    "data_wait", "pageable_copy", "host",
};
/* enum an_piece -> share index */
static const int piece_share[AN_NPC] = {
    AN_SH_COMPUTE, AN_SH_COMM, AN_SH_H2D_PAGEABLE, AN_SH_H2D_PINNED, AN_SH_COPY_OTHER,
    AN_SH_DATA_WAIT, AN_SH_PAGEABLE_COPY, AN_SH_HOST,
};

static void p2_on_piece(void *ctx, uint64_t t0, uint64_t t1, unsigned cls)
{
    pass2 *x = ctx;
    if (cls >= AN_NPC)
        return;
    if (x->html)
        hx_add(x, hx_row_of(x, 0, 0, 0, "training thread"), t0, t1, (unsigned)piece_share[cls]);
    if (!x->pf)
        return;
    /* GPU busy % per bin */
    for (uint64_t a = t0; a < t1;) {
        const int64_t bin = (int64_t)(rel(x, a) / PF_BIN_NS);
        const uint64_t bend = x->base + (uint64_t)(bin + 1) * PF_BIN_NS;
        const uint64_t b = t1 < bend ? t1 : bend;
        if (bin != x->gbin) {
            p2_gbin_flush(x);
            x->gbin = bin;
            x->gbusy = 0;
        }
        if (cls < AN_NBUSY)
            x->gbusy += b - a;
        a = b;
    }
    /* idle pieces of measured steps */
    if (cls < AN_PC_DW)
        return;
    const an_result *r = x->res;
    while (x->pk < r->nsteps && r->steps[x->pk].v.t1 <= t0)
        x->pk++;
    for (size_t j = x->pk; j < r->nsteps && r->steps[j].v.t0 < t1; j++) {
        const an_step *s = &r->steps[j];
        if (s->warmup || s->v.t1 <= t0)
            continue;
        const uint64_t a = t0 > s->v.t0 ? t0 : s->v.t0, b = t1 < s->v.t1 ? t1 : s->v.t1;
        pf_slice(x, PF_PID_ANALYSIS, 2, a, b, piece_names[cls], "starvation");
        gs_out_str(x->pf, ",\"cname\":\"");
        gs_out_str(x->pf, cls == AN_PC_DW ? "terrible" : cls == AN_PC_PG ? "bad" : "yellow");
        gs_out_str(x->pf, "\",\"args\":{\"step\":");
        gs_out_u64(x->pf, s->num);
        gs_out_str(x->pf, "}}");
    }
}

static void p2_on_file_end(void *ctx, const an_proc *p)
{
    pass2 *x = ctx;
    (void)p;
    if (!x->pf)
        return;
    p2_read_counter_flush(x);
    if (x->is_trainer && x->gbin >= 0) {
        p2_gbin_flush(x);
        pf_counter(x, PF_PID_ANALYSIS, "GPU busy %", x->base + (uint64_t)(x->gbin + 1) * PF_BIN_NS, 0);
        x->gbin = -1;
    }
}

static void pf_header(pass2 *x)
{
    const an_result *r = x->res;
    gs_out_str(x->pf, "{\"displayTimeUnit\":\"ms\",\"otherData\":{\"generator\":\"gpustarve report\",\"verdict\":");
    gs_json_cstr(x->pf, r->verdict_text);
    gs_out_str(x->pf, ",\"time_origin_ns\":");
    gs_out_u64(x->pf, x->base);
    gs_out_str(x->pf, "},\"traceEvents\":[");
    char name[200];
    snprintf(name, sizeof name, "gpustarve: steps and GPU starvation (trainer pid %llu)",
             (unsigned long long)r->trainer->pid);
    pf_meta(x, "process_name", PF_PID_ANALYSIS, 0, name);
    pf_sort(x, PF_PID_ANALYSIS, -1);
    pf_meta(x, "thread_name", PF_PID_ANALYSIS, 1, "steps");
    pf_meta(x, "thread_name", PF_PID_ANALYSIS, 2, "GPU starvation (idle pieces by cause)");
    uint64_t last_end = 0;
    for (size_t i = 0; i < r->nsteps; i++) {
        const an_step *s = &r->steps[i];
        uint64_t t0 = s->v.t0;
        leaf_clip(&last_end, &t0, s->v.t1);
        char sn[64];
        snprintf(sn, sizeof sn, "step %llu%s", (unsigned long long)s->num, s->warmup ? " (warm-up)" : "");
        pf_slice(x, PF_PID_ANALYSIS, 1, t0, s->v.t1, sn, "step");
        gs_out_str(x->pf, ",\"args\":{\"index\":");
        gs_out_u64(x->pf, i);
        gs_out_str(x->pf, ",\"warmup\":");
        gs_out_str(x->pf, s->warmup ? "true" : "false");
        const uint64_t parts[AN_NSH] = {
            s->v.busy[AN_BUSY_COMPUTE], s->v.busy[AN_BUSY_COMM], s->v.busy[AN_BUSY_H2D_PINNED],
            s->v.busy[AN_BUSY_H2D_PAGEABLE], s->v.busy[AN_BUSY_OTHER], s->v.idle_dw, s->v.idle_pg,
            s->v.idle_host};
        for (int k = 0; k < AN_NSH; k++) {
            gs_out_str(x->pf, ",\"");
            gs_out_str(x->pf, an_share_names[k]);
            gs_out_str(x->pf, "_ms\":");
            jms(x->pf, parts[k]);
        }
        gs_out_str(x->pf, "}}");
    }
}

static void pf_footer(pass2 *x)
{
    const an_result *r = x->res;
    for (size_t i = 0; i < r->nsteps && x->step_bytes; i++) {
        const an_step *s = &r->steps[i];
        const double sec = (double)(s->v.t1 - s->v.t0) / 1e9;
        pf_counter(x, PF_PID_ANALYSIS, "read MB/s per step (all processes)", s->v.t0,
                   sec > 0 ? x->step_bytes[i] / 1e6 / sec : 0);
        if (i + 1 == r->nsteps || r->steps[i + 1].v.t0 != s->v.t1)
            pf_counter(x, PF_PID_ANALYSIS, "read MB/s per step (all processes)", s->v.t1, 0);
    }
    gs_out_str(x->pf, "\n]}\n");
}

/* The page's style and script (HTML output). Kept inline: the page must
 * work with no network, no file beside it. */
static const char html_css[] =
    ":root{--fg:#1d2430;--muted:#5b6573;--line:#e3e7ed;--bg:#f6f7f9;--card:#fff}\n"
    "*{box-sizing:border-box}\n"
    "body{margin:0;background:var(--bg);color:var(--fg);font:14px/1.45 system-ui,-apple-system,\"Segoe UI\",Roboto,\"Noto Sans\",\"DejaVu Sans\",sans-serif}\n"
    "main{max-width:1180px;margin:0 auto;padding:24px 28px 40px}\n"
    "header h1{font-size:20px;margin:0 0 4px;letter-spacing:.2px}\n"
    "header h1 span{color:var(--muted);font-weight:400}\n"
    ".run{color:var(--muted);font-size:13px;word-break:break-all}\n"
    "section{background:var(--card);border:1px solid var(--line);border-radius:10px;padding:16px 20px;margin:16px 0}\n"
    "h2{font-size:15px;margin:0 0 12px}\n"
    "h3{font-size:13px;margin:14px 0 6px;font-weight:600}\n"
    ".verdict{font-size:17px;font-weight:600;border-left:6px solid #888}\n"
    ".verdict small{display:block;font-size:13px;font-weight:400;color:var(--muted);margin-top:4px}\n"
    ".v-HIGHLY_INPUT_BOUND{border-left-color:#d62839;background:#fff4f5}\n"
    ".v-MODERATELY_INPUT_BOUND{border-left-color:#e9a23b;background:#fffaf0}\n"
    ".v-NOT_INPUT_BOUND{border-left-color:#3a9d5d;background:#f3fbf6}\n"
    ".v-HOST_BOUND{border-left-color:#7b5ea7;background:#f8f5fc}\n"
    "ul.advice{list-style:none;margin:0;padding:0}\n"
    "ul.advice li{padding:8px 0;border-top:1px solid var(--line)}\n"
    "ul.advice li:first-child{border-top:0;padding-top:0}\n"
    ".setting{font-family:ui-monospace,\"DejaVu Sans Mono\",monospace;font-weight:600;background:#eef2f7;padding:1px 6px;border-radius:4px}\n"
    ".pred{margin-left:8px}\n"
    ".why{color:var(--muted);font-size:13px;margin-top:2px}\n"
    "table.share{border-collapse:collapse;width:100%}\n"
    "table.share td{padding:4px 8px;border-top:1px solid var(--line);white-space:nowrap}\n"
    "table.share td.num{text-align:right;font-variant-numeric:tabular-nums;width:90px}\n"
    "table.share td.barcell{width:45%}\n"
    ".sw{display:inline-block;width:10px;height:10px;border-radius:2px;margin-right:8px;vertical-align:-1px}\n"
    ".hbar{height:10px;border-radius:3px;min-width:1px}\n"
    ".legend{display:flex;flex-wrap:wrap;gap:6px 16px;font-size:12px;color:var(--muted);margin-top:8px}\n"
    ".legend span{white-space:nowrap}\n"
    "svg{display:block;max-width:100%;height:auto}\n"
    "svg text{font:11px system-ui,-apple-system,\"Segoe UI\",Roboto,\"DejaVu Sans\",sans-serif;fill:#5b6573}\n"
    "svg .grid{stroke:#e9edf2;stroke-width:1}\n"
    "svg .axis{stroke:#9aa5b1;stroke-width:1}\n"
    "svg .median{stroke:#1d2430;stroke-width:1;stroke-dasharray:4 3}\n"
    "svg .lane{fill:#f4f6f9}\n"
    "svg .lane.alt{fill:#fafbfc}\n"
    "svg g.bar.warmup{opacity:.35}\n"
    "svg g.bar.worst rect.mark{fill:none;stroke:#1d2430;stroke-width:1.2}\n"
    "svg g.bar:hover{opacity:.8}\n"
    ".meta{color:var(--muted);font-size:12px}\n"
    ".notes li{color:var(--muted);font-size:13px}\n"
    "footer{color:var(--muted);font-size:12px;text-align:center;margin-top:20px}\n";

static const char html_js[] =
    "(function () {\n"
    "  \"use strict\";\n"
    "  var D = JSON.parse(document.getElementById(\"gs-data\").textContent);\n"
    "  var NS = \"http://www.w3.org/2000/svg\";\n"
    "  function el(tag, attrs, parent) {\n"
    "    var e = document.createElementNS(NS, tag);\n"
    "    for (var k in attrs) e.setAttribute(k, attrs[k]);\n"
    "    if (parent) parent.appendChild(e);\n"
    "    return e;\n"
    "  }\n"
    "  function fmt(ms) {\n"
    "    if (ms === 0) return \"0\";\n"
    "    return ms >= 100 ? ms.toFixed(0) : ms >= 10 ? ms.toFixed(1) : ms.toFixed(2);\n"
    "  }\n"
    "  function nice(x) {\n"
    "    if (!(x > 0)) return 1;\n"
    "    var p = Math.pow(10, Math.floor(Math.log(x) / Math.LN10)), m = x / p;\n"
    "    return (m <= 1 ? 1 : m <= 2 ? 2 : m <= 5 ? 5 : 10) * p;\n"
    "  }\n"
    "  function width(host) {\n"
    "    var w = host.clientWidth || 1000;\n"
    "    return Math.max(600, Math.min(1120, w));\n"
    "  }\n"
    "  var C = D.classes;\n"
    "\n"
    "  function legend(host, from, to, extra) {\n"
    "    for (var k = from; k < to; k++) {\n"
    "      var s = document.createElement(\"span\");\n"
    "      s.innerHTML = '<i class=\"sw\" style=\"background:' + C[k].color + '\"></i>';\n"
    "      s.appendChild(document.createTextNode(C[k].label));\n"
    "      host.appendChild(s);\n"
    "    }\n"
    "    if (extra) {\n"
    "      var e = document.createElement(\"span\");\n"
    "      e.innerHTML = '<i class=\"sw\" style=\"background:#f4f6f9;border:1px solid #d5dbe3\"></i>';\n"
    "      e.appendChild(document.createTextNode(extra));\n"
    "      host.appendChild(e);\n"
    "    }\n"
    "  }\n"
    "\n"
    "  function bars() {\n"
    "    var host = document.getElementById(\"bars\");\n"
    "    var n = D.steps.length;\n"
    "    if (!n) return;\n"
    "    var W = width(host), H = 230, L = 56, T = 12, B = 30;\n"
    "    var svg = el(\"svg\", { width: W, height: T + H + B, viewBox: \"0 0 \" + W + \" \" + (T + H + B),\n"
    "                          \"class\": \"chart\", role: \"img\", \"aria-label\": \"per-step stacked bars\" }, host);\n"
    "    var max = 0;\n"
    "    D.steps.forEach(function (s) { if (s.d > max) max = s.d; });\n"
    "    if (!(max > 0)) max = 1;\n"
    "    var tick = nice(max / 5);\n"
    "    max = Math.ceil(max / tick) * tick;\n"
    "    for (var v = 0; v <= max + 1e-9; v += tick) {\n"
    "      var y = T + H - v / max * H;\n"
    "      el(\"line\", { x1: L, x2: W, y1: y, y2: y, \"class\": \"grid\" }, svg);\n"
    "      var t = el(\"text\", { x: L - 6, y: y + 4, \"text-anchor\": \"end\" }, svg);\n"
    "      t.textContent = fmt(v) + \" ms\";\n"
    "    }\n"
    "    var bw = (W - L) / n, gap = bw > 5 ? Math.min(2, bw * 0.15) : 0;\n"
    "    var worst = {};\n"
    "    D.windows.forEach(function (w, i) { worst[w.index] = i + 1; });\n"
    "    D.steps.forEach(function (s, i) {\n"
    "      var g = el(\"g\", { \"class\": \"bar\" + (s.w ? \" warmup\" : \"\") + (worst[i] ? \" worst\" : \"\"),\n"
    "                        \"data-step\": s.n }, svg);\n"
    "      var y = T + H, x = L + i * bw, wd = Math.max(bw - gap, 0.6);\n"
    "      var tip = \"step \" + s.n + (s.w ? \" (warm-up, left out)\" : \"\") + \": \" + fmt(s.d) + \" ms\";\n"
    "      for (var k = 0; k < 8; k++) {\n"
    "        var val = s.p[k];\n"
    "        if (!(val > 0)) continue;\n"
    "        var h = val / max * H;\n"
    "        y -= h;\n"
    "        el(\"rect\", { x: x, y: y, width: wd, height: h, fill: C[k].color }, g);\n"
    "        tip += \"\\n\" + C[k].label + \": \" + fmt(val) + \" ms\";\n"
    "      }\n"
    "      if (worst[i]) {\n"
    "        el(\"rect\", { \"class\": \"mark\", x: x - 0.5, y: y - 0.5, width: wd + 1, height: T + H - y + 1 }, g);\n"
    "        var lab = el(\"text\", { x: x + wd / 2, y: y - 4, \"text-anchor\": \"middle\" }, g);\n"
    "        lab.textContent = \"#\" + worst[i];\n"
    "      }\n"
    "      el(\"title\", {}, g).textContent = tip;\n"
    "    });\n"
    "    if (D.median_ms > 0) {\n"
    "      var my = T + H - D.median_ms / max * H;\n"
    "      el(\"line\", { x1: L, x2: W, y1: my, y2: my, \"class\": \"median\" }, svg);\n"
    "      var mt = el(\"text\", { x: W - 4, y: my - 4, \"text-anchor\": \"end\" }, svg);\n"
    "      mt.textContent = \"median \" + fmt(D.median_ms) + \" ms\";\n"
    "    }\n"
    "    el(\"line\", { x1: L, x2: W, y1: T + H, y2: T + H, \"class\": \"axis\" }, svg);\n"
    "    var every = Math.max(1, Math.ceil(n / 12));\n"
    "    for (var i = 0; i < n; i += every) {\n"
    "      var tx = el(\"text\", { x: L + (i + 0.5) * bw, y: T + H + 16, \"text-anchor\": \"middle\" }, svg);\n"
    "      tx.textContent = D.steps[i].n;\n"
    "    }\n"
    "    var xl = el(\"text\", { x: L, y: T + H + B - 1 }, svg);\n"
    "    xl.textContent = \"step\";\n"
    "    legend(document.getElementById(\"bars-legend\"), 0, 8);\n"
    "  }\n"
    "\n"
    "  function timelines() {\n"
    "    var host = document.getElementById(\"timelines\");\n"
    "    if (!D.windows.length) {\n"
    "      host.textContent = \"No measured step.\";\n"
    "      return;\n"
    "    }\n"
    "    D.windows.forEach(function (w, wi) {\n"
    "      var box = document.createElement(\"div\");\n"
    "      box.className = \"tl\";\n"
    "      host.appendChild(box);\n"
    "      var h = document.createElement(\"h3\");\n"
    "      var parts = [];\n"
    "      for (var k = 0; k < 8; k++)\n"
    "        if (w.p[k] >= 0.005 * w.d) parts.push(C[k].label + \" \" + fmt(w.p[k]) + \" ms\");\n"
    "      h.textContent = \"#\" + (wi + 1) + \" slowest: step \" + w.n + \", \" + fmt(w.d) + \" ms\";\n"
    "      box.appendChild(h);\n"
    "      var m = document.createElement(\"div\");\n"
    "      m.className = \"meta\";\n"
    "      m.textContent = parts.join(\" \\u00b7 \");\n"
    "      box.appendChild(m);\n"
    "      var used = {};\n"
    "      w.items.forEach(function (it) { used[it[0]] = 1; });\n"
    "      var rows = [];\n"
    "      D.rows.forEach(function (r, i) { if (used[i]) rows.push(i); });\n"
    "      rows.sort(function (a, b) {\n"
    "        return D.rows[a].type - D.rows[b].type || (D.rows[a].name < D.rows[b].name ? -1 : 1);\n"
    "      });\n"
    "      var pos = {};\n"
    "      rows.forEach(function (r, i) { pos[r] = i; });\n"
    "      var W = width(host), LW = 170, RH = 22, T = 4, B = 22;\n"
    "      var H = T + rows.length * RH + B;\n"
    "      var svg = el(\"svg\", { width: W, height: H, viewBox: \"0 0 \" + W + \" \" + H, \"class\": \"timeline\",\n"
    "                            role: \"img\", \"aria-label\": \"timeline of step \" + w.n }, box);\n"
    "      var PW = W - LW - 8;\n"
    "      rows.forEach(function (r, i) {\n"
    "        var y = T + i * RH;\n"
    "        el(\"rect\", { x: LW, y: y + 2, width: PW, height: RH - 4, \"class\": \"lane\" + (i % 2 ? \" alt\" : \"\") }, svg);\n"
    "        var t = el(\"text\", { x: LW - 8, y: y + RH / 2 + 4, \"text-anchor\": \"end\" }, svg);\n"
    "        t.textContent = D.rows[r].name;\n"
    "      });\n"
    "      var g = el(\"g\", { \"class\": \"items\" }, svg);\n"
    "      w.items.forEach(function (it) {\n"
    "        var y = T + pos[it[0]] * RH + 3;\n"
    "        var x0 = LW + it[2] / w.d * PW, x1 = LW + it[3] / w.d * PW;\n"
    "        var r = el(\"rect\", { x: x0, y: y, width: Math.max(x1 - x0, 0.7), height: RH - 6,\n"
    "                             fill: C[it[1]].color }, g);\n"
    "        if (x1 - x0 > 4)\n"
    "          el(\"title\", {}, r).textContent = C[it[1]].label + \": \" + fmt(it[3] - it[2]) + \" ms at +\" + fmt(it[2]) + \" ms\";\n"
    "      });\n"
    "      var tick = nice(w.d / 8), ay = T + rows.length * RH;\n"
    "      el(\"line\", { x1: LW, x2: LW + PW, y1: ay + 1, y2: ay + 1, \"class\": \"axis\" }, svg);\n"
    "      for (var v = 0; v <= w.d + 1e-9; v += tick) {\n"
    "        var x = LW + v / w.d * PW;\n"
    "        el(\"line\", { x1: x, x2: x, y1: ay + 1, y2: ay + 5, \"class\": \"axis\" }, svg);\n"
    "        var tt = el(\"text\", { x: x, y: ay + 17,\n"
    "                              \"text-anchor\": x > LW + PW - 30 ? \"end\" : \"middle\" }, svg);\n"
    "        tt.textContent = \"+\" + fmt(v) + \" ms\";\n"
    "      }\n"
    "      if (w.truncated) {\n"
    "        var n = document.createElement(\"div\");\n"
    "        n.className = \"meta\";\n"
    "        n.textContent = \"(too much activity to draw all of it: the rest of this step is not shown)\";\n"
    "        box.appendChild(n);\n"
    "      }\n"
    "    });\n"
    "    legend(document.getElementById(\"timeline-legend\"), 0, C.length, \"CPU work or untraced\");\n"
    "  }\n"
    "\n"
    "  bars();\n"
    "  timelines();\n"
    "  document.body.setAttribute(\"data-rendered\", \"1\");\n"
    "})();\n";

/* ---- HTML ------------------------------------------------------------------------------ */

static const char *const hx_labels[HX_NCLS] = {
    "GPU compute", "GPU communication", "GPU H2D pinned", "GPU H2D pageable", "GPU other copies",
    "idle: data wait", "idle: pageable copy", "idle: host", "loader: file read",
    "loader: open/stat", "loader: pipe wait",
};
static const char *const hx_colors[HX_NCLS] = {
    "#3a9d5d", "#2a7f9e", "#5b8def", "#f08c2e", "#9aa5b1",
    "#d62839", "#f4b942", "#a78bcd", "#1f4e79", "#8ecae6", "#b7c0cc",
};

/* Text for HTML: & < > " ' as entities, the rest as is. */
static void html_text(gs_out *o, const char *s)
{
    if (!s)
        return;
    for (const char *p = s; *p; p++) {
        switch (*p) {
        case '&': gs_out_str(o, "&amp;"); break;
        case '<': gs_out_str(o, "&lt;"); break;
        case '>': gs_out_str(o, "&gt;"); break;
        case '"': gs_out_str(o, "&quot;"); break;
        case '\'': gs_out_str(o, "&#39;"); break;
        default:
            if ((unsigned char)*p < 0x20 && *p != '\t')
                gs_out_char(o, ' ');
            else
                gs_out_char(o, *p);
        }
    }
}

static void step_parts_ms(const an_step *s, double *p)
{
    const uint64_t parts[AN_NSH] = {
        s->v.busy[AN_BUSY_COMPUTE], s->v.busy[AN_BUSY_COMM], s->v.busy[AN_BUSY_H2D_PINNED],
        s->v.busy[AN_BUSY_H2D_PAGEABLE], s->v.busy[AN_BUSY_OTHER], s->v.idle_dw, s->v.idle_pg,
        s->v.idle_host};
    for (int k = 0; k < AN_NSH; k++)
        p[k] = (double)parts[k] / 1e6;
}

static void json_ms4(gs_out *o, uint64_t ns)
{
    gs_out_fixed(o, (int64_t)((ns + 50) / 100), 4); /* ms, 0.1 µs */
}

/* The page's data, as JSON. */
static void html_data(gs_out *o, const pass2 *x)
{
    const an_result *r = x->res;
    gs_out_str(o, "{\"classes\":[");
    for (int k = 0; k < HX_NCLS; k++) {
        gs_out_str(o, k ? ",{\"key\":" : "{\"key\":");
        gs_json_cstr(o, hx_cls_names[k]);
        gs_out_str(o, ",\"label\":");
        gs_json_cstr(o, r->no_gpu && k >= AN_SH_DATA_WAIT && k <= AN_SH_HOST ? hx_labels[k] + 6 : hx_labels[k]);
        gs_out_str(o, ",\"color\":");
        gs_json_cstr(o, hx_colors[k]);
        gs_out_str(o, "}");
    }
    gs_out_str(o, "],\n\"median_ms\":");
    jnum(o, r->step_ms_median);
    gs_out_str(o, ",\n\"steps\":[");
    for (size_t i = 0; i < r->nsteps; i++) {
        const an_step *s = &r->steps[i];
        double p[AN_NSH];
        step_parts_ms(s, p);
        gs_out_str(o, i ? ",\n{\"n\":" : "\n{\"n\":");
        gs_out_u64(o, s->num);
        gs_out_str(o, ",\"w\":");
        gs_out_str(o, s->warmup ? "1" : "0");
        gs_out_str(o, ",\"d\":");
        json_ms4(o, s->v.t1 - s->v.t0);
        gs_out_str(o, ",\"p\":[");
        for (int k = 0; k < AN_NSH; k++) {
            if (k)
                gs_out_char(o, ',');
            gs_out_printf(o, "%.4f", p[k]);
        }
        gs_out_str(o, "]}");
    }
    gs_out_str(o, "],\n\"rows\":[");
    for (size_t i = 0; i < x->nrows; i++) {
        gs_out_str(o, i ? ",{\"name\":" : "{\"name\":");
        gs_json_cstr(o, x->rows[i].name);
        gs_out_str(o, ",\"type\":");
        gs_out_i64(o, x->rows[i].type);
        gs_out_str(o, "}");
    }
    gs_out_str(o, "],\n\"windows\":[");
    for (size_t w = 0; w < x->nwin; w++) {
        const hx_window *v = &x->win[w];
        const an_step *s = &r->steps[v->step];
        double p[AN_NSH];
        step_parts_ms(s, p);
        gs_out_str(o, w ? ",\n{\"index\":" : "\n{\"index\":");
        gs_out_u64(o, v->step);
        gs_out_str(o, ",\"n\":");
        gs_out_u64(o, s->num);
        gs_out_str(o, ",\"d\":");
        json_ms4(o, v->t1 - v->t0);
        gs_out_str(o, ",\"truncated\":");
        gs_out_str(o, v->full ? "true" : "false");
        gs_out_str(o, ",\"p\":[");
        for (int k = 0; k < AN_NSH; k++) {
            if (k)
                gs_out_char(o, ',');
            gs_out_printf(o, "%.4f", p[k]);
        }
        gs_out_str(o, "],\"items\":[");
        for (size_t i = 0; i < v->n; i++) {
            const hx_item *it = &v->it[i];
            gs_out_str(o, i ? (i % 8 ? ",[" : ",\n[") : "[");
            gs_out_u64(o, it->row);
            gs_out_char(o, ',');
            gs_out_u64(o, it->cls);
            gs_out_char(o, ',');
            json_ms4(o, it->t0 - v->t0);
            gs_out_char(o, ',');
            json_ms4(o, it->t1 - v->t0);
            gs_out_char(o, ']');
        }
        gs_out_str(o, "]}");
    }
    gs_out_str(o, "]}");
}

static void html_advice(gs_out *o, const an_result *r)
{
    if (!r->nadvice) {
        gs_out_str(o, "<p id=\"no-advice\">No change to <span class=\"setting\">num_workers</span> or "
                      "<span class=\"setting\">pin_memory</span> would help.</p>\n");
        return;
    }
    gs_out_str(o, "<ul class=\"advice\">\n");
    for (size_t i = 0; i < r->nadvice; i++) {
        const an_advice *a = &r->advice[i];
        gs_out_str(o, "<li class=\"advice-item\"><span class=\"setting\">");
        if (a->setting == AN_ADV_NUM_WORKERS) {
            if (a->has_value)
                gs_out_printf(o, "num_workers=%ld", a->value);
            else
                gs_out_str(o, "num_workers");
        } else {
            gs_out_str(o, "pin_memory=True");
        }
        gs_out_str(o, "</span><span class=\"pred\">");
        if (!a->has_value)
            gs_out_str(o, "more workers will not help");
        else
            gs_out_printf(o, "predicted step %.1f ms (&minus;%.1f ms, &minus;%.0f%%)",
                          a->predicted_step_ms, a->predicted_saving_ms,
                          r->step_ms_median > 0 ? 100 * a->predicted_saving_ms / r->step_ms_median : 0.0);
        gs_out_str(o, "</span><div class=\"why\">");
        html_text(o, a->why);
        gs_out_str(o, "</div></li>\n");
    }
    gs_out_str(o, "</ul>\n");
}

static void write_html(gs_out *o, const pass2 *x)
{
    const an_run *run = x->run;
    const an_result *r = x->res;
    const an_proc *tr = r->trainer;
    gs_out_str(o, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
                  "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
                  "<meta name=\"generator\" content=\"gpustarve " GS_CLI_VERSION "\">\n<title>gpustarve report: ");
    html_text(o, tr->argv[0] ? tr->argv : tr->file);
    gs_out_str(o, "</title>\n<style>\n");
    gs_out_str(o, html_css);
    gs_out_str(o, "</style></head>\n<body><main>\n<header><h1>gpustarve report <span>");
    html_text(o, run->dir);
    gs_out_str(o, "</span></h1>\n<div class=\"run\">");
    html_text(o, tr->argv[0] ? tr->argv : tr->file);
    gs_out_printf(o, " &middot; trainer pid %llu &middot; %zu loader %s%s", (unsigned long long)tr->pid,
                  r->nworkers, r->nworkers && r->workers[0].p == tr ? "thread" : "worker",
                  r->nworkers == 1 ? "" : "s");
    if (tr->ndevs) {
        gs_out_str(o, " &middot; ");
        html_text(o, tr->devs[0].name);
    }
    gs_out_printf(o, " &middot; %zu steps from ", r->measured);
    html_text(o, r->source_detail);
    gs_out_printf(o, " (%zu warm-up left out), median %.1f ms, p90 %.1f ms</div></header>\n",
                  r->warmup, r->step_ms_median, r->step_ms_p90);

    gs_out_str(o, "<section id=\"verdict\" class=\"verdict v-");
    gs_out_str(o, an_verdict_label(r->verdict));
    gs_out_str(o, "\">");
    html_text(o, r->verdict_text);
    if (r->no_gpu)
        gs_out_str(o, "<small>No GPU activity seen: shares are of the training thread's time.</small>");
    gs_out_str(o, "</section>\n<section id=\"advice\"><h2>Advice</h2>\n");
    html_advice(o, r);
    gs_out_str(o, "</section>\n");

    gs_out_str(o, "<section id=\"summary\"><h2>Where the step time goes</h2>\n<table class=\"share\">"
                  "<tr><td></td><td class=\"num\"><b>median ms</b></td><td class=\"num\"><b>share</b>"
                  "</td><td></td></tr>\n");
    double maxsh = 0;
    for (int k = 0; k < AN_NSH; k++)
        if (r->share[k] > maxsh)
            maxsh = r->share[k];
    for (int k = 0; k < AN_NSH; k++) {
        if (r->no_gpu && k < AN_SH_DATA_WAIT)
            continue;
        gs_out_printf(o, "<tr><td><i class=\"sw\" style=\"background:%s\"></i>%s</td>"
                         "<td class=\"num\">%.1f</td><td class=\"num\">%.1f%%</td>"
                         "<td class=\"barcell\"><div class=\"hbar\" style=\"width:%.1f%%;background:%s\">"
                         "</div></td></tr>\n",
                      hx_colors[k], r->no_gpu ? hx_labels[k] + 6 : hx_labels[k], r->median_ms[k],
                      100 * r->share[k], maxsh > 0 ? 100 * r->share[k] / maxsh : 0.0, hx_colors[k]);
    }
    gs_out_str(o, "</table>\n");
    if (r->nworkers) {
        gs_out_printf(o, "<p class=\"meta\">loader: %zu %s, %.1f ms per batch each, %.1f MB/s together</p>\n",
                      r->nworkers, r->workers[0].p == tr ? "threads" : "workers", r->batch_ms,
                      r->worker_MBps_total);
    }
    gs_out_str(o, "</section>\n");

    gs_out_printf(o, "<section id=\"steps\"><h2>Every step (%zu, warm-up faded)</h2>\n"
                     "<div id=\"bars\"></div><div class=\"legend\" id=\"bars-legend\"></div></section>\n",
                  r->nsteps);
    gs_out_str(o, "<section id=\"worst\"><h2>The slowest steps: the training thread, the GPU streams "
                  "and the loader side by side</h2>\n"
                  "<div id=\"timelines\"></div><div class=\"legend\" id=\"timeline-legend\"></div></section>\n");
    if (r->nnotes || run->nskipped) {
        gs_out_str(o, "<section id=\"notes\"><h2>Notes</h2><ul class=\"notes\">\n");
        for (size_t i = 0; i < r->nnotes; i++) {
            gs_out_str(o, "<li>");
            html_text(o, r->notes[i]);
            gs_out_str(o, "</li>\n");
        }
        for (size_t i = 0; i < run->nskipped; i++) {
            gs_out_str(o, "<li>skipped ");
            html_text(o, run->skipped[i].file);
            gs_out_str(o, ": ");
            html_text(o, run->skipped[i].reason);
            gs_out_str(o, "</li>\n");
        }
        gs_out_str(o, "</ul></section>\n");
    }
    gs_out_str(o, "<footer>gpustarve " GS_CLI_VERSION " &middot; one self-contained page, nothing "
                  "loaded from the network &middot; rules: docs/report-schema.md</footer>\n</main>\n");

    /* the data, with '<' escaped so that nothing in it can close the script */
    gs_out_str(o, "<script type=\"application/json\" id=\"gs-data\">");
    char *buf = NULL;
    size_t len = 0;
    FILE *mf = open_memstream(&buf, &len);
    gs_out *mo = mf ? malloc(sizeof *mo) : NULL;
    if (mo) {
        gs_out_init(mo, mf);
        html_data(mo, x);
        gs_out_flush(mo);
    }
    if (mf)
        fclose(mf);
    free(mo);
    for (size_t i = 0; buf && i < len;) {
        size_t j = i;
        while (j < len && buf[j] != '<')
            j++;
        gs_out_mem(o, buf + i, j - i);
        if (j < len) {
            gs_out_str(o, "\\u003c");
            j++;
        }
        i = j;
    }
    free(buf);
    gs_out_str(o, "</script>\n<script>\n");
    gs_out_str(o, html_js);
    gs_out_str(o, "</script>\n</body></html>\n");
}

/* ---- running the second pass ---- */

static int cmp_slowest(const void *a, const void *b, void *ctx)
{
    const an_step *s = ctx;
    const size_t i = *(const size_t *)a, j = *(const size_t *)b;
    const uint64_t di = s[i].v.t1 - s[i].v.t0, dj = s[j].v.t1 - s[j].v.t0;
    return di > dj ? -1 : di < dj ? 1 : (i > j) - (i < j);
}

static FILE *open_out(const char *path, const char *what)
{
    FILE *f = fopen(path, "w");
    if (!f)
        gs_cli_error("report: %s %s: %s", what, path, strerror(errno));
    return f;
}

static int close_out(FILE *f, gs_out *o, const char *path, const char *what)
{
    gs_out_flush(o);
    int bad = ferror(f);
    if (fclose(f) != 0)
        bad = 1;
    if (bad) {
        gs_cli_error("report: writing %s %s failed: %s", what, path, strerror(errno));
        return -1;
    }
    gs_cli_msg(2, "report: wrote %s %s", what, path);
    return 0;
}

/* Read the run again for --perfetto and/or --html. Returns 0 or -1 (a
 * message was printed). */
static int second_pass(const char *dir, const an_opts *o1, const an_run *run, const an_result *res,
                       const char *perfetto, const char *html)
{
    pass2 *x = calloc(1, sizeof *x);
    if (!x) {
        gs_cli_error("out of memory");
        return -1;
    }
    int rc = 0;
    x->run = run;
    x->res = res;
    x->base = UINT64_MAX;
    for (size_t i = 0; i < run->nprocs; i++)
        if (run->procs[i].first_ts && run->procs[i].first_ts < x->base)
            x->base = run->procs[i].first_ts;
    if (x->base == UINT64_MAX)
        x->base = 0;
    x->step_bytes = calloc(res->nsteps ? res->nsteps : 1, sizeof *x->step_bytes);
    FILE *pff = NULL, *hf = NULL;
    gs_out *pfo = NULL;
    if (perfetto) {
        pff = open_out(perfetto, "--perfetto");
        pfo = pff ? malloc(sizeof *pfo) : NULL;
        if (!pfo) {
            if (pff)
                fclose(pff);
            free(x->step_bytes);
            free(x);
            return -1;
        }
        gs_out_init(pfo, pff);
        x->pf = pfo;
        pf_header(x);
    }
    if (html) {
        x->html = 1;
        size_t *idx = malloc((res->nsteps ? res->nsteps : 1) * sizeof *idx);
        size_t m = 0;
        for (size_t i = 0; idx && i < res->nsteps; i++)
            if (!res->steps[i].warmup)
                idx[m++] = i;
        if (idx)
            qsort_r(idx, m, sizeof *idx, cmp_slowest, res->steps);
        for (size_t i = 0; i < m && x->nwin < HX_WINDOWS; i++) {
            hx_window *w = &x->win[x->nwin++];
            w->step = idx[i];
            w->t0 = res->steps[idx[i]].v.t0;
            w->t1 = res->steps[idx[i]].v.t1;
            w->tol = (w->t1 - w->t0) / HX_MERGE;
        }
        free(idx);
    }
    an_hooks hk = {0};
    hk.ctx = x;
    hk.on_file = p2_on_file;
    hk.on_event = p2_on_event;
    hk.on_file_end = p2_on_file_end;
    if (res->thread) {
        hk.on_piece = p2_on_piece;
        hk.piece_pid = res->trainer->pid;
        hk.piece_exec_seq = res->trainer->exec_seq;
        hk.piece_tid = res->thread->tid;
    }
    an_opts o2 = *o1; /* the same compiled patterns; freed once, by the caller */
    o2.hooks = &hk;
    o2.progress = NULL;
    an_run run2;
    char err[512];
    if (an_run_load(&run2, dir, &o2, err, sizeof err) < 0) {
        gs_cli_error("report: second pass: %s", err);
        rc = -1;
    }
    an_run_free(&run2);
    if (pfo) {
        pf_footer(x);
        if (close_out(pff, pfo, perfetto, "--perfetto") < 0)
            rc = -1;
        free(pfo);
    }
    if (html && rc == 0) {
        hf = open_out(html, "--html");
        gs_out *ho = hf ? malloc(sizeof *ho) : NULL;
        if (!ho) {
            if (hf)
                fclose(hf);
            rc = -1;
        } else {
            gs_out_init(ho, hf);
            write_html(ho, x);
            if (close_out(hf, ho, html, "--html") < 0)
                rc = -1;
            free(ho);
        }
    }
    for (size_t w = 0; w < x->nwin; w++) {
        free(x->win[w].it);
        free(x->win[w].last);
    }
    free(x->rows);
    free(x->th);
    free(x->st);
    free(x->rg);
    free(x->step_bytes);
    free(x);
    return rc;
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
        {"perfetto", required_argument, NULL, 'T'},
        {"html", required_argument, NULL, 'H'},
        {"quiet", no_argument, NULL, 'q'},
        {"verbose", no_argument, NULL, 'v'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    static const char optstring[] = "qvh";
    int json = 0, per_step = 0, opt;
    const char *step_re = NULL, *fetch_re = NULL, *probe = NULL, *perfetto = NULL, *html = NULL;
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
        case 'T': perfetto = optarg; break;
        case 'H': html = optarg; break;
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
        if (rc == GS_EXIT_OK && (perfetto || html) &&
            second_pass(dir, &o, &run, &res, perfetto, html) < 0)
            rc = GS_EXIT_FAIL;
    }
    an_result_free(&res);
    an_run_free(&run);
    an_opts_free(&o);
    return rc;
}
