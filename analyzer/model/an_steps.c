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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/an_result.h"
#include "base/an_grow.h"
#include "base/an_index.h"

#define WARMUP_FACTOR 2.0     /* leading steps slower than this x median are warm-up */
#define PERIOD_MIN 0.5        /* inferred boundaries closer than 0.5 x median gap merge */
/* RATIONALE: a training thread's first batches fault in its libraries'
 * pages too (a DataLoader run read 3 MB so); a dataset mapped and read
 * cold reads tens to hundreds (nanoGPT's 32 MiB token file: 72 MB) */
#define COLD_BYTES 8e6

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

/* Candidates of one type (and of marker class mark; ANY: every class). */
#define ANY 0xffffu

static int is(const an_cand *c, uint32_t type, unsigned mark)
{
    return c->type == type && (mark == ANY || c->mark == mark);
}

static size_t count_type(const an_thread *t, uint32_t type, unsigned mark)
{
    size_t n = 0;
    for (size_t i = 0; i < t->ncand; i++)
        n += is(&t->cand[i], type, mark);
    return n;
}

/* Steps between consecutive candidates of one type (and from the last to
 * the end of the events, for loader iterations). */
static int steps_consecutive(stepbuf *b, const an_thread *t, uint32_t type, unsigned mark)
{
    const an_cand *prev = NULL;
    size_t k = 0;
    const int by_index = type == AN_C_BURST_WAIT || type == AN_C_BURST_H2D || type == AN_C_BURST_IO;
    for (size_t i = 0; i < t->ncand; i++) {
        const an_cand *c = &t->cand[i];
        if (!is(c, type, mark) && !(type == AN_C_NVTX_FETCH && c->type == AN_C_END))
            continue;
        if (prev && step_push(b, prev, c, by_index ? k : prev->num) < 0)
            return -1;
        prev = c;
        k++;
    }
    return 0;
}

static int steps_pairs(stepbuf *b, const an_thread *t, uint32_t tb, uint32_t te, unsigned mark)
{
    const an_cand *open = NULL;
    for (size_t i = 0; i < t->ncand; i++) {
        const an_cand *c = &t->cand[i];
        if (is(c, tb, mark)) {
            open = c;
        } else if (is(c, te, mark) && open) {
            if (step_push(b, open, c, open->num) < 0)
                return -1;
            open = NULL;
        }
    }
    return 0;
}

/* RATIONALE: file bursts are everywhere a program reads (Python imports a
 * module per burst); a training loop's come one a step, at its period.
 * Kept bursts are a loop's when at least REGULAR_MIN of them are, and 3 in
 * 4 of their gaps lie within [PERIOD_MIN, 1/PERIOD_MIN] x their median. */
#define REGULAR_MIN 5

static int regular(const an_cand *const *keep, size_t nk, double *gaps)
{
    if (nk < REGULAR_MIN)
        return 0;
    for (size_t i = 1; i < nk; i++)
        gaps[i - 1] = (double)(keep[i]->t - keep[i - 1]->t);
    const double g = an_percentile(gaps, nk - 1, 0.5);
    size_t in = 0;
    for (size_t i = 0; i + 1 < nk; i++)
        in += gaps[i] >= PERIOD_MIN * g && gaps[i] <= g / PERIOD_MIN;
    return 4 * in >= 3 * (nk - 1);
}

/* The path most file bursts of t start on (0: none): a loop reads the same
 * file every step, while the imports before it read a file each. */
static uint32_t loop_path(const an_thread *t)
{
    an_index counts = {0};
    uint32_t best = 0, best_n = 0;
    for (size_t i = 0; i < t->ncand; i++) {
        const an_cand *c = &t->cand[i];
        if (c->type != AN_C_BURST_IO || !c->path)
            continue;
        const long had = an_index_get(&counts, c->path);
        const uint32_t n = had < 0 ? 1 : (uint32_t)had + 1;
        if (an_index_put(&counts, c->path, n) != 0)
            break; /* out of memory: the best so far */
        if (n > best_n) {
            best = c->path;
            best_n = n;
        }
    }
    an_index_free(&counts);
    return best;
}

/* Burst starts of one kind (on path, 0: any) into keep, each dropped that
 * starts closer than min_gap to the one kept before it; their count. */
static size_t merge_bursts(const an_thread *t, uint32_t type, uint32_t path, double min_gap,
                           const an_cand **keep)
{
    size_t nk = 0;
    for (size_t i = 0; i < t->ncand; i++) {
        const an_cand *c = &t->cand[i];
        if (c->type != type || !c->have || (path && c->path != path))
            continue;
        if (nk && (double)(c->t - keep[nk - 1]->t) < min_gap)
            continue;
        keep[nk++] = c;
    }
    return nk;
}

/* RATIONALE: a step's file events can come as two bursts (nanoGPT's
 * get_batch maps its file, gathers, then drops the mapping: preempted in
 * between for more than the burst gap on a busy machine); once more than
 * half the steps have two, the median gap is the short one and nothing
 * merges. So file bursts are merged at PERIOD_MIN x the median gap, else
 * x these larger percentiles of the gaps, the first that leaves them
 * regular. */
static const double PERIOD_PCT[] = {0.5, 0.75, 0.9};

/* Inferred: burst starts of one kind (file bursts: those on the loop's
 * path), merged where closer than PERIOD_MIN x the median gap, cut the run
 * into steps (file bursts only when regular, the merge widened as above). */
static int steps_inferred(stepbuf *b, const an_thread *t, uint32_t type)
{
    const uint32_t path = type == AN_C_BURST_IO ? loop_path(t) : 0;
    size_t n = count_type(t, type, ANY);
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
        if (c->type != type || (path && c->path != path))
            continue;
        if (prev)
            gaps[ng++] = (double)(c->t - prev->t);
        prev = c;
    }
    const size_t npct = type == AN_C_BURST_IO ? sizeof PERIOD_PCT / sizeof PERIOD_PCT[0] : 1;
    double g[sizeof PERIOD_PCT / sizeof PERIOD_PCT[0]];
    for (size_t q = 0; q < npct; q++) /* before regular() takes gaps as scratch */
        g[q] = an_percentile(gaps, ng, PERIOD_PCT[q]);
    size_t nk = 0;
    int ok = 0;
    for (size_t q = 0; q < npct && !ok; q++) {
        nk = merge_bursts(t, type, path, PERIOD_MIN * g[q], keep);
        ok = type != AN_C_BURST_IO || regular(keep, nk, gaps);
    }
    int rc = 0;
    if (ok)
        for (size_t i = 1; i < nk && rc == 0; i++)
            rc = step_push(b, keep[i - 1], keep[i], i - 1);
    free(gaps);
    free(keep);
    return rc;
}

/* Steps from the step markers of class mark (begin/end pairs, else
 * consecutive begins or ends); 0 when there are too few. */
static int steps_marked(stepbuf *b, const an_thread *t, unsigned mark)
{
    const size_t nb = count_type(t, AN_C_STEP_B, mark), ne = count_type(t, AN_C_STEP_E, mark);
    if (nb && ne)
        return steps_pairs(b, t, AN_C_STEP_B, AN_C_STEP_E, mark);
    if (nb >= 2 || ne >= 2)
        return steps_consecutive(b, t, nb >= 2 ? AN_C_STEP_B : AN_C_STEP_E, mark);
    return 0;
}

/* The sources, best first (docs/report-schema.md, "Steps"): the
 * program's own step markers, a DataLoader's (or the C API's), batch
 * fetches, NVTX ranges, optimizer steps, backward() calls; else inferred
 * from periodic bursts of batch arrivals, host-to-device copies or file
 * reads and mappings. */
static int cut_steps(an_result *res, const an_thread *t, stepbuf *b)
{
    static const struct {
        unsigned mark;
        const char *detail;
    } marked[] = {{GS_MARK_EXPLICIT, "gpustarve.step() markers"}, {GS_MARK_PLAIN, "step markers"}};
    for (size_t i = 0; i < sizeof marked / sizeof marked[0]; i++) {
        if (steps_marked(b, t, marked[i].mark) < 0)
            return -1;
        if (b->n) {
            res->source = AN_SRC_MARKERS;
            res->source_detail = marked[i].detail;
            return 0;
        }
    }
    if (count_type(t, AN_C_FETCH_B, ANY) >= 2) {
        res->source = AN_SRC_MARKERS;
        res->source_detail = "batch-fetch markers";
        return steps_consecutive(b, t, AN_C_FETCH_B, ANY);
    }
    if (count_type(t, AN_C_NVTX_B, ANY) && count_type(t, AN_C_NVTX_E, ANY)) {
        res->source = AN_SRC_NVTX;
        res->source_detail = "NVTX ranges";
        return steps_pairs(b, t, AN_C_NVTX_B, AN_C_NVTX_E, ANY);
    }
    if (count_type(t, AN_C_NVTX_FETCH, ANY) >= 2) {
        /* no step range, but the loader's iterations (DataLoader __next__
         * ranges): one step each, before anything inferred */
        res->source = AN_SRC_NVTX;
        res->source_detail = "loader iterations (batch-wait ranges)";
        return steps_consecutive(b, t, AN_C_NVTX_FETCH, ANY);
    }
    if (count_type(t, AN_C_OPT_E, ANY) >= 2) {
        res->source = AN_SRC_MARKERS;
        res->source_detail = "optimizer steps (optimizer.step())";
        return steps_consecutive(b, t, AN_C_OPT_E, ANY);
    }
    if (count_type(t, AN_C_BWD_E, ANY) >= 2) {
        res->source = AN_SRC_MARKERS;
        res->source_detail = "backward() calls";
        return steps_consecutive(b, t, AN_C_BWD_E, ANY);
    }
    static const struct {
        uint32_t type;
        const char *detail;
    } bursts[] = {{AN_C_BURST_WAIT, "batch arrivals on worker pipes (inferred)"},
                  {AN_C_BURST_H2D, "host-to-device copies (inferred)"},
                  {AN_C_BURST_IO, "file reads and mappings of the training thread (inferred)"}};
    res->source = AN_SRC_INFERRED;
    for (size_t i = 0; i < sizeof bursts / sizeof bursts[0]; i++) {
        if ((i && b->n >= 2) || count_type(t, bursts[i].type, ANY) < 3)
            continue;
        b->n = 0;
        res->source_detail = bursts[i].detail;
        if (steps_inferred(b, t, bursts[i].type) < 0)
            return -1;
    }
    return 0;
}

void an_no_steps_message(const an_result *res, char *err, size_t errlen)
{
    const an_proc *tr = res->trainer;
    snprintf(err, errlen,
             "no training steps found in %s (pid %llu): no step, fetch or NVTX step markers, no "
             "optimizer step() or backward(), and nothing periodic to infer them from. Mark one "
             "training step: in Python, `with gpustarve.step():` around it (or `@gpustarve.step` "
             "on its function; `with gpustarve.fetch():` around its wait for data); in C/C++, "
             "gpustarve_step_begin/_end of <gpustarve.h> (README, \"Marking steps\")",
             tr ? tr->file : "?", tr ? (unsigned long long)tr->pid : 0ull);
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

/* The training thread's major page faults over [a, b] and the bytes they
 * read (storage reads beyond what its hooked reads returned), from its
 * samples; -1 where unknown. */
static void faults_in(const an_thread *th, uint64_t a, uint64_t b, double *faults, double *bytes)
{
    const an_cpu_log *l = th ? th->cpu : NULL;
    *faults = *bytes = -1;
    if (!l || !l->n || b <= a)
        return;
    const double f0 = an_cpu_value_at(l, a, AN_CV_MAJFLT), f1 = an_cpu_value_at(l, b, AN_CV_MAJFLT);
    if (f0 < 0 || f1 < 0)
        return;
    *faults = f1 > f0 ? f1 - f0 : 0;
    const double s0 = an_cpu_value_at(l, a, AN_CV_STORAGE), s1 = an_cpu_value_at(l, b, AN_CV_STORAGE);
    const size_t i = an_cpu_lower(l, a), j = an_cpu_lower(l, b);
    if (s0 < 0 || s1 < 0 || i >= l->n || j >= l->n)
        return;
    const double rd = (double)l->s[j].rd_bytes - (double)l->s[i].rd_bytes;
    *bytes = s1 - s0 - rd > 0 ? s1 - s0 - rd : 0;
}

/* A note on what the warm-up left out (docs/report-schema.md, "Steps"): a
 * slow first step, and the page faults the training thread took before
 * the measured steps, from its first wait for data on (a loop cut at
 * optimizer steps reads its first batch before its first step), when
 * they read COLD_BYTES or more (a memory-mapped dataset read cold). */
static void warmup_note(an_result *res, double med, size_t skip)
{
    const an_step *st = &res->steps[0];
    const an_thread *th = res->thread;
    if (res->nnotes >= sizeof res->notes / sizeof res->notes[0] || skip >= res->nsteps)
        return;
    double faults = -1, bytes = -1;
    uint64_t first = UINT64_MAX; /* its first wait for data: the imports before it fault too */
    for (size_t i = 0; th && th->cpu && i < th->cpu->nf; i++)
        if (th->cpu->f[i].mark != GS_MARK_COLLATE && th->cpu->f[i].t0 < first)
            first = th->cpu->f[i].t0;
    if (first < res->steps[skip].v.t0)
        faults_in(th, first, res->steps[skip].v.t0, &faults, &bytes);
    const int slow = ms(st->v.t1 - st->v.t0) > WARMUP_FACTOR * med;
    const int cold = faults >= 1 && bytes >= COLD_BYTES;
    if (!slow && !cold)
        return;
    char *n = res->notes[res->nnotes++];
    const size_t cap = sizeof res->notes[0];
    int at = 0;
    if (slow)
        at = snprintf(n, cap, "the first step took %.1f ms, %.1f times the median step: left "
                              "out as warm-up",
                      ms(st->v.t1 - st->v.t0), ms(st->v.t1 - st->v.t0) / med);
    if (cold && at >= 0 && (size_t)at < cap)
        snprintf(n + at, cap - (size_t)at, "%sbefore the measured steps the training thread took "
                                           "%.0f major page faults, ~%.0f MB read through them (a "
                                           "cold page cache, as of a mapped file read on first "
                                           "touch)",
                 slow ? "; " : "", faults, bytes / 1e6);
}

void an_measured_window(const an_result *res, uint64_t *a, uint64_t *b)
{
    *a = UINT64_MAX;
    *b = 0;
    for (size_t i = 0; i < res->nsteps; i++) {
        const an_step *st = &res->steps[i];
        if (st->warmup)
            continue;
        *a = st->v.t0 < *a ? st->v.t0 : *a;
        *b = st->v.t1 > *b ? st->v.t1 : *b;
    }
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
                if (med > 0)
                    warmup_note(res, med, skip);
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
