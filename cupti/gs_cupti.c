/* gs_cupti.c — the CUPTI source: GPU activity through CUPTI.
 *
 * Responsible for: registering its operations with the collector
 * (sink/gs_sink.h, the only collector header it includes); checking that a
 * CUDA driver answers before anything of libcupti is loaded or called;
 * finding and loading libcupti at run time (dlopen; nothing links it);
 * starting collection once per process image — through the driver's
 * injection entry point InitializeInjection (CUDA_INJECTION64_PATH, set by
 * `gpustarve run`) or, for a program started without it, at the first CUDA
 * call the hooks see — with our clock as CUPTI's
 * (cuptiActivityRegisterTimestampCallback); lending CUPTI activity buffers
 * from a capped pool; queueing completed buffers for the writer thread,
 * which decodes them (gs_cupti_decode) straight into its frames under tid 0;
 * flushing at exit, _exit, fatal signals, exec and before fork; turning
 * CUPTI's dropped-record count into gpu_drops records; and, when there is
 * no driver, CUPTI is missing, of the wrong version, or held by another
 * profiler, one warning line and note record (gs_sink_warn) and a run that
 * goes on with the CUDA hooks only.
 *
 * Must never: end or block the program (errors are logged and returned, see
 * CUPTI_CALL), hold a lock of ours across cuptiActivityFlushAll or
 * cuptiActivityGetNumDroppedRecords (Kineto documents the deadlock), decode
 * or allocate in bufferCompleted (it only queues), call CUPTI in a forked
 * child of the process that started it, or touch libcupti before the driver
 * answered.
 */
#include <cupti.h>

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "gs_cupti.h"
#include "gs_sink.h"

/* RATIONALE: 4 MiB per buffer holds ~20k kernel records (about 200 bytes
 * each), many flush periods of a busy training loop, while a pool of 32
 * (GPUSTARVE_CUPTI_BUFFERS) caps what CUPTI can make us hold at 128 MiB —
 * mapped on first use and reused, so a quiet run touches one or two. */
#define GS_CUPTI_BUF_BYTES (4u << 20)
#define GS_CUPTI_BUFS_DEFAULT 32u
#define GS_CUPTI_BUFS_MAX 256u
/* RATIONALE: CUPTI delivers a partly filled buffer only when flushed; a
 * period of 1 s bounds what a SIGKILL can lose at negligible cost. */
#define GS_CUPTI_FLUSH_PERIOD_MS 1000u

/* ---- the libcupti functions we use ---------------------------------------- */

#define GS_CUPTI_FNS(X)                                                                   \
    X(cuptiGetVersion, (uint32_t *))                                                      \
    X(cuptiGetResultString, (CUptiResult, const char **))                                 \
    X(cuptiSubscribe, (CUpti_SubscriberHandle *, CUpti_CallbackFunc, void *))             \
    X(cuptiUnsubscribe, (CUpti_SubscriberHandle))                                         \
    X(cuptiEnableCallback, (uint32_t, CUpti_SubscriberHandle, CUpti_CallbackDomain,       \
                            CUpti_CallbackId))                                            \
    X(cuptiActivityRegisterCallbacks,                                                     \
      (CUpti_BuffersCallbackRequestFunc, CUpti_BuffersCallbackCompleteFunc))              \
    X(cuptiActivityRegisterTimestampCallback, (CUpti_TimestampCallbackFunc))              \
    X(cuptiActivityEnable, (CUpti_ActivityKind))                                          \
    X(cuptiActivityDisable, (CUpti_ActivityKind))                                         \
    X(cuptiActivityFlushAll, (uint32_t))                                                  \
    X(cuptiActivityGetNextRecord, (uint8_t *, size_t, CUpti_Activity **))                 \
    X(cuptiActivityGetNumDroppedRecords, (CUcontext, uint32_t, size_t *))

typedef struct cupti_fns {
#define GS_X_PTR(name, args) CUptiResult(CUPTIAPI *name) args;
    GS_CUPTI_FNS(GS_X_PTR)
#undef GS_X_PTR
    CUptiResult(CUPTIAPI *cuptiActivityFlushPeriod)(uint32_t); /* optional */
} cupti_fns;

static cupti_fns C;

/* ---- state ------------------------------------------------------------------- */

enum { ST_IDLE = 0, ST_ON = 1, ST_OFF = 2 };

static _Atomic int g_state;
static pid_t g_pid;                 /* the process image CUPTI serves */
static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static CUpti_SubscriberHandle g_sub;
static char g_lib[PATH_MAX];        /* the libcupti we loaded */
static char g_err[256];             /* last failed CUPTI call, for the note */
static _Atomic int g_atexit_done;
static _Atomic uint64_t g_dropped;  /* CUPTI's dropped records, summed */
static uint64_t g_rep_dropped;      /* writer: last gpu_drops written */
static _Atomic int g_flush_req, g_flush_done;

/* Log a failed CUPTI call (into g_err, for the note a failure leaves) and
 * evaluate to its status. Never exits: the samples' CUPTI_API_CALL does, and
 * that would end someone's training run. */
#define CUPTI_CALL(call) cupti_check((call), #call)

static CUptiResult cupti_check(CUptiResult r, const char *what)
{
    if (r != CUPTI_SUCCESS) {
        const char *s = NULL;
        if (!C.cuptiGetResultString || C.cuptiGetResultString(r, &s) != CUPTI_SUCCESS || !s)
            s = "unknown error";
        const char *paren = strchr(what, '(');
        int n = paren ? (int)(paren - what) : (int)strlen(what);
        snprintf(g_err, sizeof g_err, "%.*s: %s (%d)", n, what, s, (int)r);
    }
    return r;
}

/* ---- one warning, one note ------------------------------------------------------- */

static void cupti_give_up(enum gs_note_code code, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void cupti_give_up(enum gs_note_code code, const char *fmt, ...)
{
    char text[768];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    if (n >= 0 && (size_t)n < sizeof text)
        snprintf(text + n, sizeof text - (size_t)n, "; recording CUDA calls only");
    atomic_store(&g_state, ST_OFF);
    gs_sink_warn(code, text);
}

/* ---- finding libcupti ------------------------------------------------------------------ */

static int find_cudart(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    const char *name = info->dlpi_name;
    const char *base = name ? strrchr(name, '/') : NULL;
    if (base && strncmp(base + 1, "libcudart", 9) == 0) {
        snprintf((char *)arg, PATH_MAX, "%s", name);
        return 1;
    }
    return 0;
}

typedef struct tried {
    char text[512];
    size_t len;
} tried;

static void *try_open(tried *t, const char *path)
{
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (h) {
        /* the path we really got, for messages */
        struct link_map *lm = NULL;
        if (dlinfo(h, RTLD_DI_LINKMAP, &lm) == 0 && lm && lm->l_name && lm->l_name[0])
            snprintf(g_lib, sizeof g_lib, "%s", lm->l_name);
        else
            snprintf(g_lib, sizeof g_lib, "%s", path);
        return h;
    }
    if (t->len < sizeof t->text - 2) {
        int n = snprintf(t->text + t->len, sizeof t->text - t->len, "%s%s", t->len ? ", " : "",
                         path);
        if (n > 0)
            t->len += (size_t)n;
        if (t->len >= sizeof t->text)
            t->len = sizeof t->text - 1;
    }
    return NULL;
}

static void *try_dir(tried *t, const char *dir)
{
    static const char *const names[] = {"libcupti.so.13", "libcupti.so"};
    char path[PATH_MAX + 32];
    for (size_t i = 0; i < 2; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        if (access(path, F_OK) != 0)
            continue; /* only files that exist count as tried */
        void *h = try_open(t, path);
        if (h)
            return h;
    }
    return NULL;
}

/* Where DESIGN.md says to look, in order: GPUSTARVE_CUPTI_LIB; next to the
 * loaded libcudart; the nvidia/cuda_cupti wheel folder next to a loaded
 * nvidia/cuda_runtime; $CUDA_HOME/extras/CUPTI/lib64 and $CUDA_HOME/lib64
 * (CUDA_HOME default /usr/local/cuda); then the default search. */
static void *load_cupti(tried *t)
{
    void *h;
    const char *env = getenv("GPUSTARVE_CUPTI_LIB");
    if (env && *env && (h = try_open(t, env)))
        return h;
    char rt[PATH_MAX];
    rt[0] = 0;
    dl_iterate_phdr(find_cudart, rt);
    char *slash = rt[0] ? strrchr(rt, '/') : NULL;
    if (slash) {
        *slash = 0; /* rt is now libcudart's folder */
        if ((h = try_dir(t, rt)))
            return h;
        /* .../site-packages/nvidia/cuda_runtime/lib -> .../nvidia/cuda_cupti/lib */
        char *pos = strstr(rt, "/nvidia/cuda_runtime/lib");
        if (pos) {
            char wheel[PATH_MAX + 32];
            snprintf(wheel, sizeof wheel, "%.*s/nvidia/cuda_cupti/lib", (int)(pos - rt), rt);
            if ((h = try_dir(t, wheel)))
                return h;
        }
    }
    const char *home = getenv("CUDA_HOME");
    if (!home || !*home)
        home = "/usr/local/cuda";
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s/extras/CUPTI/lib64", home);
    if ((h = try_dir(t, dir)))
        return h;
    snprintf(dir, sizeof dir, "%s/lib64", home);
    if ((h = try_dir(t, dir)))
        return h;
    if ((h = try_open(t, "libcupti.so.13")))
        return h;
    return try_open(t, "libcupti.so");
}

/* ---- the driver ---------------------------------------------------------------------------- */

/* RATIONALE: libcupti needs the driver, and some versions do not fail
 * cleanly without it: libcupti 13.2's cuptiGetVersion recurses through
 * cuptiGetResultString on its failed dlopen("libcuda.so.1") until the stack
 * overflows. So nothing of libcupti is loaded or called until libcuda.so.1
 * has loaded and answered cuDriverGetVersion. The handle is kept: the CUDA
 * runtime loads the same library anyway. */
static int g_driver_version;        /* cuDriverGetVersion, 0 = no driver */
static char g_driver_why[256];      /* why not, for the warning */
static pthread_once_t g_driver_once = PTHREAD_ONCE_INIT;

static void driver_probe(void)
{
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        snprintf(g_driver_why, sizeof g_driver_why, "libcuda.so.1 not found");
        return;
    }
    int (*get)(int *) = (int (*)(int *))dlsym(h, "cuDriverGetVersion");
    int v = 0;
    int r = get ? get(&v) : -1;
    if (r != 0 || v <= 0) {
        if (!get)
            snprintf(g_driver_why, sizeof g_driver_why, "libcuda.so.1 lacks cuDriverGetVersion");
        else
            snprintf(g_driver_why, sizeof g_driver_why,
                     "libcuda.so.1 does not answer: cuDriverGetVersion returned %d", r);
        dlclose(h);
        return;
    }
    g_driver_version = v;
}

/* The driver's version, or 0 (and *why) when there is none. Loads
 * libcuda.so.1 once; the caller holds the guard. */
static int driver_version(const char **why)
{
    pthread_once(&g_driver_once, driver_probe);
    if (why)
        *why = g_driver_why;
    return g_driver_version;
}

/* ---- the clock -------------------------------------------------------------------------- */

static uint64_t CUPTIAPI ts_callback(void)
{
    return gs_sink_now();
}

/* ---- buffer pool and queue ---------------------------------------------------------------- */

enum { BUF_FREE = 0, BUF_LENT = 1, BUF_QUEUED = 2 };

typedef struct gbuf {
    uint8_t *_Atomic base; /* mapped on first lending, kept */
    _Atomic int state;
    size_t valid;
    uint32_t next; /* queue link: index + 1, 0 = end */
} gbuf;

static gbuf g_bufs[GS_CUPTI_BUFS_MAX];
static uint32_t g_nbufs = GS_CUPTI_BUFS_DEFAULT;
static _Atomic uint32_t g_queue;       /* index + 1 of the last queued, 0 = empty */
static _Atomic uint64_t g_refused;     /* requests the pool could not serve */

static void CUPTIAPI buf_requested(uint8_t **buffer, size_t *size, size_t *max_records)
{
    *buffer = NULL;
    *size = 0;
    *max_records = 0;
    for (uint32_t i = 0; i < g_nbufs; i++) {
        int want = BUF_FREE;
        if (!atomic_compare_exchange_strong(&g_bufs[i].state, &want, BUF_LENT))
            continue;
        uint8_t *b = atomic_load(&g_bufs[i].base);
        if (!b) {
            long p = syscall(SYS_mmap, NULL, GS_CUPTI_BUF_BYTES, PROT_READ | PROT_WRITE,
                             MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
            if (p == -1) {
                atomic_store(&g_bufs[i].state, BUF_FREE);
                break;
            }
            b = (uint8_t *)p;
            atomic_store(&g_bufs[i].base, b);
        }
        *buffer = b;
        *size = GS_CUPTI_BUF_BYTES;
        return;
    }
    /* pool exhausted: CUPTI drops the records and counts them (gpu_drops) */
    atomic_fetch_add(&g_refused, 1);
}

static void CUPTIAPI buf_completed(CUcontext ctx, uint32_t stream, uint8_t *buffer, size_t size,
                                   size_t valid)
{
    (void)ctx;
    (void)stream;
    (void)size;
    for (uint32_t i = 0; i < g_nbufs; i++) {
        if (atomic_load(&g_bufs[i].base) != buffer)
            continue;
        if (valid == 0) {
            atomic_store(&g_bufs[i].state, BUF_FREE);
            return;
        }
        g_bufs[i].valid = valid;
        atomic_store(&g_bufs[i].state, BUF_QUEUED);
        uint32_t old = atomic_load(&g_queue);
        do
            g_bufs[i].next = old;
        while (!atomic_compare_exchange_weak(&g_queue, &old, i + 1));
        return;
    }
}

/* ---- the runtime callback: correlation ids for the host records ------------------------------ */

static void CUPTIAPI api_callback(void *userdata, CUpti_CallbackDomain domain,
                                  CUpti_CallbackId cbid, const void *data)
{
    (void)userdata;
    (void)cbid;
    const CUpti_CallbackData *cb = data;
    if (domain == CUPTI_CB_DOMAIN_RUNTIME_API && cb && cb->callbackSite == CUPTI_API_ENTER)
        gs_sink_set_corr(cb->correlationId);
}

static const CUpti_CallbackId g_corr_cbids[] = {
    CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_ptds_v7000,
    CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_ptsz_v7000,
    CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy2D_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy2D_ptds_v7000,
    CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy2DAsync_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy2DAsync_ptsz_v7000,
    CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy3D_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy3D_ptds_v7000,
    CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy3DAsync_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy3DAsync_ptsz_v7000,
    CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyPeer_v4000,
    CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyPeerAsync_v4000,
    CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyToSymbol_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyToSymbol_ptds_v7000,
    CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyToSymbolAsync_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyToSymbolAsync_ptsz_v7000,
    CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyFromSymbol_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyFromSymbol_ptds_v7000,
    CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyFromSymbolAsync_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyFromSymbolAsync_ptsz_v7000,
    CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_ptsz_v7000,
    CUPTI_RUNTIME_TRACE_CBID_cudaDeviceSynchronize_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaEventSynchronize_v3020,
};

/* ---- exit ------------------------------------------------------------------------------------ */

static int cupti_mine(void)
{
    return atomic_load(&g_state) == ST_ON && (pid_t)syscall(SYS_getpid) == g_pid;
}

static void read_dropped(void)
{
    size_t n = 0;
    if (C.cuptiActivityGetNumDroppedRecords &&
        C.cuptiActivityGetNumDroppedRecords(NULL, 0, &n) == CUPTI_SUCCESS && n)
        atomic_fetch_add(&g_dropped, n); /* the call reports and resets */
}

/* RATIONALE: registered once CUPTI is running, so it runs before the
 * handlers registered earlier — the libcupti and CUDA runtime teardown — and
 * while CUPTI can still deliver. Our own on_exit handler runs last of all,
 * after the shared objects' destructors: too late to call CUPTI. */
static void at_exit_flush(void)
{
    if (!cupti_mine() || atomic_exchange(&g_atexit_done, 1))
        return;
    gs_sink_held h = gs_sink_hold();
    CUPTI_CALL(C.cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED));
    read_dropped();
    gs_sink_release(h);
}

static void cupti_flush(enum gs_flush_reason why, unsigned wait_ms)
{
    if (!cupti_mine())
        return;
    gs_sink_held h = gs_sink_hold();
    switch (why) {
    case GS_FLUSH_EXIT: /* at_exit_flush already ran, unless atexit was refused */
        break;
    case GS_FLUSH_SIGNAL: { /* not from a handler; ask the writer, wait a bit */
        atomic_store(&g_flush_done, 0);
        atomic_store(&g_flush_req, 1);
        gs_sink_wake();
        for (unsigned waited = 0; waited < wait_ms && !atomic_load(&g_flush_done); waited++) {
            struct timespec ts = {0, 1000000};
            nanosleep(&ts, NULL);
        }
        break;
    }
    case GS_FLUSH_FORK: /* what is complete, quickly */
        CUPTI_CALL(C.cuptiActivityFlushAll(0));
        break;
    case GS_FLUSH_QUICK_EXIT:
    case GS_FLUSH_EXEC:
        CUPTI_CALL(C.cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED));
        read_dropped();
        break;
    }
    gs_sink_release(h);
}

static void cupti_tick(void)
{
    if (!cupti_mine())
        return;
    if (atomic_exchange(&g_flush_req, 0)) {
        CUPTI_CALL(C.cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED));
        read_dropped();
        atomic_store(&g_flush_done, 1);
    }
    read_dropped();
}

static void cupti_after_fork_child(void)
{
    /* CUPTI and every buffer it holds are the parent's; so are the queued
     * ones (the parent writes them). Nothing here may call CUPTI. */
    if (atomic_load(&g_state) == ST_ON)
        atomic_store(&g_state, ST_OFF);
    atomic_store(&g_queue, 0);
    atomic_store(&g_dropped, 0);
    g_rep_dropped = 0;
}

/* ---- the writer's side: decode queued buffers -------------------------------------------------- */

/* Writer-private map from a name pointer to its string id, so a kernel
 * name is hashed and interned once, not per launch. A hit is checked
 * against the interned bytes (CUPTI may reuse the memory of a name). */
#define NAME_SLOTS 4096u
static struct {
    const char *ptr;
    uint32_t id;
} g_names[NAME_SLOTS];

static uint32_t name_id(const char *s)
{
    if (!s)
        return 0;
    uint32_t h = (uint32_t)(((uintptr_t)s >> 3) * 2654435761u) & (NAME_SLOTS - 1);
    if (g_names[h].ptr == s && g_names[h].id) {
        uint32_t len = 0;
        const char *have = gs_sink_string(g_names[h].id, &len);
        if (have && strncmp(have, s, len) == 0 && (len == GS_STRING_MAX || s[len] == 0))
            return g_names[h].id;
    }
    uint32_t id = gs_sink_intern(s, strnlen(s, GS_STRING_MAX));
    g_names[h].ptr = s;
    g_names[h].id = id;
    return id;
}

static void decode_buffer(gbuf *b)
{
    CUpti_Activity *rec = NULL;
    uint64_t now = gs_sink_now();
    while (C.cuptiActivityGetNextRecord(b->base, b->valid, &rec) == CUPTI_SUCCESS) {
        gs_event ev;
        const char *name = NULL;
        if (!gs_cupti_decode(rec, &ev, &name))
            continue;
        ev.str = name_id(name);
        if (ev.kind == GS_K_GPU_DEVICE && ev.ts == 0)
            ev.ts = now;
        gs_sink_put(&ev); /* device records: tid 0 */
    }
}

static void cupti_drain(int final)
{
    uint32_t head = atomic_exchange(&g_queue, 0);
    /* the stack holds newest first: reverse it into delivery order */
    uint32_t fifo = 0;
    while (head) {
        gbuf *b = &g_bufs[head - 1];
        uint32_t next = b->next;
        b->next = fifo;
        fifo = head;
        head = next;
    }
    while (fifo) {
        gbuf *b = &g_bufs[fifo - 1];
        uint32_t next = b->next;
        if (C.cuptiActivityGetNextRecord && atomic_load(&g_state) != ST_IDLE)
            decode_buffer(b);
        atomic_store(&b->state, BUF_FREE);
        fifo = next;
    }
    uint64_t dropped = atomic_load(&g_dropped);
    if (dropped != g_rep_dropped || (final && dropped)) {
        gs_event ev;
        gs_event_clear(&ev);
        ev.kind = GS_K_GPU_DROPS;
        ev.ts = gs_sink_now();
        ev.aux = dropped;
        gs_sink_put(&ev);
        g_rep_dropped = dropped;
    }
}

/* ---- start --------------------------------------------------------------------------------- */

static const CUpti_ActivityKind g_kinds[] = {
    CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY,
    CUPTI_ACTIVITY_KIND_MEMSET,            CUPTI_ACTIVITY_KIND_SYNCHRONIZATION,
    CUPTI_ACTIVITY_KIND_DEVICE,
};

static int busy(CUptiResult r)
{
    return r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
}

static void start_impl(void)
{
    if (!gs_sink_active())
        return; /* tracing is off in this process: nothing to collect into */
    g_pid = (pid_t)syscall(SYS_getpid);
    const char *nb = getenv("GPUSTARVE_CUPTI_BUFFERS");
    if (nb && *nb) {
        long v = strtol(nb, NULL, 10);
        if (v >= 1)
            g_nbufs = v > (long)GS_CUPTI_BUFS_MAX ? GS_CUPTI_BUFS_MAX : (uint32_t)v;
    }
    const char *why = NULL;
    if (!driver_version(&why)) {
        cupti_give_up(2, "no CUDA driver (%s)", why);
        return;
    }
    tried t = {.len = 0};
    t.text[0] = 0;
    void *h = load_cupti(&t);
    if (!h) {
        cupti_give_up(2, "CUPTI unavailable: libcupti not found (tried %s)",
                      t.len ? t.text : "libcupti.so.13");
        return;
    }
    int missing = 0;
    const char *miss = NULL;
#define GS_X_SYM(name, args)                                                   \
    *(void **)&C.name = dlsym(h, #name);                                       \
    if (!C.name && !missing++)                                                 \
        miss = #name;
    GS_CUPTI_FNS(GS_X_SYM)
#undef GS_X_SYM
    *(void **)&C.cuptiActivityFlushPeriod = dlsym(h, "cuptiActivityFlushPeriod");
    if (missing) {
        cupti_give_up(2, "CUPTI unavailable: %s lacks %s", g_lib, miss);
        return;
    }
    uint32_t version = 0;
    if (CUPTI_CALL(C.cuptiGetVersion(&version)) != CUPTI_SUCCESS) {
        cupti_give_up(2, "CUPTI unavailable: %s", g_err);
        return;
    }
    if (version < GS_CUPTI_VERSION_MIN || version >= GS_CUPTI_VERSION_END) {
        cupti_give_up(2, "CUPTI unavailable: %s is CUPTI API version %u, gpustarve reads %u..%u",
                      g_lib, version, GS_CUPTI_VERSION_MIN, GS_CUPTI_VERSION_END - 1);
        return;
    }
    CUptiResult r = CUPTI_CALL(C.cuptiSubscribe(&g_sub, api_callback, NULL));
    if (r != CUPTI_SUCCESS) {
        if (busy(r))
            cupti_give_up(3, "CUPTI is held by another profiler (%s)", g_err);
        else
            cupti_give_up(2, "CUPTI unavailable: %s", g_err);
        return;
    }
    if (CUPTI_CALL(C.cuptiActivityRegisterTimestampCallback(ts_callback)) != CUPTI_SUCCESS ||
        CUPTI_CALL(C.cuptiActivityRegisterCallbacks(buf_requested, buf_completed)) !=
            CUPTI_SUCCESS) {
        C.cuptiUnsubscribe(g_sub);
        cupti_give_up(2, "CUPTI unavailable: %s", g_err);
        return;
    }
    size_t enabled = 0;
    for (; enabled < sizeof g_kinds / sizeof g_kinds[0]; enabled++) {
        r = CUPTI_CALL(C.cuptiActivityEnable(g_kinds[enabled]));
        if (r != CUPTI_SUCCESS)
            break;
    }
    if (enabled < sizeof g_kinds / sizeof g_kinds[0]) {
        for (size_t i = 0; i < enabled; i++)
            C.cuptiActivityDisable(g_kinds[i]);
        C.cuptiUnsubscribe(g_sub);
        if (busy(r))
            cupti_give_up(3, "CUPTI is held by another profiler (%s)", g_err);
        else
            cupti_give_up(2, "CUPTI unavailable: %s", g_err);
        return;
    }
    /* optional: correlation ids for the host copy records; periodic flush */
    for (size_t i = 0; i < sizeof g_corr_cbids / sizeof g_corr_cbids[0]; i++)
        CUPTI_CALL(C.cuptiEnableCallback(1, g_sub, CUPTI_CB_DOMAIN_RUNTIME_API, g_corr_cbids[i]));
    if (C.cuptiActivityFlushPeriod)
        CUPTI_CALL(C.cuptiActivityFlushPeriod(GS_CUPTI_FLUSH_PERIOD_MS));
    atomic_store(&g_state, ST_ON);
    atexit(at_exit_flush);
}

static void start_guarded(void)
{
    gs_sink_held h = gs_sink_hold(); /* CUPTI's own file and library calls are not the program's */
    start_impl();
    gs_sink_release(h);
}

/* Start collecting unless already started or tried (once per process
 * image). */
static void cupti_start(void)
{
    pthread_once(&g_once, start_guarded);
}

/* 1 when this process image will be started through InitializeInjection
 * (CUDA_INJECTION64_PATH names this library). */
static int injected(void)
{
    static _Atomic int cached = -1;
    int c = atomic_load(&cached);
    if (c >= 0)
        return c;
    c = 0;
    const char *inj = getenv("CUDA_INJECTION64_PATH");
    Dl_info info;
    struct stat a, b;
    if (inj && *inj && dladdr((void *)injected, &info) && info.dli_fname &&
        syscall(SYS_newfstatat, AT_FDCWD, inj, &a, 0) == 0 &&
        syscall(SYS_newfstatat, AT_FDCWD, info.dli_fname, &b, 0) == 0)
        c = a.st_dev == b.st_dev && a.st_ino == b.st_ino;
    atomic_store(&cached, c);
    return c;
}

/* The hooks' first CUDA call. RATIONALE: when CUDA_INJECTION64_PATH names
 * us, the driver calls InitializeInjection inside its own initialisation
 * (holding its own locks); starting CUPTI from here as well could race it.
 * With no driver, nothing will call it: say so here. */
static void cupti_first_call(void)
{
    if (!injected()) {
        cupti_start();
        return;
    }
    gs_sink_held h = gs_sink_hold();
    const char *why = NULL;
    if (!driver_version(&why))
        cupti_start(); /* gives up with the warning */
    gs_sink_release(h);
}

/* The driver's injection entry point (CUDA_INJECTION64_PATH): called once,
 * inside the first CUDA initialisation of the process. */
__attribute__((visibility("default"))) int InitializeInjection(void);
__attribute__((visibility("default"))) int InitializeInjection(void)
{
    gs_sink_init(); /* loaded by the driver alone (no LD_PRELOAD): start up here */
    cupti_start();
    return 1;
}

static const gs_source_ops g_ops = {
    .name = "cupti",
    .first_cuda_call = cupti_first_call,
    .flush = cupti_flush,
    .tick = cupti_tick,
    .drain = cupti_drain,
    .after_fork_child = cupti_after_fork_child,
};

__attribute__((constructor)) static void cupti_register(void)
{
    gs_source_register(&g_ops);
}
