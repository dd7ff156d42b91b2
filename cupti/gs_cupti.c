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
    X(cuptiGetTimestamp, (uint64_t *))                                                    \
    X(cuptiActivityEnable, (CUpti_ActivityKind))                                          \
    X(cuptiActivityDisable, (CUpti_ActivityKind))                                         \
    X(cuptiActivityFlushAll, (uint32_t))                                                  \
    X(cuptiActivityGetNextRecord, (uint8_t *, size_t, CUpti_Activity **))                 \
    X(cuptiActivityGetNumDroppedRecords, (CUcontext, uint32_t, size_t *))

typedef struct cupti_fns {
#define GS_X_PTR(name, args) CUptiResult(CUPTIAPI *name) args;
    GS_CUPTI_FNS(GS_X_PTR)
#undef GS_X_PTR
    /* optional */
    CUptiResult(CUPTIAPI *cuptiActivityFlushPeriod)(uint32_t);
    CUptiResult(CUPTIAPI *cuptiActivityRegisterTimestampCallback)(CUpti_TimestampCallbackFunc);
} cupti_fns;

static cupti_fns C;

/* ---- state ------------------------------------------------------------------- */

enum { ST_IDLE = 0, ST_ON = 1, ST_OFF = 2 };

static _Atomic int g_state;
static pid_t g_pid;                 /* the process image CUPTI serves */
static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static int g_from_hooks;            /* the start came from a hook (cuInit may be called) */
static CUpti_SubscriberHandle g_sub;
static char g_lib[PATH_MAX];        /* the libcupti we loaded */
static char g_err[PATH_MAX + 256];  /* last failed CUPTI call (library: call: result), for the note */
static _Atomic int g_atexit_done;
static _Atomic int g_decode_over;   /* at exit: libcupti is about to be torn down */
static const char *g_lib_env;       /* GPUSTARVE_CUPTI_LIB, NULL when unset (read_settings) */
static _Atomic uint64_t g_unknown_ts; /* records dropped: start or end unknown (0) */
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
        if (strncmp(what, "C.", 2) == 0)
            what += 2;
        const char *paren = strchr(what, '(');
        int n = paren ? (int)(paren - what) : (int)strlen(what);
        snprintf(g_err, sizeof g_err, "%s: %.*s: %s (%d)", g_lib, n, what, s, (int)r);
    }
    return r;
}

/* ---- one warning, one note ------------------------------------------------------- */

static void cupti_give_up(enum gs_note_code code, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void cupti_give_up(enum gs_note_code code, const char *fmt, ...)
{
    char text[PATH_MAX + 512];
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

/* What the loaded objects say: the libcudart (path, CUDA major), a loaded
 * libcupti, and the nvidia/ folder of the PyPI wheels when one is in use. */
typedef struct loaded {
    char cudart[PATH_MAX];
    char cupti[PATH_MAX];
    char wheels[PATH_MAX]; /* .../site-packages/nvidia (the PyPI wheels' folder) */
    int major;             /* of libcudart.so.N, 0 = unknown */
} loaded;

static const char *base_of(const char *path)
{
    const char *b = strrchr(path, '/');
    return b ? b + 1 : path;
}

static int scan_loaded(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    loaded *l = arg;
    const char *name = info->dlpi_name;
    if (!name || !name[0])
        return 0;
    const char *b = base_of(name);
    if (!l->cudart[0] && strncmp(b, "libcudart.so", 12) == 0) {
        snprintf(l->cudart, sizeof l->cudart, "%s", name);
        l->major = b[12] == '.' ? atoi(b + 13) : 0;
    }
    if (!l->cupti[0] && strncmp(b, "libcupti.so", 11) == 0)
        snprintf(l->cupti, sizeof l->cupti, "%s", name);
    /* the wheel layout: <root>/nvidia/<package>/lib/<file> */
    const char *nv = strstr(name, "/nvidia/");
    const char *pkg_end = nv ? strchr(nv + 8, '/') : NULL;
    if (!l->wheels[0] && pkg_end && strncmp(pkg_end, "/lib/", 5) == 0 && !strchr(pkg_end + 5, '/'))
        snprintf(l->wheels, sizeof l->wheels, "%.*s", (int)(nv + 7 - name), name);
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

/* The libcupti names for a CUDA major, best first (0: every major, newest
 * first). RATIONALE: never the unversioned libcupti.so, which names
 * whatever toolkit is installed: a CUPTI of another major than the
 * program's runtime must not be loaded into it. */
static const char *const *cupti_names(int major)
{
    static const char *const n13[] = {"libcupti.so.13", NULL};
    static const char *const n12[] = {"libcupti.so.12", NULL};
    static const char *const n11[] = {"libcupti.so.11.8", NULL};
    static const char *const all[] = {"libcupti.so.13", "libcupti.so.12", "libcupti.so.11.8", NULL};
    switch (major) {
    case 13: return n13;
    case 12: return n12;
    case 11: return n11;
    default: return all;
    }
}

static void *try_dir(tried *t, const char *dir, int major)
{
    char path[PATH_MAX + 32];
    for (const char *const *n = cupti_names(major); *n; n++) {
        snprintf(path, sizeof path, "%s/%s", dir, *n);
        if (access(path, F_OK) != 0)
            continue; /* only files that exist count as tried */
        void *h = try_open(t, path);
        if (h)
            return h;
    }
    return NULL;
}

/* In order (docs/gpu-source.md): GPUSTARVE_CUPTI_LIB; the libcupti the
 * process has already loaded; the one beside its libcudart; the PyPI wheel
 * layouts (nvidia/cu13/lib, nvidia/cuda_cupti/lib); $CUDA_HOME/extras/CUPTI/lib64
 * and $CUDA_HOME/lib64 (CUDA_HOME default /usr/local/cuda); then the
 * default search by name. Only names of the runtime's CUDA major are tried
 * (the driver's major when no libcudart is loaded). *major gets the one
 * used. */
static void *load_cupti(tried *t, int driver_major, int *major)
{
    void *h;
    if (g_lib_env && *g_lib_env && (h = try_open(t, g_lib_env)))
        return h;
    loaded l;
    memset(&l, 0, sizeof l);
    dl_iterate_phdr(scan_loaded, &l);
    *major = l.major ? l.major : l.cudart[0] ? 0 : driver_major;
    if (l.cupti[0] && (h = try_open(t, l.cupti)))
        return h;
    char dir[PATH_MAX + 32];
    if (l.cudart[0]) {
        int n = (int)(base_of(l.cudart) - l.cudart); /* up to its '/', not with it */
        snprintf(dir, sizeof dir, "%.*s", n > 1 ? n - 1 : n, l.cudart);
        if ((h = try_dir(t, dir, *major)))
            return h;
    }
    if (l.wheels[0]) {
        static const char *const layouts[] = {"cu13/lib", "cuda_cupti/lib"};
        for (size_t i = 0; i < sizeof layouts / sizeof layouts[0]; i++) {
            snprintf(dir, sizeof dir, "%s/%s", l.wheels, layouts[i]);
            if ((h = try_dir(t, dir, *major)))
                return h;
        }
    }
    const char *home = getenv("CUDA_HOME");
    if (!home || !*home)
        home = "/usr/local/cuda";
    snprintf(dir, sizeof dir, "%s/extras/CUPTI/lib64", home);
    if ((h = try_dir(t, dir, *major)))
        return h;
    snprintf(dir, sizeof dir, "%s/lib64", home);
    if ((h = try_dir(t, dir, *major)))
        return h;
    for (const char *const *n = cupti_names(*major); *n; n++)
        if ((h = try_open(t, *n)))
            return h;
    return NULL;
}

/* The CUDA major a cuptiGetVersion value belongs to (cupti_version.h). */
static int cupti_major(uint32_t v)
{
    return v >= GS_CUPTI_V13_FIRST ? (int)(v / 10000) : v > GS_CUPTI_V11_8 ? 12 : 11;
}

/* ---- the driver ---------------------------------------------------------------------------- */

/* RATIONALE: libcupti needs a working driver, and some versions do not fail
 * cleanly without one: libcupti 13.2's cuptiGetVersion recurses through
 * cuptiGetResultString on its failed dlopen("libcuda.so.1") until the stack
 * overflows, and does the same when libcuda.so.1 loads but does not serve
 * it. (libcupti 12.9 returns CUPTI_ERROR_NOT_INITIALIZED.) So nothing of
 * libcupti is loaded or called until libcuda.so.1 has loaded and answered
 * cuDriverGetVersion, is not older than a CUDA 13 runtime in the process,
 * and — when we start from a hook rather than from inside the driver's own
 * initialisation — cuInit has succeeded and found a device. The handle is
 * kept: the CUDA runtime loads the same library anyway. */
static void *g_driver;              /* libcuda.so.1 */
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
    g_driver = h;
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

/* The loaded libcudart's cudaRuntimeGetVersion (needs no driver), 0 when
 * none is loaded. */
static int runtime_version(void)
{
    loaded l;
    memset(&l, 0, sizeof l);
    dl_iterate_phdr(scan_loaded, &l);
    void *h = l.cudart[0] ? dlopen(l.cudart, RTLD_LAZY | RTLD_NOLOAD) : NULL;
    if (!h)
        return 0;
    int (*get)(int *) = (int (*)(int *))dlsym(h, "cudaRuntimeGetVersion");
    int v = 0;
    if (!get || get(&v) != 0)
        v = 0;
    dlclose(h); /* drops only the reference NOLOAD took */
    return v;
}

/* 1 when libcupti may be loaded and called; else 0 and why (for the
 * warning). from_hooks: we are not inside the driver's initialisation, so
 * cuInit may be called (the runtime call the hook is in calls it anyway). */
static int driver_ready(int from_hooks, char *why, size_t n)
{
    const char *w = NULL;
    int v = driver_version(&w);
    if (!v) {
        snprintf(why, n, "no CUDA driver (%s)", w);
        return 0;
    }
    int rt = runtime_version();
    if (rt >= 13000 && v < rt) {
        snprintf(why, n, "the CUDA driver (%d.%d) is older than the CUDA runtime (%d.%d)",
                 v / 1000, v % 1000 / 10, rt / 1000, rt % 1000 / 10);
        return 0;
    }
    if (from_hooks) {
        int (*init)(unsigned) = (int (*)(unsigned))dlsym(g_driver, "cuInit");
        int (*count)(int *) = (int (*)(int *))dlsym(g_driver, "cuDeviceGetCount");
        int r = init ? init(0) : -1, devices = 0;
        if (r == 0)
            r = count ? count(&devices) : -1;
        if (r != 0 || devices < 1) {
            snprintf(why, n, "no CUDA device (cuInit, cuDeviceGetCount: %d, %d devices)", r, devices);
            return 0;
        }
    }
    return 1;
}

/* ---- the clock -------------------------------------------------------------------------- */

static uint64_t CUPTIAPI ts_callback(void)
{
    return gs_sink_now();
}

/* RATIONALE: a CUPTI without the timestamp callback (or refusing it) stamps
 * records with its own clock; the offset to ours is measured once, at the
 * narrowest of a few bracketing reads, and added to every record time. */
static int64_t g_ts_offset; /* our clock - CUPTI's; 0 with the callback */

static void measure_clock_offset(void)
{
    uint64_t best = UINT64_MAX;
    for (int i = 0; i < 5; i++) {
        uint64_t c = 0, a = gs_sink_now();
        if (C.cuptiGetTimestamp(&c) != CUPTI_SUCCESS || !c)
            return;
        uint64_t b = gs_sink_now();
        if (b - a < best) {
            best = b - a;
            g_ts_offset = (int64_t)(a + (b - a) / 2) - (int64_t)c;
        }
    }
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
 * handlers registered earlier — the loader's destructor pass, which tears
 * libcupti down — and while CUPTI can still deliver and be asked for
 * records. So the last buffers are delivered and decoded here, into the
 * file (gs_sink_drain_now); after that no record is read from CUPTI: the
 * collector's own last handlers run after every library destructor. */
static void at_exit_flush(void)
{
    if (!cupti_mine() || atomic_exchange(&g_atexit_done, 1))
        return;
    gs_sink_held h = gs_sink_hold();
    CUPTI_CALL(C.cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED));
    read_dropped();
    gs_sink_release(h);
    gs_sink_drain_now();
    atomic_store(&g_decode_over, 1);
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
    atomic_store(&g_unknown_ts, 0);
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
        int got = gs_cupti_decode(rec, &ev, &name);
        if (got == GS_CUPTI_UNKNOWN_TIME)
            atomic_fetch_add(&g_unknown_ts, 1);
        if (got != GS_CUPTI_RECORD)
            continue;
        if (g_ts_offset && ev.ts)
            ev.ts = (uint64_t)((int64_t)ev.ts + g_ts_offset);
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
        if (C.cuptiActivityGetNextRecord && atomic_load(&g_state) != ST_IDLE &&
            !atomic_load(&g_decode_over))
            decode_buffer(b);
        atomic_store(&b->state, BUF_FREE);
        fifo = next;
    }
    /* gpu_drops counts what CUPTI dropped and what we dropped for want of
     * times; a note says how many were ours, once, at the end */
    const uint64_t unknown = atomic_load(&g_unknown_ts);
    uint64_t dropped = atomic_load(&g_dropped) + unknown;
    if (final && unknown) {
        char text[200];
        int n = snprintf(text, sizeof text,
                         "GPU activity records dropped for unknown (0) timestamps (work not "
                         "finished when CUPTI was flushed): %llu",
                         (unsigned long long)unknown);
        gs_event ev;
        gs_event_clear(&ev);
        ev.kind = GS_K_NOTE;
        ev.ts = gs_sink_now();
        ev.str = gs_sink_intern(text, n > 0 ? (size_t)n : 0);
        ev.aux = GS_NOTE_MESSAGE;
        gs_sink_put(&ev);
    }
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

/* ---- another client ------------------------------------------------------------------- */

static _Atomic int g_foreign;       /* another client has called CUPTI */
static char g_foreign_what[64];     /* its first call */
static void *g_cupti_handle;        /* the libcupti we loaded */

void *gs_cupti_sym(const char *name)
{
    return g_cupti_handle ? dlsym(g_cupti_handle, name) : NULL;
}

void gs_cupti_foreign_call(const char *what)
{
    if (!atomic_exchange(&g_foreign, 1))
        snprintf(g_foreign_what, sizeof g_foreign_what, "%s", what);
    int on = ST_ON;
    if ((pid_t)syscall(SYS_getpid) != g_pid || !atomic_compare_exchange_strong(&g_state, &on, ST_OFF))
        return; /* not holding CUPTI: the start, if it comes, steps back */
    /* RATIONALE: one subscriber and one set of buffer callbacks per process:
     * ours go, with what CUPTI holds of ours delivered first, so that the
     * user's profiler gets exactly what it asks for. Our timestamp
     * callback stays (CUPTI has no documented way to remove it); it is
     * CLOCK_MONOTONIC, which cuptiGetTimestamp then also returns. */
    gs_sink_held h = gs_sink_hold();
    CUPTI_CALL(C.cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED));
    read_dropped();
    for (size_t i = 0; i < sizeof g_kinds / sizeof g_kinds[0]; i++)
        C.cuptiActivityDisable(g_kinds[i]);
    C.cuptiUnsubscribe(g_sub);
    gs_sink_release(h);
    cupti_give_up(GS_NOTE_CUPTI_BUSY,
                  "another CUPTI client started (%s): CUPTI is left to it from here", what);
}

static int busy(CUptiResult r)
{
    return r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
}

/* This source's own settings (README): GPUSTARVE_CUPTI_LIB, the libcupti to
 * try first; GPUSTARVE_CUPTI_BUFFERS, the pool's buffers (1 to
 * GS_CUPTI_BUFS_MAX; unset or below 1: GS_CUPTI_BUFS_DEFAULT).
 * RATIONALE: read here, when the source starts (the first CUDA call or the
 * driver's injection), not by the collector at its start-up with every
 * other GPUSTARVE_* variable (preload/gs_config.c): cupti/ cannot include
 * the collector's headers, the seam carries nothing of a particular source
 * (docs/gpu-source.md, "The seam"), and a program that sets them before
 * its first CUDA call (os.environ in Python) is heard, as it always was.
 * The source reads its other variables (CUDA_HOME, CUDA_INJECTION64_PATH)
 * at the same moment. */
static void read_settings(void)
{
    g_lib_env = getenv("GPUSTARVE_CUPTI_LIB");
    const char *nb = getenv("GPUSTARVE_CUPTI_BUFFERS");
    if (nb && *nb) {
        long v = strtol(nb, NULL, 10);
        if (v >= 1)
            g_nbufs = v > (long)GS_CUPTI_BUFS_MAX ? GS_CUPTI_BUFS_MAX : (uint32_t)v;
    }
}

static void start_impl(void)
{
    if (!gs_sink_active())
        return; /* tracing is off in this process: nothing to collect into */
    g_pid = (pid_t)syscall(SYS_getpid);
    read_settings();
    char why[320];
    if (!driver_ready(g_from_hooks, why, sizeof why)) {
        cupti_give_up(GS_NOTE_CUPTI_UNAVAILABLE, "%s", why);
        return;
    }
    tried t = {.len = 0};
    t.text[0] = 0;
    int major = 0;
    void *h = load_cupti(&t, driver_version(NULL) / 1000, &major);
    if (!h) {
        char want[64] = "";
        for (const char *const *n = cupti_names(major); *n; n++)
            snprintf(want + strlen(want), sizeof want - strlen(want), "%s%s", want[0] ? " or " : "", *n);
        cupti_give_up(GS_NOTE_CUPTI_UNAVAILABLE, "CUPTI unavailable: %s not found (tried %s)", want,
                      t.len ? t.text : "the default search");
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
    *(void **)&C.cuptiActivityRegisterTimestampCallback =
        dlsym(h, "cuptiActivityRegisterTimestampCallback");
    if (missing) {
        cupti_give_up(GS_NOTE_CUPTI_UNAVAILABLE, "CUPTI unavailable: %s lacks %s", g_lib, miss);
        return;
    }
    uint32_t version = 0;
    if (CUPTI_CALL(C.cuptiGetVersion(&version)) != CUPTI_SUCCESS) {
        cupti_give_up(GS_NOTE_CUPTI_UNAVAILABLE, "CUPTI unavailable: %s", g_err);
        return;
    }
    if (!gs_cupti_version_ok(version)) {
        cupti_give_up(GS_NOTE_CUPTI_UNAVAILABLE,
                      "CUPTI unavailable: %s is CUPTI API version %u; gpustarve reads CUDA 11.8 "
                      "(18), 12.x (19-%u) and 13.0-13.2 (%u-%u)",
                      g_lib, version, GS_CUPTI_V12_LAST, GS_CUPTI_V13_FIRST, GS_CUPTI_V13_END - 1);
        return;
    }
    if (major && cupti_major(version) != major) {
        cupti_give_up(GS_NOTE_CUPTI_UNAVAILABLE,
                      "CUPTI unavailable: %s is CUDA %d's CUPTI, the program runs CUDA %d", g_lib,
                      cupti_major(version), major);
        return;
    }
    g_cupti_handle = h;
    if (atomic_load(&g_foreign)) {
        cupti_give_up(GS_NOTE_CUPTI_BUSY, "CUPTI is held by another profiler (it called %s first)",
                      g_foreign_what);
        return;
    }
    CUptiResult r = CUPTI_CALL(C.cuptiSubscribe(&g_sub, api_callback, NULL));
    if (r != CUPTI_SUCCESS) {
        if (busy(r))
            cupti_give_up(GS_NOTE_CUPTI_BUSY, "CUPTI is held by another profiler (%s)", g_err);
        else
            cupti_give_up(GS_NOTE_CUPTI_UNAVAILABLE, "CUPTI unavailable: %s", g_err);
        return;
    }
    if (!C.cuptiActivityRegisterTimestampCallback ||
        CUPTI_CALL(C.cuptiActivityRegisterTimestampCallback(ts_callback)) != CUPTI_SUCCESS)
        measure_clock_offset();
    if (CUPTI_CALL(C.cuptiActivityRegisterCallbacks(buf_requested, buf_completed)) !=
        CUPTI_SUCCESS) {
        C.cuptiUnsubscribe(g_sub);
        cupti_give_up(GS_NOTE_CUPTI_UNAVAILABLE, "CUPTI unavailable: %s", g_err);
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
            cupti_give_up(GS_NOTE_CUPTI_BUSY, "CUPTI is held by another profiler (%s)", g_err);
        else
            cupti_give_up(GS_NOTE_CUPTI_UNAVAILABLE, "CUPTI unavailable: %s", g_err);
        return;
    }
    /* optional: correlation ids for the host copy records; periodic flush */
    for (size_t i = 0; i < sizeof g_corr_cbids / sizeof g_corr_cbids[0]; i++)
        CUPTI_CALL(C.cuptiEnableCallback(1, g_sub, CUPTI_CB_DOMAIN_RUNTIME_API, g_corr_cbids[i]));
    if (C.cuptiActivityFlushPeriod)
        CUPTI_CALL(C.cuptiActivityFlushPeriod(GS_CUPTI_FLUSH_PERIOD_MS));
    gs_sink_started(); /* tick and drain from the program's descriptor table */
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
 * image). from_hooks: called from a hook, not from the driver's
 * initialisation. */
static void cupti_start(int from_hooks)
{
    g_from_hooks = from_hooks;
    pthread_once(&g_once, start_guarded);
}

/* Who the driver will call at its initialisation (CUDA_INJECTION64_PATH). */
enum injection { INJ_NONE, INJ_US, INJ_OTHER };

static enum injection injection(void)
{
    static _Atomic int cached = -1;
    int c = atomic_load(&cached);
    if (c >= 0)
        return (enum injection)c;
    c = INJ_NONE;
    const char *inj = getenv("CUDA_INJECTION64_PATH");
    Dl_info info;
    struct stat a, b;
    if (inj && *inj) {
        c = INJ_OTHER;
        if (dladdr((void *)injection, &info) && info.dli_fname &&
            syscall(SYS_newfstatat, AT_FDCWD, inj, &a, 0) == 0 &&
            syscall(SYS_newfstatat, AT_FDCWD, info.dli_fname, &b, 0) == 0 &&
            a.st_dev == b.st_dev && a.st_ino == b.st_ino)
            c = INJ_US;
    }
    atomic_store(&cached, c);
    return (enum injection)c;
}

/* The hooks' first CUDA call.
 * RATIONALE: when CUDA_INJECTION64_PATH names us, the driver calls
 * InitializeInjection inside its own initialisation (holding its own
 * locks); starting CUPTI from here as well could race it. With no usable
 * driver nothing will call it: say so here. When it names another library
 * (nsys sets it), that profiler takes CUPTI inside the same initialisation:
 * subscribing first from here would break it, so CUPTI is left to it. */
static void cupti_first_call(void)
{
    switch (injection()) {
    case INJ_NONE:
        cupti_start(1);
        return;
    case INJ_OTHER: {
        gs_sink_held h = gs_sink_hold();
        if (atomic_load(&g_state) == ST_IDLE) {
            atomic_store(&g_state, ST_OFF);
            cupti_give_up(GS_NOTE_CUPTI_BUSY,
                          "CUPTI is held by another profiler (CUDA_INJECTION64_PATH=%s)",
                          getenv("CUDA_INJECTION64_PATH"));
        }
        gs_sink_release(h);
        return;
    }
    case INJ_US: {
        gs_sink_held h = gs_sink_hold();
        char why[320];
        if (!driver_ready(0, why, sizeof why))
            cupti_start(0); /* gives up with the warning */
        gs_sink_release(h);
        return;
    }
    }
}

/* The driver's injection entry point (CUDA_INJECTION64_PATH): called once,
 * inside the first CUDA initialisation of the process. */
__attribute__((visibility("default"))) int InitializeInjection(void);
__attribute__((visibility("default"))) int InitializeInjection(void)
{
    gs_sink_init(); /* loaded by the driver alone (no LD_PRELOAD): start up here */
    cupti_start(0);
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
