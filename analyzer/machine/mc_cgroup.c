/* mc_cgroup.c — where this process's cgroups are (from /proc/self/cgroup
 * and /proc/self/mountinfo, the mount's root taken off the path as a
 * container's namespace shows it) and the CPU, memory and I/O limits set
 * on them (mc_cgroup.h).
 *
 * Must never: write a cgroup file, or follow a path outside the mounted
 * hierarchy while walking up.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "machine/mc_cgroup.h"
#include "machine/mc_file.h"

/* 1 when the comma-separated list s holds the word w. */
static int has_word(const char *s, const char *w)
{
    const size_t wl = strlen(w);
    while (*s) {
        const size_t l = strcspn(s, ",");
        if (l == wl && strncmp(s, w, wl) == 0)
            return 1;
        s += l + (s[l] == ',');
    }
    return 0;
}

/* Copy the line at *line into buf (cut to cap - 1) and move *line to the
 * next one (NULL after the last). */
static void take_line(const char **line, char *buf, size_t cap)
{
    const char *l = *line, *nl = strchr(l, '\n');
    const size_t len = nl ? (size_t)(nl - l) : strlen(l);
    snprintf(buf, cap, "%.*s", (int)(len < cap ? len : cap - 1), l);
    *line = nl ? nl + 1 : NULL;
}

/* The next line of a /proc/<pid>/cgroup text at *line, cut into its
 * controllers ("" for v2) and path inside buf; 0, or -1 for a line of
 * another form (*line moves past it either way). */
static int cgroup_line(const char **line, char *buf, size_t cap, const char **ctrls,
                       const char **path)
{
    take_line(line, buf, cap);
    char *c1 = strchr(buf, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
    if (!c2)
        return -1;
    *c1 = *c2 = 0;
    *ctrls = c1 + 1;
    *path = c2 + 1;
    return 0;
}

int mc_cgroup_path(const char *proc_cgroup, const char *ctrl, char *out, size_t cap)
{
    int found = 0;
    for (const char *line = proc_cgroup; line && *line;) {
        char buf[1200];
        const char *ctrls, *path;
        if (cgroup_line(&line, buf, sizeof buf, &ctrls, &path) != 0)
            continue;
        if (*ctrls ? has_word(ctrls, ctrl) : !found) { /* v1's line wins over v2's */
            snprintf(out, cap, "%s", path);
            found = 1;
            if (*ctrls)
                return 0;
        }
    }
    return found ? 0 : -1;
}

/* The mount point and root of the hierarchy (v2: ctrls NULL) in mountinfo. */
static int find_mount(const char *mountinfo, const char *ctrls, char *mnt, size_t mcap, char *root,
                      size_t rcap)
{
    const char *line = mountinfo;
    while (line && *line) {
        char buf[2048];
        take_line(&line, buf, sizeof buf);
        char r[512], m[512];
        const char *dash = strstr(buf, " - ");
        if (!dash || sscanf(buf, "%*s %*s %*s %511s %511s", r, m) != 2)
            continue;
        char fstype[64], src[256], opts[512] = "";
        if (sscanf(dash + 3, "%63s %255s %511s", fstype, src, opts) < 2)
            continue;
        int ok = 0;
        if (!ctrls)
            ok = strcmp(fstype, "cgroup2") == 0;
        else if (strcmp(fstype, "cgroup") == 0) {
            ok = 1; /* every controller of the line must be among the mount's options */
            char c[96];
            snprintf(c, sizeof c, "%s", ctrls);
            for (char *save = NULL, *t = strtok_r(c, ",", &save); t; t = strtok_r(NULL, ",", &save))
                ok &= has_word(opts, t);
        }
        if (ok) {
            snprintf(mnt, mcap, "%s", m);
            snprintf(root, rcap, "%s", r);
            return 0;
        }
    }
    return -1;
}

/* mount + (path less the mount's root). */
static void join(char *out, size_t cap, const char *mnt, const char *root, const char *path)
{
    const size_t rl = strlen(root);
    if (strcmp(root, "/") != 0 && strncmp(path, root, rl) == 0 && (path[rl] == '/' || !path[rl]))
        path += rl;
    else if (strcmp(root, "/") != 0)
        path = ""; /* the namespace's root is the mount's: the process sits at the top */
    snprintf(out, cap, "%s%s", mnt, strcmp(path, "/") == 0 ? "" : path);
}

void mc_cgroup_parse(mc_cgroup *cg, const char *self_cgroup, const char *mountinfo)
{
    memset(cg, 0, sizeof *cg);
    const char *line = self_cgroup;
    while (line && *line) {
        char buf[1200];
        const char *ctrls, *path;
        if (cgroup_line(&line, buf, sizeof buf, &ctrls, &path) != 0)
            continue;
        char mnt[512], root[512];
        if (!*ctrls) { /* "0::/path": v2 */
            if (find_mount(mountinfo, NULL, mnt, sizeof mnt, root, sizeof root) == 0) {
                join(cg->v2_dir, sizeof cg->v2_dir, mnt, root, path);
                snprintf(cg->v2_top, sizeof cg->v2_top, "%s", mnt);
            }
        } else if (strncmp(ctrls, "name=", 5) != 0 && cg->nv1 < MC_CG_V1_MAX &&
                   find_mount(mountinfo, ctrls, mnt, sizeof mnt, root, sizeof root) == 0) {
            snprintf(cg->v1[cg->nv1].ctrls, sizeof cg->v1[0].ctrls, "%s", ctrls);
            join(cg->v1[cg->nv1].dir, sizeof cg->v1[0].dir, mnt, root, path);
            snprintf(cg->v1[cg->nv1].top, sizeof cg->v1[0].top, "%s", mnt);
            cg->nv1++;
        }
    }
}

int mc_cgroup_load(mc_cgroup *cg)
{
    char *self = malloc(1 << 14), *mi = malloc(1 << 18);
    int rc = -1;
    if (self && mi && mc_read_text("/proc/self/cgroup", self, 1 << 14) >= 0 &&
        mc_read_text("/proc/self/mountinfo", mi, 1 << 18) >= 0) {
        mc_cgroup_parse(cg, self, mi);
        rc = 0;
    } else {
        memset(cg, 0, sizeof *cg);
    }
    free(self);
    free(mi);
    return rc;
}

const char *mc_cgroup_dir(const mc_cgroup *cg, const char *ctrl, int *v2, const char **top)
{
    for (size_t i = 0; i < cg->nv1; i++)
        if (has_word(cg->v1[i].ctrls, ctrl)) {
            *v2 = 0;
            *top = cg->v1[i].top;
            return cg->v1[i].dir;
        }
    if (cg->v2_dir[0]) {
        *v2 = 1;
        *top = cg->v2_top;
        return cg->v2_dir;
    }
    return NULL;
}

/* Calls fn on dir and every parent up to top; fn returns the limit it read
 * there (NAN none). Returns the smallest, NAN none; where gets its file. */
typedef double (*level_fn)(const char *dir, int v2, void *ctx, char *file, size_t fcap);

static double walk_min(const char *dir, const char *top, int v2, level_fn fn, void *ctx,
                       char *where, size_t wcap)
{
    char d[1024], file[1100];
    snprintf(d, sizeof d, "%s", dir);
    double best = NAN;
    const size_t tl = strlen(top);
    for (;;) {
        const double v = fn(d, v2, ctx, file, sizeof file);
        if (!isnan(v) && (isnan(best) || v < best)) {
            best = v;
            if (where)
                snprintf(where, wcap, "%s", file);
        }
        char *slash = strrchr(d, '/');
        if (strlen(d) <= tl || !slash || slash == d)
            break;
        *slash = 0;
        if (strlen(d) < tl)
            break;
    }
    return best;
}

int mc_parse_cpu_max(const char *text, double *cpus)
{
    char q[32];
    double period = 0;
    if (sscanf(text, "%31s %lf", q, &period) < 1)
        return -1;
    if (strcmp(q, "max") == 0)
        return 0;
    const double quota = strtod(q, NULL);
    if (!(quota > 0) || !(period > 0))
        return -1;
    *cpus = quota / period;
    return 1;
}

static double cpu_level(const char *dir, int v2, void *ctx, char *file, size_t fcap)
{
    (void)ctx;
    char buf[128];
    double cpus;
    if (v2) {
        mc_path(file, fcap, "%s/cpu.max", dir);
        return mc_read_text(file, buf, sizeof buf) >= 0 && mc_parse_cpu_max(buf, &cpus) == 1 ? cpus
                                                                                           : NAN;
    }
    int64_t quota, period;
    char pf[1100];
    mc_path(file, fcap, "%s/cpu.cfs_quota_us", dir);
    if (mc_read_i64(file, &quota) < 0 || quota <= 0 ||
        mc_read_i64(mc_path(pf, sizeof pf, "%s/cpu.cfs_period_us", dir), &period) < 0 || period <= 0)
        return NAN;
    return (double)quota / (double)period;
}

/* The smallest limit of controller ctrl along the path: 1 with *out, 0
 * none, -1 no cgroup with the controller. */
static int limit_of(const mc_cgroup *cg, const char *ctrl, level_fn fn, double *out, char *where,
                    size_t wcap)
{
    int v2;
    const char *top, *dir = mc_cgroup_dir(cg, ctrl, &v2, &top);
    if (!dir)
        return -1;
    const double v = walk_min(dir, top, v2, fn, NULL, where, wcap);
    if (isnan(v))
        return 0;
    *out = v;
    return 1;
}

int mc_cgroup_cpu_quota(const mc_cgroup *cg, double *cpus, char *where, size_t wcap)
{
    return limit_of(cg, "cpu", cpu_level, cpus, where, wcap);
}

/* RATIONALE: v1 writes "no limit" as the largest multiple of the page size
 * below 2^63; anything from 2^60 bytes up is taken for none. */
#define MC_NO_LIMIT 1152921504606846976.0

static double mem_level(const char *dir, int v2, void *ctx, char *file, size_t fcap)
{
    (void)ctx;
    char buf[64];
    mc_path(file, fcap, v2 ? "%s/memory.max" : "%s/memory.limit_in_bytes", dir);
    if (mc_read_text(file, buf, sizeof buf) < 0 || strncmp(buf, "max", 3) == 0)
        return NAN;
    char *end;
    const double v = strtod(buf, &end);
    return end != buf && v > 0 && v < MC_NO_LIMIT ? v : NAN;
}

int mc_cgroup_mem_limit(const mc_cgroup *cg, double *bytes, char *where, size_t wcap)
{
    return limit_of(cg, "memory", mem_level, bytes, where, wcap);
}

/* The value after key= in the line ("max" or missing: NAN). */
static double io_field(const char *line, const char *key)
{
    const char *p = strstr(line, key);
    if (!p || strncmp(p + strlen(key), "max", 3) == 0)
        return NAN;
    char *end;
    const double v = strtod(p + strlen(key), &end);
    return end != p + strlen(key) && v > 0 ? v : NAN;
}

int mc_parse_io_max(const char *text, unsigned maj, unsigned min, double *rbps, double *riops)
{
    for (const char *l = text; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
        unsigned a, b;
        if (sscanf(l, "%u:%u", &a, &b) != 2 || a != maj || b != min)
            continue;
        char line[512];
        snprintf(line, sizeof line, "%.*s", (int)strcspn(l, "\n"), l);
        *rbps = io_field(line, " rbps=");
        *riops = io_field(line, " riops=");
        return !isnan(*rbps) || !isnan(*riops);
    }
    return 0;
}

int mc_parse_blkio(const char *text, unsigned maj, unsigned min, double *v)
{
    for (const char *l = text; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
        unsigned a, b;
        double x;
        if (sscanf(l, "%u:%u %lf", &a, &b, &x) == 3 && a == maj && b == min && x > 0) {
            *v = x;
            return 1;
        }
    }
    return 0;
}

typedef struct io_ctx {
    unsigned maj, min;
    int iops; /* 0: bytes/s, 1: reads/s */
} io_ctx;

static double io_level(const char *dir, int v2, void *ctx, char *file, size_t fcap)
{
    const io_ctx *c = ctx;
    char buf[4096];
    double rbps = NAN, riops = NAN, v = NAN;
    if (v2) {
        mc_path(file, fcap, "%s/io.max", dir);
        if (mc_read_text(file, buf, sizeof buf) >= 0 &&
            mc_parse_io_max(buf, c->maj, c->min, &rbps, &riops))
            return c->iops ? riops : rbps;
        return NAN;
    }
    mc_path(file, fcap, c->iops ? "%s/blkio.throttle.read_iops_device"
                                : "%s/blkio.throttle.read_bps_device", dir);
    return mc_read_text(file, buf, sizeof buf) >= 0 && mc_parse_blkio(buf, c->maj, c->min, &v) ? v
                                                                                               : NAN;
}

int mc_cgroup_io_limit(const mc_cgroup *cg, unsigned maj, unsigned min, double *rbps,
                       double *riops, char *where, size_t wcap)
{
    int v2;
    const char *top, *dir = mc_cgroup_dir(cg, "blkio", &v2, &top); /* v1's name; else v2 */
    if (!dir)
        return -1;
    io_ctx c = {maj, min, 0};
    char w2[1100] = "";
    *rbps = walk_min(dir, top, v2, io_level, &c, where, wcap);
    c.iops = 1;
    *riops = walk_min(dir, top, v2, io_level, &c, isnan(*rbps) ? where : w2,
                      isnan(*rbps) ? wcap : sizeof w2);
    if (isnan(*rbps))
        *rbps = 0;
    if (isnan(*riops))
        *riops = 0;
    return *rbps > 0 || *riops > 0;
}
