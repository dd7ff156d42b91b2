/* mc_gpu_lines.c — one GPU's lines (mc_gpu.h): the card against its
 * datasheet row (a full card, or a MIG slice or vGPU), the PCIe link,
 * host<->device copies against what the link carries, device memory
 * bandwidth and GEMM rates against the datasheet (scaled to the SMs
 * present for a slice), and the clock-throttle reasons NVML gave while the
 * GEMMs ran. The rules are in docs/check.md, "GPU".
 *
 * Must never: measure (mc_gpu.c, mc_gemm.c do), or judge a figure against a
 * datasheet the card has no row in (measured values only, "cannot tell").
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "machine/mc_gpu.h"

void mc_reasons_text(unsigned long long r, char *out, size_t cap)
{
    static const struct { unsigned long long bit; const char *name; } names[] = {
        {MC_NVML_REASON_SW_POWER, "power cap"},
        {MC_NVML_REASON_HW_SLOWDOWN, "HW slowdown"},
        {MC_NVML_REASON_HW_POWER_BRAKE, "HW power brake"},
        {MC_NVML_REASON_SW_THERMAL, "software thermal slowdown"},
        {MC_NVML_REASON_HW_THERMAL, "HW thermal slowdown"},
        {MC_NVML_REASON_SYNC_BOOST, "sync boost (held to the slowest card of its group)"},
        {MC_NVML_REASON_APP_CLOCKS, "application clocks set below the maximum"},
    };
    out[0] = 0;
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        if (!(r & names[i].bit))
            continue;
        const size_t l = strlen(out);
        snprintf(out + l, cap - l, "%s%s", l ? ", " : "", names[i].name);
    }
}

/* The share of the full card present: SMs seen over the datasheet's. */
static double slice_scale(const mc_gpu *g)
{
    return g->card && g->card->sms && g->sms > 0 && g->sms < g->card->sms
               ? (double)g->sms / g->card->sms : 1.0;
}

static void line_card(mc_list *l, const char *subj, const mc_gpu *g)
{
    mc_item *it = mc_add(l, "gpu.card", subj);
    if (!it)
        return;
    mc_what(it, "%s: %d SMs, %.1f GiB, compute %d.%d, %.0f MHz", g->name, g->sms,
            g->mem_bytes / (1u << 30), g->cc_major, g->cc_minor, g->clock_mhz);
    mc_str(it, "name", g->name);
    mc_str(it, "pci_bus_id", g->busid[0] ? g->busid : NULL);
    mc_str(it, "datasheet_row", g->card ? g->card->name : NULL);
    mc_str(it, "mig_profile", g->mig[0] ? g->mig : NULL);
    mc_num(it, "sms", g->sms);
    mc_num(it, "memory_bytes", g->mem_bytes);
    mc_num(it, "clock_MHz", g->clock_mhz > 0 ? g->clock_mhz : NAN);
    mc_num(it, "memory_clock_MHz", g->mem_clock_mhz > 0 ? g->mem_clock_mhz : NAN);
    mc_num(it, "virtualization_mode", g->virt_mode >= 0 ? g->virt_mode : NAN);
    if (!g->card) {
        mc_cause(it, "not in the datasheet table: the lines below give measured values only");
        return;
    }
    const mc_card *c = g->card;
    const int slice = g->mig[0] || g->mig_mode == 1 || (c->sms && g->sms < c->sms);
    const int vgpu = g->virt_mode == MC_NVML_VIRT_VGPU;
    const int small = g->mem_bytes > 0 && g->mem_bytes < 0.9 * c->mem_gb * 1e9;
    mc_judge(it, slice || vgpu || small ? MC_BELOW_SPEC : MC_TO_SPEC, g->sms, c->sms, "SMs");
    if (g->mig[0] || g->mig_mode == 1)
        mc_cause(it, "a MIG slice%s%s of a %s, not a full card: %d of %d SMs, %.0f of %.0f GB",
                 g->mig[0] ? " " : "", g->mig, c->name, g->sms, c->sms, g->mem_bytes / 1e9, c->mem_gb);
    else if (vgpu)
        mc_cause(it, "a vGPU (NVML: virtualization mode vGPU): the card is shared with other VMs");
    else if (slice)
        mc_cause(it, "%d of the %d SMs of a %s: a partitioned or cut-down card", g->sms, c->sms,
                 c->name);
    else if (small)
        mc_cause(it, "%.0f GB of memory where a %s has %.0f GB", g->mem_bytes / 1e9, c->name,
                 c->mem_gb);
}

/* The link under load if it was read, else at rest. */
static void link_now(const mc_gpu *g, int *gen, int *width)
{
    *gen = g->load_gen ? g->load_gen : g->cur_gen;
    *width = g->load_gen ? g->load_width : g->cur_width;
}

/* What the link should carry: the card's datasheet link, else the slot's maximum. */
static double link_expected(const mc_gpu *g, int *gen, int *width)
{
    *gen = g->card && g->card->pcie_gen ? g->card->pcie_gen : g->max_gen;
    *width = g->card && g->card->pcie_width ? g->card->pcie_width : g->max_width;
    if (g->max_gen && g->max_gen < *gen)
        *gen = g->max_gen; /* the slot's maximum caps it (the link line says so) */
    if (g->max_width && g->max_width < *width)
        *width = g->max_width;
    return mc_pcie_GBps(*gen, *width);
}

static void line_link(mc_list *l, const char *subj, const mc_gpu *g)
{
    mc_item *it = mc_add(l, "gpu.link", subj);
    if (!it)
        return;
    if (!g->link_from[0]) {
        mc_cause(it, "neither sysfs (/sys/bus/pci/devices/%s) nor NVML gives the PCIe link",
                 g->busid[0] ? g->busid : "?");
        return;
    }
    int gen, width;
    link_now(g, &gen, &width);
    const int cg = g->card && g->card->pcie_gen ? g->card->pcie_gen : g->max_gen;
    const int cw = g->card && g->card->pcie_width ? g->card->pcie_width : g->max_width;
    const int trained_down = gen < g->max_gen || width < g->max_width;
    const int slot_short = g->max_gen < cg || g->max_width < cw;
    mc_judge(it, trained_down || slot_short ? MC_BELOW_SPEC : MC_TO_SPEC, mc_pcie_GBps(gen, width),
             mc_pcie_GBps(cg, cw), "GB/s");
    mc_what(it, "PCIe gen%d x%d %s, maximum gen%d x%d (%s)%s", gen, width,
            g->load_gen ? "under load" : "at rest", g->max_gen, g->max_width, g->link_from,
            g->card && g->card->pcie_gen ? "" : "; the card's own link is not in the table");
    mc_num(it, "gen", gen);
    mc_num(it, "width", width);
    mc_num(it, "max_gen", g->max_gen);
    mc_num(it, "max_width", g->max_width);
    mc_num(it, "rest_gen", g->cur_gen);
    mc_num(it, "rest_width", g->cur_width);
    if (trained_down)
        mc_cause(it, "the link runs at gen%d x%d where it can do gen%d x%d: a riser or slot with "
                     "fewer lanes, a link that trained down (reseat the card), or power saving that "
                     "did not lift under load", gen, width, g->max_gen, g->max_width);
    else if (slot_short)
        mc_cause(it, "the slot gives gen%d x%d, the card takes gen%d x%d: host-device copies are "
                     "capped at %.1f GB/s", g->max_gen, g->max_width, cg, cw,
                 mc_pcie_GBps(g->max_gen, g->max_width));
}

static void line_copy(mc_list *l, const char *subj, const mc_gpu *g, int d2h)
{
    mc_item *it = mc_add(l, d2h ? "gpu.d2h" : "gpu.h2d", subj);
    if (!it)
        return;
    const double pinned = d2h ? g->d2h_pinned : g->h2d_pinned;
    const double pageable = d2h ? g->d2h_pageable : g->h2d_pageable;
    mc_num(it, "pinned_GBps", pinned > 0 ? pinned : NAN);
    mc_num(it, "pageable_GBps", pageable > 0 ? pageable : NAN);
    if (pinned <= 0) {
        mc_cause(it, "%s", g->copy_why[0] ? g->copy_why : "not measured");
        return;
    }
    mc_what(it, "pinned %.1f GB/s, pageable %.1f GB/s (%.0f%% of pinned)", pinned, pageable,
            100 * pageable / pinned);
    int eg, ew, lg, lw;
    const double expect = link_expected(g, &eg, &ew);
    if (expect <= 0) {
        mc_cause(it, "the PCIe link is unknown: measured values only");
        return;
    }
    mc_judge(it, pinned < MC_LINK_SHARE * expect ? MC_BELOW_SPEC : MC_TO_SPEC, pinned, expect, "GB/s");
    char tail[64];
    snprintf(tail, sizeof tail, " vs %.1f GB/s a gen%d x%d link carries", expect, eg, ew);
    strncat(it->what, tail, sizeof it->what - strlen(it->what) - 1);
    link_now(g, &lg, &lw);
    if (it->verdict != MC_BELOW_SPEC)
        return;
    if (lg && (lg < eg || lw < ew))
        mc_cause(it, "the link runs at gen%d x%d (see gpu.link)", lg, lw);
    else if (g->virt_mode == MC_NVML_VIRT_VGPU)
        mc_cause(it, "a vGPU: copies go through the hypervisor");
    else
        mc_cause(it, "pinned copies reach %.0f%% of what the link carries: an IOMMU translating "
                     "every transfer, the GPU on the other CPU socket (NUMA), or a PCIe switch "
                     "shared with other cards", 100 * pinned / expect);
}

static void line_d2d(mc_list *l, const char *subj, const mc_gpu *g)
{
    mc_item *it = mc_add(l, "gpu.d2d", subj);
    if (!it)
        return;
    if (g->d2d <= 0) {
        mc_cause(it, "%s", g->copy_why[0] ? g->copy_why : "not measured");
        return;
    }
    mc_what(it, "device memory %.0f GB/s (a copy, read + write)", g->d2d);
    if (!g->card || g->card->mem_GBps <= 0) {
        mc_cause(it, "not in the datasheet table: measured value only");
        return;
    }
    const double scale = slice_scale(g), expect = g->card->mem_GBps * scale;
    mc_judge(it, g->d2d < MC_D2D_SHARE * expect ? MC_BELOW_SPEC : MC_TO_SPEC, g->d2d, expect, "GB/s");
    char tail[96];
    snprintf(tail, sizeof tail, " vs %.0f GB/s datasheet%s", expect,
             scale < 1 ? " (scaled to the slice's SMs)" : "");
    strncat(it->what, tail, sizeof it->what - strlen(it->what) - 1);
    if (it->verdict == MC_BELOW_SPEC)
        mc_cause(it, "memory slower than the card's: another process using the GPU, a memory "
                     "clock held down (nvidia-smi -q -d CLOCK), or a different memory part");
}

static void line_gemm(mc_list *l, const char *subj, const mc_gpu *g, int half)
{
    mc_item *it = mc_add(l, half ? "gpu.gemm_16" : "gpu.gemm_fp32", subj);
    if (!it)
        return;
    const double tf = half ? g->gemm16 : g->gemm32;
    const char *type = !half ? "FP32" : g->gemm16_bf16 ? "BF16" : "FP16";
    mc_str(it, "type", type);
    if (tf <= 0) {
        mc_cause(it, "%s", g->gemm_why[0] ? g->gemm_why : "not measured");
        return;
    }
    mc_what(it, "dense %s GEMM %.1f TFLOPS", type, tf);
    const double sheet = !g->card ? 0 : half ? g->card->f16_tflops : g->card->fp32_tflops;
    if (sheet <= 0) {
        mc_cause(it, g->card ? "the datasheet table has no %s rate for this card"
                             : "not in the datasheet table: measured value only", type);
        return;
    }
    const double scale = slice_scale(g), expect = sheet * scale;
    mc_judge(it, tf < MC_GEMM_SHARE * expect ? MC_BELOW_SPEC : MC_TO_SPEC, tf, expect, "TFLOPS");
    char tail[96], reasons[300];
    snprintf(tail, sizeof tail, " vs %.1f datasheet%s", expect,
             scale < 1 ? " (scaled to the slice's SMs)" : "");
    strncat(it->what, tail, sizeof it->what - strlen(it->what) - 1);
    if (it->verdict != MC_BELOW_SPEC)
        return;
    mc_reasons_text(g->reasons, reasons, sizeof reasons);
    if (reasons[0])
        mc_cause(it, "clocks held down while it ran: %s", reasons);
    else if (g->sm_clock && g->sm_clock_max && g->sm_clock < 0.9 * g->sm_clock_max)
        mc_cause(it, "the SM clock was %u MHz of %u", g->sm_clock, g->sm_clock_max);
    else
        mc_cause(it, "another process on the GPU, or a slower part than the name says "
                     "(nvidia-smi shows both)");
}

static void line_throttle(mc_list *l, const char *subj, const mc_cuda *cu, const mc_gpu *g)
{
    mc_item *it = mc_add(l, "gpu.throttle", subj);
    if (!it)
        return;
    if (!cu->have_nvml) {
        mc_cause(it, "%s", cu->nvml_why);
        return;
    }
    if (!g->reasons_known) {
        mc_cause(it, g->nvml_dev ? "NVML gave no clock event reasons while the GEMMs ran"
                                 : "NVML does not know the device at %s", g->busid);
        return;
    }
    char r[300];
    mc_reasons_text(g->reasons, r, sizeof r);
    mc_num(it, "reasons_mask", (double)g->reasons);
    mc_num(it, "sm_clock_MHz", g->sm_clock ? g->sm_clock : NAN);
    mc_num(it, "sm_clock_max_MHz", g->sm_clock_max ? g->sm_clock_max : NAN);
    mc_judge(it, r[0] ? MC_BELOW_SPEC : MC_TO_SPEC, NAN, NAN, "");
    if (r[0]) {
        mc_what(it, "clocks held down under load (SM %u of %u MHz)", g->sm_clock, g->sm_clock_max);
        mc_cause(it, "%s", r);
    } else {
        mc_what(it, "no throttle reason under load (SM %u of %u MHz)", g->sm_clock, g->sm_clock_max);
    }
}

void mc_gpu_lines(mc_list *l, const mc_cuda *cu, const mc_gpu *g)
{
    char subj[32];
    snprintf(subj, sizeof subj, "GPU %d", g->index);
    line_card(l, subj, g);
    line_link(l, subj, g);
    line_copy(l, subj, g, 0);
    line_copy(l, subj, g, 1);
    line_d2d(l, subj, g);
    line_gemm(l, subj, g, 0);
    line_gemm(l, subj, g, 1);
    line_throttle(l, subj, cu, g);
}

void mc_gpu_none(mc_list *l, const mc_cuda *cu)
{
    mc_item *it = mc_add(l, "gpu", "");
    if (it)
        mc_cause(it, "%s", cu->rt_why[0] ? cu->rt_why : "not checked (--no-gpu)");
}

void mc_cost_line(mc_list *l, const mc_gpu *g, int n, double price)
{
    mc_item *it = mc_add(l, "cost", "");
    if (!it)
        return;
    mc_num(it, "price_per_gpu_hour", price);
    mc_num(it, "gpus", n);
    mc_num(it, "per_hour", price * n);
    /* the worst card's share of its datasheet rate (16-bit GEMM, else FP32) */
    double share = 0;
    int known = n > 0;
    for (int i = 0; i < n; i++) {
        const double got = g[i].gemm16 > 0 ? g[i].gemm16 : g[i].gemm32;
        const double sheet = !g[i].card ? 0 : g[i].gemm16 > 0 ? g[i].card->f16_tflops
                                                              : g[i].card->fp32_tflops;
        const double scale = g[i].card && g[i].card->sms && g[i].sms > 0 && g[i].sms < g[i].card->sms
                                 ? (double)g[i].sms / g[i].card->sms : 1.0;
        if (got <= 0 || sheet <= 0) {
            known = 0;
            break;
        }
        const double sh = got / (sheet * scale);
        share = i == 0 || sh < share ? sh : share;
    }
    if (!n) {
        mc_cause(it, "no GPU was measured");
        return;
    }
    mc_what(it, "%d GPU%s at %.2f an hour each: %.2f an hour", n, n == 1 ? "" : "s", price, price * n);
    if (!known) {
        mc_cause(it, "no GEMM rate measured against a datasheet: what an hour buys is unknown");
        return;
    }
    const double eff = price / (share < 1 ? share : 1);
    mc_num(it, "datasheet_share", share);
    mc_num(it, "price_at_datasheet_rate", eff);
    mc_judge(it, share < MC_GEMM_SHARE ? MC_BELOW_SPEC : MC_TO_SPEC, share * 100, MC_GEMM_SHARE * 100,
             "%");
    char tail[160];
    snprintf(tail, sizeof tail, "; the slowest card gives %.0f%% of its datasheet GEMM rate, so an "
             "hour of datasheet compute costs %.2f per GPU", 100 * share, eff);
    strncat(it->what, tail, sizeof it->what - strlen(it->what) - 1);
    if (it->verdict == MC_BELOW_SPEC)
        mc_cause(it, "you pay for %.0f%% more compute than you get (see the gpu.gemm lines)",
                 100 * (1 / share - 1));
}
