/* report_cost.h — what a traced run costs at `report --price PER_GPU_HOUR`
 * (report_cost.c): per 1,000 steps, and the part of it that paid for GPUs
 * waiting for data (docs/report-schema.md, "Cost").
 *
 * Must never: be shown without a price given (an_result.price_per_gpu_hour 0).
 */
#ifndef REPORT_COST_H
#define REPORT_COST_H

#include "base/out_buf.h"
#include "base/out_json.h"
#include "model/an_model.h"
#include "report/report_style.h"

typedef struct rep_cost {
    double price;          /* per GPU-hour, as given */
    double gpus;           /* the GPUs the run held */
    double step_ms;        /* the mean measured step */
    double per_1000_steps; /* price x gpus x 1,000 steps of step_ms */
    double data_wait_share, data_wait_per_1000_steps;
    double idle_share, idle_per_1000_steps; /* every GPU-idle part */
} rep_cost;

/* The cost of the run r describes; 0 when no price was given or no step
 * was measured. */
int rep_cost_of(const an_result *r, rep_cost *c);
/* The report's "cost" line (nothing without a price). */
void rep_text_cost(gs_out *o, const an_result *r, const style *st);
/* The report's "cost" key: an object, or null without a price. */
void rep_json_cost(gs_jw *w, const an_result *r);

#endif
