/* mc_gemm.c — the dense matrix-multiply rate of one GPU with cuBLAS: a
 * square GEMM in FP32 (CUDA cores: the default math mode, no TF32) and in
 * BF16 (FP16 on cards without it) on tensor cores with FP32 accumulate,
 * each timed in batches between CUDA events after a warm-up; NVML's clock
 * event reasons and SM clock sampled while each batch runs (mc_gpu.h).
 *
 * RATIONALE for batches: a single 16-bit GEMM lasts a millisecond on a
 * large card, too short for power and thermal limits to show; a batch is
 * sized from the warm-up to last a tenth of a second (quick) or 0.4 s.
 * NVML is sampled while the batches run (in the middle and at the end of
 * queueing them, when the device is busy).
 *
 * Must never: keep device memory past the measurement, or set a math mode
 * that changes what "FP32" means (TF32 stays off).
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "machine/mc_gpu.h"

#define MC_GEMM_MAX_BATCH 200
#define MC_MAX_REPEATS 64

typedef struct gemm_run {
    mc_cuda *cu;
    mc_gpu *g;
    void *h, *s;
    void *a, *b, *c;
    int n, type; /* MC_CUDA_R_32F, _16F, _16BF */
} gemm_run;

int mc_gemm_enqueue(const mc_cuda *cu, void *h, int type, int n, void *a, void *b, void *c)
{
    const float one = 1.0f, zero = 0.0f;
    const mc_cublas *bl = &cu->blas;
    if (type == MC_CUDA_R_32F)
        return bl->Sgemm(h, MC_CUBLAS_OP_N, MC_CUBLAS_OP_N, n, n, n, &one, a, n, b, n, &zero, c, n);
    return bl->GemmEx(h, MC_CUBLAS_OP_N, MC_CUBLAS_OP_N, n, n, n, &one, a, type, n, b, type, n,
                      &zero, c, type, n, MC_CUBLAS_COMPUTE_32F, MC_CUBLAS_GEMM_DEFAULT);
}

static int gemm_once(const gemm_run *r)
{
    return mc_gemm_enqueue(r->cu, r->h, r->type, r->n, r->a, r->b, r->c);
}

/* NVML while the GPU works: the reasons OR-ed, the lowest SM clock seen. */
static void sample_nvml(const mc_cuda *cu, mc_gpu *g)
{
    unsigned long long r = 0;
    if (g->nvml_dev && cu->nvml.GetClocksEventReasons &&
        cu->nvml.GetClocksEventReasons(g->nvml_dev, &r) == 0) {
        g->reasons_known = 1;
        g->reasons |= r;
    }
    unsigned clk = 0, max = 0;
    if (g->nvml_dev && cu->nvml.GetClockInfo && cu->nvml.GetClockInfo(g->nvml_dev, MC_NVML_CLOCK_SM, &clk) == 0 &&
        clk && (!g->sm_clock || clk < g->sm_clock))
        g->sm_clock = clk;
    if (g->nvml_dev && cu->nvml.GetMaxClockInfo &&
        cu->nvml.GetMaxClockInfo(g->nvml_dev, MC_NVML_CLOCK_SM, &max) == 0)
        g->sm_clock_max = max;
}

/* The rate in TFLOPS (median of the batches), 0 with why on failure.
 * RATIONALE: the batches are queued back to back behind a lead batch that
 * is not timed, with an event between each two, and waited for once: the
 * device never waits for the host, so each interval is the device's time
 * even when the host is slow to queue (a loaded machine, the simulator). */
static double time_gemm(gemm_run *r, const mc_opts *o, char *why, size_t wcap)
{
    const mc_cudart *rt = &r->cu->rt;
    const int reps = o->repeats < MC_MAX_REPEATS ? o->repeats : MC_MAX_REPEATS;
    void *ev[MC_MAX_REPEATS + 1] = {0};
    double rates[MC_MAX_REPEATS];
    int e = 0;
    for (int i = 0; i <= reps && !e; i++)
        e = rt->EventCreate(&ev[i]);
    float ms = 0;
    if (!e) /* warm-up, timed to size the batches */
        e = rt->EventRecord(ev[0], r->s) || gemm_once(r) || rt->EventRecord(ev[1], r->s) ||
            rt->EventSynchronize(ev[1]) || rt->EventElapsedTime(&ms, ev[0], ev[1]);
    const double want_ms = o->quick ? 100 : 400;
    int batch = ms > 0 ? (int)ceil(want_ms / ms) : 1;
    batch = batch < 1 ? 1 : batch > MC_GEMM_MAX_BATCH ? MC_GEMM_MAX_BATCH : batch;
    const double flops = 2.0 * r->n * (double)r->n * r->n * batch;
    for (int k = 0; k < batch && !e; k++) /* the lead batch */
        e = gemm_once(r);
    for (int i = 0; i < reps && !e; i++) {
        e = rt->EventRecord(ev[i], r->s);
        for (int k = 0; k < batch && !e; k++)
            e = gemm_once(r);
        if (!e && i == reps / 2)
            sample_nvml(r->cu, r->g);
    }
    e = e || rt->EventRecord(ev[reps], r->s);
    if (!e)
        sample_nvml(r->cu, r->g);
    e = e || rt->EventSynchronize(ev[reps]);
    for (int i = 0; i < reps && !e; i++) {
        e = rt->EventElapsedTime(&ms, ev[i], ev[i + 1]);
        rates[i] = ms > 0 ? flops / (ms / 1e3) / 1e12 : 0;
    }
    for (int i = 0; i <= reps; i++)
        if (ev[i])
            rt->EventDestroy(ev[i]);
    if (e) {
        snprintf(why, wcap, "a %s GEMM of %d failed",
                 r->type == MC_CUDA_R_32F ? "FP32" : r->type == MC_CUDA_R_16BF ? "BF16" : "FP16", r->n);
        return 0;
    }
/* the median of the batches: a sorted copy is not needed for a handful */
    for (int i = 1; i < reps; i++)
        for (int j = i; j > 0 && rates[j - 1] > rates[j]; j--) {
            const double t = rates[j];
            rates[j] = rates[j - 1];
            rates[j - 1] = t;
        }
    return reps % 2 ? rates[reps / 2] : (rates[reps / 2 - 1] + rates[reps / 2]) / 2;
}

/* Fill a device matrix with small normal numbers of the type (never zeros:
 * the power a multiply draws depends on its data). */
int mc_gemm_fill(const mc_cudart *rt, void *dst, void *host, size_t count, int type)
{
    uint32_t x = 12345;
    for (size_t i = 0; i < count; i++) {
        x = x * 1664525u + 1013904223u;
        if (type == MC_CUDA_R_32F)
            ((uint32_t *)host)[i] = 0x3F000000u | (x >> 9);         /* [0.5, 1) */
        else
            ((uint16_t *)host)[i] = (uint16_t)(0x3800u | (x >> 21)); /* FP16 [0.5, 2), BF16 tiny */
    }
    return rt->Memcpy(dst, host, count * (type == MC_CUDA_R_32F ? 4 : 2), MC_H2D);
}

static double one_type(mc_cuda *cu, const mc_opts *o, mc_gpu *g, void *h, void *s, int type,
                       void *host)
{
    const mc_cudart *rt = &cu->rt;
    const size_t count = (size_t)o->gemm_n * (size_t)o->gemm_n;
    const size_t bytes = count * (type == MC_CUDA_R_32F ? 4 : 2);
    gemm_run r = {cu, g, h, s, NULL, NULL, NULL, o->gemm_n, type};
    double tf = 0;
    if (rt->Malloc(&r.a, bytes) || rt->Malloc(&r.b, bytes) || rt->Malloc(&r.c, bytes)) {
        snprintf(g->gemm_why, sizeof g->gemm_why, "could not allocate 3 x %zu bytes on the device",
                 bytes);
    } else if (mc_gemm_fill(rt, r.a, host, count, type) || mc_gemm_fill(rt, r.b, host, count, type)) {
        snprintf(g->gemm_why, sizeof g->gemm_why, "could not copy the matrices to the device");
    } else {
        tf = time_gemm(&r, o, g->gemm_why, sizeof g->gemm_why);
    }
    if (r.a)
        rt->Free(r.a);
    if (r.b)
        rt->Free(r.b);
    if (r.c)
        rt->Free(r.c);
    return tf;
}

void mc_gpu_gemm(mc_cuda *cu, const mc_opts *o, mc_gpu *g)
{
    if (!cu->have_blas) {
        snprintf(g->gemm_why, sizeof g->gemm_why, "%s", cu->blas_why);
        return;
    }
    const mc_cudart *rt = &cu->rt;
    rt->SetDevice(g->index);
    void *h = NULL, *s = NULL, *host = NULL;
    const size_t count = (size_t)o->gemm_n * (size_t)o->gemm_n;
    if (rt->StreamCreate(&s) != 0 || cu->blas.Create(&h) != 0 || cu->blas.SetStream(h, s) != 0 ||
        rt->MallocHost(&host, count * 4) != 0) {
        snprintf(g->gemm_why, sizeof g->gemm_why, "cuBLAS could not be set up on GPU %d", g->index);
        goto done;
    }
    if (cu->blas.SetMathMode)
        cu->blas.SetMathMode(h, MC_CUBLAS_DEFAULT_MATH);
    g->gemm32 = one_type(cu, o, g, h, s, MC_CUDA_R_32F, host);
    /* BF16 where the card has it (compute capability 8.0 on), else FP16;
     * the datasheet row says which its figure is for */
    g->gemm16_bf16 = g->card ? g->card->f16_bf16 : g->cc_major >= 8;
    if (!g->gemm_why[0])
        g->gemm16 = one_type(cu, o, g, h, s, g->gemm16_bf16 ? MC_CUDA_R_16BF : MC_CUDA_R_16F, host);
done:
    if (h)
        cu->blas.Destroy(h);
    if (s && rt->StreamDestroy)
        rt->StreamDestroy(s);
    if (host)
        rt->FreeHost(host);
}
