/* simcuda_link.h — the private interface between the simulated libcudart and
 * the simulated libcupti (tests/simcuda/).
 *
 * The runtime knows what its virtual device executes; the CUPTI stand-in turns
 * that into activity records.  They meet through two hidden, versioned
 * symbols, looked up with dlsym at run time so that either library may be
 * loaded first and neither links the other:
 *
 *   libcudart exports  __simcuda_rt_attach(const struct simcuda_sink *)
 *   libcupti  exports  __simcuda_cupti_sink(void) -> const struct simcuda_sink *
 *
 * The stand-in cuBLAS and NCCL (and the driver) reach the runtime through
 * __simcuda_rt(), libcudart's other export, for its devices' streams.
 *
 * libcupti calls __simcuda_rt_attach when a collector first enables activity;
 * libcudart, at its first API call, looks for __simcuda_cupti_sink in an
 * already loaded libcupti.so.13 and attaches itself.  Whichever comes second
 * makes the link; attaching twice is harmless.
 *
 * Everything here is plain C with fixed meanings; no CUDA header is needed.
 * This header must never be included by code outside tests/simcuda/.
 */
#ifndef SIMCUDA_LINK_H
#define SIMCUDA_LINK_H

#include <dlfcn.h>
#include <stddef.h>
#include <stdint.h>

#define SIMCUDA_LINK_VERSION 3

enum simcuda_op_kind {
    SIMCUDA_OP_KERNEL = 1,  /* a kernel executed on the device */
    SIMCUDA_OP_MEMCPY = 2,  /* a copy executed by a copy engine */
    SIMCUDA_OP_MEMSET = 3,
    SIMCUDA_OP_SYNC   = 4,  /* a host thread waited for the device */
    SIMCUDA_OP_API    = 5,  /* a runtime API call (CUPTI RUNTIME kind) */
};

/* One thing that happened.  Times are CLOCK_MONOTONIC nanoseconds and may lie
 * in the future for device work that is queued but not finished yet. */
struct simcuda_op {
    uint32_t kind;           /* enum simcuda_op_kind */
    uint32_t device;
    uint32_t stream_id;      /* CUPTI stream id: 7 legacy default, 13.. others */
    uint32_t correlation_id; /* shared by the API record and its device work */
    uint64_t start, end;
    /* kernels */
    const char *name;        /* registered device name; never freed */
    int32_t grid[3], block[3];
    int32_t dyn_shared;
    /* memcpy / memset */
    uint64_t bytes;
    uint8_t copy_kind;       /* CUpti_ActivityMemcpyKind values */
    uint8_t src_kind;        /* CUpti_ActivityMemoryKind values */
    uint8_t dst_kind;
    uint8_t async;           /* 1: an *Async call */
    uint32_t memset_value;
    /* sync */
    uint32_t sync_type;      /* CUpti_ActivitySynchronizationType values */
    uint32_t event_id;       /* 0 if none */
    /* api */
    uint32_t cbid;           /* CUpti_runtime_api_trace_cbid */
    uint32_t thread_id;      /* gettid() of the calling thread */
    int32_t  result;         /* cudaError_t returned */
};

/* What the runtime tells about its devices (for DEVICE records). */
struct simcuda_device_info {
    const char *name;        /* stable for the life of the process */
    uint64_t global_mem;
    uint32_t sm_count;
    uint32_t clock_khz;
    uint32_t cc_major, cc_minor;
    uint32_t max_threads_per_block;
    uint32_t warp_size;
    uint32_t l2_bytes;
    uint32_t shared_per_block;
    uint32_t regs_per_block;
};

struct simcuda_rt;

/* Implemented by libcupti.  report() may be called from any thread, with no
 * runtime lock held; it must not call back into the runtime. */
struct simcuda_sink {
    int version;             /* SIMCUDA_LINK_VERSION */
    void (*report)(const struct simcuda_op *op);
    /* called by the runtime when it found the sink itself (runtime came second) */
    void (*attached)(const struct simcuda_rt *rt);
    /* a runtime API call of the calling thread begins (exit 0) or ends (1):
     * CUPTI's runtime API callbacks; cbid is CUpti_runtime_api_trace_cbid */
    void (*api)(uint32_t cbid, uint32_t corr, int exit);
};

/* Implemented by libcudart: lets CUPTI ask about the devices (DEVICE
 * records), and the simulated driver (libcuda.so.1) pin host memory in the
 * runtime's pointer registry (cuMemHostAlloc & co.; results are cudaError_t
 * values).  __simcuda_rt_attach(sink) returns it (attach(NULL) detaches);
 * __simcuda_rt() returns it without touching the sink. */
struct simcuda_rt {
    int version;
    int (*device_count)(void);
    int (*device_info)(int dev, struct simcuda_device_info *out);
    int (*host_alloc)(void **p, size_t bytes, unsigned flags);
    int (*host_free)(void *p);
    int (*host_register)(void *p, size_t bytes, unsigned flags);
    int (*host_unregister)(void *p);
    /* device work of the stand-in cuBLAS and NCCL (sim_cublas.c, sim_nccl.c):
     * dur_ns on stream (a cudaStream_t of the runtime; NULL: the legacy
     * stream) of device dev, starting when the stream is free and not
     * before not_before; reported to CUPTI as a kernel called name (never
     * freed). 0 or a cudaError_t; start/end (may be NULL) get its times. */
    int (*enqueue)(void *stream, int dev, uint64_t not_before, uint64_t dur_ns, const char *name,
                   uint64_t *start, uint64_t *end);
    /* When work queued now on that stream would start. */
    uint64_t (*ready_at)(void *stream, int dev);
};

typedef const struct simcuda_rt *(*simcuda_rt_attach_fn)(const struct simcuda_sink *sink);
typedef const struct simcuda_rt *(*simcuda_rt_get_fn)(void);
typedef const struct simcuda_sink *(*simcuda_cupti_sink_fn)(void);

#define SIMCUDA_RT_ATTACH_SYM "__simcuda_rt_attach"
#define SIMCUDA_RT_GET_SYM "__simcuda_rt"
#define SIMCUDA_CUPTI_SINK_SYM "__simcuda_cupti_sink"

/* The simulated runtime of this process, for the libraries beside it (the
 * driver, cuBLAS, NCCL): found by its private symbol, globally or in an
 * already loaded libcudart (RTLD_NOLOAD: this never loads one); NULL when
 * none, or one of another link version. */
static inline const struct simcuda_rt *simcuda_rt_find(void)
{
    simcuda_rt_get_fn get = (simcuda_rt_get_fn)dlsym(RTLD_DEFAULT, SIMCUDA_RT_GET_SYM);
    static const char *const names[] = {"libcudart.so.13", "libcudart.so.12"};
    for (size_t i = 0; !get && i < sizeof names / sizeof names[0]; i++) {
        void *h = dlopen(names[i], RTLD_LAZY | RTLD_NOLOAD);
        if (h) {
            get = (simcuda_rt_get_fn)dlsym(h, SIMCUDA_RT_GET_SYM);
            dlclose(h); /* drops only the reference NOLOAD took */
        }
    }
    const struct simcuda_rt *r = get ? get() : NULL;
    return r && r->version == SIMCUDA_LINK_VERSION ? r : NULL;
}

#endif
