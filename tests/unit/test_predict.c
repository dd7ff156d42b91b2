/* test_predict.c — the model behind the num_workers advice
 * (analyzer/decide/an_predict.h, an_workers_model.c; docs/report-schema.md, "The
 * model") on hand-built runs with known answers: blocking shrinks in
 * proportion to the workers, CPU only as far as cores are free, a trainer
 * asleep in a GPU sync takes no core, a CPU-only trainer takes its own,
 * other processes' threads (or groups of them) take their share, storage
 * serves only the reads it had at once, and the advice follows. */
#include <math.h>
#include <string.h>

#include "decide/an_choose.h"
#include "decide/an_decide.h"
#include "decide/an_predict.h"
#include "gs_check.h"

static double step(an_pred_in in)
{
    an_pred_out o;
    if (an_predict(&in, &o) < 0)
        return -1;
    return o.step_ms;
}

static an_pred_in run(double cpus, double t_cpu, double t_off, double w_block, double w_cpu, int n)
{
    an_pred_in in;
    memset(&in, 0, sizeof in);
    in.cpus = cpus;
    in.t_cpu_ms = t_cpu;
    in.t_off_ms = t_off;
    in.w_block_ms = w_block;
    in.w_cpu_ms = w_cpu;
    in.workers = n;
    in.prefetch = 2;
    return in;
}

#define NEAR(a, b, tol) (fabs((a) - (b)) <= (tol))

static void test_simulation(void)
{
    /* latency-bound: 60 ms asleep per batch, a 20 ms GPU step: 1 worker
     * gives 60 ms, 3 give the GPU's 20 ms, on any number of cores */
    ASSERT_TRUE(NEAR(step(run(1, 0, 20, 60, 0, 1)), 60, 0.01));
    ASSERT_TRUE(NEAR(step(run(1, 0, 20, 60, 0, 3)), 20, 0.01));
    ASSERT_TRUE(NEAR(step(run(1, 0, 20, 60, 0, 2)), 30, 0.01));
    /* CPU-bound workers, trainer asleep: 50 ms of CPU a batch on 2 cores:
     * 2 workers 25 ms, and a third finds no core */
    ASSERT_TRUE(NEAR(step(run(2, 0, 20, 0, 50, 1)), 50, 0.01));
    ASSERT_TRUE(NEAR(step(run(2, 0, 20, 0, 50, 2)), 25, 0.01));
    ASSERT_TRUE(NEAR(step(run(2, 0, 20, 0, 50, 3)), 25, 0.25)); /* prefetched batches at the window's edge */
    /* a CPU-only trainer (20 ms of CPU a step) shares the 2 cores: 30 ms of
     * loader CPU a batch and 20 of trainer's is 50 ms of CPU a step, 25 ms
     * on 2 cores at best */
    ASSERT_TRUE(NEAR(step(run(2, 20, 0, 0, 30, 1)), 30, 0.01));
    ASSERT_TRUE(step(run(2, 20, 0, 0, 30, 3)) >= 25 - 0.01);
    /* loading inline: everything in a row */
    ASSERT_TRUE(NEAR(step(run(2, 5, 10, 20, 7, 0)), 42, 0.01));
    /* one busy thread of another process on 1 core halves a CPU worker */
    an_pred_in e = run(1, 0, 0, 0, 10, 1);
    e.ext_threads = 1;
    an_pred_out o;
    ASSERT_TRUE(an_predict(&e, &o) == 0);
    ASSERT_TRUE(NEAR(o.step_ms, 20, 0.01));
    ASSERT_TRUE(NEAR(o.w_runq_per_cpu, 1, 0.01)); /* waited as long as it ran */
    ASSERT_TRUE(NEAR(o.ext_cores, 0.5, 0.01));
    /* a favoured trainer: weight 3 against one worker on 1 core */
    an_pred_in w = run(1, 10, 0, 0, 100, 2);
    w.t_weight = 3;
    ASSERT_TRUE(an_predict(&w, &o) == 0);
    ASSERT_TRUE(o.t_runq_per_cpu < o.w_runq_per_cpu);
    /* other processes as 2 busy groups on 2 cores (autogroups): one CPU
     * worker gets 1 * 2 / (2 + 1 * 2) = 0.5 core, two get 2 * 2 / (2 + 2 *
     * 2) = 0.67 between them, where 2 busy threads would give each of two
     * workers 0.5 core, 1 in all */
    an_pred_in g = run(2, 0, 0, 0, 10, 1);
    g.ext_groups = 2;
    ASSERT_TRUE(an_predict(&g, &o) == 0);
    ASSERT_TRUE(NEAR(o.step_ms, 20, 0.01));
    ASSERT_TRUE(NEAR(o.ext_cores, 1.5, 0.01));
    g.workers = 2;
    ASSERT_TRUE(NEAR(step(g), 10 / (4.0 / 6), 0.05));
    g.ext_groups = 0;
    g.ext_threads = 2;
    ASSERT_TRUE(NEAR(step(g), 10, 0.05));
    /* nothing to simulate, no cores */
    ASSERT_TRUE(step(run(0, 1, 1, 1, 1, 1)) < 0);
    ASSERT_TRUE(step(run(2, 0, 0, 0, 0, 1)) < 0);
}

static an_decide_in measured_run(void)
{
    an_decide_in in;
    memset(&in, 0, sizeof in);
    in.measured = 40;
    in.step_ms = 60;
    in.gpu_bound_ms = 20;
    in.input_share = 0.66;
    in.share[AN_SH_DATA_WAIT] = 0.66;
    in.data_wait_ms = 40;
    in.cur_workers = 1;
    in.nworkers = 1;
    in.cur_pin_memory = 1;
    in.cpus = 2;
    strcpy(in.cpus_source, "affinity");
    in.time_measured = 1;
    in.t_cpu_ms = 0.5;
    in.t_runq_ms = 0;
    in.t_blocked_ms = 39.5;
    in.w_blocked_ms = 59.5;
    in.w_cpu_ms = 0.5;
    in.w_runq_ms = 0;
    in.w_wall_ms = 60;
    in.prefetch = 2;
    in.other_load_cores = -1; /* no host_cpu records */
    strcpy(in.argv, "train_loop");
    return in;
}

/* measured_run's loader burning its batch: 60 ms of CPU a batch, the
 * trainer 20 ms of CPU and 40 ms waiting a step */
static an_decide_in cpu_bound_run(void)
{
    an_decide_in in = measured_run();
    in.w_blocked_ms = 0;
    in.w_cpu_ms = 60;
    in.t_cpu_ms = 20;
    in.t_blocked_ms = 40;
    return in;
}

static an_decision decide(const an_decide_in *in)
{
    an_decision d;
    an_decide(in, &d);
    return d;
}

static void test_advice(void)
{
    /* latency-bound: 3 workers, about the GPU's 20 ms */
    an_decide_in in = measured_run();
    an_decision d = decide(&in);
    ASSERT_TRUE(d.model.used);
    ASSERT_TRUE(d.nadvice == 1 && d.advice[0].value == 3);
    ASSERT_TRUE(NEAR(d.advice[0].predicted_step_ms, 20, 1));
    /* the same batch as CPU with a CPU-only trainer: the 2 cores are the
     * limit: 60 ms of loader CPU and 20 of trainer's, 40 ms a step at best */
    in = cpu_bound_run();
    d = decide(&in);
    ASSERT_TRUE(d.nadvice == 1 && d.advice[0].value == 2);
    ASSERT_TRUE(d.advice[0].predicted_step_ms >= 40 - 0.5);
    /* a run the model does not reproduce (a step shorter than one worker's
     * batch): a sweep command, no number */
    in = measured_run();
    in.step_ms = 30;
    d = decide(&in);
    ASSERT_TRUE(d.nadvice == 0);
    ASSERT_MSG(strstr(d.model.sweep, "gpustarve sweep --num-workers 1,3,5 --steps 50 -- train_loop") != NULL, "%s / %s", d.model.sweep, d.notes[0]);
    /* workers idle, the trainer still waits: the handoff, no advice */
    in = measured_run();
    in.cur_workers = 4;
    in.nworkers = 4;
    in.w_blocked_ms = 1;
    in.w_cpu_ms = 1;
    in.w_wall_ms = 2;
    d = decide(&in);
    ASSERT_TRUE(d.nadvice == 0);
    ASSERT_TRUE(d.model.handoff_ms > 30);
    /* the same waits gathered in some steps (uneven: slow batches hold up
     * the rest): no handoff, no number, the sweeps named */
    in.loader_kind = AN_LOADER_DATALOADER;
    in.step_p90_ms = 2 * in.step_ms;
    in.step_mean_ms = 1.2 * in.step_ms;
    d = decide(&in);
    ASSERT_TRUE(d.nadvice == 0 && d.model.handoff_ms == 0);
    int named = 0;
    for (size_t i = 0; i < d.nnotes; i++)
        named += strstr(d.notes[i], "the steps are uneven") &&
                 strstr(d.notes[i], "gpustarve sweep --prefetch-factor 2,4,8 --steps 50 -- "
                                    "train_loop");
    ASSERT_TRUE(named == 1);
    ASSERT_TRUE(strstr(d.model.sweep, "gpustarve sweep --num-workers") != NULL);
    /* the same run replayed in order (model/an_replay.h), the replay giving
     * back the measured steps: num_workers from it, and a deeper
     * prefetch_factor, on the mean step; the sweep is no longer needed */
    const double mean = in.step_mean_ms;
    in.replay.steps = 100;
    in.replay.measured_ms = mean;
    in.replay.now_ms = 0.98 * mean;
    in.replay.nnw = 4;
    in.replay.npf = 3;
    const int nw[] = {5, 6, 7, 8}, pf[] = {4, 8, 16};
    const double nw_ms[] = {0.9 * mean, 0.72 * mean, 0.71 * mean, 0.71 * mean},
                 pf_ms[] = {0.8 * mean, 0.75 * mean, 0.75 * mean};
    memcpy(in.replay.nw, nw, sizeof nw);
    memcpy(in.replay.nw_ms, nw_ms, sizeof nw_ms);
    memcpy(in.replay.pf, pf, sizeof pf);
    memcpy(in.replay.pf_ms, pf_ms, sizeof pf_ms);
    d = decide(&in);
    ASSERT_MSG(d.nadvice == 2, "%zu: %s", d.nadvice, d.nnotes ? d.notes[d.nnotes - 1] : "");
    ASSERT_TRUE(d.advice[0].setting == AN_ADV_NUM_WORKERS && d.advice[0].value == 6);
    ASSERT_TRUE(NEAR(d.advice[0].predicted_step_ms, mean - (0.98 - 0.72) * mean, 1e-9));
    ASSERT_TRUE(d.advice[0].base == AN_BASE_MEAN);
    ASSERT_TRUE(d.advice[1].setting == AN_ADV_PREFETCH_FACTOR && d.advice[1].value == 8);
    ASSERT_TRUE(d.model.sweep[0] == '\0');
    /* a replay that does not give back the steps: the sweep again */
    in.replay.now_ms = 0.8 * mean;
    d = decide(&in);
    ASSERT_TRUE(d.nadvice == 0 && strstr(d.model.sweep, "--num-workers") != NULL);
    in.replay.steps = 0;
    /* not quite uneven (the mean near the median): the handoff again */
    in.step_mean_ms = 1.1 * in.step_ms;
    d = decide(&in);
    ASSERT_TRUE(d.model.handoff_ms > 0);
}

/* The first advice's value, or -1 without one (for failure messages). */
static long first_value(const an_decision *d)
{
    return d->nadvice ? (long)d->advice[0].value : -1L;
}

/* A training thread that loads inline, 40 ms of CPU a batch, beside 10 ms
 * of its own CPU and 10 ms asleep in a GPU sync, on 4 CPUs: two loader
 * threads would make the step about 20 ms; a loop making its batches in
 * its own code (a generator) can hand them to one thread only: 40 ms. */
static void test_own_making_one_thread(void)
{
    an_decide_in in = measured_run();
    in.cpus = 4;
    in.cur_workers = 0;
    in.nworkers = 0;
    in.loader_kind = AN_LOADER_THREADS;
    in.t_cpu_ms = 50;
    in.t_receiving_ms = 40;
    in.t_blocked_ms = 0;
    in.w_blocked_ms = in.w_cpu_ms = in.w_wall_ms = 0;
    an_decision d = decide(&in);
    ASSERT_MSG(d.nadvice == 1 && d.advice[0].value >= 2, "%zu %ld", d.nadvice,
               first_value(&d));
    in.own_making = 1;
    d = decide(&in);
    ASSERT_MSG(d.nadvice == 1 && d.advice[0].value == 1, "%zu %ld", d.nadvice,
               first_value(&d));
    ASSERT_TRUE(NEAR(d.advice[0].predicted_step_ms, 40, 2));
    /* a sweep it suggests tries that one thread, no more */
    an_decide_sweep(&in, &d, 0, 3);
    ASSERT_MSG(strstr(d.model.sweep, "--set NAME=0,1 ") != NULL, "%s", d.model.sweep);
}

/* Other processes' load measured from the machine's CPU time: the fitted
 * load is at least what takes that many cores in the model of the run. */
static void test_measured_load(void)
{
    /* latency-bound, its threads hardly run (no run-queue fit): 1.5 cores
     * of other load are 1.5 busy threads; 3 workers still need little CPU */
    an_decide_in in = measured_run();
    in.other_load_cores = 1.5;
    in.host_cpus = 2;
    an_decision d = decide(&in);
    ASSERT_TRUE(d.model.load_bound == 1);
    ASSERT_TRUE(NEAR(d.model.other_load_cores, 1.5, 1e-9));
    ASSERT_MSG(NEAR(d.model.ext_threads, 1.5, 0.05), "%g", d.model.ext_threads);
    ASSERT_TRUE(d.model.ext_groups > 0);
    ASSERT_TRUE(d.nadvice == 1 && d.advice[0].value == 3);
    int noted = 0;
    for (size_t i = 0; i < d.nnotes; i++)
        noted |= strstr(d.notes[i], "other processes kept 1.50 of the 2 CPUs busy") != NULL;
    ASSERT_TRUE(noted);
    /* measured on other CPUs than the model's (4 summed, 2 allowed by the
     * quota): reported, not used */
    in.host_cpus = 4;
    d = decide(&in);
    ASSERT_TRUE(d.model.load_bound == 0 && d.model.ext_threads == 0);
    ASSERT_TRUE(NEAR(d.model.other_load_cores, 1.5, 1e-9));
    /* CPU-bound workers: a measured load of 1 core leaves less for more
     * workers than the cores alone (40 ms a step at best, above) */
    in = cpu_bound_run();
    const an_decision free_cores = decide(&in);
    in.other_load_cores = 1;
    in.host_cpus = 2;
    d = decide(&in);
    ASSERT_TRUE(d.model.load_bound == 1 && d.model.ext_threads > 0.5);
    ASSERT_TRUE(free_cores.nadvice == 1);
    ASSERT_MSG(d.nadvice == 0 || d.advice[0].predicted_step_ms >
                                     free_cores.advice[0].predicted_step_ms + 5,
               "%g vs %g", d.nadvice ? d.advice[0].predicted_step_ms : -1,
               free_cores.advice[0].predicted_step_ms);
}

/* A fit to run-queue delays that counts more cores of other load than
 * the machine's CPU time measured is held to the measurement (plus
 * OTHER_LOAD_SLACK a CPU): the quiet machine's small delays are not a busy
 * thread of another process. */
static void test_measured_load_caps(void)
{
    an_decide_in in = cpu_bound_run();
    in.t_blocked_ms = 37;
    in.t_runq_ms = 3;
    in.w_runq_ms = 6; /* 9 ms waited for 80 ms of CPU: 11% */
    const an_decision fitted = decide(&in);
    ASSERT_MSG(fitted.model.ext_threads > 0.3, "%g", fitted.model.ext_threads);
    ASSERT_TRUE(fitted.model.load_capped == 0);
    in.other_load_cores = 0.02;
    in.host_cpus = 2;
    const an_decision capped = decide(&in);
    ASSERT_TRUE(capped.model.load_capped == 1 && capped.model.load_bound == 0);
    ASSERT_MSG(capped.model.ext_threads < fitted.model.ext_threads && capped.model.ext_threads < 0.3,
               "%g vs %g", capped.model.ext_threads, fitted.model.ext_threads);
    ASSERT_TRUE(capped.nadvice == 1 && fitted.nadvice == 1);
    ASSERT_MSG(capped.advice[0].predicted_step_ms < fitted.advice[0].predicted_step_ms,
               "%g vs %g", capped.advice[0].predicted_step_ms, fitted.advice[0].predicted_step_ms);
    /* measured load that covers the fit: nothing held */
    in.other_load_cores = 1;
    const an_decision covered = decide(&in);
    ASSERT_TRUE(covered.model.load_capped == 0);
}

static int has_note(const an_decision *d, const char *text)
{
    for (size_t i = 0; i < d->nnotes; i++)
        if (strstr(d->notes[i], text))
            return 1;
    return 0;
}

/* A machine with no idle CPU over the measured steps: CPU-bound advice
 * keeps its number and says it may miss by more than 15%, with the sweep
 * that would settle it; a loader that sleeps is not told so. */
static void test_saturated(void)
{
    an_decide_in in = cpu_bound_run();
    /* the run's own 1.33 cores (80 ms of CPU a 60 ms step) and others' */
    in.other_load_cores = 0.47;
    in.host_cpus = 2;
    in.host_busy_cores = 1.8; /* 90%: idle CPU left */
    an_decision d = decide(&in);
    ASSERT_TRUE(d.model.saturated == 0);
    ASSERT_TRUE(!has_note(&d, "no idle CPU"));
    const an_decision idle_left = d;
    in.other_load_cores = 0.63;
    in.host_busy_cores = 1.96;
    d = decide(&in);
    ASSERT_TRUE(d.model.saturated == 1);
    ASSERT_TRUE(idle_left.nadvice == 1 && d.nadvice == 1);
    ASSERT_TRUE(d.advice[0].has_value && d.advice[0].value > 1);
    ASSERT_MSG(has_note(&d, "no idle CPU over the measured steps (1.96 of 2 CPUs busy"),
               "%zu notes: %s", d.nnotes, d.nnotes ? d.notes[d.nnotes - 1] : "");
    ASSERT_TRUE(has_note(&d, "more than 15% either way"));
    char sweep[64];
    snprintf(sweep, sizeof sweep, "gpustarve sweep --num-workers 1,%ld,", d.advice[0].value);
    ASSERT_MSG(strstr(d.model.sweep, sweep) != NULL, "%s", d.model.sweep);
    /* the latency-bound loader sleeps: its advice does not depend on the
     * CPU share it wins, and no note says otherwise */
    in = measured_run();
    in.other_load_cores = 1.5;
    in.host_cpus = 2;
    in.host_busy_cores = 2;
    d = decide(&in);
    ASSERT_TRUE(d.model.saturated == 1);
    ASSERT_TRUE(d.nadvice == 1 && d.advice[0].value == 3);
    ASSERT_TRUE(!has_note(&d, "no idle CPU"));
    /* no measured load: unknown */
    in.other_load_cores = -1;
    in.host_busy_cores = -1;
    d = decide(&in);
    ASSERT_TRUE(d.model.saturated == -1);
}

/* Storage that serves only so many reads at once: a cold memmap's 14.6
 * ms of page-fault reads a batch, 8.8 ms of CPU, a trainer of 1 ms CPU and
 * 5 ms asleep, on 2 cores. */
static an_pred_in cold(int n, double store_par)
{
    an_pred_in in = run(2, 1, 5, 14.6, 8.8, n);
    in.w_store_ms = 14.6;
    in.store_par = store_par;
    return in;
}

static void test_storage(void)
{
    /* one read at a time: 8 workers take between one batch per 14.6 ms
     * (reads one after another) and (8 x 14.6 + 8 x 8.8 / 2) / 8 = 19 ms
     * (all at once, the storage idle while they compute): the phases
     * between them averaged; two reads at a time: between 7.3 and 11.7 ms;
     * no limit leaves the trainer's own 6 ms and the CPUs ((8.8 + 1) / 2 ms) */
    ASSERT_TRUE(NEAR(step(cold(1, 1)), 23.4, 0.05));
    const double one = step(cold(8, 1)), two_at = step(cold(8, 2));
    ASSERT_MSG(one > 14.6 + 0.5 && one < 19, "%.3f", one);
    ASSERT_MSG(two_at > 7.3 + 0.3 && two_at < 11.7, "%.3f", two_at);
    ASSERT_TRUE(step(cold(8, 0)) < 7);
    /* a storage limit without storage reads changes nothing */
    an_pred_in none = run(2, 1, 5, 14.6, 8.8, 8);
    none.store_par = 1;
    ASSERT_TRUE(NEAR(step(none), step(cold(8, 0)), 1e-6));
    /* two workers: between reads one after the other (14.6 ms a batch) and
     * both at once ((29.2 + 8.8) / 2 = 19 ms) */
    const double two = step(cold(2, 1));
    ASSERT_MSG(two > 14.6 + 0.5 && two < 19, "%.3f", two);

    /* the advice: the reads this run had at once (14.6 of a 25 ms step: 1) */
    an_decide_in in = measured_run();
    in.step_ms = 25;
    in.t_cpu_ms = 1;
    in.t_blocked_ms = 19;
    in.w_blocked_ms = 0;
    in.w_fault_ms = 14.6;
    in.w_cpu_ms = 8.8;
    in.w_wall_ms = 23.4;
    an_decision d = decide(&in);
    ASSERT_TRUE(NEAR(d.model.store_par, 1, 1e-9) && NEAR(d.model.store_ms, 14.6, 1e-9));
    ASSERT_TRUE(d.nadvice == 1 && d.advice[0].has_value && d.advice[0].value >= 2);
    ASSERT_MSG(d.advice[0].predicted_step_ms >= 14.6, "%.2f", d.advice[0].predicted_step_ms);
    ASSERT_MSG(strstr(d.advice[0].why, "storage reads 14.6 ms, 1.0 at once") != NULL, "%s",
               d.advice[0].why);
    ASSERT_TRUE(has_note(&d, "storage that serves more at once"));
    ASSERT_TRUE(strstr(d.model.sweep, "gpustarve sweep --num-workers 1,") != NULL);
    /* reads under a twentieth of the batch: no limit, no note */
    in.w_fault_ms = 1;
    in.w_blocked_ms = 13.6;
    d = decide(&in);
    ASSERT_TRUE(d.model.store_par == 0 && d.model.store_ms == 0);
    ASSERT_TRUE(!has_note(&d, "the storage"));
    ASSERT_TRUE(d.nadvice == 1 && d.advice[0].predicted_step_ms < 14.6);
}

/* Workers that read the same bytes (an_decide_in.read_copies): the run of
 * the skip regime (tests/e2e/advice_regimes.py) at 4 workers, as its report
 * measured it on the 2-CPU VM: each worker's batch 69 ms in reads of which
 * 3.9 workers read every byte, 10.4 ms of CPU; the trainer 1.2 ms of CPU
 * and 5.1 ms asleep a 20.2 ms step. */
static an_decide_in replicated_run(void)
{
    an_decide_in in = measured_run();
    in.step_ms = 20.2;
    in.cur_workers = 4;
    in.nworkers = 4;
    in.t_cpu_ms = 1.2;
    in.t_blocked_ms = 13.9;
    in.w_blocked_ms = 0;
    in.w_io_ms = 69;
    in.w_cpu_ms = 10.4;
    in.w_wall_ms = 79.4;
    in.read_copies = 3.9;
    in.read_positioned = 1;
    return in;
}

static void test_replicated(void)
{
    /* fewer workers read less, and faster: 2 advised, about 12 ms */
    an_decide_in in = replicated_run();
    an_decision d = decide(&in);
    ASSERT_MSG(d.nadvice == 1 && d.advice[0].value == 2, "%zu %ld", d.nadvice,
               first_value(&d));
    ASSERT_MSG(d.advice[0].predicted_step_ms > 10 && d.advice[0].predicted_step_ms < 14, "%.2f",
               d.advice[0].predicted_step_ms);
    ASSERT_TRUE(has_note(&d, "read the same bytes"));
    ASSERT_TRUE(NEAR(d.model.store_par, 1, 1e-9)); /* shared by the speed in all */
    ASSERT_TRUE(!has_note(&d, "page cache")); /* the storage's share not measured */
    /* the storage read about one copy (a quarter of their bytes): the note
     * says the page cache served the others; all of them: no note */
    in.w_storage_share = 0.25;
    d = decide(&in);
    ASSERT_TRUE(has_note(&d, "the storage read 25% of the bytes the workers read (one copy of "
                             "each would be 26%): the page cache served the other copies"));
    in.w_storage_share = 1;
    d = decide(&in);
    ASSERT_TRUE(!has_note(&d, "page cache"));
    in.w_storage_share = 0;
    /* a step the model cannot reproduce: the sweep tries fewer */
    in.step_ms = 8;
    d = decide(&in);
    ASSERT_TRUE(d.nadvice == 0);
    ASSERT_MSG(strstr(d.model.sweep, "--num-workers 2,3,4 ") != NULL, "%s", d.model.sweep);
    /* the storage slower with fewer reads in flight (an_decide_in.read_speed,
     * bytes per ns by reads in flight, measured 2.9 on average): 2 workers
     * keep about half as many in flight, where it read 2.0 against 2.75 now,
     * and their step is longer for it; one speed at every count: no change */
    in = replicated_run();
    const double plain = decide(&in).advice[0].predicted_step_ms;
    in.read_inflight = 2.9;
    in.read_speed[2] = 2.0;
    in.read_speed[3] = 2.4;
    in.read_speed[4] = 2.9;
    d = decide(&in);
    ASSERT_MSG(d.nadvice == 1 && d.advice[0].value == 2 && d.advice[0].predicted_step_ms > plain,
               "%.2f %.2f", d.nadvice ? d.advice[0].predicted_step_ms : -1, plain);
    in.read_speed[2] = in.read_speed[3] = in.read_speed[4] = 2.5;
    d = decide(&in);
    ASSERT_TRUE(d.nadvice == 1 && NEAR(d.advice[0].predicted_step_ms, plain, 1e-9));
    in = replicated_run();
    /* the same time with no byte shared: never fewer workers */
    in.read_copies = 1;
    d = decide(&in);
    ASSERT_TRUE(!has_note(&d, "read the same bytes"));
    ASSERT_TRUE(d.nadvice == 0 || d.advice[0].value > 4);
    /* copies among a few positioned reads only: not counted */
    in.read_copies = 3.9;
    in.read_positioned = 0.2;
    d = decide(&in);
    ASSERT_TRUE(!has_note(&d, "read the same bytes"));
    ASSERT_TRUE(d.nadvice == 0 || d.advice[0].value > 4);
}

/* The count chosen over the range (an_choose.h), on hand-written ladders. */
static an_ladder ladder(int first, int cur, const double *lo, const double *hi, int top)
{
    an_ladder l;
    memset(&l, 0, sizeof l);
    l.first = first;
    l.cur = cur;
    l.top = top;
    for (int n = first; n <= top; n++) {
        l.lo[n] = lo[n - first];
        l.hi[n] = hi ? hi[n - first] : lo[n - first];
    }
    return l;
}

static void test_choose(void)
{
    int held;
    /* one end: the fewest within 5% of the best */
    const double a[] = {60, 30, 20.5, 20, 20, 20};
    an_ladder l = ladder(1, 1, a, NULL, 6);
    ASSERT_EQ(an_choose_count(&l, 0.05, 0, 0.05, &held), 3);
    ASSERT_EQ(held, 0);
    /* fewer than now: 4 loaders now, 1 as good as any */
    const double f[] = {20, 20.2, 20.3, 21};
    l = ladder(1, 4, f, NULL, 4);
    ASSERT_EQ(an_choose_count(&l, 0.05, 0, 0.05, &held), 1);
    /* fewer faster: 2 now, 1 a fifth faster at both ends */
    const double flo[] = {32, 40, 40}, fhi[] = {40, 50, 52};
    l = ladder(1, 2, flo, fhi, 3);
    ASSERT_EQ(an_choose_count(&l, 0.05, 0, 0.05, &held), 1);
    /* the ends disagree: more wins only if the other load yields (low end
     * falls, high end rises past 2): the count that loses least */
    const double dlo[] = {57, 41, 35, 31, 28}, dhi[] = {57, 52, 60, 70, 80};
    l = ladder(1, 1, dlo, dhi, 5);
    ASSERT_EQ(an_choose_count(&l, 0.05, 0, 0.05, &held), 2); /* 3 on: slower than now there */
    const double elo[] = {57, 40, 30}, ehi[] = {57, 50, 56};
    l = ladder(1, 1, elo, ehi, 3);
    ASSERT_EQ(an_choose_count(&l, 0.05, 0, 0.05, &held), 3); /* 1.12 of the best, 2: 1.33 */
    /* the cap: beyond the free cores' count each loader more must help 5%
     * at both ends; the model's wiggles do not carry it to 9 */
    const double clo[] = {57, 41, 35.5, 33.2, 31.6, 31, 30.2, 29.2, 28.2};
    const double chi[] = {57, 53.8, 51.9, 52.1, 51.8, 53, 52.8, 51.3, 48.6};
    l = ladder(1, 1, clo, chi, 9);
    ASSERT_EQ(an_choose_count(&l, 0.05, 0, 0.05, &held), 9);
    ASSERT_EQ(an_choose_count(&l, 0.05, 1, 0.05, &held), 2);
    ASSERT_EQ(held, 9);
    /* a cap at or above the choice changes nothing; a cap below the count
     * now caps only an increase */
    ASSERT_EQ(an_choose_count(&l, 0.05, 9, 0.05, &held), 9);
    ASSERT_EQ(held, 0);
    l.cur = 3;
    ASSERT_EQ(an_choose_count(&l, 0.05, 1, 0.05, &held), 3);
    ASSERT_EQ(held, 9);
    /* no count: -1 */
    l.first = 5;
    l.top = 4;
    ASSERT_EQ(an_choose_count(&l, 0.05, 0, 0.05, &held), -1);
    /* the cap: what the free cores hold of loaders busy a share of a core */
    ASSERT_EQ(an_choose_cap(1.0, 0.88, 0.2), 1);
    ASSERT_EQ(an_choose_cap(1.9, 0.88, 0.2), 2);
    ASSERT_EQ(an_choose_cap(0.1, 1.0, 0.2), 1);
    ASSERT_EQ(an_choose_cap(1.0, 0.5, 0.2), 2);
    ASSERT_EQ(an_choose_cap(1.0, 0.1, 0.2), 0); /* a loader that sleeps: no cap */
    ASSERT_EQ(an_choose_cap(-1, 1.0, 0.2), 0);  /* free cores unknown */
}

/* A loader thread spinning 50 ms of its 57 ms batch, the trainer asleep in
 * the GPU sync (issue: advised 5 and 6 threads beside another busy process,
 * which measured slower). */
static an_decide_in spin_run(void)
{
    an_decide_in in = measured_run();
    in.step_ms = 57;
    in.w_blocked_ms = 7;
    in.w_cpu_ms = 50;
    in.w_wall_ms = 57;
    in.t_blocked_ms = 36.5;
    in.other_load_worst_cores = -1;
    return in;
}

/* Whether the advice's step is the fitted way's for its count, times the
 * model's error on the run (mean step / modelled); with below_groups, the
 * groups way's is longer there (so the two ways were told apart). */
static int predicted_is_fitted(const an_decision *d, int below_groups)
{
    if (d->nadvice != 1)
        return 0;
    const double scale = d->advice[0].base_step_ms / d->model.now_fit_ms;
    for (size_t i = 0; i < d->model.npred; i++)
        if (d->model.pred[i].workers == d->advice[0].value) {
            const double fit = d->model.pred[i].fit_ms * scale;
            const double grp = d->model.pred[i].grp_ms * scale;
            return NEAR(d->advice[0].predicted_step_ms, fit, 1e-6) &&
                   (!below_groups || grp > fit * 1.001);
        }
    return 0;
}

/* The range: the step with the load as measured and at its worst, and the
 * count best over both. */
static void test_range(void)
{
    /* a loader that sleeps: the worst load hardly matters */
    an_decide_in in = measured_run();
    in.other_load_cores = 0.2;
    in.host_cpus = 2;
    in.host_busy_cores = 0.25;
    in.other_load_worst_cores = 1.8;
    an_decision d = decide(&in);
    ASSERT_TRUE(d.nadvice == 1 && d.advice[0].value == 3);
    ASSERT_TRUE(d.advice[0].base == AN_BASE_MEAN && NEAR(d.advice[0].base_step_ms, 60, 1e-9));
    ASSERT_MSG(d.advice[0].worst_step_ms >= d.advice[0].predicted_step_ms &&
                   d.advice[0].worst_step_ms < 1.1 * d.advice[0].predicted_step_ms,
               "%g %g", d.advice[0].predicted_step_ms, d.advice[0].worst_step_ms);
    ASSERT_TRUE(NEAR(d.model.other_load_worst_cores, 1.8, 1e-9));
    ASSERT_TRUE(NEAR(d.model.worst_cpus, 2 / 3.8, 1e-9)); /* at least one thread's share */
    /* not measured: no range */
    in.other_load_worst_cores = -1;
    d = decide(&in);
    ASSERT_TRUE(d.nadvice == 1 && d.advice[0].worst_step_ms == 0);
    ASSERT_TRUE(d.model.other_load_worst_cores == -1);
    /* the spinning loader thread: quiet, the model alone sizes it (no
     * measured load, no cap) */
    in = spin_run();
    d = decide(&in);
    ASSERT_TRUE(d.nadvice == 1 && d.advice[0].value >= 4);
    ASSERT_TRUE(d.model.held_back == 0);
    /* beside one busy process (1 core, steadily): no more than 2 threads
     * (the second overlaps the first's blocking), the rest held back */
    in.other_load_cores = 1;
    in.other_load_worst_cores = 1;
    in.host_cpus = 2;
    in.host_busy_cores = 1.9;
    d = decide(&in);
    ASSERT_MSG(d.nadvice == 1 && d.advice[0].value == 2, "%zu %ld", d.nadvice,
               first_value(&d));
    ASSERT_TRUE(d.model.held_back > 2 && d.model.held_hi_ms > d.model.held_lo_ms);
    ASSERT_TRUE(d.advice[0].worst_step_ms > d.advice[0].predicted_step_ms);
    ASSERT_TRUE(d.advice[0].worst_step_ms < 57);
    ASSERT_TRUE(has_note(&d, "would give") && has_note(&d, "if their load stays at its worst"));
    /* its worst at 1.5 cores: the second thread no longer helps at both
     * ends: nothing advised */
    in.other_load_worst_cores = 1.5;
    d = decide(&in);
    ASSERT_MSG(d.nadvice == 0, "%ld", first_value(&d));
    ASSERT_TRUE(d.model.held_back > 0);
    ASSERT_TRUE(d.model.other_load_yields == 0); /* nothing said of the group: it keeps them */
    /* the busy process is of the run's own scheduling group (its session:
     * gpustarve run's .peers file): the kernel shares the CPUs with it thread by
     * thread, so at its worst it still yields, and threads past the free
     * cores help at both ends of the range */
    in.other_load_worst_cores = 1;
    in.peers_same_cores = 1.0;
    in.peers_other_cores = 0;
    d = decide(&in);
    ASSERT_TRUE(d.model.other_load_yields == 1);
    ASSERT_MSG(d.nadvice == 1 && d.advice[0].value > 2, "%zu %ld", d.nadvice,
               first_value(&d));
    ASSERT_MSG(d.advice[0].worst_step_ms < 1.1 * d.advice[0].predicted_step_ms, "%g %g",
               d.advice[0].predicted_step_ms, d.advice[0].worst_step_ms);
    /* ... in a group of its own: it keeps its core, as above */
    in.peers_same_cores = 0.1;
    in.peers_other_cores = 0.9;
    d = decide(&in);
    ASSERT_TRUE(d.model.other_load_yields == 0);
    ASSERT_TRUE(d.nadvice == 1 && d.advice[0].value == 2);
}

/* A loader that mostly sleeps (a thread pool's: 24 ms asleep, 4.3 ms of
 * CPU a batch) beside a busy machine: its prediction is the fitted way's,
 * not the larger of it and the groups way (an_workers_model.c, ways). */
static void test_sleeper(void)
{
    an_decide_in in = measured_run();
    in.step_ms = 31;
    in.t_cpu_ms = 0.2;
    in.t_runq_ms = 0.6;
    in.t_blocked_ms = 22;
    in.w_blocked_ms = 24;
    in.w_cpu_ms = 4.3;
    in.w_runq_ms = 6;
    in.w_wall_ms = 34;
    in.other_load_cores = 1.8;
    in.host_cpus = 2;
    in.host_busy_cores = 1.95;
    in.other_load_worst_cores = 1.85;
    const an_decision d = decide(&in);
    ASSERT_TRUE(d.nadvice == 1 && d.model.ext_groups > 0);
    ASSERT_TRUE(predicted_is_fitted(&d, 0));
}

/* CPU-bound workers and a CPU-bound trainer beside one busy process of
 * the run's own scheduling group (the truth regime's: 1 worker, a 42 ms
 * step): the low end is the fitted way, though the groups way says
 * slower; with the process in a group of its own, the larger of the two,
 * which holds the second worker back (an_workers_model.c, ways) */
static void test_yields_fitted(void)
{
    an_decide_in in = cpu_bound_run();
    in.step_ms = 42;
    in.w_cpu_ms = 28;
    in.w_runq_ms = 15;
    in.w_blocked_ms = 2;
    in.w_wall_ms = 45;
    in.t_cpu_ms = 20;
    in.t_runq_ms = 8;
    in.t_blocked_ms = 14;
    in.other_load_cores = 0.9;
    in.other_load_worst_cores = 0.93;
    in.host_cpus = 2;
    in.host_busy_cores = 1.8;
    in.peers_same_cores = 1.0;
    in.peers_other_cores = 0;
    an_decision d = decide(&in);
    ASSERT_TRUE(d.model.other_load_yields == 1);
    ASSERT_TRUE(predicted_is_fitted(&d, 1));
    in.peers_same_cores = 0;
    in.peers_other_cores = 1.0;
    d = decide(&in);
    ASSERT_TRUE(d.model.other_load_yields == 0);
    /* ... there the groups way's longer step holds the second worker back */
    ASSERT_TRUE(d.nadvice == 0 && d.model.held_back == 2);
    int seen = 0;
    for (size_t i = 0; i < d.model.npred; i++)
        if (d.model.pred[i].workers == 2) {
            seen = 1;
            const double scale = in.step_ms / d.model.now_fit_ms;
            ASSERT_TRUE(d.model.pred[i].grp_ms > d.model.pred[i].fit_ms);
            ASSERT_TRUE(NEAR(d.model.held_lo_ms, d.model.pred[i].grp_ms * scale, 1e-6));
        }
    ASSERT_TRUE(seen);
}

static const an_advice *sharing(const an_decision *d)
{
    for (size_t i = 0; i < d->nadvice; i++)
        if (d->advice[i].setting == AN_ADV_SHARING_STRATEGY)
            return &d->advice[i];
    return NULL;
}

/* The trainer waits on sockets inside its fetches from worker processes
 * (each tensor's descriptor handed over): file_system, predicting the step
 * less those waits, never below the model's step for the current setting. */
static void test_sharing(void)
{
    an_decide_in in = measured_run(); /* a 60 ms step, two workers that make a batch in 60 */
    in.cur_workers = in.nworkers = 2;
    in.loader_kind = AN_LOADER_DATALOADER;
    in.step_mean_ms = 60;
    in.sharing_fd = 1;
    in.t_socket_ms = 6;
    an_decision d = decide(&in);
    const an_advice *a = sharing(&d);
    ASSERT_TRUE(a != NULL);
    ASSERT_TRUE(strcmp(an_advice_name(a), "sharing_strategy") == 0);
    char text[64];
    an_advice_text(a, text, sizeof text);
    ASSERT_TRUE(strcmp(text, "sharing_strategy=file_system") == 0);
    /* the model makes the step 50.5 ms: the waits' 6 ms come off the 60 */
    ASSERT_MSG(d.model.now_fit_ms < 54 && NEAR(a->predicted_step_ms, 54, 1e-9),
               "%g (model %g)", a->predicted_step_ms, d.model.now_fit_ms);
    ASSERT_TRUE(a->base == AN_BASE_MEAN && NEAR(a->base_step_ms, 60, 1e-9));
    ASSERT_TRUE(strstr(a->why, "6.0 ms a step on sockets") != NULL);
    ASSERT_TRUE(strstr(a->why, "spawn") == NULL);
    /* spawned workers: set in each of them (they do not inherit it) */
    in.workers_spawned = 1;
    d = decide(&in);
    ASSERT_TRUE(sharing(&d) && strstr(sharing(&d)->why, "in the workers, which start by spawn: "
                                                        "at module level or in worker_init_fn"));
    ASSERT_TRUE(strstr(sharing(&d)->why, "gpustarve run ...)") != NULL); /* whole, not cut */
    in.workers_spawned = 0;
    /* the model's own step bounds it: a model that says the step is what it is */
    in.t_socket_ms = 40;
    d = decide(&in);
    ASSERT_TRUE(sharing(&d) && NEAR(sharing(&d)->predicted_step_ms, d.model.now_fit_ms, 1e-9));
    /* none: already by name, waits under 5% of the step, no DataLoader, no workers */
    in.t_socket_ms = 6;
    in.sharing_fd = 0;
    d = decide(&in);
    ASSERT_TRUE(sharing(&d) == NULL);
    in.sharing_fd = -1; /* not recorded: torch's default is file_descriptor */
    d = decide(&in);
    ASSERT_TRUE(sharing(&d) != NULL);
    in.t_socket_ms = 2.9;
    d = decide(&in);
    ASSERT_TRUE(sharing(&d) == NULL);
    in.t_socket_ms = 6;
    in.loader_kind = AN_LOADER_THREADS;
    d = decide(&in);
    ASSERT_TRUE(sharing(&d) == NULL);
}

int main(void)
{
    test_simulation();
    test_advice();
    test_own_making_one_thread();
    test_measured_load();
    test_measured_load_caps();
    test_saturated();
    test_storage();
    test_replicated();
    test_choose();
    test_range();
    test_sleeper();
    test_yields_fitted();
    test_sharing();
    return gs_check_done("test_predict");
}
