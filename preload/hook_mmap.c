/* hook_mmap.c — mmap, mmap64 and munmap of files.
 *
 * Responsible for: recording file-backed mappings (numpy memmap, Arrow,
 * safetensors) and the munmap of ranges we saw mapped, through the
 * lock-free mapping table in gs_fdtable.c.
 *
 * Must never: do any bookkeeping for anonymous mappings (MAP_ANONYMOUS or
 * fd < 0 pass straight through first: malloc and thread stacks live here),
 * lock, allocate, or change the result or errno.
 */
#include <errno.h>
#include <sys/mman.h>

#include "gs_fdtable.h"
#include "gs_preload.h"
#include "gs_real.h"
#include "gs_stacks.h"

/* Everything defined below that is not static is a hook: exported (the
 * version script in libgpustarve.map lists the names). */
#pragma GCC visibility push(default)

static void record_mmap(uint16_t kind, uint64_t t0, void *ret, size_t len, int prot, int flags,
                        int fd, int64_t off, const void *caller)
{
    gs_rec r = GS_REC_INIT(kind, t0);
    r.dur = gs_now() - t0;
    gs_fd_describe(fd, &r);
    r.bytes = len;
    r.ret = (ret == MAP_FAILED) ? -1 : (int64_t)(uintptr_t)ret;
    r.offset = off;
    r.aux = (uint64_t)(uint32_t)prot;
    r.aux2 = (uint32_t)flags;
    if (ret != MAP_FAILED)
        gs_map_add((uintptr_t)ret, len, fd, r.str, r.fd_kind);
    r.stack = gs_stack_take(caller); /* after dur: the unwind is not the call's time */
    gs_emit(&r);
}

void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
    if (!GS_RESOLVED(mmap)) {
        errno = ENOSYS;
        return MAP_FAILED;
    }
    gs_safe_point();
    if ((flags & MAP_ANONYMOUS) || fd < 0 || !gs_enter())
        return gs_real.mmap(addr, len, prot, flags, fd, off);
    uint64_t t0 = gs_now();
    void *ret = gs_real.mmap(addr, len, prot, flags, fd, off);
    int err = errno;
    record_mmap(GS_K_MMAP, t0, ret, len, prot, flags, fd, off, GS_CALLER());
    gs_leave();
    errno = err;
    return ret;
}

void *mmap64(void *addr, size_t len, int prot, int flags, int fd, off64_t off)
{
    if (!GS_RESOLVED(mmap64)) {
        errno = ENOSYS;
        return MAP_FAILED;
    }
    gs_safe_point();
    if ((flags & MAP_ANONYMOUS) || fd < 0 || !gs_enter())
        return gs_real.mmap64(addr, len, prot, flags, fd, off);
    uint64_t t0 = gs_now();
    void *ret = gs_real.mmap64(addr, len, prot, flags, fd, off);
    int err = errno;
    record_mmap(GS_K_MMAP64, t0, ret, len, prot, flags, fd, off, GS_CALLER());
    gs_leave();
    errno = err;
    return ret;
}

int munmap(void *addr, size_t len)
{
    if (!GS_RESOLVED(munmap)) {
        errno = ENOSYS;
        return -1;
    }
    gs_safe_point();
    if (!gs_enter())
        return gs_real.munmap(addr, len);
    int fd = -1;
    uint32_t str = 0;
    unsigned kind = GS_FDK_UNKNOWN;
    if (!gs_map_take((uintptr_t)addr, &fd, &str, &kind)) {
        gs_leave();
        return gs_real.munmap(addr, len);
    }
    uint64_t t0 = gs_now();
    int ret = gs_real.munmap(addr, len);
    int err = errno;
    gs_rec r = GS_REC_INIT(GS_K_MUNMAP, t0);
    r.dur = gs_now() - t0;
    r.fd = fd;
    r.fd_kind = (uint8_t)kind;
    r.str = str;
    r.bytes = len;
    r.aux = (uint64_t)(uintptr_t)addr;
    r.ret = ret;
    gs_emit(&r);
    gs_leave();
    errno = err;
    return ret;
}
