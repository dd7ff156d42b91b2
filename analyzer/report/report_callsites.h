/* report_callsites.h — the call sites behind a run's findings, written:
 * a text block through the caller's output function (the terminal report,
 * the HTML page, dump), and one JSON value (the report, dump).
 *
 * Must never: hold state between calls.
 */
#ifndef REPORT_CALLSITES_H
#define REPORT_CALLSITES_H

#include <stddef.h>

#include "base/out_json.h"
#include "model/an_callsites.h"

/* Where a text block goes: n bytes of s (no NUL needed). */
typedef void (*rep_cs_emit_fn)(void *ctx, const char *s, size_t n);

/* One frame as text: "func+0x1f (file.c:12) in module" etc. */
void rep_cs_frame_text(const an_cs_frame *f, char *buf, size_t cap);
/* Text block (indent spaces before each line; at most max_frames frames per
 * site, 0 = all), and the JSON object {"stacks":..,"python_frames":..,
 * "findings":[...]} as one value of w (no newline). */
void rep_cs_write_text(const an_cs *cs, rep_cs_emit_fn emit, void *ctx, unsigned indent,
                       unsigned max_frames);
void rep_cs_write_json(const an_cs *cs, gs_jw *w);
/* A site's frames on one line, "func+0x1f (file.c:12) in module <- ...", at
 * most max_frames (0 = all), into buf; returns the length. */
size_t rep_cs_site_text(const an_cs_site *s, unsigned max_frames, char *buf, size_t cap);

#endif
