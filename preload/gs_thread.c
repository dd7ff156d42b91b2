/* gs_thread.c — the collector's own threads (the writer, gs_writer.c; the
 * file thread, gs_output.c) are started one way.
 *
 * Responsible for: a thread with a 256 KiB stack that blocks every signal,
 * so that the program's signals go to the program's threads and a signal
 * handler never runs on ours; detached, or joinable by a bounded wait for a
 * thread that ends at once (gs_thread_end).
 *
 * Must never: be called from a hook; leave the caller's signal mask changed.
 */
#include <pthread.h>
#include <signal.h>
#include <time.h>

#include "gs_thread.h"

int gs_thread_start(void *(*fn)(void *), pthread_t *joinable)
{
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, joinable ? PTHREAD_CREATE_JOINABLE
                                                : PTHREAD_CREATE_DETACHED);
    pthread_attr_setstacksize(&attr, 256u << 10);
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old); /* the thread blocks every signal */
    pthread_t th;
    int rc = pthread_create(&th, &attr, fn, NULL);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    pthread_attr_destroy(&attr);
    if (rc == 0 && joinable)
        *joinable = th;
    return rc == 0 ? 0 : -1;
}

int gs_thread_end(pthread_t th, unsigned ms)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    ts.tv_sec += (time_t)(ms / 1000);
    ts.tv_nsec += (long)(ms % 1000) * 1000000L;
    if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000L;
    }
    if (pthread_clockjoin_np(th, NULL, CLOCK_MONOTONIC, &ts) == 0)
        return 0;
    pthread_detach(th); /* still running: it ends on its own */
    return -1;
}
