/* an_timeline.c — the streaming sweep of an_timeline.h.
 *
 * Each source (a host thread slot, a GPU stream) has a FIFO of intervals in
 * start order. an_tl_sweep merges the FIFO heads (a small heap of sources,
 * rebuilt per call) up to a watermark, and walks the merged starts with a
 * heap of active interval ends; between consecutive points the elapsed time
 * goes to exactly one class (see accrue). Queries are zero-length items in
 * their slot's FIFO, so they are answered in order with that slot's
 * intervals.
 *
 * Must never: allocate per item once the queues have grown, or lose an
 * interval without counting it.
 */
#include "load/an_timeline.h"

#include <stdlib.h>
#include <string.h>

typedef struct item {
    uint64_t start;
    uint64_t end; /* qid for queries */
    uint32_t tag; /* cls | slot << 4 */
    uint32_t pad;
} item;

typedef struct fifo {
    item *buf;
    uint32_t cap; /* power of two, or 0 */
    uint32_t head, n;
    uint32_t dev; /* GPU sources: key */
    uint32_t unsorted; /* an item was left out of start order (FIFO_MAX_SHIFT) */
    uint64_t stream;
} fifo;

typedef struct act {
    uint64_t end;
    uint32_t tag;
} act;

struct an_tl {
    an_snap_fn on_snap;
    void *ctx;
    fifo *src; /* [0, AN_TL_MAX_SLOTS) host slots, then GPU streams */
    uint32_t nsrc, capsrc;
    /* (dev, stream) -> source index, open addressing; 0 = empty, else idx+1 */
    uint32_t *gmap;
    uint32_t gcap, gn;
    int32_t gcache[16]; /* direct-mapped (dev, stream) -> source, -1 empty */
    struct hent { uint64_t key; uint32_t src; } *heap; /* source heap for merging */
    uint32_t heapcap;
    act *act;
    uint32_t nact, capact;
    uint64_t pending;
    uint64_t maxseen;
    uint64_t lag;
    int started;
    uint64_t P; /* sweep position */
    uint32_t busy_cnt[AN_NBUSY];
    uint32_t busy_mask;
    uint32_t dw_cnt[AN_TL_MAX_SLOTS], pg_cnt[AN_TL_MAX_SLOTS];
    uint64_t dw_mask, pg_mask;
    uint64_t busy[AN_NBUSY], idle;
    uint64_t idle_dw[AN_TL_MAX_SLOTS], idle_pg[AN_TL_MAX_SLOTS];
    /* per slot: fetch intervals active, when the present union of them
     * began, and the time of the unions closed so far (an_snap.fetch) */
    uint32_t fe_cnt[AN_TL_MAX_SLOTS];
    uint64_t fe_t0[AN_TL_MAX_SLOTS], fetch[AN_TL_MAX_SLOTS];
    an_tl_stats st;
    /* optional piece output for one watched slot */
    an_piece_fn piece_fn;
    void *piece_ctx;
    unsigned piece_slot;
    unsigned piece_cls;
    uint64_t piece_t0, piece_t1; /* pending piece, empty when t0 == t1 */
};

an_tl *an_tl_new(an_snap_fn on_snap, void *ctx)
{
    an_tl *tl = calloc(1, sizeof *tl);
    if (!tl)
        return NULL;
    tl->on_snap = on_snap;
    tl->ctx = ctx;
    tl->capsrc = AN_TL_MAX_SLOTS + 16;
    tl->src = calloc(tl->capsrc, sizeof *tl->src);
    if (!tl->src) {
        free(tl);
        return NULL;
    }
    tl->nsrc = AN_TL_MAX_SLOTS;
    tl->lag = AN_TL_LAG_NS;
    memset(tl->gcache, 0xff, sizeof tl->gcache);
    return tl;
}

void an_tl_free(an_tl *tl)
{
    if (!tl)
        return;
    for (uint32_t i = 0; i < tl->nsrc; i++)
        free(tl->src[i].buf);
    free(tl->src);
    free(tl->gmap);
    free(tl->heap);
    free(tl->act);
    free(tl);
}

static uint32_t ghash(uint32_t dev, uint64_t stream)
{
    uint64_t h = (stream ^ ((uint64_t)dev << 48)) * 0x9E3779B97F4A7C15ull;
    return (uint32_t)(h >> 32);
}

static int gmap_grow(an_tl *tl)
{
    uint32_t ncap = tl->gcap ? tl->gcap * 2 : 64;
    uint32_t *nm = calloc(ncap, sizeof *nm);
    if (!nm)
        return -1;
    for (uint32_t i = 0; i < tl->gcap; i++) {
        if (!tl->gmap[i])
            continue;
        const fifo *f = &tl->src[tl->gmap[i] - 1];
        uint32_t h = ghash(f->dev, f->stream) & (ncap - 1);
        while (nm[h])
            h = (h + 1) & (ncap - 1);
        nm[h] = tl->gmap[i];
    }
    free(tl->gmap);
    tl->gmap = nm;
    tl->gcap = ncap;
    return 0;
}

static int gpu_source_slow(an_tl *tl, uint32_t dev, uint64_t stream);

int an_tl_gpu_source(an_tl *tl, uint32_t dev, uint64_t stream)
{
    const uint32_t ck = (uint32_t)(stream ^ (stream >> 8) ^ dev) & 15u;
    const int32_t cs = tl->gcache[ck];
    if (cs >= 0 && tl->src[cs].dev == dev && tl->src[cs].stream == stream)
        return cs;
    const int found = gpu_source_slow(tl, dev, stream);
    if (found >= 0)
        tl->gcache[ck] = found;
    return found;
}

static int gpu_source_slow(an_tl *tl, uint32_t dev, uint64_t stream)
{
    if ((tl->gn + 1) * 2 > tl->gcap && gmap_grow(tl) < 0)
        return -1;
    uint32_t h = ghash(dev, stream) & (tl->gcap - 1);
    while (tl->gmap[h]) {
        const fifo *f = &tl->src[tl->gmap[h] - 1];
        if (f->dev == dev && f->stream == stream)
            return (int)tl->gmap[h] - 1;
        h = (h + 1) & (tl->gcap - 1);
    }
    /* RATIONALE: past AN_TL_GPU_SOURCES_MAX streams (real programs use a
     * few dozen; a damaged or hostile trace may name millions), the rest
     * share one source: bounded memory and sweep cost; their intervals
     * still count, only their order is no longer per stream. */
    if (tl->gn >= AN_TL_GPU_SOURCES_MAX - 1 && !(dev == UINT32_MAX && stream == UINT64_MAX))
        return gpu_source_slow(tl, UINT32_MAX, UINT64_MAX);
    if (tl->nsrc == tl->capsrc) {
        uint32_t nc = tl->capsrc * 2;
        fifo *ns = realloc(tl->src, nc * sizeof *ns);
        if (!ns)
            return -1;
        memset(ns + tl->capsrc, 0, (nc - tl->capsrc) * sizeof *ns);
        tl->src = ns;
        tl->capsrc = nc;
    }
    uint32_t idx = tl->nsrc++;
    tl->src[idx].dev = dev;
    tl->src[idx].stream = stream;
    tl->gmap[h] = idx + 1;
    tl->gn++;
    return (int)idx;
}

static inline item *fifo_at(fifo *f, uint32_t i)
{
    return &f->buf[(f->head + i) & (f->cap - 1)];
}

static __attribute__((noinline, cold)) int fifo_grow(fifo *f)
{
    uint32_t nc = f->cap ? f->cap * 2 : 256;
    if (nc == 0)
        return -1;
    item *nb = malloc((size_t)nc * sizeof *nb);
    if (!nb)
        return -1;
    for (uint32_t i = 0; i < f->n; i++)
        nb[i] = *fifo_at(f, i);
    free(f->buf);
    f->buf = nb;
    f->cap = nc;
    f->head = 0;
    return 0;
}

/* RATIONALE: items of one source come almost in order (a fetch range ends
 * after the calls inside it); a bounded insertion keeps the FIFO sorted
 * without a general sort. Further back than this it stays out of order and
 * the sweep treats it as late. */
#define FIFO_MAX_SHIFT 4096

static __attribute__((noinline, cold)) void force_sweep(an_tl *tl);

/* Move items [i, n) of f one place up (n < cap): a memmove per stretch
 * that does not wrap around the ring. */
static void fifo_shift_up(fifo *f, uint32_t i, uint32_t n)
{
    item *const buf = f->buf;
    const uint32_t mask = f->cap - 1;
    while (n > i) {
        const uint32_t src = (f->head + n - 1) & mask; /* the last item to move */
        if (src == mask) {
            buf[0] = buf[mask]; /* across the ring's end */
            n--;
            continue;
        }
        const uint32_t c = n - i < src + 1 ? n - i : src + 1; /* down to index 0 at most */
        memmove(&buf[src + 2 - c], &buf[src + 1 - c], (size_t)c * sizeof *buf);
        n -= c;
    }
}

/* An item of f that starts before f's last one: where it goes, the items
 * after that place moved up to make room. The place is after the last
 * item that starts at or before `start`, searched back at most
 * FIFO_MAX_SHIFT items; further back, it stays out of order there.
 * RATIONALE: a thread's intervals of two overlapping stretches of work
 * (a loader worker's batches) arrive interleaved, each to be put hundreds
 * of items back; in a FIFO still in order, a binary search and one block
 * move find the place the item-by-item walk finds. */
static __attribute__((noinline)) uint32_t fifo_make_room(fifo *f, uint64_t start)
{
    item *const buf = f->buf;
    const uint32_t head = f->head, mask = f->cap - 1, n = f->n;
    const uint32_t lim = n > FIFO_MAX_SHIFT ? n - FIFO_MAX_SHIFT : 0;
    uint32_t i;
    if (f->unsorted) {
        i = n;
        while (i > lim && buf[(head + i - 1) & mask].start > start) {
            buf[(head + i) & mask] = buf[(head + i - 1) & mask];
            i--;
        }
        return i;
    }
    /* the first of [lim, n) that starts after start (item n - 1 does) */
    uint32_t lo = lim, hi = n - 1;
    while (lo < hi) {
        const uint32_t mid = lo + (hi - lo) / 2;
        if (buf[(head + mid) & mask].start > start)
            hi = mid;
        else
            lo = mid + 1;
    }
    i = lo;
    if (i == lim && lim > 0 && buf[(head + lim - 1) & mask].start > start)
        f->unsorted = 1;
    fifo_shift_up(f, i, n);
    return i;
}

/* Append an item to f where it belongs (rare paths of push below). */
static __attribute__((noinline)) int push_slow(an_tl *tl, fifo *f, uint64_t start, uint64_t end,
                                               uint32_t tag)
{
    if (f->n == f->cap && fifo_grow(f) < 0) {
        tl->st.dropped++;
        return -1;
    }
    uint32_t i = f->n;
    if (i && f->buf[(f->head + i - 1) & (f->cap - 1)].start > start)
        i = fifo_make_room(f, start);
    item *it = &f->buf[(f->head + i) & (f->cap - 1)];
    it->start = start;
    it->end = end;
    it->tag = tag;
    it->pad = 0;
    f->n++;
    tl->pending++;
    tl->st.items++;
    if (start > tl->maxseen)
        tl->maxseen = start;
    if (tl->pending > AN_TL_PENDING_MAX)
        force_sweep(tl);
    return 0;
}

/* Always inlined into its callers (it is most of what they do).
 * RATIONALE: the common case, an item after the source's last one in a
 * ring with room and the queues below their bound, makes no call, so it
 * needs no saved registers; everything else (growing the ring, an item out
 * of order, a forced sweep) is push_slow, called last. */
static inline __attribute__((always_inline)) int push(an_tl *tl, fifo *f, uint64_t start,
                                                      uint64_t end, uint32_t tag)
{
    const uint32_t n = f->n, mask = f->cap - 1;
    if (__builtin_expect(n == f->cap || (n && f->buf[(f->head + n - 1) & mask].start > start) ||
                             tl->pending >= AN_TL_PENDING_MAX,
                         0))
        return push_slow(tl, f, start, end, tag);
    item *it = &f->buf[(f->head + n) & mask];
    it->start = start;
    it->end = end;
    it->tag = tag;
    it->pad = 0;
    f->n = n + 1;
    tl->pending++;
    tl->st.items++;
    if (start > tl->maxseen)
        tl->maxseen = start;
    return 0;
}

int an_tl_add_gpu(an_tl *tl, int src, uint64_t start, uint64_t end, unsigned busy_cls)
{
    if (src < AN_TL_MAX_SLOTS || (uint32_t)src >= tl->nsrc || busy_cls >= AN_NBUSY) {
        tl->st.dropped++;
        return -1;
    }
    if (end <= start)
        return 0;
    fifo *f = &tl->src[src];
    /* back-to-back work of one class on one stream: extend, exactly */
    if (f->n) {
        item *last = fifo_at(f, f->n - 1);
        if (last->tag == busy_cls && start >= last->start && start <= last->end) {
            if (end > last->end)
                last->end = end;
            return 0;
        }
    }
    return push(tl, f, start, end, busy_cls);
}

int an_tl_add_host(an_tl *tl, unsigned slot, uint64_t start, uint64_t end, unsigned cls)
{
    if (slot >= AN_TL_MAX_SLOTS || (cls != AN_CLS_DW && cls != AN_CLS_PG && cls != AN_CLS_FE)) {
        tl->st.dropped++;
        return -1;
    }
    if (end <= start)
        return 0;
    fifo *f = &tl->src[slot];
    const uint32_t tag = cls | slot << 4;
    /* overlapping or touching work of one class in one thread: extend, exactly */
    if (f->n) {
        item *last = fifo_at(f, f->n - 1);
        if (last->tag == tag && start >= last->start && start <= last->end) {
            if (end > last->end)
                last->end = end;
            return 0;
        }
    }
    return push(tl, f, start, end, tag);
}

int an_tl_query_on(an_tl *tl, int src, unsigned slot, uint64_t t, uint64_t qid)
{
    if (slot >= AN_TL_MAX_SLOTS || src < AN_TL_MAX_SLOTS || (uint32_t)src >= tl->nsrc) {
        tl->st.dropped++;
        return -1;
    }
    return push(tl, &tl->src[src], t, qid, AN_CLS_QUERY | slot << 4);
}

uint64_t an_tl_newest(const an_tl *tl)
{
    return tl->maxseen;
}

int an_tl_query(an_tl *tl, unsigned slot, uint64_t t, uint64_t qid)
{
    if (slot >= AN_TL_MAX_SLOTS) {
        tl->st.dropped++;
        return -1;
    }
    return push(tl, &tl->src[slot], t, qid, AN_CLS_QUERY | slot << 4);
}

/* ---- sweep ---------------------------------------------------------------- */

void an_tl_set_piece_fn(an_tl *tl, unsigned slot, an_piece_fn fn, void *ctx)
{
    tl->piece_fn = slot < AN_TL_MAX_SLOTS ? fn : NULL;
    tl->piece_ctx = ctx;
    tl->piece_slot = slot;
    tl->piece_t0 = tl->piece_t1 = 0;
}

static void piece_flush(an_tl *tl)
{
    if (tl->piece_t1 > tl->piece_t0)
        tl->piece_fn(tl->piece_ctx, tl->piece_t0, tl->piece_t1, tl->piece_cls);
    tl->piece_t0 = tl->piece_t1;
}

/* [P, P + dt) in the watched slot's class; merged with the pending piece when
 * it continues it. */
static void piece(an_tl *tl, uint64_t dt)
{
    unsigned cls;
    if (tl->busy_mask)
        cls = (unsigned)__builtin_ctz(tl->busy_mask);
    else if (tl->dw_cnt[tl->piece_slot])
        cls = AN_PC_DW;
    else if (tl->pg_cnt[tl->piece_slot])
        cls = AN_PC_PG;
    else
        cls = AN_PC_HOST;
    if (cls == tl->piece_cls && tl->piece_t1 == tl->P && tl->piece_t1 > tl->piece_t0) {
        tl->piece_t1 += dt;
        return;
    }
    piece_flush(tl);
    tl->piece_cls = cls;
    tl->piece_t0 = tl->P;
    tl->piece_t1 = tl->P + dt;
}

static inline void accrue(an_tl *tl, uint64_t dt)
{
    if (!dt)
        return;
    if (tl->piece_fn)
        piece(tl, dt);
    if (tl->busy_mask) {
        tl->busy[__builtin_ctz(tl->busy_mask)] += dt;
        return;
    }
    tl->idle += dt;
    uint64_t m = tl->dw_mask | tl->pg_mask;
    while (m) {
        const unsigned s = (unsigned)__builtin_ctzll(m);
        m &= m - 1;
        if (tl->dw_cnt[s])
            tl->idle_dw[s] += dt;
        else
            tl->idle_pg[s] += dt;
    }
}

/* A fetch interval of a slot begins (d > 0) or ends at P: the slot's fetch
 * time is the union of its fetch intervals, accrued once when the union
 * closes (and read open by a snapshot), so accrue() never looks at it. */
static __attribute__((noinline)) void fetch_state(an_tl *tl, unsigned slot, int d)
{
    const uint32_t c = tl->fe_cnt[slot] += (uint32_t)d;
    if (d > 0 && c == 1)
        tl->fe_t0[slot] = tl->P;
    else if (d < 0 && c == 0)
        tl->fetch[slot] += tl->P - tl->fe_t0[slot];
}

/* An active fetch interval carries this bit in its tag, so that
 * process_next_alone, which keeps one interval's state across a gap, never
 * takes it (the gap is no fetch time). */
#define TAG_FETCH_ACT (1u << 31)

/* RATIONALE: the bit of a class or slot is set from its count without a
 * branch on the count (it goes 0 -> 1 -> 0 for most intervals, which a
 * branch predictor guesses badly). */
static inline void set_state(an_tl *tl, uint32_t tag, int d)
{
    const unsigned cls = tag & 15u, slot = tag >> 4;
    if (cls < AN_NBUSY) {
        const uint32_t c = tl->busy_cnt[cls] += (uint32_t)d;
        tl->busy_mask = (tl->busy_mask & ~(1u << cls)) | (uint32_t)(c != 0) << cls;
    } else if (cls == AN_CLS_DW) {
        const uint32_t c = tl->dw_cnt[slot] += (uint32_t)d;
        tl->dw_mask = (tl->dw_mask & ~(1ull << slot)) | (uint64_t)(c != 0) << slot;
    } else if (cls == AN_CLS_PG) {
        const uint32_t c = tl->pg_cnt[slot] += (uint32_t)d;
        tl->pg_mask = (tl->pg_mask & ~(1ull << slot)) | (uint64_t)(c != 0) << slot;
    } else {
        fetch_state(tl, (tag & ~TAG_FETCH_ACT) >> 4, d);
    }
}

/* The heap of active ends without its top, n > 0 entries left. */
static __attribute__((noinline)) void act_sift(an_tl *tl, uint32_t n)
{
    act *h = tl->act;
    act x = h[n];
    uint32_t i = 0;
    for (;;) {
        uint32_t c = 2 * i + 1;
        if (c >= n)
            break;
        if (c + 1 < n && h[c + 1].end < h[c].end)
            c++;
        if (h[c].end >= x.end)
            break;
        h[i] = h[c];
        i = c;
    }
    h[i] = x;
}

/* RATIONALE: most often the interval popped was the only one active
 * (intervals of a source seldom overlap): that case makes no call. */
static inline void act_pop(an_tl *tl)
{
    const uint32_t n = --tl->nact;
    if (n)
        act_sift(tl, n);
}

static int act_push(an_tl *tl, uint64_t end, uint32_t tag)
{
    if (tl->nact == tl->capact) {
        uint32_t nc = tl->capact ? tl->capact * 2 : 64;
        act *na = realloc(tl->act, nc * sizeof *na);
        if (!na)
            return -1;
        tl->act = na;
        tl->capact = nc;
    }
    act *h = tl->act;
    uint32_t i = tl->nact++;
    while (i) {
        uint32_t p = (i - 1) / 2;
        if (h[p].end <= end)
            break;
        h[i] = h[p];
        i = p;
    }
    h[i].end = end;
    h[i].tag = tag;
    return 0;
}

static void advance_to(an_tl *tl, uint64_t t)
{
    while (tl->nact && tl->act[0].end <= t) {
        const act a = tl->act[0];
        accrue(tl, a.end - tl->P);
        tl->P = a.end;
        act_pop(tl);
        set_state(tl, a.tag, -1);
    }
    accrue(tl, t - tl->P);
    tl->P = t;
}

static void snapshot(an_tl *tl, unsigned slot, uint64_t qid)
{
    an_snap s;
    s.t = tl->P;
    memcpy(s.busy, tl->busy, sizeof s.busy);
    s.idle = tl->idle;
    s.idle_dw = tl->idle_dw[slot];
    s.idle_pg = tl->idle_pg[slot];
    s.fetch = tl->fetch[slot] + (tl->fe_cnt[slot] ? tl->P - tl->fe_t0[slot] : 0);
    if (tl->on_snap)
        tl->on_snap(tl->ctx, slot, qid, &s);
}

/* RATIONALE: the common item is the next interval of the one that is
 * active alone, of the same class and slot, starting after it ended (a
 * loader's next read, a stream's next kernel of one class). With one
 * active, the state bits are exactly its own, so the general path would
 * accrue to its end, clear its bits, accrue the gap with nothing active
 * (GPU idle, no slot waiting: idle only), then set the same bits again;
 * here the bits stay and the active end moves. Pieces for a watched slot
 * take the general path. */
static inline int process_next_alone(an_tl *tl, const item *it)
{
    act *const a = tl->act;
    if (tl->nact != 1 || a->tag != it->tag || a->end > it->start || tl->piece_fn)
        return 0;
    accrue(tl, a->end - tl->P);
    tl->idle += it->start - a->end;
    tl->P = it->start;
    a->end = it->end;
    return 1;
}

static void process(an_tl *tl, item it)
{
    if (process_next_alone(tl, &it))
        return;
    const unsigned cls = it.tag & 15u;
    if (!tl->started) {
        tl->started = 1;
        tl->P = it.start;
        tl->st.first_ts = it.start;
    }
    if (it.start < tl->P) {
        /* behind the sweep: widen the window for what comes next */
        uint64_t late = tl->maxseen > it.start ? tl->maxseen - it.start : 0;
        late += late / 4;
        if (late > tl->lag)
            tl->lag = late < AN_TL_LAG_MAX_NS ? late : AN_TL_LAG_MAX_NS;
        if (cls != AN_CLS_QUERY) {
            tl->st.late_items++;
            if (it.end <= tl->P) {
                tl->st.late_ns += it.end - it.start;
                return;
            }
            tl->st.late_ns += tl->P - it.start;
        }
        it.start = tl->P; /* a late query reads the state now */
    }
    advance_to(tl, it.start);
    if (cls == AN_CLS_QUERY) {
        snapshot(tl, it.tag >> 4, it.end);
        return;
    }
    if (act_push(tl, it.end, cls == AN_CLS_FE ? it.tag | TAG_FETCH_ACT : it.tag) < 0) {
        tl->st.dropped++;
        return;
    }
    set_state(tl, it.tag, +1);
}

static inline uint64_t head_start(an_tl *tl, uint32_t s)
{
    fifo *f = &tl->src[s];
    return f->buf[f->head].start;
}

static void heap_down(struct hent *h, uint32_t n, uint32_t i)
{
    const struct hent x = h[i];
    for (;;) {
        uint32_t c = 2 * i + 1;
        if (c >= n)
            break;
        if (c + 1 < n && h[c + 1].key < h[c].key)
            c++;
        if (h[c].key >= x.key)
            break;
        h[i] = h[c];
        i = c;
    }
    h[i] = x;
}

static void sweep_to(an_tl *tl, uint64_t W)
{
    if (tl->heapcap < tl->nsrc) {
        struct hent *nh = realloc(tl->heap, tl->nsrc * sizeof *nh);
        if (!nh)
            return; /* try again at the next call */
        tl->heap = nh;
        tl->heapcap = tl->nsrc;
    }
    struct hent *h = tl->heap;
    uint32_t n = 0;
    for (uint32_t s = 0; s < tl->nsrc; s++) {
        if (!tl->src[s].n)
            continue;
        const uint64_t k = head_start(tl, s);
        if (k <= W) {
            h[n].key = k;
            h[n].src = s;
            n++;
        }
    }
    if (!n)
        return;
    for (uint32_t i = n / 2; i-- > 0;)
        heap_down(h, n, i);
    while (n) {
        fifo *f = &tl->src[h[0].src];
        /* the least head of the other sources: the top source's items up to
         * it come next, one after the other, without the heap (heap_down
         * keeps the top source on top on a tie too, so the order is the
         * one item-by-item merging gives) */
        const uint64_t other = n == 1 ? 0 : n == 2 || h[1].key < h[2].key ? h[1].key : h[2].key;
        const uint32_t mask = f->cap - 1;
        uint64_t next;
        do {
            const item it = f->buf[f->head];
            f->head = (f->head + 1) & mask;
            f->n--;
            tl->pending--;
            process(tl, it);
            if (!f->n) {
                f->unsorted = 0; /* nothing left out of order */
                break;
            }
            next = f->buf[f->head].start;
        } while (next <= W && (n == 1 || next <= other));
        if (f->n && (next = f->buf[f->head].start) <= W)
            h[0].key = next;
        else
            h[0] = h[--n];
        if (n == 2) {
            /* heap_down of two: the smaller key first */
            if (h[1].key < h[0].key) {
                const struct hent x = h[0];
                h[0] = h[1];
                h[1] = x;
            }
        } else if (n > 2)
            heap_down(h, n, 0);
    }
}

static __attribute__((noinline, cold)) void force_sweep(an_tl *tl)
{
    uint64_t lag = tl->lag;
    while (tl->pending > AN_TL_PENDING_MAX / 4 * 3) {
        lag /= 2;
        sweep_to(tl, tl->maxseen > lag ? tl->maxseen - lag : 0);
        if (!lag)
            break;
    }
}

void an_tl_sweep(an_tl *tl)
{
    if (tl->maxseen > tl->lag)
        sweep_to(tl, tl->maxseen - tl->lag);
}

void an_tl_finish(an_tl *tl)
{
    sweep_to(tl, UINT64_MAX);
    while (tl->nact) {
        const act a = tl->act[0];
        accrue(tl, a.end - tl->P);
        tl->P = a.end;
        act_pop(tl);
        set_state(tl, a.tag, -1);
    }
    if (tl->piece_fn)
        piece_flush(tl);
}

void an_tl_get_stats(const an_tl *tl, an_tl_stats *st)
{
    *st = tl->st;
    st->lag_ns = tl->lag;
    st->last_ts = tl->P;
    memcpy(st->busy, tl->busy, sizeof st->busy);
    st->idle = tl->idle;
}
