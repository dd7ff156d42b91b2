/* an_colls.h — the collectives a process's GPU ran: each communication
 * kernel (NCCL's: an_kernel_is_comm) with its stream, its name and two
 * snapshots of the process's timeline, at its start and at its end, for
 * the matching of collectives across the ranks of a job
 * (model/an_collectives.h; docs/report-schema.md, "Ranks and the
 * straggler").
 *
 * Memory rule: a few per step, like the step-boundary candidates; past
 * AN_COLLS_MAX a process's further collectives are counted, not kept.
 *
 * Must never: print, or keep a kernel that is not communication.
 */
#ifndef AN_COLLS_H
#define AN_COLLS_H

#include <stddef.h>
#include <stdint.h>

#include "base/an_index.h"
#include "load/an_timeline.h"

/* RATIONALE: 128 bytes each: at most 8 MiB a process, 640 collectives a
 * step over 100 steps and more (a large FSDP model has a few hundred). */
#define AN_COLLS_MAX 65536
/* Distinct streams and names kept: a collective of another is not kept.
 * RATIONALE: each is looked up among those kept, one by one; a process runs
 * collectives on a few streams under a few dozen names, while a hostile file
 * could name thousands (docs/collector-safety.md). */
#define AN_COLLS_NAMES_MAX 1024

/* A snapshot query of a collective is told from a step-boundary candidate's
 * by this bit of its query id (an_tl_query's qid). */
#define AN_COLL_QID (1ull << 63)

/* The part of a snapshot (an_snap) the collectives need, cumulative ns:
 * GPU busy by class (pinned and other copies as one) and GPU idle in data
 * wait and in pageable copy calls. */
typedef struct an_coll_snap {
    uint64_t compute, comm, pageable, other, idle_dw, idle_pg;
} an_coll_snap;

typedef struct an_coll {
    uint64_t ts, end;  /* the kernel on the GPU, on its host's clock */
    uint32_t tid;      /* the host thread the snapshots split GPU idle time by; 0: none */
    uint16_t stream;   /* index into an_colls.streams */
    uint16_t name;     /* index into an_colls.names */
    uint8_t have;      /* bit 0: snapshot a delivered, bit 1: b */
    uint8_t slot;      /* tid's timeline slot (the pass's; AN_TL_MAX_SLOTS of them) */
    uint8_t end_asked; /* the snapshot at its end is asked for */
    uint8_t pad[5];
    an_coll_snap a, b; /* the timeline at ts and at end */
} an_coll;

typedef struct an_coll_stream {
    uint32_t dev;
    uint32_t last; /* its latest collective's index + 1; 0: none yet */
    uint64_t stream;
} an_coll_stream;

typedef struct an_colls {
    an_coll *v;
    size_t n, cap;
    uint64_t over;            /* collectives past AN_COLLS_MAX: not kept */
    an_coll_stream *streams;  /* the streams that ran collectives, in first-seen order (at most
                               * AN_COLLS_NAMES_MAX, as the names) */
    size_t nstreams, capstreams;
    char **names;             /* base names (an_kernel_base), in first-seen order */
    size_t nnames, capnames;
    an_index by_str;          /* the trace's string id -> index into names */
} an_colls;

/* Keep one collective: the kernel [ts, end) on (dev, stream) whose name is
 * string id str (name: its text, NULL when not defined); tid: the thread
 * its snapshots will be asked for (0: none). Returns its index, or -1 when
 * it is not kept (past AN_COLLS_MAX, or out of memory); *prev: the index
 * of the collective kept before it on the same stream, -1. */
long an_colls_add(an_colls *c, uint64_t ts, uint64_t end, uint32_t dev, uint64_t stream,
                  uint32_t str, const char *name, uint32_t tid, long *prev);

/* The query id of collective i's snapshot at its start (at_end 0) or end. */
static inline uint64_t an_coll_qid(size_t i, int at_end)
{
    return AN_COLL_QID | (uint64_t)i << 1 | (uint64_t)(at_end != 0);
}

/* A snapshot the timeline delivered for query id qid (AN_COLL_QID set). */
void an_colls_snap(an_colls *c, uint64_t qid, const an_snap *s);
/* Collective k's snapshot at its start (at_end 0) or end as an an_snap
 * (the classes it keeps; t its start or end). */
void an_coll_snap_get(const an_coll *k, int at_end, an_snap *out);

void an_colls_free(an_colls *c);

#endif
