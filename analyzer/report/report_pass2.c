/* report_pass2.c — the report's second pass over the trace files, for
 * --perfetto and --html.
 *
 * Must never: hold events: it writes Perfetto events as they are decoded and
 * keeps only what the HTML page's few windows show.
 */
#include <assert.h>
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "model/an_model.h"
#include "model/an_ranks.h"
#include "base/gs_diag.h"
#include "base/out_buf.h"
#include "base/out_json.h"
#include "gs_format.h"
#include "gs_trace.h"
#include "report/report_json_parts.h"
#include "report/report_style.h"
#include "report/report_callsites.h"
#include "report/report_pass2.h"

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

/* ---- per-file state ---- */

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
        size_t nc = x->capth ? x->capth * 2 : 16;
        pf_thread *n = realloc(x->th, nc * sizeof *n);
        if (!n)
            return NULL;
        x->th = n;
        x->capth = nc;
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
    if (x->nst == x->capst) {
        size_t nc = x->capst ? x->capst * 2 : 8;
        pf_stream *n = realloc(x->st, nc * sizeof *n);
        if (!n)
            return NULL;
        x->st = n;
        x->capst = nc;
    }
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

/* ---- HTML rows and items ---- */

static long hx_row_of(pass2 *x, int type, uint64_t a, uint64_t b, const char *name)
{
    for (size_t i = 0; i < x->nrows; i++)
        if (x->rows[i].type == type && x->rows[i].a == a && x->rows[i].b == b)
            return (long)i;
    if (x->nrows >= HX_MAX_ROWS)
        return -1; /* the page shows the first rows only */
    if (x->nrows == x->caprows) {
        size_t nc = x->caprows ? x->caprows * 2 : 16;
        hx_row *n = realloc(x->rows, nc * sizeof *n);
        if (!n)
            return -1;
        x->rows = n;
        x->caprows = nc;
    }
    hx_row *r = &x->rows[x->nrows];
    r->type = type;
    r->a = a;
    r->b = b;
    snprintf(r->name, sizeof r->name, "%s", name);
    return (long)x->nrows++;
}

static void hx_add(pass2 *x, long row, uint64_t t0, uint64_t t1, unsigned cls)
{
    if (row < 0)
        return;
    for (size_t w = 0; w < x->nwin; w++) {
        hx_window *v = &x->win[w];
        if (t1 <= v->t0 || t0 >= v->t1 || v->full)
            continue;
        const uint64_t a = t0 > v->t0 ? t0 : v->t0, b = t1 < v->t1 ? t1 : v->t1;
        if ((size_t)row >= v->nlast) {
            size_t nn = (size_t)row + 16;
            size_t *nl = realloc(v->last, nn * sizeof *nl);
            if (!nl)
                continue;
            memset(nl + v->nlast, 0, (nn - v->nlast) * sizeof *nl);
            v->last = nl;
            v->nlast = nn;
        }
        if (v->last[row]) {
            hx_item *l = &v->it[v->last[row] - 1];
            if (l->cls == cls && a <= l->t1 + v->tol && a >= l->t0) {
                if (b > l->t1)
                    l->t1 = b;
                continue;
            }
        }
        if (v->n == v->cap) {
            if (v->cap >= HX_MAX_ITEMS) {
                v->full = 1;
                continue;
            }
            size_t nc = v->cap ? v->cap * 2 : 256;
            hx_item *ni = realloc(v->it, nc * sizeof *ni);
            if (!ni)
                continue;
            v->it = ni;
            v->cap = nc;
        }
        v->it[v->n] = (hx_item){a, b, (uint32_t)row, cls};
        v->last[row] = ++v->n;
    }
}

static int hx_in_any(const pass2 *x, uint64_t t0, uint64_t t1)
{
    for (size_t w = 0; w < x->nwin; w++)
        if (t1 > x->win[w].t0 && t0 < x->win[w].t1)
            return 1;
    return 0;
}

/* ---- hooks ---- */

static void p2_read_counter_flush(pass2 *x)
{
    if (!x->pf || x->rbin < 0)
        return;
    const uint64_t t = x->base + (uint64_t)x->rbin * PF_BIN_NS;
    pf_counter(x, x->tpid, "read MB/s", t, (double)x->rbytes / 1e6 / (PF_BIN_NS / 1e9));
    pf_counter(x, x->tpid, "read MB/s", t + PF_BIN_NS, 0);
}

static void p2_file_read(pass2 *x, const gs_event *e, uint64_t bytes)
{
    if (x->pf) {
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
    /* per step, all processes */
    const an_result *r = x->res;
    size_t lo = 0, hi = r->nsteps;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (jt(x->top_off, r->steps[mid].v.t0) <= e->ts)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo && e->ts < jt(x->top_off, r->steps[lo - 1].v.t1) && x->step_bytes)
        x->step_bytes[lo - 1] += (double)bytes;
}

/* Each process's host as a number, in the order the run's files were read
 * (0: the first host; a process of no host: 0). NULL when out of memory:
 * every process then counts as the first host's. */
static uint32_t *host_numbers(const an_run *run)
{
    uint32_t *k = calloc(run->nprocs ? run->nprocs : 1, sizeof *k);
    uint32_t next = 0;
    for (size_t i = 0; k && i < run->nprocs; i++) {
        const char *h = run->procs[i].host;
        size_t j = 0;
        while (j < i && !(h && run->procs[j].host && strcmp(run->procs[j].host, h) == 0))
            j++;
        k[i] = !h ? 0 : j < i ? k[j] : next++;
    }
    return k;
}

/* The Perfetto pid of process img: its pid on the run's first host; on the
 * k-th other host, pid + k x PF_PID_HOST_STRIDE, so that processes of two
 * hosts with the same pid keep tracks of their own. */
static uint64_t track_pid(const pass2 *x, size_t img, uint64_t pid)
{
    const uint64_t k = x->hostk && img < x->run->nprocs ? x->hostk[img] : 0;
    if (!k)
        return pid;
    return pid % PF_PID_HOST_STRIDE + (k % PF_MAX_HOSTS) * PF_PID_HOST_STRIDE;
}

static void p2_on_file(void *ctx, const an_proc *p, struct gs_reader *r)
{
    pass2 *x = ctx;
    x->p1 = NULL;
    for (size_t i = 0; i < x->run->nprocs; i++)
        if (strcmp(x->run->procs[i].path, p->path) == 0) {
            x->p1 = &x->run->procs[i];
            x->img = i;
        }
    x->pid = p->pid;
    x->tpid = track_pid(x, x->p1 ? x->img : (size_t)-1, p->pid);
    if (x->res->callsites && an_cs_has_stacks(x->res->callsites))
        an_cs_proc_begin(x->res->callsites, p->path, gs_reader_info(r)); /* its mappings */
    x->nth = x->nst = x->nrg = 0;
    x->last_th = -1;
    an_index_free(&x->thx);
    x->ngpu_named = 0;
    x->rbin = -1;
    x->rbytes = 0;
    /* by file: in a job of ranks the result's processes are its rank's
     * copies of the run's (an_ranks.h) */
    x->is_trainer = x->p1 && strcmp(x->p1->path, x->res->trainer->path) == 0;
    x->is_worker = 0;
    long wi = -1;
    for (size_t i = 0; i < x->res->nworkers; i++)
        if (x->p1 && strcmp(x->res->workers[i].p->path, x->p1->path) == 0 && !x->is_trainer) {
            x->is_worker = 1;
            wi = (long)i;
        }
    if (!x->p1) /* cannot happen: the same files in the same order */
        x->p1 = p;
    x->off = an_job_clock_offset(x->job, x->run, x->p1);
    if (x->pf) {
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
    x->gbin = -1;
    x->gbusy = 0;
    x->glast = -1;
    x->pk = 0;
}

static const char *p2_str(struct gs_reader *r, uint32_t id)
{
    return id ? gs_reader_string(r, id) : NULL;
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
    const char *path = p2_str(r, e->str);
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

/* enum an_piece (an_busy first) -> share index */
static const int piece_share[AN_NPC] = {
    AN_SH_COMPUTE, AN_SH_COMM, AN_SH_H2D_PAGEABLE, AN_SH_H2D_PINNED, AN_SH_COPY_OTHER,
    AN_SH_DATA_WAIT, AN_SH_PAGEABLE_COPY, AN_SH_HOST,
};

/* A GPU record's share, by the analysis's own rule (an_gpu_busy). */
static unsigned gpu_cls(struct gs_reader *r, const gs_event *e)
{
    const int comm = e->kind == GS_K_GPU_KERNEL && an_kernel_is_comm(p2_str(r, e->str));
    return (unsigned)piece_share[an_gpu_busy(e, comm)];
}

static void p2_gpu(pass2 *x, struct gs_reader *r, const gs_event *e)
{
    uint64_t t0 = e->ts, t1 = e->ts + e->dur; /* e is on the job's clock (p2_on_event) */
    if (x->html && x->is_trainer && hx_in_any(x, t0, t1)) {
        char name[96];
        snprintf(name, sizeof name, "GPU %u stream %llu", e->dev, (unsigned long long)e->stream);
        hx_add(x, hx_row_of(x, 1, e->dev, e->stream, name), t0, t1, gpu_cls(r, e));
    }
    if (!x->pf)
        return;
    pf_stream *s = pf_stream_of(x, e->dev, e->stream);
    if (!s)
        return;
    leaf_clip(&s->last_end, &t0, t1);
    const char *name;
    char shown[512];
    const char *raw = e->kind == GS_K_GPU_KERNEL ? p2_str(r, e->str) : NULL;
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

static void p2_on_event(void *ctx, const an_proc *p, struct gs_reader *r, const gs_event *e)
{
    pass2 *x = ctx;
    (void)p;
    const unsigned k = e->kind;
    if (k == GS_K_MAPPING && x->res->callsites) {
        an_cs_mapping(x->res->callsites, r, e); /* so call sites can be named */
        return;
    }
    /* from here on, every time is on the job's clock */
    gs_event ev = *e;
    ev.ts = jt(x->off, e->ts);
    e = &ev;
    if (k == GS_K_GPU_KERNEL || k == GS_K_GPU_MEMCPY || k == GS_K_GPU_MEMSET) {
        p2_gpu(x, r, e);
        return;
    }
    if (!e->ts || k == GS_K_GPU_SYNC)
        return;
    const int io = gs_kind_is_io_call(k);
    const int cuda = gs_kind_is_cuda(k);
    if (e->fd_kind == GS_FDK_FILE && gs_kind_is_read(k))
        p2_file_read(x, e, gs_read_bytes(e));
    /* HTML: what the loader does beside the GPU */
    if (x->html && io && hx_in_any(x, e->ts, e->ts + e->dur) &&
        (x->is_worker || (x->is_trainer && (!x->res->thread || e->tid != x->res->thread->tid)))) {
        unsigned cls = HX_NCLS;
        if (gs_kind_is_read(k))
            cls = e->fd_kind == GS_FDK_FILE                                  ? HX_READ
                  : e->fd_kind == GS_FDK_PIPE || e->fd_kind == GS_FDK_SOCKET ? HX_WAIT
                                                                             : HX_NCLS;
        else if (gs_kind_is_metadata(k) && e->fd_kind != GS_FDK_PIPE && e->fd_kind != GS_FDK_SOCKET)
            cls = HX_META;
        else if (gs_kind_is_wait(k))
            cls = HX_WAIT;
        if (cls < HX_NCLS) {
            char name[96];
            long row;
            if (x->is_worker) {
                snprintf(name, sizeof name, "loader pid %llu", (unsigned long long)x->pid);
                row = hx_row_of(x, 2, x->img, 0, name);
            } else {
                snprintf(name, sizeof name, "trainer thread %u", e->tid);
                row = hx_row_of(x, 3, e->tid, 0, name);
            }
            hx_add(x, row, e->ts, e->ts + e->dur, cls);
        }
    }
    if (!x->pf)
        return;
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
        const char *n = p2_str(r, e->str);
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
        const char *n = p2_str(r, e->str);
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
            const char *n = p2_str(r, t->nv_stack[i].str);
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
            const char *n = p2_str(r, e->str);
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
        pf_instant(x, x->tpid, e->tid, e->ts, p2_str(r, e->str));
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

static void p2_on_piece(void *ctx, uint64_t t0, uint64_t t1, unsigned cls)
{
    pass2 *x = ctx;
    if (cls >= AN_NPC)
        return;
    t0 = jt(x->top_off, t0); /* the trainer's clock on the job's */
    t1 = jt(x->top_off, t1);
    if (x->html)
        hx_add(x, hx_row_of(x, 0, 0, 0, "training thread"), t0, t1, (unsigned)piece_share[cls]);
    if (!x->pf)
        return;
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

static void p2_on_file_end(void *ctx, const an_proc *p)
{
    pass2 *x = ctx;
    (void)p;
    if (!x->pf)
        return;
    p2_read_counter_flush(x);
    if (x->is_trainer && x->gbin >= 0) {
        p2_gbin_flush(x);
        pf_counter(x, PF_PID_ANALYSIS, "GPU busy %", x->base + (uint64_t)(x->gbin + 1) * PF_BIN_NS, 0);
        x->gbin = -1;
    }
}

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

static void pf_header(pass2 *x)
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

static void pf_footer(pass2 *x)
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

/* The page's style and script (HTML output). Kept inline: the page must
 * work with no network, no file beside it. */
/* ---- running the second pass ---- */

static int cmp_slowest(const void *a, const void *b, void *ctx)
{
    const an_step *s = ctx;
    const size_t i = *(const size_t *)a, j = *(const size_t *)b;
    const uint64_t di = s[i].v.t1 - s[i].v.t0, dj = s[j].v.t1 - s[j].v.t0;
    return di > dj ? -1 : di < dj ? 1 : (i > j) - (i < j);
}

static FILE *open_out(const char *path, const char *what)
{
    FILE *f = fopen(path, "w");
    if (!f)
        gs_cli_error("report: %s %s: %s", what, path, strerror(errno));
    return f;
}

static int close_out(FILE *f, gs_out *o, const char *path, const char *what)
{
    gs_out_flush(o);
    int bad = ferror(f);
    if (fclose(f) != 0)
        bad = 1;
    if (bad) {
        gs_cli_error("report: writing %s %s failed: %s", what, path, strerror(errno));
        return -1;
    }
    gs_cli_msg(2, "report: wrote %s %s", what, path);
    return 0;
}

/* Read the run again for --perfetto and/or --html. Returns 0 or -1 (a
 * message was printed). */
int rep_second_pass(const char *dir, const an_opts *o1, const an_run *run, const an_result *res,
                    const an_job *job, const char *perfetto, const char *html)
{
    pass2 *x = calloc(1, sizeof *x);
    if (!x) {
        gs_cli_error("out of memory");
        return -1;
    }
    int rc = 0;
    x->run = run;
    x->res = res;
    x->job = job;
    x->hostk = host_numbers(run);
    x->top_off = an_job_clock_offset(job, run, res->trainer);
    x->base = UINT64_MAX;
    for (size_t i = 0; i < run->nprocs; i++) {
        const uint64_t f = jt(an_job_clock_offset(job, run, &run->procs[i]), run->procs[i].first_ts);
        if (f && f < x->base)
            x->base = f;
    }
    if (x->base == UINT64_MAX)
        x->base = 0;
    x->step_bytes = calloc(res->nsteps ? res->nsteps : 1, sizeof *x->step_bytes);
    FILE *pff = NULL, *hf = NULL;
    gs_out *pfo = NULL;
    gs_jw pjw;
    if (perfetto) {
        pff = open_out(perfetto, "--perfetto");
        pfo = pff ? malloc(sizeof *pfo) : NULL;
        if (!pfo) {
            if (pff)
                fclose(pff);
            free(x->step_bytes);
            free(x->hostk);
            free(x);
            return -1;
        }
        gs_out_init(pfo, pff);
        x->pf = pfo;
        gs_jw_init(&pjw, pfo);
        x->pj = &pjw;
        pf_header(x);
    }
    if (html) {
        x->html = 1;
        size_t *idx = malloc((res->nsteps ? res->nsteps : 1) * sizeof *idx);
        size_t m = 0;
        for (size_t i = 0; idx && i < res->nsteps; i++)
            if (!res->steps[i].warmup)
                idx[m++] = i;
        if (idx)
            qsort_r(idx, m, sizeof *idx, cmp_slowest, res->steps);
        for (size_t i = 0; i < m && x->nwin < HX_WINDOWS; i++) {
            hx_window *w = &x->win[x->nwin++];
            w->step = idx[i];
            w->t0 = jt(x->top_off, res->steps[idx[i]].v.t0);
            w->t1 = jt(x->top_off, res->steps[idx[i]].v.t1);
            w->tol = (w->t1 - w->t0) / HX_MERGE;
        }
        free(idx);
    }
    an_hooks hk = {0};
    hk.ctx = x;
    hk.on_file = p2_on_file;
    hk.on_event = p2_on_event;
    hk.on_file_end = p2_on_file_end;
    if (res->thread) {
        hk.on_piece = p2_on_piece;
        hk.piece_path = res->trainer->path;
        hk.piece_pid = res->trainer->pid;
        hk.piece_exec_seq = res->trainer->exec_seq;
        hk.piece_tid = res->thread->tid;
    }
    an_opts o2 = *o1; /* the same compiled patterns; freed once, by the caller */
    o2.hooks = &hk;
    o2.progress = NULL;
    an_run run2;
    char err[512];
    (void)dir; /* the directories the first pass read: run->dirs */
    if (an_run_load_dirs(&run2, run->dirs, run->ndirs, &o2, err, sizeof err) < 0) {
        gs_cli_error("report: second pass: %s", err);
        rc = -1;
    }
    an_run_free(&run2);
    if (pfo) {
        pf_footer(x);
        if (close_out(pff, pfo, perfetto, "--perfetto") < 0)
            rc = -1;
        free(pfo);
    }
    if (html && rc == 0) {
        hf = open_out(html, "--html");
        gs_out *ho = hf ? malloc(sizeof *ho) : NULL;
        if (!ho) {
            if (hf)
                fclose(hf);
            rc = -1;
        } else {
            gs_out_init(ho, hf);
            rep_write_html(ho, x);
            if (close_out(hf, ho, html, "--html") < 0)
                rc = -1;
            free(ho);
        }
    }
    for (size_t w = 0; w < x->nwin; w++) {
        free(x->win[w].it);
        free(x->win[w].last);
    }
    free(x->rows);
    free(x->th);
    an_index_free(&x->thx);
    free(x->st);
    free(x->rg);
    free(x->step_bytes);
    free(x->hostk);
    free(x);
    return rc;
}

