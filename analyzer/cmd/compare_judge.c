/* compare_judge.c — `gpustarve compare`'s judgement over runs: did the
 * change help (the interval of B's step time over A's, over the runs of
 * each side, each run's mean step or median (--by), against the minimum
 * effect), is it a change that cannot have done anything (pin_memory
 * without CUDA), did A's prediction for what B applied hold (against the
 * interval of the mean steps), and the CI gate (--fail-if-slower).
 * docs/report-outputs.md, `gpustarve compare`.
 *
 * Must never: call a change helped or hurt without an interval over at
 * least two runs a side that clears the minimum effect, or read a trace.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cmd/compare.h"
#include "report/report_json_parts.h"

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

/* 1 when the DataLoader settings of a and b differ in pin_memory alone and
 * the side that asked for it did not pin (pin_memory_effective false: no
 * CUDA): the change cannot have changed anything. */
static int pin_change_is_noop(const an_result *ra, const an_result *rb)
{
    int pin_changed = 0;
    for (size_t i = 0; i < REP_NCFG; i++) {
        const char *x = an_loader_cfg(ra, rep_cfg_keys[i]), *y = an_loader_cfg(rb, rep_cfg_keys[i]);
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
    const an_result *on = ra->cur_pin_memory == 1 ? ra : rb;
    const an_result *off = on == ra ? rb : ra;
    return on->cur_pin_memory == 1 && on->pin_effective == 0 && off->cur_pin_memory == 0 &&
           off->pin_effective != 1;
}

static void judge_change(const cmp_side *A, const cmp_side *B, const cmp_opts *o, cmp_verdict *v)
{
    v->change_ms = B->step.center - A->step.center;
    v->label = "no_proven_change";
    if (an_ratio_ci_of(cmp_samples(A, o), A->n, cmp_samples(B, o), B->n, o->conf, &v->ci) != 0) {
        /* a run whose step is 0 ms (a damaged trace): no ratio */
        v->ci = (an_ratio_ci){.na = A->n, .nb = B->n, .ratio = NAN, .lo = NAN, .hi = NAN,
                              .conf = o->conf};
        v->reason = "no_step_time";
    }
    switch (an_change_of(&v->ci, o->min_effect)) {
    case AN_CHANGE_FASTER: v->label = "helped"; v->reason = NULL; break;
    case AN_CHANGE_SLOWER: v->label = "hurt"; v->reason = NULL; break;
    case AN_CHANGE_SAME: v->reason = "within_min_effect"; break;
    default:
        if (!v->reason)
            v->reason = v->ci.has_interval ? "interval_too_wide" : "too_few_runs";
        break;
    }
    v->no_op_why[0] = '\0';
    if (pin_change_is_noop(cmp_mid(A)->res, cmp_mid(B)->res)) {
        /* RATIONALE: a difference the change cannot have caused is the
         * machine's run-to-run variation, however clear its interval */
        v->label = "no_op";
        v->reason = NULL;
        snprintf(v->no_op_why, sizeof v->no_op_why,
                 "only pin_memory changed, and the run with pin_memory=True pinned nothing "
                 "(pin_memory_effective=False: no CUDA device)");
    }
}

static int advice_applied(const an_advice *a, const an_result *b)
{
    if (a->setting == AN_ADV_NUM_WORKERS)
        return b->cur_workers == a->value;
    if (a->setting == AN_ADV_PIN_MEMORY)
        return b->cur_pin_memory == 1;
    if (a->setting == AN_ADV_PERSISTENT_WORKERS) {
        const char *v = b->trainer ? an_cfg_value(b->trainer, "persistent_workers") : NULL;
        return v && (!strcmp(v, "1") || !strcasecmp(v, "true"));
    }
    if (a->setting == AN_ADV_SHARING_STRATEGY) {
        const char *v = an_loader_cfg(b, "sharing_strategy");
        return v && !strcmp(v, "file_system");
    }
    if (a->setting == AN_ADV_PREFETCH_FACTOR) {
        const char *v = b->trainer ? an_cfg_value(b->trainer, "prefetch_factor") : NULL;
        return v && atol(v) == a->value;
    }
    return 0;
}

/* The prediction for what B applied, from A's middle run: one change, its
 * predicted step; several, A's mean step less the sum of their savings.
 * Predictions are of the time per step, so the mean steps are what they
 * are held to (docs/report-outputs.md); as a ratio to A's mean step, held
 * against the interval of B's mean step over A's. */
static void judge_prediction(const cmp_side *A, const cmp_side *B, const cmp_opts *o,
                             cmp_verdict *v)
{
    const an_result *ra = cmp_mid(A)->res, *rb = cmp_mid(B)->res;
    v->npr = v->napplied = 0;
    v->applied_text[0] = '\0';
    v->outcome = "none";
    double saving = 0, single = 0;
    for (size_t i = 0; i < ra->nadvice && v->npr < CMP_MAX_PRED; i++) {
        const an_advice *a = &ra->advice[i];
        if (!a->has_value)
            continue;
        cmp_pred *p = &v->pr[v->npr++];
        p->a = a;
        p->applied = advice_applied(a, rb);
        if (!p->applied)
            continue;
        saving += a->predicted_saving_ms;
        single = a->predicted_step_ms;
        const size_t l = strlen(v->applied_text);
        char what[64];
        an_advice_text(a, what, sizeof what);
        snprintf(v->applied_text + l, sizeof v->applied_text - l, "%s%s", l ? " + " : "", what);
        v->napplied++;
    }
    if (!v->napplied || !(ra->step_ms_mean > 0))
        return;
    double predicted = v->napplied == 1 ? single : ra->step_ms_mean - saving;
    if (predicted < 0)
        predicted = 0;
    v->pred_ratio = predicted / ra->step_ms_mean;
    if (an_ratio_ci_of(A->means, A->n, B->means, B->n, o->conf, &v->mean_ci) != 0)
        return;
    /* on the scale of the sides' mean steps over their runs */
    double ga = 0;
    for (size_t i = 0; i < A->n; i++)
        ga += log(A->means[i]);
    ga = exp(ga / (double)A->n);
    v->predicted_ms = v->pred_ratio * ga;
    v->actual_ms = v->mean_ci.ratio * ga;
    v->err_rel = v->predicted_ms > 0 ? v->actual_ms / v->predicted_ms - 1 : 0;
    const double lo = v->pred_ratio * (1 - o->tol), hi = v->pred_ratio * (1 + o->tol);
    if (v->mean_ci.lo >= lo && v->mean_ci.hi <= hi)
        v->outcome = "held";
    else if (v->mean_ci.lo > hi)
        v->outcome = "missed";
    else if (v->mean_ci.hi < lo)
        v->outcome = "beaten";
    else
        v->outcome = "unclear";
}

/* --fail-if-slower: fail only when the interval shows B slower beyond the limit. */
static void judge_gate(const cmp_opts *o, cmp_verdict *v)
{
    v->gate_failed = 0;
    v->gate_reason[0] = '\0';
    if (o->fail_if_slower < 0)
        return;
    const an_ratio_ci *c = &v->ci;
    const double lim = 100 * o->fail_if_slower;
    if (!isfinite(c->ratio)) {
        snprintf(v->gate_reason, sizeof v->gate_reason,
                 "PASS: nothing proven: a run's %s step is 0 ms", cmp_by_name(o));
        return;
    }
    if (!c->has_interval) {
        snprintf(v->gate_reason, sizeof v->gate_reason,
                 "PASS: nothing proven with one run on a side (B %+.1f%%); run each side 3 or "
                 "more times to gate on a slowdown beyond %.3g%%",
                 100 * (c->ratio - 1), lim);
        return;
    }
    v->gate_failed = c->lo > 1 + o->fail_if_slower;
    snprintf(v->gate_reason, sizeof v->gate_reason,
             "%s: B's %s step %+.1f%% (%.0f%% interval %+.1f%% to %+.1f%%, %zu / %zu runs) %s "
             "slower than A by more than %.3g%%",
             v->gate_failed ? "FAIL" : "PASS", cmp_by_name(o), 100 * (c->ratio - 1), 100 * c->conf,
             100 * (c->lo - 1), 100 * (c->hi - 1), c->na, c->nb,
             v->gate_failed ? "is" : "is not proven", lim);
}

void cmp_judge(const cmp_side *A, const cmp_side *B, const cmp_opts *o, cmp_verdict *v)
{
    memset(v, 0, sizeof *v);
    judge_change(A, B, o, v);
    judge_prediction(A, B, o, v);
    judge_gate(o, v);
}
