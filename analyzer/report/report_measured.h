/* report_measured.h — the measured time of the loaders and the trainer in the report's
 * text and JSON (report_measured.c).
 *
 * Must never: show a part that was not measured as 0.
 */
#ifndef REPORT_MEASURED_H
#define REPORT_MEASURED_H

#include "base/out_buf.h"
#include "base/out_json.h"
#include "model/an_model.h"
#include "report/report_style.h"

/* The measured time (an_cputime.h). JSON: a loader's
 * parts as member `key` (null when not measured); "share_data_wait" (the
 * data-wait share split); "measured" (trainer, loader pool, other threads).
 * Text: the data-wait rows' split and the loader's measured parts; nothing
 * when not measured. */
void rep_json_loader_time(gs_jw *w, const char *key, const an_loader_time *t);
void rep_json_share_split(gs_jw *w, const an_result *r);
void rep_json_trainer_time(gs_jw *w, const an_result *r);
void rep_text_measured_trainer(gs_out *o, const an_result *r);
void rep_text_measured_loader(gs_out *o, const an_result *r, const style *st);

#endif
