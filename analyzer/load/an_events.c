/* an_events.c — what each event of a trace file means for the analysis:
 * (a) loader-side counters of the process and its threads (reads, metadata
 * calls, waits on pipes/sockets, request sizes, faults, drops), (b) intervals
 * on the process's timeline (GPU activity per stream, classed by kernel and
 * copy kind; per host thread: data wait — batch fetches, pipe/socket waits,
 * file reads and metadata calls —, pageable copy calls, and the batch
 * fetches again as fetch time), (c)
 * step-boundary candidates (markers, NVTX ranges matching the step pattern,
 * bursts of batch arrivals) with a snapshot of the timeline at each, so that
 * any later choice of trainer, training thread and steps (an_trainer.c,
 * an_steps.c) can be evaluated without reading the events again.
 *
 * What a kind is comes from trace/ (gs_kind_class, the packed-field
 * accessors); what it counts for in the analysis is decided here.
 *
 * Must never: keep events, allocate or compare strings per event (names are
 * classified once per string id), or hold a file open (an_load.c does).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "load/an_events.h"
#include "load/an_peers.h"
#include "base/an_grow.h"
#include "base/an_index.h"
#include "gs_trace.h"

/* per-string-id flags */
enum {
    SF_DONE = 1,
    SF_COMM = 2,  /* kernel name is communication (an_kernel_is_comm) */
    SF_STEP = 4,  /* matches --step-range */
    SF_FETCH = 8, /* matches --fetch-range */
};

/* RATIONALE: string ids are dense from 1 in real traces: a flat table for
 * the first 64 Ki; ids beyond (a large run, or a hostile file naming id
 * 2^30) go to a map, never to a table sized by the id. */
#define SF_DIRECT 65536u
#define SF_FAR_MAX (1u << 20) /* far string ids whose flags are kept */

/* Timeline slots kept for threads with markers, NVTX steps or host-to-device
 * copies: threads that only wait on pipes and sockets (many, in a program
 * with many connections) never take them, so they cannot starve the
 * training thread of a slot. */
#define SLOTS_RESERVED 16

/* RATIONALE: each config record and GPU device record is looked up among
 * those already kept, one by one; a process has a few DataLoader settings
 * and a few GPUs, while a hostile file of 200 KB held 200,000 distinct ones
 * (quadratic: report took 54 and 23 CPU seconds). Past these counts a new
 * setting or device is ignored (docs/collector-safety.md). */
#define CFG_MAX 256
#define DEVS_MAX 256

typedef struct open_range { /* nvtx_start ranges that matter */
    uint64_t id, ts;
    size_t ti;
    uint32_t flags;
} open_range;

struct an_pass {
    an_proc *p;
    const an_opts *o;
    gs_reader *r;
    an_tl *tl;
    /* the timeline source of the last GPU record's (device, stream): a
     * stream keeps its source for the timeline's life; -1 until known */
    uint32_t gdev;
    uint64_t gstream;
    int gsrc;
    uint8_t sflags[SF_DIRECT]; /* flags of string ids below SF_DIRECT */
    an_index sflags_far;       /* id -> flags, ids from SF_DIRECT */
    an_index tix;              /* tid -> index in p->th */
    an_index rix;              /* nvtx range id -> index in ranges */
    uint32_t last_tid;
    long last_ti;
    long slot_th[AN_TL_MAX_SLOTS]; /* slot -> thread index */
    int nslots;
    int has_step_src;
    int watch_all; /* a piece callback watches this image: keep every interval */
    open_range *ranges;
    size_t nranges, capranges;
    an_copies copies; /* host copies waiting for their CUPTI record */
    an_copies gpu_first; /* CUPTI records of copies whose host record has not come:
                          * host_mem is CUPTI's word (an_copies.h) */
    uint64_t first_ts, last_end; /* span of the events so far (first_ts UINT64_MAX: none) */
    uint64_t gpu_end;            /* the latest end of a GPU record so far */
    size_t coll_end_next;        /* the first collective whose end snapshot is not asked for */
    /* the hooks' on_event and its filter (an_pass_hook); NULL: none */
    void (*on_event)(void *, const an_proc *, struct gs_reader *, const gs_event *);
    const unsigned char *hk_kinds;
    uint64_t hk_small;
    void *hctx;
};
typedef struct an_pass lctx;

/* ---- strings -------------------------------------------------------------------- */

static uint8_t sflags_slow(lctx *c, uint32_t id)
{
    if (id >= SF_DIRECT) {
        const long f = an_index_get(&c->sflags_far, id);
        if (f > 0)
            return (uint8_t)f;
    }
    const char *s = gs_reader_string(c->r, id);
    uint8_t f = SF_DONE;
    if (s) {
        if (an_kernel_is_comm(s))
            f |= SF_COMM;
        if (gs_range_is_step(&c->o->ranges, s))
            f |= SF_STEP;
        if (gs_range_is_fetch(&c->o->ranges, s))
            f |= SF_FETCH;
    } else {
        return SF_DONE; /* not defined yet: do not cache */
    }
    /* RATIONALE: the far ids' flags are cached up to SF_FAR_MAX of them;
     * past that (a hostile trace of millions of names) they are worked out
     * again for each event that names one: time stays linear, memory
     * bounded */
    if (id < SF_DIRECT)
        c->sflags[id] = f;
    else if (c->sflags_far.n < SF_FAR_MAX)
        an_index_put(&c->sflags_far, id, f);
    return f;
}

static inline uint8_t sflags(lctx *c, uint32_t id)
{
    if (id && id < SF_DIRECT && c->sflags[id])
        return c->sflags[id];
    if (!id)
        return SF_DONE;
    return sflags_slow(c, id);
}

/* ---- threads --------------------------------------------------------------------- */

static long thread_add(lctx *c, uint32_t tid)
{
    an_proc *p = c->p;
    if (an_grow(&p->th, &p->capth, p->nth + 1, sizeof *p->th, 8) < 0)
        return -1;
    an_thread *t = &p->th[p->nth];
    memset(t, 0, sizeof *t);
    t->tid = tid;
    t->slot = -1;
    t->burst_idx[0] = t->burst_idx[1] = t->burst_idx[2] = -1;
    return (long)p->nth++;
}

static inline long thread_ix(lctx *c, uint32_t tid)
{
    if (c->last_ti >= 0 && c->last_tid == tid)
        return c->last_ti;
    long ti = an_index_get(&c->tix, tid);
    if (ti < 0) {
        ti = thread_add(c, tid);
        if (ti >= 0 && an_index_put(&c->tix, tid, (uint32_t)ti) != 0)
            ti = -1;
    }
    if (ti >= 0) {
        c->last_ti = ti;
        c->last_tid = tid;
    }
    return ti;
}

/* The thread's timeline slot, given on first need; -1 past the limit. A
 * thread that only waits on pipes/sockets (prio 0) does not get one of the
 * last SLOTS_RESERVED. */
static inline int slot_of(lctx *c, long ti, int prio)
{
    an_thread *t = &c->p->th[ti];
    if (t->slot >= 0)
        return t->slot;
    if (c->nslots >= (prio ? AN_TL_MAX_SLOTS : AN_TL_MAX_SLOTS - SLOTS_RESERVED))
        return -1;
    t->slot = c->nslots++;
    c->slot_th[t->slot] = ti;
    return t->slot;
}

static void on_snap(void *ctx, unsigned slot, uint64_t qid, const an_snap *s)
{
    lctx *c = ctx;
    if (qid & AN_COLL_QID) {
        an_colls_snap(&c->p->colls, qid, s);
        return;
    }
    if (slot >= (unsigned)c->nslots)
        return;
    an_thread *t = &c->p->th[c->slot_th[slot]];
    if (qid < t->ncand) {
        t->cand[qid].snap = *s;
        t->cand[qid].have = 1;
    }
}

static long cand_add(lctx *c, long ti, uint32_t type, uint64_t t, uint64_t num, unsigned mark)
{
    const int slot = slot_of(c, ti, type != AN_C_BURST_WAIT);
    if (slot < 0)
        return -1;
    an_thread *th = &c->p->th[ti];
    if (an_grow(&th->cand, &th->capcand, th->ncand + 1, sizeof *th->cand, 64) < 0)
        return -1;
    const size_t idx = th->ncand++;
    an_cand *cd = &th->cand[idx];
    memset(cd, 0, sizeof *cd);
    cd->t = t;
    cd->num = num;
    cd->type = type;
    cd->mark = (uint16_t)mark;
    an_tl_query(c->tl, (unsigned)slot, t, idx);
    return (long)idx;
}

/* The timeline source of a GPU record; consecutive records of one stream
 * skip the timeline's lookup. */
static inline int gpu_src(lctx *c, uint32_t dev, uint64_t stream)
{
    if (c->gsrc >= 0 && c->gdev == dev && c->gstream == stream)
        return c->gsrc;
    c->gdev = dev;
    c->gstream = stream;
    c->gsrc = an_tl_gpu_source(c->tl, dev, stream);
    return c->gsrc;
}

/* RATIONALE: a thread's host intervals only matter between its candidates
 * (a step is the difference of two snapshots), and a thread's records come
 * in completion order, so an interval that completes before the thread's
 * first candidate also ends before it and adds the same to every snapshot.
 * Skipping those keeps loader workers, which read the most and usually
 * have no candidate at all, off the timeline. */
static inline void host_iv(lctx *c, long ti, uint64_t s, uint64_t e, unsigned cls)
{
    if (!c->p->th[ti].ncand && !c->watch_all)
        return;
    const int slot = slot_of(c, ti, 1);
    if (slot >= 0)
        an_tl_add_host(c->tl, (unsigned)slot, s, e, cls);
}

/* A wait on a pipe/socket (kind 0), an H2D copy call (kind 1) or a file
 * read, open or mapping (kind 2): extends the thread's current burst, or
 * starts a new one (a step-boundary candidate). */
static const uint32_t burst_type[3] = {AN_C_BURST_WAIT, AN_C_BURST_H2D, AN_C_BURST_IO};

static void burst(lctx *c, long ti, int kind, uint64_t s, uint64_t e, uint32_t path)
{
    an_thread *th = &c->p->th[ti];
    if (th->burst_idx[kind] != -1 && s <= th->burst_end[kind] + c->o->burst_gap_ns) {
        if (e > th->burst_end[kind]) {
            th->burst_end[kind] = e;
            if (th->burst_idx[kind] >= 0)
                th->cand[th->burst_idx[kind]].num = e;
        }
        return;
    }
    th->burst_end[kind] = e;
    if (c->has_step_src) {
        th->burst_idx[kind] = -2; /* tracked, not logged: steps come from elsewhere */
        return;
    }
    long idx = cand_add(c, ti, burst_type[kind], s, e, GS_MARK_PLAIN);
    th = &c->p->th[ti];
    if (idx >= 0)
        th->cand[idx].path = path;
    th->burst_idx[kind] = idx >= 0 ? idx : -2;
}

/* RATIONALE: only a process's main thread forms file bursts, and not a
 * loader worker's: the training loop of a program without markers runs
 * there (nanoGPT's get_batch maps its file on it), while a loader's
 * threads read all the time and would only take timeline slots. */
static inline void io_burst(lctx *c, long ti, const gs_event *e)
{
    if (c->p->th[ti].tid == c->p->pid && !an_is_worker_role(c->p))
        burst(c, ti, 2, e->ts, e->ts + e->dur, e->str);
}

/* RATIONALE: a span (a file mapping, a `load` marker) longer than the
 * timeline's lag is a dataset kept open across steps, not one batch's
 * load: it ends in no data wait (docs/report-schema.md, "Steps"). */
#define SPAN_MAX_NS AN_TL_LAG_NS

static void span_open(an_thread *th, uint64_t key, uint64_t ts)
{
    if (th->nspans == AN_SPANS_OPEN) { /* the oldest goes */
        memmove(&th->spans[0], &th->spans[1], (AN_SPANS_OPEN - 1) * sizeof th->spans[0]);
        th->nspans--;
    }
    th->spans[th->nspans++] = (an_span_open){key, ts};
}

/* The span key closes at end: its start, or 0 when it was not open. */
static uint64_t span_close(an_thread *th, uint64_t key)
{
    for (int i = th->nspans - 1; i >= 0; i--) {
        if (th->spans[i].key != key)
            continue;
        const uint64_t ts = th->spans[i].ts;
        memmove(&th->spans[i], &th->spans[i + 1], (size_t)(th->nspans - i - 1) * sizeof th->spans[0]);
        th->nspans--;
        return ts;
    }
    return 0;
}

/* A short span of the thread is data wait; `fetch` also its fetch time. */
static void span_wait(lctx *c, long ti, uint64_t s, uint64_t e, int fetch)
{
    if (!s || e <= s || e - s > SPAN_MAX_NS)
        return;
    c->p->th[ti].n_waits++;
    host_iv(c, ti, s, e, AN_CLS_DW);
    if (fetch)
        host_iv(c, ti, s, e, AN_CLS_FE);
}

static inline void span(an_thread *th, const gs_event *e);

/* A read-only mmap of a file: a span until its munmap (a loader that maps
 * a batch's file, as numpy memmap(mode="r") does: nanoGPT's get_batch);
 * munmap of a range seen mapped: the span is data wait when short.
 * RATIONALE: read-only, because a writable shared mapping is memory two
 * processes share (a DataLoader's batch in shared memory lives as long as
 * its tensor, a whole step), not data being read. */
#define PROT_WRITE_BIT 2u

static void file_map(lctx *c, long ti, const gs_event *e)
{
    if (ti < 0 || e->fd_kind != GS_FDK_FILE)
        return;
    an_thread *th = &c->p->th[ti];
    if (e->kind == GS_K_MUNMAP) {
        span_wait(c, ti, span_close(th, e->aux), e->ts + e->dur, 0);
    } else if (e->ret != -1 && !(e->aux & PROT_WRITE_BIT)) {
        span_open(th, (uint64_t)e->ret, e->ts);
    }
    span(th, e);
    io_burst(c, ti, e);
}

static void fetch_enter(an_thread *th, uint64_t ts)
{
    if (th->fetch_depth++ == 0)
        th->fetch_ts = ts;
}

static void fetch_leave(lctx *c, long ti, uint64_t ts)
{
    an_thread *th = &c->p->th[ti];
    if (th->fetch_depth <= 0)
        return;
    if (--th->fetch_depth == 0) {
        /* the outermost fetch: data wait where the GPU is idle, and all of
         * it the thread's fetch time (an_timeline.h, AN_CLS_FE) */
        th->n_waits++;
        host_iv(c, ti, th->fetch_ts, ts, AN_CLS_DW);
        host_iv(c, ti, th->fetch_ts, ts, AN_CLS_FE);
    }
}

/* A begin/end pair of one class on a thread, not nested in another of
 * its class: the time from *ts (0: none open) to the end, else -1. */
static int64_t pair(uint64_t *ts, const gs_event *e)
{
    if (e->kind == GS_K_FETCH_BEGIN) {
        *ts = e->ts; /* a begin without its end: the call raised */
        return -1;
    }
    if (!*ts || e->ts < *ts)
        return -1;
    const int64_t d = (int64_t)(e->ts - *ts);
    *ts = 0;
    return d;
}

/* fetch_begin/fetch_end in a loader worker process: the worker loads batch
 * aux (docs/trace-format.md), not a training thread's wait; each fetch_end
 * is one batch it loaded, and its CPU samples cut the batch; its collate
 * markers time the collate function inside the batch */
static void worker_batch(an_proc *p, long ti, const gs_event *e)
{
    an_thread *th = &p->th[ti];
    const unsigned mc = gs_mark_class(e);
    int64_t d;
    if (mc == GS_MARK_PLAIN && (d = pair(&th->fetch_ts, e)) >= 0) {
        p->n_batch_markers++;
        p->batch_ns += (uint64_t)d;
    } else if (mc == GS_MARK_COLLATE && (d = pair(&th->collate_ts, e)) >= 0) {
        p->n_collates++;
        p->collate_ns += (uint64_t)d;
    }
    an_cpu_marker(th->cpu, e->kind, e->ts, mc, e->aux, gs_mark_loader(e));
}

/* ---- records that are rare: config, role, devices ------------------------------ */

/* RATIONALE: 5 samples a second; past this many (about 14 minutes) every
 * other is dropped: the values are cumulative, so a sum over a window
 * stays exact and only where it may be cut coarsens. */
#define AN_HOST_MAX 4096

/* A host_cpu record: the machine's cumulative CPU time (in time order; a
 * record out of order or going back is dropped). */
static void add_host(an_proc *p, const gs_event *e)
{
    if (p->nhcpu) {
        const struct an_host_sample *l = &p->hcpu[p->nhcpu - 1];
        if (e->ts <= l->ts || gs_host_busy_ns(e) < l->busy_ns || gs_host_idle_ns(e) < l->idle_ns ||
            gs_host_cpus(e) != p->host_cpus)
            return;
    }
    if (p->nhcpu >= AN_HOST_MAX) {
        size_t k = 0;
        for (size_t i = 0; i < p->nhcpu; i += 2)
            p->hcpu[k++] = p->hcpu[i];
        p->nhcpu = k;
    }
    if (p->nhcpu == p->caphcpu) {
        size_t cap = p->caphcpu ? 2 * p->caphcpu : 64;
        void *n = realloc(p->hcpu, cap * sizeof *p->hcpu);
        if (!n)
            return; /* the sample is lost, nothing else */
        p->hcpu = n;
        p->caphcpu = cap;
    }
    p->hcpu[p->nhcpu++] = (struct an_host_sample){e->ts, gs_host_busy_ns(e), gs_host_idle_ns(e)};
    p->host_cpus = gs_host_cpus(e);
}

/* the config record of the other processes busy at start, in traces made
 * before `gpustarve run` wrote them beside the traces (an_peers.c) */
#define PEERS_KEY "gpustarve_peers"

static void add_config(lctx *c, const gs_event *e)
{
    const char *s = gs_reader_string(c->r, e->str);
    if (!s)
        return;
    const char *eq = strchr(s, '=');
    if (!eq || eq == s)
        return;
    an_proc *p = c->p;
    size_t kl = (size_t)(eq - s);
    /* the collector's own (GPUSTARVE_PEERS, then), not the program's settings */
    if (kl == sizeof PEERS_KEY - 1 && !strncmp(s, PEERS_KEY, kl)) {
        if (an_peers_parse(eq + 1, &p->peers_same_cores, &p->peers_other_cores) == 0)
            p->peers_known = 1;
        return;
    }
    if (kl >= sizeof p->cfg[0].key)
        kl = sizeof p->cfg[0].key - 1;
    an_kv *kv = NULL;
    for (size_t i = 0; i < p->ncfg; i++)
        if (p->cfg[i].loader == e->aux && strncmp(p->cfg[i].key, s, kl) == 0 &&
            p->cfg[i].key[kl] == '\0')
            kv = &p->cfg[i];
    if (!kv) {
        if (p->ncfg >= CFG_MAX)
            return;
        an_kv *n = realloc(p->cfg, (p->ncfg + 1) * sizeof *n);
        if (!n)
            return;
        p->cfg = n;
        kv = &p->cfg[p->ncfg++];
        memset(kv, 0, sizeof *kv);
        kv->loader = (uint32_t)e->aux;
        memcpy(kv->key, s, kl);
    }
    snprintf(kv->value, sizeof kv->value, "%s", eq + 1);
}

static void add_device(lctx *c, const gs_event *e)
{
    an_proc *p = c->p;
    for (size_t i = 0; i < p->ndevs; i++)
        if (p->devs[i].dev == e->dev)
            return;
    if (p->ndevs >= DEVS_MAX)
        return;
    an_dev *n = realloc(p->devs, (p->ndevs + 1) * sizeof *n);
    if (!n)
        return;
    p->devs = n;
    const char *s = gs_reader_string(c->r, e->str);
    p->devs[p->ndevs].dev = e->dev;
    snprintf(p->devs[p->ndevs].name, sizeof p->devs[0].name, "%s", s ? s : "");
    p->ndevs++;
}

static void range_add(lctx *c, uint64_t id, uint64_t ts, long ti, uint32_t flags)
{
    const long had = an_index_get(&c->rix, id);
    if (had >= 0) { /* an id started again before it ended: the new one counts */
        c->ranges[had] = (open_range){id, ts, (size_t)ti, flags};
        return;
    }
    if (an_grow(&c->ranges, &c->capranges, c->nranges + 1, sizeof *c->ranges, 16) < 0)
        return;
    if (an_index_put(&c->rix, id, (uint32_t)c->nranges) != 0)
        return;
    c->ranges[c->nranges++] = (open_range){id, ts, (size_t)ti, flags};
}

/* ---- NVTX ------------------------------------------------------------------------- */

static void nvtx_open(lctx *c, long ti, uint32_t flags, uint64_t ts)
{
    an_thread *th = &c->p->th[ti];
    if (flags & SF_STEP) {
        if (th->nvtx_step_open++ == 0) {
            th->n_nvtx_steps++;
            c->has_step_src = 1;
            cand_add(c, ti, AN_C_NVTX_B, ts, th->n_nvtx_steps, GS_MARK_PLAIN);
        }
    }
    if (flags & SF_FETCH) {
        /* a loader iteration begins: steps when nothing else cuts them (an_steps.c) */
        if (!th->fetch_depth)
            cand_add(c, ti, AN_C_NVTX_FETCH, ts, th->n_nvtx_fetch++, GS_MARK_PLAIN);
        fetch_enter(&c->p->th[ti], ts);
    }
}

static void nvtx_close(lctx *c, long ti, uint32_t flags, uint64_t ts)
{
    an_thread *th = &c->p->th[ti];
    if ((flags & SF_STEP) && th->nvtx_step_open > 0 && --th->nvtx_step_open == 0)
        cand_add(c, ti, AN_C_NVTX_E, ts, th->n_nvtx_steps, GS_MARK_PLAIN);
    if (flags & SF_FETCH)
        fetch_leave(c, ti, ts);
}

static void nvtx_push(lctx *c, long ti, const gs_event *e)
{
    an_thread *th = &c->p->th[ti];
    const uint32_t f = sflags(c, e->str) & (SF_STEP | SF_FETCH);
    if (th->nvtx_depth >= AN_NVTX_DEPTH ||
        (!th->nvtx && !(th->nvtx = malloc(AN_NVTX_DEPTH * sizeof *th->nvtx)))) {
        th->nvtx_overflow++;
        return;
    }
    th->nvtx[th->nvtx_depth++] = (an_nvtx_open){e->ts, (uint32_t)e->aux, f};
    if (f)
        nvtx_open(c, ti, f, e->ts);
}

static void nvtx_pop(lctx *c, long ti, const gs_event *e)
{
    an_thread *th = &c->p->th[ti];
    if (th->nvtx_overflow) {
        th->nvtx_overflow--;
        return;
    }
    for (int i = th->nvtx_depth - 1; i >= 0; i--) {
        if (th->nvtx[i].domain != (uint32_t)e->aux)
            continue;
        const uint32_t f = th->nvtx[i].flags;
        memmove(&th->nvtx[i], &th->nvtx[i + 1], (size_t)(th->nvtx_depth - i - 1) * sizeof th->nvtx[0]);
        th->nvtx_depth--;
        if (f)
            nvtx_close(c, ti, f, e->ts);
        return;
    }
}

/* ---- the per-event switch ----------------------------------------------------------- */

static inline unsigned log2_bucket(uint64_t b)
{
    /* 0 bytes: bucket 0; else bucket k+1 for 2^k <= b < 2^(k+1) */
    const unsigned k = b ? 64u - (unsigned)__builtin_clzll(b) : 0u;
    return k < AN_HIST ? k : AN_HIST - 1;
}

static inline void span(an_thread *th, const gs_event *e)
{
    if (!th->first_ts)
        th->first_ts = e->ts;
    th->last_ts = e->ts + e->dur;
}

/* A positioned read (its offset in the record) kept for model/an_replica.c:
 * the path's hash is the last one's when the path is (one read after
 * another of the same file; e->str is never 0, last_str's start). */
static void pread_keep(lctx *c, const gs_event *e, uint64_t got)
{
    an_preads *k = &c->p->preads;
    if (k->n >= AN_PREADS_MAX) {
        k->past++;
        return;
    }
    if (e->str != k->last_str) {
        const char *s = gs_reader_string(c->r, e->str);
        if (!s) {
            k->past++; /* a path never defined: counted, not compared */
            return;
        }
        k->last_str = e->str;
        k->last_hash = gs_xxh64(s, strlen(s), 0);
    }
    if (an_grow(&k->v, &k->cap, k->n + 1, sizeof *k->v, 256) < 0) {
        k->past++; /* out of memory: the same */
        return;
    }
    const uint64_t pos[2] = {(uint64_t)e->offset, got};
    k->v[k->n++] = (an_pread){gs_xxh64(pos, sizeof pos, k->last_hash), e->ts,
                              got > UINT32_MAX ? UINT32_MAX : (uint32_t)got,
                              e->dur > UINT32_MAX ? UINT32_MAX : (uint32_t)e->dur};
}

/* Widen the span [*first, *last] (0: none yet) by [a, b]. */
static inline void widen(uint64_t *first, uint64_t *last, uint64_t a, uint64_t b)
{
    if (!*first || a < *first)
        *first = a;
    if (b > *last)
        *last = b;
}

static inline void file_read(lctx *c, long ti, const gs_event *e, uint64_t got)
{
    an_proc *p = c->p;
    widen(&p->rd_first, &p->rd_last, e->ts, e->ts + e->dur);
    if (e->offset >= 0 && got > 0 && e->str && an_is_worker_role(p))
        pread_keep(c, e, got);
    p->rd_bytes += got;
    p->rq_bytes += e->bytes;
    p->rd_reqs++;
    p->rd_ns += e->dur;
    p->hist[log2_bucket(got)]++;
    if (ti >= 0) {
        an_thread *th = &p->th[ti];
        widen(&th->ld_first, &th->ld_last, e->ts, e->ts + e->dur);
        th->io_ns += e->dur;
        th->rd_bytes += got;
        th->rq_bytes += e->bytes;
        th->rd_reqs++;
        span(th, e);
        host_iv(c, ti, e->ts, e->ts + e->dur, AN_CLS_DW);
        io_burst(c, ti, e);
    }
}

static inline void pipe_wait(lctx *c, long ti, const gs_event *e)
{
    an_proc *p = c->p;
    p->wait_ns += e->dur;
    p->wait_reqs++;
    if (ti >= 0) {
        p->th[ti].wait_ns += e->dur;
        if (e->fd_kind == GS_FDK_SOCKET)
            p->th[ti].sock_ns += e->dur;
        span(&p->th[ti], e);
        host_iv(c, ti, e->ts, e->ts + e->dur, AN_CLS_DW);
        burst(c, ti, 0, e->ts, e->ts + e->dur, 0);
    }
}

static inline void meta(lctx *c, long ti, const gs_event *e)
{
    an_proc *p = c->p;
    if (e->fd_kind == GS_FDK_PIPE || e->fd_kind == GS_FDK_SOCKET || e->fd_kind == GS_FDK_OTHER)
        return;
    p->meta_reqs++;
    p->meta_ns += e->dur;
    if (ti >= 0) {
        p->th[ti].meta_ns += e->dur;
        span(&p->th[ti], e);
        host_iv(c, ti, e->ts, e->ts + e->dur, AN_CLS_DW);
        if (gs_kind_is_open(e->kind) && e->fd_kind == GS_FDK_FILE)
            io_burst(c, ti, e); /* opens of files: stat calls find imports too */
    }
}

/* A host copy call, its memory kind decided: inside a pageable copy call
 * the thread counts as stuck in that copy. */
static void host_copy(lctx *c, const an_copy *cp)
{
    an_proc *p = c->p;
    if (cp->host_mem != GS_MEM_PAGEABLE || cp->ti < 0)
        return;
    host_iv(c, cp->ti, cp->ts, cp->end, AN_CLS_PG);
    if (cp->dir == GS_DIR_HTOD) {
        p->host_pageable_bytes += cp->bytes;
        p->host_pageable_ns += cp->end - cp->ts;
        p->host_pageable_calls++;
    }
}

static void host_copy_cb(void *ctx, const an_copy *cp)
{
    host_copy(ctx, cp);
}

/* The snapshot at collective i's end, asked for once, among the intervals
 * of GPU source src (its stream's). */
static void coll_end_ask(lctx *c, size_t i, int src)
{
    an_coll *x = &c->p->colls.v[i];
    if (x->end_asked || !x->tid || src < 0)
        return;
    x->end_asked = 1;
    an_tl_query_on(c->tl, src, x->slot, x->end, an_coll_qid(i, 1));
}

/* A communication kernel, before its interval goes on the timeline: kept
 * for the matching of collectives across ranks, with snapshots at its
 * start (and, asked now, at the end of the previous one on its stream: in
 * the order of that stream's intervals) on the slot of the thread with the
 * most step-boundary candidates so far (the training thread, in every
 * trace seen: the model checks it is). RATIONALE: out of line, as few
 * kernels are collectives. */
static __attribute__((noinline)) void coll_add(lctx *c, const gs_event *e, int src)
{
    an_proc *p = c->p;
    long best = -1, prev;
    for (size_t i = 0; i < p->nth; i++)
        if (p->th[i].slot >= 0 && p->th[i].ncand && (best < 0 || p->th[i].ncand > p->th[best].ncand))
            best = (long)i;
    const long k = an_colls_add(&p->colls, e->ts, e->ts + e->dur, e->dev, e->stream, e->str,
                                gs_reader_string(c->r, e->str), best >= 0 ? p->th[best].tid : 0,
                                &prev);
    if (prev >= 0 && p->colls.v[prev].end <= e->ts)
        coll_end_ask(c, (size_t)prev, src);
    if (k < 0 || best < 0 || src < 0)
        return;
    p->colls.v[k].slot = (uint8_t)p->th[best].slot;
    an_tl_query_on(c->tl, src, (unsigned)p->th[best].slot, e->ts, an_coll_qid((size_t)k, 0));
}

/* The end snapshots of the collectives the pass has reached the end of (in
 * the order they came). RATIONALE: asked for only once the timeline holds
 * an item starting at or after the end, so that a collective that waited
 * long does not move the timeline's newest start, and with it the sweep,
 * ahead of the host records still to come. */
static void coll_ends(lctx *c, uint64_t upto)
{
    an_colls *k = &c->p->colls;
    for (; c->coll_end_next < k->n && k->v[c->coll_end_next].end <= upto; c->coll_end_next++) {
        const an_coll *x = &k->v[c->coll_end_next];
        if (!x->end_asked && x->tid)
            coll_end_ask(c, c->coll_end_next,
                         gpu_src(c, k->streams[x->stream].dev, k->streams[x->stream].stream));
    }
}

/* CUPTI's word on the host side's memory of a copy record in direction dir
 * (host to device: its source; device to host: its destination). */
static unsigned cupti_host_mem(const gs_event *e, unsigned dir)
{
    return dir == GS_DIR_HTOD ? gs_copy_src_mem(e) : gs_copy_dst_mem(e);
}

/* A GPU record: its busy time on the timeline (by class), the kernels' time
 * by name, the pinned and pageable copies (and the host copy call waiting
 * for it, an_copies.h; or, come first, its wait for that call). */
static void on_gpu(lctx *c, const gs_event *e)
{
    an_proc *p = c->p;
    if (e->ts + e->dur > c->gpu_end)
        c->gpu_end = e->ts + e->dur;
    switch (e->kind) {
    case GS_K_GPU_KERNEL: {
        const int src = gpu_src(c, e->dev, e->stream);
        const unsigned cls = an_gpu_busy(e, (sflags(c, e->str) & SF_COMM) != 0);
        if (cls == AN_BUSY_COMM)
            coll_add(c, e, src);
        if (src >= 0)
            an_tl_add_gpu(c->tl, src, e->ts, e->ts + e->dur, cls);
        if (!an_kstats_add_known(&p->kstats, e->str, e->dur))
            an_kstats_add(&p->kstats, e->str, gs_reader_string(c->r, e->str), e->dur);
        p->gpu_events++;
        return;
    }
    case GS_K_GPU_MEMCPY: {
        const int src = gpu_src(c, e->dev, e->stream);
        an_copy cp;
        if (e->corr && an_copies_take(&c->copies, e->corr, &cp)) {
            cp.host_mem = (uint8_t)an_copy_kind_decide(&p->copy_kinds, cp.host_mem,
                                                       cupti_host_mem(e, cp.dir));
            host_copy(c, &cp);
        } else if (e->corr) {
            const unsigned dir = gs_copy_dir(e);
            const an_copy g = {.corr = e->corr, .dir = (uint8_t)dir, .ti = -1,
                               .host_mem = (uint8_t)cupti_host_mem(e, dir)};
            if (dir == GS_DIR_HTOD || dir == GS_DIR_DTOH)
                (void)an_copies_put(&c->gpu_first, &g); /* full: the hooks' word, as before */
        }
        const unsigned cls = an_gpu_busy(e, 0);
        if (cls == AN_BUSY_H2D_PAGEABLE) {
            p->h2d_pageable_bytes += e->bytes;
            p->h2d_pageable_ns += e->dur;
        } else if (cls == AN_BUSY_H2D_PINNED) {
            p->h2d_pinned_bytes += e->bytes;
            p->h2d_pinned_ns += e->dur;
        }
        if (src >= 0)
            an_tl_add_gpu(c->tl, src, e->ts, e->ts + e->dur, cls);
        p->gpu_events++;
        return;
    }
    case GS_K_GPU_MEMSET: {
        const int src = gpu_src(c, e->dev, e->stream);
        if (src >= 0)
            an_tl_add_gpu(c->tl, src, e->ts, e->ts + e->dur, an_gpu_busy(e, 0));
        p->gpu_events++;
        return;
    }
    default:
        return;
    }
}

/* A CUDA call of a host thread: a host copy (kept until CUPTI's record of
 * it, which has the last word on its memory), a synchronisation or host
 * memory call. */
static void on_cuda(lctx *c, const gs_event *e)
{
    an_proc *p = c->p;
    long ti;
    switch (e->kind) {
    case GS_K_CUDA_MEMCPY: {
        ti = thread_ix(c, e->tid);
        p->cuda_calls++;
        if (ti < 0)
            return;
        p->th[ti].n_cuda_calls++;
        an_prep_cut(&p->th[ti].prep, e->ts, e->ts + e->dur);
        const unsigned dir = gs_copy_dir(e);
        an_copy cp = {.corr = e->corr, .dir = (uint8_t)dir,
                      .host_mem = (uint8_t)gs_copy_host_mem(e), .ti = ti, .ts = e->ts,
                      .end = e->ts + e->dur, .bytes = e->bytes};
        an_copy g;
        if (e->corr && an_copies_take(&c->gpu_first, e->corr, &g)) {
            /* CUPTI's record came first: its word now */
            cp.host_mem = (uint8_t)an_copy_kind_decide(&p->copy_kinds, cp.host_mem, g.host_mem);
            host_copy(c, &cp);
        } else if (!((dir == GS_DIR_HTOD || dir == GS_DIR_DTOH) &&
                     an_copies_put(&c->copies, &cp) == 0)) {
            host_copy(c, &cp); /* else CUPTI's record, when it comes, has the last word */
        }
        if (dir == GS_DIR_HTOD)
            burst(c, ti, 1, e->ts, e->ts + e->dur, 0);
        return;
    }
    case GS_K_CUDA_SYNC: case GS_K_CUDA_HOST_MEM:
        ti = thread_ix(c, e->tid);
        p->cuda_calls++;
        if (ti >= 0) {
            p->th[ti].n_cuda_calls++;
            an_prep_cut(&p->th[ti].prep, e->ts, e->ts + e->dur);
        }
        return;
    default:
        return;
    }
}

/* An NVTX range: step and batch-wait ranges (by name, gs_ranges.h) become
 * step-boundary candidates. */
static void on_nvtx(lctx *c, const gs_event *e)
{
    long ti;
    switch (e->kind) {
    case GS_K_NVTX_PUSH:
        if ((ti = thread_ix(c, e->tid)) >= 0)
            nvtx_push(c, ti, e);
        return;
    case GS_K_NVTX_POP:
        if ((ti = thread_ix(c, e->tid)) >= 0)
            nvtx_pop(c, ti, e);
        return;
    case GS_K_NVTX_START: {
        const uint32_t f = sflags(c, e->str) & (SF_STEP | SF_FETCH);
        if (f && (ti = thread_ix(c, e->tid)) >= 0) {
            range_add(c, e->aux2, e->ts, ti, f);
            nvtx_open(c, ti, f, e->ts);
        }
        return;
    }
    case GS_K_NVTX_END: {
        const long i = an_index_get(&c->rix, e->aux2);
        if (i < 0)
            return;
        const open_range rg = c->ranges[i];
        an_index_del(&c->rix, rg.id);
        if ((size_t)i != --c->nranges) {
            c->ranges[i] = c->ranges[c->nranges];
            an_index_put(&c->rix, c->ranges[i].id, (uint32_t)i);
        }
        nvtx_close(c, (long)rg.ti, rg.flags, e->ts);
        return;
    }
    default:
        return;
    }
}

/* A step marker: a step-boundary candidate (steps of the program, a
 * DataLoader or the C API; an optimizer's or backward's steps apart, as
 * they come after the others: an_steps.c). */
static void step_marker(lctx *c, long ti, const gs_event *e)
{
    an_proc *p = c->p;
    an_thread *th = &p->th[ti];
    const unsigned mc = gs_mark_class(e);
    if (mc == GS_MARK_OPTIMIZER || mc == GS_MARK_BACKWARD) {
        if (e->kind != GS_K_STEP_END)
            return;
        if (mc == GS_MARK_OPTIMIZER)
            th->n_opt_markers++;
        else
            th->n_bwd_markers++;
        /* RATIONALE: the span counts only when the thread waited for
         * nothing since its last forward: nanoGPT fetches its next batch
         * between the forward and the backward (a `load` span), and the
         * span after its update is then zero_grad, not a batch's making */
        an_prep_arm(&th->prep, e->ts, th->fwd_seen ? th->fwd_waits : th->n_waits);
    } else if (mc != GS_MARK_PLAIN && mc != GS_MARK_EXPLICIT) {
        return; /* a class this reader does not know */
    }
    th->n_step_markers++;
    p->n_step_markers++;
    if (e->kind == GS_K_STEP_END) {
        if (mc == GS_MARK_PLAIN)
            p->n_batch_markers++; /* a C loader thread's batch */
        an_cpu_marker(th->cpu, e->kind, e->ts, mc, e->aux, gs_mark_loader(e));
    }
    c->has_step_src = 1;
    const uint32_t type = mc == GS_MARK_OPTIMIZER ? AN_C_OPT_E
                          : mc == GS_MARK_BACKWARD ? AN_C_BWD_E
                          : e->kind == GS_K_STEP_BEGIN ? AN_C_STEP_B
                                                      : AN_C_STEP_E;
    cand_add(c, ti, type, e->ts, e->aux, mc);
}

/* The thread's first module forward after its last update, at ts: the
 * span since, less its CUDA calls, is data wait when nothing else in it
 * waited for data (an_prep.h). 1 when the span was not cut by a CUDA call
 * (its clock samples at both ends then measure it, as a fetch
 * an_cpu_marker makes); else its pieces are fetches of the thread's clock
 * log when the collector sampled its clocks at every cut. */
static int forward(lctx *c, long ti, uint64_t ts)
{
    an_thread *th = &c->p->th[ti];
    uint64_t piece[AN_PREP_PIECES + 1][2];
    const uint32_t cut = th->prep.cut;
    const unsigned n = an_prep_end(&th->prep, ts, th->n_waits, SPAN_MAX_NS, piece);
    for (unsigned i = 0; i < n; i++) {
        host_iv(c, ti, piece[i][0], piece[i][1], AN_CLS_DW);
        host_iv(c, ti, piece[i][0], piece[i][1], AN_CLS_FE);
    }
    if (n) {
        th->n_waits++;
        th->n_prep++;
    }
    th->fwd_waits = th->n_waits;
    th->fwd_seen = 1;
    if (n && cut)
        an_cpu_pieces(th->cpu, ts, piece, n);
    return n && !cut;
}

/* A fetch marker of the trainer's side: the training thread's wait for a
 * batch (a step-boundary candidate when a DataLoader's or the program's),
 * its wait for a pool's result, its own load of a mapped file, a pool
 * thread's work item, a collate call. */
static void fetch_marker(lctx *c, long ti, const gs_event *e)
{
    an_proc *p = c->p;
    an_thread *th = &p->th[ti];
    const unsigned mc = gs_mark_class(e);
    const int begin = e->kind == GS_K_FETCH_BEGIN;
    int64_t d;
    switch (mc) {
    case GS_MARK_PLAIN: case GS_MARK_EXPLICIT:
        th->n_fetch_markers++;
        p->n_fetch_markers++;
        if (begin)
            c->has_step_src = 1;
        cand_add(c, ti, begin ? AN_C_FETCH_B : AN_C_FETCH_E, e->ts, e->aux, mc);
        /* fall through */
    case GS_MARK_WAIT:
        if (begin)
            fetch_enter(&p->th[ti], e->ts);
        else
            fetch_leave(c, ti, e->ts);
        break;
    case GS_MARK_LOAD:
        if (begin)
            span_open(th, AN_SPAN_LOAD | e->aux, e->ts);
        else
            span_wait(c, ti, span_close(th, AN_SPAN_LOAD | e->aux), e->ts, 1);
        break;
    case GS_MARK_FORWARD:
        if (e->kind == GS_K_FETCH_END && forward(c, ti, e->ts))
            break; /* its samples make a fetch in the thread's clock log */
        an_cpu_forget_update(th->cpu);
        return;
    case GS_MARK_ITEM:
        if ((d = pair(&th->item_ts, e)) >= 0) {
            th->n_items++;
            th->item_ns += (uint64_t)d;
            widen(&th->ld_first, &th->ld_last, e->ts - (uint64_t)d, e->ts);
        }
        break;
    case GS_MARK_COLLATE:
        if ((d = pair(&th->collate_ts, e)) >= 0) {
            th->n_collates++;
            th->collate_ns += (uint64_t)d;
        }
        break;
    default:
        break;
    }
    an_cpu_marker(p->th[ti].cpu, e->kind, e->ts, mc, e->aux, gs_mark_loader(e));
}

/* A step or batch-fetch marker: step-boundary candidates in the trainer,
 * batches in a loader worker (docs/trace-format.md, the marker classes). */
static void on_marker(lctx *c, const gs_event *e)
{
    long ti = thread_ix(c, e->tid);
    if (ti < 0)
        return;
    if (gs_mark_class(e) != GS_MARK_PLAIN)
        c->p->n_py_markers++;
    switch (e->kind) {
    case GS_K_STEP_BEGIN: case GS_K_STEP_END:
        step_marker(c, ti, e);
        return;
    case GS_K_FETCH_BEGIN: case GS_K_FETCH_END:
        if (an_is_worker_role(c->p))
            worker_batch(c->p, ti, e);
        else
            fetch_marker(c, ti, e);
        return;
    default:
        return;
    }
}

/* A thread's or the machine's own clocks: major faults, CPU samples, the
 * host's CPU time, the CPUs the process may use. */
static void on_clock(lctx *c, const gs_event *e)
{
    an_proc *p = c->p;
    long ti;
    switch (e->kind) {
    case GS_K_FAULTS:
        if ((ti = thread_ix(c, (uint32_t)e->aux)) >= 0) {
            p->th[ti].faults_seen = 1;
            if (e->aux2 > p->th[ti].faults)
                p->th[ti].faults = e->aux2;
        }
        return;
    case GS_K_CPU:
        if ((ti = thread_ix(c, gs_cpu_tid(e))) >= 0) {
            an_thread *th = &p->th[ti];
            const an_cpu_now now = {th->io_ns + th->meta_ns, th->wait_ns, th->rd_reqs,
                                    th->rd_bytes, th->faults_seen ? (int64_t)th->faults : -1,
                                    th->sock_ns};
            an_cpu_add(&th->cpu, e, &now);
        }
        return;
    case GS_K_HOST_CPU:
        add_host(p, e);
        return;
    case GS_K_CPU_LIMITS:
        if (!p->has_cpus) {
            p->has_cpus = 1;
            p->cpus_affinity = e->aux;
            p->cpus_quota_milli = e->aux2;
            p->cpus_online = e->bytes;
        }
        return;
    default:
        return;
    }
}

/* What the process says of itself: thread names, configuration, role,
 * devices, drop counts, notes, exit. */
static void on_fact(lctx *c, const gs_event *e)
{
    an_proc *p = c->p;
    long ti;
    switch (e->kind) {
    case GS_K_THREAD: {
        if ((ti = thread_ix(c, (uint32_t)e->aux)) < 0)
            return;
        const char *s = gs_reader_string(c->r, e->str);
        if (s)
            snprintf(p->th[ti].name, sizeof p->th[ti].name, "%s", s);
        return;
    }
    case GS_K_CONFIG:
        add_config(c, e);
        return;
    case GS_K_ROLE: {
        const char *s = gs_reader_string(c->r, e->str);
        snprintf(p->role, sizeof p->role, "%s", s ? s : "");
        p->worker_id = (int64_t)e->aux;
        p->loader_id = (int64_t)e->aux2;
        return;
    }
    case GS_K_GPU_DEVICE:
        add_device(c, e);
        return;
    case GS_K_DROPS:
        if (e->aux > p->dropped)
            p->dropped = e->aux;
        if (e->aux2 > p->lost)
            p->lost = e->aux2;
        return;
    case GS_K_GPU_DROPS:
        if (e->aux > p->gpu_dropped)
            p->gpu_dropped = e->aux;
        return;
    case GS_K_NOTE:
        p->notes++;
        if (e->aux == GS_NOTE_OUTPUT_FAILED)
            p->trace_stopped = 1;
        if (e->aux == GS_NOTE_CUPTI_BUSY && !p->cupti_lost_ts)
            p->cupti_lost_ts = e->ts; /* CUPTI left to another client (mid-run: GPU records) */
        if (e->aux == GS_NOTE_IMPORTED)
            p->imported = 1;
        if (e->aux == GS_NOTE_WORKERS_UNSEEN)
            p->workers_unseen = 1;
        return;
    case GS_K_EXIT:
        p->exited = 1;
        p->exit_status = gs_exit_status(e);
        p->exit_how = gs_exit_how_of(e);
        return;
    default:
        return;
    }
}

static void on_event(lctx *c, const gs_event *e)
{
    long ti;
    /* the hooked I/O calls by what they do (trace/gs_format.h, GS_CLASS_*) */
    switch (gs_kind_class(e->kind)) {
    case GS_CLASS_READ:
        ti = thread_ix(c, e->tid);
        if (e->fd_kind == GS_FDK_FILE)
            file_read(c, ti, e, gs_read_bytes(e));
        else if (e->fd_kind == GS_FDK_PIPE || e->fd_kind == GS_FDK_SOCKET)
            pipe_wait(c, ti, e);
        return;
    case GS_CLASS_WAIT:
        pipe_wait(c, thread_ix(c, e->tid), e);
        return;
    case GS_CLASS_OPEN: case GS_CLASS_STAT:
        meta(c, thread_ix(c, e->tid), e);
        return;
    case GS_CLASS_MMAP:
        file_map(c, thread_ix(c, e->tid), e);
        return;
    default:
        break;
    }
    switch (e->kind) {
    case GS_K_GPU_KERNEL: case GS_K_GPU_MEMCPY: case GS_K_GPU_MEMSET:
        on_gpu(c, e);
        return;
    case GS_K_CUDA_MEMCPY: case GS_K_CUDA_SYNC: case GS_K_CUDA_HOST_MEM:
        on_cuda(c, e);
        return;
    case GS_K_NVTX_PUSH: case GS_K_NVTX_POP: case GS_K_NVTX_START: case GS_K_NVTX_END:
        on_nvtx(c, e);
        return;
    case GS_K_STEP_BEGIN: case GS_K_STEP_END: case GS_K_FETCH_BEGIN: case GS_K_FETCH_END:
        on_marker(c, e);
        return;
    case GS_K_FAULTS: case GS_K_CPU: case GS_K_HOST_CPU: case GS_K_CPU_LIMITS:
        on_clock(c, e);
        return;
    default:
        on_fact(c, e);
        return;
    }
}

/* ---- the pass over one file ------------------------------------------------------------ */

an_pass *an_pass_new(an_proc *p, const an_opts *o, struct gs_reader *r)
{
    lctx *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    c->p = p;
    c->o = o;
    c->r = r;
    c->last_ti = -1;
    c->first_ts = UINT64_MAX;
    c->gsrc = -1;
    c->tl = an_tl_new(on_snap, c);
    if (!c->tl) {
        free(c);
        return NULL;
    }
    return c;
}

void an_pass_watch(an_pass *c, uint32_t tid, an_piece_fn fn, void *ctx)
{
    /* the watched thread takes a slot before anything else happens */
    const long ti = thread_ix(c, tid);
    const int slot = ti >= 0 ? slot_of(c, ti, 1) : -1;
    if (slot >= 0)
        an_tl_set_piece_fn(c->tl, (unsigned)slot, fn, ctx);
    c->watch_all = 1;
}

void an_pass_hook(an_pass *c, const an_hooks *hk, void *hctx)
{
    c->on_event = hk->on_event;
    c->hk_kinds = hk->event_kinds;
    c->hk_small = hk->small_bytes;
    c->hctx = hctx;
}

/* Whether the hooks' filter (an_hooks.event_kinds, small_bytes) lets e
 * through. RATIONALE: a loader's reads are most of a trace and most are
 * large; filtered here, they cost no call. */
static inline int hook_wants(const unsigned char *kinds, uint64_t small, const gs_event *e)
{
    const unsigned want = kinds ? kinds[e->kind] : AN_HOOK_EVENTS_ALL;
    return want == AN_HOOK_EVENTS_ALL ||
           (want == AN_HOOK_EVENTS_SMALL_FILE && e->fd_kind == GS_FDK_FILE && e->bytes < small);
}

void an_pass_events(an_pass *c, const gs_event *ev, size_t n)
{
    /* RATIONALE: the hook sees each event just before the pass takes it, in
     * the same loop: the batch is walked once (the hooks read neither the
     * pass's state nor write it, and the timeline's pieces still come after
     * the batch's last event, as the sweep runs at its end). In locals: the
     * calls could change *c as far as the compiler knows. */
    void (*const hook)(void *, const an_proc *, struct gs_reader *, const gs_event *) =
        c->on_event;
    const unsigned char *const kinds = c->hk_kinds;
    const uint64_t small = c->hk_small;
    for (size_t i = 0; i < n; i++) {
        const gs_event *e = &ev[i];
        if (hook && hook_wants(kinds, small, e))
            hook(c->hctx, c->p, c->r, e);
        if (e->ts < c->first_ts && e->ts)
            c->first_ts = e->ts;
        const uint64_t end = e->ts + e->dur;
        if (end > c->last_end)
            c->last_end = end;
        on_event(c, e);
    }
    if (c->coll_end_next < c->p->colls.n)
        coll_ends(c, an_tl_newest(c->tl));
    an_tl_sweep(c->tl);
}

void an_pass_finish(an_pass *c)
{
    an_proc *p = c->p;
    const uint64_t last = c->last_end;
    p->first_ts = c->first_ts == UINT64_MAX ? 0 : c->first_ts;
    p->last_ts = last;
    /* ranges still open at the end of the file end there; the last loader
     * iteration where the GPU's last work does, when that is after it began
     * (RATIONALE: not at the file's end, so that the timeline is swept no
     * further than its intervals reach) */
    for (size_t i = 0; i < p->nth; i++) {
        an_thread *th = &p->th[i];
        if (th->fetch_depth > 0) {
            th->fetch_depth = 1;
            fetch_leave(c, (long)i, last);
        }
        size_t k = th->ncand;
        while (th->n_nvtx_fetch && k > 0 && th->cand[k - 1].type != AN_C_NVTX_FETCH)
            k--;
        if (k > 0 && th->cand[k - 1].type == AN_C_NVTX_FETCH && c->gpu_end > th->cand[k - 1].t)
            cand_add(c, (long)i, AN_C_END, c->gpu_end, th->n_nvtx_fetch, GS_MARK_PLAIN);
    }
    an_copies_drain(&c->copies, host_copy_cb, c); /* no CUPTI record: the hooks' word */
    coll_ends(c, UINT64_MAX);
    an_tl_finish(c->tl);
    an_tl_get_stats(c->tl, &p->tl);
}

void an_pass_free(an_pass *c)
{
    if (!c)
        return;
    an_tl_free(c->tl);
    an_index_free(&c->sflags_far);
    an_index_free(&c->tix);
    an_index_free(&c->rix);
    an_copies_free(&c->copies);
    an_copies_free(&c->gpu_first);
    free(c->ranges);
    free(c);
}
