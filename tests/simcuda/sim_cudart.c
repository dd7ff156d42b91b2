/* sim_cudart.c — the simulated CUDA runtime (build/simcuda/libcudart.so.13).
 *
 * A stand-in for libcudart.so.13 on machines with the CUDA toolkit but no GPU.
 * Programs built with `nvcc -cudart shared` load it through LD_LIBRARY_PATH
 * and run unchanged: the registration and launch entry points nvcc emits, the
 * memory, stream, event, device and error calls of the runtime API, with the
 * real symbol version (libcudart.map).
 *
 * The device is virtual and runs in real time on CLOCK_MONOTONIC: each stream
 * is a FIFO whose work starts when the stream (and, for the legacy default
 * stream, every blocking stream) is free; kernels last their configured time,
 * copies bytes / bandwidth.  Device memory is host memory and copies really
 * copy, so programs stay correct; kernels compute nothing.  Calls that wait
 * for the device sleep until the simulated work ends, so host and device
 * timelines agree.  Every operation is also reported to the CUPTI stand-in
 * (sim_cupti.c) through simcuda_link.h.
 *
 * It must never spin, print unless SIMCUDA_VERBOSE=1, or hold its lock while
 * sleeping or while calling out (CUPTI sink, injection, host callbacks).
 */
#define _GNU_SOURCE
#include <cuda_runtime_api.h>
#include <cupti_activity.h>      /* enum values used in simcuda_op only */
#include <cupti_runtime_cbid.h>

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "simcuda_link.h"
#include "sim_coll.h"
#include "sim_errnames.h"        /* generated from driver_types.h */

/* The mode (rules.mk): which CUDA this build stands in for. */
#ifndef SIMCUDA_CUPTI_SONAME
#define SIMCUDA_CUPTI_SONAME "libcupti.so.13"
#endif
#ifndef SIMCUDA_RUNTIME_VERSION
#define SIMCUDA_RUNTIME_VERSION CUDART_VERSION
#endif

#define SIM_MAX_DEVICES 16
#define SIM_LEGACY_STREAM_ID 7u  /* what real CUPTI reports for the NULL stream */
#define SIM_FIRST_STREAM_ID 13u

/* ---- time ---------------------------------------------------------------- */

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Sleep (never spin) until CLOCK_MONOTONIC reaches t. */
static void sleep_until(uint64_t t)
{
    struct timespec ts = { (time_t)(t / 1000000000ull), (long)(t % 1000000000ull) };
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
        ;
}

static uint64_t max_u64(uint64_t a, uint64_t b) { return a > b ? a : b; }

/* ---- configuration (environment, read once) ------------------------------ */

struct kernel_rule { char *name; uint64_t ns; };

static struct {
    int ndev;
    char devname[256];
    double h2d_pinned_gbps, h2d_pageable_gbps, d2h_gbps, d2h_pageable_gbps;
    double d2d_gbps, memset_gbps;
    uint64_t staging_bytes; /* SIMCUDA_STAGING_KB: what a pageable H2D copy leaves in flight */
    /* the card (SIMCUDA_SMS, _MEM_GIB, _CLOCK_MHZ, _CC, _MIG) */
    uint32_t sms, clock_khz, cc_major, cc_minor;
    size_t mem_total;
    int copy_data;          /* SIMCUDA_COPY_DATA: 0 = copies take their time but move no bytes */
    int p2p;                /* SIMCUDA_P2P: cudaDeviceCanAccessPeer says yes */
    char p2p_rules[256];    /* SIMCUDA_P2P_GBPS: "*=50,0-1=10" */
    uint64_t kernel_default_ns;
    struct kernel_rule *rules;
    int nrules;
    int verbose;
    uint64_t t0;
} cfg;

static double env_double(const char *name, double def)
{
    const char *s = getenv(name);
    if (!s || !*s)
        return def;
    char *end;
    double v = strtod(s, &end);
    return (end != s && v > 0) ? v : def;
}

/* SIMCUDA_KERNEL_US="name=us,name2=us,*=us" */
static void parse_kernel_rules(void)
{
    cfg.kernel_default_ns = 100000;
    const char *s = getenv("SIMCUDA_KERNEL_US");
    if (!s || !*s)
        return;
    char *copy = strdup(s), *save = NULL;
    if (!copy)
        return;
    for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        char *eq = strrchr(tok, '=');
        if (!eq || eq == tok)
            continue;
        *eq = 0;
        double us = strtod(eq + 1, NULL);
        if (us < 0)
            us = 0;
        uint64_t ns = (uint64_t)(us * 1000.0 + 0.5);
        if (strcmp(tok, "*") == 0) {
            cfg.kernel_default_ns = ns;
            continue;
        }
        struct kernel_rule *r = realloc(cfg.rules, sizeof(*r) * (size_t)(cfg.nrules + 1));
        if (!r)
            break;
        cfg.rules = r;
        cfg.rules[cfg.nrules].name = strdup(tok);
        cfg.rules[cfg.nrules].ns = ns;
        if (cfg.rules[cfg.nrules].name)
            cfg.nrules++;
    }
    free(copy);
}

static void read_config(void)
{
    const char *s = getenv("SIMCUDA_DEVICES");
    cfg.ndev = 1;
    if (s && *s) {
        int n = atoi(s);
        cfg.ndev = n < 0 ? 0 : n > SIM_MAX_DEVICES ? SIM_MAX_DEVICES : n;
    }
    s = getenv("SIMCUDA_DEVICE_NAME");
    const char *mig = getenv("SIMCUDA_MIG");
    snprintf(cfg.devname, sizeof(cfg.devname), "%s%s%s",
             (s && *s) ? s : "gpustarve simulated GPU", mig && *mig ? " MIG " : "",
             mig && *mig ? mig : "");
    cfg.sms = (uint32_t)env_double("SIMCUDA_SMS", 132);
    cfg.clock_khz = (uint32_t)(env_double("SIMCUDA_CLOCK_MHZ", 1980) * 1000);
    cfg.mem_total = (size_t)(env_double("SIMCUDA_MEM_GIB", 80) * (1u << 30));
    const double cc = env_double("SIMCUDA_CC", 9.0);
    cfg.cc_major = (uint32_t)cc;
    cfg.cc_minor = (uint32_t)((cc - cfg.cc_major) * 10 + 0.5);
    s = getenv("SIMCUDA_COPY_DATA");
    cfg.copy_data = !(s && strcmp(s, "0") == 0);
    s = getenv("SIMCUDA_P2P");
    cfg.p2p = s && *s && strcmp(s, "0") != 0;
    s = getenv("SIMCUDA_P2P_GBPS");
    snprintf(cfg.p2p_rules, sizeof(cfg.p2p_rules), "%s", s && *s ? s : "*=50");
    cfg.h2d_pinned_gbps = env_double("SIMCUDA_H2D_PINNED_GBPS", 25.0);
    cfg.h2d_pageable_gbps = env_double("SIMCUDA_H2D_PAGEABLE_GBPS", 6.0);
    cfg.d2h_gbps = env_double("SIMCUDA_D2H_GBPS", 20.0);
    cfg.d2h_pageable_gbps = env_double("SIMCUDA_D2H_PAGEABLE_GBPS", cfg.d2h_gbps);
    cfg.d2d_gbps = env_double("SIMCUDA_D2D_GBPS", 1000.0);
    cfg.memset_gbps = env_double("SIMCUDA_MEMSET_GBPS", 1000.0);
    cfg.staging_bytes = (uint64_t)(env_double("SIMCUDA_STAGING_KB", 1024.0) * 1024.0);
    s = getenv("SIMCUDA_VERBOSE");
    cfg.verbose = s && *s && strcmp(s, "0") != 0;
    parse_kernel_rules();
    cfg.t0 = now_ns();
}

static void vlog(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void vlog(const char *fmt, ...)
{
    if (!cfg.verbose)
        return;
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    int n = snprintf(line, sizeof(line), "simcuda[%d] %10.3f ms ", (int)getpid(),
                     (double)(now_ns() - cfg.t0) / 1e6);
    if (n > 0 && n < (int)sizeof(line))
        vsnprintf(line + n, sizeof(line) - (size_t)n, fmt, ap);
    va_end(ap);
    fprintf(stderr, "%s\n", line);
}

/* bytes / (GB/s) = ns, since 1 GB/s is 1 byte per ns. */
static uint64_t copy_ns(uint64_t bytes, double gbps)
{
    return (uint64_t)((double)bytes / gbps + 0.5);
}

/* ---- state ----------------------------------------------------------------- */

struct sim_stream {
    uint32_t id;
    int device;
    unsigned flags;           /* cudaStreamNonBlocking or 0 */
    int priority;
    int legacy;               /* the legacy default stream of its device */
    int destroyed;
    uint64_t busy_until;      /* end of the last operation queued on it */
    struct sim_stream *next;  /* all streams ever made; never freed */
};

struct sim_event {
    uint32_t id;
    unsigned flags;
    int recorded;
    int device;
    uint64_t time;            /* when the device reaches the record point */
};

enum range_kind { RANGE_DEVICE = 1, RANGE_PINNED, RANGE_REGISTERED, RANGE_MANAGED };

struct sim_range {
    uintptr_t base;
    size_t len;
    enum range_kind kind;
    int device;
    unsigned flags;
};

struct sim_kernel {
    const void *host_fun;
    char *name;               /* device name as registered; never freed */
    int64_t ns;               /* simulated duration, -1 until looked up */
    struct sim_kernel *next;
};

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static struct sim_stream g_legacy[SIM_MAX_DEVICES];
static struct sim_stream *g_streams;          /* list of created + per-thread streams */
static uint32_t g_next_stream_id = SIM_FIRST_STREAM_ID;
static struct sim_range *g_ranges;
static size_t g_nranges, g_capranges;
static struct sim_kernel *g_kernels;
static atomic_uint g_next_event_id = 1;
static atomic_uint g_next_corr = 1;
static size_t g_mem_used[SIM_MAX_DEVICES];

static __thread int t_device;
static __thread cudaError_t t_last_error;
static __thread struct sim_stream *t_ptds[SIM_MAX_DEVICES];

struct call_config { dim3 grid, block; size_t shmem; cudaStream_t stream; };
static __thread struct call_config t_cfgstack[8];
static __thread int t_cfgdepth;

/* ---- CUPTI link ------------------------------------------------------------ */

static const struct simcuda_sink *_Atomic g_sink;

static int rt_device_count(void) { return cfg.ndev; }

static int rt_device_info(int dev, struct simcuda_device_info *out)
{
    if (dev < 0 || dev >= cfg.ndev)
        return -1;
    memset(out, 0, sizeof(*out));
    out->name = cfg.devname;
    out->global_mem = cfg.mem_total;
    out->sm_count = cfg.sms;
    out->clock_khz = cfg.clock_khz;
    out->cc_major = cfg.cc_major;
    out->cc_minor = cfg.cc_minor;
    out->max_threads_per_block = 1024;
    out->warp_size = 32;
    out->l2_bytes = 50u << 20;
    out->shared_per_block = 48u << 10;
    out->regs_per_block = 65536;
    return 0;
}

static int rt_host_alloc(void **p, size_t bytes, unsigned flags);
static int rt_host_free(void *p);
static int rt_host_register(void *p, size_t bytes, unsigned flags);
static int rt_host_unregister(void *p);
static int rt_enqueue(void *stream, int dev, uint64_t not_before, uint64_t dur_ns, const char *name,
                      uint64_t *start, uint64_t *end);
static uint64_t rt_ready_at(void *stream, int dev);

static const struct simcuda_rt g_rt = {
    SIMCUDA_LINK_VERSION, rt_device_count, rt_device_info,
    rt_host_alloc, rt_host_free, rt_host_register, rt_host_unregister,
    rt_enqueue, rt_ready_at,
};

/* Exported (hidden name, see simcuda_link.h): the driver's way in. */
const struct simcuda_rt *__simcuda_rt(void);
const struct simcuda_rt *__simcuda_rt(void) { return &g_rt; }

/* Exported (hidden name, see simcuda_link.h): CUPTI attaches its sink. */
const struct simcuda_rt *__simcuda_rt_attach(const struct simcuda_sink *sink);
const struct simcuda_rt *__simcuda_rt_attach(const struct simcuda_sink *sink)
{
    if (sink && sink->version != SIMCUDA_LINK_VERSION)
        return NULL;
    atomic_store(&g_sink, sink);
    return &g_rt;
}

static void link_cupti(void)
{
    void *h = dlopen(SIMCUDA_CUPTI_SONAME, RTLD_LAZY | RTLD_NOLOAD);
    if (!h)
        return;
    simcuda_cupti_sink_fn fn = (simcuda_cupti_sink_fn)dlsym(h, SIMCUDA_CUPTI_SINK_SYM);
    if (fn) {
        const struct simcuda_sink *s = fn();
        if (s && s->version == SIMCUDA_LINK_VERSION && atomic_load(&g_sink) != s) {
            atomic_store(&g_sink, s);
            if (s->attached)
                s->attached(&g_rt);
        }
    }
    dlclose(h);  /* drops only the reference NOLOAD took */
}

static uint32_t next_corr(void) { return atomic_fetch_add(&g_next_corr, 1); }

static void report(const struct simcuda_op *op)
{
    const struct simcuda_sink *s = atomic_load(&g_sink);
    if (s)
        s->report(op);
}

static uint32_t gettid_u32(void) { return (uint32_t)syscall(SYS_gettid); }

static void api_site(uint32_t cbid, uint32_t corr, int exit)
{
    const struct simcuda_sink *s = atomic_load(&g_sink);
    if (s && s->api)
        s->api(cbid, corr, exit);
}

/* A runtime API call begins: its correlation id, after CUPTI's enter
 * callback (report_api delivers the exit one). */
static uint32_t api_begin(uint32_t cbid)
{
    uint32_t corr = next_corr();
    api_site(cbid, corr, 0);
    return corr;
}

static void report_api_until(uint32_t cbid, uint32_t corr, uint64_t t0, uint64_t t1,
                             cudaError_t r);

static void report_api(uint32_t cbid, uint32_t corr, uint64_t t0, cudaError_t r)
{
    report_api_until(cbid, corr, t0, now_ns(), r);
}

/* The API record of a call from t0 to t1 (CUPTI's exit callback first). */
static void report_api_until(uint32_t cbid, uint32_t corr, uint64_t t0, uint64_t t1,
                             cudaError_t r)
{
    api_site(cbid, corr, 1);
    struct simcuda_op op = { 0 };
    op.kind = SIMCUDA_OP_API;
    op.cbid = cbid;
    op.correlation_id = corr;
    op.start = t0;
    op.end = t1;
    op.thread_id = gettid_u32();
    op.result = (int32_t)r;
    op.device = (uint32_t)t_device;
    report(&op);
}



/* ---- initialisation and injection ----------------------------------------- */

static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static pthread_mutex_t g_inj_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_inj_cond = PTHREAD_COND_INITIALIZER;
static int g_inj_state;     /* 0 not yet, 1 running, 2 done */
static pid_t g_inj_owner;

/* The driver (libcuda.so.1, the simulated one in build/simcuda): without
 * it every call fails with cudaErrorInsufficientDriver, as the real runtime
 * does on a machine with no driver. */
static void *g_driver;
static int (*g_cuGetProcAddress)(const char *, void **, int, unsigned long long, int *);

static void init_once(void)
{
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    int (*ver)(int *) = h ? (int (*)(int *))dlsym(h, "cuDriverGetVersion") : NULL;
    int v = 0;
    if (ver && ver(&v) == 0 && v > 0) {
        g_driver = h;
        g_cuGetProcAddress = (int (*)(const char *, void **, int, unsigned long long, int *))
            dlsym(h, "cuGetProcAddress_v2");
    } else if (h) {
        dlclose(h);
    }
    read_config();
    for (int d = 0; d < SIM_MAX_DEVICES; d++) {
        g_legacy[d].id = SIM_LEGACY_STREAM_ID;
        g_legacy[d].device = d;
        g_legacy[d].legacy = 1;
    }
    link_cupti();
}

/* Like the driver: dlopen CUDA_INJECTION64_PATH and call its
 * InitializeInjection once, at the first API call.  Calls the injection makes
 * into the runtime from the same thread pass through; other threads wait. */
static void load_injection(void)
{
    pid_t self = (pid_t)gettid_u32();
    pthread_mutex_lock(&g_inj_lock);
    while (g_inj_state == 1 && g_inj_owner != self)
        pthread_cond_wait(&g_inj_cond, &g_inj_lock);
    if (g_inj_state != 0) {
        pthread_mutex_unlock(&g_inj_lock);
        return;
    }
    g_inj_state = 1;
    g_inj_owner = self;
    pthread_mutex_unlock(&g_inj_lock);

    const char *path = getenv("CUDA_INJECTION64_PATH");
    if (path && *path) {
        void *h = dlopen(path, RTLD_NOW | RTLD_GLOBAL);
        int (*init)(void) = h ? (int (*)(void))dlsym(h, "InitializeInjection") : NULL;
        vlog("injection %s: %s", path, init ? "InitializeInjection" : (h ? "no InitializeInjection" : dlerror()));
        if (init)
            init();
    }
    link_cupti();   /* the injection may have loaded libcupti */

    pthread_mutex_lock(&g_inj_lock);
    g_inj_state = 2;
    pthread_cond_broadcast(&g_inj_cond);
    pthread_mutex_unlock(&g_inj_lock);
}

/* 1 when the runtime can serve a call (a driver was found). */
static int sim_init(void)
{
    pthread_once(&g_once, init_once);
    if (!g_driver)
        return 0;
    if (__builtin_expect(g_inj_state != 2, 0))
        load_injection();
    return 1;
}

static cudaError_t ret(cudaError_t e)
{
    if (e != cudaSuccess)
        t_last_error = e;
    return e;
}

/* ---- pointer registry (caller holds g_lock) ---------------------------------- */

static struct sim_range *range_find(const void *p)
{
    uintptr_t a = (uintptr_t)p;
    for (size_t i = 0; i < g_nranges; i++)
        if (a >= g_ranges[i].base && a - g_ranges[i].base < max_u64(g_ranges[i].len, 1))
            return &g_ranges[i];
    return NULL;
}

static int range_add(void *p, size_t len, enum range_kind kind, unsigned flags)
{
    if (g_nranges == g_capranges) {
        size_t cap = g_capranges ? g_capranges * 2 : 64;
        struct sim_range *r = realloc(g_ranges, cap * sizeof(*r));
        if (!r)
            return -1;
        g_ranges = r;
        g_capranges = cap;
    }
    g_ranges[g_nranges++] = (struct sim_range){ (uintptr_t)p, len, kind, t_device, flags };
    return 0;
}

static void range_del(struct sim_range *r) { *r = g_ranges[--g_nranges]; }

/* CUPTI memory kind of a pointer. */
static uint8_t mem_kind(const void *p)
{
    pthread_mutex_lock(&g_lock);
    const struct sim_range *r = range_find(p);
    uint8_t k = !r ? CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE
              : r->kind == RANGE_DEVICE ? CUPTI_ACTIVITY_MEMORY_KIND_DEVICE
              : r->kind == RANGE_MANAGED ? CUPTI_ACTIVITY_MEMORY_KIND_MANAGED
              : CUPTI_ACTIVITY_MEMORY_KIND_PINNED;
    pthread_mutex_unlock(&g_lock);
    return k;
}

/* ---- streams (caller holds g_lock) ------------------------------------------- */

#define STREAM_LEGACY_HANDLE ((cudaStream_t)0x1)
#define STREAM_PER_THREAD_HANDLE ((cudaStream_t)0x2)

static struct sim_stream *stream_new(int device, unsigned flags, int priority)
{
    struct sim_stream *s = calloc(1, sizeof(*s));
    if (!s)
        return NULL;
    s->id = g_next_stream_id++;
    s->device = device;
    s->flags = flags;
    s->priority = priority;
    s->next = g_streams;
    g_streams = s;
    return s;
}

/* Resolve a handle; ptsz selects per-thread default-stream semantics for 0. */
static struct sim_stream *stream_get(cudaStream_t h, int ptsz)
{
    if (h == STREAM_LEGACY_HANDLE || (h == NULL && !ptsz))
        return &g_legacy[t_device];
    if (h == STREAM_PER_THREAD_HANDLE || h == NULL) {
        if (!t_ptds[t_device])
            t_ptds[t_device] = stream_new(t_device, 0, 0);
        return t_ptds[t_device];
    }
    for (struct sim_stream *s = g_streams; s; s = s->next)
        if (s == (struct sim_stream *)h)
            return s->destroyed ? NULL : s;
    return NULL;
}

/* When work queued now on s may start: legacy-stream semantics included. */
static uint64_t stream_ready(const struct sim_stream *s)
{
    uint64_t r = s->busy_until;
    if (s->legacy) {
        for (const struct sim_stream *o = g_streams; o; o = o->next)
            if (o->device == s->device && !(o->flags & cudaStreamNonBlocking))
                r = max_u64(r, o->busy_until);
    } else if (!(s->flags & cudaStreamNonBlocking)) {
        r = max_u64(r, g_legacy[s->device].busy_until);
    }
    return r;
}

/* Queue an operation of length dur on s; returns its start, sets *end. */
static uint64_t stream_enqueue(struct sim_stream *s, uint64_t dur, uint64_t *end)
{
    uint64_t start = max_u64(now_ns(), stream_ready(s));
    s->busy_until = start + dur;
    *end = s->busy_until;
    return start;
}

static uint64_t device_idle_at(int dev)
{
    uint64_t r = g_legacy[dev].busy_until;
    for (const struct sim_stream *o = g_streams; o; o = o->next)
        if (o->device == dev)
            r = max_u64(r, o->busy_until);
    return r;
}

/* Queue an operation of length dur on a stream (lock taken here): its start,
 * end, stream id and device into op. 1, or 0 when the stream is unknown. */
static int queue_op(cudaStream_t stream, int ptsz, uint64_t dur, struct simcuda_op *op)
{
    pthread_mutex_lock(&g_lock);
    struct sim_stream *s = stream_get(stream, ptsz);
    if (s) {
        op->start = stream_enqueue(s, dur, &op->end);
        op->stream_id = s->id;
        op->device = (uint32_t)s->device;
    }
    pthread_mutex_unlock(&g_lock);
    return s != NULL;
}

/* ---- registration and launch: what nvcc emits ---------------------------- */

struct sim_module { void *slot; const void *fatbin; };

void **__cudaRegisterFatBinary(void *fatCubin);
void __cudaRegisterFatBinaryEnd(void **handle);
void __cudaUnregisterFatBinary(void **handle);
void __cudaRegisterFunction(void **handle, const char *hostFun, char *deviceFun,
                            const char *deviceName, int thread_limit, uint3 *tid,
                            uint3 *bid, dim3 *bDim, dim3 *gDim, int *wSize);
void __cudaRegisterVar(void **handle, char *hostVar, char *deviceAddress,
                       const char *deviceName, int ext, size_t size, int constant, int global);
void __cudaRegisterManagedVar(void **handle, void **hostVarPtrAddress, char *deviceAddress,
                              const char *deviceName, int ext, size_t size, int constant, int global);
char __cudaInitModule(void **handle);
unsigned __cudaPushCallConfiguration(dim3 gridDim, dim3 blockDim, size_t sharedMem, struct CUstream_st *stream);
cudaError_t __cudaPopCallConfiguration(dim3 *gridDim, dim3 *blockDim, size_t *sharedMem, void *stream);
cudaError_t __cudaGetKernel(cudaKernel_t *kernel, const void *hostFun);
cudaError_t __cudaLaunchKernel(cudaKernel_t kernel, dim3 gridDim, dim3 blockDim, void **args,
                               size_t sharedMem, cudaStream_t stream);
cudaError_t __cudaLaunchKernel_ptsz(cudaKernel_t kernel, dim3 gridDim, dim3 blockDim, void **args,
                                    size_t sharedMem, cudaStream_t stream);

void **__cudaRegisterFatBinary(void *fatCubin)
{
    struct sim_module *m = calloc(1, sizeof(*m));
    if (!m)
        return NULL;
    m->fatbin = fatCubin;
    return &m->slot;
}

void __cudaRegisterFatBinaryEnd(void **handle) { (void)handle; }

void __cudaUnregisterFatBinary(void **handle)
{
    /* Kernels stay registered: CUPTI records keep pointing at their names. */
    free(handle);  /* slot is the first member of sim_module */
}

void __cudaRegisterFunction(void **handle, const char *hostFun, char *deviceFun,
                            const char *deviceName, int thread_limit, uint3 *tid,
                            uint3 *bid, dim3 *bDim, dim3 *gDim, int *wSize)
{
    struct sim_kernel *k = calloc(1, sizeof(*k));
    if (!k)
        return;
    k->host_fun = hostFun;
    k->name = strdup(deviceName ? deviceName : (deviceFun ? deviceFun : "?"));
    k->ns = -1;
    pthread_mutex_lock(&g_lock);
    k->next = g_kernels;
    g_kernels = k;
    pthread_mutex_unlock(&g_lock);
}

void __cudaRegisterVar(void **handle, char *hostVar, char *deviceAddress,
                       const char *deviceName, int ext, size_t size, int constant, int global)
{
    /* Device variables live in host memory: the host shadow is the variable. */
}

void __cudaRegisterManagedVar(void **handle, void **hostVarPtrAddress, char *deviceAddress,
                              const char *deviceName, int ext, size_t size, int constant, int global)
{
}

char __cudaInitModule(void **handle) { return 1; }

unsigned __cudaPushCallConfiguration(dim3 gridDim, dim3 blockDim, size_t sharedMem, struct CUstream_st *stream)
{
    if (t_cfgdepth >= (int)(sizeof(t_cfgstack) / sizeof(t_cfgstack[0])))
        return 1;
    t_cfgstack[t_cfgdepth++] = (struct call_config){ gridDim, blockDim, sharedMem, stream };
    return 0;
}

cudaError_t __cudaPopCallConfiguration(dim3 *gridDim, dim3 *blockDim, size_t *sharedMem, void *stream)
{
    if (t_cfgdepth <= 0)
        return ret(cudaErrorMissingConfiguration);
    const struct call_config *c = &t_cfgstack[--t_cfgdepth];
    *gridDim = c->grid;
    *blockDim = c->block;
    *sharedMem = c->shmem;
    *(cudaStream_t *)stream = c->stream;
    return cudaSuccess;
}

static struct sim_kernel *kernel_by_host(const void *f)
{
    pthread_mutex_lock(&g_lock);
    struct sim_kernel *k = g_kernels;
    while (k && k->host_fun != f)
        k = k->next;
    pthread_mutex_unlock(&g_lock);
    return k;
}

static struct sim_kernel *kernel_by_handle(cudaKernel_t h)
{
    pthread_mutex_lock(&g_lock);
    struct sim_kernel *k = g_kernels;
    while (k && k != (struct sim_kernel *)h)
        k = k->next;
    pthread_mutex_unlock(&g_lock);
    return k;
}

cudaError_t __cudaGetKernel(cudaKernel_t *kernel, const void *hostFun)
{
    struct sim_kernel *k = kernel_by_host(hostFun);
    if (!k)
        return ret(cudaErrorInvalidDeviceFunction);
    *kernel = (cudaKernel_t)k;
    return cudaSuccess;
}

static uint64_t kernel_ns(struct sim_kernel *k)
{
    if (k->ns < 0) {
        uint64_t ns = cfg.kernel_default_ns;
        for (int i = 0; i < cfg.nrules; i++)
            if (strcmp(cfg.rules[i].name, k->name) == 0)
                ns = cfg.rules[i].ns;
        k->ns = (int64_t)ns;
    }
    return (uint64_t)k->ns;
}

/* A collective (sim_coll.c): its kernel started when the stream reached it
 * and ends when the last rank has arrived, plus its own duration; the
 * launching thread waits for the other ranks to arrive, without the lock.
 * Work another thread queues on the stream meanwhile is not held back by
 * the wait (a limit of the simulation). */
static void collective_end(struct sim_stream *s, struct simcuda_op *op)
{
    const uint64_t end = sim_coll_meet(op->start, op->end - op->start);
    pthread_mutex_lock(&g_lock);
    if (end > s->busy_until)
        s->busy_until = end;
    pthread_mutex_unlock(&g_lock);
    op->end = end;
}

static cudaError_t launch(struct sim_kernel *k, dim3 grid, dim3 block, size_t shmem,
                          cudaStream_t stream, int ptsz, uint32_t cbid)
{
    if (!sim_init())
        return ret(cudaErrorInsufficientDriver);
    uint64_t t0 = now_ns();
    uint32_t corr = api_begin(cbid);
    cudaError_t e = cudaSuccess;
    struct simcuda_op op = { 0 };
    if (!k) {
        e = cudaErrorInvalidDeviceFunction;
    } else if (grid.x == 0 || grid.y == 0 || grid.z == 0 || block.x == 0 || block.y == 0 ||
               block.z == 0 || (uint64_t)block.x * block.y * block.z > 1024) {
        e = cudaErrorInvalidConfiguration;
    } else {
        pthread_mutex_lock(&g_lock);
        struct sim_stream *s = stream_get(stream, ptsz);
        if (!s) {
            e = cudaErrorInvalidResourceHandle;
        } else {
            op.kind = SIMCUDA_OP_KERNEL;
            op.start = stream_enqueue(s, kernel_ns(k), &op.end);
            op.device = (uint32_t)s->device;
            op.stream_id = s->id;
        }
        pthread_mutex_unlock(&g_lock);
        if (s && sim_coll_is_collective(k->name))
            collective_end(s, &op);
    }
    if (e == cudaSuccess) {
        op.correlation_id = corr;
        op.name = k->name;
        op.grid[0] = (int32_t)grid.x; op.grid[1] = (int32_t)grid.y; op.grid[2] = (int32_t)grid.z;
        op.block[0] = (int32_t)block.x; op.block[1] = (int32_t)block.y; op.block[2] = (int32_t)block.z;
        op.dyn_shared = (int32_t)shmem;
        vlog("kernel %s stream %u start %+.3f ms dur %.3f ms", k->name, op.stream_id,
             ((double)op.start - (double)t0) / 1e6, (double)(op.end - op.start) / 1e6);
        report(&op);
    }
    report_api(cbid, corr, t0, e);
    return ret(e);
}

cudaError_t __cudaLaunchKernel(cudaKernel_t kernel, dim3 gridDim, dim3 blockDim, void **args,
                               size_t sharedMem, cudaStream_t stream)
{
    return launch(kernel_by_handle(kernel), gridDim, blockDim, sharedMem, stream, 0,
                  CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_v13000);
}

cudaError_t __cudaLaunchKernel_ptsz(cudaKernel_t kernel, dim3 gridDim, dim3 blockDim, void **args,
                                    size_t sharedMem, cudaStream_t stream)
{
    return launch(kernel_by_handle(kernel), gridDim, blockDim, sharedMem, stream, 1,
                  CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_ptsz_v13000);
}

cudaError_t cudaLaunchKernel(const void *func, dim3 gridDim, dim3 blockDim, void **args,
                             size_t sharedMem, cudaStream_t stream)
{
    return launch(kernel_by_host(func), gridDim, blockDim, sharedMem, stream, 0,
                  CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000);
}

cudaError_t cudaLaunchKernel_ptsz(const void *func, dim3 gridDim, dim3 blockDim, void **args,
                                  size_t sharedMem, cudaStream_t stream);
cudaError_t cudaLaunchKernel_ptsz(const void *func, dim3 gridDim, dim3 blockDim, void **args,
                                  size_t sharedMem, cudaStream_t stream)
{
    return launch(kernel_by_host(func), gridDim, blockDim, sharedMem, stream, 1,
                  CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_ptsz_v7000);
}

cudaError_t cudaFuncGetName(const char **name, const void *func)
{
    if (!sim_init())
        return ret(cudaErrorInsufficientDriver);
    struct sim_kernel *k = kernel_by_host(func);
    if (!k || !name)
        return ret(cudaErrorInvalidDeviceFunction);
    *name = k->name;
    return cudaSuccess;
}

cudaError_t cudaFuncGetAttributes(struct cudaFuncAttributes *attr, const void *func)
{
    if (!sim_init())
        return ret(cudaErrorInsufficientDriver);
    if (!attr || !kernel_by_host(func))
        return ret(cudaErrorInvalidDeviceFunction);
    memset(attr, 0, sizeof(*attr));
    attr->maxThreadsPerBlock = 1024;
    attr->numRegs = 32;
    attr->ptxVersion = 90;
    attr->binaryVersion = 90;
    return cudaSuccess;
}

/* ---- devices ------------------------------------------------------------------ */

cudaError_t cudaGetDeviceCount(int *count)
{
    if (!sim_init())
        return ret(cudaErrorInsufficientDriver);
    if (!count)
        return ret(cudaErrorInvalidValue);
    *count = cfg.ndev;
    return cfg.ndev > 0 ? cudaSuccess : ret(cudaErrorNoDevice);
}

cudaError_t cudaGetDevice(int *device)
{
    if (!sim_init())
        return ret(cudaErrorInsufficientDriver);
    if (!device)
        return ret(cudaErrorInvalidValue);
    if (cfg.ndev == 0)
        return ret(cudaErrorNoDevice);
    *device = t_device;
    return cudaSuccess;
}

cudaError_t cudaSetDevice(int device)
{
    if (!sim_init())
        return ret(cudaErrorInsufficientDriver);
    if (cfg.ndev == 0)
        return ret(cudaErrorNoDevice);
    if (device < 0 || device >= cfg.ndev)
        return ret(cudaErrorInvalidDevice);
    t_device = device;
    return cudaSuccess;
}

cudaError_t cudaInitDevice(int device, unsigned int deviceFlags, unsigned int flags)
{
    if (!sim_init())
        return ret(cudaErrorInsufficientDriver);
    return (device < 0 || device >= cfg.ndev) ? ret(cudaErrorInvalidDevice) : cudaSuccess;
}

cudaError_t cudaSetDeviceFlags(unsigned int flags)
{
    return sim_init() ? cudaSuccess : ret(cudaErrorInsufficientDriver);
}

cudaError_t cudaGetDeviceFlags(unsigned int *flags)
{
    if (!sim_init())
        return ret(cudaErrorInsufficientDriver);
    if (!flags)
        return ret(cudaErrorInvalidValue);
    *flags = 0;
    return cudaSuccess;
}

cudaError_t cudaChooseDevice(int *device, const struct cudaDeviceProp *prop)
{
    if (!sim_init())
        return ret(cudaErrorInsufficientDriver);
    if (!device || !prop)
        return ret(cudaErrorInvalidValue);
    *device = 0;
    return cfg.ndev > 0 ? cudaSuccess : ret(cudaErrorNoDevice);
}

cudaError_t cudaGetDeviceProperties(struct cudaDeviceProp *prop, int device)
{
    if (!sim_init())
        return ret(cudaErrorInsufficientDriver);
    if (!prop)
        return ret(cudaErrorInvalidValue);
    struct simcuda_device_info di;
    if (rt_device_info(device, &di) != 0)
        return ret(cfg.ndev == 0 ? cudaErrorNoDevice : cudaErrorInvalidDevice);
    memset(prop, 0, sizeof(*prop));
    snprintf(prop->name, sizeof(prop->name), "%s", di.name);
    for (int i = 0; i < 16; i++)
        prop->uuid.bytes[i] = (char)(0x51 + i + device);
    prop->totalGlobalMem = di.global_mem;
    prop->sharedMemPerBlock = di.shared_per_block;
    prop->regsPerBlock = (int)di.regs_per_block;
    prop->warpSize = (int)di.warp_size;
    prop->memPitch = SIZE_MAX / 2;
    prop->maxThreadsPerBlock = (int)di.max_threads_per_block;
    prop->maxThreadsDim[0] = 1024; prop->maxThreadsDim[1] = 1024; prop->maxThreadsDim[2] = 64;
    prop->maxGridSize[0] = 2147483647; prop->maxGridSize[1] = 65535; prop->maxGridSize[2] = 65535;
    prop->totalConstMem = 65536;
    prop->major = (int)di.cc_major;
    prop->minor = (int)di.cc_minor;
    prop->textureAlignment = 512;
    prop->texturePitchAlignment = 32;
    prop->multiProcessorCount = (int)di.sm_count;
    prop->canMapHostMemory = 1;
    prop->concurrentKernels = 1;
    prop->pciBusID = 0x10 + device;
    prop->asyncEngineCount = 2;
    prop->unifiedAddressing = 1;
    prop->memoryBusWidth = 5120;
    prop->l2CacheSize = (int)di.l2_bytes;
    prop->maxThreadsPerMultiProcessor = 2048;
    prop->streamPrioritiesSupported = 1;
    prop->globalL1CacheSupported = 1;
    prop->localL1CacheSupported = 1;
    prop->sharedMemPerMultiprocessor = 228u << 10;
    prop->regsPerMultiprocessor = 65536;
    prop->managedMemory = 1;
    prop->computePreemptionSupported = 1;
    prop->cooperativeLaunch = 1;
    prop->sharedMemPerBlockOptin = 227u << 10;
    prop->maxBlocksPerMultiProcessor = 32;
    prop->hostRegisterSupported = 1;
    prop->memoryPoolsSupported = 1;
    prop->deviceNumaId = -1;
    prop->hostNumaId = -1;
    return cudaSuccess;
}

cudaError_t cudaDeviceGetAttribute(int *value, enum cudaDeviceAttr attr, int device)
{
    if (!sim_init())
        return ret(cudaErrorInsufficientDriver);
    struct simcuda_device_info di;
    if (!value)
        return ret(cudaErrorInvalidValue);
    if (rt_device_info(device, &di) != 0)
        return ret(cudaErrorInvalidDevice);
    switch (attr) {
    case cudaDevAttrMaxThreadsPerBlock: *value = (int)di.max_threads_per_block; break;
    case cudaDevAttrMaxBlockDimX: case cudaDevAttrMaxBlockDimY: *value = 1024; break;
    case cudaDevAttrMaxBlockDimZ: *value = 64; break;
    case cudaDevAttrMaxGridDimX: *value = 2147483647; break;
    case cudaDevAttrMaxGridDimY: case cudaDevAttrMaxGridDimZ: *value = 65535; break;
    case cudaDevAttrMaxSharedMemoryPerBlock: *value = (int)di.shared_per_block; break;
    case cudaDevAttrTotalConstantMemory: *value = 65536; break;
    case cudaDevAttrWarpSize: *value = (int)di.warp_size; break;
    case cudaDevAttrMaxRegistersPerBlock: *value = (int)di.regs_per_block; break;
    case cudaDevAttrClockRate: *value = (int)di.clock_khz; break;
    case cudaDevAttrMultiProcessorCount: *value = (int)di.sm_count; break;
    case cudaDevAttrMemoryClockRate: *value = 2619000; break;
    case cudaDevAttrGlobalMemoryBusWidth: *value = 5120; break;
    case cudaDevAttrL2CacheSize: *value = (int)di.l2_bytes; break;
    case cudaDevAttrMaxThreadsPerMultiProcessor: *value = 2048; break;
    case cudaDevAttrComputeCapabilityMajor: *value = (int)di.cc_major; break;
    case cudaDevAttrComputeCapabilityMinor: *value = (int)di.cc_minor; break;
    case cudaDevAttrConcurrentKernels: case cudaDevAttrUnifiedAddressing:
    case cudaDevAttrCanMapHostMemory: case cudaDevAttrManagedMemory:
    case cudaDevAttrHostRegisterSupported: case cudaDevAttrMemoryPoolsSupported:
        *value = 1; break;
    case cudaDevAttrAsyncEngineCount: *value = 2; break;
    case cudaDevAttrPciBusId: *value = 0x10 + device; break;
    case cudaDevAttrIntegrated: case cudaDevAttrEccEnabled: *value = 0; break;
    default: *value = 0; break;
    }
    return cudaSuccess;
}

cudaError_t cudaDeviceGetStreamPriorityRange(int *leastPriority, int *greatestPriority)
{
    if (!sim_init())
        return ret(cudaErrorInsufficientDriver);
    if (leastPriority)
        *leastPriority = 0;
    if (greatestPriority)
        *greatestPriority = -5;
    return cudaSuccess;
}

cudaError_t cudaDeviceCanAccessPeer(int *canAccessPeer, int device, int peerDevice)
{
    if (!sim_init())
        return ret(cudaErrorInsufficientDriver);
    if (!canAccessPeer)
        return ret(cudaErrorInvalidValue);
    if (device < 0 || device >= cfg.ndev || peerDevice < 0 || peerDevice >= cfg.ndev)
        return ret(cudaErrorInvalidDevice);
    *canAccessPeer = cfg.p2p && device != peerDevice;
    return cudaSuccess;
}

cudaError_t cudaRuntimeGetVersion(int *runtimeVersion)
{
    if (!runtimeVersion)
        return ret(cudaErrorInvalidValue);
    *runtimeVersion = SIMCUDA_RUNTIME_VERSION;
    return cudaSuccess;
}

/* Works without a driver (then 0), as the real one does. */
cudaError_t cudaDriverGetVersion(int *driverVersion)
{
    if (!driverVersion)
        return ret(cudaErrorInvalidValue);
    pthread_once(&g_once, init_once);
    int (*ver)(int *) = g_driver ? (int (*)(int *))dlsym(g_driver, "cuDriverGetVersion") : NULL;
    *driverVersion = 0;
    if (ver)
        ver(driverVersion);
    return cudaSuccess;
}

/* Driver entry points, from the driver's cuGetProcAddress. */
static cudaError_t entry_point(const char *symbol, void **funcPtr, int version,
                               enum cudaDriverEntryPointQueryResult *status)
{
    if (!sim_init())
        return ret(cudaErrorInsufficientDriver);
    if (!symbol || !funcPtr)
        return ret(cudaErrorInvalidValue);
    int st = 1;
    int r = g_cuGetProcAddress ? g_cuGetProcAddress(symbol, funcPtr, version, 0, &st) : 500;
    if (status)
        *status = (enum cudaDriverEntryPointQueryResult)st;
    /* not found is reported through status, as the real runtime does */
    return r == 0 || r == 500 ? cudaSuccess : ret(cudaErrorInvalidValue);
}

cudaError_t cudaGetDriverEntryPoint(const char *symbol, void **funcPtr, unsigned long long flags,
                                    enum cudaDriverEntryPointQueryResult *driverStatus)
{
    return entry_point(symbol, funcPtr, SIMCUDA_RUNTIME_VERSION, driverStatus);
}

cudaError_t cudaGetDriverEntryPoint_ptsz(const char *symbol, void **funcPtr, unsigned long long flags,
                                         enum cudaDriverEntryPointQueryResult *driverStatus);
cudaError_t cudaGetDriverEntryPoint_ptsz(const char *symbol, void **funcPtr, unsigned long long flags,
                                         enum cudaDriverEntryPointQueryResult *driverStatus)
{
    return entry_point(symbol, funcPtr, SIMCUDA_RUNTIME_VERSION, driverStatus);
}

cudaError_t cudaGetDriverEntryPointByVersion(const char *symbol, void **funcPtr, unsigned int cudaVersion,
                                             unsigned long long flags,
                                             enum cudaDriverEntryPointQueryResult *driverStatus)
{
    return entry_point(symbol, funcPtr, (int)cudaVersion, driverStatus);
}

cudaError_t cudaMemGetInfo(size_t *free_b, size_t *total)
{
    if (!sim_init())
        return ret(cudaErrorInsufficientDriver);
    pthread_mutex_lock(&g_lock);
    size_t used = g_mem_used[t_device];
    pthread_mutex_unlock(&g_lock);
    if (free_b)
        *free_b = used < cfg.mem_total ? cfg.mem_total - used : 0;
    if (total)
        *total = cfg.mem_total;
    return cudaSuccess;
}

cudaError_t cudaProfilerStart(void) { return cudaSuccess; }
cudaError_t cudaProfilerStop(void) { return cudaSuccess; }

/* ---- synchronisation ---------------------------------------------------------- */

static void report_sync(uint32_t type, uint32_t stream_id, uint32_t event_id, uint32_t corr,
                        uint64_t t0, uint64_t t1)
{
    struct simcuda_op op = { 0 };
    op.kind = SIMCUDA_OP_SYNC;
    op.sync_type = type;
    op.stream_id = stream_id;
    op.event_id = event_id;
    op.correlation_id = corr;
    op.start = t0;
    op.end = t1;
    op.device = (uint32_t)t_device;
    report(&op);
}

cudaError_t cudaDeviceSynchronize(void)
{
    if (!sim_init())
        return ret(cudaErrorInsufficientDriver);
    uint64_t t0 = now_ns();
    uint32_t corr = api_begin(CUPTI_RUNTIME_TRACE_CBID_cudaDeviceSynchronize_v3020);
    pthread_mutex_lock(&g_lock);
    uint64_t until = device_idle_at(t_device);
    pthread_mutex_unlock(&g_lock);
    sleep_until(until);
    uint64_t t1 = now_ns();
    vlog("cudaDeviceSynchronize waited %.3f ms", (double)(t1 - t0) / 1e6);
    report_sync(CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE,
                CUPTI_SYNCHRONIZATION_INVALID_VALUE, CUPTI_SYNCHRONIZATION_INVALID_VALUE, corr, t0, t1);
    report_api(CUPTI_RUNTIME_TRACE_CBID_cudaDeviceSynchronize_v3020, corr, t0, cudaSuccess);
    return cudaSuccess;
}

cudaError_t cudaDeviceReset(void)
{
    cudaDeviceSynchronize();
    return cudaSuccess;
}

static cudaError_t stream_sync(cudaStream_t stream, int ptsz)
{
    if (!sim_init())
        return ret(cudaErrorInsufficientDriver);
    uint64_t t0 = now_ns();
    uint32_t corr = api_begin(ptsz ? CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_ptsz_v7000
                                   : CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020);
    pthread_mutex_lock(&g_lock);
    struct sim_stream *s = stream_get(stream, ptsz);
    uint64_t until = s ? stream_ready(s) : 0;
    uint32_t id = s ? s->id : 0;
    pthread_mutex_unlock(&g_lock);
    if (!s)
        return ret(cudaErrorInvalidResourceHandle);
    sleep_until(until);
    uint64_t t1 = now_ns();
    vlog("cudaStreamSynchronize stream %u waited %.3f ms", id, (double)(t1 - t0) / 1e6);
    report_sync(CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE, id,
                CUPTI_SYNCHRONIZATION_INVALID_VALUE, corr, t0, t1);
    report_api(ptsz ? CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_ptsz_v7000
                    : CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020, corr, t0, cudaSuccess);
    return cudaSuccess;
}

cudaError_t cudaStreamSynchronize(cudaStream_t stream) { return stream_sync(stream, 0); }
cudaError_t cudaStreamSynchronize_ptsz(cudaStream_t stream);
cudaError_t cudaStreamSynchronize_ptsz(cudaStream_t stream) { return stream_sync(stream, 1); }

static cudaError_t stream_query(cudaStream_t stream, int ptsz)
{
    if (!sim_init())
        return ret(cudaErrorInsufficientDriver);
    pthread_mutex_lock(&g_lock);
    struct sim_stream *s = stream_get(stream, ptsz);
    uint64_t until = s ? stream_ready(s) : 0;
    pthread_mutex_unlock(&g_lock);
    if (!s)
        return ret(cudaErrorInvalidResourceHandle);
    return now_ns() >= until ? cudaSuccess : cudaErrorNotReady;  /* NotReady is not sticky */
}

cudaError_t cudaStreamQuery(cudaStream_t stream) { return stream_query(stream, 0); }
cudaError_t cudaStreamQuery_ptsz(cudaStream_t stream);
cudaError_t cudaStreamQuery_ptsz(cudaStream_t stream) { return stream_query(stream, 1); }

/* ---- streams ----------------------------------------------------------------- */

cudaError_t cudaStreamCreateWithPriority(cudaStream_t *pStream, unsigned int flags, int priority)
{
    if (!sim_init())
        return ret(cudaErrorInsufficientDriver);
    if (!pStream || (flags & ~(unsigned)cudaStreamNonBlocking))
        return ret(cudaErrorInvalidValue);
    if (cfg.ndev == 0)
        return ret(cudaErrorNoDevice);
    pthread_mutex_lock(&g_lock);
    struct sim_stream *s = stream_new(t_device, flags, priority);
    pthread_mutex_unlock(&g_lock);
    if (!s)
        return ret(cudaErrorMemoryAllocation);
    *pStream = (cudaStream_t)s;
    vlog("stream %u created (flags %u)", s->id, flags);
    return cudaSuccess;
}

cudaError_t cudaStreamCreateWithFlags(cudaStream_t *pStream, unsigned int flags)
{
    return cudaStreamCreateWithPriority(pStream, flags, 0);
}

cudaError_t cudaStreamCreate(cudaStream_t *pStream)
{
    return cudaStreamCreateWithPriority(pStream, cudaStreamDefault, 0);
}

cudaError_t cudaStreamDestroy(cudaStream_t stream)
{
    if (!sim_init())
        return ret(cudaErrorInsufficientDriver);
    pthread_mutex_lock(&g_lock);
    struct sim_stream *s = stream_get(stream, 0);
    int ok = s && !s->legacy && stream != NULL && stream != STREAM_PER_THREAD_HANDLE;
    if (ok)
        s->destroyed = 1;  /* queued work still finishes; the memory is never reused */
    pthread_mutex_unlock(&g_lock);
    return ok ? cudaSuccess : ret(cudaErrorInvalidResourceHandle);
}

static cudaError_t stream_get_flags(cudaStream_t h, unsigned int *flags, int ptsz)
{
    if (!sim_init())
        return ret(cudaErrorInsufficientDriver);
    pthread_mutex_lock(&g_lock);
    struct sim_stream *s = stream_get(h, ptsz);
    if (s && flags)
        *flags = s->flags;
    pthread_mutex_unlock(&g_lock);
    return s ? cudaSuccess : ret(cudaErrorInvalidResourceHandle);
}

cudaError_t cudaStreamGetFlags(cudaStream_t hStream, unsigned int *flags) { return stream_get_flags(hStream, flags, 0); }
cudaError_t cudaStreamGetFlags_ptsz(cudaStream_t hStream, unsigned int *flags);
cudaError_t cudaStreamGetFlags_ptsz(cudaStream_t hStream, unsigned int *flags) { return stream_get_flags(hStream, flags, 1); }

static cudaError_t stream_get_id(cudaStream_t h, unsigned long long *id, int ptsz)
{
    if (!sim_init())
        return ret(cudaErrorInsufficientDriver);
    pthread_mutex_lock(&g_lock);
    struct sim_stream *s = stream_get(h, ptsz);
    if (s && id)
        *id = s->id;
    pthread_mutex_unlock(&g_lock);
    return s ? cudaSuccess : ret(cudaErrorInvalidResourceHandle);
}

cudaError_t cudaStreamGetId(cudaStream_t hStream, unsigned long long *streamId) { return stream_get_id(hStream, streamId, 0); }
cudaError_t cudaStreamGetId_ptsz(cudaStream_t hStream, unsigned long long *streamId);
cudaError_t cudaStreamGetId_ptsz(cudaStream_t hStream, unsigned long long *streamId) { return stream_get_id(hStream, streamId, 1); }

cudaError_t cudaStreamGetPriority(cudaStream_t hStream, int *priority)
{
    if (!sim_init())
        return ret(cudaErrorInsufficientDriver);
    pthread_mutex_lock(&g_lock);
    struct sim_stream *s = stream_get(hStream, 0);
    if (s && priority)
        *priority = s->priority;
    pthread_mutex_unlock(&g_lock);
    return s ? cudaSuccess : ret(cudaErrorInvalidResourceHandle);
}

cudaError_t cudaStreamGetDevice(cudaStream_t hStream, int *device)
{
    if (!sim_init())
        return ret(cudaErrorInsufficientDriver);
    pthread_mutex_lock(&g_lock);
    struct sim_stream *s = stream_get(hStream, 0);
    if (s && device)
        *device = s->device;
    pthread_mutex_unlock(&g_lock);
    return s ? cudaSuccess : ret(cudaErrorInvalidResourceHandle);
}

/* ---- events ------------------------------------------------------------------ */

cudaError_t cudaEventCreateWithFlags(cudaEvent_t *event, unsigned int flags)
{
    if (!sim_init())
        return ret(cudaErrorInsufficientDriver);
    if (!event)
        return ret(cudaErrorInvalidValue);
    struct sim_event *e = calloc(1, sizeof(*e));
    if (!e)
        return ret(cudaErrorMemoryAllocation);
    e->id = atomic_fetch_add(&g_next_event_id, 1);
    e->flags = flags;
    e->device = t_device;
    *event = (cudaEvent_t)e;
    return cudaSuccess;
}

cudaError_t cudaEventCreate(cudaEvent_t *event) { return cudaEventCreateWithFlags(event, cudaEventDefault); }

cudaError_t cudaEventDestroy(cudaEvent_t event)
{
    if (!sim_init())
        return ret(cudaErrorInsufficientDriver);
    if (!event)
        return ret(cudaErrorInvalidResourceHandle);
    free(event);
    return cudaSuccess;
}

static cudaError_t event_record(cudaEvent_t event, cudaStream_t stream, int ptsz)
{
    if (!sim_init())
        return ret(cudaErrorInsufficientDriver);
    if (!event)
        return ret(cudaErrorInvalidResourceHandle);
    struct sim_event *e = (struct sim_event *)event;
    uint64_t t0 = now_ns();
    uint32_t corr = api_begin(ptsz ? CUPTI_RUNTIME_TRACE_CBID_cudaEventRecord_ptsz_v7000
                                   : CUPTI_RUNTIME_TRACE_CBID_cudaEventRecord_v3020);
    pthread_mutex_lock(&g_lock);
    struct sim_stream *s = stream_get(stream, ptsz);
    if (s) {
        uint64_t end;
        e->time = stream_enqueue(s, 0, &end);  /* a zero-length marker */
        e->recorded = 1;
        e->device = s->device;
    }
    pthread_mutex_unlock(&g_lock);
    if (!s)
        return ret(cudaErrorInvalidResourceHandle);
    report_api(ptsz ? CUPTI_RUNTIME_TRACE_CBID_cudaEventRecord_ptsz_v7000
                    : CUPTI_RUNTIME_TRACE_CBID_cudaEventRecord_v3020, corr, t0, cudaSuccess);
    return cudaSuccess;
}

cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream) { return event_record(event, stream, 0); }
cudaError_t cudaEventRecord_ptsz(cudaEvent_t event, cudaStream_t stream);
cudaError_t cudaEventRecord_ptsz(cudaEvent_t event, cudaStream_t stream) { return event_record(event, stream, 1); }
cudaError_t cudaEventRecordWithFlags(cudaEvent_t event, cudaStream_t stream, unsigned int flags) { return event_record(event, stream, 0); }
cudaError_t cudaEventRecordWithFlags_ptsz(cudaEvent_t event, cudaStream_t stream, unsigned int flags);
cudaError_t cudaEventRecordWithFlags_ptsz(cudaEvent_t event, cudaStream_t stream, unsigned int flags) { return event_record(event, stream, 1); }

cudaError_t cudaEventQuery(cudaEvent_t event)
{
    if (!sim_init())
        return ret(cudaErrorInsufficientDriver);
    if (!event)
        return ret(cudaErrorInvalidResourceHandle);
    const struct sim_event *e = (const struct sim_event *)event;
    return (!e->recorded || now_ns() >= e->time) ? cudaSuccess : cudaErrorNotReady;
}

cudaError_t cudaEventSynchronize(cudaEvent_t event)
{
    if (!sim_init())
        return ret(cudaErrorInsufficientDriver);
    if (!event)
        return ret(cudaErrorInvalidResourceHandle);
    const struct sim_event *e = (const struct sim_event *)event;
    uint64_t t0 = now_ns();
    uint32_t corr = api_begin(CUPTI_RUNTIME_TRACE_CBID_cudaEventSynchronize_v3020);
    if (e->recorded)
        sleep_until(e->time);
    uint64_t t1 = now_ns();
    report_sync(CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE,
                CUPTI_SYNCHRONIZATION_INVALID_VALUE, e->id, corr, t0, t1);
    report_api(CUPTI_RUNTIME_TRACE_CBID_cudaEventSynchronize_v3020, corr, t0, cudaSuccess);
    return cudaSuccess;
}

cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t start, cudaEvent_t end)
{
    if (!sim_init())
        return ret(cudaErrorInsufficientDriver);
    if (!ms || !start || !end)
        return ret(cudaErrorInvalidValue);
    const struct sim_event *a = (const struct sim_event *)start, *b = (const struct sim_event *)end;
    if (!a->recorded || !b->recorded || (a->flags & cudaEventDisableTiming) ||
        (b->flags & cudaEventDisableTiming))
        return ret(cudaErrorInvalidResourceHandle);
    uint64_t now = now_ns();
    if (now < a->time || now < b->time)
        return ret(cudaErrorNotReady);
    *ms = (float)(((double)b->time - (double)a->time) / 1e6);
    return cudaSuccess;
}

static cudaError_t stream_wait_event(cudaStream_t stream, cudaEvent_t event, int ptsz)
{
    if (!sim_init())
        return ret(cudaErrorInsufficientDriver);
    if (!event)
        return ret(cudaErrorInvalidResourceHandle);
    const struct sim_event *e = (const struct sim_event *)event;
    pthread_mutex_lock(&g_lock);
    struct sim_stream *s = stream_get(stream, ptsz);
    if (s && e->recorded)
        s->busy_until = max_u64(s->busy_until, e->time);
    uint32_t id = s ? s->id : 0;
    pthread_mutex_unlock(&g_lock);
    if (!s)
        return ret(cudaErrorInvalidResourceHandle);
    uint64_t t = now_ns();
    report_sync(CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_WAIT_EVENT, id, e->id, next_corr(), t, t);
    return cudaSuccess;
}

cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned int flags) { return stream_wait_event(stream, event, 0); }
cudaError_t cudaStreamWaitEvent_ptsz(cudaStream_t stream, cudaEvent_t event, unsigned int flags);
cudaError_t cudaStreamWaitEvent_ptsz(cudaStream_t stream, cudaEvent_t event, unsigned int flags) { return stream_wait_event(stream, event, 1); }

/* Host functions run on a helper thread when the stream reaches them. */
struct host_call { cudaHostFn_t fn; void *arg; uint64_t at; cudaStream_t stream; cudaStreamCallback_t cb; };

static void *host_call_thread(void *p)
{
    struct host_call *hc = p;
    sleep_until(hc->at);
    if (hc->fn)
        hc->fn(hc->arg);
    else
        hc->cb(hc->stream, cudaSuccess, hc->arg);
    free(hc);
    return NULL;
}

static cudaError_t enqueue_host_call(cudaStream_t stream, int ptsz, cudaHostFn_t fn,
                                     cudaStreamCallback_t cb, void *arg)
{
    if (!sim_init())
        return ret(cudaErrorInsufficientDriver);
    struct host_call *hc = calloc(1, sizeof(*hc));
    if (!hc)
        return ret(cudaErrorMemoryAllocation);
    hc->fn = fn;
    hc->cb = cb;
    hc->arg = arg;
    hc->stream = stream;
    pthread_mutex_lock(&g_lock);
    struct sim_stream *s = stream_get(stream, ptsz);
    uint64_t end = 0;
    if (s)
        hc->at = stream_enqueue(s, 0, &end);
    pthread_mutex_unlock(&g_lock);
    if (!s) {
        free(hc);
        return ret(cudaErrorInvalidResourceHandle);
    }
    pthread_t th;
    pthread_attr_t a;
    pthread_attr_init(&a);
    pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
    int rc = pthread_create(&th, &a, host_call_thread, hc);
    pthread_attr_destroy(&a);
    if (rc != 0) {
        free(hc);
        return ret(cudaErrorMemoryAllocation);
    }
    return cudaSuccess;
}

cudaError_t cudaLaunchHostFunc(cudaStream_t stream, cudaHostFn_t fn, void *userData)
{
    return enqueue_host_call(stream, 0, fn, NULL, userData);
}
cudaError_t cudaLaunchHostFunc_ptsz(cudaStream_t stream, cudaHostFn_t fn, void *userData);
cudaError_t cudaLaunchHostFunc_ptsz(cudaStream_t stream, cudaHostFn_t fn, void *userData)
{
    return enqueue_host_call(stream, 1, fn, NULL, userData);
}
cudaError_t cudaStreamAddCallback(cudaStream_t stream, cudaStreamCallback_t callback, void *userData, unsigned int flags)
{
    return enqueue_host_call(stream, 0, NULL, callback, userData);
}

/* ---- memory ------------------------------------------------------------------ */

static cudaError_t alloc_range(void **p, size_t size, enum range_kind kind, unsigned flags)
{
    if (!sim_init())
        return ret(cudaErrorInsufficientDriver);
    if (!p)
        return ret(cudaErrorInvalidValue);
    if (cfg.ndev == 0)
        return ret(cudaErrorNoDevice);
    void *m = NULL;
    if (posix_memalign(&m, 256, size ? size : 1) != 0)
        return ret(cudaErrorMemoryAllocation);
    pthread_mutex_lock(&g_lock);
    int rc = range_add(m, size, kind, flags);
    if (rc == 0 && kind == RANGE_DEVICE)
        g_mem_used[t_device] += size;
    pthread_mutex_unlock(&g_lock);
    if (rc != 0) {
        free(m);
        return ret(cudaErrorMemoryAllocation);
    }
    *p = m;
    return cudaSuccess;
}

static cudaError_t free_range(void *p, enum range_kind kind)
{
    if (!sim_init())
        return ret(cudaErrorInsufficientDriver);
    if (!p)
        return cudaSuccess;
    pthread_mutex_lock(&g_lock);
    struct sim_range *r = range_find(p);
    int ok = r && r->base == (uintptr_t)p &&
             (r->kind == kind || (kind == RANGE_DEVICE && r->kind == RANGE_MANAGED));
    if (ok) {
        if (r->kind == RANGE_DEVICE)
            g_mem_used[r->device] -= r->len;
        range_del(r);
    }
    pthread_mutex_unlock(&g_lock);
    if (!ok)
        return ret(kind == RANGE_DEVICE ? cudaErrorInvalidValue : cudaErrorInvalidValue);
    free(p);
    return cudaSuccess;
}

cudaError_t cudaMalloc(void **devPtr, size_t size)
{
    uint64_t t0 = now_ns();
    cudaError_t e = alloc_range(devPtr, size, RANGE_DEVICE, 0);
    report_api(CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020, next_corr(), t0, e);
    return e;
}

cudaError_t cudaMallocManaged(void **devPtr, size_t size, unsigned int flags)
{
    return alloc_range(devPtr, size, RANGE_MANAGED, flags);
}

cudaError_t cudaMallocAsync(void **devPtr, size_t size, cudaStream_t hStream)
{
    return alloc_range(devPtr, size, RANGE_DEVICE, 0);
}

cudaError_t cudaFreeAsync(void *devPtr, cudaStream_t hStream) { return free_range(devPtr, RANGE_DEVICE); }

cudaError_t cudaMallocPitch(void **devPtr, size_t *pitch, size_t width, size_t height)
{
    if (!pitch)
        return ret(cudaErrorInvalidValue);
    *pitch = (width + 511) & ~(size_t)511;
    return alloc_range(devPtr, *pitch * height, RANGE_DEVICE, 0);
}

cudaError_t cudaFree(void *devPtr)
{
    uint64_t t0 = now_ns();
    cudaError_t e = free_range(devPtr, RANGE_DEVICE);
    report_api(CUPTI_RUNTIME_TRACE_CBID_cudaFree_v3020, next_corr(), t0, e);
    return e;
}

cudaError_t cudaHostAlloc(void **pHost, size_t size, unsigned int flags)
{
    uint64_t t0 = now_ns();
    cudaError_t e = alloc_range(pHost, size, RANGE_PINNED, flags);
    report_api(CUPTI_RUNTIME_TRACE_CBID_cudaHostAlloc_v3020, next_corr(), t0, e);
    return e;
}

cudaError_t cudaMallocHost(void **ptr, size_t size)
{
    uint64_t t0 = now_ns();
    cudaError_t e = alloc_range(ptr, size, RANGE_PINNED, 0);
    report_api(CUPTI_RUNTIME_TRACE_CBID_cudaMallocHost_v3020, next_corr(), t0, e);
    return e;
}

cudaError_t cudaFreeHost(void *ptr)
{
    uint64_t t0 = now_ns();
    cudaError_t e = free_range(ptr, RANGE_PINNED);
    report_api(CUPTI_RUNTIME_TRACE_CBID_cudaFreeHost_v3020, next_corr(), t0, e);
    return e;
}

cudaError_t cudaHostRegister(void *ptr, size_t size, unsigned int flags)
{
    if (!sim_init())
        return ret(cudaErrorInsufficientDriver);
    uint64_t t0 = now_ns();
    cudaError_t e = (cudaError_t)rt_host_register(ptr, size, flags);
    report_api(CUPTI_RUNTIME_TRACE_CBID_cudaHostRegister_v4000, next_corr(), t0, e);
    return ret(e);
}

cudaError_t cudaHostUnregister(void *ptr)
{
    if (!sim_init())
        return ret(cudaErrorInsufficientDriver);
    uint64_t t0 = now_ns();
    cudaError_t e = (cudaError_t)rt_host_unregister(ptr);
    report_api(CUPTI_RUNTIME_TRACE_CBID_cudaHostUnregister_v4000, next_corr(), t0, e);
    return ret(e);
}

/* The driver's host-memory calls (sim_cuda.c): the same registry, no
 * runtime API record. */
static int rt_host_alloc(void **p, size_t bytes, unsigned flags)
{
    return alloc_range(p, bytes, RANGE_PINNED, flags);
}

static int rt_host_free(void *p) { return free_range(p, RANGE_PINNED); }

static int rt_host_register(void *ptr, size_t size, unsigned flags)
{
    if (!ptr || size == 0)
        return cudaErrorInvalidValue;
    pthread_mutex_lock(&g_lock);
    int e = cudaSuccess;
    if (range_find(ptr) || range_find((const char *)ptr + size - 1))
        e = cudaErrorHostMemoryAlreadyRegistered;
    else if (range_add(ptr, size, RANGE_REGISTERED, flags) != 0)
        e = cudaErrorMemoryAllocation;
    pthread_mutex_unlock(&g_lock);
    return e;
}

static int rt_host_unregister(void *ptr)
{
    pthread_mutex_lock(&g_lock);
    struct sim_range *r = range_find(ptr);
    int e = cudaSuccess;
    if (r && r->kind == RANGE_REGISTERED && r->base == (uintptr_t)ptr)
        range_del(r);
    else
        e = cudaErrorHostMemoryNotRegistered;
    pthread_mutex_unlock(&g_lock);
    return e;
}

cudaError_t cudaHostGetDevicePointer(void **pDevice, void *pHost, unsigned int flags)
{
    if (!sim_init())
        return ret(cudaErrorInsufficientDriver);
    if (!pDevice)
        return ret(cudaErrorInvalidValue);
    pthread_mutex_lock(&g_lock);
    const struct sim_range *r = range_find(pHost);
    int ok = r && (r->kind == RANGE_PINNED || r->kind == RANGE_REGISTERED);
    pthread_mutex_unlock(&g_lock);
    if (!ok)
        return ret(cudaErrorInvalidValue);
    *pDevice = pHost;
    return cudaSuccess;
}

cudaError_t cudaHostGetFlags(unsigned int *pFlags, void *pHost)
{
    if (!sim_init())
        return ret(cudaErrorInsufficientDriver);
    if (!pFlags)
        return ret(cudaErrorInvalidValue);
    pthread_mutex_lock(&g_lock);
    const struct sim_range *r = range_find(pHost);
    int ok = r && (r->kind == RANGE_PINNED || r->kind == RANGE_REGISTERED);
    if (ok)
        *pFlags = r->flags;
    pthread_mutex_unlock(&g_lock);
    return ok ? cudaSuccess : ret(cudaErrorInvalidValue);
}

cudaError_t cudaPointerGetAttributes(struct cudaPointerAttributes *attributes, const void *ptr)
{
    if (!sim_init())
        return ret(cudaErrorInsufficientDriver);
    if (!attributes)
        return ret(cudaErrorInvalidValue);
    memset(attributes, 0, sizeof(*attributes));
    pthread_mutex_lock(&g_lock);
    const struct sim_range *r = range_find(ptr);
    if (!r) {
        attributes->type = cudaMemoryTypeUnregistered;
        attributes->device = -2;
        attributes->hostPointer = (void *)ptr;
    } else {
        attributes->device = r->device;
        attributes->type = r->kind == RANGE_DEVICE ? cudaMemoryTypeDevice
                         : r->kind == RANGE_MANAGED ? cudaMemoryTypeManaged : cudaMemoryTypeHost;
        attributes->devicePointer = (void *)ptr;
        attributes->hostPointer = r->kind == RANGE_DEVICE ? NULL : (void *)ptr;
    }
    pthread_mutex_unlock(&g_lock);
    return cudaSuccess;
}

/* ---- copies and memsets -------------------------------------------------------- */

static int is_device_kind(uint8_t k)
{
    return k == CUPTI_ACTIVITY_MEMORY_KIND_DEVICE || k == CUPTI_ACTIVITY_MEMORY_KIND_MANAGED;
}

/* The host side of a copy: rows x width bytes, pitched. */
static void move_bytes(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width,
                       size_t rows)
{
    if (rows <= 1 || (dpitch == width && spitch == width))
        memmove(dst, src, width * rows);
    else
        for (size_t i = 0; i < rows; i++)
            memmove((char *)dst + i * dpitch, (const char *)src + i * spitch, width);
}

/* One copy (rows x width, pitched) on a stream.  sync: the cudaMemcpy flavour. */
static cudaError_t do_copy(void *dst, size_t dpitch, const void *src, size_t spitch,
                           size_t width, size_t rows, enum cudaMemcpyKind kind,
                           cudaStream_t stream, int ptsz, int sync, uint32_t cbid)
{
    if (!sim_init())
        return ret(cudaErrorInsufficientDriver);
    uint64_t t0 = now_ns();
    uint32_t corr = api_begin(cbid);
    uint64_t bytes = (uint64_t)width * rows;
    cudaError_t e = cudaSuccess;
    if ((unsigned)kind > cudaMemcpyDefault)
        e = cudaErrorInvalidMemcpyDirection;
    else if (bytes && (!dst || !src))
        e = cudaErrorInvalidValue;
    else if (rows > 1 && (dpitch < width || spitch < width))
        e = cudaErrorInvalidPitchValue;
    if (e != cudaSuccess) {
        report_api(cbid, corr, t0, e);
        return ret(e);
    }
    uint8_t sk = mem_kind(src), dk = mem_kind(dst);
    int src_dev = is_device_kind(sk), dst_dev = is_device_kind(dk);
    if (kind != cudaMemcpyDefault) {   /* trust the caller's direction, as the runtime does */
        src_dev = kind == cudaMemcpyDeviceToHost || kind == cudaMemcpyDeviceToDevice;
        dst_dev = kind == cudaMemcpyHostToDevice || kind == cudaMemcpyDeviceToDevice;
        if (src_dev && !is_device_kind(sk))
            sk = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
        if (dst_dev && !is_device_kind(dk))
            dk = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
        if (!src_dev && is_device_kind(sk))
            sk = CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE;
        if (!dst_dev && is_device_kind(dk))
            dk = CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE;
    }

    if (!src_dev && !dst_dev) {       /* host to host: the CPU copies, no device work */
        move_bytes(dst, dpitch, src, spitch, width, rows);
        report_api(cbid, corr, t0, e);
        return cudaSuccess;
    }

    uint8_t ck;
    double gbps;
    int host_waits;                   /* the host blocks until the copy ends... */
    uint64_t in_flight = 0;           /* ...but for this much of it */
    if (!src_dev) {
        ck = CUPTI_ACTIVITY_MEMCPY_KIND_HTOD;
        int pageable = sk == CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE;
        gbps = pageable ? cfg.h2d_pageable_gbps : cfg.h2d_pinned_gbps;
        host_waits = sync || pageable;
        /* NVIDIA's API synchronisation behaviour: from pageable memory (sync
         * or async call) the host returns once the buffer has been copied to
         * staging memory, the DMA of the last staged part still running */
        if (pageable)
            in_flight = copy_ns(bytes < cfg.staging_bytes ? bytes : cfg.staging_bytes, gbps);
    } else if (!dst_dev) {
        ck = CUPTI_ACTIVITY_MEMCPY_KIND_DTOH;
        int pageable = dk == CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE;
        gbps = pageable ? cfg.d2h_pageable_gbps : cfg.d2h_gbps;
        host_waits = sync || pageable;
    } else {
        ck = CUPTI_ACTIVITY_MEMCPY_KIND_DTOD;
        gbps = cfg.d2d_gbps;
        host_waits = 0;
    }

    struct simcuda_op op = { 0 };
    if (!queue_op(stream, ptsz, copy_ns(bytes, gbps), &op)) {
        report_api(cbid, corr, t0, cudaErrorInvalidResourceHandle);
        return ret(cudaErrorInvalidResourceHandle);
    }
    /* Really move the bytes, now that the transfer has its place on the
     * device timeline: the program sees correct data whenever it looks, and
     * the host's memmove runs during the simulated transfer instead of
     * delaying its start (a loaded machine would otherwise stretch every
     * blocking copy by the time the CPU took to move the bytes). */
    if (cfg.copy_data)
        move_bytes(dst, dpitch, src, spitch, width, rows);
    op.kind = SIMCUDA_OP_MEMCPY;
    op.correlation_id = corr;
    op.bytes = bytes;
    op.copy_kind = ck;
    op.src_kind = sk;
    op.dst_kind = dk;
    op.async = !sync;
    vlog("memcpy %s %llu B %s->%s stream %u start %+.3f ms dur %.3f ms%s",
         ck == CUPTI_ACTIVITY_MEMCPY_KIND_HTOD ? "HtoD" : ck == CUPTI_ACTIVITY_MEMCPY_KIND_DTOH ? "DtoH" : "DtoD",
         (unsigned long long)bytes,
         sk == CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE ? "pageable" : sk == CUPTI_ACTIVITY_MEMORY_KIND_PINNED ? "pinned" : "device",
         dk == CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE ? "pageable" : dk == CUPTI_ACTIVITY_MEMORY_KIND_PINNED ? "pinned" : "device",
         op.stream_id, ((double)op.start - (double)t0) / 1e6, (double)(op.end - op.start) / 1e6,
         host_waits ? " (host waits)" : "");
    report(&op);
    if (host_waits) {
        /* RATIONALE: the API record says when the call returned in
         * simulated time (the instant slept to), so tests can tell
         * "returned after staging" from "after the copy" under any load */
        const uint64_t back = max_u64(op.end - in_flight, op.start);
        sleep_until(back);
        report_api_until(cbid, corr, t0, back, cudaSuccess);
    } else {
        report_api(cbid, corr, t0, cudaSuccess);
    }
    return cudaSuccess;
}

cudaError_t cudaMemcpy(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind)
{
    return do_copy(dst, count, src, count, count, 1, kind, NULL, 0, 1,
                   CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_v3020);
}
cudaError_t cudaMemcpy_ptds(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind);
cudaError_t cudaMemcpy_ptds(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind)
{
    return do_copy(dst, count, src, count, count, 1, kind, NULL, 1, 1,
                   CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_ptds_v7000);
}

cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind, cudaStream_t stream)
{
    return do_copy(dst, count, src, count, count, 1, kind, stream, 0, 0,
                   CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020);
}
cudaError_t cudaMemcpyAsync_ptsz(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind, cudaStream_t stream);
cudaError_t cudaMemcpyAsync_ptsz(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind, cudaStream_t stream)
{
    return do_copy(dst, count, src, count, count, 1, kind, stream, 1, 0,
                   CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_ptsz_v7000);
}

cudaError_t cudaMemcpy2D(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width,
                         size_t height, enum cudaMemcpyKind kind)
{
    return do_copy(dst, dpitch, src, spitch, width, height, kind, NULL, 0, 1,
                   CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy2D_v3020);
}
cudaError_t cudaMemcpy2D_ptds(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width,
                              size_t height, enum cudaMemcpyKind kind);
cudaError_t cudaMemcpy2D_ptds(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width,
                              size_t height, enum cudaMemcpyKind kind)
{
    return do_copy(dst, dpitch, src, spitch, width, height, kind, NULL, 1, 1,
                   CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy2D_ptds_v7000);
}

cudaError_t cudaMemcpy2DAsync(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width,
                              size_t height, enum cudaMemcpyKind kind, cudaStream_t stream)
{
    return do_copy(dst, dpitch, src, spitch, width, height, kind, stream, 0, 0,
                   CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy2DAsync_v3020);
}
cudaError_t cudaMemcpy2DAsync_ptsz(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width,
                                   size_t height, enum cudaMemcpyKind kind, cudaStream_t stream);
cudaError_t cudaMemcpy2DAsync_ptsz(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width,
                                   size_t height, enum cudaMemcpyKind kind, cudaStream_t stream)
{
    return do_copy(dst, dpitch, src, spitch, width, height, kind, stream, 1, 0,
                   CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy2DAsync_ptsz_v7000);
}

static cudaError_t do_memset(void *p, int value, size_t count, cudaStream_t stream, int ptsz,
                             int async, uint32_t cbid)
{
    if (!sim_init())
        return ret(cudaErrorInsufficientDriver);
    uint64_t t0 = now_ns();
    uint32_t corr = api_begin(cbid);
    uint8_t mk = mem_kind(p);
    if (count && (!p || mk == CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE)) {
        report_api(cbid, corr, t0, cudaErrorInvalidValue);
        return ret(cudaErrorInvalidValue);
    }
    struct simcuda_op op = { 0 };
    if (!queue_op(stream, ptsz, copy_ns(count, cfg.memset_gbps), &op)) {
        report_api(cbid, corr, t0, cudaErrorInvalidResourceHandle);
        return ret(cudaErrorInvalidResourceHandle);
    }
    memset(p, value, count);   /* after the enqueue, as do_copy moves its bytes */
    op.kind = SIMCUDA_OP_MEMSET;
    op.correlation_id = corr;
    op.bytes = count;
    op.memset_value = (uint32_t)value;
    op.dst_kind = mk;
    op.async = (uint8_t)async;
    vlog("memset %zu B stream %u start %+.3f ms", count, op.stream_id, ((double)op.start - (double)t0) / 1e6);
    report(&op);
    if (mk == CUPTI_ACTIVITY_MEMORY_KIND_PINNED && !async)
        sleep_until(op.end);   /* memset of pinned host memory is synchronous */
    report_api(cbid, corr, t0, cudaSuccess);
    return cudaSuccess;
}

cudaError_t cudaMemset(void *devPtr, int value, size_t count)
{
    return do_memset(devPtr, value, count, NULL, 0, 0, CUPTI_RUNTIME_TRACE_CBID_cudaMemset_v3020);
}
cudaError_t cudaMemset_ptds(void *devPtr, int value, size_t count);
cudaError_t cudaMemset_ptds(void *devPtr, int value, size_t count)
{
    return do_memset(devPtr, value, count, NULL, 1, 0, CUPTI_RUNTIME_TRACE_CBID_cudaMemset_ptds_v7000);
}
cudaError_t cudaMemsetAsync(void *devPtr, int value, size_t count, cudaStream_t stream)
{
    return do_memset(devPtr, value, count, stream, 0, 1, CUPTI_RUNTIME_TRACE_CBID_cudaMemsetAsync_v3020);
}
cudaError_t cudaMemsetAsync_ptsz(void *devPtr, int value, size_t count, cudaStream_t stream);
cudaError_t cudaMemsetAsync_ptsz(void *devPtr, int value, size_t count, cudaStream_t stream)
{
    return do_memset(devPtr, value, count, stream, 1, 1, CUPTI_RUNTIME_TRACE_CBID_cudaMemsetAsync_ptsz_v7000);
}

/* ---- peer copies, for several devices ------------------------------------------ */

/* The peer copy rate between a and b (either way) from SIMCUDA_P2P_GBPS:
 * "*=50,0-1=10", GB/s. */
static double p2p_gbps(int a, int b)
{
    char buf[256];
    double def = 50;
    snprintf(buf, sizeof(buf), "%s", cfg.p2p_rules);
    for (char *save = NULL, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(t, '=');
        int x, y;
        if (!eq || strtod(eq + 1, NULL) <= 0)
            continue;
        if (t[0] == '*')
            def = strtod(eq + 1, NULL);
        else if (sscanf(t, "%d-%d", &x, &y) == 2 && ((x == a && y == b) || (x == b && y == a)))
            return strtod(eq + 1, NULL);
    }
    return def;
}

static cudaError_t peer_copy(void *dst, int dst_dev, const void *src, int src_dev, size_t count,
                             cudaStream_t stream, int sync, uint32_t cbid)
{
    if (!sim_init())
        return ret(cudaErrorInsufficientDriver);
    if (dst_dev < 0 || dst_dev >= cfg.ndev || src_dev < 0 || src_dev >= cfg.ndev)
        return ret(cudaErrorInvalidDevice);
    if (count && (!dst || !src))
        return ret(cudaErrorInvalidValue);
    uint64_t t0 = now_ns();
    uint32_t corr = api_begin(cbid);
    struct simcuda_op op = { 0 };
    if (!queue_op(stream, 0, copy_ns(count, p2p_gbps(src_dev, dst_dev)), &op)) {
        report_api(cbid, corr, t0, cudaErrorInvalidResourceHandle);
        return ret(cudaErrorInvalidResourceHandle);
    }
    if (cfg.copy_data)
        memmove(dst, src, count);
    op.kind = SIMCUDA_OP_MEMCPY;
    op.correlation_id = corr;
    op.bytes = count;
    op.copy_kind = CUPTI_ACTIVITY_MEMCPY_KIND_PTOP;
    op.src_kind = op.dst_kind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
    op.async = !sync;
    report(&op);
    if (sync)
        sleep_until(op.end);
    report_api(cbid, corr, t0, cudaSuccess);
    return cudaSuccess;
}

cudaError_t cudaMemcpyPeer(void *dst, int dstDevice, const void *src, int srcDevice, size_t count)
{
    return peer_copy(dst, dstDevice, src, srcDevice, count, NULL, 1,
                     CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyPeer_v4000);
}

cudaError_t cudaMemcpyPeerAsync(void *dst, int dstDevice, const void *src, int srcDevice, size_t count,
                                cudaStream_t stream)
{
    return peer_copy(dst, dstDevice, src, srcDevice, count, stream, 0,
                     CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyPeerAsync_v4000);
}

cudaError_t cudaDeviceEnablePeerAccess(int peerDevice, unsigned int flags)
{
    if (!sim_init())
        return ret(cudaErrorInsufficientDriver);
    if (peerDevice < 0 || peerDevice >= cfg.ndev || peerDevice == t_device)
        return ret(cudaErrorInvalidDevice);
    return cfg.p2p ? cudaSuccess : ret(cudaErrorPeerAccessUnsupported);
}

cudaError_t cudaDeviceDisablePeerAccess(int peerDevice)
{
    if (!sim_init())
        return ret(cudaErrorInsufficientDriver);
    return cfg.p2p ? cudaSuccess : ret(cudaErrorPeerAccessNotEnabled);
}

/* The bus id matches cudaDevAttrPciBusId: bus 0x10 + device. */
cudaError_t cudaDeviceGetPCIBusId(char *pciBusId, int len, int device)
{
    if (!sim_init())
        return ret(cudaErrorInsufficientDriver);
    if (!pciBusId || len < 13)
        return ret(cudaErrorInvalidValue);
    if (device < 0 || device >= cfg.ndev)
        return ret(cudaErrorInvalidDevice);
    snprintf(pciBusId, (size_t)len, "0000:%02X:00.0", 0x10 + device);
    return cudaSuccess;
}

/* ---- device work for the stand-in libraries (cuBLAS, NCCL) ----------------------- */

/* The stream of device dev (NULL: its legacy stream); the lock is held. */
static struct sim_stream *stream_of(void *stream, int dev)
{
    const int saved = t_device;
    t_device = dev;
    struct sim_stream *s = stream_get((cudaStream_t)stream, 0);
    t_device = saved;
    return s;
}

static int rt_enqueue(void *stream, int dev, uint64_t not_before, uint64_t dur_ns, const char *name,
                      uint64_t *start, uint64_t *end)
{
    if (!sim_init())
        return cudaErrorInsufficientDriver;
    if (dev < 0 || dev >= cfg.ndev)
        return cudaErrorInvalidDevice;
    struct simcuda_op op = { 0 };
    pthread_mutex_lock(&g_lock);
    struct sim_stream *s = stream_of(stream, dev);
    if (s) {
        op.start = max_u64(max_u64(now_ns(), stream_ready(s)), not_before);
        op.end = s->busy_until = op.start + dur_ns;
        op.stream_id = s->id;
        op.device = (uint32_t)s->device;
    }
    pthread_mutex_unlock(&g_lock);
    if (!s)
        return cudaErrorInvalidResourceHandle;
    op.kind = SIMCUDA_OP_KERNEL;
    op.correlation_id = next_corr();
    op.name = name;
    op.grid[0] = op.grid[1] = op.grid[2] = op.block[0] = op.block[1] = op.block[2] = 1;
    vlog("work %s stream %u dev %d start %+.3f ms dur %.3f ms", name, op.stream_id, dev,
         ((double)op.start - (double)now_ns()) / 1e6, (double)dur_ns / 1e6);
    report(&op);
    if (start)
        *start = op.start;
    if (end)
        *end = op.end;
    return cudaSuccess;
}

static uint64_t rt_ready_at(void *stream, int dev)
{
    if (!sim_init() || dev < 0 || dev >= cfg.ndev)
        return now_ns();
    pthread_mutex_lock(&g_lock);
    struct sim_stream *s = stream_of(stream, dev);
    const uint64_t r = max_u64(now_ns(), s ? stream_ready(s) : 0);
    pthread_mutex_unlock(&g_lock);
    return r;
}

/* ---- errors -------------------------------------------------------------------- */

cudaError_t cudaGetLastError(void)
{
    cudaError_t e = t_last_error;
    t_last_error = cudaSuccess;
    return e;
}

cudaError_t cudaPeekAtLastError(void) { return t_last_error; }

const char *cudaGetErrorName(cudaError_t error)
{
    for (size_t i = 0; i < sizeof(sim_err_names) / sizeof(sim_err_names[0]); i++)
        if (sim_err_names[i].code == (int)error)
            return sim_err_names[i].name;
    return "cudaErrorUnknown";
}

const char *cudaGetErrorString(cudaError_t error)
{
    static const struct { cudaError_t code; const char *text; } texts[] = {
        { cudaSuccess, "no error" },
        { cudaErrorInvalidValue, "invalid argument" },
        { cudaErrorMemoryAllocation, "out of memory" },
        { cudaErrorInitializationError, "initialization error" },
        { cudaErrorCudartUnloading, "driver shutting down" },
        { cudaErrorInvalidConfiguration, "invalid configuration argument" },
        { cudaErrorInvalidPitchValue, "invalid pitch argument" },
        { cudaErrorInvalidSymbol, "invalid device symbol" },
        { cudaErrorInvalidHostPointer, "invalid host pointer" },
        { cudaErrorInvalidDevicePointer, "invalid device pointer" },
        { cudaErrorInvalidMemcpyDirection, "invalid copy direction for memcpy" },
        { cudaErrorInsufficientDriver, "CUDA driver version is insufficient for CUDA runtime version" },
        { cudaErrorMissingConfiguration, "__global__ function call is not configured" },
        { cudaErrorInvalidDeviceFunction, "invalid device function" },
        { cudaErrorNoDevice, "no CUDA-capable device is detected" },
        { cudaErrorInvalidDevice, "invalid device ordinal" },
        { cudaErrorStartupFailure, "device kernel image is invalid" },
        { cudaErrorInvalidKernelImage, "device kernel image is invalid" },
        { cudaErrorDeviceUninitialized, "invalid device context" },
        { cudaErrorInvalidResourceHandle, "invalid resource handle" },
        { cudaErrorNotReady, "device not ready" },
        { cudaErrorIllegalAddress, "an illegal memory access was encountered" },
        { cudaErrorLaunchOutOfResources, "too many resources requested for launch" },
        { cudaErrorHostMemoryAlreadyRegistered, "part or all of the requested memory range is already mapped" },
        { cudaErrorHostMemoryNotRegistered, "pointer does not correspond to a registered memory region" },
        { cudaErrorLaunchFailure, "unspecified launch failure" },
        { cudaErrorNotPermitted, "operation not permitted" },
        { cudaErrorNotSupported, "operation not supported" },
        { cudaErrorUnknown, "unknown error" },
    };
    for (size_t i = 0; i < sizeof(texts) / sizeof(texts[0]); i++)
        if (texts[i].code == error)
            return texts[i].text;
    for (size_t i = 0; i < sizeof(sim_err_names) / sizeof(sim_err_names[0]); i++)
        if (sim_err_names[i].code == (int)error)
            return sim_err_names[i].name;
    return "unrecognized error code";
}
