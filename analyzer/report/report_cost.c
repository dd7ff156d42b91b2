/* report_cost.c — the cost of a traced run at a price per GPU-hour
 * (report_cost.h): the mean measured step times the GPUs the run held is
 * what 1,000 steps cost; the shares of the step time the GPU sat idle
 * waiting for data (and idle at all) are the parts of it that bought
 * nothing (docs/report-schema.md, "Cost").
 *
 * Must never: invent a GPU count: the devices the trainer used, times the
 * ranks of a job (one GPU each at least).
 */
#include <string.h>

#include "model/an_ranks.h"
#include "report/report_cost.h"

int rep_cost_of(const an_result *r, rep_cost *c)
{
    memset(c, 0, sizeof *c);
    if (!(r->price_per_gpu_hour > 0) || !r->measured || !(r->step_ms_mean > 0))
        return 0;
    const double per_rank = r->trainer->ndevs ? (double)r->trainer->ndevs : 1.0;
    c->price = r->price_per_gpu_hour;
    c->gpus = per_rank * (r->job && r->job->nranks > 1 ? (double)r->job->nranks : 1.0);
    c->step_ms = r->step_ms_mean;
    /* an hour is 3.6e6 ms */
    c->per_1000_steps = c->price * c->gpus * 1000 * c->step_ms / 3.6e6;
    c->data_wait_share = r->share[AN_SH_DATA_WAIT];
    c->idle_share = r->no_gpu ? 0
                              : r->share[AN_SH_DATA_WAIT] + r->share[AN_SH_PAGEABLE_COPY] +
                                    r->share[AN_SH_HOST];
    c->data_wait_per_1000_steps = c->per_1000_steps * c->data_wait_share;
    c->idle_per_1000_steps = c->per_1000_steps * c->idle_share;
    return 1;
}

void rep_text_cost(gs_out *o, const an_result *r, const style *st)
{
    rep_cost c;
    if (!rep_cost_of(r, &c))
        return;
    gs_out_printf(o, "%scost%s     %.2f per 1,000 steps (%.0f GPU%s at %.2f an hour, %.1f ms a step); "
                     "%.2f of it (%.0f%%) paid for GPUs waiting for data, %.2f (%.0f%%) for GPUs "
                     "idle\n",
                  st->bold, st->off, c.per_1000_steps, c.gpus, c.gpus == 1 ? "" : "s", c.price,
                  c.step_ms, c.data_wait_per_1000_steps, 100 * c.data_wait_share,
                  c.idle_per_1000_steps, 100 * c.idle_share);
}

void rep_json_cost(gs_jw *w, const an_result *r)
{
    rep_cost c;
    gs_jw_key(w, "cost");
    if (!rep_cost_of(r, &c)) {
        gs_jw_null(w);
        return;
    }
    gs_jw_obj(w);
    gs_jw_knum(w, "price_per_gpu_hour", c.price, 9);
    gs_jw_knum(w, "gpus", c.gpus, 9);
    gs_jw_knum(w, "step_ms", c.step_ms, 9);
    gs_jw_knum(w, "per_1000_steps", c.per_1000_steps, 9);
    gs_jw_knum(w, "data_wait_share", c.data_wait_share, 9);
    gs_jw_knum(w, "data_wait_per_1000_steps", c.data_wait_per_1000_steps, 9);
    gs_jw_knum(w, "idle_share", c.idle_share, 9);
    gs_jw_knum(w, "idle_per_1000_steps", c.idle_per_1000_steps, 9);
    gs_jw_end(w);
}
