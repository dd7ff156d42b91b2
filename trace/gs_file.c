/* gs_file.c — the file header (build) and frames (zstd compression, or
 * zstd raw blocks: stored) as written by the collector.
 *
 * Must never: allocate outside gs_frame_cctx_new, or write anything itself:
 * callers own the file descriptor and decide what to do when writes fail.
 */
#include <string.h>
/* for ZSTD_c_literalCompressionMode (an experimental parameter: see below) */
#define ZSTD_STATIC_LINKING_ONLY
#include <zstd.h>
#include <zstd_errors.h>

#include "gs_trace.h"

long gs_header_build(uint8_t *buf, size_t cap, const gs_proc_info *pi)
{
    const size_t host_len = pi->host ? strlen(pi->host) : 0;
    const size_t total = sizeof(gs_file_header) + host_len + pi->argv_len;
    if (total > cap)
        return GS_ERR_FULL;
    gs_file_header h;
    memset(&h, 0, sizeof h);
    memcpy(h.magic, GS_MAGIC, GS_MAGIC_LEN);
    h.byte_order = GS_BYTE_ORDER_MARK;
    h.version_major = GS_VERSION_MAJOR;
    h.version_minor = GS_VERSION_MINOR;
    h.header_size = (uint32_t)total;
    h.flags = pi->flags;
    h.pid = pi->pid;
    h.ppid = pi->ppid;
    h.mono_ns = pi->mono_ns;
    h.real_ns = pi->real_ns;
    h.rank = pi->rank;
    h.local_rank = pi->local_rank;
    h.world_size = pi->world_size;
    h.host_len = (uint32_t)host_len;
    h.argv_len = pi->argv_len;
    h.argc = pi->argc;
    h.exec_seq = pi->exec_seq;
    memcpy(buf, &h, sizeof h);
    if (host_len)
        memcpy(buf + sizeof h, pi->host, host_len);
    if (pi->argv_len)
        memcpy(buf + sizeof h + host_len, pi->argv, pi->argv_len);
    return (long)total;
}

void *gs_frame_cctx_new(int level)
{
    ZSTD_CCtx *c = ZSTD_createCCtx();
    if (!c)
        return NULL;
    if (ZSTD_isError(ZSTD_CCtx_setParameter(c, ZSTD_c_compressionLevel, level)) ||
        ZSTD_isError(ZSTD_CCtx_setParameter(c, ZSTD_c_checksumFlag, 1)) ||
        ZSTD_isError(ZSTD_CCtx_setParameter(c, ZSTD_c_contentSizeFlag, 1))) {
        ZSTD_freeCCtx(c);
        return NULL;
    }
    /* RATIONALE: Huffman-coded literals at every level. zstd turns them off
     * at its fast (negative) levels, but a trace's literals are mostly the
     * low bytes of timestamps and durations, which Huffman coding shrinks by
     * about a fifth for about 10 ns per event: on a busy read loop, level -3
     * with it writes fewer bytes than level 3, in less time
     * (docs/performance.md, "Compression level"). A libzstd that refuses the
     * parameter still writes valid frames, so its answer is ignored. */
    (void)ZSTD_CCtx_setParameter(c, ZSTD_c_literalCompressionMode, 1 /* ZSTD_ps_enable */);
    return c;
}

void gs_frame_cctx_free(void *cctx)
{
    ZSTD_freeCCtx(cctx);
}

size_t gs_frame_bound(size_t raw_len)
{
    return sizeof(gs_frame_header) + ZSTD_compressBound(raw_len);
}

long gs_frame_compress(void *cctx, const uint8_t *raw, size_t len, uint32_t nrec, uint8_t *out,
                       size_t cap)
{
    if (len > GS_FRAME_RAW_MAX || cap < sizeof(gs_frame_header))
        return GS_ERR_ARG;
    const size_t n = ZSTD_compress2(cctx, out + sizeof(gs_frame_header),
                                    cap - sizeof(gs_frame_header), raw, len);
    if (ZSTD_isError(n))
        return ZSTD_getErrorCode(n) == ZSTD_error_dstSize_tooSmall ? GS_ERR_FULL : GS_ERR_ZSTD;
    const gs_frame_header fh = {GS_FRAME_MAGIC, (uint32_t)n, (uint32_t)len, nrec};
    memcpy(out, &fh, sizeof fh);
    return (long)(sizeof fh + n);
}

/* zstd's frame format (RFC 8878): magic, a frame header descriptor
 * (Single_Segment, a 4-byte Frame_Content_Size, Content_Checksum, no
 * dictionary), the content size, raw blocks of at most 128 KiB, each after a
 * 3-byte block header (Last_Block bit 0, Block_Type 0 = raw in bits 1-2,
 * Block_Size in bits 3-23), then the low 32 bits of the content's XXH64. */
#define STORE_BLOCK_MAX (128u << 10)
#define STORE_FHD 0xA4u /* FCS_Field_Size 2 (4 bytes), Single_Segment, Content_Checksum */

static uint8_t *put_le32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        *p++ = (uint8_t)(v >> (8 * i));
    return p;
}

long gs_frame_store(const uint8_t *raw, size_t len, uint32_t nrec, uint8_t *out, size_t cap)
{
    if (len > GS_FRAME_RAW_MAX)
        return GS_ERR_ARG;
    const size_t blocks = len == 0 ? 1 : (len + STORE_BLOCK_MAX - 1) / STORE_BLOCK_MAX;
    const size_t zlen = 4 + 1 + 4 + blocks * 3 + len + 4;
    if (cap < sizeof(gs_frame_header) + zlen)
        return GS_ERR_FULL;
    const gs_frame_header fh = {GS_FRAME_MAGIC, (uint32_t)zlen, (uint32_t)len, nrec};
    memcpy(out, &fh, sizeof fh);
    uint8_t *p = put_le32(out + sizeof fh, ZSTD_MAGICNUMBER);
    *p++ = STORE_FHD;
    p = put_le32(p, (uint32_t)len);
    size_t done = 0;
    do {
        const size_t n = len - done > STORE_BLOCK_MAX ? STORE_BLOCK_MAX : len - done;
        const uint32_t bh = (uint32_t)(n << 3) | (done + n == len ? 1u : 0u);
        *p++ = (uint8_t)bh;
        *p++ = (uint8_t)(bh >> 8);
        *p++ = (uint8_t)(bh >> 16);
        memcpy(p, raw + done, n);
        p += n;
        done += n;
    } while (done < len);
    p = put_le32(p, (uint32_t)gs_xxh64(raw, len, 0));
    return (long)(p - out);
}
