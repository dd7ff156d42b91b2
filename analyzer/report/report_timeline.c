/* report_timeline.c — what the HTML page's timelines show, kept during the
 * second pass: the few slowest measured steps as windows, and in each, per
 * row (the training thread's pieces, each GPU stream, each loader worker,
 * the trainer's other threads), the items inside it, merged to what a pixel
 * can show (report_html.c draws them).
 *
 * Must never: keep an item outside a window, or more than HX_MAX_ITEMS per
 * window.
 */
#include "report/report_timeline.h"
#include "base/an_grow.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gs_trace.h"
#include "load/an_kernels.h"

static long hx_row_of(pass2 *x, int type, uint64_t a, uint64_t b, const char *name)
{
    for (size_t i = 0; i < x->nrows; i++)
        if (x->rows[i].type == type && x->rows[i].a == a && x->rows[i].b == b)
            return (long)i;
    if (x->nrows >= HX_MAX_ROWS)
        return -1; /* the page shows the first rows only */
    if (an_grow(&x->rows, &x->caprows, x->nrows + 1, sizeof *x->rows, 16) < 0)
        return -1;
    hx_row *r = &x->rows[x->nrows];
    r->type = type;
    r->a = a;
    r->b = b;
    snprintf(r->name, sizeof r->name, "%s", name);
    return (long)x->nrows++;
}

static void hx_add(pass2 *x, long row, uint64_t t0, uint64_t t1, unsigned cls)
{
    if (row < 0)
        return;
    for (size_t w = 0; w < x->nwin; w++) {
        hx_window *v = &x->win[w];
        if (t1 <= v->t0 || t0 >= v->t1 || v->full)
            continue;
        const uint64_t a = t0 > v->t0 ? t0 : v->t0, b = t1 < v->t1 ? t1 : v->t1;
        if ((size_t)row >= v->nlast) {
            size_t nn = (size_t)row + 16;
            size_t *nl = realloc(v->last, nn * sizeof *nl);
            if (!nl)
                continue;
            memset(nl + v->nlast, 0, (nn - v->nlast) * sizeof *nl);
            v->last = nl;
            v->nlast = nn;
        }
        if (v->last[row]) {
            hx_item *l = &v->it[v->last[row] - 1];
            if (l->cls == cls && a <= l->t1 + v->tol && a >= l->t0) {
                if (b > l->t1)
                    l->t1 = b;
                continue;
            }
        }
        if (v->n == v->cap) {
            if (v->cap >= HX_MAX_ITEMS) {
                v->full = 1;
                continue;
            }
            if (an_grow(&v->it, &v->cap, v->cap + 1, sizeof *v->it, 256) < 0)
                continue;
        }
        v->it[v->n] = (hx_item){a, b, (uint32_t)row, cls};
        v->last[row] = ++v->n;
    }
}

static int hx_in_any(const pass2 *x, uint64_t t0, uint64_t t1)
{
    for (size_t w = 0; w < x->nwin; w++)
        if (t1 > x->win[w].t0 && t0 < x->win[w].t1)
            return 1;
    return 0;
}

static int cmp_slowest(const void *a, const void *b, void *ctx)
{
    const an_step *s = ctx;
    const size_t i = *(const size_t *)a, j = *(const size_t *)b;
    const uint64_t di = s[i].v.t1 - s[i].v.t0, dj = s[j].v.t1 - s[j].v.t0;
    return di > dj ? -1 : di < dj ? 1 : (i > j) - (i < j);
}

/* The windows the page shows: the slowest HX_WINDOWS measured steps. */
void rep_hx_windows(pass2 *x)
{
    const an_result *res = x->res;
    x->html = 1;
    size_t *idx = malloc((res->nsteps ? res->nsteps : 1) * sizeof *idx);
    size_t m = 0;
    for (size_t i = 0; idx && i < res->nsteps; i++)
        if (!res->steps[i].warmup)
            idx[m++] = i;
    if (idx)
        qsort_r(idx, m, sizeof *idx, cmp_slowest, res->steps);
    for (size_t i = 0; i < m && x->nwin < HX_WINDOWS; i++) {
        hx_window *w = &x->win[x->nwin++];
        w->step = idx[i];
        w->t0 = jt(x->top_off, res->steps[idx[i]].v.t0);
        w->t1 = jt(x->top_off, res->steps[idx[i]].v.t1);
        w->tol = (w->t1 - w->t0) / HX_MERGE;
    }
    free(idx);
}

/* A GPU record's share, by the analysis's own rule (an_gpu_busy). */
static unsigned gpu_cls(struct gs_reader *r, const gs_event *e)
{
    const int comm = e->kind == GS_K_GPU_KERNEL && an_kernel_is_comm(rep_p2_str(r, e->str));
    return (unsigned)an_piece_share(an_gpu_busy(e, comm));
}

/* A GPU record of the trainer, on the job's clock, inside a window: its
 * stream's row. */
void rep_hx_gpu(pass2 *x, struct gs_reader *r, const gs_event *e)
{
    const uint64_t t0 = e->ts, t1 = e->ts + e->dur;
    if (!hx_in_any(x, t0, t1))
        return;
    char name[96];
    snprintf(name, sizeof name, "GPU %u stream %llu", e->dev, (unsigned long long)e->stream);
    hx_add(x, hx_row_of(x, 1, e->dev, e->stream, name), t0, t1, gpu_cls(r, e));
}

/* What the loader does beside the GPU: the current file's file reads,
 * metadata calls and waits inside a window, for a worker process or a
 * trainer thread other than the training thread. */
void rep_hx_event(pass2 *x, const gs_event *e)
{
    const unsigned k = e->kind;
    const int io = gs_kind_is_io_call(k);
    if (io && hx_in_any(x, e->ts, e->ts + e->dur) &&
        (x->is_worker || (x->is_trainer && (!x->res->thread || e->tid != x->res->thread->tid)))) {
        unsigned cls = HX_NCLS;
        if (gs_kind_is_read(k))
            cls = e->fd_kind == GS_FDK_FILE                                  ? HX_READ
                  : e->fd_kind == GS_FDK_PIPE || e->fd_kind == GS_FDK_SOCKET ? HX_WAIT
                                                                             : HX_NCLS;
        else if (gs_kind_is_metadata(k) && e->fd_kind != GS_FDK_PIPE && e->fd_kind != GS_FDK_SOCKET)
            cls = HX_META;
        else if (gs_kind_is_wait(k))
            cls = HX_WAIT;
        if (cls < HX_NCLS) {
            char name[96];
            long row;
            if (x->is_worker) {
                snprintf(name, sizeof name, "loader pid %llu", (unsigned long long)x->pid);
                row = hx_row_of(x, 2, x->img, 0, name);
            } else {
                snprintf(name, sizeof name, "trainer thread %u", e->tid);
                row = hx_row_of(x, 3, e->tid, 0, name);
            }
            hx_add(x, row, e->ts, e->ts + e->dur, cls);
        }
    }
}

/* A piece of the training thread's timeline: its row. */
void rep_hx_piece(pass2 *x, uint64_t t0, uint64_t t1, unsigned cls)
{
    hx_add(x, hx_row_of(x, 0, 0, 0, "training thread"), t0, t1, (unsigned)an_piece_share(cls));
}
