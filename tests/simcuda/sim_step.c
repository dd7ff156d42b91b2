/* sim_step.c — a training loop in C for the simulated GPU, in every mode.
 *
 *   sim_step [--steps N] [--batch-mb X] [--load-ms X] [--host-ms X] [--pinned HOW]
 *            [--kernel NAME[*N]]... [--comm NAME] [--tail NAME] [--profile-from N]
 *
 * Built (tests/simcuda/rules.mk) against each mode's libcudart.so.12 or .13
 * and libcuda.so.1, with no nvcc: kernels are registered by name the way
 * nvcc's host stubs do it (__cudaRegisterFatBinary / __cudaRegisterFunction),
 * so a kernel can carry any name — the real mangled NCCL names included —
 * and its duration comes from SIMCUDA_KERNEL_US=name=us.
 *
 * Each step: an NVTX range "train_step" holding "next_batch" (--load-ms of
 * sleep), --host-ms of host work (a sleep outside any range: neither data
 * nor the GPU), a host-to-device copy of the batch (cudaMemcpyAsync on a
 * non-blocking stream), the --kernel kernels in order (default
 * train_step_kernel; NAME*N launches it N times), the --comm kernel when
 * given, and a cudaStreamSynchronize. A kernel whose name holds "nccl" is
 * a collective across the ranks of a job when SIMCUDA_COLLECTIVES names
 * their meeting file (tests/simcuda/README.md, "Collectives across
 * ranks"). The batch is pinned as --pinned says:
 *
 *   0          malloc (pageable)            1         cudaMallocHost
 *   hostalloc  cuMemHostAlloc               allochost cuMemAllocHost
 *   register   malloc + cuMemHostRegister   proc      cuMemHostAlloc from cuGetProcAddress
 *   entry      cuMemHostAlloc from cudaGetDriverEntryPoint
 *   dlsym      cuMemHostAlloc from dlsym on libcuda.so.1 (a path no hook
 *              sees: only CUPTI knows the batch is pinned)
 *
 * --profile-from N makes the program its own profiler from step N (0: before
 * its first CUDA call), as torch.profiler would: cuptiSubscribe,
 * cuptiActivityRegisterCallbacks, cuptiActivityEnable(CONCURRENT_KERNEL)
 * through the libcupti it links; at the end it prints how many kernel
 * records its profiler got.
 *
 * At the end an 8-byte device-to-host copy into a pageable long, the frees,
 * one JSON line on stderr (steps, median step time), and with --tail one
 * more kernel launched and not waited for: the process exits while it
 * runs. A failing call
 * prints its name and code and exits 1 (test code: errors end it).
 */
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <cupti.h>
#include <nvtx3/nvToolsExt.h>

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* What nvcc's host stubs call (crt/host_runtime.h), in C. */
void **__cudaRegisterFatBinary(void *fatCubin);
void __cudaRegisterFatBinaryEnd(void **handle);
void __cudaRegisterFunction(void **handle, const char *hostFun, char *deviceFun,
                            const char *deviceName, int thread_limit, uint3 *tid, uint3 *bid,
                            dim3 *bDim, dim3 *gDim, int *wSize);

#define MAX_KERNELS 8

static void check(const char *what, int r)
{
    if (r != 0) {
        fprintf(stderr, "sim_step: %s failed: %d\n", what, r);
        exit(1);
    }
}

static void sleep_ms(double ms)
{
    if (ms <= 0)
        return;
    struct timespec ts = {(time_t)(ms / 1e3), (long)((ms - (double)(time_t)(ms / 1e3) * 1e3) * 1e6)};
    nanosleep(&ts, NULL);
}

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

typedef CUresult (*host_alloc_fn)(void **, size_t, unsigned int);

/* ---- the program's own profiler (--profile-from) ------------------------------ */

static size_t prof_kernels;

static void CUPTIAPI prof_request(uint8_t **buffer, size_t *size, size_t *max_records)
{
    *size = 1 << 20;
    *buffer = aligned_alloc(8, *size);
    *max_records = 0;
}

static void CUPTIAPI prof_complete(CUcontext ctx, uint32_t stream, uint8_t *buffer, size_t size,
                                   size_t valid)
{
    CUpti_Activity *r = NULL;
    while (cuptiActivityGetNextRecord(buffer, valid, &r) == CUPTI_SUCCESS)
        if (r->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL)
            prof_kernels++;
    free(buffer);
}

static void CUPTIAPI prof_callback(void *ud, CUpti_CallbackDomain d, CUpti_CallbackId id,
                                   const void *data)
{
}

static void profiler_start(void)
{
    CUpti_SubscriberHandle sub;
    check("cuptiSubscribe", cuptiSubscribe(&sub, prof_callback, NULL));
    check("cuptiActivityRegisterCallbacks",
          cuptiActivityRegisterCallbacks(prof_request, prof_complete));
    check("cuptiActivityEnable", cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL));
}

static void *alloc_batch(const char *how, size_t bytes)
{
    void *p = NULL;
    if (strcmp(how, "0") == 0 || strcmp(how, "register") == 0) {
        p = malloc(bytes);
        if (!p)
            check("malloc", 2);
        if (strcmp(how, "register") == 0)
            check("cuMemHostRegister", cuMemHostRegister(p, bytes, 0));
    } else if (strcmp(how, "1") == 0) {
        check("cudaMallocHost", cudaMallocHost(&p, bytes));
    } else if (strcmp(how, "hostalloc") == 0) {
        check("cuMemHostAlloc", cuMemHostAlloc(&p, bytes, 0));
    } else if (strcmp(how, "allochost") == 0) {
        check("cuMemAllocHost", cuMemAllocHost(&p, bytes));
    } else if (strcmp(how, "dlsym") == 0) {
        void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
        host_alloc_fn fn = h ? (host_alloc_fn)dlsym(h, "cuMemHostAlloc") : NULL;
        if (!fn)
            check("dlsym cuMemHostAlloc", 500);
        check("cuMemHostAlloc (dlsym)", fn(&p, bytes, 0));
    } else if (strcmp(how, "proc") == 0 || strcmp(how, "entry") == 0) {
        void *fn = NULL;
        if (how[0] == 'p') {
            CUdriverProcAddressQueryResult st;
            check("cuGetProcAddress", cuGetProcAddress("cuMemHostAlloc", &fn, CUDA_VERSION, 0, &st));
        } else {
            enum cudaDriverEntryPointQueryResult st;
            /* deprecated in CUDA 13, and still what much code calls */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
            check("cudaGetDriverEntryPoint",
                  cudaGetDriverEntryPoint("cuMemHostAlloc", &fn, cudaEnableDefault, &st));
#pragma GCC diagnostic pop
        }
        if (!fn)
            check("driver entry point cuMemHostAlloc", 500);
        check("cuMemHostAlloc (entry point)", ((host_alloc_fn)fn)(&p, bytes, 0));
    } else {
        fprintf(stderr, "sim_step: unknown --pinned %s\n", how);
        exit(2);
    }
    memset(p, 0, bytes);
    return p;
}

static void free_batch(const char *how, void *p)
{
    if (strcmp(how, "0") == 0) {
        free(p);
    } else if (strcmp(how, "register") == 0) {
        check("cuMemHostUnregister", cuMemHostUnregister(p));
        free(p);
    } else if (strcmp(how, "1") == 0) {
        check("cudaFreeHost", cudaFreeHost(p));
    } else {
        check("cuMemFreeHost", cuMemFreeHost(p));
    }
}

int main(int argc, char **argv)
{
    int steps = 8;
    double batch_mb = 1, load_ms = 0, host_ms = 0;
    const char *pinned = "0", *comm = NULL, *tail = NULL;
    int profile_from = -1;
    const char *kernels[MAX_KERNELS];
    int repeat[MAX_KERNELS];
    int nkernels = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!v) {
            fprintf(stderr, "sim_step: %s needs a value\n", a);
            return 2;
        }
        if (strcmp(a, "--steps") == 0)
            steps = atoi(v);
        else if (strcmp(a, "--batch-mb") == 0)
            batch_mb = atof(v);
        else if (strcmp(a, "--load-ms") == 0)
            load_ms = atof(v);
        else if (strcmp(a, "--host-ms") == 0)
            host_ms = atof(v);
        else if (strcmp(a, "--pinned") == 0)
            pinned = v;
        else if (strcmp(a, "--comm") == 0)
            comm = v;
        else if (strcmp(a, "--tail") == 0)
            tail = v;
        else if (strcmp(a, "--profile-from") == 0)
            profile_from = atoi(v);
        else if (strcmp(a, "--kernel") == 0 && nkernels < MAX_KERNELS - 2) {
            /* NAME*N: N launches a step (the name is registered without it) */
            char *star = strrchr(v, '*');
            repeat[nkernels] = star && star[1] ? atoi(star + 1) : 1;
            kernels[nkernels++] = star && star[1] ? strndup(v, (size_t)(star - v)) : v;
        }
        else {
            fprintf(stderr, "sim_step: unknown option %s\n", a);
            return 2;
        }
        i++;
    }
    if (nkernels == 0) {
        repeat[nkernels] = 1;
        kernels[nkernels++] = "train_step_kernel";
    }
    if (comm) {
        repeat[nkernels] = 1;
        kernels[nkernels++] = comm;
    }
    const int tail_k = nkernels;
    if (tail) {
        repeat[nkernels] = 1;
        kernels[nkernels++] = tail;
    }

    if (profile_from == 0)
        profiler_start();
    /* one host stub address per kernel, registered under its device name */
    static char stubs[MAX_KERNELS];
    static char fatbin[16];
    void **mod = __cudaRegisterFatBinary(fatbin);
    for (int k = 0; k < nkernels; k++)
        __cudaRegisterFunction(mod, &stubs[k], (char *)kernels[k], kernels[k], -1, NULL, NULL,
                               NULL, NULL, NULL);
    __cudaRegisterFatBinaryEnd(mod);

    int ndev = 0;
    check("cudaGetDeviceCount", cudaGetDeviceCount(&ndev));
    check("cudaSetDevice", cudaSetDevice(0));
    cudaStream_t stream;
    check("cudaStreamCreateWithFlags", cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    size_t bytes = (size_t)(batch_mb * 1024 * 1024);
    if (bytes < 64)
        bytes = 64;
    void *dev = NULL;
    check("cudaMalloc", cudaMalloc(&dev, bytes));
    unsigned char *host = alloc_batch(pinned, bytes);

    double *step_ms = calloc((size_t)(steps > 0 ? steps : 1), sizeof *step_ms);
    for (int s = 0; s < steps; s++) {
        if (profile_from > 0 && s == profile_from)
            profiler_start();
        double t0 = now_ms();
        nvtxRangePushA("train_step");
        nvtxRangePushA("next_batch");
        sleep_ms(load_ms);
        memcpy(host, &s, sizeof s); /* the batch header: its index */
        nvtxRangePop();
        sleep_ms(host_ms);
        check("cudaMemcpyAsync", cudaMemcpyAsync(dev, host, bytes, cudaMemcpyHostToDevice, stream));
        for (int k = 0; k < (tail ? nkernels - 1 : nkernels); k++)
            for (int j = 0; j < repeat[k]; j++) {
                void *args[1] = {&dev};
                dim3 grid = {1, 1, 1}, block = {128, 1, 1};
                check(kernels[k], cudaLaunchKernel(&stubs[k], grid, block, args, 0, stream));
            }
        check("cudaStreamSynchronize", cudaStreamSynchronize(stream));
        nvtxRangePop();
        step_ms[s] = now_ms() - t0;
    }

    long header = -2;
    check("cudaMemcpy", cudaMemcpy(&header, dev, sizeof header, cudaMemcpyDeviceToHost));
    if (steps > 0 && (int)header != steps - 1) {
        fprintf(stderr, "sim_step: device batch header %ld, expected %d\n", header, steps - 1);
        return 1;
    }
    qsort(step_ms, (size_t)steps, sizeof *step_ms, cmp_double);
    int rtv = 0;
    cudaRuntimeGetVersion(&rtv);
    fprintf(stderr, "{\"example\":\"sim_step\",\"runtime\":%d,\"steps\":%d,\"pinned\":\"%s\","
                    "\"median_step_ms\":%.3f}\n",
            rtv, steps, pinned, steps > 0 ? step_ms[steps / 2] : 0.0);
    printf("sim_step: %d steps, runtime %d\n", steps, rtv);
    if (profile_from >= 0) {
        check("cuptiActivityFlushAll", cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED));
        printf("profiler: %zu kernel records\n", prof_kernels);
    }
    if (tail) {
        void *args[1] = {&dev};
        dim3 grid = {1, 1, 1}, block = {128, 1, 1};
        check(tail, cudaLaunchKernel(&stubs[tail_k], grid, block, args, 0, stream));
    }
    free_batch(pinned, host);
    check("cudaFree", cudaFree(dev));
    check("cudaStreamDestroy", cudaStreamDestroy(stream));
    free(step_ms);
    return 0;
}
