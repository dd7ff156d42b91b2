/* an_copies.h — the two witnesses of a host copy's memory kind.
 *
 * The CUDA hooks classify a copy's host memory from the collector's pinned
 * registry; CUPTI's memcpy record says what the driver saw (srcKind /
 * dstKind). CUPTI's word wins: a host copy record carrying a correlation id
 * waits here until the GPU record with the same id arrives (or the file
 * ends), and is then classified by it. The two come in either order: the
 * writer may write CUPTI's record of a copy in a batch before the one that
 * drained the hook's record from its thread's ring (a busy machine widens
 * that window), so a GPU record whose host copy has not come yet waits in
 * a second table for it, with CUPTI's word (an_copy.host_mem). How often
 * the two disagreed is counted per process (an_proc.copy_kinds).
 *
 * Must never: hold more than AN_COPIES_MAX waiting copies (past that they
 * are classified by the host's word at once), or know about timelines.
 */
#ifndef AN_COPIES_H
#define AN_COPIES_H

#include <stddef.h>
#include <stdint.h>

/* RATIONALE: a copy waits about one CUPTI delivery period (a second); 64k
 * of them covers 65k copies per second per process, far above what a
 * training loop issues. */
#define AN_COPIES_MAX 65536u

typedef struct an_copy {
    uint32_t corr;      /* CUDA correlation id, nonzero */
    uint8_t dir;        /* GS_DIR_HTOD or GS_DIR_DTOH */
    uint8_t host_mem;   /* the hooks' word: GS_MEM_* */
    long ti;            /* thread index (an_proc.th), -1 none */
    uint64_t ts, end, bytes;
} an_copy;

typedef struct an_copies {
    an_copy *v; /* open addressing by corr, corr 0 = empty */
    uint32_t cap, n;
} an_copies;

/* Keep c until its GPU record; 0, or -1 when it cannot wait (full, out of
 * memory, corr 0): classify it now. */
int an_copies_put(an_copies *t, const an_copy *c);
/* Take the copy with correlation id corr into *out: 1, or 0 when none. */
int an_copies_take(an_copies *t, uint32_t corr, an_copy *out);
/* Hand every waiting copy to fn (in no particular order) and empty t. */
void an_copies_drain(an_copies *t, void (*fn)(void *ctx, const an_copy *c), void *ctx);
void an_copies_free(an_copies *t);

/* Counts of one process: copies whose GPU record was found, and the
 * disagreements (hooks pageable & CUPTI pinned, hooks pinned & CUPTI
 * pageable). */
typedef struct an_copy_kinds {
    uint64_t matched;
    uint64_t pageable_by_hooks_pinned_by_cupti;
    uint64_t pinned_by_hooks_pageable_by_cupti;
} an_copy_kinds;

/* The memory kind to believe, counting into k: CUPTI's when it knows
 * (pinned or pageable), else the hooks'. */
unsigned an_copy_kind_decide(an_copy_kinds *k, unsigned host_mem, unsigned cupti_mem);

#endif
