/* an_parts.c — a thread's clock samples cut into the parts of a loader's
 * batch (an_parts.h), and the mean and median the measured time reports.
 *
 * Must never: read trace files, print, or divide by zero.
 */
#include "model/an_parts.h"

#include "model/an_cputime.h"

#include <string.h>

#include "base/an_stats.h"
#include "gs_trace.h"

void an_parts_interval(const an_cpu_log *l, const an_cpu_sample *x, const an_cpu_sample *y,
                       an_parts *acc)
{
    if (y->ts <= x->ts)
        return;
    const double dt = (double)(y->ts - x->ts);
    const double io = an_dmin(an_dpos((double)y->io_ns - (double)x->io_ns), dt);
    const double wait = an_dmin(an_dpos((double)y->wait_ns - (double)x->wait_ns), dt - io);
    const double rest = dt - io - wait;
    const double dcpu = an_dpos((double)y->cpu_ns - (double)x->cpu_ns);
    const double r0 = an_cpu_value_at(l, x->ts, AN_CV_RUNQ), r1 = an_cpu_value_at(l, y->ts, AN_CV_RUNQ);
    const double drunq = (r0 >= 0 && r1 >= 0) ? an_dpos(r1 - r0) : 0;
    const double cpu = an_dmin(dcpu, rest);
    const double runq = an_dmin(drunq, rest - cpu);
    const double off = rest - cpu - runq;
    const int maj_known = x->majflt >= 0 && y->majflt >= 0;
    const double dmaj = maj_known ? an_dpos((double)(y->majflt - x->majflt)) : 0;
    acc->dt += dt;
    acc->io += io;
    acc->wait += wait;
    acc->cpu += cpu;
    acc->dcpu += dcpu;
    acc->runq += runq;
    acc->maj += dmaj;
    const double s0 = an_cpu_value_at(l, x->ts, AN_CV_STORAGE), s1 = an_cpu_value_at(l, y->ts, AN_CV_STORAGE);
    const double drd = an_dpos((double)y->rd_bytes - (double)x->rd_bytes);
    const int storage_known = s0 >= 0 && s1 >= 0;
    if (storage_known) {
        acc->storage_known = 1;
        acc->storage += an_dpos(s1 - s0);
    }
    /* page-fault I/O: major faults, and (where the kernel counts it) reads
     * from storage in the interval; a few major faults that read nothing
     * (a forked worker's first touches) leave its sleep as other blocking */
    const int faulted = dmaj > 0 && (!storage_known || s1 > s0);
    if (faulted)
        acc->fault += off;
    else
        acc->blk += off;
    if (faulted) { /* storage reads its hooked reads did not return: through faults */
        const double beyond = (s0 >= 0 && s1 >= 0) ? an_dpos(s1 - s0 - drd) : 0;
        acc->fbytes += beyond > dmaj * AN_PAGE_BYTES ? beyond : dmaj * AN_PAGE_BYTES;
    }
    acc->runq_known |= r0 >= 0 && r1 >= 0;
    acc->maj_known |= maj_known;
    if (x->nvcsw >= 0 && y->nvcsw >= 0) {
        acc->sw_known = 1;
        acc->nv += an_dpos((double)(y->nvcsw - x->nvcsw));
        acc->niv += an_dpos((double)(y->nivcsw - x->nivcsw));
    }
}


double an_mean(const double *v, size_t n)
{
    double sum = 0;
    for (size_t i = 0; i < n; i++)
        sum += v[i];
    return n ? sum / (double)n : -1;
}

double an_median(const double *v, size_t n)
{
    return n ? an_percentile(v, n, 0.5) : -1;
}

/* RATIONALE: a periodic sample is read by the collector's writer from
 * another thread: a thread waiting in a run queue then has not yet been
 * charged that wait (the kernel adds it when the thread gets its CPU), nor
 * a running one its CPU since the last tick. Between two samples the
 * thread took itself (its markers) the span's CPU time and run-queue delay
 * come from those two; the samples between only cut the rest into page
 * faults and other blocking (in a GPU-less DataLoader worker a periodic
 * sample mid-batch had moved 42 ms of waiting for a CPU to "blocked"). */
static void from_ends(const an_cpu_log *l, size_t i0, size_t i1, an_parts *p)
{
    const an_cpu_sample *a = &l->s[i0], *b = &l->s[i1];
    if (a->src != GS_CPU_SRC_MARKER || b->src != GS_CPU_SRC_MARKER || i1 <= i0 + 1)
        return;
    const double rest = p->dt - p->io - p->wait;
    const double dcpu = an_dpos((double)b->cpu_ns - (double)a->cpu_ns);
    const double r0 = an_cpu_value_at(l, a->ts, AN_CV_RUNQ), r1 = an_cpu_value_at(l, b->ts, AN_CV_RUNQ);
    const double cpu = an_dmin(dcpu, rest);
    const double runq = r0 >= 0 && r1 >= 0 ? an_dmin(an_dpos(r1 - r0), rest - cpu) : p->runq;
    const double off = an_dpos(rest - cpu - runq), was = p->fault + p->blk;
    const double fault = was > 0 ? off * p->fault / was : 0;
    p->dcpu = dcpu;
    p->cpu = cpu;
    p->runq = runq;
    p->fault = fault;
    p->blk = off - fault;
}

int an_parts_span(const an_cpu_log *l, uint64_t t0, uint64_t t1, an_parts *acc)
{
    if (!l || !l->n || t1 < t0)
        return 0;
    const size_t i0 = an_cpu_lower(l, t0);
    if (i0 == l->n || l->s[i0].ts != t0)
        return 0;
    an_parts p;
    memset(&p, 0, sizeof p);
    size_t i = i0;
    for (; i + 1 < l->n && l->s[i + 1].ts <= t1; i++)
        an_parts_interval(l, &l->s[i], &l->s[i + 1], &p);
    if (l->s[i].ts == t1)
        from_ends(l, i0, i, &p);
    an_parts_add(acc, &p);
    return l->s[i].ts == t1;
}


void an_parts_add(an_parts *acc, const an_parts *p)
{
    acc->dt += p->dt;
    acc->io += p->io;
    acc->wait += p->wait;
    acc->cpu += p->cpu;
    acc->runq += p->runq;
    acc->fault += p->fault;
    acc->blk += p->blk;
    acc->dcpu += p->dcpu;
    acc->maj += p->maj;
    acc->nv += p->nv;
    acc->niv += p->niv;
    acc->storage += p->storage;
    acc->fbytes += p->fbytes;
    acc->runq_known |= p->runq_known;
    acc->maj_known |= p->maj_known;
    acc->sw_known |= p->sw_known;
    acc->storage_known |= p->storage_known;
}

void an_parts_stats(an_loader_time *t, double *const v[6], size_t k, const an_parts *tot)
{
    double *wall = v[0], *io = v[1], *cpu = v[2], *runq = v[3], *fault = v[4], *blk = v[5];
    t->wall_mean_ms = an_mean(wall, k);
    t->io_mean_ms = an_mean(io, k);
    t->cpu_mean_ms = an_mean(cpu, k);
    t->runq_mean_ms = tot->runq_known ? an_mean(runq, k) : -1;
    t->fault_mean_ms = tot->maj_known ? an_mean(fault, k) : -1;
    t->blocked_mean_ms = an_mean(blk, k);
    t->wall_ms = an_median(wall, k);
    t->io_ms = an_median(io, k);
    t->cpu_ms = an_median(cpu, k);
    t->runq_ms = tot->runq_known ? an_median(runq, k) : -1;
    t->fault_ms = tot->maj_known ? an_median(fault, k) : -1;
    t->blocked_ms = an_median(blk, k);
}
