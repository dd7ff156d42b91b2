/* test_cputime.c — the cpu record (format 1.3) and what the analyzer makes
 * of it: encoding and decoding with its packed aux, the ring layout a
 * thread's own sample takes through gs_rec_to_event, and the measured parts of a loader's batch and of the trainer's fetch
 * from samples whose answer is known (analyzer/model/an_cputime.c). */
#include <string.h>
#include <unistd.h>

#include "model/an_model.h"
#include "gs_check.h"
#include "gs_live.h"
#include "gs_trace.h"

static void cpu_event(gs_event *e, uint64_t ts, uint32_t tid, unsigned src, unsigned has,
                      uint64_t cpu, uint64_t runq, uint32_t maj, uint64_t nv, uint64_t niv)
{
    gs_event_clear(e);
    e->kind = GS_K_CPU;
    e->ts = ts;
    e->tid = tid;
    e->aux = gs_pack_cpu_aux(tid, src, has);
    e->bytes = cpu;
    e->aux2 = runq;
    e->dev = maj;
    e->stream = nv;
    e->corr = niv;
}

static void test_round_trip(void)
{
    uint8_t buf[256];
    gs_encoder enc;
    gs_encoder_init(&enc, buf, sizeof buf);
    gs_event in, out[2];
    cpu_event(&in, 123456789, 4242, GS_CPU_SRC_PERIODIC, GS_CPU_HAS_RUNQ | GS_CPU_HAS_FAULTS,
              7000000123ull, 5000000000ull /* > 2^32 */, 17, 0, 0);
    gs_encode_tid(&enc, 4242);
    ASSERT_EQ(gs_encode_event(&enc, &in), GS_OK);
    uint32_t tid = 0;
    ASSERT_EQ(gs_decode_frame(buf, enc.len, enc.nrec, out, 2, &tid, NULL, NULL), 1);
    ASSERT_EQ(out[0].kind, GS_K_CPU);
    ASSERT_EQ(out[0].tid, 4242);
    ASSERT_EQ(gs_cpu_tid(&out[0]), 4242);
    ASSERT_EQ(gs_cpu_source(&out[0]), GS_CPU_SRC_PERIODIC);
    ASSERT_EQ(gs_cpu_has(&out[0]), GS_CPU_HAS_RUNQ | GS_CPU_HAS_FAULTS);
    ASSERT_EQ(gs_cpu_ns(&out[0]), 7000000123ull);
    ASSERT_EQ(gs_cpu_runq_ns(&out[0]), 5000000000ull);
    ASSERT_EQ(gs_cpu_majflt(&out[0]), 17);
    ASSERT_TRUE(!strcmp(gs_cpu_source_name(GS_CPU_SRC_MARKER), "marker"));
    ASSERT_TRUE(!strcmp(gs_cpu_source_name(GS_CPU_SRC_BIRTH), "birth"));
    ASSERT_TRUE(!strcmp(gs_cpu_source_name(9), "unknown"));
    ASSERT_EQ(gs_kind_class(GS_K_CPU), GS_CLASS_PROC);
}

/* A thread's own sample goes through its ring (gs_rec) and comes back as
 * the event the format describes, in the writer and in live-file recovery
 * alike (gs_rec_to_event). */
static void test_ring_layout(void)
{
    gs_rec r = {.kind = GS_K_CPU, .fd = -1, .offset = -1, .ts = 99};
    r.bytes = 1234567;
    r.aux = gs_pack_cpu_aux(77, GS_CPU_SRC_MARKER, GS_CPU_HAS_FAULTS | GS_CPU_HAS_SWITCHES);
    r.aux2 = 5;
    r.ret = (int64_t)(11u | (uint64_t)0xfffffffeu << 32);
    r.offset = 0;
    gs_event e;
    gs_rec_to_event(&r, &e);
    ASSERT_EQ(e.kind, GS_K_CPU);
    ASSERT_EQ(gs_cpu_tid(&e), 77);
    ASSERT_EQ(gs_cpu_source(&e), GS_CPU_SRC_MARKER);
    ASSERT_EQ(gs_cpu_ns(&e), 1234567);
    ASSERT_EQ(gs_cpu_majflt(&e), 5);
    ASSERT_EQ(gs_cpu_nvcsw(&e), 11);
    ASSERT_EQ(gs_cpu_nivcsw(&e), 0xfffffffeu);
    ASSERT_EQ(gs_cpu_runq_ns(&e), 0);
    ASSERT_EQ(e.ret, 0);
    ASSERT_EQ(e.offset, -1);
}

/* ---- the analysis --------------------------------------------------------------- */

static int64_t g_storage = -1; /* the next samples' storage reads, -1: none */
static uint64_t g_sock;       /* the next samples' socket waits so far */

static void add(an_thread *th, uint64_t ts, unsigned src, uint64_t cpu, int64_t runq, int64_t maj,
                uint64_t io, uint64_t wait, uint64_t reads)
{
    gs_event e;
    unsigned has = (runq >= 0 ? GS_CPU_HAS_RUNQ : 0) | (maj >= 0 ? GS_CPU_HAS_FAULTS : 0) |
                   (g_storage >= 0 ? GS_CPU_HAS_STORAGE : 0);
    cpu_event(&e, ts, th->tid, src, has, cpu, runq < 0 ? 0 : (uint64_t)runq,
              maj < 0 ? 0 : (uint32_t)maj, 0, 0);
    e.ret = g_storage >= 0 ? g_storage : 0;
    const an_cpu_now now = {io, wait, reads, 0, -1, g_sock};
    ASSERT_EQ(an_cpu_add(&th->cpu, &e, &now), 0);
}

#define MS 1000000ull

/* A result of two measured steps with trainer and training thread, and
 * (w not NULL) one loader worker, over a run of nprocs processes: what
 * an_measure_time reads; each test sets what else it needs. */
static void measure_setup(an_result *res, an_run *run, an_proc *procs, size_t nprocs,
                          const an_proc *trainer, const an_thread *thread, an_step *steps,
                          an_worker *w)
{
    memset(res, 0, sizeof *res);
    an_trainer_time_absent(&res->trainer_time);
    an_other_time_absent(&res->other_time);
    an_loader_time_absent(&res->loader_time);
    res->trainer = trainer;
    res->thread = thread;
    res->steps = steps;
    res->nsteps = res->measured = 2;
    if (w) {
        an_loader_time_absent(&w->time);
        res->workers = w;
        res->nworkers = 1;
    }
    memset(run, 0, sizeof *run);
    run->procs = procs;
    run->nprocs = nprocs;
}

/* A loader thread sampled every 100 ms over 1 s, 10 batches (born: its
 * first sample is its birth, which the writer put last): per 100 ms it
 * spends 10 ms in hooked reads, 30 ms on a CPU, 20 ms runnable, and the
 * rest (40 ms) off-CPU; in the second half it takes 250 major faults per
 * 100 ms, and (with_storage) makes the storage read 8 MiB per 100 ms there
 * (readahead: far more than 250 pages). */
static void test_loader_parts(int with_storage, int born)
{
    an_proc p;
    memset(&p, 0, sizeof p);
    an_thread th[2];
    memset(th, 0, sizeof th);
    th[0].tid = 10; /* training thread */
    th[1].tid = 11; /* loader */
    p.th = th;
    p.nth = 2;
    p.pid = 10;
    const uint64_t t0 = 1000 * MS;
    for (int i = born ? 1 : 0; i <= 10; i++) {
        const uint64_t ts = t0 + (uint64_t)i * 100 * MS;
        g_storage = with_storage ? (i <= 5 ? 0 : (int64_t)(i - 5) * (8 << 20)) : -1;
        add(&th[1], ts, GS_CPU_SRC_PERIODIC, (uint64_t)i * 30 * MS, (int64_t)i * 20 * MS,
            i <= 5 ? 0 : (i - 5) * 250, (uint64_t)i * 10 * MS, 0, (uint64_t)i * 4);
    }
    if (born) { /* the thread began at t0: its birth, put after its samples,
                 * with the thread's totals of then, which a birth ignores */
        g_storage = with_storage ? 0 : -1;
        add(&th[1], t0, GS_CPU_SRC_BIRTH, 0, 0, 0, 100 * MS, 0, 40);
        ASSERT_EQ(th[1].cpu->s[0].src, GS_CPU_SRC_BIRTH);
        ASSERT_EQ(th[1].cpu->s[0].io_ns, 0);
        ASSERT_EQ(th[1].cpu->s[0].reads, 0);
    }
    th[1].first_ts = t0;
    th[1].last_ts = t0 + 1000 * MS;
    th[1].rd_reqs = 40;
    th[1].rd_bytes = 10 * 65536;
    th[1].rq_bytes = 10 * 131072;
    an_worker w;
    memset(&w, 0, sizeof w);
    w.p = &p;
    w.th = &th[1];
    w.batches = 10;
    w.active_ns = 1000 * MS;
    an_step steps[2];
    memset(steps, 0, sizeof steps);
    steps[0].v.t0 = t0;
    steps[0].v.t1 = t0 + 500 * MS;
    steps[1].v.t0 = t0 + 500 * MS;
    steps[1].v.t1 = t0 + 1000 * MS;
    an_result res;
    an_run run;
    measure_setup(&res, &run, &p, 1, &p, &th[0], steps, &w);
    an_measure_time(&run, &res);
    const an_loader_time *t = &w.time;
    ASSERT_TRUE(t->measured);
    ASSERT_EQ(t->per_batch, AN_PB_PERIODIC);
    ASSERT_RANGE(t->wall_ms, 99.999, 100.001);
    ASSERT_RANGE(t->io_ms, 9.999, 10.001);
    ASSERT_RANGE(t->cpu_ms, 29.999, 30.001);
    ASSERT_RANGE(t->runq_ms, 19.999, 20.001);
    /* 40 ms off-CPU per batch: the faulting half is page-fault I/O */
    ASSERT_RANGE(t->fault_ms, 19.999, 20.001);
    ASSERT_RANGE(t->blocked_ms, 19.999, 20.001);
    ASSERT_RANGE(t->io_ms + t->fault_ms + t->cpu_ms + t->runq_ms + t->blocked_ms, 99.99, 100.01);
    ASSERT_RANGE(t->majflt, 124.99, 125.01);
    if (with_storage) { /* 40 MiB through faults in 200 ms of page-fault I/O */
        ASSERT_RANGE(t->storage_bytes, 4194303, 4194305);
        ASSERT_RANGE(t->fault_bytes, 4194303, 4194305);
        ASSERT_RANGE(t->fault_MBps, 209.71, 209.72);
    } else { /* 1250 pages of 4 KiB in 200 ms */
        ASSERT_EQ(t->storage_bytes, -1);
        ASSERT_RANGE(t->fault_bytes, 512000 - 1, 512000 + 1);
        ASSERT_RANGE(t->fault_MBps, 25.59, 25.61);
    }
    ASSERT_RANGE(t->read_bytes, 65536, 65536);
    ASSERT_RANGE(t->requested_bytes, 131072, 131072);
    ASSERT_RANGE(t->cpu_cores, 0.2999, 0.3001);
    ASSERT_EQ(t->vol_switches, -1); /* periodic samples carry no switch counts */
    ASSERT_TRUE(res.loader_time.measured);
    ASSERT_RANGE(res.loader_time.cpu_ms, 29.999, 30.001);
    /* the training thread has no samples: absent, not zero */
    ASSERT_TRUE(!res.trainer_time.measured);
    ASSERT_EQ(res.trainer_time.blocked_ms, -1);
    for (size_t i = 0; i < p.nth; i++)
        an_cpu_log_free(th[i].cpu);
    g_storage = -1;
}

/* A DataLoader worker process that marks its batches (docs/python.md,
 * "Worker batches"): 5 batches 200 ms apart, each 50 ms between its
 * fetch_begin and fetch_end (marker samples at both): 10 ms in hooked
 * reads, 30 ms on a CPU, 10 ms off-CPU, but the last 100 ms, 80 on a CPU; the 150 ms between batches in a
 * hooked wait (its next index); a sixth fetch_begin without its end (the
 * fetch raised: no batch). Each part is per batch, the time between
 * batches left out. */
static void test_worker_fetch_batches(void)
{
    an_proc procs[2];
    memset(procs, 0, sizeof procs);
    an_thread th[2];
    memset(th, 0, sizeof th);
    an_proc *tp = &procs[0], *wp = &procs[1];
    tp->pid = th[0].tid = 10;
    tp->th = &th[0];
    tp->nth = 1;
    wp->pid = 20;
    wp->ppid = 10;
    strcpy(wp->role, "loader_worker");
    th[1].tid = 20;
    wp->th = &th[1];
    wp->nth = 1;
    const uint64_t t0 = 1000 * MS;
    for (uint64_t j = 0; j < 5; j++) {
        /* the last batch takes 50 ms more, all of it on a CPU */
        const uint64_t b = t0 + j * 200 * MS, len = j == 4 ? 100 : 50;
        add(&th[1], b, GS_CPU_SRC_MARKER, j * 30 * MS, -1, 0, j * 10 * MS, j * 150 * MS, j);
        an_cpu_marker(th[1].cpu, GS_K_FETCH_BEGIN, b, GS_MARK_PLAIN, j, 0);
        add(&th[1], b + len * MS, GS_CPU_SRC_MARKER, ((j + 1) * 30 + (len - 50)) * MS, -1, 0,
            (j + 1) * 10 * MS, j * 150 * MS, j + 1);
        an_cpu_marker(th[1].cpu, GS_K_FETCH_END, b + len * MS, GS_MARK_PLAIN, j, 0);
    }
    add(&th[1], t0 + 1000 * MS, GS_CPU_SRC_MARKER, 200 * MS, -1, 0, 50 * MS, 4 * 150 * MS + 100 * MS,
        5);
    an_cpu_marker(th[1].cpu, GS_K_FETCH_BEGIN, t0 + 1000 * MS, GS_MARK_PLAIN, 5, 0);
    th[1].rd_reqs = 5;
    an_worker w;
    memset(&w, 0, sizeof w);
    w.p = wp;
    w.batches = 5;
    w.batches_from_markers = 1;
    an_step steps[2];
    memset(steps, 0, sizeof steps);
    steps[0].v.t0 = t0;
    steps[0].v.t1 = steps[1].v.t0 = t0 + 500 * MS;
    steps[1].v.t1 = t0 + 1000 * MS;
    an_result res;
    an_run run;
    measure_setup(&res, &run, procs, 2, tp, &th[0], steps, &w);
    an_measure_time(&run, &res);
    const an_loader_time *t = &w.time;
    ASSERT_TRUE(t->measured);
    ASSERT_EQ(t->per_batch, AN_PB_MARKERS);
    ASSERT_RANGE(t->batches, 5, 5);
    ASSERT_RANGE(t->wall_ms, 49.999, 50.001);
    ASSERT_RANGE(t->io_ms, 9.999, 10.001);
    ASSERT_RANGE(t->cpu_ms, 29.999, 30.001);
    ASSERT_EQ(t->runq_ms, -1); /* marker samples carry no run-queue delay */
    ASSERT_RANGE(t->fault_ms, 0, 0);
    ASSERT_RANGE(t->blocked_ms, 9.999, 10.001);
    /* the model's means: the last batch's 50 ms more count, a fifth each */
    ASSERT_RANGE(t->wall_mean_ms, 59.999, 60.001);
    ASSERT_RANGE(t->cpu_mean_ms, 39.999, 40.001);
    ASSERT_RANGE(t->io_mean_ms, 9.999, 10.001);
    ASSERT_RANGE(t->blocked_mean_ms, 9.999, 10.001);
    ASSERT_EQ(t->runq_mean_ms, -1);
    /* the pool of one worker: the same */
    ASSERT_RANGE(res.loader_time.cpu_mean_ms, 39.999, 40.001);
    ASSERT_RANGE(res.loader_time.cpu_ms, 29.999, 30.001);
    /* its CPU over the window, the time between batches included */
    ASSERT_RANGE(t->cpu_cores, 0.1999, 0.2001);
    /* measured steps after its batches (prefetched ahead): all of them */
    steps[0].v.t0 = t0 + 900 * MS;
    steps[0].v.t1 = steps[1].v.t0 = t0 + 950 * MS;
    an_loader_time_absent(&w.time);
    an_measure_time(&run, &res);
    ASSERT_EQ(t->per_batch, AN_PB_MARKERS);
    ASSERT_RANGE(t->wall_ms, 49.999, 50.001);
    ASSERT_RANGE(t->cpu_ms, 29.999, 30.001);
    steps[0].v.t0 = t0;
    steps[0].v.t1 = steps[1].v.t0 = t0 + 500 * MS;
    /* a worker process that writes step_end markers instead (a C loader
     * with a worker role): cut from one step_end to the next */
    an_cpu_log_free(th[1].cpu);
    th[1].cpu = NULL;
    for (uint64_t j = 0; j <= 5; j++) {
        const uint64_t e = t0 + j * 200 * MS;
        add(&th[1], e, GS_CPU_SRC_MARKER, j * 30 * MS, -1, 0, j * 10 * MS, j * 150 * MS, j);
        an_cpu_marker(th[1].cpu, GS_K_STEP_END, e, GS_MARK_PLAIN, j, 0);
    }
    an_loader_time_absent(&w.time);
    an_measure_time(&run, &res);
    ASSERT_EQ(t->per_batch, AN_PB_MARKERS);
    ASSERT_RANGE(t->wall_ms, 49.999, 50.001); /* 200 ms less the 150 ms wait */
    an_cpu_log_free(th[1].cpu);
    an_cpu_log_free(th[0].cpu);
}

/* The training thread: two steps of 100 ms, each with one fetch of 40 ms;
 * it runs 20% of the time throughout, so 8 ms of each fetch on a CPU
 * (marker samples at both ends); periodic samples every 50 ms give its
 * run-queue delay, 1 ms per 50 ms. In each fetch it waits 12 ms on
 * sockets (a worker's tensor hand-over). */
static void test_trainer_split(void)
{
    an_proc p;
    memset(&p, 0, sizeof p);
    an_thread th;
    memset(&th, 0, sizeof th);
    th.tid = 10;
    p.th = &th;
    p.nth = 1;
    p.pid = 10;
    const uint64_t t0 = 1000 * MS;
    for (int i = 0; i <= 4; i++) {
        g_sock = (uint64_t)((i + 1) / 2) * 12 * MS; /* the fetches' socket waits so far */
        add(&th, t0 + (uint64_t)i * 50 * MS, GS_CPU_SRC_PERIODIC, (uint64_t)i * 10 * MS,
            (int64_t)i * MS, -1, 0, 0, 0);
    }
    /* fetches [t0+10, t0+50) and [t0+110, t0+150): marker samples out of
     * order with the periodic ones (the log keeps them sorted) */
    for (int s = 0; s < 2; s++) {
        const uint64_t fb = t0 + (uint64_t)(10 + 100 * s) * MS, fe = fb + 40 * MS;
        g_sock = (uint64_t)s * 12 * MS;
        add(&th, fb, GS_CPU_SRC_MARKER, (fb - t0) / 5, -1, 0, 0, 0, 0);
        an_cpu_marker(th.cpu, GS_K_FETCH_BEGIN, fb, GS_MARK_PLAIN, (uint64_t)s, 0);
        g_sock += 12 * MS;
        add(&th, fe, GS_CPU_SRC_MARKER, (fe - t0) / 5, -1, 0, 0, 0, 0);
        an_cpu_marker(th.cpu, GS_K_FETCH_END, fe, GS_MARK_PLAIN, (uint64_t)s, 0);
    }
    ASSERT_EQ(th.cpu->nf, 2);
    for (size_t i = 1; i < th.cpu->n; i++)
        ASSERT_TRUE(th.cpu->s[i - 1].ts <= th.cpu->s[i].ts);
    an_step steps[2];
    memset(steps, 0, sizeof steps);
    for (int s = 0; s < 2; s++) {
        steps[s].v.t0 = t0 + (uint64_t)(100 * s) * MS;
        steps[s].v.t1 = steps[s].v.t0 + 100 * MS;
        steps[s].v.idle_dw = 40 * MS;
    }
    an_result res;
    an_run run;
    measure_setup(&res, &run, &p, 1, &p, &th, steps, NULL);
    res.share[AN_SH_DATA_WAIT] = 0.4;
    res.step_ms_median = 100;
    an_measure_time(&run, &res);
    const an_trainer_time *t = &res.trainer_time;
    ASSERT_TRUE(t->measured);
    ASSERT_RANGE(t->receiving_ms, 7.999, 8.001);
    ASSERT_RANGE(t->blocked_ms, 31.199, 31.201); /* 40 ms - 8 ms CPU - 0.8 ms runnable */
    ASSERT_RANGE(t->fetch_runq_ms, 0.799, 0.801); /* 1 ms per 50 ms, over 40 ms */
    ASSERT_RANGE(t->socket_ms, 11.999, 12.001);     /* of the blocked time */
    ASSERT_RANGE(t->socket_mean_ms, 11.999, 12.001);
    ASSERT_RANGE(t->share_receiving, 0.0879, 0.0881); /* 0.4 x (8 + 0.8) / 40 */
    ASSERT_RANGE(t->share_blocked + t->share_receiving, 0.3999, 0.4001);
    ASSERT_RANGE(t->runq_ms, 1.999, 2.001);
    ASSERT_RANGE(t->cpu_ms, 19.999, 20.001);
    ASSERT_RANGE(t->cpu_cores, 0.1999, 0.2001);
    an_cpu_log_free(th.cpu);
    g_sock = 0;
}

/* A training thread's own batch making cut by a CUDA call: from the
 * update's step_end at t0 to the forward at t0+15 ms, the call over
 * [t0+10, t0+11) ms; the collector sampled both of its ends (the end's
 * sample 1 ns after ts + dur, as the tick conversion leaves it). Each
 * piece becomes a fetch of class forward between its samples; a cut
 * without samples (an older collector) makes none. */
static void test_batch_making_pieces(void)
{
    an_thread th;
    memset(&th, 0, sizeof th);
    th.tid = 10;
    const uint64_t t0 = 1000 * MS, c0 = t0 + 10 * MS, c1 = t0 + 11 * MS, fw = t0 + 15 * MS;
    add(&th, t0, GS_CPU_SRC_MARKER, 100 * MS, 0, 0, 0, 0, 0);
    an_cpu_marker(th.cpu, GS_K_STEP_END, t0, GS_MARK_OPTIMIZER, 7, 0);
    add(&th, c0, GS_CPU_SRC_MARKER, 109 * MS, 0, 0, 0, 0, 0);     /* 9 of 10 ms on a CPU */
    add(&th, c1 + 1, GS_CPU_SRC_MARKER, 109 * MS + 100000, 0, 0, 0, 0, 0);
    add(&th, fw, GS_CPU_SRC_MARKER, 112 * MS + 100000, 0, 0, 0, 0, 0); /* 3 of 4 ms */
    const uint64_t piece[2][2] = {{t0, c0}, {c1, fw}};
    ASSERT_EQ(an_cpu_pieces(th.cpu, fw, piece, 2), 1);
    ASSERT_EQ(th.cpu->nf, 2);
    const an_cpu_fetch *f = th.cpu->f;
    ASSERT_EQ(f[0].t0, t0);
    ASSERT_EQ(f[0].t1, c0);
    ASSERT_EQ(f[0].cpu1 - f[0].cpu0, 9 * MS);
    ASSERT_EQ(f[1].t0, c1 + 1); /* between its samples */
    ASSERT_EQ(f[1].t1, fw);
    ASSERT_EQ(f[1].cpu1 - f[1].cpu0, 3 * MS);
    ASSERT_EQ(f[0].mark, GS_MARK_FORWARD);
    ASSERT_EQ(f[1].key, 7);
    /* the update begins no other fetch */
    ASSERT_EQ(an_cpu_pieces(th.cpu, fw, piece, 2), 0);
    /* the next span: a cut the collector did not sample */
    const uint64_t t1 = t0 + 100 * MS, fw1 = t1 + 15 * MS;
    add(&th, t1, GS_CPU_SRC_MARKER, 150 * MS, 0, 0, 0, 0, 0);
    an_cpu_marker(th.cpu, GS_K_STEP_END, t1, GS_MARK_BACKWARD, 8, 0);
    add(&th, fw1, GS_CPU_SRC_MARKER, 160 * MS, 0, 0, 0, 0, 0);
    const uint64_t piece1[2][2] = {{t1, t1 + 10 * MS}, {t1 + 11 * MS, fw1}};
    ASSERT_EQ(an_cpu_pieces(th.cpu, fw1, piece1, 2), 0);
    ASSERT_EQ(th.cpu->nf, 2);
    ASSERT_EQ(th.cpu->upd.t0, 0);
    an_cpu_log_free(th.cpu);
}

int main(void)
{
    test_round_trip();
    test_ring_layout();
    test_loader_parts(0, 0);
    test_loader_parts(1, 0);
    test_loader_parts(0, 1);
    test_loader_parts(1, 1);
    test_trainer_split();
    test_worker_fetch_batches();
    test_batch_making_pieces();
    return gs_check_done("test_cputime");
}
