/* hook_cudrv.c — CUDA driver-API hooks: the calls that pin host memory
 * without the runtime, and the lookups that hand out driver functions.
 *
 * Responsible for: cuMemHostAlloc, cuMemAllocHost (and _v2), cuMemFreeHost,
 * cuMemHostRegister (and _v2), cuMemHostUnregister — cuda_host_mem records
 * and the pinned registry (gs_pinned.c), as the runtime hooks do for
 * cudaHostAlloc & co., so that CuPy, JAX, TensorFlow and custom C++ that pin
 * through the driver classify right; and the lookups cuGetProcAddress[_v2],
 * cudaGetDriverEntryPoint[_ptsz] and cudaGetDriverEntryPointByVersion[_ptsz]:
 * when one of them hands out one of those functions (or cuGetProcAddress
 * itself), the caller gets our hook instead, which calls the pointer the
 * driver handed out.
 *
 * A function handed out by a lookup is matched by name and by the CUDA
 * version the caller asked for (cuMemAllocHost and cuMemHostRegister have a
 * 32-bit size before CUDA 3.2 and 6.5): each hook has one real pointer per
 * ABI, taken from the first lookup, or from dlsym when the program calls
 * the exported name. A lookup that hands out another pointer for a hook
 * whose real one is already set still gets the hook when the function
 * takes no stream (the pinning calls: the driver's exported symbol and its
 * lookup are one function of one ABI), and is passed through unchanged
 * otherwise (cuGetProcAddress: its per-thread-stream form is another
 * function, never to be swapped for the legacy one).
 *
 * Must never: link or include CUDA, call the driver itself, change what a
 * call returns or leaves in errno, call through NULL (a missing real
 * function returns CUDA_ERROR_NOT_FOUND), or touch a lookup that failed.
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "gs_cuda_types.h"
#include "gs_cpustat.h"
#include "gs_cudalib.h"
#include "gs_pinned.h"
#include "gs_preload.h"
#include "gs_strings.h"

typedef int gs_curesult;                /* CUresult */
#define GS_CU_SUCCESS 0
#define GS_CU_ERROR_NOT_FOUND 500       /* CUDA_ERROR_NOT_FOUND (cuda.h) */

/* ---- the hooked driver functions ------------------------------------------------ */

/* X(name, exported symbol, since: CUDA version from which a lookup of name
 *   hands out this ABI, (parameter types)); every one returns CUresult. */
#define GS_CUDRV_LIST(X)                                                                \
    X(cuMemHostAlloc, "cuMemHostAlloc", 2020, (void **, size_t, unsigned))              \
    X(cuMemAllocHost_v2, "cuMemAllocHost_v2", 3020, (void **, size_t))                  \
    X(cuMemAllocHost, "cuMemAllocHost", 0, (void **, unsigned))                         \
    X(cuMemFreeHost, "cuMemFreeHost", 0, (void *))                                      \
    X(cuMemHostRegister_v2, "cuMemHostRegister_v2", 6050, (void *, size_t, unsigned))   \
    X(cuMemHostRegister, "cuMemHostRegister", 0, (void *, unsigned, unsigned))          \
    X(cuMemHostUnregister, "cuMemHostUnregister", 0, (void *))

enum {
#define GS_X_ENUM(name, sym, since, args) DRV_##name,
    GS_CUDRV_LIST(GS_X_ENUM)
#undef GS_X_ENUM
    DRV_COUNT
};

#define GS_X_TYPE(name, sym, since, args) typedef gs_curesult (*drv_##name##_fn) args;
GS_CUDRV_LIST(GS_X_TYPE)
#undef GS_X_TYPE

static const char *const drv_syms[DRV_COUNT] = {
#define GS_X_NAME(name, sym, since, args) sym,
    GS_CUDRV_LIST(GS_X_NAME)
#undef GS_X_NAME
};

static void *_Atomic drv_fns[DRV_COUNT];
static _Atomic uint32_t drv_strs[DRV_COUNT]; /* interned API names, 0 = not yet */

static void *resolve_slow(int i)
{
    void *p = gs_cuda_sym(drv_syms[i], "libcuda.so");
    if (p) {
        void *none = NULL;
        atomic_compare_exchange_strong(&drv_fns[i], &none, p);
        p = atomic_load(&drv_fns[i]);
    }
    return p;
}

static inline void *drv_real(int i)
{
    void *p = atomic_load_explicit(&drv_fns[i], memory_order_acquire);
    return GS_LIKELY(p != NULL) ? p : resolve_slow(i);
}

#define DRV_REAL(name) ((drv_##name##_fn)drv_real(DRV_##name))

static uint32_t drv_str(int i)
{
    uint32_t id = atomic_load_explicit(&drv_strs[i], memory_order_relaxed);
    if (GS_UNLIKELY(!id)) {
        /* the API's name, without the ABI suffix */
        size_t n = strlen(drv_syms[i]);
        if (n > 3 && strcmp(drv_syms[i] + n - 3, "_v2") == 0)
            n -= 3;
        id = gs_str_intern(drv_syms[i], n);
        atomic_store_explicit(&drv_strs[i], id, memory_order_relaxed);
    }
    return id;
}

/* ---- records ---------------------------------------------------------------------- */

static void record(int api, uint64_t t0, gs_curesult ret, const void *addr, uint64_t bytes,
                   unsigned flags)
{
    gs_rec r = GS_REC_INIT(GS_K_CUDA_HOST_MEM, t0);
    r.dur = gs_cpu_cut_end() - t0;
    r.str = drv_str(api);
    r.ret = ret;
    r.aux = (uint64_t)(uintptr_t)addr;
    r.bytes = bytes;
    r.aux2 = flags;
    gs_emit(&r);
}

/* The halves of an allocating or registering call: after the real call
 * (errno saved by the caller), register the range when it succeeded. */
static void pinned_end(int api, uint64_t t0, gs_curesult ret, void *got, uint64_t bytes,
                       unsigned flags)
{
    if (ret == GS_CU_SUCCESS && got)
        gs_pinned_add(got, bytes);
    record(api, t0, ret, ret == GS_CU_SUCCESS ? got : NULL, bytes, flags);
}

/* The common body of cuMemFreeHost and cuMemHostUnregister. RATIONALE: the
 * range leaves the registry before the real call and comes back when the
 * call fails (an address freed can be handed out again at once). */
typedef gs_curesult (*drv_release_fn)(void *);

static gs_curesult release(int api, drv_release_fn real, void *p)
{
    if (!real)
        return GS_CU_ERROR_NOT_FOUND;
    if (!gs_enter())
        return real(p);
    uint64_t len = 0;
    int had = p && gs_pinned_remove(p, &len) == 0;
    uint64_t t0 = gs_cpu_cut_begin();
    gs_curesult ret = real(p);
    int err = errno;
    if (had && ret != GS_CU_SUCCESS)
        gs_pinned_add(p, len);
    record(api, t0, ret, p, len, 0);
    gs_leave();
    errno = err;
    return ret;
}

/* Everything defined below that is not static is a hook: exported (the
 * version script in libgpustarve.map lists the names). */
#pragma GCC visibility push(default)

gs_curesult cuMemHostAlloc(void **pp, size_t bytes, unsigned flags)
{
    drv_cuMemHostAlloc_fn real = DRV_REAL(cuMemHostAlloc);
    if (!real)
        return GS_CU_ERROR_NOT_FOUND;
    if (!gs_enter())
        return real(pp, bytes, flags);
    uint64_t t0 = gs_cpu_cut_begin();
    gs_curesult ret = real(pp, bytes, flags);
    int err = errno;
    pinned_end(DRV_cuMemHostAlloc, t0, ret, gs_launder(pp) ? *pp : NULL, bytes, flags);
    gs_leave();
    errno = err;
    return ret;
}

gs_curesult cuMemAllocHost_v2(void **pp, size_t bytes)
{
    drv_cuMemAllocHost_v2_fn real = DRV_REAL(cuMemAllocHost_v2);
    if (!real)
        return GS_CU_ERROR_NOT_FOUND;
    if (!gs_enter())
        return real(pp, bytes);
    uint64_t t0 = gs_cpu_cut_begin();
    gs_curesult ret = real(pp, bytes);
    int err = errno;
    pinned_end(DRV_cuMemAllocHost_v2, t0, ret, gs_launder(pp) ? *pp : NULL, bytes, 0);
    gs_leave();
    errno = err;
    return ret;
}

gs_curesult cuMemAllocHost(void **pp, unsigned bytes)
{
    drv_cuMemAllocHost_fn real = DRV_REAL(cuMemAllocHost);
    if (!real)
        return GS_CU_ERROR_NOT_FOUND;
    if (!gs_enter())
        return real(pp, bytes);
    uint64_t t0 = gs_cpu_cut_begin();
    gs_curesult ret = real(pp, bytes);
    int err = errno;
    pinned_end(DRV_cuMemAllocHost, t0, ret, gs_launder(pp) ? *pp : NULL, bytes, 0);
    gs_leave();
    errno = err;
    return ret;
}

gs_curesult cuMemHostRegister_v2(void *p, size_t bytes, unsigned flags)
{
    drv_cuMemHostRegister_v2_fn real = DRV_REAL(cuMemHostRegister_v2);
    if (!real)
        return GS_CU_ERROR_NOT_FOUND;
    if (!gs_enter())
        return real(p, bytes, flags);
    uint64_t t0 = gs_cpu_cut_begin();
    gs_curesult ret = real(p, bytes, flags);
    int err = errno;
    pinned_end(DRV_cuMemHostRegister_v2, t0, ret, p, bytes, flags);
    gs_leave();
    errno = err;
    return ret;
}

gs_curesult cuMemHostRegister(void *p, unsigned bytes, unsigned flags)
{
    drv_cuMemHostRegister_fn real = DRV_REAL(cuMemHostRegister);
    if (!real)
        return GS_CU_ERROR_NOT_FOUND;
    if (!gs_enter())
        return real(p, bytes, flags);
    uint64_t t0 = gs_cpu_cut_begin();
    gs_curesult ret = real(p, bytes, flags);
    int err = errno;
    pinned_end(DRV_cuMemHostRegister, t0, ret, p, bytes, flags);
    gs_leave();
    errno = err;
    return ret;
}

gs_curesult cuMemFreeHost(void *p)
{
    return release(DRV_cuMemFreeHost, DRV_REAL(cuMemFreeHost), p);
}

gs_curesult cuMemHostUnregister(void *p)
{
    return release(DRV_cuMemHostUnregister, DRV_REAL(cuMemHostUnregister), p);
}

#pragma GCC visibility pop

/* ---- lookups ------------------------------------------------------------------------ */

typedef gs_curesult (*getproc_v1_fn)(const char *, void **, int, uint64_t);
typedef gs_curesult (*getproc_v2_fn)(const char *, void **, int, uint64_t, void *);
typedef int (*entry_fn)(const char *, void **, unsigned long long, void *);
typedef int (*entry_ver_fn)(const char *, void **, unsigned, unsigned long long, void *);

static void *_Atomic g_getproc_v1, *_Atomic g_getproc_v2; /* the driver's lookups */

gs_curesult cuGetProcAddress(const char *, void **, int, uint64_t) GS_EXPORT;
gs_curesult cuGetProcAddress_v2(const char *, void **, int, uint64_t, void *) GS_EXPORT;

/* Our hook for what a lookup of `symbol` (by a caller of CUDA `version`)
 * handed out in *pfn: NULL to leave it alone. */
static void *hook_for(const char *symbol, int version, void *got)
{
    static const struct {
        const char *name;
        int since;
        int api;    /* DRV_*, or -1 / -2: cuGetProcAddress v1 / v2 */
        int strict; /* only the very pointer the real slot holds */
        void *hook;
    } table[] = {
        {"cuMemHostAlloc", 0, DRV_cuMemHostAlloc, 0, (void *)cuMemHostAlloc},
        {"cuMemAllocHost", 3020, DRV_cuMemAllocHost_v2, 0, (void *)cuMemAllocHost_v2},
        {"cuMemAllocHost", 0, DRV_cuMemAllocHost, 0, (void *)cuMemAllocHost},
        {"cuMemFreeHost", 0, DRV_cuMemFreeHost, 0, (void *)cuMemFreeHost},
        {"cuMemHostRegister", 6050, DRV_cuMemHostRegister_v2, 0, (void *)cuMemHostRegister_v2},
        {"cuMemHostRegister", 0, DRV_cuMemHostRegister, 0, (void *)cuMemHostRegister},
        {"cuMemHostUnregister", 0, DRV_cuMemHostUnregister, 0, (void *)cuMemHostUnregister},
        {"cuGetProcAddress", 12000, -2, 1, (void *)cuGetProcAddress_v2},
        {"cuGetProcAddress", 0, -1, 1, (void *)cuGetProcAddress},
    };
    if (!symbol || !got)
        return NULL;
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++) {
        if (strcmp(table[i].name, symbol) != 0 || version < table[i].since)
            continue;
        void *_Atomic *slot = table[i].api >= 0 ? &drv_fns[table[i].api]
                              : table[i].api == -1 ? &g_getproc_v1
                                                   : &g_getproc_v2;
        if (got == table[i].hook)
            return NULL; /* ours already (the lookup went through a hook) */
        void *none = NULL;
        if (atomic_compare_exchange_strong(slot, &none, got) || none == got || !table[i].strict)
            return table[i].hook;
        return NULL; /* another function for the same name: hands off */
    }
    return NULL;
}

/* After a lookup that succeeded: swap in our hook where there is one. */
static void wrap(const char *symbol, void **pfn, int version)
{
    symbol = (const char *)gs_launder(symbol);
    pfn = (void **)gs_launder(pfn);
    if (!symbol || !pfn || !*pfn)
        return;
    void *h = hook_for(symbol, version, *pfn);
    if (h)
        *pfn = h;
}

/* A lookup function: the driver's (cuGetProcAddress) or the runtime's
 * (cudaGetDriverEntryPoint...), resolved on first use. */
/* After a lookup: wrap what it handed out when it succeeded; errno kept. */
static void after_lookup(int ok, const char *symbol, void **pfn, int version)
{
    if (!ok)
        return;
    int err = errno;
    wrap(symbol, pfn, version);
    errno = err;
}

static void *lookup_real(void *_Atomic *slot, const char *name)
{
    void *p = atomic_load(slot);
    if (p)
        return p;
    p = gs_cuda_sym(name, strncmp(name, "cuda", 4) == 0 ? "libcudart" : "libcuda.so");
    if (p) {
        void *none = NULL;
        atomic_compare_exchange_strong(slot, &none, p);
        p = atomic_load(slot);
    }
    return p;
}

/* The runtime's lookups, resolved lazily like the runtime hooks. */
static void *_Atomic g_entry, *_Atomic g_entry_ptsz, *_Atomic g_entry_ver, *_Atomic g_entry_ver_ptsz;

/* RATIONALE: the runtime's lookups take no CUDA version (or the caller's,
 * ByVersion): it hands out what its own CUDA version knows, so the ABI is
 * that of the runtime in the process, which is 12.x or later wherever
 * cudaGetDriverEntryPoint has its 4-argument form; 11.x's 3-argument form
 * is called with the same registers (the 4th is passed on, never read). */
#define GS_ENTRY_VERSION 12000

#pragma GCC visibility push(default)

gs_curesult cuGetProcAddress(const char *symbol, void **pfn, int version, uint64_t flags)
{
    getproc_v1_fn real = (getproc_v1_fn)lookup_real(&g_getproc_v1, "cuGetProcAddress");
    if (!real)
        return GS_CU_ERROR_NOT_FOUND;
    gs_curesult ret = real(symbol, pfn, version, flags);
    after_lookup(ret == GS_CU_SUCCESS, symbol, pfn, version);
    return ret;
}

gs_curesult cuGetProcAddress_v2(const char *symbol, void **pfn, int version, uint64_t flags,
                                void *status)
{
    getproc_v2_fn real = (getproc_v2_fn)lookup_real(&g_getproc_v2, "cuGetProcAddress_v2");
    if (!real)
        return GS_CU_ERROR_NOT_FOUND;
    gs_curesult ret = real(symbol, pfn, version, flags, status);
    after_lookup(ret == GS_CU_SUCCESS, symbol, pfn, version);
    return ret;
}

int cudaGetDriverEntryPoint(const char *symbol, void **fn, unsigned long long flags, void *status)
{
    entry_fn real = (entry_fn)lookup_real(&g_entry, "cudaGetDriverEntryPoint");
    if (!real)
        return GS_CUDA_NOT_SUPPORTED;
    int ret = real(symbol, fn, flags, status);
    after_lookup(ret == 0, symbol, fn, GS_ENTRY_VERSION);
    return ret;
}

int cudaGetDriverEntryPoint_ptsz(const char *symbol, void **fn, unsigned long long flags,
                                 void *status)
{
    entry_fn real = (entry_fn)lookup_real(&g_entry_ptsz, "cudaGetDriverEntryPoint_ptsz");
    if (!real)
        return GS_CUDA_NOT_SUPPORTED;
    int ret = real(symbol, fn, flags, status);
    after_lookup(ret == 0, symbol, fn, GS_ENTRY_VERSION);
    return ret;
}

int cudaGetDriverEntryPointByVersion(const char *symbol, void **fn, unsigned version,
                                     unsigned long long flags, void *status)
{
    entry_ver_fn real =
        (entry_ver_fn)lookup_real(&g_entry_ver, "cudaGetDriverEntryPointByVersion");
    if (!real)
        return GS_CUDA_NOT_SUPPORTED;
    int ret = real(symbol, fn, version, flags, status);
    after_lookup(ret == 0, symbol, fn, (int)version);
    return ret;
}

int cudaGetDriverEntryPointByVersion_ptsz(const char *symbol, void **fn, unsigned version,
                                          unsigned long long flags, void *status)
{
    entry_ver_fn real =
        (entry_ver_fn)lookup_real(&g_entry_ver_ptsz, "cudaGetDriverEntryPointByVersion_ptsz");
    if (!real)
        return GS_CUDA_NOT_SUPPORTED;
    int ret = real(symbol, fn, version, flags, status);
    after_lookup(ret == 0, symbol, fn, (int)version);
    return ret;
}

#pragma GCC visibility pop
