/* report_out.h — the writers `gpustarve report` hands its result to.
 * CLI-side only (not linked into the unit tests).
 */
#ifndef REPORT_OUT_H
#define REPORT_OUT_H

#include "an_model.h"
#include "cli_util.h"

/* Terminal colours; all "" when the output is not a terminal. */
typedef struct style {
    const char *bold, *red, *yellow, *green, *dim, *off;
} style;

void rep_write_text(gs_out *o, const an_run *run, const an_result *r, int per_step,
                    const style *st);
void rep_write_json(gs_out *o, const an_run *run, const an_result *r, int per_step);
/* JSON pieces shared by report and compare (out_json.h's writer): a number
 * as every report number is written (%.9g, null when not finite); ns as ms;
 * the configuration value v of key (true/false for a boolean setting,
 * rep_cfg_is_bool, and for true/false spelt out; else a number; else a
 * string; null when absent or "none"); an advice's "setting" and "value"
 * members. */
void rep_json_num(gs_jw *w, double v);
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
#define REP_NCFG 5
extern const char *const rep_cfg_keys[REP_NCFG];
/* "verdict":{"label":..,"text":..} */
void rep_json_verdict(gs_jw *w, const an_result *r);
/* "known":true|false, then each of rep_cfg_keys with its value (members of
 * the "dataloader" object; the caller opens and closes it). */
void rep_json_dataloader_settings(gs_jw *w, const an_proc *tr);
/* report_measured.c: the measured time (an_cputime.h). JSON: a loader's
 * parts as member `key` (null when not measured); "share_data_wait" (the
 * data-wait share split); "measured" (trainer, loader pool, other threads).
 * Text: the data-wait rows' split and the loader's measured parts; nothing
 * when not measured. */
void rep_json_loader_time(gs_jw *w, const char *key, const an_loader_time *t);
void rep_json_share_split(gs_jw *w, const an_result *r);
void rep_json_trainer_time(gs_jw *w, const an_result *r);
void rep_text_measured_trainer(gs_out *o, const an_result *r);
void rep_text_measured_loader(gs_out *o, const an_result *r, const style *st);
/* The ranks of a job (report_ranks.c): the per-rank table, straggler and
 * job line (text, nothing when the job has fewer than two ranks); the
 * "job", "ranks" and "straggler" members (JSON; null, [] and null without
 * a job); a rank's first advice in a few words. */
struct an_job;
void rep_write_ranks_text(gs_out *o, const struct an_job *job, const style *st);
void rep_write_ranks_json(gs_jw *w, const struct an_job *job);
void rep_rank_advice_short(const an_result *r, char *buf, size_t n);
/* The rank a result describes: its job's limiting rank (which may come from
 * the process group rather than the header), else its trainer's header
 * rank; -1 unknown. */
int32_t rep_result_rank(const an_result *r);
/* compare: a side's "ranks" (rank, host, step_ms, idle_data_wait,
 * peer_wait, verdict, num_workers) and "straggler" members; the two jobs'
 * ranks side by side (text; nothing when neither has two ranks). */
void rep_write_ranks_side_json(gs_jw *w, const struct an_job *job);
/* report --html: the ranks' table and the straggler (nothing below two ranks). */
void rep_write_ranks_html(gs_out *o, const struct an_job *job);
void rep_write_ranks_compare_text(gs_out *o, const struct an_job *a, const struct an_job *b);
/* Read the files again for --perfetto FILE and/or --html FILE (either may be
 * NULL), every time on the job's clock (job: its ranks' clock offsets; NULL
 * when the run has one clock). Returns 0, or -1 with a message printed. */
int rep_second_pass(const char *dir, const an_opts *o1, const an_run *run, const an_result *res,
                    const struct an_job *job, const char *perfetto, const char *html);

#endif
