/* mk_hostile.c — OUTDIR: writes the hostile traces of tests/fuzz/regress/
 * through the trace API. Each is small and well formed as far as the codec
 * goes, and each once cost the analyzer unbounded time or memory:
 *
 *   strid.gst      a string id near 2^30 (dump took 8.4 GB)
 *   stackid.gst    stack ids near 2^32 in callsite and stack records
 *   hugedur.gst    steps, then an event lasting ~2^62 ns (report --perfetto
 *                  looped over it in 1 ms bins), and one whose ts + dur wraps
 *   tids.gst       200,000 threads with one read each (thread lookups were
 *                  linear: quadratic in the threads)
 *   sockets.gst    64 threads reading sockets before the first step took
 *                  every timeline slot: report found no steps
 *   streams.gst    100,000 distinct GPU streams (a source each)
 *   kstrid.gst     steps, and GPU kernels named by string ids near 2^30 and
 *                  above it (report's GPU time per kernel name was a table
 *                  sized by the id: 4 GiB, or the kernel left out)
 *   devs.gst       200,000 distinct GPU devices (each looked up among the
 *                  others: report took 23 CPU seconds)
 *   cfgs.gst       200,000 distinct DataLoader settings (loader ids), the
 *                  same: report took 54 CPU seconds
 *
 * Must never: use the clock or randomness: the same bytes every time.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gs_trace.h"

#define RAW_CAP (1u << 20)

typedef struct out {
    FILE *f;
    gs_encoder enc;
    uint8_t *raw, *comp;
    size_t comp_cap;
    void *cctx;
    uint32_t tid;
} out;

static void die(const char *what)
{
    fprintf(stderr, "mk_hostile: %s\n", what);
    exit(1);
}

static void flush(out *o)
{
    if (o->enc.nrec == 0)
        return;
    long n = gs_frame_compress(o->cctx, o->raw, o->enc.len, o->enc.nrec, o->comp, o->comp_cap);
    if (n < 0 || fwrite(o->comp, 1, (size_t)n, o->f) != (size_t)n)
        die("frame");
    gs_encoder_reset(&o->enc);
    o->tid = 0;
}

static void begin(out *o, const char *dir, const char *name, uint64_t pid)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    o->f = fopen(path, "wb");
    o->raw = malloc(RAW_CAP);
    o->comp_cap = gs_frame_bound(RAW_CAP);
    o->comp = malloc(o->comp_cap);
    o->cctx = gs_frame_cctx_new(3);
    if (!o->f || !o->raw || !o->comp || !o->cctx)
        die(path);
    gs_encoder_init(&o->enc, o->raw, RAW_CAP);
    o->tid = 0;
    uint8_t hdr[512];
    gs_proc_info pi;
    memset(&pi, 0, sizeof pi);
    pi.pid = pid;
    pi.ppid = 1;
    pi.mono_ns = 1000000000000ull;
    pi.real_ns = 1764430000000000000ull;
    pi.rank = pi.local_rank = pi.world_size = -1;
    pi.host = "hostile";
    pi.argv = "python3\0train.py\0";
    pi.argv_len = 17;
    pi.argc = 2;
    long n = gs_header_build(hdr, sizeof hdr, &pi);
    if (n < 0 || fwrite(hdr, 1, (size_t)n, o->f) != (size_t)n)
        die("header");
}

static void end(out *o)
{
    flush(o);
    if (fclose(o->f) != 0)
        die("close");
    free(o->raw);
    free(o->comp);
    gs_frame_cctx_free(o->cctx);
}

static void room(out *o, size_t need)
{
    if (o->enc.cap - o->enc.len < need + GS_EVENT_MAX_ENCODED + 64)
        flush(o);
}

static void tid(out *o, uint32_t t)
{
    room(o, 16);
    if (o->enc.nrec == 0 || o->tid != t) {
        if (gs_encode_tid(&o->enc, t) != GS_OK)
            die("tid");
        o->tid = t;
    }
}

static void event(out *o, uint32_t t, const gs_event *ev)
{
    tid(o, t);
    if (gs_encode_event(&o->enc, ev) != GS_OK)
        die("event");
}

static void string(out *o, uint32_t id, const char *s)
{
    room(o, strlen(s) + 32);
    if (gs_encode_string(&o->enc, id, s, strlen(s)) != GS_OK)
        die("string");
}

static gs_event ev_of(unsigned kind, uint64_t ts, uint64_t dur)
{
    gs_event e;
    gs_event_clear(&e);
    e.kind = (uint16_t)kind;
    e.ts = ts;
    e.dur = dur;
    return e;
}

static void read_ev(out *o, uint32_t t, uint64_t ts, unsigned fdk, uint32_t str)
{
    gs_event e = ev_of(GS_K_READ, ts, 5000);
    e.fd = 5;
    e.fd_kind = (uint8_t)fdk;
    e.str = str;
    e.bytes = 4096;
    e.ret = 4096;
    event(o, t, &e);
}

/* steps 0..n-1 of loader 0 on thread t, each 10 ms with a 4 ms data wait */
static void steps(out *o, uint32_t t, uint64_t t0, unsigned n)
{
    for (unsigned s = 0; s < n; s++) {
        const uint64_t b = t0 + s * 10000000ull;
        gs_event e = ev_of(GS_K_STEP_BEGIN, b, 0);
        e.aux = s;
        event(o, t, &e);
        e = ev_of(GS_K_FETCH_BEGIN, b + 1000, 0);
        e.aux = s;
        event(o, t, &e);
        read_ev(o, t, b + 2000, GS_FDK_PIPE, 0);
        e = ev_of(GS_K_FETCH_END, b + 4000000, 0);
        e.aux = s;
        event(o, t, &e);
        e = ev_of(GS_K_STEP_END, b + 9999000, 0);
        e.aux = s;
        event(o, t, &e);
    }
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: mk_hostile OUTDIR\n");
        return 2;
    }
    const char *dir = argv[1];
    const uint64_t T = 2000000000000ull;
    out o;

    begin(&o, dir, "strid.gst", 2001);
    string(&o, (1u << 30) - 3, "/data/far.bin");
    read_ev(&o, 2001, T, GS_FDK_FILE, (1u << 30) - 3);
    end(&o);

    begin(&o, dir, "stackid.gst", 2002);
    {
        const uint64_t frames[2] = {0x401000, 0x402000};
        tid(&o, 2002);
        if (gs_encode_stack(&o.enc, 0xfffffff0u, frames, 2) != GS_OK)
            die("stack");
        gs_event e = ev_of(GS_K_READ, T, 5000);
        e.fd_kind = GS_FDK_FILE;
        e.bytes = e.ret = 16;
        e.stack = 0xfffffff0u;
        e.stack_weight = 0xffffffffu;
        event(&o, 2002, &e);
        e.stack = 0x7ffffffeu; /* never defined */
        event(&o, 2002, &e);
    }
    end(&o);

    begin(&o, dir, "hugedur.gst", 2003);
    steps(&o, 2003, T, 12);
    {
        gs_event e = ev_of(GS_K_GPU_KERNEL, T + 5000000, 1ull << 62);
        e.stream = 7;
        event(&o, 0, &e);
        e = ev_of(GS_K_READ, UINT64_MAX - 1000, 1ull << 40); /* ts + dur wraps */
        e.fd_kind = GS_FDK_FILE;
        event(&o, 2003, &e);
        e = ev_of(GS_K_POLL, T + 1000, UINT64_MAX);
        e.fd_kind = GS_FDK_PIPE;
        event(&o, 2003, &e);
    }
    end(&o);

    begin(&o, dir, "tids.gst", 2004);
    steps(&o, 2004, T, 12);
    for (uint32_t i = 0; i < 200000; i++)
        read_ev(&o, 100000 + i, T + 1000 + i, GS_FDK_FILE, 0);
    end(&o);

    begin(&o, dir, "sockets.gst", 2005);
    for (uint32_t t = 0; t < 64; t++)
        for (unsigned k = 0; k < 4; k++)
            read_ev(&o, 3000 + t, T + k * 5000000ull + t * 1000, GS_FDK_SOCKET, 0);
    steps(&o, 2005, T + 100000000ull, 12);
    end(&o);

    begin(&o, dir, "streams.gst", 2006);
    steps(&o, 2006, T, 12);
    for (uint32_t s = 0; s < 100000; s++) {
        gs_event e = ev_of(GS_K_GPU_KERNEL, T + 1000 + s * 1000ull, 500);
        e.dev = s % 7;
        e.stream = 1000000ull + s;
        event(&o, 0, &e);
    }
    end(&o);

    begin(&o, dir, "kstrid.gst", 2007);
    steps(&o, 2007, T, 12);
    string(&o, (1u << 30) - 3, "_Z21ncclKernel_AllReduceP11ncclDevComm");
    string(&o, 0xfffffff0u, "far_compute_kernel");
    for (unsigned k = 0; k < 12; k++) {
        gs_event e = ev_of(GS_K_GPU_KERNEL, T + k * 10000000ull + 5000000, 2000000);
        e.stream = 7;
        e.str = k % 2 ? 0xfffffff0u : (1u << 30) - 3;
        event(&o, 0, &e);
    }
    end(&o);

    begin(&o, dir, "devs.gst", 2008);
    steps(&o, 2008, T, 12);
    for (uint32_t d = 0; d < 200000; d++) {
        gs_event e = ev_of(GS_K_GPU_DEVICE, T + 1000 + d, 0);
        e.dev = d;
        event(&o, 0, &e);
    }
    end(&o);

    begin(&o, dir, "cfgs.gst", 2009);
    steps(&o, 2009, T, 12);
    string(&o, 5, "num_workers=2");
    for (uint32_t l = 0; l < 200000; l++) {
        gs_event e = ev_of(GS_K_CONFIG, T + 1000 + l, 0);
        e.str = 5;
        e.aux = l;
        event(&o, 2009, &e);
    }
    end(&o);
    return 0;
}
