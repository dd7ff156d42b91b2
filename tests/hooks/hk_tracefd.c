/* hk_tracefd.c — the program cannot close or dup2/dup3 over the collector's
 * output fd (EBADF), which sits at >= 900 with close-on-exec; tracing goes on
 * afterwards. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "hk_util.h"

static int find_trace_fd(void)
{
    for (int fd = 0; fd < 2048; fd++) {
        char link[64], target[PATH_MAX];
        snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
        ssize_t n = readlink(link, target, sizeof target - 1);
        if (n > 4) {
            target[n] = 0;
            if (strcmp(target + n - 4, ".gst") == 0)
                return fd;
        }
    }
    return -1;
}

static int act(void)
{
    char path[4096], buf[8];
    hk_tmp(path, sizeof path, "tfd.dat");
    int w = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    ASSERT_EQ(write(w, "12345678", 8), 8);
    close(w);
    int t = find_trace_fd();
    ASSERT_TRUE(t >= 900);
    ASSERT_TRUE(fcntl(t, F_GETFD) & FD_CLOEXEC);
    errno = 0;
    ASSERT_EQ(close(t), -1);
    ASSERT_EQ(errno, EBADF);
    errno = 0;
    ASSERT_EQ(dup2(0, t), -1);
    ASSERT_EQ(errno, EBADF);
    errno = 0;
    ASSERT_EQ(dup3(0, t, 0), -1);
    ASSERT_EQ(errno, EBADF);
    ASSERT_TRUE(fcntl(t, F_GETFD) >= 0); /* still open */
    int fd = open(path, O_RDONLY);
    ASSERT_EQ(pread(fd, buf, 8, 0), 8);
    close(fd);
    return hk_report();
}

static int verify(const char *dir)
{
    hk_file *files;
    int n = hk_load_dir(dir, &files);
    ASSERT_EQ(n, 1);
    if (n < 1)
        return hk_report();
    hk_check_files(files, n);
    hk_expect after = {GS_K_PREAD, "/tfd.dat", HK_ANY, GS_FDK_FILE, 8, 8, 0, HK_ANY, HK_ANY};
    ASSERT_EQ(hk_match(&files[0], &after), 1);
    ASSERT_EQ(hk_count(&files[0], GS_K_EXIT, NULL), 1);
    return hk_report();
}

int main(int argc, char **argv)
{
    return (argc > 2 && strcmp(argv[1], "verify") == 0) ? verify(argv[2]) : act();
}
