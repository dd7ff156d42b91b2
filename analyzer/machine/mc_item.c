/* mc_item.c — the check's list of items (mc_check.h): appending one, its
 * verdict and numbers, and the defaults of a full and a quick check.
 *
 * Must never: print, or measure anything.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/an_grow.h"
#include "machine/mc_check.h"

mc_item *mc_add(mc_list *l, const char *id, const char *subject)
{
    if (an_grow((void **)&l->v, &l->cap, l->n + 1, sizeof *l->v, 16) < 0)
        return NULL;
    mc_item *it = &l->v[l->n++];
    memset(it, 0, sizeof *it);
    snprintf(it->id, sizeof it->id, "%s", id);
    snprintf(it->subject, sizeof it->subject, "%s", subject ? subject : "");
    it->verdict = MC_CANNOT_TELL;
    it->measured = it->expected = NAN;
    return it;
}

void mc_list_free(mc_list *l)
{
    free(l->v);
    memset(l, 0, sizeof *l);
}

void mc_judge(mc_item *it, mc_verdict v, double measured, double expected, const char *unit)
{
    it->verdict = v;
    it->measured = measured;
    it->expected = expected;
    snprintf(it->unit, sizeof it->unit, "%s", unit ? unit : "");
}

void mc_num(mc_item *it, const char *key, double v)
{
    if (it->nnums >= MC_MAX_NUMS)
        return;
    snprintf(it->nums[it->nnums].key, sizeof it->nums[0].key, "%s", key);
    it->nums[it->nnums++].v = v;
}

void mc_str(mc_item *it, const char *key, const char *v)
{
    if (it->nstrs >= MC_MAX_STRS)
        return;
    snprintf(it->strs[it->nstrs].key, sizeof it->strs[0].key, "%s", key);
    snprintf(it->strs[it->nstrs].v, sizeof it->strs[0].v, "%s", v ? v : "");
    it->strs[it->nstrs++].null = !v;
}

void mc_what(mc_item *it, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(it->what, sizeof it->what, fmt, ap);
    va_end(ap);
}

void mc_cause(mc_item *it, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(it->cause, sizeof it->cause, fmt, ap);
    va_end(ap);
}

const char *mc_verdict_text(mc_verdict v)
{
    return v == MC_TO_SPEC ? "to spec" : v == MC_BELOW_SPEC ? "below spec" : "cannot tell";
}

const char *mc_verdict_key(mc_verdict v)
{
    return v == MC_TO_SPEC ? "to_spec" : v == MC_BELOW_SPEC ? "below_spec" : "cannot_tell";
}

/* RATIONALE: the budgets are what keeps a full check under 2 minutes and a
 * quick one under 20 s on one GPU and one dataset path (docs/check.md,
 * "Time"): a sequential read of 1 GiB or 10 s, 2000 small files or 8 s,
 * copies of 256 MiB; quick: 256 MiB or 2 s, 300 files or 2 s, 64 MiB. */
void mc_opts_default(mc_opts *o, int quick)
{
    memset(o, 0, sizeof *o);
    o->quick = quick;
    o->shm_path = "/dev/shm";
    o->read_max_bytes = quick ? 256ull << 20 : 1ull << 30;
    o->read_budget_s = quick ? 2.0 : 10.0;
    o->read_expect_MBps = 200;
    o->files_max = quick ? 300 : 2000;
    o->files_budget_s = quick ? 2.0 : 8.0;
    o->file_threads = 4;
    o->small_file_bytes = 4u << 20;
    o->file_expect_ms = 2.0;
    o->copy_bytes = quick ? 64u << 20 : 256u << 20;
    o->repeats = quick ? 3 : 5;
    o->gemm_n = quick ? 4096 : 8192;
    o->scaling_n = quick ? 4096 : 8192;
    o->scaling_steps = quick ? 4 : 10;
    o->sysfs = "/sys";
}
