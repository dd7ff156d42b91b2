/* sim_cublas.c — a stand-in libcublas.so.13 for the simulated GPU
 * (build/simcuda): the few calls `gpustarve check` makes (handle, stream,
 * math mode, SGEMM, GemmEx), each GEMM a piece of device work on the
 * handle's stream lasting 2 m n k / rate, the rate configured per type
 * (SIMCUDA_GEMM_FP32_TFLOPS, _FP16_, _BF16_). It computes nothing.
 *
 * Must never: touch the matrices, or export a name the real libcublas does
 * not (test_symbols.sh).
 */
#define _GNU_SOURCE
#include <cublas_v2.h>

#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

#include "simcuda_link.h"

#ifndef SIMCUDA_CUDART_SONAME
#define SIMCUDA_CUDART_SONAME "libcudart.so.13"
#endif

struct cublasContext {
    int device;
    cudaStream_t stream;
};

/* The runtime's link (the runtime is loaded first: a handle, a
 * communicator need a device). */
static const struct simcuda_rt *rt(void)
{
    static const struct simcuda_rt *r;
    if (!r)
        r = simcuda_rt_find();
    return r && r->enqueue ? r : NULL;
}

static double env_rate(const char *name, double def)
{
    const char *s = getenv(name);
    const double v = s && *s ? strtod(s, NULL) : 0;
    return v > 0 ? v : def;
}

cublasStatus_t cublasCreate_v2(cublasHandle_t *handle)
{
    void *h = dlopen(SIMCUDA_CUDART_SONAME, RTLD_LAZY | RTLD_NOLOAD);
    int (*get_device)(int *) = h ? (int (*)(int *))dlsym(h, "cudaGetDevice") : NULL;
    if (h)
        dlclose(h); /* drops only the reference NOLOAD took */
    if (!handle)
        return CUBLAS_STATUS_INVALID_VALUE;
    if (!rt() || !get_device)
        return CUBLAS_STATUS_NOT_INITIALIZED;
    struct cublasContext *c = calloc(1, sizeof *c);
    if (!c)
        return CUBLAS_STATUS_ALLOC_FAILED;
    if (get_device(&c->device) != 0) {
        free(c);
        return CUBLAS_STATUS_NOT_INITIALIZED;
    }
    *handle = c;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasDestroy_v2(cublasHandle_t handle)
{
    if (!handle)
        return CUBLAS_STATUS_NOT_INITIALIZED;
    free(handle);
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetStream_v2(cublasHandle_t handle, cudaStream_t stream)
{
    if (!handle)
        return CUBLAS_STATUS_NOT_INITIALIZED;
    handle->stream = stream;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetMathMode(cublasHandle_t handle, cublasMath_t mode)
{
    return handle ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_NOT_INITIALIZED;
}

static cublasStatus_t gemm(cublasHandle_t h, int m, int n, int k, double tflops, const char *name)
{
    if (!h || !rt())
        return CUBLAS_STATUS_NOT_INITIALIZED;
    if (m < 0 || n < 0 || k < 0)
        return CUBLAS_STATUS_INVALID_VALUE;
    const double ns = 2.0 * m * (double)n * k / (tflops * 1e12) * 1e9;
    return rt()->enqueue(h->stream, h->device, 0, (uint64_t)(ns + 0.5), name, NULL, NULL) == 0
               ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_EXECUTION_FAILED;
}

cublasStatus_t cublasSgemm_v2(cublasHandle_t handle, cublasOperation_t transa,
                              cublasOperation_t transb, int m, int n, int k, const float *alpha,
                              const float *A, int lda, const float *B, int ldb, const float *beta,
                              float *C, int ldc)
{
    return gemm(handle, m, n, k, env_rate("SIMCUDA_GEMM_FP32_TFLOPS", 50), "sim_sgemm");
}

cublasStatus_t cublasGemmEx(cublasHandle_t handle, cublasOperation_t transa,
                            cublasOperation_t transb, int m, int n, int k, const void *alpha,
                            const void *A, cudaDataType Atype, int lda, const void *B,
                            cudaDataType Btype, int ldb, const void *beta, void *C,
                            cudaDataType Ctype, int ldc, cublasComputeType_t computeType,
                            cublasGemmAlgo_t algo)
{
    if (Atype != Btype)
        return CUBLAS_STATUS_NOT_SUPPORTED;
    switch (Atype) {
    case CUDA_R_16BF: return gemm(handle, m, n, k, env_rate("SIMCUDA_GEMM_BF16_TFLOPS", 700), "sim_gemm_bf16");
    case CUDA_R_16F: return gemm(handle, m, n, k, env_rate("SIMCUDA_GEMM_FP16_TFLOPS", 700), "sim_gemm_fp16");
    case CUDA_R_32F: return gemm(handle, m, n, k, env_rate("SIMCUDA_GEMM_FP32_TFLOPS", 50), "sim_sgemm");
    default: return CUBLAS_STATUS_NOT_SUPPORTED;
    }
}
