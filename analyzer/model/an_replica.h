/* an_replica.h — whether a loader's workers read the same bytes: the
 * IterableDataset that splits a stream by skipping (each worker reads
 * every record and keeps every N-th), where each worker's reading grows
 * with the number of workers (docs/report-schema.md, "Reads of the same
 * bytes").
 *
 * Must never: count one worker reading a record twice, or reads far apart
 * in time (a record read again in the next epoch), as copies.
 */
#ifndef AN_REPLICA_H
#define AN_REPLICA_H

#include "model/an_result.h"

/* Reads of one path at one offset returning the same bytes are copies
 * when distinct workers made them within this many worker batches of the
 * first (at least AN_REPLICA_MIN_NS, at most AN_REPLICA_MAX_NS). */
#define AN_REPLICA_BATCHES 8
#define AN_REPLICA_MIN_NS 50000000ull   /* 50 ms */
#define AN_REPLICA_MAX_NS 5000000000ull /* 5 s */
/* At most this many reads are compared (32 bytes each, 64 MiB): past it,
 * each worker's first reads, an equal share each. */
#define AN_REPLICA_MAX_READS (1u << 21)

/* The storage's speed with k reads in flight is told only for a k whose
 * reads took this share of all the reads' time. */
#define AN_SPEED_MIN_SHARE 0.05

/* Sets res->read_copies and res->read_positioned from the positioned reads
 * of res's worker processes (an_proc.preads), and res->read_speed and
 * read_inflight from their starts and durations; all 0 when they have none
 * (or a loader of threads: one process). Returns 0, -1 out of memory. */
int an_replica(an_result *res);

#endif
