/* sim_cupti.c — the simulated CUPTI (build/simcuda/libcupti.so.13).
 *
 * Honours the CUPTI activity contract for the subset a collector uses:
 * buffer request/complete callbacks, enable/disable per kind, records in the
 * real CUDA 13 layouts (CUpti_ActivityKernel10, Memcpy6, Memset4,
 * Synchronization2, Device5, API), cuptiActivityGetNextRecord, flush,
 * dropped-record counts, the timestamp callback, and the one-subscriber rule
 * of the callback API.  What happened on the device comes from the simulated
 * runtime (sim_cudart.c) through simcuda_link.h.
 *
 * As in the real CUPTI, buffers are requested and full buffers delivered by a
 * worker thread; cuptiActivityFlushAll delivers in the calling thread; a
 * forced flush runs at exit.  No lock of ours is held while a client callback
 * runs, so callbacks may call back into CUPTI.
 */
#define _GNU_SOURCE
#include <cupti.h>

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "simcuda_link.h"
#include "sim_cuptinames.h"      /* generated from cupti_result.h */

/* The mode (rules.mk): which CUDA this build stands in for, and so which
 * record versions it writes and which API version it reports. */
#ifndef SIMCUDA_CUDART_SONAME
#define SIMCUDA_CUDART_SONAME "libcudart.so.13"
#endif
#ifndef SIMCUDA_CUPTI_VERSION
#define SIMCUDA_CUPTI_VERSION CUPTI_API_VERSION
#endif
#ifndef SIMCUDA_REC_KERNEL
#define SIMCUDA_REC_KERNEL CUpti_ActivityKernel10
#endif
#ifndef SIMCUDA_REC_MEMCPY
#define SIMCUDA_REC_MEMCPY CUpti_ActivityMemcpy6
#endif
#ifndef SIMCUDA_REC_MEMSET
#define SIMCUDA_REC_MEMSET CUpti_ActivityMemset4
#endif
#ifndef SIMCUDA_REC_SYNC
#define SIMCUDA_REC_SYNC CUpti_ActivitySynchronization2
#endif
#ifndef SIMCUDA_REC_DEVICE
#define SIMCUDA_REC_DEVICE CUpti_ActivityDevice5
#endif
#ifndef SIMCUDA_CUDA12
#define SIMCUDA_CUDA12 0
#endif
typedef SIMCUDA_REC_KERNEL rec_kernel;
typedef SIMCUDA_REC_MEMCPY rec_memcpy;
typedef SIMCUDA_REC_MEMSET rec_memset;
typedef SIMCUDA_REC_SYNC rec_sync;
typedef SIMCUDA_REC_DEVICE rec_device;

#define MAX_KIND 64
#define WORKER_PERIOD_MS 10      /* RATIONALE: full buffers go out within 10 ms, at negligible cost */

static uint64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint32_t tid_self(void) { return (uint32_t)syscall(SYS_gettid); }

/* A queued record: the op, the record kind chosen when it was reported. */
struct pending { struct simcuda_op op; CUpti_ActivityKind kind; };

struct buf { uint8_t *base; size_t size, used, nrec, maxrec; };

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;      /* all state below */
static pthread_mutex_t g_drain_mu = PTHREAD_MUTEX_INITIALIZER; /* one drain at a time */
static pthread_cond_t g_wake = PTHREAD_COND_INITIALIZER;
static _Atomic uint32_t g_drain_owner;

static int g_enabled[MAX_KIND];
static _Atomic int g_any_enabled;
static CUpti_BuffersCallbackRequestFunc g_req;
static CUpti_BuffersCallbackCompleteFunc g_cmp;
static CUpti_TimestampCallbackFunc _Atomic g_ts_cb;
static struct pending *g_pending;
static size_t g_npending, g_cappending;
static struct buf g_cur;
static struct buf *g_ready;
static size_t g_nready, g_capready;
static size_t g_dropped;
static uint64_t g_grid_id;
static int g_worker_running, g_worker_stop, g_atexit_done;
static pthread_t g_worker;
static uint32_t g_flush_period_ms;
static uint64_t g_last_periodic_flush;
static int g_devices_emitted;
static const struct simcuda_rt *_Atomic g_rt;

static struct CUpti_Subscriber_st { CUpti_CallbackFunc cb; void *userdata; } g_subscriber;
static int g_subscribed;
/* runtime API callbacks enabled for the subscriber, by cbid */
#define MAX_RT_CBID 1024
static _Atomic unsigned char g_rt_cb[MAX_RT_CBID];

/* ---- link to the runtime ------------------------------------------------------ */

static void sink_report(const struct simcuda_op *op);
static void sink_attached(const struct simcuda_rt *rt);
static void sink_api(uint32_t cbid, uint32_t corr, int exit);
static const struct simcuda_sink g_sink = { SIMCUDA_LINK_VERSION, sink_report, sink_attached,
                                            sink_api };

const struct simcuda_sink *__simcuda_cupti_sink(void);
const struct simcuda_sink *__simcuda_cupti_sink(void) { return &g_sink; }

static void queue_device_records_locked(void);

static void sink_attached(const struct simcuda_rt *rt)
{
    atomic_store(&g_rt, rt);
    pthread_mutex_lock(&g_mu);
    queue_device_records_locked();
    pthread_mutex_unlock(&g_mu);
}

/* Find the simulated runtime if it is loaded and give it our sink. */
static void link_rt(void)
{
    if (atomic_load(&g_rt))
        return;
    simcuda_rt_attach_fn fn = (simcuda_rt_attach_fn)dlsym(RTLD_DEFAULT, SIMCUDA_RT_ATTACH_SYM);
    if (!fn) {
        void *h = dlopen(SIMCUDA_CUDART_SONAME, RTLD_LAZY | RTLD_NOLOAD);
        if (h) {
            fn = (simcuda_rt_attach_fn)dlsym(h, SIMCUDA_RT_ATTACH_SYM);
            dlclose(h);
        }
    }
    if (fn) {
        const struct simcuda_rt *rt = fn(&g_sink);
        if (rt)
            sink_attached(rt);
    }
}

/* ---- pending queue (caller holds g_mu) ------------------------------------------ */

static void push_locked(const struct simcuda_op *op, CUpti_ActivityKind kind)
{
    if (g_npending == g_cappending) {
        size_t cap = g_cappending ? g_cappending * 2 : 1024;
        struct pending *p = realloc(g_pending, cap * sizeof(*p));
        if (!p) {
            g_dropped++;
            return;
        }
        g_pending = p;
        g_cappending = cap;
    }
    g_pending[g_npending].op = *op;
    g_pending[g_npending].kind = kind;
    g_npending++;
}

static void queue_device_records_locked(void)
{
    const struct simcuda_rt *rt = atomic_load(&g_rt);
    if (!rt || !g_enabled[CUPTI_ACTIVITY_KIND_DEVICE] || g_devices_emitted)
        return;
    g_devices_emitted = 1;
    int n = rt->device_count();
    for (int d = 0; d < n; d++) {
        struct simcuda_op op = { 0 };
        op.device = (uint32_t)d;
        push_locked(&op, CUPTI_ACTIVITY_KIND_DEVICE);
    }
}

static void sink_report(const struct simcuda_op *op)
{
    if (!g_any_enabled)
        return;
    CUpti_ActivityKind kind = CUPTI_ACTIVITY_KIND_INVALID;
    pthread_mutex_lock(&g_mu);
    switch (op->kind) {
    case SIMCUDA_OP_KERNEL:
        if (g_enabled[CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL])
            kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
        else if (g_enabled[CUPTI_ACTIVITY_KIND_KERNEL])
            kind = CUPTI_ACTIVITY_KIND_KERNEL;
        break;
    case SIMCUDA_OP_MEMCPY: kind = CUPTI_ACTIVITY_KIND_MEMCPY; break;
    case SIMCUDA_OP_MEMSET: kind = CUPTI_ACTIVITY_KIND_MEMSET; break;
    case SIMCUDA_OP_SYNC: kind = CUPTI_ACTIVITY_KIND_SYNCHRONIZATION; break;
    case SIMCUDA_OP_API: kind = CUPTI_ACTIVITY_KIND_RUNTIME; break;
    }
    if (kind != CUPTI_ACTIVITY_KIND_INVALID && g_enabled[kind] && g_req)
        push_locked(op, kind);
    pthread_mutex_unlock(&g_mu);
}

/* ---- records --------------------------------------------------------------------- */

static size_t rec_size(CUpti_ActivityKind k)
{
    switch (k) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: return sizeof(rec_kernel);
    case CUPTI_ACTIVITY_KIND_MEMCPY: return sizeof(rec_memcpy);
    case CUPTI_ACTIVITY_KIND_MEMSET: return sizeof(rec_memset);
    case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION: return sizeof(rec_sync);
    case CUPTI_ACTIVITY_KIND_DEVICE: return sizeof(rec_device);
    case CUPTI_ACTIVITY_KIND_RUNTIME: return sizeof(CUpti_ActivityAPI);
    default: return 0;
    }
}

static size_t align8(size_t x) { return (x + 7) & ~(size_t)7; }

static size_t buf_first_offset(const uint8_t *base)
{
    return align8((uintptr_t)base) - (uintptr_t)base;
}

static uint64_t ts(uint64_t t, int64_t off) { return t ? (uint64_t)((int64_t)t + off) : 0; }

/* Write one record at dst (rec_size(p->kind) bytes, zeroed first). */
static void write_record(void *dst, const struct pending *p, int64_t off)
{
    const struct simcuda_op *op = &p->op;
    memset(dst, 0, rec_size(p->kind));
    switch (p->kind) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: {
        rec_kernel *r = dst;
        r->kind = p->kind;
        r->registersPerThread = 32;
        r->start = ts(op->start, off);
        r->end = ts(op->end, off);
        r->completed = r->end;
        r->deviceId = op->device;
        r->contextId = op->device + 1;
        r->streamId = op->stream_id;
        r->gridX = op->grid[0]; r->gridY = op->grid[1]; r->gridZ = op->grid[2];
        r->blockX = op->block[0]; r->blockY = op->block[1]; r->blockZ = op->block[2];
        r->dynamicSharedMemory = op->dyn_shared;
        r->correlationId = op->correlation_id;
        r->gridId = (int64_t)++g_grid_id;
        r->name = op->name;
        r->channelType = CUPTI_CHANNEL_TYPE_COMPUTE;
        break;
    }
    case CUPTI_ACTIVITY_KIND_MEMCPY: {
        rec_memcpy *r = dst;
        r->kind = CUPTI_ACTIVITY_KIND_MEMCPY;
        r->copyKind = op->copy_kind;
        r->srcKind = op->src_kind;
        r->dstKind = op->dst_kind;
        r->flags = op->async ? CUPTI_ACTIVITY_FLAG_MEMCPY_ASYNC : 0;
        r->bytes = op->bytes;
        r->start = ts(op->start, off);
        r->end = ts(op->end, off);
        r->deviceId = op->device;
        r->contextId = op->device + 1;
        r->streamId = op->stream_id;
        r->correlationId = op->correlation_id;
        r->channelType = CUPTI_CHANNEL_TYPE_ASYNC_MEMCPY;
#if !SIMCUDA_CUDA12 /* Memcpy6 on */
        r->copyCount = 1;
#endif
        break;
    }
    case CUPTI_ACTIVITY_KIND_MEMSET: {
        rec_memset *r = dst;
        r->kind = CUPTI_ACTIVITY_KIND_MEMSET;
        r->value = op->memset_value;
        r->bytes = op->bytes;
        r->start = ts(op->start, off);
        r->end = ts(op->end, off);
        r->deviceId = op->device;
        r->contextId = op->device + 1;
        r->streamId = op->stream_id;
        r->correlationId = op->correlation_id;
        r->flags = op->async ? CUPTI_ACTIVITY_FLAG_MEMSET_ASYNC : 0;
        r->memoryKind = op->dst_kind;
        break;
    }
    case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION: {
        rec_sync *r = dst;
        r->kind = CUPTI_ACTIVITY_KIND_SYNCHRONIZATION;
        r->type = (CUpti_ActivitySynchronizationType)op->sync_type;
        r->start = ts(op->start, off);
        r->end = ts(op->end, off);
        r->correlationId = op->correlation_id;
        r->contextId = op->device + 1;
        r->streamId = op->stream_id;
        r->cudaEventId = op->event_id;
#if !SIMCUDA_CUDA12 /* Synchronization2 on */
        r->cudaEventSyncId = CUPTI_SYNCHRONIZATION_INVALID_VALUE;
#endif
        break;
    }
    case CUPTI_ACTIVITY_KIND_RUNTIME: {
        CUpti_ActivityAPI *r = dst;
        r->kind = CUPTI_ACTIVITY_KIND_RUNTIME;
        r->cbid = op->cbid;
        r->start = ts(op->start, off);
        r->end = ts(op->end, off);
        r->processId = (uint32_t)getpid();
        r->threadId = op->thread_id;
        r->correlationId = op->correlation_id;
        r->returnValue = (uint32_t)op->result;
        break;
    }
    case CUPTI_ACTIVITY_KIND_DEVICE: {
        rec_device *r = dst;
        struct simcuda_device_info di;
        const struct simcuda_rt *rt = atomic_load(&g_rt);
        if (!rt || rt->device_info((int)op->device, &di) != 0)
            memset(&di, 0, sizeof(di));
        r->kind = CUPTI_ACTIVITY_KIND_DEVICE;
        r->globalMemoryBandwidth = 4800000000ull;   /* KB/s */
        r->globalMemorySize = di.global_mem;
        r->constantMemorySize = 65536;
        r->l2CacheSize = di.l2_bytes;
        r->numThreadsPerWarp = di.warp_size;
        r->coreClockRate = di.clock_khz;
        r->numMemcpyEngines = 2;
        r->numMultiprocessors = di.sm_count;
        r->maxIPC = 4;
        r->maxWarpsPerMultiprocessor = 64;
        r->maxBlocksPerMultiprocessor = 32;
        r->maxSharedMemoryPerMultiprocessor = 228u << 10;
        r->maxRegistersPerMultiprocessor = 65536;
        r->maxRegistersPerBlock = di.regs_per_block;
        r->maxSharedMemoryPerBlock = di.shared_per_block;
        r->maxThreadsPerBlock = di.max_threads_per_block;
        r->maxBlockDimX = 1024; r->maxBlockDimY = 1024; r->maxBlockDimZ = 64;
        r->maxGridDimX = 2147483647u; r->maxGridDimY = 65535; r->maxGridDimZ = 65535;
        r->computeCapabilityMajor = di.cc_major;
        r->computeCapabilityMinor = di.cc_minor;
        r->id = op->device;
        for (int i = 0; i < 16; i++)
            r->uuid.bytes[i] = (char)(0x51 + i + (int)op->device);
        r->name = di.name;
        r->isCudaVisible = 1;
        r->numaId = (uint32_t)-1;
        break;
    }
    default:
        break;
    }
}

/* ---- buffers and delivery ----------------------------------------------------------- */

static void ready_push_locked(struct buf b)
{
    if (g_nready == g_capready) {
        size_t cap = g_capready ? g_capready * 2 : 8;
        struct buf *r = realloc(g_ready, cap * sizeof(*r));
        if (!r) {
            g_dropped += b.nrec;  /* the client still owns the memory; nothing else to do */
            return;
        }
        g_ready = r;
        g_capready = cap;
    }
    g_ready[g_nready++] = b;
}

/* Offset from CLOCK_MONOTONIC to the client's timestamp clock.
 * RATIONALE: device times are known in CLOCK_MONOTONIC, so records are shifted
 * by (callback clock - monotonic).  The estimate is rounded to 1 us and kept
 * until it moves by more than 2 us, so that records delivered in different
 * buffers stay exactly comparable and a callback returning CLOCK_MONOTONIC
 * gives an offset of exactly 0. */
static int64_t g_ts_off;
static int g_ts_off_valid;
static uint64_t g_ts_best_win = UINT64_MAX;   /* tightest read window so far (ns) */

static int64_t ts_offset(void)
{
    CUpti_TimestampCallbackFunc cb = atomic_load(&g_ts_cb);
    if (!cb)
        return 0;
    /* RATIONALE: the offset is read between two CLOCK_MONOTONIC reads; a
     * thread preempted in between (a loaded machine) sees a window of
     * milliseconds and an estimate off by half of it. Keep the tightest of a
     * few reads, and let only a tight one (window under 2 us, or under twice
     * the tightest seen for a slow callback) replace an offset already known. */
    uint64_t win = UINT64_MAX;
    int64_t est = 0;
    for (int i = 0; i < 8 && win > 1000; i++) {
        uint64_t a = mono_ns();
        uint64_t c = cb();
        uint64_t b = mono_ns();
        if (b - a < win) {
            win = b - a;
            est = (int64_t)c - (int64_t)(a + (b - a) / 2);
        }
    }
    est = (est >= 0 ? est + 500 : est - 500) / 1000 * 1000;
    pthread_mutex_lock(&g_mu);
    if (win < g_ts_best_win)
        g_ts_best_win = win;
    const int tight = win <= 2000 || win <= 2 * g_ts_best_win;
    if (!g_ts_off_valid || (tight && (est - g_ts_off > 2000 || g_ts_off - est > 2000))) {
        g_ts_off = est;
        g_ts_off_valid = 1;
    }
    int64_t off = g_ts_off;
    pthread_mutex_unlock(&g_mu);
    return off;
}

enum drain_mode { DRAIN_FULL, DRAIN_FLUSH, DRAIN_FORCE };

/* Move finished pending records into client buffers and deliver buffers:
 * full ones always, the partly filled one on FLUSH/FORCE; FORCE also takes
 * records whose device work has not finished yet. */
static void drain(enum drain_mode mode)
{
    uint32_t self = tid_self();
    if (atomic_load(&g_drain_owner) == self)
        return;                      /* called from inside one of our callbacks */
    pthread_mutex_lock(&g_drain_mu);
    atomic_store(&g_drain_owner, self);

    int64_t off = ts_offset();
    uint64_t now = mono_ns();

    pthread_mutex_lock(&g_mu);
    if (mode == DRAIN_FULL && g_flush_period_ms &&
        now - g_last_periodic_flush >= (uint64_t)g_flush_period_ms * 1000000ull) {
        mode = DRAIN_FLUSH;
        g_last_periodic_flush = now;
    }
    int request_failed = 0;
    size_t keep = 0;
    for (size_t i = 0; i < g_npending; i++) {
        struct pending p = g_pending[i];
        if (p.op.end > now && p.kind != CUPTI_ACTIVITY_KIND_DEVICE) {
            if (mode != DRAIN_FORCE) {
                g_pending[keep++] = p;   /* not finished on the device yet */
                continue;
            }
            /* forced out unfinished: as the real CUPTI, with unknown (0) times */
            p.op.start = p.op.end = 0;
        }
        size_t sz = rec_size(p.kind);
        for (;;) {
            if (g_cur.base) {
                size_t at = g_cur.used ? align8(g_cur.used) : buf_first_offset(g_cur.base);
                int room = at + sz <= g_cur.size && (!g_cur.maxrec || g_cur.nrec < g_cur.maxrec);
                if (room) {
                    write_record(g_cur.base + at, &p, off);
                    g_cur.used = at + sz;
                    g_cur.nrec++;
                    break;
                }
                if (g_cur.nrec == 0) {   /* a buffer too small for even one record */
                    g_dropped++;
                    break;
                }
                ready_push_locked(g_cur);
                memset(&g_cur, 0, sizeof(g_cur));
            }
            if (request_failed || !g_req) {
                g_dropped++;
                break;
            }
            CUpti_BuffersCallbackRequestFunc req = g_req;
            pthread_mutex_unlock(&g_mu);
            uint8_t *b = NULL;
            size_t size = 0, maxrec = 0;
            req(&b, &size, &maxrec);
            pthread_mutex_lock(&g_mu);
            if (!b || size < 8) {
                request_failed = 1;
                continue;
            }
            g_cur = (struct buf){ b, size, 0, 0, maxrec };
        }
    }
    g_npending = keep;
    if (mode != DRAIN_FULL && g_cur.base && g_cur.nrec) {
        ready_push_locked(g_cur);
        memset(&g_cur, 0, sizeof(g_cur));
    }
    struct buf *ready = g_ready;
    size_t nready = g_nready;
    g_ready = NULL;
    g_nready = g_capready = 0;
    CUpti_BuffersCallbackCompleteFunc cmp = g_cmp;
    pthread_mutex_unlock(&g_mu);

    for (size_t i = 0; i < nready; i++)
        if (cmp)
            cmp(NULL, 0, ready[i].base, ready[i].size, ready[i].used);
    free(ready);

    atomic_store(&g_drain_owner, 0);
    pthread_mutex_unlock(&g_drain_mu);
}

static void *worker_main(void *arg)
{
    pthread_mutex_lock(&g_mu);
    while (!g_worker_stop) {
        struct timespec dl;
        clock_gettime(CLOCK_REALTIME, &dl);
        dl.tv_nsec += WORKER_PERIOD_MS * 1000000L;
        if (dl.tv_nsec >= 1000000000L) {
            dl.tv_sec++;
            dl.tv_nsec -= 1000000000L;
        }
        pthread_cond_timedwait(&g_wake, &g_mu, &dl);
        if (g_worker_stop)
            break;
        int work = g_npending > 0 || g_flush_period_ms;
        pthread_mutex_unlock(&g_mu);
        if (work)
            drain(DRAIN_FULL);
        pthread_mutex_lock(&g_mu);
    }
    g_worker_running = 0;
    pthread_mutex_unlock(&g_mu);
    return NULL;
}

static void at_exit_flush(void)
{
    pthread_mutex_lock(&g_mu);
    g_worker_stop = 1;
    pthread_cond_broadcast(&g_wake);
    pthread_mutex_unlock(&g_mu);
    drain(DRAIN_FORCE);
}

static void start_worker_locked(void)
{
    if (g_worker_running)
        return;
    g_worker_stop = 0;
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);   /* the worker takes no signals */
    if (pthread_create(&g_worker, NULL, worker_main, NULL) == 0) {
        g_worker_running = 1;
        pthread_detach(g_worker);
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
}

/* After fork the child has no worker and must not deliver the parent's records. */
static void atfork_child(void)
{
    pthread_mutex_init(&g_mu, NULL);
    pthread_mutex_init(&g_drain_mu, NULL);
    pthread_cond_init(&g_wake, NULL);
    atomic_store(&g_drain_owner, 0);
    g_npending = 0;
    memset(&g_cur, 0, sizeof(g_cur));
    g_nready = 0;
    g_worker_running = 0;
    if (g_req)
        start_worker_locked();
}

static pthread_once_t g_fork_once = PTHREAD_ONCE_INIT;
static void install_atfork(void) { pthread_atfork(NULL, NULL, atfork_child); }

/* ---- the activity API -------------------------------------------------------------- */

CUptiResult CUPTIAPI cuptiActivityRegisterCallbacks(CUpti_BuffersCallbackRequestFunc funcBufferRequested,
                                                    CUpti_BuffersCallbackCompleteFunc funcBufferCompleted)
{
    if (!funcBufferRequested || !funcBufferCompleted)
        return CUPTI_ERROR_INVALID_PARAMETER;
    pthread_once(&g_fork_once, install_atfork);
    link_rt();
    pthread_mutex_lock(&g_mu);
    g_req = funcBufferRequested;
    g_cmp = funcBufferCompleted;
    start_worker_locked();
    int first = !g_atexit_done;
    g_atexit_done = 1;
    pthread_mutex_unlock(&g_mu);
    if (first)
        atexit(at_exit_flush);
    return CUPTI_SUCCESS;
}

static int supported_kind(CUpti_ActivityKind kind)
{
    switch (kind) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
    case CUPTI_ACTIVITY_KIND_MEMCPY:
    case CUPTI_ACTIVITY_KIND_MEMSET:
    case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION:
    case CUPTI_ACTIVITY_KIND_DEVICE:
    case CUPTI_ACTIVITY_KIND_RUNTIME:
        return 1;
    default:
        return 0;
    }
}

static CUptiResult set_enabled(CUpti_ActivityKind kind, int on)
{
    if ((int)kind <= 0 || (int)kind >= MAX_KIND)
        return CUPTI_ERROR_INVALID_KIND;
    if (!supported_kind(kind))
        return CUPTI_ERROR_NOT_COMPATIBLE;   /* what the real one says for kinds it cannot do here */
    pthread_once(&g_fork_once, install_atfork);
    link_rt();
    pthread_mutex_lock(&g_mu);
    g_enabled[kind] = on;
    int any = 0;
    for (int k = 0; k < MAX_KIND; k++)
        any |= g_enabled[k];
    g_any_enabled = any;
    if (on && kind == CUPTI_ACTIVITY_KIND_DEVICE)
        queue_device_records_locked();
    pthread_mutex_unlock(&g_mu);
    return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiActivityEnable(CUpti_ActivityKind kind) { return set_enabled(kind, 1); }
CUptiResult CUPTIAPI cuptiActivityDisable(CUpti_ActivityKind kind) { return set_enabled(kind, 0); }
CUptiResult CUPTIAPI cuptiActivityEnableAndDump(CUpti_ActivityKind kind) { return set_enabled(kind, 1); }
CUptiResult CUPTIAPI cuptiActivityEnableContext(CUcontext context, CUpti_ActivityKind kind) { return set_enabled(kind, 1); }
CUptiResult CUPTIAPI cuptiActivityDisableContext(CUcontext context, CUpti_ActivityKind kind) { return set_enabled(kind, 0); }

/* Set by our destructor: the library is torn down (the process is past its
 * atexit handlers). A client that still asks for records gets an error and
 * one line on stderr, where the real CUPTI's behaviour is undefined: the
 * tests look for that line. */
static _Atomic int g_torn_down;

__attribute__((destructor)) static void tear_down(void)
{
    atomic_store(&g_torn_down, 1);
}

CUptiResult CUPTIAPI cuptiActivityGetNextRecord(uint8_t *buffer, size_t validBufferSizeBytes,
                                                CUpti_Activity **record)
{
    if (atomic_load(&g_torn_down)) {
        static const char msg[] = "simcuda: cuptiActivityGetNextRecord after libcupti's teardown\n";
        ssize_t w = write(2, msg, sizeof msg - 1);
        (void)w;
        return CUPTI_ERROR_NOT_INITIALIZED;
    }
    if (!buffer || !record)
        return CUPTI_ERROR_INVALID_PARAMETER;
    size_t at;
    if (!*record) {
        at = buf_first_offset(buffer);
    } else {
        size_t sz = rec_size((*record)->kind);
        if (!sz)
            return CUPTI_ERROR_INVALID_KIND;
        at = align8((size_t)((uint8_t *)*record - buffer) + sz);
    }
    if (at + sizeof(CUpti_ActivityKind) > validBufferSizeBytes) {
        *record = NULL;
        return CUPTI_ERROR_MAX_LIMIT_REACHED;
    }
    CUpti_Activity *r = (CUpti_Activity *)(buffer + at);
    size_t sz = rec_size(r->kind);
    if (!sz || at + sz > validBufferSizeBytes)
        return CUPTI_ERROR_INVALID_KIND;
    *record = r;
    return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiActivityFlushAll(uint32_t flag)
{
    if (!g_req)
        return CUPTI_ERROR_INVALID_OPERATION;
    drain((flag & CUPTI_ACTIVITY_FLAG_FLUSH_FORCED) ? DRAIN_FORCE : DRAIN_FLUSH);
    return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiActivityFlush(CUcontext context, uint32_t streamId, uint32_t flag)
{
    return cuptiActivityFlushAll(flag);
}

CUptiResult CUPTIAPI cuptiActivityFlushPeriod(uint32_t time)
{
    pthread_mutex_lock(&g_mu);
    g_flush_period_ms = time;
    g_last_periodic_flush = mono_ns();
    pthread_mutex_unlock(&g_mu);
    return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiActivityGetNumDroppedRecords(CUcontext context, uint32_t streamId, size_t *dropped)
{
    if (!dropped)
        return CUPTI_ERROR_INVALID_PARAMETER;
    pthread_mutex_lock(&g_mu);
    *dropped = g_dropped;
    g_dropped = 0;   /* the real call resets the count it reports */
    pthread_mutex_unlock(&g_mu);
    return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiActivityRegisterTimestampCallback(CUpti_TimestampCallbackFunc funcTimestamp)
{
    atomic_store(&g_ts_cb, funcTimestamp);
    pthread_mutex_lock(&g_mu);
    g_ts_off_valid = 0;
    pthread_mutex_unlock(&g_mu);
    return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiGetTimestamp(uint64_t *timestamp)
{
    if (!timestamp)
        return CUPTI_ERROR_INVALID_PARAMETER;
    CUpti_TimestampCallbackFunc cb = atomic_load(&g_ts_cb);
    *timestamp = cb ? cb() : mono_ns();
    return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiActivityGetAttribute(CUpti_ActivityAttribute attr, size_t *valueSize, void *value)
{
    if (!valueSize || !value)
        return CUPTI_ERROR_INVALID_PARAMETER;
    if (*valueSize >= sizeof(size_t)) {
        *(size_t *)value = 8u << 20;
        *valueSize = sizeof(size_t);
    }
    return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiActivitySetAttribute(CUpti_ActivityAttribute attr, size_t *valueSize, void *value)
{
    return (!valueSize || !value) ? CUPTI_ERROR_INVALID_PARAMETER : CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiActivityEnableLatencyTimestamps(uint8_t enable) { return CUPTI_SUCCESS; }

CUptiResult CUPTIAPI cuptiActivityPushExternalCorrelationId(CUpti_ExternalCorrelationKind kind, uint64_t id)
{
    return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiActivityPopExternalCorrelationId(CUpti_ExternalCorrelationKind kind, uint64_t *lastId)
{
    if (lastId)
        *lastId = 0;
    return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiGetContextId(CUcontext context, uint32_t *contextId)
{
    if (!contextId)
        return CUPTI_ERROR_INVALID_PARAMETER;
    *contextId = 1;
    return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiGetDeviceId(CUcontext context, uint32_t *deviceId)
{
    if (!deviceId)
        return CUPTI_ERROR_INVALID_PARAMETER;
    *deviceId = 0;
    return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiFinalize(void)
{
    if (g_req)
        drain(DRAIN_FORCE);
    pthread_mutex_lock(&g_mu);
    memset(g_enabled, 0, sizeof(g_enabled));
    g_any_enabled = 0;
    pthread_mutex_unlock(&g_mu);
    return CUPTI_SUCCESS;
}

/* ---- callback API: one subscriber, as in the real CUPTI ------------------------------ */

/* The runtime's enter/exit of an API call: the subscriber's callback, in
 * the calling thread, when enabled for that cbid (no lock held). */
static __thread uint64_t t_corr_data;

static void enable_runtime_domain(uint32_t enable)
{
    for (size_t i = 0; i < MAX_RT_CBID; i++)
        atomic_store(&g_rt_cb[i], enable ? 1 : 0);
}

static void sink_api(uint32_t cbid, uint32_t corr, int exit)
{
    if (cbid >= MAX_RT_CBID || !atomic_load(&g_rt_cb[cbid]))
        return;
    pthread_mutex_lock(&g_mu);
    CUpti_CallbackFunc cb = g_subscribed ? g_subscriber.cb : NULL;
    void *userdata = g_subscriber.userdata;
    pthread_mutex_unlock(&g_mu);
    if (!cb)
        return;
    CUpti_CallbackData d;
    memset(&d, 0, sizeof d);
    d.callbackSite = exit ? CUPTI_API_EXIT : CUPTI_API_ENTER;
    d.correlationId = corr;
    d.correlationData = &t_corr_data;
    d.contextUid = 1;
    cb(userdata, CUPTI_CB_DOMAIN_RUNTIME_API, (CUpti_CallbackId)cbid, &d);
}

CUptiResult CUPTIAPI cuptiSubscribe(CUpti_SubscriberHandle *subscriber, CUpti_CallbackFunc callback, void *userdata)
{
    if (!subscriber)
        return CUPTI_ERROR_INVALID_PARAMETER;
    const char *busy = getenv("SIMCUDA_CUPTI_BUSY");
    if (busy && *busy && strcmp(busy, "0") != 0)
        return CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;  /* "another profiler holds CUPTI" */
    link_rt();
    pthread_mutex_lock(&g_mu);
    CUptiResult r = CUPTI_SUCCESS;
    if (g_subscribed) {
        r = CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
    } else {
        g_subscribed = 1;
        g_subscriber.cb = callback;
        g_subscriber.userdata = userdata;
        *subscriber = &g_subscriber;
    }
    pthread_mutex_unlock(&g_mu);
    return r;
}

#if !SIMCUDA_CUDA12 /* CUDA 13.0 on */
CUptiResult CUPTIAPI cuptiSubscribe_v2(CUpti_SubscriberHandle *subscriber, CUpti_CallbackFunc callback,
                                       void *userdata, CUpti_SubscriberParams *pParams)
{
    return cuptiSubscribe(subscriber, callback, userdata);
}
#endif

CUptiResult CUPTIAPI cuptiUnsubscribe(CUpti_SubscriberHandle subscriber)
{
    pthread_mutex_lock(&g_mu);
    CUptiResult r = (g_subscribed && subscriber == &g_subscriber) ? CUPTI_SUCCESS : CUPTI_ERROR_INVALID_PARAMETER;
    if (r == CUPTI_SUCCESS)
        g_subscribed = 0;
    pthread_mutex_unlock(&g_mu);
    if (r == CUPTI_SUCCESS)
        enable_runtime_domain(0);
    return r;
}

static CUptiResult check_subscriber(CUpti_SubscriberHandle subscriber)
{
    return (g_subscribed && subscriber == &g_subscriber) ? CUPTI_SUCCESS : CUPTI_ERROR_INVALID_PARAMETER;
}

CUptiResult CUPTIAPI cuptiEnableCallback(uint32_t enable, CUpti_SubscriberHandle subscriber,
                                         CUpti_CallbackDomain domain, CUpti_CallbackId cbid)
{
    CUptiResult r = check_subscriber(subscriber);
    if (r == CUPTI_SUCCESS && domain == CUPTI_CB_DOMAIN_RUNTIME_API && cbid < MAX_RT_CBID)
        atomic_store(&g_rt_cb[cbid], enable ? 1 : 0);
    return r;
}

CUptiResult CUPTIAPI cuptiEnableDomain(uint32_t enable, CUpti_SubscriberHandle subscriber, CUpti_CallbackDomain domain)
{
    CUptiResult r = check_subscriber(subscriber);
    if (r == CUPTI_SUCCESS && domain == CUPTI_CB_DOMAIN_RUNTIME_API)
        enable_runtime_domain(enable);
    return r;
}

CUptiResult CUPTIAPI cuptiEnableAllDomains(uint32_t enable, CUpti_SubscriberHandle subscriber)
{
    CUptiResult r = check_subscriber(subscriber);
    if (r == CUPTI_SUCCESS)
        enable_runtime_domain(enable);
    return r;
}

/* ---- misc -------------------------------------------------------------------------- */

CUptiResult CUPTIAPI cuptiGetVersion(uint32_t *version)
{
    if (!version)
        return CUPTI_ERROR_INVALID_PARAMETER;
    const char *v = getenv("SIMCUDA_CUPTI_API_VERSION"); /* tests: a CUPTI of another version */
    *version = v && *v ? (uint32_t)strtoul(v, NULL, 10) : SIMCUDA_CUPTI_VERSION;
    return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiGetResultString(CUptiResult result, const char **str)
{
    if (!str)
        return CUPTI_ERROR_INVALID_PARAMETER;
    for (size_t i = 0; i < sizeof(sim_cupti_names) / sizeof(sim_cupti_names[0]); i++)
        if (sim_cupti_names[i].code == (int)result) {
            *str = sim_cupti_names[i].name;
            return CUPTI_SUCCESS;
        }
    *str = "CUPTI_ERROR_UNKNOWN";
    return CUPTI_ERROR_INVALID_PARAMETER;
}

CUptiResult CUPTIAPI cuptiGetErrorMessage(CUptiResult result, const char **str)
{
    return cuptiGetResultString(result, str);
}

CUptiResult CUPTIAPI cuptiGetLastError(void) { return CUPTI_SUCCESS; }
