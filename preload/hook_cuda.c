/* hook_cuda.c — CUDA runtime hooks: the calls that move host data, pin host
 * memory, or make the host wait for the GPU.
 *
 * Responsible for: cudaMemcpy and its Async/2D/3D/Peer/ToSymbol/FromSymbol
 * forms and their _ptds/_ptsz entry points (one cuda_memcpy record each:
 * direction, bytes, the host side's memory kind from the pinned registry,
 * device, stream); cudaHostAlloc, cudaMallocHost, cudaFreeHost,
 * cudaHostRegister, cudaHostUnregister (cuda_host_mem records, and the
 * pinned registry of gs_pinned.c); cudaStreamSynchronize[_ptsz],
 * cudaDeviceSynchronize, cudaEventSynchronize (cuda_sync: host time
 * blocked); cudaSetDevice (remembered per thread, so records carry the
 * device without calling cudaGetDevice). The first CUDA call seen is
 * passed on to the GPU sources (sink/gs_sink.h, first_cuda_call).
 *
 * Real symbols are resolved lazily, at a hook's first call (gs_cudalib.c): libcudart is
 * often dlopen'ed long after us (PyTorch), possibly into a local scope that
 * dlsym(RTLD_NEXT) cannot see, so a miss falls back to the loaded libcudart
 * found by name (dl_iterate_phdr + dlopen(RTLD_NOLOAD)).
 *
 * Must never: link or include CUDA (the few types needed are declared
 * here), call CUDA itself, lock or allocate on a hook's path, change what
 * the program sees (return value, errno), call through NULL (a missing real
 * symbol returns cudaErrorNotSupported).
 *
 * Every hook has the same beats as the I/O hooks: real symbol (lazy) ->
 * enabled and guard -> t0 -> real call -> save errno -> record -> restore
 * errno -> return the real result.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gs_cpustat.h"
#include "gs_cudalib.h"
#include "gs_pinned.h"
#include "gs_preload.h"
#include "gs_sink.h"
#include "gs_source.h"
#include "gs_stacks.h"
#include "gs_strings.h"

#include "gs_cuda_types.h"

/* ---- one declarative list of every hooked CUDA function ------------------------- */

/* X(name, (parameter types)); every one returns cudaError_t. */
#define GS_CUDA_LIST(X)                                                              \
    X(cudaMemcpy, (void *, const void *, size_t, int))                               \
    X(cudaMemcpy_ptds, (void *, const void *, size_t, int))                          \
    X(cudaMemcpyAsync, (void *, const void *, size_t, int, gs_custream))             \
    X(cudaMemcpyAsync_ptsz, (void *, const void *, size_t, int, gs_custream))        \
    X(cudaMemcpy2D, (void *, size_t, const void *, size_t, size_t, size_t, int))     \
    X(cudaMemcpy2D_ptds, (void *, size_t, const void *, size_t, size_t, size_t, int)) \
    X(cudaMemcpy2DAsync,                                                             \
      (void *, size_t, const void *, size_t, size_t, size_t, int, gs_custream))      \
    X(cudaMemcpy2DAsync_ptsz,                                                        \
      (void *, size_t, const void *, size_t, size_t, size_t, int, gs_custream))      \
    X(cudaMemcpy3D, (gs_cup3d))                                                      \
    X(cudaMemcpy3D_ptds, (gs_cup3d))                                                 \
    X(cudaMemcpy3DAsync, (gs_cup3d, gs_custream))                                    \
    X(cudaMemcpy3DAsync_ptsz, (gs_cup3d, gs_custream))                               \
    X(cudaMemcpyPeer, (void *, int, const void *, int, size_t))                      \
    X(cudaMemcpyPeerAsync, (void *, int, const void *, int, size_t, gs_custream))    \
    X(cudaMemcpyToSymbol, (const void *, const void *, size_t, size_t, int))         \
    X(cudaMemcpyToSymbol_ptds, (const void *, const void *, size_t, size_t, int))    \
    X(cudaMemcpyToSymbolAsync,                                                       \
      (const void *, const void *, size_t, size_t, int, gs_custream))                \
    X(cudaMemcpyToSymbolAsync_ptsz,                                                  \
      (const void *, const void *, size_t, size_t, int, gs_custream))                \
    X(cudaMemcpyFromSymbol, (void *, const void *, size_t, size_t, int))             \
    X(cudaMemcpyFromSymbol_ptds, (void *, const void *, size_t, size_t, int))        \
    X(cudaMemcpyFromSymbolAsync, (void *, const void *, size_t, size_t, int, gs_custream)) \
    X(cudaMemcpyFromSymbolAsync_ptsz,                                                \
      (void *, const void *, size_t, size_t, int, gs_custream))                      \
    X(cudaHostAlloc, (void **, size_t, unsigned))                                    \
    X(cudaMallocHost, (void **, size_t))                                             \
    X(cudaFreeHost, (void *))                                                        \
    X(cudaHostRegister, (void *, size_t, unsigned))                                  \
    X(cudaHostUnregister, (void *))                                                  \
    X(cudaStreamSynchronize, (gs_custream))                                          \
    X(cudaStreamSynchronize_ptsz, (gs_custream))                                     \
    X(cudaDeviceSynchronize, (void))                                                 \
    X(cudaEventSynchronize, (gs_cuevent))                                            \
    X(cudaSetDevice, (int))

enum {
#define GS_X_ENUM(name, args) CU_##name,
    GS_CUDA_LIST(GS_X_ENUM)
#undef GS_X_ENUM
    CU_COUNT
};

#define GS_X_TYPE(name, args) typedef gs_cuerr(*cu_##name##_fn) args;
GS_CUDA_LIST(GS_X_TYPE)
#undef GS_X_TYPE

static const char *const cu_names[CU_COUNT] = {
#define GS_X_NAME(name, args) #name,
    GS_CUDA_LIST(GS_X_NAME)
#undef GS_X_NAME
};

static void *_Atomic cu_fns[CU_COUNT];
static _Atomic uint32_t cu_strs[CU_COUNT]; /* interned API names, 0 = not yet */

/* ---- lazy resolution ------------------------------------------------------------ */

static void *resolve_slow(int i)
{
    void *p = gs_cuda_sym(cu_names[i], "libcudart");
    if (p)
        atomic_store_explicit(&cu_fns[i], p, memory_order_release);
    return p;
}

/* The real function i, resolved on first use; NULL when not loaded (a miss
 * is retried at the next call: the runtime may be loaded by then). */
static inline void *cu_real(int i)
{
    void *p = atomic_load_explicit(&cu_fns[i], memory_order_acquire);
    return GS_LIKELY(p != NULL) ? p : resolve_slow(i);
}

#define CU_REAL(name) ((cu_##name##_fn)cu_real(CU_##name))

static uint32_t cu_str(int i)
{
    uint32_t id = atomic_load_explicit(&cu_strs[i], memory_order_relaxed);
    if (GS_UNLIKELY(!id)) {
        id = gs_str_intern(cu_names[i], strlen(cu_names[i]));
        atomic_store_explicit(&cu_strs[i], id, memory_order_relaxed);
    }
    return id;
}

/* ---- per-thread state, CUPTI start ------------------------------------------------ */

static __thread int t_dev GS_TLS_IE; /* cudaSetDevice's last success here */
/* CUPTI correlation id of the CUDA runtime call the thread is in, when the
 * GPU source's runtime callback saw it (0 = unknown): cleared before a call,
 * recorded after. */
static __thread uint32_t t_cuda_corr GS_TLS_IE;
static _Atomic int g_gpu_kicked;
static pthread_once_t g_gpu_once = PTHREAD_ONCE_INIT;

/* The seam's gs_sink_set_corr (sink/gs_sink.h) lives here: the correlation
 * id is this file's thread-local state. */
void gs_sink_set_corr(uint32_t corr)
{
    t_cuda_corr = corr;
}

static void gpu_start_once(void)
{
    gs_sources_first_cuda_call();
    atomic_store_explicit(&g_gpu_kicked, 1, memory_order_release);
}

/* Called with the guard held, before the real call. */
static inline void gpu_kick(void)
{
    if (GS_UNLIKELY(!atomic_load_explicit(&g_gpu_kicked, memory_order_relaxed)))
        pthread_once(&g_gpu_once, gpu_start_once);
}

/* ---- records ----------------------------------------------------------------------- */

static unsigned host_kind(const void *p)
{
    switch (gs_pinned_lookup(p, NULL, NULL)) {
    case GS_PIN_PINNED: return GS_MEM_PINNED;
    case GS_PIN_PAGEABLE: return GS_MEM_PAGEABLE;
    default: return GS_MEM_UNKNOWN;
    }
}

/* Direction and host memory kind of a copy from its cudaMemcpyKind. For
 * cudaMemcpyDefault (unified addressing) the registry can only say which
 * side is pinned host memory; the direction stays unknown. */
static uint64_t copy_aux(int kind, const void *dst, const void *src)
{
    unsigned dir = GS_DIR_UNKNOWN, mem = GS_MEM_UNKNOWN;
    switch (kind) {
    case CU_H2D: dir = GS_DIR_HTOD; mem = host_kind(src); break;
    case CU_D2H: dir = GS_DIR_DTOH; mem = host_kind(dst); break;
    case CU_D2D: dir = GS_DIR_DTOD; break;
    case CU_H2H: dir = GS_DIR_HTOH; mem = host_kind(src); break;
    default:
        if (gs_pinned_lookup(src, NULL, NULL) == GS_PIN_PINNED ||
            gs_pinned_lookup(dst, NULL, NULL) == GS_PIN_PINNED)
            mem = GS_MEM_PINNED;
        break;
    }
    return gs_pack_host_copy(dir, mem);
}

static void record_copy(int api, uint64_t t0, gs_cuerr ret, uint64_t bytes, uint64_t aux,
                        gs_custream stream, int dev, const void *caller)
{
    gs_rec r = GS_REC_INIT(GS_K_CUDA_MEMCPY, t0);
    r.dur = gs_cpu_cut_end() - t0;
    r.str = cu_str(api);
    r.ret = ret;
    r.bytes = bytes;
    r.aux = aux;
    r.fd = dev;                               /* -> dev */
    r.offset = (int64_t)(uintptr_t)stream;    /* -> stream */
    r.aux2 = t_cuda_corr;                  /* -> corr (0 unless CUPTI told us) */
    r.stack = gs_stack_take(caller); /* after dur: the unwind is not the call's time */
    gs_emit(&r);
}

static void record_sync(int api, uint64_t t0, gs_cuerr ret, uint64_t stream, uint64_t event)
{
    gs_rec r = GS_REC_INIT(GS_K_CUDA_SYNC, t0);
    r.dur = gs_cpu_cut_end() - t0;
    r.str = cu_str(api);
    r.ret = ret;
    r.fd = t_dev;
    r.offset = (int64_t)stream;
    r.aux = event;          /* -> aux2 */
    r.aux2 = t_cuda_corr; /* -> corr */
    gs_emit(&r);
}

static void record_host_mem(int api, uint64_t t0, gs_cuerr ret, const void *addr, uint64_t bytes,
                            unsigned flags)
{
    gs_rec r = GS_REC_INIT(GS_K_CUDA_HOST_MEM, t0);
    r.dur = gs_cpu_cut_end() - t0;
    r.str = cu_str(api);
    r.ret = ret;
    r.aux = (uint64_t)(uintptr_t)addr;
    r.bytes = bytes;
    r.aux2 = flags;
    gs_emit(&r);
}

/* Bytes of a 3D copy: width is bytes for linear memory, elements for a CUDA
 * array (whose element size we cannot know without calling CUDA). */
static uint64_t bytes_3d(gs_cup3d p)
{
    p = (gs_cup3d)gs_launder(p);
    if (!p)
        return 0;
    return (uint64_t)p->extent.width * (p->extent.height ? p->extent.height : 1) *
           (p->extent.depth ? p->extent.depth : 1);
}

static uint64_t aux_3d(gs_cup3d p)
{
    p = (gs_cup3d)gs_launder(p);
    if (!p)
        return 0;
    uint64_t aux = copy_aux(p->kind, p->dstArray ? NULL : p->dstPtr.ptr,
                            p->srcArray ? NULL : p->srcPtr.ptr);
    return aux;
}

/* _ptsz: stream 0 means the calling thread's default stream. */
static inline gs_custream ptsz(gs_custream s)
{
    return s ? s : (gs_custream)GS_STREAM_PER_THREAD;
}

/* The halves around a recorded call. begin: after gs_enter succeeded, before
 * the real call; returns t0. end: right after the real call (saves and
 * restores errno itself), records, and leaves the guard. Neither returns on
 * the hook's behalf. */
static inline uint64_t call_begin(void)
{
    gpu_kick();
    t_cuda_corr = 0;
    return gs_cpu_cut_begin();
}

static void copy_end(int api, uint64_t t0, gs_cuerr ret, uint64_t bytes, int kind,
                     const void *dst, const void *src, gs_custream stream, int dev,
                     const void *caller)
{
    int err = errno;
    record_copy(api, t0, ret, bytes, copy_aux(kind, dst, src), stream, dev, caller);
    gs_leave();
    errno = err;
}

static void copy3d_end(int api, uint64_t t0, gs_cuerr ret, gs_cup3d p, gs_custream stream,
                       const void *caller)
{
    int err = errno;
    record_copy(api, t0, ret, bytes_3d(p), aux_3d(p), stream, t_dev, caller);
    gs_leave();
    errno = err;
}

static void peer_end(int api, uint64_t t0, gs_cuerr ret, uint64_t bytes, gs_custream stream,
                     int dev, const void *caller)
{
    int err = errno;
    record_copy(api, t0, ret, bytes, GS_DIR_PTOP, stream, dev, caller);
    gs_leave();
    errno = err;
}

static void sync_end(int api, uint64_t t0, gs_cuerr ret, uint64_t stream, uint64_t event)
{
    int err = errno;
    record_sync(api, t0, ret, stream, event);
    gs_leave();
    errno = err;
}

/* Everything defined below that is not static is a hook: exported (the
 * version script in libgpustarve.map lists the names). */
#pragma GCC visibility push(default)

/* ---- copies --------------------------------------------------------------------------- */

gs_cuerr cudaMemcpy(void *dst, const void *src, size_t count, int kind)
{
    cu_cudaMemcpy_fn real = CU_REAL(cudaMemcpy);
    if (!real)
        return GS_CUDA_NOT_SUPPORTED;
    if (!gs_enter())
        return real(dst, src, count, kind);
    uint64_t t0 = call_begin();
    gs_cuerr ret = real(dst, src, count, kind);
    copy_end(CU_cudaMemcpy, t0, ret, count, kind, dst, src, NULL, t_dev, GS_CALLER());
    return ret;
}

gs_cuerr cudaMemcpy_ptds(void *dst, const void *src, size_t count, int kind)
{
    cu_cudaMemcpy_ptds_fn real = CU_REAL(cudaMemcpy_ptds);
    if (!real)
        return GS_CUDA_NOT_SUPPORTED;
    if (!gs_enter())
        return real(dst, src, count, kind);
    uint64_t t0 = call_begin();
    gs_cuerr ret = real(dst, src, count, kind);
    copy_end(CU_cudaMemcpy_ptds, t0, ret, count, kind, dst, src, (gs_custream)GS_STREAM_PER_THREAD, t_dev, GS_CALLER());
    return ret;
}

gs_cuerr cudaMemcpyAsync(void *dst, const void *src, size_t count, int kind, gs_custream stream)
{
    cu_cudaMemcpyAsync_fn real = CU_REAL(cudaMemcpyAsync);
    if (!real)
        return GS_CUDA_NOT_SUPPORTED;
    if (!gs_enter())
        return real(dst, src, count, kind, stream);
    uint64_t t0 = call_begin();
    gs_cuerr ret = real(dst, src, count, kind, stream);
    copy_end(CU_cudaMemcpyAsync, t0, ret, count, kind, dst, src, stream, t_dev, GS_CALLER());
    return ret;
}

gs_cuerr cudaMemcpyAsync_ptsz(void *dst, const void *src, size_t count, int kind,
                              gs_custream stream)
{
    cu_cudaMemcpyAsync_ptsz_fn real = CU_REAL(cudaMemcpyAsync_ptsz);
    if (!real)
        return GS_CUDA_NOT_SUPPORTED;
    if (!gs_enter())
        return real(dst, src, count, kind, stream);
    uint64_t t0 = call_begin();
    gs_cuerr ret = real(dst, src, count, kind, stream);
    copy_end(CU_cudaMemcpyAsync_ptsz, t0, ret, count, kind, dst, src, ptsz(stream), t_dev, GS_CALLER());
    return ret;
}

gs_cuerr cudaMemcpy2D(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width,
                      size_t height, int kind)
{
    cu_cudaMemcpy2D_fn real = CU_REAL(cudaMemcpy2D);
    if (!real)
        return GS_CUDA_NOT_SUPPORTED;
    if (!gs_enter())
        return real(dst, dpitch, src, spitch, width, height, kind);
    uint64_t t0 = call_begin();
    gs_cuerr ret = real(dst, dpitch, src, spitch, width, height, kind);
    copy_end(CU_cudaMemcpy2D, t0, ret, (uint64_t)width * height, kind, dst, src, NULL, t_dev, GS_CALLER());
    return ret;
}

gs_cuerr cudaMemcpy2D_ptds(void *dst, size_t dpitch, const void *src, size_t spitch,
                           size_t width, size_t height, int kind)
{
    cu_cudaMemcpy2D_ptds_fn real = CU_REAL(cudaMemcpy2D_ptds);
    if (!real)
        return GS_CUDA_NOT_SUPPORTED;
    if (!gs_enter())
        return real(dst, dpitch, src, spitch, width, height, kind);
    uint64_t t0 = call_begin();
    gs_cuerr ret = real(dst, dpitch, src, spitch, width, height, kind);
    copy_end(CU_cudaMemcpy2D_ptds, t0, ret, (uint64_t)width * height, kind, dst, src, (gs_custream)GS_STREAM_PER_THREAD, t_dev, GS_CALLER());
    return ret;
}

gs_cuerr cudaMemcpy2DAsync(void *dst, size_t dpitch, const void *src, size_t spitch,
                           size_t width, size_t height, int kind, gs_custream stream)
{
    cu_cudaMemcpy2DAsync_fn real = CU_REAL(cudaMemcpy2DAsync);
    if (!real)
        return GS_CUDA_NOT_SUPPORTED;
    if (!gs_enter())
        return real(dst, dpitch, src, spitch, width, height, kind, stream);
    uint64_t t0 = call_begin();
    gs_cuerr ret = real(dst, dpitch, src, spitch, width, height, kind, stream);
    copy_end(CU_cudaMemcpy2DAsync, t0, ret, (uint64_t)width * height, kind, dst, src, stream, t_dev, GS_CALLER());
    return ret;
}

gs_cuerr cudaMemcpy2DAsync_ptsz(void *dst, size_t dpitch, const void *src, size_t spitch,
                                size_t width, size_t height, int kind, gs_custream stream)
{
    cu_cudaMemcpy2DAsync_ptsz_fn real = CU_REAL(cudaMemcpy2DAsync_ptsz);
    if (!real)
        return GS_CUDA_NOT_SUPPORTED;
    if (!gs_enter())
        return real(dst, dpitch, src, spitch, width, height, kind, stream);
    uint64_t t0 = call_begin();
    gs_cuerr ret = real(dst, dpitch, src, spitch, width, height, kind, stream);
    copy_end(CU_cudaMemcpy2DAsync_ptsz, t0, ret, (uint64_t)width * height, kind, dst, src, ptsz(stream), t_dev, GS_CALLER());
    return ret;
}

/* 3D copies: bytes and direction are read from the parameter block after
 * the call (a NULL block is the runtime's error to report, not ours). */
gs_cuerr cudaMemcpy3D(gs_cup3d p)
{
    cu_cudaMemcpy3D_fn real = CU_REAL(cudaMemcpy3D);
    if (!real)
        return GS_CUDA_NOT_SUPPORTED;
    if (!gs_enter())
        return real(p);
    uint64_t t0 = call_begin();
    gs_cuerr ret = real(p);
    copy3d_end(CU_cudaMemcpy3D, t0, ret, p, NULL, GS_CALLER());
    return ret;
}

gs_cuerr cudaMemcpy3D_ptds(gs_cup3d p)
{
    cu_cudaMemcpy3D_ptds_fn real = CU_REAL(cudaMemcpy3D_ptds);
    if (!real)
        return GS_CUDA_NOT_SUPPORTED;
    if (!gs_enter())
        return real(p);
    uint64_t t0 = call_begin();
    gs_cuerr ret = real(p);
    copy3d_end(CU_cudaMemcpy3D_ptds, t0, ret, p, (gs_custream)GS_STREAM_PER_THREAD, GS_CALLER());
    return ret;
}

gs_cuerr cudaMemcpy3DAsync(gs_cup3d p, gs_custream stream)
{
    cu_cudaMemcpy3DAsync_fn real = CU_REAL(cudaMemcpy3DAsync);
    if (!real)
        return GS_CUDA_NOT_SUPPORTED;
    if (!gs_enter())
        return real(p, stream);
    uint64_t t0 = call_begin();
    gs_cuerr ret = real(p, stream);
    copy3d_end(CU_cudaMemcpy3DAsync, t0, ret, p, stream, GS_CALLER());
    return ret;
}

gs_cuerr cudaMemcpy3DAsync_ptsz(gs_cup3d p, gs_custream stream)
{
    cu_cudaMemcpy3DAsync_ptsz_fn real = CU_REAL(cudaMemcpy3DAsync_ptsz);
    if (!real)
        return GS_CUDA_NOT_SUPPORTED;
    if (!gs_enter())
        return real(p, stream);
    uint64_t t0 = call_begin();
    gs_cuerr ret = real(p, stream);
    copy3d_end(CU_cudaMemcpy3DAsync_ptsz, t0, ret, p, ptsz(stream), GS_CALLER());
    return ret;
}

/* Peer copies: no host side; the record's device is the source device. */
gs_cuerr cudaMemcpyPeer(void *dst, int dst_dev, const void *src, int src_dev, size_t count)
{
    cu_cudaMemcpyPeer_fn real = CU_REAL(cudaMemcpyPeer);
    if (!real)
        return GS_CUDA_NOT_SUPPORTED;
    if (!gs_enter())
        return real(dst, dst_dev, src, src_dev, count);
    uint64_t t0 = call_begin();
    gs_cuerr ret = real(dst, dst_dev, src, src_dev, count);
    peer_end(CU_cudaMemcpyPeer, t0, ret, count, NULL, src_dev, GS_CALLER());
    return ret;
}

gs_cuerr cudaMemcpyPeerAsync(void *dst, int dst_dev, const void *src, int src_dev, size_t count,
                             gs_custream stream)
{
    cu_cudaMemcpyPeerAsync_fn real = CU_REAL(cudaMemcpyPeerAsync);
    if (!real)
        return GS_CUDA_NOT_SUPPORTED;
    if (!gs_enter())
        return real(dst, dst_dev, src, src_dev, count, stream);
    uint64_t t0 = call_begin();
    gs_cuerr ret = real(dst, dst_dev, src, src_dev, count, stream);
    peer_end(CU_cudaMemcpyPeerAsync, t0, ret, count, stream, src_dev, GS_CALLER());
    return ret;
}

/* Symbol copies: the symbol is device memory; kind says where the other
 * side is (HostToDevice / DeviceToDevice, or Default). */
gs_cuerr cudaMemcpyToSymbol(const void *sym, const void *src, size_t count, size_t off, int kind)
{
    cu_cudaMemcpyToSymbol_fn real = CU_REAL(cudaMemcpyToSymbol);
    if (!real)
        return GS_CUDA_NOT_SUPPORTED;
    if (!gs_enter())
        return real(sym, src, count, off, kind);
    uint64_t t0 = call_begin();
    gs_cuerr ret = real(sym, src, count, off, kind);
    copy_end(CU_cudaMemcpyToSymbol, t0, ret, count, kind, NULL, src, NULL, t_dev, GS_CALLER());
    return ret;
}

gs_cuerr cudaMemcpyToSymbol_ptds(const void *sym, const void *src, size_t count, size_t off,
                                 int kind)
{
    cu_cudaMemcpyToSymbol_ptds_fn real = CU_REAL(cudaMemcpyToSymbol_ptds);
    if (!real)
        return GS_CUDA_NOT_SUPPORTED;
    if (!gs_enter())
        return real(sym, src, count, off, kind);
    uint64_t t0 = call_begin();
    gs_cuerr ret = real(sym, src, count, off, kind);
    copy_end(CU_cudaMemcpyToSymbol_ptds, t0, ret, count, kind, NULL, src, (gs_custream)GS_STREAM_PER_THREAD, t_dev, GS_CALLER());
    return ret;
}

gs_cuerr cudaMemcpyToSymbolAsync(const void *sym, const void *src, size_t count, size_t off,
                                 int kind, gs_custream stream)
{
    cu_cudaMemcpyToSymbolAsync_fn real = CU_REAL(cudaMemcpyToSymbolAsync);
    if (!real)
        return GS_CUDA_NOT_SUPPORTED;
    if (!gs_enter())
        return real(sym, src, count, off, kind, stream);
    uint64_t t0 = call_begin();
    gs_cuerr ret = real(sym, src, count, off, kind, stream);
    copy_end(CU_cudaMemcpyToSymbolAsync, t0, ret, count, kind, NULL, src, stream, t_dev, GS_CALLER());
    return ret;
}

gs_cuerr cudaMemcpyToSymbolAsync_ptsz(const void *sym, const void *src, size_t count,
                                      size_t off, int kind, gs_custream stream)
{
    cu_cudaMemcpyToSymbolAsync_ptsz_fn real = CU_REAL(cudaMemcpyToSymbolAsync_ptsz);
    if (!real)
        return GS_CUDA_NOT_SUPPORTED;
    if (!gs_enter())
        return real(sym, src, count, off, kind, stream);
    uint64_t t0 = call_begin();
    gs_cuerr ret = real(sym, src, count, off, kind, stream);
    copy_end(CU_cudaMemcpyToSymbolAsync_ptsz, t0, ret, count, kind, NULL, src, ptsz(stream), t_dev, GS_CALLER());
    return ret;
}

gs_cuerr cudaMemcpyFromSymbol(void *dst, const void *sym, size_t count, size_t off, int kind)
{
    cu_cudaMemcpyFromSymbol_fn real = CU_REAL(cudaMemcpyFromSymbol);
    if (!real)
        return GS_CUDA_NOT_SUPPORTED;
    if (!gs_enter())
        return real(dst, sym, count, off, kind);
    uint64_t t0 = call_begin();
    gs_cuerr ret = real(dst, sym, count, off, kind);
    copy_end(CU_cudaMemcpyFromSymbol, t0, ret, count, kind, dst, NULL, NULL, t_dev, GS_CALLER());
    return ret;
}

gs_cuerr cudaMemcpyFromSymbol_ptds(void *dst, const void *sym, size_t count, size_t off,
                                   int kind)
{
    cu_cudaMemcpyFromSymbol_ptds_fn real = CU_REAL(cudaMemcpyFromSymbol_ptds);
    if (!real)
        return GS_CUDA_NOT_SUPPORTED;
    if (!gs_enter())
        return real(dst, sym, count, off, kind);
    uint64_t t0 = call_begin();
    gs_cuerr ret = real(dst, sym, count, off, kind);
    copy_end(CU_cudaMemcpyFromSymbol_ptds, t0, ret, count, kind, dst, NULL, (gs_custream)GS_STREAM_PER_THREAD, t_dev, GS_CALLER());
    return ret;
}

gs_cuerr cudaMemcpyFromSymbolAsync(void *dst, const void *sym, size_t count, size_t off, int kind,
                                   gs_custream stream)
{
    cu_cudaMemcpyFromSymbolAsync_fn real = CU_REAL(cudaMemcpyFromSymbolAsync);
    if (!real)
        return GS_CUDA_NOT_SUPPORTED;
    if (!gs_enter())
        return real(dst, sym, count, off, kind, stream);
    uint64_t t0 = call_begin();
    gs_cuerr ret = real(dst, sym, count, off, kind, stream);
    copy_end(CU_cudaMemcpyFromSymbolAsync, t0, ret, count, kind, dst, NULL, stream, t_dev, GS_CALLER());
    return ret;
}

gs_cuerr cudaMemcpyFromSymbolAsync_ptsz(void *dst, const void *sym, size_t count, size_t off,
                                        int kind, gs_custream stream)
{
    cu_cudaMemcpyFromSymbolAsync_ptsz_fn real = CU_REAL(cudaMemcpyFromSymbolAsync_ptsz);
    if (!real)
        return GS_CUDA_NOT_SUPPORTED;
    if (!gs_enter())
        return real(dst, sym, count, off, kind, stream);
    uint64_t t0 = call_begin();
    gs_cuerr ret = real(dst, sym, count, off, kind, stream);
    copy_end(CU_cudaMemcpyFromSymbolAsync_ptsz, t0, ret, count, kind, dst, NULL, ptsz(stream), t_dev, GS_CALLER());
    return ret;
}

/* ---- pinned host memory ------------------------------------------------------------------ */

gs_cuerr cudaHostAlloc(void **p, size_t size, unsigned flags)
{
    cu_cudaHostAlloc_fn real = CU_REAL(cudaHostAlloc);
    if (!real)
        return GS_CUDA_NOT_SUPPORTED;
    if (!gs_enter())
        return real(p, size, flags);
    gpu_kick();
    uint64_t t0 = gs_cpu_cut_begin();
    gs_cuerr ret = real(p, size, flags);
    int err = errno;
    void *got = (ret == GS_CUDA_SUCCESS && gs_launder(p)) ? *p : NULL;
    if (got)
        gs_pinned_add(got, size);
    record_host_mem(CU_cudaHostAlloc, t0, ret, got, size, flags);
    gs_leave();
    errno = err;
    return ret;
}

gs_cuerr cudaMallocHost(void **p, size_t size)
{
    cu_cudaMallocHost_fn real = CU_REAL(cudaMallocHost);
    if (!real)
        return GS_CUDA_NOT_SUPPORTED;
    if (!gs_enter())
        return real(p, size);
    gpu_kick();
    uint64_t t0 = gs_cpu_cut_begin();
    gs_cuerr ret = real(p, size);
    int err = errno;
    void *got = (ret == GS_CUDA_SUCCESS && gs_launder(p)) ? *p : NULL;
    if (got)
        gs_pinned_add(got, size);
    record_host_mem(CU_cudaMallocHost, t0, ret, got, size, 0);
    gs_leave();
    errno = err;
    return ret;
}

/* RATIONALE: the range leaves the registry before the real free, and comes
 * back if the free fails: once freed, the address can be handed out (and
 * registered) again by another thread at once. */
gs_cuerr cudaFreeHost(void *ptr)
{
    cu_cudaFreeHost_fn real = CU_REAL(cudaFreeHost);
    if (!real)
        return GS_CUDA_NOT_SUPPORTED;
    if (!gs_enter())
        return real(ptr);
    gpu_kick();
    uint64_t len = 0;
    int had = ptr && gs_pinned_remove(ptr, &len) == 0;
    uint64_t t0 = gs_cpu_cut_begin();
    gs_cuerr ret = real(ptr);
    int err = errno;
    if (had && ret != GS_CUDA_SUCCESS)
        gs_pinned_add(ptr, len);
    record_host_mem(CU_cudaFreeHost, t0, ret, ptr, len, 0);
    gs_leave();
    errno = err;
    return ret;
}

gs_cuerr cudaHostRegister(void *ptr, size_t size, unsigned flags)
{
    cu_cudaHostRegister_fn real = CU_REAL(cudaHostRegister);
    if (!real)
        return GS_CUDA_NOT_SUPPORTED;
    if (!gs_enter())
        return real(ptr, size, flags);
    gpu_kick();
    uint64_t t0 = gs_cpu_cut_begin();
    gs_cuerr ret = real(ptr, size, flags);
    int err = errno;
    if (ret == GS_CUDA_SUCCESS)
        gs_pinned_add(ptr, size);
    record_host_mem(CU_cudaHostRegister, t0, ret, ptr, size, flags);
    gs_leave();
    errno = err;
    return ret;
}

gs_cuerr cudaHostUnregister(void *ptr)
{
    cu_cudaHostUnregister_fn real = CU_REAL(cudaHostUnregister);
    if (!real)
        return GS_CUDA_NOT_SUPPORTED;
    if (!gs_enter())
        return real(ptr);
    gpu_kick();
    uint64_t len = 0;
    int had = ptr && gs_pinned_remove(ptr, &len) == 0;
    uint64_t t0 = gs_cpu_cut_begin();
    gs_cuerr ret = real(ptr);
    int err = errno;
    if (had && ret != GS_CUDA_SUCCESS)
        gs_pinned_add(ptr, len);
    record_host_mem(CU_cudaHostUnregister, t0, ret, ptr, len, 0);
    gs_leave();
    errno = err;
    return ret;
}

/* ---- synchronisation ----------------------------------------------------------------------- */

gs_cuerr cudaStreamSynchronize(gs_custream stream)
{
    cu_cudaStreamSynchronize_fn real = CU_REAL(cudaStreamSynchronize);
    if (!real)
        return GS_CUDA_NOT_SUPPORTED;
    if (!gs_enter())
        return real(stream);
    uint64_t t0 = call_begin();
    gs_cuerr ret = real(stream);
    sync_end(CU_cudaStreamSynchronize, t0, ret, (uint64_t)(uintptr_t)stream, 0);
    return ret;
}

gs_cuerr cudaStreamSynchronize_ptsz(gs_custream stream)
{
    cu_cudaStreamSynchronize_ptsz_fn real = CU_REAL(cudaStreamSynchronize_ptsz);
    if (!real)
        return GS_CUDA_NOT_SUPPORTED;
    if (!gs_enter())
        return real(stream);
    uint64_t t0 = call_begin();
    gs_cuerr ret = real(stream);
    sync_end(CU_cudaStreamSynchronize_ptsz, t0, ret, (uint64_t)(uintptr_t)ptsz(stream), 0);
    return ret;
}

gs_cuerr cudaDeviceSynchronize(void)
{
    cu_cudaDeviceSynchronize_fn real = CU_REAL(cudaDeviceSynchronize);
    if (!real)
        return GS_CUDA_NOT_SUPPORTED;
    if (!gs_enter())
        return real();
    uint64_t t0 = call_begin();
    gs_cuerr ret = real();
    sync_end(CU_cudaDeviceSynchronize, t0, ret, 0, 0);
    return ret;
}

gs_cuerr cudaEventSynchronize(gs_cuevent event)
{
    cu_cudaEventSynchronize_fn real = CU_REAL(cudaEventSynchronize);
    if (!real)
        return GS_CUDA_NOT_SUPPORTED;
    if (!gs_enter())
        return real(event);
    uint64_t t0 = call_begin();
    gs_cuerr ret = real(event);
    sync_end(CU_cudaEventSynchronize, t0, ret, 0, (uint64_t)(uintptr_t)event);
    return ret;
}

/* ---- device ---------------------------------------------------------------------------------- */

/* Not recorded: only remembered, so later records carry the device. */
gs_cuerr cudaSetDevice(int device)
{
    cu_cudaSetDevice_fn real = CU_REAL(cudaSetDevice);
    if (!real)
        return GS_CUDA_NOT_SUPPORTED;
    if (!gs_enter())
        return real(device);
    gpu_kick();
    gs_cuerr ret = real(device);
    int err = errno;
    if (ret == GS_CUDA_SUCCESS)
        t_dev = device;
    gs_leave();
    errno = err;
    return ret;
}

#pragma GCC visibility pop
