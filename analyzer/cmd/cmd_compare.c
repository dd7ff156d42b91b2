/* cmd_compare.c — `gpustarve compare A B`: two runs side by side (step
 * time, each share, bytes read, pageable copies, verdicts, loader
 * configuration), the change in each, whether the change helped beyond the
 * step-to-step noise, and whether A's predicted step time for the change
 * that B made held. Text (default) or JSON (schema gpustarve.compare/1,
 * docs/report-outputs.md).
 *
 * Responsible for: options, running the report's own analysis (an_load.c,
 * an_analyze.c) on both runs, the statistics, the output.
 *
 * Must never: start a subprocess, or call a change "helped" on a difference
 * the per-step spread can explain.
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "model/an_model.h"
#include "model/an_ranks.h"
#include "cmd/cli_util.h"
#include "report/report_json_parts.h"
#include "report/report_ranks.h"

static const char usage_text[] =
    "usage: gpustarve compare [options] A B\n"
    "\n"
    "Put two runs side by side (A before a change, B after): step time, where\n"
    "it goes, bytes read, pageable copies, verdicts and DataLoader settings;\n"
    "say whether the change helped beyond the step-to-step noise, and whether\n"
    "A's predicted step time for the change B made held. A and B are run\n"
    "directories written by 'gpustarve run'.\n"
    "\n"
    "options:\n"
    "  --json              JSON (schema gpustarve.compare/1, docs/report-outputs.md)\n"
    "  --tolerance PCT     a prediction holds within PCT % of the predicted step\n"
    "                      time (default 10)\n"
    "  --step-range REGEX  as in 'gpustarve report', for both runs\n"
    "  --fetch-range REGEX as in 'gpustarve report', for both runs\n"
    "  --skip N            warm-up steps to leave out of both (default: automatic)\n"
    "  --cores N           CPUs for A's num_workers advice, as in 'gpustarve report'\n"
    "  -q, --quiet         fewer messages on stderr\n"
    "  -v, --verbose       more messages on stderr\n"
    "  -h, --help          show this help\n"
    "\n"
    "Exit status: 0 compared; 2 bad usage, or a run that 'gpustarve report'\n"
    "could not analyse.\n";

/* RATIONALE: a change smaller than 1 % of the step is not worth a verdict
 * even when a long run makes it statistically clear; a p-value of 0.05 is
 * the usual line for "not noise". */
#define MIN_REL_CHANGE 0.01
#define ALPHA 0.05

typedef struct side {
    const char *dir;
    an_run run;
    an_job job;      /* its ranks (an_ranks.h) */
    an_result *res;  /* the limiting rank's result, or the whole run's */
    int loaded, analysed;
    double *dur; /* measured step lengths, ms */
    size_t n;
    double pageable_ms; /* per measured step: gpu_h2d_pageable + idle_pageable_copy */
    uint64_t pageable_bytes;
} side;

static int load_side(side *s, const an_opts *o)
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

static void free_side(side *s)
{
    if (s->analysed)
        an_job_free(&s->job);
    if (s->loaded)
        an_run_free(&s->run);
    free(s->dur);
}

/* ---- statistics ------------------------------------------------------------------------- */

typedef struct mw {
    double u;      /* pairs (a, b) with a > b, ties counting 1/2 */
    double p;      /* two-sided, normal approximation with tie and continuity correction */
    double z;
    double p_b_faster; /* u / (na nb): chance that a step of B is shorter than one of A */
} mw;

typedef struct tagged {
    double v;
    int g;
} tagged;

static int cmp_tagged(const void *a, const void *b)
{
    const double x = ((const tagged *)a)->v, y = ((const tagged *)b)->v;
    return x < y ? -1 : x > y;
}

/* Mann-Whitney U of a (na) against b (nb). Returns 0, or -1 (no memory). */
static int mann_whitney(const double *a, size_t na, const double *b, size_t nb, mw *out)
{
    memset(out, 0, sizeof *out);
    out->p = 1;
    const size_t n = na + nb;
    if (!na || !nb)
        return 0;
    tagged *t = malloc(n * sizeof *t);
    if (!t)
        return -1;
    for (size_t i = 0; i < na; i++)
        t[i] = (tagged){a[i], 0};
    for (size_t i = 0; i < nb; i++)
        t[na + i] = (tagged){b[i], 1};
    qsort(t, n, sizeof *t, cmp_tagged);
    double ra = 0, ties = 0;
    for (size_t i = 0; i < n;) {
        size_t j = i;
        while (j < n && t[j].v == t[i].v)
            j++;
        const double rank = ((double)i + 1 + (double)j) / 2; /* mean of ranks i+1 .. j */
        for (size_t k = i; k < j; k++)
            if (t[k].g == 0)
                ra += rank;
        const double tk = (double)(j - i);
        ties += tk * tk * tk - tk;
        i = j;
    }
    free(t);
    const double fa = (double)na, fb = (double)nb, fn = (double)n;
    out->u = ra - fa * (fa + 1) / 2;
    out->p_b_faster = out->u / (fa * fb);
    const double mu = fa * fb / 2;
    const double var = fa * fb / 12 * ((fn + 1) - (fn > 1 ? ties / (fn * (fn - 1)) : 0));
    if (var <= 0)
        return 0; /* every step the same length in both: no evidence of change */
    const double d = out->u - mu;
    const double cc = d > 0 ? 0.5 : d < 0 ? -0.5 : 0;
    out->z = (d - cc) / sqrt(var);
    out->p = erfc(fabs(out->z) / sqrt(2.0));
    return 0;
}

static double pct(const double *v, size_t n, double p)
{
    return an_percentile(v, n, p);
}

/* ---- predictions ------------------------------------------------------------------------ */

typedef struct pred {
    const an_advice *a;
    int applied;
} pred;

/* ---- output ------------------------------------------------------------------------------ */

static const char *const share_rows[AN_NSH] = {
    "GPU compute",    "GPU communication",   "GPU H2D pinned",   "GPU H2D pageable",
    "GPU other copies", "idle: data wait", "idle: pageable copy", "idle: host",
}; /* without GPU activity the idle rows are shown without "idle: " */

typedef struct verdict {
    const char *label; /* helped / hurt / no_clear_change / no_op */
    char no_op_why[200]; /* no_op: why the change cannot have done anything */
    double med_a, med_b, change_ms, change_rel;
    mw t;
    /* prediction */
    size_t napplied;
    double predicted, actual, err_rel;
    const char *outcome; /* held / beaten / missed / none */
    char applied_text[160];
} verdict;

/* 1, 0, or -1 when v is absent or not a boolean's spelling. */
static int cfg_bool(const char *v)
{
    if (!v)
        return -1;
    if (!strcasecmp(v, "true") || !strcmp(v, "1"))
        return 1;
    if (!strcasecmp(v, "false") || !strcmp(v, "0"))
        return 0;
    return -1;
}

/* 1 when the DataLoader settings of A and B differ in pin_memory alone and
 * the side that asked for it did not pin (pin_memory_effective false: no
 * CUDA): the change cannot have changed anything. */
static int pin_change_is_noop(const side *A, const side *B)
{
    const an_proc *a = A->res->trainer, *b = B->res->trainer;
    int pin_changed = 0;
    for (size_t i = 0; i < REP_NCFG; i++) {
        const char *x = an_cfg_value(a, rep_cfg_keys[i]), *y = an_cfg_value(b, rep_cfg_keys[i]);
        if (rep_cfg_is_bool(rep_cfg_keys[i]) && cfg_bool(x) >= 0 && cfg_bool(x) == cfg_bool(y))
            continue;
        if ((!x && !y) || (x && y && !strcmp(x, y)))
            continue;
        if (strcmp(rep_cfg_keys[i], "pin_memory") != 0)
            return 0; /* something else changed too */
        pin_changed = 1;
    }
    if (!pin_changed)
        return 0;
    const an_result *on = A->res->cur_pin_memory == 1 ? A->res : B->res;
    const an_result *off = on == A->res ? B->res : A->res;
    return on->cur_pin_memory == 1 && on->pin_effective == 0 && off->cur_pin_memory == 0 &&
           off->pin_effective != 1;
}

static void judge(const side *A, const side *B, const pred *pr, size_t npr, double tol, verdict *v,
                  mw *t)
{
    v->med_a = A->res->step_ms_median;
    v->med_b = B->res->step_ms_median;
    v->change_ms = v->med_b - v->med_a;
    v->change_rel = v->med_a > 0 ? v->change_ms / v->med_a : 0;
    v->t = *t;
    if (t->p < ALPHA && fabs(v->change_rel) >= MIN_REL_CHANGE)
        v->label = v->change_ms < 0 ? "helped" : "hurt";
    else
        v->label = "no_clear_change";
    v->no_op_why[0] = '\0';
    if (pin_change_is_noop(A, B)) {
        /* RATIONALE: a difference the change cannot have caused is the
         * machine's run-to-run variation, however small its p-value */
        v->label = "no_op";
        snprintf(v->no_op_why, sizeof v->no_op_why,
                 "only pin_memory changed, and the run with pin_memory=True pinned nothing "
                 "(pin_memory_effective=False: no CUDA device)");
    }
    /* the prediction for what B applied: one change, its predicted step;
     * several, A's mean step less the sum of their savings. Predictions
     * are of the time per step, so B's mean step is what they are held to
     * (docs/report-outputs.md) */
    double saving = 0, single = 0;
    v->napplied = 0;
    v->applied_text[0] = '\0';
    for (size_t i = 0; i < npr; i++) {
        if (!pr[i].applied)
            continue;
        const an_advice *a = pr[i].a;
        saving += a->predicted_saving_ms;
        single = a->predicted_step_ms;
        size_t l = strlen(v->applied_text);
        if (a->setting == AN_ADV_NUM_WORKERS)
            snprintf(v->applied_text + l, sizeof v->applied_text - l, "%snum_workers=%ld",
                     l ? " + " : "", a->value);
        else
            snprintf(v->applied_text + l, sizeof v->applied_text - l, "%spin_memory=True",
                     l ? " + " : "");
        v->napplied++;
    }
    v->outcome = "none";
    if (!v->napplied)
        return;
    v->predicted = v->napplied == 1 ? single : A->res->step_ms_mean - saving;
    if (v->predicted < 0)
        v->predicted = 0;
    v->actual = B->res->step_ms_mean;
    v->err_rel = v->predicted > 0 ? (v->actual - v->predicted) / v->predicted : 0;
    if (fabs(v->err_rel) <= tol)
        v->outcome = "held";
    else
        v->outcome = v->err_rel < 0 ? "beaten" : "missed";
}

static void side_json(gs_jw *w, const side *s)
{
    const an_result *r = s->res;
    const an_proc *tr = r->trainer;
    gs_jw_obj(w);
    gs_jw_kstr(w, "dir", s->dir);
    gs_jw_kstr(w, "argv", tr->argv);
    gs_jw_ku64(w, "steps_measured", r->measured);
    gs_jw_kstr(w, "steps_source", an_source_name(r->source));
    gs_jw_kbool(w, "in_progress", s->run.running != 0);
    gs_jw_ku64(w, "separate_runs", r->separate_runs);
    gs_jw_key(w, "step_ms");
    gs_jw_obj(w);
    gs_jw_key(w, "median");
    rep_json_num(w, r->step_ms_median);
    gs_jw_key(w, "p90");
    rep_json_num(w, r->step_ms_p90);
    gs_jw_key(w, "p25");
    rep_json_num(w, pct(s->dur, s->n, 0.25));
    gs_jw_key(w, "p75");
    rep_json_num(w, pct(s->dur, s->n, 0.75));
    gs_jw_key(w, "mean");
    rep_json_num(w, r->step_ms_mean);
    gs_jw_end(w);
    gs_jw_key(w, "share");
    gs_jw_obj(w);
    for (int k = 0; k < AN_NSH; k++)
        gs_jw_kfixed(w, an_share_names[k], r->share[k], 9);
    gs_jw_end(w);
    gs_jw_key(w, "trainer_fetch_share");
    if (r->has_fetch)
        gs_jw_fixed(w, r->fetch_share, 9);
    else
        gs_jw_null(w);
    gs_jw_ku64(w, "bytes_read", r->worker_bytes);
    gs_jw_key(w, "pageable_copy_ms_per_step");
    rep_json_num(w, s->pageable_ms);
    gs_jw_ku64(w, "pageable_h2d_bytes", s->pageable_bytes);
    rep_json_verdict(w, r);
    gs_jw_key(w, "dataloader");
    gs_jw_obj(w);
    rep_json_dataloader_settings(w, tr);
    gs_jw_end(w);
    gs_jw_ku64(w, "workers_seen", r->nworker_slots);
    gs_jw_key(w, "advice");
    gs_jw_arr(w);
    for (size_t i = 0; i < r->nadvice; i++) {
        const an_advice *a = &r->advice[i];
        gs_jw_obj(w);
        rep_json_advice_setting(w, a);
        gs_jw_key(w, "predicted_step_ms");
        rep_json_num(w, a->predicted_step_ms);
        gs_jw_end(w);
    }
    gs_jw_end(w);
    rep_write_ranks_side_json(w, r->job);
    gs_jw_end(w);
}

/* A number, or null when no prediction was applied. */
static void num_if(gs_jw *w, const char *key, int have, double v)
{
    gs_jw_key(w, key);
    if (have)
        rep_json_num(w, v);
    else
        gs_jw_null(w);
}

static void write_json(gs_out *o, const side *A, const side *B, const pred *pr, size_t npr,
                       const verdict *v, double tol)
{
    gs_jw jw, *w = &jw;
    gs_jw_init(w, o);
    gs_jw_obj(w);
    gs_jw_kstr(w, "schema", "gpustarve.compare/1");
    gs_jw_newline(w, "\n");
    gs_jw_key(w, "a");
    side_json(w, A);
    gs_jw_newline(w, "\n");
    gs_jw_key(w, "b");
    side_json(w, B);
    gs_jw_newline(w, "\n");

    gs_jw_key(w, "change");
    gs_jw_obj(w);
    gs_jw_key(w, "step_ms_median");
    rep_json_num(w, v->change_ms);
    gs_jw_key(w, "step_ms_median_rel");
    rep_json_num(w, v->change_rel);
    gs_jw_key(w, "step_ms_p90");
    rep_json_num(w, B->res->step_ms_p90 - A->res->step_ms_p90);
    gs_jw_key(w, "share");
    gs_jw_obj(w);
    for (int k = 0; k < AN_NSH; k++)
        gs_jw_kfixed(w, an_share_names[k], B->res->share[k] - A->res->share[k], 9);
    gs_jw_end(w);
    gs_jw_key(w, "trainer_fetch_share");
    if (A->res->has_fetch && B->res->has_fetch)
        gs_jw_fixed(w, B->res->fetch_share - A->res->fetch_share, 9);
    else
        gs_jw_null(w);
    gs_jw_ki64(w, "bytes_read", (int64_t)B->res->worker_bytes - (int64_t)A->res->worker_bytes);
    gs_jw_key(w, "pageable_copy_ms_per_step");
    rep_json_num(w, B->pageable_ms - A->pageable_ms);
    gs_jw_key(w, "dataloader");
    gs_jw_arr(w);
    for (size_t i = 0; i < REP_NCFG; i++) {
        const char *a = an_cfg_value(A->res->trainer, rep_cfg_keys[i]);
        const char *b = an_cfg_value(B->res->trainer, rep_cfg_keys[i]);
        if ((!a && !b) || (a && b && !strcmp(a, b)))
            continue;
        gs_jw_obj(w);
        gs_jw_kstr(w, "key", rep_cfg_keys[i]);
        gs_jw_key(w, "a");
        rep_json_cfg(w, rep_cfg_keys[i], a);
        gs_jw_key(w, "b");
        rep_json_cfg(w, rep_cfg_keys[i], b);
        gs_jw_end(w);
    }
    gs_jw_end(w);
    gs_jw_end(w);
    gs_jw_newline(w, "\n");

    gs_jw_key(w, "helped");
    gs_jw_obj(w);
    gs_jw_kstr(w, "label", v->label);
    gs_jw_kstr(w, "no_op_why", v->no_op_why[0] ? v->no_op_why : NULL);
    gs_jw_kstr(w, "test", "mann-whitney-u");
    gs_jw_key(w, "p_value");
    rep_json_num(w, v->t.p);
    gs_jw_key(w, "z");
    rep_json_num(w, v->t.z);
    gs_jw_key(w, "p_b_step_shorter");
    rep_json_num(w, v->t.p_b_faster);
    gs_jw_key(w, "alpha");
    rep_json_num(w, ALPHA);
    gs_jw_key(w, "min_rel_change");
    rep_json_num(w, MIN_REL_CHANGE);
    gs_jw_ku64(w, "n_a", A->n);
    gs_jw_ku64(w, "n_b", B->n);
    gs_jw_end(w);
    gs_jw_newline(w, "\n");

    gs_jw_key(w, "prediction");
    gs_jw_obj(w);
    gs_jw_kstr(w, "outcome", v->outcome);
    gs_jw_key(w, "held");
    if (!strcmp(v->outcome, "held"))
        gs_jw_bool(w, 1);
    else if (v->napplied)
        gs_jw_bool(w, 0);
    else
        gs_jw_null(w);
    gs_jw_key(w, "tolerance");
    rep_json_num(w, tol);
    gs_jw_kstr(w, "applied", v->napplied ? v->applied_text : NULL);
    num_if(w, "predicted_step_ms", v->napplied, v->predicted);
    num_if(w, "actual_step_ms", v->napplied, v->actual);
    num_if(w, "error_rel", v->napplied, v->err_rel);
    gs_jw_key(w, "advice");
    gs_jw_arr(w);
    for (size_t i = 0; i < npr; i++) {
        const an_advice *a = pr[i].a;
        gs_jw_obj(w);
        gs_jw_kstr(w, "setting", a->setting == AN_ADV_NUM_WORKERS ? "num_workers" : "pin_memory");
        gs_jw_key(w, "value");
        if (a->setting == AN_ADV_PIN_MEMORY)
            gs_jw_bool(w, 1);
        else
            gs_jw_i64(w, a->value);
        gs_jw_key(w, "predicted_step_ms");
        rep_json_num(w, a->predicted_step_ms);
        gs_jw_kbool(w, "applied_in_b", pr[i].applied);
        gs_jw_end(w);
    }
    gs_jw_end(w);
    gs_jw_end(w);
    gs_jw_end(w);
    gs_out_char(o, '\n');
}

static void cfg_text(char *buf, size_t n, const char *v)
{
    snprintf(buf, n, "%s", v ? v : "-");
}

static void write_text(gs_out *o, const side *A, const side *B, const pred *pr, size_t npr,
                       const verdict *v, double tol)
{
    const an_result *a = A->res, *b = B->res;
    gs_out_str(o, "A  ");
    gs_text_str(o, A->dir, strlen(A->dir));
    gs_out_str(o, "   ");
    gs_text_str(o, a->trainer->argv, strlen(a->trainer->argv) > 60 ? 60 : strlen(a->trainer->argv));
    gs_out_str(o, "\nB  ");
    gs_text_str(o, B->dir, strlen(B->dir));
    gs_out_str(o, "   ");
    gs_text_str(o, b->trainer->argv, strlen(b->trainer->argv) > 60 ? 60 : strlen(b->trainer->argv));
    gs_out_str(o, "\n\n                                A           B    change\n");
    gs_out_printf(o, "%-24s %9zu %11zu\n", "steps measured", a->measured, b->measured);
    gs_out_printf(o, "%-24s %9.1f %11.1f   %+.1f ms (%+.1f%%)\n", "step median ms", a->step_ms_median,
                  b->step_ms_median, v->change_ms, 100 * v->change_rel);
    gs_out_printf(o, "%-24s %9.1f %11.1f   %+.1f ms\n", "step p90 ms", a->step_ms_p90, b->step_ms_p90,
                  b->step_ms_p90 - a->step_ms_p90);
    /* two runs without GPU activity: no GPU rows, as in their reports */
    const int no_gpu = a->no_gpu && b->no_gpu;
    for (int k = no_gpu ? AN_SH_DATA_WAIT : 0; k < AN_NSH; k++)
        gs_out_printf(o, "%-24s %8.1f%% %10.1f%%   %+.1f points\n",
                      no_gpu ? share_rows[k] + 6 : share_rows[k], 100 * a->share[k],
                      100 * b->share[k], 100 * (b->share[k] - a->share[k]));
    if (a->has_fetch || b->has_fetch) /* beside the shares (docs/report-schema.md) */
        gs_out_printf(o, "%-24s %8.1f%% %10.1f%%   %+.1f points\n", "trainer in batch fetch",
                      100 * a->fetch_share, 100 * b->fetch_share,
                      100 * (b->fetch_share - a->fetch_share));
    gs_out_printf(o, "%-24s %9.1f %11.1f   %+.1f MB\n", "MB read by the loader",
                  (double)a->worker_bytes / 1e6, (double)b->worker_bytes / 1e6,
                  ((double)b->worker_bytes - (double)a->worker_bytes) / 1e6);
    gs_out_printf(o, "%-24s %9.2f %11.2f   %+.2f ms\n", "pageable copy ms/step", A->pageable_ms,
                  B->pageable_ms, B->pageable_ms - A->pageable_ms);
    for (size_t i = 0; i < REP_NCFG; i++) {
        char x[64], y[64];
        cfg_text(x, sizeof x, an_cfg_value(a->trainer, rep_cfg_keys[i]));
        cfg_text(y, sizeof y, an_cfg_value(b->trainer, rep_cfg_keys[i]));
        gs_out_printf(o, "%-24s %9s %11s%s\n", rep_cfg_keys[i], x, y, strcmp(x, y) ? "   changed" : "");
    }
    gs_out_printf(o, "%-24s %s\n%-24s %s\n", "verdict A", a->verdict_text, "verdict B", b->verdict_text);
    rep_write_ranks_compare_text(o, a->job, b->job);
    /* a run that is not one finished run says so here too */
    const side *sides[2] = {A, B};
    for (int i = 0; i < 2; i++) {
        if (sides[i]->run.running)
            gs_out_printf(o, "note     %c is still in progress (%zu process%s running): its numbers "
                             "cover what was written so far\n",
                          'A' + i, sides[i]->run.running, sides[i]->run.running == 1 ? "" : "es");
        if (sides[i]->res->separate_runs > 1)
            gs_out_printf(o, "note     %c's directory holds %zu separate runs: compared is the "
                             "trainer's run only\n",
                          'A' + i, sides[i]->res->separate_runs);
    }

    gs_out_str(o, "\n");
    if (!strcmp(v->label, "no_op"))
        gs_out_printf(o, "result   NO-OP: %s; median step %.1f -> %.1f ms (%+.1f%%) is run-to-run "
                         "variation (Mann-Whitney p = %.2g, %zu / %zu steps)\n",
                      v->no_op_why, v->med_a, v->med_b, 100 * v->change_rel, v->t.p, A->n, B->n);
    else if (!strcmp(v->label, "no_clear_change"))
        gs_out_printf(o, "result   NO CLEAR CHANGE: median step %.1f -> %.1f ms (%+.1f%%), within the "
                         "step-to-step noise (Mann-Whitney p = %.2g, %zu / %zu steps)\n",
                      v->med_a, v->med_b, 100 * v->change_rel, v->t.p, A->n, B->n);
    else
        gs_out_printf(o, "result   %s: median step %.1f -> %.1f ms (%+.1f%%), beyond the step-to-step "
                         "noise (Mann-Whitney p = %.2g, %zu / %zu steps)\n",
                      !strcmp(v->label, "helped") ? "HELPED" : "HURT", v->med_a, v->med_b,
                      100 * v->change_rel, v->t.p, A->n, B->n);
    if (!npr) {
        gs_out_str(o, "predict  A had no advice with a predicted step time\n");
    } else if (!v->napplied) {
        gs_out_str(o, "predict  B applied none of A's advice (");
        for (size_t i = 0; i < npr; i++) {
            if (pr[i].a->setting == AN_ADV_NUM_WORKERS)
                gs_out_printf(o, "%snum_workers=%ld", i ? ", " : "", pr[i].a->value);
            else
                gs_out_printf(o, "%spin_memory=True", i ? ", " : "");
        }
        gs_out_str(o, ")\n");
    } else {
        gs_out_printf(o, "predict  %s: A predicted %.1f ms, B measured %.1f ms (%+.1f%%): %s\n",
                      v->applied_text, v->predicted, v->actual, 100 * v->err_rel,
                      !strcmp(v->outcome, "held")     ? "HELD"
                      : !strcmp(v->outcome, "beaten") ? "BEATEN (B is faster than predicted)"
                                                      : "MISSED (B is slower than predicted)");
        gs_out_printf(o, "         (held: within %.0f%% of the predicted step time)\n", 100 * tol);
    }
}

/* ---- the command -------------------------------------------------------------------------- */

int gs_cmd_compare(int argc, char **argv)
{
    static const struct option opts[] = {
        {"json", no_argument, NULL, 'j'},
        {"tolerance", required_argument, NULL, 't'},
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
    int json = 0, opt;
    const char *step_re = NULL, *fetch_re = NULL;
    long skip = -1, cores = 0;
    double tol = 0.10;
    optind = 0;
    opterr = 0;
    while ((opt = getopt_long(argc, argv, optstring, opts, NULL)) != -1) {
        char *end;
        switch (opt) {
        case 'j': json = 1; break;
        case 't':
            errno = 0;
            tol = strtod(optarg, &end) / 100;
            if (*end || errno || !(tol > 0) || tol > 10)
                return gs_cli_usage_error("compare", "--tolerance needs a percentage > 0, not '%s'", optarg);
            break;
        case 'S': step_re = optarg; break;
        case 'F': fetch_re = optarg; break;
        case 'k':
            if (gs_cli_long(optarg, 0, 1000000000, &skip) < 0)
                return gs_cli_usage_error("compare", "--skip needs a number >= 0, not '%s'", optarg);
            break;
        case 'c':
            if (gs_cli_long(optarg, 1, 100000, &cores) < 0)
                return gs_cli_usage_error("compare", "--cores needs a number >= 1, not '%s'", optarg);
            break;
        case 'q': gs_verbosity--; break;
        case 'v': gs_verbosity++; break;
        case 'h': fputs(usage_text, stdout); return GS_EXIT_OK;
        default: return gs_cli_bad_option("compare", argc, argv, optstring, opts);
        }
    }
    if (argc - optind != 2)
        return gs_cli_usage_error("compare", "takes two run directories, A (before) and B (after)");
    an_opts o;
    const char *bad = NULL;
    if (an_opts_init(&o, step_re, fetch_re, &bad) < 0)
        return gs_cli_usage_error("compare", "bad regular expression '%s'", bad);
    o.skip = (int)skip;
    o.cores = (int)cores;
    side *s = calloc(2, sizeof *s);
    if (!s) {
        an_opts_free(&o);
        gs_cli_error("out of memory");
        return GS_EXIT_FAIL;
    }
    s[0].dir = argv[optind];
    s[1].dir = argv[optind + 1];
    int rc = GS_EXIT_OK;
    if (load_side(&s[0], &o) < 0 || load_side(&s[1], &o) < 0) {
        rc = GS_EXIT_USAGE;
        goto out;
    }
    /* A's advice with a value, and whether B's configuration took it */
    pred pr[8];
    size_t npr = 0;
    const an_result *ra = s[0].res, *rb = s[1].res;
    for (size_t i = 0; i < ra->nadvice && npr < 8; i++) {
        const an_advice *a = &ra->advice[i];
        if (!a->has_value)
            continue;
        pr[npr].a = a;
        pr[npr].applied = a->setting == AN_ADV_NUM_WORKERS ? rb->cur_workers == a->value
                                                           : rb->cur_pin_memory == 1;
        npr++;
    }
    mw t;
    if (mann_whitney(s[0].dur, s[0].n, s[1].dur, s[1].n, &t) < 0) {
        gs_cli_error("out of memory");
        rc = GS_EXIT_FAIL;
        goto out;
    }
    verdict v;
    memset(&v, 0, sizeof v);
    judge(&s[0], &s[1], pr, npr, tol, &v, &t);
    gs_out *out = malloc(sizeof *out);
    if (!out) {
        gs_cli_error("out of memory");
        rc = GS_EXIT_FAIL;
        goto out;
    }
    gs_out_init(out, stdout);
    if (json)
        write_json(out, &s[0], &s[1], pr, npr, &v, tol);
    else
        write_text(out, &s[0], &s[1], pr, npr, &v, tol);
    gs_out_flush(out);
    free(out);
out:
    free_side(&s[0]);
    free_side(&s[1]);
    free(s);
    an_opts_free(&o);
    return rc;
}
