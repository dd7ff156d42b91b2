/* sim_cuda.c — the simulated driver (build/simcuda/libcuda.so.1).
 *
 * Just enough of libcuda.so.1 for the simulated runtime to find a driver and
 * for collectors and tests to meet the driver API: cuInit,
 * cuDriverGetVersion, cuDeviceGetCount (SIMCUDA_DEVICES), cuGetErrorName/String, the host-memory calls that pin
 * memory (cuMemHostAlloc, cuMemAllocHost[_v2], cuMemFreeHost,
 * cuMemHostRegister[_v2], cuMemHostUnregister) and cuGetProcAddress[_v2],
 * which hands out these functions as the real driver hands out its own (at
 * addresses other than the exported symbols').
 *
 * Pinned host memory is the simulated runtime's (its pointer registry decides
 * whether a copy is pinned or pageable), reached through the private link of
 * simcuda_link.h; without a loaded simulated runtime the host-memory calls
 * fail with CUDA_ERROR_NOT_INITIALIZED. The runtime finds this library by
 * dlopen("libcuda.so.1") at its first call; where it is missing the runtime
 * behaves as the real one without a driver (cudaErrorInsufficientDriver).
 *
 * Must never: print, or be needed by anything outside tests/.
 */
#define _GNU_SOURCE
#include <cuda.h>

#include <dlfcn.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "simcuda_link.h"

#ifndef SIMCUDA_DRIVER_VERSION
#define SIMCUDA_DRIVER_VERSION CUDA_VERSION
#endif

/* The simulated runtime, found by its private symbol. */
static const struct simcuda_rt *rt(void)
{
    return simcuda_rt_find();
}

/* cudaError_t of the runtime's registry -> CUresult */
static CUresult cu_result(int cuda_err)
{
    switch (cuda_err) {
    case 0: return CUDA_SUCCESS;
    case 2: return CUDA_ERROR_OUT_OF_MEMORY;             /* cudaErrorMemoryAllocation */
    case 712: return CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED;
    case 713: return CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED;
    default: return CUDA_ERROR_INVALID_VALUE;
    }
}

CUresult CUDAAPI cuInit(unsigned int flags)
{
    return flags ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
}

/* SIMCUDA_DEVICES, as the runtime reads it (default 1). */
CUresult CUDAAPI cuDeviceGetCount(int *count)
{
    if (!count)
        return CUDA_ERROR_INVALID_VALUE;
    const char *s = getenv("SIMCUDA_DEVICES");
    *count = s && *s ? atoi(s) : 1;
    if (*count < 0)
        *count = 0;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDriverGetVersion(int *version)
{
    if (!version)
        return CUDA_ERROR_INVALID_VALUE;
    *version = SIMCUDA_DRIVER_VERSION;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuGetErrorName(CUresult error, const char **str)
{
    if (!str)
        return CUDA_ERROR_INVALID_VALUE;
    switch (error) {
    case CUDA_SUCCESS: *str = "CUDA_SUCCESS"; break;
    case CUDA_ERROR_INVALID_VALUE: *str = "CUDA_ERROR_INVALID_VALUE"; break;
    case CUDA_ERROR_OUT_OF_MEMORY: *str = "CUDA_ERROR_OUT_OF_MEMORY"; break;
    case CUDA_ERROR_NOT_INITIALIZED: *str = "CUDA_ERROR_NOT_INITIALIZED"; break;
    case CUDA_ERROR_NOT_FOUND: *str = "CUDA_ERROR_NOT_FOUND"; break;
    case CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED: *str = "CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED"; break;
    case CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED: *str = "CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED"; break;
    default: *str = NULL; return CUDA_ERROR_INVALID_VALUE;
    }
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuGetErrorString(CUresult error, const char **str)
{
    return cuGetErrorName(error, str);
}

/* ---- host memory ------------------------------------------------------------ */

/* RATIONALE: the work is done by static functions, and cuGetProcAddress
 * hands those out, not the exported symbols: a real driver's lookups need
 * not return the addresses its exports have, and collectors must cope. */
static CUresult host_alloc(void **pp, size_t bytesize, unsigned int flags)
{
    const struct simcuda_rt *r = rt();
    if (!r)
        return CUDA_ERROR_NOT_INITIALIZED;
    if (!pp)
        return CUDA_ERROR_INVALID_VALUE;
    return cu_result(r->host_alloc(pp, bytesize, flags));
}

static CUresult alloc_host_v2(void **pp, size_t bytesize) { return host_alloc(pp, bytesize, 0); }
static CUresult alloc_host_v1(void **pp, unsigned int bytesize) { return host_alloc(pp, bytesize, 0); }

static CUresult free_host(void *p)
{
    const struct simcuda_rt *r = rt();
    return r ? cu_result(r->host_free(p)) : CUDA_ERROR_NOT_INITIALIZED;
}

static CUresult host_register_v2(void *p, size_t bytesize, unsigned int flags)
{
    const struct simcuda_rt *r = rt();
    return r ? cu_result(r->host_register(p, bytesize, flags)) : CUDA_ERROR_NOT_INITIALIZED;
}

static CUresult host_register_v1(void *p, unsigned int bytesize, unsigned int flags)
{
    return host_register_v2(p, bytesize, flags);
}

static CUresult host_unregister(void *p)
{
    const struct simcuda_rt *r = rt();
    return r ? cu_result(r->host_unregister(p)) : CUDA_ERROR_NOT_INITIALIZED;
}

CUresult CUDAAPI cuMemHostAlloc(void **pp, size_t bytesize, unsigned int flags)
{
    return host_alloc(pp, bytesize, flags);
}

#undef cuMemAllocHost
CUresult CUDAAPI cuMemAllocHost_v2(void **pp, size_t bytesize);
CUresult CUDAAPI cuMemAllocHost_v2(void **pp, size_t bytesize) { return alloc_host_v2(pp, bytesize); }

/* the CUDA 3.1 entry point: a 32-bit size */
CUresult CUDAAPI cuMemAllocHost(void **pp, unsigned int bytesize);
CUresult CUDAAPI cuMemAllocHost(void **pp, unsigned int bytesize) { return alloc_host_v1(pp, bytesize); }

CUresult CUDAAPI cuMemFreeHost(void *p) { return free_host(p); }

#undef cuMemHostRegister
CUresult CUDAAPI cuMemHostRegister_v2(void *p, size_t bytesize, unsigned int flags);
CUresult CUDAAPI cuMemHostRegister_v2(void *p, size_t bytesize, unsigned int flags)
{
    return host_register_v2(p, bytesize, flags);
}

CUresult CUDAAPI cuMemHostRegister(void *p, unsigned int bytesize, unsigned int flags);
CUresult CUDAAPI cuMemHostRegister(void *p, unsigned int bytesize, unsigned int flags)
{
    return host_register_v1(p, bytesize, flags);
}

CUresult CUDAAPI cuMemHostUnregister(void *p) { return host_unregister(p); }

/* ---- entry points -------------------------------------------------------------- */

/* What cuGetProcAddress hands out: the newest version of each name that the
 * caller's CUDA version knows, as the real driver does. */
struct proc {
    const char *name;
    int since;   /* CUDA version that introduced this entry point */
    void *fn;
};

#undef cuGetProcAddress
CUresult CUDAAPI cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion,
                                     cuuint64_t flags, CUdriverProcAddressQueryResult *status);
CUresult CUDAAPI cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags);

static const struct proc g_procs[] = {
    {"cuInit", 2000, (void *)cuInit},
    {"cuDriverGetVersion", 2020, (void *)cuDriverGetVersion},
    {"cuDeviceGetCount", 2000, (void *)cuDeviceGetCount},
    {"cuGetErrorName", 6000, (void *)cuGetErrorName},
    {"cuGetErrorString", 6000, (void *)cuGetErrorString},
    {"cuMemHostAlloc", 2020, (void *)host_alloc},
    {"cuMemAllocHost", 3020, (void *)alloc_host_v2},
    {"cuMemAllocHost", 2000, (void *)alloc_host_v1},
    {"cuMemFreeHost", 2000, (void *)free_host},
    {"cuMemHostRegister", 6050, (void *)host_register_v2},
    {"cuMemHostRegister", 4000, (void *)host_register_v1},
    {"cuMemHostUnregister", 4000, (void *)host_unregister},
    {"cuGetProcAddress", 12000, (void *)cuGetProcAddress_v2},
    {"cuGetProcAddress", 11030, (void *)cuGetProcAddress},
};

CUresult CUDAAPI cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion,
                                     cuuint64_t flags, CUdriverProcAddressQueryResult *status)
{
    if (!symbol || !pfn)
        return CUDA_ERROR_INVALID_VALUE;
    *pfn = NULL;
    int known = 0;
    for (size_t i = 0; i < sizeof g_procs / sizeof g_procs[0]; i++) {
        if (strcmp(g_procs[i].name, symbol) != 0)
            continue;
        known = 1;
        if (cudaVersion >= g_procs[i].since) {
            *pfn = g_procs[i].fn;
            if (status)
                *status = CU_GET_PROC_ADDRESS_SUCCESS;
            return CUDA_SUCCESS;
        }
    }
    if (status)
        *status = known ? CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT
                        : CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    return CUDA_ERROR_NOT_FOUND;
}

CUresult CUDAAPI cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags)
{
    return cuGetProcAddress_v2(symbol, pfn, cudaVersion, flags, NULL);
}
