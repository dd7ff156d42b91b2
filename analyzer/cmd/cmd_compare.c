/* cmd_compare.c — `gpustarve compare A... -- B...`: runs of a setting (A,
 * before a change) against runs of another (B, after): step time over the
 * runs with its interval, the change proven or not against a minimum
 * effect, each share and DataLoader setting side by side, the other
 * processes' measured load in each run, whether A's predicted step time for
 * the change B made held, and a CI gate (--fail-if-slower). Text (default)
 * or JSON (schema gpustarve.compare/3, docs/report-outputs.md).
 *
 * Responsible for: options, the runs of each side, running the report's own
 * analysis (an_load.c, an_analyze.c) on each, the numbers over a side's
 * runs, the exit status. The judgement is compare_judge.c's, the outputs
 * compare_out.c's.
 *
 * Must never: start a subprocess, or treat the steps of one run as samples
 * of its setting (a run is the sample: its steps share its machine).
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cmd/cli_util.h"
#include "cmd/compare.h"
#include "model/an_ranks.h"
#include "report/report_json_parts.h"

static const char usage_text[] =
    "usage: gpustarve compare [options] A B\n"
    "       gpustarve compare [options] A1 A2 A3... -- B1 B2 B3...\n"
    "\n"
    "Judge a change by runs of each side: A before it, B after (run directories\n"
    "written by 'gpustarve run'). Each run's mean step, the time per step, is one\n"
    "sample (--by median: its median step); the change is B's step time over A's\n"
    "with a 95% interval over the runs, called HELPED or HURT only when the whole\n"
    "interval clears the minimum effect, else 'no proven change'. One run a side\n"
    "cannot separate a change from the machine: compare says so, beside the other\n"
    "processes' load measured in each run. Also side by side: where the step\n"
    "goes, bytes read, pageable copies, verdicts and DataLoader settings (of each\n"
    "side's middle run), and whether A's predicted step time for the change B\n"
    "made held.\n"
    "\n"
    "options:\n"
    "  --json              JSON (schema gpustarve.compare/3, docs/report-outputs.md)\n"
    "  --by mean|median    each run's sample: its mean step, the time per step\n"
    "                      (default: what the report's predictions are of, and\n"
    "                      what a loader that stalls every few steps costs), or\n"
    "                      its median step (blind to such stalls)\n"
    "  --min-effect PCT    the smallest change worth calling (default 2)\n"
    "  --fail-if-slower PCT  CI gate: exit 1 when the interval shows B slower than\n"
    "                      A by more than PCT %, 0 otherwise; one line says why\n"
    "  --tolerance PCT     a prediction holds within PCT % of the predicted step\n"
    "                      time (default 10)\n"
    "  --step-range REGEX  as in 'gpustarve report', for every run\n"
    "  --fetch-range REGEX as in 'gpustarve report', for every run\n"
    "  --skip N            warm-up steps to leave out of each (default: automatic)\n"
    "  --cores N           CPUs for A's num_workers advice, as in 'gpustarve report'\n"
    "  -q, --quiet         fewer messages on stderr\n"
    "  -v, --verbose       more messages on stderr\n"
    "  -h, --help          show this help\n"
    "\n"
    "Run the sides interleaved (A B B A A B ...) so that a change of the machine's\n"
    "load falls on both, each run a few seconds long; 3 runs a side usually find\n"
    "a 30% change (docs/report-outputs.md gives the counts measured).\n"
    "\n"
    "Exit status: 0 compared (and, with --fail-if-slower, not proven slower); 1 the\n"
    "gate failed: B proven slower beyond PCT; 2 bad usage, or a run that\n"
    "'gpustarve report' could not analyse.\n";

/* RATIONALE: 95% is the usual confidence; a change under 2% of the step is
 * rarely worth acting on and is within what a busy machine moves a run. */
#define CONF 0.95
#define MIN_EFFECT 0.02

static int load_run(cmp_run *s, const an_opts *o)
{
    struct stat st;
    char err[512];
    if (stat(s->dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
        gs_cli_error("compare: %s: %s", s->dir, stat(s->dir, &st) != 0 ? strerror(errno) : "not a directory");
        return -1;
    }
    s->loaded = 1;
    if (an_run_load(&s->run, s->dir, o, err, sizeof err) < 0) {
        gs_cli_error("compare: %s", err);
        return -1;
    }
    if (!s->run.nprocs) {
        gs_cli_error("compare: %s: no readable trace file (%zu skipped)", s->dir, s->run.nskipped);
        return -1;
    }
    s->analysed = 1;
    if (an_job_analyze(&s->run, o, &s->job, err, sizeof err) < 0) {
        gs_cli_error("compare: %s: %s", s->dir, err);
        return -1;
    }
    s->res = s->job.top;
    const an_result *r = s->res;
    s->dur = malloc((r->measured ? r->measured : 1) * sizeof *s->dur);
    if (!s->dur) {
        gs_cli_error("out of memory");
        return -1;
    }
    uint64_t pg = 0;
    for (size_t i = 0; i < r->nsteps; i++) {
        const an_step *st2 = &r->steps[i];
        if (st2->warmup)
            continue;
        s->dur[s->n++] = (double)(st2->v.t1 - st2->v.t0) / 1e6;
        pg += st2->v.busy[AN_BUSY_H2D_PAGEABLE] + st2->v.idle_pg;
    }
    s->pageable_ms = s->n ? (double)pg / 1e6 / (double)s->n : 0;
    const an_proc *tr = r->trainer;
    s->pageable_bytes = tr->h2d_pageable_bytes ? tr->h2d_pageable_bytes : tr->host_pageable_bytes;
    return 0;
}

static void free_run(cmp_run *s)
{
    if (s->analysed)
        an_job_free(&s->job);
    if (s->loaded)
        an_run_free(&s->run);
    free(s->dur);
}

static int cfg_same(const an_proc *a, const an_proc *b)
{
    for (size_t i = 0; i < REP_NCFG; i++) {
        const char *x = an_cfg_value(a, rep_cfg_keys[i]), *y = an_cfg_value(b, rep_cfg_keys[i]);
        if ((x || y) && !(x && y && !strcmp(x, y)))
            return 0;
    }
    return 1;
}

/* The numbers over a side's runs: each run's median and mean step, the
 * middle run and the interval (of the statistic judged), the other
 * processes' load. */
static void summarize_side(cmp_side *s, const cmp_opts *co)
{
    size_t order[CMP_MAX_RUNS];
    s->other_load = -1;
    s->cpus = 0;
    double load = 0;
    for (size_t i = 0; i < s->n; i++) {
        const an_result *r = s->runs[i].res;
        s->medians[i] = r->step_ms_median;
        s->means[i] = r->step_ms_mean;
        order[i] = i;
        if (r->host_time.measured) {
            load += r->host_time.other_cores;
            if (!s->nload)
                s->cpus = r->host_time.cpus;
            s->nload++;
        }
    }
    if (s->nload)
        s->other_load = load / (double)s->nload;
    const double *x = cmp_samples(s, co);
    /* insertion sort of the run indices by their step: the lower middle */
    for (size_t i = 1; i < s->n; i++)
        for (size_t j = i; j > 0 && x[order[j]] < x[order[j - 1]]; j--) {
            const size_t t = order[j];
            order[j] = order[j - 1];
            order[j - 1] = t;
        }
    s->mid = order[(s->n - 1) / 2];
    if (an_log_ci_of(x, s->n, CONF, &s->step) != 0) {
        /* a run whose step is 0 ms (a damaged trace): no geometric mean */
        memset(&s->step, 0, sizeof s->step);
        s->step.n = s->n;
        s->step.center = x[s->mid];
    }
    s->cfg_differs = 0;
    for (size_t i = 0; i < s->n; i++)
        s->cfg_differs |= !cfg_same(s->runs[i].res->trainer, cmp_mid(s)->res->trainer);
}

/* Percentage option: 0 <= v < 100 (min-effect, fail-if-slower) or 0 < v <= 1000. */
static int parse_pct(const char *text, int lo_excl_zero, double max, double *out)
{
    char *end;
    errno = 0;
    const double v = strtod(text, &end);
    if (end != text && *end == '%')
        end++;
    if (end == text || *end || errno || !(v >= 0) || v > max || (lo_excl_zero && v == 0))
        return -1;
    *out = v / 100;
    return 0;
}

typedef struct cmp_args {
    cmp_opts o;
    const char *step_re, *fetch_re;
    long skip, cores;
    char **a, **b; /* run directories */
    size_t na, nb;
} cmp_args;

/* The options before '--' (anywhere among A's runs), the runs. Returns -1
 * to go on, or the exit status. */
static int parse_args(int argc, char **argv, cmp_args *g)
{
    static const struct option opts[] = {
        {"json", no_argument, NULL, 'j'},
        {"tolerance", required_argument, NULL, 't'},
        {"min-effect", required_argument, NULL, 'm'},
        {"fail-if-slower", required_argument, NULL, 'g'},
        {"by", required_argument, NULL, 'b'},
        {"step-range", required_argument, NULL, 'S'},
        {"fetch-range", required_argument, NULL, 'F'},
        {"skip", required_argument, NULL, 'k'},
        {"cores", required_argument, NULL, 'c'},
        {"quiet", no_argument, NULL, 'q'},
        {"verbose", no_argument, NULL, 'v'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    static const char optstring[] = "qvh";
    memset(g, 0, sizeof *g);
    g->o.tol = 0.10;
    g->o.min_effect = MIN_EFFECT;
    g->o.conf = CONF;
    g->o.fail_if_slower = -1;
    g->skip = -1;
    /* RATIONALE: split at '--' before getopt, which would move A's runs
     * past it; B's runs are everything after it */
    int sep = -1;
    for (int i = 1; i < argc && sep < 0; i++)
        if (!strcmp(argv[i], "--"))
            sep = i;
    const int oargc = sep < 0 ? argc : sep;
    int opt;
    optind = 0;
    opterr = 0;
    while ((opt = getopt_long(oargc, argv, optstring, opts, NULL)) != -1) {
        switch (opt) {
        case 'j': g->o.json = 1; break;
        case 't':
            if (parse_pct(optarg, 1, 1000, &g->o.tol) < 0)
                return gs_cli_usage_error("compare", "--tolerance needs a percentage > 0, not '%s'", optarg);
            break;
        case 'm':
            if (parse_pct(optarg, 0, 99, &g->o.min_effect) < 0)
                return gs_cli_usage_error("compare", "--min-effect needs a percentage from 0 to 99, not '%s'", optarg);
            break;
        case 'g':
            if (parse_pct(optarg, 0, 1000, &g->o.fail_if_slower) < 0)
                return gs_cli_usage_error("compare", "--fail-if-slower needs a percentage >= 0, not '%s'", optarg);
            break;
        case 'b':
            if (strcmp(optarg, "mean") != 0 && strcmp(optarg, "median") != 0)
                return gs_cli_usage_error("compare", "--by takes mean or median, not '%s'", optarg);
            g->o.by_median = !strcmp(optarg, "median");
            break;
        case 'S': g->step_re = optarg; break;
        case 'F': g->fetch_re = optarg; break;
        case 'k':
            if (gs_cli_long(optarg, 0, 1000000000, &g->skip) < 0)
                return gs_cli_usage_error("compare", "--skip needs a number >= 0, not '%s'", optarg);
            break;
        case 'c':
            if (gs_cli_long(optarg, 1, 100000, &g->cores) < 0)
                return gs_cli_usage_error("compare", "--cores needs a number >= 1, not '%s'", optarg);
            break;
        case 'q': gs_verbosity--; break;
        case 'v': gs_verbosity++; break;
        case 'h': fputs(usage_text, stdout); return GS_EXIT_OK;
        default: return gs_cli_bad_option("compare", oargc, argv, optstring, opts);
        }
    }
    g->a = argv + optind;
    g->na = (size_t)(oargc - optind);
    if (sep < 0) {
        if (g->na != 2)
            return gs_cli_usage_error("compare", "takes two run directories, A (before) and B "
                                                 "(after), or runs of each: A1 A2... -- B1 B2...");
        g->nb = 1;
        g->na = 1;
        g->b = g->a + 1;
    } else {
        g->b = argv + sep + 1;
        g->nb = (size_t)(argc - sep - 1);
        if (!g->na || !g->nb)
            return gs_cli_usage_error("compare", "needs runs on both sides of '--': A1 A2... -- B1 B2...");
    }
    if (g->na > CMP_MAX_RUNS || g->nb > CMP_MAX_RUNS)
        return gs_cli_usage_error("compare", "takes at most %d runs a side", CMP_MAX_RUNS);
    return -1;
}

/* Loads every run of a side. Returns 0, or -1 (said on stderr). */
static int load_side(cmp_side *s, char name, char **dirs, size_t n, const an_opts *o,
                     const cmp_opts *co)
{
    s->name = name;
    s->runs = calloc(n, sizeof *s->runs);
    if (!s->runs) {
        gs_cli_error("out of memory");
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        s->runs[i].dir = dirs[i];
        s->n = i + 1;
        if (load_run(&s->runs[i], o) < 0)
            return -1;
    }
    summarize_side(s, co);
    return 0;
}

static void free_side(cmp_side *s)
{
    for (size_t i = 0; s->runs && i < s->n; i++)
        free_run(&s->runs[i]);
    free(s->runs);
}

static int write_out(const cmp_side *A, const cmp_side *B, const cmp_opts *o, const cmp_verdict *v)
{
    gs_out *out = malloc(sizeof *out);
    if (!out) {
        gs_cli_error("out of memory");
        return GS_EXIT_FAIL;
    }
    gs_out_init(out, stdout);
    if (o->json)
        cmp_write_json(out, A, B, o, v);
    else
        cmp_write_text(out, A, B, o, v);
    gs_out_flush(out);
    free(out);
    if (o->fail_if_slower >= 0 && o->json) /* the gate's one line, for a CI log (the text has it) */
        gs_cli_msg(1, "compare: %s", v->gate_reason);
    return v->gate_failed ? GS_EXIT_FAIL : GS_EXIT_OK;
}

int gs_cmd_compare(int argc, char **argv)
{
    cmp_args g;
    int rc = parse_args(argc, argv, &g);
    if (rc >= 0)
        return rc;
    an_opts o;
    const char *bad = NULL;
    if (an_opts_init(&o, g.step_re, g.fetch_re, &bad) < 0)
        return gs_cli_usage_error("compare", "bad regular expression '%s'", bad);
    o.skip = (int)g.skip;
    o.cores = (int)g.cores;
    cmp_side *s = calloc(2, sizeof *s);
    cmp_verdict *v = malloc(sizeof *v);
    if (!s || !v) {
        free(s);
        free(v);
        an_opts_free(&o);
        gs_cli_error("out of memory");
        return GS_EXIT_FAIL;
    }
    if (load_side(&s[0], 'A', g.a, g.na, &o, &g.o) < 0 ||
        load_side(&s[1], 'B', g.b, g.nb, &o, &g.o) < 0) {
        rc = GS_EXIT_USAGE;
    } else {
        cmp_judge(&s[0], &s[1], &g.o, v);
        rc = write_out(&s[0], &s[1], &g.o, v);
    }
    free_side(&s[0]);
    free_side(&s[1]);
    free(s);
    free(v);
    an_opts_free(&o);
    return rc;
}
