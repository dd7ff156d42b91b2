/* hook_signal.c — keeps the collector's own fatal-signal handler invisible.
 *
 * Responsible for: sigaction and signal reporting SIG_DFL wherever the only
 * thing installed is a handler of gs_lifecycle.c: flush-and-reraise on
 * SIGTERM, SIGINT and SIGHUP, note-and-reraise on SIGSEGV, SIGBUS, SIGFPE,
 * SIGILL, SIGSYS, SIGABRT and SIGQUIT, each only where the disposition was
 * the default. A
 * program (Python installs its KeyboardInterrupt handler only where SIGINT is
 * SIG_DFL) then sees and decides exactly what it would without the preload;
 * whatever it installs replaces ours, except SIG_DFL on one of those
 * signals, which puts ours back (gs_signal_default_for): the same default
 * action, so the process still says how it ended.
 *
 * Must never: record anything, install anything but what the program asked
 * for or ours in place of its SIG_DFL, or touch errno.
 */
#include <errno.h>
#include <signal.h>
#include <string.h>

#include "gs_lifecycle.h"
#include "gs_real.h"

#pragma GCC visibility push(default)

int sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
    if (!GS_RESOLVED(sigaction)) {
        errno = ENOSYS;
        return -1;
    }
    struct sigaction mine;
    if (act && act->sa_handler == SIG_DFL && gs_signal_default_for(sig, &mine))
        act = &mine;
    int ret = gs_real.sigaction(sig, act, old);
    if (ret == 0 && old && gs_signal_is_ours(old)) {
        memset(old, 0, sizeof *old);
        old->sa_handler = SIG_DFL;
        sigemptyset(&old->sa_mask);
    }
    return ret;
}

sighandler_t signal(int sig, sighandler_t handler)
{
    if (!GS_RESOLVED(signal)) {
        errno = ENOSYS;
        return SIG_ERR;
    }
    struct sigaction mine, was;
    sighandler_t old;
    if (handler == SIG_DFL && gs_signal_default_for(sig, &mine) && GS_RESOLVED(sigaction))
        old = gs_real.sigaction(sig, &mine, &was) == 0 ? was.sa_handler : SIG_ERR;
    else
        old = gs_real.signal(sig, handler);
    return gs_signal_handler_is_ours(old) ? SIG_DFL : old;
}

#pragma GCC visibility pop
