/* an_window.c — the steps of a run in progress that ended inside the last
 * window of time, and their shares (an_window.h; docs/report-outputs.md,
 * "Live view").
 *
 * The shares follow the report's attribution of a step (an_attrib.h): data
 * wait is GPU idle while the training thread waits for data, GPU busy is
 * every busy class, pageable copy is GPU idle inside a pageable copy call
 * plus the GPU's own pageable host-to-device copies; each a sum over the
 * window's steps divided by their summed length.
 *
 * Must never: print, or read trace files.
 */
#include <string.h>

#include "model/an_window.h"

/* A worker process's batches (its fetch_begin..fetch_end pairs with their
 * CPU samples, an_cputime.h) that end in (from, to]: their summed time in
 * *ns, how many in *n. */
static void window_batches(const an_proc *p, uint64_t from, uint64_t to, uint64_t *ns, size_t *n)
{
    for (size_t t = 0; t < p->nth; t++) {
        const an_cpu_log *l = p->th[t].cpu;
        if (!l)
            continue;
        size_t lo = 0, hi = l->nf; /* the first batch ending after from */
        while (lo < hi) {
            const size_t mid = lo + (hi - lo) / 2;
            if (l->f[mid].t1 <= from)
                lo = mid + 1;
            else
                hi = mid;
        }
        for (size_t i = lo; i < l->nf && l->f[i].t1 <= to; i++) {
            *ns += l->f[i].t1 - l->f[i].t0;
            (*n)++;
        }
    }
}

/* The loader's time per batch: per worker, the mean of its batches that
 * ended in (from, to] when it marks its batches, else its figure over the
 * run so far (row->batch_run_so_far); the mean over workers. */
static void window_batch_ms(const an_result *res, uint64_t from, uint64_t to, an_window_row *row)
{
    double sum = 0;
    size_t nw = 0;
    for (size_t i = 0; i < res->nworkers; i++) {
        const an_worker *w = &res->workers[i];
        if (an_worker_marks_batches(w)) {
            uint64_t ns = 0;
            size_t n = 0;
            window_batches(w->p, from, to, &ns, &n);
            if (n) {
                sum += (double)ns / 1e6 / (double)n;
                nw++;
            }
            continue;
        }
        const double b = an_worker_batch_ms(w);
        if (b > 0) {
            sum += b;
            nw++;
            row->batch_run_so_far = 1;
        }
    }
    if (nw)
        row->batch_ms = sum / (double)nw;
}

void an_window_of(const an_result *res, uint64_t end_ns, uint64_t window_ns, an_window_row *row)
{
    row->ok = res != NULL;
    row->steps_total = 0;
    row->steps = 0;
    row->span_s = 0;
    row->steps_per_s = 0;
    row->data_wait = row->gpu_busy = row->pageable = -1;
    row->batch_ms = -1;
    row->batch_run_so_far = 0;
    if (!res)
        return;
    row->steps_total = res->nsteps;
    const uint64_t from = end_ns > window_ns ? end_ns - window_ns : 0;
    window_batch_ms(res, from, end_ns, row);
    uint64_t total = 0, dw = 0, busy = 0, pg = 0, first = UINT64_MAX;
    for (size_t i = 0; i < res->nsteps; i++) {
        const an_stepv *v = &res->steps[i].v;
        if (v->t1 <= from || v->t1 > end_ns || v->t1 <= v->t0)
            continue;
        row->steps++;
        total += v->t1 - v->t0;
        dw += an_stepv_part(v, AN_SH_DATA_WAIT);
        busy += an_stepv_busy(v);
        pg += an_stepv_part(v, AN_SH_PAGEABLE_COPY) + an_stepv_part(v, AN_SH_H2D_PAGEABLE);
        if (v->t0 < first)
            first = v->t0;
    }
    if (!row->steps || !total)
        return;
    /* a run younger than the window: rate over the time its steps cover */
    const uint64_t start = first > from ? first : from;
    const uint64_t span = end_ns > start ? end_ns - start : 1;
    row->span_s = (double)span / 1e9;
    row->steps_per_s = (double)row->steps / row->span_s;
    row->data_wait = (double)dw / (double)total;
    row->gpu_busy = (double)busy / (double)total;
    row->pageable = (double)pg / (double)total;
}

static uint64_t last_end(const an_result *res)
{
    return res && res->nsteps ? res->steps[res->nsteps - 1].v.t1 : 0;
}

static int running_of(const an_run *view)
{
    int n = 0;
    for (size_t i = 0; i < view->nprocs; i++)
        n += view->procs[i].running != 0;
    return n;
}

static void fill(an_window_row *row, const an_run *view, const an_result *res, int32_t rank,
                 uint64_t now_ns, uint64_t window_ns, const char *this_host)
{
    memset(row, 0, sizeof *row);
    row->rank = rank;
    row->running = running_of(view);
    const an_proc *tr = res ? res->trainer : NULL;
    row->pid = tr ? tr->pid : 0;
    row->host = tr ? tr->host : NULL;
    uint64_t end = now_ns;
    const int here = tr && tr->host && this_host && strcmp(tr->host, this_host) == 0;
    if (!here || !row->running)
        end = last_end(res);
    an_window_of(res, end, window_ns, row);
}

size_t an_window_rows(const an_run *run, const an_job *job, uint64_t now_ns, uint64_t window_ns,
                      const char *this_host, an_window_row *rows, size_t max)
{
    if (!max)
        return 0;
    if (!job || !job->top || job->top == &job->whole) {
        /* no ranks, none with steps yet, or nothing analysable yet */
        fill(&rows[0], run, job && job->top ? job->top : NULL, -1, now_ns, window_ns, this_host);
        return 1;
    }
    size_t n = 0;
    for (size_t i = 0; i < job->nranks && n < max; i++) {
        const an_rank *rk = &job->ranks[i];
        fill(&rows[n++], &rk->view, rk->ok ? &rk->res : NULL, rk->rank, now_ns, window_ns,
             this_host);
    }
    return n;
}
