/* mc_multi.c — the lines of several GPUs together (mc_gpu.h): the
 * peer-to-peer copy bandwidth of every pair, the bus bandwidth of an NCCL
 * all-reduce over all of them, and the scaling people check before they
 * rent more cards: a fixed per-GPU data-parallel step on one GPU and on n,
 * n-GPU throughput over n times one GPU's ("4 cards, 3.1x").
 *
 * The step (docs/check.md, "Several GPUs"): one layer of a transformer-
 * sized model, an n x n BF16 weight (FP16 where the card has no BF16) and
 * n tokens per GPU, forward and backward as three GEMMs on one stream; the
 * weight's gradient all-reduced with NCCL on a second stream, overlapping
 * the next step's GEMMs as DDP overlaps its buckets with the backward pass.
 *
 * Must never: keep device memory or NCCL communicators past the lines.
 * Peer access it enables lasts as long as this process: nothing of the
 * machine's changes.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/an_stats.h"
#include "machine/mc_gpu.h"

#define MC_MAX_GPUS 16

typedef struct pair_rate {
    int a, b, access;
    double GBps;
} pair_rate;

/* a -> b with cudaMemcpyPeerAsync on a stream of a, median of the repeats. */
static double peer_rate(mc_cuda *cu, const mc_opts *o, int a, int b, size_t bytes, int *access)
{
    const mc_cudart *rt = &cu->rt;
    void *pa = NULL, *pb = NULL, *s = NULL, *ev[2] = {NULL, NULL};
    double secs[64], rate = 0;
    int can = 0, e = 0;
    const int reps = o->repeats < 64 ? o->repeats : 64;
    if (rt->DeviceCanAccessPeer && rt->DeviceCanAccessPeer(&can, a, b) == 0 && can &&
        rt->DeviceEnablePeerAccess) {
        rt->SetDevice(a);
        rt->DeviceEnablePeerAccess(b, 0); /* "already enabled" is fine too */
    }
    *access = can;
    rt->SetDevice(b);
    e = rt->Malloc(&pb, bytes);
    rt->SetDevice(a);
    e = e || rt->Malloc(&pa, bytes) || rt->StreamCreate(&s) || rt->EventCreate(&ev[0]) ||
        rt->EventCreate(&ev[1]) || rt->MemcpyPeerAsync(pb, b, pa, a, bytes, s) ||
        rt->StreamSynchronize(s);
    for (int i = 0; i < reps && !e; i++) {
        float ms = 0;
        e = rt->EventRecord(ev[0], s) || rt->MemcpyPeerAsync(pb, b, pa, a, bytes, s) ||
            rt->EventRecord(ev[1], s) || rt->EventSynchronize(ev[1]) ||
            rt->EventElapsedTime(&ms, ev[0], ev[1]);
        secs[i] = ms / 1e3;
    }
    if (!e)
        rate = mc_rate_median(secs, reps, (double)bytes) / 1e9;
    for (int i = 0; i < 2; i++)
        if (ev[i])
            rt->EventDestroy(ev[i]);
    if (s && rt->StreamDestroy)
        rt->StreamDestroy(s);
    if (pa)
        rt->Free(pa);
    rt->SetDevice(b);
    if (pb)
        rt->Free(pb);
    return rate;
}

/* The p2p line; returns the median pair rate (0 unknown). */
static double line_p2p(mc_list *l, mc_cuda *cu, const mc_opts *o, int n)
{
    mc_item *it = mc_add(l, "gpus.p2p", "");
    if (!it)
        return 0;
    if (!cu->rt.MemcpyPeerAsync) {
        mc_cause(it, "%s has no cudaMemcpyPeerAsync", cu->rt.name);
        return 0;
    }
    pair_rate pr[MC_MAX_GPUS * (MC_MAX_GPUS - 1) / 2] = {{0, 0, 0, 0}};
    double rates[sizeof pr / sizeof pr[0]];
    size_t np = 0, worst = 0, best = 0;
    char list[400] = "", slow[200] = "";
    for (int a = 0; a < n; a++)
        for (int b = a + 1; b < n; b++) {
            pr[np] = (pair_rate){a, b, 0, 0};
            pr[np].GBps = peer_rate(cu, o, a, b, (size_t)(o->copy_bytes / 4), &pr[np].access);
            rates[np] = pr[np].GBps;
            const size_t len = strlen(list);
            snprintf(list + len, sizeof list - len, "%s%d-%d %.1f%s", len ? ", " : "", a, b,
                     pr[np].GBps, pr[np].access ? "" : " (no P2P)");
            worst = pr[np].GBps < pr[worst].GBps ? np : worst;
            best = pr[np].GBps > pr[best].GBps ? np : best;
            np++;
        }
    const double med = an_percentile(rates, np, 0.5);
    mc_str(it, "pairs_GBps", list);
    if (pr[best].GBps <= 0) {
        mc_cause(it, "the peer copies failed");
        return 0;
    }
    for (size_t i = 0; i < np; i++)
        if (pr[i].GBps < 0.5 * pr[best].GBps) {
            const size_t len = strlen(slow);
            snprintf(slow + len, sizeof slow - len, "%s%d-%d", len ? ", " : "", pr[i].a, pr[i].b);
        }
    mc_judge(it, slow[0] ? MC_BELOW_SPEC : MC_TO_SPEC, pr[worst].GBps, pr[best].GBps, "GB/s");
    mc_what(it, "%zu pairs: slowest %d-%d %.1f GB/s, median %.1f, fastest %d-%d %.1f", np,
            pr[worst].a, pr[worst].b, pr[worst].GBps, med, pr[best].a, pr[best].b, pr[best].GBps);
    if (slow[0])
        mc_cause(it, "pairs %s copy at less than half the fastest pair's rate: %s", slow,
                 pr[worst].access ? "they cross CPU sockets or a slower switch"
                                  : "no peer access between them, so copies go through host memory");
    return med;
}

/* The NCCL communicators and one buffer and stream per device. */
typedef struct ring {
    int n;
    void *comm[MC_MAX_GPUS], *buf[MC_MAX_GPUS], *s[MC_MAX_GPUS], *e0[MC_MAX_GPUS], *e1[MC_MAX_GPUS];
    size_t count; /* floats */
} ring;

static void ring_free(mc_cuda *cu, ring *r)
{
    for (int i = 0; i < r->n; i++) {
        cu->rt.SetDevice(i);
        if (r->comm[i])
            cu->nccl.CommDestroy(r->comm[i]);
        if (r->buf[i])
            cu->rt.Free(r->buf[i]);
        if (r->e0[i])
            cu->rt.EventDestroy(r->e0[i]);
        if (r->e1[i])
            cu->rt.EventDestroy(r->e1[i]);
        if (r->s[i] && cu->rt.StreamDestroy)
            cu->rt.StreamDestroy(r->s[i]);
    }
}

/* One all-reduce of every buffer, in a group (one thread, n devices). */
static int allreduce(mc_cuda *cu, ring *r, void **bufs, size_t count, int dtype, void **streams)
{
    int e = cu->nccl.GroupStart();
    for (int i = 0; i < r->n && !e; i++)
        e = cu->nccl.AllReduce(bufs[i], bufs[i], count, dtype, MC_NCCL_SUM, r->comm[i], streams[i]);
    const int g = cu->nccl.GroupEnd();
    return e ? e : g;
}

/* The all-reduce's bus bandwidth, GB/s (0 with why). */
static double nccl_busbw(mc_cuda *cu, const mc_opts *o, ring *r, char *why, size_t wcap)
{
    const mc_cudart *rt = &cu->rt;
    int devs[MC_MAX_GPUS], e = 0;
    for (int i = 0; i < r->n; i++)
        devs[i] = i;
    r->count = (size_t)(o->copy_bytes / 4);
    if ((e = cu->nccl.CommInitAll(r->comm, r->n, devs)) != 0) {
        snprintf(why, wcap, "ncclCommInitAll failed: %s",
                 cu->nccl.GetErrorString ? cu->nccl.GetErrorString(e) : "error");
        return 0;
    }
    for (int i = 0; i < r->n && !e; i++) {
        rt->SetDevice(i);
        e = rt->Malloc(&r->buf[i], r->count * 4) || rt->StreamCreate(&r->s[i]) ||
            rt->EventCreate(&r->e0[i]) || rt->EventCreate(&r->e1[i]);
    }
    e = e || allreduce(cu, r, r->buf, r->count, MC_NCCL_FLOAT32, r->s); /* warm-up */
    for (int i = 0; i < r->n && !e; i++)
        e = rt->StreamSynchronize(r->s[i]) || rt->EventRecord(r->e0[i], r->s[i]);
    for (int k = 0; k < o->repeats && !e; k++)
        e = allreduce(cu, r, r->buf, r->count, MC_NCCL_FLOAT32, r->s);
    double worst = 0;
    for (int i = 0; i < r->n && !e; i++) {
        float ms = 0;
        e = rt->EventRecord(r->e1[i], r->s[i]) || rt->EventSynchronize(r->e1[i]) ||
            rt->EventElapsedTime(&ms, r->e0[i], r->e1[i]);
        worst = ms / 1e3 > worst ? ms / 1e3 : worst;
    }
    if (e || worst <= 0) {
        snprintf(why, wcap, "the NCCL all-reduce failed");
        return 0;
    }
    const double algbw = (double)r->count * 4 * o->repeats / worst;
    return algbw * 2.0 * (r->n - 1) / r->n / 1e9;
}

static double line_allreduce(mc_list *l, mc_cuda *cu, const mc_opts *o, int n, double p2p)
{
    mc_item *it = mc_add(l, "gpus.allreduce", "");
    if (!it)
        return 0;
    if (!cu->have_nccl) {
        mc_cause(it, "%s", cu->nccl_why);
        return 0;
    }
    ring r;
    memset(&r, 0, sizeof r);
    r.n = n;
    char why[300] = "";
    const double bus = nccl_busbw(cu, o, &r, why, sizeof why);
    ring_free(cu, &r);
    if (bus <= 0) {
        mc_cause(it, "%s", why);
        return 0;
    }
    mc_what(it, "NCCL all-reduce of %.0f MiB over %d GPUs: bus bandwidth %.1f GB/s",
            (double)r.count * 4 / 1048576.0, n, bus);
    mc_num(it, "busbw_GBps", bus);
    mc_num(it, "bytes", (double)r.count * 4);
    if (p2p <= 0) {
        mc_cause(it, "no peer-to-peer rate to compare with: measured value only");
        return bus;
    }
    mc_judge(it, bus < 0.5 * p2p ? MC_BELOW_SPEC : MC_TO_SPEC, bus, p2p, "GB/s");
    char tail[64];
    snprintf(tail, sizeof tail, " vs %.1f GB/s between peers", p2p);
    strncat(it->what, tail, sizeof it->what - strlen(it->what) - 1);
    const char *dis = getenv("NCCL_P2P_DISABLE");
    if (it->verdict == MC_BELOW_SPEC)
        mc_cause(it, "%s", dis && *dis && strcmp(dis, "0") != 0
                               ? "NCCL_P2P_DISABLE is set: NCCL goes through host memory"
                               : "NCCL reaches less than half the peer-to-peer rate: P2P refused "
                                 "(ACS or IOMMU), or a slower transport chosen (NCCL_DEBUG=INFO "
                                 "says which)");
    return bus;
}

void mc_multi_lines(mc_list *l, mc_cuda *cu, const mc_opts *o, const mc_gpu *g, int n)
{
    if (n < 2)
        return;
    if (n > MC_MAX_GPUS)
        n = MC_MAX_GPUS;
    const double p2p = line_p2p(l, cu, o, n);
    const double bus = line_allreduce(l, cu, o, n, p2p);
    mc_scaling_line(l, cu, o, g, n, bus);
}
