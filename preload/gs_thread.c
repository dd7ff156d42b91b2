/* gs_thread.c — the collector's own threads (the writer, gs_writer.c; the
 * file thread, gs_output.c) are started one way.
 *
 * Responsible for: a detached thread with a 256 KiB stack that blocks every
 * signal, so that the program's signals go to the program's threads and a
 * signal handler never runs on ours.
 *
 * Must never: be called from a hook; leave the caller's signal mask changed.
 */
#include <pthread.h>
#include <signal.h>

#include "gs_thread.h"

int gs_thread_start(void *(*fn)(void *))
{
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    pthread_attr_setstacksize(&attr, 256u << 10);
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old); /* the thread blocks every signal */
    pthread_t th;
    int rc = pthread_create(&th, &attr, fn, NULL);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    pthread_attr_destroy(&attr);
    return rc == 0 ? 0 : -1;
}
