/* sweep.h — what the parts of `gpustarve sweep` share: the settings swept,
 * the configurations and their runs, the judgement after each round
 * (cmd_sweep.c: options, rounds, stopping; sweep_run.c: starting and
 * measuring a run; sweep_judge.c: intervals and the proven winner;
 * sweep_out.c: table and JSON).
 *
 * Must never: be included outside analyzer/cmd/sweep*.c and cmd_sweep.c.
 */
#ifndef GS_SWEEP_H
#define GS_SWEEP_H

#include <signal.h>
#include <stddef.h>

#include "base/an_interval.h"
#include "base/out_buf.h"

#define SW_MAX_VALUES 64  /* values of one setting; rounds */
#define SW_MAX_AXES 8     /* settings swept together */
#define SW_MAX_CONFIGS 256
#define SW_SCHEMA "gpustarve.sweep/3"

/* A setting swept: a DataLoader argument the Python side applies, an
 * environment variable (--set) or a command-line argument (--set-arg). */
typedef enum sw_kind {
    SW_NUM_WORKERS,
    SW_PIN_MEMORY,
    SW_PREFETCH_FACTOR,
    SW_PERSISTENT_WORKERS,
    SW_SHARING_STRATEGY,
    SW_ENV,
    SW_ARG,
} sw_kind;

typedef struct sw_axis {
    sw_kind kind;
    char name[64];  /* num_workers..., the variable's name, or the argument ("--threads") */
    const char *vals[SW_MAX_VALUES]; /* as given; DataLoader booleans as "0" / "1" */
    int nvals;
    char buf[1024];                  /* the list, split at its commas */
    char norm[SW_MAX_VALUES][16];    /* DataLoader values, normalised */
} sw_axis;

/* 1 for the DataLoader settings (applied by the Python side). */
static inline int sw_is_dataloader(sw_kind k)
{
    return k <= SW_SHARING_STRATEGY;
}

/* What a DataLoader setting's values are: counts, 0/1 (True/False), or
 * names (torch's sharing strategies). */
typedef enum sw_dl_type { SW_COUNT, SW_BOOL, SW_NAME } sw_dl_type;

/* A DataLoader setting (sweep_run.c): its option without "--", its config
 * key in the trace (docs/python.md), the variable the Python side applies
 * it from, its tag in run names, its values. Indexed by sw_kind. */
typedef struct sw_dl_setting {
    const char *option, *key, *env, *tag;
    sw_dl_type type;
} sw_dl_setting;
extern const sw_dl_setting sw_dl[SW_ENV];

/* The type of an axis's values: its DataLoader setting's; a variable's or
 * an argument's are names. */
static inline sw_dl_type sw_axis_type(const sw_axis *ax)
{
    return sw_is_dataloader(ax->kind) ? sw_dl[ax->kind].type : SW_NAME;
}

typedef struct sw_metrics {
    int ok;            /* numbers below are valid */
    double step_ms;    /* median step time */
    double step_mean_ms; /* mean step time: the time per step */
    double dw_share;   /* data-wait share of measured step time */
    double pg_ms;      /* pageable copy time per step */
    char verdict[40];
    const char *source;  /* where the steps came from: an_source_name() */
    unsigned long steps; /* measured steps */
    int pin_noop;        /* pin_memory=True, yet the DataLoader pinned nothing (no CUDA) */
    int traced;          /* the run's trace was read */
    int has_dataloader;  /* the trace has a PyTorch DataLoader's configuration */
    char not_applied[160]; /* a DataLoader setting the run's loader does not have as set */
    int not_applied_kind;  /* its sw_kind, -1 none */
} sw_metrics;

typedef struct sw_run {
    char name[160];
    char *dir;
    char *log;
    int exit_code; /* -1 not run */
    double wall_s;
    sw_metrics m;
} sw_run;

typedef struct sw_config {
    int val[SW_MAX_AXES]; /* index into each axis's values */
    sw_run *runs;         /* one per round */
    /* over the runs that were measured */
    unsigned nok;
    double samples[SW_MAX_VALUES]; /* the measured runs' steps, by the statistic judged (sw_step) */
    an_log_ci step;       /* their geometric mean and 95% interval */
    double step_min, step_max, dw_share, pg_ms;
    char verdict[40];
    const char *source;
    int left_out; /* pin_memory=True is a no-op for this command: not run (further), not compared */
} sw_config;

typedef struct sw_sweep {
    sw_axis axes[SW_MAX_AXES];
    int naxes;
    sw_config *cs;
    int nc;
    int rounds;     /* rounds started */
    double min_effect;
    int by_median;  /* a run's sample is its median step (--by median), else its mean */
} sw_sweep;

/* A run's sample: its mean step (the time per step, what the report's
 * predictions are of), or with --by median its median step. */
static inline double sw_step(const sw_sweep *s, const sw_metrics *m)
{
    return s->by_median ? m->step_ms : m->step_mean_ms;
}

/* The statistic judged, as the table and JSON name it. */
static inline const char *sw_by_name(const sw_sweep *s)
{
    return s->by_median ? "median" : "mean";
}

/* The judgement after a round (sweep_judge.c). */
typedef struct sw_versus {
    int other;          /* config index */
    an_ratio_ci ci;     /* best's step over other's */
    an_change change;
} sw_versus;

typedef struct sw_best {
    int best;              /* config index, -1 none */
    const char *certainty; /* proven, tie, not_proven, single, none */
    int look;              /* the look it was judged at (0: none) */
    double conf;           /* of each pairwise interval at that look */
    double margin;         /* share of the runner-up's step time the best saves */
    sw_versus vs[SW_MAX_CONFIGS];
    int nvs;
    char why[512];
} sw_best;

/* Value v of axis ax as the table and labels show it: a boolean as True or
 * False, any other as given. */
const char *sw_value_text(const sw_axis *ax, int v);
/* Label of configuration c: "num_workers=2 LOADER_THREADS=4" (all axes). */
void sw_config_label(const sw_sweep *s, const sw_config *c, char *buf, size_t cap);

/* sweep_judge.c: each configuration's numbers over its measured runs, then
 * the fastest and whether it is proven at look `look` (>= 1: after round
 * look + 1; 0: no look, nothing proven), spending alpha / 2^look over the
 * configurations compared. */
void sw_summarize(sw_sweep *s);
void sw_judge(const sw_sweep *s, int look, double alpha, sw_best *b);

/* sweep_run.c */
extern volatile sig_atomic_t sw_interrupted;
double sw_now_s(void);
char *sw_self_exe(void);
/* -o DIR (created when missing) or a new gpustarve-sweep-YYYYMMDD-HHMMSS;
 * NULL (said on stderr) when it cannot be made. */
char *sw_make_out_dir(const char *want);
/* Every run of every configuration named and placed in outdir. Returns 0,
 * -1 out of memory, -2 two configurations would share a name (said). */
int sw_name_runs(sw_sweep *s, int max_rounds, const char *outdir);
/* RATIONALE: 'run -o' refuses a directory that holds traces; say so once,
 * before anything runs. Returns 0 when none does, else -1 (said). */
int sw_check_dirs_fresh(const sw_sweep *s, int max_rounds);
/* Run configuration c's run under 'exe run -q -o DIR -- CMD...' with its
 * settings in the environment and on the command line; records the exit
 * status and wall time. Returns 0, or -1 when out of memory (nothing run). */
int sw_start_run(const sw_sweep *s, const sw_config *c, sw_run *run, char *exe, char **cmd,
                 long steps_total, double timeout_s);
/* Analyse run directory dir as 'gpustarve report --skip W' does into m
 * (m->has_dataloader also when no steps were found). Returns 0, or -1. */
int sw_measure(const sw_sweep *s, const sw_config *c, const char *dir, int warmup, sw_metrics *m);

/* sweep_out.c */
typedef struct sw_report {
    char **cmd;
    const char *outdir;
    long steps, warmup, max_rounds, budget_runs;
    double budget_s;
    const char *stopped; /* proven, tie, rounds, budget, interrupted, single, none */
} sw_report;
void sw_print_table(gs_out *o, const sw_sweep *s, const sw_best *b, const sw_report *r);
void sw_write_json(gs_out *o, const sw_sweep *s, const sw_best *b, const sw_report *r);

#endif
