/* sweep_out.c — `gpustarve sweep`'s outputs: the table (a column per
 * setting swept, each configuration's step time over its runs with its 95%
 * interval, data wait, pageable copy time, verdict, source, runs), the
 * best configuration with how sure that is, and the same as JSON (schema
 * gpustarve.sweep/3, docs/python.md).
 *
 * Must never: judge (sweep_judge.c does), or write anything but the result.
 */
#include <stdlib.h>
#include <string.h>

#include "cmd/cli_util.h"
#include "cmd/sweep.h"

static int runs_started(const sw_sweep *s, const sw_config *c)
{
    int n = 0;
    for (int r = 0; r < s->rounds; r++)
        n += c->runs[r].exit_code >= 0;
    return n;
}

static const char *stopped_text(const char *stopped)
{
    if (!strcmp(stopped, "proven"))
        return "stopped early: the fastest is proven";
    if (!strcmp(stopped, "tie"))
        return "stopped early: the fastest are proven tied";
    if (!strcmp(stopped, "budget"))
        return "stopped at the --budget";
    if (!strcmp(stopped, "interrupted"))
        return "interrupted";
    return "every round run";
}

static void table_head(gs_out *o, const sw_sweep *s, const int *w)
{
    gs_out_str(o, " ");
    for (int a = 0; a < s->naxes; a++)
        gs_out_printf(o, " %-*s", w[a], s->axes[a].name);
    gs_out_printf(o, " %9s %13s %10s %12s  %-22s %-8s %s\n", "step ms", "95% interval",
                  "data wait", "pageable ms", "verdict", "source", "runs");
}

static void table_row(gs_out *o, const sw_sweep *s, const sw_config *c, const int *w, int best)
{
    gs_out_str(o, best ? "*" : " ");
    for (int a = 0; a < s->naxes; a++)
        gs_out_printf(o, " %-*s", w[a], sw_value_text(&s->axes[a], c->val[a]));
    if (c->left_out) {
        gs_out_str(o, " left out: pin_memory=True is a no-op for this command (no CUDA: the "
                      "DataLoader pins nothing)\n");
        return;
    }
    if (!c->nok) {
        gs_out_printf(o, " %9s %13s %10s %12s  %-22s %-8s 0/%d\n", "-", "-", "-", "-", "failed",
                      "-", runs_started(s, c));
        return;
    }
    char iv[40] = "-";
    if (c->step.has_interval)
        snprintf(iv, sizeof iv, "%.1f-%.1f", c->step.lo, c->step.hi);
    gs_out_printf(o, " %9.1f %13s %9.1f%% %12.2f  %-22s %-8s %u/%d\n", c->step.center, iv,
                  100 * c->dw_share, c->pg_ms, c->verdict, c->source ? c->source : "-", c->nok,
                  runs_started(s, c));
}

void sw_print_table(gs_out *o, const sw_sweep *s, const sw_best *b, const sw_report *r)
{
    gs_out_printf(o, "sweep  %d configuration%s, %d round%s of at most %ld (%s), %ld measured "
                     "steps each (%ld warm-up left out), each run's %s step one sample; runs "
                     "kept in %s\n\n",
                  s->nc, s->nc == 1 ? "" : "s", s->rounds, s->rounds == 1 ? "" : "s",
                  r->max_rounds, stopped_text(r->stopped), r->steps, r->warmup, sw_by_name(s),
                  r->outdir);
    int w[SW_MAX_AXES];
    for (int a = 0; a < s->naxes; a++) {
        w[a] = (int)strlen(s->axes[a].name);
        for (int v = 0; v < s->axes[a].nvals; v++) {
            const int l = (int)strlen(sw_value_text(&s->axes[a], v));
            w[a] = l > w[a] ? l : w[a];
        }
    }
    table_head(o, s, w);
    for (int i = 0; i < s->nc; i++)
        table_row(o, s, &s->cs[i], w, i == b->best);
    gs_out_char(o, '\n');
    if (b->best < 0) {
        gs_out_str(o, "best   none: no configuration could be measured\n");
        return;
    }
    char lb[256];
    sw_config_label(s, &s->cs[b->best], lb, sizeof lb);
    gs_out_printf(o, "best   %s  (%s) %s step %.1f ms\n       %s\n", lb,
                  !strcmp(b->certainty, "not_proven") ? "not proven" : b->certainty,
                  sw_by_name(s), s->cs[b->best].step.center, b->why);
    for (int i = 0; i < b->nvs; i++) {
        const sw_versus *v = &b->vs[i];
        char l[256];
        sw_config_label(s, &s->cs[v->other], l, sizeof l);
        gs_out_printf(o, "       against %s: %+.1f%%", l, 100 * (v->ci.ratio - 1));
        if (v->ci.has_interval)
            gs_out_printf(o, " (%+.1f%% to %+.1f%%)%s", 100 * (v->ci.lo - 1),
                          100 * (v->ci.hi - 1),
                          v->change == AN_CHANGE_FASTER ? " faster, proven"
                          : v->change == AN_CHANGE_SAME ? " the same within the minimum effect"
                                                        : "");
        gs_out_char(o, '\n');
    }
}

/* ---- JSON ----------------------------------------------------------------------- */

static const char *kind_name(sw_kind k)
{
    return sw_is_dataloader(k) ? "dataloader" : k == SW_ENV ? "env" : "arg";
}

/* The value of a setting, typed: a number or a boolean for a DataLoader
 * setting, a string otherwise. */
static void json_value(gs_jw *w, const sw_axis *ax, int v)
{
    const sw_dl_type t = sw_axis_type(ax);
    if (t == SW_BOOL)
        gs_jw_bool(w, !strcmp(ax->vals[v], "1"));
    else if (t == SW_COUNT)
        gs_jw_i64(w, strtol(ax->vals[v], NULL, 10));
    else
        gs_jw_str(w, ax->vals[v]);
}

static void json_settings(gs_jw *w, const sw_sweep *s, const sw_config *c)
{
    gs_jw_key(w, "settings");
    gs_jw_obj(w);
    for (int a = 0; a < s->naxes; a++) {
        gs_jw_key(w, s->axes[a].name);
        json_value(w, &s->axes[a], c->val[a]);
    }
    gs_jw_end(w);
    /* num_workers and pin_memory as before: null when not swept */
    static const sw_kind keep[] = {SW_NUM_WORKERS, SW_PIN_MEMORY};
    for (int k = 0; k < 2; k++) {
        gs_jw_key(w, keep[k] == SW_NUM_WORKERS ? "num_workers" : "pin_memory");
        int found = -1;
        for (int a = 0; a < s->naxes; a++)
            if (s->axes[a].kind == keep[k])
                found = a;
        if (found < 0)
            gs_jw_null(w);
        else
            json_value(w, &s->axes[found], c->val[found]);
    }
}

/* "lo" and "hi" members: numbers, or null without an interval. */
static void json_lohi(gs_jw *w, const char *klo, const char *khi, int have, double lo, double hi,
                      int digits)
{
    if (have) {
        gs_jw_kfixed(w, klo, lo, digits);
        gs_jw_kfixed(w, khi, hi, digits);
    } else {
        gs_jw_knull(w, klo);
        gs_jw_knull(w, khi);
    }
}

static void json_run(gs_jw *w, const sw_run *run)
{
    const sw_metrics *m = &run->m;
    gs_jw_obj(w);
    gs_jw_kstr(w, "dir", run->dir);
    gs_jw_kstr(w, "log", run->log);
    gs_jw_key(w, "exit");
    if (run->exit_code >= 0)
        gs_jw_i64(w, run->exit_code);
    else
        gs_jw_null(w);
    gs_jw_kfixed(w, "wall_s", run->wall_s, 3);
    if (!m->ok) {
        const char *keys[] = {"step_ms_median", "step_ms_mean", "data_wait_share",
                              "pageable_copy_ms", "verdict", "source", "steps"};
        for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
            gs_jw_knull(w, keys[i]);
    } else {
        gs_jw_kfixed(w, "step_ms_median", m->step_ms, 4);
        gs_jw_kfixed(w, "step_ms_mean", m->step_mean_ms, 4);
        gs_jw_kfixed(w, "data_wait_share", m->dw_share, 5);
        gs_jw_kfixed(w, "pageable_copy_ms", m->pg_ms, 4);
        gs_jw_kstr(w, "verdict", m->verdict);
        gs_jw_kstr(w, "source", m->source);
        gs_jw_ku64(w, "steps", m->steps);
    }
    gs_jw_kstr(w, "not_applied", m->not_applied[0] ? m->not_applied : NULL);
    gs_jw_end(w);
}

static void json_config(gs_jw *w, const sw_sweep *s, const sw_config *c, int best)
{
    gs_jw_obj(w);
    json_settings(w, s, c);
    gs_jw_kbool(w, "best", best);
    gs_jw_kstr(w, "left_out", c->left_out ? "pin_memory_noop" : NULL);
    gs_jw_ku64(w, "measured_runs", c->nok);
    if (c->nok) {
        gs_jw_kfixed(w, "step_ms", c->step.center, 4);
        json_lohi(w, "step_ms_lo", "step_ms_hi", c->step.has_interval, c->step.lo, c->step.hi, 4);
        gs_jw_kfixed(w, "step_ms_min", c->step_min, 4);
        gs_jw_kfixed(w, "step_ms_max", c->step_max, 4);
        gs_jw_kfixed(w, "data_wait_share", c->dw_share, 5);
        gs_jw_kfixed(w, "pageable_copy_ms", c->pg_ms, 4);
        gs_jw_kstr(w, "verdict", c->verdict);
        gs_jw_kstr(w, "source", c->source);
    } else {
        const char *keys[] = {"step_ms", "step_ms_lo", "step_ms_hi", "step_ms_min", "step_ms_max",
                              "data_wait_share", "pageable_copy_ms", "verdict", "source"};
        for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
            gs_jw_knull(w, keys[i]);
    }
    gs_jw_key(w, "runs");
    gs_jw_arr(w);
    for (int r = 0; r < s->rounds; r++)
        json_run(w, &c->runs[r]);
    gs_jw_end(w);
    gs_jw_end(w);
}

static void json_best(gs_jw *w, const sw_sweep *s, const sw_best *b)
{
    gs_jw_key(w, "best");
    if (b->best < 0) {
        gs_jw_null(w);
        return;
    }
    const sw_config *c = &s->cs[b->best];
    gs_jw_obj(w);
    json_settings(w, s, c);
    gs_jw_kfixed(w, "step_ms", c->step.center, 4);
    gs_jw_kstr(w, "certainty", b->certainty);
    gs_jw_kbool(w, "proven", !strcmp(b->certainty, "proven"));
    gs_jw_kfixed(w, "margin", b->margin, 4);
    gs_jw_key(w, "confidence");
    if (b->look > 0)
        gs_jw_fixed(w, b->conf, 6);
    else
        gs_jw_null(w);
    gs_jw_kstr(w, "why", b->why);
    gs_jw_key(w, "versus");
    gs_jw_arr(w);
    for (int i = 0; i < b->nvs; i++) {
        const sw_versus *v = &b->vs[i];
        static const char *const names[] = {"unproven", "faster", "slower", "same"};
        gs_jw_obj(w);
        json_settings(w, s, &s->cs[v->other]);
        gs_jw_kfixed(w, "ratio", v->ci.ratio, 6);
        json_lohi(w, "lo", "hi", v->ci.has_interval, v->ci.lo, v->ci.hi, 6);
        gs_jw_kstr(w, "change", names[v->change]);
        gs_jw_end(w);
    }
    gs_jw_end(w);
    gs_jw_end(w);
}

void sw_write_json(gs_out *o, const sw_sweep *s, const sw_best *b, const sw_report *r)
{
    gs_jw jw, *w = &jw;
    gs_jw_init(w, o);
    gs_jw_obj(w);
    gs_jw_kstr(w, "schema", SW_SCHEMA);
    gs_jw_key(w, "command");
    gs_jw_arr(w);
    for (int i = 0; r->cmd[i]; i++)
        gs_jw_str(w, r->cmd[i]);
    gs_jw_end(w);
    gs_jw_ki64(w, "steps", r->steps);
    gs_jw_ki64(w, "warmup", r->warmup);
    gs_jw_ki64(w, "max_rounds", r->max_rounds);
    gs_jw_ki64(w, "rounds", s->rounds);
    gs_jw_key(w, "budget");
    gs_jw_obj(w);
    gs_jw_key(w, "runs");
    if (r->budget_runs > 0)
        gs_jw_i64(w, r->budget_runs);
    else
        gs_jw_null(w);
    gs_jw_key(w, "seconds");
    if (r->budget_s > 0)
        gs_jw_fixed(w, r->budget_s, 1);
    else
        gs_jw_null(w);
    gs_jw_end(w);
    gs_jw_kfixed(w, "min_effect", s->min_effect, 4);
    gs_jw_kstr(w, "by", sw_by_name(s));
    gs_jw_kstr(w, "stopped", r->stopped);
    gs_jw_kstr(w, "out_dir", r->outdir);
    int noop = 0;
    for (int i = 0; i < s->nc; i++)
        noop |= s->cs[i].left_out;
    gs_jw_kbool(w, "pin_memory_noop", noop);
    gs_jw_key(w, "swept");
    gs_jw_arr(w);
    for (int a = 0; a < s->naxes; a++) {
        gs_jw_obj(w);
        gs_jw_kstr(w, "name", s->axes[a].name);
        gs_jw_kstr(w, "kind", kind_name(s->axes[a].kind));
        gs_jw_key(w, "values");
        gs_jw_arr(w);
        for (int v = 0; v < s->axes[a].nvals; v++)
            json_value(w, &s->axes[a], v);
        gs_jw_end(w);
        gs_jw_end(w);
    }
    gs_jw_end(w);
    gs_jw_key(w, "configs");
    gs_jw_arr(w);
    for (int i = 0; i < s->nc; i++)
        json_config(w, s, &s->cs[i], i == b->best);
    gs_jw_end(w);
    json_best(w, s, b);
    gs_jw_end(w);
    gs_out_char(o, '\n');
}
