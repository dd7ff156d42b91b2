/* gs_real.h — one declarative list of every hooked signature and the table of
 * the real functions behind them.
 *
 * Responsible for: naming each hooked function once, with its exact type, so
 * that gs_real.c can resolve them all in one place (dlsym(RTLD_NEXT)) and the
 * hook files can call gs_real.<name>.
 *
 * Must never: hold anything but function pointers; be resolved anywhere but
 * gs_real.c.
 */
#ifndef GS_REAL_H
#define GS_REAL_H

#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/stat.h>
#include <pthread.h>
#include <sys/types.h>
#include <sys/uio.h>

/* X(return type, name, (parameter types)) */
#define GS_REAL_LIST(X)                                                                    \
    X(int, open, (const char *, int, ...))                                                 \
    X(int, open64, (const char *, int, ...))                                               \
    X(int, openat, (int, const char *, int, ...))                                          \
    X(int, openat64, (int, const char *, int, ...))                                        \
    X(int, creat, (const char *, mode_t))                                                  \
    X(int, close, (int))                                                                   \
    X(int, close_range, (unsigned, unsigned, int))                                         \
    X(void, closefrom, (int))                                                              \
    X(int, dup, (int))                                                                     \
    X(int, dup2, (int, int))                                                               \
    X(int, dup3, (int, int, int))                                                          \
    X(ssize_t, read, (int, void *, size_t))                                                \
    X(ssize_t, pread, (int, void *, size_t, off_t))                                        \
    X(ssize_t, pread64, (int, void *, size_t, off64_t))                                    \
    X(ssize_t, readv, (int, const struct iovec *, int))                                    \
    X(ssize_t, preadv, (int, const struct iovec *, int, off_t))                            \
    X(ssize_t, preadv64, (int, const struct iovec *, int, off64_t))                        \
    X(ssize_t, preadv2, (int, const struct iovec *, int, off_t, int))                      \
    X(ssize_t, preadv64v2, (int, const struct iovec *, int, off64_t, int))                 \
    X(ssize_t, __read_chk, (int, void *, size_t, size_t))                                  \
    X(ssize_t, __pread_chk, (int, void *, size_t, off_t, size_t))                          \
    X(ssize_t, __pread64_chk, (int, void *, size_t, off64_t, size_t))                      \
    X(FILE *, fopen, (const char *, const char *))                                         \
    X(FILE *, fopen64, (const char *, const char *))                                       \
    X(size_t, fread, (void *, size_t, size_t, FILE *))                                     \
    X(size_t, fread_unlocked, (void *, size_t, size_t, FILE *))                            \
    X(char *, fgets, (char *, int, FILE *))                                                \
    X(int, fclose, (FILE *))                                                               \
    X(void *, mmap, (void *, size_t, int, int, int, off_t))                                \
    X(void *, mmap64, (void *, size_t, int, int, int, off64_t))                            \
    X(int, munmap, (void *, size_t))                                                       \
    X(int, stat, (const char *, struct stat *))                                            \
    X(int, stat64, (const char *, struct stat64 *))                                        \
    X(int, lstat, (const char *, struct stat *))                                           \
    X(int, lstat64, (const char *, struct stat64 *))                                       \
    X(int, fstat, (int, struct stat *))                                                    \
    X(int, fstat64, (int, struct stat64 *))                                                \
    X(int, fstatat, (int, const char *, struct stat *, int))                               \
    X(int, fstatat64, (int, const char *, struct stat64 *, int))                           \
    X(int, statx, (int, const char *, int, unsigned, struct statx *))                      \
    X(int, __xstat, (int, const char *, struct stat *))                                    \
    X(int, __xstat64, (int, const char *, struct stat64 *))                                \
    X(int, __lxstat, (int, const char *, struct stat *))                                   \
    X(int, __lxstat64, (int, const char *, struct stat64 *))                               \
    X(int, __fxstat, (int, int, struct stat *))                                            \
    X(int, __fxstat64, (int, int, struct stat64 *))                                        \
    X(int, __fxstatat, (int, int, const char *, struct stat *, int))                       \
    X(int, __fxstatat64, (int, int, const char *, struct stat64 *, int))                   \
    X(int, poll, (struct pollfd *, nfds_t, int))                                           \
    X(int, ppoll, (struct pollfd *, nfds_t, const struct timespec *, const sigset_t *))    \
    X(int, select, (int, fd_set *, fd_set *, fd_set *, struct timeval *))                  \
    X(int, pselect,                                                                        \
      (int, fd_set *, fd_set *, fd_set *, const struct timespec *, const sigset_t *))      \
    X(int, epoll_wait, (int, struct epoll_event *, int, int))                              \
    X(int, epoll_pwait, (int, struct epoll_event *, int, int, const sigset_t *))           \
    X(int, epoll_ctl, (int, int, int, struct epoll_event *))                               \
    X(int, execve, (const char *, char *const[], char *const[]))                           \
    X(int, execv, (const char *, char *const[]))                                           \
    X(int, execvp, (const char *, char *const[]))                                          \
    X(int, execvpe, (const char *, char *const[], char *const[]))                          \
    X(void, _exit, (int))                                                                  \
    X(void, _Exit, (int))                                                                  \
    X(int, sigaction, (int, const struct sigaction *, struct sigaction *))                 \
    X(sighandler_t, signal, (int, sighandler_t))                                           \
    X(int, pthread_create, (pthread_t *, const pthread_attr_t *, void *(*)(void *), void *))

typedef struct gs_real_fns {
#define GS_X_PTR(ret, name, args) ret(*name) args;
    GS_REAL_LIST(GS_X_PTR)
#undef GS_X_PTR
} gs_real_fns;

/* hidden: a hook loads a pointer from it with no GOT load first (gs_preload.h,
 * GS_HIDDEN) */
extern __attribute__((visibility("hidden"))) gs_real_fns gs_real;

/* Resolve every real symbol (once; later calls return at once). */
void gs_real_resolve(void);

/* Nonzero when gs_real.name is usable, resolving lazily on first use. An
 * expression: it hides no return. */
#define GS_RESOLVED(name) (gs_real.name || (gs_real_resolve(), gs_real.name))

#endif
