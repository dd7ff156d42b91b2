/* import_unpack.c — the input files of `gpustarve import`: plain JSON,
 * gzip, xz or zstd, told apart by their first bytes (never by the file's
 * name), decompressed as a stream into the JSON reader's window.
 *
 * Responsible for: opening each input, recognising its format, streaming
 * decompression (concatenated gzip members, xz streams and zstd frames read
 * as one document), naming a format it does not read (bzip2, zip, ...) and
 * the command that unpacks it, and the progress line of a long read.
 *
 * Must never: hold more than its input buffer and the decoder's window,
 * whatever the decompressed size (a 1 GB decompression bomb costs what a
 * small file does), nor let a file's header choose a window beyond
 * UNPACK_WINDOW_MAX: such a file is refused with the command to unpack it.
 */
#include <errno.h>
#include <fcntl.h>
#include <lzma.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>
#include <zstd.h>
#include <zstd_errors.h>

#include "import.h"

/* compressed bytes read at a time */
#define UNPACK_BUF (1u << 18)
/* RATIONALE: the largest window (xz dictionary, zstd window) a file may make
 * the import keep: xz -9 (64 MiB dictionary, 65 MiB to decode) and zstd up
 * to --long=27 read, which is also zstd's own default limit. */
#define UNPACK_WINDOW_MAX (128u << 20)
#define UNPACK_ZSTD_WINDOWLOG 27 /* 2^27: UNPACK_WINDOW_MAX */
_Static_assert((1u << UNPACK_ZSTD_WINDOWLOG) == UNPACK_WINDOW_MAX, "zstd window limit");

typedef enum { FMT_PLAIN, FMT_GZIP, FMT_XZ, FMT_ZSTD } unpack_fmt;

struct ik_input {
    int fd;
    unpack_fmt fmt;
    unsigned char *buf; /* compressed bytes: buf[pos..len) not yet decoded */
    size_t pos, len;
    int eof;            /* the file has no more bytes */
    int done;           /* gzip: a member ended; xz: the streams ended */
    z_stream zs;
    lzma_stream xs;
    ZSTD_DStream *zd;
    int zframe_open;    /* zstd: inside a frame (its end not yet decoded) */
    uint64_t raw_bytes; /* bytes of the file read */
    uint64_t size;      /* of the file, for progress */
    double next_progress;
    int progress;       /* print the progress line */
    char err[320];
    const char *path;
};

/* "importing FILE: 41% (1.2 of 2.9 GB)" every 2 s. */
static void progress(ik_input *in)
{
    if (!in->progress)
        return;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    const double t = (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
    if (t < in->next_progress)
        return;
    if (in->next_progress > 0 && in->size)
        fprintf(stderr, "\rgpustarve: importing %s: %.0f%% (%.2f of %.2f GB)", in->path,
                100.0 * (double)in->raw_bytes / (double)in->size, (double)in->raw_bytes / 1e9,
                (double)in->size / 1e9);
    in->next_progress = t + 2.0;
}

static long read_fd(ik_input *in, void *buf, size_t n)
{
    progress(in);
    for (;;) {
        const ssize_t r = read(in->fd, buf, n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            snprintf(in->err, sizeof in->err, "%s: cannot read: %s", in->path, strerror(errno));
            return -1;
        }
        in->raw_bytes += (uint64_t)r;
        return (long)r;
    }
}

/* More compressed bytes once the decoder has used them all. */
static int refill(ik_input *in)
{
    if (in->pos < in->len || in->eof)
        return 0;
    const long r = read_fd(in, in->buf, UNPACK_BUF);
    if (r < 0)
        return -1;
    in->eof = r == 0;
    in->pos = 0;
    in->len = (size_t)r;
    return 0;
}

static long fail(ik_input *in, const char *what)
{
    snprintf(in->err, sizeof in->err, "%s: %s", in->path, what);
    return -1;
}

/* ---- gzip ------------------------------------------------------------------------------ */

static long gz_read(ik_input *in, char *out, size_t n)
{
    z_stream *zs = &in->zs;
    zs->next_out = (unsigned char *)out;
    zs->avail_out = (uInt)(n > (1u << 30) ? 1u << 30 : n);
    const uInt want = zs->avail_out;
    while (zs->avail_out) {
        if (refill(in) < 0)
            return -1;
        if (in->done) {
            /* another gzip member may follow (concatenated files) */
            if (in->pos == in->len)
                break;
            inflateReset(zs);
            in->done = 0;
        }
        zs->next_in = in->buf + in->pos;
        zs->avail_in = (uInt)(in->len - in->pos);
        const int zr = inflate(zs, Z_NO_FLUSH);
        in->pos = in->len - zs->avail_in;
        if (zr == Z_STREAM_END) {
            in->done = 1;
            continue;
        }
        if (zr == Z_BUF_ERROR && in->eof)
            return fail(in, "the gzip stream is truncated");
        if (zr != Z_OK && zr != Z_BUF_ERROR) {
            snprintf(in->err, sizeof in->err, "%s: not a valid gzip file (%s)", in->path,
                     zs->msg ? zs->msg : "inflate failed");
            return -1;
        }
    }
    return (long)(want - zs->avail_out);
}

/* ---- xz ---------------------------------------------------------------------------------- */

static long xz_read(ik_input *in, char *out, size_t n)
{
    lzma_stream *xs = &in->xs;
    xs->next_out = (uint8_t *)out;
    xs->avail_out = n;
    while (xs->avail_out && !in->done) {
        if (refill(in) < 0)
            return -1;
        xs->next_in = in->buf + in->pos;
        xs->avail_in = in->len - in->pos;
        /* LZMA_FINISH at the file's end: the streams must be complete */
        const lzma_ret r = lzma_code(xs, in->eof ? LZMA_FINISH : LZMA_RUN);
        in->pos = in->len - xs->avail_in;
        if (r == LZMA_STREAM_END)
            in->done = 1;
        else if (r == LZMA_BUF_ERROR)
            return fail(in, "the xz stream is truncated");
        else if (r == LZMA_MEMLIMIT_ERROR) {
            snprintf(in->err, sizeof in->err,
                     "%s: this xz file needs %llu MiB to decompress, more than the %u MiB the "
                     "import allows: unpack it with unxz first",
                     in->path, (unsigned long long)(lzma_memusage(xs) >> 20),
                     UNPACK_WINDOW_MAX >> 20);
            return -1;
        } else if (r == LZMA_MEM_ERROR)
            return fail(in, "out of memory decompressing xz");
        else if (r != LZMA_OK)
            return fail(in, r == LZMA_OPTIONS_ERROR ? "xz file with unsupported options"
                                                    : "not a valid xz file (corrupt data)");
    }
    return (long)(n - xs->avail_out);
}

/* ---- zstd -------------------------------------------------------------------------------- */

static long zstd_read(ik_input *in, char *out, size_t n)
{
    ZSTD_outBuffer o = {out, n, 0};
    while (o.pos < o.size) {
        if (refill(in) < 0)
            return -1;
        ZSTD_inBuffer i = {in->buf + in->pos, in->len - in->pos, 0};
        const size_t before = o.pos;
        const size_t r = ZSTD_decompressStream(in->zd, &o, &i);
        in->pos += i.pos;
        if (ZSTD_isError(r)) {
            if (ZSTD_getErrorCode(r) == ZSTD_error_frameParameter_windowTooLarge) {
                snprintf(in->err, sizeof in->err,
                         "%s: this zstd file was compressed with a window larger than %u MiB "
                         "(zstd --long=28 or more): unpack it with unzstd --long=31 first",
                         in->path, UNPACK_WINDOW_MAX >> 20);
                return -1;
            }
            snprintf(in->err, sizeof in->err, "%s: not a valid zstd file (%s)", in->path,
                     ZSTD_getErrorName(r));
            return -1;
        }
        /* r == 0: a frame ended and all of it was handed out (a call that
         * moved nothing says nothing: after a frame it asks for the next) */
        if (i.pos || o.pos > before)
            in->zframe_open = r != 0;
        if (in->eof && in->pos == in->len && o.pos == before) {
            if (in->zframe_open)
                return fail(in, "the zstd stream is truncated");
            break;
        }
    }
    return (long)o.pos;
}

long ik_input_read(void *src, char *buf, size_t n)
{
    ik_input *in = src;
    switch (in->fmt) {
    case FMT_GZIP:
        return gz_read(in, buf, n);
    case FMT_XZ:
        return xz_read(in, buf, n);
    case FMT_ZSTD:
        return zstd_read(in, buf, n);
    case FMT_PLAIN:
        break;
    }
    return read_fd(in, buf, n);
}

/* ---- opening: the format from the first bytes ---------------------------------------- */

/* Formats that are not read, with the command that unpacks them. */
static const struct other_fmt {
    size_t off, len;
    const char *magic, *what, *how;
} other_fmts[] = {
    {0, 3, "BZh", "bzip2-compressed", "bunzip2"},
    {0, 4, "PK\3\4", "a zip archive", "unzip"},
    {0, 6, "7z\xbc\xaf\x27\x1c", "a 7-Zip archive", "7z x"},
    {0, 4, "\x04\x22\x4d\x18", "lz4-compressed", "unlz4"},
    {0, 2, "\x1f\x9d", "compress(1)-compressed (.Z)", "uncompress"},
    {0, 4, "\x89LZO", "lzop-compressed", "lzop -d"},
    {257, 5, "ustar", "a tar archive", "tar -xf"},
};

static int start_decoder(ik_input *in)
{
    switch (in->fmt) {
    case FMT_GZIP:
        return inflateInit2(&in->zs, 16 + MAX_WBITS) == Z_OK ? 0 : -1;
    case FMT_XZ: {
        const lzma_stream init = LZMA_STREAM_INIT;
        in->xs = init;
        const lzma_ret r = lzma_stream_decoder(&in->xs, UNPACK_WINDOW_MAX, LZMA_CONCATENATED);
        return r == LZMA_OK ? 0 : -1;
    }
    case FMT_ZSTD:
        in->zd = ZSTD_createDStream();
        if (!in->zd)
            return -1;
        return ZSTD_isError(ZSTD_DCtx_setParameter(in->zd, ZSTD_d_windowLogMax,
                                                   UNPACK_ZSTD_WINDOWLOG))
                   ? -1
                   : 0;
    case FMT_PLAIN:
        break;
    }
    return 0;
}

/* The format of the file's first bytes; -1 (with the message) for one it does not read. */
static int sniff(ik_input *in)
{
    unsigned char m[262] = {0};
    const ssize_t got = pread(in->fd, m, sizeof m, 0);
    const size_t have = got > 0 ? (size_t)got : 0;
    if (have >= 2 && m[0] == 0x1f && m[1] == 0x8b)
        in->fmt = FMT_GZIP;
    else if (have >= 6 && memcmp(m, "\xfd" "7zXZ\0", 6) == 0)
        in->fmt = FMT_XZ;
    else if (have >= 4 && memcmp(m, "\x28\xb5\x2f\xfd", 4) == 0)
        in->fmt = FMT_ZSTD;
    else {
        for (size_t i = 0; i < sizeof other_fmts / sizeof other_fmts[0]; i++) {
            const struct other_fmt *o = &other_fmts[i];
            if (have >= o->off + o->len && memcmp(m + o->off, o->magic, o->len) == 0) {
                snprintf(in->err, sizeof in->err, "%s is %s: unpack it with %s first", in->path,
                         o->what, o->how);
                return -1;
            }
        }
        in->fmt = FMT_PLAIN;
    }
    return 0;
}

ik_input *ik_input_open(const char *path, int show_progress, char *err, size_t errlen)
{
    ik_input *in = calloc(1, sizeof *in);
    if (!in) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    in->path = path;
    in->progress = show_progress;
    in->fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (in->fd < 0)
        snprintf(in->err, sizeof in->err, "%s: cannot read: %s", path, strerror(errno));
    else if (fstat(in->fd, &st) == 0 && S_ISDIR(st.st_mode))
        snprintf(in->err, sizeof in->err, "%s: is a directory, not a trace file", path);
    else {
        in->size = (uint64_t)st.st_size;
        if (sniff(in) == 0 && in->fmt != FMT_PLAIN &&
            (!(in->buf = malloc(UNPACK_BUF)) || start_decoder(in) < 0))
            snprintf(in->err, sizeof in->err, "out of memory");
    }
    if (in->err[0]) {
        snprintf(err, errlen, "%s", in->err);
        ik_input_close(in);
        return NULL;
    }
    return in;
}

const char *ik_input_error(const ik_input *in)
{
    return in->err;
}

void ik_input_close(ik_input *in)
{
    if (!in)
        return;
    if (in->progress && in->next_progress > 0)
        fputs("\r\033[K", stderr); /* clear the progress line */
    if (in->fmt == FMT_GZIP)
        inflateEnd(&in->zs);
    else if (in->fmt == FMT_XZ)
        lzma_end(&in->xs);
    else if (in->fmt == FMT_ZSTD)
        ZSTD_freeDStream(in->zd);
    free(in->buf);
    if (in->fd >= 0)
        close(in->fd);
    free(in);
}
