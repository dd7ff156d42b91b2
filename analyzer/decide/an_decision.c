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
