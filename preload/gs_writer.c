/* gs_writer.c — the background writer and everything that holds the output
 * lock.
 *
 * Responsible for: the output lock (writer, exit paths, exec and fork take
 * it; hooks never do), draining every ring up to a snapshot of its head,
 * converting ring records to gs_event (hook clock -> CLOCK_MONOTONIC ns),
 * encoding them into raw frames (TID before each thread's run, STRING before
 * a string's first use in the file), THREAD / FAULTS / DROPS records,
 * compressing (zstd) and writing one frame per write(), and the writer
 * thread that does all this every GPUSTARVE_FLUSH_MS or when poked (the
 * wake-up word is gs_wake.c's: what the writer drains pokes it), in a
 * descriptor table of its own until a GPU source starts; and, at each pass
 * and when a thread asks (a wake-up for pages only, gs_writer_poke_map),
 * the live file's pages mapped ahead of the threads that will write them
 * (gs_live_keep_ahead).
 *
 * Must never: run with the nesting guard clear, call a hooked function,
 * wait on a producer, or write a frame except whole and under the lock.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "gs_births.h"
#include "gs_clock.h"
#include "gs_config.h"
#include "gs_cpustat.h"
#include "gs_livefile.h"
#include "gs_output.h"
#include "gs_preload.h"
#include "gs_ring.h"
#include "gs_runcols.h"
#include "gs_source.h"
#include "gs_stacks.h"
#include "gs_state.h"
#include "gs_strings.h"
#include "gs_thread.h"
#include "gs_wake.h"
#include "gs_writer.h"

/* RATIONALE: 1 MiB raw frames (well under GS_FRAME_RAW_MAX) compress in about
 * a millisecond at level 3 and hold ~40k records, more than one flush period
 * of a busy loader thread produces. */
#define RAW_CAP (1u << 20)

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static _Atomic int g_owner; /* tid holding g_lock, 0 when none */
static _Atomic int g_stop;
/* Where the writer thread runs (docs/collector-safety.md): 0 not chosen
 * yet, 1 in a descriptor table of its own, 2 in the program's (a GPU source
 * started, or the trace file is in the program's table). */
static _Atomic int g_table;
static _Atomic uint32_t g_gen; /* a writer started under an older generation ends */
/* 0 from a writer thread's creation until it runs its own code (then 1):
 * fork waits for it (gs_writer_wait_started) */
static _Atomic uint32_t g_started = 1;
static int g_final; /* the EXIT record is written: write nothing more */

static uint8_t *g_raw;
static uint8_t *g_comp;
static size_t g_comp_cap;
static void *g_cctx;
static void *g_cctx_runs; /* frames of runs (gs_cfg.zstd_level_runs); NULL: g_cctx */
static gs_encoder g_enc;
static uint32_t g_enc_tid;
static uint64_t g_frame_events;
static uint64_t g_frame_run_events; /* of them, written by put_repeats */
static uint8_t *g_emitted; /* bit per string id: defined in this file */
static gs_calib g_cal;
static uint64_t g_lost;         /* events not written because output failed */
static uint64_t g_dropped_dead; /* drops counted in recycled rings */
static uint64_t g_rep_dropped, g_rep_lost;
static uint8_t g_stk_emitted[(GS_STACK_IDS_MAX + 8) / 8]; /* bit per stack id: defined */
static uint32_t g_put_tid; /* thread of the event being put (for its MAPPING records) */
static uint64_t g_heads[GS_RING_MAX];
static uint32_t g_states[GS_RING_MAX];
/* records of ring i up to g_pend_tail[i] are in the pending frame (or
 * counted lost): its tail moves there once the frame is written */
static uint64_t g_pend_tail[GS_RING_MAX];
static uint8_t g_touched[GS_RING_MAX];
static uint32_t g_touched_list[GS_RING_MAX];
static uint32_t g_ntouched;

static void *map_anon(size_t len, int noreserve)
{
    long p = syscall(SYS_mmap, NULL, len, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | (noreserve ? MAP_NORESERVE : 0), -1, 0);
    return (p == -1) ? NULL : (void *)p;
}

int gs_writer_init(void)
{
    g_raw = map_anon(RAW_CAP, 0);
    g_comp_cap = gs_frame_bound(RAW_CAP);
    g_comp = map_anon(g_comp_cap, 0);
    g_emitted = map_anon(GS_STR_MAX_IDS / 8, 1);
    g_cctx = gs_frame_cctx_new(gs_cfg.zstd_level);
    if (!g_raw || !g_comp || !g_emitted || !g_cctx)
        return -1;
    if (gs_cfg.zstd_level_runs != gs_cfg.zstd_level)
        g_cctx_runs = gs_frame_cctx_new(gs_cfg.zstd_level_runs); /* NULL: g_cctx's level */
    gs_encoder_init(&g_enc, g_raw, RAW_CAP);
    gs_calib_start(&g_cal);
    return 0;
}

/* ---- lock ---------------------------------------------------------------- */

static int my_tid(void)
{
    return (int)syscall(SYS_gettid);
}

void gs_out_lock(void)
{
    pthread_mutex_lock(&g_lock);
    atomic_store(&g_owner, my_tid());
}

int gs_out_trylock_for(unsigned ms)
{
    int me = my_tid();
    for (unsigned waited_us = 0;; waited_us += 200) {
        if (pthread_mutex_trylock(&g_lock) == 0) {
            atomic_store(&g_owner, me);
            return 1;
        }
        if (atomic_load(&g_owner) == me || waited_us >= ms * 1000u)
            return 0; /* held by the thread we interrupted, or for too long */
        struct timespec ts = {0, 200000};
        nanosleep(&ts, NULL);
    }
}

void gs_out_unlock(void)
{
    atomic_store(&g_owner, 0);
    pthread_mutex_unlock(&g_lock);
}

/* ---- frames ---------------------------------------------------------------- */

static int emitted(uint32_t id)
{
    return id < GS_STR_MAX_IDS && (g_emitted[id >> 3] >> (id & 7)) & 1;
}

static void mark_emitted(uint32_t id)
{
    if (id < GS_STR_MAX_IDS)
        g_emitted[id >> 3] |= (uint8_t)(1u << (id & 7));
}

/* After a failed write: a last small frame with a NOTE, if the file still
 * takes it, then close. */
static void write_failure_note(int err)
{
    static uint8_t raw[GS_STRING_MAX + 256];
    static uint8_t out[2 * GS_STRING_MAX + 1024];
    char text[256];
    char ebuf[128];
    snprintf(text, sizeof text, "trace output failed: %s; tracing stopped",
             strerror_r(err, ebuf, sizeof ebuf));
    uint32_t id = gs_str_intern(text, strlen(text));
    gs_encoder e;
    gs_encoder_init(&e, raw, sizeof raw);
    gs_encode_tid(&e, (uint32_t)my_tid());
    if (id)
        gs_encode_string(&e, id, text, strlen(text));
    gs_event ev;
    gs_event_clear(&ev);
    ev.kind = GS_K_NOTE;
    ev.ts = gs_mono_ns();
    ev.str = id;
    ev.aux = GS_NOTE_OUTPUT_FAILED;
    gs_encode_event(&e, &ev);
    long n = gs_frame_compress(g_cctx, raw, e.len, e.nrec, out, sizeof out);
    if (n > 0 && err != ETIMEDOUT)
        gs_out_write_final(out, (size_t)n, 1000);
    gs_out_close();
}

/* The pending frame is written (or its events counted lost): the rings'
 * tails move past the records it held. */
static void commit_tails(void)
{
    for (uint32_t k = 0; k < g_ntouched; k++) {
        uint32_t i = g_touched_list[k];
        gs_ring *r = gs_ring_at(i);
        if (r)
            atomic_store_explicit(&r->tail, g_pend_tail[i], memory_order_release);
        g_touched[i] = 0;
    }
    g_ntouched = 0;
}

typedef struct frame_out {
    size_t len;
    int err;
} frame_out;

/* Write the compressed frame and move the rings' tails past its records at
 * once, on the thread that writes (gs_out_run): no scheduling gap between
 * the two, in which a death would leave records both written and still in
 * the live file. */
static void write_frame(void *arg)
{
    frame_out *f = arg;
    gs_live_header *h = gs_live();
    if (h) {
        for (uint32_t k = 0; k < g_ntouched; k++) {
            gs_ring *r = gs_ring_at(g_touched_list[k]);
            if (r)
                atomic_store_explicit(&r->pend_tail, g_pend_tail[g_touched_list[k]],
                                      memory_order_relaxed);
        }
        atomic_store_explicit(&h->pend_end, gs_out_size() + f->len, memory_order_release);
    }
    if (gs_out_write(g_comp, f->len) != 0)
        f->err = errno ? errno : EIO;
    else
        commit_tails();
    if (h)
        atomic_store_explicit(&h->pend_end, 0, memory_order_release);
}

void gs_frame_flush_locked(void)
{
    if (g_enc.nrec == 0) {
        commit_tails(); /* records that were only counted lost */
        return;
    }
    if (gs_out_alive()) {
        /* RATIONALE: a frame whose events are at least 7 in 8 runs' gets the
         * runs' level, or is stored when it is at most GS_STORE_MAX_X2 / 2
         * raw bytes per event (gs_config.c, docs/performance.md
         * "Compression of runs") */
        const int runs =
            g_cctx_runs && g_frame_run_events >= g_frame_events - g_frame_events / 8;
        long n;
        if (runs && gs_cfg.store_runs && 2 * (uint64_t)g_enc.len <= GS_STORE_MAX_X2 * g_frame_events)
            n = gs_frame_store(g_raw, g_enc.len, g_enc.nrec, g_comp, g_comp_cap);
        else
            n = gs_frame_compress(runs ? g_cctx_runs : g_cctx, g_raw, g_enc.len, g_enc.nrec, g_comp,
                                  g_comp_cap);
        frame_out f = {n > 0 ? (size_t)n : 0, 0};
        if (n < 0) {
            f.err = EIO;
            gs_out_fail("cannot compress trace for", f.err);
        } else {
            gs_out_run(write_frame, &f);
            if (gs_out_stuck())
                return; /* the file thread may still be in there: touch nothing */
        }
        if (f.err) {
            g_lost += g_frame_events;
            write_failure_note(f.err);
        }
    } else {
        g_lost += g_frame_events;
    }
    gs_encoder_reset(&g_enc);
    g_frame_events = g_frame_run_events = 0;
    g_enc_tid = 0;
    commit_tails(); /* after a failure: those records are counted lost */
}

static void put_event(uint32_t tid, const gs_event *ev);

static void put_mapping_event(const gs_event *ev)
{
    put_event(g_put_tid, ev);
}

/* Encode one event of thread tid, with its string first when the file has
 * not defined it yet; an event with a call stack gets the stack's MAPPING
 * records (when new) and its STACK record first. */
static void put_event(uint32_t tid, const gs_event *ev)
{
    if (!gs_out_alive()) {
        g_lost++;
        return;
    }
    const uint64_t *frames = NULL;
    uint32_t nframes = 0;
    if (ev->stack && !(g_stk_emitted[ev->stack >> 3] >> (ev->stack & 7) & 1)) {
        frames = gs_stack_frames(ev->stack, &nframes);
        if (frames) {
            g_put_tid = tid;
            gs_maps_cover(frames, nframes, put_mapping_event); /* may flush: before all else */
            if (!gs_out_alive()) {
                g_lost++;
                return;
            }
        }
    }
    uint32_t slen = 0;
    const char *s = NULL;
    if (ev->str && !emitted(ev->str))
        s = gs_str_get(ev->str, &slen);
    /* room for the event, its string, its stack and (NVTX, MAPPING) a second string */
    size_t need = GS_EVENT_MAX_ENCODED + 16 + (s ? slen + 16 : 0) + GS_STRING_MAX + 16 +
                  (frames ? GS_STACK_MAX_ENCODED : 0);
    if (g_enc.cap - g_enc.len < need) {
        gs_frame_flush_locked();
        if (!gs_out_alive()) {
            g_lost++;
            return;
        }
    }
    if (g_enc.nrec == 0 || g_enc_tid != tid) {
        gs_encode_tid(&g_enc, tid);
        g_enc_tid = tid;
    }
    gs_event e = *ev;
    if (s && gs_encode_string(&g_enc, e.str, s, slen) == GS_OK)
        mark_emitted(e.str);
    /* NVTX kinds name their domain by string id in aux: define it too */
    if (e.aux && e.aux < GS_STR_MAX_IDS && !emitted((uint32_t)e.aux) &&
        (e.kind == GS_K_NVTX_PUSH || e.kind == GS_K_NVTX_POP || e.kind == GS_K_NVTX_START ||
         e.kind == GS_K_NVTX_MARK)) {
        uint32_t dlen = 0;
        const char *d = gs_str_get((uint32_t)e.aux, &dlen);
        if (d && g_enc.cap - g_enc.len >= dlen + 32 + GS_EVENT_MAX_ENCODED &&
            gs_encode_string(&g_enc, (uint32_t)e.aux, d, dlen) == GS_OK)
            mark_emitted((uint32_t)e.aux);
    }
    /* MAPPING names the build id by string id in aux2 */
    if (e.kind == GS_K_MAPPING && e.aux2 && e.aux2 < GS_STR_MAX_IDS &&
        !emitted((uint32_t)e.aux2)) {
        uint32_t blen = 0;
        const char *b = gs_str_get((uint32_t)e.aux2, &blen);
        if (b && gs_encode_string(&g_enc, (uint32_t)e.aux2, b, blen) == GS_OK)
            mark_emitted((uint32_t)e.aux2);
    }
    if (e.kind == GS_K_MAPPING && e.aux2 && !emitted((uint32_t)e.aux2))
        e.aux2 = 0;
    if (e.str && !emitted(e.str))
        e.str = 0; /* never refer to a string the file lacks */
    if (frames) {
        if (gs_encode_stack(&g_enc, e.stack, frames, nframes) == GS_OK)
            g_stk_emitted[e.stack >> 3] |= (uint8_t)(1u << (e.stack & 7));
    }
    if (e.stack && !(g_stk_emitted[e.stack >> 3] >> (e.stack & 7) & 1))
        e.stack = e.stack_weight = 0; /* never refer to a stack the file lacks */
    if (gs_encode_event(&g_enc, &e) != GS_OK) {
        g_lost++;
        return;
    }
    g_frame_events++;
}

void gs_put_event(uint32_t tid, const gs_event *ev)
{
    put_event(tid, ev);
}

/* ---- per-thread records ----------------------------------------------------- */

static void put_thread_name(gs_ring *r, uint64_t now, const char *name, size_t len)
{
    uint32_t id = gs_str_intern(name, len);
    if (!id || id == r->name_id)
        return;
    r->name_id = id;
    gs_event ev;
    gs_event_clear(&ev);
    ev.kind = GS_K_THREAD;
    ev.ts = now;
    ev.str = id;
    ev.aux = r->tid;
    put_event(r->tid, &ev);
}

/* THREAD when the name is new or changed; FAULTS when the count moved.
 * sample: this drain takes the periodic CPU samples (gs_cpu_periodic_due).
 * RATIONALE: a busy thread's ring is drained whenever it is half full
 * (hundreds of times a second in a tight read loop); its stat file is read
 * when the ring is new and then with the periodic samples only (at most
 * every 50 ms), not at every drain (docs/performance.md, "Fewer system
 * calls per drain"). */
static void thread_info(gs_ring *r, int live, int had_events, uint64_t now, int sample)
{
    char buf[1024];
    if (!live) {
        if (!r->name_id && had_events)
            put_thread_name(r, now, r->name0, strnlen(r->name0, sizeof r->name0));
        return;
    }
    if (!sample && r->name_id)
        return;
    /* RATIONALE: one read of stat gives both the name (between the first
     * '(' and the last ')', the same bytes as comm) and the fault count: a
     * busy thread's drain passes read it every time (two /proc files cost
     * about 4 ns per event of a tight read loop, docs/performance.md) */
    long n = gs_task_read(r->tid, "stat", buf, sizeof buf);
    char *open = n > 0 ? strchr(buf, '(') : NULL;
    char *p = open ? strrchr(open, ')') : NULL;
    if (!r->name_id || had_events) {
        if (p)
            put_thread_name(r, now, open + 1, (size_t)(p - open - 1));
        else if (!r->name_id)
            put_thread_name(r, now, r->name0, strnlen(r->name0, sizeof r->name0));
    }
    if (!p)
        return;
    /* fields after the comm: 3 state ... 12 majflt */
    p++;
    for (int field = 3; field <= 12; field++) {
        while (*p == ' ')
            p++;
        if (field == 12)
            break;
        while (*p && *p != ' ')
            p++;
    }
    uint64_t maj = 0;
    while (*p >= '0' && *p <= '9')
        maj = maj * 10 + (uint64_t)(*p++ - '0');
    /* less the live file's pages the thread touched first (gs_livefile.c,
     * first_touch): the collector's I/O, not the program's. RATIONALE: the
     * thread counts one just before its store, so between the two reads the
     * difference can be one low; it is recorded only when it rises. */
    const uint64_t own = atomic_load_explicit(&r->own_faults, memory_order_relaxed);
    maj = maj > own ? maj - own : 0;
    if (maj > r->faults) {
        r->faults = maj;
        gs_event ev;
        gs_event_clear(&ev);
        ev.kind = GS_K_FAULTS;
        ev.ts = now;
        ev.aux = r->tid;
        ev.aux2 = maj;
        put_event(r->tid, &ev);
    }
}

static void to_event(const gs_rec *x, gs_event *ev)
{
    gs_rec_to_event(x, ev);
    gs_calib_span(&g_cal, x->ts, x->dur, &ev->ts, &ev->dur);
    if (x->stack) {
        ev->stack = x->stack & GS_STACK_ID_MASK;
        ev->stack_weight = (x->stack & GS_STACK_SAMPLED) ? gs_stacks_every() : 1;
    }
}

/* Whether a ring record of this kind is a hooked I/O call: its gs_rec
 * fields are its gs_event fields one for one (gs_rec_to_event parks nothing
 * for it), and it names no string but str. */
static int plain_io_kind(unsigned kind)
{
    switch (gs_kind_class(kind)) {
    case GS_CLASS_OPEN:
    case GS_CLASS_CLOSE:
    case GS_CLASS_DUP:
    case GS_CLASS_READ:
    case GS_CLASS_MMAP:
    case GS_CLASS_STAT:
    case GS_CLASS_WAIT:
        return 1;
    default:
        return 0;
    }
}

/* put_event's common case, straight from the ring record: a hooked I/O
 * call without a call stack, whose string the file has (or none), of the
 * thread the frame's last TID names, into a frame with room (so nothing is
 * flushed). 0 when the record needs put_event. Output must be alive.
 * RATIONALE: this is most of a busy loader's records; going through
 * gs_event_clear, to_event and put_event's checks for each cost more than
 * encoding it (docs/performance.md, "Where the time goes"). */
static int put_rec_fast(uint32_t tid, const gs_rec *x)
{
    if (x->stack || !plain_io_kind(x->kind) || (x->str && !emitted(x->str)) ||
        g_enc.nrec == 0 || g_enc_tid != tid || g_enc.cap - g_enc.len < GS_EVENT_MAX_ENCODED)
        return 0;
    gs_event ev;
    ev.kind = x->kind;
    ev.fd_kind = x->fd_kind;
    ev.reserved = 0;
    ev.fd = x->fd;
    ev.str = x->str;
    ev.tid = 0;
    gs_calib_span(&g_cal, x->ts, x->dur, &ev.ts, &ev.dur);
    ev.bytes = x->bytes;
    ev.ret = x->ret;
    ev.offset = x->offset;
    ev.aux = x->aux;
    ev.aux2 = x->aux2;
    ev.stream = ev.corr = 0;
    ev.dev = ev.stack = ev.stack_weight = ev.reserved2 = 0;
    if (gs_encode_event(&g_enc, &ev) != GS_OK)
        return 0;
    g_frame_events++;
    return 1;
}

/* RATIONALE: a run is handed to the encoder in pieces of at most this
 * many events (a REPEATS record each: 2-3 bytes of kind and count per
 * piece); the columns are used under the output lock only. */
#define RUN_MAX 4096
static uint8_t g_run_gaps[RUN_MAX * GS_RUNCOLS_MAX_VARINT + 1];
static uint8_t g_run_durs[RUN_MAX * GS_RUNCOLS_MAX_VARINT + 1];

/* two words compared at once (GCC vector extension: SSE2 on x86-64) */
typedef uint64_t gs_v2 __attribute__((vector_size(16)));

static inline gs_v2 load_v2(const void *p)
{
    gs_v2 v;
    memcpy(&v, p, sizeof v);
    return v;
}

/* gs_calib_span, out of put_repeats' loop (its rare case) */
static __attribute__((noinline)) void calib_span_slow(uint64_t raw_ts, uint64_t raw_dur,
                                                      uint64_t *ts, uint64_t *dur)
{
    gs_calib_span(&g_cal, raw_ts, raw_dur, ts, dur);
}

/* Records t.. of ring r that repeat the frame's last event (gs_encode_repeats:
 * the same in every field but ts, dur and offset, the offset continuing, no
 * stack), encoded as one run; returns the first record not taken (t when
 * none). Output must be alive and the frame's last TID tid's.
 * RATIONALE: a busy loader's reads are mostly this; per event it costs the
 * compare of five words of the record, two clock conversions and the gap's
 * and duration's varints, written in the same pass into the run's two
 * columns (gs_runcols.h; docs/performance.md, "The whole cost per event"),
 * where put_rec_fast built and checked a whole gs_event. Out of line, so
 * that its loop has the registers to itself. */
static __attribute__((noinline)) uint64_t put_repeats(uint32_t tid, const gs_ring *r, uint64_t t,
                                                       uint64_t h)
{
    const gs_repeat_key *k = &g_enc.last;
    if (!k->valid || g_enc.nrec == 0 || g_enc_tid != tid || k->dev || k->stream || k->corr ||
        k->aux2 > UINT32_MAX || k->kind > 0xff)
        return t;
    const gs_rec *x0 = &r->ev[t & r->mask];
    if (x0->kind != k->kind || x0->fd != k->fd || x0->bytes != k->bytes ||
        !plain_io_kind(k->kind))
        return t; /* the common miss, before building anything */
    /* the record every one of the run must be, but for ts, dur and offset */
    gs_rec want;
    memset(&want, 0, sizeof want);
    want.kind = (uint8_t)k->kind;
    want.fd_kind = k->fd_kind;
    want.fd = k->fd;
    want.str = k->str;
    want.aux2 = (uint32_t)k->aux2;
    want.bytes = k->bytes;
    want.ret = k->ret;
    want.aux = k->aux;
    /* the offset: compared (and advanced) only where the kind carries one,
     * and only while it stays below 2^63 (a run stops short of that; the
     * codec's next_offset would keep a negative one) */
    const int has_off = (gs_kind_fields(k->kind) & GS_F_OFFSET) != 0;
    const int64_t off0 = g_enc.next_off;
    const uint64_t step = has_off && off0 >= 0 && want.ret > 0 ? (uint64_t)want.ret : 0;
    uint64_t span = UINT64_MAX; /* events whose offsets stay below 2^63 */
    if (step)
        span = ((uint64_t)INT64_MAX - (uint64_t)off0) / step + 1;
    want.offset = has_off ? off0 : 0;
    /* three 16-byte pieces compared at once: kind..aux2, bytes and ret,
     * offset and aux (the offset masked out where the kind has none) */
    const gs_v2 w0 = load_v2(&want), w2 = load_v2(&want.bytes);
    gs_v2 w3 = load_v2(&want.offset);
    const gs_v2 m3 = {has_off ? ~0ull : 0, ~0ull}, st3 = {step, 0};
    const uint64_t tsc0 = g_cal.tsc0, mono0 = g_cal.mono0, mult = g_cal.mult;
    /* gs_calib_ts and gs_calib_dur's common case is a stamp within 2^32
     * ticks after tsc0 and a duration below 2^32: one test on the two
     * differences' high bits, with no_fast's set when there is no rate (or a
     * tsc0 so close to 2^64 that a stamp below it could pass) */
    const uint64_t no_fast = mult && tsc0 <= UINT64_MAX - (1ull << 32) ? 0 : ~0ull;
    const gs_rec *const ev = r->ev;
    const uint64_t mask = r->mask;
    const uint64_t start = t;
    while (t < h) {
        size_t lim = gs_encode_repeats_room(&g_enc);
        if (lim == 0)
            return t; /* the frame is full: the rest goes the long way */
        if (lim > RUN_MAX)
            lim = RUN_MAX;
        if (lim > span - (t - start))
            lim = (size_t)(span - (t - start));
        if (lim == 0)
            break;
        const uint64_t stop = h - t > lim ? t + lim : h;
        const uint64_t from = t;
        /* the run's state in locals, which the compiler keeps in registers */
        uint8_t *gp = g_run_gaps, *dp = g_run_durs;
        uint64_t end = g_enc.prev_end, last_ts = 0;
        for (; t < stop; t++) {
            const gs_rec *x = &ev[t & mask];
            const gs_v2 d = (load_v2(x) ^ w0) | (load_v2(&x->bytes) ^ w2) |
                            ((load_v2(&x->offset) & m3) ^ w3);
            if (d[0] | d[1])
                break;
            w3 += st3;
            const uint64_t xts = x->ts, du = x->dur, dt = xts - tsc0;
            uint64_t ts, dur;
            if (GS_LIKELY(((dt | du | no_fast) >> 32) == 0)) {
                ts = mono0 + (uint64_t)(((unsigned __int128)dt * mult) >> 32);
                dur = (uint64_t)(((unsigned __int128)du * mult) >> 32);
            } else {
                calib_span_slow(xts, du, &ts, &dur);
            }
            GS_RUNCOLS_ADD(gp, dp, end, last_ts, ts, dur);
        }
        const size_t n = (size_t)(t - from);
        if (n == 0)
            break;
        const gs_runcols c = {g_run_gaps, g_run_durs, gp, dp, end, last_ts};
        gs_encode_repeats_cols(&g_enc, &c, n); /* n is within the room: all of it */
        g_frame_events += n;
        g_frame_run_events += n;
        if (t < h && n < lim)
            break; /* a record that is not a repeat */
    }
    return t;
}

typedef struct drain_pass {
    uint32_t n;       /* rings in the snapshot */
    uint64_t now;     /* CLOCK_MONOTONIC of the snapshot */
    int final;        /* the last drain (DROPS always written) */
    int finish;       /* also the DROPS record and the frame (finish_pass) */
} drain_pass;

static uint64_t count_dropped(uint32_t n, uint64_t *base);

/* The end of a drain: a DROPS record when the counts moved (always in the
 * last), and the pending frame written. */
static void finish_pass(const drain_pass *d)
{
    uint64_t base;
    uint64_t dropped = count_dropped(d->n, &base);
    if (gs_out_alive() && (d->final || dropped != g_rep_dropped || g_lost != g_rep_lost)) {
        gs_event ev;
        gs_event_clear(&ev);
        ev.kind = GS_K_DROPS;
        ev.ts = d->now;
        ev.aux = dropped;
        ev.aux2 = g_lost;
        put_event((uint32_t)atomic_load(&gs_pid), &ev);
        g_rep_dropped = dropped;
        g_rep_lost = g_lost;
    }
    gs_frame_flush_locked();
}

/* Each live ring's slot, and the string log, mapped further ahead of their
 * use (gs_live_keep_ahead): at the end of each drain, and alone at a
 * wake-up for pages only (gs_writer_poke_map). Under the output lock. */
static void keep_rings_ahead(void)
{
    const uint32_t n = gs_ring_count();
    for (uint32_t i = 0; i < n; i++) {
        gs_ring *r = gs_ring_at(i);
        if (r && atomic_load_explicit(&r->state, memory_order_acquire) == GS_RING_LIVE)
            gs_live_keep_ahead(r, atomic_load_explicit(&r->head, memory_order_acquire));
    }
    gs_live_keep_log_ahead();
}

/* The rings' part of a drain: thread records and every event up to the
 * snapshot of heads. Runs where the trace file lives (gs_out_run): the
 * /proc reads of thread_info and the mappings a stack needs open files.
 * RATIONALE: a ring's tail moves only once its records are in the file
 * (commit_tails, after each frame is written), so that [tail, head) is
 * exactly what a reader must recover from the live file after a crash. */
static void drain_rings(void *arg)
{
    drain_pass *d = arg;
    const int sample = gs_cpu_periodic_due(d->now);
    for (uint32_t i = 0; i < d->n; i++) {
        if (g_states[i] == GS_RING_FREE)
            continue;
        gs_ring *r = gs_ring_at(i);
        uint64_t t = atomic_load_explicit(&r->tail, memory_order_relaxed);
        uint64_t h = g_heads[i];
        thread_info(r, g_states[i] == GS_RING_LIVE, h != t, d->now, sample);
        /* output stays alive unless put_event writes a frame */
        int alive = gs_out_alive();
        const uint32_t tid = r->tid;
        while (t < h) {
            const uint64_t run_end = alive ? put_repeats(tid, r, t, h) : t;
            if (run_end == t) {
                const gs_rec *x = &r->ev[t & r->mask];
                if (!alive || !put_rec_fast(tid, x)) {
                    gs_event ev;
                    to_event(x, &ev);
                    put_event(tid, &ev); /* may write a frame: commits what is before */
                    alive = gs_out_alive();
                }
                t++;
            } else {
                t = run_end;
            }
            g_pend_tail[i] = t;
            if (!g_touched[i]) {
                g_touched[i] = 1;
                g_touched_list[g_ntouched++] = i;
            }
        }
    }
    gs_cpu_periodic(d->now, gs_put_event); /* every thread's clocks, after its drained events */
    if (!d->final)
        keep_rings_ahead();
    if (d->finish)
        finish_pass(d);
}

/* Drops of every ring, and of threads without one; base: all but those of
 * the rings in the live file (a reader adds theirs). */
static uint64_t count_dropped(uint32_t n, uint64_t *base)
{
    uint64_t all = g_dropped_dead + gs_ring_dropped_noring();
    *base = all;
    for (uint32_t i = 0; i < n; i++) {
        gs_ring *r = gs_ring_at(i);
        if (!r || atomic_load_explicit(&r->state, memory_order_relaxed) == GS_RING_FREE)
            continue;
        uint64_t dr = atomic_load_explicit(&r->dropped, memory_order_relaxed);
        all += dr;
        if (!gs_live_owns(r))
            *base += dr;
    }
    return all;
}

void gs_drain_locked(int final)
{
    if (gs_out_stuck())
        return;
    int depth = gs_t_depth;
    gs_t_depth = 1;
    uint32_t n = gs_ring_count();
    for (uint32_t i = 0; i < n; i++) {
        gs_ring *r = gs_ring_at(i);
        g_states[i] = r ? atomic_load_explicit(&r->state, memory_order_acquire) : GS_RING_FREE;
        g_heads[i] = r ? atomic_load_explicit(&r->head, memory_order_acquire) : 0;
    }
    /* the calibration pair is taken after every head: each stamp drained
     * now is older than it */
    gs_calib_point(&g_cal);
    gs_live_calib(&g_cal);
    /* a source's drain calls its library, which belongs in the program's
     * table; a writer in its own runs only while no source has started, and
     * then the whole pass is one hand-off to the file thread.
     * RATIONALE: one futex round trip and two thread switches per drain
     * fewer (docs/performance.md, "Fewer system calls per drain") */
    const int own = gs_out_own_table();
    drain_pass d = {n, gs_mono_ns(), final, own};
    if (final)
        gs_cpu_periodic_force(); /* the last sample closes every thread's last interval */
    gs_out_run(drain_rings, &d);
    if (gs_out_stuck()) {
        gs_t_depth = depth;
        return;
    }
    if (!own) {
        gs_sources_drain(final);
        finish_pass(&d);
    }
    uint64_t base;
    /* dead threads' rings, now written, go back to the pool */
    for (uint32_t i = 0; i < n; i++) {
        if (g_states[i] != GS_RING_DEAD)
            continue;
        gs_ring *r = gs_ring_at(i);
        if (atomic_load_explicit(&r->tail, memory_order_relaxed) != g_heads[i])
            continue;
        g_dropped_dead += atomic_load_explicit(&r->dropped, memory_order_relaxed);
        gs_ring_recycle(r);
    }
    count_dropped(n, &base);
    gs_live_counts(base, g_lost, gs_stacks_every());
    gs_t_depth = depth;
}

const gs_calib *gs_writer_calib(void)
{
    return &g_cal;
}

uint64_t gs_writer_lost(void)
{
    return g_lost;
}

int gs_writer_alone(void)
{
    return atomic_load(&g_table) == 1;
}

void gs_writer_set_final(void)
{
    g_final = 1;
}

int gs_writer_is_final(void)
{
    return g_final;
}

/* ---- the thread ---------------------------------------------------------------- */

/* RATIONALE: once a second thread shares the program's descriptor table,
 * the kernel takes and drops a reference on the file of every I/O call the
 * program makes (about 55 ns per call here, docs/performance.md): a
 * single-threaded program (a DataLoader worker) paid that for our writer.
 * The writer needs the program's table only for a GPU source's calls (the
 * CUDA driver's descriptors are there), so it leaves the table until a
 * source starts, when a thread of the program starts a successor in it
 * (gs_writer_share_table). It needs the file thread for every write, so it
 * stays when the trace file is in the program's table (unshare refused). */
static void choose_table(void)
{
    int expect = 0;
    if (gs_out_private() && atomic_compare_exchange_strong(&g_table, &expect, 1) &&
        gs_out_leave_table() != 0) {
        expect = 1;
        atomic_compare_exchange_strong(&g_table, &expect, 2);
    }
}

/* Disk blocks for the live file's next ring slots and string log (lock
 * held): allocated where the trace file lives, as they open the live file. */
static void live_prepare_ahead(uint32_t ahead)
{
    gs_live_space sp = {0, 0, ahead};
    if (!ahead && !gs_live_needs_blocks())
        return;
    gs_out_run(gs_live_alloc_blocks, &sp);
    if (sp.cut && !gs_out_stuck())
        gs_out_warn_space(sp.avail);
}

static void live_prepare(void)
{
    live_prepare_ahead(0);
}

void gs_writer_prepare_threads(uint32_t ahead)
{
    gs_out_lock();
    live_prepare_ahead(ahead);
    gs_out_unlock();
}

/* Whether a writer drains as it starts, or first at its tick. RATIONALE: a
 * forked child's threads have births (gs_births.h), so the first pass
 * would only take samples they no longer need, and it ran on the other
 * CPU right while the child copied its parent's pages: each copy-on-write
 * fault then interrupted that CPU to flush its TLB, about 50 a DataLoader
 * worker (docs/performance.md, "A forked Python worker"). A ring already
 * half full is drained at once all the same (its poke came before this
 * writer could wait for it). */
static int first_pass_now(void)
{
    if (!gs_births_forked())
        return 1;
    const uint32_t n = gs_ring_count();
    for (uint32_t i = 0; i < n; i++) {
        gs_ring *r = gs_ring_at(i);
        if (r && atomic_load_explicit(&r->state, memory_order_acquire) == GS_RING_LIVE &&
            atomic_load_explicit(&r->head, memory_order_acquire) -
                    atomic_load_explicit(&r->tail, memory_order_relaxed) >=
                (r->mask + 1) / 2)
            return 1;
    }
    return 0;
}

static void *writer_main(void *arg)
{
    (void)arg;
    gs_t_depth = 1;
    const uint32_t gen = atomic_load(&g_gen);
    prctl(PR_SET_NAME, "gpustarve", 0, 0, 0);
    choose_table();
    atomic_store(&g_started, 1);
    syscall(SYS_futex, &g_started, FUTEX_WAKE_PRIVATE, 1 << 30, NULL, NULL, 0);
    const int own = gs_out_own_table();
    unsigned ms = gs_cfg.flush_ms;
    /* a poke from here on (a ring half full while this writer starts) is
     * answered by the first wait, not lost */
    uint32_t seen = gs_wake_seen(), mseen = gs_wake_map_pokes();
    /* RATIONALE: a first calibration segment a few ms after start, so that
     * the records of a process that dies before its first flush can still
     * be put on the CLOCK_MONOTONIC time line by a reader of its live file;
     * a writer started late has the start-up's point that far back already */
    const uint64_t since = gs_mono_ns() - g_cal.mono1;
    if (since < 3000000u) {
        struct timespec first = {0, (long)(3000000u - since)};
        nanosleep(&first, NULL);
    }
    gs_out_lock();
    gs_calib_point(&g_cal);
    gs_live_calib(&g_cal);
    if (!g_final && first_pass_now())
        gs_drain_locked(0); /* started late: what the rings hold already */
    live_prepare();
    gs_out_unlock();
    uint64_t due = gs_mono_ns() + (uint64_t)ms * 1000000u; /* the next drain */
    while (!atomic_load(&g_stop) && atomic_load(&g_gen) == gen) {
        const uint64_t now = gs_mono_ns(), left = due > now ? due - now : 0;
        struct timespec ts = {(time_t)(left / 1000000000u), (long)(left % 1000000000u)};
        gs_wake_wait(seen, &ts);
        /* a poke while this pass runs: one more pass */
        const uint32_t s = gs_wake_seen(), m = gs_wake_map_pokes();
        const int pages_only = s != seen && s - seen == m - mseen && gs_mono_ns() < due;
        seen = s;
        mseen = m;
        if (atomic_load(&g_stop) || atomic_load(&g_gen) != gen)
            break;
        if (pages_only) {
            gs_out_lock();
            if (!g_final)
                keep_rings_ahead();
            gs_out_unlock();
            continue;
        }
        if (!own)
            gs_sources_tick(); /* CUPTI calls: before the lock, never under it */
        gs_out_lock();
        if (!g_final) {
            gs_drain_locked(0);
            live_prepare();
        }
        gs_out_unlock();
        due = gs_mono_ns() + (uint64_t)ms * 1000000u;
    }
    if (atomic_load(&g_gen) != gen)
        gs_writer_poke(); /* a wake-up this writer took was its successor's */
    return NULL;
}

static int start_writer_thread(void);

void gs_writer_share_table(void)
{
    if (gs_out_own_table() || atomic_exchange(&g_table, 2) != 1 || atomic_load(&g_stop))
        return; /* already there, not chosen yet (it will stay), or not from the program */
    atomic_fetch_add(&g_gen, 1);
    if (start_writer_thread() != 0)
        atomic_fetch_sub(&g_gen, 1); /* the one in its own table goes on */
    gs_wake_all();
}

static int start_writer_thread(void)
{
    atomic_store(&g_started, 0);
    int rc = gs_thread_start(writer_main, NULL);
    if (rc != 0)
        atomic_store(&g_started, 1); /* nothing to wait for */
    return rc;
}

int gs_writer_start(void)
{
    atomic_store(&g_stop, 0);
    return start_writer_thread();
}

void gs_writer_wait_started(unsigned ms)
{
    for (unsigned i = 0; i < ms && !atomic_load(&g_started); i++) {
        struct timespec ts = {0, 1000000L};
        syscall(SYS_futex, &g_started, FUTEX_WAIT_PRIVATE, 0, &ts, NULL, 0);
    }
}

void gs_writer_stop(void)
{
    atomic_store(&g_stop, 1);
    gs_wake_all();
}

void gs_writer_after_fork_child(void)
{
    pthread_mutex_init(&g_lock, NULL);
    atomic_store(&g_owner, 0);
    atomic_store(&g_table, 0); /* the child's writer chooses again */
    gs_encoder_reset(&g_enc);
    g_enc_tid = 0;
    g_frame_events = g_frame_run_events = 0;
    g_lost = g_dropped_dead = g_rep_dropped = g_rep_lost = 0;
    memset(g_touched, 0, sizeof g_touched);
    g_ntouched = 0;
    g_final = 0;
    /* a fresh file defines every string, stack and mapping again */
    madvise(g_emitted, GS_STR_MAX_IDS / 8, MADV_DONTNEED);
    memset(g_stk_emitted, 0, sizeof g_stk_emitted);
    gs_stacks_after_fork_child();
}
