/* hk_warn.c — tracing failure is silent to the program. run.sh runs it with
 * an unusable GPUSTARVE_DIR ("dir" mode: a regular file), and with a file
 * size limit that makes the trace writes fail mid-run ("fsize" mode); it
 * forks a child in both, and checks there is exactly one warning line on
 * stderr and the exit status is 3. */
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static void busy(int salt)
{
    char p[64];
    struct stat st;
    for (int i = 0; i < 20000; i++) {
        snprintf(p, sizeof p, "/nonexistent/%d/%d/%x", salt, i, i * 2654435761u);
        stat(p, &st);
    }
}

enum { rl_bytes = 8192 };

/* Until the writer has hit the file size limit (its trace file has reached
 * it): the fork below then happens after tracing stopped. Polled, not slept;
 * 60 s at most. */
static void wait_for_limit(const char *dir, off_t limit)
{
    for (int i = 0; dir && i < 6000; i++) {
        DIR *d = opendir(dir);
        struct dirent *de;
        int reached = 0;
        while (d && (de = readdir(d))) {
            char p[4096];
            struct stat st;
            snprintf(p, sizeof p, "%s/%s", dir, de->d_name);
            if (strstr(de->d_name, ".gst") && stat(p, &st) == 0 && st.st_size >= limit)
                reached = 1;
        }
        if (d)
            closedir(d);
        if (reached)
            return;
        struct timespec ts = {0, 10 * 1000000L};
        nanosleep(&ts, NULL);
    }
}

int main(int argc, char **argv)
{
    int fsize = argc > 1 && strcmp(argv[1], "fsize") == 0;
    if (fsize) {
        signal(SIGXFSZ, SIG_IGN);
        struct rlimit rl = {rl_bytes, rl_bytes};
        setrlimit(RLIMIT_FSIZE, &rl);
    }
    busy(1);
    if (fsize)
        wait_for_limit(getenv("GPUSTARVE_DIR"), (off_t)rl_bytes);
    pid_t pid = fork();
    if (pid == 0) {
        busy(2);
        _exit(0);
    }
    int st;
    waitpid(pid, &st, 0);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
        return 1;
    busy(3);
    return 3;
}
