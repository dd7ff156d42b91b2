/* import_conv.c — what a PyTorch profiler (Kineto) trace event means in
 * gpustarve's terms, for every format PyTorch has written since 1.8.
 *
 *   Kernel / kernel              -> gpu_kernel (device, stream, correlation)
 *   Memcpy / gpu_memcpy          -> gpu_memcpy; direction and pageable/pinned
 *                                   from the name "Memcpy HtoD (Pageable -> Device)"
 *   Memset / gpu_memset          -> gpu_memset
 *   Runtime / cuda_runtime /     -> cuda_memcpy for the cudaMemcpy* family (its
 *   cuda_driver                     host memory kind comes from the linked GPU
 *                                   copy, import_write.c), cuda_sync for the
 *                                   synchronize calls; other calls are counted
 *   user_annotation              -> an NVTX range (nvtx_start / nvtx_end)
 *   Operator / cpu_op,           -> an NVTX range when the name is a step
 *   python_function                 (ProfilerStep#N) or a DataLoader __next__
 *                                   (PyTorch 1.8/1.9 wrote record_function
 *                                   ranges as operators)
 *   metadata thread_name / process_name, deviceProperties, distributedInfo
 *                                -> thread records, gpu_device, header rank
 *   flows (ac2g, async, ...), instant and counter events, gpu_user_annotation
 *                                -> counted, not used
 *
 * Must never: keep an event after its callback (records go to the sorter),
 * or compare strings per event beyond the category (names are classified
 * once, in the string table).
 */
#include <stdlib.h>
#include <string.h>

#include "gs_ranges.h"
#include "import.h"
#include "gs_format.h"

/* ---- names of copies ------------------------------------------------------------- */

static int word_is(const char *s, size_t n, const char *w)
{
    const size_t l = strlen(w);
    return n >= l && memcmp(s, w, l) == 0;
}

static unsigned mem_kind(const char *s, size_t n)
{
    if (word_is(s, n, "Pageable"))
        return GS_MEM_PAGEABLE;
    if (word_is(s, n, "Pinned"))
        return GS_MEM_PINNED;
    if (word_is(s, n, "Device"))
        return GS_MEM_DEVICE;
    if (word_is(s, n, "Managed"))
        return GS_MEM_MANAGED;
    if (word_is(s, n, "Array"))
        return GS_MEM_ARRAY;
    return GS_MEM_UNKNOWN;
}

/* RATIONALE: an event with no name has s NULL and n 0, and memchr's
 * pointer must not be NULL even for 0 bytes (UBSan, found by test-fuzz) */
static const char *find_char(const char *s, size_t n, char ch)
{
    return n ? memchr(s, ch, n) : NULL;
}

uint64_t ik_memcpy_aux(const char *s, size_t n)
{
    /* "Memcpy HtoD (Pageable -> Device)" */
    unsigned dir = GS_DIR_UNKNOWN, src = GS_MEM_UNKNOWN, dst = GS_MEM_UNKNOWN;
    const char *sp = find_char(s, n, ' ');
    if (sp) {
        const char *d = sp + 1;
        const size_t dn = n - (size_t)(d - s);
        if (word_is(d, dn, "HtoD"))
            dir = GS_DIR_HTOD;
        else if (word_is(d, dn, "DtoH"))
            dir = GS_DIR_DTOH;
        else if (word_is(d, dn, "DtoD"))
            dir = GS_DIR_DTOD;
        else if (word_is(d, dn, "HtoH"))
            dir = GS_DIR_HTOH;
        else if (word_is(d, dn, "PtoP"))
            dir = GS_DIR_PTOP;
    }
    const char *par = find_char(s, n, '(');
    if (par) {
        const char *a = par + 1;
        src = mem_kind(a, n - (size_t)(a - s));
        const char *arrow = find_char(a, n - (size_t)(a - s), '>');
        if (arrow) {
            const char *b = arrow + 1;
            while (b < s + n && *b == ' ')
                b++;
            dst = mem_kind(b, n - (size_t)(b - s));
        }
    }
    return dir | (uint64_t)src << 8 | (uint64_t)dst << 16;
}

uint64_t ik_memset_aux(const char *s, size_t n)
{
    const char *par = find_char(s, n, '(');
    return par ? mem_kind(par + 1, n - (size_t)(par + 1 - s)) : GS_MEM_UNKNOWN;
}

/* ---- categories ---------------------------------------------------------------------- */

enum cat {
    C_LEGACY, /* no "cat": torch.autograd.profiler without Kineto (Debian's torch) */
    C_OTHER,
    C_KERNEL,
    C_MEMCPY,
    C_MEMSET,
    C_RUNTIME,
    C_OP,
    C_ANNOT,
    C_PYFUNC,
};

static int str_is(ik_str s, const char *w)
{
    const size_t l = strlen(w);
    return s.n == l && memcmp(s.s, w, l) == 0;
}

static enum cat category(ik_str c)
{
    switch (c.n) {
    case 0:
        return C_LEGACY;
    case 6:
        if (str_is(c, "kernel") || str_is(c, "Kernel"))
            return C_KERNEL;
        if (str_is(c, "Memcpy"))
            return C_MEMCPY;
        if (str_is(c, "Memset"))
            return C_MEMSET;
        if (str_is(c, "cpu_op"))
            return C_OP;
        break;
    case 7:
        if (str_is(c, "Runtime"))
            return C_RUNTIME;
        break;
    case 8:
        if (str_is(c, "Operator"))
            return C_OP;
        break;
    case 10:
        if (str_is(c, "gpu_memcpy") || str_is(c, "gpu_memset"))
            return c.s[7] == 'c' ? C_MEMCPY : C_MEMSET; /* gpu_memcpy, gpu_memset */
        break;
    case 11:
        if (str_is(c, "cuda_driver"))
            return C_RUNTIME;
        break;
    case 12:
        if (str_is(c, "cuda_runtime"))
            return C_RUNTIME;
        break;
    case 15:
        if (str_is(c, "user_annotation") || str_is(c, "python_function"))
            return c.s[0] == 'u' ? C_ANNOT : C_PYFUNC;
        break;
    }
    return C_OTHER;
}

/* ---- events --------------------------------------------------------------------------- */

static uint32_t cpu_tid(const ik_event *e)
{
    uint32_t t;
    if (e->tid.is_num)
        t = (uint32_t)e->tid.num;
    else if (e->tid.is_str)
        t = ik_hash_bytes(e->tid.str.s, e->tid.str.n);
    else
        t = e->pid.is_num ? (uint32_t)e->pid.num : 1;
    return t ? t : 0xfffffffeu; /* tid 0 is the GPU's in the trace format */
}

static uint64_t gpu_stream(const ik_event *e)
{
    if (e->has_stream)
        return (uint64_t)e->stream;
    if (e->tid.is_num)
        return (uint64_t)e->tid.num;
    if (e->tid.is_str) { /* "stream 7" */
        const ik_str s = e->tid.str;
        uint64_t v = 0;
        for (size_t i = 0; i < s.n; i++)
            if (s.s[i] >= '0' && s.s[i] <= '9')
                v = v * 10 + (uint64_t)(s.s[i] - '0');
        return v;
    }
    return 0;
}

/* An event whose times do not fit (its end past 2^63 - 1 ns, or a number
 * too large): skipped and counted; the command says so once. */
static int bad_time(ik_conv *c)
{
    c->n_bad_time++;
    return 0;
}

static void span(ik_conv *c, int64_t t0, int64_t t1)
{
    if (c->first_ts == INT64_MAX || t0 < c->first_ts)
        c->first_ts = t0;
    if (t1 > c->last_ts)
        c->last_ts = t1;
}

static int add(ik_conv *c, const ik_rec *r)
{
    if (ik_sorter_add(c->sorter, r) < 0) {
        c->failed = 1;
        return -1;
    }
    return 0;
}

static int on_meta(ik_conv *c, const ik_event *e)
{
    if (!e->arg_name.n || !e->pid.is_num)
        return 0;
    const int thread = str_is(e->name, "thread_name");
    if (!thread && !str_is(e->name, "process_name"))
        return 0;
    const uint32_t id = ik_conv_name(c, e->arg_name.s, e->arg_name.n, IK_NAME_THREAD, NULL);
    if (!id)
        return -1;
    if (thread)
        return ik_names_set(c, &c->tnames, e->pid.num, cpu_tid(e), id);
    return ik_names_set(c, &c->pnames, e->pid.num, 0, id);
}

static int range(ik_conv *c, const ik_event *e, int all)
{
    uint8_t f = 0;
    const uint32_t id = ik_conv_name(c, e->name.s, e->name.n, IK_NAME_RANGE, &f);
    if (!id)
        return -1;
    if (!all && !(f & (IK_SF_STEP | IK_SF_FETCH)))
        return 0;
    int64_t t1 = e->ts_ns;
    if (e->has_dur && e->dur_ns > 0 && __builtin_add_overflow(e->ts_ns, e->dur_ns, &t1))
        return bad_time(c);
    if (c->pid < 0 && e->pid.is_num)
        c->pid = e->pid.num;
    else if (e->pid.is_num && e->pid.num != c->pid)
        c->other_pids++;
    if (f & IK_SF_STEP)
        c->n_steps++;
    if (f & IK_SF_FETCH)
        c->n_fetch++;
    if (f & IK_SF_SINGLE)
        c->iter_single = 1;
    if (f & IK_SF_MULTI)
        c->iter_multi = 1;
    c->n_ranges++;
    const uint64_t rid = ++c->range_id;
    ik_rec r;
    memset(&r, 0, sizeof r);
    r.tid = cpu_tid(e);
    r.kind = GS_K_NVTX_START;
    r.ts = e->ts_ns;
    r.str = id;
    r.aux2 = rid;
    r.order = IK_ORD_START;
    if (add(c, &r) < 0)
        return -1;
    r.kind = GS_K_NVTX_END;
    r.ts = t1;
    r.str = 0;
    r.order = IK_ORD_END;
    span(c, e->ts_ns, t1);
    return add(c, &r);
}

static int gpu(ik_conv *c, const ik_event *e, enum cat k)
{
    ik_rec r;
    memset(&r, 0, sizeof r);
    r.ts = e->ts_ns;
    r.dur = e->has_dur && e->dur_ns > 0 ? (uint64_t)e->dur_ns : 0;
    int64_t t1;
    if (__builtin_add_overflow(r.ts, (int64_t)r.dur, &t1))
        return bad_time(c);
    int64_t dev = e->has_device ? e->device : e->pid.is_num ? e->pid.num : 0;
    if (dev < 0)
        dev = 0;
    r.dev = (uint32_t)dev;
    if (dev < 64)
        c->used_devs |= 1ull << dev;
    r.stream = gpu_stream(e);
    r.corr = e->has_corr ? (uint64_t)e->corr : 0;
    r.order = IK_ORD_MID;
    if (k == C_KERNEL) {
        r.kind = GS_K_GPU_KERNEL;
        if (!(r.str = ik_conv_name(c, e->name.s, e->name.n, IK_NAME_KERNEL, NULL)))
            return -1;
        c->n_kernel++;
    } else if (k == C_MEMCPY) {
        r.kind = GS_K_GPU_MEMCPY;
        r.aux = ik_memcpy_aux(e->name.s, e->name.n);
        r.bytes = e->has_bytes && e->bytes > 0 ? (uint64_t)e->bytes : 0;
        if ((r.aux & 0xff) == GS_DIR_HTOD) {
            const unsigned src = (unsigned)(r.aux >> 8) & 0xff;
            c->n_pageable_h2d += src == GS_MEM_PAGEABLE;
            c->n_pinned_h2d += src == GS_MEM_PINNED;
        }
        c->n_memcpy++;
    } else {
        r.kind = GS_K_GPU_MEMSET;
        r.aux = ik_memset_aux(e->name.s, e->name.n);
        r.bytes = e->has_bytes && e->bytes > 0 ? (uint64_t)e->bytes : 0;
        c->n_memset++;
    }
    span(c, r.ts, t1);
    return add(c, &r);
}

static int is_sync_call(ik_str n)
{
    return str_is(n, "cudaStreamSynchronize") || str_is(n, "cudaDeviceSynchronize") ||
           str_is(n, "cudaEventSynchronize") || str_is(n, "cuStreamSynchronize") ||
           str_is(n, "cuCtxSynchronize") || str_is(n, "cuEventSynchronize");
}

static int runtime(ik_conv *c, const ik_event *e)
{
    c->n_runtime++;
    const int copy = (e->name.n >= 10 && memcmp(e->name.s, "cudaMemcpy", 10) == 0) ||
                     (e->name.n >= 8 && memcmp(e->name.s, "cuMemcpy", 8) == 0);
    const int sync = !copy && is_sync_call(e->name);
    if (!copy && !sync)
        return 0;
    if (c->pid < 0 && e->pid.is_num)
        c->pid = e->pid.num;
    ik_rec r;
    memset(&r, 0, sizeof r);
    r.ts = e->ts_ns;
    r.dur = e->has_dur && e->dur_ns > 0 ? (uint64_t)e->dur_ns : 0;
    int64_t t1;
    if (__builtin_add_overflow(r.ts, (int64_t)r.dur, &t1))
        return bad_time(c);
    r.tid = cpu_tid(e);
    r.corr = e->has_corr ? (uint64_t)e->corr : 0;
    r.order = IK_ORD_MID;
    r.kind = copy ? GS_K_CUDA_MEMCPY : GS_K_CUDA_SYNC;
    if (!(r.str = ik_conv_name(c, e->name.s, e->name.n, IK_NAME_CALL, NULL)))
        return -1;
    if (copy)
        c->n_copy_calls++;
    else
        c->n_sync_calls++;
    span(c, r.ts, t1);
    return add(c, &r);
}

static int on_event(void *ctx, const ik_event *e)
{
    ik_conv *c = ctx;
    if (c->failed)
        return -1;
    if (e->ph == 'M')
        return on_meta(c, e) < 0 ? (c->failed = 1, -1) : 0;
    if (e->ph == 'X' && e->bad_time)
        return bad_time(c);
    if (e->ph != 'X' || !e->has_ts) {
        if (e->ph == 's' || e->ph == 'f' || e->ph == 't')
            c->n_flow++;
        else
            c->n_other++;
        return 0;
    }
    int rc = 0;
    switch (category(e->cat)) {
    case C_KERNEL:
        rc = gpu(c, e, C_KERNEL);
        break;
    case C_MEMCPY:
        rc = gpu(c, e, C_MEMCPY);
        break;
    case C_MEMSET:
        rc = gpu(c, e, C_MEMSET);
        break;
    case C_RUNTIME:
        rc = runtime(c, e);
        break;
    case C_ANNOT:
        rc = range(c, e, 1);
        break;
    case C_OP:
    case C_PYFUNC:
        rc = range(c, e, 0);
        break;
    case C_LEGACY:
        /* the legacy profiler's export: "pid": "CPU functions" for operators
         * and record_function ranges, "CUDA functions" (tid = device) for
         * the GPU time of each operator */
        c->n_legacy++;
        if (e->pid.is_str && str_is(e->pid.str, "CUDA functions")) {
            ik_event g = *e;
            g.has_device = e->tid.is_num;
            g.device = e->tid.num;
            g.has_stream = 1;
            g.stream = 0;
            rc = gpu(c, &g, C_KERNEL);
        } else
            rc = range(c, e, 0);
        break;
    case C_OTHER:
        c->n_other++;
        break;
    }
    if (rc < 0)
        c->failed = 1;
    return rc;
}

static void on_device(void *ctx, const ik_device *d)
{
    ik_conv *c = ctx;
    if (c->ndevs >= IK_DEVICES_MAX) {
        c->n_devices_over++;
        return;
    }
    if (c->ndevs == c->capdevs) {
        size_t nc = c->capdevs ? c->capdevs * 2 : 8;
        ik_dev *nd = realloc(c->devs, nc * sizeof *nd);
        if (!nd)
            return;
        c->devs = nd;
        c->capdevs = nc;
    }
    ik_dev *v = &c->devs[c->ndevs++];
    v->id = d->id;
    v->name = ik_conv_name(c, d->name.s, d->name.n, IK_NAME_THREAD, NULL);
    v->total_mem = d->total_mem;
    v->sms = d->sms;
    v->major = d->major;
    v->minor = d->minor;
}

static void on_dist(void *ctx, int64_t rank, int64_t world)
{
    ik_conv *c = ctx;
    c->rank = rank;
    c->world_size = world;
}

static void on_number(void *ctx, const char *key, int64_t v)
{
    ik_conv *c = ctx;
    if (strcmp(key, "schemaVersion") == 0)
        c->schema_version = v;
    else if (strcmp(key, "baseTimeNanoseconds") == 0) {
        c->base_ns = v;
        c->have_base = 1;
    }
}

static void on_string(void *ctx, const char *key, const char *s, size_t n)
{
    ik_conv *c = ctx;
    if (strcmp(key, "host_name") != 0)
        return;
    size_t k = 0;
    /* a file name part: no '/', nothing odd */
    for (size_t i = 0; i < n && k + 1 < sizeof c->host; i++) {
        const char ch = s[i];
        c->host[k++] = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
                               (ch >= '0' && ch <= '9') || ch == '.' || ch == '_'
                           ? ch
                           : '-';
    }
    c->host[k] = '\0';
}

void ik_conv_callbacks(ik_conv *c, ik_callbacks *cb)
{
    memset(cb, 0, sizeof *cb);
    cb->ctx = c;
    cb->on_event = on_event;
    cb->on_device = on_device;
    cb->on_dist = on_dist;
    cb->on_number = on_number;
    cb->on_string = on_string;
}

ik_conv *ik_conv_new(const char *tmpdir, size_t run_bytes)
{
    ik_conv *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    gs_ranges *o = calloc(1, sizeof *o);
    const char *bad;
    if (!o || gs_ranges_init(o, NULL, NULL, &bad) != 0) {
        free(o);
        free(c);
        return NULL;
    }
    c->re = o;
    c->pid = -1;
    c->rank = c->world_size = -1;
    c->schema_version = -1;
    c->first_ts = INT64_MAX;
    c->last_ts = INT64_MIN;
    c->sorter = ik_sorter_new(tmpdir, run_bytes);
    if (!c->sorter) {
        ik_conv_free(c);
        return NULL;
    }
    return c;
}

void ik_conv_free(ik_conv *c)
{
    if (!c)
        return;
    if (c->re) {
        gs_ranges_free(c->re);
        free(c->re);
    }
    ik_sorter_free(c->sorter);
    free(c->arena);
    free(c->soff);
    free(c->slen);
    free(c->sflags);
    free(c->hash);
    ik_names_free(&c->tnames);
    ik_names_free(&c->pnames);
    free(c->devs);
    free(c);
}
