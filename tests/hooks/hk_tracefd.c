/* hk_tracefd.c — the collector's trace file never becomes the program's and
 * never costs the program a descriptor number (docs/collector-safety.md).
 *
 *   hk_tracefd            (act, preloaded; HK_SHARED=1 under hk_noshare)
 *   hk_tracefd verify DIR [shared]
 *
 * Default: the trace file lives in the file thread's own descriptor table,
 * so the program's table holds no trace descriptor at all and its numbering
 * is exactly as untraced. Under hk_noshare (unshare refused, as in
 * containers) the file is held at >= 900 in the program's table: close() of
 * it and dup() from it fail EBADF (a number the program never opened),
 * dup2/dup3 onto it succeed and the trace moves, close_range/closefrom skip
 * it, and a raw dup3 over it is noticed before the next write.
 *
 * In both modes the program then closes everything (close_range(3, ~0U)),
 * opens 1,000 files for writing while events are flushed, and every one of
 * its files holds exactly what it wrote; the trace holds every event, from
 * before and after. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "hk_util.h"

#define NFILES 1000
#define NREADS 2000

static int find_trace_fd(void)
{
    return hk_fd_ending(".gst");
}

/* Size of the (one) trace file of this process in GPUSTARVE_DIR. */
static long long trace_size(void)
{
    const char *dir = getenv("GPUSTARVE_DIR");
    DIR *d = dir ? opendir(dir) : NULL;
    long long size = -1;
    struct dirent *de;
    char want[64];
    snprintf(want, sizeof want, "-%d.gst", (int)getpid());
    while (d && (de = readdir(d)) != NULL) {
        size_t l = strlen(de->d_name), wl = strlen(want);
        if (l > wl && strcmp(de->d_name + l - wl, want) == 0) {
            char p[PATH_MAX];
            struct stat st;
            snprintf(p, sizeof p, "%s/%s", dir, de->d_name);
            if (stat(p, &st) == 0)
                size = st.st_size;
        }
    }
    if (d)
        closedir(d);
    return size;
}

/* Wait (up to 20 s) until the writer has written at least one more frame:
 * synchronises with the flush instead of sleeping a guessed time. */
static void wait_flush(long long before)
{
    for (int i = 0; i < 4000 && trace_size() <= before; i++) {
        struct timespec ts = {0, 5 * 1000000L};
        nanosleep(&ts, NULL);
    }
    ASSERT_TRUE(trace_size() > before);
}

/* n preads of 8 bytes of a file made for the phase */
static void reads(const char *leaf, int n)
{
    char buf[8];
    int fd = hk_small_file(leaf);
    for (int i = 0; i < n; i++)
        ASSERT_EQ(pread(fd, buf, 8, 0), 8);
    close(fd);
}

static void check_content(const char *path, const char *want)
{
    char buf[256];
    int fd = open(path, O_RDONLY);
    ssize_t n = read(fd, buf, sizeof buf);
    close(fd);
    ASSERT_EQ(n, (long long)strlen(want));
    ASSERT_TRUE(n >= 0 && memcmp(buf, want, (size_t)n) == 0);
}

static void many_files(int trace)
{
    static int fds[NFILES];
    char path[4096], leaf[64], text[64];
    hk_tmp(path, sizeof path, "many");
    mkdir(path, 0700);
    int expect = 3;
    for (int i = 0; i < NFILES; i++) {
        snprintf(leaf, sizeof leaf, "many/%d", i);
        hk_tmp(path, sizeof path, leaf);
        fds[i] = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        if (trace < 0) {
            ASSERT_EQ(fds[i], expect); /* exactly the untraced numbers */
            expect++;
        } else {
            /* RATIONALE: in the program's table the writer's brief /proc
             * reads may take a number for a moment (docs/collector-safety.md):
             * only the collector's own number is never handed out */
            ASSERT_TRUE(fds[i] >= 3 && fds[i] != trace);
        }
        int n = snprintf(text, sizeof text, "file %d\n", i);
        ASSERT_EQ(write(fds[i], text, (size_t)n), n);
    }
    long long before = trace_size();
    reads("tfd1.dat", NREADS); /* flushed while the 1,000 files are open */
    wait_flush(before);
    for (int i = 0; i < NFILES; i++)
        ASSERT_EQ(close(fds[i]), 0);
    for (int i = 0; i < NFILES; i++) {
        snprintf(leaf, sizeof leaf, "many/%d", i);
        hk_tmp(path, sizeof path, leaf);
        snprintf(text, sizeof text, "file %d\n", i);
        check_content(path, text);
    }
}

static int act(void)
{
    int shared = getenv("HK_SHARED") != NULL;
    struct rlimit rl;
    getrlimit(RLIMIT_NOFILE, &rl);
    rl.rlim_cur = 1024 < rl.rlim_max ? 1024 : rl.rlim_max;
    setrlimit(RLIMIT_NOFILE, &rl);
    char path[4096];
    reads("tfd0.dat", 1);
    int t = find_trace_fd();
    if (!shared) {
        ASSERT_EQ(t, -1); /* nothing of ours in the program's table */
    } else {
        ASSERT_TRUE(t >= 900);
        ASSERT_TRUE(fcntl(t, F_GETFD) & FD_CLOEXEC);
        errno = 0;
        ASSERT_EQ(close(t), -1);
        ASSERT_EQ(errno, EBADF);
        errno = 0;
        ASSERT_EQ(dup(t), -1);
        ASSERT_EQ(errno, EBADF);
        errno = 0;
        ASSERT_EQ(dup2(t, 100), -1);
        ASSERT_EQ(errno, EBADF);
    }
    ASSERT_EQ(close_range(3, ~0U, 0), 0);
    if (shared)
        ASSERT_EQ(find_trace_fd(), t);
    many_files(shared ? t : -1);

    if (shared) {
        /* dup2 onto the collector's number: the program's call succeeds, the
         * number is the program's, the trace moves */
        hk_tmp(path, sizeof path, "dup2.dat");
        int p = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        ASSERT_EQ(dup2(p, t), t);
        ASSERT_EQ(write(t, "prog\n", 5), 5);
        long long before = trace_size();
        reads("tfd2.dat", NREADS);
        wait_flush(before);
        ASSERT_EQ(close(t), 0);
        ASSERT_EQ(close(p), 0);
        check_content(path, "prog\n");
        int t2 = find_trace_fd();
        ASSERT_TRUE(t2 >= 900 && t2 != t);
        closefrom(3);
        ASSERT_EQ(find_trace_fd(), t2);

        /* a raw system call the hooks cannot see: noticed before the next
         * write (device and inode), the trace is reopened elsewhere */
        hk_tmp(path, sizeof path, "raw.dat");
        int q = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        ASSERT_EQ(syscall(SYS_dup3, q, t2, 0), t2);
        close(q);
        before = trace_size();
        reads("tfd3.dat", NREADS);
        wait_flush(before);
        ASSERT_EQ(syscall(SYS_write, t2, "raw\n", 4), 4);
        ASSERT_EQ(syscall(SYS_close, t2), 0);
        check_content(path, "raw\n");
        int t3 = find_trace_fd();
        ASSERT_TRUE(t3 >= 900 && t3 != t2);
    } else {
        closefrom(3);
        ASSERT_EQ(dup2(0, 900), 900); /* any number is the program's */
        ASSERT_EQ(close(900), 0);
        ASSERT_EQ(find_trace_fd(), -1);
    }
    reads("tfd4.dat", 1);
    return hk_report();
}

static int verify(const char *dir, int shared)
{
    const hk_file *f = hk_load_one(dir);
    if (!f)
        return hk_report();
    static const struct {
        const char *path;
        long long n;
        int shared_only;
    } want[] = {{"/tfd0.dat", 1, 0}, {"/tfd1.dat", NREADS, 0}, {"/tfd2.dat", NREADS, 1},
                {"/tfd3.dat", NREADS, 1}, {"/tfd4.dat", 1, 0}};
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        hk_expect x = {GS_K_PREAD, want[i].path, HK_ANY, GS_FDK_FILE, 8, 8, 0, HK_ANY, HK_ANY};
        ASSERT_EQ(hk_match(f, &x), want[i].shared_only && !shared ? 0 : want[i].n);
    }
    ASSERT_EQ(hk_count(f, GS_K_EXIT, NULL), 1);
    const hk_ev *d = NULL;
    for (size_t i = 0; i < f->n; i++)
        if (f->ev[i].e.kind == GS_K_DROPS)
            d = &f->ev[i];
    ASSERT_TRUE(d != NULL);
    if (d) {
        ASSERT_EQ(d->e.aux, 0);  /* dropped */
        ASSERT_EQ(d->e.aux2, 0); /* lost */
    }
    return hk_report();
}

int main(int argc, char **argv)
{
    if (argc > 2 && strcmp(argv[1], "verify") == 0)
        return verify(argv[2], argc > 3 && strcmp(argv[3], "shared") == 0);
    return act();
}
