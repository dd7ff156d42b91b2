/* tsan_util.h — what the ThreadSanitizer stress tests share: the one
 * assertion helper of the C tests (tests/gs_check.h), stubs for the
 * collector functions a structure under test calls but that are not what is
 * tested (waking the writer, the live file), and starting N threads. */
#ifndef TSAN_UTIL_H
#define TSAN_UTIL_H

#include <pthread.h>
#include <stdint.h>

#include "gs_check.h"

/* Run fn(i) on n threads (i = 0..n-1) and join them. */
static inline void tsan_run(int n, void *(*fn)(void *))
{
    pthread_t th[64];
    for (int i = 0; i < n && i < 64; i++)
        pthread_create(&th[i], NULL, fn, (void *)(intptr_t)i);
    for (int i = 0; i < n && i < 64; i++)
        pthread_join(th[i], NULL);
}

#endif
