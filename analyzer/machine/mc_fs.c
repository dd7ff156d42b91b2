/* mc_fs.c — the file system under a dataset path: its mount (the line of
 * /proc/self/mountinfo with the path's device, the longest mount point
 * that holds the path), its kind, the block device behind it in sysfs
 * (/sys/dev/block/MAJ:MIN; a partition's disk) with the queue settings that
 * matter to reads, and the cgroup's read limits on that device (mc_fs.h).
 *
 * Must never: write a file, or take a VM's "rotational" flag for a spinning
 * disk (virtio disks set it whatever backs them).
 */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "machine/mc_file.h"
#include "machine/mc_fs.h"

int mc_fs_kind(const char *t)
{
    static const char *const net[] = {"nfs", "nfs4", "cifs", "smb3", "smbfs", "ceph", "lustre",
                                      "gpfs", "beegfs", "glusterfs", "afs", "orangefs", "pvfs2",
                                      "wekafs", "fuse.sshfs", "fuse.glusterfs", "fuse.ceph",
                                      "fuse.beegfs", NULL};
    for (const char *const *n = net; *n; n++)
        if (strcmp(t, *n) == 0)
            return MC_FS_NETWORK;
    if (strcmp(t, "tmpfs") == 0 || strcmp(t, "ramfs") == 0)
        return MC_FS_MEMORY;
    if (strcmp(t, "overlay") == 0 || strcmp(t, "aufs") == 0)
        return MC_FS_OVERLAY;
    if (strcmp(t, "virtiofs") == 0 || strcmp(t, "9p") == 0)
        return MC_FS_HOST;
    if (strcmp(t, "fuseblk") == 0)
        return MC_FS_LOCAL; /* a FUSE driver over a local block device (NTFS) */
    if (strncmp(t, "fuse", 4) == 0)
        return MC_FS_FUSE;
    return t[0] ? MC_FS_LOCAL : MC_FS_UNKNOWN;
}

const char *mc_fs_kind_name(int kind)
{
    switch (kind) {
    case MC_FS_LOCAL: return "local disk";
    case MC_FS_NETWORK: return "network file system";
    case MC_FS_FUSE: return "FUSE file system (often an object store)";
    case MC_FS_OVERLAY: return "container overlay";
    case MC_FS_MEMORY: return "memory file system";
    case MC_FS_HOST: return "host folder shared into the VM";
    default: return "unknown";
    }
}

/* The mountinfo line of device maj:min whose mount point is the longest
 * prefix of real (the path resolved). */
static void find_mount(mc_fsinfo *fi, const char *real)
{
    char *mi = malloc(1 << 18);
    if (!mi || mc_read_text("/proc/self/mountinfo", mi, 1 << 18) < 0) {
        free(mi);
        return;
    }
    size_t best = 0;
    for (char *save = NULL, *l = strtok_r(mi, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
        unsigned a, b;
        char mnt[512];
        const char *dash = strstr(l, " - ");
        if (!dash || sscanf(l, "%*s %*s %u:%u %*s %511s", &a, &b, mnt) != 3)
            continue;
        const size_t ml = strlen(mnt);
        const int under = strcmp(mnt, "/") == 0 ||
                          (strncmp(real, mnt, ml) == 0 && (real[ml] == '/' || !real[ml]));
        if (a != fi->maj || b != fi->min || !under || ml < best)
            continue;
        best = ml;
        mc_copy(fi->mnt, sizeof fi->mnt, mnt);
        if (sscanf(dash + 3, "%63s %255s", fi->fstype, fi->source) < 1)
            fi->fstype[0] = 0;
    }
    free(mi);
}

/* The disk behind maj:min in sysfs, and its queue. */
static void find_disk(mc_fsinfo *fi, const char *sysfs)
{
    char p[PATH_MAX], real[PATH_MAX], v[256];
    mc_path(p, sizeof p, "%s/dev/block/%u:%u", sysfs, fi->maj, fi->min);
    if (!realpath(p, real))
        return;
    mc_path(p, sizeof p, "%s/partition", real);
    if (access(p, F_OK) == 0) { /* a partition: the disk is its parent */
        char *s = strrchr(real, '/');
        if (s)
            *s = 0;
    }
    const char *name = strrchr(real, '/');
    mc_copy(fi->disk, sizeof fi->disk, name ? name + 1 : real);
    if (mc_read_line(mc_path(p, sizeof p, "%s/dev", real), v, sizeof v) == 0)
        sscanf(v, "%u:%u", &fi->disk_maj, &fi->disk_min);
    int64_t x;
    fi->rotational = mc_read_i64(mc_path(p, sizeof p, "%s/queue/rotational", real), &x) == 0 ? (int)x : -1;
    fi->nr_requests = mc_read_i64(mc_path(p, sizeof p, "%s/queue/nr_requests", real), &x) == 0 ? x : -1;
    fi->read_ahead_kb = mc_read_i64(mc_path(p, sizeof p, "%s/queue/read_ahead_kb", real), &x) == 0 ? x : -1;
    if (mc_read_line(mc_path(p, sizeof p, "%s/queue/scheduler", real), v, sizeof v) == 0) {
        const char *o = strchr(v, '['), *c = o ? strchr(o, ']') : NULL;
        if (o && c)
            snprintf(fi->scheduler, sizeof fi->scheduler, "%.*s", (int)(c - o - 1), o + 1);
        else
            mc_copy(fi->scheduler, sizeof fi->scheduler, v);
    }
    mc_read_line(mc_path(p, sizeof p, "%s/loop/backing_file", real), fi->backing, sizeof fi->backing);
    char drv[PATH_MAX];
    if (realpath(mc_path(p, sizeof p, "%s/device/driver", real), drv)) {
        const char *d = strrchr(drv, '/');
        mc_copy(fi->driver, sizeof fi->driver, d ? d + 1 : drv);
    } else if (strncmp(fi->disk, "loop", 4) == 0) {
        snprintf(fi->driver, sizeof fi->driver, "loop");
    }
}

int mc_fs_info(const char *path, const char *sysfs, const mc_cgroup *cg, mc_fsinfo *fi)
{
    memset(fi, 0, sizeof *fi);
    fi->rotational = -1;
    fi->nr_requests = fi->read_ahead_kb = -1;
    struct stat st;
    char real[PATH_MAX];
    if (stat(path, &st) != 0 || !realpath(path, real))
        return -1;
    fi->maj = major(st.st_dev);
    fi->min = minor(st.st_dev);
    find_mount(fi, real);
    fi->kind = mc_fs_kind(fi->fstype);
    if (fi->maj != 0)
        find_disk(fi, sysfs);
    if (fi->kind == MC_FS_LOCAL && fi->maj == 0 && !fi->disk[0])
        fi->kind = MC_FS_UNKNOWN; /* no device and no known type: say nothing about it */
    /* the throttle is set on the disk (a request queue), or on the device itself */
    double b = 0, i = 0;
    if (fi->disk[0] && mc_cgroup_io_limit(cg, fi->disk_maj, fi->disk_min, &b, &i, fi->limit_file,
                                          sizeof fi->limit_file) == 1) {
        fi->limit_bps = b;
        fi->limit_iops = i;
    } else if (fi->maj && mc_cgroup_io_limit(cg, fi->maj, fi->min, &b, &i, fi->limit_file,
                                             sizeof fi->limit_file) == 1) {
        fi->limit_bps = b;
        fi->limit_iops = i;
    }
    return 0;
}

/* "vda: virtio_blk, mq-deadline, nr_requests 256, read-ahead 128 KiB" */
static void device_text(const mc_fsinfo *fi, char *out, size_t cap)
{
    out[0] = 0;
    if (!fi->disk[0])
        return;
    size_t n = (size_t)snprintf(out, cap, "%s", fi->disk);
    if (fi->driver[0] && n < cap)
        n += (size_t)snprintf(out + n, cap - n, ": %s", fi->driver);
    if (fi->backing[0] && n < cap)
        n += (size_t)snprintf(out + n, cap - n, " of %s", fi->backing);
    if (fi->rotational == 1 && strcmp(fi->driver, "virtio_blk") != 0 && n < cap)
        n += (size_t)snprintf(out + n, cap - n, ", rotational");
    if (fi->scheduler[0] && n < cap)
        n += (size_t)snprintf(out + n, cap - n, ", scheduler %s", fi->scheduler);
    if (fi->nr_requests >= 0 && n < cap)
        n += (size_t)snprintf(out + n, cap - n, ", nr_requests %ld", fi->nr_requests);
    if (fi->read_ahead_kb >= 0 && n < cap)
        snprintf(out + n, cap - n, ", read-ahead %ld KiB", fi->read_ahead_kb);
}

void mc_fs_cause(const mc_fsinfo *fi, int iops, char *out, size_t cap)
{
    out[0] = 0;
    if (iops && fi->limit_iops > 0)
        snprintf(out, cap, "the cgroup limits reads from %s to %.0f per second (%s)", fi->disk,
                 fi->limit_iops, fi->limit_file);
    else if (fi->limit_bps > 0)
        snprintf(out, cap, "the cgroup limits reads from %s to %.1f MB/s (%s)",
                 fi->disk[0] ? fi->disk : "the device", fi->limit_bps / 1e6, fi->limit_file);
    else if (fi->kind == MC_FS_NETWORK || fi->kind == MC_FS_FUSE || fi->kind == MC_FS_HOST)
        snprintf(out, cap, "%s (%s from %s)", mc_fs_kind_name(fi->kind), fi->fstype, fi->source);
    else if (fi->rotational == 1 && strcmp(fi->driver, "virtio_blk") != 0)
        snprintf(out, cap, "a rotational disk (%s): every file costs a seek", fi->disk);
    else if (!iops && fi->limit_iops > 0)
        snprintf(out, cap, "the cgroup limits reads from %s to %.0f per second (%s)", fi->disk,
                 fi->limit_iops, fi->limit_file);
}

void mc_check_fs(mc_list *l, const char *path, const mc_fsinfo *fi)
{
    mc_item *it = mc_add(l, "storage.fs", path);
    if (!it)
        return;
    if (!fi->fstype[0]) {
        mc_cause(it, "its mount was not found in /proc/self/mountinfo");
        return;
    }
    char dev[400];
    device_text(fi, dev, sizeof dev);
    mc_what(it, "%s on %s (%s)%s%s", fi->fstype, fi->mnt, mc_fs_kind_name(fi->kind),
            dev[0] ? ", " : "", dev);
    mc_str(it, "fstype", fi->fstype);
    mc_str(it, "kind", mc_fs_kind_name(fi->kind));
    mc_str(it, "source", fi->source);
    mc_str(it, "device", fi->disk[0] ? fi->disk : NULL);
    mc_str(it, "scheduler", fi->scheduler[0] ? fi->scheduler : NULL);
    mc_num(it, "rotational", fi->rotational >= 0 ? fi->rotational : NAN);
    mc_num(it, "nr_requests", fi->nr_requests >= 0 ? (double)fi->nr_requests : NAN);
    mc_num(it, "read_ahead_kb", fi->read_ahead_kb >= 0 ? (double)fi->read_ahead_kb : NAN);
    mc_num(it, "limit_read_Bps", fi->limit_bps > 0 ? fi->limit_bps : NAN);
    mc_num(it, "limit_read_iops", fi->limit_iops > 0 ? fi->limit_iops : NAN);
    const int limited = fi->limit_bps > 0 || fi->limit_iops > 0;
    mc_judge(it, limited ? MC_BELOW_SPEC : MC_TO_SPEC, NAN, NAN, "");
    if (limited) {
        char c[400];
        mc_fs_cause(fi, fi->limit_bps <= 0, c, sizeof c);
        mc_cause(it, "the platform throttles I/O: %s", c);
    }
}
