/* gs_file.c — the file header (build) and frames (zstd compression) as
 * written by the collector.
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
