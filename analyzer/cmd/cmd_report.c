/* cmd_report.c — `gpustarve report`: per training step, how long the GPU
 * computed, copied and waited, and why; a verdict and advice. Terminal text
 * (default) or JSON (docs/report-schema.md).
 *
 * Responsible for: options, finding the run directory, reading a probe
 * file, progress on stderr, and handing the an_result that an_load.c /
 * an_analyze.c produce to the writers: report_text.c, report_json.c and,
 * for --perfetto/--html, the second pass (report_pass2.c, report_html.c).
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

#include "model/an_callsites.h"
#include "model/an_model.h"
#include "model/an_ranks.h"
#include "cmd/cli_util.h"
#include "gs_format.h"
#include "gs_trace.h"
#include "report/report_json.h"
#include "report/report_pass2.h"
#include "report/report_style.h"
#include "report/report_text.h"

static const char usage_text[] =
    "usage: gpustarve report [options] [DIR...]\n"
    "\n"
    "Say, per training step, how long the GPU computed, copied and waited, and\n"
    "why: waiting for the next batch, behind a pageable host-to-device copy, or\n"
    "on the host. Then a verdict (input-bound or not) and advice (num_workers,\n"
    "pin_memory) with the predicted step time. DIR is a run directory written by\n"
    "'gpustarve run' (default: the newest gpustarve-* directory here); several\n"
    "are read as one job (its hosts' directories), each rank reported.\n"
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
    "  --cores N           CPUs the traced process may use (default: what its trace\n"
    "                      recorded: affinity and cgroup quota; for an older trace,\n"
    "                      the cores free for loader workers, online CPUs - 1)\n"
    "  --price AMOUNT      the price of one GPU for one hour (any currency): the cost\n"
    "                      of 1,000 steps, and what of it paid for GPUs waiting\n"
    "                      for data\n"
    "  --probe FILE        ceilings measured by 'gpustarve probe' (JSON: read_MBps,\n"
    "                      h2d_pinned_GBps, h2d_pageable_GBps)\n"
    "  --perfetto FILE     also write a trace for ui.perfetto.dev (Chrome JSON):\n"
    "                      every thread's I/O, every GPU stream, the steps and\n"
    "                      the GPU's idle pieces by cause, counters\n"
    "  --html FILE         also write one self-contained page: verdict, advice,\n"
    "                      per-step bars, timelines of the slowest steps\n"
    "  --symbol-path DIR   look for the traced binaries (by build id) under DIR\n"
    "                      too, to name the call sites of a run traced with\n"
    "                      --stacks on another machine (repeatable)\n"
    "  --no-lines          call sites without file:line (addr2line is not run)\n"
    "  --threads N         read the trace files on N threads, one file per thread\n"
    "                      at a time (default: the CPUs this process may run on,\n"
    "                      at most 16); the report is the same for any N\n"
    "  --job N             the traces are of several jobs (another world size, or\n"
    "                      not at the same time: the report lists them and stops):\n"
    "                      report the N-th of that list\n"
    "  -q, --quiet         fewer messages on stderr\n"
    "  -v, --verbose       more messages on stderr\n"
    "  -h, --help          show this help\n"
    "\n"
    "Steps come from step/fetch markers, else NVTX ranges, else they are inferred\n"
    "from the periodic arrival of batches (labelled inferred). A run traced with\n"
    "'gpustarve run --stacks' also gets, per finding (small reads, metadata\n"
    "calls, pageable copies, file mmaps), the call sites that cost most.\n"
    "\n"
    "A run still in progress (its processes still running) is labelled IN\n"
    "PROGRESS; a directory holding several separate runs is labelled MIXED and\n"
    "the report is of the trainer's run. A verdict whose share moves across a\n"
    "band edge from step to step says 'borderline'.\n"
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

/* ---- the command --------------------------------------------------------------------------- */

/* ---- call sites: fed by the analysis pass ------------------------------------------ */

typedef struct cs_pass {
    an_cs *cs;
    struct gs_reader *r; /* the file being read */
} cs_pass;

static void cs_on_file(void *ctx, const an_proc *p, struct gs_reader *r)
{
    cs_pass *c = ctx;
    c->r = r;
    an_cs_proc_begin(c->cs, p->path, gs_reader_info(r));
}

static void cs_on_event(void *ctx, const an_proc *p, struct gs_reader *r, const gs_event *e)
{
    (void)p;
    an_cs_event(((cs_pass *)ctx)->cs, r, e);
}

static void cs_on_file_end(void *ctx, const an_proc *p)
{
    cs_pass *c = ctx;
    (void)p;
    if (c->r)
        an_cs_proc_end(c->cs, c->r); /* the reader is still open: it holds the stacks */
    c->r = NULL;
}

/* files read on other threads: each one's call sites go to a shard of the
 * run's, merged back in file order */
static void *cs_file_new(void *ctx)
{
    cs_pass *c = malloc(sizeof *c);
    if (!c)
        return NULL;
    c->cs = an_cs_shard(((cs_pass *)ctx)->cs);
    c->r = NULL;
    if (!c->cs) {
        free(c);
        return NULL;
    }
    return c;
}

static void cs_file_merge(void *ctx, void *fctx)
{
    cs_pass *c = fctx;
    an_cs_merge(((cs_pass *)ctx)->cs, c->cs);
    an_cs_free(c->cs);
    free(c);
}

/* What the command line asks for. */
typedef struct rp_args {
    int json, per_step;
    const char *step_re, *fetch_re, *probe, *perfetto, *html;
    long skip, cores, threads, job;
    double price; /* per GPU-hour, 0: not given */
    an_cs_opts cso;
    const char *sympaths[64]; /* cso's symbol paths */
    /* the run directories: the arguments, or the newest gpustarve-* here */
    const char *dir; /* the first */
    char *const *dirs;
    size_t ndirs;
    char dirbuf[512];
    char *one[1];
} rp_args;

#define RP_GO_ON (-1) /* no exit status yet, go on */

/* The run directories: those given, or the newest gpustarve-* here; each
 * must be a directory, none the same as another. Returns RP_GO_ON or the
 * exit status. */
static int find_dirs(int argc, char **argv, rp_args *a)
{
    a->dirs = a->one;
    a->ndirs = 1;
    if (optind < argc) {
        a->dir = argv[optind];
        a->dirs = argv + optind;
        a->ndirs = (size_t)(argc - optind);
    } else {
        if (newest_run(a->dirbuf, sizeof a->dirbuf) < 0) {
            gs_cli_error("report: no run directory given and no gpustarve-* directory here");
            return GS_EXIT_USAGE;
        }
        a->dir = a->dirbuf;
        gs_cli_msg(1, "report: reading %s", a->dir);
    }
    a->one[0] = (char *)a->dir;
    for (size_t d = 0; d < a->ndirs; d++) {
        struct stat st;
        if (stat(a->dirs[d], &st) != 0) {
            gs_cli_error("report: %s: %s", a->dirs[d], strerror(errno));
            return GS_EXIT_USAGE;
        }
        if (!S_ISDIR(st.st_mode)) {
            gs_cli_error("report: %s: not a directory (give the run directory)", a->dirs[d]);
            return GS_EXIT_USAGE;
        }
        for (size_t e = 0; e < d; e++) {
            struct stat se;
            if (stat(a->dirs[e], &se) == 0 && se.st_dev == st.st_dev && se.st_ino == st.st_ino) {
                gs_cli_error("report: %s and %s are the same directory (its processes would "
                             "count twice)", a->dirs[e], a->dirs[d]);
                return GS_EXIT_USAGE;
            }
        }
    }
    return RP_GO_ON;
}

/* The options and the run directories into a (which must stay where it
 * is: a->cso points into it). Returns RP_GO_ON or the exit status. */
static int parse_args(int argc, char **argv, rp_args *a)
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
        {"symbol-path", required_argument, NULL, 'Y'},
        {"no-lines", no_argument, NULL, 'L'},
        {"threads", required_argument, NULL, 'J'},
        {"price", required_argument, NULL, 'M'},
        {"job", required_argument, NULL, 'B'},
        {NULL, 0, NULL, 0},
    };
    static const char optstring[] = "qvh";
    memset(a, 0, sizeof *a);
    a->skip = -1;
    a->cso.symbol_paths = a->sympaths;
    int opt;
    optind = 0;
    opterr = 0;
    while ((opt = getopt_long(argc, argv, optstring, opts, NULL)) != -1) {
        switch (opt) {
        case 'j': a->json = 1; break;
        case 'P': a->per_step = 1; break;
        case 'S': a->step_re = optarg; break;
        case 'F': a->fetch_re = optarg; break;
        case 'k':
            if (gs_cli_long(optarg, 0, 1000000000, &a->skip) < 0)
                return gs_cli_usage_error("report", "--skip needs a number >= 0, not '%s'", optarg);
            break;
        case 'B':
            if (gs_cli_long(optarg, 1, 1000000, &a->job) < 0)
                return gs_cli_usage_error("report", "--job needs a number >= 1, not '%s'", optarg);
            break;
        case 'c':
            if (gs_cli_long(optarg, 1, 100000, &a->cores) < 0)
                return gs_cli_usage_error("report", "--cores needs a number >= 1, not '%s'", optarg);
            break;
        case 'p': a->probe = optarg; break;
        case 'T': a->perfetto = optarg; break;
        case 'H': a->html = optarg; break;
        case 'Y':
            if (a->cso.nsymbol_paths >= sizeof a->sympaths / sizeof a->sympaths[0])
                return gs_cli_usage_error("report", "too many --symbol-path options");
            a->sympaths[a->cso.nsymbol_paths++] = optarg;
            break;
        case 'L': a->cso.no_lines = 1; break;
        case 'J':
            if (gs_cli_long(optarg, 1, 1024, &a->threads) < 0)
                return gs_cli_usage_error("report", "--threads needs a number from 1 to 1024, "
                                                    "not '%s'", optarg);
            break;
        case 'M':
            if (gs_cli_double(optarg, 1e-9, 1e9, &a->price) < 0)
                return gs_cli_usage_error("report", "--price needs an amount > 0, not '%s'", optarg);
            break;
        case 'q': gs_verbosity--; break;
        case 'v': gs_verbosity++; break;
        case 'h': fputs(usage_text, stdout); return GS_EXIT_OK;
        default: return gs_cli_bad_option("report", argc, argv, optstring, opts);
        }
    }
    return find_dirs(argc, argv, a);
}

/* The analysis options of a, with the progress line pg on stderr.
 * Returns RP_GO_ON (o to be freed) or the exit status. */
static int make_opts(const rp_args *a, an_opts *o, prog *pg)
{
    const char *bad = NULL;
    if (an_opts_init(o, a->step_re, a->fetch_re, &bad) < 0)
        return gs_cli_usage_error("report", "bad regular expression '%s'", bad);
    o->skip = (int)a->skip;
    o->cores = (int)a->cores;
    o->threads = (int)a->threads;
    o->job = (int)a->job;
    if (a->probe && read_probe(a->probe, o) < 0) {
        an_opts_free(o);
        return GS_EXIT_USAGE;
    }
    memset(pg, 0, sizeof *pg);
    pg->on = gs_verbosity >= 1 && isatty(2);
    clock_gettime(CLOCK_MONOTONIC, &pg->start);
    o->progress = on_progress;
    o->progress_ctx = pg;
    return RP_GO_ON;
}

/* The call sites ride along the analysis pass (an_hooks). */
static void hook_call_sites(cs_pass *csp, an_hooks *hk, an_opts *o)
{
    memset(hk, 0, sizeof *hk);
    if (!csp->cs)
        return;
    hk->ctx = csp;
    hk->on_file = cs_on_file;
    hk->on_event = cs_on_event;
    hk->event_kinds = an_cs_kinds(&hk->small_bytes);
    hk->on_file_end = cs_on_file_end;
    hk->file_new = cs_file_new;
    hk->file_merge = cs_file_merge;
    o->hooks = hk;
}

/* Read the run directories into run (to be freed whatever this returns),
 * saying what was skipped. Returns RP_GO_ON, or the exit status when
 * nothing could be read. */
static int load_run(const rp_args *a, an_opts *o, const prog *pg, an_run *run)
{
    char err[512];
    int loaded = an_run_load_dirs(run, a->dirs, a->ndirs, o, err, sizeof err);
    o->hooks = NULL; /* the second pass brings its own */
    if (loaded < 0) {
        if (pg->shown)
            fputs("\n", stderr);
        gs_cli_error("report: %s", err);
        return GS_EXIT_USAGE;
    }
    if (pg->shown)
        fputs("\r\033[K", stderr);
    gs_cli_msg(2, "report: %llu events in %zu files, %.2f s",
               (unsigned long long)run->events, run->nfiles, since(&pg->start));
    for (size_t i = 0; i < run->nskipped; i++)
        gs_cli_msg(1, "%s: %s%s", run->skipped[i].file, run->skipped[i].reason,
                   run->skipped[i].whole ? "; file skipped" : "; the readable part is used");
    if (!run->nprocs) {
        gs_cli_error("report: %s: no readable trace file (%zu skipped)", a->dir, run->nskipped);
        return GS_EXIT_USAGE;
    }
    return RP_GO_ON;
}

/* The report on stdout: JSON, or text (coloured on a terminal without
 * NO_COLOR). Returns the exit status. */
static int write_report(const rp_args *a, const an_run *run, const an_result *res)
{
    gs_out *out = malloc(sizeof *out);
    if (!out) {
        gs_cli_error("out of memory");
        return GS_EXIT_FAIL;
    }
    gs_out_init(out, stdout);
    if (a->json) {
        rep_write_json(out, run, res, a->per_step);
    } else {
        const int color = isatty(1) && !getenv("NO_COLOR");
        const style on = {"\033[1m", "\033[31m", "\033[33m", "\033[32m", "\033[2m", "\033[0m"};
        const style off = {"", "", "", "", "", ""};
        rep_write_text(out, run, res, a->per_step, color ? &on : &off);
    }
    gs_out_flush(out);
    free(out);
    return GS_EXIT_OK;
}

int gs_cmd_report(int argc, char **argv)
{
    rp_args a;
    int rc = parse_args(argc, argv, &a);
    if (rc != RP_GO_ON)
        return rc;
    an_opts o;
    prog pg;
    if ((rc = make_opts(&a, &o, &pg)) != RP_GO_ON)
        return rc;
    cs_pass csp = {an_cs_new(&a.cso), NULL};
    an_hooks hk;
    hook_call_sites(&csp, &hk, &o);
    an_run run;
    if ((rc = load_run(&a, &o, &pg, &run)) != RP_GO_ON) {
        an_cs_free(csp.cs);
        an_run_free(&run);
        an_opts_free(&o);
        return rc;
    }
    an_job job;
    an_result dummy = {0}, *res = &dummy;
    char err[512];
    if (an_job_analyze(&run, &o, &job, err, sizeof err) < 0) {
        gs_cli_error("report: %s", err);
        rc = GS_EXIT_USAGE;
    } else {
        res = job.top; /* the rank that limits the job, or the whole run */
        res->price_per_gpu_hour = a.price;
        if (csp.cs) {
            an_cs_finish(csp.cs); /* symbolises the top call sites only */
            res->callsites = csp.cs;
        }
        rc = write_report(&a, &run, res);
        if (rc == GS_EXIT_OK && (a.perfetto || a.html) &&
            rep_second_pass(a.dir, &o, &run, res, &job, a.perfetto, a.html) < 0)
            rc = GS_EXIT_FAIL;
    }
    res->callsites = NULL;
    an_job_free(&job);
    an_cs_free(csp.cs);
    an_run_free(&run);
    an_opts_free(&o);
    return rc;
}
