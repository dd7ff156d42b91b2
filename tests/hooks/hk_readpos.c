/* hk_readpos.c — a loader worker's reads of a regular file carry the file
 * position they read from (read_at, readv_at, __read_chk_at, format 1.6):
 * only after the process said it is a loader worker (gpustarve_role), only
 * for regular files and reads that returned data, and the program's file
 * position and errno stay as they were. */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "hk_util.h"

ssize_t __read_chk(int fd, void *buf, size_t n, size_t buflen);

typedef void (*role_fn)(const char *, uint64_t, uint32_t);

static int act(void)
{
    char path[4096], buf[8192];
    hk_tmp(path, sizeof path, "pos.dat");
    int w = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    memset(buf, 'x', sizeof buf);
    ASSERT_EQ(write(w, buf, sizeof buf), (ssize_t)sizeof buf);
    close(w);
    const role_fn role = (role_fn)dlsym(RTLD_DEFAULT, "gpustarve_role");
    ASSERT_TRUE(role != NULL);
    if (!role)
        return hk_report();

    int fd = open(path, O_RDONLY);
    ASSERT_EQ(read(fd, buf, 100), 100); /* no role yet: a plain read */
    role("trainer", 0, 0);
    ASSERT_EQ(read(fd, buf, 101), 101); /* a trainer's: plain */
    role("loader_worker", 1, 0);
    ASSERT_EQ(lseek(fd, 1000, SEEK_SET), 1000);
    errno = EAGAIN;
    ASSERT_EQ(read(fd, buf, 300), 300);
    ASSERT_EQ(errno, EAGAIN); /* the position's lookup keeps errno */
    struct iovec iov[2] = {{buf, 10}, {buf + 10, 20}};
    ASSERT_EQ(readv(fd, iov, 2), 30);
    ASSERT_EQ(__read_chk(fd, buf, 50, sizeof buf), 50);
    ASSERT_EQ(lseek(fd, 0, SEEK_CUR), 1380); /* tracing moved nothing */
    ASSERT_EQ(lseek(fd, 0, SEEK_END), 8192);
    ASSERT_EQ(read(fd, buf, 10), 0); /* at the end: nothing read, no position */
    close(fd);
    int p[2];
    ASSERT_EQ(pipe(p), 0);
    ASSERT_EQ(write(p[1], "abc", 3), 3);
    ASSERT_EQ(read(p[0], buf, 3), 3); /* a pipe has no position */
    close(p[0]);
    close(p[1]);
    return hk_report();
}

static int verify(const char *dir)
{
    const hk_file *f = hk_load_one(dir);
    if (!f)
        return hk_report();
    const long long A = HK_ANY;
    const long long F = GS_FDK_FILE;
    hk_expect once[] = {
        /* kind, path, fd, fdk, bytes, ret, offset, aux, aux2 */
        {GS_K_READ, "/pos.dat", A, F, 100, 100, -1, A, A},
        {GS_K_READ, "/pos.dat", A, F, 101, 101, -1, A, A},
        {GS_K_READ_AT, "/pos.dat", A, F, 300, 300, 1000, A, A},
        {GS_K_READV_AT, "/pos.dat", A, F, 30, 30, 1300, 2, A},
        {GS_K_READ_CHK_AT, "/pos.dat", A, F, 50, 50, 1330, A, A},
        {GS_K_READ, "/pos.dat", A, F, 10, 0, -1, A, A},
        {GS_K_READ, NULL, A, GS_FDK_PIPE, 3, 3, -1, A, A},
    };
    hk_expect_all(f, once, sizeof once / sizeof once[0], 1);
    ASSERT_EQ(hk_count(f, GS_K_READ_AT, NULL), 1);
    ASSERT_EQ(hk_count(f, GS_K_READV_AT, NULL), 1);
    ASSERT_EQ(hk_count(f, GS_K_READ_CHK_AT, NULL), 1);
    return hk_report();
}

int main(int argc, char **argv)
{
    return (argc > 2 && strcmp(argv[1], "verify") == 0) ? verify(argv[2]) : act();
}
