/* report_json.h — the report as JSON, schema gpustarve.report/1 (report_json.c,
 * docs/report-schema.md).
 *
 * Must never: be written but through base/out_json.h.
 */
#ifndef REPORT_JSON_H
#define REPORT_JSON_H

#include "base/out_buf.h"
#include "model/an_model.h"

void rep_write_json(gs_out *o, const an_run *run, const an_result *r, int per_step);

#endif
