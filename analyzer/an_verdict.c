/* an_verdict.c — the verdict: is the run input-bound, and how much.
 *
 * Bands (docs/report-schema.md, "Verdict"): HOST-BOUND when the GPU idles
 * for host reasons at least HOST_SHARE of the time and more than it waits
 * for data and pageable copies together; else HIGHLY INPUT-BOUND at an input
 * share of HIGHLY_SHARE or more, MODERATELY at MODERATELY_SHARE or more,
 * else NOT INPUT-BOUND.
 *
 * Must never: look at anything but its an_decide_in.
 */
#include <stdio.h>

#include "an_decide.h"

#define HIGHLY_SHARE 0.20
#define MODERATELY_SHARE 0.05
#define HOST_SHARE 0.20

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

void an_decide_verdict(const an_decide_in *in, an_decision *out)
{
    const double inp = in->input_share;
    const double host = in->share[AN_SH_HOST];
    const char *of = in->no_gpu ? "of its time" : "of every step";
    char *text = out->verdict_text;
    const size_t cap = sizeof out->verdict_text;
    if (!in->no_gpu && host >= HOST_SHARE &&
        host > in->share[AN_SH_DATA_WAIT] + in->share[AN_SH_PAGEABLE_COPY]) {
        out->verdict = AN_V_HOST;
        snprintf(text, cap,
                 "HOST-BOUND: the GPU idles %.0f%% of the time for host reasons (Python, "
                 "preprocessing in the training thread, launch overhead); data wait %.0f%%",
                 100 * host, 100 * in->share[AN_SH_DATA_WAIT]);
    } else if (inp >= HIGHLY_SHARE) {
        out->verdict = AN_V_HIGHLY;
        snprintf(text, cap, "HIGHLY INPUT-BOUND: the %s waits for data %.0f%% %s",
                 in->no_gpu ? "training thread" : "GPU", 100 * inp, of);
    } else if (inp >= MODERATELY_SHARE) {
        out->verdict = AN_V_MODERATELY;
        snprintf(text, cap, "MODERATELY INPUT-BOUND: the %s waits for data %.0f%% %s",
                 in->no_gpu ? "training thread" : "GPU", 100 * inp, of);
    } else {
        out->verdict = AN_V_NOT;
        if (in->no_gpu)
            snprintf(text, cap,
                     "NOT INPUT-BOUND: the training thread waits for data %.0f%% of its time",
                     100 * inp);
        else
            snprintf(text, cap,
                     "NOT INPUT-BOUND: the GPU is busy %.0f%% of each step, waits for data %.0f%%",
                     100 * (in->share[AN_SH_COMPUTE] + in->share[AN_SH_COMM] +
                            in->share[AN_SH_H2D_PINNED] + in->share[AN_SH_H2D_PAGEABLE] +
                            in->share[AN_SH_COPY_OTHER]),
                     100 * inp);
    }
}
