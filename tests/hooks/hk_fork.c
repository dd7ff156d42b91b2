/* hk_fork.c — after fork the child writes its own file (FORKED, ppid), the
 * parent's pre-fork events are not duplicated in it, and the child's events
 * are not in the parent's file. The child ends with _exit, as DataLoader
 * workers do (os._exit). */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "hk_util.h"

static void make_file(const char *leaf, char *path, size_t cap)
{
    hk_tmp(path, cap, leaf);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (write(fd, "0123456789", 10) != 10)
        _exit(90);
    close(fd);
}

static int act(void)
{
    char a[4096], b[4096], c[4096], buf[16];
    make_file("before.dat", a, sizeof a);
    make_file("child.dat", b, sizeof b);
    make_file("after.dat", c, sizeof c);
    int fd = open(a, O_RDONLY);
    for (int i = 0; i < 5; i++)
        ASSERT_EQ(pread(fd, buf, 4, i), 4);
    pid_t pid = fork();
    if (pid == 0) {
        int f2 = open(b, O_RDONLY);
        for (int i = 0; i < 3; i++)
            if (pread(f2, buf, 2, i) != 2)
                _exit(91);
        if (pread(fd, buf, 1, 0) != 1) /* inherited fd keeps its path */
            _exit(92);
        close(f2);
        _exit(7);
    }
    int st = 0;
    ASSERT_EQ(waitpid(pid, &st, 0), pid);
    ASSERT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 7);
    int f3 = open(c, O_RDONLY);
    ASSERT_EQ(pread(f3, buf, 3, 0), 3);
    close(f3);
    close(fd);
    char pp[4096];
    FILE *pf = fopen(hk_tmp(pp, sizeof pp, "fork.pids"), "w");
    fprintf(pf, "%d %d\n", (int)getpid(), (int)pid);
    fclose(pf);
    return hk_report();
}

static int verify(const char *dir)
{
    char pp[4096];
    int ppid = 0, cpid = 0;
    FILE *pf = fopen(hk_tmp(pp, sizeof pp, "fork.pids"), "r");
    ASSERT_TRUE(pf && fscanf(pf, "%d %d", &ppid, &cpid) == 2);
    hk_file *files;
    int n = hk_load_dir(dir, &files);
    ASSERT_EQ(n, 2);
    hk_check_files(files, n);
    hk_file *p = hk_find(files, n, (uint64_t)ppid, 0);
    hk_file *c = hk_find(files, n, (uint64_t)cpid, 0);
    ASSERT_TRUE(p && c);
    if (!p || !c)
        return hk_report();
    ASSERT_EQ(c->info.flags & GS_HDR_F_FORKED, GS_HDR_F_FORKED);
    ASSERT_EQ(p->info.flags & GS_HDR_F_FORKED, 0);
    ASSERT_EQ(c->info.ppid, (uint64_t)ppid);
    const long long A = HK_ANY;
    hk_expect before = {GS_K_PREAD, "/before.dat", A, GS_FDK_FILE, 4, 4, A, A, A};
    hk_expect child = {GS_K_PREAD, "/child.dat", A, GS_FDK_FILE, 2, 2, A, A, A};
    hk_expect inherited = {GS_K_PREAD, "/before.dat", A, GS_FDK_FILE, 1, 1, 0, A, A};
    hk_expect after = {GS_K_PREAD, "/after.dat", A, GS_FDK_FILE, 3, 3, 0, A, A};
    ASSERT_EQ(hk_match(p, &before), 5);
    ASSERT_EQ(hk_match(c, &before), 0); /* not duplicated into the child */
    ASSERT_EQ(hk_match(c, &child), 3);
    ASSERT_EQ(hk_match(p, &child), 0);
    ASSERT_EQ(hk_match(c, &inherited), 1);
    ASSERT_EQ(hk_match(p, &after), 1);
    hk_expect cexit = {GS_K_EXIT, NULL, A, A, A, A, A, 7, 1};
    ASSERT_EQ(hk_match(c, &cexit), 1);
    ASSERT_EQ(hk_count(p, GS_K_EXIT, NULL), 1);
    ASSERT_TRUE(hk_count(c, GS_K_THREAD, NULL) >= 1);
    return hk_report();
}

int main(int argc, char **argv)
{
    return (argc > 2 && strcmp(argv[1], "verify") == 0) ? verify(argv[2]) : act();
}
