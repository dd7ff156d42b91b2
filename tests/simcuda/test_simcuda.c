/* test_simcuda.c — the simulated GPU's own contract (tests/simcuda/).
 *
 * Run by `make test-simcuda` with LD_LIBRARY_PATH=build/simcuda, the test
 * injection library in CUDA_INJECTION64_PATH, and fixed kernel durations and
 * bandwidths (see rules.mk: sim_kern_a 20 ms, sim_kern_b 5 ms, sim_kern_zero 0, others 1 ms;
 * H2D pinned 1 GB/s, pageable 0.5 GB/s, D2H 2 GB/s).  Kernels are registered
 * and launched exactly as nvcc's generated code does it.
 *
 * `test_simcuda busy` (with SIMCUDA_CUPTI_BUSY=1) checks only the "another
 * profiler holds CUPTI" answer.  Ends with gs_check.h's summary line; exit status 1
 * if anything failed.
 *
 * Timing is checked in simulated time, so that a loaded machine cannot make a
 * check fail: durations and event differences come from the device timeline
 * (CUPTI records, cudaEventElapsedTime), made exact by holding the streams
 * (hold_begin below) until everything to be measured is queued; host-side
 * waits are checked with the lower bound that sleeping guarantees, and "did
 * not wait" with the device still busy behind a 400 ms hold when the call
 * returned.  No check has a wall-clock upper bound.
 */
#define _GNU_SOURCE
#include <cuda_runtime_api.h>
#include <cupti.h>

#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gs_check.h" /* ASSERT_*: the assertion helper of every C test */
#include "sim_inject.h"

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static double ms_since(uint64_t t0) { return (double)(now_ns() - t0) / 1e6; }

/* ---- what nvcc emits, by hand ------------------------------------------------- */

void **__cudaRegisterFatBinary(void *fatCubin);
void __cudaRegisterFatBinaryEnd(void **handle);
void __cudaRegisterFunction(void **handle, const char *hostFun, char *deviceFun,
                            const char *deviceName, int thread_limit, uint3 *tid,
                            uint3 *bid, dim3 *bDim, dim3 *gDim, int *wSize);
unsigned __cudaPushCallConfiguration(dim3 gridDim, dim3 blockDim, size_t sharedMem, struct CUstream_st *stream);
cudaError_t __cudaPopCallConfiguration(dim3 *gridDim, dim3 *blockDim, size_t *sharedMem, void *stream);
cudaError_t __cudaGetKernel(cudaKernel_t *kernel, const void *hostFun);
cudaError_t __cudaLaunchKernel(cudaKernel_t kernel, dim3 gridDim, dim3 blockDim, void **args,
                               size_t sharedMem, cudaStream_t stream);

/* host stubs: their addresses identify the kernels */
static void sim_kern_a(void) { __asm__ volatile(""); }
static void sim_kern_b(void) { __asm__ volatile("nop"); }
static void sim_kern_other(void) { __asm__ volatile("nop; nop"); }
static void sim_kern_zero(void) { __asm__ volatile("nop; nop; nop"); }

static const char fake_fatbin[64];

__attribute__((constructor)) static void register_kernels(void)
{
    void **h = __cudaRegisterFatBinary((void *)fake_fatbin);
    __cudaRegisterFunction(h, (const char *)sim_kern_a, (char *)"sim_kern_a", "sim_kern_a", -1, 0, 0, 0, 0, 0);
    __cudaRegisterFunction(h, (const char *)sim_kern_b, (char *)"sim_kern_b", "sim_kern_b", -1, 0, 0, 0, 0, 0);
    __cudaRegisterFunction(h, (const char *)sim_kern_other, (char *)"_Z14sim_kern_otherv",
                           "_Z14sim_kern_otherv", -1, 0, 0, 0, 0, 0);
    __cudaRegisterFunction(h, (const char *)sim_kern_zero, (char *)"sim_kern_zero", "sim_kern_zero", -1, 0, 0, 0, 0, 0);
    __cudaRegisterFatBinaryEnd(h);
}

/* kern<<<grid, block, 0, stream>>>() as nvcc 13 compiles it */
static cudaError_t launch(void (*fn)(void), cudaStream_t stream)
{
    dim3 g = { 4, 1, 1 }, b = { 128, 1, 1 };
    if (__cudaPushCallConfiguration(g, b, 0, stream) != 0)
        return cudaErrorUnknown;
    cudaKernel_t k = NULL;
    cudaError_t e = __cudaGetKernel(&k, (const void *)fn);
    dim3 gg, bb;
    size_t shm;
    cudaStream_t st;
    if (__cudaPopCallConfiguration(&gg, &bb, &shm, &st) != cudaSuccess)
        return cudaErrorUnknown;
    if (e != cudaSuccess)
        return e;
    return __cudaLaunchKernel(k, gg, bb, NULL, shm, st);
}

/* ---- injection-library view ------------------------------------------------------ */

static const struct sim_inject_stats *inj_stats(void)
{
    sim_inject_stats_fn f = (sim_inject_stats_fn)dlsym(RTLD_DEFAULT, "sim_inject_stats");
    return f ? f() : NULL;
}

static const struct sim_rec *inj_records(size_t *n)
{
    sim_inject_records_fn f = (sim_inject_records_fn)dlsym(RTLD_DEFAULT, "sim_inject_records");
    *n = 0;
    return f ? f(n) : NULL;
}

static void inj_reset(void)
{
    sim_inject_reset_fn f = (sim_inject_reset_fn)dlsym(RTLD_DEFAULT, "sim_inject_reset");
    if (f)
        f();
}

static const struct sim_rec *find_rec(const struct sim_rec *r, size_t n, uint32_t kind, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (r[i].kind == kind && (!name || strcmp(r[i].name, name) == 0))
            return &r[i];
    return NULL;
}

/* ---- holding streams: exact simulated times whatever the host does ------------------ */

/* A hold: HOLD_KERNELS kernels of 20 ms (sim_kern_a) on a helper stream of
 * its own, and an event behind them.  A stream made to wait for the event
 * (hold_stream) starts nothing before the hold ends, so the work queued on it
 * meanwhile runs back to back from that instant, at simulated times the host
 * cannot disturb, provided it queues that work within HOLD_MS (RATIONALE for
 * 400 ms: a thread on a 2-CPU machine with a dozen runnable tasks waits tens
 * of ms for the CPU, not hundreds).  hold_pending() says the hold has not
 * ended yet: a call that returns while it is pending did not wait for the
 * held work. */
enum { HOLD_KERNELS = 20 };
#define HOLD_MS (HOLD_KERNELS * 20.0)

struct hold {
    cudaStream_t helper;
    cudaEvent_t end;
};

/* A hold that starts when `after` ends (NULL: now). */
static void hold_begin_after(struct hold *h, const struct hold *after)
{
    ASSERT_EQ(cudaStreamCreateWithFlags(&h->helper, cudaStreamNonBlocking), cudaSuccess);
    ASSERT_EQ(cudaEventCreate(&h->end), cudaSuccess);
    if (after)
        ASSERT_EQ(cudaStreamWaitEvent(h->helper, after->end, 0), cudaSuccess);
    for (int i = 0; i < HOLD_KERNELS; i++)
        ASSERT_EQ(launch(sim_kern_a, h->helper), cudaSuccess);
    ASSERT_EQ(cudaEventRecord(h->end, h->helper), cudaSuccess);
}

static void hold_begin(struct hold *h) { hold_begin_after(h, NULL); }

static void hold_stream(const struct hold *h, cudaStream_t s)
{
    ASSERT_EQ(cudaStreamWaitEvent(s, h->end, 0), cudaSuccess);
}

static int hold_pending(const struct hold *h) { return cudaEventQuery(h->end) == cudaErrorNotReady; }

static void hold_end(struct hold *h)
{
    ASSERT_EQ(cudaStreamSynchronize(h->helper), cudaSuccess);
    cudaEventDestroy(h->end);
    cudaStreamDestroy(h->helper);
}

/* ---- tests ------------------------------------------------------------------------- */

static void test_injection_at_first_call(void)
{
    ASSERT_TRUE(dlsym(RTLD_DEFAULT, "sim_inject_stats") == NULL);   /* not loaded yet */
    int n = -1;
    ASSERT_EQ(cudaGetDeviceCount(&n), cudaSuccess);
    const struct sim_inject_stats *st = inj_stats();
    ASSERT_TRUE(st != NULL);
    if (!st)
        return;
    ASSERT_EQ(st->init_calls, 1);
    ASSERT_EQ(st->subscribe_result, CUPTI_SUCCESS);
    ASSERT_EQ(st->second_subscribe_result, CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED);
    cudaSetDevice(0);
    cudaDeviceSynchronize();
    ASSERT_EQ(st->init_calls, 1);
}

static void test_devices_and_errors(void)
{
    int n = 0, dev = -1, v = 0;
    ASSERT_EQ(cudaGetDeviceCount(&n), cudaSuccess);
    ASSERT_EQ(n, 1);
    ASSERT_EQ(cudaGetDevice(&dev), cudaSuccess);
    ASSERT_EQ(dev, 0);
    struct cudaDeviceProp p;
    ASSERT_EQ(cudaGetDeviceProperties(&p, 0), cudaSuccess);
    ASSERT_TRUE(strstr(p.name, "simulated") != NULL);
    ASSERT_EQ(p.major, 9);
    ASSERT_TRUE(p.multiProcessorCount > 0 && p.totalGlobalMem > 0 && p.warpSize == 32);
    ASSERT_EQ(cudaDeviceGetAttribute(&v, cudaDevAttrClockRate, 0), cudaSuccess);
    ASSERT_TRUE(v > 100000);
    ASSERT_EQ(cudaDeviceGetAttribute(&v, cudaDevAttrMultiProcessorCount, 0), cudaSuccess);
    ASSERT_EQ(v, p.multiProcessorCount);
    int rv = 0, dv = 0;
    ASSERT_EQ(cudaRuntimeGetVersion(&rv), cudaSuccess);
    ASSERT_EQ(cudaDriverGetVersion(&dv), cudaSuccess);
    ASSERT_EQ(rv, CUDART_VERSION);
    ASSERT_TRUE(dv >= rv);

    ASSERT_EQ(cudaGetLastError(), cudaSuccess);
    ASSERT_EQ(cudaSetDevice(7), cudaErrorInvalidDevice);
    ASSERT_EQ(cudaPeekAtLastError(), cudaErrorInvalidDevice);
    ASSERT_EQ(cudaGetLastError(), cudaErrorInvalidDevice);
    ASSERT_EQ(cudaGetLastError(), cudaSuccess);
    ASSERT_TRUE(strcmp(cudaGetErrorName(cudaErrorInvalidDevice), "cudaErrorInvalidDevice") == 0);
    ASSERT_TRUE(strcmp(cudaGetErrorString(cudaErrorInvalidDevice), "invalid device ordinal") == 0);
    ASSERT_TRUE(strcmp(cudaGetErrorName(cudaSuccess), "cudaSuccess") == 0);
    ASSERT_TRUE(strcmp(cudaGetErrorString(cudaSuccess), "no error") == 0);
    ASSERT_TRUE(strcmp(cudaGetErrorName(cudaErrorStreamCaptureUnsupported), "cudaErrorStreamCaptureUnsupported") == 0);
    ASSERT_EQ(launch(sim_kern_a, (cudaStream_t)(uintptr_t)0xdead0), cudaErrorInvalidResourceHandle);
    ASSERT_EQ(cudaGetLastError(), cudaErrorInvalidResourceHandle);
    dim3 g = { 1, 1, 1 }, b = { 1, 1, 1 };
    ASSERT_EQ(cudaLaunchKernel((const void *)test_devices_and_errors, g, b, NULL, 0, NULL),
              cudaErrorInvalidDeviceFunction);
    cudaGetLastError();
}

static void test_memory(void)
{
    enum { N = 1 << 20 };
    unsigned char *d = NULL, *pinned = NULL, *page = malloc(N), *reg = malloc(N), *back = malloc(N);
    ASSERT_EQ(cudaMalloc((void **)&d, N), cudaSuccess);
    ASSERT_EQ(cudaMallocHost((void **)&pinned, N), cudaSuccess);
    for (int i = 0; i < N; i++)
        page[i] = (unsigned char)(i * 7);
    ASSERT_EQ(cudaMemcpy(d, page, N, cudaMemcpyHostToDevice), cudaSuccess);
    ASSERT_EQ(cudaMemcpy(back, d, N, cudaMemcpyDeviceToHost), cudaSuccess);
    ASSERT_TRUE(memcmp(back, page, N) == 0);
    ASSERT_EQ(cudaMemset(d, 0xab, 4096), cudaSuccess);
    ASSERT_EQ(cudaMemcpy(pinned, d, 8192, cudaMemcpyDefault), cudaSuccess);
    ASSERT_TRUE(pinned[0] == 0xab && pinned[4095] == 0xab && pinned[4096] == page[4096]);
    /* 2D: 4 rows of 16 bytes out of a 64-byte pitch */
    ASSERT_EQ(cudaMemcpy2D(back, 16, page, 64, 16, 4, cudaMemcpyHostToHost), cudaSuccess);
    ASSERT_TRUE(memcmp(back + 16, page + 64, 16) == 0 && memcmp(back + 48, page + 192, 16) == 0);

    struct cudaPointerAttributes a;
    ASSERT_EQ(cudaPointerGetAttributes(&a, d + 100), cudaSuccess);
    ASSERT_EQ(a.type, cudaMemoryTypeDevice);
    ASSERT_EQ(cudaPointerGetAttributes(&a, pinned), cudaSuccess);
    ASSERT_EQ(a.type, cudaMemoryTypeHost);
    ASSERT_EQ(cudaPointerGetAttributes(&a, page), cudaSuccess);
    ASSERT_EQ(a.type, cudaMemoryTypeUnregistered);
    ASSERT_EQ(cudaHostRegister(reg, N, cudaHostRegisterDefault), cudaSuccess);
    ASSERT_EQ(cudaPointerGetAttributes(&a, reg + 5), cudaSuccess);
    ASSERT_EQ(a.type, cudaMemoryTypeHost);
    ASSERT_EQ(cudaHostRegister(reg, N, 0), cudaErrorHostMemoryAlreadyRegistered);
    ASSERT_EQ(cudaHostUnregister(reg), cudaSuccess);
    ASSERT_EQ(cudaHostUnregister(reg), cudaErrorHostMemoryNotRegistered);
    cudaGetLastError();
    void *h2 = NULL;
    ASSERT_EQ(cudaHostAlloc(&h2, 4096, cudaHostAllocPortable), cudaSuccess);
    unsigned flags = 99;
    ASSERT_EQ(cudaHostGetFlags(&flags, h2), cudaSuccess);
    ASSERT_EQ(flags, cudaHostAllocPortable);
    ASSERT_EQ(cudaFreeHost(h2), cudaSuccess);
    ASSERT_EQ(cudaFree(d), cudaSuccess);
    ASSERT_EQ(cudaFree(page), cudaErrorInvalidValue);
    ASSERT_EQ(cudaFree(NULL), cudaSuccess);
    ASSERT_EQ(cudaFreeHost(pinned), cudaSuccess);
    cudaGetLastError();
    free(page);
    free(reg);
    free(back);
}

/* Pageable H2D blocks the host until the copy is staged: it returns with the
 * last SIMCUDA_STAGING_KB (default 1 MiB) still in flight, as NVIDIA
 * documents ("returns once the pageable buffer has been copied to the
 * staging memory"); pinned async does not block; a synchronous cudaMemcpy
 * from pinned memory does until the end.  Each copy is queued on a held
 * stream, so "blocked until the copy started" and "returned before it
 * started" are told apart by the holds, not by the host's clock: hold a
 * ends 400 ms after the start, hold b 400 ms after a; when a call returned
 * is read, in simulated time, from its runtime API record. */
static void test_copy_blocking(void)
{
    enum { N = 4 << 20 };            /* 4 MiB: 8.4 ms pageable at 0.5 GB/s, 4.2 ms pinned at 1 GB/s */
    const double pageable_ms = N / 0.5 / 1e6, pinned_ms = N / 1.0 / 1e6;
    const uint64_t in_flight_ns = (uint64_t)((1 << 20) / 0.5 + 0.5); /* the last staged MiB */
    void *d = NULL, *pinned = NULL, *page = calloc(1, N);
    cudaStream_t s, s2;
    ASSERT_EQ(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
    ASSERT_EQ(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking), cudaSuccess);
    ASSERT_EQ(cudaMalloc(&d, N), cudaSuccess);
    ASSERT_EQ(cudaMallocHost(&pinned, N), cudaSuccess);
    memset(pinned, 1, N);
    cudaDeviceSynchronize();
    inj_reset();

    struct hold a, b;
    hold_begin(&a);
    hold_begin_after(&b, &a);

    /* pageable async behind hold a: returns once the copy is staged (a has
     * ended, all but the last MiB moved), without waiting for the rest of
     * the device (b is pending) */
    hold_stream(&a, s);
    const uint64_t t0_page = now_ns();
    ASSERT_EQ(cudaMemcpyAsync(d, page, N, cudaMemcpyHostToDevice, s), cudaSuccess);
    const uint64_t t_page = now_ns();
    ASSERT_TRUE(!hold_pending(&a));
    ASSERT_TRUE(hold_pending(&b));
    ASSERT_TRUE((double)(t_page - t0_page) / 1e6 >= pageable_ms - in_flight_ns / 1e6);
    ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);

    /* pinned async behind hold b: returns before the copy has even started */
    hold_stream(&b, s2);
    ASSERT_EQ(cudaMemcpyAsync(d, pinned, N, cudaMemcpyHostToDevice, s2), cudaSuccess);
    ASSERT_TRUE(hold_pending(&b));
    ASSERT_EQ(cudaStreamQuery(s2), cudaErrorNotReady);

    /* synchronous cudaMemcpy from pinned memory behind hold b: returns once
     * the copy is over */
    hold_stream(&b, NULL);
    const uint64_t t0_sync = now_ns();
    ASSERT_EQ(cudaMemcpy(d, pinned, N, cudaMemcpyHostToDevice), cudaSuccess);
    const uint64_t t_sync = now_ns();
    ASSERT_TRUE(!hold_pending(&b));
    ASSERT_EQ(cudaStreamQuery(NULL), cudaSuccess);
    ASSERT_TRUE((double)(t_sync - t0_sync) / 1e6 >= pinned_ms);
    ASSERT_EQ(cudaStreamSynchronize(s2), cudaSuccess);
    hold_end(&a);
    hold_end(&b);

    /* the device timeline: exact durations; each blocking call returned
     * after its copy ended */
    size_t n = 0;
    const struct sim_rec *r = inj_records(&n);
    const struct sim_inject_stats *st = inj_stats();
    const struct sim_rec *page_cp = NULL, *sync_cp = NULL, *async_cp = NULL, *page_api = NULL;
    size_t ncp = 0;
    for (size_t i = 0; r && i < n; i++) {
        const struct sim_rec *x = &r[i];
        if (x->kind != CUPTI_ACTIVITY_KIND_MEMCPY || x->bytes != N)
            continue;
        ncp++;
        if (x->src_kind == CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE)
            page_cp = x;
        else if (x->flags & CUPTI_ACTIVITY_FLAG_MEMCPY_ASYNC)
            async_cp = x;
        else
            sync_cp = x;
    }
    ASSERT_EQ(ncp, 3);
    ASSERT_TRUE(page_cp && sync_cp && async_cp && st);
    if (page_cp && sync_cp && async_cp && st) {
        const int64_t off = st->ts_offset_ns;
        ASSERT_EQ(page_cp->end - page_cp->start, (uint64_t)(N / 0.5 + 0.5));
        ASSERT_TRUE((int64_t)page_cp->start - off >= (int64_t)t0_page);
        /* returned, in simulated time, with the last staged MiB in flight */
        for (size_t i = 0; i < n; i++)
            if (r[i].kind == CUPTI_ACTIVITY_KIND_RUNTIME && r[i].corr == page_cp->corr)
                page_api = &r[i];
        ASSERT_TRUE(page_api && page_api->cbid == CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020);
        if (page_api)
            ASSERT_EQ(page_cp->end - page_api->end, in_flight_ns);
        ASSERT_EQ(sync_cp->src_kind, CUPTI_ACTIVITY_MEMORY_KIND_PINNED);
        ASSERT_EQ(sync_cp->end - sync_cp->start, (uint64_t)N);
        ASSERT_TRUE((int64_t)sync_cp->end - off <= (int64_t)t_sync);
        ASSERT_EQ(async_cp->src_kind, CUPTI_ACTIVITY_MEMORY_KIND_PINNED);
        ASSERT_EQ(async_cp->end - async_cp->start, (uint64_t)N);
        ASSERT_EQ(async_cp->start, sync_cp->start);      /* both start when hold b ends */
    }
    cudaStreamDestroy(s);
    cudaStreamDestroy(s2);
    cudaFree(d);
    cudaFreeHost(pinned);
    free(page);
}

static void test_events_and_sync(void)
{
    cudaStream_t s;
    cudaEvent_t e1, e2, e3;
    ASSERT_EQ(cudaStreamCreate(&s), cudaSuccess);
    ASSERT_EQ(cudaEventCreate(&e1), cudaSuccess);
    ASSERT_EQ(cudaEventCreate(&e2), cudaSuccess);
    ASSERT_EQ(cudaEventCreateWithFlags(&e3, cudaEventDisableTiming), cudaSuccess);
    float ms = 0;
    ASSERT_EQ(cudaEventElapsedTime(&ms, e1, e2), cudaErrorInvalidResourceHandle);  /* never recorded */
    cudaGetLastError();

    /* a 20 ms kernel between two events, on a held stream */
    struct hold h;
    uint64_t t0 = now_ns();
    hold_begin(&h);
    hold_stream(&h, s);
    ASSERT_EQ(cudaEventRecord(e1, s), cudaSuccess);
    ASSERT_EQ(launch(sim_kern_a, s), cudaSuccess);
    ASSERT_TRUE(hold_pending(&h));                     /* launches do not block */
    ASSERT_EQ(cudaEventRecord(e2, s), cudaSuccess);
    ASSERT_EQ(cudaEventRecord(e3, s), cudaSuccess);
    ASSERT_EQ(cudaEventQuery(e2), cudaErrorNotReady);
    ASSERT_EQ(cudaEventElapsedTime(&ms, e1, e2), cudaErrorNotReady);
    cudaGetLastError();
    ASSERT_EQ(cudaEventSynchronize(e2), cudaSuccess);
    ASSERT_TRUE(ms_since(t0) >= HOLD_MS + 20);        /* the hold, then the kernel */
    ASSERT_EQ(cudaEventQuery(e2), cudaSuccess);
    ASSERT_EQ(cudaEventElapsedTime(&ms, e1, e2), cudaSuccess);
    ASSERT_RANGE(ms, 19.999, 20.001);                  /* exactly the configured 20 ms */
    ASSERT_EQ(cudaEventElapsedTime(&ms, e1, e3), cudaErrorInvalidResourceHandle);
    cudaGetLastError();
    hold_end(&h);

    /* stream FIFO: b (5 ms) queued behind a (20 ms) ends 25 ms after a starts */
    t0 = now_ns();
    hold_begin(&h);
    hold_stream(&h, s);
    ASSERT_EQ(cudaEventRecord(e1, s), cudaSuccess);
    ASSERT_EQ(launch(sim_kern_a, s), cudaSuccess);
    ASSERT_EQ(launch(sim_kern_b, s), cudaSuccess);
    ASSERT_EQ(cudaEventRecord(e2, s), cudaSuccess);
    ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
    ASSERT_TRUE(ms_since(t0) >= HOLD_MS + 25);
    ASSERT_EQ(cudaEventElapsedTime(&ms, e1, e2), cudaSuccess);
    ASSERT_RANGE(ms, 24.999, 25.001);
    hold_end(&h);

    /* cudaDeviceSynchronize waits for every stream: here the 20 ms kernel on
     * s2 (a synchronisation that waited only for s would take 5 ms) */
    cudaStream_t s2;
    ASSERT_EQ(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking), cudaSuccess);
    t0 = now_ns();
    ASSERT_EQ(launch(sim_kern_b, s), cudaSuccess);
    ASSERT_EQ(launch(sim_kern_a, s2), cudaSuccess);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    ASSERT_TRUE(ms_since(t0) >= 20);
    ASSERT_EQ(cudaStreamQuery(s2), cudaSuccess);

    cudaEventDestroy(e1);
    cudaEventDestroy(e2);
    cudaEventDestroy(e3);
    cudaStreamDestroy(s);
    cudaStreamDestroy(s2);
}

/* Legacy default stream: it waits for blocking streams and they wait for it;
 * non-blocking streams run beside it.  Checked through CUPTI records. */
static void test_legacy_stream_and_records(void)
{
    enum { N = 1 << 20 };
    cudaStream_t sb, snb;
    ASSERT_EQ(cudaStreamCreate(&sb), cudaSuccess);
    ASSERT_EQ(cudaStreamCreateWithFlags(&snb, cudaStreamNonBlocking), cudaSuccess);
    unsigned long long id_sb = 0, id_snb = 0, id_null = 0;
    ASSERT_EQ(cudaStreamGetId(sb, &id_sb), cudaSuccess);
    ASSERT_EQ(cudaStreamGetId(snb, &id_snb), cudaSuccess);
    ASSERT_EQ(cudaStreamGetId(NULL, &id_null), cudaSuccess);
    ASSERT_TRUE(id_sb != id_snb && id_sb != id_null);
    void *d = NULL, *pinned = NULL, *page = calloc(1, N);
    ASSERT_EQ(cudaMalloc(&d, N), cudaSuccess);
    ASSERT_EQ(cudaMallocHost(&pinned, N), cudaSuccess);
    cudaDeviceSynchronize();
    inj_reset();

    /* both streams held: sim_kern_a and the first sim_kern_b start at the
     * same instant, however long the host takes between the launches */
    uint64_t t0 = now_ns();
    struct hold h;
    hold_begin(&h);
    hold_stream(&h, sb);
    hold_stream(&h, snb);
    ASSERT_EQ(launch(sim_kern_a, sb), cudaSuccess);        /* 20 ms on a blocking stream */
    ASSERT_EQ(launch(sim_kern_b, snb), cudaSuccess);       /* 5 ms beside it */
    ASSERT_EQ(launch(sim_kern_other, NULL), cudaSuccess);  /* 1 ms after sim_kern_a */
    ASSERT_EQ(launch(sim_kern_b, sb), cudaSuccess);        /* after the NULL-stream kernel */
    ASSERT_EQ(cudaMemcpyAsync(d, pinned, N, cudaMemcpyHostToDevice, snb), cudaSuccess);
    ASSERT_EQ(cudaMemcpyAsync(d, page, N, cudaMemcpyHostToDevice, snb), cudaSuccess);
    ASSERT_EQ(cudaMemcpyAsync(pinned, d, N, cudaMemcpyDeviceToHost, snb), cudaSuccess);
    ASSERT_EQ(cudaMemsetAsync(d, 7, 1000, snb), cudaSuccess);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    uint64_t t1 = now_ns();
    hold_end(&h);

    size_t n = 0;
    const struct sim_rec *r = inj_records(&n);
    const struct sim_inject_stats *st = inj_stats();
    ASSERT_TRUE(r != NULL && n >= 9);
    if (!r || !st)
        return;
    const int64_t off = st->ts_offset_ns;
    const struct sim_rec *ka = NULL, *kb_nb = NULL, *kother = NULL, *kb_b = NULL;
    const struct sim_rec *cp_pin = NULL, *cp_page = NULL, *cp_d2h = NULL, *ms = NULL, *sync = NULL;
    size_t nkern = 0, napi = 0;
    for (size_t i = 0; i < n; i++) {
        const struct sim_rec *x = &r[i];
        if (x->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) {
            nkern++;
            if (!strcmp(x->name, "sim_kern_a") && x->stream == id_sb)
                ka = x;
            else if (!strcmp(x->name, "sim_kern_b") && x->stream == id_snb)
                kb_nb = x;
            else if (!strcmp(x->name, "sim_kern_b") && x->stream == id_sb)
                kb_b = x;
            else if (!strcmp(x->name, "_Z14sim_kern_otherv"))
                kother = x;
        } else if (x->kind == CUPTI_ACTIVITY_KIND_MEMCPY) {
            if (x->copy_kind == CUPTI_ACTIVITY_MEMCPY_KIND_DTOH)
                cp_d2h = x;
            else if (x->src_kind == CUPTI_ACTIVITY_MEMORY_KIND_PINNED)
                cp_pin = x;
            else if (x->src_kind == CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE)
                cp_page = x;
        } else if (x->kind == CUPTI_ACTIVITY_KIND_MEMSET) {
            ms = x;
        } else if (x->kind == CUPTI_ACTIVITY_KIND_SYNCHRONIZATION &&
                   x->sync_type == CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE) {
            sync = x;   /* cudaDeviceSynchronize (hold_end adds a stream synchronisation) */
        } else if (x->kind == CUPTI_ACTIVITY_KIND_RUNTIME) {
            napi++;
        }
    }
    ASSERT_EQ(nkern, 4 + HOLD_KERNELS);
    ASSERT_TRUE(ka && kb_nb && kother && kb_b && cp_pin && cp_page && cp_d2h && ms && sync);
    ASSERT_TRUE(napi >= 9);
    if (!(ka && kb_nb && kother && kb_b && cp_pin && cp_page && cp_d2h && ms && sync))
        return;
    /* timestamps: on the host clock plus what the timestamp callback adds */
    ASSERT_TRUE((int64_t)ka->start - off >= (int64_t)t0 && (int64_t)ka->end - off <= (int64_t)t1);
    ASSERT_RANGE((double)(ka->end - ka->start) / 1e6, 19.99, 20.01);
    ASSERT_RANGE((double)(kb_nb->end - kb_nb->start) / 1e6, 4.99, 5.01);
    ASSERT_EQ(kb_nb->start, ka->start);                   /* non-blocking ran beside */
    ASSERT_TRUE(kother->start >= ka->end);                /* legacy waited for blocking stream */
    ASSERT_EQ(kother->stream, id_null);
    ASSERT_TRUE(kb_b->start >= kother->end);              /* blocking stream waited for legacy */
    ASSERT_EQ(ka->stream, id_sb);
    ASSERT_EQ(ka->device, 0);
    ASSERT_TRUE(ka->corr != 0 && ka->corr != kb_nb->corr);
    /* copies: kinds, sizes, memory kinds, FIFO on their stream */
    ASSERT_EQ(cp_pin->copy_kind, CUPTI_ACTIVITY_MEMCPY_KIND_HTOD);
    ASSERT_EQ(cp_pin->dst_kind, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE);
    ASSERT_EQ(cp_pin->bytes, N);
    ASSERT_TRUE(cp_pin->flags & CUPTI_ACTIVITY_FLAG_MEMCPY_ASYNC);
    ASSERT_RANGE((double)(cp_pin->end - cp_pin->start) / 1e6, N / 1.0 / 1e6 - 0.01, N / 1.0 / 1e6 + 0.01);
    ASSERT_EQ(cp_page->copy_kind, CUPTI_ACTIVITY_MEMCPY_KIND_HTOD);
    ASSERT_RANGE((double)(cp_page->end - cp_page->start) / 1e6, N / 0.5 / 1e6 - 0.01, N / 0.5 / 1e6 + 0.01);
    ASSERT_TRUE(cp_page->start >= kb_nb->end && cp_page->start >= cp_pin->end);
    ASSERT_EQ(cp_d2h->src_kind, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE);
    ASSERT_EQ(cp_d2h->dst_kind, CUPTI_ACTIVITY_MEMORY_KIND_PINNED);
    ASSERT_EQ(cp_d2h->stream, id_snb);
    ASSERT_EQ(ms->bytes, 1000);
    ASSERT_EQ(ms->value, 7);
    ASSERT_EQ(ms->dst_kind, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE);
    ASSERT_TRUE(ms->start >= cp_d2h->end);
    ASSERT_EQ(sync->sync_type, CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE);
    ASSERT_TRUE((int64_t)sync->end - off <= (int64_t)t1 + 1000000);
    ASSERT_EQ(st->dropped, 0);

    cudaFree(d);
    cudaFreeHost(pinned);
    free(page);
    cudaStreamDestroy(sb);
    cudaStreamDestroy(snb);
}

/* Full buffers reach the client without a flush (16 KiB buffers hold about
 * 80 kernel records; 400 zero-length kernels fill several). */
static void test_buffers_fill(void)
{
    const struct sim_inject_stats *st = inj_stats();
    if (!st)
        return;
    size_t before = st->buffers_completed;
    for (int i = 0; i < 400; i++)
        ASSERT_EQ(launch(sim_kern_zero, NULL), cudaSuccess);
    cudaDeviceSynchronize();
    /* the worker delivers full buffers every 10 ms: wait for them (up to 60 s
     * on a loaded machine; a pass takes a few tens of ms) */
    for (int i = 0; i < 12000 && st->buffers_completed - before < 3; i++) {
        struct timespec ts = { 0, 5 * 1000000L };
        nanosleep(&ts, NULL);
    }
    ASSERT_TRUE(st->buffers_completed - before >= 3);
    size_t n = 0;
    const struct sim_rec *r = inj_records(&n);
    size_t kern = 0;
    for (size_t i = 0; i < n; i++)
        kern += r[i].kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL && !strcmp(r[i].name, "sim_kern_zero");
    ASSERT_EQ(kern, 400);
    ASSERT_EQ(st->dropped, 0);
}

static void test_device_record(void)
{
    size_t n = 0;
    const struct sim_rec *r = inj_records(&n);
    const struct sim_rec *dev = r ? find_rec(r, n, CUPTI_ACTIVITY_KIND_DEVICE, NULL) : NULL;
    ASSERT_TRUE(dev != NULL);
    if (dev) {
        ASSERT_TRUE(strstr(dev->name, "simulated") != NULL);
        ASSERT_EQ(dev->device, 0);
        ASSERT_TRUE(dev->bytes > 0);
    }
}

struct thread_arg {
    const struct hold *hold;
    unsigned long long stream_id;
    double ms;
};

static void *thread_sync(void *p)
{
    struct thread_arg *a = p;
    cudaStream_t s;
    cudaStreamCreate(&s);
    cudaStreamGetId(s, &a->stream_id);
    hold_stream(a->hold, s);
    uint64_t t0 = now_ns();
    launch(sim_kern_b, s);
    cudaStreamSynchronize(s);
    a->ms = ms_since(t0);
    cudaStreamDestroy(s);
    return NULL;
}

/* Four threads, four streams, one 5 ms kernel each: all four run at once on
 * the device (their streams are held, so they are queued before any starts). */
static void test_threads(void)
{
    pthread_t th[4];
    struct thread_arg arg[4];
    struct hold h;
    cudaDeviceSynchronize();
    inj_reset();
    hold_begin(&h);
    for (int i = 0; i < 4; i++) {
        arg[i] = (struct thread_arg){ &h, 0, 0 };
        pthread_create(&th[i], NULL, thread_sync, &arg[i]);
    }
    for (int i = 0; i < 4; i++)
        pthread_join(th[i], NULL);
    hold_end(&h);
    for (int i = 0; i < 4; i++)
        ASSERT_TRUE(arg[i].ms >= 5);
    size_t n = 0;
    const struct sim_rec *r = inj_records(&n);
    const struct sim_rec *k[4] = { NULL, NULL, NULL, NULL };
    for (size_t i = 0; r && i < n; i++)
        for (int j = 0; j < 4; j++)
            if (r[i].kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL &&
                !strcmp(r[i].name, "sim_kern_b") && r[i].stream == arg[j].stream_id)
                k[j] = &r[i];
    ASSERT_TRUE(k[0] && k[1] && k[2] && k[3]);
    for (int j = 0; j < 4 && k[0] && k[1] && k[2] && k[3]; j++) {
        ASSERT_EQ(k[j]->start, k[0]->start);          /* side by side, not one after another */
        ASSERT_EQ(k[j]->end - k[j]->start, 5000000);
    }
}

static void test_cupti_misc(void)
{
    const char *s = NULL;
    ASSERT_EQ(cuptiGetResultString(CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED, &s), CUPTI_SUCCESS);
    ASSERT_TRUE(s && strcmp(s, "CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED") == 0);
    uint32_t v = 0;
    ASSERT_EQ(cuptiGetVersion(&v), CUPTI_SUCCESS);
    ASSERT_EQ(v, CUPTI_API_VERSION);
    const struct sim_inject_stats *st = inj_stats();
    uint64_t t = 0, h0 = now_ns();
    ASSERT_EQ(cuptiGetTimestamp(&t), CUPTI_SUCCESS);
    uint64_t h1 = now_ns();
    if (st) {   /* the timestamp callback's clock, read between h0 and h1 */
        ASSERT_TRUE((int64_t)t - st->ts_offset_ns >= (int64_t)h0);
        ASSERT_TRUE((int64_t)t - st->ts_offset_ns <= (int64_t)h1);
    }
    CUpti_Activity *rec = NULL;
    uint8_t empty[64] = { 0 };
    ASSERT_EQ(cuptiActivityGetNextRecord(empty, 0, &rec), CUPTI_ERROR_MAX_LIMIT_REACHED);
}

static int busy_mode(void)
{
    int n = 0;
    cudaGetDeviceCount(&n);
    const struct sim_inject_stats *st = inj_stats();
    ASSERT_TRUE(st != NULL);
    if (st) {
        ASSERT_EQ(st->subscribe_result, CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED);
        ASSERT_EQ(st->init_calls, 1);
    }
    return gs_check_done("test_simcuda busy");
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "busy") == 0)
        return busy_mode();
    uint64_t t0 = now_ns();
    test_injection_at_first_call();
    test_device_record();
    test_devices_and_errors();
    test_memory();
    test_copy_blocking();
    test_events_and_sync();
    test_legacy_stream_and_records();
    test_threads();
    test_cupti_misc();
    test_buffers_fill();
    printf("test_simcuda: %.0f ms\n", ms_since(t0));
    return gs_check_done("test_simcuda");
}
