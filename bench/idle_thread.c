/* idle_thread.c — a preloadable library that only starts one thread, which
 * sleeps for the life of the process (bench/bench_collector.py --only
 * startup): what the mere presence of a second thread costs a program
 * (docs/performance.md, "A Python process's start, by part"). With
 * IDLE_THREAD_ENDS=1 in the environment the thread ends at once and is
 * joined: what having had one costs. */
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

static void *idle(void *arg)
{
    (void)arg;
    for (;;)
        pause();
    return NULL;
}

static void *ends(void *arg)
{
    return arg;
}

__attribute__((constructor)) static void start_idle_thread(void)
{
    pthread_attr_t attr;
    pthread_t th;
    const char *e = getenv("IDLE_THREAD_ENDS");
    if (e && e[0] == '1') {
        if (pthread_create(&th, NULL, ends, NULL) == 0)
            pthread_join(th, NULL);
        return;
    }
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    pthread_attr_setstacksize(&attr, 256u << 10);
    pthread_create(&th, &attr, idle, NULL);
    pthread_attr_destroy(&attr);
}
