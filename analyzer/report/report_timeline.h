/* report_timeline.h — the HTML page's timelines, kept during the second
 * pass (report_timeline.c): the windows first, then what the pass hands it
 * (the trainer's GPU records, the loader's calls, the training thread's
 * pieces), all on the job's clock.
 *
 * Must never: be called without x->html set (rep_hx_windows sets it).
 */
#ifndef REPORT_TIMELINE_H
#define REPORT_TIMELINE_H

#include <stdint.h>

#include "report/report_pass2.h"

void rep_hx_windows(pass2 *x);
void rep_hx_gpu(pass2 *x, struct gs_reader *r, const gs_event *e);
void rep_hx_event(pass2 *x, const gs_event *e);
void rep_hx_piece(pass2 *x, uint64_t t0, uint64_t t1, unsigned cls);

#endif
