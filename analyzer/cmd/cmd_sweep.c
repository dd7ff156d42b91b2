/* cmd_sweep.c — `gpustarve sweep`: run a training command once per
 * num_workers x pin_memory configuration (and K repeats), each under
 * `gpustarve run`, and say which configuration is fastest and how sure that
 * is.
 *
 * Responsible for: the configuration grid, starting each run (this same
 * executable's `run`, with GPUSTARVE_NUM_WORKERS / GPUSTARVE_PIN_MEMORY /
 * GPUSTARVE_STEPS set for the Python side, see docs/python.md), keeping every
 * run directory, the table, the best choice, its certainty, and the JSON
 * copy of the table. Each run's numbers are the report's own: an_run_load
 * and an_analyze in process, as `gpustarve report --skip W` computes them.
 *
 * Must never: write anything but the table (or JSON with --json -) to
 * stdout; let one failed run end the sweep; delete a run directory; compute
 * a step, a share or a verdict itself (the analyzer does).
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "model/an_model.h"
#include "model/an_ranks.h"
#include "cmd/cli_util.h"
#include "gs_trace.h"

static const char usage_text[] =
    "usage: gpustarve sweep [--num-workers LIST] [--pin-memory LIST] [--steps N]\n"
    "                       [--warmup W] [--repeat K] [--timeout SEC] [--json FILE]\n"
    "                       [-o DIR] [-q|-v] -- COMMAND [ARGS...]\n"
    "\n"
    "Run a PyTorch training COMMAND once per configuration of num_workers x\n"
    "pin_memory, each traced by 'gpustarve run' for N measured steps, and print\n"
    "a table: median step time, data-wait share, pageable copy time and verdict\n"
    "per configuration, with the fastest marked and how sure that is.\n"
    "\n"
    "options:\n"
    "  --num-workers LIST  num_workers values, comma-separated (\"0,2,4\")\n"
    "  --pin-memory LIST   pin_memory values: 0,1 (also off/on, false/true); where\n"
    "                      the first pin_memory=True run shows it a no-op (no\n"
    "                      CUDA: the DataLoader pins nothing), the other\n"
    "                      pin_memory=True configurations are left out\n"
    "                      (at least one of the two lists is needed; a setting\n"
    "                      without a list is left as the program has it)\n"
    "  --steps N           measured steps per run (default 50)\n"
    "  --warmup W          steps run before those and left out (default 2)\n"
    "  --repeat K          runs per configuration, in rounds (default 1)\n"
    "  --timeout SEC       stop a run after SEC seconds (default: no limit)\n"
    "  --json FILE         also write the table as JSON to FILE ('-': JSON on\n"
    "                      stdout instead of the table)\n"
    "  -o, --output DIR    directory for the run directories (default: a new\n"
    "                      gpustarve-sweep-YYYYMMDD-HHMMSS); each run is kept\n"
    "                      as DIR/nwN-pinP-rK/ with its output in DIR/nwN-pinP-rK.log\n"
    "  -q, --quiet         no progress lines on stderr\n"
    "  -v, --verbose       more progress\n"
    "  -h, --help          show this help\n"
    "\n"
    "How: each run gets GPUSTARVE_NUM_WORKERS, GPUSTARVE_PIN_MEMORY and\n"
    "GPUSTARVE_STEPS=N+W in its environment; gpustarve's Python side applies\n"
    "them to every DataLoader and ends the program after N+W steps. The numbers\n"
    "are those of 'gpustarve report --skip W RUN' (the same analysis, run in\n"
    "this process); 'source' says where the steps came from (markers, nvtx,\n"
    "inferred). The best configuration has the lowest median step time; it is\n"
    "'clear' when its slowest repeat beat the runner-up's fastest repeat.\n"
    "\n"
    "Exit status: 0 when at least one configuration was measured, 1 when none\n"
    "was, 2 bad usage or an -o DIR whose run directories already hold traces\n"
    "(nothing is run).\n";

#define MAX_VALUES 64

/* ---- one run and one configuration ------------------------------------------ */

typedef struct sw_metrics {
    int ok;            /* numbers below are valid */
    double step_ms;    /* median step time */
    double dw_share;   /* data-wait share of measured step time */
    double pg_ms;      /* pageable copy time per step */
    char verdict[40];
    const char *source; /* where the steps came from: an_source_name() */
    unsigned long steps; /* measured steps */
    int pin_noop;        /* pin_memory=True, yet the DataLoader pinned nothing (no CUDA) */
} sw_metrics;

typedef struct sw_run {
    char name[64];
    char *dir;
    char *log;
    int exit_code; /* -1 not run */
    double wall_s;
    sw_metrics m;
} sw_run;

typedef struct sw_config {
    int nw;  /* -1: not overridden */
    int pin; /* -1: not overridden */
    sw_run *runs;
    /* over the runs that were measured */
    unsigned nok;
    double step_ms, step_min, step_max, dw_share, pg_ms;
    char verdict[40];
    const char *source;
    int left_out; /* pin_memory=True is a no-op for this command: not run (further), not compared */
} sw_config;

static volatile sig_atomic_t g_interrupted;

static void on_sigint(int sig)
{
    (void)sig;
    g_interrupted = 1;
}

/* ---- small helpers --------------------------------------------------------------- */

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* "0,2,4" -> values; pin: also on/off/true/false/yes/no. */
static int parse_list(const char *s, int pin, int *vals, int *n)
{
    char buf[512];
    if (strlen(s) >= sizeof buf)
        return -1;
    snprintf(buf, sizeof buf, "%s", s);
    *n = 0;
    char *save = NULL;
    for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        while (*t == ' ')
            t++;
        long v;
        if (pin && (!strcasecmp(t, "on") || !strcasecmp(t, "true") || !strcasecmp(t, "yes")))
            v = 1;
        else if (pin && (!strcasecmp(t, "off") || !strcasecmp(t, "false") || !strcasecmp(t, "no")))
            v = 0;
        else if (gs_cli_long(t, 0, pin ? 1 : 4096, &v) != 0)
            return -1;
        for (int i = 0; i < *n; i++)
            if (vals[i] == v)
                return -2;
        if (*n >= MAX_VALUES)
            return -1;
        vals[(*n)++] = (int)v;
    }
    return *n ? 0 : -1;
}

static char *self_exe(void)
{
    char buf[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
    if (n < 0)
        return NULL;
    buf[n] = '\0';
    return strdup(buf);
}

static void config_label(const sw_config *c, char *buf, size_t cap)
{
    char a[32] = "", b[32] = "";
    if (c->nw >= 0)
        snprintf(a, sizeof a, "num_workers=%d", c->nw);
    if (c->pin >= 0)
        snprintf(b, sizeof b, "pin_memory=%s", c->pin ? "True" : "False");
    snprintf(buf, cap, "%s%s%s", a, (*a && *b) ? " " : "", b);
}

/* ---- starting a run ------------------------------------------------------------- */

/* Run argv (argv[0] a path) with stdin from /dev/null and stdout+stderr to
 * log. extra_env: NAME=VALUE strings put into the child's environment.
 * Returns the exit status (128+N on signal N), -1 when it could not start.
 * timeout_s 0: none. */
static int spawn_wait(char *const argv[], const char *log, char *const extra_env[],
                      double timeout_s)
{
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        signal(SIGINT, SIG_DFL);
        int devnull = open("/dev/null", O_RDWR);
        if (devnull >= 0)
            dup2(devnull, 0);
        int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
        if (fd >= 0) {
            dup2(fd, 1);
            dup2(fd, 2);
        }
        for (size_t i = 0; extra_env && extra_env[i]; i++)
            putenv(extra_env[i]);
        execv(argv[0], argv);
        _exit(127);
    }
    const double t0 = now_s();
    int status = 0, killed = 0;
    for (;;) {
        pid_t w = waitpid(pid, &status, timeout_s > 0 ? WNOHANG : 0);
        if (w == pid)
            break;
        if (w < 0 && errno != EINTR)
            return -1;
        if (timeout_s > 0 && w == 0) {
            if (now_s() - t0 > timeout_s && killed < 2) {
                kill(pid, killed ? SIGKILL : SIGTERM);
                killed++;
                gs_cli_msg(1, "sweep: run took longer than %.0f s: %s", timeout_s,
                           killed == 1 ? "stopping it (SIGTERM)" : "killing it");
            }
            struct timespec ts = {0, 50 * 1000 * 1000};
            nanosleep(&ts, NULL);
        }
    }
    if (WIFEXITED(status))
        return WEXITSTATUS(status);
    if (WIFSIGNALED(status))
        return 128 + WTERMSIG(status);
    return -1;
}

/* ---- a run's numbers: the report's own analysis, in process ----------------------- */

/* Analyse run directory dir as 'gpustarve report --skip W' does. Returns 0
 * with m filled, or -1 (the reason on stderr at -v). */
static int metrics_of_run(const char *dir, int warmup, sw_metrics *m)
{
    an_opts o;
    const char *bad = NULL;
    if (an_opts_init(&o, NULL, NULL, &bad) < 0) {
        gs_cli_error("sweep: cannot compile the step pattern %s", bad);
        return -1;
    }
    o.skip = warmup;
    an_run run;
    an_job job;
    char err[512];
    int rc = -1;
    const int loaded = an_run_load(&run, dir, &o, err, sizeof err) == 0;
    const int analysed = loaded && an_job_analyze(&run, &o, &job, err, sizeof err) == 0;
    if (!loaded) {
        gs_cli_msg(2, "sweep: %s", err);
    } else if (!analysed) {
        gs_cli_msg(2, "sweep: %s: %s", dir, err);
    } else {
        /* a job of ranks: the rank that limits it, as report's top level */
        const an_result res = *job.top;
        m->ok = 1;
        m->step_ms = res.step_ms_median;
        m->dw_share = res.share[AN_SH_DATA_WAIT];
        /* RATIONALE: the time pageable copies cost a step is both what the
         * GPU spent copying from pageable memory and what it idled while the
         * host staged the copy; pin_memory=True removes both. */
        m->pg_ms = res.median_ms[AN_SH_PAGEABLE_COPY] + res.median_ms[AN_SH_H2D_PAGEABLE];
        snprintf(m->verdict, sizeof m->verdict, "%s", an_verdict_label(res.verdict));
        m->source = an_source_name(res.source);
        m->steps = res.measured;
        m->pin_noop = res.cur_pin_memory == 1 && res.pin_effective == 0;
        rc = 0;
    }
    if (loaded)
        an_job_free(&job); /* also after a failed analysis: what it had made */
    an_run_free(&run);
    an_opts_free(&o);
    return rc;
}

/* ---- the sweep ---------------------------------------------------------------- */

static char *make_out_dir(const char *want)
{
    if (want) {
        if (mkdir(want, 0777) != 0 && errno != EEXIST) {
            gs_cli_error("sweep: cannot create '%s': %s", want, strerror(errno));
            return NULL;
        }
        struct stat st;
        if (stat(want, &st) != 0 || !S_ISDIR(st.st_mode)) {
            gs_cli_error("sweep: '%s' is not a directory", want);
            return NULL;
        }
        return strdup(want);
    }
    char base[64], name[96];
    time_t now = time(NULL);
    struct tm tm;
    localtime_r(&now, &tm);
    strftime(base, sizeof base, "gpustarve-sweep-%Y%m%d-%H%M%S", &tm);
    for (int i = 1; i < 1000; i++) {
        if (i == 1)
            snprintf(name, sizeof name, "%s", base);
        else
            snprintf(name, sizeof name, "%s-%d", base, i);
        if (mkdir(name, 0777) == 0)
            return strdup(name);
        if (errno != EEXIST) {
            gs_cli_error("sweep: cannot create '%s': %s", name, strerror(errno));
            return NULL;
        }
    }
    gs_cli_error("sweep: cannot create '%s-N': too many exist", base);
    return NULL;
}

static void summarize_config(sw_config *c, int repeat)
{
    double st[MAX_VALUES], dw[MAX_VALUES], pg[MAX_VALUES];
    unsigned n = 0;
    c->source = NULL;
    c->verdict[0] = '\0';
    for (int r = 0; r < repeat && n < MAX_VALUES; r++) {
        const sw_metrics *m = &c->runs[r].m;
        if (!m->ok)
            continue;
        st[n] = m->step_ms;
        dw[n] = m->dw_share;
        pg[n] = m->pg_ms;
        if (n == 0 || m->step_ms < c->step_min)
            c->step_min = m->step_ms;
        if (n == 0 || m->step_ms > c->step_max)
            c->step_max = m->step_ms;
        if (!c->source || strcmp(c->source, m->source) == 0)
            c->source = m->source;
        else
            c->source = "mixed";
        n++;
    }
    c->nok = n;
    if (!n)
        return;
    /* the verdict of the run closest to the median step time */
    double med = an_percentile(st, n, 0.5);
    double bestd = INFINITY;
    for (int r = 0; r < repeat; r++) {
        const sw_metrics *m = &c->runs[r].m;
        if (m->ok && fabs(m->step_ms - med) < bestd) {
            bestd = fabs(m->step_ms - med);
            snprintf(c->verdict, sizeof c->verdict, "%s", m->verdict);
        }
    }
    c->step_ms = med;
    c->dw_share = an_percentile(dw, n, 0.5);
    c->pg_ms = an_percentile(pg, n, 0.5);
}

typedef struct sw_best {
    int best, runner; /* config indices, -1 none */
    const char *certainty; /* clear, likely, unsure, single */
    double margin;         /* share of the runner-up's step time the best saves */
    char why[256];
} sw_best;

static void pick_best(sw_config *cs, int nc, int repeat, sw_best *b)
{
    b->best = b->runner = -1;
    b->certainty = "none";
    b->margin = 0;
    b->why[0] = '\0';
    for (int i = 0; i < nc; i++) {
        if (!cs[i].nok || cs[i].left_out)
            continue;
        if (b->best < 0 || cs[i].step_ms < cs[b->best].step_ms) {
            b->runner = b->best;
            b->best = i;
        } else if (b->runner < 0 || cs[i].step_ms < cs[b->runner].step_ms) {
            b->runner = i;
        }
    }
    if (b->best < 0)
        return;
    if (b->runner < 0) {
        b->certainty = "single";
        snprintf(b->why, sizeof b->why, "only one configuration was measured");
        return;
    }
    const sw_config *x = &cs[b->best], *y = &cs[b->runner];
    b->margin = y->step_ms > 0 ? 1 - x->step_ms / y->step_ms : 0;
    char ly[96];
    config_label(y, ly, sizeof ly);
    if (x->nok >= 2 && y->nok >= 2) {
        if (x->step_max < y->step_min) {
            b->certainty = "clear";
            snprintf(b->why, sizeof b->why,
                     "its slowest of %u repeats (%.1f ms) beat the fastest of %u of the "
                     "runner-up, %s (%.1f ms)",
                     x->nok, x->step_max, y->nok, ly, y->step_min);
        } else {
            b->certainty = "unsure";
            snprintf(b->why, sizeof b->why,
                     "its repeats (%.1f-%.1f ms) overlap the runner-up's, %s (%.1f-%.1f ms); "
                     "try more --repeat or --steps",
                     x->step_min, x->step_max, ly, y->step_min, y->step_max);
        }
    } else {
        /* RATIONALE: with one repeat the spread is unknown; a margin above
         * 10% rarely comes from run-to-run noise, a smaller one easily does. */
        b->certainty = b->margin >= 0.10 ? "likely" : "unsure";
        snprintf(b->why, sizeof b->why,
                 "%.0f%% less time per step than the runner-up, %s, in one run each; "
                 "use --repeat 3 to measure the spread",
                 100 * b->margin, ly);
    }
}

static void print_table(gs_out *o, sw_config *cs, int nc, int repeat, const sw_best *b,
                        const char *outdir, int steps, int warmup)
{
    gs_out_printf(o, "sweep  %d configuration%s x %d repeat%s, %d measured steps each "
                     "(%d warm-up left out); runs kept in %s\n\n",
                  nc, nc == 1 ? "" : "s", repeat, repeat == 1 ? "" : "s", steps, warmup, outdir);
    gs_out_printf(o, "  %-11s %-10s %14s %10s %12s  %-22s %-8s %s\n", "num_workers",
                  "pin_memory", "step ms (med)", "data wait", "pageable ms", "verdict",
                  "source", repeat > 1 ? "runs (step ms range)" : "runs");
    for (int i = 0; i < nc; i++) {
        const sw_config *c = &cs[i];
        char nw[16], pin[16];
        snprintf(nw, sizeof nw, "%s", c->nw >= 0 ? "" : "as is");
        if (c->nw >= 0)
            snprintf(nw, sizeof nw, "%d", c->nw);
        snprintf(pin, sizeof pin, "%s", c->pin < 0 ? "as is" : c->pin ? "True" : "False");
        const char *mark = (i == b->best) ? "*" : " ";
        if (c->left_out) {
            gs_out_printf(o, "%s %-11s %-10s left out: pin_memory=True is a no-op for this command "
                             "(no CUDA: the DataLoader pins nothing)\n",
                          mark, nw, pin);
            continue;
        }
        if (!c->nok) {
            gs_out_printf(o, "%s %-11s %-10s %14s %10s %12s  %-22s %-8s 0/%d\n", mark, nw, pin,
                          "-", "-", "-", "failed", "-", repeat);
            continue;
        }
        gs_out_printf(o, "%s %-11s %-10s %14.1f %9.1f%% %12.2f  %-22s %-8s %u/%d", mark, nw,
                      pin, c->step_ms, 100 * c->dw_share, c->pg_ms, c->verdict,
                      c->source ? c->source : "-", c->nok, repeat);
        if (repeat > 1)
            gs_out_printf(o, " (%.1f-%.1f)", c->step_min, c->step_max);
        gs_out_char(o, '\n');
    }
    gs_out_char(o, '\n');
    if (b->best < 0) {
        gs_out_str(o, "best   none: no configuration could be measured\n");
        return;
    }
    char lb[96];
    config_label(&cs[b->best], lb, sizeof lb);
    gs_out_printf(o, "best   %s  (%s) %.1f ms per step", lb[0] ? lb : "(as is)",
                  b->certainty, cs[b->best].step_ms);
    gs_out_printf(o, "\n       %s\n", b->why);
}

/* The metrics members of a run or a configuration (null when not measured). */
static void json_metrics(gs_jw *w, const sw_metrics *m)
{
    if (!m->ok) {
        const char *keys[] = {"step_ms_median", "data_wait_share", "pageable_copy_ms", "verdict",
                              "source"};
        for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
            gs_jw_knull(w, keys[i]);
        return;
    }
    gs_jw_kfixed(w, "step_ms_median", m->step_ms, 4);
    gs_jw_kfixed(w, "data_wait_share", m->dw_share, 5);
    gs_jw_kfixed(w, "pageable_copy_ms", m->pg_ms, 4);
    gs_jw_kstr(w, "verdict", m->verdict);
    gs_jw_kstr(w, "source", m->source);
    gs_jw_ku64(w, "steps", m->steps);
}
/* num_workers and pin_memory of a configuration (null: as the program has it). */
static void json_config(gs_jw *w, const sw_config *c)
{
    gs_jw_key(w, "num_workers");
    if (c->nw >= 0)
        gs_jw_i64(w, c->nw);
    else
        gs_jw_null(w);
    gs_jw_key(w, "pin_memory");
    if (c->pin >= 0)
        gs_jw_bool(w, c->pin);
    else
        gs_jw_null(w);
}

/* One member of "configs": the configuration, its summary and its runs. */
static void json_config_entry(gs_jw *w, const sw_config *c, int repeat, int best)
{
    gs_jw_obj(w);
    json_config(w, c);
    gs_jw_kbool(w, "best", best);
    gs_jw_kstr(w, "left_out", c->left_out ? "pin_memory_noop" : NULL);
    gs_jw_ku64(w, "measured_runs", c->nok);
    sw_metrics agg = {0};
    if (c->nok) {
        agg.ok = 1;
        agg.step_ms = c->step_ms;
        agg.dw_share = c->dw_share;
        agg.pg_ms = c->pg_ms;
        snprintf(agg.verdict, sizeof agg.verdict, "%s", c->verdict);
        agg.source = c->source;
        for (int r = 0; r < repeat; r++)
            if (c->runs[r].m.ok && c->runs[r].m.steps > agg.steps)
                agg.steps = c->runs[r].m.steps;
    }
    json_metrics(w, &agg);
    if (c->nok) {
        gs_jw_kfixed(w, "step_ms_min", c->step_min, 4);
        gs_jw_kfixed(w, "step_ms_max", c->step_max, 4);
    }
    gs_jw_key(w, "runs");
    gs_jw_arr(w);
    for (int r = 0; r < repeat; r++) {
        const sw_run *run = &c->runs[r];
        gs_jw_obj(w);
        gs_jw_kstr(w, "dir", run->dir);
        gs_jw_kstr(w, "log", run->log);
        gs_jw_key(w, "exit");
        if (run->exit_code >= 0)
            gs_jw_i64(w, run->exit_code);
        else
            gs_jw_null(w);
        gs_jw_kfixed(w, "wall_s", run->wall_s, 3);
        json_metrics(w, &run->m);
        gs_jw_end(w);
    }
    gs_jw_end(w);
    gs_jw_end(w);
}

static void write_json(gs_out *o, char **cmd, sw_config *cs, int nc, int repeat,
                       const sw_best *b, const char *outdir, int steps, int warmup)
{
    gs_jw jw, *w = &jw;
    gs_jw_init(w, o);
    gs_jw_obj(w);
    gs_jw_kstr(w, "schema", "gpustarve.sweep/1");
    gs_jw_key(w, "command");
    gs_jw_arr(w);
    for (int i = 0; cmd[i]; i++)
        gs_jw_str(w, cmd[i]);
    gs_jw_end(w);
    gs_jw_ki64(w, "steps", steps);
    gs_jw_ki64(w, "warmup", warmup);
    gs_jw_ki64(w, "repeat", repeat);
    gs_jw_kstr(w, "out_dir", outdir);
    int noop = 0;
    for (int i = 0; i < nc; i++)
        noop |= cs[i].left_out;
    gs_jw_kbool(w, "pin_memory_noop", noop);
    gs_jw_key(w, "configs");
    gs_jw_arr(w);
    for (int i = 0; i < nc; i++)
        json_config_entry(w, &cs[i], repeat, i == b->best);
    gs_jw_end(w);
    gs_jw_key(w, "best");
    if (b->best < 0) {
        gs_jw_null(w);
    } else {
        const sw_config *c = &cs[b->best];
        gs_jw_obj(w);
        json_config(w, c);
        gs_jw_kfixed(w, "step_ms_median", c->step_ms, 4);
        gs_jw_kstr(w, "certainty", b->certainty);
        gs_jw_kfixed(w, "margin", b->margin, 4);
        gs_jw_kstr(w, "why", b->why);
        gs_jw_end(w);
    }
    gs_jw_end(w);
    gs_out_char(o, '\n');
}

/* ---- the command: options, the grid, the rounds, the outputs --------------------- */

/* What the command line asks for. A setting without a list is one value, -1:
 * as the program has it. */
typedef struct sw_opts {
    int nws[MAX_VALUES], pins[MAX_VALUES], nnw, npin;
    long steps, warmup, repeat, timeout;
    const char *json, *out;
    char **cmd; /* the training command, NULL-terminated */
} sw_opts;

/* Where the rounds stand: the progress count and what to say at the end. */
typedef struct sw_progress {
    int done, total; /* runs started, runs in all (fewer once pin_memory is left out) */
    int nomarkers;   /* runs without steps */
    int pin_noop;    /* a pin_memory=True run showed it a no-op */
} sw_progress;

#define SW_GO_ON (-1) /* parse_args: no exit status yet, go on */

/* After the options: what they must hold together, the command, and the
 * settings without a list. Returns SW_GO_ON or the exit status. */
static int check_args(int argc, char **argv, sw_opts *a)
{
    if (optind >= argc)
        return gs_cli_usage_error("sweep", "needs a command to run (gpustarve sweep ... -- CMD ARGS...)");
    if (!a->nnw && !a->npin)
        return gs_cli_usage_error("sweep", "needs --num-workers LIST and/or --pin-memory LIST");
    if (a->json && !*a->json)
        return gs_cli_usage_error("sweep", "--json needs a file name (or -)");
    if (a->out && !*a->out)
        return gs_cli_usage_error("sweep", "-o needs a directory name");
    a->cmd = argv + optind;
    if (!a->nnw) {
        a->nws[0] = -1;
        a->nnw = 1;
    }
    if (!a->npin) {
        a->pins[0] = -1;
        a->npin = 1;
    }
    return SW_GO_ON;
}

/* The options and the command into a. Returns SW_GO_ON, or the exit status
 * (--help, bad usage). */
static int parse_args(int argc, char **argv, sw_opts *a)
{
    static const struct option opts[] = {
        {"num-workers", required_argument, NULL, 'n'},
        {"pin-memory", required_argument, NULL, 'p'},
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
    a->repeat = 1;
    int opt, rc;
    optind = 0;
    opterr = 0;
    while ((opt = getopt_long(argc, argv, optstring, opts, NULL)) != -1) {
        switch (opt) {
        case 'n':
            if ((rc = parse_list(optarg, 0, a->nws, &a->nnw)) != 0)
                return gs_cli_usage_error("sweep", "--num-workers needs %s, not '%s'",
                                          rc == -2 ? "distinct values" : "a list like 0,2,4",
                                          optarg);
            break;
        case 'p':
            if ((rc = parse_list(optarg, 1, a->pins, &a->npin)) != 0)
                return gs_cli_usage_error("sweep", "--pin-memory needs %s, not '%s'",
                                          rc == -2 ? "distinct values" : "a list like 0,1",
                                          optarg);
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
            if (gs_cli_long(optarg, 1, MAX_VALUES, &a->repeat) != 0)
                return gs_cli_usage_error("sweep", "--repeat needs a number from 1 to %d, not '%s'",
                                          MAX_VALUES, optarg);
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
    return check_args(argc, argv, a);
}

static void free_configs(sw_config *cs, int nc, int repeat)
{
    for (int i = 0; i < nc; i++) {
        for (int r = 0; cs[i].runs && r < repeat; r++) {
            free(cs[i].runs[r].dir);
            free(cs[i].runs[r].log);
        }
        free(cs[i].runs);
    }
    free(cs);
}

/* Name run r of configuration c (nwN-pinP-rK) and place it in outdir.
 * Returns 0, or -1 when out of memory. */
static int name_run(sw_run *run, const sw_config *c, int r, const char *outdir)
{
    char nwp[16] = "", pp[16] = "";
    if (c->nw >= 0)
        snprintf(nwp, sizeof nwp, "nw%d", c->nw);
    if (c->pin >= 0)
        snprintf(pp, sizeof pp, "pin%d", c->pin);
    snprintf(run->name, sizeof run->name, "%s%s%s-r%d", nwp, (*nwp && *pp) ? "-" : "", pp, r + 1);
    if (asprintf(&run->dir, "%s/%s", outdir, run->name) < 0) {
        run->dir = NULL;
        return -1;
    }
    if (asprintf(&run->log, "%s/%s.log", outdir, run->name) < 0) {
        run->log = NULL;
        return -1;
    }
    run->exit_code = -1;
    return 0;
}

/* The configurations, num_workers outer, each with its runs named; *nc their
 * number. NULL when out of memory. */
static sw_config *make_grid(const sw_opts *a, const char *outdir, int *nc)
{
    *nc = a->nnw * a->npin;
    sw_config *cs = calloc((size_t)*nc, sizeof *cs);
    if (!cs)
        return NULL;
    for (int i = 0; i < a->nnw; i++)
        for (int j = 0; j < a->npin; j++) {
            sw_config *c = &cs[i * a->npin + j];
            c->nw = a->nws[i];
            c->pin = a->pins[j];
            c->runs = calloc((size_t)a->repeat, sizeof *c->runs);
            if (!c->runs)
                goto oom;
            for (int r = 0; r < a->repeat; r++)
                if (name_run(&c->runs[r], c, r, outdir) != 0)
                    goto oom;
        }
    return cs;
oom:
    gs_cli_error("sweep: out of memory");
    free_configs(cs, *nc, (int)a->repeat);
    return NULL;
}

/* RATIONALE: 'run -o' refuses a directory that holds traces; say so once,
 * before anything runs, rather than once per failed run.
 * Returns 0 when no run directory holds traces, else -1 (said on stderr). */
static int check_run_dirs_fresh(const sw_config *cs, int nc, int repeat)
{
    for (int i = 0; i < nc; i++) {
        for (int r = 0; r < repeat; r++) {
            gs_run_files have;
            if (gs_run_files_list(&have, cs[i].runs[r].dir) != GS_OK)
                continue; /* not there yet: the usual case */
            const size_t n = have.n;
            gs_run_files_free(&have);
            if (n) {
                gs_cli_error("sweep: %s already holds traces of an earlier sweep; use another -o DIR",
                             cs[i].runs[r].dir);
                return -1;
            }
        }
    }
    return 0;
}

/* Run one configuration's run under 'exe run -q -o DIR -- CMD...' with the
 * settings in its environment; records its exit status and wall time.
 * Returns 0, or -1 when out of memory (nothing run). */
static int start_run(const sw_opts *a, char *exe, const sw_config *c, sw_run *run,
                     char *steps_env)
{
    char nw_env[48], pin_env[48];
    char *env[4];
    int ne = 0;
    env[ne++] = steps_env;
    if (c->nw >= 0) {
        snprintf(nw_env, sizeof nw_env, "GPUSTARVE_NUM_WORKERS=%d", c->nw);
        env[ne++] = nw_env;
    }
    if (c->pin >= 0) {
        snprintf(pin_env, sizeof pin_env, "GPUSTARVE_PIN_MEMORY=%d", c->pin);
        env[ne++] = pin_env;
    }
    env[ne] = NULL;
    int ncmd = 0;
    while (a->cmd[ncmd])
        ncmd++;
    char **av = calloc((size_t)ncmd + 7, sizeof *av);
    if (!av)
        return -1;
    int k = 0;
    av[k++] = exe;
    av[k++] = "run";
    av[k++] = "-q";
    av[k++] = "-o";
    av[k++] = run->dir;
    av[k++] = "--";
    for (int j = 0; j < ncmd; j++)
        av[k++] = a->cmd[j];
    av[k] = NULL;
    const double t0 = now_s();
    run->exit_code = spawn_wait(av, run->log, env, (double)a->timeout);
    run->wall_s = now_s() - t0;
    free(av);
    return 0;
}

/* Say how a finished run went and take its numbers. Returns 0 when steps
 * were found (its numbers count only when it exited 0), else -1. */
static int measure_run(sw_run *run, const char *label, int warmup, sw_progress *p)
{
    if (run->exit_code != 0) {
        gs_cli_error("sweep: %s: the command %s %d; see %s", label,
                     run->exit_code > 128 ? "died of signal" : "exited with",
                     run->exit_code > 128 ? run->exit_code - 128 : run->exit_code, run->log);
    }
    if (metrics_of_run(run->dir, warmup, &run->m) != 0) {
        p->nomarkers++;
        gs_cli_error("sweep: %s: no steps found in %s", label, run->dir);
        return -1;
    }
    if (run->exit_code != 0) /* numbers of a broken run are not compared */
        run->m.ok = 0;
    else
        gs_cli_msg(1, "sweep:   %.1f s, median step %.1f ms, data wait %.1f%% (%s)", run->wall_s,
                   run->m.step_ms, 100 * run->m.dw_share, run->m.source);
    return 0;
}

/* RATIONALE: without CUDA pin_memory=True pins nothing; its runs would
 * measure pin_memory=False again, and their noise could crown a setting that
 * does nothing. Called once, after run (round r, configuration i) showed it:
 * leaves out the pin_memory=True configurations and recounts the runs to come. */
static void leave_out_pin_memory(const sw_opts *a, sw_config *cs, int nc, int r, int i,
                                 sw_progress *p)
{
    p->pin_noop = 1;
    gs_cli_msg(1, "sweep: pin_memory=True is a no-op for this command (the DataLoader "
                  "says pin_memory_effective=False: no CUDA device)%s",
               a->npin > 1 ? "; the pin_memory axis is left out" : "");
    for (int k = 0; k < nc && a->npin > 1; k++)
        cs[k].left_out |= cs[k].pin == 1;
    /* the progress count: the runs still to come */
    p->total = p->done;
    for (int rr = r; rr < a->repeat; rr++)
        for (int k = rr == r ? i + 1 : 0; k < nc; k++)
            p->total += !cs[k].left_out;
}

/* Every run of every configuration, until done or interrupted.
 * RATIONALE: rounds (every configuration once, then again) rather than K
 * runs in a row, so a drift of the machine (page cache, thermal, another
 * job) spreads over all configurations instead of favouring one. */
static void run_rounds(const sw_opts *a, char *exe, sw_config *cs, int nc, sw_progress *p)
{
    char steps_env[48];
    snprintf(steps_env, sizeof steps_env, "GPUSTARVE_STEPS=%ld", a->steps + a->warmup);
    p->total = nc * (int)a->repeat;
    for (int r = 0; r < a->repeat && !g_interrupted; r++) {
        for (int i = 0; i < nc && !g_interrupted; i++) {
            sw_config *c = &cs[i];
            sw_run *run = &c->runs[r];
            if (c->left_out)
                continue;
            char label[96];
            config_label(c, label, sizeof label);
            p->done++;
            gs_cli_msg(1, "sweep: run %d/%d: %s%s", p->done, p->total, label,
                       a->repeat > 1 ? (r ? " (repeat)" : "") : "");
            if (start_run(a, exe, c, run, steps_env) != 0)
                break;
            if (measure_run(run, label, (int)a->warmup, p) != 0)
                continue;
            if (run->m.pin_noop && !p->pin_noop)
                leave_out_pin_memory(a, cs, nc, r, i, p);
        }
    }
}

/* The table (or the JSON with --json -) on stdout, and the JSON file with
 * --json FILE. Returns the exit status. */
static int write_outputs(const sw_opts *a, sw_config *cs, int nc, const sw_best *best,
                         const char *outdir)
{
    const int repeat = (int)a->repeat, steps = (int)a->steps, warmup = (int)a->warmup;
    gs_out o;
    int json_stdout = a->json && strcmp(a->json, "-") == 0;
    gs_out_init(&o, stdout);
    if (json_stdout)
        write_json(&o, a->cmd, cs, nc, repeat, best, outdir, steps, warmup);
    else
        print_table(&o, cs, nc, repeat, best, outdir, steps, warmup);
    gs_out_flush(&o);
    int result = best->best >= 0 ? GS_EXIT_OK : GS_EXIT_FAIL;
    if (a->json && !json_stdout) {
        FILE *f = fopen(a->json, "w");
        if (!f) {
            gs_cli_error("sweep: cannot write %s: %s", a->json, strerror(errno));
            result = GS_EXIT_FAIL;
        } else {
            gs_out jo;
            gs_out_init(&jo, f);
            write_json(&jo, a->cmd, cs, nc, repeat, best, outdir, steps, warmup);
            gs_out_flush(&jo);
            if (ferror(f) | (fclose(f) != 0)) {
                gs_cli_error("sweep: cannot write %s", a->json);
                result = GS_EXIT_FAIL;
            }
        }
    }
    return result;
}

int gs_cmd_sweep(int argc, char **argv)
{
    sw_opts a;
    const int rc = parse_args(argc, argv, &a);
    if (rc != SW_GO_ON)
        return rc;
    char *exe = self_exe();
    if (!exe) {
        gs_cli_error("sweep: cannot find my own executable (/proc/self/exe): %s", strerror(errno));
        return GS_EXIT_FAIL;
    }
    char *outdir = make_out_dir(a.out);
    int nc = 0;
    sw_config *cs = outdir ? make_grid(&a, outdir, &nc) : NULL;
    if (!cs) {
        free(exe);
        free(outdir);
        return GS_EXIT_FAIL;
    }
    if (check_run_dirs_fresh(cs, nc, (int)a.repeat) != 0) {
        free_configs(cs, nc, (int)a.repeat);
        free(exe);
        free(outdir);
        return GS_EXIT_USAGE;
    }

    struct sigaction sa, old_int;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_sigint;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &old_int);
    gs_cli_msg(1, "sweep: %d configuration%s x %d repeat%s, %ld+%ld steps each, into %s", nc,
               nc == 1 ? "" : "s", (int)a.repeat, a.repeat == 1 ? "" : "s", a.warmup, a.steps,
               outdir);
    sw_progress p = {0};
    run_rounds(&a, exe, cs, nc, &p);
    sigaction(SIGINT, &old_int, NULL);
    if (g_interrupted)
        gs_cli_error("sweep: interrupted; the table shows the runs that finished");
    if (p.nomarkers)
        gs_cli_msg(1, "sweep: a run without steps: does the command iterate a torch DataLoader, and "
                      "is gpustarve's python/ folder on PYTHONPATH (gpustarve run sets it)?");

    for (int i = 0; i < nc; i++)
        summarize_config(&cs[i], (int)a.repeat);
    sw_best best;
    pick_best(cs, nc, (int)a.repeat, &best);
    const int result = write_outputs(&a, cs, nc, &best, outdir);
    free_configs(cs, nc, (int)a.repeat);
    free(exe);
    free(outdir);
    return result;
}
