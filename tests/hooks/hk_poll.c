/* hk_poll.c — poll, ppoll, select, pselect, epoll_wait, epoll_pwait are
 * recorded when they wait on a pipe or socket, and only then. */
#include <fcntl.h>
#include <poll.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <unistd.h>

#include "hk_util.h"

static int act(void)
{
    char path[4096];
    hk_tmp(path, sizeof path, "poll.dat");
    int p[2], sv[2];
    ASSERT_EQ(pipe(p), 0);
    ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    int file = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
    ASSERT_EQ(write(p[1], "x", 1), 1);

    struct pollfd pf[2] = {{file, POLLIN, 0}, {p[0], POLLIN, 0}};
    ASSERT_EQ(poll(pf, 2, 10), 2);
    struct pollfd only_file = {file, POLLIN, 0};
    ASSERT_EQ(poll(&only_file, 1, 0), 1); /* not recorded */
    struct timespec ts = {0, 5000000};
    struct pollfd ps = {sv[0], POLLIN, 0};
    ASSERT_EQ(ppoll(&ps, 1, &ts, NULL), 0);
    fd_set rd;
    FD_ZERO(&rd);
    FD_SET(file, &rd);
    FD_SET(sv[0], &rd);
    struct timeval tv = {0, 3000};
    int maxfd = (file > sv[0] ? file : sv[0]) + 1;
    ASSERT_EQ(select(maxfd, &rd, NULL, NULL, &tv), 1);
    FD_ZERO(&rd);
    FD_SET(p[0], &rd);
    ASSERT_EQ(pselect(p[0] + 1, &rd, NULL, NULL, NULL, NULL), 1);

    int ep = epoll_create1(0);
    struct epoll_event ev = {.events = EPOLLIN, .data.fd = p[0]};
    ASSERT_EQ(epoll_ctl(ep, EPOLL_CTL_ADD, p[0], &ev), 0);
    struct epoll_event out[4];
    ASSERT_EQ(epoll_wait(ep, out, 4, 7), 1);
    ASSERT_EQ(epoll_pwait(ep, out, 4, -1, NULL), 1);
    int ep2 = epoll_create1(0); /* holds nothing: its waits are not recorded */
    ASSERT_EQ(epoll_wait(ep2, out, 4, 0), 0);
    close(ep2);
    close(ep);
    close(file);
    close(p[0]);
    close(p[1]);
    close(sv[0]);
    close(sv[1]);
    return hk_report();
}

static int verify(const char *dir)
{
    const hk_file *f = hk_load_one(dir);
    if (!f)
        return hk_report();
    const long long A = HK_ANY;
    hk_expect once[] = {
        {GS_K_POLL, NULL, A, GS_FDK_PIPE, 2, 2, A, 11, A},
        {GS_K_PPOLL, NULL, A, GS_FDK_SOCKET, 1, 0, A, 6, A},
        {GS_K_SELECT, NULL, A, GS_FDK_SOCKET, A, 1, A, 4, A},
        {GS_K_PSELECT, NULL, A, GS_FDK_PIPE, A, 1, A, 0, A},
        {GS_K_EPOLL_WAIT, NULL, A, GS_FDK_OTHER, 4, 1, A, 8, A},
        {GS_K_EPOLL_PWAIT, NULL, A, GS_FDK_OTHER, 4, 1, A, 0, A},
    };
    hk_expect_all(f, once, sizeof once / sizeof once[0], 1);
    ASSERT_EQ(hk_count(f, GS_K_POLL, NULL), 1);
    ASSERT_EQ(hk_count(f, GS_K_EPOLL_WAIT, NULL), 1);
    return hk_report();
}

int main(int argc, char **argv)
{
    return (argc > 2 && strcmp(argv[1], "verify") == 0) ? verify(argv[2]) : act();
}
