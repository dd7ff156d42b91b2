/* an_decision.c — the record a decision is written in (an_decide.h): its
 * notes, and the names its parts are printed by (the shares, the verdicts).
 * The verdict (an_verdict.c) and the advice (an_advice.c,
 * an_workers_model.c) both write notes here, so neither calls the other for
 * it.
 *
 * Must never: decide anything.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "decide/an_decide.h"

const char *const an_share_names[AN_NSH] = {
    "gpu_compute",    "gpu_comm",       "gpu_h2d_pinned",     "gpu_h2d_pageable",
    "gpu_copy_other", "idle_data_wait", "idle_pageable_copy", "idle_host",
};

void an_decide_note(an_decision *out, const char *fmt, ...)
{
    if (out->nnotes >= AN_DECIDE_NOTES)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(out->notes[out->nnotes++], sizeof out->notes[0], fmt, ap);
    va_end(ap);
}

const char *an_verdict_label(int v)
{
    switch (v) {
    case AN_V_HIGHLY: return "HIGHLY_INPUT_BOUND";
    case AN_V_MODERATELY: return "MODERATELY_INPUT_BOUND";
    case AN_V_NOT: return "NOT_INPUT_BOUND";
    case AN_V_HOST: return "HOST_BOUND";
    }
    return "NONE";
}

const char *an_count_name(int loader_kind)
{
    switch (loader_kind) {
    case AN_LOADER_THREADS: return "loader_threads";
    case AN_LOADER_PROCESSES: return "loader_processes";
    }
    return "num_workers";
}

an_advice an_advice_count(const an_decide_in *in, int has_value, long value, double predicted_ms,
                          int base, double base_step_ms)
{
    an_advice a;
    memset(&a, 0, sizeof a);
    a.setting = AN_ADV_NUM_WORKERS;
    a.loader_kind = in->loader_kind;
    a.has_value = has_value;
    a.value = value;
    a.predicted_step_ms = predicted_ms;
    a.predicted_saving_ms = base_step_ms - predicted_ms;
    a.base = base;
    a.base_step_ms = base_step_ms;
    return a;
}

const char *an_advice_name(const an_advice *a)
{
    if (a->setting == AN_ADV_PERSISTENT_WORKERS)
        return "persistent_workers";
    if (a->setting == AN_ADV_SHARING_STRATEGY)
        return "sharing_strategy";
    if (a->setting == AN_ADV_PREFETCH_FACTOR)
        return "prefetch_factor";
    return a->setting == AN_ADV_PIN_MEMORY ? "pin_memory" : an_count_name(a->loader_kind);
}

void an_advice_text(const an_advice *a, char *buf, size_t n)
{
    if ((a->setting == AN_ADV_NUM_WORKERS || a->setting == AN_ADV_PREFETCH_FACTOR) &&
        a->has_value)
        snprintf(buf, n, "%s=%ld", an_advice_name(a), a->value);
    else if (a->setting == AN_ADV_NUM_WORKERS)
        snprintf(buf, n, "%s", an_advice_name(a));
    else if (a->setting == AN_ADV_SHARING_STRATEGY)
        snprintf(buf, n, "%s=file_system", an_advice_name(a));
    else
        snprintf(buf, n, "%s=True", an_advice_name(a));
}

void an_decide_sweep(const an_decide_in *in, an_decision *out, int cur, int n)
{
    char list[64];
    if (cur < 0)
        cur = 0;
    if (an_decide_one_thread(in, cur))
        snprintf(list, sizeof list, "0,1");
    else if (n < cur && n > 1) /* fewer: n and the one below it beside now */
        snprintf(list, sizeof list, "%d,%d,%d", n - 1, n, cur);
    else if (n < cur)
        snprintf(list, sizeof list, "%d,%d", n, cur);
    else
        snprintf(list, sizeof list, "%d,%d,%d", cur, n, n + (n - cur > 1 ? n - cur : 2));
    /* RATIONALE: sweep sets num_workers only in a program whose DataLoader
     * takes it (it refuses otherwise); a thread pool or a C loader reads its
     * count its own way: NAME is its variable (or --set-arg OPTION=... its
     * argument), which only the program's author knows */
    if (in->loader_kind == AN_LOADER_DATALOADER)
        snprintf(out->model.sweep, sizeof out->model.sweep,
                 "gpustarve sweep --num-workers %s --steps 50 -- %s", list,
                 in->argv[0] ? in->argv : "COMMAND");
    else if (snprintf(out->model.sweep, sizeof out->model.sweep,
                      "gpustarve sweep --set NAME=%s --steps 50 -- %s", list,
                      in->argv[0] ? in->argv : "COMMAND") < 0)
        out->model.sweep[0] = '\0';
}
