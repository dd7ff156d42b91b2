/* sim_inject.c — a miniature CUPTI collector used by the simulator tests.
 *
 * Loaded by the (simulated) runtime through CUDA_INJECTION64_PATH, it does
 * what gpustarve's collector does at InitializeInjection: subscribe, register
 * a timestamp callback and the buffer callbacks, enable the activity kinds.
 * It copies every record it is given so tests can inspect them
 * (sim_inject.h), and with SIM_INJECT_SUMMARY=1 prints one summary line on
 * stderr at exit.  Test code only: it exits on nothing and frees buffers.
 *
 * Environment: SIM_INJECT_BUF (buffer bytes, default 16384),
 * SIM_INJECT_TS_OFFSET_NS (added to CLOCK_MONOTONIC by the timestamp
 * callback, default 5000000000; "none" registers no callback).
 */
#define _GNU_SOURCE
#include <cupti.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sim_inject.h"

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static struct sim_inject_stats stats;
static struct sim_rec *recs;
static size_t nrecs, caprecs;
static size_t bufsize = 16384;
static CUpti_SubscriberHandle sub;

static uint64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t CUPTIAPI ts_cb(void) { return mono_ns() + (uint64_t)stats.ts_offset_ns; }

static void CUPTIAPI buf_requested(uint8_t **buffer, size_t *size, size_t *maxNumRecords)
{
    void *p = NULL;
    if (posix_memalign(&p, 8, bufsize) != 0)
        p = NULL;
    *buffer = p;
    *size = p ? bufsize : 0;
    *maxNumRecords = 0;
}

static void copy_record(const CUpti_Activity *a, struct sim_rec *r)
{
    memset(r, 0, sizeof(*r));
    r->kind = a->kind;
    switch (a->kind) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: {
        const CUpti_ActivityKernel10 *k = (const void *)a;
        r->start = k->start; r->end = k->end; r->device = k->deviceId;
        r->stream = k->streamId; r->corr = k->correlationId;
        snprintf(r->name, sizeof(r->name), "%s", k->name ? k->name : "");
        break;
    }
    case CUPTI_ACTIVITY_KIND_MEMCPY: {
        const CUpti_ActivityMemcpy6 *m = (const void *)a;
        r->start = m->start; r->end = m->end; r->device = m->deviceId;
        r->stream = m->streamId; r->corr = m->correlationId; r->bytes = m->bytes;
        r->copy_kind = m->copyKind; r->src_kind = m->srcKind; r->dst_kind = m->dstKind;
        r->flags = m->flags;
        break;
    }
    case CUPTI_ACTIVITY_KIND_MEMSET: {
        const CUpti_ActivityMemset4 *m = (const void *)a;
        r->start = m->start; r->end = m->end; r->device = m->deviceId;
        r->stream = m->streamId; r->corr = m->correlationId; r->bytes = m->bytes;
        r->value = m->value; r->dst_kind = m->memoryKind; r->flags = m->flags;
        break;
    }
    case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION: {
        const CUpti_ActivitySynchronization2 *s = (const void *)a;
        r->start = s->start; r->end = s->end; r->stream = s->streamId;
        r->corr = s->correlationId; r->sync_type = s->type;
        break;
    }
    case CUPTI_ACTIVITY_KIND_DEVICE: {
        const CUpti_ActivityDevice5 *d = (const void *)a;
        r->device = d->id; r->bytes = d->globalMemorySize;
        snprintf(r->name, sizeof(r->name), "%s", d->name ? d->name : "");
        break;
    }
    case CUPTI_ACTIVITY_KIND_RUNTIME: {
        const CUpti_ActivityAPI *x = (const void *)a;
        r->start = x->start; r->end = x->end; r->corr = x->correlationId; r->cbid = x->cbid;
        break;
    }
    default:
        break;
    }
}

static void CUPTIAPI buf_completed(CUcontext ctx, uint32_t streamId, uint8_t *buffer, size_t size, size_t validSize)
{
    CUpti_Activity *a = NULL;
    pthread_mutex_lock(&mu);
    stats.buffers_completed++;
    while (cuptiActivityGetNextRecord(buffer, validSize, &a) == CUPTI_SUCCESS) {
        if (nrecs == caprecs) {
            size_t cap = caprecs ? caprecs * 2 : 4096;
            struct sim_rec *n = realloc(recs, cap * sizeof(*n));
            if (!n)
                break;
            recs = n;
            caprecs = cap;
        }
        copy_record(a, &recs[nrecs++]);
    }
    stats.nrec = nrecs;
    pthread_mutex_unlock(&mu);
    size_t dropped = 0;
    if (cuptiActivityGetNumDroppedRecords(ctx, streamId, &dropped) == CUPTI_SUCCESS) {
        pthread_mutex_lock(&mu);
        stats.dropped += dropped;
        pthread_mutex_unlock(&mu);
    }
    free(buffer);
}

static void CUPTIAPI api_cb(void *userdata, CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void *data) {}

const struct sim_inject_stats *sim_inject_stats(void);
const struct sim_inject_stats *sim_inject_stats(void) { return &stats; }

const struct sim_rec *sim_inject_records(size_t *n);
const struct sim_rec *sim_inject_records(size_t *n)
{
    cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    pthread_mutex_lock(&mu);
    *n = nrecs;
    pthread_mutex_unlock(&mu);
    return recs;
}

void sim_inject_reset(void);
void sim_inject_reset(void)
{
    cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    pthread_mutex_lock(&mu);
    nrecs = 0;
    stats.nrec = 0;
    pthread_mutex_unlock(&mu);
}

static void summary(void)
{
    cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    size_t kern = 0, htod = 0, htod_pinned = 0, htod_pageable = 0, dtoh = 0, memset_n = 0, sync = 0, dev = 0;
    uint64_t kern_ns = 0;
    pthread_mutex_lock(&mu);
    for (size_t i = 0; i < nrecs; i++) {
        const struct sim_rec *r = &recs[i];
        if (r->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) {
            kern++;
            kern_ns += r->end - r->start;
        } else if (r->kind == CUPTI_ACTIVITY_KIND_MEMCPY && r->copy_kind == CUPTI_ACTIVITY_MEMCPY_KIND_HTOD) {
            htod++;
            htod_pinned += r->src_kind == CUPTI_ACTIVITY_MEMORY_KIND_PINNED;
            htod_pageable += r->src_kind == CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE;
        } else if (r->kind == CUPTI_ACTIVITY_KIND_MEMCPY) {
            dtoh++;
        } else if (r->kind == CUPTI_ACTIVITY_KIND_MEMSET) {
            memset_n++;
        } else if (r->kind == CUPTI_ACTIVITY_KIND_SYNCHRONIZATION) {
            sync++;
        } else if (r->kind == CUPTI_ACTIVITY_KIND_DEVICE) {
            dev++;
        }
    }
    fprintf(stderr, "sim_inject: init=%d kernels=%zu kernel_ms=%.3f htod=%zu htod_pinned=%zu htod_pageable=%zu "
            "other_copies=%zu memsets=%zu syncs=%zu devices=%zu dropped=%zu buffers=%zu\n",
            stats.init_calls, kern, (double)kern_ns / 1e6, htod, htod_pinned, htod_pageable, dtoh,
            memset_n, sync, dev, stats.dropped, stats.buffers_completed);
    pthread_mutex_unlock(&mu);
}

int InitializeInjection(void);
int InitializeInjection(void)
{
    stats.init_calls++;
    const char *s = getenv("SIM_INJECT_BUF");
    if (s && atol(s) > 0)
        bufsize = (size_t)atol(s);
    const char *summ = getenv("SIM_INJECT_SUMMARY");
    if (summ && strcmp(summ, "1") == 0)
        atexit(summary);
    stats.subscribe_result = cuptiSubscribe(&sub, api_cb, NULL);
    CUpti_SubscriberHandle sub2;
    stats.second_subscribe_result = cuptiSubscribe(&sub2, api_cb, NULL);
    if (stats.subscribe_result == CUPTI_SUCCESS)
        cuptiEnableDomain(1, sub, CUPTI_CB_DOMAIN_RUNTIME_API);
    const char *off = getenv("SIM_INJECT_TS_OFFSET_NS");
    if (!off || strcmp(off, "none") != 0) {
        stats.ts_offset_ns = off ? atoll(off) : 5000000000ll;
        cuptiActivityRegisterTimestampCallback(ts_cb);
    }
    cuptiActivityRegisterCallbacks(buf_requested, buf_completed);
    static const CUpti_ActivityKind kinds[] = {
        CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY, CUPTI_ACTIVITY_KIND_MEMSET,
        CUPTI_ACTIVITY_KIND_SYNCHRONIZATION, CUPTI_ACTIVITY_KIND_DEVICE, CUPTI_ACTIVITY_KIND_RUNTIME,
    };
    for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
        if (cuptiActivityEnable(kinds[i]) != CUPTI_SUCCESS)
            fprintf(stderr, "sim_inject: cuptiActivityEnable(%d) failed\n", (int)kinds[i]);
    return 1;
}
