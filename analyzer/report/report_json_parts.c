/* report_json_parts.c — the pieces of the report's JSON that other
 * documents print too (compare, the ranks, the measured time): numbers as
 * every report number is written, a step's parts, the advice, the verdict,
 * the DataLoader settings (report_json_parts.h).
 *
 * Must never: open or close the document (their callers do), or change a
 * field's meaning without the schema doc (docs/report-schema.md).
 */
#include "report/report_json_parts.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define NUM_DIGITS 9 /* %.9g: every number of the report */

void rep_json_num(gs_jw *w, double v)
{
    gs_jw_num(w, v, NUM_DIGITS);
}

void rep_json_num_or_null(gs_jw *w, const char *key, double v)
{
    gs_jw_key(w, key);
    if (v < 0)
        gs_jw_null(w);
    else
        rep_json_num(w, v);
}

void rep_json_bool_or_null(gs_jw *w, const char *key, int v)
{
    gs_jw_key(w, key);
    if (v < 0)
        gs_jw_null(w);
    else
        gs_jw_bool(w, v);
}

void rep_json_ms(gs_jw *w, uint64_t ns)
{
    gs_jw_fixed(w, (double)ns / 1e6, 6);
}

void rep_json_step_parts(gs_jw *w, const an_stepv *v)
{
    for (int k = 0; k < AN_NSH; k++) {
        char key[48];
        snprintf(key, sizeof key, "%s_ms", an_share_names[k]);
        gs_jw_key(w, key);
        rep_json_ms(w, an_stepv_part(v, k));
    }
}

void rep_json_advice_setting(gs_jw *w, const an_advice *a)
{
    gs_jw_kstr(w, "setting", an_advice_name(a));
    gs_jw_key(w, "value");
    if (!a->has_value)
        gs_jw_null(w);
    else if (a->setting == AN_ADV_SHARING_STRATEGY)
        gs_jw_str(w, "file_system");
    else if (a->setting != AN_ADV_NUM_WORKERS && a->setting != AN_ADV_PREFETCH_FACTOR)
        gs_jw_bool(w, 1); /* pin_memory, persistent_workers */
    else
        gs_jw_i64(w, a->value);
}

void rep_json_advice(gs_jw *w, const an_result *r)
{
    gs_jw_key(w, "advice");
    gs_jw_arr(w);
    for (size_t i = 0; i < r->nadvice; i++) {
        const an_advice *a = &r->advice[i];
        gs_jw_obj(w);
        rep_json_advice_setting(w, a);
        gs_jw_key(w, "predicted_step_ms");
        rep_json_num(w, a->predicted_step_ms);
        gs_jw_key(w, "predicted_saving_ms");
        rep_json_num(w, a->predicted_saving_ms);
        /* the statistic both are on, and the range (docs/report-schema.md, "Advice") */
        gs_jw_kstr(w, "predicted_base", a->base == AN_BASE_MEDIAN ? "median_step" : "mean_step");
        gs_jw_key(w, "predicted_range_ms");
        const double hi = fmax(a->worst_step_ms, a->lock_step_ms);
        if (hi > 0) {
            gs_jw_arr(w);
            rep_json_num(w, a->predicted_step_ms);
            rep_json_num(w, fmax(hi, a->predicted_step_ms));
            gs_jw_end(w);
        } else {
            gs_jw_null(w);
        }
        gs_jw_key(w, "interp_lock_step_ms");
        if (a->lock_step_ms > 0)
            rep_json_num(w, a->lock_step_ms);
        else
            gs_jw_null(w);
        gs_jw_kstr(w, "why", a->why);
        gs_jw_end(w);
    }
    gs_jw_end(w);
}

const char *const rep_cfg_keys[REP_NCFG] = {"num_workers",        "pin_memory",
                                            "batch_size",         "prefetch_factor",
                                            "persistent_workers", "sharing_strategy"};

void rep_json_verdict(gs_jw *w, const an_result *r)
{
    gs_jw_key(w, "verdict");
    gs_jw_obj(w);
    gs_jw_kstr(w, "label", an_verdict_label(r->verdict));
    gs_jw_kstr(w, "text", r->verdict_text);
    gs_jw_kbool(w, "borderline", r->borderline);
    gs_jw_end(w);
}

void rep_json_dataloader_settings(gs_jw *w, const an_result *r)
{
    const an_proc *tr = r->trainer;
    gs_jw_kbool(w, "known", tr->ncfg != 0);
    for (size_t i = 0; i < REP_NCFG; i++) {
        gs_jw_key(w, rep_cfg_keys[i]);
        rep_json_cfg(w, rep_cfg_keys[i], an_loader_cfg(r, rep_cfg_keys[i]));
    }
    /* RATIONALE: pin_memory=True without CUDA pins nothing; the Python side
     * records what the iterator does (docs/report-schema.md) */
    gs_jw_key(w, "pin_memory_effective");
    rep_json_cfg(w, "pin_memory_effective", an_cfg_value(tr, "pin_memory_effective"));
}

int rep_cfg_is_bool(const char *key)
{
    static const char *const bools[] = {"pin_memory", "pin_memory_effective",
                                        "persistent_workers", "drop_last"};
    if (!strncmp(key, "requested.", 10))
        key += 10;
    for (size_t i = 0; i < sizeof bools / sizeof bools[0]; i++)
        if (!strcmp(key, bools[i]))
            return 1;
    return 0;
}

/* 1, 0, or -1 when v is not a boolean's spelling. */
static int cfg_bool(const char *v)
{
    if (!strcasecmp(v, "true") || !strcmp(v, "1"))
        return 1;
    if (!strcasecmp(v, "false") || !strcmp(v, "0"))
        return 0;
    return -1;
}

void rep_json_cfg(gs_jw *w, const char *key, const char *v)
{
    if (!v || !strcmp(v, "none")) {
        gs_jw_null(w);
        return;
    }
    /* booleans are JSON booleans whatever the spelling ("1" from the Python
     * side, "True" from a hand-made trace) */
    const int b = cfg_bool(v);
    if (b >= 0 && (rep_cfg_is_bool(key) || isalpha((unsigned char)v[0]))) {
        gs_jw_bool(w, b);
        return;
    }
    char *end;
    errno = 0;
    long long n = strtoll(v, &end, 10);
    if (*v && !*end && !errno) {
        gs_jw_i64(w, n);
        return;
    }
    gs_jw_str(w, v);
}
