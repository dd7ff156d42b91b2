/* dump.h — the parts of `gpustarve dump` (cmd_dump.c: options, inputs, the
 * loop over files and frames), each answering one question:
 *
 *   how is one event (or a process header) printed?   dump_event.c
 *   how are NVTX push/pop and start/end paired?        dump_range.c
 *   what does --summary count, per process and total?  dump_summary.c
 *
 * Text lines and JSON Lines (out_json.h's writer) come from the same code.
 *
 * Must never: allocate per event or per line, or print diagnostics to
 * stdout.
 */
#ifndef DUMP_H
#define DUMP_H

#include <stddef.h>
#include <stdint.h>

#include "cmd/cli_util.h"
#include "gs_trace.h"

/* ---- dump_event.c ---- */

/* The "process" line (JSON) or the "# process ..." lines and the column
 * header (text). */
void dump_process(gs_out *o, int json, const char *path, const gs_proc_info *pi);
/* One event line. base: ts of the process's first event (text times are
 * relative to it). */
void dump_event(gs_out *o, int json, const gs_reader *r, uint64_t pid, uint64_t base,
                const gs_event *ev);
/* One "range" line: an NVTX range of thread tid named by string id str in
 * domain (string id, 0 = default), from ts to end_ts; closed 0: never
 * closed (no duration). */
void dump_range_line(gs_out *o, int json, const gs_reader *r, uint64_t pid, uint64_t base,
                     uint32_t tid, uint32_t str, uint64_t domain, uint64_t ts, uint64_t end_ts,
                     int closed);
/* argv of a process header: a JSON array value, or the words joined by
 * spaces (escaped). */
void dump_argv_json(gs_jw *w, const gs_proc_info *pi);
void dump_argv_text(gs_out *o, const gs_proc_info *pi);

/* ---- dump_range.c ---- */

typedef struct dump_ranges dump_ranges;
dump_ranges *dump_ranges_new(void);
void dump_ranges_free(dump_ranges *g);
/* An nvtx_push/pop/start/end record of process pid: a "range" line at each
 * closing record that finds its opening one. */
void dump_ranges_event(dump_ranges *g, gs_out *o, int json, const gs_reader *r, uint64_t pid,
                       uint64_t base, const gs_event *e);
/* End of the process: the ranges never closed, by start time. */
void dump_ranges_finish(dump_ranges *g, gs_out *o, int json, const gs_reader *r, uint64_t pid,
                        uint64_t base);

/* ---- dump_summary.c ---- */

typedef struct dump_summary dump_summary;
/* pids: every traced pid of the input (for "main" / "fork of" / "child of"). */
dump_summary *dump_summary_new(const uint64_t *pids, size_t npids);
void dump_summary_free(dump_summary *s);
void dump_summary_begin(dump_summary *s);
void dump_summary_event(dump_summary *s, const gs_event *ev);
/* The process's summary, then its numbers go into the totals. */
void dump_summary_end(dump_summary *s, gs_out *o, int json, const char *path,
                      const gs_proc_info *pi, const gs_reader *r);
/* A file that could not be read (or not to its end). */
void dump_summary_damaged(dump_summary *s);
void dump_summary_totals(dump_summary *s, gs_out *o, int json);

#endif
