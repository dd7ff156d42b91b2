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

#include "model/an_jobs.h"
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
    if (a->setting == AN_ADV_NUM_WORKERS && !a->has_value)
        snprintf(buf, n, "%s: no", an_advice_name(a));
    else
        an_advice_text(a, buf, n);
    if (r->nadvice > 1) {
        const size_t l = strlen(buf);
        snprintf(buf + l, n - l, " +%zu", r->nadvice - 1);
    }
}

static const char *clock_src_name(int s)
{
    return s == AN_CLOCK_REALTIME      ? "realtime"
           : s == AN_CLOCK_COLLECTIVES ? "collectives"
           : s == AN_CLOCK_STEP_ENDS   ? "step_ends"
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

/* RATIONALE: a job of 64 ranks would print 64 rows of waits; the ranks
 * that caused the most are the ones to read */
#define WAITS_ROWS 8

/* The rank index rank k waited for most, -1. */
static int waited_most(const an_job *job, size_t k)
{
    const an_rank *R = &job->ranks[k];
    int best = -1;
    for (size_t j = 0; R->waited_for_ns && j < job->nranks; j++)
        if (R->waited_for_ns[j] && (best < 0 || R->waited_for_ns[j] > R->waited_for_ns[best]))
            best = (int)j;
    return best;
}

/* The collectives' lines: what was matched, and who waited for whom. */
static void text_waits(gs_out *o, const an_job *job, const style *st)
{
    const an_coll_sum *cs = &job->coll;
    if (!cs->used) {
        if (cs->why_not[0])
            gs_out_printf(o, "%swaits%s    %s\n\n", st->bold, st->off, cs->why_not);
        return;
    }
    gs_out_printf(o, "%swaits%s    %zu collectives matched on every rank (%zu communicator%s), "
                     "%zu in the measured aligned steps",
                  st->bold, st->off, cs->matched, cs->comms, cs->comms == 1 ? "" : "s",
                  cs->counted);
    if (cs->names_differ)
        gs_out_printf(o, ", %zu named differently on some rank", cs->names_differ);
    gs_out_str(o, "\n\n  rank  caused ms  last at  waited ms  waited most for\n");
    /* the ranks by the waiting they caused, the first WAITS_ROWS of them */
    size_t shown = 0;
    uint64_t prev = UINT64_MAX;
    int prev_k = -1;
    while (shown < WAITS_ROWS && shown < job->nranks) {
        int b = -1;
        for (size_t k = 0; k < job->nranks; k++) {
            const an_rank *R = &job->ranks[k];
            const int after = R->caused_ns < prev || (R->caused_ns == prev && (int)k > prev_k);
            if (R->ok && after && (b < 0 || R->caused_ns > job->ranks[b].caused_ns))
                b = (int)k;
        }
        if (b < 0)
            break;
        const an_rank *R = &job->ranks[b];
        const int w = waited_most(job, (size_t)b);
        gs_out_printf(o, "  %4d  %9.1f  %7zu  %9.1f  ", R->rank, (double)R->caused_ns / 1e6,
                      R->last_arrivals, (double)R->waited_ns / 1e6);
        if (w >= 0)
            gs_out_printf(o, "rank %d (%.1f ms)\n", job->ranks[w].rank,
                          (double)R->waited_for_ns[w] / 1e6);
        else
            gs_out_str(o, "-\n");
        prev = R->caused_ns;
        prev_k = b;
        shown++;
    }
    size_t nok = 0;
    for (size_t k = 0; k < job->nranks; k++)
        nok += job->ranks[k].ok;
    if (nok > shown)
        gs_out_printf(o, "  (%zu more ranks, each causing %.1f ms or less)\n", nok - shown,
                      (double)prev / 1e6);
    gs_out_char(o, '\n');
}

/* One clock line per host other than the reference's (and per rank whose
 * clock is another machine's under the reference's host name); on one host,
 * how well the collectives' ends agree. */
static void text_clocks(gs_out *o, const an_job *job, const style *st)
{
    const an_rank *F = &job->ranks[job->clock_ref];
    uint64_t agree = 0, max = 0;
    size_t on_ref = 0;
    for (size_t k = 0; k < job->nranks; k++) {
        const an_rank *R = &job->ranks[k];
        if (!R->ok)
            continue;
        if (R->clock_separate)
            gs_out_printf(o, "%sclock%s  rank %d says host %s, as rank %d does, but its clock is "
                             "%.1f s away: another machine of the same name, aligned apart\n",
                          st->bold, st->off, R->rank, R->host, F->rank,
                          (double)R->clock_realtime_ns / 1e9);
        if (R->clock_src == AN_CLOCK_SAME_HOST && R->clock_colls) {
            on_ref++;
            agree = R->clock_spread_ns > agree ? R->clock_spread_ns : agree;
            max = R->clock_max_ns > max ? R->clock_max_ns : max;
        }
        if (R->clock_src == AN_CLOCK_SAME_HOST)
            continue;
        int first = 1;
        for (size_t j = 0; j < k && first; j++)
            first = !(job->ranks[j].ok && job->ranks[j].clock_src != AN_CLOCK_SAME_HOST &&
                      strcmp(job->ranks[j].host, R->host) == 0);
        if (!first)
            continue;
        gs_out_printf(o, "%sclock%s  host %s on rank %d's clock: %+.3f ms from the realtime pairs",
                      st->bold, st->off, R->host, F->rank, (double)R->clock_realtime_ns / 1e6);
        if (R->clock_src == AN_CLOCK_STEP_ENDS)
            gs_out_printf(o, ", %+.3f ms from the aligned step ends (spread %.3f ms)",
                          (double)R->clock_refined_ns / 1e6, (double)R->clock_spread_ns / 1e6);
        else if (R->clock_src == AN_CLOCK_COLLECTIVES)
            gs_out_printf(o, ", %+.3f ms from %zu collectives' ends (they agree to %.3f ms, "
                             "at worst %.3f ms)",
                          (double)R->clock_refined_ns / 1e6, R->clock_colls,
                          (double)R->clock_spread_ns / 1e6, (double)R->clock_max_ns / 1e6);
        gs_out_char(o, '\n');
    }
    if (on_ref > 1)
        gs_out_printf(o, "%sclock%s  the %zu ranks on host %s share its clock; their collectives' "
                         "ends agree to %.3f ms (at worst %.3f ms)\n",
                      st->bold, st->off, on_ref, F->host, (double)agree / 1e6, (double)max / 1e6);
}

/* What makes the traces less than one whole job: several jobs read
 * together, ranks missing, a rank twice or restarted. */
static void text_job_notes(gs_out *o, const an_job *job, const style *st)
{
    if (job->jobs > 1)
        gs_out_printf(o, "%snote%s   the traces are of %zu jobs: this is job %d (--job %d; "
                         "without --job the report lists them)%s\n",
                      st->bold, st->off, job->jobs, job->job_index + 1, job->job_index + 1,
                      job->other_jobs ? ", the other jobs' processes left out" : "");
    if (job->nmissing) {
        char list[200];
        an_rank_list(job->missing, job->nmissing, list, sizeof list);
        gs_out_printf(o, "%snote%s   %zu of the %d ranks have no trace here: rank%s %s; the job "
                         "is read over the %zu rank%s that do%s\n",
                      st->bold, st->off, job->nmissing, job->world,
                      job->nmissing == 1 ? "" : "s", list, job->nranks,
                      job->nranks == 1 ? "" : "s", job->nranks == 1 ? "es" : "");
    }
    for (size_t k = 0; k < job->nranks; k++) {
        const an_rank *R = &job->ranks[k];
        if (!R->ok || R->roots < 2)
            continue;
        if (R->duplicated)
            gs_out_printf(o, "%snote%s   rank %d is in %zu processes that ran at the same time, "
                             "none started by another of the rank: a duplicated rank (read as "
                             "one; its trainer: pid %llu on %s)\n",
                          st->bold, st->off, R->rank, R->roots,
                          (unsigned long long)R->res.trainer->pid, R->res.trainer->host);
        else
            gs_out_printf(o, "%snote%s   rank %d has %zu processes no process of the rank started: "
                             "several runs or restarts of it are read as one (its trainer: pid "
                             "%llu)\n",
                          st->bold, st->off, R->rank, R->roots,
                          (unsigned long long)R->res.trainer->pid);
    }
}

void rep_write_ranks_text(gs_out *o, const an_job *job, const style *st)
{
    if (!job)
        return;
    if (job->nranks < 2) {
        text_job_notes(o, job, st);
        return;
    }
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
    text_job_notes(o, job, st);
    if (job->clock_ref >= 0)
        text_clocks(o, job, st);
    gs_out_char(o, '\n');
    text_waits(o, job, st);
    if (job->straggler >= 0)
        gs_out_printf(o, "%sstraggler%s rank %d: %s\n", st->bold, st->off,
                      job->ranks[job->straggler].rank, job->why);
    else if (job->coll.changes)
        gs_out_printf(o, "%sstraggler%s none: %s\n", st->bold, st->off, job->why);
    else if (job->coll.used)
        gs_out_printf(o, "%sstraggler%s none: the waiting at collectives is under %.0f%% of the "
                         "ranks' step time\n",
                      st->bold, st->off, 100 * AN_STRAGGLER_MIN_SHARE);
    else
        gs_out_printf(o, "%sstraggler%s none: no rank waits %.0f%% or more of its steps for "
                         "the others\n",
                      st->bold, st->off, 100 * AN_STRAGGLER_MIN_SHARE);
    if (job->limiting >= 0)
        gs_out_printf(o, "%sbelow%s    rank %d, the rank that limits the job (* above)\n\n",
                      st->bold, st->off, job->ranks[job->limiting].rank);
}

/* ---- JSON -------------------------------------------------------------------------- */

/* Writes key, and null when the value is not known; returns known (the
 * caller writes the value then). */
static int key_known(gs_jw *w, const char *key, int known)
{
    gs_jw_key(w, key);
    if (!known)
        gs_jw_null(w);
    return known;
}

/* A rank's waits at the collectives: null members without them. */
static void rank_waits_json(gs_jw *w, const an_job *job, const an_rank *R)
{
    const int used = job->coll.used;
    if (key_known(w, "caused_wait_ms", used))
        rep_json_ms(w, R->caused_ns);
    if (key_known(w, "waited_ms", used))
        rep_json_ms(w, R->waited_ns);
    gs_jw_key(w, "waited_for_ms");
    if (!used || !R->waited_for_ns) {
        gs_jw_null(w);
    } else {
        gs_jw_obj(w);
        for (size_t j = 0; j < job->nranks; j++) {
            if (!R->waited_for_ns[j])
                continue;
            char key[16];
            snprintf(key, sizeof key, "%d", job->ranks[j].rank);
            gs_jw_key(w, key);
            rep_json_ms(w, R->waited_for_ns[j]);
        }
        gs_jw_end(w);
    }
    if (key_known(w, "last_arrivals", used))
        gs_jw_u64(w, R->last_arrivals);
}

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
    rep_json_dataloader_settings(w, r);
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
    rank_waits_json(w, job, R);
    gs_jw_ku64(w, "root_processes", R->roots);
    gs_jw_key(w, "clock");
    gs_jw_obj(w);
    gs_jw_kstr(w, "source", clock_src_name(R->clock_src));
    gs_jw_ki64(w, "offset_ns", R->clock_offset_ns);
    gs_jw_ki64(w, "realtime_offset_ns", R->clock_realtime_ns);
    gs_jw_ki64(w, "refined_ns", R->clock_refined_ns);
    gs_jw_key(w, "spread_ms");
    rep_json_ms(w, R->clock_spread_ns);
    gs_jw_ku64(w, "collectives", R->clock_colls);
    if (key_known(w, "max_ms", R->clock_colls != 0))
        rep_json_ms(w, R->clock_max_ns);
    gs_jw_kbool(w, "separate_machine", R->clock_separate);
    gs_jw_end(w);
    gs_jw_end(w);
}

/* The straggler's lateness, measured on its own timeline (collectives). */
static void straggler_parts_json(gs_jw *w, const an_coll_sum *cs)
{
    gs_jw_key(w, "cause");
    if (cs->cause >= 0)
        gs_jw_str(w, an_cause_names[cs->cause]);
    else
        gs_jw_null(w);
    gs_jw_key(w, "parts");
    if (!cs->used || !cs->late_measured) {
        gs_jw_null(w);
    } else {
        gs_jw_obj(w);
        for (int x = 0; x < AN_NCAUSE; x++) {
            char key[40];
            snprintf(key, sizeof key, "%s_ms", an_cause_names[x]);
            gs_jw_kfixed(w, key, cs->parts_ms[x], 3);
        }
        gs_jw_kfixed(w, "late_step_start_ms", cs->late_start_ms, 3);
        gs_jw_end(w);
    }
    if (key_known(w, "late_collectives", cs->used))
        gs_jw_u64(w, cs->late);
    if (key_known(w, "measured_collectives", cs->used))
        gs_jw_u64(w, cs->late_measured);
    if (key_known(w, "late_ms", cs->used))
        gs_jw_fixed(w, cs->late_ms, 3);
}

/* "straggler":{"rank", "cost_ms", "share", "source", "cause", "parts", ..., "why"} or null */
static void straggler_json(gs_jw *w, const an_job *job)
{
    gs_jw_key(w, "straggler");
    if (job && job->straggler >= 0) {
        gs_jw_obj(w);
        gs_jw_ki64(w, "rank", job->ranks[job->straggler].rank);
        gs_jw_key(w, "cost_ms");
        rep_json_ms(w, job->straggler_ns);
        gs_jw_key(w, "share");
        rep_json_num(w, job->straggler_share);
        gs_jw_kstr(w, "source", job->coll.used ? "collectives" : "aligned_steps");
        straggler_parts_json(w, &job->coll);
        gs_jw_kstr(w, "why", job->why);
        gs_jw_end(w);
    } else {
        gs_jw_null(w);
    }
}

/* "collectives": what was matched across the ranks, or null without any. */
static void collectives_json(gs_jw *w, const an_job *job)
{
    const an_coll_sum *cs = &job->coll;
    gs_jw_key(w, "collectives");
    if (!cs->used && !cs->why_not[0]) {
        gs_jw_null(w);
        return;
    }
    gs_jw_obj(w);
    gs_jw_kbool(w, "used", cs->used);
    gs_jw_kstr(w, "not_used_why", cs->why_not[0] ? cs->why_not : NULL);
    gs_jw_ku64(w, "communicators", cs->comms);
    gs_jw_ku64(w, "matched", cs->matched);
    gs_jw_ku64(w, "in_aligned_steps", cs->counted);
    gs_jw_ku64(w, "names_differ", cs->names_differ);
    gs_jw_key(w, "wait_ms");
    rep_json_ms(w, cs->cost_ns);
    gs_jw_kbool(w, "last_arriver_changes", cs->changes);
    gs_jw_kstr(w, "changes_why", cs->changes ? job->why : NULL);
    gs_jw_end(w);
}

/* Whether the traces are one whole job: "jobs", "job_index", "world_size",
 * "missing_ranks", "duplicated_ranks". */
static void whole_json(gs_jw *w, const an_job *job)
{
    gs_jw_ku64(w, "jobs", job->jobs);
    gs_jw_ku64(w, "job_index", (uint64_t)job->job_index + 1);
    if (key_known(w, "world_size", job->world >= 1))
        gs_jw_i64(w, job->world);
    gs_jw_key(w, "missing_ranks");
    gs_jw_arr(w);
    for (size_t i = 0; i < job->nmissing; i++)
        gs_jw_i64(w, job->missing[i]);
    gs_jw_end(w);
    gs_jw_key(w, "duplicated_ranks");
    gs_jw_arr(w);
    for (size_t k = 0; k < job->nranks; k++)
        if (job->ranks[k].ok && job->ranks[k].duplicated)
            gs_jw_i64(w, job->ranks[k].rank);
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
        gs_jw_key(w, "clock_rank");
        if (job->clock_ref >= 0)
            gs_jw_i64(w, job->ranks[job->clock_ref].rank);
        else
            gs_jw_null(w);
        collectives_json(w, job);
        whole_json(w, job);
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

/* ---- per step ----------------------------------------------------------------------- */

int rep_has_step_stragglers(const an_result *r)
{
    return r->job && r->job->coll.used;
}

/* The rank index that caused the most waiting in step i, -1. */
static int step_rank(const an_result *r, size_t i)
{
    const an_coll_sum *cs = &r->job->coll;
    return i < cs->nsteps && cs->step_ns[i] ? cs->step_rank[i] : -1;
}

void rep_step_straggler_text(gs_out *o, const an_result *r, size_t i)
{
    const int k = step_rank(r, i);
    if (k < 0)
        gs_out_printf(o, "  %14s", "-");
    else
        gs_out_printf(o, "  %4d %9.3f", r->job->ranks[k].rank,
                      (double)r->job->coll.step_ns[i] / 1e6);
}

void rep_step_straggler_json(gs_jw *w, const an_result *r, size_t i)
{
    gs_jw_key(w, "straggler");
    const int k = step_rank(r, i);
    if (k < 0) {
        gs_jw_null(w);
        return;
    }
    gs_jw_obj(w);
    gs_jw_ki64(w, "rank", r->job->ranks[k].rank);
    gs_jw_key(w, "caused_ms");
    rep_json_ms(w, r->job->coll.step_ns[i]);
    gs_jw_key(w, "step_wait_ms");
    rep_json_ms(w, r->job->coll.step_total[i]);
    gs_jw_end(w);
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
    } else if (job->coll.changes) {
        gs_out_str(o, "<p id=\"straggler\"><b>No straggler:</b> ");
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
