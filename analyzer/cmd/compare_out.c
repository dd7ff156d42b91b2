/* compare_out.c — `gpustarve compare`'s outputs: the text table and the
 * JSON document (schema gpustarve.compare/3, docs/report-outputs.md).
 *
 * Responsible for: what each side shows (the numbers over its runs, the
 * descriptive rows of its middle run, each run's step and the other
 * processes' load), the change, the result, the prediction and the gate
 * lines, in the order the document gives.
 *
 * Must never: judge (compare_judge.c does), or print anything but the
 * result to its writer.
 */
#include <math.h>
#include <string.h>

#include "cmd/compare.h"
#include "model/an_ranks.h"
#include "report/report_json_parts.h"
#include "report/report_ranks.h"

static const char *const share_rows[AN_NSH] = {
    "GPU compute",    "GPU communication",   "GPU H2D pinned",   "GPU H2D pageable",
    "GPU other copies", "idle: data wait", "idle: pageable copy", "idle: host",
}; /* without GPU activity the idle rows are shown without "idle: " */

/* ---- JSON --------------------------------------------------------------------------------- */

/* A number, or null when have is 0. */
static void num_if(gs_jw *w, const char *key, int have, double v)
{
    gs_jw_key(w, key);
    if (have)
        rep_json_num(w, v);
    else
        gs_jw_null(w);
}

static void run_json(gs_jw *w, const cmp_run *s)
{
    const an_result *r = s->res;
    gs_jw_obj(w);
    gs_jw_kstr(w, "dir", s->dir);
    gs_jw_ku64(w, "steps_measured", r->measured);
    gs_jw_key(w, "step_ms_median");
    rep_json_num(w, r->step_ms_median);
    gs_jw_key(w, "step_ms_mean");
    rep_json_num(w, r->step_ms_mean);
    num_if(w, "other_load_cores", r->host_time.measured, r->host_time.other_cores);
    num_if(w, "cpus", r->host_time.measured, r->host_time.cpus);
    static const char *const gap[] = {"no_records", "short", "partial"};
    gs_jw_kstr(w, "other_load_why", r->host_time.measured ? NULL : gap[r->host_time.gap]);
    gs_jw_end(w);
}

static void side_json(gs_jw *w, const cmp_side *sd)
{
    const cmp_run *s = cmp_mid(sd);
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
    rep_json_num(w, an_percentile(s->dur, s->n, 0.25));
    gs_jw_key(w, "p75");
    rep_json_num(w, an_percentile(s->dur, s->n, 0.75));
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
    rep_json_dataloader_settings(w, r);
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
    /* over the side's runs */
    gs_jw_key(w, "step_ms_over_runs");
    gs_jw_obj(w);
    gs_jw_key(w, "geomean");
    rep_json_num(w, sd->step.center);
    num_if(w, "lo", sd->step.has_interval, sd->step.lo);
    num_if(w, "hi", sd->step.has_interval, sd->step.hi);
    gs_jw_end(w);
    num_if(w, "other_load_cores", sd->nload, sd->other_load);
    gs_jw_kbool(w, "settings_differ", sd->cfg_differs);
    gs_jw_key(w, "runs");
    gs_jw_arr(w);
    for (size_t i = 0; i < sd->n; i++)
        run_json(w, &sd->runs[i]);
    gs_jw_end(w);
    gs_jw_end(w);
}

static void change_json(gs_jw *w, const cmp_side *A, const cmp_side *B, const cmp_verdict *v)
{
    const an_result *ra = cmp_mid(A)->res, *rb = cmp_mid(B)->res;
    gs_jw_key(w, "change");
    gs_jw_obj(w);
    gs_jw_key(w, "step_ms");
    rep_json_num(w, v->change_ms);
    gs_jw_key(w, "step_ms_rel");
    rep_json_num(w, v->ci.ratio - 1);
    gs_jw_key(w, "step_ms_p90");
    rep_json_num(w, rb->step_ms_p90 - ra->step_ms_p90);
    gs_jw_key(w, "share");
    gs_jw_obj(w);
    for (int k = 0; k < AN_NSH; k++)
        gs_jw_kfixed(w, an_share_names[k], rb->share[k] - ra->share[k], 9);
    gs_jw_end(w);
    gs_jw_key(w, "trainer_fetch_share");
    if (ra->has_fetch && rb->has_fetch)
        gs_jw_fixed(w, rb->fetch_share - ra->fetch_share, 9);
    else
        gs_jw_null(w);
    gs_jw_ki64(w, "bytes_read", (int64_t)rb->worker_bytes - (int64_t)ra->worker_bytes);
    gs_jw_key(w, "pageable_copy_ms_per_step");
    rep_json_num(w, cmp_mid(B)->pageable_ms - cmp_mid(A)->pageable_ms);
    num_if(w, "other_load_cores", A->nload && B->nload, B->other_load - A->other_load);
    gs_jw_key(w, "dataloader");
    gs_jw_arr(w);
    for (size_t i = 0; i < REP_NCFG; i++) {
        const char *a = an_loader_cfg(ra, rep_cfg_keys[i]);
        const char *b = an_loader_cfg(rb, rep_cfg_keys[i]);
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
}

static void helped_json(gs_jw *w, const cmp_opts *o, const cmp_verdict *v)
{
    const an_ratio_ci *c = &v->ci;
    gs_jw_key(w, "helped");
    gs_jw_obj(w);
    gs_jw_kstr(w, "label", v->label);
    gs_jw_kstr(w, "reason", v->reason);
    gs_jw_kstr(w, "no_op_why", v->no_op_why[0] ? v->no_op_why : NULL);
    gs_jw_kstr(w, "method", o->by_median ? "welch-t-log-run-medians" : "welch-t-log-run-means");
    gs_jw_key(w, "confidence");
    rep_json_num(w, o->conf);
    gs_jw_key(w, "ratio");
    rep_json_num(w, c->ratio);
    num_if(w, "ratio_lo", c->has_interval, c->lo);
    num_if(w, "ratio_hi", c->has_interval, c->hi);
    num_if(w, "df", c->has_interval && isfinite(c->df), c->df);
    gs_jw_key(w, "min_effect");
    rep_json_num(w, o->min_effect);
    gs_jw_ku64(w, "runs_a", c->na);
    gs_jw_ku64(w, "runs_b", c->nb);
    gs_jw_end(w);
}

static void prediction_json(gs_jw *w, const cmp_opts *o, const cmp_verdict *v)
{
    const int have = v->napplied && strcmp(v->outcome, "none") != 0;
    gs_jw_key(w, "prediction");
    gs_jw_obj(w);
    gs_jw_kstr(w, "outcome", v->outcome);
    gs_jw_key(w, "held");
    if (!strcmp(v->outcome, "held"))
        gs_jw_bool(w, 1);
    else if (have && strcmp(v->outcome, "unclear") != 0)
        gs_jw_bool(w, 0);
    else
        gs_jw_null(w);
    gs_jw_key(w, "tolerance");
    rep_json_num(w, o->tol);
    gs_jw_kstr(w, "applied", v->napplied ? v->applied_text : NULL);
    num_if(w, "predicted_step_ms", have, v->predicted_ms);
    num_if(w, "actual_step_ms", have, v->actual_ms);
    num_if(w, "error_rel", have, v->err_rel);
    num_if(w, "predicted_ratio", have, v->pred_ratio);
    num_if(w, "actual_ratio", have, v->mean_ci.ratio);
    num_if(w, "actual_ratio_lo", have && v->mean_ci.has_interval, v->mean_ci.lo);
    num_if(w, "actual_ratio_hi", have && v->mean_ci.has_interval, v->mean_ci.hi);
    gs_jw_key(w, "advice");
    gs_jw_arr(w);
    for (size_t i = 0; i < v->npr; i++) {
        const an_advice *a = v->pr[i].a;
        gs_jw_obj(w);
        rep_json_advice_setting(w, a);
        gs_jw_key(w, "predicted_step_ms");
        rep_json_num(w, a->predicted_step_ms);
        gs_jw_kbool(w, "applied_in_b", v->pr[i].applied);
        gs_jw_end(w);
    }
    gs_jw_end(w);
    gs_jw_end(w);
}

void cmp_write_json(gs_out *o, const cmp_side *A, const cmp_side *B, const cmp_opts *opt,
                    const cmp_verdict *v)
{
    gs_jw jw, *w = &jw;
    gs_jw_init(w, o);
    gs_jw_obj(w);
    gs_jw_kstr(w, "schema", CMP_SCHEMA);
    gs_jw_kstr(w, "by", cmp_by_name(opt));
    gs_jw_newline(w, "\n");
    gs_jw_key(w, "a");
    side_json(w, A);
    gs_jw_newline(w, "\n");
    gs_jw_key(w, "b");
    side_json(w, B);
    gs_jw_newline(w, "\n");
    change_json(w, A, B, v);
    gs_jw_newline(w, "\n");
    helped_json(w, opt, v);
    gs_jw_newline(w, "\n");
    prediction_json(w, opt, v);
    gs_jw_newline(w, "\n");
    gs_jw_key(w, "gate");
    if (opt->fail_if_slower < 0) {
        gs_jw_null(w);
    } else {
        gs_jw_obj(w);
        gs_jw_key(w, "fail_if_slower");
        rep_json_num(w, opt->fail_if_slower);
        gs_jw_kbool(w, "failed", v->gate_failed);
        gs_jw_kstr(w, "reason", v->gate_reason);
        gs_jw_end(w);
    }
    gs_jw_end(w);
    gs_out_char(o, '\n');
}

/* ---- text ---------------------------------------------------------------------------------- */

static void head_text(gs_out *o, const cmp_side *s)
{
    const cmp_run *m = cmp_mid(s);
    const char *argv = m->res->trainer->argv;
    gs_out_printf(o, "%c  ", s->name);
    if (s->n > 1)
        gs_out_printf(o, "%zu runs, the middle one ", s->n);
    gs_text_str(o, m->dir, strlen(m->dir));
    gs_out_str(o, "   ");
    gs_text_str(o, argv, strlen(argv) > 60 ? 60 : strlen(argv));
    gs_out_char(o, '\n');
}

static void load_text(char *buf, size_t n, const cmp_side *s)
{
    if (s->nload)
        snprintf(buf, n, "%.2f", s->other_load);
    else
        snprintf(buf, n, "-");
}

static void table_text(gs_out *o, const cmp_side *A, const cmp_side *B, const cmp_opts *opt,
                       const cmp_verdict *v)
{
    const an_result *a = cmp_mid(A)->res, *b = cmp_mid(B)->res;
    char row[40];
    snprintf(row, sizeof row, "step %s ms%s", cmp_by_name(opt), A->n > 1 || B->n > 1 ? " (runs)" : "");
    gs_out_str(o, "\n                                A           B    change\n");
    if (A->n > 1 || B->n > 1)
        gs_out_printf(o, "%-24s %9zu %11zu\n", "runs", A->n, B->n);
    gs_out_printf(o, "%-24s %9zu %11zu\n", "steps measured", a->measured, b->measured);
    gs_out_printf(o, "%-24s %9.1f %11.1f   %+.1f ms (%+.1f%%)\n", row, A->step.center,
                  B->step.center, v->change_ms, 100 * (v->ci.ratio - 1));
    if (A->step.has_interval || B->step.has_interval) {
        char x[40] = "-", y[40] = "-";
        if (A->step.has_interval)
            snprintf(x, sizeof x, "%.1f-%.1f", A->step.lo, A->step.hi);
        if (B->step.has_interval)
            snprintf(y, sizeof y, "%.1f-%.1f", B->step.lo, B->step.hi);
        gs_out_printf(o, "%-24s %9s %11s\n", "  95% interval", x, y);
    }
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
    gs_out_printf(o, "%-24s %9.2f %11.2f   %+.2f ms\n", "pageable copy ms/step",
                  cmp_mid(A)->pageable_ms, cmp_mid(B)->pageable_ms,
                  cmp_mid(B)->pageable_ms - cmp_mid(A)->pageable_ms);
    char la[32], lb[32];
    load_text(la, sizeof la, A);
    load_text(lb, sizeof lb, B);
    gs_out_printf(o, "%-24s %9s %11s", "other processes, CPUs", la, lb);
    if (A->nload && B->nload)
        gs_out_printf(o, "   %+.2f", B->other_load - A->other_load);
    gs_out_char(o, '\n');
    for (size_t i = 0; i < REP_NCFG; i++) {
        const char *x = an_loader_cfg(a, rep_cfg_keys[i]);
        const char *y = an_loader_cfg(b, rep_cfg_keys[i]);
        x = x ? x : "-";
        y = y ? y : "-";
        gs_out_printf(o, "%-24s %9.63s %11.63s%s\n", rep_cfg_keys[i], x, y,
                      strcmp(x, y) ? "   changed" : "");
    }
    gs_out_printf(o, "%-24s %s\n%-24s %s\n", "verdict A", a->verdict_text, "verdict B", b->verdict_text);
    rep_write_ranks_compare_text(o, a->job, b->job);
}

static void notes_text(gs_out *o, const cmp_side *A, const cmp_side *B, const cmp_opts *opt)
{
    const cmp_side *sides[2] = {A, B};
    const char *by = cmp_by_name(opt);
    if (A->n > 1 || B->n > 1)
        gs_out_printf(o, "note     the step %s and its interval are over the runs (each run's "
                         "%s step); the rows below them are the middle run's\n", by, by);
    for (int i = 0; i < 2; i++) {
        const cmp_side *s = sides[i];
        for (size_t r = 0; r < s->n; r++) {
            const cmp_run *run = &s->runs[r];
            char who[64];
            if (s->n > 1)
                snprintf(who, sizeof who, "%c's run %zu", s->name, r + 1);
            else
                snprintf(who, sizeof who, "%c", s->name);
            if (run->run.running)
                gs_out_printf(o, "note     %s is still in progress (%zu process%s running): its "
                                 "numbers cover what was written so far\n",
                              who, run->run.running, run->run.running == 1 ? "" : "es");
            if (run->res->separate_runs > 1)
                gs_out_printf(o, "note     %s's directory holds %zu separate runs: compared is the "
                                 "trainer's run only\n",
                              who, run->res->separate_runs);
        }
        if (s->cfg_differs)
            gs_out_printf(o, "note     %c's runs differ in their DataLoader settings: they are not "
                             "runs of one setting\n", s->name);
    }
}

static void runs_text(gs_out *o, const cmp_side *A, const cmp_side *B)
{
    if (A->n < 2 && B->n < 2)
        return;
    const cmp_side *sides[2] = {A, B};
    gs_out_char(o, '\n');
    for (int i = 0; i < 2; i++)
        for (size_t r = 0; r < sides[i]->n; r++) {
            const cmp_run *run = &sides[i]->runs[r];
            const an_host_time *h = &run->res->host_time;
            gs_out_printf(o, "%-8s %c  ", i == 0 && r == 0 ? "runs" : "", sides[i]->name);
            gs_text_str(o, run->dir, strlen(run->dir));
            gs_out_printf(o, "   median step %.1f ms, mean %.1f ms", run->res->step_ms_median,
                          run->res->step_ms_mean);
            if (h->measured)
                gs_out_printf(o, ", other processes %.2f of %.4g CPUs", h->other_cores, h->cpus);
            gs_out_char(o, '\n');
        }
}

/* The other processes' load one run measured, or why it has none. */
static void load_text_of(gs_out *o, char side, const an_host_time *h)
{
    if (h->measured)
        gs_out_printf(o, "         other processes kept %.2f of %.4g CPUs busy in %c\n",
                      h->other_cores, h->cpus, side);
    else if (h->gap == AN_HOST_NO_RECORDS)
        gs_out_printf(o, "         %c's trace does not measure the other processes' load (format "
                         "1.3 or older, or imported)\n", side);
    else if (h->gap == AN_HOST_SHORT)
        gs_out_printf(o, "         %c's machine samples cover %.2f s of its measured steps, under "
                         "the %.1f s that measure the other processes' load (a longer run does)\n",
                      side, h->window_s, (double)AN_HOST_MIN_WINDOW_NS / 1e9);
    else
        gs_out_printf(o, "         %c's machine samples cover %.2f s, under half of its measured "
                         "steps: too little to measure the other processes' load\n",
                      side, h->window_s);
}

/* One run a side: what the machine did in each, beside the difference. */
static void one_run_text(gs_out *o, const cmp_side *A, const cmp_side *B)
{
    if (A->n > 1 || B->n > 1) {
        gs_out_printf(o, "         %c has one run: an interval needs 2 runs or more on each side "
                         "(3 usually find a 30%% change)\n", A->n > 1 ? 'B' : 'A');
        return;
    }
    const an_host_time *ha = &A->runs[0].res->host_time, *hb = &B->runs[0].res->host_time;
    gs_out_str(o, "         one run a side cannot separate the change from the machine:\n");
    if (ha->measured && hb->measured) {
        gs_out_printf(o, "         other processes kept %.2f of %.4g CPUs busy in A, %.2f of %.4g "
                         "in B\n",
                      ha->other_cores, ha->cpus, hb->other_cores, hb->cpus);
    } else {
        load_text_of(o, 'A', ha);
        load_text_of(o, 'B', hb);
    }
    gs_out_str(o, "         run each side 3 times or more, interleaved (A B B A A B), and compare "
                  "the runs:\n         gpustarve compare A1 A2 A3 -- B1 B2 B3\n");
}

static void result_text(gs_out *o, const cmp_side *A, const cmp_side *B, const cmp_opts *opt,
                        const cmp_verdict *v)
{
    const an_ratio_ci *c = &v->ci;
    char iv[160] = "";
    if (c->has_interval)
        snprintf(iv, sizeof iv, "; %.0f%% interval %+.1f%% to %+.1f%% over %zu / %zu runs",
                 100 * c->conf, 100 * (c->lo - 1), 100 * (c->hi - 1), c->na, c->nb);
    else
        snprintf(iv, sizeof iv, ", %s", A->n == 1 && B->n == 1 ? "one run a side" : "no interval");
    const double pct = 100 * (c->ratio - 1), me = 100 * opt->min_effect;
    const char *by = cmp_by_name(opt);
    if (!strcmp(v->label, "no_op")) {
        gs_out_printf(o, "result   NO-OP: %s; %s step %.1f -> %.1f ms (%+.1f%%%s) is run-to-run "
                         "variation\n",
                      v->no_op_why, by, A->step.center, B->step.center, pct, iv);
    } else if (!strcmp(v->label, "no_proven_change")) {
        gs_out_printf(o, "result   NO PROVEN CHANGE: %s step %.1f -> %.1f ms (%+.1f%%%s)", by,
                      A->step.center, B->step.center, pct, iv);
        if (!strcmp(v->reason, "no_step_time"))
            gs_out_printf(o, ": a run's %s step is 0 ms, so there is no ratio\n", by);
        else if (!strcmp(v->reason, "within_min_effect"))
            gs_out_printf(o, ": any change is smaller than the %.3g%% minimum effect\n", me);
        else if (!strcmp(v->reason, "interval_too_wide"))
            gs_out_printf(o, ": the interval reaches within the %.3g%% minimum effect; more runs "
                             "a side narrow it\n", me);
        else {
            gs_out_char(o, '\n');
            one_run_text(o, A, B);
        }
    } else {
        gs_out_printf(o, "result   %s: %s step %.1f -> %.1f ms (%+.1f%%%s), beyond the %.3g%% "
                         "minimum effect\n",
                      !strcmp(v->label, "helped") ? "HELPED" : "HURT", by, A->step.center,
                      B->step.center, pct, iv, me);
    }
}

static void predict_text(gs_out *o, const cmp_opts *opt, const cmp_verdict *v)
{
    if (!v->npr) {
        gs_out_str(o, "predict  A had no advice with a predicted step time\n");
        return;
    }
    if (!v->napplied) {
        gs_out_str(o, "predict  B applied none of A's advice (");
        for (size_t i = 0; i < v->npr; i++) {
            char what[64];
            an_advice_text(v->pr[i].a, what, sizeof what);
            gs_out_printf(o, "%s%s", i ? ", " : "", what);
        }
        gs_out_str(o, ")\n");
        return;
    }
    if (!strcmp(v->outcome, "none"))
        return;
    const char *what = !strcmp(v->outcome, "held")     ? "HELD"
                       : !strcmp(v->outcome, "beaten") ? "BEATEN (B is faster than predicted)"
                       : !strcmp(v->outcome, "missed") ? "MISSED (B is slower than predicted)"
                                                       : "UNCLEAR (more runs a side)";
    gs_out_printf(o, "predict  %s: A predicted %.1f ms, B measured %.1f ms (%+.1f%%)",
                  v->applied_text, v->predicted_ms, v->actual_ms, 100 * v->err_rel);
    if (v->mean_ci.has_interval)
        gs_out_printf(o, "; B's mean step over A's %+.1f%% to %+.1f%% (%.0f%% interval) against "
                         "%+.1f%% predicted",
                      100 * (v->mean_ci.lo - 1), 100 * (v->mean_ci.hi - 1),
                      100 * v->mean_ci.conf, 100 * (v->pred_ratio - 1));
    gs_out_printf(o, ": %s\n", what);
    gs_out_printf(o, "         (held: %s within %.0f%% of the predicted step time)\n",
                  v->mean_ci.has_interval ? "the whole interval" : "B's mean step", 100 * opt->tol);
}

void cmp_write_text(gs_out *o, const cmp_side *A, const cmp_side *B, const cmp_opts *opt,
                    const cmp_verdict *v)
{
    head_text(o, A);
    head_text(o, B);
    table_text(o, A, B, opt, v);
    notes_text(o, A, B, opt);
    runs_text(o, A, B);
    gs_out_str(o, "\n");
    result_text(o, A, B, opt, v);
    predict_text(o, opt, v);
    if (opt->fail_if_slower >= 0)
        gs_out_printf(o, "gate     %s\n", v->gate_reason);
}
