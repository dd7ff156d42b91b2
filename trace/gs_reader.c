/* gs_reader.c — reads one trace file: header, then frame by frame, keeping
 * the string and stack tables; then what the process's live file (gs_live.h)
 * holds that the trace file lacks (a process that crashed or was killed),
 * and records that say how it ended and how many events were dropped or
 * lost. Stops at the first damaged or incomplete frame and says where and
 * how much could not be read.
 *
 * Must never: trust an id, size or count from the file without bounding it
 * (ids index hash tables, never arrays sized by the id; memory and time stay
 * proportional to the bytes read), or go past a damaged frame (later frames
 * may decode, but their strings and deltas can no longer be trusted).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

#include "gs_idmap.h"
#include "gs_recover.h"
#include "gs_trace.h"

/* RATIONALE: a header holds host and argv; 1 MiB is far above any real argv
 * (ARG_MAX is 2 MiB but nobody traces such a command) and bounds garbage. */
#define HEADER_MAX (1u << 20)

enum { PH_FRAMES, PH_RECOVER, PH_TAIL, PH_DONE };

struct gs_reader {
    int fd;
    uint64_t size;
    uint64_t off; /* start of the next (or failing) frame */
    int failed;
    gs_proc_info info;
    char *host;
    char *argv;
    char *live_path;
    ZSTD_DCtx *dctx;
    uint8_t *comp;
    size_t comp_cap;
    uint8_t *raw;
    gs_event *events;
    size_t events_cap;
    uint32_t tid;
    gs_decoder dec;      /* the current frame's decoding state */
    int in_frame;        /* dec holds records not yet returned */
    uint64_t frame_end;  /* offset after the current frame */
    gs_strtab strings;   /* id -> NUL-terminated copy */
    gs_idmap stacks;     /* id -> [0] = frame count, then the frames */
    uint32_t stacks_max;
    uint32_t string_max;
    /* what the events said so far, and the end */
    gs_reader_totals tot;
    uint64_t file_dropped, file_lost; /* largest DROPS counts in the file */
    uint64_t last_ts;
    int saw_exit, saw_exec;
    int phase;
    int frames_rc; /* how the frames ended: 0 or a gs_err */
    int torn;      /* the last frame was being written when the process died */
    gs_recovery *rec;
    int live_rc;          /* 0, or GS_ERR_LIVE: the live file could not be read (live_why) */
    char live_why[384];
    gs_event tail_ev[4];
    size_t ntail;
};

static int read_full(int fd, void *buf, size_t n, uint64_t off, size_t *got)
{
    size_t done = 0;
    while (done < n) {
        ssize_t r = pread(fd, (char *)buf + done, n - done, (off_t)(off + done));
        if (r < 0) {
            if (errno == EINTR)
                continue;
            return GS_ERR_IO;
        }
        if (r == 0)
            break;
        done += (size_t)r;
    }
    *got = done;
    return GS_OK;
}

static int parse_header(gs_reader *r)
{
    gs_file_header h;
    size_t got;
    if (read_full(r->fd, &h, sizeof h, 0, &got) < 0)
        return GS_ERR_IO;
    if (got >= GS_MAGIC_LEN && memcmp(h.magic, GS_MAGIC, GS_MAGIC_LEN) != 0)
        return GS_ERR_MAGIC;
    if (got < sizeof h)
        return got < GS_MAGIC_LEN ? GS_ERR_MAGIC : GS_ERR_TRUNCATED;
    if (h.byte_order != GS_BYTE_ORDER_MARK)
        return GS_ERR_MAGIC;
    r->info.version_major = h.version_major;
    r->info.version_minor = h.version_minor;
    if (h.version_major != GS_VERSION_MAJOR)
        return GS_ERR_VERSION;
    if (h.header_size > HEADER_MAX || h.host_len > HEADER_MAX || h.argv_len > HEADER_MAX ||
        h.header_size < sizeof h + (uint64_t)h.host_len + h.argv_len)
        return GS_ERR_CORRUPT;
    if (h.header_size > r->size)
        return GS_ERR_TRUNCATED;
    r->host = calloc(1, (size_t)h.host_len + 1);
    r->argv = calloc(1, (size_t)h.argv_len + 1);
    if (!r->host || !r->argv)
        return GS_ERR_NOMEM;
    if (read_full(r->fd, r->host, h.host_len, sizeof h, &got) < 0 || got != h.host_len)
        return GS_ERR_IO;
    if (read_full(r->fd, r->argv, h.argv_len, sizeof h + h.host_len, &got) < 0 ||
        got != h.argv_len)
        return GS_ERR_IO;
    /* argc must match the NUL-terminated strings present */
    uint32_t n = 0;
    for (uint32_t i = 0; i < h.argv_len; i++)
        n += r->argv[i] == '\0';
    if (n != h.argc || (h.argv_len && r->argv[h.argv_len - 1] != '\0'))
        return GS_ERR_CORRUPT;
    gs_proc_info *pi = &r->info;
    pi->pid = h.pid;
    pi->ppid = h.ppid;
    pi->mono_ns = h.mono_ns;
    pi->real_ns = h.real_ns;
    pi->rank = h.rank;
    pi->local_rank = h.local_rank;
    pi->world_size = h.world_size;
    pi->flags = h.flags;
    pi->exec_seq = h.exec_seq;
    pi->host = r->host;
    pi->argc = h.argc;
    pi->argv = r->argv;
    pi->argv_len = h.argv_len;
    r->off = h.header_size;
    return GS_OK;
}

int gs_reader_open(gs_reader **out, const char *path)
{
    *out = NULL;
    gs_reader *r = calloc(1, sizeof *r);
    if (!r)
        return GS_ERR_NOMEM;
    r->fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (r->fd < 0) {
        free(r);
        return GS_ERR_IO;
    }
    struct stat st;
    if (fstat(r->fd, &st) < 0) {
        gs_reader_close(r);
        return GS_ERR_IO;
    }
    if (!S_ISREG(st.st_mode)) {
        gs_reader_close(r);
        errno = S_ISDIR(st.st_mode) ? EISDIR : EINVAL;
        return GS_ERR_IO;
    }
    r->size = (uint64_t)st.st_size;
    int err = parse_header(r);
    if (err < 0) {
        int saved = errno;
        gs_reader_close(r);
        errno = saved;
        return err;
    }
    /* the live file of this image, if the process left one: <name>.live */
    const size_t pl = strlen(path), ns = sizeof GS_TRACE_SUFFIX - 1;
    if (pl > ns && strcmp(path + pl - ns, GS_TRACE_SUFFIX) == 0 &&
        (r->live_path = malloc(pl - ns + sizeof GS_LIVE_SUFFIX))) {
        memcpy(r->live_path, path, pl - ns);
        memcpy(r->live_path + pl - ns, GS_LIVE_SUFFIX, sizeof GS_LIVE_SUFFIX);
    }
    *out = r;
    return GS_OK;
}

void gs_reader_close(gs_reader *r)
{
    if (!r)
        return;
    if (r->fd >= 0)
        close(r->fd);
    gs_strtab_free(&r->strings);
    gs_idmap_free(&r->stacks, 1);
    gs_recovery_close(r->rec);
    free(r->live_path);
    free(r->host);
    free(r->argv);
    free(r->comp);
    free(r->raw);
    free(r->events);
    ZSTD_freeDCtx(r->dctx);
    free(r);
}

const gs_proc_info *gs_reader_info(const gs_reader *r)
{
    return &r->info;
}

static void keep_string(void *ctx, uint32_t id, const char *s, size_t len)
{
    gs_reader *r = ctx;
    if (id == 0 || len > GS_STRING_MAX || gs_strtab_put(&r->strings, id, s, len) != 0)
        return;
    if (id > r->string_max)
        r->string_max = id;
}

/* A string of the live file's log: only where the trace file has none. */
static void keep_live_string(void *ctx, uint32_t id, const char *s, size_t len)
{
    gs_reader *r = ctx;
    if (!gs_strtab_get(&r->strings, id))
        keep_string(ctx, id, s, len);
}

static void keep_stack(void *ctx, uint32_t id, const uint64_t *frames, size_t n)
{
    gs_reader *r = ctx;
    if (id == 0 || n > GS_STACK_FRAMES_MAX)
        return;
    uint64_t *copy = malloc((n + 1) * sizeof *copy);
    if (!copy)
        return;
    copy[0] = n;
    memcpy(copy + 1, frames, n * sizeof *frames);
    void *old;
    if (gs_idmap_put(&r->stacks, id, copy, &old) != 0) {
        free(copy);
        return;
    }
    free(old);
    if (id > r->stacks_max)
        r->stacks_max = id;
}

const uint64_t *gs_reader_stack(const gs_reader *r, uint32_t id, size_t *n)
{
    const uint64_t *s = id ? gs_idmap_get(&r->stacks, id) : NULL;
    if (n)
        *n = s ? (size_t)s[0] : 0;
    return s ? s + 1 : NULL;
}

uint32_t gs_reader_stack_count(const gs_reader *r)
{
    return r->stacks_max;
}

static int fail(gs_reader *r, int err)
{
    r->failed = err;
    return err;
}

/* Read, check and decompress the frame at r->off into r->raw; set up the
 * decoder. 1 on success, 0 at a clean end of file, or a negative gs_err. */
static int load_frame(gs_reader *r)
{
    if (r->failed)
        return r->failed;
    if (r->off == r->size)
        return 0;
    gs_frame_header fh;
    size_t got;
    if (read_full(r->fd, &fh, sizeof fh, r->off, &got) < 0)
        return fail(r, GS_ERR_IO);
    if (got < sizeof fh)
        return fail(r, GS_ERR_TRUNCATED);
    if (fh.magic != GS_FRAME_MAGIC || fh.raw_size > GS_FRAME_RAW_MAX ||
        fh.comp_size > ZSTD_compressBound(GS_FRAME_RAW_MAX) || fh.nrec > fh.raw_size)
        return fail(r, GS_ERR_CORRUPT);
    if (r->off + sizeof fh + fh.comp_size > r->size)
        return fail(r, GS_ERR_TRUNCATED);
    if (!r->dctx && !(r->dctx = ZSTD_createDCtx()))
        return fail(r, GS_ERR_NOMEM);
    if (!r->raw && !(r->raw = malloc(GS_FRAME_RAW_MAX)))
        return fail(r, GS_ERR_NOMEM);
    if (fh.comp_size > r->comp_cap) {
        uint8_t *c = realloc(r->comp, fh.comp_size);
        if (!c)
            return fail(r, GS_ERR_NOMEM);
        r->comp = c;
        r->comp_cap = fh.comp_size;
    }
    if (read_full(r->fd, r->comp, fh.comp_size, r->off + sizeof fh, &got) < 0)
        return fail(r, GS_ERR_IO);
    if (got != fh.comp_size)
        return fail(r, GS_ERR_TRUNCATED);
    const size_t dn = ZSTD_decompressDCtx(r->dctx, r->raw, GS_FRAME_RAW_MAX, r->comp, fh.comp_size);
    if (ZSTD_isError(dn) || dn != fh.raw_size)
        return fail(r, GS_ERR_CORRUPT);
    gs_decoder_init(&r->dec, r->raw, dn, fh.nrec);
    r->frame_end = r->off + sizeof fh + fh.comp_size;
    r->in_frame = 1;
    return 1;
}

/* Each batch of events handed out, in one pass: ends clamped (RATIONALE:
 * every reader computes ts + dur; an event whose end would wrap past 2^64,
 * which only a damaged or hostile file has, ends at 2^64 - 1), and what the
 * trace itself says about drops, losses and the end. */
static void account(gs_reader *r, gs_event *ev, size_t n, int recovered)
{
    r->tot.events += n;
    if (recovered)
        r->tot.recovered += n;
    uint64_t last_ts = r->last_ts; /* a local: ev[] could alias it */
    for (size_t i = 0; i < n; i++) {
        gs_event *e = &ev[i];
        if (e->ts + e->dur < e->ts)
            e->dur = UINT64_MAX - e->ts;
        if (e->ts + e->dur > last_ts)
            last_ts = e->ts + e->dur;
        if (e->kind > GS_K_EXIT && e->kind != GS_K_GPU_DROPS)
            continue;
        switch (e->kind) {
        case GS_K_DROPS:
            if (e->aux > r->file_dropped)
                r->file_dropped = e->aux;
            if (e->aux2 > r->file_lost)
                r->file_lost = e->aux2;
            break;
        case GS_K_GPU_DROPS:
            if (e->aux > r->tot.gpu_dropped)
                r->tot.gpu_dropped = e->aux;
            break;
        case GS_K_EXIT:
            r->saw_exit = 1;
            r->tot.ended = GS_END_EXIT;
            break;
        case GS_K_EXEC:
            if (e->ret == 0) {
                r->saw_exec = 1;
                r->tot.ended = GS_END_EXEC;
            }
            break;
        }
    }
    r->last_ts = last_ts;
    r->tot.dropped = r->file_dropped;
    r->tot.lost = r->file_lost;
}

/* Records of the failing frame and of every frame after it that can still
 * be told apart by its header: what damage cost. Bounded: each step moves
 * on by at least a frame header. */
static uint64_t count_damaged(const gs_reader *r)
{
    uint64_t recs = 0, off = r->off;
    for (int first = 1; off + sizeof(gs_frame_header) <= r->size; first = 0) {
        gs_frame_header fh;
        size_t got;
        if (read_full(r->fd, &fh, sizeof fh, off, &got) < 0 || got < sizeof fh ||
            fh.magic != GS_FRAME_MAGIC || fh.raw_size > GS_FRAME_RAW_MAX || fh.nrec > fh.raw_size)
            break;
        if (!first && off + sizeof fh + fh.comp_size > r->size)
            break;
        recs += fh.nrec;
        off += sizeof fh + fh.comp_size;
    }
    return recs;
}

static int stack_defined(void *ctx, uint32_t id)
{
    return gs_idmap_get(&((gs_reader *)ctx)->stacks, id) != NULL;
}

/* A record the reader makes at the end (tid = pid). */
static gs_event *tail_event(gs_reader *r, unsigned kind, uint64_t ts)
{
    gs_event *e = &r->tail_ev[r->ntail++];
    gs_event_clear(e);
    e->kind = (uint16_t)kind;
    e->ts = ts;
    e->tid = (uint32_t)r->info.pid;
    return e;
}

static void tail_note(gs_reader *r, uint64_t ts, unsigned code, const char *text)
{
    const uint32_t id = r->string_max + 1;
    if (id == 0)
        return;
    keep_string(r, id, text, strlen(text));
    gs_event *e = tail_event(r, GS_K_NOTE, ts);
    e->str = id;
    e->aux = code;
}

/* The live file could not be read, whole or in part: said, counted, and
 * the reader's last word (RATIONALE: it once said "0 dropped, 0 lost" of a
 * live file of a newer version, and every recovered event was missing). */
static void live_damaged(gs_reader *r, const char *why)
{
    if (r->live_rc)
        return;
    const char *name = strrchr(r->live_path, '/');
    snprintf(r->live_why, sizeof r->live_why, "%s: %s; the events it held are missing",
             name ? name + 1 : r->live_path, why);
    r->live_rc = GS_ERR_LIVE;
    r->tot.live_damaged = 1;
}

/* After the frames: open the live file, if any, and take its strings. */
static void start_recovery(gs_reader *r)
{
    r->phase = PH_TAIL;
    if (!r->live_path)
        return;
    gs_recovery *rc = NULL;
    char why[256];
    const int o = gs_recovery_open(&rc, r->live_path, r->info.pid, r->info.exec_seq, r->size,
                                   why, sizeof why);
    if (o < 0)
        live_damaged(r, o == GS_ERR_IO ? strerror(errno) : why);
    if (o <= 0)
        return;
    r->rec = rc;
    const int s = gs_recovery_strings(rc, keep_live_string, r);
    if (s < 0)
        live_damaged(r, s == GS_ERR_IO ? "a read error in its string log"
                                       : "its string log is damaged (names after that point are "
                                         "missing)");
    r->phase = PH_RECOVER;
}

/* The note's words for a frame cut short by the death (torn_in_flight). */
static void add_torn(const gs_reader *r, char *text, size_t cap)
{
    const size_t n = strlen(text);
    if (r->torn && n < cap)
        snprintf(text + n, cap - n, "; the frame it was writing when it died was cut short, "
                                    "its events are among those recovered");
}

/* After the last recovered record: the records that say how it ended and
 * what was dropped or lost, where the file itself does not say it. */
static void finish(gs_reader *r)
{
    uint64_t dropped = r->file_dropped, lost = r->file_lost;
    const uint64_t ts = r->last_ts;
    if (r->rec) {
        const gs_live_header *h = gs_recovery_header(r->rec);
        const uint64_t d = h->dropped_base + gs_recovery_slots_dropped(r->rec);
        if (d > dropped)
            dropped = d;
        if (h->lost > lost)
            lost = h->lost;
        lost += gs_recovery_skipped(r->rec);
        const uint64_t end_ts = h->end_ts > ts ? h->end_ts : ts;
        char text[384];
        const unsigned long long rec = (unsigned long long)r->tot.recovered;
        if (!r->saw_exit && !r->saw_exec && h->end == GS_LIVE_SIGNAL) {
            const char *abbrev = sigabbrev_np((int)h->end_status);
            snprintf(text, sizeof text,
                     "the process died of signal %u (SIG%s: a crash or an abort); %llu events "
                     "recovered from its live file",
                     h->end_status, abbrev ? abbrev : "?", rec);
            add_torn(r, text, sizeof text);
            tail_note(r, end_ts, GS_NOTE_ABRUPT, text);
            gs_event *e = tail_event(r, GS_K_EXIT, end_ts);
            e->aux = h->end_status;
            e->aux2 = GS_EXIT_HOW_SIGNAL;
            r->tot.ended = GS_END_SIGNAL;
        } else if (!r->saw_exit && !r->saw_exec && h->end == GS_LIVE_EXITED) {
            snprintf(text, sizeof text,
                     "the exit record is missing from the trace file (its output failed); "
                     "%llu events recovered from its live file", rec);
            add_torn(r, text, sizeof text);
            tail_note(r, end_ts, GS_NOTE_ABRUPT, text);
            gs_event *e = tail_event(r, GS_K_EXIT, end_ts);
            e->aux = h->end_status;
            r->tot.ended = GS_END_EXIT;
        } else if (!r->saw_exit && !r->saw_exec && h->end == GS_LIVE_RUNNING) {
            snprintf(text, sizeof text,
                     "no exit record: the process was killed by a signal the collector cannot "
                     "catch (SIGKILL) or does not (SIGPIPE, SIGUSR1, ...), or was still running "
                     "when read; %llu events recovered from its live file", rec);
            add_torn(r, text, sizeof text);
            tail_note(r, ts, GS_NOTE_ABRUPT, text);
            r->tot.ended = GS_END_ABRUPT;
        } else if (rec) {
            snprintf(text, sizeof text, "%llu events recovered from the live file", rec);
            add_torn(r, text, sizeof text);
            tail_note(r, ts, GS_NOTE_ABRUPT, text);
        }
    }
    /* frames that could not be read; a truncated last frame's records are
     * still in the live file (its rings' tails had not moved), not lost */
    if (r->frames_rc < 0 && !(r->frames_rc == GS_ERR_TRUNCATED && r->rec)) {
        r->tot.damaged_records = count_damaged(r);
        lost += r->tot.damaged_records;
    }
    if (dropped != r->file_dropped || lost != r->file_lost) {
        gs_event *e = tail_event(r, GS_K_DROPS, ts);
        e->aux = dropped;
        e->aux2 = lost;
    }
    r->tot.events += r->ntail;
    r->tot.dropped = dropped;
    r->tot.lost = lost;
    r->phase = PH_DONE;
}

/* Decode up to max events of the current frame into buf; closes the frame
 * when its records are done. */
static int decode(gs_reader *r, gs_event *buf, size_t max, const gs_event **events, size_t *n)
{
    const long nev = gs_decode_some(&r->dec, buf, max, &r->tid, keep_string, keep_stack, r);
    if (nev < 0)
        return fail(r, (int)nev);
    if (r->dec.left == 0) {
        r->in_frame = 0;
        r->off = r->frame_end;
    }
    *events = buf;
    *n = (size_t)nev;
    return 1;
}

/* Grow the event buffer to at least want entries. */
static int reserve(gs_reader *r, size_t want)
{
    if (r->events_cap >= want)
        return 0;
    size_t cap = r->events_cap ? r->events_cap : GS_READ_BATCH;
    while (cap < want)
        cap *= 2;
    gs_event *e = realloc(r->events, cap * sizeof *e);
    if (!e)
        return -1;
    r->events = e;
    r->events_cap = cap;
    return 0;
}

/* RATIONALE: a process killed while the writer wrote a frame leaves that
 * frame cut short at the end of its trace file. The live file says so: its
 * pend_end (where the frame would have ended) is past the file's end, and
 * the frame starts before it; the rings' tails had not moved, so every
 * record of that frame is recovered from them. That is not damage, and
 * nothing is lost. */
static int torn_in_flight(gs_reader *r)
{
    if (!r->rec)
        return 0;
    const gs_live_header *h = gs_recovery_header(r->rec);
    const uint64_t pend_end = h->pend_end;
    if (pend_end == 0 || r->size >= pend_end || r->off >= pend_end)
        return 0;
    gs_frame_header fh;
    size_t got = 0;
    if (read_full(r->fd, &fh, sizeof fh, r->off, &got) < 0)
        return 0;
    /* a whole header must say the frame is the one in flight */
    return got < sizeof fh || r->off + sizeof fh + fh.comp_size == pend_end;
}

/* The frames are done (rc 0) or failed (rc < 0): the live file and the
 * closing records next, then rc. */
static int after_frames(gs_reader *r, int rc, const gs_event **events, size_t *n)
{
    if (r->phase == PH_FRAMES) {
        r->frames_rc = rc;
        start_recovery(r);
        if (rc == GS_ERR_TRUNCATED && torn_in_flight(r)) {
            r->frames_rc = 0;
            r->torn = 1;
        }
    }
    if (r->phase == PH_RECOVER) {
        if (reserve(r, GS_READ_BATCH) != 0)
            return fail(r, GS_ERR_NOMEM);
        const gs_recovery_stacks stk = {stack_defined, r};
        const long got = gs_recovery_next(r->rec, r->events, GS_READ_BATCH, &stk);
        if (got < 0)
            live_damaged(r, "a read error in its rings");
        if (got > 0) {
            account(r, r->events, (size_t)got, 1);
            *events = r->events;
            *n = (size_t)got;
            return 1;
        }
        r->phase = PH_TAIL;
    }
    if (r->phase == PH_TAIL) {
        finish(r);
        if (r->ntail) {
            *events = r->tail_ev;
            *n = r->ntail;
            return 1;
        }
    }
    return r->frames_rc < 0 ? r->frames_rc : r->live_rc;
}

int gs_reader_next_frame(gs_reader *r, const gs_event **events, size_t *n)
{
    *events = NULL;
    *n = 0;
    if (r->phase != PH_FRAMES)
        return after_frames(r, 0, events, n);
    if (!r->in_frame) {
        const int rc = load_frame(r);
        if (rc <= 0)
            return after_frames(r, rc, events, n);
    }
    /* RATIONALE: the buffer grows with the events the frame really holds,
     * never with its header's claim: nrec from a hostile file allocates
     * nothing. */
    size_t have = 0;
    while (r->in_frame) {
        if (reserve(r, have + GS_READ_BATCH) != 0)
            return fail(r, GS_ERR_NOMEM);
        const gs_event *got;
        size_t k = 0;
        const int rc = decode(r, r->events + have, GS_READ_BATCH, &got, &k);
        if (rc < 0)
            return after_frames(r, rc, events, n);
        have += k;
    }
    account(r, r->events, have, 0);
    *events = r->events;
    *n = have;
    return 1;
}

int gs_reader_next_batch(gs_reader *r, const gs_event **events, size_t *n)
{
    *events = NULL;
    *n = 0;
    if (r->phase != PH_FRAMES)
        return after_frames(r, 0, events, n);
    if (!r->in_frame) {
        const int rc = load_frame(r);
        if (rc <= 0)
            return after_frames(r, rc, events, n);
    }
    if (reserve(r, GS_READ_BATCH) != 0)
        return fail(r, GS_ERR_NOMEM);
    const int rc = decode(r, r->events, GS_READ_BATCH, events, n);
    if (rc < 0)
        return after_frames(r, rc, events, n);
    account(r, r->events, *n, 0); /* decode handed out r->events */
    return 1;
}

int gs_reader_recovering(const gs_reader *r)
{
    return r->phase != PH_FRAMES;
}

void gs_reader_get_totals(const gs_reader *r, gs_reader_totals *t)
{
    *t = r->tot;
}

const char *gs_reader_live_problem(const gs_reader *r)
{
    return r->live_rc ? r->live_why : NULL;
}

const char *gs_reader_string(const gs_reader *r, uint32_t id)
{
    return id ? gs_strtab_get(&r->strings, id) : NULL;
}

uint64_t gs_reader_offset(const gs_reader *r)
{
    return r->off;
}

uint64_t gs_reader_unread(const gs_reader *r)
{
    return r->size - r->off;
}

uint64_t gs_reader_file_size(const gs_reader *r)
{
    return r->size;
}
