/* cmd_sweep.c — `gpustarve sweep`: run a training command under each
 * configuration of the settings asked for (DataLoader arguments the Python
 * side applies, environment variables, command-line arguments), in
 * interleaved rounds, until the fastest is proven or the rounds or the
 * budget run out, and say which is fastest and how sure that is.
 *
 * Responsible for: the options, the configuration grid, the order of the
 * runs (round r forwards, round r + 1 backwards: A B C, C B A, ...), the
 * checks on the first run (a DataLoader setting for a program that has no
 * DataLoader is refused), leaving out pin_memory=True where it pins
 * nothing, the look after each round and the stop, and the exit status.
 * Starting and measuring a run is sweep_run.c's, the judgement
 * sweep_judge.c's, the outputs sweep_out.c's.
 *
 * Must never: write anything but the table (or JSON with --json -) to
 * stdout; let one failed run end the sweep; delete a run directory; sweep a
 * DataLoader setting of a program whose trace shows no DataLoader.
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cmd/cli_util.h"
#include "cmd/sweep.h"

static const char usage_text[] =
    "usage: gpustarve sweep [SETTINGS] [--steps N] [--warmup W] [--repeat K]\n"
    "                       [--budget N|Ns|Nm|Nh] [--min-effect PCT] [--by mean|median]\n"
    "                       [--timeout SEC] [--json FILE] [-o DIR] [-q|-v]\n"
    "                       -- COMMAND [ARGS...]\n"
    "\n"
    "Run COMMAND once per configuration of the settings given, each traced by\n"
    "'gpustarve run' for N measured steps, in rounds whose order alternates\n"
    "(A B C, then C B A, ...) so that a change of the machine's load falls on\n"
    "every configuration; after each round, each configuration's step time over\n"
    "its runs with an interval. The fastest is named proven only when its\n"
    "interval against every other one clears the minimum effect; the sweep stops\n"
    "early once that (or a proven tie) is clear, and says so, and otherwise\n"
    "goes on to K rounds or the budget.\n"
    "\n"
    "settings (at least one; each a comma-separated list of values):\n"
    "  --num-workers LIST  DataLoader num_workers (\"0,2,4\")\n"
    "  --pin-memory LIST   DataLoader pin_memory: 0,1 (also off/on, false/true);\n"
    "                      where the first pin_memory=True run shows it a no-op\n"
    "                      (no CUDA: the DataLoader pins nothing), the other\n"
    "                      pin_memory=True configurations are left out\n"
    "  --prefetch-factor LIST      DataLoader prefetch_factor (with workers)\n"
    "  --persistent-workers LIST   DataLoader persistent_workers: 0,1 (with workers)\n"
    "  --sharing-strategy LIST     torch.multiprocessing's sharing strategy for the\n"
    "                      workers' tensors: file_descriptor,file_system (set\n"
    "                      in the trainer and in each worker)\n"
    "  --set NAME=LIST     an environment variable the program reads\n"
    "                      (--set LOADER_THREADS=1,2,4)\n"
    "  --set-arg ARG=LIST  a command-line argument of the program\n"
    "                      (--set-arg --threads=1,2,4): replaced where COMMAND has\n"
    "                      it, else added as --threads=V (-t V for a short one)\n"
    "  The DataLoader settings reach a PyTorch DataLoader through gpustarve's Python\n"
    "  side; when the first run's trace shows no DataLoader (or one that did not\n"
    "  take the setting), the sweep stops there (exit 2): sweep what the program\n"
    "  reads instead, with --set or --set-arg.\n"
    "\n"
    "options:\n"
    "  --steps N           measured steps per run (default 50)\n"
    "  --warmup W          steps run before those and left out (default 2)\n"
    "  --repeat K          at most K rounds (default 5; 64 with --budget)\n"
    "  --budget B          stop before a round that would go beyond B: N runs\n"
    "                      (\"30\", \"30runs\") or a time (\"600s\", \"10m\", \"1h\")\n"
    "  --min-effect PCT    the smallest difference worth calling (default 2)\n"
    "  --by mean|median    each run's sample: its mean step, the time per step\n"
    "                      (default: what training time is made of, and what the\n"
    "                      report's predictions are of), or its median step (a\n"
    "                      typical step, blind to stalls every few steps)\n"
    "  --timeout SEC       stop a run after SEC seconds (default: no limit)\n"
    "  --json FILE         also write the result as JSON to FILE ('-': JSON on\n"
    "                      stdout instead of the table)\n"
    "  -o, --output DIR    directory for the run directories (default: a new\n"
    "                      gpustarve-sweep-YYYYMMDD-HHMMSS); each run is kept\n"
    "                      as DIR/<settings>-rK/ with its output in DIR/<settings>-rK.log\n"
    "  -q, --quiet         no progress lines on stderr\n"
    "  -v, --verbose       more progress\n"
    "  -h, --help          show this help\n"
    "\n"
    "How: each run gets GPUSTARVE_STEPS=N+W and the DataLoader settings\n"
    "(GPUSTARVE_NUM_WORKERS, ...) in its environment, which gpustarve's Python\n"
    "side applies to every DataLoader, ending the program after N+W steps; --set\n"
    "variables in its environment; --set-arg arguments on its command line (a\n"
    "program without gpustarve's Python side ends by itself: give it its own\n"
    "step count). The numbers are those of 'gpustarve report --skip W RUN' (the\n"
    "same analysis, run in this process). Each run's mean step is one sample;\n"
    "a configuration's step time is the geometric mean over its runs, with a 95%\n"
    "interval (Welch's t on the logarithms; docs/python.md, \"How sure\").\n"
    "\n"
    "Exit status: 0 when at least one configuration was measured, 1 when none\n"
    "was, 2 bad usage, an -o DIR whose run directories already hold traces\n"
    "(nothing is run), or a DataLoader setting the program does not have.\n";

#define DEFAULT_ROUNDS 5
#define ALPHA 0.05

typedef struct sw_opts {
    long steps, warmup, max_rounds, timeout, budget_runs;
    double budget_s, min_effect;
    int rounds_given;
    const char *json, *out;
    char **cmd; /* the training command, NULL-terminated */
} sw_opts;

static void on_sigint(int sig)
{
    (void)sig;
    sw_interrupted = 1;
}

/* ---- options -------------------------------------------------------------------- */

/* Value t of a DataLoader setting, normalised into out: a number, 0/1, or a name.
 * Returns 0, or -1 when it is not one. */
static int dl_value(sw_kind k, const char *t, char *out, size_t cap)
{
    long v;
    if (sw_dl[k].type == SW_NAME) {
        /* the sharing strategies: torch's names on Linux
         * (torch.multiprocessing.get_all_sharing_strategies) */
        if (strcmp(t, "file_descriptor") != 0 && strcmp(t, "file_system") != 0)
            return -1;
        snprintf(out, cap, "%s", t);
        return 0;
    }
    if (sw_dl[k].type == SW_BOOL) {
        if (!strcasecmp(t, "on") || !strcasecmp(t, "true") || !strcasecmp(t, "yes"))
            t = "1";
        else if (!strcasecmp(t, "off") || !strcasecmp(t, "false") || !strcasecmp(t, "no"))
            t = "0";
        if (gs_cli_long(t, 0, 1, &v) != 0)
            return -1;
    } else if (gs_cli_long(t, k == SW_PREFETCH_FACTOR ? 1 : 0, 4096, &v) != 0) {
        return -1;
    }
    snprintf(out, cap, "%ld", v);
    return 0;
}

/* A setting and its comma-separated list. Returns 0, or the reason it is
 * not one (for the usage error). */
static const char *add_axis(sw_axis *axes, int *naxes, sw_kind k, const char *name, const char *list)
{
    if (*naxes >= SW_MAX_AXES)
        return "too many settings at once";
    for (int a = 0; a < *naxes; a++)
        if (!strcmp(axes[a].name, name))
            return "a setting given twice";
    sw_axis *ax = &axes[*naxes];
    memset(ax, 0, sizeof *ax);
    ax->kind = k;
    if (strlen(name) >= sizeof ax->name || strlen(list) >= sizeof ax->buf)
        return "too long";
    snprintf(ax->name, sizeof ax->name, "%s", name);
    snprintf(ax->buf, sizeof ax->buf, "%s", list);
    char *save = NULL;
    for (char *t = strtok_r(ax->buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        while (*t == ' ')
            t++;
        if (ax->nvals >= SW_MAX_VALUES)
            return "too many values";
        if (sw_is_dataloader(k)) {
            if (dl_value(k, t, ax->norm[ax->nvals], sizeof ax->norm[0]) != 0)
                return sw_dl[k].type == SW_NAME   ? "a list like file_descriptor,file_system"
                       : sw_dl[k].type == SW_BOOL ? "a list like 0,1"
                                                  : "a list like 0,2,4";
            t = ax->norm[ax->nvals];
        } else if (!*t) {
            return "no empty value";
        }
        for (int i = 0; i < ax->nvals; i++)
            if (!strcmp(ax->vals[i], t))
                return "distinct values";
        ax->vals[ax->nvals++] = t;
    }
    if (!ax->nvals)
        return "a list of values";
    (*naxes)++;
    return NULL;
}

/* --set NAME=LIST / --set-arg ARG=LIST. */
static const char *add_named_axis(sw_axis *axes, int *naxes, sw_kind k, const char *spec)
{
    const char *eq = strchr(spec, '=');
    char name[64];
    if (!eq || eq == spec || (size_t)(eq - spec) >= sizeof name)
        return k == SW_ENV ? "NAME=V1,V2" : "--ARG=V1,V2";
    snprintf(name, sizeof name, "%.*s", (int)(eq - spec), spec);
    if (k == SW_ENV) {
        for (const char *p = name; *p; p++)
            if (!(*p == '_' || (*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') ||
                  (p > name && *p >= '0' && *p <= '9')))
                return "an environment variable's name (letters, digits, _)";
        if (!strncmp(name, "GPUSTARVE_", 10))
            return "a variable of the program's own (gpustarve's are set by the DataLoader options)";
    } else if (name[0] != '-' || !name[1]) {
        return "an argument that starts with '-' (--set-arg --threads=1,2,4)";
    }
    return add_axis(axes, naxes, k, name, eq + 1);
}

/* A budget: "30", "30runs" (runs) or "600s", "10m", "1h" (time). Returns 0 or -1. */
static int parse_budget(const char *t, sw_opts *a)
{
    char *end;
    errno = 0;
    const double v = strtod(t, &end);
    if (end == t || errno || !(v > 0))
        return -1;
    if (!*end || !strcmp(end, "runs") || !strcmp(end, "run")) {
        if (v != floor(v) || v > 100000)
            return -1;
        a->budget_runs = (long)v;
        return 0;
    }
    const double unit = !strcmp(end, "s") ? 1 : !strcmp(end, "m") ? 60 : !strcmp(end, "h") ? 3600 : 0;
    if (!unit)
        return -1;
    a->budget_s = v * unit;
    return 0;
}

static int check_args(int argc, char **argv, sw_opts *a, const sw_sweep *s)
{
    if (optind >= argc)
        return gs_cli_usage_error("sweep", "needs a command to run (gpustarve sweep ... -- CMD ARGS...)");
    if (!s->naxes)
        return gs_cli_usage_error("sweep", "needs a setting to sweep: --num-workers LIST, "
                                           "--pin-memory LIST, --set NAME=LIST, --set-arg ARG=LIST, ...");
    if (a->json && !*a->json)
        return gs_cli_usage_error("sweep", "--json needs a file name (or -)");
    if (a->out && !*a->out)
        return gs_cli_usage_error("sweep", "-o needs a directory name");
    long nc = 1;
    for (int i = 0; i < s->naxes; i++)
        nc *= s->axes[i].nvals;
    if (nc > SW_MAX_CONFIGS)
        return gs_cli_usage_error("sweep", "%ld configurations: at most %d", nc, SW_MAX_CONFIGS);
    if (!a->rounds_given)
        a->max_rounds = a->budget_runs || a->budget_s > 0 ? SW_MAX_VALUES : DEFAULT_ROUNDS;
    a->cmd = argv + optind;
    return -1;
}

/* The options, the settings into s, the command. Returns -1 to go on, or
 * the exit status (--help, bad usage). */
static int parse_args(int argc, char **argv, sw_opts *a, sw_sweep *s)
{
    /* O_NW.. in the order of sw_kind */
    enum { O_NW = 256, O_PIN, O_PF, O_PW, O_SS, O_SET, O_SETARG, O_BUDGET, O_MIN, O_BY };
    static const struct option opts[] = {
        {"num-workers", required_argument, NULL, O_NW},
        {"pin-memory", required_argument, NULL, O_PIN},
        {"prefetch-factor", required_argument, NULL, O_PF},
        {"persistent-workers", required_argument, NULL, O_PW},
        {"sharing-strategy", required_argument, NULL, O_SS},
        {"set", required_argument, NULL, O_SET},
        {"set-arg", required_argument, NULL, O_SETARG},
        {"budget", required_argument, NULL, O_BUDGET},
        {"min-effect", required_argument, NULL, O_MIN},
        {"by", required_argument, NULL, O_BY},
        {"steps", required_argument, NULL, 's'},
        {"warmup", required_argument, NULL, 'w'},
        {"repeat", required_argument, NULL, 'r'},
        {"timeout", required_argument, NULL, 't'},
        {"json", required_argument, NULL, 'j'},
        {"output", required_argument, NULL, 'o'},
        {"quiet", no_argument, NULL, 'q'},
        {"verbose", no_argument, NULL, 'v'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    static const char optstring[] = "+o:qvh";
    memset(a, 0, sizeof *a);
    a->steps = 50;
    a->warmup = 2;
    a->min_effect = 0.02;
    int opt;
    const char *bad;
    char *end;
    optind = 0;
    opterr = 0;
    while ((opt = getopt_long(argc, argv, optstring, opts, NULL)) != -1) {
        switch (opt) {
        case O_NW: case O_PIN: case O_PF: case O_PW: case O_SS:
            if ((bad = add_axis(s->axes, &s->naxes, (sw_kind)(opt - O_NW), sw_dl[opt - O_NW].key,
                                optarg)))
                return gs_cli_usage_error("sweep", "--%s needs %s, not '%s'",
                                          sw_dl[opt - O_NW].option, bad, optarg);
            break;
        case O_SET: case O_SETARG:
            if ((bad = add_named_axis(s->axes, &s->naxes, opt == O_SET ? SW_ENV : SW_ARG, optarg)))
                return gs_cli_usage_error("sweep", "--%s needs %s, not '%s'",
                                          opt == O_SET ? "set" : "set-arg", bad, optarg);
            break;
        case O_BUDGET:
            if (parse_budget(optarg, a) != 0)
                return gs_cli_usage_error("sweep", "--budget needs runs (30) or a time (600s, 10m, "
                                                   "1h), not '%s'", optarg);
            break;
        case O_MIN:
            errno = 0;
            a->min_effect = strtod(optarg, &end) / 100;
            if (*end == '%')
                end++;
            if (end == optarg || *end || errno || !(a->min_effect >= 0) || a->min_effect >= 0.99)
                return gs_cli_usage_error("sweep", "--min-effect needs a percentage from 0 to 99, "
                                                   "not '%s'", optarg);
            break;
        case O_BY:
            if (strcmp(optarg, "mean") && strcmp(optarg, "median"))
                return gs_cli_usage_error("sweep", "--by needs mean or median, not '%s'", optarg);
            s->by_median = !strcmp(optarg, "median");
            break;
        case 's':
            if (gs_cli_long(optarg, 1, 100000000, &a->steps) != 0)
                return gs_cli_usage_error("sweep", "--steps needs a number >= 1, not '%s'", optarg);
            break;
        case 'w':
            if (gs_cli_long(optarg, 0, 100000000, &a->warmup) != 0)
                return gs_cli_usage_error("sweep", "--warmup needs a number >= 0, not '%s'", optarg);
            break;
        case 'r':
            if (gs_cli_long(optarg, 1, SW_MAX_VALUES, &a->max_rounds) != 0)
                return gs_cli_usage_error("sweep", "--repeat needs a number from 1 to %d, not '%s'",
                                          SW_MAX_VALUES, optarg);
            a->rounds_given = 1;
            break;
        case 't':
            if (gs_cli_long(optarg, 1, 10000000, &a->timeout) != 0)
                return gs_cli_usage_error("sweep", "--timeout needs seconds >= 1, not '%s'", optarg);
            break;
        case 'j': a->json = optarg; break;
        case 'o': a->out = optarg; break;
        case 'q': gs_verbosity = 0; break;
        case 'v': gs_verbosity++; break;
        case 'h': fputs(usage_text, stdout); return GS_EXIT_OK;
        default: return gs_cli_bad_option("sweep", argc, argv, optstring, opts);
        }
    }
    return check_args(argc, argv, a, s);
}

/* ---- the grid --------------------------------------------------------------------- */

static void free_configs(sw_sweep *s, int max_rounds)
{
    for (int i = 0; s->cs && i < s->nc; i++) {
        for (int r = 0; s->cs[i].runs && r < max_rounds; r++) {
            free(s->cs[i].runs[r].dir);
            free(s->cs[i].runs[r].log);
        }
        free(s->cs[i].runs);
    }
    free(s->cs);
    s->cs = NULL;
}

/* Every combination of the settings' values, the first setting outermost.
 * Returns 0, or -1 when out of memory. */
static int make_grid(sw_sweep *s, int max_rounds)
{
    s->nc = 1;
    for (int a = 0; a < s->naxes; a++)
        s->nc *= s->axes[a].nvals;
    s->cs = calloc((size_t)s->nc, sizeof *s->cs);
    if (!s->cs)
        return -1;
    for (int i = 0; i < s->nc; i++) {
        int rest = i;
        for (int a = s->naxes - 1; a >= 0; a--) {
            s->cs[i].val[a] = rest % s->axes[a].nvals;
            rest /= s->axes[a].nvals;
        }
        s->cs[i].runs = calloc((size_t)max_rounds, sizeof *s->cs[i].runs);
        if (!s->cs[i].runs)
            return -1;
        for (int r = 0; r < max_rounds; r++)
            s->cs[i].runs[r].exit_code = -1;
    }
    return 0;
}

/* ---- the rounds -------------------------------------------------------------------- */

typedef struct sw_state {
    const sw_opts *a;
    char *exe;
    sw_sweep *s;
    int done;        /* runs started */
    int nomarkers;   /* runs without steps */
    int pin_noop;    /* a pin_memory=True run showed it a no-op */
    int refused;     /* the first run showed a DataLoader setting the program does not have */
    double wall;     /* the runs' wall time so far */
} sw_state;

static int active_configs(const sw_sweep *s)
{
    int n = 0;
    for (int i = 0; i < s->nc; i++)
        n += !s->cs[i].left_out;
    return n;
}

/* RATIONALE: without CUDA pin_memory=True pins nothing; its runs would
 * measure pin_memory=False again, and their noise could crown a setting that
 * does nothing. Called once, after a run showed it. */
static void leave_out_pin_memory(sw_state *st)
{
    sw_sweep *s = st->s;
    int pin = -1;
    for (int a = 0; a < s->naxes; a++)
        if (s->axes[a].kind == SW_PIN_MEMORY)
            pin = a;
    st->pin_noop = 1;
    const int axis = pin >= 0 && s->axes[pin].nvals > 1;
    gs_cli_msg(1, "sweep: pin_memory=True is a no-op for this command (the DataLoader says "
                  "pin_memory_effective=False: no CUDA device)%s",
               axis ? "; the pin_memory axis is left out" : "");
    for (int k = 0; axis && k < s->nc; k++)
        s->cs[k].left_out |= !strcmp(s->axes[pin].vals[s->cs[k].val[pin]], "1");
}

/* After the sweep's first run: a DataLoader setting for a program whose
 * trace shows no DataLoader, or one that did not take the setting, is
 * refused. Returns 1 when refused (said on stderr). */
static int refuse_first(const sw_state *st, const sw_run *run)
{
    const sw_sweep *s = st->s;
    int dl = -1;
    for (int a = 0; a < s->naxes && dl < 0; a++)
        if (sw_is_dataloader(s->axes[a].kind))
            dl = a;
    if (dl < 0 || run->exit_code != 0 || !run->m.traced)
        return 0;
    if (!run->m.has_dataloader) {
        gs_cli_error("sweep: the program has no PyTorch DataLoader (the trace of its first run, %s, "
                     "records none): --%s would change nothing. Sweep a setting it reads: --set "
                     "NAME=V1,V2 (an environment variable) or --set-arg --ARG=V1,V2 (an argument)",
                     run->dir, sw_dl[s->axes[dl].kind].option);
        return 1;
    }
    if (run->m.not_applied_kind == SW_NUM_WORKERS || run->m.not_applied_kind == SW_PIN_MEMORY) {
        gs_cli_error("sweep: the program's DataLoader did not take the setting (%s, %s): the "
                     "program does not read it from gpustarve; sweep what it reads with --set or "
                     "--set-arg", run->dir, run->m.not_applied);
        return 1;
    }
    return 0;
}

/* Run configuration i's run of round r and take its numbers. */
static void one_run(sw_state *st, int i, int r, int total)
{
    sw_sweep *s = st->s;
    sw_config *c = &s->cs[i];
    sw_run *run = &c->runs[r];
    char label[256];
    sw_config_label(s, c, label, sizeof label);
    st->done++;
    gs_cli_msg(1, "sweep: round %d, run %d/%d: %s", r + 1, st->done, total, label);
    if (sw_start_run(s, c, run, st->exe, st->a->cmd, st->a->steps + st->a->warmup,
                     (double)st->a->timeout) != 0) {
        gs_cli_error("sweep: out of memory");
        return;
    }
    st->wall += run->wall_s;
    if (run->exit_code != 0)
        gs_cli_error("sweep: %s: the command %s %d; see %s", label,
                     run->exit_code > 128 ? "died of signal" : "exited with",
                     run->exit_code > 128 ? run->exit_code - 128 : run->exit_code, run->log);
    const int measured = sw_measure(s, c, run->dir, (int)st->a->warmup, &run->m) == 0;
    if (st->done == 1 && refuse_first(st, run)) {
        st->refused = 1;
        return;
    }
    if (!measured) {
        st->nomarkers++;
        gs_cli_error("sweep: %s: no steps found in %s", label, run->dir);
        return;
    }
    if (run->m.not_applied[0])
        gs_cli_msg(1, "sweep: %s: %s", label, run->m.not_applied);
    if (run->exit_code != 0) { /* numbers of a broken run are not compared */
        run->m.ok = 0;
        return;
    }
    gs_cli_msg(1, "sweep:   %.1f s, mean step %.1f ms (median %.1f), data wait %.1f%% (%s)",
               run->wall_s, run->m.step_mean_ms, run->m.step_ms, 100 * run->m.dw_share,
               run->m.source);
    if (run->m.pin_noop && !st->pin_noop)
        leave_out_pin_memory(st);
}

/* 1 when one more round of the active configurations would go beyond the budget. */
static int over_budget(const sw_state *st)
{
    const int next = active_configs(st->s);
    if (st->a->budget_runs && st->done + next > st->a->budget_runs)
        return 1;
    if (st->a->budget_s > 0 && st->done)
        return st->wall + st->wall / st->done * next > st->a->budget_s;
    return 0;
}

/* The rounds, until the answer is clear, the rounds or the budget run out,
 * or an interrupt. Returns why it stopped; *b the last judgement. */
static const char *run_rounds(sw_state *st, sw_best *b)
{
    sw_sweep *s = st->s;
    const char *stopped = "rounds";
    for (int r = 0; r < st->a->max_rounds; r++) {
        if (r > 0 && over_budget(st)) {
            stopped = "budget";
            break;
        }
        const int total = st->done + active_configs(s);
        /* RATIONALE: interleaved, and backwards every other round (A B C,
         * C B A): a drift of the machine (another job, page cache, heat)
         * falls on every configuration alike instead of favouring one */
        for (int k = 0; k < s->nc && !sw_interrupted && !st->refused; k++) {
            const int i = r % 2 ? s->nc - 1 - k : k;
            if (!s->cs[i].left_out)
                one_run(st, i, r, total);
        }
        s->rounds = r + 1;
        if (st->refused)
            return "refused";
        if (sw_interrupted) {
            stopped = "interrupted";
            break;
        }
        sw_summarize(s);
        sw_judge(s, r, ALPHA, b);
        if (!strcmp(b->certainty, "single") || !strcmp(b->certainty, "none")) {
            stopped = b->certainty;
            break;
        }
        if (!strcmp(b->certainty, "proven") || !strcmp(b->certainty, "tie")) {
            stopped = b->certainty;
            if (r + 1 < st->a->max_rounds)
                gs_cli_msg(1, "sweep: the answer is clear after %d rounds: stopping early (%s)",
                           r + 1, b->why);
            break;
        }
        if (r > 0 && r + 1 < st->a->max_rounds)
            gs_cli_msg(1, "sweep: after %d rounds: %s; going on", r + 1, b->why);
    }
    sw_summarize(s);
    sw_judge(s, s->rounds - 1, ALPHA, b);
    return stopped;
}

/* ---- the command ---------------------------------------------------------------------- */

/* The table (or the JSON with --json -) on stdout, and the JSON file with
 * --json FILE. Returns the exit status. */
static int write_outputs(const sw_opts *a, const sw_sweep *s, const sw_best *b,
                         const sw_report *rep)
{
    gs_out o;
    const int json_stdout = a->json && strcmp(a->json, "-") == 0;
    gs_out_init(&o, stdout);
    if (json_stdout)
        sw_write_json(&o, s, b, rep);
    else
        sw_print_table(&o, s, b, rep);
    gs_out_flush(&o);
    int result = b->best >= 0 ? GS_EXIT_OK : GS_EXIT_FAIL;
    if (a->json && !json_stdout) {
        FILE *f = fopen(a->json, "w");
        if (!f) {
            gs_cli_error("sweep: cannot write %s: %s", a->json, strerror(errno));
            return GS_EXIT_FAIL;
        }
        gs_out jo;
        gs_out_init(&jo, f);
        sw_write_json(&jo, s, b, rep);
        gs_out_flush(&jo);
        if (ferror(f) | (fclose(f) != 0)) {
            gs_cli_error("sweep: cannot write %s", a->json);
            result = GS_EXIT_FAIL;
        }
    }
    return result;
}

/* The sweep itself, once the runs are named. Returns the exit status. */
static int sweep(const sw_opts *a, sw_sweep *s, char *exe, const char *outdir)
{
    struct sigaction sa, old_int;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_sigint;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &old_int);
    gs_cli_msg(1, "sweep: %d configuration%s, at most %ld rounds, %ld+%ld steps each, into %s",
               s->nc, s->nc == 1 ? "" : "s", a->max_rounds, a->warmup, a->steps, outdir);
    sw_state st = {.a = a, .exe = exe, .s = s};
    sw_best *b = calloc(1, sizeof *b);
    if (!b) {
        sigaction(SIGINT, &old_int, NULL);
        gs_cli_error("sweep: out of memory");
        return GS_EXIT_FAIL;
    }
    const char *stopped = run_rounds(&st, b);
    sigaction(SIGINT, &old_int, NULL);
    if (st.refused) {
        free(b);
        return GS_EXIT_USAGE;
    }
    if (sw_interrupted)
        gs_cli_error("sweep: interrupted; the table shows the runs that finished");
    if (st.nomarkers)
        gs_cli_msg(1, "sweep: a run without steps: does the command iterate a torch DataLoader (or "
                      "write step markers), and is gpustarve's python/ folder on PYTHONPATH "
                      "(gpustarve run sets it)?");
    const sw_report rep = {.cmd = a->cmd, .outdir = outdir, .steps = a->steps,
                           .warmup = a->warmup, .max_rounds = a->max_rounds,
                           .budget_runs = a->budget_runs, .budget_s = a->budget_s,
                           .stopped = stopped};
    const int rc = write_outputs(a, s, b, &rep);
    free(b);
    return rc;
}

int gs_cmd_sweep(int argc, char **argv)
{
    sw_opts a;
    sw_sweep *s = calloc(1, sizeof *s);
    if (!s) {
        gs_cli_error("sweep: out of memory");
        return GS_EXIT_FAIL;
    }
    int rc = parse_args(argc, argv, &a, s);
    if (rc >= 0) {
        free(s);
        return rc;
    }
    s->min_effect = a.min_effect;
    char *exe = sw_self_exe();
    char *outdir = NULL;
    if (!exe) {
        gs_cli_error("sweep: cannot find my own executable (/proc/self/exe): %s", strerror(errno));
        rc = GS_EXIT_FAIL;
    } else if (!(outdir = sw_make_out_dir(a.out))) {
        rc = GS_EXIT_FAIL;
    } else if (make_grid(s, (int)a.max_rounds) != 0 ||
               (rc = sw_name_runs(s, (int)a.max_rounds, outdir)) == -1) {
        gs_cli_error("sweep: out of memory");
        rc = GS_EXIT_FAIL;
    } else if (rc == -2 || sw_check_dirs_fresh(s, (int)a.max_rounds) != 0) {
        rc = GS_EXIT_USAGE;
    } else {
        rc = sweep(&a, s, exe, outdir);
    }
    free_configs(s, (int)a.max_rounds);
    free(s);
    free(exe);
    free(outdir);
    return rc;
}
