/* hook_stdio.c — stdio read hooks: fopen, fopen64, fread, fread_unlocked,
 * fgets, fclose.
 *
 * Responsible for: recording the stdio calls a data loader makes (glibc's
 * fopen/fread call open/read internally without the PLT, so nothing is
 * counted twice), keeping the fd table in step with fopen/fclose.
 *
 * Must never: take the FILE lock beyond what the real call does, change
 * errno or the result, record while the guard is held.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "gs_fdtable.h"
#include "gs_preload.h"
#include "gs_real.h"
#include "gs_stacks.h"
#include "gs_strings.h"

/* RATIONALE: with optimisation glibc's <stdio.h> defines fread_unlocked as
 * a macro; we define (and call) the function. */
#undef fread_unlocked

/* Everything defined below that is not static is a hook: exported (the
 * version script in libgpustarve.map lists the names). */
#pragma GCC visibility push(default)

/* The first up-to-8 bytes of an fopen mode, packed little-endian. */
static uint64_t pack_mode(const char *mode)
{
    const char *m = (const char *)gs_launder(mode);
    uint64_t v = 0;
    for (int i = 0; m && i < 8 && m[i]; i++)
        v |= (uint64_t)(uint8_t)m[i] << (8 * i);
    return v;
}

static void record_fopen(uint16_t kind, uint64_t t0, FILE *fp, int err, const char *path,
                         const char *mode, const void *caller)
{
    gs_rec r = GS_REC_INIT(kind, t0);
    r.dur = gs_now() - t0;
    int fd = fp ? fileno_unlocked(fp) : -1;
    r.fd = fd;
    r.ret = fd;
    r.str = gs_str_path_safe(path, fp ? 0 : -1, err);
    r.aux = pack_mode(mode);
    if (fd >= 0) {
        r.fd_kind = (uint8_t)gs_fd_kind_of(fd);
        gs_fd_set(fd, r.str, r.fd_kind);
    }
    r.stack = gs_stack_take(caller); /* after dur: the unwind is not the call's time */
    gs_emit(&r);
}

FILE *fopen(const char *path, const char *mode)
{
    if (!GS_RESOLVED(fopen)) {
        errno = ENOSYS;
        return NULL;
    }
    gs_safe_point();
    if (!gs_enter())
        return gs_real.fopen(path, mode);
    uint64_t t0 = gs_now();
    FILE *ret = gs_real.fopen(path, mode);
    int err = errno;
    record_fopen(GS_K_FOPEN, t0, ret, err, path, mode, GS_CALLER());
    gs_leave();
    errno = err;
    return ret;
}

FILE *fopen64(const char *path, const char *mode)
{
    if (!GS_RESOLVED(fopen64)) {
        errno = ENOSYS;
        return NULL;
    }
    gs_safe_point();
    if (!gs_enter())
        return gs_real.fopen64(path, mode);
    uint64_t t0 = gs_now();
    FILE *ret = gs_real.fopen64(path, mode);
    int err = errno;
    record_fopen(GS_K_FOPEN64, t0, ret, err, path, mode, GS_CALLER());
    gs_leave();
    errno = err;
    return ret;
}

/* fileno of a stream we may not own the lock of; -1 for NULL. */
static int stream_fd(FILE *fp)
{
    FILE *f = (FILE *)gs_launder(fp);
    return f ? fileno_unlocked(f) : -1;
}

static void record_fread(uint16_t kind, uint64_t t0, FILE *fp, size_t size, size_t nmemb,
                         size_t ret, const void *caller)
{
    gs_rec r = GS_REC_INIT(kind, t0);
    r.dur = gs_now() - t0;
    gs_fd_describe(stream_fd(fp), &r);
    r.bytes = (uint64_t)size * (uint64_t)nmemb;
    r.ret = (int64_t)ret;
    r.aux = size;
    r.stack = gs_stack_take(caller); /* after dur: the unwind is not the call's time */
    gs_emit(&r);
}

size_t fread(void *ptr, size_t size, size_t nmemb, FILE *fp)
{
    if (!GS_RESOLVED(fread)) {
        errno = ENOSYS;
        return 0;
    }
    gs_safe_point();
    if (!gs_enter())
        return gs_real.fread(ptr, size, nmemb, fp);
    uint64_t t0 = gs_now();
    size_t ret = gs_real.fread(ptr, size, nmemb, fp);
    int err = errno;
    record_fread(GS_K_FREAD, t0, fp, size, nmemb, ret, GS_CALLER());
    gs_leave();
    errno = err;
    return ret;
}

size_t fread_unlocked(void *ptr, size_t size, size_t nmemb, FILE *fp)
{
    if (!GS_RESOLVED(fread_unlocked)) {
        errno = ENOSYS;
        return 0;
    }
    gs_safe_point();
    if (!gs_enter())
        return gs_real.fread_unlocked(ptr, size, nmemb, fp);
    uint64_t t0 = gs_now();
    size_t ret = gs_real.fread_unlocked(ptr, size, nmemb, fp);
    int err = errno;
    record_fread(GS_K_FREAD_UNLOCKED, t0, fp, size, nmemb, ret, GS_CALLER());
    gs_leave();
    errno = err;
    return ret;
}

char *fgets(char *s, int n, FILE *fp)
{
    if (!GS_RESOLVED(fgets)) {
        errno = ENOSYS;
        return NULL;
    }
    gs_safe_point();
    if (!gs_enter())
        return gs_real.fgets(s, n, fp);
    uint64_t t0 = gs_now();
    char *ret = gs_real.fgets(s, n, fp);
    int err = errno;
    gs_rec r = GS_REC_INIT(GS_K_FGETS, t0);
    r.dur = gs_now() - t0;
    gs_fd_describe(stream_fd(fp), &r);
    r.bytes = (uint64_t)(int64_t)n;
    r.ret = ret ? (int64_t)strlen(ret) : -1;
    r.stack = gs_stack_take(GS_CALLER());
    gs_emit(&r);
    gs_leave();
    errno = err;
    return ret;
}

int fclose(FILE *fp)
{
    if (!GS_RESOLVED(fclose)) {
        errno = ENOSYS;
        return EOF;
    }
    gs_safe_point();
    if (!gs_enter())
        return gs_real.fclose(fp);
    gs_rec r = GS_REC_INIT(GS_K_FCLOSE, 0);
    int fd = stream_fd(fp);
    const uint64_t seen = gs_fd_describe(fd, &r);
    uint64_t t0 = gs_now();
    int ret = gs_real.fclose(fp);
    int err = errno;
    r.ts = t0;
    r.dur = gs_now() - t0;
    r.ret = ret;
    if (fd >= 0)
        gs_fd_clear(fd, seen); /* the stream's fd is closed even when fclose fails */
    gs_emit(&r);
    gs_leave();
    errno = err;
    return ret;
}
