/* tsan_load.c — the analyzer's parallel load (analyzer/load/an_load.c) under
 * ThreadSanitizer: a run of 24 process files of different sizes (trainer-like
 * files with steps and GPU kernels, loader-like files with small reads that
 * carry call stacks) is read on 1 thread and on 6, the call sites riding
 * along in per-file shards (an_cs_shard / an_cs_merge, as `report` does).
 * No data race; every process, its counters and timeline totals, and every
 * call site come out the same and in the same order.
 *
 * Usage: tsan_load DIR (an empty scratch directory; the files are written
 * there).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/an_callsites.h"
#include "load/an_run.h"
#include "gs_trace.h"
#include "tsan_util.h"

#define NPROC 24
#define RAW_CAP (256u << 10)
#define MS 1000000ull

typedef struct out {
    FILE *f;
    uint8_t raw[RAW_CAP + 4096];
    uint8_t frame[RAW_CAP + 65536];
    gs_encoder enc;
    void *cctx;
} out;

static void flush(out *o)
{
    if (!o->enc.nrec)
        return;
    const long n = gs_frame_compress(o->cctx, o->raw, o->enc.len, o->enc.nrec, o->frame,
                                     sizeof o->frame);
    ASSERT_TRUE(n > 0 && fwrite(o->frame, 1, (size_t)n, o->f) == (size_t)n);
    gs_encoder_reset(&o->enc);
}

static void room(out *o)
{
    if (o->enc.len + 4096 > RAW_CAP)
        flush(o);
}

static void ev(out *o, const gs_event *e)
{
    room(o);
    if (o->enc.len == 0) /* each frame names its thread first */
        ASSERT_EQ(gs_encode_tid(&o->enc, e->tid), GS_OK);
    ASSERT_EQ(gs_encode_event(&o->enc, e), GS_OK);
}

static void str(out *o, uint32_t id, const char *s)
{
    room(o);
    ASSERT_EQ(gs_encode_string(&o->enc, id, s, strlen(s)), GS_OK);
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

/* Process i: a trainer (i % 6 == 0) or a loader worker of the one before. */
static void write_proc(const char *dir, int i, out *o)
{
    const uint32_t pid = 2000 + (uint32_t)i;
    const int trainer = i % 6 == 0;
    gs_proc_info pi;
    memset(&pi, 0, sizeof pi);
    pi.pid = pid;
    pi.ppid = trainer ? 1 : 2000 + (uint32_t)(i - i % 6);
    pi.mono_ns = 1000 * MS;
    pi.real_ns = 1764430000000000000ull;
    pi.rank = trainer || i % 2 ? i / 6 : -1;
    pi.local_rank = pi.rank;
    pi.world_size = NPROC / 6;
    pi.flags = trainer ? 0 : GS_HDR_F_FORKED;
    pi.host = i < NPROC / 2 ? "n0" : "n1";
    static const char argv[] = "python\0train.py";
    pi.argc = 2;
    pi.argv = argv;
    pi.argv_len = sizeof argv;
    uint8_t hdr[4096];
    const long hl = gs_header_build(hdr, sizeof hdr, &pi);
    char path[4096];
    snprintf(path, sizeof path, "%s/%s-%u.gst", dir, pi.host, pid);
    o->f = fopen(path, "wb");
    ASSERT_TRUE(hl > 0 && o->f && fwrite(hdr, 1, (size_t)hl, o->f) == (size_t)hl);
    o->cctx = gs_frame_cctx_new(1);
    ASSERT_TRUE(o->cctx != NULL);
    gs_encoder_init(&o->enc, o->raw, sizeof o->raw);
    const uint64_t t0 = 2000 * MS, steps = 40 + 7 * (uint64_t)(i % 5);
    str(o, 1, "MainThread");
    str(o, 2, "/usr/lib/libloader.so");
    str(o, 3, "0123456789abcdef0123");
    str(o, 4, "gemm_kernel");
    gs_event e = mk(GS_K_THREAD, pid, t0 - 5 * MS, 0);
    e.str = 1;
    e.aux = pid;
    ev(o, &e);
    /* the module the stacks point into: a different address per process */
    const uint64_t base = 0x7f0000000000ull + (uint64_t)i * 0x10000000ull;
    e = mk(GS_K_MAPPING, pid, t0 - 4 * MS, 0);
    e.str = 2;
    e.aux2 = 3;
    e.aux = base;
    e.bytes = 1 << 20;
    e.offset = 0;
    ev(o, &e);
    room(o);
    for (uint32_t s = 1; s <= 3; s++) {
        const uint64_t fr[3] = {base + 0x1000 * s + 0x10, base + 0x8000 + 0x20 * (uint64_t)(i % 3),
                                base + 0x9000};
        ASSERT_EQ(gs_encode_stack(&o->enc, s, fr, 3), GS_OK);
    }
    for (uint64_t s = 0; s < steps; s++) {
        const uint64_t a = t0 + s * 100 * MS;
        if (trainer) {
            e = mk(GS_K_STEP_BEGIN, pid, a, 0);
            e.aux = s;
            ev(o, &e);
            e = mk(GS_K_POLL, pid, a + MS, 20 * MS);
            e.fd = 12;
            e.fd_kind = GS_FDK_PIPE;
            e.ret = 1;
            ev(o, &e);
            for (uint64_t k = 0; k < 50; k++) {
                e = mk(GS_K_GPU_KERNEL, pid, a + 22 * MS + k * MS + (k * 37 + s) % 200,
                       MS - 300);
                e.str = 4;
                e.stream = 7;
                e.corr = s * 100 + k;
                ev(o, &e);
            }
            e = mk(GS_K_STEP_END, pid, a + 99 * MS, 0);
            e.aux = s;
            ev(o, &e);
        } else {
            for (uint64_t r = 0; r < 30; r++) {
                e = mk(GS_K_PREAD64, pid, a + r * 3 * MS, MS + (r * 131 + s * 7) % 5000);
                e.fd = 9;
                e.fd_kind = GS_FDK_FILE;
                e.bytes = 4096;
                e.ret = 4096;
                e.offset = (int64_t)((s * 30 + r) * 4096);
                e.stack = 1 + (uint32_t)((r + (uint64_t)i) % 3);
                e.stack_weight = 1 + (uint32_t)(r % 4);
                ev(o, &e);
            }
        }
    }
    e = mk(GS_K_EXIT, pid, t0 + steps * 100 * MS, 0);
    ev(o, &e);
    flush(o);
    gs_frame_cctx_free(o->cctx);
    ASSERT_EQ(fclose(o->f), 0);
}

typedef struct cs_file {
    an_cs *cs;
    gs_reader *r;
} cs_file;

static void on_file(void *ctx, const an_proc *p, gs_reader *r)
{
    cs_file *c = ctx;
    c->r = r;
    an_cs_proc_begin(c->cs, p->path, gs_reader_info(r));
}

static void on_event(void *ctx, const an_proc *p, gs_reader *r, const gs_event *e)
{
    (void)p;
    an_cs_event(((cs_file *)ctx)->cs, r, e);
}

static void on_file_end(void *ctx, const an_proc *p)
{
    (void)p;
    cs_file *c = ctx;
    an_cs_proc_end(c->cs, c->r);
}

/* on the reading threads: no ASSERT here (its counters are not atomic);
 * a file whose shard is missing shows as calls missing below */
static void *file_new(void *ctx)
{
    cs_file *c = calloc(1, sizeof *c);
    if (c && !(c->cs = an_cs_shard(((cs_file *)ctx)->cs))) {
        free(c);
        c = NULL;
    }
    return c;
}

static void file_merge(void *ctx, void *fctx)
{
    cs_file *c = fctx;
    an_cs_merge(((cs_file *)ctx)->cs, c->cs);
    an_cs_free(c->cs);
    free(c);
}

static void load(const char *dir, int threads, an_run *run, an_cs **cs)
{
    an_opts o;
    const char *bad;
    ASSERT_EQ(an_opts_init(&o, NULL, NULL, &bad), 0);
    o.threads = threads;
    an_cs_opts cso = {0};
    cso.no_lines = 1;
    cso.no_tmp_perfmap = 1;
    cs_file top = {an_cs_new(&cso), NULL};
    an_hooks hk = {0};
    hk.ctx = &top;
    hk.on_file = on_file;
    hk.on_event = on_event;
    hk.event_kinds = an_cs_kinds(&hk.small_bytes);
    hk.on_file_end = on_file_end;
    hk.file_new = file_new;
    hk.file_merge = file_merge;
    o.hooks = &hk;
    char err[256];
    ASSERT_MSG(an_run_load(run, dir, &o, err, sizeof err) == 0, "%s", err);
    an_cs_finish(top.cs);
    *cs = top.cs;
    an_opts_free(&o);
}

int main(int argc, char **argv)
{
    ASSERT_MSG(argc == 2, "usage: tsan_load DIR");
    static out o;
    for (int i = 0; i < NPROC; i++)
        write_proc(argv[1], i, &o);
    an_run one, many;
    an_cs *cs1, *csn;
    load(argv[1], 1, &one, &cs1);
    load(argv[1], 6, &many, &csn);
    ASSERT_EQ(one.nprocs, (size_t)NPROC);
    ASSERT_EQ(many.nprocs, one.nprocs);
    ASSERT_EQ(many.events, one.events);
    ASSERT_EQ(many.nskipped, (size_t)0);
    for (size_t i = 0; i < one.nprocs; i++) {
        const an_proc *a = &one.procs[i], *b = &many.procs[i];
        ASSERT_MSG(strcmp(a->path, b->path) == 0, "process %zu: %s vs %s", i, a->path, b->path);
        ASSERT_EQ(b->events, a->events);
        ASSERT_EQ(b->rd_reqs, a->rd_reqs);
        ASSERT_EQ(b->rd_bytes, a->rd_bytes);
        ASSERT_EQ(b->nth, a->nth);
        ASSERT_TRUE(memcmp(&a->tl, &b->tl, sizeof a->tl) == 0);
        ASSERT_TRUE(memcmp(a->hist, b->hist, sizeof a->hist) == 0);
        ASSERT_EQ(b->th[0].ncand, a->th[0].ncand);
    }
    const an_cs_find *f1 = an_cs_get(cs1, AN_CS_SMALL_READS), *fn = an_cs_get(csn, AN_CS_SMALL_READS);
    ASSERT_TRUE(f1->calls > 0 && f1->stacked == f1->calls);
    ASSERT_EQ(fn->calls, f1->calls);
    ASSERT_EQ(fn->time_ns, f1->time_ns);
    ASSERT_EQ(fn->nsites_all, f1->nsites_all);
    ASSERT_EQ(fn->nsites, f1->nsites);
    ASSERT_TRUE(f1->nsites >= 3);
    for (size_t s = 0; s < f1->nsites; s++) {
        const an_cs_site *a = &f1->sites[s], *b = &fn->sites[s];
        ASSERT_TRUE(a->est_ns == b->est_ns && a->est_calls == b->est_calls);
        ASSERT_EQ(b->samples, a->samples);
        ASSERT_EQ(b->nprocs, a->nprocs);
        ASSERT_EQ(b->nframes, a->nframes);
        for (size_t k = 0; k < a->nframes; k++) {
            ASSERT_EQ(b->frames[k].addr, a->frames[k].addr);
            ASSERT_EQ(b->frames[k].offset, a->frames[k].offset);
        }
    }
    printf("tsan_load: %d files, %llu events, %llu small reads at %zu call sites: the same on "
           "1 and 6 threads\n",
           NPROC, (unsigned long long)one.events, (unsigned long long)f1->calls, f1->nsites_all);
    an_cs_free(cs1);
    an_cs_free(csn);
    an_run_free(&one);
    an_run_free(&many);
    return gs_check_done("tsan_load");
}
