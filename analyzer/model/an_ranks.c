/* an_ranks.c — a run as a job of ranks (an_ranks.h): the processes of each
 * rank, each rank analysed alone (an_analyze over a view of the run that
 * holds only its processes, so its loader workers are its own), and the
 * ranks' steps aligned by index to say which rank the others wait for
 * (docs/report-schema.md, "Ranks and the straggler").
 *
 * Must never: read trace files, print, divide by zero, or free what the
 * run owns (a view's processes are shallow copies of the run's).
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/an_ranks.h"
#include "model/an_jobs.h"
#include "gs_trace.h"

static double ms(uint64_t ns)
{
    return (double)ns / 1e6;
}

/* ---- which rank a process belongs to --------------------------------------------- */

/* The image of pid on host that ran first (lowest exec_seq), or NULL. */
static const an_proc *find_on_host(const an_run *run, uint64_t pid, const char *host)
{
    const an_proc *best = NULL;
    for (size_t i = 0; i < run->nprocs; i++) {
        const an_proc *q = &run->procs[i];
        if (q->pid == pid && strcmp(q->host, host) == 0 && (!best || q->exec_seq < best->exec_seq))
            best = q;
    }
    return best;
}

/* The rank the process knows: its header's (the launcher's variables),
 * else the Python side's distributed_rank configuration record; -1. */
static int32_t own_rank(const an_proc *p)
{
    if (p->rank >= 0)
        return p->rank;
    const char *v = an_cfg_value(p, "distributed_rank");
    if (!v)
        return -1;
    char *end;
    const long r = strtol(v, &end, 10);
    return *v && !*end && r >= 0 && r <= INT32_MAX ? (int32_t)r : -1;
}

int32_t an_proc_rank(const an_run *run, const an_proc *p)
{
    /* RATIONALE: a process whose environment lost the launcher's variables
     * (a program that scrubs its children's environment) still works for
     * the rank that started it. */
    for (int depth = 0; p && depth < 64; depth++) {
        const int32_t r = own_rank(p);
        if (r >= 0)
            return r;
        if (p->ppid == p->pid)
            break;
        p = find_on_host(run, p->ppid, p->host);
    }
    return -1;
}

int64_t an_job_clock_offset(const an_job *job, const an_run *run, const an_proc *p)
{
    if (!job || job->clock_ref < 0 || !p)
        return 0;
    const int32_t r = an_proc_rank(run, p);
    for (size_t k = 0; r >= 0 && k < job->nranks; k++)
        if (job->ranks[k].ok && job->ranks[k].rank == r)
            return job->ranks[k].clock_offset_ns;
    for (size_t k = 0; p->host && k < job->nranks; k++)
        if (job->ranks[k].ok && job->ranks[k].host && strcmp(job->ranks[k].host, p->host) == 0)
            return job->ranks[k].clock_offset_ns;
    return 0;
}

/* ---- the views -------------------------------------------------------------------- */

static int cmp_i32(const void *a, const void *b)
{
    const int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

/* Fill job->ranks with one view per distinct rank, of the processes of
 * job group sel (group NULL: every process). Returns 0 or -1 (memory). */
static int build_views(const an_run *run, an_job *job, const int32_t *group, int32_t sel)
{
    int32_t *rk = malloc((run->nprocs ? run->nprocs : 1) * sizeof *rk);
    int32_t *uniq = malloc((run->nprocs ? run->nprocs : 1) * sizeof *uniq);
    if (!rk || !uniq) {
        free(rk);
        free(uniq);
        return -1;
    }
    size_t nu = 0;
    for (size_t i = 0; i < run->nprocs; i++) {
        rk[i] = an_proc_rank(run, &run->procs[i]);
        if (group && rk[i] >= 0 && group[i] != sel) {
            rk[i] = -1; /* another job's */
            job->other_jobs++;
        } else if (rk[i] < 0) {
            job->unranked++;
        } else {
            uniq[nu++] = rk[i];
        }
    }
    qsort(uniq, nu, sizeof *uniq, cmp_i32);
    size_t n = 0;
    for (size_t i = 0; i < nu; i++)
        if (!n || uniq[n - 1] != uniq[i])
            uniq[n++] = uniq[i];
    job->ranks = calloc(n ? n : 1, sizeof *job->ranks);
    if (!job->ranks) {
        free(rk);
        free(uniq);
        return -1;
    }
    for (size_t k = 0; k < n; k++) {
        an_rank *R = &job->ranks[job->nranks++];
        R->rank = uniq[k];
        R->local_rank = R->world_size = -1;
        an_run *v = &R->view;
        v->dir = run->dir;
        size_t mine = 0;
        for (size_t i = 0; i < run->nprocs; i++)
            mine += rk[i] == R->rank;
        v->procs = malloc(mine * sizeof *v->procs);
        if (!v->procs) {
            free(rk);
            free(uniq);
            return -1;
        }
        v->capprocs = mine;
        for (size_t i = 0; i < run->nprocs; i++) {
            if (rk[i] != R->rank)
                continue;
            const an_proc *p = &run->procs[i];
            v->procs[v->nprocs++] = *p;
            v->events += p->events;
            v->dropped += p->dropped;
            v->lost += p->lost;
            v->recovered += p->recovered;
            v->abrupt += p->ended == GS_END_SIGNAL || p->ended == GS_END_ABRUPT;
            if (!R->host)
                R->host = p->host;
            if (R->local_rank < 0 && p->rank == R->rank)
                R->local_rank = p->local_rank;
            if (R->world_size < 0 && p->rank == R->rank)
                R->world_size = p->world_size;
            const char *ws = an_cfg_value(p, "distributed_world_size");
            if (R->world_size < 0 && ws && own_rank(p) == R->rank)
                R->world_size = atoi(ws);
        }
        v->nfiles = v->nprocs;
    }
    free(rk);
    free(uniq);
    return 0;
}

/* Processes of the rank started by no process of the rank on their host:
 * one for a rank of one job; more when runs or restarts of a rank were read
 * together, or the rank is in the job twice (*overlap: two of them ran at
 * the same time). */
static size_t rank_roots(const an_run *v, int *overlap)
{
    size_t n = 0;
    int64_t a0 = 0, b0 = 0;
    *overlap = 0;
    for (size_t i = 0; i < v->nprocs; i++) {
        const an_proc *p = &v->procs[i];
        if (p->exec_seq)
            continue;
        int parent_in = 0;
        for (size_t j = 0; j < v->nprocs && !parent_in; j++)
            parent_in = v->procs[j].pid == p->ppid && strcmp(v->procs[j].host, p->host) == 0;
        if (parent_in)
            continue;
        int64_t a, b;
        an_proc_realtime_span(p, &a, &b);
        /* RATIONALE: against the first root only: a restart follows it, a
         * duplicate runs beside it */
        if (n && a <= b0 && a0 <= b)
            *overlap = 1;
        if (!n++) {
            a0 = a;
            b0 = b;
        }
    }
    return n;
}

static void note_roots(an_rank *R)
{
    /* the rank's own analysis notes several runs too (an_separate_runs);
     * the job's text names the rank */
    R->roots = rank_roots(&R->view, &R->duplicated);
}

/* The ranks of 0..world-1 that no process here has. */
static int find_missing(an_job *job)
{
    job->world = -1;
    for (size_t k = 0; k < job->nranks; k++)
        if (job->ranks[k].world_size > job->world)
            job->world = job->ranks[k].world_size;
    /* RATIONALE: a world size from a damaged or hostile header is not a
     * reason to allocate gigabytes */
    if (job->world < 1 || job->world > (1 << 20))
        return 0;
    job->missing = malloc((size_t)job->world * sizeof *job->missing);
    if (!job->missing)
        return -1;
    size_t k = 0; /* the ranks are sorted */
    for (int32_t r = 0; r < job->world; r++) {
        while (k < job->nranks && job->ranks[k].rank < r)
            k++;
        if (k == job->nranks || job->ranks[k].rank != r)
            job->missing[job->nmissing++] = r;
    }
    return 0;
}

/* Which job of the traces to analyse: 0 when they hold one (group NULL),
 * else o->job - 1 with its group per process in *group; -1 with the jobs
 * named in err when there are several and none is chosen. */
static int choose_job(const an_run *run, const an_opts *o, an_job *job, int32_t **group,
                      char *err, size_t errlen)
{
    *group = malloc((run->nprocs ? run->nprocs : 1) * sizeof **group);
    if (!*group) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    const size_t ng = an_job_groups(run, an_proc_rank, *group);
    if (ng == (size_t)-1) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    job->jobs = ng ? ng : 1;
    if (ng <= 1) {
        free(*group);
        *group = NULL;
        return 0;
    }
    if (o->job >= 1 && (size_t)o->job <= ng)
        return o->job - 1;
    const size_t at = (size_t)snprintf(err, errlen, "the traces are of %zu jobs, not one (another "
                                                    "world size, or not running at the same "
                                                    "time):\n",
                                       ng);
    if (at < errlen)
        an_job_groups_describe(run, *group, ng, an_proc_rank, err + at, errlen - at);
    const size_t l = strlen(err);
    snprintf(err + l, errlen - l, "report one with --job N%s",
             o->job ? " (a number from the list)" : "");
    free(*group);
    *group = NULL;
    return -1;
}

static size_t count_hosts(const an_job *job)
{
    size_t n = 0;
    for (size_t k = 0; k < job->nranks; k++) {
        int seen = 0;
        for (size_t j = 0; j < k && !seen; j++)
            seen = strcmp(job->ranks[j].host, job->ranks[k].host) == 0;
        n += !seen;
    }
    return n;
}

/* ---- clocks ------------------------------------------------------------------------ */

static int cmp_i64(const void *a, const void *b)
{
    const int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* realtime - monotonic of the rank's trainer image (its header pair) */
static int64_t pair_of(const an_rank *R)
{
    const an_proc *p = R->res.trainer;
    return p ? (int64_t)(p->real_ns - p->mono_ns) : 0;
}

/* 1 when R shares F's CLOCK_MONOTONIC: the same host name and header pairs
 * that agree (AN_SAME_HOST_PAIR_NS); sets R->clock_separate when only the
 * name is the same. */
static int same_clock(an_rank *R, const an_rank *F)
{
    if (!R->host || !F->host || strcmp(R->host, F->host) != 0)
        return 0;
    const int64_t d = pair_of(R) - pair_of(F);
    R->clock_separate = d > AN_SAME_HOST_PAIR_NS || d < -AN_SAME_HOST_PAIR_NS;
    return !R->clock_separate;
}

/* Each rank's clock on the reference rank's: the same host shares its
 * CLOCK_MONOTONIC; another host is placed by the header pairs (its
 * realtime against the reference's, as far as the hosts' realtime clocks
 * agree), then moved so that the aligned steps end together: every rank
 * leaves a step's collectives at the same instant, and its step ends a
 * host-side moment later (RATIONALE: the median of the per-step
 * differences, so a rank descheduled at a few step ends does not move its
 * clock). E holds each rank's aligned step ends (m of them, n apart). The
 * collectives' own ends, where the GPU ran them, refine it further
 * (an_collectives.c). */
static void align_clocks(an_job *job, const uint64_t *E, size_t n, size_t m)
{
    job->clock_ref = -1;
    for (size_t k = 0; k < job->nranks && job->clock_ref < 0; k++)
        if (job->ranks[k].ok)
            job->clock_ref = (int)k;
    if (job->clock_ref < 0)
        return;
    const size_t f = (size_t)job->clock_ref;
    const an_rank *F = &job->ranks[f];
    int64_t *d = malloc((m ? m : 1) * sizeof *d);
    for (size_t k = 0; k < job->nranks; k++) {
        an_rank *R = &job->ranks[k];
        R->clock_src = AN_CLOCK_SAME_HOST;
        R->clock_offset_ns = R->clock_realtime_ns = R->clock_refined_ns = 0;
        R->clock_spread_ns = R->clock_max_ns = 0;
        R->clock_colls = 0;
        R->clock_separate = 0;
        if (!R->ok || k == f || same_clock(R, F))
            continue;
        R->clock_src = AN_CLOCK_REALTIME;
        R->clock_realtime_ns = pair_of(R) - pair_of(F);
        if (m && d) {
            for (size_t i = 0; i < m; i++)
                d[i] = (int64_t)E[f * n + i] - ((int64_t)E[k * n + i] + R->clock_realtime_ns);
            qsort(d, m, sizeof *d, cmp_i64);
            R->clock_refined_ns = d[m / 2];
            for (size_t i = 0; i < m; i++)
                d[i] = d[i] > R->clock_refined_ns ? d[i] - R->clock_refined_ns
                                                  : R->clock_refined_ns - d[i];
            qsort(d, m, sizeof *d, cmp_i64);
            R->clock_spread_ns = (uint64_t)d[m / 2];
            R->clock_src = AN_CLOCK_STEP_ENDS;
        }
        R->clock_offset_ns = R->clock_realtime_ns + R->clock_refined_ns;
    }
    free(d);
}

/* ---- alignment -------------------------------------------------------------------- */

typedef struct acc {
    uint64_t L, W, D, H, compute, pg;
} acc;

/* "ranks 0, 2" / "rank 0" of the ranks other than s that wait >= the
 * threshold, with their shares; returns how many. */
static size_t waiting_ranks(const an_job *job, size_t s, char *names, size_t nn, char *shares,
                            size_t ns)
{
    size_t cnt = 0, shown = 0;
    size_t lenn = 0, lens = 0;
    names[0] = shares[0] = '\0';
    for (size_t k = 0; k < job->nranks; k++) {
        const an_rank *R = &job->ranks[k];
        if (k == s || !R->ok || R->peer_wait_share < AN_STRAGGLER_MIN_SHARE)
            continue;
        cnt++;
        if (shown >= 4)
            continue;
        if (lenn < nn)
            lenn += (size_t)snprintf(names + lenn, nn - lenn, "%s%d", shown ? ", " : "", R->rank);
        if (lens < ns)
            lens += (size_t)snprintf(shares + lens, ns - lens, "%s%.0f%%", shown ? ", " : "",
                                     100 * R->peer_wait_share);
        shown++;
    }
    if (cnt > shown && lenn < nn)
        snprintf(names + lenn, nn - lenn, " and %zu more", cnt - shown);
    return cnt;
}

static void explain(an_job *job, const acc *a)
{
    const size_t s = (size_t)job->straggler;
    const an_rank *S = &job->ranks[s];
    const acc *x = &a[s];
    const double L = x->L ? (double)x->L : 1;
    /* an inferred wait was taken out of host time; a measured one is GPU
     * communication time, not host time */
    const double own_host = S->peer_src == AN_PEER_MEASURED ? (double)x->H
                            : x->H > x->W                   ? (double)(x->H - x->W)
                                                            : 0;
    /* the straggler's own largest cause */
    const double cause[4] = {(double)x->D / L, own_host / L, (double)x->compute / L,
                             (double)x->pg / L};
    int c = 0;
    for (int i = 1; i < 4; i++)
        if (cause[i] > cause[c])
            c = i;
    char own[200];
    switch (c) {
    case 0:
        snprintf(own, sizeof own, "rank %d waits for data %.0f%% of its step", S->rank,
                 100 * cause[0]);
        break;
    case 1:
        snprintf(own, sizeof own,
                 "rank %d is busy on the host %.0f%% of its step (not waiting for data, the GPU "
                 "or another rank)",
                 S->rank, 100 * cause[1]);
        break;
    case 2:
        snprintf(own, sizeof own, "rank %d's GPU computes %.0f%% of its step", S->rank,
                 100 * cause[2]);
        break;
    default:
        snprintf(own, sizeof own, "rank %d spends %.0f%% of its step in pageable copies", S->rank,
                 100 * cause[3]);
        break;
    }
    char names[160], shares[160];
    const size_t cnt = waiting_ranks(job, s, names, sizeof names, shares, sizeof shares);
    int measured = 0, inferred = 0;
    for (size_t k = 0; k < job->nranks; k++)
        if (k != s && job->ranks[k].ok && job->ranks[k].peer_wait_share >= AN_STRAGGLER_MIN_SHARE) {
            measured += job->ranks[k].peer_src == AN_PEER_MEASURED;
            inferred += job->ranks[k].peer_src == AN_PEER_INFERRED;
        }
    snprintf(job->why, sizeof job->why,
             "%s; rank%s %s wait%s for rank %d in collectives %s of %s step time (%s)", own,
             cnt == 1 ? "" : "s", names, cnt == 1 ? "s" : "", S->rank, shares,
             cnt == 1 ? "its" : "their",
             inferred && !measured ? "inferred from the aligned steps: host time beyond the "
                                     "slowest rank's data wait"
             : measured && !inferred ? "measured: communication kernels on the GPU"
                                     : "communication kernels where the GPU ran them, else "
                                       "inferred");
}

/* Without collectives: the straggler's cost, the others' waiting as the
 * aligned steps show it, over their aligned step time. */
static void inferred_cost(an_job *job, const acc *a)
{
    uint64_t w = 0, t = 0;
    for (size_t k = 0; k < job->nranks; k++)
        if ((int)k != job->straggler && job->ranks[k].ok) {
            w += a[k].W;
            t += a[k].L;
        }
    job->straggler_ns = w;
    job->straggler_share = t ? (double)w / (double)t : 0;
}

void an_job_align(an_job *job)
{
    job->limiting = job->straggler = job->clock_ref = -1;
    job->straggler_ns = 0;
    job->straggler_share = 0;
    job->why[0] = '\0';
    job->aligned = 0;
    job->step_ms = 0;
    size_t n = (size_t)-1, nok = 0;
    for (size_t k = 0; k < job->nranks; k++) {
        an_rank *R = &job->ranks[k];
        R->peer_src = AN_PEER_NONE;
        R->peer_wait_share = R->own_share = 0;
        R->limits_steps = 0;
        R->step_ms = R->ok ? R->res.step_ms_median : 0;
        if (!R->ok)
            continue;
        nok++;
        if (R->res.nsteps < n)
            n = R->res.nsteps;
    }
    if (!nok)
        return;
    acc *a = calloc(job->nranks, sizeof *a);
    double *Ls = malloc(job->nranks * (n ? n : 1) * sizeof *Ls);
    double *jobL = malloc((n ? n : 1) * sizeof *jobL);
    uint64_t *W = calloc(job->nranks, sizeof *W);
    uint64_t *E = malloc(job->nranks * (n ? n : 1) * sizeof *E);
    if (!a || !Ls || !jobL || !W || !E) {
        free(a);
        free(Ls);
        free(jobL);
        free(W);
        free(E);
        return;
    }
    for (size_t i = 0; i < n; i++) {
        int warm = 0;
        for (size_t k = 0; k < job->nranks; k++)
            warm |= job->ranks[k].ok && job->ranks[k].res.steps[i].warmup;
        if (warm)
            continue;
        size_t lim = (size_t)-1;
        uint64_t lim_own = 0, maxL = 0;
        /* the largest data wait of the step (rank top) and the largest of
         * the others: any rank's largest among the other ranks is one of
         * the two (RATIONALE: one pass per step, not one per rank) */
        uint64_t d1 = 0, d2 = 0;
        size_t top = (size_t)-1;
        for (size_t j = 0; j < job->nranks; j++) {
            if (!job->ranks[j].ok)
                continue;
            const uint64_t d = job->ranks[j].res.steps[i].v.idle_dw;
            if (top == (size_t)-1 || d > d1) {
                d2 = d1;
                d1 = d;
                top = j;
            } else if (d > d2) {
                d2 = d;
            }
        }
        for (size_t k = 0; k < job->nranks; k++) {
            const an_rank *R = &job->ranks[k];
            if (!R->ok)
                continue;
            const an_stepv *v = &R->res.steps[i].v;
            if (R->res.share[AN_SH_COMM] > 0) {
                W[k] = v->busy[AN_BUSY_COMM];
            } else {
                const uint64_t dmax = k == top ? d2 : d1;
                const uint64_t behind = dmax > v->idle_dw ? dmax - v->idle_dw : 0;
                W[k] = behind < v->idle_host ? behind : v->idle_host;
            }
            const uint64_t L = v->t1 - v->t0;
            const uint64_t own = L > W[k] ? L - W[k] : 0;
            if (lim == (size_t)-1 || own > lim_own) {
                lim = k;
                lim_own = own;
            }
            if (L > maxL)
                maxL = L;
            acc *x = &a[k];
            x->L += L;
            x->W += W[k];
            x->D += v->idle_dw;
            x->H += v->idle_host;
            x->compute += v->busy[AN_BUSY_COMPUTE];
            x->pg += v->busy[AN_BUSY_H2D_PAGEABLE] + v->idle_pg;
            Ls[k * n + job->aligned] = ms(L);
            E[k * n + job->aligned] = v->t1;
        }
        job->ranks[lim].limits_steps++;
        jobL[job->aligned++] = ms(maxL);
    }
    const size_t m = job->aligned;
    for (size_t k = 0; k < job->nranks; k++) {
        an_rank *R = &job->ranks[k];
        if (!R->ok || !m)
            continue;
        R->peer_src = R->res.share[AN_SH_COMM] > 0 ? AN_PEER_MEASURED : AN_PEER_INFERRED;
        R->peer_wait_share = a[k].L ? (double)a[k].W / (double)a[k].L : 0;
        R->own_share = 1 - R->peer_wait_share;
        R->step_ms = an_percentile(&Ls[k * n], m, 0.5);
    }
    job->step_ms = an_percentile(jobL, m, 0.5);
    align_clocks(job, E, n, m);
    /* the limiting rank: the one that limited most aligned steps; without
     * aligned steps, the slowest; ties go to the lower rank */
    for (size_t k = 0; k < job->nranks; k++) {
        const an_rank *R = &job->ranks[k];
        if (!R->ok)
            continue;
        if (job->limiting < 0) {
            job->limiting = (int)k;
            continue;
        }
        const an_rank *B = &job->ranks[job->limiting];
        if (m ? R->limits_steps > B->limits_steps : R->step_ms > B->step_ms)
            job->limiting = (int)k;
    }
    if (an_job_collectives(job) == 0 && job->coll.used) {
        /* the collectives say who was waited for */
        job->straggler = job->coll.straggler;
        if (job->straggler >= 0) {
            job->limiting = job->straggler;
            job->straggler_ns = job->ranks[job->straggler].caused_ns;
            job->straggler_share = job->coll.share;
        }
    } else if (m && nok >= 2) {
        for (size_t k = 0; k < job->nranks; k++)
            if ((int)k != job->limiting && job->ranks[k].ok &&
                job->ranks[k].peer_wait_share >= AN_STRAGGLER_MIN_SHARE)
                job->straggler = job->limiting;
        if (job->straggler >= 0) {
            explain(job, a);
            inferred_cost(job, a);
        }
    }
    free(a);
    free(Ls);
    free(jobL);
    free(W);
    free(E);
}

/* ---- the whole ------------------------------------------------------------------- */

int an_job_analyze(const an_run *run, const an_opts *o, an_job *job, char *err, size_t errlen)
{
    memset(job, 0, sizeof *job);
    job->limiting = job->straggler = job->clock_ref = -1;
    int32_t *group = NULL;
    const int sel = choose_job(run, o, job, &group, err, errlen);
    if (sel < 0)
        return -1;
    job->job_index = sel;
    const int built = build_views(run, job, group, sel);
    free(group);
    if (built < 0 || find_missing(job) < 0) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    size_t nok = 0;
    for (size_t k = 0; k < job->nranks; k++) {
        an_rank *R = &job->ranks[k];
        R->ok = an_analyze(&R->view, o, &R->res, R->err, sizeof R->err) == 0;
        if (R->ok) {
            nok++;
            R->host = R->res.trainer->host;
            note_roots(R);
        }
    }
    job->nhosts = count_hosts(job);
    if (!nok) {
        /* no rank (or none with steps): the run as one, as before ranks */
        for (size_t k = 0; k < job->nranks; k++)
            an_result_free(&job->ranks[k].res);
        if (an_analyze(run, o, &job->whole, err, errlen) < 0)
            return -1;
        job->top = &job->whole;
        return 0;
    }
    an_job_align(job);
    job->top = &job->ranks[job->limiting].res;
    job->top->job = job;
    return 0;
}

void an_job_free(an_job *job)
{
    an_coll_sum_free(&job->coll);
    for (size_t k = 0; k < job->nranks; k++) {
        free(job->ranks[k].waited_for_ns);
        an_result_free(&job->ranks[k].res);
        free(job->ranks[k].view.procs);
    }
    free(job->ranks);
    free(job->missing);
    an_result_free(&job->whole);
    memset(job, 0, sizeof *job);
}
