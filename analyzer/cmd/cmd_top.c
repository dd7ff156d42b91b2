/* cmd_top.c — `gpustarve top [DIR]`: follow a run in progress and show, per
 * rank, refreshed every second, what its last steps spent their time on;
 * and the thread behind `gpustarve run --live` (cmd_top.h).
 *
 * Responsible for: finding the run directory (the newest gpustarve-* in the
 * current directory when none is named), reading it again at each refresh
 * (an_run_load: the trace files as far as they are written, and what the
 * live files hold beyond that, docs/trace-format.md "Live files"), the rows
 * of an_window.c, the screen (a table redrawn in place on a terminal, one
 * plain line per refresh otherwise), the keyboard (q quits), giving up on a
 * directory removed under it (at once) or unreadable (after
 * TOP_MAX_FAILED_READS refreshes in a row), and putting the terminal back as
 * it was, on every way out.
 *
 * Must never: write to the run directory, signal the traced processes, or
 * leave the terminal in raw mode.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "model/an_window.h"
#include "cmd/cli_util.h"
#include "cmd/cmd_top.h"
#include "cmd/run_dir.h"

static const char usage_text[] =
    "usage: gpustarve top [-i SEC] [-w SEC] [DIR]\n"
    "\n"
    "Follow a run in progress (gpustarve run writes its traces as it goes) and\n"
    "show, per rank (a run without ranks is one row), over the steps that ended\n"
    "in the last window: steps per second, data wait, GPU busy and pageable-copy\n"
    "shares of the step time, and the loader's time per batch (the mean over\n"
    "workers of their batches that ended in the window; over the run so far,\n"
    "marked '*' or '(run so far)', for loaders without batch fetch markers).\n"
    "Exits when no process of the run is running any more, or on q or Ctrl-C;\n"
    "with status 1 when the run directory is removed or moved, or cannot be\n"
    "read at 10 refreshes in a row.\n"
    "Without a terminal, prints one line per refresh.\n"
    "\n"
    "arguments:\n"
    "  DIR               run directory; default: the newest gpustarve-* in the\n"
    "                    current directory. Waits for its first trace file\n"
    "\n"
    "options:\n"
    "  -i, --interval SEC  refresh every SEC seconds (1-3600, default 1)\n"
    "  -w, --window SEC    the window the rates and shares cover, seconds\n"
    "                      (1-86400, default 10)\n"
    "  -h, --help          show this help\n";

#define TOP_MAX_ROWS 64
/* RATIONALE: a directory that cannot be read for a while (permissions
 * changed, a network file system gone away) may come back; ten refreshes
 * in a row it did not, and top stops saying "waiting" for ever */
#define TOP_MAX_FAILED_READS 10

/* The directory followed, held open since the start, and how many
 * refreshes in a row could not read it. */
typedef struct top_follow {
    int fd;
    unsigned failed;
} top_follow;

/* Hold dir: 0, or -1 (errno set). */
static int follow_start(top_follow *f, const char *dir)
{
    f->failed = 0;
    f->fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    return f->fd < 0 ? -1 : 0;
}

static void follow_end(top_follow *f)
{
    if (f->fd >= 0)
        close(f->fd);
    f->fd = -1;
}

/* Before a refresh: 0 to go on; 1 when top must stop following dir, 2
 * when it must follow it elsewhere (why says why). */
static int follow_lost(top_follow *f, const char *dir, char *why, size_t n)
{
    char moved[PATH_MAX];
    const enum gs_dir_fate fate = gs_dir_fate(dir, f->fd, moved, sizeof moved);
    if (fate == GS_DIR_REMOVED || fate == GS_DIR_REPLACED) {
        snprintf(why, n, "the run directory %s was removed%s", dir,
                 fate == GS_DIR_REPLACED ? " (the one of that name now is another)" : "");
        return 1;
    }
    if (fate == GS_DIR_MOVED) {
        snprintf(why, n, "the run directory %s was moved%s%s", dir,
                 moved[0] ? "; follow it with: gpustarve top " : "", moved);
        return 2;
    }
    int e = fate == GS_DIR_UNREACHABLE ? errno : 0;
    if (!e) {
        DIR *d = opendir(dir);
        if (d)
            closedir(d);
        else
            e = errno;
    }
    f->failed = e ? f->failed + 1 : 0;
    if (f->failed < TOP_MAX_FAILED_READS)
        return 0;
    snprintf(why, n, "cannot read the run directory %s: %s (%u refreshes in a row)", dir,
             strerror(e), f->failed);
    return 1;
}

typedef struct top_row {
    an_window_row w;
    char host[64];
} top_row;

typedef struct top_snap {
    size_t nfiles, nprocs, running;
    top_row rows[TOP_MAX_ROWS];
    size_t nrows;
    char why[320]; /* nothing to show yet: why */
} top_snap;

static uint64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Read dir as it stands and fill s. */
static void take(const char *dir, uint64_t window_ns, top_snap *s)
{
    memset(s, 0, sizeof *s);
    an_opts o;
    const char *bad = NULL;
    if (an_opts_init(&o, NULL, NULL, &bad) < 0) {
        snprintf(s->why, sizeof s->why, "bad default pattern '%s'", bad);
        return;
    }
    an_run run;
    char err[300];
    if (an_run_load(&run, dir, &o, err, sizeof err) < 0) {
        snprintf(s->why, sizeof s->why, "%s", err);
        an_run_free(&run);
        an_opts_free(&o);
        return;
    }
    const uint64_t now = mono_ns();
    s->nfiles = run.nfiles;
    s->nprocs = run.nprocs;
    s->running = run.running;
    char here[256];
    an_host_name(NULL, here, sizeof here);
    an_job job;
    int have_job = run.nprocs && an_job_analyze(&run, &o, &job, err, sizeof err) == 0;
    an_window_row rows[TOP_MAX_ROWS];
    s->nrows = an_window_rows(&run, have_job ? &job : NULL, now, window_ns, here, rows,
                              TOP_MAX_ROWS);
    for (size_t i = 0; i < s->nrows; i++) {
        s->rows[i].w = rows[i];
        snprintf(s->rows[i].host, sizeof s->rows[i].host, "%s", rows[i].host ? rows[i].host : "");
        s->rows[i].w.host = NULL; /* points into the run, freed below */
    }
    if (!have_job)
        snprintf(s->why, sizeof s->why, "%s", run.nprocs ? err : "no process traced yet");
    if (have_job)
        an_job_free(&job);
    an_run_free(&run);
    an_opts_free(&o);
}

static void pct(char *out, size_t n, double v)
{
    if (v < 0)
        snprintf(out, n, "-");
    else
        snprintf(out, n, "%.1f%%", 100.0 * v);
}

static void num(char *out, size_t n, double v, const char *fmt)
{
    if (v < 0)
        snprintf(out, n, "-");
    else
        snprintf(out, n, fmt, v);
}

static void rank_text(char *out, size_t n, int32_t rank)
{
    if (rank < 0)
        snprintf(out, n, "-");
    else
        snprintf(out, n, "%d", (int)rank);
}

static void state_text(char *out, size_t n, const top_snap *s)
{
    if (!s->nprocs)
        snprintf(out, n, "waiting (%s)", s->why[0] ? s->why : "no trace yet");
    else if (s->running)
        snprintf(out, n, "running %zu/%zu", s->running, s->nprocs);
    else
        snprintf(out, n, "ended %zu/%zu", s->nprocs, s->nprocs);
}

/* A row's cells as text, the same in the plain line and the table; bm_fmt
 * formats the loader batch time. */
typedef struct {
    char rk[16], sps[32], dw[16], gb[16], pg[16], bm[32];
} cells;

static void row_cells(cells *c, const an_window_row *r, const char *bm_fmt)
{
    rank_text(c->rk, sizeof c->rk, r->rank);
    num(c->sps, sizeof c->sps, r->steps ? r->steps_per_s : -1, "%.2f");
    pct(c->dw, sizeof c->dw, r->data_wait);
    pct(c->gb, sizeof c->gb, r->gpu_busy);
    pct(c->pg, sizeof c->pg, r->pageable);
    num(c->bm, sizeof c->bm, r->batch_ms, bm_fmt);
    if (r->batch_ms >= 0 && r->batch_run_so_far) /* not over the window alone */
        snprintf(c->bm + strlen(c->bm), sizeof c->bm - strlen(c->bm), "%s",
                 strchr(bm_fmt, ' ') ? " (run so far)" : "*");
}

/* One line: the state, then each row. */
static void plain_line(FILE *f, const top_snap *s, const char *prefix)
{
    char st[400];
    state_text(st, sizeof st, s);
    fprintf(f, "%s%s", prefix, st);
    for (size_t i = 0; s->nprocs && i < s->nrows; i++) {
        const an_window_row *r = &s->rows[i].w;
        cells c;
        row_cells(&c, r, "%.1f ms");
        fprintf(f,
                " | rank %s pid %llu: %zu steps, %s steps/s, data wait %s, GPU busy %s, "
                "pageable copy %s, loader batch %s",
                c.rk, (unsigned long long)r->pid, r->steps_total, c.sps, c.dw, c.gb, c.pg,
                c.bm);
    }
    fputc('\n', f);
    fflush(f);
}

static void table(FILE *f, const top_snap *s, const char *dir, unsigned window_s)
{
    char st[400];
    state_text(st, sizeof st, s);
    fprintf(f, "gpustarve top %s: %s, last %u s   (q quits)\n\n", dir, st, window_s);
    fprintf(f, "%5s %8s %-16s %7s %8s %10s %9s %9s %9s\n", "RANK", "PID", "HOST", "STEPS",
            "STEPS/S", "DATA WAIT", "GPU BUSY", "PAGEABLE", "BATCH ms");
    for (size_t i = 0; s->nprocs && i < s->nrows; i++) {
        const an_window_row *r = &s->rows[i].w;
        cells c;
        row_cells(&c, r, "%.1f");
        fprintf(f, "%5s %8llu %-16.16s %7zu %8s %10s %9s %9s %9s\n", c.rk,
                (unsigned long long)r->pid, s->rows[i].host, r->steps_total, c.sps, c.dw, c.gb,
                c.pg, c.bm);
    }
    for (size_t i = 0; s->nprocs && i < s->nrows; i++)
        if (s->rows[i].w.batch_ms >= 0 && s->rows[i].w.batch_run_so_far) {
            fprintf(f, "\n* BATCH ms over the run so far: loaders without batch fetch "
                       "markers\n");
            break;
        }
    fflush(f);
}

/* ---- the terminal ------------------------------------------------------------- */

static volatile sig_atomic_t top_stop;
static struct termios saved_tio;
static int tio_saved;

static void on_signal(int sig)
{
    (void)sig;
    top_stop = 1;
}

static void term_restore(void)
{
    if (!tio_saved)
        return;
    tio_saved = 0;
    /* cursor shown, the normal screen back */
    fputs("\033[?25h\033[?1049l", stdout);
    fflush(stdout);
    tcsetattr(STDIN_FILENO, TCSAFLUSH, &saved_tio);
}

static int term_raw(void)
{
    if (tcgetattr(STDIN_FILENO, &saved_tio) != 0)
        return -1;
    struct termios t = saved_tio;
    /* keys one at a time, not echoed; Ctrl-C still a signal */
    t.c_lflag &= ~(tcflag_t)(ICANON | ECHO);
    t.c_cc[VMIN] = 0;
    t.c_cc[VTIME] = 0;
    if (tcsetattr(STDIN_FILENO, TCSAFLUSH, &t) != 0)
        return -1;
    tio_saved = 1;
    atexit(term_restore);
    fputs("\033[?1049h\033[?25l", stdout);
    fflush(stdout);
    return 0;
}

/* Wait up to ms for q (TTY) or a signal; 1 when the user asked to quit. */
static int wait_key(int tty, int ms)
{
    const uint64_t until = mono_ns() + (uint64_t)ms * 1000000ull;
    for (;;) {
        if (top_stop)
            return 1;
        const uint64_t now = mono_ns();
        if (now >= until)
            return 0;
        struct pollfd p = {STDIN_FILENO, POLLIN, 0};
        int left = (int)((until - now + 999999) / 1000000);
        int r = poll(tty ? &p : NULL, tty ? 1 : 0, left);
        if (r > 0 && tty) {
            char c[16];
            ssize_t n = read(STDIN_FILENO, c, sizeof c);
            for (ssize_t i = 0; i < n; i++)
                if (c[i] == 'q' || c[i] == 'Q' || c[i] == 3 /* Ctrl-C without ISIG */)
                    return 1;
            if (n == 0) /* the terminal went away */
                return 1;
        }
    }
}

/* The newest gpustarve-* directory of the current directory, or NULL. */
static char *newest_run_dir(void)
{
    DIR *d = opendir(".");
    if (!d)
        return NULL;
    char *best = NULL;
    struct timespec bt = {0, 0};
    struct dirent *e;
    while ((e = readdir(d))) {
        if (strncmp(e->d_name, "gpustarve-", 10) != 0)
            continue;
        struct stat st;
        if (stat(e->d_name, &st) != 0 || !S_ISDIR(st.st_mode))
            continue;
        if (!best || st.st_mtim.tv_sec > bt.tv_sec ||
            (st.st_mtim.tv_sec == bt.tv_sec && st.st_mtim.tv_nsec > bt.tv_nsec)) {
            free(best);
            best = strdup(e->d_name);
            bt = st.st_mtim;
        }
    }
    closedir(d);
    return best;
}

int gs_cmd_top(int argc, char **argv)
{
    static const struct option opts[] = {
        {"interval", required_argument, NULL, 'i'},
        {"window", required_argument, NULL, 'w'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    static const char optstring[] = "i:w:h";
    long interval = 1, window = 10;
    int opt;
    optind = 0;
    opterr = 0;
    while ((opt = getopt_long(argc, argv, optstring, opts, NULL)) != -1) {
        switch (opt) {
        case 'i':
            if (gs_cli_long(optarg, 1, 3600, &interval) < 0)
                return gs_cli_usage_error("top", "--interval needs seconds from 1 to 3600, not '%s'",
                                          optarg);
            break;
        case 'w':
            if (gs_cli_long(optarg, 1, 86400, &window) < 0)
                return gs_cli_usage_error("top", "--window needs seconds from 1 to 86400, not '%s'",
                                          optarg);
            break;
        case 'h': fputs(usage_text, stdout); return GS_EXIT_OK;
        default: return gs_cli_bad_option("top", argc, argv, optstring, opts);
        }
    }
    if (argc - optind > 1)
        return gs_cli_usage_error("top", "takes one run directory, not %d", argc - optind);
    char *dir = optind < argc ? strdup(argv[optind]) : newest_run_dir();
    if (!dir) {
        if (optind < argc)
            return gs_cli_usage_error("top", "out of memory");
        return gs_cli_usage_error("top", "no run directory named and no gpustarve-* here");
    }
    struct stat st;
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
        int e = errno;
        int rc = gs_cli_usage_error("top", "%s: %s", dir,
                                    stat(dir, &st) != 0 ? strerror(e) : "not a directory");
        free(dir);
        return rc;
    }

    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);

    const int tty = isatty(STDIN_FILENO) && isatty(STDOUT_FILENO) && term_raw() == 0;
    top_snap *s = malloc(sizeof *s);
    if (!s) {
        term_restore();
        free(dir);
        gs_cli_error("top: out of memory");
        return GS_EXIT_FAIL;
    }
    top_follow fol;
    char lost[PATH_MAX + 128] = "";
    if (follow_start(&fol, dir) != 0)
        snprintf(lost, sizeof lost, "%s: %s", dir, strerror(errno));
    int quit = 0, moved = 0;
    while (!lost[0]) {
        if ((moved = follow_lost(&fol, dir, lost, sizeof lost)) != 0)
            break;
        take(dir, (uint64_t)window * 1000000000ull, s);
        const int over = s->nprocs && !s->running;
        if (tty) {
            fputs("\033[H\033[J", stdout);
            table(stdout, s, dir, (unsigned)window);
        } else {
            plain_line(stdout, s, "");
            if (ferror(stdout))
                break; /* the reader went away */
        }
        if (over || quit)
            break;
        quit = wait_key(tty, (int)interval * 1000);
        if (quit)
            break;
    }
    if (tty) {
        term_restore();
        table(stdout, s, dir, (unsigned)window); /* the last view stays on the screen */
    }
    follow_end(&fol);
    free(s);
    free(dir);
    if (lost[0]) {
        gs_cli_error("top: %s%s", lost, moved == 2 ? "" : "; nothing left to follow");
        return gs_cli_finish(GS_EXIT_FAIL);
    }
    return gs_cli_finish(GS_EXIT_OK);
}

/* ---- run --live ------------------------------------------------------------------- */

struct top_live {
    pthread_t th;
    int wake[2]; /* written to stop the thread */
    char *dir;
    unsigned period_s;
    top_follow fol;
};

static void *live_main(void *arg)
{
    top_live *t = arg;
    top_snap *s = malloc(sizeof *s);
    if (!s)
        return NULL;
    for (;;) {
        struct pollfd p = {t->wake[0], POLLIN, 0};
        int r = poll(&p, 1, (int)t->period_s * 1000);
        if (r != 0 && !(r < 0 && errno == EINTR))
            break;
        if (r < 0)
            continue;
        char lost[PATH_MAX + 128];
        if (follow_lost(&t->fol, t->dir, lost, sizeof lost)) {
            fprintf(stderr, "gpustarve: live: %s; no more live lines\n", lost);
            break;
        }
        take(t->dir, (uint64_t)t->period_s * 2 * 1000000000ull, s);
        if (s->nprocs)
            plain_line(stderr, s, "gpustarve: live: ");
    }
    free(s);
    return NULL;
}

top_live *top_live_start(const char *dir, unsigned period_s)
{
    top_live *t = calloc(1, sizeof *t);
    if (!t)
        return NULL;
    t->period_s = period_s ? period_s : 1;
    t->fol.fd = -1;
    t->dir = strdup(dir);
    if (!t->dir || follow_start(&t->fol, dir) != 0 || pipe(t->wake) != 0) {
        follow_end(&t->fol);
        free(t->dir);
        free(t);
        return NULL;
    }
    /* signals stay with the thread that forwards them to the command */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old);
    int rc = pthread_create(&t->th, NULL, live_main, t);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0) {
        close(t->wake[0]);
        close(t->wake[1]);
        follow_end(&t->fol);
        free(t->dir);
        free(t);
        return NULL;
    }
    return t;
}

void top_live_stop(top_live *t)
{
    if (!t)
        return;
    const int saved = errno;
    close(t->wake[1]); /* the thread's poll sees the end of the pipe */
    pthread_join(t->th, NULL);
    close(t->wake[0]);
    follow_end(&t->fol);
    free(t->dir);
    free(t);
    errno = saved;
}
