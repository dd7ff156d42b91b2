/* report_perfetto.c — the second pass's Perfetto trace (Chrome trace-event
 * JSON, one event a line): every traced thread's I/O and CUDA calls, NVTX
 * ranges and markers, every GPU stream, the steps (each rank's too), the
 * starvation track of the training thread's idle pieces by cause, and the
 * read MB/s and GPU busy % counters (docs/report-outputs.md, "Perfetto").
 *
 * Must never: hold events (each is written as it is decoded), or let two
 * leaf slices of one track overlap partially.
 */
#include "report/report_perfetto.h"
#include "base/an_grow.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gs_format.h"
#include "gs_trace.h"
#include "load/an_kernels.h"
#include "model/an_ranks.h"
#include "report/report_callsites.h"
#include "report/report_json_parts.h"

/* ---- Perfetto primitives (Chrome trace-event JSON, one event a line) ---- */

/* Start an event object {"ph":..,"pid":..,"tid":..; the caller adds members
 * and closes it (gs_jw_end). */
static void pf_open(pass2 *x, char ph, uint64_t pid, uint64_t tid)
{
    gs_jw *w = x->pj;
    const char ph_json[3] = {'"', ph, '"'}; /* a letter: nothing to escape */
    assert((ph >= 'A' && ph <= 'Z') || (ph >= 'a' && ph <= 'z'));
    gs_jw_newline(w, "\n");
    gs_jw_obj(w);
    GS_JW_KEY_LIT(w, "ph");
    gs_jw_raw(w, ph_json, 3);
    GS_JW_KEY_LIT(w, "pid");
    gs_jw_u64(w, pid);
    GS_JW_KEY_LIT(w, "tid");
    gs_jw_u64(w, tid);
}

/* "ts" or "dur": µs with ns precision */
#define PF_TS(x, lit, ns)                                                                        \
    do {                                                                                         \
        GS_JW_KEY_LIT((x)->pj, lit);                                                             \
        gs_jw_scaled((x)->pj, (int64_t)(ns), 3);                                                 \
    } while (0)

static void pf_name(pass2 *x, const char *name)
{
    GS_JW_KEY_LIT(x->pj, "name");
    gs_jw_str(x->pj, name ? name : "?");
}

static void pf_meta(pass2 *x, const char *what, uint64_t pid, uint64_t tid, const char *name)
{
    pf_open(x, 'M', pid, tid);
    GS_JW_KSTR(x->pj, "name", what);
    gs_jw_key(x->pj, "args");
    gs_jw_obj(x->pj);
    GS_JW_KSTR(x->pj, "name", name);
    gs_jw_end(x->pj);
    gs_jw_end(x->pj);
}

static void pf_sort(pass2 *x, uint64_t pid, long idx)
{
    pf_open(x, 'M', pid, 0);
    GS_JW_KSTR(x->pj, "name", "process_sort_index");
    gs_jw_key(x->pj, "args");
    gs_jw_obj(x->pj);
    GS_JW_KI64(x->pj, "sort_index", idx);
    gs_jw_end(x->pj);
    gs_jw_end(x->pj);
}

/* A complete slice of category cat (a string literal); the caller adds args
 * ("args":{...}) and closes it. */
#define pf_slice(x, pid, tid, t0, t1, name, cat)                                                  \
    pf_slice_q(x, pid, tid, t0, t1, name, "\"" cat "\"", sizeof(cat) + 1)
static void pf_slice_q(pass2 *x, uint64_t pid, uint64_t tid, uint64_t t0, uint64_t t1,
                       const char *name, const char *cat_json, size_t cat_n)
{
    pf_open(x, 'X', pid, tid);
    PF_TS(x, "ts", rel(x, t0));
    PF_TS(x, "dur", t1 > t0 ? t1 - t0 : 0);
    pf_name(x, name);
    GS_JW_KEY_LIT(x->pj, "cat");
    gs_jw_raw(x->pj, cat_json, cat_n);
}

/* "args":{ — the caller adds members and closes args and the event
 * (pf_args_end). */
static void pf_args(pass2 *x)
{
    GS_JW_KEY_LIT(x->pj, "args");
    gs_jw_obj(x->pj);
}

static void pf_args_end(pass2 *x)
{
    gs_jw_end(x->pj);
    gs_jw_end(x->pj);
}

static void pf_counter(pass2 *x, uint64_t pid, const char *name, uint64_t t, double v)
{
    pf_open(x, 'C', pid, 0);
    PF_TS(x, "ts", rel(x, t));
    pf_name(x, name);
    pf_args(x);
    gs_jw_key(x->pj, "value");
    rep_json_num(x->pj, v);
    pf_args_end(x);
}

static void pf_instant(pass2 *x, uint64_t pid, uint64_t tid, uint64_t t, const char *name)
{
    pf_open(x, 'i', pid, tid);
    PF_TS(x, "ts", rel(x, t));
    pf_name(x, name);
    GS_JW_KSTR(x->pj, "s", "t");
    GS_JW_KSTR(x->pj, "cat", "marker");
    gs_jw_end(x->pj);
}

/* ---- tracks ---- */

static pf_thread *pf_thread_of(pass2 *x, uint32_t tid)
{
    if (x->last_th >= 0 && x->th[x->last_th].tid == tid)
        return &x->th[x->last_th];
    const long had = an_index_get(&x->thx, tid);
    if (had >= 0) {
        x->last_th = had;
        return &x->th[had];
    }
    if (x->nth == x->capth) {
        if (x->capth >= PF_MAX_THREADS)
            return NULL;
        if (an_grow(&x->th, &x->capth, x->capth + 1, sizeof *x->th, 16) < 0)
            return NULL;
    }
    if (an_index_put(&x->thx, tid, (uint32_t)x->nth) != 0)
        return NULL;
    pf_thread *t = &x->th[x->nth];
    memset(t, 0, sizeof *t);
    t->tid = tid;
    x->last_th = (long)x->nth++;
    return t;
}

static uint64_t gpu_pid(const pass2 *x, uint32_t dev)
{
    return PF_PID_GPU + 1000 * (uint64_t)x->img + (dev % 1000);
}

static pf_stream *pf_stream_of(pass2 *x, uint32_t dev, uint64_t stream)
{
    for (size_t i = x->nst; i-- > 0;)
        if (x->st[i].dev == dev && x->st[i].stream == stream)
            return &x->st[i];
    /* RATIONALE: past PF_MAX_STREAMS tracks (a damaged or hostile trace),
     * the rest share the last one: the search stays bounded */
    if (x->nst >= PF_MAX_STREAMS)
        return &x->st[x->nst - 1];
    if (an_grow(&x->st, &x->capst, x->nst + 1, sizeof *x->st, 8) < 0)
        return NULL;
    pf_stream *s = &x->st[x->nst++];
    s->dev = dev;
    s->stream = stream;
    s->last_end = 0;
    uint32_t k = 0;
    for (size_t i = 0; i + 1 < x->nst; i++)
        k += x->st[i].dev == dev;
    s->tid = k + 1;
    if (x->pf) {
        int named = 0;
        for (int i = 0; i < x->ngpu_named; i++)
            named |= x->gpu_named[i] == dev + 1;
        if (!named && x->ngpu_named < 8) {
            x->gpu_named[x->ngpu_named++] = dev + 1;
            const char *dn = "";
            for (size_t i = 0; i < x->p1->ndevs; i++)
                if (x->p1->devs[i].dev == dev)
                    dn = x->p1->devs[i].name;
            char name[200];
            snprintf(name, sizeof name, "GPU %u%s%s (pid %llu%s)", dev, dn[0] ? ": " : "", dn,
                     (unsigned long long)x->pid, x->is_trainer ? ", trainer" : "");
            pf_meta(x, "process_name", gpu_pid(x, dev), 0, name);
            pf_sort(x, gpu_pid(x, dev), x->is_trainer ? 1 : 50);
        }
        char tn[64];
        snprintf(tn, sizeof tn, "stream %llu", (unsigned long long)stream);
        pf_meta(x, "thread_name", gpu_pid(x, dev), s->tid, tn);
    }
    return s;
}

/* Leaf slices of one track never partially overlap: a start inside the
 * previous leaf moves to its end (a hook's clock read is the only way there). */
static int leaf_clip(uint64_t *last_end, uint64_t *t0, uint64_t t1)
{
    if (*t0 < *last_end && t1 > *last_end)
        *t0 = *last_end;
    if (t1 > *last_end)
        *last_end = t1;
    return 1;
}

/* ---- events ---- */

/* The current file's process (worker wi of the result, -1 none): its
 * track's name and place. */
void rep_pf_file(pass2 *x, const an_proc *p, long wi)
{
    char name[200];
    const char *argv = p->argv[0] ? p->argv : p->file;
    if (x->is_trainer)
        snprintf(name, sizeof name, "trainer: %.120s", argv);
    else if (x->is_worker)
        snprintf(name, sizeof name, "loader worker %ld: %.120s", wi, argv);
    else
        snprintf(name, sizeof name, "%.150s", argv);
    if (x->job && x->job->nhosts >= 2 && x->p1->host) {
        const size_t n = strlen(name);
        snprintf(name + n, sizeof name - n, " (pid %llu on %.40s)",
                 (unsigned long long)p->pid, x->p1->host);
    }
    pf_meta(x, "process_name", x->tpid, 0, name);
    pf_sort(x, x->tpid, x->is_trainer ? 0 : x->is_worker ? 10 + wi : 100);
    if (x->is_trainer && x->res->thread) {
        const an_thread *t = x->res->thread;
        char tn[96];
        snprintf(tn, sizeof tn, "%s (training thread)", t->name[0] ? t->name : "thread");
        pf_meta(x, "thread_name", x->tpid, t->tid, tn);
    }
}

static void p2_read_counter_flush(pass2 *x)
{
    if (!x->pf || x->rbin < 0)
        return;
    const uint64_t t = x->base + (uint64_t)x->rbin * PF_BIN_NS;
    pf_counter(x, x->tpid, "read MB/s", t, (double)x->rbytes / 1e6 / (PF_BIN_NS / 1e9));
    pf_counter(x, x->tpid, "read MB/s", t + PF_BIN_NS, 0);
}

/* A file read of bytes at e->ts: the "read MB/s" counter, in bins of
 * PF_BIN_NS (a read behind the current bin counts in it). */
void rep_pf_file_read(pass2 *x, const gs_event *e, uint64_t bytes)
{
    const int64_t bin = (int64_t)(rel(x, e->ts) / PF_BIN_NS);
    if (bin > x->rbin) {
        if (x->rbin >= 0) {
            const uint64_t t = x->base + (uint64_t)x->rbin * PF_BIN_NS;
            pf_counter(x, x->tpid, "read MB/s", t, (double)x->rbytes / 1e6 / (PF_BIN_NS / 1e9));
            if (bin > x->rbin + 1)
                pf_counter(x, x->tpid, "read MB/s", t + PF_BIN_NS, 0);
        }
        x->rbin = bin;
        x->rbytes = 0;
    }
    x->rbytes += bytes; /* a read behind the current bin counts in it */
}

/* ,"call_site":"..." when the event's stack is one of the report's shown
 * call sites (runs traced with --stacks). */
static void p2_call_site(pass2 *x, struct gs_reader *r, const gs_event *e)
{
    if (!e->stack || !x->res->callsites)
        return;
    char buf[4096];
    const an_cs_site *s = an_cs_event_site(x->res->callsites, r, e);
    if (s && rep_cs_site_text(s, 6, buf, sizeof buf) > 0) {
        GS_JW_KSTR(x->pj, "call_site", buf);
    }
}

static void p2_io_args(pass2 *x, struct gs_reader *r, const gs_event *e)
{
    gs_jw *w = x->pj;
    pf_args(x);
    GS_JW_KI64(w, "fd", e->fd);
    GS_JW_KSTR(w, "fd_kind", gs_fdkind_name(e->fd_kind));
    const char *path = rep_p2_str(r, e->str);
    if (path)
        GS_JW_KSTR(w, "path", path);
    GS_JW_KU64(w, "bytes", e->bytes);
    GS_JW_KI64(w, "ret", e->ret);
    if (e->offset >= 0)
        GS_JW_KI64(w, "offset", e->offset);
    p2_call_site(x, r, e);
    pf_args_end(x);
}

/* gpu_memcpy and cuda_memcpy: "memcpy HtoD (pageable)", ... */
static const char *memcpy_name(const gs_event *e)
{
    const unsigned dir = gs_copy_dir(e), src = gs_h2d_source_mem(e);
    if (dir == GS_DIR_HTOD)
        return src == GS_MEM_PAGEABLE ? "memcpy HtoD (pageable)"
               : src == GS_MEM_PINNED ? "memcpy HtoD (pinned)"
                                      : "memcpy HtoD";
    if (dir == GS_DIR_DTOH)
        return "memcpy DtoH";
    if (dir == GS_DIR_DTOD)
        return "memcpy DtoD";
    return "memcpy";
}

void rep_pf_gpu(pass2 *x, struct gs_reader *r, const gs_event *e)
{
    uint64_t t0 = e->ts, t1 = e->ts + e->dur; /* e is on the job's clock */
    pf_stream *s = pf_stream_of(x, e->dev, e->stream);
    if (!s)
        return;
    leaf_clip(&s->last_end, &t0, t1);
    const char *name;
    char shown[512];
    const char *raw = e->kind == GS_K_GPU_KERNEL ? rep_p2_str(r, e->str) : NULL;
    if (e->kind == GS_K_GPU_KERNEL)
        name = raw ? an_kernel_display(raw, shown, sizeof shown) : "kernel";
    else if (e->kind == GS_K_GPU_MEMCPY)
        name = memcpy_name(e);
    else
        name = "memset";
    if (e->kind == GS_K_GPU_KERNEL)
        pf_slice(x, gpu_pid(x, e->dev), s->tid, t0, t1, name, "gpu_kernel");
    else
        pf_slice(x, gpu_pid(x, e->dev), s->tid, t0, t1, name, "gpu_copy");
    pf_args(x);
    GS_JW_KU64(x->pj, "stream", e->stream);
    GS_JW_KU64(x->pj, "correlation", e->corr);
    if (e->kind != GS_K_GPU_KERNEL)
        GS_JW_KU64(x->pj, "bytes", e->bytes);
    else if (raw && strcmp(raw, name) != 0)
        GS_JW_KSTR(x->pj, "mangled", raw);
    pf_args_end(x);
}

/* A host event of the current file (not a GPU record, not a mapping), on
 * the job's clock. */
void rep_pf_event(pass2 *x, struct gs_reader *r, const gs_event *e)
{
    const unsigned k = e->kind;
    const int io = gs_kind_is_io_call(k);
    const int cuda = gs_kind_is_cuda(k);
    pf_thread *t = pf_thread_of(x, e->tid);
    if (!t)
        return;
    uint64_t t0 = e->ts, t1 = e->ts + e->dur;
    if (io) {
        leaf_clip(&t->last_end, &t0, t1);
        pf_slice(x, x->tpid, e->tid, t0, t1, gs_kind_name(k), "io");
        p2_io_args(x, r, e);
        return;
    }
    if (cuda) {
        leaf_clip(&t->last_end, &t0, t1);
        const char *n = rep_p2_str(r, e->str);
        pf_slice(x, x->tpid, e->tid, t0, t1, n ? n : gs_kind_name(k), "cuda");
        pf_args(x);
        GS_JW_KU64(x->pj, "bytes", e->bytes);
        if (k == GS_K_CUDA_MEMCPY) {
            const unsigned hk = gs_copy_host_mem(e);
            GS_JW_KSTR(x->pj, "copy", memcpy_name(e));
            gs_jw_kstr(x->pj, "host_memory",
                       hk == GS_MEM_PAGEABLE ? "pageable" : hk == GS_MEM_PINNED ? "pinned" : "other");
        }
        GS_JW_KI64(x->pj, "ret", e->ret);
        p2_call_site(x, r, e);
        pf_args_end(x);
        return;
    }
    char buf[64];
    switch (k) {
    case GS_K_THREAD: {
        const char *n = rep_p2_str(r, e->str);
        char tn[96];
        const int training = x->is_trainer && x->res->thread && x->res->thread->tid == (uint32_t)e->aux;
        snprintf(tn, sizeof tn, "%s%s", n ? n : "thread", training ? " (training thread)" : "");
        pf_meta(x, "thread_name", x->tpid, (uint32_t)e->aux, tn);
        return;
    }
    case GS_K_NVTX_PUSH:
        if (t->nv < PF_NVTX_DEPTH) {
            t->nv_stack[t->nv].ts = e->ts;
            t->nv_stack[t->nv].str = e->str;
            t->nv_stack[t->nv].dom = (uint32_t)e->aux;
        }
        t->nv++;
        return;
    case GS_K_NVTX_POP:
        if (t->nv > PF_NVTX_DEPTH) {
            t->nv--;
            return;
        }
        /* the innermost range of the domain; ranges opened inside it and
         * still open are dropped so that slices stay nested */
        for (int i = t->nv - 1; i >= 0; i--) {
            if (t->nv_stack[i].dom != (uint32_t)e->aux)
                continue;
            const char *n = rep_p2_str(r, t->nv_stack[i].str);
            pf_slice(x, x->tpid, e->tid, t->nv_stack[i].ts, e->ts, n ? n : "nvtx range", "nvtx");
            pf_args(x);
            GS_JW_KU64(x->pj, "domain", t->nv_stack[i].dom);
            pf_args_end(x);
            t->nv = i;
            return;
        }
        return;
    case GS_K_NVTX_START:
        if (x->nrg < PF_MAX_RANGES) {
            if (!x->rg && !(x->rg = malloc(PF_MAX_RANGES * sizeof *x->rg)))
                return;
            pf_range *g = &x->rg[x->nrg++];
            g->id = e->aux2;
            g->ts = e->ts;
            g->tid = e->tid;
            const char *n = rep_p2_str(r, e->str);
            snprintf(g->name, sizeof g->name, "%s", n ? n : "nvtx range");
        }
        return;
    case GS_K_NVTX_END:
        for (size_t i = 0; i < x->nrg; i++) {
            if (x->rg[i].id != e->aux2)
                continue;
            /* start/end ranges need not nest: async slices, their own tracks */
            const pf_range g = x->rg[i];
            x->rg[i] = x->rg[--x->nrg];
            for (int be = 0; be < 2; be++) {
                pf_open(x, be ? 'e' : 'b', x->tpid, g.tid);
                PF_TS(x, "ts", rel(x, be ? e->ts : g.ts));
                pf_name(x, g.name);
                GS_JW_KSTR(x->pj, "cat", "nvtx");
                GS_JW_KU64(x->pj, "id", g.id);
                gs_jw_end(x->pj);
            }
            return;
        }
        return;
    case GS_K_NVTX_MARK:
        pf_instant(x, x->tpid, e->tid, e->ts, rep_p2_str(r, e->str));
        return;
    case GS_K_STEP_BEGIN: case GS_K_STEP_END: case GS_K_FETCH_BEGIN: case GS_K_FETCH_END:
        snprintf(buf, sizeof buf, "%s %llu", gs_kind_name(k), (unsigned long long)e->aux);
        pf_instant(x, x->tpid, e->tid, e->ts, buf);
        return;
    case GS_K_EXIT:
        snprintf(buf, sizeof buf, "exit %llu", (unsigned long long)gs_exit_status(e));
        pf_instant(x, x->tpid, e->tid, e->ts, buf);
        return;
    default:
        return;
    }
}

static void p2_gbin_flush(pass2 *x)
{
    if (x->gbin < 0)
        return;
    const int pct = (int)((double)x->gbusy * 100.0 / (double)PF_BIN_NS + 0.5);
    if (pct != x->glast)
        pf_counter(x, PF_PID_ANALYSIS, "GPU busy %", x->base + (uint64_t)x->gbin * PF_BIN_NS, pct);
    x->glast = pct;
}

static const char *const piece_names[AN_NPC] = {
    "compute", "communication", "h2d_pageable", "h2d_pinned", "copy_other",
    "data_wait", "pageable_copy", "host",
};
/* A piece of the training thread's timeline [t0, t1) of class cls (enum
 * an_piece), on the job's clock: the "GPU busy %" counter and, inside
 * measured steps, the starvation track's idle slices. */
void rep_pf_piece(pass2 *x, uint64_t t0, uint64_t t1, unsigned cls)
{
    /* GPU busy % per bin */
    for (uint64_t a = t0; a < t1;) {
        const int64_t bin = (int64_t)(rel(x, a) / PF_BIN_NS);
        const uint64_t bstart = x->base + (uint64_t)bin * PF_BIN_NS;
        const uint64_t bend = bstart > UINT64_MAX - PF_BIN_NS ? UINT64_MAX : bstart + PF_BIN_NS;
        if (a == bstart && a > x->base && t1 - a >= 2 * PF_BIN_NS && bend > a) {
            /* RATIONALE: a piece covering whole bins gives each the same
             * value: the first and the last of the run are emitted, not
             * every bin between (a day-long piece is 8.6 M bins; a hostile
             * one 2^62 ns) */
            const uint64_t nfull = (t1 - a) / PF_BIN_NS;
            if (bin != x->gbin)
                p2_gbin_flush(x);
            x->gbin = bin;
            x->gbusy = cls < AN_NBUSY ? PF_BIN_NS : 0;
            p2_gbin_flush(x);
            x->gbin = bin + (int64_t)nfull - 1;
            a += nfull * PF_BIN_NS;
            continue;
        }
        const uint64_t b = t1 < bend ? t1 : bend;
        if (bin != x->gbin) {
            p2_gbin_flush(x);
            x->gbin = bin;
            x->gbusy = 0;
        }
        if (cls < AN_NBUSY)
            x->gbusy += b - a;
        if (b <= a)
            break; /* the end of time: nothing after UINT64_MAX */
        a = b;
    }
    /* idle pieces of measured steps */
    if (cls < AN_PC_DW)
        return;
    const an_result *r = x->res;
    while (x->pk < r->nsteps && jt(x->top_off, r->steps[x->pk].v.t1) <= t0)
        x->pk++;
    for (size_t j = x->pk; j < r->nsteps && jt(x->top_off, r->steps[j].v.t0) < t1; j++) {
        const an_step *s = &r->steps[j];
        const uint64_t s0 = jt(x->top_off, s->v.t0), s1 = jt(x->top_off, s->v.t1);
        if (s->warmup || s1 <= t0)
            continue;
        const uint64_t a = t0 > s0 ? t0 : s0, b = t1 < s1 ? t1 : s1;
        pf_slice(x, PF_PID_ANALYSIS, 2, a, b, piece_names[cls], "starvation");
        GS_JW_KSTR(x->pj, "cname", cls == AN_PC_DW ? "terrible" : cls == AN_PC_PG ? "bad" : "yellow");
        pf_args(x);
        GS_JW_KU64(x->pj, "step", s->num);
        pf_args_end(x);
    }
}

/* The end of the current file: the counters it left open. */
void rep_pf_file_end(pass2 *x)
{
    p2_read_counter_flush(x);
    if (x->is_trainer && x->gbin >= 0) {
        p2_gbin_flush(x);
        pf_counter(x, PF_PID_ANALYSIS, "GPU busy %", x->base + (uint64_t)(x->gbin + 1) * PF_BIN_NS, 0);
        x->gbin = -1;
    }
}

/* ---- the document ---- */

/* The steps of result r, whose clock is off from the job's, as slices of
 * the analysis track tid (rank: the "rank" argument; -1 none). */
static void pf_steps(pass2 *x, const an_result *r, int64_t off, uint64_t tid, int32_t rank)
{
    gs_jw *w = x->pj;
    uint64_t last_end = 0;
    for (size_t i = 0; i < r->nsteps; i++) {
        const an_step *s = &r->steps[i];
        uint64_t t0 = jt(off, s->v.t0);
        const uint64_t t1 = jt(off, s->v.t1);
        leaf_clip(&last_end, &t0, t1);
        char sn[64];
        snprintf(sn, sizeof sn, "step %llu%s", (unsigned long long)s->num, s->warmup ? " (warm-up)" : "");
        pf_slice(x, PF_PID_ANALYSIS, tid, t0, t1, sn, "step");
        pf_args(x);
        GS_JW_KU64(w, "index", i);
        GS_JW_KBOOL(w, "warmup", s->warmup);
        if (rank >= 0)
            GS_JW_KI64(w, "rank", rank);
        rep_json_step_parts(w, &s->v);
        pf_args_end(x);
    }
}

/* The document's head, the steps' tracks (the result's and, for a job,
 * each rank's). */
void rep_pf_header(pass2 *x)
{
    const an_result *r = x->res;
    gs_jw *w = x->pj;
    gs_jw_obj(w);
    GS_JW_KSTR(w, "displayTimeUnit", "ms");
    gs_jw_key(w, "otherData");
    gs_jw_obj(w);
    GS_JW_KSTR(w, "generator", "gpustarve report");
    GS_JW_KSTR(w, "verdict", r->verdict_text);
    GS_JW_KU64(w, "time_origin_ns", x->base);
    gs_jw_end(w);
    gs_jw_key(w, "traceEvents");
    gs_jw_arr(w);
    char name[200];
    snprintf(name, sizeof name, "gpustarve: steps and GPU starvation (trainer pid %llu)",
             (unsigned long long)r->trainer->pid);
    pf_meta(x, "process_name", PF_PID_ANALYSIS, 0, name);
    pf_sort(x, PF_PID_ANALYSIS, -1);
    pf_meta(x, "thread_name", PF_PID_ANALYSIS, 1, "steps");
    pf_meta(x, "thread_name", PF_PID_ANALYSIS, 2, "GPU starvation (idle pieces by cause)");
    pf_steps(x, r, x->top_off, 1, -1);
    /* a job of several ranks: each rank's steps on its own track, on the
     * job's clock, so the hosts' steps can be seen side by side */
    const an_job *job = x->job;
    for (size_t k = 0; job && job->nranks >= 2 && k < job->nranks; k++) {
        const an_rank *R = &job->ranks[k];
        if (!R->ok)
            continue;
        char tn[160];
        snprintf(tn, sizeof tn, "steps of rank %d (host %.100s)", R->rank, R->host ? R->host : "?");
        pf_meta(x, "thread_name", PF_PID_ANALYSIS, PF_TID_RANK_STEPS + k, tn);
        pf_steps(x, &R->res, R->clock_offset_ns, PF_TID_RANK_STEPS + k, R->rank);
    }
}

/* The per-step read counter and the document's end. */
void rep_pf_footer(pass2 *x)
{
    const an_result *r = x->res;
    for (size_t i = 0; i < r->nsteps && x->step_bytes; i++) {
        const an_step *s = &r->steps[i];
        const double sec = (double)(s->v.t1 - s->v.t0) / 1e9;
        pf_counter(x, PF_PID_ANALYSIS, "read MB/s per step (all processes)",
                   jt(x->top_off, s->v.t0), sec > 0 ? x->step_bytes[i] / 1e6 / sec : 0);
        if (i + 1 == r->nsteps || r->steps[i + 1].v.t0 != s->v.t1)
            pf_counter(x, PF_PID_ANALYSIS, "read MB/s per step (all processes)",
                       jt(x->top_off, s->v.t1), 0);
    }
    gs_out_char(x->pf, '\n'); /* the last event's line ends; no comma */
    gs_jw_end(x->pj);
    gs_jw_end(x->pj);
    gs_out_char(x->pf, '\n');
}
