/* gen_bigtrace.c — writes a large, realistic gpustarve run directory fast,
 * through the trace API, for bench/bench_report.py (`gpustarve report`
 * throughput and peak memory).
 *
 * The run: one trainer (pid 1000, main thread) and W forked loader workers.
 * Per step the trainer waits for a batch (fetch markers, poll + read on the
 * worker pipe), copies it (pinned cudaMemcpyAsync, then the GPU copy) and
 * runs K back-to-back kernels on stream 7, between step markers; the worker
 * whose turn it is reads one batch: the index from its pipe, openat, fstat,
 * R preads of 64 KiB with a little CPU between them, close. K and R follow
 * from --events / --steps. Frames hold 1 MiB of raw records, zstd level -3,
 * the collector's level for frames that are not mostly runs of repeated
 * calls (preload/gs_config.c, ZSTD_LEVEL_DEFAULT; docs/performance.md,
 * "The serial part, the order of files, and zstd"). Output depends on the
 * options only.
 *
 * With RANKS > 1 (a distributed job: 64 ranks x 8 workers is 576 files), the
 * same for every rank: EVENTS are split between the ranks, rank r's trainer
 * is pid 1000 + 100 r on host node<r / 8> (8 ranks a node) with its rank,
 * local rank and world size in its header, its workers forked from it.
 * COLLECTIVES per step (default 0) adds that many NCCL all-reduces a step
 * on stream 9 of every rank, ending together on every rank; rank 3
 * arrives 3 ms late at each (the job's straggler), the others a few tens
 * of microseconds apart.
 *
 * Must never: depend on the analyzer.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "gs_trace.h"

#define RAW_CAP (1u << 20)
#define MS 1000000ull
#define US 1000ull

typedef struct out {
    FILE *f;
    uint8_t *raw, *frame;
    size_t frame_cap;
    gs_encoder enc;
    void *cctx;
    uint32_t tid;
    uint64_t events;
} out;

/* deterministic noise, so that timestamps compress like a real run's */
static uint64_t rng = 0x9E3779B97F4A7C15ull;
static uint64_t jitter(uint64_t max)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return max ? rng % max : 0;
}

static void die(const char *m)
{
    fprintf(stderr, "gen_bigtrace: %s\n", m);
    exit(2);
}

static void flush(out *o)
{
    if (!o->enc.nrec)
        return;
    long n = gs_frame_compress(o->cctx, o->raw, o->enc.len, o->enc.nrec, o->frame, o->frame_cap);
    if (n < 0 || fwrite(o->frame, 1, (size_t)n, o->f) != (size_t)n)
        die("writing a frame failed");
    gs_encoder_reset(&o->enc);
    o->tid = 0;
}

static void room(out *o, size_t need)
{
    if (o->enc.len + need > RAW_CAP)
        flush(o);
}

static void ev(out *o, gs_event *e)
{
    room(o, GS_EVENT_MAX_ENCODED + 16);
    if (o->tid != e->tid) {
        if (gs_encode_tid(&o->enc, e->tid) != GS_OK)
            die("encode tid");
        o->tid = e->tid;
    }
    if (gs_encode_event(&o->enc, e) != GS_OK)
        die("encode event");
    o->events++;
}

static void str(out *o, uint32_t id, const char *s)
{
    room(o, strlen(s) + 16);
    if (gs_encode_string(&o->enc, id, s, strlen(s)) != GS_OK)
        die("encode string");
}

/* the job: one rank (-1: no rank in the headers) */
typedef struct job {
    int32_t rank, world;
    char host[32];
    unsigned colls; /* collectives a step */
} job;

static void open_out(out *o, const char *dir, uint64_t pid, uint64_t ppid, int forked,
                     const job *jb)
{
    memset(o, 0, sizeof *o);
    o->raw = malloc(RAW_CAP + 4096);
    o->frame_cap = gs_frame_bound(RAW_CAP + 4096);
    o->frame = malloc(o->frame_cap);
    o->cctx = gs_frame_cctx_new(-3);
    if (!o->raw || !o->frame || !o->cctx)
        die("out of memory");
    gs_encoder_init(&o->enc, o->raw, RAW_CAP + 4096);
    static const char argv[] = "python\0train.py\0--epochs\0001";
    gs_proc_info pi;
    memset(&pi, 0, sizeof pi);
    pi.pid = pid;
    pi.ppid = ppid;
    pi.mono_ns = 1000 * MS;
    pi.real_ns = 1764430000000000000ull;
    pi.rank = jb->rank;
    pi.local_rank = jb->rank < 0 ? -1 : jb->rank % 8;
    pi.world_size = jb->world;
    pi.flags = forked ? GS_HDR_F_FORKED : 0;
    pi.host = jb->host;
    pi.argc = 4;
    pi.argv = argv;
    pi.argv_len = sizeof argv;
    uint8_t hdr[8192];
    long hl = gs_header_build(hdr, sizeof hdr, &pi);
    char path[4096];
    snprintf(path, sizeof path, "%s/%s-%llu.gst", dir, jb->host, (unsigned long long)pid);
    o->f = fopen(path, "wb");
    if (hl < 0 || !o->f || fwrite(hdr, 1, (size_t)hl, o->f) != (size_t)hl)
        die("cannot write a trace file");
}

static void close_out(out *o)
{
    flush(o);
    if (fclose(o->f) != 0)
        die("closing a trace file failed");
    gs_frame_cctx_free(o->cctx);
    free(o->raw);
    free(o->frame);
}

static gs_event mk(unsigned kind, uint32_t tid, uint64_t ts, uint64_t dur)
{
    gs_event e;
    gs_event_clear(&e);
    e.kind = (uint16_t)kind;
    e.tid = tid;
    e.ts = ts;
    e.dur = dur;
    return e;
}

/* One rank's trainer (pid0) and workers; returns the events written. */
static uint64_t gen_rank(const char *dir, uint64_t pid0, const job *jb, uint64_t events,
                         uint64_t steps, unsigned workers)
{
    /* events per step: trainer 10 + K kernels, worker 5 + R reads */
    const uint64_t per = events / steps;
    if (per < 20)
        die("need at least 20 events per step (and rank)");
    const uint64_t K = (per - 15) / 2, R = per - 15 - K;
    const uint64_t step_ns = 100 * MS, wait_ns = 20 * MS;
    const uint64_t t0 = 2000 * MS;

    out tr;
    open_out(&tr, dir, pid0, 1, 0, jb);
    str(&tr, 1, "MainThread");
    str(&tr, 2, "num_workers=4");
    str(&tr, 3, "pin_memory=True");
    str(&tr, 4, "cudaMemcpyAsync");
    str(&tr, 5, "void gemm_kernel<float, 128>(float const*, float*, int)");
    str(&tr, 6, "NVIDIA H200");
    if (jb->colls)
        str(&tr, 7, "ncclDevKernel_AllReduce_Sum_f32_RING_LL");
    gs_event e = mk(GS_K_THREAD, pid0, t0 - 5 * MS, 0);
    e.str = 1;
    e.aux = pid0;
    ev(&tr, &e);
    e = mk(GS_K_CONFIG, pid0, t0 - 4 * MS, 0);
    e.str = 2;
    ev(&tr, &e);
    e.str = 3;
    ev(&tr, &e);
    e = mk(GS_K_GPU_DEVICE, pid0, t0 - 3 * MS, 0);
    e.str = 6;
    e.bytes = 141ull << 30;
    e.aux = 132;
    ev(&tr, &e);
    const uint64_t kern_ns = (step_ns - wait_ns - 2 * MS) / K;
    for (uint64_t s = 0; s < steps; s++) {
        const uint64_t a = t0 + s * step_ns, b = a + step_ns;
        e = mk(GS_K_STEP_BEGIN, pid0, a, 0);
        e.aux = s;
        ev(&tr, &e);
        e.kind = GS_K_FETCH_BEGIN;
        ev(&tr, &e);
        e = mk(GS_K_POLL, pid0, a + 10 * US, wait_ns - 60 * US);
        e.fd = 12;
        e.fd_kind = GS_FDK_PIPE;
        e.ret = 1;
        ev(&tr, &e);
        e = mk(GS_K_READ, pid0, a + wait_ns - 40 * US, 30 * US);
        e.fd = 12;
        e.fd_kind = GS_FDK_PIPE;
        e.bytes = 4096;
        e.ret = 4096;
        ev(&tr, &e);
        e = mk(GS_K_FETCH_END, pid0, a + wait_ns, 0);
        e.aux = s;
        ev(&tr, &e);
        e = mk(GS_K_CUDA_MEMCPY, pid0, a + wait_ns + 50 * US, 20 * US);
        e.str = 4;
        e.bytes = 8 << 20;
        e.aux = gs_pack_host_copy(GS_DIR_HTOD, GS_MEM_PINNED);
        e.stream = 7;
        e.corr = s * 2 + 1;
        ev(&tr, &e);
        e = mk(GS_K_STEP_END, pid0, b - 10 * US, 0);
        e.aux = s;
        ev(&tr, &e);
        /* the GPU's records of the step (CUPTI delivers them in buffers) */
        e = mk(GS_K_GPU_MEMCPY, pid0, a + wait_ns + 60 * US, 2 * MS - 60 * US);
        e.bytes = 8 << 20;
        e.aux = gs_pack_gpu_copy(GS_DIR_HTOD, GS_MEM_PINNED, GS_MEM_DEVICE);
        e.stream = 7;
        e.corr = s * 2 + 1;
        ev(&tr, &e);
        uint64_t t = a + wait_ns + 2 * MS;
        for (uint64_t k = 0; k < K; k++) {
            e = mk(GS_K_GPU_KERNEL, pid0, t, kern_ns - 200 - jitter(kern_ns / 4));
            e.str = 5;
            e.stream = 7;
            e.corr = s * 1000003 + k;
            ev(&tr, &e);
            t += kern_ns;
        }
        for (unsigned c = 0; c < jb->colls; c++) {
            const uint64_t end = a + 40 * MS + c * (50 * MS / jb->colls);
            const uint64_t late = jb->rank == 3 ? 3 * MS : (uint64_t)(jb->rank % 5) * 50 * US;
            e = mk(GS_K_GPU_KERNEL, pid0, end - 4 * MS + late, 4 * MS - late);
            e.str = 7;
            e.stream = 9;
            e.corr = s * 1000003 + 900000 + c;
            ev(&tr, &e);
        }
    }
    e = mk(GS_K_EXIT, pid0, t0 + steps * step_ns + MS, 0);
    ev(&tr, &e);
    close_out(&tr);
    uint64_t total = tr.events;

    /* workers: worker w reads batches s = w, w + W, ...; each batch takes
     * W steps' time, so the loader just keeps up */
    for (unsigned w = 0; w < workers; w++) {
        out wo;
        const uint32_t pid = (uint32_t)pid0 + 1 + w;
        open_out(&wo, dir, pid, pid0, 1, jb);
        str(&wo, 1, "loader_worker");
        str(&wo, 2, "/data/train/shard-00017.tar");
        e = mk(GS_K_ROLE, pid, t0 - MS, 0);
        e.str = 1;
        e.aux = w;
        ev(&wo, &e);
        const uint64_t span = workers * step_ns - 10 * MS;
        const uint64_t rd_ns = span / (R + 1);
        for (uint64_t s = w; s < steps; s += workers) {
            const uint64_t a = t0 + (s >= workers ? s - workers : 0) * step_ns + 5 * MS;
            e = mk(GS_K_READ, pid, a, 100 * US);
            e.fd = 3;
            e.fd_kind = GS_FDK_PIPE;
            e.bytes = 8;
            e.ret = 8;
            ev(&wo, &e);
            e = mk(GS_K_OPENAT, pid, a + 200 * US, 50 * US);
            e.fd = 9;
            e.fd_kind = GS_FDK_FILE;
            e.str = 2;
            e.ret = 9;
            ev(&wo, &e);
            e = mk(GS_K_FSTAT, pid, a + 260 * US, 5 * US);
            e.fd = 9;
            e.fd_kind = GS_FDK_FILE;
            ev(&wo, &e);
            uint64_t t = a + 300 * US;
            for (uint64_t r = 0; r < R; r++) {
                e = mk(GS_K_PREAD64, pid, t + jitter(rd_ns / 8), rd_ns / 2 + jitter(rd_ns / 4));
                e.fd = 9;
                e.fd_kind = GS_FDK_FILE;
                e.str = 2;
                e.bytes = 65536;
                e.ret = r + 1 < R || !jitter(2) ? 65536 : (int64_t)jitter(65536);
                e.offset = (int64_t)(r * 65536);
                ev(&wo, &e);
                t += rd_ns;
            }
            e = mk(GS_K_CLOSE, pid, t, 5 * US);
            e.fd = 9;
            e.fd_kind = GS_FDK_FILE;
            ev(&wo, &e);
        }
        e = mk(GS_K_EXIT, pid, t0 + steps * step_ns, 0);
        ev(&wo, &e);
        close_out(&wo);
        total += wo.events;
    }
    return total;
}

int main(int argc, char **argv)
{
    if (argc < 5 || argc > 7) {
        fprintf(stderr, "usage: gen_bigtrace OUTDIR EVENTS STEPS WORKERS [RANKS [COLLECTIVES]]\n");
        return 2;
    }
    const char *dir = argv[1];
    const uint64_t events = strtoull(argv[2], NULL, 10), steps = strtoull(argv[3], NULL, 10);
    const unsigned workers = (unsigned)strtoul(argv[4], NULL, 10);
    const unsigned ranks = argc >= 6 ? (unsigned)strtoul(argv[5], NULL, 10) : 1;
    const unsigned colls = argc == 7 ? (unsigned)strtoul(argv[6], NULL, 10) : 0;
    if (colls > 40)
        die("at most 40 COLLECTIVES a step");
    if (!events || !steps || !workers || workers > 64 || !ranks || ranks > 4096)
        die("EVENTS, STEPS > 0, 1 <= WORKERS <= 64 and 1 <= RANKS <= 4096");
    if (mkdir(dir, 0755) != 0 && errno != EEXIST)
        die("cannot create OUTDIR");
    uint64_t total = 0;
    for (unsigned r = 0; r < ranks; r++) {
        job jb = {-1, -1, "benchhost", ranks > 1 ? colls : 0};
        if (ranks > 1) {
            jb.rank = (int32_t)r;
            jb.world = (int32_t)ranks;
            snprintf(jb.host, sizeof jb.host, "node%02u", r / 8);
        }
        total += gen_rank(dir, 1000 + 100ull * r, &jb, events / ranks, steps, workers);
    }
    printf("%llu\n", (unsigned long long)total);
    return 0;
}
