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
 */
#define _GNU_SOURCE
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "bench_clock.h"
#include "bench_median.h"

typedef cudaError_t (*copy_fn)(void *, const void *, size_t, enum cudaMemcpyKind, cudaStream_t);

static void *dev, *host;
static cudaStream_t stream;

static double run_block(copy_fn fn, long calls)
{
    const double t0 = now_ns();
    for (long i = 0; i < calls; i++)
        if (fn(dev, host, 64, cudaMemcpyHostToDevice, stream) != cudaSuccess)
            exit(1);
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
    enum { BLOCK = 1000 };
    int pairs = (int)(calls / BLOCK / 2);
    if (pairs < 3)
        pairs = 3;
    double *t = malloc(sizeof(double) * (size_t)pairs * 3);
    double *u = t + pairs, *d = u + pairs;
    run_block(hooked, BLOCK); /* first calls: lazy resolution, CUPTI start */
    for (int i = 0; i < pairs; i++) {
        if (i % 2) {
            t[i] = run_block(hooked, BLOCK);
            u[i] = run_block(plain, BLOCK);
        } else {
            u[i] = run_block(plain, BLOCK);
            t[i] = run_block(hooked, BLOCK);
        }
        d[i] = t[i] - u[i];
        if (i % 20 == 19)
            cudaStreamSynchronize(stream); /* keep the simulated queue short */
    }
    cudaStreamSynchronize(stream);
    printf("%.2f %.2f %.2f\n", median(t, pairs), median(u, pairs), median(d, pairs));
    return 0;
}
