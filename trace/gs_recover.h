/* gs_recover.h — reading a live file (gs_live.h): what a process recorded
 * but had not written to its trace file when it ended. Used by the trace
 * reader (gs_reader.c), which merges it after the trace file's frames.
 *
 * Allocates only in gs_recovery_open.
 */
#ifndef GS_RECOVER_H
#define GS_RECOVER_H

#include <stddef.h>
#include <stdint.h>

#include "gs_live.h"
#include "gs_trace.h"

typedef struct gs_recovery gs_recovery;

/* Which stack ids the trace file defined (a recovered record keeps its
 * stack only then). */
typedef struct gs_recovery_stacks {
    int (*defined)(void *ctx, uint32_t id);
    void *ctx;
} gs_recovery_stacks;

/* Open the live file at path for process pid, image exec_seq, whose trace
 * file is trace_size bytes long. 1 and *out on success; 0 when there is
 * none (or it holds nothing yet: a process just starting); a negative
 * gs_err when it is unreadable, damaged, of another version or another
 * image's (*out NULL, why says which, in words). */
int gs_recovery_open(gs_recovery **out, const char *path, uint64_t pid, uint32_t exec_seq,
                     uint64_t trace_size, char *why, size_t whylen);
void gs_recovery_close(gs_recovery *rc);
/* The header as read (bounded: slots_used <= slots, strlog_used <= cap). */
const gs_live_header *gs_recovery_header(const gs_recovery *rc);
/* Every complete entry of the string log, in order, to fn: GS_OK, or
 * GS_ERR_CORRUPT at an entry no collector writes (the log is cut there),
 * GS_ERR_IO. */
int gs_recovery_strings(gs_recovery *rc, gs_string_fn fn, void *ctx);
/* Up to max recovered events, all of one thread (tid set), in that thread's
 * order; 0 when done; negative gs_err. */
long gs_recovery_next(gs_recovery *rc, gs_event *out, size_t max, const gs_recovery_stacks *stk);
/* After the last gs_recovery_next: drops counted in the slots read, and
 * records that could not be recovered (torn slot, unknown kind). */
uint64_t gs_recovery_slots_dropped(const gs_recovery *rc);
uint64_t gs_recovery_skipped(const gs_recovery *rc);

#endif
