/* cmd_run.c — `gpustarve run`: create the run directory, start the command
 * with libgpustarve.so preloaded, forward signals to it, and exit with its
 * status.
 *
 * Responsible for: the run directory, finding the preload library, the
 * environment the collector reads (LD_PRELOAD, GPUSTARVE_DIR), the
 * injection doors that point CUDA and NVTX at it (CUDA_INJECTION64_PATH,
 * NVTX_INJECTION64_PATH, unless the user set them), the Python side's folder
 * first on PYTHONPATH (its sitecustomize chains to the user's), signal
 * forwarding, waiting (bounded) for processes the command left behind, and a
 * one-line account of what was traced.
 *
 * Must never: write to stdout (the traced program's stdout must stay
 * byte-identical to an untraced run), change the environment beyond those
 * five variables (and GPUSTARVE_STACKS / PYTHONPERFSUPPORT when --stacks /
 * --python-frames ask for them, libgcc_s and libunwind in LD_PRELOAD with
 * stacks), override an injection path the user chose, or exit with
 * anything but the command's own status once the command has started.
 */
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <libgen.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "load/an_run.h"
#include "cmd/cli_util.h"
#include "cmd/cmd_top.h"
#include "cmd/run_dir.h"
#include "cmd/run_peers.h"
#include "gs_trace.h"

static const char usage_text[] =
    "usage: gpustarve run [-o DIR [--append]] [--stacks] [--python-frames] [--live]\n"
    "                     [-q|-v] [--] COMMAND [ARGS...]\n"
    "\n"
    "Run COMMAND with libgpustarve.so preloaded, tracing it and every process\n"
    "it starts (DataLoader workers included) into a run directory, one *.gst\n"
    "file per process. Read it with 'gpustarve dump DIR'.\n"
    "\n"
    "options:\n"
    "  -o, --output DIR  run directory; created private to you when missing (with\n"
    "                    any missing parents); an existing one must hold no trace\n"
    "                    files (*.gst) yet, and no other run may be using it (a\n"
    "                    lock, .gpustarve-run.lock, held while this run lasts;\n"
    "                    a dead run's lock holds nothing). Default: a new\n"
    "                    gpustarve-YYYYMMDD-HHMMSS in the current directory,\n"
    "                    private to you; trace files are private too (0600)\n"
    "  --append          let -o DIR already hold traces, or another run be\n"
    "                    using it: this run is added to them ('gpustarve report'\n"
    "                    then says the directory holds more than one run)\n"
    "  --stacks          also record where the I/O and CUDA copy calls come from:\n"
    "                    a call stack at the first calls of each call site, then\n"
    "                    1 in 64 (GPUSTARVE_STACKS=1; 'gpustarve report' names\n"
    "                    the top call sites of each finding)\n"
    "  --python-frames   --stacks, and Python function names in the stacks where\n"
    "                    the interpreter writes perf maps (Python 3.12+:\n"
    "                    PYTHONPERFSUPPORT=1); older Pythons give native frames\n"
    "  --live            while COMMAND runs, print a summary line to stderr every\n"
    "                    5 s: per rank, steps, steps/s, data wait, GPU busy and\n"
    "                    pageable-copy shares over the last 10 s, loader batch\n"
    "                    time (as 'gpustarve top' shows them; even with -q)\n"
    "  -q, --quiet       print nothing (gpustarve's own lines go to stderr)\n"
    "  -v, --verbose     also print the library and environment used\n"
    "  -h, --help        show this help\n"
    "\n"
    "environment:\n"
    "  GPUSTARVE_LIB     the preload library to use; default: libgpustarve.so\n"
    "                    next to the gpustarve executable, else\n"
    "                    ../lib/gpustarve/libgpustarve.so relative to it\n"
    "  The command gets LD_PRELOAD (the library appended to any existing value)\n"
    "  and GPUSTARVE_DIR (the run directory, absolute); CUDA_INJECTION64_PATH\n"
    "  and NVTX_INJECTION64_PATH name the library too (so CUDA starts the GPU\n"
    "  collector and NVTX ranges are recorded) unless already set; PYTHONPATH\n"
    "  starts with gpustarve's Python folder (DataLoader step markers; its\n"
    "  sitecustomize runs any sitecustomize of yours too). --stacks sets\n"
    "  GPUSTARVE_STACKS=1 (GPUSTARVE_STACK_DEPTH, _FIRST, _EVERY tune it: 16\n"
    "  frames, first 8 calls, then 1 in 64) and preloads libgcc_s and\n"
    "  libunwind after the library (GPUSTARVE_STACKS=1 already set does the\n"
    "  same); --python-frames also PYTHONPERFSUPPORT=1. Nothing else changes.\n"
    "\n"
    "Beside the traces, HOST-PID.peers says which other processes were busy\n"
    "as the command started (\"same=S other=O\": cores in this run's\n"
    "scheduling group, and in others, over 40 ms beside the command's start),\n"
    "which the model of num_workers uses.\n"
    "\n"
    "Signals: SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1 and SIGUSR2 sent to\n"
    "gpustarve with kill(1) are passed on to the command; keyboard signals\n"
    "reach the command directly.\n"
    "\n"
    "When COMMAND exits, processes it left behind (DataLoader workers still\n"
    "shutting down) are waited for, up to 5 s, so their traces are complete;\n"
    "any still running then are left alone (a message says so, and the closing\n"
    "line counts them as still running, not as ended abruptly).\n"
    "\n"
    "Exit status: the command's; 128+N when it died of signal N; 127 command\n"
    "not found; 126 command not executable; 2 bad usage, run directory or\n"
    "library problems, a -o DIR that already holds traces or that another run\n"
    "is using, without --append (the command is not started, nothing in DIR is\n"
    "touched).\n";

#define LIB_NAME "libgpustarve.so"

static const int forwarded[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2};
#define NFORWARDED (sizeof forwarded / sizeof forwarded[0])

static volatile sig_atomic_t child_pid;

/* RATIONALE: a terminal's ^C or ^\ already reached the command through the
 * process group (si_code SI_KERNEL); forwarding it would deliver it twice.
 * Only signals another process sent to us with kill/sigqueue/tgkill go on. */
static void forward_signal(int sig, siginfo_t *si, void *uctx)
{
    (void)uctx;
    int saved = errno;
    pid_t child = (pid_t)child_pid;
    if (child > 0 && si &&
        (si->si_code == SI_USER || si->si_code == SI_QUEUE || si->si_code == SI_TKILL) &&
        si->si_pid != child)
        kill(child, sig);
    errno = saved;
}

/* Copy of path made absolute and canonical, or NULL (errno set). */
static char *abs_path(const char *path)
{
    return realpath(path, NULL);
}

static int is_file(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

/* Find libgpustarve.so; returns a malloc'd absolute path or NULL (message
 * printed). */
static char *find_library(void)
{
    const char *env = getenv("GPUSTARVE_LIB");
    if (env && *env) {
        if (!is_file(env)) {
            gs_cli_error("GPUSTARVE_LIB=%s: %s", env,
                         access(env, F_OK) == 0 ? "not a regular file" : strerror(errno));
            return NULL;
        }
        char *p = abs_path(env);
        if (!p)
            gs_cli_error("GPUSTARVE_LIB=%s: %s", env, strerror(errno));
        return p;
    }
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n < 0) {
        gs_cli_error("cannot find my own executable (/proc/self/exe: %s); set GPUSTARVE_LIB",
                     strerror(errno));
        return NULL;
    }
    exe[n] = '\0';
    char *dir = dirname(exe);
    char cand[2][PATH_MAX + 64];
    snprintf(cand[0], sizeof cand[0], "%s/%s", dir, LIB_NAME);
    snprintf(cand[1], sizeof cand[1], "%s/../lib/gpustarve/%s", dir, LIB_NAME);
    for (int i = 0; i < 2; i++) {
        if (is_file(cand[i])) {
            char *p = abs_path(cand[i]);
            if (p)
                return p;
        }
    }
    gs_cli_error("cannot find %s (looked in %s/ and %s/../lib/gpustarve/); set GPUSTARVE_LIB",
                 LIB_NAME, dir, dir);
    return NULL;
}

/* The folder holding gpustarve's sitecustomize.py and gpustarve/ package:
 * <exe dir>/../python (build tree) or <exe dir>/../lib/gpustarve/python
 * (installed). malloc'd absolute path, or NULL when there is none. */
static char *find_python_dir(void)
{
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n < 0)
        return NULL;
    exe[n] = '\0';
    char *dir = dirname(exe);
    static const char *const rel[] = {"../python", "../lib/gpustarve/python"};
    for (size_t i = 0; i < sizeof rel / sizeof rel[0]; i++) {
        char cand[PATH_MAX + 64];
        snprintf(cand, sizeof cand, "%s/%s/sitecustomize.py", dir, rel[i]);
        if (is_file(cand)) {
            snprintf(cand, sizeof cand, "%s/%s", dir, rel[i]);
            return abs_path(cand);
        }
    }
    return NULL;
}

/* Put dir first on PYTHONPATH (once: a nested run finds it there already). */
static void prepend_pythonpath(const char *dir)
{
    const char *old = getenv("PYTHONPATH");
    const size_t dl = strlen(dir);
    char *pp = NULL;
    if (!old || !*old)
        pp = strdup(dir);
    else if (strncmp(old, dir, dl) == 0 && (old[dl] == ':' || old[dl] == '\0'))
        pp = strdup(old);
    else if (asprintf(&pp, "%s:%s", dir, old) < 0)
        pp = NULL;
    if (pp) {
        setenv("PYTHONPATH", pp, 1);
        gs_cli_msg(2, "PYTHONPATH=%s", pp);
        free(pp);
    }
}

/* RATIONALE: the library is not linked with libunwind (the Makefile says
 * why). Preloaded after it, libunwind is loaded at start-up, so its TLS is
 * static and a thread's first unwind allocates nothing (opened later, glibc
 * would malloc it inside a hook); libgcc_s goes first so that the _Unwind_*
 * symbols libunwind also exports never become the program's C++ exception
 * unwinder. */
#define GCC_S_LIB "libgcc_s.so.1"
#define UNWIND_LIB "libunwind.so.8"
static const char stack_libs[] = GCC_S_LIB ":" UNWIND_LIB;

static int stack_libs_found(void)
{
    static const char *const names[] = {GCC_S_LIB, UNWIND_LIB};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        void *h = dlopen(names[i], RTLD_LAZY | RTLD_LOCAL);
        if (!h) {
            gs_cli_error("--stacks needs %s, which cannot be loaded (%s); on Debian: "
                         "apt-get install libunwind8", names[i], dlerror());
            return 0;
        }
        dlclose(h);
    }
    return 1;
}

/* LD_PRELOAD with lib appended (ld.so splits on spaces and colons), and
 * with stacks the unwinder after it. */
static char *preload_value(const char *lib, int stacks)
{
    const char *old = getenv("LD_PRELOAD");
    const char *sep = stacks ? ":" : "", *more = stacks ? stack_libs : "";
    char *v;
    if (!old || !*old)
        return asprintf(&v, "%s%s%s", lib, sep, more) < 0 ? NULL : v;
    /* already there (a nested `gpustarve run`): keep the value as it is */
    const char *p = old;
    size_t ll = strlen(lib);
    while ((p = strstr(p, lib)) != NULL) {
        int start_ok = p == old || p[-1] == ' ' || p[-1] == ':';
        int end_ok = p[ll] == '\0' || p[ll] == ' ' || p[ll] == ':';
        if (start_ok && end_ok)
            return strdup(old);
        p += ll;
    }
    if (asprintf(&v, "%s:%s%s%s", old, lib, sep, more) < 0)
        return NULL;
    return v;
}

typedef struct run_totals {
    unsigned files, damaged, abrupt, running;
    uint64_t events, dropped, lost, recovered;
} run_totals;

static int listed(const gs_run_files *names, const char *path)
{
    for (size_t i = 0; names && i < names->n; i++)
        if (strcmp(names->path[i], path) == 0)
            return 1;
    return 0;
}

/* Read the traces this run wrote (events, drops, damage); files listed in
 * `before` were there before the run and are left out. */
static void count_traces(const char *dir, const gs_run_files *before, run_totals *t)
{
    memset(t, 0, sizeof *t);
    gs_run_files now;
    if (gs_run_files_list(&now, dir) != GS_OK)
        return;
    for (size_t f = 0; f < now.n; f++) {
        const char *path = now.path[f];
        if (listed(before, path))
            continue;
        t->files++;
        gs_reader *r = NULL;
        if (gs_reader_open(&r, path) != GS_OK) {
            t->damaged++;
            continue;
        }
        const gs_event *ev;
        size_t n;
        int rc;
        while ((rc = gs_reader_next_batch(r, &ev, &n)) > 0)
            ;
        /* the reader's own account: the same numbers dump and report print */
        gs_reader_totals tot;
        gs_reader_get_totals(r, &tot);
        if (rc < 0)
            t->damaged++;
        t->events += tot.events;
        t->dropped += tot.dropped;
        t->lost += tot.lost;
        t->recovered += tot.recovered;
        /* a process the command left running (wait_leftovers gave up) is not
         * one that ended abruptly */
        const gs_proc_info *pi = gs_reader_info(r);
        const int running = (tot.ended == GS_END_ABRUPT || tot.ended == GS_END_UNKNOWN) &&
                            an_trace_running(path, pi->pid, pi->host);
        t->running += running;
        t->abrupt += !running && (tot.ended == GS_END_SIGNAL || tot.ended == GS_END_ABRUPT);
        gs_reader_close(r);
    }
    gs_run_files_free(&now);
}

static void report_run(const gs_run_dir *rd, const gs_run_files *before)
{
    const char *dir = rd->name;
    if (gs_verbosity < 1)
        return; /* -q: nothing to say, so no trace is read */
    /* RATIONALE: a directory removed while the command ran took its traces
     * with it; the library is not to blame for that */
    char moved[PATH_MAX];
    const enum gs_dir_fate fate = gs_dir_fate(dir, rd->dir_fd, moved, sizeof moved);
    if (fate == GS_DIR_REMOVED || fate == GS_DIR_REPLACED) {
        gs_cli_msg(1, "the run directory %s was removed while the command ran: its traces are "
                      "gone%s",
                   dir, fate == GS_DIR_REPLACED ? " (the one of that name now is another)" : "");
        return;
    }
    if (fate == GS_DIR_MOVED) {
        gs_cli_msg(1, "the run directory %s was moved while the command ran%s%s", dir,
                   moved[0] ? "; see: gpustarve dump " : "", moved);
        return;
    }
    run_totals t;
    count_traces(dir, before, &t);
    if (t.files == 0) {
        gs_cli_msg(1, "no trace files were written to %s (was %s loaded? static and "
                      "setuid programs cannot be traced)",
                   dir, LIB_NAME);
        return;
    }
    char damaged[64] = "", abrupt[160] = "", running[64] = "";
    if (t.running)
        snprintf(running, sizeof running, ", %u still running", t.running);
    if (t.damaged)
        snprintf(damaged, sizeof damaged, " (%u damaged)", t.damaged);
    if (t.abrupt)
        snprintf(abrupt, sizeof abrupt, ", %u ended abruptly (%llu events recovered from %s)",
                 t.abrupt, (unsigned long long)t.recovered, t.abrupt == 1 ? "its live file" : "their live files");
    gs_cli_msg(1, "traced %u process%s%s, %llu events, %llu dropped, %llu lost%s%s; see: gpustarve "
                  "dump %s",
               t.files, t.files == 1 ? "" : "es", damaged, (unsigned long long)t.events,
               (unsigned long long)t.dropped, (unsigned long long)t.lost, abrupt, running, dir);
}

/* The collector prints a kind of warning once per run and marks it with a
 * file .warned-<kind> in the run directory (docs/collector-safety.md): a
 * reused directory's marks are an earlier run's, not this one's. */
static void forget_warnings(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *de;
    while (d && (de = readdir(d)) != NULL) {
        if (strncmp(de->d_name, ".warned-", 8) != 0)
            continue;
        char p[PATH_MAX];
        if (snprintf(p, sizeof p, "%s/%s", dir, de->d_name) < (int)sizeof p)
            unlink(p);
    }
    if (d)
        closedir(d);
}

/* Start argv with the prepared environment; returns the exit code to use. */
/* After the command exits: reap the processes it left behind (reparented to
 * us as subreaper) for up to LEFTOVER_WAIT_MS, so their traces are complete;
 * say so when some are still running then (they are left alone). */
#define LEFTOVER_WAIT_MS 5000
static void wait_leftovers(void)
{
    /* RATIONALE: looked at after 1 ms, then twice as long each time up to
     * 10 ms: a worker that is about to exit costs the run little more
     * than its exit */
    long step_us = 1000;
    for (long waited_us = 0;; waited_us += step_us, step_us = step_us < 5000 ? 2 * step_us : 10000) {
        int st;
        pid_t w;
        while ((w = waitpid(-1, &st, WNOHANG)) > 0)
            ;
        if (w < 0)
            return; /* ECHILD: none left */
        if (waited_us >= LEFTOVER_WAIT_MS * 1000L) {
            gs_cli_msg(1, "processes started by the command are still running %u s after it "
                          "exited; their traces may be incomplete",
                       LEFTOVER_WAIT_MS / 1000);
            return;
        }
        const struct timespec ts = {0, step_us * 1000};
        nanosleep(&ts, NULL);
    }
}

/* run --live: seconds between summary lines, 0 = off */
#define LIVE_PERIOD_S 5
static unsigned live_period;

static int run_child(char **argv, gs_run_dir *rd, const gs_run_files *before, gs_peers *pe)
{
    const char *dir = rd->name;
    struct sigaction orig[NFORWARDED];
    sigset_t block, oldmask;
    sigemptyset(&block);
    for (size_t i = 0; i < NFORWARDED; i++)
        sigaddset(&block, forwarded[i]);
    /* Signals wait until child_pid is known (parent) or the original
     * dispositions are back (child). */
    sigprocmask(SIG_BLOCK, &block, &oldmask);
    for (size_t i = 0; i < NFORWARDED; i++) {
        sigaction(forwarded[i], NULL, &orig[i]);
        if (orig[i].sa_handler == SIG_IGN)
            continue; /* ignored by whoever started us (nohup): stays ignored */
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_sigaction = forward_signal;
        sa.sa_flags = SA_SIGINFO | SA_RESTART;
        sigfillset(&sa.sa_mask);
        sigaction(forwarded[i], &sa, NULL);
    }

    /* Exec failure travels back through a close-on-exec pipe, so an exit
     * status 127 of the command itself is not mistaken for "not found". */
    int pfd[2];
    if (pipe2(pfd, O_CLOEXEC) != 0) {
        gs_cli_error("pipe: %s", strerror(errno));
        return GS_EXIT_FAIL;
    }
    /* RATIONALE: processes the command leaves behind (DataLoader workers
     * still exiting when the trainer is gone) are reparented to us, so we can
     * wait for their last trace flush before saying what was traced. */
    prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
    fflush(stderr);
    pid_t pid = fork();
    if (pid < 0) {
        gs_cli_error("cannot start %s: fork: %s", argv[0], strerror(errno));
        close(pfd[0]);
        close(pfd[1]);
        sigprocmask(SIG_SETMASK, &oldmask, NULL);
        return GS_EXIT_FAIL;
    }
    if (pid == 0) {
        close(pfd[0]);
        for (size_t i = 0; i < NFORWARDED; i++)
            sigaction(forwarded[i], &orig[i], NULL);
        sigprocmask(SIG_SETMASK, &oldmask, NULL);
        execvp(argv[0], argv);
        int e = errno;
        ssize_t w = write(pfd[1], &e, sizeof e);
        (void)w;
        _exit(127);
    }
    child_pid = pid;
    close(pfd[1]);
    sigprocmask(SIG_SETMASK, &oldmask, NULL);

    int exec_errno = 0;
    ssize_t got;
    do
        got = read(pfd[0], &exec_errno, sizeof exec_errno);
    while (got < 0 && errno == EINTR);
    close(pfd[0]);
    if (got != (ssize_t)sizeof exec_errno)
        exec_errno = 0;

    int status;
    pid_t w;
    top_live *lv = live_period && !exec_errno ? top_live_start(dir, live_period) : NULL;
    /* the other processes busy as the program starts, by scheduling group:
     * the model reads whether their load yields. RATIONALE: kept until the
     * command is done, so the directory gains no file while the program
     * may be using it. */
    char peers[64] = "";
    if (!exec_errno && pe && gs_run_peers_end(pe, (int)pid, peers, sizeof peers) != 0)
        peers[0] = '\0';
    do
        w = waitpid(pid, &status, 0);
    while (w < 0 && errno == EINTR);
    top_live_stop(lv);
    child_pid = 0;
    for (size_t i = 0; i < NFORWARDED; i++)
        sigaction(forwarded[i], &orig[i], NULL);
    if (w < 0) {
        gs_cli_error("waitpid: %s", strerror(errno));
        return GS_EXIT_FAIL;
    }

    if (exec_errno) {
        int not_found = exec_errno == ENOENT || exec_errno == ENOTDIR;
        if (not_found && !strchr(argv[0], '/'))
            gs_cli_error("%s: command not found", argv[0]);
        else
            gs_cli_error("%s: %s", argv[0], strerror(exec_errno));
        gs_run_dir_close(rd, 1); /* nothing ran: leave no empty run directory behind */
        return not_found ? 127 : 126;
    }

    wait_leftovers();
    if (peers[0] && gs_run_peers_save(rd->dir_fd, (int)pid, peers) == 0)
        gs_cli_msg(2, "other processes busy as it started: %s", peers);
    report_run(rd, before);
    if (WIFEXITED(status))
        return WEXITSTATUS(status);
    if (WIFSIGNALED(status))
        return 128 + WTERMSIG(status);
    return GS_EXIT_FAIL;
}

int gs_cmd_run(int argc, char **argv)
{
    static const struct option opts[] = {
        {"output", required_argument, NULL, 'o'}, {"quiet", no_argument, NULL, 'q'},
        {"verbose", no_argument, NULL, 'v'},      {"help", no_argument, NULL, 'h'},
        {"stacks", no_argument, NULL, 'S'},       {"python-frames", no_argument, NULL, 'P'},
        {"append", no_argument, NULL, 'A'},       {"live", no_argument, NULL, 'L'},
        {NULL, 0, NULL, 0},
    };
    /* '+': stop at the command, whose own options are not ours */
    static const char optstring[] = "+o:qvh";
    const char *out = NULL;
    int opt, stacks = 0, pyframes = 0, append = 0;
    optind = 0;
    opterr = 0;
    while ((opt = getopt_long(argc, argv, optstring, opts, NULL)) != -1) {
        switch (opt) {
        case 'o': out = optarg; break;
        case 'S': stacks = 1; break;
        case 'P': stacks = pyframes = 1; break;
        case 'A': append = 1; break;
        case 'L': live_period = LIVE_PERIOD_S; break;
        case 'q': gs_verbosity = 0; break;
        case 'v': gs_verbosity++; break;
        case 'h': fputs(usage_text, stdout); return GS_EXIT_OK;
        default: return gs_cli_bad_option("run", argc, argv, optstring, opts);
        }
    }
    if (optind >= argc)
        return gs_cli_usage_error("run", "needs a command to run (gpustarve run -- CMD ARGS...)");
    if (out && !*out)
        return gs_cli_usage_error("run", "-o needs a directory name");
    if (append && !out)
        return gs_cli_usage_error("run", "--append needs -o DIR (the default directory is new)");
    char **cmd = argv + optind;
    const char *stacks_env = getenv("GPUSTARVE_STACKS"); /* set by hand: the same */
    if (stacks_env && stacks_env[0] && strcmp(stacks_env, "0") != 0)
        stacks = 1;
    if (stacks && !stack_libs_found())
        return GS_EXIT_USAGE;

    char *lib = find_library();
    if (!lib)
        return GS_EXIT_USAGE;
    if (strpbrk(lib, " :")) {
        gs_cli_error("%s: LD_PRELOAD cannot carry a path with a space or colon; "
                     "install it elsewhere or set GPUSTARVE_LIB", lib);
        free(lib);
        return GS_EXIT_USAGE;
    }
    gs_run_dir rd;
    if (gs_run_dir_open(&rd, out, append) != 0) {
        free(lib);
        return GS_EXIT_USAGE;
    }
    const char *dir = rd.name;
    char *absdir = abs_path(dir);
    char *preload = preload_value(lib, stacks);
    if (!absdir || !preload) {
        gs_cli_error("%s: %s", dir, strerror(errno));
        gs_run_dir_close(&rd, 1);
        free(lib);
        free(absdir);
        free(preload);
        return GS_EXIT_USAGE;
    }
    setenv("LD_PRELOAD", preload, 1);
    setenv("GPUSTARVE_DIR", absdir, 1);
    gs_cli_msg(2, "LD_PRELOAD=%s", preload);
    gs_cli_msg(2, "GPUSTARVE_DIR=%s", absdir);
    /* RATIONALE: a value the user set (nsys, another tool) stands; the
     * collector then starts CUPTI itself at the first CUDA call and says
     * so if CUPTI turns out to be taken. */
    static const char *const doors[] = {"CUDA_INJECTION64_PATH", "NVTX_INJECTION64_PATH"};
    for (size_t i = 0; i < sizeof doors / sizeof doors[0]; i++) {
        const char *have = getenv(doors[i]);
        if (have && *have) {
            gs_cli_msg(2, "%s=%s (already set: kept)", doors[i], have);
        } else {
            setenv(doors[i], lib, 1);
            gs_cli_msg(2, "%s=%s", doors[i], lib);
        }
    }
    if (stacks) {
        setenv("GPUSTARVE_STACKS", "1", 1);
        gs_cli_msg(2, "GPUSTARVE_STACKS=1");
    }
    if (pyframes) {
        setenv("PYTHONPERFSUPPORT", "1", 1);
        gs_cli_msg(2, "PYTHONPERFSUPPORT=1");
    }
    char *pydir = find_python_dir();
    if (pydir) {
        prepend_pythonpath(pydir);
        free(pydir);
    }
    gs_cli_msg(1, "tracing to %s", dir);

    /* RATIONALE: an existing -o directory may hold earlier runs (--append);
     * the closing line counts only what this run wrote. */
    gs_run_files before = {0};
    if (!rd.created) {
        gs_run_files_list(&before, dir); /* unreadable: every file counts */
        forget_warnings(dir);
    }
    /* the other processes now (their ids), their CPU time as the program
     * starts and 40 ms later (run_peers.c) */
    gs_peers *pe = gs_run_peers_begin();
    int rc = run_child(cmd, &rd, &before, pe);
    gs_run_files_free(&before);
    gs_run_dir_close(&rd, 0);
    free(lib);
    free(absdir);
    free(preload);
    return rc;
}
