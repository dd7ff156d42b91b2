/* hk_stat.c — every stat-family hook, including the pre-2.33 __xstat entry
 * points (reached through dlsym, as an old binary's import would). */
#include <dlfcn.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hk_util.h"

typedef int (*xstat_fn)(int, const char *, struct stat *);
typedef int (*fxstat_fn)(int, int, struct stat *);
typedef int (*fxstatat_fn)(int, int, const char *, struct stat *, int);

static int act(void)
{
    char path[4096], tmp[4096];
    hk_tmp(path, sizeof path, "st.dat");
    hk_tmp(tmp, sizeof tmp, "");
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    ASSERT_EQ(write(fd, "12345", 5), 5);
    struct stat st;
    struct stat64 st64;
    struct statx sx;
    ASSERT_EQ(stat(path, &st), 0);
    ASSERT_EQ(st.st_size, 5);
    ASSERT_EQ(stat64(path, &st64), 0);
    ASSERT_EQ(lstat(path, &st), 0);
    ASSERT_EQ(lstat64(path, &st64), 0);
    ASSERT_EQ(fstat(fd, &st), 0);
    ASSERT_EQ(fstat64(fd, &st64), 0);
    int dirfd = open(tmp, O_RDONLY | O_DIRECTORY);
    ASSERT_EQ(fstatat(dirfd, "st.dat", &st, 0), 0);
    ASSERT_EQ(fstatat64(dirfd, "st.dat", &st64, AT_SYMLINK_NOFOLLOW), 0);
    ASSERT_EQ(statx(dirfd, "st.dat", 0, STATX_SIZE, &sx), 0);
    ASSERT_EQ(sx.stx_size, 5);
    ASSERT_EQ(stat("/nonexistent/st", &st), -1);
    xstat_fn xs = (xstat_fn)dlsym(RTLD_DEFAULT, "__xstat");
    xstat_fn xs64 = (xstat_fn)dlsym(RTLD_DEFAULT, "__xstat64");
    xstat_fn lxs = (xstat_fn)dlsym(RTLD_DEFAULT, "__lxstat");
    xstat_fn lxs64 = (xstat_fn)dlsym(RTLD_DEFAULT, "__lxstat64");
    fxstat_fn fxs = (fxstat_fn)dlsym(RTLD_DEFAULT, "__fxstat");
    fxstat_fn fxs64 = (fxstat_fn)dlsym(RTLD_DEFAULT, "__fxstat64");
    fxstatat_fn fxa = (fxstatat_fn)dlsym(RTLD_DEFAULT, "__fxstatat");
    fxstatat_fn fxa64 = (fxstatat_fn)dlsym(RTLD_DEFAULT, "__fxstatat64");
    ASSERT_TRUE(xs && xs64 && lxs && lxs64 && fxs && fxs64 && fxa && fxa64);
    if (xs && xs64 && lxs && lxs64 && fxs && fxs64 && fxa && fxa64) {
        ASSERT_EQ(xs(1, path, &st), 0);
        ASSERT_EQ(st.st_size, 5);
        ASSERT_EQ(xs64(1, path, &st), 0);
        ASSERT_EQ(lxs(1, path, &st), 0);
        ASSERT_EQ(lxs64(1, path, &st), 0);
        ASSERT_EQ(fxs(1, fd, &st), 0);
        ASSERT_EQ(fxs64(1, fd, &st), 0);
        ASSERT_EQ(fxa(1, dirfd, "st.dat", &st, 0), 0);
        ASSERT_EQ(fxa64(1, dirfd, "st.dat", &st, 0), 0);
    }
    close(dirfd);
    close(fd);
    return hk_report();
}

static int verify(const char *dir)
{
    const hk_file *f = hk_load_one(dir);
    if (!f)
        return hk_report();
    const long long A = HK_ANY;
    const long long F = GS_FDK_FILE;
    const long long D = GS_FDK_DIR;
    hk_expect once[] = {
        {GS_K_STAT, "/st.dat", -1, A, A, 0, A, A, A},
        {GS_K_STAT64, "/st.dat", -1, A, A, 0, A, A, A},
        {GS_K_LSTAT, "/st.dat", -1, A, A, 0, A, A, A},
        {GS_K_LSTAT64, "/st.dat", -1, A, A, 0, A, A, A},
        {GS_K_FSTAT, "/st.dat", A, F, A, 0, A, A, A},
        {GS_K_FSTAT64, "/st.dat", A, F, A, 0, A, A, A},
        {GS_K_FSTATAT, "/st.dat", A, D, A, 0, A, 0, A},
        {GS_K_FSTATAT64, "/st.dat", A, D, A, 0, A, AT_SYMLINK_NOFOLLOW, A},
        {GS_K_STATX, "/st.dat", A, D, A, 0, A, 0, STATX_SIZE},
        {GS_K_STAT, "/nonexistent/st", -1, A, A, -1, A, A, A},
        {GS_K_XSTAT, "/st.dat", -1, A, A, 0, A, A, A},
        {GS_K_XSTAT64, "/st.dat", -1, A, A, 0, A, A, A},
        {GS_K_LXSTAT, "/st.dat", -1, A, A, 0, A, A, A},
        {GS_K_LXSTAT64, "/st.dat", -1, A, A, 0, A, A, A},
        {GS_K_FXSTAT, "/st.dat", A, F, A, 0, A, A, A},
        {GS_K_FXSTAT64, "/st.dat", A, F, A, 0, A, A, A},
        {GS_K_FXSTATAT, "/st.dat", A, D, A, 0, A, 0, A},
        {GS_K_FXSTATAT64, "/st.dat", A, D, A, 0, A, 0, A},
    };
    hk_expect_all(f, once, sizeof once / sizeof once[0], 1);
    return hk_report();
}

int main(int argc, char **argv)
{
    return (argc > 2 && strcmp(argv[1], "verify") == 0) ? verify(argv[2]) : act();
}
