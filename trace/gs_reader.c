/* gs_reader.c — reads one trace file: header, then frame by frame, keeping
 * the string table. Stops at the first damaged or incomplete frame and says
 * where and how much could not be read.
 *
 * Must never: trust sizes from the file without bounding them, or go past a
 * damaged frame (later frames may decode, but their strings and deltas can no
 * longer be trusted).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

#include "gs_trace.h"

/* RATIONALE: a header holds host and argv; 1 MiB is far above any real argv
 * (ARG_MAX is 2 MiB but nobody traces such a command) and bounds garbage. */
#define HEADER_MAX (1u << 20)

struct gs_reader {
    int fd;
    uint64_t size;
    uint64_t off; /* start of the next (or failing) frame */
    int failed;
    gs_proc_info info;
    char *host;
    char *argv;
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
    char **strings; /* by id */
    uint32_t strings_cap;
    uint64_t **stacks; /* by id: [0] = frame count, then the frames */
    uint32_t stacks_cap;
    uint32_t stacks_max;
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
    r->fd = open(path, O_RDONLY | O_CLOEXEC);
    if (r->fd < 0) {
        free(r);
        return GS_ERR_IO;
    }
    struct stat st;
    if (fstat(r->fd, &st) < 0) {
        gs_reader_close(r);
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
    *out = r;
    return GS_OK;
}

void gs_reader_close(gs_reader *r)
{
    if (!r)
        return;
    if (r->fd >= 0)
        close(r->fd);
    for (uint32_t i = 0; i < r->strings_cap; i++)
        free(r->strings[i]);
    free(r->strings);
    for (uint32_t i = 0; i < r->stacks_cap; i++)
        free(r->stacks[i]);
    free(r->stacks);
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
    if (id >= r->strings_cap) {
        uint32_t cap = r->strings_cap ? r->strings_cap : 256;
        while (cap <= id && cap < (1u << 30))
            cap *= 2;
        if (cap <= id)
            return;
        char **n = realloc(r->strings, cap * sizeof *n);
        if (!n)
            return;
        memset(n + r->strings_cap, 0, (cap - r->strings_cap) * sizeof *n);
        r->strings = n;
        r->strings_cap = cap;
    }
    char *copy = malloc(len + 1);
    if (!copy)
        return;
    memcpy(copy, s, len);
    copy[len] = '\0';
    free(r->strings[id]);
    r->strings[id] = copy;
}

/* RATIONALE: stack ids are dense from 1 (the collector caps them at 2^15);
 * a larger id from a damaged or foreign writer is dropped, not allocated. */
#define STACK_IDS_MAX (1u << 24)

static void keep_stack(void *ctx, uint32_t id, const uint64_t *frames, size_t n)
{
    gs_reader *r = ctx;
    if (id >= STACK_IDS_MAX)
        return;
    if (id >= r->stacks_cap) {
        uint32_t cap = r->stacks_cap ? r->stacks_cap : 256;
        while (cap <= id)
            cap *= 2;
        uint64_t **s = realloc(r->stacks, cap * sizeof *s);
        if (!s)
            return;
        memset(s + r->stacks_cap, 0, (cap - r->stacks_cap) * sizeof *s);
        r->stacks = s;
        r->stacks_cap = cap;
    }
    uint64_t *copy = malloc((n + 1) * sizeof *copy);
    if (!copy)
        return;
    copy[0] = n;
    memcpy(copy + 1, frames, n * sizeof *frames);
    free(r->stacks[id]);
    r->stacks[id] = copy;
    if (id > r->stacks_max)
        r->stacks_max = id;
}

const uint64_t *gs_reader_stack(const gs_reader *r, uint32_t id, size_t *n)
{
    if (id >= r->stacks_cap || !r->stacks[id]) {
        if (n)
            *n = 0;
        return NULL;
    }
    if (n)
        *n = (size_t)r->stacks[id][0];
    return r->stacks[id] + 1;
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

int gs_reader_next_frame(gs_reader *r, const gs_event **events, size_t *n)
{
    *events = NULL;
    *n = 0;
    if (!r->in_frame) {
        const int rc = load_frame(r);
        if (rc <= 0)
            return rc;
    }
    if (r->dec.left > r->events_cap) {
        gs_event *e = realloc(r->events, (size_t)r->dec.left * sizeof *e);
        if (!e)
            return fail(r, GS_ERR_NOMEM);
        r->events = e;
        r->events_cap = r->dec.left;
    }
    return decode(r, r->events, r->events_cap ? r->events_cap : 1, events, n);
}

int gs_reader_next_batch(gs_reader *r, const gs_event **events, size_t *n)
{
    *events = NULL;
    *n = 0;
    if (!r->in_frame) {
        const int rc = load_frame(r);
        if (rc <= 0)
            return rc;
    }
    if (r->events_cap < GS_READ_BATCH) {
        gs_event *e = realloc(r->events, GS_READ_BATCH * sizeof *e);
        if (!e)
            return fail(r, GS_ERR_NOMEM);
        r->events = e;
        r->events_cap = GS_READ_BATCH;
    }
    return decode(r, r->events, GS_READ_BATCH, events, n);
}

const char *gs_reader_string(const gs_reader *r, uint32_t id)
{
    return id < r->strings_cap ? r->strings[id] : NULL;
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
