/* report_perfetto.h — the second pass's Perfetto trace (report_perfetto.c):
 * what the pass (report_pass2.c) hands it, in this order: the header, per
 * file the process, its events and GPU records, its file reads and the
 * training thread's pieces, the file's end; the footer.
 *
 * Must never: be called without x->pf (the pass checks).
 */
#ifndef REPORT_PERFETTO_H
#define REPORT_PERFETTO_H

#include <stdint.h>

#include "report/report_pass2.h"

void rep_pf_header(pass2 *x);
void rep_pf_file(pass2 *x, const an_proc *p, long wi);
void rep_pf_event(pass2 *x, struct gs_reader *r, const gs_event *e);
void rep_pf_gpu(pass2 *x, struct gs_reader *r, const gs_event *e);
void rep_pf_file_read(pass2 *x, const gs_event *e, uint64_t bytes);
void rep_pf_piece(pass2 *x, uint64_t t0, uint64_t t1, unsigned cls);
void rep_pf_file_end(pass2 *x);
void rep_pf_footer(pass2 *x);

#endif
