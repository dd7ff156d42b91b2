/* report_json_parts.h — the pieces of the report's JSON that compare, the ranks and the
 * measured time print too (report_json_parts.c).
 *
 * Must never: open or close a document.
 */
#ifndef REPORT_JSON_PARTS_H
#define REPORT_JSON_PARTS_H

#include <stdint.h>

#include "base/out_json.h"
#include "model/an_model.h"

/* JSON pieces shared by report and compare (out_json.h's writer): a number
 * as every report number is written (%.9g, null when not finite); ns as ms;
 * the configuration value v of key (true/false for a boolean setting,
 * rep_cfg_is_bool, and for true/false spelt out; else a number; else a
 * string; null when absent or "none"); an advice's "setting" and "value"
 * members. */
void rep_json_num(gs_jw *w, double v);
/* key: v, or null when v is negative (absent, not measured). */
void rep_json_num_or_null(gs_jw *w, const char *key, double v);
/* key: true/false, or null when v is negative (not known). */
void rep_json_bool_or_null(gs_jw *w, const char *key, int v);
void rep_json_ms(gs_jw *w, uint64_t ns);
/* A step's parts, one "<share name>_ms" member each, in the shares' order
 * (the report's per-step rows and the Perfetto step slices' args). */
void rep_json_step_parts(gs_jw *w, const an_stepv *v);
void rep_json_cfg(gs_jw *w, const char *key, const char *v);
/* 1 when the DataLoader setting key (or "requested.<key>") is a boolean. */
int rep_cfg_is_bool(const char *key);
void rep_json_advice_setting(gs_jw *w, const an_advice *a);
/* "advice":[{setting, value, predicted_step_ms, predicted_saving_ms, why}...] */
void rep_json_advice(gs_jw *w, const an_result *r);
/* The DataLoader settings every report names, in this order. */
#define REP_NCFG 6
extern const char *const rep_cfg_keys[REP_NCFG];
/* "verdict":{"label":..,"text":..} */
void rep_json_verdict(gs_jw *w, const an_result *r);
/* "known":true|false, then each of rep_cfg_keys with its value (members of
 * the "dataloader" object; the caller opens and closes it). */
void rep_json_dataloader_settings(gs_jw *w, const an_result *r);

#endif
