/* hk_exec.c — exec keeps tracing:
 *   stage 1 reads a file, then execve()s itself with an EMPTY environment
 *   (the hook must add LD_PRELOAD and GPUSTARVE_DIR back);
 *   stage 2 (same pid: file <host>-<pid>.1.gst, exec_seq 1) reads another
 *   file, then vfork()s a child that execv()s /bin/true (the exec hook must
 *   see a vfork child and neither lock nor flush), and waits for it.
 * argv: hk_exec [stage2 TMPDIR] | verify DIR */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "hk_util.h"

static void put_file(const char *path)
{
    int w = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (write(w, "0123456789", 10) != 10)
        _exit(90);
    close(w);
}

static int stage1(char *self)
{
    char a[4096], buf[16];
    hk_tmp(a, sizeof a, "exec1.dat");
    put_file(a);
    int fd = open(a, O_RDONLY);
    ASSERT_EQ(pread(fd, buf, 5, 0), 5);
    close(fd);
    char tmp[4096];
    hk_tmp(tmp, sizeof tmp, "");
    char *argv[] = {self, "stage2", tmp, NULL};
    char *envp[] = {NULL};
    execve("/proc/self/exe", argv, envp);
    perror("execve");
    return 1;
}

static int stage2(const char *tmp)
{
    char b[4096], buf[16];
    snprintf(b, sizeof b, "%s/exec2.dat", tmp);
    put_file(b);
    int fd = open(b, O_RDONLY);
    ASSERT_EQ(pread(fd, buf, 6, 0), 6);
    close(fd);
    pid_t pid = vfork();
    if (pid == 0) {
        char *argv[] = {"true", NULL};
        execv("/bin/true", argv);
        _exit(127);
    }
    int st = 0;
    ASSERT_EQ(waitpid(pid, &st, 0), pid);
    ASSERT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    char pp[4096];
    snprintf(pp, sizeof pp, "%s/exec.pids", tmp);
    FILE *pf = fopen(pp, "w");
    fprintf(pf, "%d %d\n", (int)getpid(), (int)pid);
    fclose(pf);
    return hk_report();
}

static int verify(const char *dir)
{
    char pp[4096];
    int me = 0, child = 0;
    FILE *pf = fopen(hk_tmp(pp, sizeof pp, "exec.pids"), "r");
    ASSERT_TRUE(pf && fscanf(pf, "%d %d", &me, &child) == 2);
    hk_file *files;
    int n = hk_load_dir(dir, &files);
    ASSERT_EQ(n, 3);
    hk_check_files(files, n);
    hk_file *f0 = hk_find(files, n, (uint64_t)me, 0);
    hk_file *f1 = hk_find(files, n, (uint64_t)me, 1);
    hk_file *fc = hk_find(files, n, (uint64_t)child, 0);
    ASSERT_TRUE(f0 && f1 && fc);
    if (!f0 || !f1 || !fc)
        return hk_report();
    ASSERT_TRUE(strstr(f1->name, ".1.gst") != NULL);
    hk_expect r1 = {GS_K_PREAD, "/exec1.dat", HK_ANY, GS_FDK_FILE, 5, 5, 0, HK_ANY, HK_ANY};
    hk_expect r2 = {GS_K_PREAD, "/exec2.dat", HK_ANY, GS_FDK_FILE, 6, 6, 0, HK_ANY, HK_ANY};
    ASSERT_EQ(hk_match(f0, &r1), 1);
    ASSERT_EQ(hk_match(f1, &r2), 1);
    ASSERT_EQ(hk_match(f1, &r1), 0);
    hk_expect ex = {GS_K_EXEC, "/proc/self/exe", HK_ANY, HK_ANY, HK_ANY, 0, HK_ANY, HK_ANY, HK_ANY};
    ASSERT_EQ(hk_match(f0, &ex), 1);
    ASSERT_EQ(f0->ev[f0->n - 1].e.kind, GS_K_EXEC); /* flushed right before the exec */
    /* the vfork child wrote nothing into its parent's file; /bin/true has its own */
    ASSERT_EQ(hk_count(f1, GS_K_EXEC, NULL), 0);
    ASSERT_EQ(hk_count(fc, GS_K_EXIT, NULL), 1);
    ASSERT_EQ(hk_count(f1, GS_K_EXIT, NULL), 1);
    return hk_report();
}

int main(int argc, char **argv)
{
    if (argc > 2 && strcmp(argv[1], "verify") == 0)
        return verify(argv[2]);
    if (argc > 2 && strcmp(argv[1], "stage2") == 0)
        return stage2(argv[2]);
    return stage1(argv[0]);
}
