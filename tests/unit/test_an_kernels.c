/* test_an_kernels.c — kernel names for people and by class
 * (analyzer/load/an_kernels.c), on real mangled names; a GPU record's busy class.
 *
 * The NCCL names are from the PyPI wheel nvidia-nccl-cu13 2.30.7 (torch
 * 2.15's NCCL): `nm nvidia/nccl/lib/libnccl.so.2 | grep ncclDevKernel`; the
 * PyTorch one from torch 2.15's lib/libtorch_cuda.so (`nm`). Kernel names
 * are symbols of those libraries, public facts, quoted here as test input.
 */
#include <stdio.h>
#include <string.h>

#include "load/an_kernels.h"
#include "load/an_timeline.h"
#include "gs_check.h"
#include "gs_trace.h"

static const char *const nccl[] = {
    "_Z39ncclDevKernel_AllReduce_Sum_f32_RING_LL24ncclDevKernelArgsStorageILm4096EE",
    "_Z22ncclDevKernel_SendRecv24ncclDevKernelArgsStorageILm4096EE",
    "_Z31ncclDevKernel_AllGather_RING_LL24ncclDevKernelArgsStorageILm4096EE",
    "_Z21ncclDevKernel_Generic24ncclDevKernelArgsStorageILm4096EE",
    /* NCCL before 2.19 named its kernels extern "C"-like, unmangled */
    "ncclKernel_AllReduce_RING_LL_Sum_float",
    /* a collective on a one-rank communicator (single-GPU DDP with ncclAvg) */
    "_ZN43_GLOBAL__N__f824cfd9_10_onerank_cu_fdf4799013oneRankReduceI13FuncPreMulSumIfEEEvPvS3_mmb",
};

static const char torch_elementwise[] =
    "_ZN2at6nativeL29vectorized_elementwise_kernelILi2E18__nv_hdl_wrapper_tILb0ELb1ELb0E11"
    "__nv_dl_tagIPFvRNS_14TensorIteratorEEXadL_ZNS0_12prelu_kernelES5_EELj1EEFdddEJEESt5"
    "arrayIPcLm3EELb0EEEviT0_T1_";

static void test_display(void)
{
    char out[1024];
    ASSERT_TRUE(strcmp(an_kernel_display(nccl[0], out, sizeof out),
                       "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)") == 0);
    ASSERT_TRUE(strncmp(an_kernel_display(torch_elementwise, out, sizeof out),
                        "void at::native::vectorized_elementwise_kernel<2, ", 50) == 0);
    /* plain names and names that are not mangled stay as they are */
    ASSERT_TRUE(strcmp(an_kernel_display("train_step_kernel", out, sizeof out), "train_step_kernel") == 0);
    ASSERT_TRUE(strcmp(an_kernel_display("_Zbroken", out, sizeof out), "_Zbroken") == 0);
    ASSERT_TRUE(strcmp(an_kernel_display(NULL, out, sizeof out), "") == 0);
    /* cut short, still terminated */
    char small[8];
    ASSERT_TRUE(strcmp(an_kernel_display(nccl[0], small, sizeof small), "ncclDev") == 0);
}

static void test_base(void)
{
    char out[256];
    ASSERT_TRUE(strcmp(an_kernel_base(nccl[0], out, sizeof out),
                       "ncclDevKernel_AllReduce_Sum_f32_RING_LL") == 0);
    ASSERT_TRUE(strcmp(an_kernel_base(torch_elementwise, out, sizeof out),
                       "vectorized_elementwise_kernel") == 0);
    ASSERT_TRUE(strcmp(an_kernel_base("_ZN12_GLOBAL__N_16kernelEv", out, sizeof out), "kernel") == 0);
    ASSERT_TRUE(strcmp(an_kernel_base(nccl[5], out, sizeof out), "oneRankReduce") == 0);
    ASSERT_TRUE(strcmp(an_kernel_base("train_step_kernel", out, sizeof out), "train_step_kernel") == 0);
}

static void test_class(void)
{
    for (size_t i = 0; i < sizeof nccl / sizeof nccl[0]; i++)
        ASSERT_EQ(an_kernel_is_comm(nccl[i]), 1);
    ASSERT_EQ(an_kernel_is_comm(torch_elementwise), 0);
    ASSERT_EQ(an_kernel_is_comm("train_step_kernel"), 0);
    /* a compute kernel whose argument types mention NCCL is still compute */
    ASSERT_EQ(an_kernel_is_comm("_Z6reduceP13ncclDevCommPv"), 0);
    ASSERT_EQ(an_kernel_is_comm(NULL), 0);
}

/* A GPU record's busy class: one rule for the analysis and the HTML view. */
static gs_event gpu(unsigned kind, unsigned dir, unsigned src, unsigned dst)
{
    gs_event e;
    memset(&e, 0, sizeof e);
    e.kind = kind;
    e.aux = dir | src << 8 | dst << 16;
    return e;
}

static void test_busy(void)
{
    gs_event e = gpu(GS_K_GPU_KERNEL, 0, 0, 0);
    ASSERT_EQ(an_gpu_busy(&e, 0), AN_BUSY_COMPUTE);
    ASSERT_EQ(an_gpu_busy(&e, 1), AN_BUSY_COMM);
    e = gpu(GS_K_GPU_MEMCPY, GS_DIR_HTOD, GS_MEM_PAGEABLE, GS_MEM_DEVICE);
    ASSERT_EQ(an_gpu_busy(&e, 0), AN_BUSY_H2D_PAGEABLE);
    e = gpu(GS_K_GPU_MEMCPY, GS_DIR_HTOD, GS_MEM_PINNED, GS_MEM_DEVICE);
    ASSERT_EQ(an_gpu_busy(&e, 0), AN_BUSY_H2D_PINNED);
    e = gpu(GS_K_GPU_MEMCPY, GS_DIR_HTOD, GS_MEM_UNKNOWN, GS_MEM_DEVICE);
    ASSERT_EQ(an_gpu_busy(&e, 0), AN_BUSY_OTHER);
    e = gpu(GS_K_GPU_MEMCPY, GS_DIR_PTOP, GS_MEM_DEVICE, GS_MEM_DEVICE);
    ASSERT_EQ(an_gpu_busy(&e, 0), AN_BUSY_COMM);
    e = gpu(GS_K_GPU_MEMCPY, GS_DIR_DTOH, GS_MEM_DEVICE, GS_MEM_PAGEABLE);
    ASSERT_EQ(an_gpu_busy(&e, 0), AN_BUSY_OTHER);
    e = gpu(GS_K_GPU_MEMCPY, GS_DIR_DTOD, GS_MEM_DEVICE, GS_MEM_DEVICE);
    ASSERT_EQ(an_gpu_busy(&e, 1), AN_BUSY_OTHER); /* comm is a kernel's name only */
    e = gpu(GS_K_GPU_MEMSET, GS_MEM_DEVICE, 0, 0);
    ASSERT_EQ(an_gpu_busy(&e, 0), AN_BUSY_OTHER);
}

static void test_stats(void)
{
    an_kstats k;
    memset(&k, 0, sizeof k);
    an_kstats_add(&k, 7, nccl[0], 300);
    an_kstats_add(&k, 3, "train_step_kernel", 500);
    an_kstats_add(&k, 7, nccl[0], 300);
    an_kstats_add(&k, 9000, "b", 10);
    an_kstats_add(&k, 9001, "a", 10);
    an_kstats_add(&k, 0, "no id", 1);
    an_kstats_add(&k, 5, NULL, 1);
    const an_kstat *top[3];
    ASSERT_EQ(an_kstats_top(&k, top, 3), 3);
    ASSERT_TRUE(top[0]->ns == 600 && top[0]->count == 2 && top[0]->comm == 1);
    ASSERT_TRUE(top[1]->ns == 500 && top[1]->comm == 0);
    ASSERT_TRUE(strcmp(top[2]->name, "a") == 0); /* ties by name */
    const an_kstat *all[8];
    ASSERT_EQ(an_kstats_top(&k, all, 8), 4);
    an_kstats_free(&k);
    ASSERT_EQ(an_kstats_top(&k, all, 8), 0);
}

/* As an_events.c adds them: the known path first, else with the name. */
static void add(an_kstats *k, uint32_t id, const char *name, uint64_t dur)
{
    if (!an_kstats_add_known(k, id, dur))
        an_kstats_add(k, id, name, dur);
}

/* String ids are the trace file's: one near 2^30, or above it, is one entry
 * like any other (docs/collector-safety.md, hostile traces): counted, and
 * no table sized by the id. */
static void test_stats_far_ids(void)
{
    an_kstats k;
    memset(&k, 0, sizeof k);
    for (int i = 0; i < 3; i++) {
        add(&k, (1u << 30) - 3, nccl[0], 100);
        add(&k, 0xfffffff0u, "far", 10);
        add(&k, 12, "near", 1);
    }
    ASSERT_EQ(k.n, 3);
    const an_kstat *top[4];
    ASSERT_EQ(an_kstats_top(&k, top, 4), 3);
    ASSERT_TRUE(top[0]->ns == 300 && top[0]->count == 3 && top[0]->comm == 1);
    ASSERT_TRUE(strcmp(top[1]->name, "far") == 0 && top[1]->count == 3);
    ASSERT_TRUE(strcmp(top[2]->name, "near") == 0 && top[2]->count == 3);
    ASSERT_TRUE(k.nid <= (1u << 16)); /* the direct table stays small */
    an_kstats_free(&k);
}

/* Past AN_KSTATS_MAX_NAMES distinct names a process's kernels are summed in
 * two entries by class: the table and the far map stop growing, and no
 * kernel's time is lost (docs/collector-safety.md, hostile traces). */
static void test_stats_name_limit(void)
{
    an_kstats k;
    memset(&k, 0, sizeof k);
    const uint32_t extra = 5000;
    uint64_t want_ns = 0;
    char name[32];
    for (uint32_t i = 0; i < AN_KSTATS_MAX_NAMES + extra; i++) {
        const uint32_t id = i < 1000 ? i + 1 : (1u << 20) + i; /* near ids, then far ones */
        snprintf(name, sizeof name, i % 2 ? "nccl_k%u" : "k%u", i);
        add(&k, id, name, 10);
        want_ns += 10;
    }
    add(&k, (1u << 20) + AN_KSTATS_MAX_NAMES + 1, "k_again", 10); /* past the limit again */
    want_ns += 10;
    ASSERT_EQ(k.n, AN_KSTATS_MAX_NAMES + 2);
    ASSERT_TRUE(k.far.n <= AN_KSTATS_MAX_NAMES); /* merged ids are not mapped */
    ASSERT_EQ(k.merged, extra + 1);
    uint64_t ns = 0, comm = 0;
    for (uint32_t i = 0; i < k.n; i++) {
        ns += k.v[i].ns;
        if (strstr(k.v[i].name, "other"))
            comm += (uint64_t)k.v[i].comm;
    }
    ASSERT_EQ(ns, want_ns);
    ASSERT_EQ(comm, 1); /* one of the two summed entries is communication */
    an_kstats_free(&k);
}

int main(void)
{
    test_stats_name_limit();
    test_display();
    test_base();
    test_class();
    test_busy();
    test_stats();
    test_stats_far_ids();
    return gs_check_done("test_an_kernels");
}
