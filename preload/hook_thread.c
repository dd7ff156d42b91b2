/* hook_thread.c — a process with one thread starts the collector's threads
 * as it starts its first (docs/collector-safety.md, "Threads started late").
 *
 * Responsible for: pthread_create: where the collector's threads start late
 * and have not, they start first, while the process still has one thread
 * (the file is opened again and moved out of the program's table with no
 * thread of the program there to see a descriptor number taken), then the
 * program's thread, exactly as asked; also under the guard (a GPU
 * runtime starting its threads inside a hooked CUDA call). The collector's
 * own threads pass straight through (the start is once). While tracing,
 * the birth of the program's new thread (gs_births.h): a time taken
 * before the real call, and the thread's tid once it exists.
 *
 * Must never: record anything, change the program's call, its result or
 * errno.
 */
#include <errno.h>
#include <pthread.h>
#include <time.h>

#include "gs_births.h"
#include "gs_preload.h"
#include "gs_real.h"
#include "gs_wake.h"

/* The tid of a thread just created, or 0. RATIONALE: glibc gives a thread's
 * tid only through its CPU clock's id, which the kernel's interface for
 * such clocks defines as (~tid << 3) | 6 (per thread, scheduler time). It
 * is asked only of a joinable thread, before pthread_create returns: the
 * program cannot have joined or detached it yet, so its descriptor is
 * still valid (a detached one may already be gone, its stack unmapped). */
static uint32_t new_tid(pthread_t th, const pthread_attr_t *attr)
{
    int detached = PTHREAD_CREATE_JOINABLE;
    clockid_t c;
    if ((attr && pthread_attr_getdetachstate(attr, &detached) != 0) ||
        detached != PTHREAD_CREATE_JOINABLE || pthread_getcpuclockid(th, &c) != 0 ||
        (c & 7) != 6)
        return 0;
    return (uint32_t)~(c >> 3);
}

#pragma GCC visibility push(default)

int pthread_create(pthread_t *th, const pthread_attr_t *attr, void *(*fn)(void *), void *arg)
{
    if (!GS_RESOLVED(pthread_create))
        return EAGAIN;
    void (*start)(void) = atomic_load(&gs_threads_starter);
    if (start && atomic_load_explicit(&gs_threads_late, memory_order_relaxed))
        start(); /* gs_start_threads */
    const uint64_t before =
        gs_t_depth == 0 && atomic_load_explicit(&gs_on, memory_order_relaxed) ? gs_mono_ns() : 0;
    const int rc = gs_real.pthread_create(th, attr, fn, arg);
    if (rc == 0 && before) {
        const int e = errno;
        gs_birth_add(new_tid(*th, attr), before);
        errno = e;
    }
    return rc;
}

#pragma GCC visibility pop
