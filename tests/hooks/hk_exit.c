/* hk_exit.c — every way out flushes and writes one EXIT record:
 *   hk_exit exit|_exit|_Exit|term|return|kill  (act)
 *   hk_exit verify DIR MODE                       (check)
 * exit(3), _exit(4), _Exit(5), SIGTERM, return 6 from main; "kill" waits
 * until a periodic flush has put its reads on disk (it reads its own trace
 * back) and dies by SIGKILL (no EXIT; frames so far readable). */
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "hk_util.h"

static int act(const char *mode)
{
    char path[4096], buf[8];
    hk_tmp(path, sizeof path, "exit.dat");
    int w = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (write(w, "12345678", 8) != 8)
        return 1;
    close(w);
    int fd = open(path, O_RDONLY);
    for (int i = 0; i < 3; i++)
        if (pread(fd, buf, 8, 0) != 8)
            return 1;
    if (strcmp(mode, "exit") == 0)
        exit(3);
    if (strcmp(mode, "_exit") == 0)
        _exit(4);
    if (strcmp(mode, "_Exit") == 0)
        _Exit(5);
    if (strcmp(mode, "term") == 0) {
        raise(SIGTERM);
        for (;;)
            pause();
    }
    if (strcmp(mode, "kill") == 0) {
        /* polled, not slept: how long a flush takes depends on the machine */
        const char *dir = getenv("GPUSTARVE_DIR");
        hk_expect reads = {GS_K_PREAD, "/exit.dat", HK_ANY, GS_FDK_FILE, 8, 8, 0, HK_ANY, HK_ANY};
        for (int i = 0; dir && i < 6000; i++) { /* 60 s at most */
            hk_file *files = NULL;
            int n = hk_load_dir(dir, &files);
            if (n == 1 && hk_match(&files[0], &reads) == 3)
                break;
            struct timespec ts = {0, 10 * 1000000L};
            nanosleep(&ts, NULL);
        }
        raise(SIGKILL);
    }
    return 6;
}

static int verify(const char *dir, const char *mode)
{
    const hk_file *f = hk_load_one(dir);
    if (!f)
        return hk_report();
    hk_expect reads = {GS_K_PREAD, "/exit.dat", HK_ANY, GS_FDK_FILE, 8, 8, 0, HK_ANY, HK_ANY};
    ASSERT_EQ(hk_match(f, &reads), 3);
    static const struct {
        const char *mode;
        long long status, how;
    } want[] = {{"exit", 3, 0}, {"_exit", 4, 1}, {"_Exit", 5, 1}, {"term", SIGTERM, 2},
                {"return", 6, 0}};
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        if (strcmp(mode, want[i].mode) != 0)
            continue;
        hk_expect x = {GS_K_EXIT, NULL, HK_ANY, HK_ANY, HK_ANY, HK_ANY, HK_ANY, want[i].status,
                       want[i].how};
        ASSERT_EQ(hk_match(f, &x), 1);
        ASSERT_EQ(hk_count(f, GS_K_EXIT, NULL), 1);
        ASSERT_EQ(f->ev[f->n - 1].e.kind, GS_K_EXIT); /* the last record */
    }
    if (strcmp(mode, "kill") == 0)
        ASSERT_EQ(hk_count(f, GS_K_EXIT, NULL), 0);
    return hk_report();
}

int main(int argc, char **argv)
{
    if (argc > 3 && strcmp(argv[1], "verify") == 0)
        return verify(argv[2], argv[3]);
    return act(argc > 1 ? argv[1] : "return");
}
