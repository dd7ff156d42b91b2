/* mc_cudalib.c — finding the CUDA runtime, cuBLAS, NVML and NCCL at run
 * time and filling their tables (mc_cudalib.h): the analyzer's own small
 * loader (the collector's, in preload/ and cupti/, finds libraries already
 * loaded into a traced program; this one loads them into the analyzer).
 *
 * Must never: dlclose what it loaded, link a CUDA library, or fail the
 * command: a library or a symbol that is missing is said in why.
 */
#include <dlfcn.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "machine/mc_cudalib.h"

/* Append "name" to the list of what was tried. */
static void tried_add(char *tried, size_t cap, const char *name)
{
    const size_t l = strlen(tried);
    if (l + 3 < cap)
        snprintf(tried + l, cap - l, "%s%s", l ? ", " : "", name);
}

static void *try_open(const char *path, char *loaded, size_t lcap, char *tried, size_t tcap)
{
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (h)
        snprintf(loaded, lcap, "%s", strrchr(path, '/') ? strrchr(path, '/') + 1 : path);
    else
        tried_add(tried, tcap, path);
    return h;
}

/* The search of mc_cudalib.h for one library: env names the only file to
 * try when set; else each of names (NULL-terminated) in each place. */
static void *open_lib(const char *env, const char *const *names, char *loaded, size_t lcap,
                      char *why, size_t wcap, const char *what)
{
    char tried[400] = "", path[1024];
    const char *e = getenv(env);
    void *h = NULL;
    if (e && *e) {
        h = try_open(e, loaded, lcap, tried, sizeof tried);
        if (!h)
            snprintf(why, wcap, "no %s: %s=%s cannot be loaded", what, env, e);
        return h;
    }
    const char *cp = getenv("GPUSTARVE_CUDA_PATH");
    if (cp && *cp) {
        char dirs[1024];
        snprintf(dirs, sizeof dirs, "%s", cp);
        for (char *save = NULL, *d = strtok_r(dirs, ":", &save); d && !h; d = strtok_r(NULL, ":", &save))
            for (const char *const *n = names; *n && !h; n++) {
                snprintf(path, sizeof path, "%s/%s", d, *n);
                if (access(path, F_OK) == 0)
                    h = try_open(path, loaded, lcap, tried, sizeof tried);
            }
    }
    for (const char *const *n = names; *n && !h; n++)
        h = try_open(*n, loaded, lcap, tried, sizeof tried);
    const char *home = getenv("CUDA_HOME");
    if (!home || !*home)
        home = "/usr/local/cuda";
    for (const char *const *n = names; *n && !h; n++) {
        snprintf(path, sizeof path, "%s/lib64/%s", home, *n);
        if (access(path, F_OK) == 0)
            h = try_open(path, loaded, lcap, tried, sizeof tried);
    }
    if (!h)
        snprintf(why, wcap, "no %s (%s not found)", what, tried);
    return h;
}

/* One function of a library: where its pointer goes in the table, its
 * name, an older name to try when the first is missing, and whether the
 * table is useless without it. */
typedef struct sym {
    size_t off;
    const char *name, *alt;
    int need;
} sym;

#define S(T, field, name, alt, need) {offsetof(T, field), name, alt, need}

static const sym cudart_syms[] = {
    S(mc_cudart, GetDeviceCount, "cudaGetDeviceCount", NULL, 1),
    S(mc_cudart, SetDevice, "cudaSetDevice", NULL, 1),
    S(mc_cudart, Malloc, "cudaMalloc", NULL, 1),
    S(mc_cudart, Free, "cudaFree", NULL, 1),
    S(mc_cudart, MallocHost, "cudaMallocHost", NULL, 1),
    S(mc_cudart, FreeHost, "cudaFreeHost", NULL, 1),
    S(mc_cudart, Memcpy, "cudaMemcpy", NULL, 1),
    S(mc_cudart, MemcpyAsync, "cudaMemcpyAsync", NULL, 1),
    S(mc_cudart, MemcpyPeerAsync, "cudaMemcpyPeerAsync", NULL, 0),
    S(mc_cudart, DeviceSynchronize, "cudaDeviceSynchronize", NULL, 1),
    S(mc_cudart, StreamCreate, "cudaStreamCreate", NULL, 1),
    S(mc_cudart, StreamDestroy, "cudaStreamDestroy", NULL, 0),
    S(mc_cudart, StreamSynchronize, "cudaStreamSynchronize", NULL, 1),
    S(mc_cudart, StreamWaitEvent, "cudaStreamWaitEvent", NULL, 1),
    S(mc_cudart, EventCreate, "cudaEventCreate", NULL, 1),
    S(mc_cudart, EventRecord, "cudaEventRecord", NULL, 1),
    S(mc_cudart, EventSynchronize, "cudaEventSynchronize", NULL, 1),
    S(mc_cudart, EventElapsedTime, "cudaEventElapsedTime", NULL, 1),
    S(mc_cudart, EventDestroy, "cudaEventDestroy", NULL, 1),
    S(mc_cudart, GetErrorString, "cudaGetErrorString", NULL, 0),
    S(mc_cudart, GetDeviceProperties, "cudaGetDeviceProperties_v2", "cudaGetDeviceProperties", 0),
    S(mc_cudart, DeviceGetAttribute, "cudaDeviceGetAttribute", NULL, 0),
    S(mc_cudart, DeviceGetPCIBusId, "cudaDeviceGetPCIBusId", NULL, 0),
    S(mc_cudart, DeviceCanAccessPeer, "cudaDeviceCanAccessPeer", NULL, 0),
    S(mc_cudart, DeviceEnablePeerAccess, "cudaDeviceEnablePeerAccess", NULL, 0),
    S(mc_cudart, MemGetInfo, "cudaMemGetInfo", NULL, 0),
};

static const sym cublas_syms[] = {
    S(mc_cublas, Create, "cublasCreate_v2", NULL, 1),
    S(mc_cublas, Destroy, "cublasDestroy_v2", NULL, 1),
    S(mc_cublas, SetStream, "cublasSetStream_v2", NULL, 1),
    S(mc_cublas, SetMathMode, "cublasSetMathMode", NULL, 0),
    S(mc_cublas, Sgemm, "cublasSgemm_v2", NULL, 1),
    S(mc_cublas, GemmEx, "cublasGemmEx", NULL, 1),
};

static const sym nvml_syms[] = {
    S(mc_nvml, Init, "nvmlInit_v2", NULL, 1),
    S(mc_nvml, GetHandleByPciBusId, "nvmlDeviceGetHandleByPciBusId_v2", NULL, 1),
    S(mc_nvml, GetClocksEventReasons, "nvmlDeviceGetCurrentClocksEventReasons",
      "nvmlDeviceGetCurrentClocksThrottleReasons", 0),
    S(mc_nvml, GetMigMode, "nvmlDeviceGetMigMode", NULL, 0),
    S(mc_nvml, GetVirtualizationMode, "nvmlDeviceGetVirtualizationMode", NULL, 0),
    S(mc_nvml, GetCurrPcieLinkGeneration, "nvmlDeviceGetCurrPcieLinkGeneration", NULL, 0),
    S(mc_nvml, GetMaxPcieLinkGeneration, "nvmlDeviceGetMaxPcieLinkGeneration", NULL, 0),
    S(mc_nvml, GetCurrPcieLinkWidth, "nvmlDeviceGetCurrPcieLinkWidth", NULL, 0),
    S(mc_nvml, GetMaxPcieLinkWidth, "nvmlDeviceGetMaxPcieLinkWidth", NULL, 0),
    S(mc_nvml, GetClockInfo, "nvmlDeviceGetClockInfo", NULL, 0),
    S(mc_nvml, GetMaxClockInfo, "nvmlDeviceGetMaxClockInfo", NULL, 0),
};

static const sym nccl_syms[] = {
    S(mc_nccl, CommInitAll, "ncclCommInitAll", NULL, 1),
    S(mc_nccl, AllReduce, "ncclAllReduce", NULL, 1),
    S(mc_nccl, GroupStart, "ncclGroupStart", NULL, 1),
    S(mc_nccl, GroupEnd, "ncclGroupEnd", NULL, 1),
    S(mc_nccl, CommDestroy, "ncclCommDestroy", NULL, 1),
    S(mc_nccl, GetErrorString, "ncclGetErrorString", NULL, 0),
};

/* The tables all begin with { void *lib; char name[64]; }. */
typedef struct head {
    void *lib;
    char name[64];
} head;

_Static_assert(offsetof(mc_cudart, name) == offsetof(head, name) &&
                   offsetof(mc_cublas, name) == offsetof(head, name) &&
                   offsetof(mc_nvml, name) == offsetof(head, name) &&
                   offsetof(mc_nccl, name) == offsetof(head, name) &&
                   sizeof(((mc_cudart *)0)->name) == sizeof(((head *)0)->name),
               "every library table begins with lib and name[64]");

/* Load one library into table t (zeroed first) and bind its functions.
 * 0, or -1 with why (not found, or a needed function missing: the table
 * is left empty). */
static int load(void *t, size_t tsize, const char *env, const char *const *names, const sym *syms,
                size_t nsyms, const char *what, char *why, size_t cap)
{
    memset(t, 0, tsize);
    head *h = t;
    h->lib = open_lib(env, names, h->name, sizeof h->name, why, cap, what);
    if (!h->lib)
        return -1;
    for (size_t i = 0; i < nsyms; i++) {
        void *f = dlsym(h->lib, syms[i].name);
        if (!f && syms[i].alt)
            f = dlsym(h->lib, syms[i].alt);
        if (!f && syms[i].need) {
            snprintf(why, cap, "%s lacks %s", h->name, syms[i].name);
            memset(t, 0, tsize);
            return -1;
        }
        memcpy((char *)t + syms[i].off, &f, sizeof f); /* POSIX: a function pointer is a void * */
    }
    return 0;
}

#define N(a) (sizeof(a) / sizeof((a)[0]))

int mc_cudart_load(mc_cudart *rt, char *why, size_t cap)
{
    static const char *const names[] = {"libcudart.so.13", "libcudart.so.12", NULL};
    return load(rt, sizeof *rt, "GPUSTARVE_CUDART_LIB", names, cudart_syms, N(cudart_syms),
                "CUDA runtime", why, cap);
}

int mc_cudart_major(const mc_cudart *rt)
{
    const char *v = strstr(rt->name, ".so.");
    return v ? atoi(v + 4) : 0;
}

const char *mc_cuda_err(const mc_cudart *rt, int e)
{
    static __thread char buf[32];
    if (rt->GetErrorString) {
        const char *s = rt->GetErrorString(e);
        if (s)
            return s;
    }
    snprintf(buf, sizeof buf, "error %d", e);
    return buf;
}

int mc_cublas_load(mc_cublas *b, int major, char *why, size_t cap)
{
    static const char *const n13[] = {"libcublas.so.13", NULL};
    static const char *const n12[] = {"libcublas.so.12", NULL};
    static const char *const all[] = {"libcublas.so.13", "libcublas.so.12", NULL};
    return load(b, sizeof *b, "GPUSTARVE_CUBLAS_LIB", major == 13 ? n13 : major == 12 ? n12 : all,
                cublas_syms, N(cublas_syms), "cuBLAS", why, cap);
}

int mc_nvml_load(mc_nvml *n, char *why, size_t cap)
{
    static const char *const names[] = {"libnvidia-ml.so.1", NULL};
    if (load(n, sizeof *n, "GPUSTARVE_NVML_LIB", names, nvml_syms, N(nvml_syms), "NVML", why, cap) < 0)
        return -1;
    const int e = n->Init();
    if (e != 0) {
        snprintf(why, cap, "%s: nvmlInit_v2 failed (NVML error %d)", n->name, e);
        memset(n, 0, sizeof *n);
        return -1;
    }
    return 0;
}

int mc_nccl_load(mc_nccl *n, char *why, size_t cap)
{
    static const char *const names[] = {"libnccl.so.2", NULL};
    return load(n, sizeof *n, "GPUSTARVE_NCCL_LIB", names, nccl_syms, N(nccl_syms), "NCCL", why, cap);
}
