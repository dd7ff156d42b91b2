/* report_text.h — the terminal report (report_text.c).
 *
 * Must never: be the only place a number is shown: every number it prints
 * is in the JSON too (report_json.h).
 */
#ifndef REPORT_TEXT_H
#define REPORT_TEXT_H

#include "base/out_buf.h"
#include "model/an_model.h"
#include "report/report_style.h"

void rep_write_text(gs_out *o, const an_run *run, const an_result *r, int per_step,
                    const style *st);

#endif
