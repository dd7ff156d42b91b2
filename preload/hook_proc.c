/* hook_proc.c — process hooks: the exec family (execve, execv, execvp,
 * execvpe, execl, execlp, execle) and _exit/_Exit.
 *
 * Responsible for: flushing the trace (synchronously, from the calling
 * thread) with an EXEC record before the real exec, handing the new image an
 * environment that keeps it traced (LD_PRELOAD with us, GPUSTARVE_DIR), and
 * the final flush with an EXIT record before _exit/_Exit.
 *
 * Must never: malloc (vfork children share the parent's heap: the new
 * environment lives on the stack), flush or lock in a vfork child, return
 * from _exit.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "gs_lifecycle.h"
#include "gs_preload.h"
#include "gs_real.h"

/* Everything defined below that is not static is a hook: exported (the
 * version script in libgpustarve.map lists the names). */
#pragma GCC visibility push(default)

extern char **environ;

enum { EXEC_VE, EXEC_VPE };

/* Flush, fix the environment (on our stack), call the real exec. envp NULL
 * means the current environ. Returns only when the exec failed. */
static int exec_common(int how, const char *path, char *const argv[], char *const envp[],
                       int use_environ)
{
    char *const *env = use_environ ? environ : envp;
    uint64_t t0 = gs_now();
    gs_exec_flush(path);
    size_t need = gs_env_need(env);
    void *mem = need ? alloca(need) : NULL;
    char *const *env2 = mem ? gs_env_build(env, mem) : env;
    int ret;
    if (how == EXEC_VE) {
        if (use_environ && !mem && GS_RESOLVED(execv))
            ret = gs_real.execv(path, argv);
        else if (GS_RESOLVED(execve))
            ret = gs_real.execve(path, argv, env2);
        else {
            errno = ENOSYS;
            ret = -1;
        }
    } else {
        if (use_environ && !mem && GS_RESOLVED(execvp))
            ret = gs_real.execvp(path, argv);
        else if (GS_RESOLVED(execvpe))
            ret = gs_real.execvpe(path, argv, env2);
        else {
            errno = ENOSYS;
            ret = -1;
        }
    }
    int err = errno;
    gs_exec_failed(path, t0);
    errno = err;
    return ret;
}

int execve(const char *path, char *const argv[], char *const envp[])
{
    return exec_common(EXEC_VE, path, argv, envp, 0);
}

int execv(const char *path, char *const argv[])
{
    return exec_common(EXEC_VE, path, argv, NULL, 1);
}

int execvp(const char *file, char *const argv[])
{
    return exec_common(EXEC_VPE, file, argv, NULL, 1);
}

int execvpe(const char *file, char *const argv[], char *const envp[])
{
    return exec_common(EXEC_VPE, file, argv, envp, 0);
}

/* Count the variadic arguments of execl* up to the NULL. */
static size_t count_args(const char *arg, va_list ap)
{
    size_t n = arg ? 1 : 0;
    while (arg && va_arg(ap, const char *))
        n++;
    return n;
}

int execl(const char *path, const char *arg, ...)
{
    va_list ap, cp;
    va_start(ap, arg);
    va_copy(cp, ap);
    size_t n = count_args(arg, cp);
    va_end(cp);
    char **argv = alloca((n + 1) * sizeof(char *));
    argv[0] = (char *)arg;
    for (size_t i = 1; i <= n; i++)
        argv[i] = va_arg(ap, char *);
    argv[n] = NULL;
    va_end(ap);
    return exec_common(EXEC_VE, path, argv, NULL, 1);
}

int execlp(const char *file, const char *arg, ...)
{
    va_list ap, cp;
    va_start(ap, arg);
    va_copy(cp, ap);
    size_t n = count_args(arg, cp);
    va_end(cp);
    char **argv = alloca((n + 1) * sizeof(char *));
    argv[0] = (char *)arg;
    for (size_t i = 1; i <= n; i++)
        argv[i] = va_arg(ap, char *);
    argv[n] = NULL;
    va_end(ap);
    return exec_common(EXEC_VPE, file, argv, NULL, 1);
}

int execle(const char *path, const char *arg, ...)
{
    va_list ap, cp;
    va_start(ap, arg);
    va_copy(cp, ap);
    size_t n = count_args(arg, cp);
    va_end(cp);
    char **argv = alloca((n + 1) * sizeof(char *));
    argv[0] = (char *)arg;
    for (size_t i = 1; i <= n; i++)
        argv[i] = va_arg(ap, char *);
    argv[n] = NULL;
    char *const *envp = va_arg(ap, char *const *); /* after the NULL */
    va_end(ap);
    return exec_common(EXEC_VE, path, argv, envp, 0);
}

/* ---- _exit ------------------------------------------------------------------ */

void _exit(int status)
{
    gs_finish(status, GS_EXIT_HOW__EXIT, 2000);
    if (GS_RESOLVED(_exit))
        gs_real._exit(status);
    for (;;)
        syscall(SYS_exit_group, status);
}

void _Exit(int status)
{
    gs_finish(status, GS_EXIT_HOW__EXIT, 2000);
    if (GS_RESOLVED(_Exit))
        gs_real._Exit(status);
    for (;;)
        syscall(SYS_exit_group, status);
}
