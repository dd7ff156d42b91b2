/* sweep_run.c — one run of `gpustarve sweep`: its name and directory, the
 * settings put into its environment or onto its command line, starting it
 * under this same executable's `run`, and its numbers, which are the
 * report's own (an_run_load and an_job_analyze in process, as `gpustarve
 * report --skip W` computes them), with what its trace says of the
 * program's DataLoader.
 *
 * Must never: write to stdout, delete a run directory, or compute a step,
 * a share or a verdict itself (the analyzer does).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cmd/cli_util.h"
#include "cmd/sweep.h"
#include "gs_trace.h"
#include "model/an_model.h"
#include "model/an_ranks.h"

double sw_now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

char *sw_self_exe(void)
{
    char buf[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
    if (n < 0)
        return NULL;
    buf[n] = '\0';
    return strdup(buf);
}

const sw_dl_setting sw_dl[SW_ENV] = {
    [SW_NUM_WORKERS] = {"num-workers", "num_workers", "GPUSTARVE_NUM_WORKERS", "nw", SW_COUNT},
    [SW_PIN_MEMORY] = {"pin-memory", "pin_memory", "GPUSTARVE_PIN_MEMORY", "pin", SW_BOOL},
    [SW_PREFETCH_FACTOR] = {"prefetch-factor", "prefetch_factor", "GPUSTARVE_PREFETCH_FACTOR",
                            "pf", SW_COUNT},
    [SW_PERSISTENT_WORKERS] = {"persistent-workers", "persistent_workers",
                               "GPUSTARVE_PERSISTENT_WORKERS", "pw", SW_BOOL},
    [SW_SHARING_STRATEGY] = {"sharing-strategy", "sharing_strategy",
                             "GPUSTARVE_SHARING_STRATEGY", "ss", SW_NAME},
};

const char *sw_value_text(const sw_axis *ax, int v)
{
    const char *t = ax->vals[v];
    if (sw_axis_type(ax) == SW_BOOL)
        return !strcmp(t, "1") ? "True" : "False";
    return t;
}

void sw_config_label(const sw_sweep *s, const sw_config *c, char *buf, size_t cap)
{
    size_t l = 0;
    buf[0] = '\0';
    for (int a = 0; a < s->naxes && l < cap; a++)
        l += (size_t)snprintf(buf + l, cap - l, "%s%s=%s", a ? " " : "", s->axes[a].name,
                              sw_value_text(&s->axes[a], c->val[a]));
}

/* ---- names --------------------------------------------------------------------- */

/* The characters of a run name: letters, digits, '.', '+', '-'; others '_'. */
static void put_clean(char *buf, size_t cap, size_t *l, const char *s)
{
    for (; *s && *l + 1 < cap; s++) {
        const char ch = *s;
        const int ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
                       (ch >= '0' && ch <= '9') || ch == '.' || ch == '+' || ch == '-';
        buf[(*l)++] = ok ? ch : '_';
    }
    buf[*l] = '\0';
}

/* nwN-pinP-pfF-pwW-ssS-NAMEvalue...-rK: the DataLoader settings by their
 * tags, an environment variable by its name, an argument without its
 * dashes. */
static void run_name(const sw_sweep *s, const sw_config *c, int r, char *buf, size_t cap)
{
    size_t l = 0;
    buf[0] = '\0';
    for (int a = 0; a < s->naxes; a++) {
        const sw_axis *ax = &s->axes[a];
        if (l)
            put_clean(buf, cap, &l, "-");
        if (sw_is_dataloader(ax->kind)) {
            put_clean(buf, cap, &l, sw_dl[ax->kind].tag);
        } else {
            const char *n = ax->name;
            while (*n == '-')
                n++;
            put_clean(buf, cap, &l, n);
        }
        put_clean(buf, cap, &l, ax->vals[c->val[a]]);
    }
    char tail[16];
    snprintf(tail, sizeof tail, "%sr%d", l ? "-" : "", r + 1);
    put_clean(buf, cap, &l, tail);
}

int sw_name_runs(sw_sweep *s, int max_rounds, const char *outdir)
{
    for (int i = 0; i < s->nc; i++) {
        sw_config *c = &s->cs[i];
        for (int r = 0; r < max_rounds; r++) {
            sw_run *run = &c->runs[r];
            run_name(s, c, r, run->name, sizeof run->name);
            run->exit_code = -1;
            if (asprintf(&run->dir, "%s/%s", outdir, run->name) < 0) {
                run->dir = NULL;
                return -1;
            }
            if (asprintf(&run->log, "%s/%s.log", outdir, run->name) < 0) {
                run->log = NULL;
                return -1;
            }
        }
    }
    /* two configurations whose values differ only in characters a name cannot hold */
    for (int i = 0; i < s->nc; i++)
        for (int j = i + 1; j < s->nc; j++)
            if (!strcmp(s->cs[i].runs[0].name, s->cs[j].runs[0].name)) {
                gs_cli_error("sweep: two configurations would share the run name %s; use values "
                             "that differ in letters or digits", s->cs[i].runs[0].name);
                return -2;
            }
    return 0;
}

int sw_check_dirs_fresh(const sw_sweep *s, int max_rounds)
{
    for (int i = 0; i < s->nc; i++) {
        for (int r = 0; r < max_rounds; r++) {
            gs_run_files have;
            if (gs_run_files_list(&have, s->cs[i].runs[r].dir) != GS_OK)
                continue; /* not there yet: the usual case */
            const size_t n = have.n;
            gs_run_files_free(&have);
            if (n) {
                gs_cli_error("sweep: %s already holds traces of an earlier sweep; use another -o DIR",
                             s->cs[i].runs[r].dir);
                return -1;
            }
        }
    }
    return 0;
}

char *sw_make_out_dir(const char *want)
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

/* ---- starting a run ------------------------------------------------------------- */

volatile sig_atomic_t sw_interrupted;

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
    const double t0 = sw_now_s();
    int status = 0, killed = 0;
    for (;;) {
        pid_t w = waitpid(pid, &status, timeout_s > 0 ? WNOHANG : 0);
        if (w == pid)
            break;
        if (w < 0 && errno != EINTR)
            return -1;
        if (timeout_s > 0 && w == 0) {
            if (sw_now_s() - t0 > timeout_s && killed < 2) {
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

/* Where argument axis ax stands in cmd[1..]: the index of "NAME" (its value
 * follows) or of "NAME=...", and which; -1 when absent. */
static int find_arg(char **cmd, int ncmd, const char *name, int *joined)
{
    const size_t l = strlen(name);
    for (int i = 1; i < ncmd; i++) {
        if (!strcmp(cmd[i], name) && i + 1 < ncmd) {
            *joined = 0;
            return i;
        }
        if (!strncmp(cmd[i], name, l) && cmd[i][l] == '=') {
            *joined = 1;
            return i;
        }
    }
    return -1;
}

/* The command with configuration c's --set-arg values: replaced where the
 * command has the argument, else appended ("--NAME=V", or "-N V").
 * Returns a NULL-terminated array (free with its strings in owned), or NULL. */
static char **command_line(const sw_sweep *s, const sw_config *c, char **cmd, char **owned,
                           int *nowned)
{
    int ncmd = 0;
    while (cmd[ncmd])
        ncmd++;
    char **av = calloc((size_t)ncmd + 2 * SW_MAX_AXES + 1, sizeof *av);
    if (!av)
        return NULL;
    memcpy(av, cmd, (size_t)ncmd * sizeof *av);
    int n = ncmd;
    *nowned = 0;
    for (int a = 0; a < s->naxes; a++) {
        const sw_axis *ax = &s->axes[a];
        if (ax->kind != SW_ARG)
            continue;
        const char *v = ax->vals[c->val[a]];
        int joined = 0;
        const int at = find_arg(av, n, ax->name, &joined);
        char *t = NULL;
        if (at >= 0 && !joined) {
            av[at + 1] = (char *)v;
            continue;
        }
        if (at >= 0 || ax->name[1] == '-') {
            if (asprintf(&t, "%s=%s", ax->name, v) < 0)
                break;
            owned[(*nowned)++] = t;
            av[at >= 0 ? at : n++] = t;
        } else {
            av[n++] = (char *)ax->name;
            av[n++] = (char *)v;
        }
    }
    av[n] = NULL;
    return av;
}

int sw_start_run(const sw_sweep *s, const sw_config *c, sw_run *run, char *exe, char **cmd,
                 long steps_total, double timeout_s)
{
    char envbuf[SW_MAX_AXES + 1][320];
    char *env[SW_MAX_AXES + 2];
    int ne = 0;
    snprintf(envbuf[ne], sizeof envbuf[ne], "GPUSTARVE_STEPS=%ld", steps_total);
    env[ne] = envbuf[ne];
    ne++;
    for (int a = 0; a < s->naxes; a++) {
        const sw_axis *ax = &s->axes[a];
        if (ax->kind == SW_ARG)
            continue;
        snprintf(envbuf[ne], sizeof envbuf[ne], "%s=%s",
                 ax->kind == SW_ENV ? ax->name : sw_dl[ax->kind].env, ax->vals[c->val[a]]);
        env[ne] = envbuf[ne];
        ne++;
    }
    env[ne] = NULL;
    char *owned[SW_MAX_AXES];
    int nowned = 0;
    char **line = command_line(s, c, cmd, owned, &nowned);
    int ncmd = 0;
    while (line && line[ncmd])
        ncmd++;
    char **av = line ? calloc((size_t)ncmd + 7, sizeof *av) : NULL;
    if (!av) {
        free(line);
        return -1;
    }
    int k = 0;
    av[k++] = exe;
    av[k++] = "run";
    av[k++] = "-q";
    av[k++] = "-o";
    av[k++] = run->dir;
    av[k++] = "--";
    for (int j = 0; j < ncmd; j++)
        av[k++] = line[j];
    av[k] = NULL;
    const double t0 = sw_now_s();
    run->exit_code = spawn_wait(av, run->log, env, timeout_s);
    run->wall_s = sw_now_s() - t0;
    free(av);
    free(line);
    for (int i = 0; i < nowned; i++)
        free(owned[i]);
    return 0;
}

/* ---- a run's numbers: the report's own analysis, in process ----------------------- */

/* 1 when a process of the run recorded a PyTorch DataLoader's configuration
 * (the Python side writes its dataset class with every loader's settings). */
static int run_has_dataloader(const an_run *run)
{
    for (size_t i = 0; i < run->nprocs; i++)
        if (an_cfg_value(&run->procs[i], "dataset"))
            return 1;
    return 0;
}

/* The first DataLoader setting of c that the run's loader does not have as
 * set, said in m->not_applied ("" when all are). */
static void check_applied(const sw_sweep *s, const sw_config *c, const an_result *res,
                          sw_metrics *m)
{
    m->not_applied[0] = '\0';
    m->not_applied_kind = -1;
    for (int a = 0; a < s->naxes; a++) {
        const sw_axis *ax = &s->axes[a];
        if (!sw_is_dataloader(ax->kind))
            continue;
        const char *key = sw_dl[ax->kind].key;
        const char *want = ax->vals[c->val[a]], *got = an_loader_cfg(res, key);
        if (got && (!strcasecmp(got, "true") || !strcasecmp(got, "false")))
            got = !strcasecmp(got, "true") ? "1" : "0";
        if (got && !strcmp(got, want))
            continue;
        snprintf(m->not_applied, sizeof m->not_applied, "its DataLoader has %s=%s, not %s",
                 key, got ? got : "(none recorded)", want);
        m->not_applied_kind = (int)ax->kind;
        return;
    }
}

int sw_measure(const sw_sweep *s, const sw_config *c, const char *dir, int warmup, sw_metrics *m)
{
    an_opts o;
    const char *bad = NULL;
    memset(m, 0, sizeof *m);
    m->not_applied_kind = -1;
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
    m->traced = loaded;
    if (loaded)
        m->has_dataloader = run_has_dataloader(&run);
    const int analysed = loaded && an_job_analyze(&run, &o, &job, err, sizeof err) == 0;
    if (!loaded) {
        gs_cli_msg(2, "sweep: %s", err);
    } else if (!analysed) {
        gs_cli_msg(2, "sweep: %s: %s", dir, err);
    } else {
        /* a job of ranks: the rank that limits it, as report's top level */
        const an_result *res = job.top;
        m->ok = 1;
        m->step_ms = res->step_ms_median;
        m->step_mean_ms = res->step_ms_mean;
        m->dw_share = res->share[AN_SH_DATA_WAIT];
        /* RATIONALE: the time pageable copies cost a step is both what the
         * GPU spent copying from pageable memory and what it idled while the
         * host staged the copy; pin_memory=True removes both. */
        m->pg_ms = res->median_ms[AN_SH_PAGEABLE_COPY] + res->median_ms[AN_SH_H2D_PAGEABLE];
        snprintf(m->verdict, sizeof m->verdict, "%s", an_verdict_label(res->verdict));
        m->source = an_source_name(res->source);
        m->steps = res->measured;
        m->pin_noop = res->cur_pin_memory == 1 && res->pin_effective == 0;
        check_applied(s, c, res, m);
        rc = 0;
    }
    if (loaded)
        an_job_free(&job); /* also after a failed analysis: what it had made */
    an_run_free(&run);
    an_opts_free(&o);
    return rc;
}
