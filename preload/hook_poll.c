/* hook_poll.c — waits on pipes and sockets: poll, ppoll, select, pselect,
 * epoll_wait, epoll_pwait (+ epoll_ctl, not recorded, to learn which epoll
 * sets hold a pipe or socket).
 *
 * Responsible for: recording a wait only when it can be a wait for a worker
 * (at least one polled fd is a pipe or socket): that is how the analyzer sees
 * a trainer blocked on its DataLoader queue.
 *
 * Must never: touch the fd sets or the pollfd array beyond reading them,
 * change the result or errno, record while the guard is held.
 */
#include <errno.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/select.h>

#include "gs_fdtable.h"
#include "gs_preload.h"
#include "gs_real.h"

/* Everything defined below that is not static is a hook: exported (the
 * version script in libgpustarve.map lists the names). */
#pragma GCC visibility push(default)

static int is_stream(int fd)
{
    unsigned k = GS_FDW_KIND(gs_fd_word(fd));
    return k == GS_FDK_PIPE || k == GS_FDK_SOCKET;
}

/* First pipe/socket fd of a pollfd array, or -1. */
static int first_stream_pollfd(const struct pollfd *fds, nfds_t n)
{
    const struct pollfd *p = (const struct pollfd *)gs_launder(fds);
    for (nfds_t i = 0; p && i < n; i++)
        if (p[i].fd >= 0 && is_stream(p[i].fd))
            return p[i].fd;
    return -1;
}

/* Lowest pipe/socket fd of a read set, or -1. */
static int first_stream_fdset(int nfds, const fd_set *set)
{
    const fd_set *s = (const fd_set *)gs_launder(set);
    if (!s)
        return -1;
    for (int fd = 0; fd < nfds && fd < FD_SETSIZE; fd++)
        if (FD_ISSET(fd, s) && is_stream(fd))
            return fd;
    return -1;
}

/* Timeout in ms + 1; 0 means wait forever. */
static uint64_t ms_plus1(int64_t ms)
{
    return ms < 0 ? 0 : (uint64_t)ms + 1;
}

static uint64_t ts_plus1(const struct timespec *ts)
{
    const struct timespec *t = (const struct timespec *)gs_launder(ts);
    return t ? (uint64_t)t->tv_sec * 1000 + (uint64_t)t->tv_nsec / 1000000 + 1 : 0;
}

static uint64_t tv_plus1(const struct timeval *tv)
{
    const struct timeval *t = (const struct timeval *)gs_launder(tv);
    return t ? (uint64_t)t->tv_sec * 1000 + (uint64_t)t->tv_usec / 1000 + 1 : 0;
}

static void record_wait(uint16_t kind, uint64_t t0, int fd, unsigned fd_kind, uint64_t n,
                        long ret, uint64_t timeout)
{
    gs_rec r = GS_REC_INIT(kind, t0);
    r.dur = gs_now() - t0;
    r.fd = fd;
    r.fd_kind = (uint8_t)fd_kind;
    r.bytes = n;
    r.ret = ret;
    r.aux = timeout;
    gs_emit(&r);
}

int poll(struct pollfd *fds, nfds_t nfds, int timeout)
{
    if (!GS_RESOLVED(poll)) {
        errno = ENOSYS;
        return -1;
    }
    if (!gs_enter())
        return gs_real.poll(fds, nfds, timeout);
    int fd = first_stream_pollfd(fds, nfds);
    if (fd < 0) {
        gs_leave();
        return gs_real.poll(fds, nfds, timeout);
    }
    uint64_t t0 = gs_now();
    int ret = gs_real.poll(fds, nfds, timeout);
    int err = errno;
    record_wait(GS_K_POLL, t0, fd, GS_FDW_KIND(gs_fd_word(fd)), nfds, ret, ms_plus1(timeout));
    gs_leave();
    errno = err;
    return ret;
}

int ppoll(struct pollfd *fds, nfds_t nfds, const struct timespec *tmo, const sigset_t *mask)
{
    if (!GS_RESOLVED(ppoll)) {
        errno = ENOSYS;
        return -1;
    }
    if (!gs_enter())
        return gs_real.ppoll(fds, nfds, tmo, mask);
    int fd = first_stream_pollfd(fds, nfds);
    if (fd < 0) {
        gs_leave();
        return gs_real.ppoll(fds, nfds, tmo, mask);
    }
    uint64_t timeout = ts_plus1(tmo);
    uint64_t t0 = gs_now();
    int ret = gs_real.ppoll(fds, nfds, tmo, mask);
    int err = errno;
    record_wait(GS_K_PPOLL, t0, fd, GS_FDW_KIND(gs_fd_word(fd)), nfds, ret, timeout);
    gs_leave();
    errno = err;
    return ret;
}

int select(int nfds, fd_set *rd, fd_set *wr, fd_set *ex, struct timeval *tmo)
{
    if (!GS_RESOLVED(select)) {
        errno = ENOSYS;
        return -1;
    }
    if (!gs_enter())
        return gs_real.select(nfds, rd, wr, ex, tmo);
    int fd = first_stream_fdset(nfds, rd);
    if (fd < 0) {
        gs_leave();
        return gs_real.select(nfds, rd, wr, ex, tmo);
    }
    uint64_t timeout = tv_plus1(tmo); /* select may rewrite *tmo */
    uint64_t t0 = gs_now();
    int ret = gs_real.select(nfds, rd, wr, ex, tmo);
    int err = errno;
    record_wait(GS_K_SELECT, t0, fd, GS_FDW_KIND(gs_fd_word(fd)), (uint64_t)nfds, ret, timeout);
    gs_leave();
    errno = err;
    return ret;
}

int pselect(int nfds, fd_set *rd, fd_set *wr, fd_set *ex, const struct timespec *tmo,
            const sigset_t *mask)
{
    if (!GS_RESOLVED(pselect)) {
        errno = ENOSYS;
        return -1;
    }
    if (!gs_enter())
        return gs_real.pselect(nfds, rd, wr, ex, tmo, mask);
    int fd = first_stream_fdset(nfds, rd);
    if (fd < 0) {
        gs_leave();
        return gs_real.pselect(nfds, rd, wr, ex, tmo, mask);
    }
    uint64_t timeout = ts_plus1(tmo);
    uint64_t t0 = gs_now();
    int ret = gs_real.pselect(nfds, rd, wr, ex, tmo, mask);
    int err = errno;
    record_wait(GS_K_PSELECT, t0, fd, GS_FDW_KIND(gs_fd_word(fd)), (uint64_t)nfds, ret, timeout);
    gs_leave();
    errno = err;
    return ret;
}

static int epoll_has_stream(int epfd)
{
    if ((unsigned)epfd >= GS_FD_MAX)
        return 0;
    return (atomic_load_explicit(&gs_fdtab[epfd], memory_order_relaxed) & GS_FDW_EPSTREAM) != 0;
}

int epoll_ctl(int epfd, int op, int fd, struct epoll_event *ev)
{
    if (!GS_RESOLVED(epoll_ctl)) {
        errno = ENOSYS;
        return -1;
    }
    if (!gs_enter())
        return gs_real.epoll_ctl(epfd, op, fd, ev);
    int ret = gs_real.epoll_ctl(epfd, op, fd, ev);
    int err = errno;
    if (ret == 0 && (op == EPOLL_CTL_ADD || op == EPOLL_CTL_MOD) && is_stream(fd))
        gs_fd_mark_epstream(epfd);
    gs_leave();
    errno = err;
    return ret;
}

int epoll_wait(int epfd, struct epoll_event *events, int maxevents, int timeout)
{
    if (!GS_RESOLVED(epoll_wait)) {
        errno = ENOSYS;
        return -1;
    }
    if (!gs_enter())
        return gs_real.epoll_wait(epfd, events, maxevents, timeout);
    if (!epoll_has_stream(epfd)) {
        gs_leave();
        return gs_real.epoll_wait(epfd, events, maxevents, timeout);
    }
    uint64_t t0 = gs_now();
    int ret = gs_real.epoll_wait(epfd, events, maxevents, timeout);
    int err = errno;
    record_wait(GS_K_EPOLL_WAIT, t0, epfd, GS_FDK_OTHER, (uint64_t)(uint32_t)maxevents, ret,
                ms_plus1(timeout));
    gs_leave();
    errno = err;
    return ret;
}

int epoll_pwait(int epfd, struct epoll_event *events, int maxevents, int timeout,
                const sigset_t *mask)
{
    if (!GS_RESOLVED(epoll_pwait)) {
        errno = ENOSYS;
        return -1;
    }
    if (!gs_enter())
        return gs_real.epoll_pwait(epfd, events, maxevents, timeout, mask);
    if (!epoll_has_stream(epfd)) {
        gs_leave();
        return gs_real.epoll_pwait(epfd, events, maxevents, timeout, mask);
    }
    uint64_t t0 = gs_now();
    int ret = gs_real.epoll_pwait(epfd, events, maxevents, timeout, mask);
    int err = errno;
    record_wait(GS_K_EPOLL_PWAIT, t0, epfd, GS_FDK_OTHER, (uint64_t)(uint32_t)maxevents, ret,
                ms_plus1(timeout));
    gs_leave();
    errno = err;
    return ret;
}
