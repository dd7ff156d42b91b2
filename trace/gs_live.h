/* gs_live.h — the live file: what a process has recorded but not yet written
 * to its trace file, kept where it outlives the process.
 *
 * Responsible for: the layout of <trace>.live (docs/trace-format.md, "Live
 * files"), which the collector maps shared and writes through: a header
 * (calibration of the hook clock, counters, how the process ended), a log of
 * the strings the process interned, and one slot per recording thread
 * holding that thread's ring of records. A process killed by SIGKILL or a
 * crash leaves its rings in the page cache; a reader recovers the records
 * its trace file lacks (trace/gs_recover.c).
 *
 * Must never: depend on anything but the C library; change a field's
 * offset without changing GS_LIVE_VERSION (and the reader's checks).
 */
#ifndef GS_LIVE_H
#define GS_LIVE_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "gs_format.h"

#define GS_LIVE_MAGIC "GSLIVE\0" /* 8 bytes with its NUL */
/* <trace file without GS_TRACE_SUFFIX> + GS_LIVE_SUFFIX */
#define GS_LIVE_SUFFIX ".live"
#define GS_LIVE_VERSION 1
#define GS_LIVE_HEADER_SIZE 4096u
/* Bounds a reader applies before it trusts a field of a live file. */
#define GS_LIVE_SLOTS_MAX 4096u
#define GS_LIVE_RING_EVENTS_MAX (1u << 24)
#define GS_LIVE_STRLOG_MAX (256ull << 20)
/* String ids a collector hands out are below this (each logged once). */
#define GS_LIVE_STRING_IDS_MAX (1u << 22)

/* One record as a hook appends it to its thread's ring: 64 bytes, one cache
 * line. The writer turns it into a gs_event (gs_rec_to_event, then the hook
 * clock converted to ns).
 * RATIONALE: aux2 is 32 bits because every hooked call's aux2 (open mode,
 * mmap flags, preadv2 flags, statx mask) fits; writer-made kinds that need 64
 * bits (FAULTS, DROPS) never pass through a ring. */
typedef struct gs_rec {
    uint8_t kind;    /* enum gs_kind (ids < 256) */
    uint8_t fd_kind; /* GS_FDK_* */
    uint16_t stack;  /* sampled call stack: id (bits 0-14) | 0x8000 "stands for M calls"; 0 = none */
    int32_t fd;
    uint32_t str;  /* string id, 0 = none */
    uint32_t aux2;
    uint64_t ts;  /* hook clock: TSC ticks or CLOCK_MONOTONIC ns */
    uint64_t dur; /* hook clock units */
    uint64_t bytes;
    int64_t ret;
    int64_t offset;
    uint64_t aux;
} gs_rec;
_Static_assert(sizeof(gs_rec) == 64, "a ring entry is one cache line");

#define GS_REC_STACK_ID(s) ((uint32_t)(s)&0x7fffu)
#define GS_REC_STACK_SAMPLED 0x8000u

enum { GS_RING_FREE = 0, GS_RING_LIVE = 1, GS_RING_DEAD = 2 };

/* A thread's ring: a single-producer / single-consumer queue of records.
 * The producer (the thread) fills ev[head & mask] and then advances head;
 * the consumer (the collector's writer) advances tail only once the records
 * before it are in the trace file. So [tail, head) is exactly what the trace
 * file lacks. In a live file the same struct is a slot's first bytes. */
typedef struct gs_ring {
    /* producer line */
    _Atomic uint64_t head; /* next slot the thread fills (store-release) */
    uint64_t cached_tail;  /* producer's last view of tail */
    _Atomic uint64_t dropped; /* records dropped (ring full) since the slot was taken */
    /* the head at which the thread wakes the writer to map more of the slot
     * (the collector's, preload/gs_livefile.c gs_live_keep_ahead); 0 none */
    _Atomic uint64_t map_poke;
    /* bytes from the slot's start known to be in the process's page tables
     * (the collector's populate, or a store of the thread's that took the
     * page's first-touch fault), only ever raised; UINT64_MAX for a ring
     * outside the live file. And the pages of the collector's own live
     * file whose first-touch fault this thread took (its ring's and the
     * string log's): its major faults as recorded leave them out
     * (preload/gs_livefile.c, gs_live_first_touch). Readers ignore both. */
    _Atomic uint64_t mapped;
    _Atomic uint64_t own_faults;
    char pad0[16];
    /* consumer line */
    _Atomic uint64_t tail; /* first record not yet written to the trace file */
    char pad1[56];
    /* owner and drainer-private fields */
    _Atomic uint32_t state; /* GS_RING_* */
    uint32_t tid;
    uint64_t mask;     /* capacity - 1 */
    uint32_t name_id;  /* drainer: last THREAD name emitted, 0 = none yet */
    uint32_t reserved;
    uint64_t faults;   /* drainer: last major-fault count emitted */
    char name0[16];    /* thread name at attach (PR_GET_NAME) */
    /* where tail moves once the frame being written is in the trace file
     * (valid while the live header's pend_end is set, see there) */
    _Atomic uint64_t pend_tail;
    char pad2[8];
    gs_rec ev[];
} gs_ring;
_Static_assert(sizeof(gs_ring) == 192, "ring header is 192 bytes on disk");
_Static_assert(offsetof(gs_ring, tail) == 64 && offsetof(gs_ring, state) == 128 &&
                   offsetof(gs_ring, name0) == 160,
               "ring header layout is part of the live file format");

/* How the process ended, as far as the collector could record it. */
enum gs_live_end {
    GS_LIVE_RUNNING = 0, /* no end recorded: running, or killed by a signal not caught (SIGKILL) */
    GS_LIVE_EXITED = 1,  /* the EXIT record was written to the trace file */
    GS_LIVE_SIGNAL = 2,  /* a fatal signal (end_status) was caught: crash or abort */
    GS_LIVE_EXEC = 3,    /* the image exec'd (EXEC record written) */
};

/* The live file's first GS_LIVE_HEADER_SIZE bytes. Fields are written by the
 * collector through a shared mapping; a reader takes them as they are. */
typedef struct gs_live_header {
    char magic[8];
    uint32_t byte_order; /* GS_BYTE_ORDER_MARK */
    uint16_t version;    /* GS_LIVE_VERSION */
    uint16_t reserved0;
    uint32_t header_size; /* GS_LIVE_HEADER_SIZE */
    uint32_t flags;       /* GS_HDR_F_TSC: ts/dur in records are TSC ticks */
    uint64_t pid;
    uint32_t exec_seq;
    uint32_t slots;       /* ring slots laid out in the file */
    uint64_t slot_bytes;  /* bytes per slot: sizeof(gs_ring) + capacity * 64 */
    uint64_t slots_off;   /* file offset of slot 0 */
    uint64_t strlog_off;  /* file offset of the string log */
    uint64_t strlog_cap;  /* bytes laid out for it */
    _Atomic uint32_t slots_used;   /* slots handed out so far (from 0) */
    _Atomic uint32_t stack_every;  /* what a sampled record stands for */
    _Atomic uint64_t strlog_used;  /* bytes of the log handed out */
    /* calibration of the hook clock: mono = mono0 + (raw - tsc0) *
     * (mono1 - mono0) / (tsc1 - tsc0); a seqlock (odd while written) */
    _Atomic uint32_t cal_seq;
    uint32_t reserved1;
    uint64_t cal_tsc0, cal_mono0, cal_tsc1, cal_mono1;
    /* counters as of the writer's last pass: dropped outside the slots
     * (threads without a slot, recycled slots), lost (output failed) */
    _Atomic uint64_t dropped_base;
    _Atomic uint64_t lost;
    _Atomic uint32_t end;    /* enum gs_live_end */
    uint32_t end_status;     /* the signal, or the exit status */
    uint64_t end_ts;         /* CLOCK_MONOTONIC of the end */
    /* RATIONALE: a frame is written, then the tails move; a death between
     * the two would leave its records both in the trace file and in the
     * rings. While a frame is written pend_end holds the trace file's size
     * once it is complete, and each ring with records in it its pend_tail:
     * a reader whose trace file is at least pend_end long takes pend_tail
     * as the tail. 0 when no frame is being written. */
    _Atomic uint64_t pend_end;
} gs_live_header;
_Static_assert(sizeof(gs_live_header) <= GS_LIVE_HEADER_SIZE, "live header fits its page");
_Static_assert(offsetof(gs_live_header, cal_seq) == 88 && offsetof(gs_live_header, end) == 144,
               "live header layout is part of the format");

/* A string log entry: id (written last: 0 = not complete), len, then len
 * bytes, padded to 8. */
typedef struct gs_live_str {
    _Atomic uint32_t id;
    uint32_t len;
    char bytes[];
} gs_live_str;
#define GS_LIVE_STR_SIZE(len) ((sizeof(gs_live_str) + (size_t)(len) + 7u) & ~(size_t)7u)

/* The gs_event a ring record stands for: the parked fields of the CUDA and
 * NVTX kinds moved back (docs/trace-format.md, "Live files"). ts and dur are
 * left in the hook clock, stack and stack_weight at 0: the caller converts
 * and decides them. */
struct gs_event;
void gs_rec_to_event(const gs_rec *x, struct gs_event *ev);

/* ns of CLOCK_MONOTONIC for a hook-clock stamp / duration, given a
 * calibration pair (tsc: 0 when the hook clock is already ns). */
uint64_t gs_live_ts(int tsc, uint64_t tsc0, uint64_t mono0, uint64_t tsc1, uint64_t mono1,
                    uint64_t raw);
uint64_t gs_live_dur(int tsc, uint64_t tsc0, uint64_t mono0, uint64_t tsc1, uint64_t mono1,
                     uint64_t raw);

#endif
