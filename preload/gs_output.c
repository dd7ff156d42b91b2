/* gs_output.c — the run directory and this process's trace file.
 *
 * Responsible for: choosing the run directory (GPUSTARVE_DIR, or a new
 * gpustarve-YYYYMMDD-HHMMSS in the cwd, exported to children), checking that
 * it is a directory the user owns and creating it private (0700), naming and
 * creating <host>-<pid>[.<exec_seq>].gst in it (0600, O_EXCL, O_NOFOLLOW),
 * writing its header, keeping the file's descriptor out of the program's way,
 * writing frames, and the warning lines (at most one per kind of problem per
 * run: a flag word in a MAP_SHARED page inherited by forked children, and a
 * marker file .warned-<kind> in the run directory for exec'd images).
 *
 * Where the descriptor lives (docs/collector-safety.md): the program owns
 * every descriptor number. A "file thread" unshares its descriptor table
 * (unshare(CLONE_FILES)), closes every descriptor it inherited, and holds the
 * trace file there: nothing the program does to its own table (close_range,
 * dup2 onto any number, a low RLIMIT_NOFILE, raw system calls) can reach it,
 * and the program's numbering is exactly as untraced. Every frame is written
 * by that thread. Where unshare is refused (seccomp profiles of containers),
 * the file is held in the program's table at 900 or above, close-on-exec,
 * and the hooks keep the program's calls as untraced: close() of it fails
 * EBADF as for any number the program never opened, dup2/dup3 onto it move
 * the trace to another number first, close_range/closefrom skip it; before
 * each write the descriptor is checked to still be the trace file (device
 * and inode) and the file is reopened when it is not. When neither is
 * possible (no 900 under the limit), tracing stops: the collector never
 * holds a low descriptor. The writer thread leaves the program's table the
 * same way (gs_out_leave_table) while no GPU source runs; a warning made on
 * a thread of its own table is written through a copy of the program's
 * descriptor 2 taken for that write (pidfd_getfd), or kept for the next
 * thread of the program's table that posts to the file thread.
 *
 * Must never: be called from a hook's hot path; print more than one line per
 * kind of problem per run; let a failure reach the program (errno is the
 * caller's to restore); write to a descriptor it has not just checked to be
 * its own file; follow a symlink or open a FIFO it did not create.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sys/resource.h>
#include <linux/futex.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "gs_clock.h"
#include "gs_config.h"
#include "gs_fsize.h"
#include "gs_livefile.h"
#include "gs_output.h"
#include "gs_preload.h"
#include "gs_ring.h"
#include "gs_space.h"
#include "gs_thread.h"

#define TRACE_FD_MIN 900
#define HEADER_CAP (64u << 10)
#define FILE_FLAGS (O_WRONLY | O_APPEND | O_NOFOLLOW | O_CLOEXEC)

_Atomic int gs_trace_fd = -1;

static char g_dir[PATH_MAX];
static char g_path[PATH_MAX + 64];
static char g_host[256];
static int g_dead;               /* output stopped (lock held or single-threaded) */
static int g_last_err;           /* errno of the last failed write */
static _Atomic int g_near_full;  /* a write was refused: the file system is nearly full */
static _Atomic unsigned *g_warned; /* MAP_SHARED: GS_WARN_* bits already printed in this run */
static uint8_t g_header[HEADER_CAP];
static uint64_t g_size;          /* bytes written to the trace file */
static dev_t g_dev;              /* the trace file's identity */
static ino_t g_ino;
static _Atomic int g_busy_fd = -1; /* shared-table descriptor a write is using */
static _Atomic int g_late;       /* opened late: the file is not held anywhere yet */
static unsigned g_wait_ms;       /* bound on each write (exit paths), 0 = none */
static char g_pending[PATH_MAX + 256]; /* a warning made where descriptor 2 is not */
static _Atomic int g_pending_state;    /* 0 empty, 1 being filled or printed, 2 full */
static __thread int t_in_ft GS_TLS_IE; /* this is the file thread */
static __thread int t_own GS_TLS_IE;   /* this thread left the program's table */

static dev_t g_err_dev; /* what descriptor 2 was when this image started */
static ino_t g_err_ino;
static int g_err_known;

static void close_all_private(void);

int gs_out_warn_init(void)
{
    long p = syscall(SYS_mmap, NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (p == -1)
        return -1;
    g_warned = (_Atomic unsigned *)p;
    struct stat st;
    g_err_known = syscall(SYS_fstat, 2, &st) == 0;
    g_err_dev = g_err_known ? st.st_dev : 0;
    g_err_ino = g_err_known ? st.st_ino : 0;
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
    return !g_dead && g_path[0];
}

int gs_out_last_error(void)
{
    return g_last_err;
}

uint64_t gs_out_size(void)
{
    return g_size;
}

/* ---- warnings --------------------------------------------------------------- */


/* RATIONALE: a program that closed its stderr may have a file of its own
 * at number 2 now (daemons do): a warning goes to descriptor 2 only while
 * it is still the file it was when this image started. */
static void say_on(int fd, const char *msg, size_t n)
{
    struct stat st;
    if (!g_err_known || syscall(SYS_fstat, fd, &st) != 0 || st.st_dev != g_err_dev ||
        st.st_ino != g_err_ino)
        return;
    long w = syscall(SYS_write, fd, msg, n);
    (void)w;
}

/* Keep msg for the next thread of the program's table that posts to the
 * file thread (gs_out_run), or that exits: the first one kept wins. */
static void keep_pending(const char *msg, size_t n)
{
    int expect = 0;
    if (!atomic_compare_exchange_strong(&g_pending_state, &expect, 1))
        return;
    if (n >= sizeof g_pending)
        n = sizeof g_pending - 1;
    memcpy(g_pending, msg, n);
    g_pending[n] = 0;
    atomic_store(&g_pending_state, 2);
}

/* Print a kept warning; the caller is a thread of the program's table. */
static void say_pending(void)
{
    int expect = 2;
    if (atomic_load(&g_pending_state) != 2 ||
        !atomic_compare_exchange_strong(&g_pending_state, &expect, 1))
        return;
    say_on(2, g_pending, strlen(g_pending));
    atomic_store(&g_pending_state, 0);
}

/* RATIONALE: a thread in a table of its own (the file thread, the writer
 * when no GPU source runs) has no descriptor 2. It borrows the program's
 * for one write: pidfd_getfd copies descriptor 2 of the process's table into
 * its own (a thread of the same process needs no ptrace permission) and the
 * copy is closed at once, so no file of the program is held past the write.
 * Where pidfd_getfd is missing or refused, the line waits for a thread of
 * the program's table (keep_pending). */
static void say_from_own_table(const char *msg, size_t n)
{
#if defined(SYS_pidfd_open) && defined(SYS_pidfd_getfd)
    long pfd = syscall(SYS_pidfd_open, (pid_t)syscall(SYS_getpid), 0);
    long fd = pfd >= 0 ? syscall(SYS_pidfd_getfd, (int)pfd, 2, 0) : -1;
    if (pfd >= 0)
        syscall(SYS_close, (int)pfd);
    if (fd >= 0) {
        say_on((int)fd, msg, n);
        syscall(SYS_close, (int)fd);
        return;
    }
#endif
    keep_pending(msg, n);
}

void gs_out_say(const char *msg, size_t n)
{
    if (t_own)
        say_from_own_table(msg, n);
    else
        say_on(2, msg, n);
}

int gs_out_leave_table(void)
{
    if (syscall(SYS_unshare, CLONE_FILES) != 0)
        return -1;
    t_own = 1;
    close_all_private();
    return 0;
}

int gs_out_own_table(void)
{
    return t_own;
}

void gs_out_say_pending(void)
{
    if (!t_own)
        say_pending();
}

/* 1 when another process of the run printed a warning of this kind: a
 * marker file in the run directory, created by the first one (exec'd images
 * and spawned processes do not share our memory). */
static int warned_elsewhere(unsigned kind)
{
    char p[PATH_MAX + 64];
    if (!g_dir[0] || snprintf(p, sizeof p, "%s/.warned-%x", g_dir, kind) >= (int)sizeof p)
        return 0;
    long fd = syscall(SYS_openat, AT_FDCWD, p, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                      0600);
    if (fd >= 0) {
        syscall(SYS_close, (int)fd);
        return 0;
    }
    return errno == EEXIST;
}

/* 1 the first time a warning of this kind is made in this run. */
static int first_of_kind(unsigned kind)
{
    if (g_warned && (atomic_fetch_or(g_warned, kind) & kind))
        return 0;
    return kind == GS_WARN_DIR || !warned_elsewhere(kind);
}

void gs_out_warn(unsigned kind, const char *what, const char *path, int err)
{
    if (!first_of_kind(kind))
        return;
    char msg[PATH_MAX + 256];
    char ebuf[128];
    const char *es = err ? strerror_r(err, ebuf, sizeof ebuf) : NULL;
    int n = snprintf(msg, sizeof msg, "gpustarve: warning: %s %s%s%s; tracing stopped\n", what,
                     path, es ? ": " : "", es ? es : "");
    if (n <= 0)
        return;
    gs_out_say(msg, (size_t)n < sizeof msg ? (size_t)n : sizeof msg - 1);
}

void gs_out_warn_space(uint64_t avail)
{
    if (!first_of_kind(GS_WARN_FULL))
        return;
    char msg[PATH_MAX + 256];
    int n = snprintf(msg, sizeof msg,
                     "gpustarve: warning: %s has %llu MiB free: little or no room set aside "
                     "to recover a killed process's last events; tracing stops before the "
                     "file system is nearly full\n",
                     g_dir, (unsigned long long)(avail >> 20));
    if (n > 0)
        gs_out_say(msg, (size_t)n < sizeof msg ? (size_t)n : sizeof msg - 1);
}

void gs_out_fail(const char *what, int err)
{
    if (g_dead)
        return;
    g_dead = 1;
    if (err == ENOSPC && atomic_load(&g_near_full)) {
        gs_out_warn(GS_WARN_FULL, "file system nearly full: stopped writing", g_path, 0);
        return;
    }
    gs_out_warn(err == ENOSPC || err == EDQUOT || err == EFBIG ? GS_WARN_FULL : GS_WARN_WRITE,
                what, g_path[0] ? g_path : g_dir, err);
}

void gs_out_limit_wait(unsigned ms)
{
    g_wait_ms = ms;
}

/* ---- the run directory -------------------------------------------------------- */

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

/* Open g_dir as a directory (never through a symlink as its last component);
 * own: also require that the effective user owns it and no one else may
 * write to it. Returns the descriptor (to be closed at once) or -errno. */
static int open_dir(int own)
{
    long fd = syscall(SYS_openat, AT_FDCWD, g_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    struct stat st;
    if (syscall(SYS_fstat, (int)fd, &st) != 0 || !S_ISDIR(st.st_mode)) {
        syscall(SYS_close, (int)fd);
        return -ENOTDIR;
    }
    if (own && (st.st_uid != geteuid() || (st.st_mode & (S_IWGRP | S_IWOTH)))) {
        syscall(SYS_close, (int)fd);
        return -EPERM;
    }
    return (int)fd;
}

/* RATIONALE: traces hold every path the program read and its whole command
 * line (keys and tokens included): the directory the collector creates is
 * private (0700) and so is every file in it (0600). A directory named by
 * GPUSTARVE_DIR is the user's choice and is used as it is; the default one
 * must be the user's own, or another user could have made it in a shared
 * working directory to receive the traces. */
int gs_out_setup_dir(void)
{
    const char *env = gs_cfg.dir;
    int own = 0;
    if (env && env[0]) {
        make_abs(env, g_dir, sizeof g_dir);
        if (strcmp(env, g_dir) != 0)
            setenv("GPUSTARVE_DIR", g_dir, 1); /* children may chdir */
    } else {
        time_t now = time(NULL);
        struct tm tm;
        localtime_r(&now, &tm);
        char name[64];
        strftime(name, sizeof name, "gpustarve-%Y%m%d-%H%M%S", &tm);
        make_abs(name, g_dir, sizeof g_dir);
        own = 1;
    }
    /* Preloaded by hand: create the last component, as `run -o` does; a
     * missing parent is the user's to fix (one warning, no tracing). */
    if (mkdir(g_dir, 0700) != 0 && errno != EEXIST) {
        g_dead = 1;
        gs_out_warn(GS_WARN_DIR, "cannot create trace directory", g_dir, errno);
        return -1;
    }
    int fd = open_dir(own);
    if (fd < 0) {
        g_dead = 1;
        gs_out_warn(GS_WARN_DIR,
                    fd == -EPERM ? "trace directory is not private to this user:" :
                                   "cannot use trace directory",
                    g_dir, fd == -EPERM ? 0 : -fd);
        return -1;
    }
    syscall(SYS_close, fd);
    if (own)
        setenv("GPUSTARVE_DIR", g_dir, 1);
    return 0;
}

/* ---- the header ------------------------------------------------------------------ */

/* Read /proc/self/cmdline into buf: argc NUL-terminated strings. */
static uint32_t read_cmdline(char *buf, uint32_t cap, uint32_t *argc)
{
    *argc = 0;
    long fd = syscall(SYS_openat, AT_FDCWD, "/proc/self/cmdline", O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
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

/* The first of names set to a number >= 0, else -1. Launchers name a
 * process's place in the job differently (docs/trace-format.md, "File
 * header"): torchrun RANK, Open MPI OMPI_COMM_WORLD_RANK, MPICH and Intel
 * MPI PMI_RANK, PMIx PMIX_RANK, Slurm SLURM_PROCID.
 * RATIONALE: torchrun's own names come first, then the MPI ones, then
 * Slurm's: `srun torchrun ...` gives every rank of a node the same
 * SLURM_PROCID, and `mpirun` inside an allocation inherits the batch
 * step's SLURM_PROCID, so the more specific launcher's name is the truth. */
static int32_t env_first(const char *const *names)
{
    for (; *names; names++) {
        const int32_t v = env_int(*names);
        if (v >= 0)
            return v;
    }
    return -1;
}

static const char *const rank_vars[] = {"RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK",
                                        "SLURM_PROCID", NULL};
static const char *const local_rank_vars[] = {"LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK",
                                              "MPI_LOCALRANKID", "PMI_LOCAL_RANK",
                                              "SLURM_LOCALID", NULL};
static const char *const world_size_vars[] = {"WORLD_SIZE", "OMPI_COMM_WORLD_SIZE", "PMI_SIZE",
                                              "SLURM_NTASKS", NULL};

static long build_header(int forked, uint32_t seq, pid_t pid)
{
    static char argv[HEADER_CAP / 2];
    gs_proc_info pi;
    memset(&pi, 0, sizeof pi);
    pi.pid = (uint64_t)pid;
    pi.ppid = (uint64_t)getppid();
    pi.mono_ns = gs_mono_ns();
    struct timespec rt;
    clock_gettime(CLOCK_REALTIME, &rt);
    pi.real_ns = (uint64_t)rt.tv_sec * 1000000000u + (uint64_t)rt.tv_nsec;
    /* test hook (README, "Preloading by hand"): a realtime clock that is
     * off by a known amount, as another host's may be; only the header's
     * pair moves, as it would on a host whose clock is wrong */
    pi.real_ns += (uint64_t)gs_cfg.test_realtime_offset_ns;
    pi.rank = env_first(rank_vars);
    pi.local_rank = env_first(local_rank_vars);
    pi.world_size = env_first(world_size_vars);
    pi.flags = (forked ? GS_HDR_F_FORKED : 0) | (gs_clock_tsc ? GS_HDR_F_TSC : 0);
    pi.exec_seq = seq;
    pi.version_major = GS_VERSION_MAJOR;
    pi.version_minor = GS_VERSION_MINOR;
    pi.host = g_host;
    pi.argv_len = read_cmdline(argv, sizeof argv, &pi.argc);
    pi.argv = argv;
    return gs_header_build(g_header, sizeof g_header, &pi);
}

/* ---- writing through one descriptor ---------------------------------------------- */

/* 1 when fd is open on the trace file itself. */
static int is_trace_file(int fd)
{
    struct stat st;
    return fd >= 0 && syscall(SYS_fstat, fd, &st) == 0 && S_ISREG(st.st_mode) &&
           st.st_dev == g_dev && st.st_ino == g_ino;
}

/* Open the trace file again by path (appending); checked to be the same
 * file. Returns the descriptor or -errno. */
static int reopen_trace(void)
{
    long fd = syscall(SYS_openat, AT_FDCWD, g_path, FILE_FLAGS);
    if (fd < 0)
        return -errno;
    if (!is_trace_file((int)fd)) {
        syscall(SYS_close, (int)fd);
        return -ESTALE; /* renamed, replaced or removed under us */
    }
    return (int)fd;
}

/* Move fd to TRACE_FD_MIN or above (close-on-exec); -errno when the limit
 * leaves no such number (fd is closed either way). */
static int park_high(int fd)
{
    long hi = syscall(SYS_fcntl, fd, F_DUPFD_CLOEXEC, TRACE_FD_MIN);
    int err = errno;
    syscall(SYS_close, fd);
    return hi >= 0 ? (int)hi : -err;
}

/* RATIONALE: the trace file is written sequentially: its size is where the
 * next bytes go. EFBIG (counted lost, one warning) instead of SIGXFSZ; and
 * ENOSPC once the file system is nearly full (gs_space.c), before the
 * program's own writes could fail for the space ours took. */
static int write_all(int fd, const void *buf, size_t len)
{
    struct stat st;
    if (syscall(SYS_fstat, fd, &st) == 0 && !gs_fsize_allows((uint64_t)st.st_size + len))
        return -EFBIG;
    if (!gs_space_allows(fd, len, GS_SPACE_WRITE, NULL)) {
        atomic_store(&g_near_full, 1);
        return -ENOSPC;
    }
    const char *p = buf;
    while (len > 0) {
        long n = syscall(SYS_write, fd, p, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return n < 0 ? -errno : -ENOSPC;
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

/* Write through the descriptor held in the program's table. RATIONALE: the
 * busy word and the re-check make a hook that moves the trace off this
 * number (dup2 onto it) wait for a write in flight, so no byte of ours can
 * land in the file the program puts there; the identity check catches what
 * the hooks cannot see (raw system calls). Returns 0 or -errno. */
static int write_shared(const void *buf, size_t len)
{
    for (int tries = 0; tries < 8; tries++) {
        int fd = atomic_load(&gs_trace_fd);
        if (fd < 0)
            return -EBADF;
        atomic_store(&g_busy_fd, fd);
        if (atomic_load(&gs_trace_fd) != fd) {
            atomic_store(&g_busy_fd, -1);
            continue;
        }
        if (!is_trace_file(fd)) {
            /* the number is the program's now: leave it to the program */
            atomic_store(&g_busy_fd, -1);
            int nfd = reopen_trace();
            if (nfd >= 0)
                nfd = park_high(nfd);
            if (nfd < 0) {
                int expect = fd;
                atomic_compare_exchange_strong(&gs_trace_fd, &expect, -1);
                return nfd;
            }
            int expect = fd;
            if (!atomic_compare_exchange_strong(&gs_trace_fd, &expect, nfd))
                syscall(SYS_close, nfd);
            continue;
        }
        int rc = write_all(fd, buf, len);
        atomic_store(&g_busy_fd, -1);
        return rc;
    }
    return -EBADF;
}

/* ---- the file thread --------------------------------------------------------------- */

enum { OP_WRITE = 1, OP_CALL = 2 };

static struct {
    _Atomic uint32_t seq;  /* last request posted */
    _Atomic uint32_t done; /* last request finished */
    int op;
    const void *buf;
    size_t len;
    void (*fn)(void *);
    void *arg;
    int result;
} g_req;
static int g_timed_out; /* a request did not finish in time: the thread is stuck */
static _Atomic int g_ft_state; /* 0 none, 1 starting, 2 private table, 3 no private table */
static int g_priv_fd = -1;     /* the file thread's own descriptor (its table only) */
static _Atomic int g_ft_stop;

static long futex(_Atomic uint32_t *w, int op, uint32_t val, const struct timespec *ts)
{
    return syscall(SYS_futex, w, op, val, ts, NULL, 0);
}

/* Close every descriptor of this thread's (private) table. */
static void close_all_private(void)
{
    if (syscall(SYS_close_range, 0u, ~0u, 0u) == 0)
        return;
    /* RATIONALE: kernels before 5.9: walk the table we see. */
    long d = syscall(SYS_openat, AT_FDCWD, "/proc/thread-self/fd", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (d < 0)
        return;
    char buf[4096];
    for (;;) {
        long n = syscall(SYS_getdents64, (int)d, buf, sizeof buf);
        if (n <= 0)
            break;
        for (long off = 0; off < n;) {
            struct {
                uint64_t ino;
                int64_t off;
                unsigned short reclen;
                unsigned char type;
                char name[];
            } *de = (void *)(buf + off);
            long fd = strtol(de->name, NULL, 10);
            if (de->name[0] >= '0' && de->name[0] <= '9' && fd != d)
                syscall(SYS_close, (int)fd);
            off += de->reclen;
        }
    }
    syscall(SYS_close, (int)d);
}

static void *file_thread(void *arg)
{
    (void)arg;
    gs_t_depth = 1;
    t_in_ft = 1;
    int state = 3;
    if (gs_out_leave_table() == 0) {
        int fd = reopen_trace();
        if (fd >= 0) {
            g_priv_fd = fd;
            state = 2;
        }
        /* else: this thread can no longer reach the program's table; the
         * caller falls back to the shared descriptor (still open there) */
    }
    /* the starter may have given up waiting (state 3 already): then this
     * thread has no part and ends */
    int expect = 1;
    if (!atomic_compare_exchange_strong(&g_ft_state, &expect, state))
        state = 3;
    futex((_Atomic uint32_t *)&g_ft_state, FUTEX_WAKE_PRIVATE, 1, NULL);
    if (state != 2) {
        if (g_priv_fd >= 0)
            syscall(SYS_close, g_priv_fd);
        g_priv_fd = -1;
        return NULL;
    }
    for (;;) {
        uint32_t s = atomic_load(&g_req.seq);
        if (s == atomic_load(&g_req.done)) {
            if (atomic_load(&g_ft_stop))
                break;
            futex(&g_req.seq, FUTEX_WAIT_PRIVATE, s, NULL);
            continue;
        }
        if (g_req.op == OP_WRITE)
            g_req.result = is_trace_file(g_priv_fd) ? write_all(g_priv_fd, g_req.buf, g_req.len)
                                                    : -ESTALE;
        else if (g_req.op == OP_CALL)
            g_req.fn(g_req.arg);
        atomic_store(&g_req.done, s);
        futex(&g_req.done, FUTEX_WAKE_PRIVATE, INT32_MAX, NULL);
    }
    syscall(SYS_close, g_priv_fd);
    g_priv_fd = -1;
    return NULL;
}

/* Hand one request to the file thread and wait for it, at most wait_ms
 * (0: no limit). Returns 0, or -ETIMEDOUT (the request may still run). */
static int post(int op, const void *buf, size_t len, void (*fn)(void *), void *arg,
                unsigned wait_ms)
{
    g_req.op = op;
    g_req.buf = buf;
    g_req.len = len;
    g_req.fn = fn;
    g_req.arg = arg;
    g_req.result = 0;
    uint32_t s = atomic_load(&g_req.seq) + 1;
    atomic_store(&g_req.seq, s);
    futex(&g_req.seq, FUTEX_WAKE_PRIVATE, 1, NULL);
    uint64_t deadline = wait_ms ? gs_mono_ns() + (uint64_t)wait_ms * 1000000u : 0;
    for (;;) {
        uint32_t d = atomic_load(&g_req.done);
        if (d == s)
            return 0;
        struct timespec ts = {0, 20 * 1000000L};
        if (deadline && gs_mono_ns() >= deadline)
            return -ETIMEDOUT;
        futex(&g_req.done, FUTEX_WAIT_PRIVATE, d, deadline ? &ts : NULL);
    }
}


/* Start the file thread and learn whether it has a table of its own. */
static void start_file_thread(void)
{
    atomic_store(&g_req.seq, 0);
    atomic_store(&g_req.done, 0);
    atomic_store(&g_ft_stop, 0);
    atomic_store(&g_ft_state, 1);
    g_priv_fd = -1;
    g_timed_out = 0;
    pthread_t th;
    if (gs_thread_start(file_thread, &th) != 0) {
        atomic_store(&g_ft_state, 3);
        return;
    }
    /* RATIONALE: bounded: a thread that does not report within 5 s is
     * treated as having no table of its own (the shared descriptor stays). */
    for (int i = 0; i < 250 && atomic_load(&g_ft_state) == 1; i++) {
        struct timespec ts = {0, 20 * 1000000L};
        futex((_Atomic uint32_t *)&g_ft_state, FUTEX_WAIT_PRIVATE, 1, &ts);
    }
    int expect = 1;
    atomic_compare_exchange_strong(&g_ft_state, &expect, 3);
    /* RATIONALE: a thread with no table of its own ends at once; it is
     * waited for (bounded), so that no thread of ours is ending when the
     * program forks next: a sanitizer runtime's thread end takes allocator
     * locks its fork does not (docs/collector-safety.md, "A fork while a
     * thread of ours starts or ends"). */
    if (atomic_load(&g_ft_state) == 2)
        pthread_detach(th);
    else
        gs_thread_end(th, 1000);
}

int gs_out_private(void)
{
    return atomic_load(&g_ft_state) == 2;
}

int gs_out_stuck(void)
{
    return g_timed_out;
}

void gs_out_run(void (*fn)(void *), void *arg)
{
    if (t_in_ft || !gs_out_private()) {
        fn(arg);
        return;
    }
    if (g_timed_out)
        return;
    if (post(OP_CALL, NULL, 0, fn, arg, g_wait_ms) == -ETIMEDOUT) {
        /* fn may still be running there: nothing more may touch the
         * writer's state (gs_out_stuck), and nothing more is written */
        g_timed_out = 1;
        g_dead = 1;
        return;
    }
    gs_out_say_pending();
}

/* ---- opening -------------------------------------------------------------------------- */


static int hold_file(int fd, int threads, int late);

int gs_out_open(int forked, const gs_calib *cal, int late)
{
    g_dead = 0;
    g_last_err = 0;
    atomic_store(&g_late, 0);
    atomic_store(&g_near_full, 0);
    g_path[0] = 0;
    atomic_store(&gs_trace_fd, -1);
    if (gethostname(g_host, sizeof g_host - 1) != 0)
        snprintf(g_host, sizeof g_host, "localhost");
    /* test hook (README, "Preloading by hand"): the host a test pretends
     * this process runs on, to make one machine two hosts of a job */
    if (gs_cfg.test_host[0])
        snprintf(g_host, sizeof g_host, "%s", gs_cfg.test_host);
    for (char *c = g_host; *c; c++)
        if (*c == '/')
            *c = '_';
    pid_t pid = (pid_t)syscall(SYS_getpid);
    int dfd = open_dir(0);
    if (dfd < 0) {
        g_dead = 1;
        gs_out_warn(GS_WARN_DIR, "cannot use trace directory", g_dir, -dfd);
        return -1;
    }
    long fd = -1;
    uint32_t seq = 0;
    char name[sizeof g_host + 64];
    for (seq = 0; seq < 10000; seq++) {
        if (seq == 0)
            snprintf(name, sizeof name, "%s-%d" GS_TRACE_SUFFIX, g_host, (int)pid);
        else
            snprintf(name, sizeof name, "%s-%d.%u" GS_TRACE_SUFFIX, g_host, (int)pid, seq);
        fd = syscall(SYS_openat, dfd, name, FILE_FLAGS | O_CREAT | O_EXCL, 0600);
        if (fd >= 0 || errno != EEXIST)
            break;
    }
    int err = errno;
    syscall(SYS_close, dfd);
    if (snprintf(g_path, sizeof g_path, "%s/%s", g_dir, name) >= (int)sizeof g_path) {
        if (fd >= 0)
            syscall(SYS_close, (int)fd);
        fd = -1;
        err = ENAMETOOLONG;
    }
    if (fd < 0) {
        g_dead = 1;
        gs_out_warn(GS_WARN_FILE, "cannot create trace file in", g_dir, err);
        g_path[0] = 0;
        return -1;
    }
    struct stat st;
    syscall(SYS_fstat, (int)fd, &st);
    g_dev = st.st_dev;
    g_ino = st.st_ino;
    long n = build_header(forked, seq, pid);
    int rc = n < 0 ? -ENOBUFS : write_all((int)fd, g_header, (size_t)n);
    if (rc != 0) {
        syscall(SYS_close, (int)fd);
        gs_out_fail("cannot write trace file", -rc);
        return -1;
    }
    g_size = (uint64_t)n;
    uint64_t avail = 0;
    if (gs_live_open(g_path, seq, gs_ring_capacity(), cal, &avail) == 1)
        gs_out_warn_space(avail); /* rings that find no slot stay anonymous */
    if (late) {
        /* RATIONALE: a process with one thread is spared every thread of
         * ours until it starts one itself or needs the writer: glibc's
         * allocator and stdio take their atomic paths for the rest of a
         * process's life once a second thread has existed
         * (docs/collector-safety.md, "Threads started late") */
        syscall(SYS_close, (int)fd);
        atomic_store(&g_ft_state, 0);
        atomic_store(&g_late, 1);
        return 0;
    }
    return hold_file((int)fd, 1, 0);
}

/* Hold the open trace file fd where it stays out of the program's way: the
 * file thread's own table (threads: 1), else the program's at 900 or above.
 * late: the hooks have recorded into the live file already. */
static int hold_file(int fd, int threads, int late)
{
    /* the shared descriptor, parked high, until the file thread has its own */
    int hi = park_high(fd);
    atomic_store(&gs_trace_fd, hi >= 0 ? hi : -1);
    if (threads)
        start_file_thread();
    if (gs_out_private()) {
        gs_out_close_shared();
        return 0;
    }
    if (hi < 0) {
        g_dead = 1;
        if (!late)
            gs_live_discard(); /* nothing recorded: this process is not traced */
        /* late: what was recorded stays in the live file, for the reader */
        gs_out_warn(GS_WARN_FD, "cannot keep the trace file out of the program's descriptors (no "
                    "descriptor 900 under RLIMIT_NOFILE) for", g_path, 0);
        return -1;
    }
    return 0;
}

int gs_out_start_late(int threads, int low_ok)
{
    if (!atomic_load(&g_late) || !atomic_exchange(&g_late, 0))
        return 0;
    int fd = reopen_trace();
    if (fd < 0) {
        gs_out_fail("cannot open trace file again", -fd);
        return -1;
    }
    if (low_ok && !threads) {
        /* RATIONALE: nothing of the program runs after this (its end, one
         * thread): the number it is opened at is no number the program
         * will see; at 900 or above where the limit allows */
        long hi = syscall(SYS_fcntl, fd, F_DUPFD_CLOEXEC, TRACE_FD_MIN);
        if (hi >= 0) {
            syscall(SYS_close, fd);
            fd = (int)hi;
        }
        atomic_store(&gs_trace_fd, fd);
        return 0;
    }
    return hold_file(fd, threads, 1);
}

/* ---- writing ---------------------------------------------------------------------------- */

int gs_out_write_final(const void *buf, size_t len, unsigned wait_ms)
{
    int rc;
    if (t_in_ft) {
        rc = is_trace_file(g_priv_fd) ? write_all(g_priv_fd, buf, len) : -ESTALE;
    } else if (gs_out_private()) {
        if (g_timed_out)
            return -1;
        rc = post(OP_WRITE, buf, len, NULL, NULL, wait_ms);
        if (rc == -ETIMEDOUT) {
            g_timed_out = 1; /* buf may still be read: nothing more is posted */
            g_last_err = ETIMEDOUT;
            errno = ETIMEDOUT;
            return -1;
        }
        rc = g_req.result;
    } else {
        rc = write_shared(buf, len);
    }
    if (rc != 0) {
        g_last_err = -rc;
        errno = -rc;
        return -1;
    }
    g_size += len;
    return 0;
}

static int gs_out_write_wait(const void *buf, size_t len, unsigned wait_ms)
{
    if (g_dead || !g_path[0])
        return -1;
    if (gs_out_write_final(buf, len, wait_ms) != 0) {
        int err = g_last_err;
        if (err != ETIMEDOUT)
            gs_out_fail("cannot write trace file", err);
        else
            g_dead = 1;
        errno = err;
        return -1;
    }
    return 0;
}

int gs_out_write(const void *buf, size_t len)
{
    return gs_out_write_wait(buf, len, g_wait_ms);
}

/* ---- the program's calls on the collector's descriptor ------------------------------- */

void gs_out_yield_fd(int fd)
{
    if (fd < 0 || atomic_load(&gs_trace_fd) != fd)
        return;
    long nfd = syscall(SYS_fcntl, fd, F_DUPFD_CLOEXEC, TRACE_FD_MIN);
    int expect = fd;
    if (!atomic_compare_exchange_strong(&gs_trace_fd, &expect, nfd >= 0 ? (int)nfd : -1)) {
        if (nfd >= 0)
            syscall(SYS_close, (int)nfd); /* another thread moved it first */
    }
    /* RATIONALE: bounded wait for a write in flight on the old number (one
     * frame: milliseconds); the program's call must not overtake it. */
    for (int i = 0; i < 2000 && atomic_load(&g_busy_fd) == fd; i++) {
        struct timespec ts = {0, 500000};
        nanosleep(&ts, NULL);
    }
}

void gs_out_close_shared(void)
{
    int fd = atomic_exchange(&gs_trace_fd, -1);
    if (fd >= 0)
        syscall(SYS_close, fd);
}

void gs_out_close(void)
{
    gs_out_close_shared();
    if (gs_out_private() && !g_timed_out) {
        atomic_store(&g_ft_stop, 1);
        futex(&g_req.seq, FUTEX_WAKE_PRIVATE, 1, NULL);
    }
    atomic_store(&g_ft_state, 0);
}

void gs_out_after_fork_child(void)
{
    /* the parent's file thread did not come along; its shared descriptor (if
     * any) is a copy in our table: close it, the file stays the parent's */
    atomic_store(&g_ft_state, 0);
    atomic_store(&g_late, 0);
    gs_out_close_shared();
    atomic_store(&g_busy_fd, -1);
    g_priv_fd = -1;
}
