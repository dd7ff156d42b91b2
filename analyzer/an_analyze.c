/* an_analyze.c — from a loaded run to the answer: which process trains and
 * which of its threads drives the loop, where the steps are, what each step
 * spent its time on, the verdict, the loader workers, and the advice.
 *
 * Every rule here is written down in docs/report-schema.md; change both
 * together.
 *
 * Must never: read trace files (an_load.c did), print, or divide by zero:
 * every ratio checks its denominator.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "an_model.h"

const char *const an_share_names[AN_NSH] = {
    "gpu_compute",    "gpu_comm",       "gpu_h2d_pinned",     "gpu_h2d_pageable",
    "gpu_copy_other", "idle_data_wait", "idle_pageable_copy", "idle_host",
};

/* Thresholds of the verdict and the advice (docs/report-schema.md). */
#define HIGHLY_SHARE 0.20
#define MODERATELY_SHARE 0.05
#define HOST_SHARE 0.20
#define WARMUP_FACTOR 2.0     /* leading steps slower than this x median are warm-up */
/* num_workers advice must save at least this share of a step */
#define WORKERS_MIN_SAVING 0.02
#define STORAGE_NEAR 0.8      /* reading at >= 80% of the ceiling: storage is the wall */
#define PIN_MIN_SHARE 0.02    /* pageable copies must cost >= 2% of a step */
#define PIN_DEFAULT_SPEEDUP 2.0 /* pinned H2D assumed 2x pageable when nothing better */
#define PERIOD_MIN 0.5        /* inferred boundaries closer than 0.5 x median gap merge */

void an_stepv_from_snaps(an_stepv *v, const an_snap *a, const an_snap *b)
{
    memset(v, 0, sizeof *v);
    v->t0 = a->t;
    v->t1 = b->t > a->t ? b->t : a->t;
    const uint64_t len = v->t1 - v->t0;
    uint64_t used = 0;
    for (int c = 0; c < AN_NBUSY; c++) {
        v->busy[c] = b->busy[c] >= a->busy[c] ? b->busy[c] - a->busy[c] : 0;
        used += v->busy[c];
    }
    v->idle_dw = b->idle_dw >= a->idle_dw ? b->idle_dw - a->idle_dw : 0;
    v->idle_pg = b->idle_pg >= a->idle_pg ? b->idle_pg - a->idle_pg : 0;
    used += v->idle_dw + v->idle_pg;
    v->idle_host = len > used ? len - used : 0;
}

uint64_t an_stepv_busy(const an_stepv *v)
{
    uint64_t b = 0;
    for (int c = 0; c < AN_NBUSY; c++)
        b += v->busy[c];
    return b;
}

static int cmp_double(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

double an_percentile(const double *v, size_t n, double p)
{
    if (!n)
        return 0;
    double *s = malloc(n * sizeof *s);
    if (!s)
        return 0;
    memcpy(s, v, n * sizeof *s);
    qsort(s, n, sizeof *s, cmp_double);
    double r;
    if (p == 0.5) {
        r = n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
    } else {
        size_t k = (size_t)ceil(p * (double)n); /* nearest rank */
        r = s[k ? k - 1 : 0];
    }
    free(s);
    return r;
}

const char *an_verdict_label(int v)
{
    switch (v) {
    case AN_V_HIGHLY: return "HIGHLY_INPUT_BOUND";
    case AN_V_MODERATELY: return "MODERATELY_INPUT_BOUND";
    case AN_V_NOT: return "NOT_INPUT_BOUND";
    case AN_V_HOST: return "HOST_BOUND";
    }
    return "NONE";
}

const char *an_source_name(int s)
{
    switch (s) {
    case AN_SRC_MARKERS: return "markers";
    case AN_SRC_NVTX: return "nvtx";
    case AN_SRC_INFERRED: return "inferred";
    }
    return "none";
}

static void note(an_result *res, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
#include <stdarg.h>
static void note(an_result *res, const char *fmt, ...)
{
    if (res->nnotes >= sizeof res->notes / sizeof res->notes[0])
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(res->notes[res->nnotes++], sizeof res->notes[0], fmt, ap);
    va_end(ap);
}

/* ---- trainer and training thread --------------------------------------------------- */

static uint64_t gpu_busy(const an_proc *p)
{
    uint64_t b = 0;
    for (int c = 0; c < AN_NBUSY; c++)
        b += p->tl.busy[c];
    return b;
}

static uint64_t nvtx_steps(const an_proc *p)
{
    uint64_t n = 0;
    for (size_t i = 0; i < p->nth; i++)
        n += p->th[i].n_nvtx_steps;
    return n;
}

static int is_worker_role(const an_proc *p)
{
    return strstr(p->role, "worker") != NULL;
}

static const an_proc *find_proc(const an_run *run, uint64_t pid)
{
    const an_proc *best = NULL;
    for (size_t i = 0; i < run->nprocs; i++)
        if (run->procs[i].pid == pid && (!best || run->procs[i].exec_seq < best->exec_seq))
            best = &run->procs[i];
    return best;
}

/* 1 when pid descends from anc (through the traced processes' ppids). */
static int descends(const an_run *run, uint64_t pid, uint64_t anc)
{
    for (int depth = 0; depth < 64; depth++) {
        const an_proc *p = find_proc(run, pid);
        if (!p)
            return 0;
        if (p->ppid == anc)
            return 1;
        if (p->ppid == pid)
            return 0;
        pid = p->ppid;
    }
    return 0;
}

static size_t file_reading_descendants(const an_run *run, const an_proc *p)
{
    size_t n = 0;
    for (size_t i = 0; i < run->nprocs; i++) {
        const an_proc *q = &run->procs[i];
        if (q->pid != p->pid && q->rd_reqs && descends(run, q->pid, p->pid))
            n++;
    }
    return n;
}

/* Tiered choice (docs/report-schema.md, "Trainer"). */
static const an_proc *choose_trainer(const an_run *run)
{
    const an_proc *best = NULL;
    int best_tier = -1;
    double best_score = -1;
    for (size_t i = 0; i < run->nprocs; i++) {
        const an_proc *p = &run->procs[i];
        int tier;
        double score;
        if (strcmp(p->role, "trainer") == 0) {
            tier = 6;
            score = (double)p->events;
        } else if (p->gpu_events) {
            tier = 5;
            score = (double)gpu_busy(p);
        } else if (is_worker_role(p)) {
            continue;
        } else if (p->n_step_markers + p->n_fetch_markers) {
            tier = 4;
            score = (double)(p->n_step_markers + p->n_fetch_markers);
        } else if (nvtx_steps(p)) {
            tier = 3;
            score = (double)nvtx_steps(p);
        } else if (p->cuda_calls) {
            tier = 2;
            score = (double)p->cuda_calls;
        } else if (file_reading_descendants(run, p)) {
            tier = 1;
            score = (double)file_reading_descendants(run, p) * 1e12 + (double)p->wait_ns;
        } else {
            /* a root: no traced parent; the earliest wins */
            tier = 0;
            if (find_proc(run, p->ppid) && find_proc(run, p->ppid) != p)
                continue;
            score = 1e30 - (double)p->mono_ns;
        }
        if (tier > best_tier || (tier == best_tier && score > best_score)) {
            best = p;
            best_tier = tier;
            best_score = score;
        }
    }
    if (!best && run->nprocs)
        best = &run->procs[0];
    return best;
}

static const an_thread *choose_thread(const an_proc *p)
{
    const an_thread *best = NULL;
    double best_score = -1;
    int best_tier = -1;
    for (size_t i = 0; i < p->nth; i++) {
        const an_thread *t = &p->th[i];
        int tier;
        double score;
        if (t->n_step_markers + t->n_fetch_markers) {
            tier = 5;
            score = (double)(t->n_step_markers + t->n_fetch_markers);
        } else if (t->n_nvtx_steps) {
            tier = 4;
            score = (double)t->n_nvtx_steps;
        } else if (t->n_cuda_calls) {
            tier = 3;
            score = (double)t->n_cuda_calls;
        } else if (t->wait_ns) {
            tier = 2;
            score = (double)t->wait_ns;
        } else if (t->io_ns + t->meta_ns) {
            tier = 1;
            score = (double)(t->io_ns + t->meta_ns);
        } else {
            tier = 0;
            score = t->tid == p->pid ? 1 : 0;
        }
        if (tier > best_tier || (tier == best_tier && score > best_score)) {
            best = t;
            best_tier = tier;
            best_score = score;
        }
    }
    return best;
}

/* ---- steps --------------------------------------------------------------------------- */

typedef struct stepbuf {
    an_step *v;
    size_t n, cap;
} stepbuf;

static int step_push(stepbuf *b, const an_cand *a, const an_cand *e, uint64_t num)
{
    if (!a->have || !e->have || e->t <= a->t)
        return 0;
    if (b->n == b->cap) {
        size_t nc = b->cap ? b->cap * 2 : 64;
        an_step *n = realloc(b->v, nc * sizeof *n);
        if (!n)
            return -1;
        b->v = n;
        b->cap = nc;
    }
    an_step *s = &b->v[b->n++];
    memset(s, 0, sizeof *s);
    an_stepv_from_snaps(&s->v, &a->snap, &e->snap);
    s->num = num;
    return 0;
}

static size_t count_type(const an_thread *t, uint32_t type)
{
    size_t n = 0;
    for (size_t i = 0; i < t->ncand; i++)
        n += t->cand[i].type == type;
    return n;
}

/* Steps between consecutive candidates of one type. */
static int steps_consecutive(stepbuf *b, const an_thread *t, uint32_t type)
{
    const an_cand *prev = NULL;
    size_t k = 0;
    for (size_t i = 0; i < t->ncand; i++) {
        const an_cand *c = &t->cand[i];
        if (c->type != type)
            continue;
        if (prev && step_push(b, prev, c, type == AN_C_BURST_WAIT || type == AN_C_BURST_H2D ? k : prev->num) < 0)
            return -1;
        prev = c;
        k++;
    }
    return 0;
}

static int steps_pairs(stepbuf *b, const an_thread *t, uint32_t tb, uint32_t te)
{
    const an_cand *open = NULL;
    for (size_t i = 0; i < t->ncand; i++) {
        const an_cand *c = &t->cand[i];
        if (c->type == tb) {
            open = c;
        } else if (c->type == te && open) {
            if (step_push(b, open, c, open->num) < 0)
                return -1;
            open = NULL;
        }
    }
    return 0;
}

/* Inferred: burst starts of one kind, merged where closer than PERIOD_MIN x
 * the median gap, cut the run into steps. */
static int steps_inferred(stepbuf *b, const an_thread *t, uint32_t type)
{
    size_t n = count_type(t, type);
    if (n < 3)
        return 0;
    double *gaps = malloc(n * sizeof *gaps);
    const an_cand **keep = malloc(n * sizeof *keep);
    if (!gaps || !keep) {
        free(gaps);
        free(keep);
        return -1;
    }
    size_t ng = 0;
    const an_cand *prev = NULL;
    for (size_t i = 0; i < t->ncand; i++) {
        const an_cand *c = &t->cand[i];
        if (c->type != type)
            continue;
        if (prev)
            gaps[ng++] = (double)(c->t - prev->t);
        prev = c;
    }
    const double g = an_percentile(gaps, ng, 0.5);
    size_t nk = 0;
    for (size_t i = 0; i < t->ncand; i++) {
        const an_cand *c = &t->cand[i];
        if (c->type != type || !c->have)
            continue;
        if (nk && (double)(c->t - keep[nk - 1]->t) < PERIOD_MIN * g)
            continue;
        keep[nk++] = c;
    }
    int rc = 0;
    for (size_t i = 1; i < nk && rc == 0; i++)
        rc = step_push(b, keep[i - 1], keep[i], i - 1);
    free(gaps);
    free(keep);
    return rc;
}

static int cut_steps(an_result *res, const an_thread *t, stepbuf *b)
{
    if (count_type(t, AN_C_STEP_B) && count_type(t, AN_C_STEP_E)) {
        res->source = AN_SRC_MARKERS;
        res->source_detail = "step markers";
        if (steps_pairs(b, t, AN_C_STEP_B, AN_C_STEP_E) < 0)
            return -1;
    } else if (count_type(t, AN_C_STEP_B) >= 2 || count_type(t, AN_C_STEP_E) >= 2) {
        res->source = AN_SRC_MARKERS;
        res->source_detail = "step markers";
        uint32_t ty = count_type(t, AN_C_STEP_B) >= 2 ? AN_C_STEP_B : AN_C_STEP_E;
        if (steps_consecutive(b, t, ty) < 0)
            return -1;
    } else if (count_type(t, AN_C_FETCH_B) >= 2) {
        res->source = AN_SRC_MARKERS;
        res->source_detail = "batch-fetch markers";
        if (steps_consecutive(b, t, AN_C_FETCH_B) < 0)
            return -1;
    } else if (count_type(t, AN_C_NVTX_B) && count_type(t, AN_C_NVTX_E)) {
        res->source = AN_SRC_NVTX;
        res->source_detail = "NVTX ranges";
        if (steps_pairs(b, t, AN_C_NVTX_B, AN_C_NVTX_E) < 0)
            return -1;
    } else {
        res->source = AN_SRC_INFERRED;
        if (count_type(t, AN_C_BURST_WAIT) >= 3) {
            res->source_detail = "batch arrivals on worker pipes (inferred)";
            if (steps_inferred(b, t, AN_C_BURST_WAIT) < 0)
                return -1;
        }
        if (b->n < 2 && count_type(t, AN_C_BURST_H2D) >= 3) {
            b->n = 0;
            res->source_detail = "host-to-device copies (inferred)";
            if (steps_inferred(b, t, AN_C_BURST_H2D) < 0)
                return -1;
        }
    }
    return 0;
}

static double ms(uint64_t ns)
{
    return (double)ns / 1e6;
}

static uint64_t part(const an_stepv *v, int k)
{
    switch (k) {
    case AN_SH_COMPUTE: return v->busy[AN_BUSY_COMPUTE];
    case AN_SH_COMM: return v->busy[AN_BUSY_COMM];
    case AN_SH_H2D_PINNED: return v->busy[AN_BUSY_H2D_PINNED];
    case AN_SH_H2D_PAGEABLE: return v->busy[AN_BUSY_H2D_PAGEABLE];
    case AN_SH_COPY_OTHER: return v->busy[AN_BUSY_OTHER];
    case AN_SH_DATA_WAIT: return v->idle_dw;
    case AN_SH_PAGEABLE_COPY: return v->idle_pg;
    default: return v->idle_host;
    }
}

static void mark_warmup(an_result *res, const an_opts *o)
{
    size_t n = res->nsteps;
    size_t skip = 0;
    if (o->skip >= 0) {
        skip = (size_t)o->skip;
        res->skip_auto = 0;
    } else {
        res->skip_auto = 1;
        if (n >= 3) {
            skip = 1;
            double *d = malloc(n * sizeof *d);
            if (d) {
                for (size_t i = 1; i < n; i++)
                    d[i - 1] = ms(res->steps[i].v.t1 - res->steps[i].v.t0);
                const double med = an_percentile(d, n - 1, 0.5);
                while (skip < n / 4 + 1 && skip < n - 1 &&
                       ms(res->steps[skip].v.t1 - res->steps[skip].v.t0) > WARMUP_FACTOR * med)
                    skip++;
                free(d);
            }
        }
    }
    if (skip > n)
        skip = n;
    for (size_t i = 0; i < skip; i++)
        res->steps[i].warmup = 1;
    res->warmup = skip;
    res->measured = n - skip;
}

static void summarize(an_result *res)
{
    size_t m = res->measured;
    double *d = calloc(m ? m : 1, sizeof *d);
    double *x = calloc(m ? m : 1, sizeof *x);
    if (!d || !x) {
        free(d);
        free(x);
        return;
    }
    uint64_t tot = 0, sum[AN_NSH] = {0};
    size_t j = 0;
    double mn = 0, mx = 0;
    for (size_t i = 0; i < res->nsteps; i++) {
        const an_step *s = &res->steps[i];
        if (s->warmup)
            continue;
        const uint64_t len = s->v.t1 - s->v.t0;
        tot += len;
        for (int k = 0; k < AN_NSH; k++)
            sum[k] += part(&s->v, k);
        d[j] = ms(len);
        if (!j || d[j] < mn)
            mn = d[j];
        if (!j || d[j] > mx)
            mx = d[j];
        j++;
    }
    res->step_ms_median = an_percentile(d, m, 0.5);
    res->step_ms_p90 = an_percentile(d, m, 0.9);
    res->step_ms_mean = m ? ms(tot) / (double)m : 0;
    res->step_ms_min = mn;
    res->step_ms_max = mx;
    for (int k = 0; k < AN_NSH; k++) {
        res->share[k] = tot ? (double)sum[k] / (double)tot : 0;
        j = 0;
        for (size_t i = 0; i < res->nsteps; i++)
            if (!res->steps[i].warmup)
                x[j++] = ms(part(&res->steps[i].v, k));
        res->median_ms[k] = an_percentile(x, m, 0.5);
    }
    /* the input-bound share: the larger of the median per-step share and the
     * share of all measured time.
     * RATIONALE: DESIGN.md names the median over steps, but workers that finish
     * together deliver batches in bursts: every other step waits long and the
     * rest not at all, and the median (0) would call a loop that waits half
     * its time "not input-bound". The total share catches that; the median
     * still catches a loop whose typical step waits while a few long steps
     * dilute the total. */
    j = 0;
    for (size_t i = 0; i < res->nsteps; i++) {
        const an_step *s = &res->steps[i];
        if (s->warmup)
            continue;
        const uint64_t len = s->v.t1 - s->v.t0;
        x[j++] = len ? (double)s->v.idle_dw / (double)len : 0;
    }
    res->input_share = an_percentile(x, m, 0.5);
    if (res->share[AN_SH_DATA_WAIT] > res->input_share)
        res->input_share = res->share[AN_SH_DATA_WAIT];
    free(d);
    free(x);
}

static void judge(an_result *res)
{
    const double in = res->input_share;
    const double host = res->share[AN_SH_HOST];
    const char *of = res->no_gpu ? "of its time" : "of every step";
    if (!res->no_gpu && host >= HOST_SHARE &&
        host > res->share[AN_SH_DATA_WAIT] + res->share[AN_SH_PAGEABLE_COPY]) {
        res->verdict = AN_V_HOST;
        snprintf(res->verdict_text, sizeof res->verdict_text,
                 "HOST-BOUND: the GPU idles %.0f%% of the time for host reasons (Python, "
                 "preprocessing in the training thread, launch overhead); data wait %.0f%%",
                 100 * host, 100 * res->share[AN_SH_DATA_WAIT]);
    } else if (in >= HIGHLY_SHARE) {
        res->verdict = AN_V_HIGHLY;
        snprintf(res->verdict_text, sizeof res->verdict_text,
                 "HIGHLY INPUT-BOUND: the %s waits for data %.0f%% %s",
                 res->no_gpu ? "training thread" : "GPU", 100 * in, of);
    } else if (in >= MODERATELY_SHARE) {
        res->verdict = AN_V_MODERATELY;
        snprintf(res->verdict_text, sizeof res->verdict_text,
                 "MODERATELY INPUT-BOUND: the %s waits for data %.0f%% %s",
                 res->no_gpu ? "training thread" : "GPU", 100 * in, of);
    } else {
        res->verdict = AN_V_NOT;
        if (res->no_gpu)
            snprintf(res->verdict_text, sizeof res->verdict_text,
                     "NOT INPUT-BOUND: the training thread waits for data %.0f%% of its time",
                     100 * in);
        else
            snprintf(res->verdict_text, sizeof res->verdict_text,
                     "NOT INPUT-BOUND: the GPU is busy %.0f%% of each step, waits for data %.0f%%",
                     100 * (res->share[AN_SH_COMPUTE] + res->share[AN_SH_COMM] +
                            res->share[AN_SH_H2D_PINNED] + res->share[AN_SH_H2D_PAGEABLE] +
                            res->share[AN_SH_COPY_OTHER]),
                     100 * in);
    }
}

/* ---- loader workers ------------------------------------------------------------------ */

static const char *cfg_value(const an_proc *p, const char *key)
{
    const an_kv *best = NULL;
    for (size_t i = 0; i < p->ncfg; i++)
        if (strcmp(p->cfg[i].key, key) == 0 && (!best || p->cfg[i].loader < best->loader))
            best = &p->cfg[i];
    return best ? best->value : NULL;
}

static int parse_bool(const char *v)
{
    if (!v)
        return -1;
    if (!strcasecmp(v, "true") || !strcmp(v, "1") || !strcasecmp(v, "yes"))
        return 1;
    if (!strcasecmp(v, "false") || !strcmp(v, "0") || !strcasecmp(v, "no"))
        return 0;
    return -1;
}

static void finish_worker(an_worker *w)
{
    uint64_t busy = w->io_ns + w->meta_ns + w->idle_ns;
    w->cpu_ns = w->active_ns > busy ? w->active_ns - busy : 0;
    w->MBps = w->active_ns ? (double)w->bytes / 1e6 / ((double)w->active_ns / 1e9) : 0;
    w->io_MBps = w->io_ns ? (double)w->bytes / 1e6 / ((double)w->io_ns / 1e9) : 0;
}

static int find_workers(const an_run *run, an_result *res)
{
    const an_proc *tr = res->trainer;
    size_t cap = run->nprocs + (tr ? tr->nth : 0) + 1;
    res->workers = calloc(cap, sizeof *res->workers);
    if (!res->workers)
        return -1;
    for (size_t i = 0; i < run->nprocs; i++) {
        const an_proc *p = &run->procs[i];
        if (p == tr || (tr && p->pid == tr->pid))
            continue;
        if (!(p->rd_reqs || is_worker_role(p)))
            continue;
        if (tr && !descends(run, p->pid, tr->pid) && !is_worker_role(p))
            continue;
        an_worker *w = &res->workers[res->nworkers++];
        w->p = p;
        w->active_ns = p->last_ts > p->first_ts ? p->last_ts - p->first_ts : 0;
        w->io_ns = p->rd_ns;
        w->meta_ns = p->meta_ns;
        w->idle_ns = p->wait_ns;
        w->bytes = p->rd_bytes;
        w->reqs = p->rd_reqs;
        for (size_t t = 0; t < p->nth; t++)
            w->faults += p->th[t].faults;
        if (p->n_batch_markers) {
            w->batches = (double)p->n_batch_markers;
            w->batches_from_markers = 1;
        }
        finish_worker(w);
    }
    /* threaded loaders: no worker processes, but threads of the trainer other
     * than the training thread read files */
    if (!res->nworkers && tr) {
        for (size_t t = 0; t < tr->nth; t++) {
            const an_thread *th = &tr->th[t];
            if (th == res->thread || !th->rd_reqs)
                continue;
            an_worker *w = &res->workers[res->nworkers++];
            w->p = tr;
            w->active_ns = th->last_ts > th->first_ts ? th->last_ts - th->first_ts : 0;
            w->io_ns = th->io_ns;
            w->meta_ns = th->meta_ns;
            w->idle_ns = th->wait_ns;
            w->bytes = th->rd_bytes;
            w->reqs = th->rd_reqs;
            w->faults = th->faults;
            finish_worker(w);
        }
    }
    double sum_ms = 0;
    size_t nb = 0;
    for (size_t i = 0; i < res->nworkers; i++) {
        an_worker *w = &res->workers[i];
        if (!w->batches_from_markers)
            w->batches = res->nworkers ? (double)res->nsteps / (double)res->nworkers : 0;
        res->worker_bytes += w->bytes;
        res->worker_MBps_total += w->MBps;
        if (w->batches > 0) {
            sum_ms += ms(w->io_ns + w->meta_ns + w->cpu_ns) / w->batches;
            nb++;
        }
    }
    res->batch_ms = nb ? sum_ms / (double)nb : 0;
    return 0;
}

/* ---- advice ---------------------------------------------------------------------------- */

static an_advice *advice_new(an_result *res, int setting)
{
    if (res->nadvice >= sizeof res->advice / sizeof res->advice[0])
        return NULL;
    an_advice *a = &res->advice[res->nadvice++];
    memset(a, 0, sizeof *a);
    a->setting = setting;
    return a;
}

static void advise_workers(an_result *res, const an_opts *o)
{
    if (res->verdict != AN_V_HIGHLY && res->verdict != AN_V_MODERATELY)
        return;
    /* GPU-bound step time: what a step takes when the batch is ready */
    size_t m = res->measured;
    double *x = calloc(m ? m : 1, sizeof *x);
    if (!x)
        return;
    size_t j = 0;
    for (size_t i = 0; i < res->nsteps; i++) {
        const an_step *s = &res->steps[i];
        if (!s->warmup)
            x[j++] = ms(s->v.t1 - s->v.t0 - s->v.idle_dw);
    }
    const double tg = an_percentile(x, m, 0.5);
    free(x);
    if (tg <= 0)
        return;
    /* per-worker time per batch; loading inline (no workers): the data wait */
    const an_thread *th = res->thread;
    if (!res->nworkers && th && th->wait_ns > th->io_ns + th->meta_ns) {
        note(res, "the training thread waits on pipes/sockets but no loader worker was traced: "
                  "cannot size num_workers");
        return;
    }
    /* Time one worker takes per batch: measured on traced worker processes;
     * else, with W workers we cannot see (threads, untraced processes) and an
     * input-bound loop, they deliver one batch per step, so each takes about
     * W steps; else (loading inline, num_workers=0) the data wait itself. */
    double tb = res->median_ms[AN_SH_DATA_WAIT];
    if (res->nworkers)
        tb = res->batch_ms;
    else if (res->cur_workers >= 1)
        tb = res->step_ms_median * (double)res->cur_workers;
    if (tb <= 0)
        return;
    long need = (long)ceil(tb / tg - 1e-9);
    if (need < 1)
        need = 1;
    const long cur = res->cur_workers >= 0 ? res->cur_workers : (long)res->nworkers;
    if (need <= cur) {
        note(res,
             "the loader should keep up: %ld worker(s) at %.1f ms per batch for a %.1f ms GPU-bound "
             "step, yet the GPU waits; look at prefetch_factor, persistent_workers or uneven batches",
             cur, tb, tg);
        return;
    }
    an_advice *a = advice_new(res, AN_ADV_NUM_WORKERS);
    if (!a)
        return;
    const double step = res->step_ms_median;
    /* storage ceiling: probed; else, with several workers, what they would
     * read together if each read all the time at the best in-read rate seen */
    double ceil_MBps = o->probe_read_MBps;
    const int probed = ceil_MBps > 0;
    if (!probed && res->nworkers >= 2) {
        for (size_t i = 0; i < res->nworkers; i++)
            if (res->workers[i].io_MBps > ceil_MBps)
                ceil_MBps = res->workers[i].io_MBps;
        ceil_MBps *= (double)res->nworkers;
    }
    double batches = 0;
    for (size_t i = 0; i < res->nworkers; i++)
        batches += res->workers[i].batches;
    const double mb_per_batch = batches > 0 ? (double)res->worker_bytes / 1e6 / batches : 0;
    const double now_MBps = step > 0 ? mb_per_batch / (step / 1e3) : 0;
    if (ceil_MBps > 0 && mb_per_batch > 0 && now_MBps >= STORAGE_NEAR * ceil_MBps) {
        a->has_value = 0;
        a->predicted_step_ms = step;
        a->predicted_saving_ms = 0;
        snprintf(a->why, sizeof a->why,
                 "the workers already read %.0f MB/s, near the storage ceiling of %.0f MB/s (%s): "
                 "more workers will not help; faster storage, caching or smaller samples will",
                 now_MBps, ceil_MBps,
                 probed ? "probed" : "the workers read nearly all the time at the best rate seen");
        return;
    }
    long n = need;
    int capped = 0;
    if (n > res->cores) {
        n = res->cores;
        capped = 1;
    }
    if (n <= cur) {
        res->nadvice--;
        note(res, "%ld loader workers are needed but only %d CPU cores are free: the CPUs are the "
                  "limit (a faster decode/augment or more cores will help)",
             need, res->cores);
        return;
    }
    double pred = tg > tb / (double)n ? tg : tb / (double)n;
    int storage_cap = 0;
    if (probed && mb_per_batch > 0) {
        const double tmin = mb_per_batch / ceil_MBps * 1e3; /* ms per batch at the ceiling */
        if (tmin > pred) {
            pred = tmin;
            storage_cap = 1;
        }
    }
    if (pred > step)
        pred = step;
    if (step - pred < WORKERS_MIN_SAVING * step) {
        /* RATIONALE: an entry that predicts a saving within the noise is not
         * advice; the note says what limits it */
        res->nadvice--;
        note(res, "%ld loader workers would keep up, but %ld (%s) would save under %.0f%% of a "
                  "step",
             need, n, capped ? "all the free CPU cores" : "what the storage allows",
             100 * WORKERS_MIN_SAVING);
        return;
    }
    a->has_value = 1;
    a->value = n;
    a->predicted_step_ms = pred;
    a->predicted_saving_ms = step - pred;
    snprintf(a->why, sizeof a->why,
             "each worker needs %.1f ms per batch and a step needs %.1f ms of GPU-bound time: "
             "%ld worker%s keep%s up%s%s",
             tb, tg, need, need == 1 ? "" : "s", need == 1 ? "s" : "", capped ? "; capped by the free CPU cores" : "",
             storage_cap ? "; the storage ceiling limits the gain" : "");
}

static void advise_pin(const an_run *run, an_result *res, const an_opts *o)
{
    (void)run;
    if (res->cur_pin_memory == 1 || !res->measured)
        return;
    const an_proc *p = res->trainer;
    uint64_t cost = 0;
    for (size_t i = 0; i < res->nsteps; i++)
        if (!res->steps[i].warmup)
            cost += res->steps[i].v.busy[AN_BUSY_H2D_PAGEABLE] + res->steps[i].v.idle_pg;
    const double cost_ms = ms(cost) / (double)res->measured;
    const double step = res->step_ms_median;
    if (step <= 0 || cost_ms < PIN_MIN_SHARE * step)
        return;
    /* pageable bytes per step, and how fast pinned memory would move them */
    const uint64_t pg_bytes = p->h2d_pageable_bytes ? p->h2d_pageable_bytes : p->host_pageable_bytes;
    const uint64_t pg_ns = p->h2d_pageable_bytes ? p->h2d_pageable_ns : p->host_pageable_ns;
    const double bytes_step = res->nsteps ? (double)pg_bytes / (double)res->nsteps : 0;
    double pinned_GBps = 0;
    const char *src;
    if (p->h2d_pinned_bytes >= (1u << 20) && p->h2d_pinned_ns) {
        pinned_GBps = (double)p->h2d_pinned_bytes / (double)p->h2d_pinned_ns;
        src = "pinned copies seen in this run";
    } else if (o->probe_h2d_pinned_GBps > 0) {
        pinned_GBps = o->probe_h2d_pinned_GBps;
        src = "probed pinned bandwidth";
    } else {
        const double pg_GBps = pg_ns ? (double)pg_bytes / (double)pg_ns : 0;
        pinned_GBps = pg_GBps * PIN_DEFAULT_SPEEDUP;
        src = "assumed 2x the pageable bandwidth seen";
    }
    double after_ms = pinned_GBps > 0 ? bytes_step / pinned_GBps / 1e6 : cost_ms / PIN_DEFAULT_SPEEDUP;
    if (after_ms > cost_ms)
        after_ms = cost_ms;
    const double saving = cost_ms - after_ms;
    if (saving < 0.01 * step)
        return;
    an_advice *a = advice_new(res, AN_ADV_PIN_MEMORY);
    if (!a)
        return;
    a->has_value = 1;
    a->value = 1;
    a->predicted_saving_ms = saving;
    a->predicted_step_ms = step - saving;
    snprintf(a->why, sizeof a->why,
             "pageable host-to-device copies cost %.2f ms per step (%.1f MB per step); pinned they "
             "would take about %.2f ms (%s, %.1f GB/s)",
             cost_ms, bytes_step / 1e6, after_ms, src, pinned_GBps);
}

/* ---- entry ------------------------------------------------------------------------------ */

int an_analyze(const an_run *run, const an_opts *o, an_result *res, char *err, size_t errlen)
{
    memset(res, 0, sizeof *res);
    res->cur_workers = -1;
    res->cur_pin_memory = -1;
    if (!run->nprocs) {
        snprintf(err, errlen, "no readable trace file");
        return -1;
    }
    const an_proc *tr = choose_trainer(run);
    res->trainer = tr;
    res->thread = choose_thread(tr);
    res->no_gpu = gpu_busy(tr) == 0;
    long cores = o->cores > 0 ? o->cores : sysconf(_SC_NPROCESSORS_ONLN) - 1;
    res->cores = (int)(cores < 1 ? 1 : cores);
    for (size_t i = 0; i < run->nprocs; i++)
        res->late_ns += run->procs[i].tl.late_ns;

    stepbuf b = {0};
    if (res->thread && cut_steps(res, res->thread, &b) < 0) {
        free(b.v);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    res->steps = b.v;
    res->nsteps = b.n;
    if (!res->nsteps) {
        snprintf(err, errlen,
                 "no training steps found in %s (pid %llu): no step or batch-fetch markers, no NVTX "
                 "range matching --step-range, and no periodic batch arrivals to infer them from",
                 tr->file, (unsigned long long)tr->pid);
        return -1;
    }
    mark_warmup(res, o);
    if (!res->measured) {
        snprintf(err, errlen, "all %zu steps are warm-up (--skip %d): nothing left to measure",
                 res->nsteps, o->skip);
        return -1;
    }
    summarize(res);
    judge(res);

    const char *nw = cfg_value(tr, "num_workers");
    if (nw)
        res->cur_workers = atoi(nw);
    res->cur_pin_memory = parse_bool(cfg_value(tr, "pin_memory"));
    if (find_workers(run, res) < 0) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    if (res->cur_workers < 0 && res->nworkers && res->workers[0].p != tr)
        res->cur_workers = (int)res->nworkers;
    advise_workers(res, o);
    advise_pin(run, res, o);

    if (res->late_ns)
        note(res, "%.1f ms of activity arrived too late in the trace to be placed exactly",
             ms(res->late_ns));
    if (tr->dropped || tr->lost || tr->gpu_dropped)
        note(res, "the collector dropped events in the trainer (%llu dropped, %llu lost, %llu GPU "
                  "records): numbers undercount",
             (unsigned long long)tr->dropped, (unsigned long long)tr->lost,
             (unsigned long long)tr->gpu_dropped);
    if (tr->trace_stopped)
        note(res, "tracing stopped early in the trainer (output failed)");
    if (tr->cupti_lost_ts && tr->gpu_events) { /* mid-run: there was GPU activity */
        size_t after = 0;
        for (size_t i = 0; i < res->nsteps; i++)
            after += !res->steps[i].warmup && res->steps[i].v.t1 > tr->cupti_lost_ts;
        note(res, "another CUPTI client (a profiler) took CUPTI %.0f ms into the trainer's trace: "
                  "GPU activity after it is not recorded, and the %zu measured steps after it "
                  "show their GPU time as idle",
             ms(tr->cupti_lost_ts - tr->first_ts), after);
    }
    const an_copy_kinds *ck = &tr->copy_kinds;
    if (ck->pageable_by_hooks_pinned_by_cupti || ck->pinned_by_hooks_pageable_by_cupti)
        note(res, "host copies: CUPTI saw pinned memory where the CUDA hooks saw pageable in %llu, "
                  "pageable where they saw pinned in %llu (of %llu matched): CUPTI's word was taken",
             (unsigned long long)ck->pageable_by_hooks_pinned_by_cupti,
             (unsigned long long)ck->pinned_by_hooks_pageable_by_cupti,
             (unsigned long long)ck->matched);
    if (res->thread && res->thread->slot < 0)
        note(res, "the training thread was not tracked (more than %d threads)", AN_TL_MAX_SLOTS);
    return 0;
}

void an_result_free(an_result *res)
{
    free(res->steps);
    free(res->workers);
    memset(res, 0, sizeof *res);
}
