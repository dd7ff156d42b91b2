/* an_cputime.c — the measured parts of a loader's batch and of the
 * trainer's wait, from the threads' CPU samples (an_cputime.h,
 * docs/report-schema.md "Measured time").
 *
 * Must never: read trace files, print, divide by zero, or report a part it
 * did not measure as 0 (absent is -1).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/an_stats.h"
#include "model/an_parts.h"
#include "model/an_result.h"
#include "gs_trace.h"

void an_loader_time_absent(an_loader_time *t)
{
    memset(t, 0, sizeof *t);
    t->measured = 0;
    t->per_batch = AN_PB_NONE;
    t->batches = t->wall_ms = t->io_ms = t->fault_ms = t->cpu_ms = t->runq_ms = -1;
    t->blocked_ms = t->read_bytes = t->requested_bytes = t->majflt = t->fault_bytes = -1;
    t->storage_bytes = -1;
    t->fault_MBps = t->vol_switches = t->invol_switches = t->cpu_cores = -1;
    t->units = t->collate_ms = t->collate_cpu_ms = -1;
    t->wall_mean_ms = t->io_mean_ms = t->fault_mean_ms = t->cpu_mean_ms = t->runq_mean_ms = -1;
    t->blocked_mean_ms = -1;
}

void an_trainer_time_absent(an_trainer_time *t)
{
    memset(t, 0, sizeof *t);
    t->blocked_ms = t->receiving_ms = t->fetch_runq_ms = t->cpu_ms = t->runq_ms = -1;
    t->cpu_cores = t->proc_cpu_cores = t->share_blocked = t->share_receiving = -1;
    t->socket_ms = t->socket_mean_ms = -1;
    t->share_receiving_runq = -1;
    t->blocked_mean_ms = t->receiving_mean_ms = t->cpu_mean_ms = t->runq_mean_ms = -1;
    t->share_blocked_fault = t->fetch_fault_ms = t->majflt = -1;
    t->window_majflt = t->window_fault_bytes = -1;
    t->collate_ms = t->collate_cpu_ms = -1;
}

void an_other_time_absent(an_other_time *t)
{
    memset(t, 0, sizeof *t);
    t->cpu_cores = t->runq_ms_per_step = -1;
}

void an_host_time_absent(an_host_time *t)
{
    memset(t, 0, sizeof *t);
    t->cpus = t->busy_cores = t->own_cores = t->other_cores = t->window_s = -1;
}

/* ---- a loader's batch --------------------------------------------------------------- */

static void fill(an_loader_time *t, const an_parts *s, double per, double wall_ns)
{
    const double k = 1e-6 / per; /* ns in total -> ms per batch */
    t->wall_ms = wall_ns * k;
    t->io_ms = s->io * k;
    t->cpu_ms = s->cpu * k;
    t->runq_ms = s->runq_known ? s->runq * k : -1;
    t->fault_ms = s->maj_known ? s->fault * k : -1;
    t->blocked_ms = s->blk * k + (s->maj_known ? 0 : s->fault * k);
    t->majflt = s->maj_known ? s->maj / per : -1;
    t->storage_bytes = s->storage_known ? s->storage / per : -1;
    t->fault_bytes = s->maj_known ? s->fbytes / per : -1;
    t->fault_MBps = (s->maj_known && s->fault > 0) ? s->fbytes / 1e6 / (s->fault / 1e9) : -1;
    t->vol_switches = s->sw_known ? s->nv / per : -1;
    t->invol_switches = s->sw_known ? s->niv / per : -1;
    t->cpu_cores = s->dt > 0 ? s->dcpu / s->dt : -1;
    t->wall_mean_ms = t->wall_ms;
    t->io_mean_ms = t->io_ms;
    t->fault_mean_ms = t->fault_ms;
    t->cpu_mean_ms = t->cpu_ms;
    t->runq_mean_ms = t->runq_ms;
    t->blocked_mean_ms = t->blocked_ms;
}

/* The thread of a worker process that loads: the one that read the most,
 * else its main thread. */
static const an_thread *loader_thread(const an_worker *w)
{
    if (w->th)
        return w->th;
    const an_proc *p = w->p;
    const an_thread *best = NULL;
    for (size_t i = 0; i < p->nth; i++) {
        const an_thread *th = &p->th[i];
        if (!th->cpu)
            continue;
        if (!best || th->rd_reqs > best->rd_reqs ||
            (th->rd_reqs == best->rd_reqs && th->tid == p->pid))
            best = th;
    }
    return best;
}

/* Batches cut at the loader's own marker samples: medians. A loader
 * worker process's batch is one fetch_begin..fetch_end pair (fetches: the
 * batches it loaded, docs/trace-format.md); a C loader thread's, from one
 * step_end to the next. A batch counts when its last marker is in [a, b]. */
static int is_cut(const an_cpu_sample *x, int fetches, uint64_t a, uint64_t b)
{
    return x->marker == (fetches ? GS_K_FETCH_END : GS_K_STEP_END) && x->mark == GS_MARK_PLAIN &&
           x->ts >= a && x->ts <= b;
}

static int by_markers(const an_cpu_log *l, uint64_t a, uint64_t b, int fetches, an_loader_time *t)
{
    size_t nb = 0;
    for (size_t i = 0; i < l->n; i++)
        nb += is_cut(&l->s[i], fetches, a, b);
    if (nb < 3)
        return 0;
    double *v = malloc(11 * nb * sizeof *v);
    if (!v)
        return 0;
    double *wall = v, *io = v + nb, *cpu = v + 2 * nb, *runq = v + 3 * nb, *fault = v + 4 * nb,
           *blk = v + 5 * nb, *maj = v + 6 * nb, *nv = v + 7 * nb, *niv = v + 8 * nb,
           *cores = v + 9 * nb;
    size_t k = 0, prev = SIZE_MAX;
    an_parts tot;
    memset(&tot, 0, sizeof tot);
    for (size_t i = 0; i < l->n; i++) {
        if (fetches && l->s[i].marker == GS_K_FETCH_BEGIN && l->s[i].mark == GS_MARK_PLAIN) {
            prev = i; /* a begin without its end (the fetch raised) is dropped */
            continue;
        }
        if (!is_cut(&l->s[i], fetches, a, b)) {
            if (fetches && l->s[i].marker == GS_K_FETCH_END && l->s[i].mark == GS_MARK_PLAIN)
                prev = SIZE_MAX;
            continue;
        }
        if (prev != SIZE_MAX) {
            an_parts s;
            memset(&s, 0, sizeof s);
            an_parts_span(l, l->s[prev].ts, l->s[i].ts, &s);
            const double busy = s.dt - s.wait;
            wall[k] = busy / 1e6;
            io[k] = s.io / 1e6;
            cpu[k] = s.cpu / 1e6;
            runq[k] = s.runq / 1e6;
            fault[k] = s.fault / 1e6;
            blk[k] = s.blk / 1e6;
            maj[k] = s.maj;
            nv[k] = s.nv;
            niv[k] = s.niv;
            cores[k] = s.dt > 0 ? s.dcpu / s.dt : 0;
            tot.runq_known |= s.runq_known;
            tot.maj_known |= s.maj_known;
            tot.sw_known |= s.sw_known;
            tot.fault += s.fault;
            tot.maj += s.maj;
            tot.fbytes += s.fbytes;
            tot.storage += s.storage;
            tot.storage_known |= s.storage_known;
            k++;
        }
        prev = fetches ? SIZE_MAX : i;
    }
    if (!k) {
        free(v);
        return 0;
    }
    t->per_batch = AN_PB_MARKERS;
    if (!tot.maj_known)
        for (size_t i = 0; i < k; i++)
            blk[i] += fault[i];
    double *const six[6] = {wall, io, cpu, runq, fault, blk};
    an_parts_stats(t, six, k, &tot);
    t->majflt = tot.maj_known ? an_median(maj, k) : -1;
    t->fault_bytes = tot.maj_known ? tot.fbytes / (double)k : -1;
    t->storage_bytes = tot.storage_known ? tot.storage / (double)k : -1;
    t->fault_MBps = (tot.maj_known && tot.fault > 0) ? tot.fbytes / 1e6 / (tot.fault / 1e9) : -1;
    t->vol_switches = tot.sw_known ? an_median(nv, k) : -1;
    t->invol_switches = tot.sw_known ? an_median(niv, k) : -1;
    t->cpu_cores = an_median(cores, k);
    if (fetches) { /* its batches leave out the time between them: its CPU over the window */
        size_t i0 = SIZE_MAX, i1 = 0;
        for (size_t i = 0; i < l->n; i++)
            if (l->s[i].ts >= a && l->s[i].ts <= b) {
                i0 = i0 == SIZE_MAX ? i : i0;
                i1 = i;
            }
        if (i0 != SIZE_MAX && i1 > i0 && l->s[i1].ts > l->s[i0].ts)
            t->cpu_cores = an_dpos((double)l->s[i1].cpu_ns - (double)l->s[i0].cpu_ns) /
                           (double)(l->s[i1].ts - l->s[i0].ts);
    }
    free(v);
    return 1;
}

/* A pool thread's work items (`item` markers) that end in [a, b], cut at
 * their own samples and summed; per: the batches they made (the thread's
 * share of the steps in the window). Means per batch. */
static int by_items(const an_cpu_log *l, uint64_t a, uint64_t b, double per, an_loader_time *t)
{
    an_parts s;
    memset(&s, 0, sizeof s);
    size_t n = 0;
    for (size_t i = 0; i < l->nf; i++) {
        const an_cpu_fetch *f = &l->f[i];
        if (f->mark != GS_MARK_ITEM || f->t1 < a || f->t1 > b)
            continue;
        if (an_parts_span(l, f->t0, f->t1, &s))
            n++;
    }
    if (n < 3 || per <= 0)
        return 0;
    t->per_batch = AN_PB_ITEMS;
    t->units = (double)n;
    /* a pool thread's waits on pipes inside an item are its loading's */
    s.blk += s.wait;
    fill(t, &s, per, s.dt);
    t->batches = per;
    return 1;
}

/* Collate calls (`collate` markers) of a worker's batches in [a, b]:
 * wall and CPU per batch, means. */
static void collates(const an_cpu_log *l, uint64_t a, uint64_t b, an_loader_time *t)
{
    double wall = 0, cpu = 0;
    size_t n = 0, nb = 0;
    for (size_t i = 0; i < l->nf; i++) {
        const an_cpu_fetch *f = &l->f[i];
        if (f->t1 < a || f->t1 > b)
            continue;
        if (f->mark == GS_MARK_COLLATE) {
            wall += (double)(f->t1 - f->t0);
            cpu += (double)(f->cpu1 - f->cpu0);
            n++;
        }
        nb += f->mark == GS_MARK_PLAIN;
    }
    if (!n)
        return;
    const double k = 1e-6 / (double)(nb > n ? nb : n);
    t->collate_ms = wall * k;
    t->collate_cpu_ms = cpu * k;
}

static void loader_time(an_worker *w, uint64_t wa, uint64_t wb, double in_window)
{
    an_loader_time *t = &w->time;
    const an_thread *th = loader_thread(w);
    const an_cpu_log *l = th ? th->cpu : NULL;
    if (!l || l->n < 2 || w->batches <= 0)
        return;
    uint64_t a = wa > l->s[0].ts ? wa : l->s[0].ts;
    uint64_t b = wb < l->s[l->n - 1].ts ? wb : l->s[l->n - 1].ts;
    if (b <= a) { /* the loader ran outside the measured steps: all of it */
        a = l->s[0].ts;
        b = l->s[l->n - 1].ts;
    }
    t->batches = w->batches;
    const double bytes = w->th ? (double)w->th->rd_bytes : (double)w->p->rd_bytes;
    const double rq = w->th ? (double)w->th->rq_bytes : (double)w->p->rq_bytes;
    t->read_bytes = bytes / w->batches;
    t->requested_bytes = rq / w->batches;
    const int fetches = !w->th && an_is_worker_role(w->p);
    if (w->th && w->th->n_items && by_items(l, wa, wb, w->batches * in_window, t)) {
        t->measured = 1;
        return;
    }
    /* a worker whose marked batches fall mostly outside the measured steps
     * (prefetched ahead of a short run): all of them, still its own batches */
    if (by_markers(l, a, b, fetches, t) || (fetches && by_markers(l, a, b, 0, t)) ||
        (fetches && by_markers(l, l->s[0].ts, l->s[l->n - 1].ts, 1, t))) {
        t->measured = 1;
        if (fetches)
            collates(l, a, b, t);
        if (fetches && t->collate_ms < 0)
            collates(l, l->s[0].ts, l->s[l->n - 1].ts, t);
        return;
    }
    an_parts s;
    memset(&s, 0, sizeof s);
    /* every sampled interval that overlaps the window, whole: samples are
     * 200 ms apart, a short-lived worker has only a few */
    size_t i0 = an_cpu_lower(l, a), i1;
    if (i0 > 0 && (i0 == l->n || l->s[i0].ts > a))
        i0--;
    for (i1 = i0; i1 + 1 < l->n && l->s[i1].ts < b; i1++)
        an_parts_interval(l, &l->s[i1], &l->s[i1 + 1], &s);
    /* batches inside the window: in proportion to the loader's file reads
     * there when every batch reads (one batch reads about as many times as
     * the next), else to its active time (a loader that maps its data, or
     * whose few reads were its start-up) */
    const uint64_t span = w->th ? (th->last_ts > th->first_ts ? th->last_ts - th->first_ts : 0)
                                : w->active_ns;
    const double reads_in = i1 > i0 ? (double)(l->s[i1].reads - l->s[i0].reads) : 0;
    const double per = th->rd_reqs >= 8 && (double)th->rd_reqs >= w->batches && reads_in > 0
                           ? w->batches * an_dmin(1.0, reads_in / (double)th->rd_reqs)
                       : span ? w->batches * an_dmin(1.0, s.dt / (double)span)
                              : 0;
    if (s.dt <= 0 || per <= 0)
        return;
    t->measured = 1;
    t->per_batch = AN_PB_PERIODIC;
    fill(t, &s, per, s.dt - s.wait);
}

/* ---- the trainer --------------------------------------------------------------------- */

static int is_loader_thread(const an_result *res, const an_thread *th)
{
    for (size_t i = 0; i < res->nworkers; i++)
        if (res->workers[i].th == th)
            return 1;
    return 0;
}

static int is_worker_proc(const an_result *res, const an_proc *p)
{
    for (size_t i = 0; i < res->nworkers; i++)
        if (!res->workers[i].th && res->workers[i].p == p)
            return 1;
    return 0;
}

static int is_collector(const an_thread *th)
{
    return strcmp(th->name, "gpustarve") == 0;
}

/* ---- everything else ------------------------------------------------------------------ */

static void others(const an_run *run, an_result *res, uint64_t a, uint64_t b)
{
    an_trainer_time *t = &res->trainer_time;
    an_other_time *o = &res->other_time;
    if (b <= a)
        return;
    const double wall = (double)(b - a);
    double proc_cpu = 0, other_cpu = 0, other_runq = 0;
    int proc_any = 0, runq_any = 0;
    for (size_t i = 0; i < run->nprocs; i++) {
        const an_proc *p = &run->procs[i];
        if (is_worker_proc(res, p))
            continue;
        for (size_t j = 0; j < p->nth; j++) {
            const an_thread *th = &p->th[j];
            if (!th->cpu || is_collector(th) || is_loader_thread(res, th))
                continue;
            uint64_t cov;
            const double c = an_cpu_delta(th->cpu, a, b, AN_CV_CPU, &cov);
            if (c < 0)
                continue;
            if (p == res->trainer) {
                proc_cpu += c;
                proc_any = 1;
            }
            if (th == res->thread)
                continue;
            other_cpu += c;
            o->threads++;
            const double q = an_cpu_delta(th->cpu, a, b, AN_CV_RUNQ, &cov);
            if (q >= 0) {
                other_runq += q;
                runq_any = 1;
            }
        }
    }
    if (proc_any)
        t->proc_cpu_cores = proc_cpu / wall;
    o->measured = 1;
    o->cpu_cores = other_cpu / wall;
    o->runq_ms_per_step = runq_any && res->measured ? other_runq / 1e6 / (double)res->measured : -1;
}

/* A host sample's cumulative busy and idle ns at t, linear between the
 * samples around it (t within them). */
static void host_at(const an_proc *p, uint64_t t, double *busy, double *idle)
{
    size_t lo = 0, hi = p->nhcpu - 1;
    while (hi - lo > 1) {
        const size_t mid = (lo + hi) / 2;
        if (p->hcpu[mid].ts <= t)
            lo = mid;
        else
            hi = mid;
    }
    const struct an_host_sample *x = &p->hcpu[lo], *y = &p->hcpu[hi];
    const double f = y->ts > x->ts ? (double)(t - x->ts) / (double)(y->ts - x->ts) : 0;
    *busy = (double)x->busy_ns + f * ((double)y->busy_ns - (double)x->busy_ns);
    *idle = (double)x->idle_ns + f * ((double)y->idle_ns - (double)x->idle_ns);
}

/* The machine beside the run over [a, b]: the trainer's host samples (else
 * any process's), against the CPU of every traced thread of the run. */
static void host_load(const an_run *run, an_result *res, uint64_t a, uint64_t b)
{
    an_host_time *h = &res->host_time;
    const an_proc *hp = res->trainer && res->trainer->nhcpu >= 2 ? res->trainer : NULL;
    int some = 0; /* a process with one sample: records, too few to span anything */
    for (size_t i = 0; !hp && i < run->nprocs; i++) {
        some |= run->procs[i].nhcpu > 0;
        if (run->procs[i].nhcpu >= 2)
            hp = &run->procs[i];
    }
    if (hp ? !hp->host_cpus : !some)
        return; /* AN_HOST_NO_RECORDS */
    if (!hp || b <= a) {
        h->gap = AN_HOST_SHORT;
        h->window_s = 0;
        return;
    }
    /* the part of [a, b] the samples cover: at least half of it */
    const uint64_t ka = hp->hcpu[0].ts > a ? hp->hcpu[0].ts : a;
    const uint64_t kb = hp->hcpu[hp->nhcpu - 1].ts < b ? hp->hcpu[hp->nhcpu - 1].ts : b;
    const uint64_t cover = kb > ka ? kb - ka : 0;
    if (cover < AN_HOST_MIN_WINDOW_NS || cover * 2 < b - a) {
        h->gap = cover < AN_HOST_MIN_WINDOW_NS ? AN_HOST_SHORT : AN_HOST_PARTIAL;
        h->window_s = (double)cover / 1e9;
        return;
    }
    double b0, i0, b1, i1;
    host_at(hp, ka, &b0, &i0);
    host_at(hp, kb, &b1, &i1);
    const double db = an_dpos(b1 - b0), di = an_dpos(i1 - i0);
    if (db + di <= 0)
        return;
    const double wall = (double)(kb - ka);
    double own = 0;
    for (size_t i = 0; i < run->nprocs; i++) {
        const an_proc *p = &run->procs[i];
        for (size_t j = 0; j < p->nth; j++) {
            uint64_t cov;
            const double c = p->th[j].cpu ? an_cpu_delta(p->th[j].cpu, ka, kb, AN_CV_CPU, &cov) : -1;
            if (c > 0)
                own += c;
        }
    }
    h->measured = 1;
    h->cpus = (double)hp->host_cpus;
    /* busy over busy + idle, not over wall time: both tick alike */
    h->busy_cores = h->cpus * db / (db + di);
    h->own_cores = own / wall;
    h->other_cores = an_dpos(h->busy_cores - h->own_cores);
    h->window_s = wall / 1e9;
}

/* The pool as one: each field a batch-weighted mean over measured workers. */
static void pool(an_result *res)
{
    an_loader_time *p = &res->loader_time;
    double wsum = 0;
    double acc[24] = {0};
    int have[24] = {0};
    int periodic = 0, items = 0;
    for (size_t i = 0; i < res->nworkers; i++) {
        const an_loader_time *t = &res->workers[i].time;
        if (!t->measured)
            continue;
        const double w = t->batches > 0 ? t->batches : 1;
        const double f[24] = {t->wall_ms,  t->io_ms,        t->fault_ms,    t->cpu_ms,
                              t->runq_ms,  t->blocked_ms,   t->read_bytes,  t->requested_bytes,
                              t->majflt,   t->fault_bytes,  t->fault_MBps,  t->vol_switches,
                              t->invol_switches, t->cpu_cores, t->storage_bytes,
                              t->wall_mean_ms, t->io_mean_ms, t->fault_mean_ms, t->cpu_mean_ms,
                              t->runq_mean_ms, t->blocked_mean_ms, t->collate_ms,
                              t->collate_cpu_ms, 0};
        for (int k = 0; k < 23; k++)
            if (f[k] >= 0) {
                acc[k] += w * f[k];
                have[k] = 1;
            }
        wsum += w;
        periodic |= t->per_batch == AN_PB_PERIODIC;
        items |= t->per_batch == AN_PB_ITEMS;
    }
    if (wsum <= 0)
        return;
    double *out[23] = {&p->wall_ms,  &p->io_ms,       &p->fault_ms,   &p->cpu_ms,
                       &p->runq_ms,  &p->blocked_ms,  &p->read_bytes, &p->requested_bytes,
                       &p->majflt,   &p->fault_bytes, &p->fault_MBps, &p->vol_switches,
                       &p->invol_switches, &p->cpu_cores, &p->storage_bytes,
                       &p->wall_mean_ms, &p->io_mean_ms, &p->fault_mean_ms, &p->cpu_mean_ms,
                       &p->runq_mean_ms, &p->blocked_mean_ms, &p->collate_ms,
                       &p->collate_cpu_ms};
    for (int k = 0; k < 23; k++)
        *out[k] = have[k] ? acc[k] / wsum : -1;
    p->measured = 1;
    p->per_batch = periodic ? AN_PB_PERIODIC : items ? AN_PB_ITEMS : AN_PB_MARKERS;
    p->batches = 0;
    for (size_t i = 0; i < res->nworkers; i++)
        if (res->workers[i].time.measured)
            p->batches += res->workers[i].time.batches;
    p->cpu_cores = 0; /* the pool's cores: the sum, not the mean */
    for (size_t i = 0; i < res->nworkers; i++)
        if (res->workers[i].time.measured && res->workers[i].time.cpu_cores > 0)
            p->cpu_cores += res->workers[i].time.cpu_cores;
}

void an_measure_time(const an_run *run, an_result *res)
{
    uint64_t a, b;
    an_measured_window(res, &a, &b);
    if (a == UINT64_MAX)
        return;
    /* the share of all steps in the measured window (a pool thread's
     * batches are its share of all steps) */
    const double in_window = res->nsteps ? (double)res->measured / (double)res->nsteps : 0;
    for (size_t i = 0; i < res->nworkers; i++)
        loader_time(&res->workers[i], a, b, in_window);
    pool(res);
    an_trainer_time_measure(res);
    others(run, res, a, b);
    host_load(run, res, a, b);
}
