/* mc_cudalib.h — the CUDA runtime, cuBLAS, NVML and NCCL as the check and
 * `probe` use them, found at run time (mc_cudalib.c): the analyzer links
 * none of them and includes none of their headers; the few types and
 * constants it needs are declared here, with their values from the vendor
 * headers named beside them. A library that is missing leaves its table
 * empty and says why; nothing here fails the command.
 *
 * Must never: dlclose a library it loaded (CUDA runtimes keep threads and
 * atexit handlers), or call through a pointer it did not check.
 */
#ifndef MC_CUDALIB_H
#define MC_CUDALIB_H

#include <stddef.h>

/* cudaMemcpyKind (driver_types.h) */
enum { MC_H2D = 1, MC_D2H = 2, MC_D2D = 3 };
/* cudaDeviceAttr (driver_types.h) */
enum {
    MC_ATTR_CLOCK_KHZ = 13,
    MC_ATTR_SMS = 16,
    MC_ATTR_MEM_CLOCK_KHZ = 36,
    MC_ATTR_BUS_WIDTH = 37,
    MC_ATTR_CC_MAJOR = 75,
    MC_ATTR_CC_MINOR = 76,
};
/* cublasOperation_t, cublasMath_t, cublasComputeType_t, cublasGemmAlgo_t
 * (cublas_api.h); cudaDataType (library_types.h) */
enum { MC_CUBLAS_OP_N = 0, MC_CUBLAS_DEFAULT_MATH = 0, MC_CUBLAS_COMPUTE_32F = 68,
       MC_CUBLAS_GEMM_DEFAULT = -1 };
enum { MC_CUDA_R_32F = 0, MC_CUDA_R_16F = 2, MC_CUDA_R_16BF = 14 };
/* ncclDataType_t, ncclRedOp_t (nccl.h) */
enum { MC_NCCL_FLOAT16 = 6, MC_NCCL_FLOAT32 = 7, MC_NCCL_BFLOAT16 = 9, MC_NCCL_SUM = 0 };
/* nvmlClockType_t, nvmlGpuVirtualizationMode_t and the clock event
 * reasons (nvml.h) */
enum { MC_NVML_CLOCK_SM = 1 };
enum { MC_NVML_VIRT_NONE = 0, MC_NVML_VIRT_PASSTHROUGH = 1, MC_NVML_VIRT_VGPU = 2 };
#define MC_NVML_REASON_IDLE 0x1ull
#define MC_NVML_REASON_APP_CLOCKS 0x2ull
#define MC_NVML_REASON_SW_POWER 0x4ull
#define MC_NVML_REASON_HW_SLOWDOWN 0x8ull
#define MC_NVML_REASON_SYNC_BOOST 0x10ull
#define MC_NVML_REASON_SW_THERMAL 0x20ull
#define MC_NVML_REASON_HW_THERMAL 0x40ull
#define MC_NVML_REASON_HW_POWER_BRAKE 0x80ull
#define MC_NVML_REASON_DISPLAY 0x100ull

typedef struct mc_cudart {
    void *lib;
    char name[64]; /* the soname that loaded */
    int (*GetDeviceCount)(int *);
    int (*SetDevice)(int);
    int (*Malloc)(void **, size_t);
    int (*Free)(void *);
    int (*MallocHost)(void **, size_t);
    int (*FreeHost)(void *);
    int (*Memcpy)(void *, const void *, size_t, int);
    int (*MemcpyAsync)(void *, const void *, size_t, int, void *);
    int (*MemcpyPeerAsync)(void *, int, const void *, int, size_t, void *); /* may be NULL */
    int (*DeviceSynchronize)(void);
    int (*StreamCreate)(void **);
    int (*StreamDestroy)(void *);
    int (*StreamSynchronize)(void *);
    int (*StreamWaitEvent)(void *, void *, unsigned);
    int (*EventCreate)(void **);
    int (*EventRecord)(void *, void *);
    int (*EventSynchronize)(void *);
    int (*EventElapsedTime)(float *, void *, void *);
    int (*EventDestroy)(void *);
    const char *(*GetErrorString)(int);
    int (*GetDeviceProperties)(void *, int);     /* _v2 where there is one */
    int (*DeviceGetAttribute)(int *, int, int);  /* may be NULL */
    int (*DeviceGetPCIBusId)(char *, int, int);  /* may be NULL */
    int (*DeviceCanAccessPeer)(int *, int, int); /* may be NULL */
    int (*DeviceEnablePeerAccess)(int, unsigned); /* may be NULL */
    int (*MemGetInfo)(size_t *, size_t *);       /* may be NULL */
} mc_cudart;

typedef struct mc_cublas {
    void *lib;
    char name[64];
    int (*Create)(void **);
    int (*Destroy)(void *);
    int (*SetStream)(void *, void *);
    int (*SetMathMode)(void *, int); /* may be NULL */
    int (*Sgemm)(void *, int, int, int, int, int, const float *, const float *, int, const float *,
                 int, const float *, float *, int);
    int (*GemmEx)(void *, int, int, int, int, int, const void *, const void *, int, int,
                  const void *, int, int, const void *, void *, int, int, int, int);
} mc_cublas;

typedef struct mc_nvml {
    void *lib;
    char name[64];
    int (*Init)(void);
    int (*GetHandleByPciBusId)(const char *, void **);
    int (*GetClocksEventReasons)(void *, unsigned long long *); /* or ...ThrottleReasons */
    int (*GetMigMode)(void *, unsigned *, unsigned *);          /* may be NULL */
    int (*GetVirtualizationMode)(void *, int *);                /* may be NULL */
    int (*GetCurrPcieLinkGeneration)(void *, unsigned *);       /* may be NULL */
    int (*GetMaxPcieLinkGeneration)(void *, unsigned *);
    int (*GetCurrPcieLinkWidth)(void *, unsigned *);
    int (*GetMaxPcieLinkWidth)(void *, unsigned *);
    int (*GetClockInfo)(void *, int, unsigned *); /* may be NULL */
    int (*GetMaxClockInfo)(void *, int, unsigned *);
} mc_nvml;

typedef struct mc_nccl {
    void *lib;
    char name[64];
    int (*CommInitAll)(void **, int, const int *);
    int (*AllReduce)(const void *, void *, size_t, int, int, void *, void *);
    int (*GroupStart)(void);
    int (*GroupEnd)(void);
    int (*CommDestroy)(void *);
    const char *(*GetErrorString)(int); /* may be NULL */
} mc_nccl;

/* Load each library (tables zeroed first). 0, or -1 with why set ("no
 * CUDA runtime: libcudart.so.13, libcudart.so.12 not found"). Where they
 * are looked for, in order (docs/check.md, "Libraries"): the file named by
 * GPUSTARVE_CUDART_LIB (GPUSTARVE_CUBLAS_LIB, GPUSTARVE_NVML_LIB,
 * GPUSTARVE_NCCL_LIB; only that file, when set), the folders of
 * GPUSTARVE_CUDA_PATH (colon-separated), the dynamic loader's search, then
 * $CUDA_HOME/lib64 (default /usr/local/cuda). cuBLAS is looked for with
 * the runtime's major (major: 13, 12; 0 any). */
int mc_cudart_load(mc_cudart *rt, char *why, size_t cap);
int mc_cublas_load(mc_cublas *b, int major, char *why, size_t cap);
int mc_nvml_load(mc_nvml *n, char *why, size_t cap);
int mc_nccl_load(mc_nccl *n, char *why, size_t cap);
/* The CUDA major of the runtime that loaded (from its soname), 0 unknown. */
int mc_cudart_major(const mc_cudart *rt);
/* The runtime's error text for e ("error 35" without cudaGetErrorString). */
const char *mc_cuda_err(const mc_cudart *rt, int e);

#endif
