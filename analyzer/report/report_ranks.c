/* report_ranks.c — the ranks of a job in the report: the per-rank table
 * and the job line (text), "job", "ranks" and "straggler" (JSON,
 * docs/report-schema.md, "Ranks and the straggler"), and the pieces
 * compare and the HTML page show.
 *
 * Must never: compute anything (an_ranks.c did), or print a rank's numbers
 * when its analysis failed (its error is shown instead).
 */
#include "report/report_ranks.h"

#include <stdio.h>
#include <string.h>

#include "model/an_ranks.h"
#include "report/report_json_parts.h"
#include "report/report_style.h"

/* "num_workers=3" / "none" / "num_workers (will not help)": the rank's first advice. */
void rep_rank_advice_short(const an_result *r, char *buf, size_t n)
{
    if (!r->nadvice) {
        snprintf(buf, n, "none");
        return;
    }
    const an_advice *a = &r->advice[0];
    if (a->setting != AN_ADV_NUM_WORKERS)
        snprintf(buf, n, "%s=True", an_advice_name(a));
    else if (a->has_value)
        snprintf(buf, n, "%s=%ld", an_advice_name(a), a->value);
    else
        snprintf(buf, n, "%s: no", an_advice_name(a));
    if (r->nadvice > 1) {
        const size_t l = strlen(buf);
        snprintf(buf + l, n - l, " +%zu", r->nadvice - 1);
    }
}

static const char *clock_src_name(int s)
{
    return s == AN_CLOCK_REALTIME      ? "realtime"
           : s == AN_CLOCK_COLLECTIVES ? "collectives"
                                       : "same_host";
}

static const char *peer_src_name(int s)
{
    return s == AN_PEER_MEASURED ? "measured" : s == AN_PEER_INFERRED ? "inferred" : NULL;
}

int32_t rep_result_rank(const an_result *r)
{
    const an_job *job = r->job;
    if (job && job->limiting >= 0 && &job->ranks[job->limiting].res == r)
        return job->ranks[job->limiting].rank;
    return r->trainer ? r->trainer->rank : -1;
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
        gs_out_printf(o, " (%zu process%s of no rank left out: the launcher%s)", job->unranked,
                      job->unranked == 1 ? "" : "es", job->unranked == 1 ? "" : "s");
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
    for (size_t k = 0; k < job->nranks; k++)
        if (job->ranks[k].ok && job->ranks[k].roots > 1)
            gs_out_printf(o, "%snote%s   rank %d has %zu processes no process of the rank started: "
                             "several runs or restarts of it are read as one (its trainer: pid "
                             "%llu)\n",
                          st->bold, st->off, job->ranks[k].rank, job->ranks[k].roots,
                          (unsigned long long)job->ranks[k].res.trainer->pid);
    /* the clocks of the other hosts, once per host */
    for (size_t k = 0; job->clock_ref >= 0 && k < job->nranks; k++) {
        const an_rank *R = &job->ranks[k];
        if (!R->ok || R->clock_src == AN_CLOCK_SAME_HOST)
            continue;
        int first = 1;
        for (size_t j = 0; j < k && first; j++)
            first = !(job->ranks[j].ok && strcmp(job->ranks[j].host, R->host) == 0);
        if (!first)
            continue;
        gs_out_printf(o, "%sclock%s  host %s on rank %d's clock: %+.3f ms from the realtime pairs",
                      st->bold, st->off, R->host, job->ranks[job->clock_ref].rank,
                      (double)R->clock_realtime_ns / 1e6);
        if (R->clock_src == AN_CLOCK_COLLECTIVES)
            gs_out_printf(o, ", %+.3f ms from the aligned step ends (spread %.3f ms)",
                          (double)R->clock_refined_ns / 1e6, (double)R->clock_spread_ns / 1e6);
        gs_out_char(o, '\n');
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
    rep_json_advice(w, r);
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
    gs_jw_ku64(w, "root_processes", R->roots);
    gs_jw_key(w, "clock");
    gs_jw_obj(w);
    gs_jw_kstr(w, "source", clock_src_name(R->clock_src));
    gs_jw_ki64(w, "offset_ns", R->clock_offset_ns);
    gs_jw_ki64(w, "realtime_offset_ns", R->clock_realtime_ns);
    gs_jw_ki64(w, "refined_ns", R->clock_refined_ns);
    gs_jw_key(w, "spread_ms");
    rep_json_ms(w, R->clock_spread_ns);
    gs_jw_end(w);
    gs_jw_end(w);
}

/* "straggler":{"rank":..,"why":..} or null */
static void straggler_json(gs_jw *w, const an_job *job)
{
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
        gs_jw_key(w, "clock_rank");
        if (job->clock_ref >= 0)
            gs_jw_i64(w, job->ranks[job->clock_ref].rank);
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
    straggler_json(w, job);
}

/* ---- compare ------------------------------------------------------------------------ */

static const an_rank *rank_of(const an_job *job, int32_t rank)
{
    for (size_t k = 0; job && k < job->nranks; k++)
        if (job->ranks[k].rank == rank && job->ranks[k].ok)
            return &job->ranks[k];
    return NULL;
}

void rep_write_ranks_side_json(gs_jw *w, const an_job *job)
{
    gs_jw_key(w, "ranks");
    gs_jw_arr(w);
    for (size_t k = 0; job && k < job->nranks; k++) {
        const an_rank *R = &job->ranks[k];
        if (!R->ok)
            continue;
        gs_jw_obj(w);
        gs_jw_ki64(w, "rank", R->rank);
        gs_jw_kstr(w, "host", R->host);
        gs_jw_key(w, "step_ms");
        rep_json_num(w, R->res.step_ms_median);
        gs_jw_kfixed(w, "idle_data_wait", R->res.share[AN_SH_DATA_WAIT], 9);
        gs_jw_key(w, "peer_wait");
        if (R->peer_src == AN_PEER_NONE)
            gs_jw_null(w);
        else
            rep_json_num(w, R->peer_wait_share);
        gs_jw_kstr(w, "verdict", an_verdict_label(R->res.verdict));
        gs_jw_key(w, "num_workers");
        rep_json_cfg(w, "num_workers", an_cfg_value(R->res.trainer, "num_workers"));
        gs_jw_end(w);
    }
    gs_jw_end(w);
    straggler_json(w, job);
}

static void straggler_line(gs_out *o, const char *name, const an_job *job)
{
    if (job && job->straggler >= 0)
        gs_out_printf(o, "%-24s rank %d: %s\n", name, job->ranks[job->straggler].rank, job->why);
    else
        gs_out_printf(o, "%-24s none\n", name);
}

void rep_write_ranks_compare_text(gs_out *o, const an_job *a, const an_job *b)
{
    const size_t na = a ? a->nranks : 0, nb = b ? b->nranks : 0;
    if (na < 2 && nb < 2)
        return;
    gs_out_str(o, "\nranks                           A           B    change\n");
    /* every rank either side has, in order */
    int32_t last = -1;
    for (;;) {
        int32_t next = -1;
        for (size_t k = 0; k < na; k++)
            if (a->ranks[k].rank > last && (next < 0 || a->ranks[k].rank < next))
                next = a->ranks[k].rank;
        for (size_t k = 0; k < nb; k++)
            if (b->ranks[k].rank > last && (next < 0 || b->ranks[k].rank < next))
                next = b->ranks[k].rank;
        if (next < 0)
            break;
        last = next;
        const an_rank *x = rank_of(a, next), *y = rank_of(b, next);
        char label[40], va[16], vb[16];
        snprintf(label, sizeof label, "rank %d step median ms", next);
        snprintf(va, sizeof va, x ? "%.1f" : "-", x ? x->res.step_ms_median : 0);
        snprintf(vb, sizeof vb, y ? "%.1f" : "-", y ? y->res.step_ms_median : 0);
        gs_out_printf(o, "%-24s %9s %11s", label, va, vb);
        if (x && y)
            gs_out_printf(o, "   %+.1f ms", y->res.step_ms_median - x->res.step_ms_median);
        gs_out_char(o, '\n');
        snprintf(label, sizeof label, "rank %d data wait", next);
        snprintf(va, sizeof va, x ? "%.1f%%" : "-", x ? 100 * x->res.share[AN_SH_DATA_WAIT] : 0);
        snprintf(vb, sizeof vb, y ? "%.1f%%" : "-", y ? 100 * y->res.share[AN_SH_DATA_WAIT] : 0);
        gs_out_printf(o, "%-24s %9s %11s", label, va, vb);
        if (x && y)
            gs_out_printf(o, "   %+.1f points",
                          100 * (y->res.share[AN_SH_DATA_WAIT] - x->res.share[AN_SH_DATA_WAIT]));
        gs_out_char(o, '\n');
    }
    straggler_line(o, "straggler A", a);
    straggler_line(o, "straggler B", b);
}

/* ---- HTML --------------------------------------------------------------------------- */

static void esc(gs_out *o, const char *s)
{
    if (s)
        gs_html_str(o, s, strlen(s), "");
}

void rep_write_ranks_html(gs_out *o, const an_job *job)
{
    if (!job || job->nranks < 2)
        return;
    gs_out_printf(o, "<section id=\"ranks\"><h2>Ranks: %zu on %zu host%s, %zu steps aligned, job step "
                     "median %.1f ms</h2>\n",
                  job->nranks, job->nhosts, job->nhosts == 1 ? "" : "s", job->aligned, job->step_ms);
    if (job->straggler >= 0) {
        gs_out_printf(o, "<p id=\"straggler\"><b>Straggler: rank %d.</b> ",
                      job->ranks[job->straggler].rank);
        esc(o, job->why);
        gs_out_str(o, "</p>\n");
    } else {
        gs_out_str(o, "<p id=\"straggler\">No straggler: no rank waits 5% or more of its steps for "
                      "the others.</p>\n");
    }
    gs_out_str(o, "<table class=\"share\"><tr><td><b>rank</b></td><td><b>host</b></td><td class=\"num\">"
                  "<b>pid</b></td><td class=\"num\"><b>steps</b></td><td class=\"num\"><b>step ms</b>"
                  "</td><td class=\"num\"><b>data wait</b></td><td class=\"num\"><b>waits for others"
                  "</b></td><td><b>verdict</b></td><td class=\"num\"><b>num_workers</b></td><td><b>"
                  "advice</b></td></tr>\n");
    for (size_t k = 0; k < job->nranks; k++) {
        const an_rank *R = &job->ranks[k];
        gs_out_printf(o, "<tr class=\"rank%s\"><td>%d%s</td><td>", (int)k == job->limiting ? " limiting" : "",
                      R->rank, (int)k == job->limiting ? " (below)" : "");
        esc(o, R->host);
        gs_out_str(o, "</td>");
        if (!R->ok) {
            gs_out_str(o, "<td colspan=\"8\">");
            esc(o, R->err);
            gs_out_str(o, "</td></tr>\n");
            continue;
        }
        const an_result *r = &R->res;
        char adv[48];
        rep_rank_advice_short(r, adv, sizeof adv);
        gs_out_printf(o, "<td class=\"num\">%llu</td><td class=\"num\">%zu</td><td class=\"num\">%.1f</td>"
                         "<td class=\"num\">%.1f%%</td><td class=\"num\">",
                      (unsigned long long)r->trainer->pid, r->measured, r->step_ms_median,
                      100 * r->share[AN_SH_DATA_WAIT]);
        if (R->peer_src == AN_PEER_NONE)
            gs_out_str(o, "-");
        else
            gs_out_printf(o, "%.1f%% (%s)", 100 * R->peer_wait_share, peer_src_name(R->peer_src));
        gs_out_printf(o, "</td><td>%s</td><td class=\"num\">", an_verdict_label(r->verdict));
        if (r->cur_workers >= 0)
            gs_out_printf(o, "%d", r->cur_workers);
        else
            gs_out_str(o, "?");
        gs_out_str(o, "</td><td>");
        esc(o, adv);
        gs_out_str(o, "</td></tr>\n");
    }
    gs_out_str(o, "</table>\n<p class=\"meta\">Below: the rank that limits the job.</p></section>\n");
}
