/* an_timeline.h — the streaming sweep that turns one process's intervals
 * (GPU activity per stream, what each host thread waits on) into cumulative
 * time per attribution class, read out at query instants ("snapshots").
 *
 * Responsible for: exact interval union and the disjoint split of every
 * instant into one class (GPU busy classes by priority, else idle cut by the
 * querying thread's state: data wait > pageable copy > host), beside it
 * each thread's time inside batch fetches (whatever the GPU does), in bounded
 * memory: intervals wait in per-source queues until the sweep passes them,
 * and the sweep runs a lag window behind the newest start seen.
 *
 * A step [t0, t1) is then the difference of two snapshots taken on the same
 * source; nothing here knows about steps, files or the trace format.
 *
 * Must never: allocate per interval on the hot path (queues grow by
 * doubling), or hold more than AN_TL_PENDING_MAX intervals: past that the
 * oldest are swept, and intervals that arrive behind the sweep are clipped
 * and counted (late_ns), never silently lost.
 */
#ifndef AN_TIMELINE_H
#define AN_TIMELINE_H

#include <stddef.h>
#include <stdint.h>

/* Busy classes, in priority order: when GPU intervals of several classes
 * cover one instant, the instant goes to the lowest-numbered class. */
enum an_busy {
    AN_BUSY_COMPUTE = 0,   /* kernels (not communication) */
    AN_BUSY_COMM = 1,      /* NCCL kernels, peer-to-peer copies (an_gpu_busy) */
    AN_BUSY_H2D_PAGEABLE = 2,
    AN_BUSY_H2D_PINNED = 3,
    AN_BUSY_OTHER = 4,     /* every other copy, memsets */
    AN_NBUSY = 5,
};

/* Item classes (an_tl_add's cls). */
enum an_cls {
    AN_CLS_GPU0 = 0,                 /* + enum an_busy */
    AN_CLS_DW = AN_NBUSY,            /* host thread: data wait */
    AN_CLS_PG = AN_NBUSY + 1,        /* host thread: inside a pageable copy call */
    AN_CLS_QUERY = AN_NBUSY + 2,     /* snapshot request */
    AN_CLS_FE = AN_NBUSY + 3,        /* host thread: inside a batch fetch, whatever the GPU
                                      * does (an_snap.fetch; not a class of the split) */
};

/* Host threads whose state is tracked per process. RATIONALE: a bitmask
 * keeps the per-segment work to the threads actually waiting; the training
 * thread is among the first few threads of a process in every real run. */
#define AN_TL_MAX_SLOTS 64
/* GPU sources (device, stream) kept apart; the rest share one. */
#define AN_TL_GPU_SOURCES_MAX 1024
/* Largest number of intervals waiting in the queues before the sweep is
 * forced forward. RATIONALE: 24 bytes each, so at most ~48 MiB per process,
 * enough for several seconds of a very busy GPU behind the lag window. */
#define AN_TL_PENDING_MAX (2u << 20)
/* Initial and largest lag window (ns) between the newest start seen and the
 * sweep. Intervals written later than that (CUPTI buffers, long blocking
 * calls) widen it up to the cap. */
#define AN_TL_LAG_NS 1000000000ull
#define AN_TL_LAG_MAX_NS 30000000000ull

/* Cumulative time up to snapshot time t, for one querying slot. */
typedef struct an_snap {
    uint64_t t;
    uint64_t busy[AN_NBUSY]; /* GPU busy by class */
    uint64_t idle;           /* GPU idle (no GPU interval active) */
    uint64_t idle_dw;        /* idle while the slot was in data wait */
    uint64_t idle_pg;        /* idle while in a pageable copy and not in data wait */
    uint64_t fetch;          /* the slot inside a batch fetch (AN_CLS_FE), GPU busy or
                              * idle: the union of its fetch intervals */
} an_snap;

/* Receives each snapshot when the sweep passes its time. slot and qid are
 * those given to an_tl_query. */
typedef void (*an_snap_fn)(void *ctx, unsigned slot, uint64_t qid, const an_snap *s);

typedef struct an_tl an_tl;

/* Classes of the pieces an_piece_fn receives: the busy classes (enum an_busy),
 * then GPU idle cut by the watched slot's state. */
enum an_piece {
    AN_PC_DW = AN_NBUSY,        /* GPU idle, the slot in data wait */
    AN_PC_PG = AN_NBUSY + 1,    /* GPU idle, in a pageable copy call (not data wait) */
    AN_PC_HOST = AN_NBUSY + 2,  /* GPU idle, anything else */
    AN_NPC = AN_NBUSY + 3,
};

/* Receives the swept time as disjoint pieces [t0, t1) in time order, each of
 * one class (enum an_piece) as seen by the watched slot; consecutive pieces
 * of one class are merged. The same accrual as the snapshots, so the pieces
 * inside [a.t, b.t) sum to the step attribution of those two snapshots. */
typedef void (*an_piece_fn)(void *ctx, uint64_t t0, uint64_t t1, unsigned cls);

/* New engine (allocates). Returns NULL when out of memory. */
an_tl *an_tl_new(an_snap_fn on_snap, void *ctx);
void an_tl_free(an_tl *tl);

/* Source of GPU intervals for (dev, stream): a small integer, or -1 when out
 * of memory. Host slot s (0 <= s < AN_TL_MAX_SLOTS) is its own source.
 * Past AN_TL_GPU_SOURCES_MAX pairs, new ones share one source. */
int an_tl_gpu_source(an_tl *tl, uint32_t dev, uint64_t stream);

/* Add [start, end) of class cls. GPU classes go to a GPU source (from
 * an_tl_gpu_source); AN_CLS_DW/PG/FE to host slot `src`. A fetch is given
 * twice: as AN_CLS_DW (its GPU-idle part is data wait) and as AN_CLS_FE
 * (all of it is fetch time); FE takes no part in the split of an instant. Empty intervals are
 * ignored. Returns 0 or -1 (out of memory: the interval is dropped and
 * counted). Intervals of one source should come roughly in start order. */
int an_tl_add_gpu(an_tl *tl, int src, uint64_t start, uint64_t end, unsigned busy_cls);
int an_tl_add_host(an_tl *tl, unsigned slot, uint64_t start, uint64_t end, unsigned cls);
/* Ask for a snapshot of slot at time t; delivered through on_snap with qid. */
int an_tl_query(an_tl *tl, unsigned slot, uint64_t t, uint64_t qid);
/* The same, the request queued among GPU source src's intervals (from
 * an_tl_gpu_source) instead of the slot's own. RATIONALE: for t at a GPU
 * record's start or end, which is in order there and may lie far behind
 * the slot's newest interval (CUPTI's records come late): a request out of
 * order costs a block move. */
int an_tl_query_on(an_tl *tl, int src, unsigned slot, uint64_t t, uint64_t qid);

/* Watch host slot `slot`: every swept piece of time goes to fn (NULL: stop).
 * Set it before adding intervals; the last piece is delivered by
 * an_tl_finish. Costs one branch per sweep step when unset. */
void an_tl_set_piece_fn(an_tl *tl, unsigned slot, an_piece_fn fn, void *ctx);

/* The latest start of an item given so far (the lag window trails it). */
uint64_t an_tl_newest(const an_tl *tl);

/* Sweep what is safely behind the lag window (call after each frame). */
void an_tl_sweep(an_tl *tl);
/* Sweep everything (end of input). The engine can take more input after. */
void an_tl_finish(an_tl *tl);

typedef struct an_tl_stats {
    uint64_t items;      /* intervals and queries accepted */
    uint64_t late_items; /* arrived behind the sweep: clipped */
    uint64_t late_ns;    /* time cut off those */
    uint64_t dropped;    /* lost for lack of memory */
    uint64_t lag_ns;     /* final lag window */
    uint64_t first_ts, last_ts; /* span swept */
    uint64_t busy[AN_NBUSY], idle; /* totals over the span swept */
} an_tl_stats;
void an_tl_get_stats(const an_tl *tl, an_tl_stats *st);

#endif
