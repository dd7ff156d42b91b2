/* gs_startup.c — bringing the collector up, exactly once per process image.
 *
 * Responsible for: the start-up sequence, whether the first caller is our
 * constructor, a hook called before it (another library's constructor) or
 * a GPU source's entry point: real symbols, settings (gs_config.c), clock,
 * tables, rings, output file, writer thread, fork/exit/signal handling;
 * then switching recording on; in a process with one thread, the threads
 * later, when it starts one or needs the writer (gs_start_threads:
 * docs/collector-safety.md, "Threads started late"). The state it leaves
 * (gs_on: hooks record, gs_inited, gs_pid) is held by gs_state.c, a leaf.
 *
 * Must never: record while starting (the guard is held), or fail loudly:
 * anything that goes wrong leaves the library a pure pass-through (and
 * prints at most the one warning).
 *
 * RATIONALE (the one circle in preload/): start-up calls every module's
 * set-up below, and some of those modules call back into start-up: a hook
 * that runs before our constructor starts the collector lazily (gs_enter ->
 * gs_enter_slow -> gs_init), so do the NVTX and GPU-source entry points
 * (gs_nvtx.c, gs_sink.c), and the exec hook's failure path
 * (gs_exec_failed in gs_lifecycle.c, whose set-up start-up calls).
 * pthread_once makes
 * the call back wait for, or skip, the start-up in progress, and the
 * nesting guard held during start-up keeps the collector's own calls out
 * of the hooks. Every other arrow between preload/ modules points one way:
 * the state start-up leaves is a leaf (gs_state.c), and so is the writer's
 * wake-up word (gs_wake.c). make check-deps checks the includes, make
 * check-cycles the calls (docs/architecture.md, "Dependencies").
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "gs_clock.h"
#include "gs_config.h"
#include "gs_cpulimits.h"
#include "gs_fdtable.h"
#include "gs_lifecycle.h"
#include "gs_output.h"
#include "gs_preload.h"
#include "gs_real.h"
#include "gs_ring.h"
#include "gs_stacks.h"
#include "gs_startup.h"
#include "gs_state.h"
#include "gs_strings.h"
#include "gs_wake.h"
#include "gs_writer.h"

static pthread_once_t g_init_once = PTHREAD_ONCE_INIT;

#define LATE_SLOTS_AHEAD 8u /* ring slots ready when threads start late */

static void init_all(void)
{
    gs_real_resolve();
    gs_config_read();
    atomic_store(&gs_pid, (pid_t)syscall(SYS_getpid));
    if (gs_cfg.disabled)
        return;
    gs_clock_init(gs_cfg.clock);
    if (gs_out_warn_init() != 0 || gs_strings_init() != 0 || gs_fdtab_init() != 0 ||
        gs_maptab_init() != 0 || gs_rings_init(gs_cfg.ring_events) != 0 ||
        gs_writer_init() != 0)
        return; /* out of address space: stay a pass-through */
    gs_stacks_init(); /* GPUSTARVE_STACKS: on failure stacks stay off */
    gs_lifecycle_init(); /* atfork, on_exit, signals, exec environment */
    const int late = gs_cfg_threads_late();
    if (gs_out_setup_dir() != 0 || gs_out_open(0, gs_writer_calib(), late) != 0)
        return; /* warned; hooks pass through */
    atomic_store(&gs_threads_starter, gs_start_threads);
    if (late)
        atomic_store(&gs_threads_late, 1);
    else
        gs_writer_start();
    atomic_store_explicit(&gs_on, 1, memory_order_release);
    gs_cpulimits_record();
}

void gs_start_threads(void)
{
    /* once: the threads' own pthread_create finds it cleared */
    if (!atomic_load(&gs_threads_late) || !atomic_exchange(&gs_threads_late, 0))
        return;
    atomic_store(&gs_threads_wanted, 0);
    const int e = errno;
    const int depth = gs_t_depth;
    gs_t_depth = 1;
    if (gs_out_start_late(1, 0) == 0) {
        /* RATIONALE: the program's first threads come in a burst (a pool,
         * a loader's), before this writer could keep slots ahead of them:
         * a ring that finds no slot stays anonymous, and what it holds
         * when the process dies is lost (docs/collector-safety.md) */
        gs_writer_prepare_threads(LATE_SLOTS_AHEAD);
        gs_writer_start();
    }
    else
        atomic_store(&gs_on, 0); /* warned: the hooks pass through */
    gs_t_depth = depth;
    errno = e;
}

void gs_start_threads_unmasked(void)
{
    /* RATIONALE: a handler runs with the signal it handles blocked (unless
     * installed with SA_NODEFER and an empty mask), and one that interrupted
     * malloc must not start a thread: with one thread glibc's allocator
     * takes no lock, and pthread_create allocates. A thread that blocks
     * nothing is not in a handler; one that blocks something waits for a
     * safe point (docs/collector-safety.md, "Threads started late"). */
    uint64_t blocked = ~0ull;
    const int e = errno;
    const long rc = syscall(SYS_rt_sigprocmask, SIG_BLOCK, NULL, &blocked, sizeof blocked);
    errno = e;
    if (rc == 0 && blocked == 0)
        gs_start_threads();
}

static void init_guarded(void)
{
    int depth = gs_t_depth;
    gs_t_depth = 1; /* our own calls during start-up are not the program's */
    init_all();
    atomic_store(&gs_inited, 1);
    gs_t_depth = depth;
}

void gs_init(void)
{
    pthread_once(&g_init_once, init_guarded);
}

int gs_enter_slow(void)
{
    if (!atomic_load_explicit(&gs_inited, memory_order_acquire))
        gs_init();
    if (!atomic_load_explicit(&gs_on, memory_order_acquire))
        return 0;
    gs_t_depth = 1;
    return 1;
}

__attribute__((constructor)) static void gs_constructor(void)
{
    gs_init();
}
