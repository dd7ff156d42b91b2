/* compare.h — what the parts of `gpustarve compare` share: the runs of each
 * side, the verdict over runs, the prediction check and the CI gate
 * (cmd_compare.c loads and decides, compare_judge.c judges, compare_out.c
 * writes text and JSON).
 *
 * Must never: be included outside analyzer/cmd/compare*.c and cmd_compare.c.
 */
#ifndef GS_COMPARE_H
#define GS_COMPARE_H

#include <stddef.h>
#include <stdint.h>

#include "base/an_interval.h"
#include "base/out_buf.h"
#include "model/an_model.h"
#include "model/an_ranks.h"

#define CMP_MAX_RUNS 64 /* runs a side */
#define CMP_SCHEMA "gpustarve.compare/3"

/* One run directory, analysed as the report analyses it. */
typedef struct cmp_run {
    const char *dir;
    an_run run;
    an_job job;     /* its ranks (an_ranks.h) */
    an_result *res; /* the limiting rank's result, or the whole run's */
    int loaded, analysed;
    double *dur;    /* measured step lengths, ms */
    size_t n;
    double pageable_ms; /* per measured step: gpu_h2d_pageable + idle_pageable_copy */
    uint64_t pageable_bytes;
} cmp_run;

/* A side: its runs, the run the descriptive rows come from, the numbers over runs. */
typedef struct cmp_side {
    char name; /* 'A' or 'B' */
    cmp_run *runs;
    size_t n;
    size_t mid;     /* the middle run: its step (cmp_samples) is the side's median (lower middle) */
    double medians[CMP_MAX_RUNS], means[CMP_MAX_RUNS]; /* each run's step, ms */
    an_log_ci step; /* geometric mean of the runs' steps (cmp_samples), and its interval */
    double other_load;  /* other processes' load, CPUs, mean over the runs measuring it; -1 none */
    double cpus;        /* the CPUs those samples sum (the first run's) */
    size_t nload;       /* runs that measured it */
    int cfg_differs;    /* the runs' DataLoader settings are not all the same */
} cmp_side;

/* A's advice with a value, and whether B's configuration took it. */
typedef struct cmp_pred {
    const an_advice *a;
    int applied;
} cmp_pred;

#define CMP_MAX_PRED 8

typedef struct cmp_opts {
    double tol;            /* a prediction holds within this fraction */
    double min_effect;     /* the smallest change worth calling, a fraction */
    double conf;           /* of the interval */
    double fail_if_slower; /* the gate: < 0 none */
    int by_median;         /* a run's sample is its median step (--by median), else its mean */
    int json;
} cmp_opts;

/* Each run's sample of a side: its mean step (the time per step, what the
 * report's predictions are of), or with --by median its median step. */
static inline const double *cmp_samples(const cmp_side *s, const cmp_opts *o)
{
    return o->by_median ? s->medians : s->means;
}

/* The statistic judged, as the text and JSON name it. */
static inline const char *cmp_by_name(const cmp_opts *o)
{
    return o->by_median ? "median" : "mean";
}

typedef struct cmp_verdict {
    const char *label;  /* helped / hurt / no_proven_change / no_op */
    const char *reason; /* of no_proven_change: too_few_runs / within_min_effect / interval_too_wide */
    char no_op_why[200];
    an_ratio_ci ci;     /* B's step over A's: the runs' steps (cmp_samples) */
    double change_ms;   /* B's geometric mean of the runs' steps - A's */
    /* the prediction: A's middle run's advice that B applied */
    cmp_pred pr[CMP_MAX_PRED];
    size_t npr, napplied;
    char applied_text[160];
    const char *outcome;   /* held / beaten / missed / unclear / none */
    double pred_ratio;     /* the predicted step over A's mean step */
    an_ratio_ci mean_ci;   /* B's mean step over A's: the runs' mean steps */
    double predicted_ms, actual_ms, err_rel;
    /* the gate */
    int gate_failed;
    char gate_reason[320];
} cmp_verdict;

/* compare_judge.c: the verdict, the prediction, the gate. */
void cmp_judge(const cmp_side *A, const cmp_side *B, const cmp_opts *o, cmp_verdict *v);

/* compare_out.c: the outputs. */
void cmp_write_text(gs_out *o, const cmp_side *A, const cmp_side *B, const cmp_opts *opt,
                    const cmp_verdict *v);
void cmp_write_json(gs_out *o, const cmp_side *A, const cmp_side *B, const cmp_opts *opt,
                    const cmp_verdict *v);

/* The middle run of a side. */
static inline const cmp_run *cmp_mid(const cmp_side *s)
{
    return &s->runs[s->mid];
}

#endif
