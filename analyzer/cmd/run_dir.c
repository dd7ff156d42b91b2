/* run_dir.c — the run directory of `gpustarve run`: made (private, 0700) or
 * claimed, one run at a time, and looked at again when the command is done.
 *
 * Responsible for: making -o DIR with its missing parents, or a new
 * gpustarve-YYYYMMDD-HHMMSS; refusing a DIR that holds traces (unless
 * --append) or that another run is using, by a lock file (flock on
 * .gpustarve-run.lock, holding the pid of the run that holds it) taken
 * before the command starts and given back when it is done; and saying
 * whether a directory is still the one it was.
 *
 * Must never: touch anything in a directory it refuses, follow a link or
 * open a FIFO planted as the lock file, remove a lock file another run
 * holds, or remove a directory it did not make.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cmd/cli_util.h"
#include "cmd/run_dir.h"
#include "gs_trace.h"

#define LOCK_NAME ".gpustarve-run.lock"
/* a lock file replaced under us this many times in a row: give up */
#define LOCK_TRIES 16

/* RATIONALE: the held descriptor keeps the directory's inode from being
 * reused, so a new directory of the same name never passes for it; a
 * removed directory has no link left. */
enum gs_dir_fate gs_dir_fate(const char *path, int fd, char *moved_to, size_t n)
{
    struct stat was, now;
    if (n)
        moved_to[0] = '\0';
    if (fstat(fd, &was) != 0)
        return GS_DIR_UNREACHABLE;
    const int there = stat(path, &now) == 0;
    if (!there && errno != ENOENT && errno != ENOTDIR)
        return GS_DIR_UNREACHABLE;
    if (there && now.st_dev == was.st_dev && now.st_ino == was.st_ino)
        return GS_DIR_SAME;
    if (was.st_nlink == 0)
        return there ? GS_DIR_REPLACED : GS_DIR_REMOVED;
    char link[64];
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    const ssize_t got = n ? readlink(link, moved_to, n - 1) : -1;
    if (got > 0)
        moved_to[got] = '\0';
    return GS_DIR_MOVED;
}

/* ---- the lock ---------------------------------------------------------------------- */

/* RATIONALE: flock, not a file made with O_EXCL: the kernel lets go of it
 * when the run dies however it dies (SIGKILL included), so a stale lock
 * file blocks nothing and no pid has to be trusted (a dead run's pid may
 * be another process's by now). The pid written in it only names the
 * holder in the message. */
enum lock_got { LOCK_HELD, LOCK_BUSY, LOCK_UNSUPPORTED, LOCK_FAILED };

static void lock_path(char *out, size_t n, const char *dir)
{
    snprintf(out, n, "%s/%s", dir, LOCK_NAME);
}

/* 1 when fd is the file at path now. */
static int still_there(int fd, const char *path)
{
    struct stat a, b;
    return fstat(fd, &a) == 0 && stat(path, &b) == 0 && a.st_dev == b.st_dev &&
           a.st_ino == b.st_ino;
}

/* The live process a lock file names, or 0. */
static long lock_holder(int fd)
{
    char buf[32];
    const ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
    if (n <= 0)
        return 0;
    buf[n] = '\0';
    const long pid = strtol(buf, NULL, 10);
    if (pid <= 0 || pid > INT_MAX)
        return 0;
    return kill((pid_t)pid, 0) == 0 || errno == EPERM ? pid : 0;
}

/* Take dir's lock: exclusive, or shared for --append (two appending runs
 * may share a directory; neither may share it with a run that wants it
 * alone). *fd the held lock with LOCK_HELD; *holder the pid of the run
 * holding it with LOCK_BUSY (0: unknown); errno with LOCK_UNSUPPORTED and
 * LOCK_FAILED. */
static enum lock_got lock_take(const char *dir, int shared, int *fd, long *holder)
{
    char path[PATH_MAX + 32];
    lock_path(path, sizeof path, dir);
    *fd = -1;
    *holder = 0;
    for (int i = 0; i < LOCK_TRIES; i++) {
        const int f = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0600);
        if (f < 0)
            return LOCK_FAILED;
        struct stat st;
        if (fstat(f, &st) != 0 || !S_ISREG(st.st_mode)) {
            close(f);
            errno = EINVAL;
            return LOCK_FAILED;
        }
        if (flock(f, (shared ? LOCK_SH : LOCK_EX) | LOCK_NB) != 0) {
            const int e = errno;
            if (e == EWOULDBLOCK)
                *holder = lock_holder(f);
            close(f);
            errno = e;
            return e == EWOULDBLOCK ? LOCK_BUSY : LOCK_UNSUPPORTED;
        }
        /* the run that held it may have removed it as we opened it */
        if (!still_there(f, path)) {
            close(f);
            continue;
        }
        if (!shared && ftruncate(f, 0) == 0) {
            /* the pid only names the holder in a message: not writing it
             * is no failure */
            char pid[32];
            const int n = snprintf(pid, sizeof pid, "%ld\n", (long)getpid());
            const ssize_t w = pwrite(f, pid, (size_t)n, 0);
            (void)w;
        }
        *fd = f;
        return LOCK_HELD;
    }
    errno = EAGAIN;
    return LOCK_FAILED;
}

/* Give the lock back; its file goes when no other run holds it. */
static void lock_give(int fd, const char *dir)
{
    if (fd < 0)
        return;
    char path[PATH_MAX + 32];
    lock_path(path, sizeof path, dir);
    if (flock(fd, LOCK_EX | LOCK_NB) == 0 && still_there(fd, path))
        unlink(path);
    close(fd);
}

/* ---- making the directory ------------------------------------------------------- */

/* mkdir -p for the parents of path (not path itself): each missing one is
 * made with the mode mkdir(1) -p gives (0777 less the umask). Returns 0, or
 * -1 with errno set and the component that failed in failed. */
static int make_parents(const char *path, char *failed, size_t failedlen)
{
    char buf[PATH_MAX];
    if (snprintf(buf, sizeof buf, "%s", path) >= (int)sizeof buf) {
        errno = ENAMETOOLONG;
        snprintf(failed, failedlen, "%s", path);
        return -1;
    }
    size_t n = strlen(buf);
    while (n > 1 && buf[n - 1] == '/') /* "a/b/" names a/b */
        buf[--n] = '\0';
    /* with the trailing slashes gone, every '/' ends a parent */
    for (char *s = buf + 1; *s; s++) {
        if (*s != '/' || s[-1] == '/')
            continue;
        *s = '\0';
        const int rc = mkdir(buf, 0777);
        if (rc != 0 && errno != EEXIST) {
            snprintf(failed, failedlen, "%s", buf);
            return -1;
        }
        *s = '/';
    }
    return 0;
}

/* mkdir want (and its parents); *created says whether this call made it.
 * 0, or -1 (message printed). */
static int make_wanted(const char *want, int *created)
{
    char failed[PATH_MAX];
    int rc = mkdir(want, 0700);
    if (rc != 0 && errno == ENOENT) {
        if (make_parents(want, failed, sizeof failed) != 0) {
            gs_cli_error("cannot create run directory '%s': %s: %s", want, failed,
                         strerror(errno));
            return -1;
        }
        rc = mkdir(want, 0700);
    }
    if (rc == 0) {
        *created = 1;
    } else if (errno == EEXIST) {
        struct stat st;
        if (stat(want, &st) != 0 || !S_ISDIR(st.st_mode)) {
            gs_cli_error("cannot use run directory '%s': exists and is not a directory", want);
            return -1;
        }
    } else {
        gs_cli_error("cannot create run directory '%s': %s", want, strerror(errno));
        return -1;
    }
    if (access(want, W_OK | X_OK) != 0) {
        gs_cli_error("cannot write to run directory '%s': %s", want, strerror(errno));
        return -1;
    }
    return 0;
}

/* 0 when want holds no trace yet; -1 (message printed) otherwise. */
static int holds_no_traces(const char *want)
{
    gs_run_files have;
    if (gs_run_files_list(&have, want) != GS_OK) {
        gs_cli_error("cannot read run directory '%s': %s", want, strerror(errno));
        return -1;
    }
    const size_t n = have.n;
    gs_run_files_free(&have);
    if (!n)
        return 0;
    /* RATIONALE: a report reads every trace of a directory; two runs in
     * one would be reported as one */
    gs_cli_error("run directory '%s' already holds %zu trace file%s of an earlier run; a report "
                 "would mix the two runs. Use another directory, or --append to add this run to "
                 "them",
                 want, n, n == 1 ? "" : "s");
    return -1;
}

/* Claim an existing or just-made want for this run (the lock). 0, or -1
 * (message printed; the lock, if taken, given back). */
static int claim(gs_run_dir *rd, const char *want, int append)
{
    long holder = 0;
    switch (lock_take(want, append, &rd->lock_fd, &holder)) {
    case LOCK_HELD: break;
    case LOCK_BUSY:
        if (append)
            break; /* a run that wants it alone is there: --append adds to it */
        if (holder)
            gs_cli_error("run directory '%s' is in use by another gpustarve run (pid %ld). Use "
                         "another directory, or --append to add this run to it",
                         want, holder);
        else
            gs_cli_error("run directory '%s' is in use by another gpustarve run. Use another "
                         "directory, or --append to add this run to it",
                         want);
        return -1;
    case LOCK_UNSUPPORTED:
        gs_cli_msg(1, "cannot lock run directory '%s' (%s): a run started into it at the same "
                      "time would not be refused",
                   want, strerror(errno));
        break;
    case LOCK_FAILED:
        gs_cli_error("cannot lock run directory '%s': %s/%s: %s", want, want, LOCK_NAME,
                     strerror(errno));
        return -1;
    }
    /* the check again, now that no other run can start into it */
    if (!append && holds_no_traces(want) != 0) {
        lock_give(rd->lock_fd, want);
        rd->lock_fd = -1;
        return -1;
    }
    return 0;
}

static int make_new(gs_run_dir *rd)
{
    char base[64];
    const time_t now = time(NULL);
    struct tm tm;
    localtime_r(&now, &tm);
    strftime(base, sizeof base, "gpustarve-%Y%m%d-%H%M%S", &tm);
    char name[96];
    for (int i = 1; i < 10000; i++) {
        if (i == 1)
            snprintf(name, sizeof name, "%s", base);
        else
            snprintf(name, sizeof name, "%s-%d", base, i);
        if (mkdir(name, 0700) == 0) { /* new: no other run can be in it */
            rd->created = 1;
            rd->name = strdup(name);
            return rd->name ? 0 : -1;
        }
        if (errno != EEXIST) {
            gs_cli_error("cannot create run directory '%s': %s", name, strerror(errno));
            return -1;
        }
    }
    gs_cli_error("cannot create run directory '%s-N': too many exist", base);
    return -1;
}

int gs_run_dir_open(gs_run_dir *rd, const char *want, int append)
{
    memset(rd, 0, sizeof *rd);
    rd->lock_fd = rd->dir_fd = -1;
    if (!want) {
        if (make_new(rd) != 0)
            return -1;
    } else {
        /* a directory that holds traces is refused before it is touched */
        if (make_wanted(want, &rd->created) != 0 ||
            (!rd->created && !append && holds_no_traces(want) != 0))
            return -1;
        if (claim(rd, want, append) != 0) {
            if (rd->created)
                rmdir(want); /* made for nothing (another run's lock file keeps it) */
            return -1;
        }
        rd->name = strdup(want);
    }
    if (rd->name)
        rd->dir_fd = open(rd->name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (!rd->name || rd->dir_fd < 0) {
        gs_cli_error("run directory '%s': %s", want ? want : "(new)", strerror(errno));
        gs_run_dir_close(rd, 1);
        return -1;
    }
    return 0;
}

void gs_run_dir_close(gs_run_dir *rd, int remove_made)
{
    if (rd->name) {
        lock_give(rd->lock_fd, rd->name);
        if (remove_made && rd->created)
            rmdir(rd->name); /* only when empty */
    }
    if (rd->dir_fd >= 0)
        close(rd->dir_fd);
    rd->lock_fd = rd->dir_fd = -1;
    free(rd->name);
    rd->name = NULL;
}
