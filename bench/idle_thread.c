/* idle_thread.c — a preloadable library that only starts one thread, which
 * sleeps for the life of the process (bench/bench_collector.py --only
 * startup): what the mere presence of a second thread costs a program,
 * the collector's writer's first cost (docs/performance.md, "A Python
 * process's start, by part"). */
#include <pthread.h>
#include <unistd.h>

static void *idle(void *arg)
{
    (void)arg;
    for (;;)
        pause();
    return NULL;
}

__attribute__((constructor)) static void start_idle_thread(void)
{
    pthread_attr_t attr;
    pthread_t th;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    pthread_attr_setstacksize(&attr, 256u << 10);
    pthread_create(&th, &attr, idle, NULL);
    pthread_attr_destroy(&attr);
}
