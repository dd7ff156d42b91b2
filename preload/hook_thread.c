/* hook_thread.c — a process with one thread starts the collector's threads
 * as it starts its first (docs/collector-safety.md, "Threads started late").
 *
 * Responsible for: pthread_create: where the collector's threads start late
 * and have not, they start first, while the process still has one thread
 * (the file is opened again and moved out of the program's table with no
 * thread of the program there to see a descriptor number taken), then the
 * program's thread, exactly as asked; also under the guard (a GPU
 * runtime starting its threads inside a hooked CUDA call). The collector's
 * own threads pass straight through (the start is once).
 *
 * Must never: record anything, change the program's call, its result or
 * errno.
 */
#include <errno.h>
#include <pthread.h>

#include "gs_preload.h"
#include "gs_real.h"
#include "gs_wake.h"

#pragma GCC visibility push(default)

int pthread_create(pthread_t *th, const pthread_attr_t *attr, void *(*fn)(void *), void *arg)
{
    if (!GS_RESOLVED(pthread_create))
        return EAGAIN;
    void (*start)(void) = atomic_load(&gs_threads_starter);
    if (start && atomic_load_explicit(&gs_threads_late, memory_order_relaxed))
        start(); /* gs_start_threads */
    return gs_real.pthread_create(th, attr, fn, arg);
}

#pragma GCC visibility pop
