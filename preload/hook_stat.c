/* hook_stat.c — the stat family: stat, stat64, lstat, lstat64, fstat,
 * fstat64, fstatat, fstatat64, statx and the pre-2.33 glibc entry points
 * __xstat, __xstat64, __lxstat, __lxstat64, __fxstat, __fxstat64,
 * __fxstatat, __fxstatat64 (programs built against older glibc import
 * those; every exported name is hooked on its own).
 *
 * Responsible for: recording metadata calls (they dominate small-file
 * datasets) with the path, or the fd's kind and path.
 *
 * Must never: change the result, the stat buffer or errno; record while the
 * guard is held.
 */
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>

#include "gs_fdtable.h"
#include "gs_preload.h"
#include "gs_real.h"
#include "gs_stacks.h"
#include "gs_strings.h"

/* Everything defined below that is not static is a hook: exported (the
 * version script in libgpustarve.map lists the names). */
#pragma GCC visibility push(default)

/* Not declared by glibc >= 2.33 headers; still exported for old binaries. */
int __xstat(int ver, const char *path, struct stat *buf);
int __xstat64(int ver, const char *path, struct stat64 *buf);
int __lxstat(int ver, const char *path, struct stat *buf);
int __lxstat64(int ver, const char *path, struct stat64 *buf);
int __fxstat(int ver, int fd, struct stat *buf);
int __fxstat64(int ver, int fd, struct stat64 *buf);
int __fxstatat(int ver, int dirfd, const char *path, struct stat *buf, int flags);
int __fxstatat64(int ver, int dirfd, const char *path, struct stat64 *buf, int flags);

static void record_path(uint16_t kind, uint64_t t0, int ret, int err, const char *path,
                        const void *caller)
{
    gs_rec r = GS_REC_INIT(kind, t0);
    r.dur = gs_now() - t0;
    r.ret = ret;
    r.str = gs_str_path_safe(path, ret, err);
    r.stack = gs_stack_take(caller); /* after dur: the unwind is not the call's time */
    gs_emit(&r);
}

static void record_fd(uint16_t kind, uint64_t t0, int ret, int fd, const void *caller)
{
    gs_rec r = GS_REC_INIT(kind, t0);
    r.dur = gs_now() - t0;
    gs_fd_describe(fd, &r);
    r.ret = ret;
    r.stack = gs_stack_take(caller); /* after dur: the unwind is not the call's time */
    gs_emit(&r);
}

static void record_at(uint16_t kind, uint64_t t0, int ret, int err, int dirfd, const char *path,
                      int flags, uint32_t mask, const void *caller)
{
    gs_rec r = GS_REC_INIT(kind, t0);
    r.dur = gs_now() - t0;
    r.fd = dirfd;
    if (dirfd >= 0) {
        uint64_t w = gs_fd_word(dirfd);
        r.fd_kind = (uint8_t)GS_FDW_KIND(w);
    }
    r.ret = ret;
    const char *p = (const char *)gs_launder(path);
    r.str = (!p || (ret < 0 && err == EFAULT)) ? 0 : gs_str_path_at(dirfd, p);
    r.aux = (uint64_t)(uint32_t)flags;
    r.aux2 = mask;
    r.stack = gs_stack_take(caller); /* after dur: the unwind is not the call's time */
    gs_emit(&r);
}

/* ---- by path ------------------------------------------------------------- */

int stat(const char *restrict path, struct stat *restrict buf)
{
    if (!GS_RESOLVED(stat)) {
        errno = ENOSYS;
        return -1;
    }
    if (!gs_enter())
        return gs_real.stat(path, buf);
    uint64_t t0 = gs_now();
    int ret = gs_real.stat(path, buf);
    int err = errno;
    record_path(GS_K_STAT, t0, ret, err, path, GS_CALLER());
    gs_leave();
    errno = err;
    return ret;
}

int stat64(const char *restrict path, struct stat64 *restrict buf)
{
    if (!GS_RESOLVED(stat64)) {
        errno = ENOSYS;
        return -1;
    }
    if (!gs_enter())
        return gs_real.stat64(path, buf);
    uint64_t t0 = gs_now();
    int ret = gs_real.stat64(path, buf);
    int err = errno;
    record_path(GS_K_STAT64, t0, ret, err, path, GS_CALLER());
    gs_leave();
    errno = err;
    return ret;
}

int lstat(const char *restrict path, struct stat *restrict buf)
{
    if (!GS_RESOLVED(lstat)) {
        errno = ENOSYS;
        return -1;
    }
    if (!gs_enter())
        return gs_real.lstat(path, buf);
    uint64_t t0 = gs_now();
    int ret = gs_real.lstat(path, buf);
    int err = errno;
    record_path(GS_K_LSTAT, t0, ret, err, path, GS_CALLER());
    gs_leave();
    errno = err;
    return ret;
}

int lstat64(const char *restrict path, struct stat64 *restrict buf)
{
    if (!GS_RESOLVED(lstat64)) {
        errno = ENOSYS;
        return -1;
    }
    if (!gs_enter())
        return gs_real.lstat64(path, buf);
    uint64_t t0 = gs_now();
    int ret = gs_real.lstat64(path, buf);
    int err = errno;
    record_path(GS_K_LSTAT64, t0, ret, err, path, GS_CALLER());
    gs_leave();
    errno = err;
    return ret;
}

int __xstat(int ver, const char *path, struct stat *buf)
{
    if (!GS_RESOLVED(__xstat)) {
        errno = ENOSYS;
        return -1;
    }
    if (!gs_enter())
        return gs_real.__xstat(ver, path, buf);
    uint64_t t0 = gs_now();
    int ret = gs_real.__xstat(ver, path, buf);
    int err = errno;
    record_path(GS_K_XSTAT, t0, ret, err, path, GS_CALLER());
    gs_leave();
    errno = err;
    return ret;
}

int __xstat64(int ver, const char *path, struct stat64 *buf)
{
    if (!GS_RESOLVED(__xstat64)) {
        errno = ENOSYS;
        return -1;
    }
    if (!gs_enter())
        return gs_real.__xstat64(ver, path, buf);
    uint64_t t0 = gs_now();
    int ret = gs_real.__xstat64(ver, path, buf);
    int err = errno;
    record_path(GS_K_XSTAT64, t0, ret, err, path, GS_CALLER());
    gs_leave();
    errno = err;
    return ret;
}

int __lxstat(int ver, const char *path, struct stat *buf)
{
    if (!GS_RESOLVED(__lxstat)) {
        errno = ENOSYS;
        return -1;
    }
    if (!gs_enter())
        return gs_real.__lxstat(ver, path, buf);
    uint64_t t0 = gs_now();
    int ret = gs_real.__lxstat(ver, path, buf);
    int err = errno;
    record_path(GS_K_LXSTAT, t0, ret, err, path, GS_CALLER());
    gs_leave();
    errno = err;
    return ret;
}

int __lxstat64(int ver, const char *path, struct stat64 *buf)
{
    if (!GS_RESOLVED(__lxstat64)) {
        errno = ENOSYS;
        return -1;
    }
    if (!gs_enter())
        return gs_real.__lxstat64(ver, path, buf);
    uint64_t t0 = gs_now();
    int ret = gs_real.__lxstat64(ver, path, buf);
    int err = errno;
    record_path(GS_K_LXSTAT64, t0, ret, err, path, GS_CALLER());
    gs_leave();
    errno = err;
    return ret;
}

/* ---- by fd ----------------------------------------------------------------- */

int fstat(int fd, struct stat *buf)
{
    if (!GS_RESOLVED(fstat)) {
        errno = ENOSYS;
        return -1;
    }
    if (!gs_enter())
        return gs_real.fstat(fd, buf);
    uint64_t t0 = gs_now();
    int ret = gs_real.fstat(fd, buf);
    int err = errno;
    record_fd(GS_K_FSTAT, t0, ret, fd, GS_CALLER());
    gs_leave();
    errno = err;
    return ret;
}

int fstat64(int fd, struct stat64 *buf)
{
    if (!GS_RESOLVED(fstat64)) {
        errno = ENOSYS;
        return -1;
    }
    if (!gs_enter())
        return gs_real.fstat64(fd, buf);
    uint64_t t0 = gs_now();
    int ret = gs_real.fstat64(fd, buf);
    int err = errno;
    record_fd(GS_K_FSTAT64, t0, ret, fd, GS_CALLER());
    gs_leave();
    errno = err;
    return ret;
}

int __fxstat(int ver, int fd, struct stat *buf)
{
    if (!GS_RESOLVED(__fxstat)) {
        errno = ENOSYS;
        return -1;
    }
    if (!gs_enter())
        return gs_real.__fxstat(ver, fd, buf);
    uint64_t t0 = gs_now();
    int ret = gs_real.__fxstat(ver, fd, buf);
    int err = errno;
    record_fd(GS_K_FXSTAT, t0, ret, fd, GS_CALLER());
    gs_leave();
    errno = err;
    return ret;
}

int __fxstat64(int ver, int fd, struct stat64 *buf)
{
    if (!GS_RESOLVED(__fxstat64)) {
        errno = ENOSYS;
        return -1;
    }
    if (!gs_enter())
        return gs_real.__fxstat64(ver, fd, buf);
    uint64_t t0 = gs_now();
    int ret = gs_real.__fxstat64(ver, fd, buf);
    int err = errno;
    record_fd(GS_K_FXSTAT64, t0, ret, fd, GS_CALLER());
    gs_leave();
    errno = err;
    return ret;
}

/* ---- relative to a directory fd ------------------------------------------------ */

int fstatat(int dirfd, const char *restrict path, struct stat *restrict buf, int flags)
{
    if (!GS_RESOLVED(fstatat)) {
        errno = ENOSYS;
        return -1;
    }
    if (!gs_enter())
        return gs_real.fstatat(dirfd, path, buf, flags);
    uint64_t t0 = gs_now();
    int ret = gs_real.fstatat(dirfd, path, buf, flags);
    int err = errno;
    record_at(GS_K_FSTATAT, t0, ret, err, dirfd, path, flags, 0, GS_CALLER());
    gs_leave();
    errno = err;
    return ret;
}

int fstatat64(int dirfd, const char *restrict path, struct stat64 *restrict buf, int flags)
{
    if (!GS_RESOLVED(fstatat64)) {
        errno = ENOSYS;
        return -1;
    }
    if (!gs_enter())
        return gs_real.fstatat64(dirfd, path, buf, flags);
    uint64_t t0 = gs_now();
    int ret = gs_real.fstatat64(dirfd, path, buf, flags);
    int err = errno;
    record_at(GS_K_FSTATAT64, t0, ret, err, dirfd, path, flags, 0, GS_CALLER());
    gs_leave();
    errno = err;
    return ret;
}

int __fxstatat(int ver, int dirfd, const char *path, struct stat *buf, int flags)
{
    if (!GS_RESOLVED(__fxstatat)) {
        errno = ENOSYS;
        return -1;
    }
    if (!gs_enter())
        return gs_real.__fxstatat(ver, dirfd, path, buf, flags);
    uint64_t t0 = gs_now();
    int ret = gs_real.__fxstatat(ver, dirfd, path, buf, flags);
    int err = errno;
    record_at(GS_K_FXSTATAT, t0, ret, err, dirfd, path, flags, 0, GS_CALLER());
    gs_leave();
    errno = err;
    return ret;
}

int __fxstatat64(int ver, int dirfd, const char *path, struct stat64 *buf, int flags)
{
    if (!GS_RESOLVED(__fxstatat64)) {
        errno = ENOSYS;
        return -1;
    }
    if (!gs_enter())
        return gs_real.__fxstatat64(ver, dirfd, path, buf, flags);
    uint64_t t0 = gs_now();
    int ret = gs_real.__fxstatat64(ver, dirfd, path, buf, flags);
    int err = errno;
    record_at(GS_K_FXSTATAT64, t0, ret, err, dirfd, path, flags, 0, GS_CALLER());
    gs_leave();
    errno = err;
    return ret;
}

int statx(int dirfd, const char *restrict path, int flags, unsigned int mask,
          struct statx *restrict buf)
{
    if (!GS_RESOLVED(statx)) {
        errno = ENOSYS;
        return -1;
    }
    if (!gs_enter())
        return gs_real.statx(dirfd, path, flags, mask, buf);
    uint64_t t0 = gs_now();
    int ret = gs_real.statx(dirfd, path, flags, mask, buf);
    int err = errno;
    record_at(GS_K_STATX, t0, ret, err, dirfd, path, flags, mask, GS_CALLER());
    gs_leave();
    errno = err;
    return ret;
}
