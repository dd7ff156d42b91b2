/* report_ranks.c — the ranks of a job in the report: the per-rank table
 * and the job line (text), "job", "ranks" and "straggler" (JSON,
 * docs/report-schema.md, "Ranks and the straggler"), and the pieces
 * compare and the HTML page show.
 *
 * Must never: compute anything (an_ranks.c did), or print a rank's numbers
 * when its analysis failed (its error is shown instead).
 */
#include <stdio.h>
#include <string.h>

#include "an_ranks.h"
#include "report_out.h"

/* "num_workers=3" / "none" / "num_workers (will not help)": the rank's first advice. */
void rep_rank_advice_short(const an_result *r, char *buf, size_t n)
{
    if (!r->nadvice) {
        snprintf(buf, n, "none");
        return;
    }
    const an_advice *a = &r->advice[0];
    if (a->setting == AN_ADV_PIN_MEMORY)
        snprintf(buf, n, "pin_memory=True");
    else if (a->has_value)
        snprintf(buf, n, "num_workers=%ld", a->value);
    else
        snprintf(buf, n, "num_workers: no");
    if (r->nadvice > 1) {
        const size_t l = strlen(buf);
        snprintf(buf + l, n - l, " +%zu", r->nadvice - 1);
    }
}

static const char *peer_src_name(int s)
{
    return s == AN_PEER_MEASURED ? "measured" : s == AN_PEER_INFERRED ? "inferred" : NULL;
}

/* ---- text -------------------------------------------------------------------------- */

void rep_write_ranks_text(gs_out *o, const an_job *job, const style *st)
{
    if (!job || job->nranks < 2)
        return;
    gs_out_printf(o, "%sjob%s   %zu ranks on %zu host%s, %zu steps aligned by index, job step median "
                     "%.1f ms",
                  st->bold, st->off, job->nranks, job->nhosts, job->nhosts == 1 ? "" : "s",
                  job->aligned, job->step_ms);
    if (job->unranked)
        gs_out_printf(o, " (%zu process%s of no rank left out: the launcher)", job->unranked,
                      job->unranked == 1 ? "" : "es");
    gs_out_str(o, "\n\n  rank  host          pid      steps  step ms  data wait  peer wait   "
                  "verdict               workers  advice\n");
    for (size_t k = 0; k < job->nranks; k++) {
        const an_rank *R = &job->ranks[k];
        const int lim = (int)k == job->limiting;
        gs_out_printf(o, "%s%s%4d  ", lim ? st->bold : "", lim ? "* " : "  ", R->rank);
        char host[16];
        snprintf(host, sizeof host, "%s", R->host ? R->host : "?");
        gs_out_printf(o, "%-12s  ", host);
        if (!R->ok) {
            gs_out_printf(o, "%s%s\n", R->err, lim ? st->off : "");
            continue;
        }
        const an_result *r = &R->res;
        char peer[24], adv[48], wk[16];
        if (R->peer_src == AN_PEER_NONE)
            snprintf(peer, sizeof peer, "-");
        else
            snprintf(peer, sizeof peer, "%5.1f%% %s", 100 * R->peer_wait_share,
                     R->peer_src == AN_PEER_MEASURED ? "meas" : "inf");
        rep_rank_advice_short(r, adv, sizeof adv);
        if (r->cur_workers >= 0)
            snprintf(wk, sizeof wk, "%d", r->cur_workers);
        else
            snprintf(wk, sizeof wk, "?");
        gs_out_printf(o, "%-7llu  %5zu  %7.1f  %8.1f%%  %-10s  %-20s  %7s  %s%s\n",
                      (unsigned long long)r->trainer->pid, r->measured, r->step_ms_median,
                      100 * r->share[AN_SH_DATA_WAIT], peer, an_verdict_label(r->verdict), wk, adv,
                      lim ? st->off : "");
    }
    if (job->straggler >= 0)
        gs_out_printf(o, "\n%sstraggler%s rank %d: %s\n", st->bold, st->off,
                      job->ranks[job->straggler].rank, job->why);
    else
        gs_out_printf(o, "\n%sstraggler%s none: no rank waits %.0f%% or more of its steps for "
                         "the others\n",
                      st->bold, st->off, 100 * AN_STRAGGLER_MIN_SHARE);
    if (job->limiting >= 0)
        gs_out_printf(o, "%sbelow%s    rank %d, the rank that limits the job (* above)\n\n",
                      st->bold, st->off, job->ranks[job->limiting].rank);
}

/* ---- JSON -------------------------------------------------------------------------- */

static void rank_json(gs_jw *w, const an_job *job, const an_rank *R)
{
    gs_jw_obj(w);
    gs_jw_ki64(w, "rank", R->rank);
    gs_jw_key(w, "local_rank");
    if (R->local_rank >= 0)
        gs_jw_i64(w, R->local_rank);
    else
        gs_jw_null(w);
    gs_jw_kstr(w, "host", R->host);
    gs_jw_ku64(w, "processes", R->view.nprocs);
    gs_jw_kbool(w, "limits_job", job->limiting >= 0 && &job->ranks[job->limiting] == R);
    gs_jw_kstr(w, "error", R->ok ? NULL : R->err);
    if (!R->ok) {
        gs_jw_end(w);
        return;
    }
    const an_result *r = &R->res;
    gs_jw_ku64(w, "pid", r->trainer->pid);
    gs_jw_kstr(w, "file", r->trainer->file);
    gs_jw_ku64(w, "steps", r->measured);
    gs_jw_key(w, "step_ms");
    rep_json_num(w, r->step_ms_median);
    gs_jw_key(w, "share");
    gs_jw_obj(w);
    for (int k = 0; k < AN_NSH; k++)
        gs_jw_kfixed(w, an_share_names[k], r->share[k], 9);
    gs_jw_end(w);
    gs_jw_key(w, "input_bound_share");
    rep_json_num(w, r->input_share);
    rep_json_verdict(w, r);
    gs_jw_key(w, "dataloader");
    gs_jw_obj(w);
    rep_json_dataloader_settings(w, r->trainer);
    gs_jw_ku64(w, "workers_seen", r->nworkers);
    gs_jw_key(w, "batch_ms");
    rep_json_num(w, r->batch_ms);
    gs_jw_end(w);
    gs_jw_key(w, "advice");
    gs_jw_arr(w);
    for (size_t i = 0; i < r->nadvice; i++) {
        const an_advice *a = &r->advice[i];
        gs_jw_obj(w);
        rep_json_advice_setting(w, a);
        gs_jw_key(w, "predicted_step_ms");
        rep_json_num(w, a->predicted_step_ms);
        gs_jw_key(w, "predicted_saving_ms");
        rep_json_num(w, a->predicted_saving_ms);
        gs_jw_kstr(w, "why", a->why);
        gs_jw_end(w);
    }
    gs_jw_end(w);
    gs_jw_key(w, "peer_wait");
    gs_jw_obj(w);
    gs_jw_key(w, "share");
    if (R->peer_src == AN_PEER_NONE)
        gs_jw_null(w);
    else
        rep_json_num(w, R->peer_wait_share);
    gs_jw_kstr(w, "source", peer_src_name(R->peer_src));
    gs_jw_end(w);
    gs_jw_ku64(w, "limits_steps", R->limits_steps);
    gs_jw_end(w);
}

void rep_write_ranks_json(gs_jw *w, const an_job *job)
{
    gs_jw_key(w, "job");
    if (!job) {
        gs_jw_null(w);
    } else {
        gs_jw_obj(w);
        gs_jw_ku64(w, "ranks", job->nranks);
        gs_jw_ku64(w, "hosts", job->nhosts);
        gs_jw_ku64(w, "unranked_processes", job->unranked);
        gs_jw_ku64(w, "aligned_steps", job->aligned);
        gs_jw_key(w, "step_ms");
        rep_json_num(w, job->step_ms);
        gs_jw_key(w, "limiting_rank");
        if (job->limiting >= 0)
            gs_jw_i64(w, job->ranks[job->limiting].rank);
        else
            gs_jw_null(w);
        gs_jw_end(w);
    }
    gs_jw_newline(w, "\n");
    gs_jw_key(w, "ranks");
    gs_jw_arr(w);
    for (size_t k = 0; job && k < job->nranks; k++) {
        gs_jw_newline(w, "\n  ");
        rank_json(w, job, &job->ranks[k]);
    }
    gs_jw_end(w);
    gs_jw_newline(w, "\n");
    gs_jw_key(w, "straggler");
    if (job && job->straggler >= 0) {
        gs_jw_obj(w);
        gs_jw_ki64(w, "rank", job->ranks[job->straggler].rank);
        gs_jw_kstr(w, "why", job->why);
        gs_jw_end(w);
    } else {
        gs_jw_null(w);
    }
}
