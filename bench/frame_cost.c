/* frame_cost.c — what the writer thread's encoding and compression cost per
 * event, measured offline on the raw frames of a real trace file.
 *
 *   frame_cost [--raw-literals] FILE.gst [LEVEL...]
 *   frame_cost --forms FILE.gst [LEVEL]
 *
 * Reads every frame of FILE, decompresses it (the records exactly as the
 * writer encoded them), then, for each zstd LEVEL (default: -5 -3 -1 1 2 3
 * 5), compresses every raw frame again the way the collector does
 * (gs_frame_compress, one reused context) and prints one line per level:
 *
 *   level L  cpu_ns_per_event  bytes_per_event  raw_bytes_per_event
 *
 * cpu_ns_per_event is the thread's CPU time (CLOCK_THREAD_CPUTIME_ID) for
 * compressing the whole file once, divided by its events; the pass is
 * repeated and the median taken. A first line "encode cpu_ns_per_event"
 * times gs_encode_event re-encoding the decoded events (the writer's other
 * per-event work, besides draining the ring). LEVEL "store" stores every
 * frame instead (gs_frame_store: zstd raw blocks, what the collector does
 * with a frame of runs). Events are the records that
 * are not TID or STRING records. --raw-literals turns zstd's Huffman coding
 * of literals off, as zstd's own default does at negative levels, to show
 * what the collector's choice (trace/gs_file.c) gains.
 *
 * --forms compares raw record forms on the file's pread events (pread and
 * pread64, in frames of 16384, compressed at LEVEL, default -3): "full"
 * (every record whole, as format 1.2 wrote them), "delta" (kind, time
 * delta, duration), "repeat" (what the encoder writes: format 1.3's repeat
 * records) and "columns" (a frame of all gaps then all durations, no kind
 * byte). One line per form: raw bytes, bytes and zstd ns per event
 * (docs/performance.md, "The record form").
 *
 * Must never: write anything but stdout; it measures, it asserts nothing.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#define ZSTD_STATIC_LINKING_ONLY /* ZSTD_c_literalCompressionMode */
#include <zstd.h>

#include "bench_clock.h"
#include "bench_median.h"
#include "gs_trace.h"

enum { REPEAT = 5 };

typedef struct frame {
    uint8_t *raw;
    size_t len;
    uint32_t nrec;
} frame;

static uint8_t *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    size_t cap = 1 << 20, n = 0;
    uint8_t *b = malloc(cap);
    for (size_t got; b && (got = fread(b + n, 1, cap - n, f)) > 0;) {
        n += got;
        if (n == cap)
            b = realloc(b, cap *= 2);
    }
    fclose(f);
    *len = n;
    return b;
}

/* The frames of a trace file, decompressed; their count, -1 when malformed. */
static long load_frames(const uint8_t *file, size_t len, frame **out)
{
    if (len < sizeof(gs_file_header) || memcmp(file, GS_MAGIC, GS_MAGIC_LEN) != 0)
        return -1;
    gs_file_header h;
    memcpy(&h, file, sizeof h);
    size_t at = h.header_size;
    long n = 0, cap = 64;
    frame *fr = malloc(sizeof *fr * (size_t)cap);
    while (fr && at + sizeof(gs_frame_header) <= len) {
        gs_frame_header fh;
        memcpy(&fh, file + at, sizeof fh);
        at += sizeof fh;
        if (fh.magic != GS_FRAME_MAGIC || fh.raw_size > GS_FRAME_RAW_MAX ||
            fh.comp_size > len - at)
            return -1;
        if (n == cap)
            fr = realloc(fr, sizeof *fr * (size_t)(cap *= 2));
        uint8_t *raw = malloc(fh.raw_size ? fh.raw_size : 1);
        if (!fr || !raw || ZSTD_decompress(raw, fh.raw_size, file + at, fh.comp_size) !=
                               fh.raw_size)
            return -1;
        fr[n++] = (frame){raw, fh.raw_size, fh.nrec};
        at += fh.comp_size;
    }
    *out = fr;
    return n;
}

static void note_string(void *ctx, uint32_t id, const char *s, size_t len)
{
    (void)ctx, (void)id, (void)s, (void)len;
}

static uint8_t *put_uv(uint8_t *p, uint64_t v)
{
    while (v >= 0x80) {
        *p++ = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    *p++ = (uint8_t)v;
    return p;
}

static uint64_t zz(int64_t v)
{
    return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
}

/* The n preads in ev as raw bytes of form `form` into out; their length. */
static size_t encode_form(int form, const gs_event *ev, size_t n, uint8_t *out, size_t cap)
{
    uint8_t *p = out;
    uint64_t prev_ts = 0, prev_end = 0;
    if (form == 0 || form == 2) {
        gs_encoder e;
        gs_encoder_init(&e, out, cap);
        for (size_t i = 0; i < n; i++) {
            if (form == 0)
                e.last.valid = 0; /* nothing to repeat: every record whole */
            gs_encode_event(&e, &ev[i]);
        }
        return e.len;
    }
    if (form == 1) {
        for (size_t i = 0; i < n; i++) {
            *p++ = (uint8_t)ev[i].kind;
            p = put_uv(p, zz((int64_t)(ev[i].ts - prev_ts)));
            p = put_uv(p, ev[i].dur);
            prev_ts = ev[i].ts;
        }
        return (size_t)(p - out);
    }
    for (size_t i = 0; i < n; i++) {
        p = put_uv(p, zz((int64_t)(ev[i].ts - prev_end)));
        prev_end = ev[i].ts + ev[i].dur;
    }
    for (size_t i = 0; i < n; i++)
        p = put_uv(p, ev[i].dur);
    return (size_t)(p - out);
}

static int forms(gs_event **per, size_t *per_n, long nf, int level)
{
    size_t n = 0;
    for (long i = 0; i < nf; i++)
        for (size_t k = 0; k < per_n[i]; k++)
            n += per[i][k].kind == GS_K_PREAD || per[i][k].kind == GS_K_PREAD64;
    if (n == 0) {
        fprintf(stderr, "frame_cost: no pread events\n");
        return 2;
    }
    gs_event *ev = malloc(sizeof *ev * n);
    n = 0;
    for (long i = 0; i < nf; i++)
        for (size_t k = 0; k < per_n[i]; k++)
            if (per[i][k].kind == GS_K_PREAD || per[i][k].kind == GS_K_PREAD64)
                ev[n++] = per[i][k];
    enum { CHUNK = 16384 };
    const size_t raw_cap = (size_t)CHUNK * GS_EVENT_MAX_ENCODED;
    uint8_t *raw = malloc(raw_cap);
    const size_t out_cap = gs_frame_bound(raw_cap);
    uint8_t *out = malloc(out_cap);
    void *cctx = gs_frame_cctx_new(level);
    if (!ev || !raw || !out || !cctx)
        return 1;
    static const char *const names[] = {"full", "delta", "repeat", "columns"};
    printf("%zu pread events, frames of %d, level %d\n", n, CHUNK, level);
    for (int form = 0; form < 4; form++) {
        double t[REPEAT];
        size_t raw_total = 0, bytes = 0;
        for (int r = 0; r < REPEAT; r++) {
            double ns = 0;
            raw_total = bytes = 0;
            for (size_t at = 0; at < n; at += CHUNK) {
                const size_t m = n - at < CHUNK ? n - at : CHUNK;
                const size_t len = encode_form(form, ev + at, m, raw, raw_cap);
                const double t0 = thread_ns();
                const long c = gs_frame_compress(cctx, raw, len, (uint32_t)m, out, out_cap);
                ns += thread_ns() - t0;
                if (c < 0)
                    return 1;
                raw_total += len;
                bytes += (size_t)c;
            }
            t[r] = ns / (double)n;
        }
        printf("form %-8s %.2f raw bytes/event %.3f bytes/event %.1f ns/event\n", names[form],
               (double)raw_total / (double)n, (double)bytes / (double)n, median(t, REPEAT));
    }
    gs_frame_cctx_free(cctx);
    return 0;
}

int main(int argc, char **argv)
{
    const int want_forms = argc > 1 && strcmp(argv[1], "--forms") == 0;
    if (want_forms) {
        argv++;
        argc--;
    }
    const int raw_literals = argc > 1 && strcmp(argv[1], "--raw-literals") == 0;
    if (raw_literals) {
        argv++;
        argc--;
    }
    if (argc < 2 || strcmp(argv[1], "--help") == 0) {
        fprintf(stderr, "usage: frame_cost [--raw-literals] FILE.gst [LEVEL...]\n"
                        "       frame_cost --forms FILE.gst [LEVEL]\n");
        return argc < 2 ? 2 : 0;
    }
    size_t flen;
    uint8_t *file = slurp(argv[1], &flen);
    frame *fr = NULL;
    long nf = file ? load_frames(file, flen, &fr) : -1;
    if (nf <= 0) {
        fprintf(stderr, "frame_cost: %s: no readable frames\n", argv[1]);
        return 2;
    }
    /* decode everything once: the events, and how many there are */
    size_t raw_total = 0, max_raw = 0, nev = 0, max_rec = 0;
    for (long i = 0; i < nf; i++) {
        raw_total += fr[i].len;
        max_raw = fr[i].len > max_raw ? fr[i].len : max_raw;
        max_rec = fr[i].nrec > max_rec ? fr[i].nrec : max_rec;
    }
    gs_event *evs = malloc(sizeof *evs * (max_rec + 1));
    gs_event **per = calloc((size_t)nf, sizeof *per);
    size_t *per_n = calloc((size_t)nf, sizeof *per_n);
    for (long i = 0; i < nf; i++) {
        uint32_t tid = 0;
        long n = gs_decode_frame(fr[i].raw, fr[i].len, fr[i].nrec, evs, max_rec + 1, &tid,
                                 note_string, NULL);
        if (n < 0) {
            fprintf(stderr, "frame_cost: %s: frame %ld does not decode\n", argv[1], i);
            return 2;
        }
        per[i] = malloc(sizeof(gs_event) * (size_t)(n ? n : 1));
        memcpy(per[i], evs, sizeof(gs_event) * (size_t)n);
        per_n[i] = (size_t)n;
        nev += (size_t)n;
    }
    if (nev == 0) {
        fprintf(stderr, "frame_cost: %s: no events\n", argv[1]);
        return 2;
    }
    printf("file %s: %ld frames, %zu events, %.2f raw bytes/event\n", argv[1], nf, nev,
           (double)raw_total / (double)nev);
    if (want_forms)
        return forms(per, per_n, nf, argc > 2 ? atoi(argv[2]) : -3);

    /* encode: the events of each frame into a fresh buffer */
    uint8_t *enc_buf = malloc(GS_FRAME_RAW_MAX);
    double t[REPEAT];
    for (int r = 0; r < REPEAT; r++) {
        const double t0 = thread_ns();
        for (long i = 0; i < nf; i++) {
            gs_encoder e;
            gs_encoder_init(&e, enc_buf, GS_FRAME_RAW_MAX);
            for (size_t k = 0; k < per_n[i]; k++)
                if (gs_encode_event(&e, &per[i][k]) != GS_OK)
                    return 1;
        }
        t[r] = (thread_ns() - t0) / (double)nev;
    }
    printf("encode %.1f ns/event (median of %d passes)\n", median(t, REPEAT), REPEAT);

    static const int dflt[] = {-5, -3, -1, 1, 2, 3, 5};
    const int nl = argc > 2 ? argc - 2 : (int)(sizeof dflt / sizeof dflt[0]);
    size_t out_cap = gs_frame_bound(max_raw);
    uint8_t *out = malloc(out_cap);
    for (int l = 0; l < nl; l++) {
        if (argc > 2 && strcmp(argv[2 + l], "store") == 0) {
            size_t bytes = 0;
            for (int r = 0; r < REPEAT; r++) {
                bytes = 0;
                const double t0 = thread_ns();
                for (long i = 0; i < nf; i++) {
                    long n = gs_frame_store(fr[i].raw, fr[i].len, fr[i].nrec, out, out_cap);
                    if (n < 0)
                        return 1;
                    bytes += (size_t)n;
                }
                t[r] = (thread_ns() - t0) / (double)nev;
            }
            printf("level store %.1f ns/event %.3f bytes/event\n", median(t, REPEAT),
                   (double)bytes / (double)nev);
            continue;
        }
        const int level = argc > 2 ? atoi(argv[2 + l]) : dflt[l];
        void *cctx = gs_frame_cctx_new(level);
        if (cctx && raw_literals &&
            ZSTD_isError(ZSTD_CCtx_setParameter(cctx, ZSTD_c_literalCompressionMode,
                                                2 /* ZSTD_ps_disable */))) {
            gs_frame_cctx_free(cctx);
            cctx = NULL;
        }
        if (!cctx) {
            fprintf(stderr, "frame_cost: level %d refused by zstd\n", level);
            return 2;
        }
        size_t bytes = 0;
        for (int r = 0; r < REPEAT; r++) {
            bytes = 0;
            const double t0 = thread_ns();
            for (long i = 0; i < nf; i++) {
                long n = gs_frame_compress(cctx, fr[i].raw, fr[i].len, fr[i].nrec, out, out_cap);
                if (n < 0)
                    return 1;
                bytes += (size_t)n;
            }
            t[r] = (thread_ns() - t0) / (double)nev;
        }
        printf("level %d %.1f ns/event %.3f bytes/event\n", level, median(t, REPEAT),
               (double)bytes / (double)nev);
        gs_frame_cctx_free(cctx);
    }
    return 0;
}
