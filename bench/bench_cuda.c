/* bench_cuda.c — the cudaMemcpyAsync hook's host-side cost.
 *
 *   bench_cuda CALLS     (run under LD_PRELOAD=libgpustarve.so, against the
 *       simulated runtime: LD_LIBRARY_PATH=build/simcuda) blocks of 64-byte
 *       pinned host-to-device cudaMemcpyAsync calls through the hooked symbol
 *       alternate with blocks through libcudart's own (found with
 *       dlopen("libcudart.so.13", RTLD_NOLOAD) + dlsym), so both see the same
 *       machine and the same simulator state; prints
 *       "traced_ns untraced_ns added_ns", each the median over blocks,
 *       added = median of the per-pair differences.
 *   bench_cuda CALLS --armed  the same between two hooked kinds of block:
 *       groups of 8 calls, each after a step_end marker of class optimizer
 *       (a training thread's update: the collector samples the thread's
 *       clocks at both ends of its next 8 CUDA calls, its batch making),
 *       against the same groups after a plain step_end; prints
 *       "armed_ns plain_ns added_ns" per call.
 */
#define _GNU_SOURCE
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_clock.h"
#include "bench_median.h"

typedef cudaError_t (*copy_fn)(void *, const void *, size_t, enum cudaMemcpyKind, cudaStream_t);

static void *dev, *host;
static cudaStream_t stream;

typedef void (*step_end_fn)(unsigned long long, unsigned);
static step_end_fn step_end; /* gpustarve_step_end, for --armed */
static unsigned group_class;  /* the marker's class bits before each 8 calls; none: no marker */

static double run_block(copy_fn fn, long calls)
{
    const double t0 = now_ns();
    for (long i = 0; i < calls; i++) {
        if (step_end && i % 8 == 0)
            step_end((unsigned long long)i, group_class);
        if (fn(dev, host, 64, cudaMemcpyHostToDevice, stream) != cudaSuccess)
            exit(1);
    }
    return (now_ns() - t0) / (double)calls;
}

int main(int argc, char **argv)
{
    const long calls = argc > 1 ? atol(argv[1]) : 200000;
    if (cudaMalloc(&dev, 4096) != cudaSuccess || cudaMallocHost(&host, 4096) != cudaSuccess ||
        cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) != cudaSuccess) {
        fprintf(stderr, "bench_cuda: CUDA set-up failed\n");
        return 1;
    }
    void *rt = dlopen("libcudart.so.13", RTLD_NOW | RTLD_NOLOAD);
    copy_fn plain = rt ? (copy_fn)dlsym(rt, "cudaMemcpyAsync") : NULL;
    copy_fn hooked = cudaMemcpyAsync;
    if (!plain || plain == hooked) {
        fprintf(stderr, "bench_cuda: cannot find libcudart's own cudaMemcpyAsync "
                        "(not preloaded?)\n");
        return 1;
    }
    const int armed = argc > 2 && !strcmp(argv[2], "--armed");
    if (armed) {
        step_end = (step_end_fn)dlsym(RTLD_DEFAULT, "gpustarve_step_end");
        if (!step_end) {
            fprintf(stderr, "bench_cuda: no gpustarve_step_end (not preloaded?)\n");
            return 1;
        }
    }
    /* RATIONALE: class bits as docs/trace-format.md packs them (gs_mark_class) */
    const unsigned cls_armed = 2u << 24, cls_plain = 0;
    enum { BLOCK = 1000 };
    int pairs = (int)(calls / BLOCK / 2);
    if (pairs < 3)
        pairs = 3;
    double *t = malloc(sizeof(double) * (size_t)pairs * 3);
    double *u = t + pairs, *d = u + pairs;
    run_block(hooked, BLOCK); /* first calls: lazy resolution, CUPTI start */
    copy_fn second = armed ? hooked : plain;
    for (int i = 0; i < pairs; i++) {
        for (int k = 0; k < 2; k++) {
            if ((i + k) % 2) {
                group_class = cls_armed;
                t[i] = run_block(hooked, BLOCK);
            } else {
                group_class = cls_plain;
                u[i] = run_block(second, BLOCK);
            }
        }
        d[i] = t[i] - u[i];
        if (i % 20 == 19)
            cudaStreamSynchronize(stream); /* keep the simulated queue short */
    }
    cudaStreamSynchronize(stream);
    printf("%.2f %.2f %.2f\n", median(t, pairs), median(u, pairs), median(d, pairs));
    return 0;
}
