/* hk_errno.c — return values and errno are those of the untraced call.
 * run.sh runs this table with and without the preload and compares the two
 * outputs line by line; errno is set to 4242 before each call so a hook that
 * leaks its own errno on success shows up too. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/select.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "hk_util.h"

static void show(const char *name, long long ret)
{
    printf("%-28s ret=%lld errno=%d\n", name, ret, errno);
}

#define CALL(expr)                                                                         \
    do {                                                                                   \
        errno = 4242;                                                                      \
        long long r_ = (long long)(expr);                                                  \
        show(#expr, r_);                                                                   \
    } while (0)

/* A thread whose first traced call is a successful read: the read hooks
 * save no errno, so the ring's attach on that path must keep it. */
static void *first_read(void *arg)
{
    char b[4];
    CALL(pread(*(const int *)arg, b, 4, 1));
    return NULL;
}

int main(void)
{
    char path[4096], buf[64];
    hk_tmp(path, sizeof path, "errno.dat");
    int w = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (write(w, "abcdefgh", 8) != 8)
        return 1;
    close(w);
    struct stat st;
    struct statx sx;
    struct iovec iov = {buf, 4};
    CALL(open("/nonexistent/e", O_RDONLY));
    CALL(open(path, O_RDONLY)); /* fd 3 */
    CALL(read(3, buf, 4));
    CALL(read(77, buf, 4));
    CALL(pread(3, buf, 4, -1));
    CALL(pread(3, buf, 4, 2));
    volatile int neg = -1;
    CALL(readv(3, &iov, neg));
    CALL(preadv(3, &iov, 1, 0));
    CALL(preadv2(3, &iov, 1, 0, 0x12345));
    pthread_t th;
    int fd3 = 3;
    if (pthread_create(&th, NULL, first_read, &fd3) != 0 || pthread_join(th, NULL) != 0)
        return 1;
    CALL(close(77));
    CALL(dup(77));
    CALL(dup2(77, 78));
    CALL(dup3(3, 3, 0));
    CALL(dup2(3, 3));
    CALL(openat(77, "rel", O_RDONLY));
    CALL(openat(AT_FDCWD, "/nonexistent/e", O_RDONLY));
    CALL(creat("/nonexistent/e", 0600));
    CALL(stat("/nonexistent/e", &st));
    CALL(stat(path, &st));
    CALL(lstat("/nonexistent/e", &st));
    CALL(fstat(77, &st));
    CALL(fstat(3, &st));
    CALL(fstatat(AT_FDCWD, "/nonexistent/e", &st, 0));
    CALL(fstatat(AT_FDCWD, path, &st, 0x7000000));
    CALL(statx(AT_FDCWD, "/nonexistent/e", 0, STATX_SIZE, &sx));
    CALL(fopen("/nonexistent/e", "r") != NULL);
    CALL(fopen(path, "zz") != NULL);
    CALL(mmap(NULL, 4096, PROT_READ, MAP_SHARED, 77, 0) == MAP_FAILED);
    CALL(mmap(NULL, 0, PROT_READ, MAP_SHARED, 3, 0) == MAP_FAILED);
    CALL(munmap((void *)1, 4096));
    struct pollfd pf[2] = {{3, POLLIN, 0}, {77, POLLIN, 0}};
    CALL(poll(pf, 2, 0)); /* POLLNVAL for 77: success, errno untouched */
    int p[2];
    if (pipe(p) != 0)
        return 1;
    struct pollfd pp[2] = {{p[0], POLLIN, 0}, {78, POLLIN, 0}};
    CALL(poll(pp, 2, 0));
    CALL(select(-1, NULL, NULL, NULL, NULL));
    struct epoll_event evs[1];
    CALL(epoll_wait(77, evs, 1, 0));
    CALL(epoll_ctl(77, EPOLL_CTL_ADD, 3, NULL));
    CALL(execve("/nonexistent/e", (char *[]){"e", NULL}, (char *[]){NULL}));
    CALL(execvp("hk-no-such-program-e", (char *[]){"e", NULL}));
    CALL(close(3));
    CALL(close(3));
    return 0;
}
