/* hk_cupti_decode.c — unit test of the CUPTI record decoder (cupti/
 * gs_cupti_decode.c) on hand-built records in the CUDA 13 layouts, the CUPTI
 * API versions it accepts, and of
 * the CUDA types preload/ declares itself (gs_cuda_types.h) against the
 * real headers. Not preloaded: run.sh runs it as a plain program.
 * Built only where the CUDA headers are (tests/hooks/rules.mk). */
#include <cuda_runtime_api.h>
#include <cupti_activity.h>
#include <stddef.h>
#include <string.h>

#include "gs_cuda_types.h"
#include "gs_cupti.h"
#include "hk_util.h"

#define SAME_OFFSET(real, ours, field) \
    ASSERT_EQ(offsetof(struct real, field), offsetof(struct ours, field))

static void test_layouts(void)
{
    ASSERT_EQ(sizeof(struct cudaMemcpy3DParms), sizeof(struct gs_cudaMemcpy3DParms));
    SAME_OFFSET(cudaMemcpy3DParms, gs_cudaMemcpy3DParms, srcArray);
    SAME_OFFSET(cudaMemcpy3DParms, gs_cudaMemcpy3DParms, srcPos);
    SAME_OFFSET(cudaMemcpy3DParms, gs_cudaMemcpy3DParms, srcPtr);
    SAME_OFFSET(cudaMemcpy3DParms, gs_cudaMemcpy3DParms, dstArray);
    SAME_OFFSET(cudaMemcpy3DParms, gs_cudaMemcpy3DParms, dstPos);
    SAME_OFFSET(cudaMemcpy3DParms, gs_cudaMemcpy3DParms, dstPtr);
    SAME_OFFSET(cudaMemcpy3DParms, gs_cudaMemcpy3DParms, extent);
    SAME_OFFSET(cudaMemcpy3DParms, gs_cudaMemcpy3DParms, kind);
    SAME_OFFSET(cudaPitchedPtr, gs_cudaPitchedPtr, ptr);
    SAME_OFFSET(cudaPitchedPtr, gs_cudaPitchedPtr, ysize);
    SAME_OFFSET(cudaExtent, gs_cudaExtent, depth);
    ASSERT_EQ(cudaErrorNotSupported, GS_CUDA_NOT_SUPPORTED);
    ASSERT_EQ(cudaSuccess, GS_CUDA_SUCCESS);
    ASSERT_EQ(cudaMemcpyHostToHost, CU_H2H);
    ASSERT_EQ(cudaMemcpyHostToDevice, CU_H2D);
    ASSERT_EQ(cudaMemcpyDeviceToHost, CU_D2H);
    ASSERT_EQ(cudaMemcpyDeviceToDevice, CU_D2D);
    ASSERT_EQ(cudaMemcpyDefault, CU_DEFAULT);
    ASSERT_EQ((uintptr_t)cudaStreamPerThread, GS_STREAM_PER_THREAD);
}

static void test_kernel(void)
{
    CUpti_ActivityKernel10 k;
    memset(&k, 0, sizeof k);
    k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
    k.start = 1000000;
    k.end = 1250000;
    k.deviceId = 3;
    k.streamId = 17;
    k.correlationId = 4242;
    k.name = "train_step_kernel";
    gs_event ev;
    const char *name = NULL;
    ASSERT_EQ(gs_cupti_decode((const CUpti_Activity *)&k, &ev, &name), 1);
    ASSERT_EQ(ev.kind, GS_K_GPU_KERNEL);
    ASSERT_EQ(ev.ts, 1000000);
    ASSERT_EQ(ev.dur, 250000);
    ASSERT_EQ(ev.dev, 3);
    ASSERT_EQ(ev.stream, 17);
    ASSERT_EQ(ev.corr, 4242);
    ASSERT_EQ(ev.tid, 0);
    ASSERT_EQ(ev.str, 0);
    ASSERT_EQ(ev.fd, -1);
    ASSERT_TRUE(name && strcmp(name, "train_step_kernel") == 0);
    /* the plain KERNEL kind has the same layout; an end before the start
     * (never seen, but a record is only data) gives a zero duration */
    k.kind = CUPTI_ACTIVITY_KIND_KERNEL;
    k.end = 999;
    ASSERT_EQ(gs_cupti_decode((const CUpti_Activity *)&k, &ev, &name), 1);
    ASSERT_EQ(ev.dur, 0);
    /* unknown (0) times: unfinished work forced out by a flush */
    k.end = 0;
    ev.kind = 12345;
    ASSERT_EQ(gs_cupti_decode((const CUpti_Activity *)&k, &ev, &name), GS_CUPTI_UNKNOWN_TIME);
    ASSERT_EQ(ev.kind, 12345);
    k.end = 2000000;
    k.start = 0;
    ASSERT_EQ(gs_cupti_decode((const CUpti_Activity *)&k, &ev, &name), GS_CUPTI_UNKNOWN_TIME);
}

static void test_memcpy(void)
{
    static const struct {
        uint8_t copy, src, dst;
        unsigned dir, gsrc, gdst;
    } rows[] = {
        {CUPTI_ACTIVITY_MEMCPY_KIND_HTOD, CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE,
         CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, GS_DIR_HTOD, GS_MEM_PAGEABLE, GS_MEM_DEVICE},
        {CUPTI_ACTIVITY_MEMCPY_KIND_HTOD, CUPTI_ACTIVITY_MEMORY_KIND_PINNED,
         CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, GS_DIR_HTOD, GS_MEM_PINNED, GS_MEM_DEVICE},
        {CUPTI_ACTIVITY_MEMCPY_KIND_DTOH, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE,
         CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE, GS_DIR_DTOH, GS_MEM_DEVICE, GS_MEM_PAGEABLE},
        {CUPTI_ACTIVITY_MEMCPY_KIND_DTOD, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE_STATIC,
         CUPTI_ACTIVITY_MEMORY_KIND_MANAGED, GS_DIR_DTOD, GS_MEM_DEVICE, GS_MEM_MANAGED},
        {CUPTI_ACTIVITY_MEMCPY_KIND_HTOA, CUPTI_ACTIVITY_MEMORY_KIND_PINNED,
         CUPTI_ACTIVITY_MEMORY_KIND_ARRAY, GS_DIR_HTOD, GS_MEM_PINNED, GS_MEM_ARRAY},
        {CUPTI_ACTIVITY_MEMCPY_KIND_ATOH, CUPTI_ACTIVITY_MEMORY_KIND_ARRAY,
         CUPTI_ACTIVITY_MEMORY_KIND_PINNED, GS_DIR_DTOH, GS_MEM_ARRAY, GS_MEM_PINNED},
        {CUPTI_ACTIVITY_MEMCPY_KIND_HTOH, CUPTI_ACTIVITY_MEMORY_KIND_PINNED,
         CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE, GS_DIR_HTOH, GS_MEM_PINNED, GS_MEM_PAGEABLE},
        {CUPTI_ACTIVITY_MEMCPY_KIND_PTOP, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE,
         CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, GS_DIR_PTOP, GS_MEM_DEVICE, GS_MEM_DEVICE},
        {CUPTI_ACTIVITY_MEMCPY_KIND_UNKNOWN, CUPTI_ACTIVITY_MEMORY_KIND_UNKNOWN,
         CUPTI_ACTIVITY_MEMORY_KIND_MANAGED_STATIC, GS_DIR_UNKNOWN, GS_MEM_UNKNOWN, GS_MEM_MANAGED},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        CUpti_ActivityMemcpy6 m;
        memset(&m, 0, sizeof m);
        m.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
        m.copyKind = rows[i].copy;
        m.srcKind = rows[i].src;
        m.dstKind = rows[i].dst;
        m.bytes = 4u << 20;
        m.start = 5000;
        m.end = 9000;
        m.deviceId = 1;
        m.streamId = 7;
        m.correlationId = 99;
        gs_event ev;
        const char *name = "x";
        ASSERT_EQ(gs_cupti_decode((const CUpti_Activity *)&m, &ev, &name), 1);
        ASSERT_EQ(ev.kind, GS_K_GPU_MEMCPY);
        ASSERT_EQ(gs_copy_dir(&ev), rows[i].dir);
        ASSERT_EQ(gs_copy_src_mem(&ev), rows[i].gsrc);
        ASSERT_EQ(gs_copy_dst_mem(&ev), rows[i].gdst);
        ASSERT_EQ(ev.bytes, 4u << 20);
        ASSERT_EQ(ev.ts, 5000);
        ASSERT_EQ(ev.dur, 4000);
        ASSERT_EQ(ev.dev, 1);
        ASSERT_EQ(ev.stream, 7);
        ASSERT_EQ(ev.corr, 99);
        ASSERT_TRUE(name == NULL);
    }
}

static void test_memset_sync_device_other(void)
{
    CUpti_ActivityMemset4 s;
    memset(&s, 0, sizeof s);
    s.kind = CUPTI_ACTIVITY_KIND_MEMSET;
    s.bytes = 4096;
    s.start = 10;
    s.end = 30;
    s.deviceId = 2;
    s.streamId = 5;
    s.correlationId = 6;
    s.memoryKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
    gs_event ev;
    const char *name;
    ASSERT_EQ(gs_cupti_decode((const CUpti_Activity *)&s, &ev, &name), 1);
    ASSERT_EQ(ev.kind, GS_K_GPU_MEMSET);
    s.end = 0;
    ASSERT_EQ(gs_cupti_decode((const CUpti_Activity *)&s, &ev, &name), GS_CUPTI_UNKNOWN_TIME);
    s.end = 30;
    ASSERT_EQ(gs_cupti_decode((const CUpti_Activity *)&s, &ev, &name), 1);
    ASSERT_EQ(ev.bytes, 4096);
    ASSERT_EQ(ev.aux, GS_MEM_DEVICE);
    ASSERT_EQ(ev.dur, 20);
    ASSERT_EQ(ev.dev, 2);

    CUpti_ActivitySynchronization2 y;
    memset(&y, 0, sizeof y);
    y.kind = CUPTI_ACTIVITY_KIND_SYNCHRONIZATION;
    y.type = CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE;
    y.start = 100;
    y.end = 500;
    y.streamId = 13;
    y.correlationId = 77;
    ASSERT_EQ(gs_cupti_decode((const CUpti_Activity *)&y, &ev, &name), 1);
    ASSERT_EQ(ev.kind, GS_K_GPU_SYNC);
    y.start = 0;
    ASSERT_EQ(gs_cupti_decode((const CUpti_Activity *)&y, &ev, &name), GS_CUPTI_UNKNOWN_TIME);
    y.start = 100;
    ASSERT_EQ(ev.aux, 3);
    ASSERT_EQ(ev.stream, 13);
    ASSERT_EQ(ev.corr, 77);
    ASSERT_EQ(ev.dur, 400);
    ASSERT_EQ(ev.dev, 0);

    CUpti_ActivityDevice5 d;
    memset(&d, 0, sizeof d);
    d.kind = CUPTI_ACTIVITY_KIND_DEVICE;
    d.id = 1;
    d.name = "NVIDIA H200";
    d.globalMemorySize = 150ull << 30;
    d.numMultiprocessors = 132;
    d.computeCapabilityMajor = 9;
    d.computeCapabilityMinor = 0;
    ASSERT_EQ(gs_cupti_decode((const CUpti_Activity *)&d, &ev, &name), 1);
    ASSERT_EQ(ev.kind, GS_K_GPU_DEVICE);
    ASSERT_EQ(ev.dev, 1);
    ASSERT_EQ(ev.bytes, 150ull << 30);
    ASSERT_EQ(ev.aux, 132);
    ASSERT_EQ(ev.aux2, 90);
    ASSERT_EQ(ev.ts, 0);
    ASSERT_TRUE(name && strcmp(name, "NVIDIA H200") == 0);

    CUpti_ActivityAPI a;
    memset(&a, 0, sizeof a);
    a.kind = CUPTI_ACTIVITY_KIND_RUNTIME;
    ev.kind = 12345;
    ASSERT_EQ(gs_cupti_decode((const CUpti_Activity *)&a, &ev, &name), 0);
    ASSERT_EQ(ev.kind, 12345); /* untouched */
}

/* cupti_version.h's history: 11.8 is 18, 12.0 19 ... 12.9 update 1 28,
 * then xxyyzz. */
static void test_versions(void)
{
    static const struct {
        uint32_t v;
        int ok;
    } rows[] = {
        {17, 0},     /* 11.6 */
        {18, 1},     /* 11.8 */
        {19, 1},     /* 12.0 */
        {26, 1},     /* 12.8 */
        {28, 1},     /* 12.9 update 1 */
        {29, 0},     /* not a 12.x that exists */
        {130000, 1}, /* 13.0 */
        {130001, 1}, /* 13.0 update 1 */
        {130202, 1}, /* 13.2 */
        {130300, 0}, /* 13.3: layouts not checked */
        {140000, 0},
        {0, 0},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
        ASSERT_EQ(gs_cupti_version_ok(rows[i].v), rows[i].ok);
}

int main(void)
{
    test_versions();
    test_layouts();
    test_kernel();
    test_memcpy();
    test_memset_sync_device_other();
    return hk_report();
}
