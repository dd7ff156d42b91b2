/* an_replay_advice.c — advice from the batches replayed in order
 * (an_replay_advice.h).
 *
 * RATIONALE: the replay keeps each batch's time as measured, which holds
 * while the workers running ahead (a deeper prefetch) or beside each other
 * (more workers) take no CPU the others need; the CPU a step needs does
 * not change with either (the same batches, the same trainer), only how
 * fast it is asked for. So a change is advised only when that CPU over
 * the shorter step fits in AN_REPLAY_CPU_ROOM of the CPUs other processes'
 * load, the trainer's other threads and every other traced thread leave;
 * or when the workers mostly wait (their CPU under AN_LOADER_CPU_BOUND of
 * a batch): a thread that wakes from a wait runs its short burst at once,
 * busy CPUs or not, as the model's fitted way says (an_workers_model.c),
 * and its batch's run-queue delay was measured with the load. Beside 2
 * CPU burners on the 2-CPU VM (1.86 of the 2 CPUs busy with them) the
 * uneven regime's workers wait 16.0 of their 17.0 ms a batch; 4 workers
 * and prefetch_factor 8 then measured within -5.6% to +0.7% of the
 * replay's predictions in 3 of 3 rounds (docs/testing.md), where the
 * free CPUs alone advised neither.
 */
#include <math.h>
#include <stdio.h>

#include "decide/an_choose.h"
#include "decide/an_replay_advice.h"

/* The replay gave back the measured steps (within the model's error) of a
 * DataLoader with workers, with its time measured. */
static int replayed(const an_decide_in *in)
{
    const double meas = in->replay.measured_ms, now = in->replay.now_ms;
    return in->loader_kind == AN_LOADER_DATALOADER && in->cur_workers >= 1 &&
           in->replay.steps && meas > 0 && fabs(now - meas) <= AN_MODEL_ERROR * meas &&
           in->time_measured && in->cpus > 0;
}

/* Whether the CPU a step needs fits a step of `step` ms (the RATIONALE). */
static int cpu_fits(const an_decide_in *in, double step)
{
    const double w_wait = fmax(in->w_io_ms, 0) + fmax(in->w_fault_ms, 0) +
                          fmax(in->w_blocked_ms, 0);
    if (in->w_cpu_ms >= 0 && in->w_cpu_ms < AN_LOADER_CPU_BOUND * (in->w_cpu_ms + w_wait))
        return step > 0;
    const double free = in->cpus - fmax(in->other_load_cores, 0) - fmax(in->other_cores, 0) -
                        fmax(in->t_par_cores, 0);
    const double need = (fmax(in->t_cpu_ms, 0) + fmax(in->w_cpu_ms, 0)) / step;
    return step > 0 && need <= AN_REPLAY_CPU_ROOM * free;
}

/* Of n replayed steps ms[j], the first that saves AN_REPLAY_NEAR_BEST of
 * the most any saves from the replay now, when that most is at least
 * AN_REPLAY_MIN_SAVING of a step; -1 none. */
static int pick(const an_decide_in *in, const double *ms, int n)
{
    const double now = in->replay.now_ms;
    double best = 0;
    for (int j = 0; j < n; j++)
        best = fmax(best, now - ms[j]);
    if (best < AN_REPLAY_MIN_SAVING * in->replay.measured_ms)
        return -1;
    for (int j = 0; j < n; j++)
        if (now - ms[j] >= AN_REPLAY_NEAR_BEST * best)
            return j;
    return -1;
}

/* The replayed setting to advise among n (values v, replayed steps ms),
 * as an entry with its prediction on the mean step (setting and why left
 * to the caller); -1 where none is, or out has no room. */
static int advise_from(const an_decide_in *in, const an_decision *out, const int *v,
                       const double *ms, int n, an_advice *a)
{
    const double step = in->step_mean_ms > 0 ? in->step_mean_ms : in->step_ms;
    if (!replayed(in) || step <= 0 || out->nadvice >= AN_ADVICE_MAX)
        return -1;
    const int j = pick(in, ms, n);
    if (j < 0)
        return -1;
    const double saving = in->replay.now_ms - ms[j];
    if (!cpu_fits(in, step - saving))
        return -1;
    *a = an_advice_count(in, 1, v[j], step - saving, AN_BASE_MEAN, step);
    return j;
}

void an_advise_prefetch(const an_decide_in *in, an_decision *out)
{
    an_advice a;
    const int j = advise_from(in, out, in->replay.pf, in->replay.pf_ms, in->replay.npf, &a);
    if (j < 0)
        return;
    const int pf = in->replay.pf[j];
    a.setting = AN_ADV_PREFETCH_FACTOR;
    snprintf(a.why, sizeof a.why,
             "the %zu steps replayed in order from the workers' own batch times (a DataLoader "
             "returns batches in order, each worker %d ahead) give %.1f ms a step, as measured "
             "(%.1f ms); with %d batches ahead each, %.1f ms: a slow batch holds up fewer behind "
             "it. Each worker then holds up to %d batches ready in memory",
             in->replay.steps, in->prefetch, in->replay.now_ms, in->replay.measured_ms, pf,
             in->replay.pf_ms[j], pf);
    out->advice[out->nadvice++] = a;
}

int an_advise_replay_workers(const an_decide_in *in, an_decision *out)
{
    an_advice a;
    const int j = advise_from(in, out, in->replay.nw, in->replay.nw_ms, in->replay.nnw, &a);
    if (j < 0)
        return 0;
    snprintf(a.why, sizeof a.why,
             "the %zu steps replayed in order from the workers' own batch times (a DataLoader "
             "gives batch i to worker i mod num_workers and returns them in order) give %.1f ms "
             "a step, as measured (%.1f ms); with %d workers, %.1f ms",
             in->replay.steps, in->replay.now_ms, in->replay.measured_ms, in->replay.nw[j],
             in->replay.nw_ms[j]);
    out->advice[out->nadvice++] = a;
    return 1;
}
