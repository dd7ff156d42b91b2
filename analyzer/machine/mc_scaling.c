/* mc_scaling.c — the scaling line (mc_gpu.h): a fixed per-GPU
 * data-parallel step timed on GPU 0 alone and on all n GPUs at once; the
 * ratio of the throughputs, n x (time on one) / (time on n), against n.
 *
 * The step (docs/check.md, "Several GPUs"): three n x n GEMMs in 16 bits
 * (forward and backward of one layer) on a compute stream; the weight's
 * gradient (n x n, 16 bits) all-reduced by NCCL on a communication stream
 * that waits for the step's GEMMs, so that it overlaps the next step's, as
 * DDP overlaps its buckets; the last all-reduce is waited for. One GPU runs
 * the GEMMs only (DDP on one GPU reduces nothing).
 *
 * Must never: keep device memory, streams, events or communicators past
 * the line.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "machine/mc_gpu.h"

#define MAXG 16
#define MAXSTEPS 64

typedef struct dp {
    void *h, *sc, *sm, *comm;
    void *a, *b, *c, *grad;
    void *start, *end, *comm_end, *step[MAXSTEPS];
} dp;

typedef struct scaling {
    mc_cuda *cu;
    int n, type, size, steps; /* GPUs, MC_CUDA_R_*, matrix size, steps */
    dp d[MAXG];
} scaling;

static void dp_free(mc_cuda *cu, dp *d, int dev)
{
    const mc_cudart *rt = &cu->rt;
    rt->SetDevice(dev);
    void *ev[] = {d->start, d->end, d->comm_end};
    for (size_t i = 0; i < 3; i++)
        if (ev[i])
            rt->EventDestroy(ev[i]);
    for (int k = 0; k < MAXSTEPS; k++)
        if (d->step[k])
            rt->EventDestroy(d->step[k]);
    void *mem[] = {d->a, d->b, d->c, d->grad};
    for (size_t i = 0; i < 4; i++)
        if (mem[i])
            rt->Free(mem[i]);
    if (d->h)
        cu->blas.Destroy(d->h);
    if (d->comm)
        cu->nccl.CommDestroy(d->comm);
    if (d->sc && rt->StreamDestroy)
        rt->StreamDestroy(d->sc);
    if (d->sm && rt->StreamDestroy)
        rt->StreamDestroy(d->sm);
}

static int dp_setup(scaling *sc, int dev, void *host)
{
    const mc_cudart *rt = &sc->cu->rt;
    dp *d = &sc->d[dev];
    const size_t count = (size_t)sc->size * (size_t)sc->size, bytes = count * 2;
    rt->SetDevice(dev);
    int e = rt->StreamCreate(&d->sc) || rt->StreamCreate(&d->sm) || sc->cu->blas.Create(&d->h) ||
            sc->cu->blas.SetStream(d->h, d->sc) || rt->Malloc(&d->a, bytes) ||
            rt->Malloc(&d->b, bytes) || rt->Malloc(&d->c, bytes) || rt->Malloc(&d->grad, bytes) ||
            rt->EventCreate(&d->start) || rt->EventCreate(&d->end) || rt->EventCreate(&d->comm_end);
    for (int k = 0; k < sc->steps && !e; k++)
        e = rt->EventCreate(&d->step[k]);
    e = e || mc_gemm_fill(rt, d->a, host, count, sc->type) ||
        mc_gemm_fill(rt, d->b, host, count, sc->type) ||
        mc_gemm_fill(rt, d->grad, host, count, sc->type);
    return e;
}

/* The steps on GPUs [0, k): seconds, the slowest GPU's; 0 on failure. */
static double run(scaling *sc, int k)
{
    mc_cuda *cu = sc->cu;
    const mc_cudart *rt = &cu->rt;
    const int dt = sc->type == MC_CUDA_R_16BF ? MC_NCCL_BFLOAT16 : MC_NCCL_FLOAT16;
    const size_t count = (size_t)sc->size * (size_t)sc->size;
    int e = 0;
    for (int i = 0; i < k && !e; i++) {
        rt->SetDevice(i);
        e = rt->EventRecord(sc->d[i].start, sc->d[i].sc);
    }
    for (int s = 0; s < sc->steps && !e; s++) {
        for (int i = 0; i < k && !e; i++) {
            dp *d = &sc->d[i];
            rt->SetDevice(i);
            for (int g = 0; g < 3 && !e; g++) /* forward, and the backward's two */
                e = mc_gemm_enqueue(cu, d->h, sc->type, sc->size, g == 1 ? d->c : d->a, d->b,
                                    g == 1 ? d->a : d->c);
            e = e || rt->EventRecord(d->step[s], d->sc);
            if (k > 1 && !e)
                e = rt->StreamWaitEvent(d->sm, d->step[s], 0);
        }
        if (k > 1 && !e) {
            e = cu->nccl.GroupStart();
            for (int i = 0; i < k && !e; i++)
                e = cu->nccl.AllReduce(sc->d[i].grad, sc->d[i].grad, count, dt, MC_NCCL_SUM,
                                       sc->d[i].comm, sc->d[i].sm);
            const int g = cu->nccl.GroupEnd();
            e = e ? e : g;
        }
    }
    for (int i = 0; i < k && !e; i++) {
        dp *d = &sc->d[i];
        rt->SetDevice(i);
        if (k > 1)
            e = rt->EventRecord(d->comm_end, d->sm) || rt->StreamWaitEvent(d->sc, d->comm_end, 0);
        e = e || rt->EventRecord(d->end, d->sc);
    }
    double worst = 0;
    for (int i = 0; i < k && !e; i++) {
        float ms = 0;
        e = rt->EventSynchronize(sc->d[i].end) || rt->EventElapsedTime(&ms, sc->d[i].start, sc->d[i].end);
        worst = ms / 1e3 > worst ? ms / 1e3 : worst;
    }
    return e ? 0 : worst;
}

/* t1 and tn, 0 and why on failure. */
static void measure(scaling *sc, double *t1, double *tn, char *why, size_t wcap)
{
    mc_cuda *cu = sc->cu;
    void *host = NULL;
    void *comms[MAXG] = {0};
    int devs[MAXG];
    for (int i = 0; i < sc->n; i++)
        devs[i] = i;
    *t1 = *tn = 0;
    const size_t count = (size_t)sc->size * (size_t)sc->size;
    int e = cu->rt.MallocHost(&host, count * 4);
    if (e)
        snprintf(why, wcap, "could not allocate %zu bytes of pinned memory", count * 4);
    if (!e && (e = cu->nccl.CommInitAll(comms, sc->n, devs)) != 0)
        snprintf(why, wcap, "ncclCommInitAll failed");
    for (int i = 0; i < sc->n && !e; i++) {
        sc->d[i].comm = comms[i];
        if ((e = dp_setup(sc, i, host)) != 0)
            snprintf(why, wcap, "could not set the step up on GPU %d", i);
    }
    if (!e) {
        run(sc, 1); /* warm-up of GPU 0's GEMMs */
        *t1 = run(sc, 1);
        *tn = run(sc, sc->n);
        if (*t1 <= 0 || *tn <= 0)
            snprintf(why, wcap, "a step failed to run");
    }
    for (int i = 0; i < sc->n; i++)
        dp_free(cu, &sc->d[i], i);
    for (int i = 0; i < sc->n && e; i++) /* the communicators no dp took */
        if (comms[i] && !sc->d[i].comm)
            cu->nccl.CommDestroy(comms[i]);
    if (host)
        cu->rt.FreeHost(host);
}

void mc_scaling_line(mc_list *l, mc_cuda *cu, const mc_opts *o, const mc_gpu *g, int n, double bus)
{
    mc_item *it = mc_add(l, "gpus.scaling", "");
    if (!it)
        return;
    if (!cu->have_blas || !cu->have_nccl) {
        mc_cause(it, "%s", !cu->have_blas ? cu->blas_why : cu->nccl_why);
        return;
    }
    scaling *sc = calloc(1, sizeof *sc);
    if (!sc)
        return;
    sc->cu = cu;
    sc->n = n > MAXG ? MAXG : n;
    sc->type = g[0].gemm16_bf16 || g[0].cc_major >= 8 ? MC_CUDA_R_16BF : MC_CUDA_R_16F;
    sc->size = o->scaling_n;
    sc->steps = o->scaling_steps < MAXSTEPS ? o->scaling_steps : MAXSTEPS;
    double t1, tn;
    char why[200] = "";
    measure(sc, &t1, &tn, why, sizeof why);
    const int ngpu = sc->n, steps = sc->steps, size = sc->size;
    free(sc);
    if (t1 <= 0 || tn <= 0) {
        mc_cause(it, "%s", why);
        return;
    }
    const double ratio = ngpu * t1 / tn, eff = t1 / tn;
    mc_judge(it, eff < MC_SCALING_EFF ? MC_BELOW_SPEC : MC_TO_SPEC, ratio, (double)ngpu, "x");
    mc_what(it, "%d cards, %.1fx (%.0f%% of %dx): a step of %.2f ms on one GPU, %.2f ms on %d",
            ngpu, ratio, 100 * eff, ngpu, 1e3 * t1 / steps, 1e3 * tn / steps, ngpu);
    mc_num(it, "efficiency", eff);
    mc_num(it, "step_ms_1", 1e3 * t1 / steps);
    mc_num(it, "step_ms_n", 1e3 * tn / steps);
    mc_num(it, "layer_size", size);
    if (it->verdict != MC_BELOW_SPEC)
        return;
    const double grad = 2.0 * size * size, comm = bus > 0 ? grad * 2 * (ngpu - 1) / ngpu / (bus * 1e9) : 0;
    if (comm > t1 / steps)
        mc_cause(it, "the gradient all-reduce (%.2f ms a step at %.1f GB/s bus bandwidth) outlasts "
                     "the compute it overlaps (%.2f ms): the interconnect limits data parallelism "
                     "here", 1e3 * comm, bus, 1e3 * t1 / steps);
    else
        mc_cause(it, "each GPU computes slower with %d busy than alone: a shared power or thermal "
                     "limit, or the all-reduce kernels competing with the GEMMs", ngpu);
}
