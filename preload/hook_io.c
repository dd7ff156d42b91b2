/* hook_io.c — POSIX open/close/dup and read hooks.
 *
 * Responsible for: open, open64, openat, openat64, creat, close, close_range,
 * closefrom, dup, dup2, dup3, read, pread, pread64, readv, preadv, preadv64,
 * preadv2, preadv64v2, __read_chk, __pread_chk, __pread64_chk: call the real
 * function, record one event (fields as in docs/trace-format.md; in a
 * loader worker, a read of a regular file with its file position), keep the
 * fd table current, and keep the program's calls on the collector's own
 * descriptor (when it has one in the program's table, docs/collector-safety.md)
 * as they are untraced: close() of it and dup*() from it fail EBADF (a number
 * the program never opened), dup2/dup3 onto it succeed (the trace moves
 * first), close_range/closefrom close everything else.
 *
 * Must never: change what the program sees (return value, errno), lock,
 * allocate, or record a call made while the guard is held.
 *
 * Every hook has the same beats: real symbol (lazy) -> enabled and guard ->
 * t0 -> real call -> save errno -> record -> restore errno -> return. The
 * read hooks save nothing: record_read's path touches errno nowhere, and its
 * slow paths (gs_fd_classify, gs_stack_slow, gs_emit_slow, gs_writer_poke)
 * keep it themselves.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/close_range.h>
#include <stdarg.h>
#include <stddef.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "gs_fdtable.h"
#include "gs_output.h"
#include "gs_preload.h"
#include "gs_real.h"
#include "gs_stacks.h"
#include "gs_state.h"
#include "gs_strings.h"

/* Everything defined below that is not static is a hook: exported (the
 * version script in libgpustarve.map lists the names). */
#pragma GCC visibility push(default)

#define GS_NEEDS_MODE(flags) (((flags) & O_CREAT) || ((flags) & O_TMPFILE) == O_TMPFILE)

/* ---- open family --------------------------------------------------------- */

/* Record an open-like call; on success the new fd enters the fd table. */
static void record_open(uint16_t kind, uint64_t t0, int ret, int err, uint32_t str, int flags,
                        int has_mode, mode_t mode, const void *caller)
{
    gs_rec r = GS_REC_INIT(kind, t0);
    r.dur = gs_now() - t0;
    r.fd = ret;
    r.ret = ret;
    r.str = str;
    r.aux = (uint64_t)(uint32_t)flags;
    if (has_mode)
        r.aux2 = (uint32_t)mode;
    if (ret >= 0) {
        r.fd_kind = (uint8_t)gs_fd_kind_of(ret);
        gs_fd_set(ret, str, r.fd_kind);
    }
    (void)err;
    r.stack = gs_stack_take(caller); /* after dur: the unwind is not the call's time */
    gs_emit(&r);
}

int open(const char *path, int flags, ...)
{
    mode_t mode = 0;
    if (GS_NEEDS_MODE(flags)) {
        va_list ap;
        va_start(ap, flags);
        mode = va_arg(ap, mode_t);
        va_end(ap);
    }
    if (!GS_RESOLVED(open)) {
        errno = ENOSYS;
        return -1;
    }
    gs_safe_point_unmasked();
    if (!gs_enter())
        return gs_real.open(path, flags, mode);
    uint64_t t0 = gs_now();
    int ret = gs_real.open(path, flags, mode);
    int err = errno;
    record_open(GS_K_OPEN, t0, ret, err, gs_str_path_safe(path, ret, err), flags, 0, mode, GS_CALLER());
    gs_leave();
    errno = err;
    return ret;
}

int open64(const char *path, int flags, ...)
{
    mode_t mode = 0;
    if (GS_NEEDS_MODE(flags)) {
        va_list ap;
        va_start(ap, flags);
        mode = va_arg(ap, mode_t);
        va_end(ap);
    }
    if (!GS_RESOLVED(open64)) {
        errno = ENOSYS;
        return -1;
    }
    gs_safe_point_unmasked();
    if (!gs_enter())
        return gs_real.open64(path, flags, mode);
    uint64_t t0 = gs_now();
    int ret = gs_real.open64(path, flags, mode);
    int err = errno;
    record_open(GS_K_OPEN64, t0, ret, err, gs_str_path_safe(path, ret, err), flags, 0, mode, GS_CALLER());
    gs_leave();
    errno = err;
    return ret;
}

/* Path of an openat-style call: dir path + "/" + path for a relative path
 * under a known directory fd. */
static uint32_t path_at(int dirfd, const char *path, long ret, int err)
{
    const char *p = (const char *)gs_launder(path);
    if (!p || (ret < 0 && err == EFAULT))
        return 0;
    return gs_str_path_at(dirfd, p);
}

int openat(int dirfd, const char *path, int flags, ...)
{
    mode_t mode = 0;
    if (GS_NEEDS_MODE(flags)) {
        va_list ap;
        va_start(ap, flags);
        mode = va_arg(ap, mode_t);
        va_end(ap);
    }
    if (!GS_RESOLVED(openat)) {
        errno = ENOSYS;
        return -1;
    }
    gs_safe_point_unmasked();
    if (!gs_enter())
        return gs_real.openat(dirfd, path, flags, mode);
    uint64_t t0 = gs_now();
    int ret = gs_real.openat(dirfd, path, flags, mode);
    int err = errno;
    record_open(GS_K_OPENAT, t0, ret, err, path_at(dirfd, path, ret, err), flags, 1, mode, GS_CALLER());
    gs_leave();
    errno = err;
    return ret;
}

int openat64(int dirfd, const char *path, int flags, ...)
{
    mode_t mode = 0;
    if (GS_NEEDS_MODE(flags)) {
        va_list ap;
        va_start(ap, flags);
        mode = va_arg(ap, mode_t);
        va_end(ap);
    }
    if (!GS_RESOLVED(openat64)) {
        errno = ENOSYS;
        return -1;
    }
    gs_safe_point_unmasked();
    if (!gs_enter())
        return gs_real.openat64(dirfd, path, flags, mode);
    uint64_t t0 = gs_now();
    int ret = gs_real.openat64(dirfd, path, flags, mode);
    int err = errno;
    record_open(GS_K_OPENAT64, t0, ret, err, path_at(dirfd, path, ret, err), flags, 1, mode, GS_CALLER());
    gs_leave();
    errno = err;
    return ret;
}

int creat(const char *path, mode_t mode)
{
    if (!GS_RESOLVED(creat)) {
        errno = ENOSYS;
        return -1;
    }
    if (!gs_enter())
        return gs_real.creat(path, mode);
    uint64_t t0 = gs_now();
    int ret = gs_real.creat(path, mode);
    int err = errno;
    record_open(GS_K_CREAT, t0, ret, err, gs_str_path_safe(path, ret, err),
                O_CREAT | O_WRONLY | O_TRUNC, 0, mode, GS_CALLER());
    gs_leave();
    errno = err;
    return ret;
}

/* ---- close and dup ------------------------------------------------------------ */

/* 1 when fd is the collector's descriptor in this process's table (never in
 * a vfork child: its table is its own, and our memory is its parent's). */
static int names_ours(int fd)
{
    return gs_fd_is_ours(fd) && !gs_in_foreign_child();
}

int close(int fd)
{
    if (!GS_RESOLVED(close)) {
        errno = ENOSYS;
        return -1;
    }
    gs_safe_point_unmasked();
    if (names_ours(fd)) {
        errno = EBADF;
        return -1;
    }
    if (!gs_enter())
        return gs_real.close(fd);
    gs_rec r = GS_REC_INIT(GS_K_CLOSE, 0);
    const uint64_t seen = gs_fd_describe(fd, &r);
    uint64_t t0 = gs_now();
    int ret = gs_real.close(fd);
    int err = errno;
    r.ts = t0;
    r.dur = gs_now() - t0;
    r.ret = ret;
    if (ret == 0)
        gs_fd_clear(fd, seen);
    gs_emit(&r);
    gs_leave();
    errno = err;
    return ret;
}

static int real_close_range(unsigned first, unsigned last, int flags)
{
    if (gs_real.close_range || (gs_real_resolve(), gs_real.close_range))
        return gs_real.close_range(first, last, flags);
    return (int)syscall(SYS_close_range, first, last, flags);
}

int close_range(unsigned first, unsigned last, int flags)
{
    int ours = atomic_load(&gs_trace_fd);
    int ret;
    if (ours >= 0 && (unsigned)ours >= first && (unsigned)ours <= last && first <= last &&
        !(flags & CLOSE_RANGE_CLOEXEC) && names_ours(ours)) {
        /* everything but the collector's descriptor */
        ret = (unsigned)ours > first ? real_close_range(first, (unsigned)ours - 1, flags) : 0;
        if (ret == 0 && (unsigned)ours < last)
            ret = real_close_range((unsigned)ours + 1, last, flags);
    } else {
        ret = real_close_range(first, last, flags);
    }
    if (ret == 0 && !(flags & CLOSE_RANGE_CLOEXEC)) {
        int err = errno;
        gs_fd_clear_range(first, last);
        errno = err;
    }
    return ret;
}

void closefrom(int lowfd)
{
    int ours = atomic_load(&gs_trace_fd);
    unsigned low = lowfd < 0 ? 0u : (unsigned)lowfd;
    if (ours >= 0 && (unsigned)ours >= low && names_ours(ours)) {
        if ((unsigned)ours > low && real_close_range(low, (unsigned)ours - 1, 0) != 0)
            for (int fd = (int)low; fd < ours; fd++)
                syscall(SYS_close, fd);
        low = (unsigned)ours + 1;
    }
    if (GS_RESOLVED(closefrom)) {
        gs_real.closefrom((int)low);
    } else if (real_close_range(low, ~0u, 0) != 0) {
        for (int fd = (int)low; fd < (int)GS_FD_MAX; fd++)
            syscall(SYS_close, fd);
    }
    int err = errno;
    gs_fd_clear_range(lowfd < 0 ? 0u : (unsigned)lowfd, ~0u);
    errno = err;
}

/* Record a dup-like call; the new fd inherits the old one's path and kind. */
static void record_dup(uint16_t kind, uint64_t t0, int oldfd, int ret, uint64_t flags)
{
    gs_rec r = GS_REC_INIT(kind, t0);
    r.dur = gs_now() - t0;
    gs_fd_describe(oldfd, &r);
    r.ret = ret;
    r.aux = flags;
    if (ret >= 0 && ret != oldfd)
        gs_fd_copy(oldfd, ret);
    gs_emit(&r);
}

int dup(int oldfd)
{
    if (!GS_RESOLVED(dup)) {
        errno = ENOSYS;
        return -1;
    }
    if (names_ours(oldfd)) {
        errno = EBADF;
        return -1;
    }
    if (!gs_enter())
        return gs_real.dup(oldfd);
    uint64_t t0 = gs_now();
    int ret = gs_real.dup(oldfd);
    int err = errno;
    record_dup(GS_K_DUP, t0, oldfd, ret, 0);
    gs_leave();
    errno = err;
    return ret;
}

int dup2(int oldfd, int newfd)
{
    if (!GS_RESOLVED(dup2)) {
        errno = ENOSYS;
        return -1;
    }
    if (names_ours(oldfd)) {
        errno = EBADF;
        return -1;
    }
    if (names_ours(newfd)) {
        int err = errno;
        gs_out_yield_fd(newfd); /* the trace moves; the number is the program's */
        errno = err;
    }
    if (!gs_enter())
        return gs_real.dup2(oldfd, newfd);
    uint64_t t0 = gs_now();
    int ret = gs_real.dup2(oldfd, newfd);
    int err = errno;
    record_dup(GS_K_DUP2, t0, oldfd, ret, 0);
    gs_leave();
    errno = err;
    return ret;
}

int dup3(int oldfd, int newfd, int flags)
{
    if (!GS_RESOLVED(dup3)) {
        errno = ENOSYS;
        return -1;
    }
    if (names_ours(oldfd)) {
        errno = EBADF;
        return -1;
    }
    if (names_ours(newfd) && oldfd != newfd) {
        int err = errno;
        gs_out_yield_fd(newfd);
        errno = err;
    }
    if (!gs_enter())
        return gs_real.dup3(oldfd, newfd, flags);
    uint64_t t0 = gs_now();
    int ret = gs_real.dup3(oldfd, newfd, flags);
    int err = errno;
    record_dup(GS_K_DUP3, t0, oldfd, ret, (uint64_t)(uint32_t)flags);
    gs_leave();
    errno = err;
    return ret;
}

/* ---- reads ----------------------------------------------------------------------- */

/* The file position of fd after a read, -1 when it has none. RATIONALE:
 * lseek(fd, 0, SEEK_CUR) moves nothing and reads no data; the raw call
 * keeps errno as the program left it. Only in a process that said it is a
 * loader worker (gs_read_pos, gs_marker.c): where the analyzer looks for
 * workers that read the same bytes (docs/report-schema.md, "The model"). */
static int64_t file_pos(int fd)
{
    const int err = errno;
    const long pos = syscall(SYS_lseek, fd, 0L, SEEK_CUR);
    errno = err;
    return pos;
}

/* Record a read-like call. offset -1 where the call has none; a read, readv
 * or __read_chk of a regular file in a loader worker is recorded as
 * read_at, readv_at or __read_chk_at with the position it read from. */
/* RATIONALE: inlined into each read hook, and written straight into the ring
 * slot (gs_emit_slot), every field once, with no errno saved around it (its
 * slow paths keep errno): the hook's path of a 4 KiB pread was 154
 * instructions with a gs_rec built on the stack, copied, this function
 * called with three arguments on the stack and errno saved, 108 then, 102
 * since the data it reads is declared hidden (GS_HIDDEN, gs_preload.h)
 * (callgrind; docs/performance.md, "The hook's path"). */
_Static_assert(sizeof(gs_rec) == 64 && offsetof(gs_rec, aux) == 56,
               "record_read writes every field of gs_rec: add a new one there");
static inline __attribute__((always_inline)) void
record_read(uint16_t kind, uint64_t t0, int fd, uint64_t bytes, long ret, int64_t offset,
            uint64_t aux, uint32_t aux2, const void *caller)
{
    const uint64_t dur = gs_now() - t0;
    const uint64_t w = gs_fd_word(fd);
    const uint16_t at = kind == GS_K_READ ? GS_K_READ_AT : kind == GS_K_READV ? GS_K_READV_AT
                        : kind == GS_K_READ_CHK ? GS_K_READ_CHK_AT : 0;
    if (at && GS_UNLIKELY(atomic_load_explicit(&gs_read_pos, memory_order_relaxed)) &&
        ret > 0 && GS_FDW_KIND(w) == GS_FDK_FILE) {
        const int64_t end = file_pos(fd);
        if (end >= ret) {
            offset = end - ret; /* where this read began */
            kind = at;
        }
    }
    const uint16_t stack = gs_stack_take(caller); /* after dur: the unwind is not the call's time */
    gs_ring *g = NULL;
    uint64_t h = 0;
    gs_rec tmp;
    gs_rec *const slot = gs_emit_slot(&g, &h);
    gs_rec *const r = GS_LIKELY(slot != NULL) ? slot : &tmp;
    r->kind = (uint8_t)kind;
    r->fd_kind = (uint8_t)GS_FDW_KIND(w);
    r->stack = stack;
    r->fd = fd;
    r->str = GS_FDW_STR(w);
    r->aux2 = aux2;
    r->ts = t0;
    r->dur = dur;
    r->bytes = bytes;
    r->ret = ret;
    r->offset = offset;
    r->aux = aux;
    if (GS_LIKELY(slot != NULL))
        gs_emit_publish(g, h);
    else
        gs_emit_slow(&tmp);
}

static uint64_t iov_bytes(const struct iovec *iov, int cnt)
{
    const struct iovec *v = (const struct iovec *)gs_launder(iov);
    uint64_t sum = 0;
    if (!v)
        return 0;
    for (int i = 0; i < cnt && i < 1024; i++)
        sum += v[i].iov_len;
    return sum;
}

ssize_t read(int fd, void *buf, size_t count)
{
    if (!GS_RESOLVED(read)) {
        errno = ENOSYS;
        return -1;
    }
    gs_safe_point_unmasked();
    if (!gs_enter())
        return gs_real.read(fd, buf, count);
    uint64_t t0 = gs_now();
    ssize_t ret = gs_real.read(fd, buf, count);
    record_read(GS_K_READ, t0, fd, count, ret, -1, 0, 0, GS_CALLER());
    gs_leave();
    return ret;
}

ssize_t pread(int fd, void *buf, size_t count, off_t offset)
{
    if (!GS_RESOLVED(pread)) {
        errno = ENOSYS;
        return -1;
    }
    gs_safe_point();
    if (!gs_enter())
        return gs_real.pread(fd, buf, count, offset);
    uint64_t t0 = gs_now();
    ssize_t ret = gs_real.pread(fd, buf, count, offset);
    record_read(GS_K_PREAD, t0, fd, count, ret, offset, 0, 0, GS_CALLER());
    gs_leave();
    return ret;
}

ssize_t pread64(int fd, void *buf, size_t count, off64_t offset)
{
    if (!GS_RESOLVED(pread64)) {
        errno = ENOSYS;
        return -1;
    }
    gs_safe_point();
    if (!gs_enter())
        return gs_real.pread64(fd, buf, count, offset);
    uint64_t t0 = gs_now();
    ssize_t ret = gs_real.pread64(fd, buf, count, offset);
    record_read(GS_K_PREAD64, t0, fd, count, ret, offset, 0, 0, GS_CALLER());
    gs_leave();
    return ret;
}

ssize_t readv(int fd, const struct iovec *iov, int iovcnt)
{
    if (!GS_RESOLVED(readv)) {
        errno = ENOSYS;
        return -1;
    }
    gs_safe_point_unmasked();
    if (!gs_enter())
        return gs_real.readv(fd, iov, iovcnt);
    uint64_t t0 = gs_now();
    ssize_t ret = gs_real.readv(fd, iov, iovcnt);
    uint64_t bytes = (ret < 0 && errno == EFAULT) ? 0 : iov_bytes(iov, iovcnt);
    record_read(GS_K_READV, t0, fd, bytes, ret, -1, (uint64_t)(uint32_t)iovcnt, 0, GS_CALLER());
    gs_leave();
    return ret;
}

ssize_t preadv(int fd, const struct iovec *iov, int iovcnt, off_t offset)
{
    if (!GS_RESOLVED(preadv)) {
        errno = ENOSYS;
        return -1;
    }
    gs_safe_point();
    if (!gs_enter())
        return gs_real.preadv(fd, iov, iovcnt, offset);
    uint64_t t0 = gs_now();
    ssize_t ret = gs_real.preadv(fd, iov, iovcnt, offset);
    uint64_t bytes = (ret < 0 && errno == EFAULT) ? 0 : iov_bytes(iov, iovcnt);
    record_read(GS_K_PREADV, t0, fd, bytes, ret, offset, (uint64_t)(uint32_t)iovcnt, 0, GS_CALLER());
    gs_leave();
    return ret;
}

ssize_t preadv64(int fd, const struct iovec *iov, int iovcnt, off64_t offset)
{
    if (!GS_RESOLVED(preadv64)) {
        errno = ENOSYS;
        return -1;
    }
    gs_safe_point();
    if (!gs_enter())
        return gs_real.preadv64(fd, iov, iovcnt, offset);
    uint64_t t0 = gs_now();
    ssize_t ret = gs_real.preadv64(fd, iov, iovcnt, offset);
    uint64_t bytes = (ret < 0 && errno == EFAULT) ? 0 : iov_bytes(iov, iovcnt);
    record_read(GS_K_PREADV64, t0, fd, bytes, ret, offset, (uint64_t)(uint32_t)iovcnt, 0, GS_CALLER());
    gs_leave();
    return ret;
}

ssize_t preadv2(int fd, const struct iovec *iov, int iovcnt, off_t offset, int flags)
{
    if (!GS_RESOLVED(preadv2)) {
        errno = ENOSYS;
        return -1;
    }
    gs_safe_point();
    if (!gs_enter())
        return gs_real.preadv2(fd, iov, iovcnt, offset, flags);
    uint64_t t0 = gs_now();
    ssize_t ret = gs_real.preadv2(fd, iov, iovcnt, offset, flags);
    uint64_t bytes = (ret < 0 && errno == EFAULT) ? 0 : iov_bytes(iov, iovcnt);
    record_read(GS_K_PREADV2, t0, fd, bytes, ret, offset, (uint64_t)(uint32_t)iovcnt,
                (uint32_t)flags, GS_CALLER());
    gs_leave();
    return ret;
}

ssize_t preadv64v2(int fd, const struct iovec *iov, int iovcnt, off64_t offset, int flags)
{
    if (!GS_RESOLVED(preadv64v2)) {
        errno = ENOSYS;
        return -1;
    }
    gs_safe_point();
    if (!gs_enter())
        return gs_real.preadv64v2(fd, iov, iovcnt, offset, flags);
    uint64_t t0 = gs_now();
    ssize_t ret = gs_real.preadv64v2(fd, iov, iovcnt, offset, flags);
    uint64_t bytes = (ret < 0 && errno == EFAULT) ? 0 : iov_bytes(iov, iovcnt);
    record_read(GS_K_PREADV64V2, t0, fd, bytes, ret, offset, (uint64_t)(uint32_t)iovcnt,
                (uint32_t)flags, GS_CALLER());
    gs_leave();
    return ret;
}

ssize_t __read_chk(int fd, void *buf, size_t count, size_t buflen)
{
    if (!GS_RESOLVED(__read_chk)) {
        errno = ENOSYS;
        return -1;
    }
    gs_safe_point_unmasked();
    if (!gs_enter())
        return gs_real.__read_chk(fd, buf, count, buflen);
    uint64_t t0 = gs_now();
    ssize_t ret = gs_real.__read_chk(fd, buf, count, buflen);
    record_read(GS_K_READ_CHK, t0, fd, count, ret, -1, 0, 0, GS_CALLER());
    gs_leave();
    return ret;
}

ssize_t __pread_chk(int fd, void *buf, size_t count, off_t offset, size_t buflen)
{
    if (!GS_RESOLVED(__pread_chk)) {
        errno = ENOSYS;
        return -1;
    }
    gs_safe_point();
    if (!gs_enter())
        return gs_real.__pread_chk(fd, buf, count, offset, buflen);
    uint64_t t0 = gs_now();
    ssize_t ret = gs_real.__pread_chk(fd, buf, count, offset, buflen);
    record_read(GS_K_PREAD_CHK, t0, fd, count, ret, offset, 0, 0, GS_CALLER());
    gs_leave();
    return ret;
}

ssize_t __pread64_chk(int fd, void *buf, size_t count, off64_t offset, size_t buflen)
{
    if (!GS_RESOLVED(__pread64_chk)) {
        errno = ENOSYS;
        return -1;
    }
    gs_safe_point();
    if (!gs_enter())
        return gs_real.__pread64_chk(fd, buf, count, offset, buflen);
    uint64_t t0 = gs_now();
    ssize_t ret = gs_real.__pread64_chk(fd, buf, count, offset, buflen);
    record_read(GS_K_PREAD64_CHK, t0, fd, count, ret, offset, 0, 0, GS_CALLER());
    gs_leave();
    return ret;
}
