/* report_ranks.h — the ranks of a job in the report, compare and the HTML page
 * (report_ranks.c).
 *
 * Must never: name a straggler the job analysis did not (model/an_ranks.h).
 */
#ifndef REPORT_RANKS_H
#define REPORT_RANKS_H

#include <stddef.h>
#include <stdint.h>

#include "base/out_buf.h"
#include "base/out_json.h"
#include "model/an_model.h"
#include "report/report_style.h"

/* The ranks of a job: the per-rank table, straggler and
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
/* --per-step: step i's straggler, the rank that caused the most waiting at
 * the collectives of that step (rep_has_step_stragglers: the result's job
 * matched collectives): a text column (its header, then each row's cell)
 * and the per_step row's "straggler" member ({rank, caused_ms} or null). */
int rep_has_step_stragglers(const an_result *r);
void rep_step_straggler_text(gs_out *o, const an_result *r, size_t i);
void rep_step_straggler_json(gs_jw *w, const an_result *r, size_t i);
/* report --html: the ranks' table and the straggler (nothing below two ranks). */
void rep_write_ranks_html(gs_out *o, const struct an_job *job);
void rep_write_ranks_compare_text(gs_out *o, const struct an_job *a, const struct an_job *b);

#endif
