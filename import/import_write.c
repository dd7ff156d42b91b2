/* import_write.c — writes one imported process as a gpustarve trace file
 * through trace/'s header, encoder and frame API, the same way the
 * collector does (docs/trace-format.md).
 *
 * Responsible for: the header (pid, rank and world size, the document's
 * clock as both monotonic and real time), the records that say what the
 * trace is (a `note` with code 4: imported; `config num_workers=0` when the
 * single-process DataLoader iterator names itself; thread names; the
 * devices that ran something), and the sorted records, with each cudaMemcpy*
 * call given the direction, bytes and host memory kind (pageable or
 * pinned) of the GPU copy it launched, matched by correlation id.
 *
 * Must never: hold more than the copy calls of one link window (a call
 * waits at most LINK_WINDOW_NS past its end for its GPU copy).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "import.h"
#include "gs_trace.h"

/* RATIONALE: an asynchronous copy may wait in its stream behind queued
 * kernels (200 ms seen in a real A100 trace). A call waits for its GPU copy
 * up to this long past its end, then goes out with an unknown kind (which
 * the analyzer treats as not pageable). Only the waiting calls are held, and
 * they go out behind later records: the analyzer's timeline places records
 * up to a second late exactly (an_timeline.h), so the window stays below. */
#define LINK_WINDOW_NS 500000000ll
/* GPU copies remembered for calls that come after them (clock skew). */
#define RECENT 1024
#define FRAME_RAW (1u << 20)
#define ZSTD_LEVEL 3

typedef struct pending {
    ik_rec r;
    int64_t deadline;
} pending;

typedef struct recent_copy {
    uint64_t corr, aux, bytes, stream;
    uint32_t dev;
} recent_copy;

typedef struct wctx {
    ik_conv *c;
    ik_write_info *wi;
    int fd;
    char *err;
    size_t errlen;
    int64_t base;
    /* encoder */
    uint8_t *raw, *out;
    size_t outcap;
    void *cctx;
    gs_encoder enc;
    uint32_t cur_tid;
    int have_tid;
    uint8_t *defined; /* string id -> written */
    /* copy calls waiting for their GPU copy */
    pending *pend;
    size_t npend, cappend;
    recent_copy recent[RECENT];
    size_t nrecent;
} wctx;

static const char *base_name(const char *p)
{
    const char *s = strrchr(p, '/');
    return s ? s + 1 : p;
}

static int werr(wctx *w, const char *what)
{
    snprintf(w->err, w->errlen, "%s: %s: %s", w->wi->path, what, strerror(errno));
    return -1;
}

static int write_all(wctx *w, const void *p, size_t n)
{
    const char *c = p;
    while (n) {
        ssize_t k = write(w->fd, c, n);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            return werr(w, "cannot write");
        c += k;
        n -= (size_t)k;
        w->wi->bytes += (uint64_t)k;
    }
    return 0;
}

static int flush_frame(wctx *w)
{
    if (!w->enc.nrec)
        return 0;
    const long n = gs_frame_compress(w->cctx, w->raw, w->enc.len, w->enc.nrec, w->out, w->outcap);
    if (n < 0) {
        snprintf(w->err, w->errlen, "%s: compressing a frame failed: %s", w->wi->path,
                 gs_strerror((int)n));
        return -1;
    }
    if (write_all(w, w->out, (size_t)n) < 0)
        return -1;
    gs_encoder_reset(&w->enc);
    w->have_tid = 0;
    return 0;
}

/* Encode ev (with its string and the thread switch it needs), starting a
 * new frame when this one is full. */
static int put(wctx *w, const gs_event *ev)
{
    for (int attempt = 0; attempt < 2; attempt++) {
        const gs_encoder saved = w->enc;
        const int had_tid = w->have_tid;
        int rc = GS_OK;
        if (!w->have_tid || w->cur_tid != ev->tid) {
            rc = gs_encode_tid(&w->enc, ev->tid);
            w->cur_tid = ev->tid;
            w->have_tid = 1;
        }
        int new_str = 0;
        if (rc == GS_OK && ev->str && !w->defined[ev->str]) {
            size_t len;
            const char *s = ik_conv_string(w->c, ev->str, &len);
            rc = gs_encode_string(&w->enc, ev->str, s, len);
            new_str = 1;
        }
        if (rc == GS_OK)
            rc = gs_encode_event(&w->enc, ev);
        if (rc == GS_OK) {
            if (new_str)
                w->defined[ev->str] = 1;
            w->wi->records++;
            return 0;
        }
        w->enc = saved; /* nothing of this record stays in the frame */
        w->have_tid = had_tid;
        if (rc != GS_ERR_FULL || attempt) {
            snprintf(w->err, w->errlen, "%s: encoding a %s record failed: %s", w->wi->path,
                     gs_kind_name(ev->kind) ? gs_kind_name(ev->kind) : "?", gs_strerror(rc));
            return -1;
        }
        if (flush_frame(w) < 0)
            return -1;
    }
    return -1;
}

/* The document's time plus its base (baseTimeNanoseconds), from 0 on: 0
 * before it; -1 past 2^63 - 1 ns. */
static int abs_ts(const wctx *w, int64_t ts, uint64_t *out)
{
    int64_t t;
    if (__builtin_add_overflow(ts, w->base, &t))
        return ts > 0 ? -1 : (*out = 0, 0);
    *out = t > 0 ? (uint64_t)t : 0;
    return 0;
}

static int put_rec(wctx *w, const ik_rec *r)
{
    gs_event ev;
    gs_event_clear(&ev);
    ev.kind = r->kind;
    ev.tid = r->tid;
    if (abs_ts(w, r->ts, &ev.ts) < 0 || ev.ts > (uint64_t)INT64_MAX - r->dur) {
        w->wi->bad_time++; /* its base time puts it past the format's range */
        return 0;
    }
    ev.dur = r->dur;
    ev.str = r->str;
    ev.bytes = r->bytes;
    ev.aux = r->aux;
    ev.aux2 = r->aux2;
    ev.dev = r->dev;
    ev.stream = r->stream;
    ev.corr = r->corr;
    ev.ret = 0;
    if (r->kind == GS_K_CUDA_MEMCPY)
        ev.ret = 0; /* cudaSuccess: the trace lists calls that ran */
    return put(w, &ev);
}

/* ---- the copy-call link ------------------------------------------------------------- */

static void fill_call(ik_rec *call, uint64_t aux, uint64_t bytes, uint32_t dev, uint64_t stream)
{
    const unsigned dir = (unsigned)aux & 0xff;
    unsigned host = GS_MEM_UNKNOWN;
    if (dir == GS_DIR_HTOD)
        host = (unsigned)(aux >> 8) & 0xff;
    else if (dir == GS_DIR_DTOH)
        host = (unsigned)(aux >> 16) & 0xff;
    call->aux = dir | (uint64_t)host << 8;
    call->bytes = bytes;
    call->dev = dev;
    call->stream = stream;
}

/* Write out the waiting calls whose GPU copy has not come by `now`
 * (INT64_MAX: every one). */
static int expire(wctx *w, int64_t now)
{
    for (size_t i = 0; i < w->npend;) {
        if (now != INT64_MAX && w->pend[i].deadline >= now) {
            i++;
            continue;
        }
        w->wi->unlinked++;
        if (put_rec(w, &w->pend[i].r) < 0)
            return -1;
        w->pend[i] = w->pend[--w->npend];
    }
    return 0;
}

static int on_rec(void *ctx, const ik_rec *r)
{
    wctx *w = ctx;
    if (r->kind == GS_K_GPU_MEMCPY && r->corr) {
        int linked = 0;
        for (size_t i = 0; i < w->npend; i++) {
            if (w->pend[i].r.corr != r->corr)
                continue;
            fill_call(&w->pend[i].r, r->aux, r->bytes, r->dev, r->stream);
            w->wi->linked++;
            if (put_rec(w, &w->pend[i].r) < 0)
                return -1;
            w->pend[i] = w->pend[--w->npend];
            linked = 1;
            break;
        }
        if (!linked) {
            recent_copy *rc = &w->recent[w->nrecent++ % RECENT];
            *rc = (recent_copy){r->corr, r->aux, r->bytes, r->stream, r->dev};
        }
    } else if (r->kind == GS_K_CUDA_MEMCPY && r->corr) {
        const size_t n = w->nrecent < RECENT ? w->nrecent : RECENT;
        for (size_t i = 0; i < n; i++)
            if (w->recent[i].corr == r->corr) {
                ik_rec call = *r;
                fill_call(&call, w->recent[i].aux, w->recent[i].bytes, w->recent[i].dev,
                          w->recent[i].stream);
                w->wi->linked++;
                return put_rec(w, &call);
            }
        if (w->npend == w->cappend) {
            size_t nc = w->cappend ? w->cappend * 2 : 64;
            pending *np = realloc(w->pend, nc * sizeof *np);
            if (!np) {
                snprintf(w->err, w->errlen, "out of memory");
                return -1;
            }
            w->pend = np;
            w->cappend = nc;
        }
        int64_t deadline; /* ts + dur fits (import_conv.c); the window may not */
        if (__builtin_add_overflow(r->ts + (int64_t)r->dur, LINK_WINDOW_NS, &deadline))
            deadline = INT64_MAX;
        w->pend[w->npend++] = (pending){*r, deadline};
        return expire(w, r->ts);
    }
    if (put_rec(w, r) < 0)
        return -1;
    return w->npend ? expire(w, r->ts) : 0;
}

/* ---- the file ------------------------------------------------------------------------ */

/* RATIONALE: Kineto's clock is the wall clock (microseconds since 1970),
 * so a time after 2000 is also the real time; anything else (a document
 * with relative times and no base) has no known real time. */
#define EPOCH_2000_NS 946684800000000000ll

/* major * 10 + minor (8.6 -> 86); 0 when unknown or out of range. */
static uint64_t compute_capability(const ik_dev *d)
{
    int64_t cc;
    if (d->major < 0 || __builtin_mul_overflow(d->major, 10, &cc) ||
        __builtin_add_overflow(cc, d->minor > 0 ? d->minor : 0, &cc))
        return 0;
    return (uint64_t)cc;
}

static int prelude(wctx *w, uint64_t t0, uint32_t main_tid, uint32_t note, uint32_t multi,
                   uint32_t config)
{
    ik_conv *c = w->c;
    gs_event ev;
    gs_event_clear(&ev);
    ev.kind = GS_K_NOTE;
    ev.tid = main_tid;
    ev.ts = t0;
    ev.aux = GS_NOTE_IMPORTED;
    ev.str = note;
    if (put(w, &ev) < 0)
        return -1;
    for (size_t i = 0; i < c->tnames.n; i++) {
        const ik_thread_name *t = &c->tnames.v[i];
        if (c->pid >= 0 && t->pid != c->pid)
            continue;
        gs_event_clear(&ev);
        ev.kind = GS_K_THREAD;
        ev.tid = t->tid;
        ev.ts = t0;
        ev.str = t->str;
        ev.aux = t->tid;
        if (put(w, &ev) < 0)
            return -1;
    }
    for (size_t i = 0; i < c->ndevs; i++) {
        const ik_dev *d = &c->devs[i];
        if (d->id < 0 || d->id >= 64 || !(c->used_devs & (1ull << d->id)))
            continue;
        gs_event_clear(&ev);
        ev.kind = GS_K_GPU_DEVICE;
        ev.tid = 0;
        ev.ts = t0;
        ev.dev = (uint32_t)d->id;
        ev.str = d->name;
        ev.bytes = d->total_mem;
        ev.aux = d->sms > 0 ? (uint64_t)d->sms : 0;
        ev.aux2 = compute_capability(d);
        if (put(w, &ev) < 0)
            return -1;
    }
    if (c->iter_multi) {
        gs_event_clear(&ev);
        ev.kind = GS_K_NOTE;
        ev.tid = main_tid;
        ev.ts = t0;
        ev.aux = GS_NOTE_WORKERS_UNSEEN;
        ev.str = multi;
        if (put(w, &ev) < 0)
            return -1;
    }
    if (config) {
        gs_event_clear(&ev);
        ev.kind = GS_K_CONFIG;
        ev.tid = main_tid;
        ev.ts = t0;
        ev.aux = 0;
        ev.str = config;
        if (put(w, &ev) < 0)
            return -1;
    }
    return 0;
}

int ik_write_gst(ik_conv *c, ik_write_info *wi, char *err, size_t errlen)
{
    wctx w;
    memset(&w, 0, sizeof w);
    w.c = c;
    w.wi = wi;
    w.err = err;
    w.errlen = errlen;
    w.fd = -1;
    w.base = c->have_base ? c->base_ns : 0;
    int rc = -1;
    const int64_t first = c->first_ts == INT64_MAX ? 0 : c->first_ts;
    uint64_t t0;
    if (abs_ts(&w, first, &t0) < 0)
        t0 = INT64_MAX;
    const uint32_t main_tid = c->pid > 0 ? (uint32_t)c->pid : 1;

    /* the strings of the prelude, before the table is final */
    char text[1024];
    snprintf(text, sizeof text,
             "imported from %s: a PyTorch profiler (Kineto) trace; it records no DataLoader worker "
             "process, so worker count, worker I/O and loader CPU time are unknown",
             base_name(wi->source));
    const uint32_t note = ik_conv_intern(c, text, strlen(text));
    /* the single-process iterator is what num_workers=0 builds: a fact of
     * the trace, not a guess */
    static const char kv[] = "num_workers=0";
    const uint32_t config =
        c->iter_single && !c->iter_multi ? ik_conv_intern(c, kv, sizeof kv - 1) : 0;
    static const char mt[] = "the DataLoader ran worker processes (_MultiProcessingDataLoaderIter); "
                             "the trace records none of them";
    const uint32_t multi = c->iter_multi ? ik_conv_intern(c, mt, sizeof mt - 1) : 0;
    if (!note || (c->iter_single && !c->iter_multi && !config) || (c->iter_multi && !multi)) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    w.raw = malloc(FRAME_RAW);
    w.outcap = gs_frame_bound(FRAME_RAW);
    w.out = malloc(w.outcap);
    w.defined = calloc(c->nstr + 1, 1);
    w.cctx = gs_frame_cctx_new(ZSTD_LEVEL);
    if (!w.raw || !w.out || !w.defined || !w.cctx) {
        snprintf(err, errlen, "out of memory");
        goto done;
    }
    gs_encoder_init(&w.enc, w.raw, FRAME_RAW);

    /* header: argv is the process name the trace gives, and the source */
    char argv[1024];
    size_t alen = 0;
    uint32_t argc = 0;
    const char *pname = NULL;
    for (size_t i = 0; i < c->pnames.n; i++)
        if (c->pnames.v[i].pid == c->pid)
            pname = ik_conv_string(c, c->pnames.v[i].str, NULL);
    if (pname && *pname) {
        alen += (size_t)snprintf(argv + alen, sizeof argv - alen, "%s", pname) + 1;
        argc++;
    }
    alen += (size_t)snprintf(argv + alen, sizeof argv - alen, "%s", base_name(wi->source)) + 1;
    argc++;
    if (alen > sizeof argv)
        alen = sizeof argv;
    gs_proc_info pi;
    memset(&pi, 0, sizeof pi);
    pi.pid = c->pid > 0 ? (uint64_t)c->pid : 1;
    pi.ppid = 0;
    pi.mono_ns = t0;
    pi.real_ns = (int64_t)t0 > EPOCH_2000_NS ? t0 : 0;
    pi.rank = c->rank >= 0 && c->rank <= INT32_MAX ? (int32_t)c->rank : -1;
    pi.local_rank = -1;
    pi.world_size = c->world_size > 0 && c->world_size <= INT32_MAX ? (int32_t)c->world_size : -1;
    pi.host = wi->host;
    pi.argc = argc;
    pi.argv = argv;
    pi.argv_len = (uint32_t)alen;
    uint8_t hdr[4096];
    const long hlen = gs_header_build(hdr, sizeof hdr, &pi);
    if (hlen < 0) {
        snprintf(err, errlen, "%s: header too large", wi->path);
        goto done;
    }
    /* private, as the collector writes its traces (docs/collector-safety.md) */
    w.fd = open(wi->path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (w.fd < 0) {
        werr(&w, "cannot create");
        goto done;
    }
    if (write_all(&w, hdr, (size_t)hlen) < 0 || prelude(&w, t0, main_tid, note, multi, config) < 0)
        goto done;
    if (ik_sorter_drain(c->sorter, on_rec, &w) < 0) {
        if (!err[0])
            snprintf(err, errlen, "%s", ik_sorter_error(c->sorter));
        goto done;
    }
    if (expire(&w, INT64_MAX) < 0 || flush_frame(&w) < 0)
        goto done;
    if (fsync(w.fd) != 0 && errno != EINVAL) {
        werr(&w, "cannot write");
        goto done;
    }
    rc = 0;
done:
    if (w.fd >= 0 && close(w.fd) != 0 && rc == 0) {
        werr(&w, "cannot write");
        rc = -1;
    }
    if (rc != 0 && w.fd >= 0)
        unlink(wi->path);
    free(w.raw);
    free(w.out);
    free(w.defined);
    free(w.pend);
    gs_frame_cctx_free(w.cctx);
    return rc;
}
