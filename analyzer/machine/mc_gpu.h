/* mc_gpu.h — the GPU lines of the check: each card's identity against its
 * datasheet row, its PCIe link, its copy and memory bandwidths, its GEMM
 * rates and clock-throttle reasons (mc_gpu.c, mc_gpu_lines.c, mc_gemm.c);
 * and several cards together (mc_multi.c).
 *
 * Must never: leave memory allocated on a device, change a device setting
 * (clocks, power limits, MIG), or fail the command when a library or a
 * call is missing (the line says "cannot tell" and why).
 */
#ifndef MC_GPU_H
#define MC_GPU_H

#include "machine/mc_check.h"
#include "machine/mc_cudalib.h"
#include "machine/mc_datasheet.h"

/* The libraries, loaded once for every GPU line. */
typedef struct mc_cuda {
    mc_cudart rt;
    mc_cublas blas;
    mc_nvml nvml;
    mc_nccl nccl;
    int have_rt, have_blas, have_nvml, have_nccl;
    char rt_why[400], blas_why[400], nvml_why[400], nccl_why[400];
    int ndev; /* devices the runtime sees (0 when it cannot be asked) */
} mc_cuda;

typedef struct mc_gpu {
    int index;
    char name[256];
    char busid[32];  /* "0000:17:00.0", lower case; "" unknown */
    double mem_bytes; /* what the runtime reports */
    int sms, cc_major, cc_minor;
    double clock_mhz, mem_clock_mhz; /* peak, from the runtime; 0 unknown */
    const mc_card *card; /* the datasheet row; NULL unknown card */
    char mig[32];    /* MIG profile ("3g.20gb"), "" none */
    int mig_mode;    /* NVML: MIG on the physical card (1), off (0), unknown (-1) */
    int virt_mode;   /* NVML virtualization mode, -1 unknown */
    void *nvml_dev;  /* NVML handle, NULL none */
    /* the PCIe link: from sysfs, else NVML; gen 0 unknown */
    char link_from[8];
    int cur_gen, cur_width, max_gen, max_width;
    int load_gen, load_width; /* read while copies ran */
    /* measured, GB/s (0 not measured) and TFLOPS */
    double h2d_pinned, h2d_pageable, d2h_pinned, d2h_pageable, d2d;
    double gemm32, gemm16;
    int gemm16_bf16;
    char copy_why[200], gemm_why[400]; /* why a measurement is missing */
    /* NVML during the GEMMs: reasons OR-ed over the samples, SM clocks */
    int reasons_known;
    unsigned long long reasons;
    unsigned sm_clock, sm_clock_max;
} mc_gpu;

/* Load the libraries (cuBLAS, NVML, NCCL only when the runtime sees a
 * device; NCCL only with two or more). Never fails; see the have_* flags. */
void mc_cuda_open(mc_cuda *cu, const mc_opts *o);
/* What the runtime, NVML and sysfs say about device dev. */
void mc_gpu_props(mc_cuda *cu, const mc_opts *o, const mc_sheet *sheet, int dev, mc_gpu *g);
/* Host<->device copies (pinned, pageable), device-to-device bandwidth; the
 * link is read again while pinned copies run. */
void mc_gpu_copies(mc_cuda *cu, const mc_opts *o, mc_gpu *g);
/* Dense GEMMs with cuBLAS (FP32, then BF16 or FP16), NVML sampled while
 * they run (mc_gemm.c). */
void mc_gpu_gemm(mc_cuda *cu, const mc_opts *o, mc_gpu *g);
/* Append the lines of one GPU (mc_gpu_lines.c). */
void mc_gpu_lines(mc_list *l, const mc_cuda *cu, const mc_gpu *g);
/* The cost line: n GPUs at price per GPU-hour, and what an hour of a card
 * that gives its datasheet rate costs at the measured one. */
void mc_cost_line(mc_list *l, const mc_gpu *g, int n, double price);
/* The line saying why there is no GPU to check. */
void mc_gpu_none(mc_list *l, const mc_cuda *cu);

/* `probe`'s copy test: device 0's host-to-device bandwidth from pinned
 * and pageable memory (GB/s), copies of bytes, the median of repeats. 0,
 * or -1 with why set (no runtime, no device, a failed copy); runtime and
 * device get the library's soname and the device's name when known. */
typedef struct mc_h2d {
    double pinned_GBps, pageable_GBps;
    char runtime[64], device[256], why[400];
} mc_h2d;
int mc_h2d_probe(size_t bytes, int repeats, mc_h2d *h);

/* Several GPUs (mc_multi.c): peer copies per pair, the NCCL all-reduce's
 * bus bandwidth, and the scaling of a data-parallel step from 1 to n. */
void mc_multi_lines(mc_list *l, mc_cuda *cu, const mc_opts *o, const mc_gpu *g, int n);

/* The scaling line (mc_scaling.c); bus: the all-reduce's bus bandwidth
 * measured before (GB/s, 0 unknown), to say what limits it. */
void mc_scaling_line(mc_list *l, mc_cuda *cu, const mc_opts *o, const mc_gpu *g, int n, double bus);
/* Enqueue one square GEMM C = A B of type (MC_CUDA_R_*) on handle h's
 * stream (mc_gemm.c). 0 or cuBLAS's status. */
int mc_gemm_enqueue(const mc_cuda *cu, void *h, int type, int n, void *a, void *b, void *c);
/* Fill count elements of a device matrix of type with small normal
 * numbers through host (a pinned buffer of at least count x 4 bytes). */
int mc_gemm_fill(const mc_cudart *rt, void *dst, void *host, size_t count, int type);

/* Helpers shared by the GPU files, exposed for the unit tests. */
/* The PCIe generation of a link speed in GT/s (2.5 -> 1 ... 64 -> 6), 0 unknown. */
int mc_pcie_gen(double gts);
/* What one direction of a link carries, GB/s (after encoding), 0 unknown. */
double mc_pcie_GBps(int gen, int width);
/* The GPU rules (docs/check.md, "GPU"): shares of the expected figure
 * below which a measurement is below spec. */
#define MC_LINK_SHARE 0.70  /* pinned copies against what the link carries */
#define MC_D2D_SHARE 0.70   /* device copies against the memory bandwidth */
#define MC_GEMM_SHARE 0.60  /* cuBLAS GEMM against the datasheet rate */
#define MC_SCALING_EFF 0.90 /* n-GPU throughput against n x one GPU's */
/* A sentence naming the reasons in a clock-event mask ("power cap, HW
 * thermal slowdown"); "" when none that slow the clock. */
void mc_reasons_text(unsigned long long r, char *out, size_t cap);
/* Median of n timings (seconds) turned into a rate bytes/s: bytes / median. */
double mc_rate_median(const double *secs, int n, double bytes);

#endif
