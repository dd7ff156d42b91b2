/* an_verdict.c — the verdict: is the run input-bound, and how much.
 *
 * Bands (docs/report-schema.md, "Verdict"): HOST-BOUND when the GPU idles
 * for host reasons at least HOST_SHARE of the time and more than it waits
 * for data and pageable copies together; else HIGHLY INPUT-BOUND at an input
 * share of HIGHLY_SHARE or more, MODERATELY at MODERATELY_SHARE or more,
 * else NOT INPUT-BOUND. The text quotes the share table's data-wait figure
 * (and the median step's when it differs), and calls the verdict borderline
 * when input_share's step-to-step interval (an_spread.c) straddles the band
 * edge.
 *
 * Must never: look at anything but its an_decide_in.
 */
#include <stdio.h>

#include "decide/an_decide.h"

#define HIGHLY_SHARE 0.20
#define MODERATELY_SHARE 0.05
#define HOST_SHARE 0.20

/* The band edges an interval [lo, hi] straddles: the edge and the labels on
 * either side, or NULL. */
static const char *straddled(double lo, double hi, double *edge, const char **below)
{
    if (lo < HIGHLY_SHARE && hi >= HIGHLY_SHARE) {
        *edge = HIGHLY_SHARE;
        *below = "MODERATELY";
        return "HIGHLY";
    }
    if (lo < MODERATELY_SHARE && hi >= MODERATELY_SHARE) {
        *edge = MODERATELY_SHARE;
        *below = "NOT";
        return "MODERATELY";
    }
    return NULL;
}

void an_decide_verdict(const an_decide_in *in, an_decision *out)
{
    const double inp = in->input_share;
    const double host = in->share[AN_SH_HOST];
    const char *of = in->no_gpu ? "of its time" : "of every step";
    const char *who = in->no_gpu ? "training thread" : "GPU";
    char *text = out->verdict_text;
    const size_t cap = sizeof out->verdict_text;
    /* RATIONALE: the text quotes the share table's data-wait figure; when
     * the median step's share (which can decide the band, "Summary numbers")
     * is larger, it is named beside it, so the line and the table agree */
    const double dw = in->share[AN_SH_DATA_WAIT];
    char median[64] = "";
    if ((int)(100 * inp + 0.5) != (int)(100 * dw + 0.5))
        snprintf(median, sizeof median, " (the median step %.0f%%)", 100 * inp);
    out->borderline = 0;
    if (!in->no_gpu && host >= HOST_SHARE &&
        host > in->share[AN_SH_DATA_WAIT] + in->share[AN_SH_PAGEABLE_COPY]) {
        out->verdict = AN_V_HOST;
        snprintf(text, cap,
                 "HOST-BOUND: the GPU idles %.0f%% of the time for host reasons (Python, "
                 "preprocessing in the training thread, launch overhead); data wait %.0f%%",
                 100 * host, 100 * in->share[AN_SH_DATA_WAIT]);
        return;
    }
    int n;
    if (inp >= HIGHLY_SHARE) {
        out->verdict = AN_V_HIGHLY;
        n = snprintf(text, cap, "HIGHLY INPUT-BOUND: the %s waits for data %.0f%% %s%s", who,
                     100 * dw, of, median);
    } else if (inp >= MODERATELY_SHARE) {
        out->verdict = AN_V_MODERATELY;
        n = snprintf(text, cap, "MODERATELY INPUT-BOUND: the %s waits for data %.0f%% %s%s", who,
                     100 * dw, of, median);
    } else {
        out->verdict = AN_V_NOT;
        if (in->no_gpu)
            n = snprintf(text, cap,
                         "NOT INPUT-BOUND: the training thread waits for data %.0f%% of its "
                         "time%s",
                         100 * dw, median);
        else
            n = snprintf(text, cap,
                         "NOT INPUT-BOUND: the GPU is busy %.0f%% of each step, waits for data "
                         "%.0f%%%s",
                         100 * (in->share[AN_SH_COMPUTE] + in->share[AN_SH_COMM] +
                                in->share[AN_SH_H2D_PINNED] + in->share[AN_SH_H2D_PAGEABLE] +
                                in->share[AN_SH_COPY_OTHER]),
                         100 * dw, median);
    }
    double edge;
    const char *below, *above = straddled(in->input_share_lo, in->input_share_hi, &edge, &below);
    if (above && n > 0 && (size_t)n < cap) {
        out->borderline = 1;
        snprintf(text + n, cap - (size_t)n,
                 "; borderline: from step to step it lies in %.0f-%.0f%% (95%%), across the "
                 "%.0f%% line between %s and %s, so runs may differ in label",
                 100 * in->input_share_lo, 100 * in->input_share_hi, 100 * edge, below, above);
    }
}
