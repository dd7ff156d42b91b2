/* an_trainer_time.c — the training thread's own measured time over the
 * measured steps (an_cputime.h, docs/report-schema.md "Measured time"):
 * its waits for data cut into blocked (page faults among it), receiving
 * and waiting for a CPU; its CPU and run-queue delay per step; its collate
 * calls; its page faults per step; and, when it loads its batches itself
 * (no loader worker or thread), that loading in the parts of a loader's
 * batch.
 *
 * A step's wait is the union of its fetches that wait for data (a
 * DataLoader's or the program's batch fetch, a wait for a pool's result, a
 * short load of a mapped file: the marker classes of docs/trace-format.md)
 * that begin in the step; every end of that union is a marker with the
 * thread's clock sample, so each part is measured there, not spread.
 *
 * Must never: read trace files, print, divide by zero, or report a part it
 * did not measure as 0 (absent is -1).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "model/an_parts.h"
#include "model/an_result.h"
#include "gs_trace.h"

/* 1 when f is a wait for data: the same fetches an_events.c made data
 * wait of (a load longer than the lag was a mapping kept open). */
static int waits_for_data(const an_cpu_fetch *f)
{
    switch (f->mark) {
    case GS_MARK_PLAIN: case GS_MARK_EXPLICIT: case GS_MARK_WAIT:
    case GS_MARK_FORWARD: /* only those an_events.c counted are in the log */
        return 1;
    case GS_MARK_LOAD:
        return f->t1 - f->t0 <= AN_TL_LAG_NS;
    default:
        return 0;
    }
}

static int by_t0(const void *a, const void *b)
{
    const an_cpu_fetch *x = a, *y = b;
    return x->t0 < y->t0 ? -1 : x->t0 > y->t0;
}

/* The fetches of l of one kind (wait: waits for data; else collate), by
 * their start. NULL when none (or out of memory). */
static an_cpu_fetch *sorted(const an_cpu_log *l, int wait, size_t *n)
{
    *n = 0;
    an_cpu_fetch *v = l->nf ? malloc(l->nf * sizeof *v) : NULL;
    if (!v)
        return NULL;
    for (size_t i = 0; i < l->nf; i++)
        if (wait ? waits_for_data(&l->f[i]) : l->f[i].mark == GS_MARK_COLLATE)
            v[(*n)++] = l->f[i];
    qsort(v, *n, sizeof *v, by_t0);
    return v;
}

/* One step's wait: its fetches from *fi on that begin before t1, as a
 * union of segments, each measured between its end markers' samples. */
typedef struct step_wait {
    double wall, cpu, runq, rd_bytes, sock;
    int any, runq_known;
    an_parts parts; /* the segments cut as a loader's batch */
} step_wait;

static void wait_of_step(const an_cpu_log *l, const an_cpu_fetch *f, size_t nf, size_t *fi,
                         uint64_t t0, uint64_t t1, step_wait *w)
{
    memset(w, 0, sizeof *w);
    w->runq_known = 1;
    while (*fi < nf && f[*fi].t0 < t0)
        (*fi)++;
    size_t j = *fi;
    while (j < nf && f[j].t0 < t1) {
        uint64_t s0 = f[j].t0, s1 = f[j].t1;
        for (j++; j < nf && f[j].t0 <= s1; j++) /* overlapping: one segment */
            if (f[j].t1 > s1)
                s1 = f[j].t1;
        w->any = 1;
        w->wall += (double)(s1 - s0);
        const double c0 = an_cpu_value_at(l, s0, AN_CV_CPU), c1 = an_cpu_value_at(l, s1, AN_CV_CPU);
        w->cpu += c0 >= 0 && c1 >= 0 ? an_dpos(c1 - c0) : 0;
        const double q0 = an_cpu_value_at(l, s0, AN_CV_RUNQ), q1 = an_cpu_value_at(l, s1, AN_CV_RUNQ);
        if (q0 >= 0 && q1 >= 0)
            w->runq += an_dpos(q1 - q0);
        else
            w->runq_known = 0;
        const double k0 = an_cpu_value_at(l, s0, AN_CV_SOCK), k1 = an_cpu_value_at(l, s1, AN_CV_SOCK);
        w->sock += k0 >= 0 && k1 >= 0 ? an_dpos(k1 - k0) : 0;
        const size_t a = an_cpu_lower(l, s0), b = an_cpu_lower(l, s1);
        if (b < l->n && a < l->n)
            w->rd_bytes += an_dpos((double)l->s[b].rd_bytes - (double)l->s[a].rd_bytes);
        an_parts_span(l, s0, s1, &w->parts);
    }
}

/* Collate calls of step [t0, t1): their wall and CPU time (ns). */
static void collate_of_step(const an_cpu_log *l, const an_cpu_fetch *f, size_t nf, size_t *fi,
                            uint64_t t0, uint64_t t1, double *wall, double *cpu)
{
    *wall = *cpu = 0;
    while (*fi < nf && f[*fi].t0 < t0)
        (*fi)++;
    for (size_t j = *fi; j < nf && f[j].t0 < t1; j++) {
        *wall += (double)(f[j].t1 - f[j].t0);
        *cpu += (double)(f[j].cpu1 - f[j].cpu0);
    }
    (void)l;
}

/* Per-step values, one array each (ns, or counts). */
enum { V_BLK, V_RECV, V_FRQ, V_CPU, V_RQ, V_FAULT, V_MAJ, V_COLL, V_COLLCPU,
       V_LWALL, V_LIO, V_LFAULT, V_LCPU, V_LRUNQ, V_LBLK, V_SOCK, V_N };

/* The training thread loads its own batches (no loader worker or thread):
 * its waits are that loading, as a loader's batch a step (medians, and
 * means for the model). */
static void in_thread_loader(an_result *res, double **v, size_t n, const an_parts *tot,
                             double rd_bytes)
{
    an_loader_time *t = &res->loader_time;
    if (res->nworkers || res->cur_workers > 0 || n < 3)
        return;
    t->measured = 1;
    t->in_thread = 1;
    t->per_batch = AN_PB_MARKERS;
    t->batches = (double)n;
    double *const six[6] = {v[V_LWALL], v[V_LIO], v[V_LCPU], v[V_LRUNQ], v[V_LFAULT], v[V_LBLK]};
    an_parts_stats(t, six, n, tot);
    t->majflt = tot->maj_known ? tot->maj / (double)n : -1;
    t->fault_bytes = tot->maj_known ? tot->fbytes / (double)n : -1;
    t->fault_MBps = tot->maj_known && tot->fault > 0 ? tot->fbytes / 1e6 / (tot->fault / 1e9) : -1;
    t->storage_bytes = tot->storage_known ? tot->storage / (double)n : -1;
    t->read_bytes = t->requested_bytes = rd_bytes / (double)n;
    t->vol_switches = tot->sw_known ? tot->nv / (double)n : -1;
    t->invol_switches = tot->sw_known ? tot->niv / (double)n : -1;
    t->cpu_cores = -1; /* the training thread's: said beside it */
}

/* The summaries of the per-step values (an_trainer_time's fields). */
static void summarize(an_result *res, double **v, size_t nf, size_t nfr, size_t nc, size_t nr,
                      size_t ncol, const double sums[4], double total)
{
    an_trainer_time *t = &res->trainer_time;
    if (nf) {
        t->measured = 1;
        t->blocked_mean_ms = an_mean(v[V_BLK], nf);
        t->receiving_mean_ms = an_mean(v[V_RECV], nf);
        t->blocked_ms = an_median(v[V_BLK], nf);
        t->receiving_ms = an_median(v[V_RECV], nf);
        t->fetch_runq_ms = nfr * 2 >= nf ? an_median(v[V_FRQ], nfr) : -1;
        t->fetch_fault_ms = an_median(v[V_FAULT], nf);
        t->socket_ms = an_median(v[V_SOCK], nf);
        t->socket_mean_ms = an_mean(v[V_SOCK], nf);
        if (total > 0) {
            t->share_receiving = sums[0] / total;
            t->share_receiving_runq = an_dmin(sums[1] / total, t->share_receiving);
            t->share_blocked = an_dpos(res->share[AN_SH_DATA_WAIT] - t->share_receiving);
            t->share_blocked_fault = an_dmin(sums[2] / total, t->share_blocked);
        }
    }
    if (nc) {
        t->measured = 1;
        t->cpu_mean_ms = an_mean(v[V_CPU], nc);
        t->cpu_ms = an_median(v[V_CPU], nc);
        t->cpu_cores = res->step_ms_median > 0 ? t->cpu_ms / res->step_ms_median : -1;
        t->majflt = an_mean(v[V_MAJ], nc);
    }
    if (nr) {
        t->runq_mean_ms = an_mean(v[V_RQ], nr);
        t->runq_ms = an_median(v[V_RQ], nr);
    }
    if (ncol) {
        t->collate_ms = an_mean(v[V_COLL], ncol);
        t->collate_cpu_ms = an_mean(v[V_COLLCPU], ncol);
    }
    (void)sums[3];
}

/* The training thread's major faults over [a, b] and the bytes read
 * through them: its storage reads beyond what its hooked reads returned
 * (over a window of steps the periodic samples' storage counts are
 * exact at its ends but for the interpolation there). */
static void window_faults(const an_cpu_log *l, uint64_t a, uint64_t b, an_trainer_time *t)
{
    const double f0 = an_cpu_value_at(l, a, AN_CV_MAJFLT), f1 = an_cpu_value_at(l, b, AN_CV_MAJFLT);
    if (f0 < 0 || f1 < 0)
        return;
    t->window_majflt = an_dpos(f1 - f0);
    uint64_t cov;
    const double st = an_cpu_delta(l, a, b, AN_CV_STORAGE, &cov);
    const size_t i = an_cpu_lower(l, a), j = an_cpu_lower(l, b);
    if (st < 0 || cov * 2 < b - a || i >= l->n || j >= l->n)
        return;
    const double rd = an_dpos((double)l->s[j].rd_bytes - (double)l->s[i].rd_bytes);
    t->window_fault_bytes = an_dpos(st - rd);
}

void an_trainer_time_measure(an_result *res)
{
    const an_thread *th = res->thread;
    const an_cpu_log *l = th ? th->cpu : NULL;
    if (!l || !res->measured)
        return;
    const size_t m = res->measured;
    double *buf = malloc(V_N * m * sizeof *buf), *v[V_N];
    size_t nw, ncf;
    an_cpu_fetch *wf = sorted(l, 1, &nw), *cf = sorted(l, 0, &ncf);
    if (!buf) {
        free(wf);
        free(cf);
        return;
    }
    for (int k = 0; k < V_N; k++)
        v[k] = buf + (size_t)k * m;
    size_t nf = 0, nfr = 0, nc = 0, nr = 0, ncol = 0, wi = 0, ci = 0;
    double sums[4] = {0}, total = 0, rd = 0; /* receiving, its runq, faults; - */
    an_parts tot;
    memset(&tot, 0, sizeof tot);
    for (size_t i = 0; i < res->nsteps; i++) {
        const an_step *st = &res->steps[i];
        if (st->warmup)
            continue;
        const uint64_t t0 = st->v.t0, t1 = st->v.t1;
        total += (double)(t1 - t0);
        step_wait w;
        wait_of_step(l, wf, nw, &wi, t0, t1, &w);
        if (w.any) {
            const double r = an_dmin(w.cpu, w.wall), q = an_dmin(w.runq, w.wall - r);
            const an_parts *p = &w.parts;
            v[V_BLK][nf] = (w.wall - r - q) / 1e6;
            v[V_SOCK][nf] = an_dmin(w.sock, w.wall - r - q) / 1e6; /* off-CPU, in blocked */
            v[V_RECV][nf] = r / 1e6;
            v[V_FAULT][nf] = p->fault / 1e6;
            v[V_LWALL][nf] = w.wall / 1e6;
            v[V_LIO][nf] = p->io / 1e6;
            v[V_LFAULT][nf] = p->fault / 1e6;
            v[V_LCPU][nf] = p->cpu / 1e6;
            v[V_LRUNQ][nf] = p->runq / 1e6;
            v[V_LBLK][nf] = (p->blk + p->wait) / 1e6;
            nf++;
            if (w.runq_known)
                v[V_FRQ][nfr++] = q / 1e6;
            if (w.wall > 0) {
                const double dw = (double)st->v.idle_dw;
                sums[0] += dw * an_dmin(1.0, (r + q) / w.wall);
                sums[1] += dw * an_dmin(1.0, q / w.wall);
                sums[2] += dw * an_dmin(1.0, p->fault / w.wall);
            }
            an_parts_add(&tot, p);
            rd += w.rd_bytes;
        }
        double cw, cc;
        collate_of_step(l, cf, ncf, &ci, t0, t1, &cw, &cc);
        if (ncf) {
            v[V_COLL][ncol] = cw / 1e6;
            v[V_COLLCPU][ncol++] = cc / 1e6;
        }
        const double c0 = an_cpu_value_at(l, t0, AN_CV_CPU), c1 = an_cpu_value_at(l, t1, AN_CV_CPU);
        if (c0 >= 0 && c1 >= 0) {
            const double f0 = an_cpu_value_at(l, t0, AN_CV_MAJFLT), f1 = an_cpu_value_at(l, t1, AN_CV_MAJFLT);
            v[V_MAJ][nc] = f0 >= 0 && f1 >= 0 ? an_dpos(f1 - f0) : 0;
            v[V_CPU][nc++] = an_dpos(c1 - c0) / 1e6;
        }
        const double q0 = an_cpu_value_at(l, t0, AN_CV_RUNQ), q1 = an_cpu_value_at(l, t1, AN_CV_RUNQ);
        if (q0 >= 0 && q1 >= 0)
            v[V_RQ][nr++] = an_dpos(q1 - q0) / 1e6;
    }
    summarize(res, v, nf, nfr, nc, nr, ncol, sums, total);
    uint64_t a, b;
    an_measured_window(res, &a, &b);
    if (b > a)
        window_faults(l, a, b, &res->trainer_time);
    if (nf * 2 >= m) /* most steps wait: a loader, not a stray wait */
        in_thread_loader(res, v, nf, &tot, rd);
    free(buf);
    free(wf);
    free(cf);
}
