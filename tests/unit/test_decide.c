/* test_decide.c — the verdict and the advice from hand-built inputs
 * (analyzer/decide/an_decide.h): the bands at their edges, num_workers sized from
 * the per-batch cost and capped by cores and storage, pin_memory predicted
 * from the bandwidth seen, and the notes that say why nothing is advised.
 * The numbers follow docs/report-schema.md ("Verdict", "Advice"). */
#include <math.h>
#include <string.h>

#include "decide/an_choose.h"
#include "decide/an_decide.h"
#include "gs_check.h"

#define NEAR(a, b) (fabs((a) - (b)) < 1e-9)

static an_decide_in base(void)
{
    an_decide_in in;
    memset(&in, 0, sizeof in);
    in.measured = 10;
    in.step_ms = 20;
    in.cur_workers = -1;
    in.cur_pin_memory = -1;
    in.cores = 8;
    return in;
}

static an_decision decide(const an_decide_in *in)
{
    an_decision d;
    an_decide(in, &d);
    return d;
}

static void test_bands(void)
{
    an_decide_in in = base();
    const struct {
        double input, host, dw;
        int no_gpu, want;
    } rows[] = {
        {0.20, 0, 0.20, 0, AN_V_HIGHLY},
        {0.1999, 0, 0.1999, 0, AN_V_MODERATELY},
        {0.05, 0, 0.05, 0, AN_V_MODERATELY},
        {0.0499, 0, 0.0499, 0, AN_V_NOT},
        /* host reasons dominate: HOST-BOUND before any input band */
        {0.30, 0.35, 0.30, 0, AN_V_HOST},
        {0.30, 0.20, 0.10, 0, AN_V_HOST},
        /* host share below its band, or not above data wait */
        {0.30, 0.19, 0.10, 0, AN_V_HIGHLY},
        {0.30, 0.30, 0.30, 0, AN_V_HIGHLY},
        /* no GPU: never HOST-BOUND */
        {0.01, 0.90, 0.01, 1, AN_V_NOT},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        in.input_share = rows[i].input;
        in.share[AN_SH_HOST] = rows[i].host;
        in.share[AN_SH_DATA_WAIT] = rows[i].dw;
        in.no_gpu = rows[i].no_gpu;
        an_decision d = decide(&in);
        ASSERT_EQ(d.verdict, rows[i].want);
        ASSERT_TRUE(d.verdict_text[0] != '\0');
    }
    in.no_gpu = 1;
    in.input_share = in.share[AN_SH_DATA_WAIT] = 0.5;
    an_decision d = decide(&in);
    ASSERT_TRUE(strstr(d.verdict_text, "training thread waits for data 50%") != NULL);
    ASSERT_TRUE(strcmp(an_verdict_label(AN_V_HOST), "HOST_BOUND") == 0);
    ASSERT_TRUE(strcmp(an_verdict_label(AN_V_NONE), "NONE") == 0);
}

static an_decide_in input_bound(void)
{
    an_decide_in in = base();
    in.input_share = in.share[AN_SH_DATA_WAIT] = 0.5;
    in.step_ms = 20;
    in.gpu_bound_ms = 10;
    in.data_wait_ms = 10;
    in.nworkers = 2;
    in.cur_workers = 2;
    in.batch_ms = 35;
    return in;
}

static void test_num_workers(void)
{
    /* 35 ms per batch, 10 ms GPU-bound step: ceil(3.5) = 4 workers, and 4
     * deliver a batch per 8.75 ms, so the GPU-bound 10 ms is the step */
    an_decide_in in = input_bound();
    an_decision d = decide(&in);
    ASSERT_EQ(d.nadvice, 1);
    ASSERT_EQ(d.advice[0].setting, AN_ADV_NUM_WORKERS);
    ASSERT_EQ(d.advice[0].has_value, 1);
    ASSERT_EQ(d.advice[0].value, 4);
    ASSERT_TRUE(NEAR(d.advice[0].predicted_step_ms, 10));
    ASSERT_TRUE(NEAR(d.advice[0].predicted_saving_ms, 10));

    /* capped by 3 free cores: 35/3 ms per batch is the step */
    in.cores = 3;
    d = decide(&in);
    ASSERT_EQ(d.nadvice, 1);
    ASSERT_EQ(d.advice[0].value, 3);
    ASSERT_TRUE(NEAR(d.advice[0].predicted_step_ms, 35.0 / 3));
    ASSERT_TRUE(strstr(d.advice[0].why, "capped by the free CPU cores") != NULL);

    /* as many cores as workers now: nothing to add, a note says the CPUs limit */
    in.cores = 2;
    d = decide(&in);
    ASSERT_EQ(d.nadvice, 0);
    ASSERT_EQ(d.nnotes, 1);
    ASSERT_TRUE(strstr(d.notes[0], "the CPUs are the limit") != NULL);

    /* enough workers already: a note, no advice */
    in = input_bound();
    in.cur_workers = 4;
    d = decide(&in);
    ASSERT_EQ(d.nadvice, 0);
    ASSERT_TRUE(d.nnotes == 1 && strstr(d.notes[0], "should keep up") != NULL);
    /* input-bound and nothing advised: the advice line says why */
    ASSERT_TRUE(strcmp(d.none_why, d.notes[0]) == 0);

    /* not input-bound: no num_workers advice at all */
    in = input_bound();
    in.input_share = in.share[AN_SH_DATA_WAIT] = 0.01;
    d = decide(&in);
    ASSERT_EQ(d.verdict, AN_V_NOT);
    ASSERT_EQ(d.nadvice, 0);
    ASSERT_EQ(d.nnotes, 0);
    ASSERT_TRUE(d.none_why[0] == '\0');

    /* MODERATELY input-bound, nothing to size workers from, no note: the
     * advice line still says why */
    in = input_bound();
    in.input_share = in.share[AN_SH_DATA_WAIT] = 0.10;
    in.batch_ms = 0;
    in.data_wait_ms = 0;
    d = decide(&in);
    ASSERT_EQ(d.verdict, AN_V_MODERATELY);
    ASSERT_EQ(d.nadvice, 0);
    ASSERT_TRUE(strstr(d.none_why, "num_workers cannot be sized") != NULL);
    ASSERT_TRUE(strstr(d.none_why, "pin_memory would not help") != NULL);

    /* waits on pipes with no worker traced: cannot size */
    in = input_bound();
    in.nworkers = 0;
    in.waits_without_workers = 1;
    d = decide(&in);
    ASSERT_EQ(d.nadvice, 0);
    ASSERT_TRUE(d.nnotes == 1 && strstr(d.notes[0], "cannot size num_workers") != NULL);

    /* loading inline (no workers, num_workers=0): the data wait is the batch */
    in = input_bound();
    in.nworkers = 0;
    in.cur_workers = 0;
    in.data_wait_ms = 25;
    d = decide(&in);
    ASSERT_EQ(d.nadvice, 1);
    ASSERT_EQ(d.advice[0].value, 3); /* ceil(25 / 10) */
}

static void test_storage(void)
{
    /* probed ceiling 100 MB/s; 2 MB per batch every 20 ms = 100 MB/s now */
    an_decide_in in = input_bound();
    in.probe_read_MBps = 100;
    in.worker_MB_per_batch = 2;
    an_decision d = decide(&in);
    ASSERT_EQ(d.nadvice, 1);
    ASSERT_EQ(d.advice[0].has_value, 0);
    ASSERT_TRUE(NEAR(d.advice[0].predicted_step_ms, 20));
    ASSERT_TRUE(strstr(d.advice[0].why, "storage ceiling") != NULL);

    /* 1 MB per batch (50 MB/s now): 4 workers would want a batch per 10 ms,
     * the storage gives one per 10 ms too: the prediction holds at 10 */
    in.worker_MB_per_batch = 1;
    d = decide(&in);
    ASSERT_EQ(d.nadvice, 1);
    ASSERT_EQ(d.advice[0].value, 4);
    ASSERT_TRUE(NEAR(d.advice[0].predicted_step_ms, 10));
    /* 1.5 MB per batch: the storage needs 15 ms per batch, which limits it */
    in.worker_MB_per_batch = 1.5;
    d = decide(&in);
    ASSERT_EQ(d.nadvice, 1);
    ASSERT_TRUE(NEAR(d.advice[0].predicted_step_ms, 15));
    ASSERT_TRUE(strstr(d.advice[0].why, "storage ceiling limits the gain") != NULL);

    /* not probed: with 2+ workers the ceiling is the best in-read rate x workers */
    in = input_bound();
    in.worker_MB_per_batch = 2;
    in.worker_best_in_read_MBps = 60; /* x 2 workers = 120; 100 now >= 96 */
    d = decide(&in);
    ASSERT_EQ(d.nadvice, 1);
    ASSERT_EQ(d.advice[0].has_value, 0);
}

static void test_pin_memory(void)
{
    /* 5 ms of pageable copies per 20 ms step, 10 MB per step; pinned copies
     * seen at 10 GB/s would take 1 ms */
    an_decide_in in = base();
    in.pageable_ms = 5;
    in.pageable_bytes_per_step = 10e6;
    in.pinned_GBps_seen = 10;
    an_decision d = decide(&in);
    ASSERT_EQ(d.nadvice, 1);
    ASSERT_EQ(d.advice[0].setting, AN_ADV_PIN_MEMORY);
    ASSERT_TRUE(NEAR(d.advice[0].predicted_saving_ms, 4));
    ASSERT_TRUE(NEAR(d.advice[0].predicted_step_ms, 16));
    ASSERT_TRUE(strstr(d.advice[0].why, "pinned copies seen in this run") != NULL);

    /* nothing seen, nothing probed: 2x the pageable bandwidth (2 GB/s -> 4) */
    in.pinned_GBps_seen = 0;
    in.pageable_GBps = 2;
    d = decide(&in);
    ASSERT_EQ(d.nadvice, 1);
    ASSERT_TRUE(NEAR(d.advice[0].predicted_saving_ms, 2.5));
    ASSERT_TRUE(strstr(d.advice[0].why, "assumed 2x") != NULL);

    /* already pinned; or copies under 2% of a step */
    in.cur_pin_memory = 1;
    ASSERT_EQ(decide(&in).nadvice, 0);
    in.cur_pin_memory = 0;
    in.pageable_ms = 0.39;
    ASSERT_EQ(decide(&in).nadvice, 0);
}

/* One base for a prediction: the step it is on is named and is the step
 * its saving is taken from (docs/report-schema.md, "Advice"). */
static void test_prediction_base(void)
{
    /* the older rule: medians */
    an_decide_in in = input_bound();
    in.step_mean_ms = 26;
    an_decision d = decide(&in);
    ASSERT_TRUE(d.nadvice == 1 && d.advice[0].base == AN_BASE_MEDIAN);
    ASSERT_TRUE(NEAR(d.advice[0].base_step_ms, 20));
    ASSERT_TRUE(NEAR(d.advice[0].predicted_step_ms + d.advice[0].predicted_saving_ms, 20));
    ASSERT_TRUE(d.advice[0].worst_step_ms == 0); /* no range without the model */
    /* pin_memory: the mean step less its saving, on the mean */
    in = base();
    in.step_mean_ms = 26;
    in.pageable_ms = 5;
    in.pageable_bytes_per_step = 10e6;
    in.pinned_GBps_seen = 10;
    d = decide(&in);
    ASSERT_TRUE(d.nadvice == 1 && d.advice[0].base == AN_BASE_MEAN);
    ASSERT_TRUE(NEAR(d.advice[0].base_step_ms, 26) && NEAR(d.advice[0].predicted_step_ms, 22));
}

/* The count is named as the program sets it: a DataLoader's or a declared
 * num_workers, a thread pool's threads, loader processes. */
static void test_names(void)
{
    const struct {
        int kind;
        const char *name;
    } rows[] = {
        {AN_LOADER_DATALOADER, "num_workers"},
        {AN_LOADER_DECLARED, "num_workers"},
        {AN_LOADER_THREADS, "loader_threads"},
        {AN_LOADER_PROCESSES, "loader_processes"},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        an_decide_in in = input_bound();
        in.loader_kind = rows[i].kind;
        const an_decision d = decide(&in);
        ASSERT_TRUE(d.nadvice == 1);
        ASSERT_MSG(strcmp(an_advice_name(&d.advice[0]), rows[i].name) == 0, "%s",
                   an_advice_name(&d.advice[0]));
        ASSERT_TRUE(strcmp(an_count_name(rows[i].kind), rows[i].name) == 0);
    }
    an_advice pin;
    memset(&pin, 0, sizeof pin);
    pin.setting = AN_ADV_PIN_MEMORY;
    pin.loader_kind = AN_LOADER_THREADS;
    ASSERT_TRUE(strcmp(an_advice_name(&pin), "pin_memory") == 0);
}

/* The collate function's time on the training thread, where measured: a
 * note from 5% of the mean step, saying where it could go. */
static void test_collate(void)
{
    an_decide_in in = input_bound();
    in.collate_ms = -1; /* not measured: nothing said */
    ASSERT_TRUE(!strstr(decide(&in).notes[0], "collate"));
    in.collate_ms = 0.9; /* under 5% of 20 ms */
    an_decision d = decide(&in);
    for (size_t i = 0; i < d.nnotes; i++)
        ASSERT_TRUE(!strstr(d.notes[i], "collate"));
    in.collate_ms = 3;
    in.cur_workers = 0;
    in.nworkers = 0;
    d = decide(&in);
    int said = 0;
    for (size_t i = 0; i < d.nnotes; i++)
        said |= strstr(d.notes[i], "collate function takes 3.0 ms per batch on the training "
                                   "thread (15% of the mean step): move it into the workers") != NULL;
    ASSERT_TRUE(said);
}

/* An IterableDataset loaded inline: more than one worker each iterate their
 * own copy of it, which the note says; 1 worker, a map-style dataset, or
 * workers already, nothing. */
static int iterable_note(const an_decision *d)
{
    int said = 0;
    for (size_t i = 0; i < d->nnotes; i++)
        said += strstr(d->notes[i], "the dataset is an IterableDataset: with num_workers=3 each "
                                    "worker iterates its own copy of it") != NULL &&
                strstr(d->notes[i], "each sample comes 3 times an epoch") != NULL;
    return said;
}

static void test_iterable(void)
{
    an_decide_in in = input_bound();
    in.nworkers = 0;
    in.cur_workers = 0;
    in.data_wait_ms = 25; /* 3 workers advised (test_num_workers) */
    in.dataset_iterable = 1;
    an_decision d = decide(&in);
    ASSERT_TRUE(d.nadvice == 1 && d.advice[0].value == 3);
    ASSERT_EQ(iterable_note(&d), 1);
    in.dataset_iterable = 0;
    d = decide(&in);
    ASSERT_TRUE(d.nadvice == 1 && iterable_note(&d) == 0);
    in.dataset_iterable = -1; /* not recorded */
    d = decide(&in);
    ASSERT_TRUE(d.nadvice == 1 && iterable_note(&d) == 0);
    /* 1 worker advised: it iterates the one copy */
    in.dataset_iterable = 1;
    in.data_wait_ms = 9;
    d = decide(&in);
    ASSERT_TRUE(d.nadvice == 1 && d.advice[0].value == 1 && d.nnotes == 0);
}

/* persistent_workers=True where the workers started again within the
 * measured steps: the starts' cost less a batch each, per step. */
static void test_persistent(void)
{
    an_decide_in in = base();
    in.step_ms = 7;
    in.step_mean_ms = 27;
    in.measured = 57;
    in.cur_workers = 2;
    in.loader_kind = AN_LOADER_DATALOADER;
    in.persistent_workers = 0;
    in.restarts = 4;
    in.restart_ms = 4 * 230.0;
    in.w_wall_ms = 17;
    an_decision d = decide(&in);
    ASSERT_TRUE(d.nadvice == 1 && d.advice[0].setting == AN_ADV_PERSISTENT_WORKERS);
    ASSERT_TRUE(strcmp(an_advice_name(&d.advice[0]), "persistent_workers") == 0);
    const double saving = 4 * (230.0 - 17) / 57;
    ASSERT_MSG(NEAR(d.advice[0].predicted_saving_ms, saving), "%g", d.advice[0].predicted_saving_ms);
    ASSERT_TRUE(d.advice[0].base == AN_BASE_MEAN && NEAR(d.advice[0].base_step_ms, 27));
    /* never below the median step: the starts are the slow steps */
    in.restart_ms = 4 * 2000.0;
    d = decide(&in);
    ASSERT_TRUE(d.nadvice == 1 && NEAR(d.advice[0].predicted_step_ms, 7));
    /* already persistent, unknown, not a DataLoader, no start, or too small: none */
    const int kinds[] = {1, -1};
    for (size_t i = 0; i < 2; i++) {
        in.persistent_workers = kinds[i];
        ASSERT_EQ(decide(&in).nadvice, 0);
    }
    in.persistent_workers = 0;
    in.loader_kind = AN_LOADER_DECLARED;
    ASSERT_EQ(decide(&in).nadvice, 0);
    in.loader_kind = AN_LOADER_DATALOADER;
    in.restarts = 0;
    ASSERT_EQ(decide(&in).nadvice, 0);
    in.restarts = 4;
    in.restart_ms = 4 * 17 + 0.01 * 27 * 57; /* 1% of a step, beyond a batch each */
    ASSERT_EQ(decide(&in).nadvice, 0);
}

/* A deeper prefetch_factor from the replay (model/an_replay.h): the
 * smallest factor within 90% of the best saving, on the mean step; none
 * where the replay does not give back the measured steps, the saving is
 * under 5%, the CPU a shorter step needs does not fit (unless the workers
 * mostly wait), or no DataLoader. */
static void test_prefetch(void)
{
    an_decide_in in = base();
    in.step_ms = 9;
    in.step_mean_ms = 13.3;
    in.cur_workers = 2;
    in.prefetch = 2;
    in.loader_kind = AN_LOADER_DATALOADER;
    in.time_measured = 1;
    in.cpus = 2;
    in.other_load_cores = 0.05;
    in.t_cpu_ms = 0.5;
    in.w_cpu_ms = 1.5;
    in.replay.steps = 199;
    in.replay.measured_ms = 13.3;
    in.replay.now_ms = 12.9;
    in.replay.npf = 3;
    const int pf[] = {4, 8, 16};
    const double ms[] = {9.6, 8.7, 8.6};
    memcpy(in.replay.pf, pf, sizeof pf);
    memcpy(in.replay.pf_ms, ms, sizeof ms);
    an_decision d = decide(&in);
    ASSERT_TRUE(d.nadvice == 1 && d.advice[0].setting == AN_ADV_PREFETCH_FACTOR);
    ASSERT_TRUE(strcmp(an_advice_name(&d.advice[0]), "prefetch_factor") == 0);
    ASSERT_TRUE(d.advice[0].has_value && d.advice[0].value == 8); /* 4.2 of the best 4.3 */
    ASSERT_MSG(NEAR(d.advice[0].predicted_step_ms, 13.3 - (12.9 - 8.7)), "%g",
               d.advice[0].predicted_step_ms);
    ASSERT_TRUE(d.advice[0].base == AN_BASE_MEAN && NEAR(d.advice[0].base_step_ms, 13.3));
    char text[64];
    an_advice_text(&d.advice[0], text, sizeof text);
    ASSERT_TRUE(strcmp(text, "prefetch_factor=8") == 0);
    /* the replay off by more than the model's error: none */
    in.replay.now_ms = 13.3 * (1 - AN_MODEL_ERROR) - 0.1;
    ASSERT_EQ(decide(&in).nadvice, 0);
    in.replay.now_ms = 12.9;
    /* a saving under 5% of a step */
    const double small[] = {12.6, 12.5, 12.5};
    memcpy(in.replay.pf_ms, small, sizeof small);
    ASSERT_EQ(decide(&in).nadvice, 0);
    memcpy(in.replay.pf_ms, ms, sizeof ms);
    /* the workers' CPU a batch over the shorter step beyond the free CPUs */
    in.w_cpu_ms = 14;
    ASSERT_EQ(decide(&in).nadvice, 0);
    in.w_cpu_ms = 1.5;
    in.other_load_cores = 1.9;
    ASSERT_EQ(decide(&in).nadvice, 0);
    /* workers that mostly wait get their bursts of CPU whatever the load */
    in.w_blocked_ms = 14;
    ASSERT_TRUE(decide(&in).nadvice == 1);
    in.w_blocked_ms = 0;
    in.other_load_cores = 0.05;
    /* not a DataLoader, no workers, not replayed */
    in.loader_kind = AN_LOADER_THREADS;
    ASSERT_EQ(decide(&in).nadvice, 0);
    in.loader_kind = AN_LOADER_DATALOADER;
    in.cur_workers = 0;
    ASSERT_EQ(decide(&in).nadvice, 0);
    in.cur_workers = 2;
    in.replay.steps = 0;
    ASSERT_EQ(decide(&in).nadvice, 0);
}

/* One vocabulary: the verdict quotes the table's share, names the median
 * step's when that decided the band, never says "GPU" without GPU activity,
 * and says "borderline" when the step-to-step interval crosses a band edge. */
static void test_verdict_words(void)
{
    an_decide_in in = base();
    in.input_share = in.share[AN_SH_DATA_WAIT] = 0.30;
    in.input_share_lo = 0.28;
    in.input_share_hi = 0.32;
    an_decision d = decide(&in);
    ASSERT_TRUE(strstr(d.verdict_text, "the GPU waits for data 30% of every step") != NULL);
    ASSERT_TRUE(strstr(d.verdict_text, "median") == NULL);
    ASSERT_EQ(d.borderline, 0);
    /* bursty loader: the median step's share decides, and is named */
    in.share[AN_SH_DATA_WAIT] = 0.15;
    in.input_share = 0.22;
    in.input_share_lo = 0.21;
    in.input_share_hi = 0.24;
    d = decide(&in);
    ASSERT_EQ(d.verdict, AN_V_HIGHLY);
    ASSERT_TRUE(strstr(d.verdict_text, "waits for data 15% of every step (the median step 22%)") !=
                NULL);
    /* the interval crosses 20%: borderline, whichever side the estimate is */
    in.input_share_lo = 0.17;
    d = decide(&in);
    ASSERT_EQ(d.verdict, AN_V_HIGHLY);
    ASSERT_EQ(d.borderline, 1);
    ASSERT_TRUE(strstr(d.verdict_text, "borderline: from step to step it lies in 17-24% (95%), "
                                       "across the 20% line between MODERATELY and HIGHLY") != NULL);
    in.input_share = in.share[AN_SH_DATA_WAIT] = 0.06;
    in.input_share_lo = 0.03;
    in.input_share_hi = 0.09;
    d = decide(&in);
    ASSERT_EQ(d.verdict, AN_V_MODERATELY);
    ASSERT_TRUE(d.borderline && strstr(d.verdict_text, "between NOT and MODERATELY") != NULL);
    /* no GPU: the training thread waits, in every label */
    in.no_gpu = 1;
    for (double s = 0.01; s < 0.5; s += 0.1) {
        in.input_share = in.share[AN_SH_DATA_WAIT] = in.input_share_lo = in.input_share_hi = s;
        d = decide(&in);
        ASSERT_TRUE(strstr(d.verdict_text, "GPU") == NULL);
        ASSERT_TRUE(strstr(d.verdict_text, "training thread waits for data") != NULL);
    }
}

int main(void)
{
    test_bands();
    test_verdict_words();
    test_num_workers();
    test_storage();
    test_pin_memory();
    test_prediction_base();
    test_names();
    test_collate();
    test_iterable();
    test_persistent();
    test_prefetch();
    return gs_check_done("test_decide");
}
