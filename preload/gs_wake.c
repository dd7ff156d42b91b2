/* gs_wake.c — the writer's wake-up word.
 *
 * Responsible for: the futex word the writer thread (gs_writer.c) waits on,
 * and gs_writer_poke, with which a hook whose ring is half full, a thread's
 * first event, the live file's slot and log allocator and a GPU source ask
 * the writer to run now.
 *
 * Must never: call another module of the collector, or change errno. It is a
 * leaf, so that the modules the writer drains (the rings, the live file,
 * the samplers) can wake it without calling the writer (docs/
 * architecture.md, "Dependencies").
 */
#include <errno.h>
#include <linux/futex.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "gs_preload.h"
#include "gs_wake.h"

static _Atomic uint32_t g_wake;
static _Atomic uint32_t g_map_pokes; /* of g_wake's moves, those of gs_writer_poke_map */

_Atomic int gs_threads_late;
_Atomic int gs_threads_wanted;
void (*_Atomic gs_threads_starter)(void);

void gs_writer_poke(void)
{
    const int e = errno; /* the read hooks do not save it (preload/hook_io.c) */
    if (GS_UNLIKELY(atomic_load_explicit(&gs_threads_late, memory_order_relaxed)))
        atomic_store_explicit(&gs_threads_wanted, 1, memory_order_relaxed); /* none to wake yet */
    atomic_fetch_add_explicit(&g_wake, 1, memory_order_release);
    syscall(SYS_futex, &g_wake, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
    errno = e;
}

void gs_writer_poke_map(void)
{
    if (atomic_load_explicit(&gs_threads_late, memory_order_relaxed))
        return; /* no writer to map: the thread takes its own first touches */
    const int e = errno;
    atomic_fetch_add_explicit(&g_map_pokes, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&g_wake, 1, memory_order_release);
    syscall(SYS_futex, &g_wake, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
    errno = e;
}

uint32_t gs_wake_map_pokes(void)
{
    return atomic_load_explicit(&g_map_pokes, memory_order_acquire);
}

void gs_wake_all(void)
{
    atomic_fetch_add_explicit(&g_wake, 1, memory_order_release);
    syscall(SYS_futex, &g_wake, FUTEX_WAKE_PRIVATE, INT32_MAX, NULL, NULL, 0);
}

uint32_t gs_wake_seen(void)
{
    return atomic_load_explicit(&g_wake, memory_order_acquire);
}

void gs_wake_wait(uint32_t seen, const struct timespec *ts)
{
    syscall(SYS_futex, &g_wake, FUTEX_WAIT_PRIVATE, seen, ts, NULL, 0);
}
