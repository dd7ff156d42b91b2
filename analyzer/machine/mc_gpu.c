/* mc_gpu.c — one GPU measured (mc_gpu.h): what the CUDA runtime, NVML and
 * sysfs say about it (name, memory, SMs, clocks, MIG or vGPU, the PCIe
 * link's current and maximum generation and width), and its copy
 * bandwidths: host to device and back from pinned and pageable memory,
 * and device to device. Every copy is timed between CUDA events on one
 * stream, after a warm-up copy; the figure is the median of the repeats.
 *
 * Must never: keep device or pinned memory past the measurement, change a
 * device setting, or call a function the runtime did not export.
 */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/an_stats.h"
#include "machine/mc_file.h"
#include "machine/mc_gpu.h"

#define MC_MAX_REPEATS 64

int mc_pcie_gen(double gts)
{
    static const double speeds[] = {2.5, 5, 8, 16, 32, 64};
    for (int i = 0; i < 6; i++)
        if (fabs(gts - speeds[i]) < 0.3)
            return i + 1;
    return 0;
}

double mc_pcie_GBps(int gen, int width)
{
    /* per lane and direction after line encoding: 8b/10b (1, 2), 128b/130b
     * (3-5), and gen 6's 242/256 FLIT (PCI-SIG's figures) */
    static const double lane[] = {0, 0.25, 0.5, 0.985, 1.969, 3.938, 7.563};
    return gen >= 1 && gen <= 6 && width > 0 ? lane[gen] * width : 0;
}

double mc_rate_median(const double *secs, int n, double bytes)
{
    const double m = an_percentile(secs, (size_t)n, 0.5);
    return m > 0 ? bytes / m : 0;
}

void mc_cuda_open(mc_cuda *cu, const mc_opts *o)
{
    memset(cu, 0, sizeof *cu);
    if (o->no_gpu)
        return;
    cu->have_rt = mc_cudart_load(&cu->rt, cu->rt_why, sizeof cu->rt_why) == 0;
    if (!cu->have_rt)
        return;
    int n = 0;
    const int e = cu->rt.GetDeviceCount(&n);
    if (e != 0 || n < 1) {
        snprintf(cu->rt_why, sizeof cu->rt_why, "no CUDA device (%s: cudaGetDeviceCount: %s)",
                 cu->rt.name, e ? mc_cuda_err(&cu->rt, e) : "0 devices");
        return;
    }
    cu->ndev = n;
    cu->have_blas = mc_cublas_load(&cu->blas, mc_cudart_major(&cu->rt), cu->blas_why,
                                   sizeof cu->blas_why) == 0;
    cu->have_nvml = mc_nvml_load(&cu->nvml, cu->nvml_why, sizeof cu->nvml_why) == 0;
    if (n >= 2)
        cu->have_nccl = mc_nccl_load(&cu->nccl, cu->nccl_why, sizeof cu->nccl_why) == 0;
}

/* The link from sysfs ("16.0 GT/s PCIe", "16"); 0 when not there. */
static int link_sysfs(const char *sysfs, const char *busid, const char *what, int *gen, int *width)
{
    char p[512], v[64];
    double gts;
    int64_t w;
    if (!busid[0] ||
        mc_read_line(mc_path(p, sizeof p, "%s/bus/pci/devices/%s/%s_link_speed", sysfs, busid, what),
                     v, sizeof v) < 0 || sscanf(v, "%lf", &gts) != 1 ||
        mc_read_i64(mc_path(p, sizeof p, "%s/bus/pci/devices/%s/%s_link_width", sysfs, busid, what),
                    &w) < 0)
        return 0;
    *gen = mc_pcie_gen(gts);
    *width = (int)w;
    return *gen > 0;
}

/* The current link (sysfs, else NVML) into gen/width. */
static void read_link(mc_cuda *cu, const mc_opts *o, mc_gpu *g, int *gen, int *width)
{
    if (strcmp(g->link_from, "sysfs") == 0) {
        link_sysfs(o->sysfs, g->busid, "current", gen, width);
        return;
    }
    unsigned a = 0, b = 0;
    if (strcmp(g->link_from, "nvml") == 0 && cu->nvml.GetCurrPcieLinkGeneration &&
        cu->nvml.GetCurrPcieLinkWidth && cu->nvml.GetCurrPcieLinkGeneration(g->nvml_dev, &a) == 0 &&
        cu->nvml.GetCurrPcieLinkWidth(g->nvml_dev, &b) == 0) {
        *gen = (int)a;
        *width = (int)b;
    }
}

static void props_nvml(mc_cuda *cu, mc_gpu *g, const char *busid_raw)
{
    g->mig_mode = g->virt_mode = -1;
    /* CUDA writes the domain in 4 digits, NVML its own ids in 8: try both */
    char nvml_id[40];
    snprintf(nvml_id, sizeof nvml_id, "0000%s", busid_raw);
    if (!cu->have_nvml || !busid_raw[0] ||
        (cu->nvml.GetHandleByPciBusId(busid_raw, &g->nvml_dev) != 0 &&
         cu->nvml.GetHandleByPciBusId(nvml_id, &g->nvml_dev) != 0)) {
        g->nvml_dev = NULL;
        return;
    }
    unsigned cur = 0, pend = 0;
    int vm = 0;
    if (cu->nvml.GetMigMode && cu->nvml.GetMigMode(g->nvml_dev, &cur, &pend) == 0)
        g->mig_mode = (int)cur;
    if (cu->nvml.GetVirtualizationMode && cu->nvml.GetVirtualizationMode(g->nvml_dev, &vm) == 0)
        g->virt_mode = vm;
}

static void props_link(mc_cuda *cu, const mc_opts *o, mc_gpu *g)
{
    if (link_sysfs(o->sysfs, g->busid, "current", &g->cur_gen, &g->cur_width) &&
        link_sysfs(o->sysfs, g->busid, "max", &g->max_gen, &g->max_width)) {
        snprintf(g->link_from, sizeof g->link_from, "sysfs");
        return;
    }
    g->cur_gen = g->cur_width = 0;
    unsigned a, b, c, d;
    const mc_nvml *n = &cu->nvml;
    if (g->nvml_dev && n->GetCurrPcieLinkGeneration && n->GetMaxPcieLinkGeneration &&
        n->GetCurrPcieLinkWidth && n->GetMaxPcieLinkWidth &&
        n->GetCurrPcieLinkGeneration(g->nvml_dev, &a) == 0 &&
        n->GetMaxPcieLinkGeneration(g->nvml_dev, &b) == 0 &&
        n->GetCurrPcieLinkWidth(g->nvml_dev, &c) == 0 && n->GetMaxPcieLinkWidth(g->nvml_dev, &d) == 0) {
        g->cur_gen = (int)a;
        g->max_gen = (int)b;
        g->cur_width = (int)c;
        g->max_width = (int)d;
        snprintf(g->link_from, sizeof g->link_from, "nvml");
    }
}

void mc_gpu_props(mc_cuda *cu, const mc_opts *o, const mc_sheet *sheet, int dev, mc_gpu *g)
{
    memset(g, 0, sizeof *g);
    g->index = dev;
    const mc_cudart *rt = &cu->rt;
    rt->SetDevice(dev);
    if (rt->GetDeviceProperties) {
        /* name is the first field of cudaDeviceProp in every version; the
         * buffer is far larger than the struct has ever been */
        char *p = calloc(1, 1 << 16);
        if (p && rt->GetDeviceProperties(p, dev) == 0)
            snprintf(g->name, sizeof g->name, "%s", p);
        free(p);
    }
    int v = 0;
    if (rt->DeviceGetAttribute) {
        g->sms = rt->DeviceGetAttribute(&v, MC_ATTR_SMS, dev) == 0 ? v : 0;
        g->clock_mhz = rt->DeviceGetAttribute(&v, MC_ATTR_CLOCK_KHZ, dev) == 0 ? v / 1e3 : 0;
        g->mem_clock_mhz = rt->DeviceGetAttribute(&v, MC_ATTR_MEM_CLOCK_KHZ, dev) == 0 ? v / 1e3 : 0;
        g->cc_major = rt->DeviceGetAttribute(&v, MC_ATTR_CC_MAJOR, dev) == 0 ? v : 0;
        g->cc_minor = rt->DeviceGetAttribute(&v, MC_ATTR_CC_MINOR, dev) == 0 ? v : 0;
    }
    size_t fr = 0, tot = 0;
    if (rt->MemGetInfo && rt->MemGetInfo(&fr, &tot) == 0)
        g->mem_bytes = (double)tot;
    char raw[32] = "";
    if (rt->DeviceGetPCIBusId && rt->DeviceGetPCIBusId(raw, (int)sizeof raw, dev) == 0) {
        for (size_t i = 0; raw[i] && i + 1 < sizeof g->busid; i++)
            g->busid[i] = (char)tolower((unsigned char)raw[i]);
    } else {
        raw[0] = 0;
    }
    const char *mig = mc_mig_profile(g->name);
    if (mig)
        snprintf(g->mig, sizeof g->mig, "%s", mig);
    g->card = mc_sheet_match(sheet, g->name);
    props_nvml(cu, g, raw);
    props_link(cu, o, g);
}

/* Time `repeats` copies of bytes on stream s between events; secs gets
 * each. When link is set, the link is read while the copies run. 0 or
 * the CUDA error. */
static int time_copies(mc_cuda *cu, const mc_opts *o, mc_gpu *g, void *s, void *dst,
                       const void *src, size_t bytes, int kind, double *secs, int link)
{
    const mc_cudart *rt = &cu->rt;
    const int n = o->repeats < MC_MAX_REPEATS ? o->repeats : MC_MAX_REPEATS;
    void *ev[MC_MAX_REPEATS + 1] = {0};
    /* RATIONALE: the warm-up copy is not waited for: it keeps the device
     * busy while the timed ones are queued behind it, so a slow host (a
     * loaded machine, the simulator) does not open gaps between them */
    int e = 0;
    for (int i = 0; i <= n && !e; i++)
        e = rt->EventCreate(&ev[i]);
    if (!e)
        e = rt->MemcpyAsync(dst, src, bytes, kind, s);
    if (!e)
        e = rt->EventRecord(ev[0], s);
    for (int i = 0; i < n && !e; i++) {
        e = rt->MemcpyAsync(dst, src, bytes, kind, s);
        if (!e)
            e = rt->EventRecord(ev[i + 1], s);
    }
    if (!e && link)
        read_link(cu, o, g, &g->load_gen, &g->load_width);
    if (!e)
        e = rt->EventSynchronize(ev[n]);
    for (int i = 0; i < n && !e; i++) {
        float ms = 0;
        e = rt->EventElapsedTime(&ms, ev[i], ev[i + 1]);
        secs[i] = ms / 1e3;
    }
    for (int i = 0; i <= n; i++)
        if (ev[i])
            rt->EventDestroy(ev[i]);
    return e;
}

void mc_gpu_copies(mc_cuda *cu, const mc_opts *o, mc_gpu *g)
{
    const mc_cudart *rt = &cu->rt;
    const size_t bytes = (size_t)o->copy_bytes;
    const int n = o->repeats < MC_MAX_REPEATS ? o->repeats : MC_MAX_REPEATS;
    void *d0 = NULL, *d1 = NULL, *pinned = NULL, *pageable = NULL, *s = NULL;
    double secs[MC_MAX_REPEATS];
    rt->SetDevice(g->index);
    if (rt->Malloc(&d0, bytes) != 0 || rt->Malloc(&d1, bytes) != 0 ||
        rt->MallocHost(&pinned, bytes) != 0 || !(pageable = malloc(bytes)) ||
        rt->StreamCreate(&s) != 0) {
        snprintf(g->copy_why, sizeof g->copy_why, "could not allocate 2 x %zu bytes on the device "
                 "and on the host", bytes);
        goto done;
    }
    memset(pinned, 1, bytes);
    memset(pageable, 1, bytes); /* touch every page: no first-touch faults in the timing */
    const struct { void *dst; const void *src; int kind; double *out; int link; } runs[] = {
        {d0, pinned, MC_H2D, &g->h2d_pinned, 1}, {d0, pageable, MC_H2D, &g->h2d_pageable, 0},
        {pinned, d0, MC_D2H, &g->d2h_pinned, 0}, {pageable, d0, MC_D2H, &g->d2h_pageable, 0},
        {d1, d0, MC_D2D, &g->d2d, 0},
    };
    for (size_t i = 0; i < sizeof runs / sizeof runs[0]; i++) {
        const int e = time_copies(cu, o, g, s, runs[i].dst, runs[i].src, bytes, runs[i].kind, secs,
                                  runs[i].link);
        if (e) {
            snprintf(g->copy_why, sizeof g->copy_why, "cudaMemcpyAsync failed: %s",
                     mc_cuda_err(rt, e));
            break;
        }
        /* device to device reads and writes every byte: twice the traffic */
        *runs[i].out = mc_rate_median(secs, n, (double)bytes) / 1e9 * (runs[i].kind == MC_D2D ? 2 : 1);
    }
done:
    if (s && rt->StreamDestroy)
        rt->StreamDestroy(s);
    if (d0)
        rt->Free(d0);
    if (d1)
        rt->Free(d1);
    if (pinned)
        rt->FreeHost(pinned);
    free(pageable);
}

int mc_h2d_probe(size_t bytes, int repeats, mc_h2d *h)
{
    memset(h, 0, sizeof *h);
    mc_cuda *cu = calloc(1, sizeof *cu);
    mc_gpu *g = calloc(1, sizeof *g);
    int rc = -1;
    if (!cu || !g) {
        snprintf(h->why, sizeof h->why, "out of memory");
        goto out;
    }
    if (mc_cudart_load(&cu->rt, h->why, sizeof h->why) < 0)
        goto out;
    snprintf(h->runtime, sizeof h->runtime, "%s", cu->rt.name);
    int n = 0;
    const int e = cu->rt.GetDeviceCount(&n);
    if (e != 0 || n < 1) {
        snprintf(h->why, sizeof h->why, "no CUDA device (cudaGetDeviceCount: %s)",
                 e ? mc_cuda_err(&cu->rt, e) : "0 devices");
        goto out;
    }
    mc_opts o;
    mc_opts_default(&o, 0);
    o.copy_bytes = bytes;
    o.repeats = repeats;
    mc_sheet none = {0};
    mc_gpu_props(cu, &o, &none, 0, g);
    snprintf(h->device, sizeof h->device, "%s", g->name);
    mc_gpu_copies(cu, &o, g);
    if (g->h2d_pinned <= 0 || g->h2d_pageable <= 0) {
        snprintf(h->why, sizeof h->why, "%s", g->copy_why[0] ? g->copy_why : "the copies failed");
        goto out;
    }
    h->pinned_GBps = g->h2d_pinned;
    h->pageable_GBps = g->h2d_pageable;
    rc = 0;
out:
    free(cu);
    free(g);
    return rc;
}
