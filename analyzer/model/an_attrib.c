/* an_attrib.c — where a step's time goes (an_attrib.h) and the run's
 * summary: step time statistics, each share of all measured step time, the
 * per-step medians, and the input-bound share the verdict reads
 * (docs/report-schema.md, "Summary numbers").
 *
 * Must never: divide by zero (every ratio checks its denominator), or count
 * a warm-up step in a summary.
 */
#include <stdlib.h>
#include <string.h>

#include "model/an_result.h"

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
    const uint64_t f = b->fetch >= a->fetch ? b->fetch - a->fetch : 0;
    v->fetch = f < len ? f : len;
}

uint64_t an_stepv_busy(const an_stepv *v)
{
    uint64_t b = 0;
    for (int c = 0; c < AN_NBUSY; c++)
        b += v->busy[c];
    return b;
}

uint64_t an_stepv_part(const an_stepv *v, int k)
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

int an_piece_share(unsigned piece)
{
    /* enum an_piece lists the busy classes first (enum an_busy order) */
    static const int share[AN_NPC] = {
        AN_SH_COMPUTE, AN_SH_COMM, AN_SH_H2D_PAGEABLE, AN_SH_H2D_PINNED, AN_SH_COPY_OTHER,
        AN_SH_DATA_WAIT, AN_SH_PAGEABLE_COPY, AN_SH_HOST,
    };
    return piece < AN_NPC ? share[piece] : AN_SH_HOST;
}

static double ms(uint64_t ns)
{
    return (double)ns / 1e6;
}

void an_summarize(an_result *res)
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
            sum[k] += an_stepv_part(&s->v, k);
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
                x[j++] = ms(an_stepv_part(&res->steps[i].v, k));
        res->median_ms[k] = an_percentile(x, m, 0.5);
    }
    /* the input-bound share: the larger of the median per-step share and the
     * share of all measured time.
     * RATIONALE (docs/report-schema.md, "Summary numbers"): not the median
     * alone, because workers that finish together deliver batches in bursts:
     * every other step waits long and the rest not at all, and the median (0)
     * would call a loop that waits half its time "not input-bound". The total
     * share catches that; the median still catches a loop whose typical step
     * waits while a few long steps dilute the total. */
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
    /* the training thread's batch fetches beside the split (docs/report-schema.md,
     * "Summary numbers": fetch_share) */
    uint64_t fsum = 0;
    j = 0;
    for (size_t i = 0; i < res->nsteps; i++) {
        const an_step *s = &res->steps[i];
        if (s->warmup)
            continue;
        fsum += s->v.fetch;
        x[j++] = ms(s->v.fetch);
    }
    res->has_fetch = fsum > 0;
    res->fetch_share = tot ? (double)fsum / (double)tot : 0;
    res->fetch_median_ms = an_percentile(x, m, 0.5);
    free(d);
    free(x);
}
