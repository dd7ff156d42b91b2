/* gs_cpulimits.c — the CPUs this process may use, recorded once per process
 * image (at start and in each forked child): the CPUs in its affinity mask
 * (sched_getaffinity) and the CPU quota of its cgroup (v2 cpu.max, v1
 * cpu.cfs_quota_us / cpu.cfs_period_us; the smallest along the path to the
 * hierarchy's root). One `cpu_limits` record (docs/trace-format.md); the analyzer
 * sizes num_workers from it (docs/report-schema.md, "Advice").
 *
 * Must never: call a hooked function (raw system calls only), allocate,
 * or fail the program: whatever cannot be read is recorded as unknown (0).
 */
#include <fcntl.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "gs_cpulimits.h"
#include "gs_preload.h"

/* RATIONALE: /proc/self/mountinfo of a container host can list thousands of
 * mounts; 64 KiB holds the cgroup lines of every machine seen, and a line
 * beyond it only means the quota is recorded as unknown. Static, as are
 * the mount points kept below: called at start-up (once) and in a
 * just-forked child (one thread). */
static char g_buf[1 << 16];

static long read_file(const char *path, char *buf, size_t cap)
{
    long fd = syscall(SYS_openat, AT_FDCWD, path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    if (fd < 0)
        return -1;
    size_t n = 0;
    while (n + 1 < cap) {
        long k = syscall(SYS_read, (int)fd, buf + n, cap - 1 - n);
        if (k <= 0)
            break;
        n += (size_t)k;
    }
    syscall(SYS_close, (int)fd);
    buf[n] = 0;
    return (long)n;
}

static int parse_i64(const char *s, int64_t *v)
{
    int neg = 0;
    while (*s == ' ')
        s++;
    if (*s == '-') {
        neg = 1;
        s++;
    }
    if (*s < '0' || *s > '9')
        return -1;
    int64_t x = 0;
    while (*s >= '0' && *s <= '9' && x < (INT64_MAX - 9) / 10)
        x = x * 10 + (*s++ - '0');
    *v = neg ? -x : x;
    return 0;
}

/* 1 when the comma-separated list [s, e) holds the word w. */
static int has_word(const char *s, const char *e, const char *w)
{
    size_t wl = strlen(w);
    while (s < e) {
        const char *c = memchr(s, ',', (size_t)(e - s));
        const char *end = c ? c : e;
        if ((size_t)(end - s) == wl && memcmp(s, w, wl) == 0)
            return 1;
        s = end + 1;
    }
    return 0;
}

/* The cgroup path of this process in hierarchy v2 (v1 = 0: the line "0::")
 * or in the v1 hierarchy with the cpu controller (v1 = 1). */
static int cgroup_path(int v1, char *out, size_t cap)
{
    char buf[4096];
    if (read_file("/proc/self/cgroup", buf, sizeof buf) <= 0)
        return -1;
    for (char *line = buf; *line;) {
        char *nl = strchr(line, '\n');
        char *end = nl ? nl : line + strlen(line);
        char *c1 = memchr(line, ':', (size_t)(end - line));
        char *c2 = c1 ? memchr(c1 + 1, ':', (size_t)(end - c1 - 1)) : NULL;
        if (c2) {
            int match = v1 ? has_word(c1 + 1, c2, "cpu")
                           : (c1 - line == 1 && line[0] == '0' && c2 == c1 + 1);
            size_t len = (size_t)(end - c2 - 1);
            if (match && len < cap) {
                memcpy(out, c2 + 1, len);
                out[len] = 0;
                return 0;
            }
        }
        line = nl ? nl + 1 : end;
    }
    return -1;
}

/* Where the two hierarchies are mounted: [0] v2, [1] v1 with the cpu
 * controller. */
/* RATIONALE: read from /proc/self/mountinfo once per process image, both
 * hierarchies in one pass, and kept: a forked child has its parent's mount
 * namespace, and mountinfo, which the kernel prints anew line by line on
 * every read, was the dearest part of a forked DataLoader worker's start
 * (docs/performance.md, "Start-up, fork and the string table"). */
static struct {
    int state; /* 0 not read yet, 1 found, -1 not mounted or unreadable */
    char mnt[1024], root[1024];
} g_mounts[2];

static void read_mounts(void)
{
    g_mounts[0].state = g_mounts[1].state = -1;
    if (read_file("/proc/self/mountinfo", g_buf, sizeof g_buf) <= 0)
        return;
    for (char *line = g_buf; *line;) {
        char *nl = strchr(line, '\n');
        if (nl)
            *nl = 0;
        /* id parent maj:min root mountpoint opts [optional...] - fstype source superopts */
        char *f[5] = {0};
        char *p = line;
        for (int i = 0; i < 5 && p; i++) {
            f[i] = p;
            p = strchr(p, ' ');
            if (p)
                *p++ = 0;
        }
        char *dash = p ? strstr(p, " - ") : NULL;
        if (f[4] && dash) {
            char *fstype = dash + 3;
            char *sp = strchr(fstype, ' ');
            char *src = sp ? sp + 1 : NULL;
            char *so = src ? strchr(src, ' ') : NULL;
            if (sp)
                *sp = 0;
            int v1 = strcmp(fstype, "cgroup") == 0 && so &&
                     has_word(so + 1, so + 1 + strlen(so + 1), "cpu");
            int v2 = strcmp(fstype, "cgroup2") == 0;
            if ((v1 || v2) && g_mounts[v1].state < 0 && strlen(f[4]) < sizeof g_mounts[v1].mnt &&
                strlen(f[3]) < sizeof g_mounts[v1].root) {
                strcpy(g_mounts[v1].mnt, f[4]);
                strcpy(g_mounts[v1].root, f[3]);
                g_mounts[v1].state = 1;
            }
        }
        line = nl ? nl + 1 : line + strlen(line);
    }
}

/* Mount point (*mnt) and root (*root) of the cgroup hierarchy (v2, or v1
 * with cpu); -1 when it is not mounted. */
static int cgroup_mount(int v1, const char **mnt, const char **root)
{
    if (g_mounts[v1].state == 0)
        read_mounts();
    if (g_mounts[v1].state < 0)
        return -1;
    *mnt = g_mounts[v1].mnt;
    *root = g_mounts[v1].root;
    return 0;
}

/* The quota of one cgroup directory in milli-CPUs; 0 none or unreadable. */
static uint64_t quota_at(int v1, const char *dir)
{
    char path[4200], buf[128];
    int64_t q = -1, per = 0;
    if (v1) {
        snprintf(path, sizeof path, "%s/cpu.cfs_quota_us", dir);
        if (read_file(path, buf, sizeof buf) <= 0 || parse_i64(buf, &q) < 0)
            return 0;
        snprintf(path, sizeof path, "%s/cpu.cfs_period_us", dir);
        if (read_file(path, buf, sizeof buf) <= 0 || parse_i64(buf, &per) < 0)
            return 0;
    } else {
        snprintf(path, sizeof path, "%s/cpu.max", dir);
        if (read_file(path, buf, sizeof buf) <= 0 || strncmp(buf, "max", 3) == 0 ||
            parse_i64(buf, &q) < 0)
            return 0;
        const char *sp = strchr(buf, ' ');
        if (!sp || parse_i64(sp + 1, &per) < 0)
            return 0;
    }
    if (q <= 0 || per <= 0)
        return 0;
    return (uint64_t)((q * 1000 + per - 1) / per);
}

/* The smallest quota from this process's cgroup up to the hierarchy's
 * root, in milli-CPUs; 0 when there is none. */
static uint64_t cgroup_quota(int v1)
{
    char cg[1024], dir[2100];
    const char *mnt, *root;
    if (cgroup_path(v1, cg, sizeof cg) < 0 || cgroup_mount(v1, &mnt, &root) < 0)
        return 0;
    /* the path relative to the mount: without the mount's root when it
     * starts with it (a container's view) */
    const char *rel = cg;
    size_t rl = strlen(root);
    if (strcmp(root, "/") != 0 && strncmp(cg, root, rl) == 0 && (cg[rl] == '/' || !cg[rl]))
        rel = cg + rl;
    snprintf(dir, sizeof dir, "%s%s", mnt, strcmp(rel, "/") == 0 ? "" : rel);
    size_t ml = strlen(mnt);
    uint64_t best = 0;
    for (;;) {
        uint64_t q = quota_at(v1, dir);
        if (q && (!best || q < best))
            best = q;
        char *slash = strrchr(dir, '/');
        if (strlen(dir) <= ml || !slash || (size_t)(slash - dir) < ml)
            break;
        *slash = 0;
    }
    return best;
}

void gs_cpulimits_record(void)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    uint64_t affinity = 0;
    if (syscall(SYS_sched_getaffinity, 0, sizeof set, &set) > 0)
        affinity = (uint64_t)CPU_COUNT(&set);
    uint64_t q2 = cgroup_quota(0), q1 = cgroup_quota(1);
    uint64_t quota = q2 && (!q1 || q2 < q1) ? q2 : q1;
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    gs_rec r = GS_REC_INIT(GS_K_CPU_LIMITS, gs_now());
    r.aux = affinity;
    r.aux2 = quota;
    r.bytes = online > 0 ? (uint64_t)online : 0;
    gs_emit(&r);
}
