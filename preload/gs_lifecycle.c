/* gs_lifecycle.c — the collector across fork, exec, exit and signals.
 *
 * Responsible for: pthread_atfork (prepare takes the output lock so no child
 * inherits a half-written frame; the child drops inherited events, opens its
 * own file and restarts the writer), the final flush with an EXIT record
 * (exit/return via on_exit + destructor, _exit/_Exit via their hooks,
 * SIGTERM/SIGINT/SIGHUP via a handler installed only where the disposition
 * is SIG_DFL, at start-up or when the program puts SIG_DFL back), noting a
 * crash or abort in the live file (a handler on SIGSEGV, SIGBUS, SIGFPE,
 * SIGILL, SIGSYS, SIGABRT, SIGQUIT, likewise only where SIG_DFL), removing the live file once everything is written, the
 * synchronous flush before exec, and the environment fix-up that keeps an
 * exec'd image traced. Detects vfork children (shared memory, no atfork) and
 * leaves them alone.
 *
 * Must never: malloc or lock in a vfork child; wait unboundedly in a signal
 * handler; change a signal disposition the program chose; write after the
 * EXIT record.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <dlfcn.h>
#include <limits.h>

#include "gs_births.h"
#include "gs_config.h"
#include "gs_cpulimits.h"
#include "gs_cpustat.h"
#include "gs_lifecycle.h"
#include "gs_livefile.h"
#include "gs_output.h"
#include "gs_pinned.h"
#include "gs_preload.h"
#include "gs_real.h"
#include "gs_ring.h"
#include "gs_sink.h"
#include "gs_source.h"
#include "gs_stacks.h"
#include "gs_state.h"
#include "gs_strings.h"
#include "gs_wake.h"
#include "gs_writer.h"

extern char **environ;

static _Atomic int g_finished;
static int g_exec_late; /* an exec's flush held the file of threads not yet started */
static char g_self[PATH_MAX];     /* path of libgpustarve.so */
static char g_preload[PATH_MAX + 16]; /* LD_PRELOAD value at start-up */
static const int g_fatal[] = {SIGTERM, SIGINT, SIGHUP};

/* ---- fork ------------------------------------------------------------------ */

static int g_fork_locked;
static uint64_t g_fork_before; /* a time before the child's thread existed */

static void fork_prepare(void)
{
    g_fork_locked = 0;
    if (!atomic_load(&gs_on) || gs_in_foreign_child())
        return;
    int depth = gs_t_depth;
    gs_t_depth = 1;
    /* RATIONALE: bounded; a program that forks at once would otherwise race
     * the writer's start (docs/collector-safety.md, "A fork while a
     * thread of ours starts or ends") */
    gs_writer_wait_started(1000);
    gs_sources_flush(GS_FLUSH_FORK, 0); /* CUPTI's buffers out first, no lock of ours held */
    gs_out_lock();
    gs_t_depth = depth;
    g_fork_locked = 1;
    g_fork_before = gs_mono_ns();
}

static void fork_parent(void)
{
    if (g_fork_locked)
        gs_out_unlock();
    g_fork_locked = 0;
}

static void fork_child(void)
{
    if (!g_fork_locked)
        return;
    g_fork_locked = 0;
    int depth = gs_t_depth;
    gs_t_depth = 1;
    atomic_store(&gs_pid, (pid_t)syscall(SYS_getpid));
    gs_writer_after_fork_child(); /* fresh, unlocked output lock */
    gs_rings_after_fork_child();  /* before the parent's live file is unmapped */
    gs_pinned_after_fork_child();
    gs_sources_after_fork_child();
    gs_out_after_fork_child();    /* the parent's files stay the parent's */
    gs_live_after_fork_child();
    gs_cpu_prep_arm(0);           /* the child's thread makes no batch of the parent's */
    gs_births_after_fork_child((uint32_t)syscall(SYS_gettid), g_fork_before);
    atomic_store(&gs_threads_late, 0);
    atomic_store(&gs_threads_wanted, 0);
    /* a forked child has one thread, whatever glibc's flag says: it stays 0
     * in the child of a process that had one (DataLoader workers forked
     * from a trainer whose threads had started) */
    const int late = !gs_cfg.eager_threads;
    if (gs_out_open(1, gs_writer_calib(), late) == 0) {
        if (late)
            atomic_store(&gs_threads_late, 1);
        else
            gs_writer_start();
        gs_cpulimits_record(); /* a worker may run with other CPUs than its parent */
    } else {
        atomic_store(&gs_on, 0);
    }
    gs_t_depth = depth;
}

/* Python's perf map next to the trace, opened where the trace file lives. */
static void copy_perfmap(void *arg)
{
    (void)arg;
    gs_perfmap_copy(gs_out_path());
}

/* ---- exit ----------------------------------------------------------------------- */

/* The live file at a normal end (lock held): removed when everything is in
 * the trace file, else cut to its header page (the counts), so that the
 * blocks set aside for it go back when the process ends. */
static void live_end_file(void)
{
    if (gs_out_alive() && gs_writer_lost() == 0)
        gs_live_remove();
    else if (!gs_out_stuck())
        gs_out_run(gs_live_keep_header, NULL);
}

/* The last pass of a process image: every ring drained, the closing record
 * (EXIT or EXEC) of the thread that ends the image, the live file's end,
 * Python's perf map copied. */
typedef struct last_pass {
    gs_event ev;          /* EXIT or EXEC, stamped when the image ends */
    uint32_t tid;         /* the thread that ends it */
    int final;            /* exit: a DROPS record always, and nothing written after */
    unsigned live_end;    /* enum gs_live_end */
    uint32_t live_status; /* the exit status */
    int copy_map;         /* copy the perf map (not from a signal handler: unbounded I/O) */
} last_pass;

static void run_last_pass(void *arg)
{
    const last_pass *p = arg;
    if (!gs_writer_is_final())
        gs_drain_locked(p->final);
    if (gs_writer_is_final() || gs_out_stuck())
        return;
    gs_put_event(p->tid, &p->ev);
    gs_frame_flush_locked();
    if (p->final)
        gs_writer_set_final();
    gs_live_end(p->live_end, p->live_status);
    live_end_file();
    if (p->copy_map && !gs_out_stuck())
        gs_out_run(copy_perfmap, NULL);
}

/* The last pass, output lock held.
 * RATIONALE: while no GPU source runs (gs_writer_alone), all of it runs on
 * the file thread in one hand-off, as the writer's own drains do: the
 * drain, the frame with the closing record and the perf map's copy were
 * four hand-offs, and on a loaded machine each waits milliseconds for the
 * other thread to get a CPU (docs/performance.md, "Forked workers"). */
static void last_pass_locked(last_pass *p)
{
    p->tid = (uint32_t)syscall(SYS_gettid);
    if (gs_writer_alone())
        gs_out_run(run_last_pass, p);
    else
        run_last_pass(p);
}

/* Where the threads start late and have not: the trace file held for the
 * drain that follows (gs_out_start_late): at an exit in the program's
 * table, where the drain writes it on the calling thread, as where unshare
 * is refused (system calls only: an exit path may be a signal handler);
 * before an exec by the file thread, as at start-up. -1 when it could not
 * (warned): the live file keeps what was recorded, for the reader. */
static int hold_late_file(int threads, int low_ok)
{
    static int failed;
    if (!atomic_exchange(&gs_threads_late, 0))
        return failed ? -1 : 0;
    atomic_store(&gs_threads_wanted, 0);
    failed = gs_out_start_late(threads, low_ok) != 0;
    return failed ? -1 : 0;
}

void gs_finish(int status, enum gs_exit_how how, unsigned wait_ms)
{
    if (!atomic_load(&gs_inited) || gs_cfg.disabled || gs_in_foreign_child())
        return;
    if (atomic_exchange(&g_finished, 1))
        return;
    int depth = gs_t_depth;
    gs_t_depth = 1;
    /* RATIONALE: CUPTI delivers its last buffers before we detach, and with
     * no lock of ours held (Kineto documents the deadlock); from a signal
     * handler the writer thread does it, and we wait a bounded time. */
    if (atomic_load(&gs_on))
        gs_sources_flush(how == GS_EXIT_HOW_SIGNAL  ? GS_FLUSH_SIGNAL
                         : how == GS_EXIT_HOW__EXIT ? GS_FLUSH_QUICK_EXIT
                                                    : GS_FLUSH_EXIT,
                         how == GS_EXIT_HOW_SIGNAL ? 200 : 0);
    int was_on = atomic_exchange(&gs_on, 0); /* detach before flushing */
    if (!was_on) {
        gs_t_depth = depth;
        return;
    }
    if (hold_late_file(0, 1) != 0) {
        gs_live_end(GS_LIVE_EXITED, (uint32_t)status); /* the rest is the live file's */
        gs_t_depth = depth;
        return;
    }
    if (gs_out_trylock_for(wait_ms)) {
        gs_out_limit_wait(wait_ms); /* a hung disk does not hold the exit */
        last_pass p = {.final = 1, .live_end = GS_LIVE_EXITED, .live_status = (uint32_t)status,
                       .copy_map = how != GS_EXIT_HOW_SIGNAL}; /* not from a signal handler */
        gs_event_clear(&p.ev);
        p.ev.kind = GS_K_EXIT;
        p.ev.ts = gs_mono_ns();
        p.ev.aux = (uint64_t)(uint32_t)status;
        p.ev.aux2 = (uint64_t)how;
        last_pass_locked(&p);
        gs_out_unlock();
    }
    gs_writer_stop();
    gs_t_depth = depth;
}

static void on_exit_status(int status, void *arg)
{
    (void)arg;
    gs_finish(status, GS_EXIT_HOW_EXIT, 2000);
}

/* RATIONALE: a preloaded library's constructor runs before __libc_start_main
 * registers the loader's destructor pass, so our on_exit handler runs after
 * every destructor: it writes the EXIT record with the real status. The
 * destructor only flushes what the program did so far (it is the last word
 * only where on_exit never runs). */
__attribute__((destructor)) static void gs_destructor(void)
{
    if (!atomic_load(&gs_on) || gs_in_foreign_child())
        return;
    int depth = gs_t_depth;
    gs_t_depth = 1;
    /* RATIONALE: where the threads start late and have not, the exit's own
     * pass (on_exit, after every destructor) writes everything; until then
     * the live file holds it */
    if (!atomic_load(&gs_threads_late) && gs_out_trylock_for(2000)) {
        gs_out_limit_wait(2000);
        if (!gs_writer_is_final())
            gs_drain_locked(0);
        gs_out_limit_wait(0);
        gs_out_unlock();
    }
    gs_t_depth = depth;
}

/* ---- signals --------------------------------------------------------------------- */

static void on_fatal_signal(int sig)
{
    int saved = errno;
    /* RATIONALE: bounded wait — the writer finishes a frame in milliseconds;
     * if the interrupted thread holds the lock itself, skip the flush. */
    gs_finish(sig, GS_EXIT_HOW_SIGNAL, 100);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = SIG_DFL;
    sigemptyset(&sa.sa_mask);
    gs_real.sigaction(sig, &sa, NULL);
    raise(sig); /* pending until this handler returns, then default action */
    errno = saved;
}

/* RATIONALE: a crash (SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGSYS) or an abort
 * may have corrupted anything, our state included: no flush. The records
 * are in the live file's rings already (a reader recovers them); this
 * handler only notes how the process ended there (a few stores), then lets
 * the default action happen: a fault returns to the faulting instruction,
 * which faults again with SIG_DFL in place; a signal sent by a process
 * (si_code <= 0: kill, raise, abort) is raised again. Exit status and core
 * dump are the untraced ones. */
static void on_fault_signal(int sig, siginfo_t *si, void *uctx)
{
    (void)uctx;
    int saved = errno;
    if (!gs_in_foreign_child())
        gs_live_end(GS_LIVE_SIGNAL, (uint32_t)sig);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = SIG_DFL;
    sigemptyset(&sa.sa_mask);
    gs_real.sigaction(sig, &sa, NULL);
    if (!si || si->si_code <= 0)
        raise(sig);
    errno = saved;
}

int gs_signal_is_ours(const struct sigaction *sa)
{
    if (sa->sa_flags & SA_SIGINFO)
        return sa->sa_sigaction == on_fault_signal;
    return sa->sa_handler == on_fatal_signal;
}

int gs_signal_handler_is_ours(sighandler_t h)
{
    return h == on_fatal_signal || h == (sighandler_t)(void *)on_fault_signal;
}

static const int g_fault[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGSYS, SIGABRT, SIGQUIT};

static int listed(int sig, const int *sigs, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (sigs[i] == sig)
            return 1;
    return 0;
}

/* Our handler for sig into *sa: 1, or 0 for a signal we leave alone. */
static int ours_for(int sig, struct sigaction *sa)
{
    memset(sa, 0, sizeof *sa);
    sigemptyset(&sa->sa_mask);
    if (listed(sig, g_fatal, sizeof g_fatal / sizeof g_fatal[0])) {
        sa->sa_handler = on_fatal_signal;
        sa->sa_flags = SA_RESTART;
        return 1;
    }
    if (listed(sig, g_fault, sizeof g_fault / sizeof g_fault[0])) {
        sa->sa_sigaction = on_fault_signal;
        sa->sa_flags = SA_SIGINFO | SA_RESTART;
        return 1;
    }
    return 0;
}

/* RATIONALE: a program that puts SIG_DFL back, to die of the signal it was
 * sent (Python does so after a KeyboardInterrupt: SIGINT, exit 130), would
 * otherwise end with no exit record and read as killed by SIGKILL. Our
 * handler is what SIG_DFL was at start-up: the same default action, with
 * the flush (or the note) first. */
int gs_signal_default_for(int sig, struct sigaction *sa)
{
    if (!atomic_load(&gs_on) || gs_in_foreign_child())
        return 0;
    return ours_for(sig, sa);
}

/* Install our handler on each of sigs whose disposition is SIG_DFL. */
static void install(const int *sigs, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        struct sigaction old, sa;
        if (gs_real.sigaction(sigs[i], NULL, &old) != 0)
            continue;
        if ((old.sa_flags & SA_SIGINFO) || old.sa_handler != SIG_DFL)
            continue; /* the program's (or its parent's) choice stands */
        if (ours_for(sigs[i], &sa))
            gs_real.sigaction(sigs[i], &sa, NULL);
    }
}

static void install_signal_handlers(void)
{
    if (!GS_RESOLVED(sigaction))
        return;
    install(g_fatal, sizeof g_fatal / sizeof g_fatal[0]);
    install(g_fault, sizeof g_fault / sizeof g_fault[0]);
}

/* ---- exec ------------------------------------------------------------------------ */

void gs_exec_flush(const char *path)
{
    if (!atomic_load(&gs_on) || gs_in_foreign_child())
        return;
    int depth = gs_t_depth;
    gs_t_depth = 1;
    uint32_t id = gs_str_path((const char *)gs_launder(path));
    gs_sources_flush(GS_FLUSH_EXEC, 0);
    g_exec_late = atomic_load(&gs_threads_late);
    if (hold_late_file(1, 0) != 0)
        gs_live_end(GS_LIVE_EXEC, 0); /* the live file keeps it: an exec, not a death */
    else if (gs_out_trylock_for(2000)) {
        gs_out_limit_wait(2000);
        last_pass p = {.final = 0, .live_end = GS_LIVE_EXEC, .live_status = 0, .copy_map = 1};
        gs_event_clear(&p.ev);
        p.ev.kind = GS_K_EXEC;
        p.ev.ts = gs_mono_ns();
        p.ev.str = id;
        last_pass_locked(&p);
        gs_out_limit_wait(0);
        gs_out_unlock();
    }
    gs_t_depth = depth;
}

void gs_exec_failed(const char *path, uint64_t t0)
{
    if (gs_in_foreign_child())
        return;
    gs_live_end(GS_LIVE_RUNNING, 0); /* still this image */
    if (g_exec_late) {
        /* the file stays where the exec's flush held it; the writer starts
         * at the next safe point (gs_start_threads), as where unshare is
         * refused */
        g_exec_late = 0;
        atomic_store(&gs_threads_late, 1);
        atomic_store(&gs_threads_wanted, 1);
    }
    if (!gs_enter())
        return;
    gs_rec r = GS_REC_INIT(GS_K_EXEC, t0);
    r.dur = gs_now() - t0;
    r.str = gs_str_path((const char *)gs_launder(path));
    r.ret = -1;
    gs_emit(&r);
    gs_leave();
}

static int starts_with(const char *s, const char *prefix)
{
    return strncmp(s, prefix, strlen(prefix)) == 0;
}

/* What the environment lacks: bit 0 LD_PRELOAD with us, bit 1 GPUSTARVE_DIR.
 * *their_preload: an LD_PRELOAD entry without us, to be extended. */
static unsigned env_missing(char *const envp[], const char **their_preload, size_t *n)
{
    unsigned miss = 3;
    *their_preload = NULL;
    *n = 0;
    for (size_t i = 0; envp && envp[i]; i++, (*n)++) {
        if (starts_with(envp[i], "LD_PRELOAD=")) {
            if (strstr(envp[i], "libgpustarve"))
                miss &= ~1u;
            else
                *their_preload = envp[i] + 11;
        } else if (starts_with(envp[i], "GPUSTARVE_DIR=")) {
            miss &= ~2u;
        } else if (starts_with(envp[i], "GPUSTARVE_DISABLE=")) {
            return 0; /* the caller chose */
        }
    }
    return miss;
}

size_t gs_env_need(char *const envp[])
{
    if (!atomic_load(&gs_inited) || gs_cfg.disabled || !g_preload[0])
        return 0;
    const char *theirs;
    size_t n;
    unsigned miss = env_missing(envp, &theirs, &n);
    if (!miss)
        return 0;
    size_t need = (n + 3) * sizeof(char *);
    need += strlen("LD_PRELOAD=") + strlen(g_preload) + 2 + (theirs ? strlen(theirs) : 0);
    need += strlen("GPUSTARVE_DIR=") + strlen(gs_out_dir()) + 1;
    return need;
}

static char *put(char *dst, const char *s)
{
    size_t l = strlen(s);
    memcpy(dst, s, l);
    return dst + l;
}

char *const *gs_env_build(char *const envp[], void *mem)
{
    const char *theirs;
    size_t n;
    unsigned miss = env_missing(envp, &theirs, &n);
    char **out = mem;
    char *text = (char *)(out + n + 3);
    size_t k = 0;
    char *pre = NULL, *dir = NULL;
    if (miss & 1u) {
        pre = text;
        char *p = put(text, "LD_PRELOAD=");
        p = put(p, g_preload);
        if (theirs && theirs[0]) {
            *p++ = ':';
            p = put(p, theirs);
        }
        *p++ = 0;
        text = p;
    }
    if (miss & 2u) {
        dir = text;
        char *p = put(text, "GPUSTARVE_DIR=");
        p = put(p, gs_out_dir());
        *p++ = 0;
        text = p;
    }
    for (size_t i = 0; envp && envp[i]; i++) {
        if (pre && starts_with(envp[i], "LD_PRELOAD="))
            continue; /* replaced by ours, which keeps their entries */
        out[k++] = envp[i];
    }
    if (pre)
        out[k++] = pre;
    if (dir)
        out[k++] = dir;
    out[k] = NULL;
    return out;
}

/* ---- set-up ----------------------------------------------------------------------- */

void gs_lifecycle_init(void)
{
    Dl_info info;
    if (dladdr((void *)gs_lifecycle_init, &info) && info.dli_fname)
        strncpy(g_self, info.dli_fname, sizeof g_self - 1);
    const char *pre = getenv("LD_PRELOAD");
    if (pre && strstr(pre, "libgpustarve"))
        strncpy(g_preload, pre, sizeof g_preload - 1);
    else if (g_self[0])
        strncpy(g_preload, g_self, sizeof g_preload - 1);
    pthread_atfork(fork_prepare, fork_parent, fork_child);
    on_exit(on_exit_status, NULL);
    install_signal_handlers();
}
