/* an_steps.c — where a step is cut: from the training thread's
 * step-boundary candidates (logged by an_events.c during the pass, each with
 * a timeline snapshot), the steps, best source first — step markers, then
 * batch-fetch markers, then NVTX ranges matching --step-range, else inferred
 * from the period of batch arrivals or host-to-device copies — and which
 * leading steps are warm-up (docs/report-schema.md, "Steps").
 *
 * A step's attribution is the difference of its two boundary snapshots
 * (an_stepv_from_snaps, an_attrib.c); nothing here looks at events.
 *
 * Must never: make a step of two candidates whose snapshots were not
 * delivered, or a step of zero or negative length.
 */
#include <stdlib.h>
#include <string.h>

#include "model/an_result.h"
#include "base/an_grow.h"

#define WARMUP_FACTOR 2.0     /* leading steps slower than this x median are warm-up */
#define PERIOD_MIN 0.5        /* inferred boundaries closer than 0.5 x median gap merge */

const char *an_source_name(int s)
{
    switch (s) {
    case AN_SRC_MARKERS: return "markers";
    case AN_SRC_NVTX: return "nvtx";
    case AN_SRC_INFERRED: return "inferred";
    }
    return "none";
}

static double ms(uint64_t ns)
{
    return (double)ns / 1e6;
}

typedef struct stepbuf {
    an_step *v;
    size_t n, cap;
} stepbuf;

static int step_push(stepbuf *b, const an_cand *a, const an_cand *e, uint64_t num)
{
    if (!a->have || !e->have || e->t <= a->t)
        return 0;
    if (an_grow(&b->v, &b->cap, b->n + 1, sizeof *b->v, 64) < 0)
        return -1;
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

/* Steps between consecutive candidates of one type (and from the last to
 * the end of the events, for loader iterations). */
static int steps_consecutive(stepbuf *b, const an_thread *t, uint32_t type)
{
    const an_cand *prev = NULL;
    size_t k = 0;
    for (size_t i = 0; i < t->ncand; i++) {
        const an_cand *c = &t->cand[i];
        if (c->type != type && !(type == AN_C_NVTX_FETCH && c->type == AN_C_END))
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
    } else if (count_type(t, AN_C_NVTX_FETCH) >= 2) {
        /* no step range, but the loader's iterations (DataLoader __next__
         * ranges): one step each, before anything inferred */
        res->source = AN_SRC_NVTX;
        res->source_detail = "loader iterations (batch-wait ranges)";
        if (steps_consecutive(b, t, AN_C_NVTX_FETCH) < 0)
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

int an_cut_steps(an_result *res, const an_thread *t)
{
    stepbuf b = {0};
    if (cut_steps(res, t, &b) < 0) {
        free(b.v);
        return -1;
    }
    res->steps = b.v;
    res->nsteps = b.n;
    return 0;
}

void an_mark_warmup(an_result *res, int skip_opt)
{
    size_t n = res->nsteps;
    size_t skip = 0;
    if (skip_opt >= 0) {
        skip = (size_t)skip_opt;
        res->skip_auto = 0;
    } else {
        res->skip_auto = 1;
        /* RATIONALE: an imported PyTorch profiler trace holds only the
         * steps of the profiler's active phase: its schedule (wait, warmup)
         * has already left the warm-up steps out */
        if (res->trainer && res->trainer->imported) {
            skip = 0;
        } else if (n >= 3) {
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
