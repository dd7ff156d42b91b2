/* gs_mktrace.c — writes synthetic gpustarve traces through the trace API,
 * for the CLI tests and the analyzer benchmarks.
 *
 * Responsible for: deterministic content (same options, same bytes), every
 * kind with plausible field values, and the damage the reader must survive
 * (truncated last frame, corrupt frame, trailing garbage, future version,
 * bad magic). With --expect it also writes, as JSON Lines, exactly the
 * processes and events a reader must get back (raw fields; strings in hex),
 * so tests can check the analyzer's output field by field.
 *
 * Must never: depend on the analyzer, or use the clock or the environment
 * (output depends on the options only).
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "gs_trace.h"

static const char usage_text[] =
    "usage: gs_mktrace [options] OUTDIR        (files OUTDIR/HOST-PID.gst)\n"
    "       gs_mktrace [options] --file PATH   (one process)\n"
    "  -p, --procs N        processes (default 1); pid 1000+i, all forked from 1000\n"
    "  -e, --events N       events per process (default 100)\n"
    "  -t, --threads N      threads per process (default 1)\n"
    "  -F, --frame N        events per frame (default 256)\n"
    "  -k, --kinds LIST     kinds to cycle through, comma-separated names,\n"
    "                       'mix' (default) or 'all' (every event kind)\n"
    "  -s, --seed N         seed of the pseudo-random values (default 1)\n"
    "  -z, --level N        zstd level (default 3)\n"
    "      --host NAME      host name (default testhost)\n"
    "      --unsorted       events inside a frame out of time order\n"
    "      --nasty          paths, argv and notes with quotes, control bytes\n"
    "                       and invalid UTF-8\n"
    "      --truncate       cut the last frame of the damaged process in half\n"
    "      --corrupt N      flip a byte in the payload of frame N (from 0)\n"
    "      --garbage N      append N bytes of garbage after the last frame\n"
    "      --version M.m    format version written in the header\n"
    "      --bad-magic      write a wrong magic\n"
    "      --damage-proc I  process the damage options apply to (default: last)\n"
    "      --expect FILE    write the expected reader output as JSON Lines\n"
    "      --file PATH      write the (single) process to PATH\n";

typedef struct opts {
    unsigned procs, events, threads, frame;
    const char *kinds;
    uint64_t seed;
    int level;
    const char *host;
    int unsorted, nasty, truncate, bad_magic;
    long corrupt;
    unsigned long garbage;
    int vmaj, vmin;
    long damage_proc;
    const char *expect;
    const char *file;
    const char *outdir;
} opts;

static void die(const char *what)
{
    fprintf(stderr, "gs_mktrace: %s\n", what);
    exit(2);
}

static uint64_t rng_state;
static uint64_t rnd(void) /* xorshift64*: deterministic, no libc state */
{
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * 2685821657736338717ull;
}

/* ---- strings ------------------------------------------------------------------ */

static const char *const nasty_strings[] = {
    "/data/q\"uote\\back",
    "/data/ctl\x01\x1f\x7f-end",
    "/data/nl\nx\ttab\rcr",
    "/data/bad\xff\xfe",
    "/data/overlong\xc0\xaf",
    "/data/surrogate\xed\xa0\x80",
    "/data/cut\xe2\x82",
    "/data/ok-\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80",
    "/data/above\xf4\x90\x80\x80",
    "/data/lone\x80\xbf",
};
#define NNASTY (sizeof nasty_strings / sizeof nasty_strings[0])

typedef struct strtab {
    char (*s)[128];
    unsigned n;
    unsigned char *defined; /* per id, for the current file */
} strtab;

/* string ids: 1..npaths paths, then thread names, notes */
#define NPATHS 40

static void strtab_build(strtab *t, const opts *o)
{
    t->n = NPATHS + o->threads + 8;
    t->s = calloc(t->n + 1, sizeof *t->s);
    t->defined = calloc(t->n + 1, 1);
    if (!t->s || !t->defined)
        die("out of memory");
    for (unsigned i = 1; i <= NPATHS; i++) {
        if (o->nasty && i <= NNASTY)
            snprintf(t->s[i], sizeof t->s[i], "%s", nasty_strings[i - 1]);
        else
            snprintf(t->s[i], sizeof t->s[i], "/data/train/shard-%03u.bin", i);
    }
    for (unsigned i = 0; i < o->threads; i++)
        snprintf(t->s[NPATHS + 1 + i], sizeof t->s[0], i ? "loader-%u" : "main", i);
    for (unsigned i = 0; i < 8; i++) {
        if (o->nasty && i % 2)
            snprintf(t->s[NPATHS + o->threads + 1 + i], sizeof t->s[0], "note %u: \"%s\"", i,
                     nasty_strings[i % NNASTY]);
        else
            snprintf(t->s[NPATHS + o->threads + 1 + i], sizeof t->s[0], "note %u", i);
    }
}

static uint32_t path_id(unsigned i) { return 1 + i % NPATHS; }

/* ---- kinds --------------------------------------------------------------------- */

static const unsigned mix_kinds[] = {
    GS_K_OPENAT, GS_K_READ, GS_K_PREAD64, GS_K_FSTAT, GS_K_READ, GS_K_READV, GS_K_CLOSE,
    GS_K_MMAP, GS_K_MUNMAP, GS_K_FOPEN, GS_K_FREAD, GS_K_FGETS, GS_K_FCLOSE, GS_K_STAT,
    GS_K_POLL, GS_K_EPOLL_WAIT, GS_K_NOTE, GS_K_FAULTS, GS_K_DROPS, GS_K_PREADV2,
};

static unsigned *parse_kinds(const char *spec, unsigned *n)
{
    unsigned *v = calloc(GS_K_MAX, sizeof *v);
    if (!v)
        die("out of memory");
    *n = 0;
    if (strcmp(spec, "mix") == 0) {
        for (size_t i = 0; i < sizeof mix_kinds / sizeof mix_kinds[0]; i++)
            v[(*n)++] = mix_kinds[i];
        return v;
    }
    if (strcmp(spec, "all") == 0) {
        for (unsigned k = 0; k < GS_K_MAX; k++)
            if (gs_kind_known(k) && gs_kind_fields(k) != 0)
                v[(*n)++] = k;
        return v;
    }
    char *copy = strdup(spec), *save = NULL;
    for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        unsigned k = gs_kind_by_name(tok);
        if (!k || gs_kind_fields(k) == 0) {
            fprintf(stderr, "gs_mktrace: unknown event kind '%s'\n", tok);
            exit(2);
        }
        v[(*n)++] = k;
    }
    free(copy);
    if (*n == 0)
        die("no kinds");
    return v;
}

/* Fill an event of kind k with plausible values (the preload's meanings). */
static void fill_event(gs_event *ev, unsigned k, unsigned i, uint32_t tid, uint64_t ts,
                       const opts *o, uint32_t thread_name, uint32_t note_base, uint64_t *faults,
                       uint64_t *drops)
{
    unsigned f = gs_kind_fields(k);
    gs_event_clear(ev);
    ev->kind = (uint16_t)k;
    ev->tid = tid;
    ev->ts = ts;
    if (f & GS_F_DUR)
        ev->dur = 500 + rnd() % 200000;
    if (f & GS_F_FD) {
        ev->fd = (int32_t)(3 + i % 60);
        ev->fd_kind = i % 7 == 0 ? GS_FDK_PIPE : GS_FDK_FILE;
    }
    if (f & GS_F_STR)
        ev->str = i % 11 == 5 ? 0 : path_id(i); /* some unknown paths */
    if (f & GS_F_BYTES)
        ev->bytes = 4096u << (i % 5);
    if (f & GS_F_RET)
        ev->ret = i % 13 == 7 ? -1 : (int64_t)(ev->bytes - (i % 3) * 100);
    if (f & GS_F_OFFSET)
        ev->offset = i % 9 == 4 ? -1 : (int64_t)((uint64_t)i * 4096);
    if (f & GS_F_AUX)
        ev->aux = i;
    if (f & GS_F_AUX2)
        ev->aux2 = 2ull * i + 1;
    switch (k) {
    case GS_K_OPEN: case GS_K_OPEN64: case GS_K_OPENAT: case GS_K_OPENAT64: case GS_K_CREAT:
        ev->bytes = 0;
        ev->ret = i % 13 == 7 ? -1 : ev->fd;
        ev->aux = 0x80000; /* O_RDONLY|O_CLOEXEC */
        ev->aux2 = 0644;
        break;
    case GS_K_CLOSE: case GS_K_FCLOSE:
        ev->bytes = 0;
        ev->ret = 0;
        break;
    case GS_K_DUP: case GS_K_DUP2: case GS_K_DUP3:
        ev->bytes = 0;
        ev->ret = ev->fd + 100;
        ev->aux = 0x80000;
        break;
    case GS_K_READV: case GS_K_PREADV: case GS_K_PREADV64:
        ev->aux = 1 + i % 4;
        break;
    case GS_K_PREADV2: case GS_K_PREADV64V2:
        ev->aux = 1 + i % 4;
        ev->aux2 = i % 2 ? 0x1 /* RWF_HIPRI */ : 0;
        break;
    case GS_K_FOPEN: case GS_K_FOPEN64:
        ev->bytes = 0;
        ev->ret = i % 13 == 7 ? -1 : ev->fd;
        ev->aux = i % 2 ? ('r' | ('b' << 8)) : 'r';
        break;
    case GS_K_FREAD: case GS_K_FREAD_UNLOCKED:
        ev->aux = 4;
        ev->bytes = 4ull * (256 + i % 10);
        ev->ret = i % 13 == 7 ? 0 : (int64_t)(ev->bytes / 4);
        break;
    case GS_K_FGETS:
        ev->bytes = 1024;
        ev->ret = i % 13 == 7 ? -1 : (int64_t)(10 + i % 50);
        break;
    case GS_K_MMAP: case GS_K_MMAP64:
        ev->ret = i % 13 == 7 ? -1 : (int64_t)(0x7f0000000000ull + (uint64_t)i * 0x100000);
        ev->aux = 0x1;  /* PROT_READ */
        ev->aux2 = 0x2; /* MAP_PRIVATE */
        break;
    case GS_K_MUNMAP:
        ev->ret = 0;
        ev->aux = 0x7f0000000000ull + (uint64_t)i * 0x100000;
        break;
    case GS_K_POLL: case GS_K_PPOLL: case GS_K_SELECT: case GS_K_PSELECT:
    case GS_K_EPOLL_WAIT: case GS_K_EPOLL_PWAIT:
        ev->fd_kind = GS_FDK_PIPE;
        ev->str = 0;
        ev->bytes = 1 + i % 4;
        ev->ret = 1;
        ev->aux = i % 3 == 0 ? 0 : 1 + (i % 100); /* 0 = forever */
        break;
    case GS_K_STAT: case GS_K_STAT64: case GS_K_LSTAT: case GS_K_LSTAT64:
    case GS_K_XSTAT: case GS_K_XSTAT64: case GS_K_LXSTAT: case GS_K_LXSTAT64:
        ev->fd = -1; /* by path */
        ev->fd_kind = GS_FDK_UNKNOWN;
        ev->bytes = 0;
        ev->ret = i % 13 == 7 ? -1 : 0;
        break;
    case GS_K_FSTAT: case GS_K_FSTAT64: case GS_K_FXSTAT: case GS_K_FXSTAT64:
        ev->bytes = 0;
        ev->ret = 0;
        break;
    case GS_K_FSTATAT: case GS_K_FSTATAT64: case GS_K_FXSTATAT: case GS_K_FXSTATAT64:
        ev->fd = -100; /* AT_FDCWD */
        ev->fd_kind = GS_FDK_UNKNOWN;
        ev->bytes = 0;
        ev->ret = 0;
        ev->aux = 0x100; /* AT_SYMLINK_NOFOLLOW */
        break;
    case GS_K_STATX:
        ev->fd = -100;
        ev->fd_kind = GS_FDK_UNKNOWN;
        ev->bytes = 0;
        ev->ret = 0;
        ev->aux = 0x100;
        ev->aux2 = 0xfff; /* STATX_BASIC_STATS */
        break;
    case GS_K_THREAD:
        ev->str = thread_name;
        ev->aux = tid;
        break;
    case GS_K_CPU: { /* both sources, each with what it measures */
        const unsigned src = i % 2 ? GS_CPU_SRC_MARKER : GS_CPU_SRC_PERIODIC;
        const unsigned has = src == GS_CPU_SRC_MARKER ? GS_CPU_HAS_FAULTS | GS_CPU_HAS_SWITCHES
                                                      : GS_CPU_HAS_RUNQ | (i % 4 ? GS_CPU_HAS_FAULTS : 0);
        ev->ret = 0;
        ev->aux = gs_pack_cpu_aux(tid, src, has);
        ev->bytes = 1000000 + (uint64_t)i * 4321;
        ev->aux2 = (has & GS_CPU_HAS_RUNQ) ? (uint64_t)i * 777 : 0;
        ev->dev = (has & GS_CPU_HAS_FAULTS) ? *faults : 0;
        ev->stream = (has & GS_CPU_HAS_SWITCHES) ? (uint64_t)i : 0;
        ev->corr = (has & GS_CPU_HAS_SWITCHES) ? (uint64_t)i / 3 : 0;
        if (src == GS_CPU_SRC_PERIODIC && i % 3) {
            ev->aux |= (uint64_t)GS_CPU_HAS_STORAGE << 40;
            ev->ret = (int64_t)i * 8192;
        }
        break;
    }
    case GS_K_FAULTS:
        *faults += i % 5;
        ev->aux = tid;
        ev->aux2 = *faults;
        break;
    case GS_K_DROPS:
        *drops += i % 3;
        ev->aux = *drops;
        ev->aux2 = *drops / 2;
        break;
    case GS_K_NOTE:
        ev->str = note_base + i % 8;
        ev->aux = i % 4;
        break;
    case GS_K_EXEC:
        ev->str = path_id(i);
        ev->ret = 0;
        break;
    case GS_K_EXIT:
        ev->aux = i % 3 == 2 ? 15 : i % 4;
        ev->aux2 = i % 3;
        break;
    case GS_K_NVTX_PUSH: case GS_K_NVTX_POP: case GS_K_NVTX_START: case GS_K_NVTX_END:
    case GS_K_NVTX_MARK:
        ev->aux = 0; /* the default domain: aux is a string id there */
        break;
    case GS_K_MAPPING:
        ev->str = path_id(i);
        ev->aux = 0x7f0000000000ull + (uint64_t)i * 0x200000;
        ev->bytes = 0x1000u * (1 + i % 64);
        ev->offset = (int64_t)(0x1000u * (i % 8));
        ev->aux2 = 0; /* a string id there (the build id): none */
        break;
    }
    (void)o;
}

/* ---- expect file ---------------------------------------------------------------- */

static void put_hex(FILE *f, const char *s, size_t n)
{
    fputc('"', f);
    for (size_t i = 0; i < n; i++)
        fprintf(f, "%02x", (unsigned char)s[i]);
    fputc('"', f);
}

static void expect_event(FILE *f, const gs_event *ev, uint64_t pid, unsigned frame,
                         const strtab *st)
{
    fprintf(f,
            "{\"type\":\"event\",\"pid\":%llu,\"frame\":%u,\"tid\":%u,\"kind\":\"%s\","
            "\"ts\":%llu,\"dur\":%llu,\"fd\":%d,\"fd_kind\":%u,\"str\":",
            (unsigned long long)pid, frame, ev->tid, gs_kind_name(ev->kind),
            (unsigned long long)ev->ts, (unsigned long long)ev->dur, ev->fd, ev->fd_kind);
    if (ev->str)
        put_hex(f, st->s[ev->str], strlen(st->s[ev->str]));
    else
        fputs("null", f);
    fprintf(f,
            ",\"bytes\":%llu,\"ret\":%lld,\"offset\":%lld,\"aux\":%llu,\"aux2\":%llu,"
            "\"dev\":%u,\"stream\":%llu,\"corr\":%llu}\n",
            (unsigned long long)ev->bytes, (long long)ev->ret, (long long)ev->offset,
            (unsigned long long)ev->aux, (unsigned long long)ev->aux2, ev->dev,
            (unsigned long long)ev->stream, (unsigned long long)ev->corr);
}

/* ---- writing -------------------------------------------------------------------- */

static void xwrite(FILE *f, const void *p, size_t n)
{
    if (n && fwrite(p, 1, n, f) != n)
        die("write failed");
}

typedef struct frame_buf {
    gs_event *ev;
    unsigned n;
} frame_buf;

static void write_process(const opts *o, unsigned p, const char *path, FILE *expect,
                          const unsigned *kinds, unsigned nkinds, strtab *st, void *cctx)
{
    const int damaged = (long)p == o->damage_proc;
    const uint64_t pid = 1000 + p;
    FILE *f = fopen(path, "wb");
    if (!f) {
        fprintf(stderr, "gs_mktrace: %s: %s\n", path, strerror(errno));
        exit(2);
    }
    memset(st->defined, 0, st->n + 1);

    /* header */
    char argv[512];
    size_t alen = 0;
    const char *args[4] = {"python3", "train.py", p ? "--worker" : "--epochs=1",
                           o->nasty ? "caf\xc3\xa9 \"q\"\n\xff" : "x"};
    for (int i = 0; i < 4; i++) {
        size_t l = strlen(args[i]) + 1;
        memcpy(argv + alen, args[i], l);
        alen += l;
    }
    gs_proc_info pi;
    memset(&pi, 0, sizeof pi);
    pi.pid = pid;
    pi.ppid = p ? 1000 : 999;
    pi.mono_ns = 1000000000000ull + (uint64_t)p * 1000000ull;
    pi.real_ns = 1764430000000000000ull + (uint64_t)p * 1000000ull;
    pi.rank = p == 0 ? 0 : -1;
    pi.local_rank = p == 0 ? 0 : -1;
    pi.world_size = p == 0 ? 1 : -1;
    pi.flags = p ? GS_HDR_F_FORKED : 0;
    pi.exec_seq = 0;
    pi.host = o->host;
    pi.argc = 4;
    pi.argv = argv;
    pi.argv_len = (uint32_t)alen;
    uint8_t hdr[4096];
    long hlen = gs_header_build(hdr, sizeof hdr, &pi);
    if (hlen < 0)
        die("gs_header_build failed");
    if (damaged && o->vmaj >= 0) {
        uint16_t maj = (uint16_t)o->vmaj, min = (uint16_t)o->vmin;
        memcpy(hdr + offsetof(gs_file_header, version_major), &maj, 2);
        memcpy(hdr + offsetof(gs_file_header, version_minor), &min, 2);
    }
    if (damaged && o->bad_magic)
        hdr[0] = 'X';
    xwrite(f, hdr, (size_t)hlen);
    uint64_t off = (uint64_t)hlen;
    if (expect) {
        fprintf(expect,
                "{\"type\":\"process\",\"pid\":%llu,\"ppid\":%llu,\"host\":",
                (unsigned long long)pid, (unsigned long long)pi.ppid);
        put_hex(expect, o->host, strlen(o->host));
        fputs(",\"argv\":[", expect);
        for (int i = 0; i < 4; i++) {
            if (i)
                fputc(',', expect);
            put_hex(expect, args[i], strlen(args[i]));
        }
        fprintf(expect,
                "],\"mono_ns\":%llu,\"real_ns\":%llu,\"rank\":%d,\"local_rank\":%d,"
                "\"world_size\":%d,\"exec_seq\":%u,\"flags\":%u,\"file\":\"%s\"}\n",
                (unsigned long long)pi.mono_ns, (unsigned long long)pi.real_ns, pi.rank,
                pi.local_rank, pi.world_size, pi.exec_seq, pi.flags, path);
    }
    int header_bad = damaged && (o->bad_magic || (o->vmaj >= 0 && o->vmaj != GS_VERSION_MAJOR));

    /* events: event i belongs to thread i % threads; one frame holds one
     * thread's run of events; frames go out round-robin over threads */
    const unsigned T = o->threads;
    frame_buf *fb = calloc(T, sizeof *fb);
    for (unsigned t = 0; t < T; t++) {
        fb[t].ev = calloc(o->frame, sizeof(gs_event));
        if (!fb[t].ev)
            die("out of memory");
    }
    uint8_t *raw = malloc(GS_FRAME_RAW_MAX);
    size_t outcap = gs_frame_bound(GS_FRAME_RAW_MAX);
    if (!raw)
        die("out of memory");
    gs_encoder enc;
    gs_encoder_init(&enc, raw, GS_FRAME_RAW_MAX);

    /* Frames are produced first and written afterwards, so the damage can
     * be applied to "the last frame" without knowing the count ahead. */
    typedef struct frame_out {
        uint8_t *bytes;
        size_t len;
        gs_event *ev;
        unsigned n;
    } frame_out;
    size_t nframes = 0, capframes = 16;
    frame_out *frames = calloc(capframes, sizeof *frames);

    uint64_t faults = 0, drops = 0;
    uint32_t note_base = NPATHS + T + 1;
    unsigned char *started = calloc(T, 1); /* thread got its THREAD record */
    unsigned i = 0;
    uint64_t ts = pi.mono_ns + 1000;
    while (i < o->events) {
        for (unsigned t = 0; t < T && i < o->events; t++) {
            /* this thread's next run of events: its first is THREAD */
            while (fb[t].n < o->frame && i < o->events) {
                unsigned k = started[t] ? kinds[i % nkinds] : GS_K_THREAD;
                started[t] = 1;
                ts += 1000 + rnd() % 1000;
                fill_event(&fb[t].ev[fb[t].n++], k, i, (uint32_t)(pid + t), ts, o,
                           NPATHS + 1 + t, note_base, &faults, &drops);
                i++;
            }
            if (fb[t].n == 0)
                continue;
            if (o->unsorted && fb[t].n > 2) { /* reverse pairs: deterministic disorder */
                for (unsigned a = 0; a + 1 < fb[t].n; a += 3) {
                    gs_event tmp = fb[t].ev[a];
                    fb[t].ev[a] = fb[t].ev[a + 1];
                    fb[t].ev[a + 1] = tmp;
                }
                /* and two events with the same ts, to check stability */
                fb[t].ev[fb[t].n - 1].ts = fb[t].ev[fb[t].n - 2].ts;
            }
            gs_encoder_reset(&enc);
            if (gs_encode_tid(&enc, (uint32_t)(pid + t)) != GS_OK)
                die("encode tid");
            for (unsigned e = 0; e < fb[t].n; e++) {
                const gs_event *ev = &fb[t].ev[e];
                if (ev->str && !st->defined[ev->str]) {
                    if (gs_encode_string(&enc, ev->str, st->s[ev->str], strlen(st->s[ev->str])) !=
                        GS_OK)
                        die("encode string");
                    st->defined[ev->str] = 1;
                }
                if (gs_encode_event(&enc, ev) != GS_OK)
                    die("encode event");
            }
            uint8_t *fbytes = malloc(outcap);
            long flen = fbytes ? gs_frame_compress(cctx, raw, enc.len, enc.nrec, fbytes, outcap)
                               : -1;
            if (flen < 0)
                die("gs_frame_compress failed");
            if (nframes == capframes) {
                capframes *= 2;
                frames = realloc(frames, capframes * sizeof *frames);
                if (!frames)
                    die("out of memory");
            }
            frames[nframes].bytes = fbytes;
            frames[nframes].len = (size_t)flen;
            frames[nframes].ev = malloc(fb[t].n * sizeof(gs_event));
            memcpy(frames[nframes].ev, fb[t].ev, fb[t].n * sizeof(gs_event));
            frames[nframes].n = fb[t].n;
            nframes++;
            fb[t].n = 0;
        }
    }

    long bad_frame = -1; /* first frame a reader cannot read */
    for (size_t fi = 0; fi < nframes; fi++) {
        frame_out *fo = &frames[fi];
        size_t len = fo->len;
        if (damaged && o->corrupt == (long)fi) {
            size_t pos = sizeof(gs_frame_header) + (fo->len - sizeof(gs_frame_header)) / 2;
            fo->bytes[pos] ^= 0x5A;
            if (bad_frame < 0)
                bad_frame = (long)fi;
        }
        if (damaged && o->truncate && fi + 1 == nframes) {
            len = fo->len / 2;
            if (bad_frame < 0)
                bad_frame = (long)fi;
        }
        xwrite(f, fo->bytes, len);
        if (expect && !header_bad && (bad_frame < 0 || (long)fi < bad_frame)) {
            for (unsigned e = 0; e < fo->n; e++)
                expect_event(expect, &fo->ev[e], pid, (unsigned)fi, st);
        }
        if (bad_frame < 0 || (long)fi < bad_frame)
            off += fo->len;
        free(fo->bytes);
        free(fo->ev);
    }
    if (damaged && o->garbage) {
        for (unsigned long g = 0; g < o->garbage; g++) {
            uint8_t b = (uint8_t)rnd();
            xwrite(f, &b, 1);
        }
    }
    if (fclose(f) != 0)
        die("close failed");
    if (expect && (header_bad || bad_frame >= 0 || (damaged && o->garbage))) {
        struct stat sb;
        stat(path, &sb);
        uint64_t at = header_bad ? 0 : off;
        fprintf(expect, "{\"type\":\"damage\",\"pid\":%llu,\"offset\":%llu,\"unread\":%llu}\n",
                (unsigned long long)pid, (unsigned long long)at,
                (unsigned long long)((uint64_t)sb.st_size - at));
    }
    for (unsigned t = 0; t < T; t++)
        free(fb[t].ev);
    free(fb);
    free(frames);
    free(started);
    free(raw);
}

static unsigned long parse_num(const char *s, const char *what)
{
    char *end;
    errno = 0;
    unsigned long v = strtoul(s, &end, 0);
    if (errno || *end || end == s) {
        fprintf(stderr, "gs_mktrace: bad %s '%s'\n", what, s);
        exit(2);
    }
    return v;
}

int main(int argc, char **argv)
{
    static const struct option lopts[] = {
        {"procs", required_argument, NULL, 'p'},   {"events", required_argument, NULL, 'e'},
        {"threads", required_argument, NULL, 't'}, {"frame", required_argument, NULL, 'F'},
        {"kinds", required_argument, NULL, 'k'},   {"seed", required_argument, NULL, 's'},
        {"level", required_argument, NULL, 'z'},   {"host", required_argument, NULL, 'H'},
        {"unsorted", no_argument, NULL, 'U'},      {"nasty", no_argument, NULL, 'N'},
        {"truncate", no_argument, NULL, 'T'},      {"corrupt", required_argument, NULL, 'C'},
        {"garbage", required_argument, NULL, 'G'}, {"version", required_argument, NULL, 'V'},
        {"bad-magic", no_argument, NULL, 'M'},     {"damage-proc", required_argument, NULL, 'D'},
        {"expect", required_argument, NULL, 'X'},  {"file", required_argument, NULL, 'f'},
        {"help", no_argument, NULL, 'h'},          {NULL, 0, NULL, 0},
    };
    opts o = {.procs = 1, .events = 100, .threads = 1, .frame = 256, .kinds = "mix", .seed = 1,
              .level = 3, .host = "testhost", .corrupt = -1, .vmaj = -1, .damage_proc = -1};
    int c;
    while ((c = getopt_long(argc, argv, "p:e:t:F:k:s:z:h", lopts, NULL)) != -1) {
        switch (c) {
        case 'p': o.procs = (unsigned)parse_num(optarg, "count"); break;
        case 'e': o.events = (unsigned)parse_num(optarg, "count"); break;
        case 't': o.threads = (unsigned)parse_num(optarg, "count"); break;
        case 'F': o.frame = (unsigned)parse_num(optarg, "count"); break;
        case 'k': o.kinds = optarg; break;
        case 's': o.seed = parse_num(optarg, "seed"); break;
        case 'z': o.level = (int)parse_num(optarg, "level"); break;
        case 'H': o.host = optarg; break;
        case 'U': o.unsorted = 1; break;
        case 'N': o.nasty = 1; break;
        case 'T': o.truncate = 1; break;
        case 'C': o.corrupt = (long)parse_num(optarg, "frame"); break;
        case 'G': o.garbage = parse_num(optarg, "count"); break;
        case 'V':
            if (sscanf(optarg, "%d.%d", &o.vmaj, &o.vmin) != 2)
                die("--version wants MAJOR.MINOR");
            break;
        case 'M': o.bad_magic = 1; break;
        case 'D': o.damage_proc = (long)parse_num(optarg, "process index"); break;
        case 'X': o.expect = optarg; break;
        case 'f': o.file = optarg; break;
        case 'h': fputs(usage_text, stdout); return 0;
        default: fputs(usage_text, stderr); return 2;
        }
    }
    if (o.file) {
        if (optind != argc || o.procs != 1)
            die("--file writes one process and takes no OUTDIR");
    } else {
        if (optind + 1 != argc) {
            fputs(usage_text, stderr);
            return 2;
        }
        o.outdir = argv[optind];
        if (mkdir(o.outdir, 0777) != 0 && errno != EEXIST) {
            fprintf(stderr, "gs_mktrace: %s: %s\n", o.outdir, strerror(errno));
            return 2;
        }
    }
    if (o.procs == 0 || o.threads == 0 || o.frame == 0)
        die("procs, threads and frame must be at least 1");
    if ((unsigned long)o.frame * GS_EVENT_MAX_ENCODED + 4 * 4096 > GS_FRAME_RAW_MAX)
        die("frame too large");
    if (o.damage_proc < 0)
        o.damage_proc = (long)o.procs - 1;
    rng_state = o.seed * 0x9E3779B97F4A7C15ull + 1;
    unsigned nkinds;
    unsigned *kinds = parse_kinds(o.kinds, &nkinds);
    strtab st;
    strtab_build(&st, &o);
    void *cctx = gs_frame_cctx_new(o.level);
    if (!cctx)
        die("gs_frame_cctx_new failed");
    FILE *expect = NULL;
    if (o.expect && !(expect = fopen(o.expect, "w"))) {
        fprintf(stderr, "gs_mktrace: %s: %s\n", o.expect, strerror(errno));
        return 2;
    }
    for (unsigned p = 0; p < o.procs; p++) {
        char path[4096];
        if (o.file)
            snprintf(path, sizeof path, "%s", o.file);
        else
            snprintf(path, sizeof path, "%s/%s-%u.gst", o.outdir, o.host, 1000 + p);
        write_process(&o, p, path, expect, kinds, nkinds, &st, cctx);
    }
    if (expect && fclose(expect) != 0)
        die("cannot write the expect file");
    gs_frame_cctx_free(cctx);
    free(kinds);
    free(st.s);
    free(st.defined);
    return 0;
}
