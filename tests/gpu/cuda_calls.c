/* cuda_calls.c — calls the CUDA runtime functions gpustarve hooks, prints
 * what each returned, and exits 0 whatever they returned.
 *
 * For the tests that a traced program behaves as an untraced one: on the
 * real runtime with no driver (every call fails with
 * cudaErrorInsufficientDriver, and the first hooked call is where gpustarve
 * looks for CUPTI), on the simulated GPU, traced or not, the output and exit
 * status must be the same. Linked at build time against a libcudart.so.12 or
 * .so.13 (tests/simcuda/rules.mk); LD_LIBRARY_PATH picks the real one at run
 * time. No CUDA header: the few declarations are below.
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int cudaRuntimeGetVersion(int *);
int cudaSetDevice(int);
int cudaMalloc(void **, size_t);
int cudaFree(void *);
int cudaMallocHost(void **, size_t);
int cudaHostAlloc(void **, size_t, unsigned);
int cudaFreeHost(void *);
int cudaHostRegister(void *, size_t, unsigned);
int cudaHostUnregister(void *);
int cudaMemcpy(void *, const void *, size_t, int);
int cudaMemcpyAsync(void *, const void *, size_t, int, void *);
int cudaStreamSynchronize(void *);
int cudaDeviceSynchronize(void);
int cudaGetDriverEntryPoint(const char *, void **, unsigned long long, int *);

#define H2D 1
#define N 4096

static int show(const char *name, int r)
{
    printf("%s %d\n", name, r);
    return r;
}

int main(void)
{
    int v = 0;
    cudaRuntimeGetVersion(&v);
    printf("runtime %d\n", v / 1000); /* major only: same for every 13.x */
    void *dev = NULL, *pinned = NULL, *hostalloc = NULL;
    char *pageable = calloc(1, N);
    show("cudaSetDevice", cudaSetDevice(0));
    int ok = show("cudaMalloc", cudaMalloc(&dev, N)) == 0;
    ok &= show("cudaMallocHost", cudaMallocHost(&pinned, N)) == 0;
    ok &= show("cudaHostAlloc", cudaHostAlloc(&hostalloc, N, 0)) == 0;
    size_t n = ok ? N : 0;
    show("cudaMemcpy", cudaMemcpy(dev, pinned, n, H2D));
    show("cudaMemcpyAsync", cudaMemcpyAsync(dev, pageable, n, H2D, NULL));
    show("cudaStreamSynchronize", cudaStreamSynchronize(NULL));
    show("cudaHostRegister", cudaHostRegister(pageable, N, 0));
    show("cudaHostUnregister", cudaHostUnregister(pageable));
    void *fn = NULL;
    int status = -1;
    show("cudaGetDriverEntryPoint", cudaGetDriverEntryPoint("cuMemHostAlloc", &fn, 0, &status));
    printf("cuMemHostAlloc entry point %s\n", fn ? "found" : "not found");
    show("cudaDeviceSynchronize", cudaDeviceSynchronize());
    if (pinned)
        show("cudaFreeHost", cudaFreeHost(pinned));
    if (hostalloc)
        show("cudaFreeHost", cudaFreeHost(hostalloc));
    if (dev)
        show("cudaFree", cudaFree(dev));
    free(pageable);
    return 0;
}
