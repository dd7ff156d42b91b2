/* hk_warn.c — tracing failure is silent to the program. run.sh runs it with
 * an unusable GPUSTARVE_DIR ("dir" mode: a regular file), and with a file
 * size limit that makes the trace writes fail mid-run ("fsize" mode); it
 * forks a child in both, and checks there is exactly one warning line on
 * stderr and the exit status is 3. */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
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

int main(int argc, char **argv)
{
    int fsize = argc > 1 && strcmp(argv[1], "fsize") == 0;
    if (fsize) {
        signal(SIGXFSZ, SIG_IGN);
        struct rlimit rl = {8192, 8192};
        setrlimit(RLIMIT_FSIZE, &rl);
    }
    busy(1);
    struct timespec ts = {0, 300 * 1000000L};
    nanosleep(&ts, NULL); /* let the writer hit the limit */
    pid_t pid = fork();
    if (pid == 0) {
        busy(2);
        nanosleep(&ts, NULL);
        _exit(0);
    }
    int st;
    waitpid(pid, &st, 0);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
        return 1;
    busy(3);
    return 3;
}
