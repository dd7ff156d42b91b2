/* gs_cuda_types.h — the few CUDA runtime types the hooks need, declared
 * here so that preload/ compiles without the CUDA headers.
 *
 * Must never: change a layout without the check in tests/hooks
 * (hk_cupti_decode.c compares every offset with the real headers).
 */
#ifndef GS_CUDA_TYPES_H
#define GS_CUDA_TYPES_H

#include <stddef.h>
#include <stdint.h>

/* driver_types.h, CUDA 11-13 */
typedef int gs_cuerr;      /* cudaError_t */
typedef void *gs_custream; /* cudaStream_t */
typedef void *gs_cuevent;  /* cudaEvent_t */

#define GS_CUDA_SUCCESS 0
/* cudaErrorNotSupported (driver_types.h): what a hook returns when the real
 * function cannot be found. */
#define GS_CUDA_NOT_SUPPORTED 801

/* enum cudaMemcpyKind */
enum { CU_H2H = 0, CU_H2D = 1, CU_D2H = 2, CU_D2D = 3, CU_DEFAULT = 4 };

#define GS_STREAM_PER_THREAD ((uint64_t)0x2) /* cudaStreamPerThread */

/* struct cudaMemcpy3DParms and its members, field for field. tests/hooks
 * (hk_cupti_decode.c) checks every offset against the CUDA headers. */
struct gs_cudaPos {
    size_t x, y, z;
};
struct gs_cudaPitchedPtr {
    void *ptr;
    size_t pitch, xsize, ysize;
};
struct gs_cudaExtent {
    size_t width, height, depth;
};
struct gs_cudaMemcpy3DParms {
    void *srcArray;
    struct gs_cudaPos srcPos;
    struct gs_cudaPitchedPtr srcPtr;
    void *dstArray;
    struct gs_cudaPos dstPos;
    struct gs_cudaPitchedPtr dstPtr;
    struct gs_cudaExtent extent;
    int kind;
};
typedef const struct gs_cudaMemcpy3DParms *gs_cup3d;

#endif
