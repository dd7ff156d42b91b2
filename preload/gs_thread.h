/* gs_thread.h — how the collector starts a thread of its own (the writer,
 * the file thread): gs_thread.c.
 *
 * Must never: be called from a hook.
 */
#ifndef GS_THREAD_H
#define GS_THREAD_H

#include <pthread.h>

/* Start a collector thread running fn(NULL) (256 KiB stack, every signal
 * blocked): detached when joinable is NULL, else joinable, its handle in
 * *joinable (gs_thread_end or pthread_detach must follow); 0 or -1. */
int gs_thread_start(void *(*fn)(void *), pthread_t *joinable);

/* Wait up to ms for a joinable thread to end; detach it when it has not
 * (0 ended, -1 detached). */
int gs_thread_end(pthread_t th, unsigned ms);

#endif
