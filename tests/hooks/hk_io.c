/* hk_io.c — every POSIX open/close/dup/read hook called from main, and the
 * fields each records (table-driven). */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "hk_util.h"

ssize_t __read_chk(int fd, void *buf, size_t n, size_t buflen);
ssize_t __pread_chk(int fd, void *buf, size_t n, off_t off, size_t buflen);
ssize_t __pread64_chk(int fd, void *buf, size_t n, off64_t off, size_t buflen);

static int act(void)
{
    char path[4096], tmp[4096], cpath[4096], buf[8192];
    hk_tmp(path, sizeof path, "io.dat");
    hk_tmp(tmp, sizeof tmp, "");
    hk_tmp(cpath, sizeof cpath, "creat.dat");
    int w = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    memset(buf, 'x', sizeof buf);
    for (int i = 0; i < 8; i++)
        if (write(w, buf, sizeof buf) != (ssize_t)sizeof buf)
            return 1;
    close(w);

    int fd = open(path, O_RDONLY);
    struct iovec iov[2] = {{buf, 10}, {buf + 10, 20}};
    ASSERT_EQ(read(fd, buf, 100), 100);
    ASSERT_EQ(pread(fd, buf, 200, 300), 200);
    ASSERT_EQ(pread64(fd, buf, 201, 301), 201);
    ASSERT_EQ(readv(fd, iov, 2), 30);
    ASSERT_EQ(preadv(fd, iov, 2, 400), 30);
    ASSERT_EQ(preadv64(fd, iov, 2, 401), 30);
    ASSERT_EQ(preadv2(fd, iov, 2, 402, 0), 30);
    ASSERT_EQ(preadv2(fd, iov, 2, -1, 0), 30);
    ASSERT_EQ(preadv64v2(fd, iov, 2, 403, 0), 30);
    ASSERT_EQ(__read_chk(fd, buf, 50, sizeof buf), 50);
    ASSERT_EQ(__pread_chk(fd, buf, 60, 500, sizeof buf), 60);
    ASSERT_EQ(__pread64_chk(fd, buf, 61, 501, sizeof buf), 61);
    int d = dup(fd);
    ASSERT_EQ(dup2(fd, 50), 50);
    ASSERT_EQ(dup3(fd, 51, O_CLOEXEC), 51);
    ASSERT_EQ(pread(51, buf, 7, 0), 7);
    close(d);
    close(50);
    close(51);
    close(fd);

    fd = open64(path, O_RDONLY);
    close(fd);
    int dirfd = open(tmp, O_RDONLY | O_DIRECTORY);
    fd = openat(dirfd, "io.dat", O_RDONLY);
    ASSERT_EQ(pread(fd, buf, 9, 9), 9);
    close(fd);
    fd = openat64(AT_FDCWD, path, O_RDONLY);
    close(fd);
    fd = openat(dirfd, "at.dat", O_WRONLY | O_CREAT | O_TRUNC, 0640);
    close(fd);
    close(dirfd);
    fd = creat(cpath, 0600);
    close(fd);
    ASSERT_EQ(open("/nonexistent/hk", O_RDONLY), -1);
    ASSERT_EQ(read(-1, buf, 5), -1);
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
        {GS_K_OPEN, "/io.dat", A, F, A, A, A, O_WRONLY | O_CREAT | O_TRUNC, A},
        {GS_K_READ, "/io.dat", A, F, 100, 100, A, A, A},
        {GS_K_PREAD, "/io.dat", A, F, 200, 200, 300, A, A},
        {GS_K_PREAD64, "/io.dat", A, F, 201, 201, 301, A, A},
        {GS_K_READV, "/io.dat", A, F, 30, 30, A, 2, A},
        {GS_K_PREADV, "/io.dat", A, F, 30, 30, 400, 2, A},
        {GS_K_PREADV64, "/io.dat", A, F, 30, 30, 401, 2, A},
        {GS_K_PREADV2, "/io.dat", A, F, 30, 30, 402, 2, 0},
        {GS_K_PREADV2, "/io.dat", A, F, 30, 30, -1, 2, 0},
        {GS_K_PREADV64V2, "/io.dat", A, F, 30, 30, 403, 2, 0},
        {GS_K_READ_CHK, "/io.dat", A, F, 50, 50, A, A, A},
        {GS_K_PREAD_CHK, "/io.dat", A, F, 60, 60, 500, A, A},
        {GS_K_PREAD64_CHK, "/io.dat", A, F, 61, 61, 501, A, A},
        {GS_K_DUP, "/io.dat", A, F, A, A, A, A, A},
        {GS_K_DUP2, "/io.dat", A, F, A, 50, A, A, A},
        {GS_K_DUP3, "/io.dat", A, F, A, 51, A, O_CLOEXEC, A},
        {GS_K_PREAD, "/io.dat", 51, F, 7, 7, 0, A, A}, /* path inherited by dup3 */
        {GS_K_CLOSE, "/io.dat", 50, F, A, 0, A, A, A},
        {GS_K_OPEN64, "/io.dat", A, F, A, A, A, O_RDONLY, A},
        {GS_K_PREAD, "/io.dat", A, F, 9, 9, 9, A, A}, /* openat joined the dir path */
        {GS_K_OPENAT64, "/io.dat", A, F, A, A, A, A, A},
        {GS_K_OPENAT, "/at.dat", A, F, A, A, A, O_WRONLY | O_CREAT | O_TRUNC, 0640},
        {GS_K_CREAT, "/creat.dat", A, F, A, A, A, O_CREAT | O_WRONLY | O_TRUNC, A},
        {GS_K_OPEN, "/nonexistent/hk", -1, A, A, -1, A, A, A},
        {GS_K_READ, "", -1, A, 5, -1, A, A, A},
    };
    hk_expect_all(f, once, sizeof once / sizeof once[0], 1);
    /* openat of the directory-relative name is stored as dir + "/" + name */
    const hk_ev *oa = hk_first(f, GS_K_OPENAT, NULL);
    ASSERT_TRUE(oa && oa->str && oa->str[0] == '/' && strstr(oa->str, "/io.dat"));
    ASSERT_TRUE(hk_count(f, GS_K_THREAD, NULL) >= 1);
    ASSERT_EQ(hk_count(f, GS_K_EXIT, NULL), 1);
    ASSERT_TRUE(hk_count(f, GS_K_DROPS, NULL) >= 1);
    const hk_ev *ex = hk_first(f, GS_K_EXIT, NULL);
    ASSERT_TRUE(ex && ex->e.aux == 0 && ex->e.aux2 == 0);
    return hk_report();
}

int main(int argc, char **argv)
{
    return (argc > 2 && strcmp(argv[1], "verify") == 0) ? verify(argv[2]) : act();
}
