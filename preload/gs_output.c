/* gs_output.c — the run directory and this process's trace file.
 *
 * Responsible for: choosing the run directory (GPUSTARVE_DIR, or a new
 * gpustarve-YYYYMMDD-HHMMSS in the cwd, exported to children), naming and
 * creating <host>-<pid>[.<exec_seq>].gst with O_EXCL, writing its header
 * (gs_header_build), moving the fd out of the program's way (>= 900,
 * close-on-exec), writing frames, and the one warning line of a run when any
 * of that fails (a flag in a MAP_SHARED page inherited by forked children).
 *
 * Must never: be called from a hook's hot path; print more than one line per
 * run; let a failure reach the program (errno is the caller's to restore).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "gs_collector.h"
#include "gs_preload.h"

#define TRACE_FD_MIN 900
#define HEADER_CAP (64u << 10)

_Atomic int gs_trace_fd = -1;

static char g_dir[PATH_MAX];
static char g_path[PATH_MAX + 64];
static char g_host[256];
static int g_dead; /* output stopped (lock held or single-threaded) */
static _Atomic int *g_warned; /* MAP_SHARED: one warning per run */
static uint8_t g_header[HEADER_CAP];

int gs_out_warn_init(void)
{
    long p = syscall(SYS_mmap, NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (p == -1)
        return -1;
    g_warned = (_Atomic int *)p;
    return 0;
}

const char *gs_out_dir(void)
{
    return g_dir;
}

const char *gs_out_path(void)
{
    return g_path;
}

int gs_out_alive(void)
{
    return !g_dead && atomic_load(&gs_trace_fd) >= 0;
}

static void warn_once(const char *what, const char *path, int err)
{
    int zero = 0;
    if (g_warned && !atomic_compare_exchange_strong(g_warned, &zero, 1))
        return;
    char msg[PATH_MAX + 256];
    char ebuf[128];
    const char *es = strerror_r(err, ebuf, sizeof ebuf);
    int n = snprintf(msg, sizeof msg, "gpustarve: warning: %s %s: %s; tracing stopped\n", what,
                     path, es);
    if (n > 0) {
        ssize_t w = write(2, msg, (size_t)n < sizeof msg ? (size_t)n : sizeof msg - 1);
        (void)w;
    }
}

void gs_out_fail(const char *what, int err)
{
    if (g_dead)
        return;
    g_dead = 1;
    warn_once(what, g_path[0] ? g_path : g_dir, err);
}

/* Absolute form of p (relative to the cwd) into out. */
static void make_abs(const char *p, char *out, size_t cap)
{
    if (p[0] == '/') {
        snprintf(out, cap, "%s", p);
        return;
    }
    char cwd[PATH_MAX];
    if (!getcwd(cwd, sizeof cwd)) {
        snprintf(out, cap, "%s", p);
        return;
    }
    if (snprintf(out, cap, "%s/%s", cwd, p) >= (int)cap)
        out[cap - 1] = 0; /* too long: the open will fail and warn */
}

int gs_out_setup_dir(void)
{
    const char *env = getenv("GPUSTARVE_DIR");
    if (env && env[0]) {
        make_abs(env, g_dir, sizeof g_dir);
        if (strcmp(env, g_dir) != 0)
            setenv("GPUSTARVE_DIR", g_dir, 1); /* children may chdir */
        /* Preloaded by hand: create the last component, as `run -o` does; a
         * missing parent is the user's to fix (one warning, no tracing). */
        if (mkdir(g_dir, 0755) != 0 && errno != EEXIST) {
            gs_out_fail("cannot create trace directory", errno);
            return -1;
        }
        return 0;
    }
    time_t now = time(NULL);
    struct tm tm;
    localtime_r(&now, &tm);
    char name[64];
    strftime(name, sizeof name, "gpustarve-%Y%m%d-%H%M%S", &tm);
    make_abs(name, g_dir, sizeof g_dir);
    if (mkdir(g_dir, 0755) != 0 && errno != EEXIST) {
        int err = errno;
        gs_out_fail("cannot create trace directory", err);
        return -1;
    }
    setenv("GPUSTARVE_DIR", g_dir, 1);
    return 0;
}

/* Read /proc/self/cmdline into buf: argc NUL-terminated strings. */
static uint32_t read_cmdline(char *buf, uint32_t cap, uint32_t *argc)
{
    *argc = 0;
    long fd = syscall(SYS_openat, AT_FDCWD, "/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    uint32_t len = 0;
    while (len < cap) {
        long n = syscall(SYS_read, (int)fd, buf + len, cap - len);
        if (n <= 0)
            break;
        len += (uint32_t)n;
    }
    syscall(SYS_close, (int)fd);
    /* keep whole strings only */
    while (len > 0 && buf[len - 1] != 0)
        len--;
    for (uint32_t i = 0; i < len; i++)
        if (buf[i] == 0)
            (*argc)++;
    return len;
}

static int32_t env_int(const char *name)
{
    const char *v = getenv(name);
    if (!v || !*v)
        return -1;
    char *end;
    long x = strtol(v, &end, 10);
    return (*end == 0 && x >= 0 && x <= INT32_MAX) ? (int32_t)x : -1;
}

int gs_out_open(int forked)
{
    g_dead = 0;
    g_path[0] = 0;
    if (gethostname(g_host, sizeof g_host - 1) != 0)
        snprintf(g_host, sizeof g_host, "localhost");
    for (char *c = g_host; *c; c++)
        if (*c == '/')
            *c = '_';
    pid_t pid = (pid_t)syscall(SYS_getpid);
    long fd = -1;
    uint32_t seq = 0;
    for (seq = 0; seq < 10000; seq++) {
        int len;
        if (seq == 0)
            len = snprintf(g_path, sizeof g_path, "%s/%s-%d" GS_TRACE_SUFFIX, g_dir, g_host,
                           (int)pid);
        else
            len = snprintf(g_path, sizeof g_path, "%s/%s-%d.%u" GS_TRACE_SUFFIX, g_dir, g_host,
                           (int)pid, seq);
        if (len >= (int)sizeof g_path) {
            errno = ENAMETOOLONG;
            break;
        }
        fd = syscall(SYS_openat, AT_FDCWD, g_path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
        if (fd >= 0 || errno != EEXIST)
            break;
    }
    if (fd < 0) {
        gs_out_fail("cannot create trace file", errno);
        return -1;
    }
    int hi = fcntl((int)fd, F_DUPFD_CLOEXEC, TRACE_FD_MIN);
    if (hi >= 0) {
        syscall(SYS_close, (int)fd);
        fd = hi;
    }

    static char argv[HEADER_CAP / 2];
    gs_proc_info pi;
    memset(&pi, 0, sizeof pi);
    pi.pid = (uint64_t)pid;
    pi.ppid = (uint64_t)getppid();
    pi.mono_ns = gs_mono_ns();
    struct timespec rt;
    clock_gettime(CLOCK_REALTIME, &rt);
    pi.real_ns = (uint64_t)rt.tv_sec * 1000000000u + (uint64_t)rt.tv_nsec;
    pi.rank = env_int("RANK");
    pi.local_rank = env_int("LOCAL_RANK");
    pi.world_size = env_int("WORLD_SIZE");
    pi.flags = (forked ? GS_HDR_F_FORKED : 0) | (gs_clock_tsc ? GS_HDR_F_TSC : 0);
    pi.exec_seq = seq;
    pi.version_major = GS_VERSION_MAJOR;
    pi.version_minor = GS_VERSION_MINOR;
    pi.host = g_host;
    pi.argv_len = read_cmdline(argv, sizeof argv, &pi.argc);
    pi.argv = argv;
    long n = gs_header_build(g_header, sizeof g_header, &pi);
    atomic_store(&gs_trace_fd, (int)fd);
    if (n < 0) {
        gs_out_fail("cannot build header for", ENOBUFS);
        gs_out_close();
        return -1;
    }
    if (gs_out_write(g_header, (size_t)n) != 0) {
        gs_out_close();
        return -1;
    }
    return 0;
}

int gs_out_write(const void *buf, size_t len)
{
    int fd = atomic_load(&gs_trace_fd);
    if (g_dead || fd < 0)
        return -1;
    const char *p = buf;
    while (len > 0) {
        ssize_t n = write(fd, p, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            gs_out_fail("cannot write trace file", n < 0 ? errno : ENOSPC);
            return -1;
        }
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

void gs_out_close(void)
{
    int fd = atomic_exchange(&gs_trace_fd, -1);
    if (fd >= 0)
        syscall(SYS_close, fd);
}
