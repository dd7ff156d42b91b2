/* mc_fs.h — what a dataset path lives on (mc_fs.c): the file system and
 * its kind (local disk, network, overlay, FUSE, memory), the block device
 * and its queue, and the cgroup's read limits on that device.
 *
 * Must never: write, or change a queue setting it reads.
 */
#ifndef MC_FS_H
#define MC_FS_H

#include "machine/mc_cgroup.h"
#include "machine/mc_check.h"

enum mc_fs_kind {
    MC_FS_UNKNOWN = 0,
    MC_FS_LOCAL,   /* on a block device of this machine */
    MC_FS_NETWORK, /* NFS, SMB, Lustre, CephFS, ... */
    MC_FS_FUSE,    /* a FUSE file system (s3fs, gcsfuse, ...): often an object store */
    MC_FS_OVERLAY, /* a container's layered root */
    MC_FS_MEMORY,  /* tmpfs, ramfs */
    MC_FS_HOST,    /* a host folder shared into a VM (virtiofs, 9p) */
};

typedef struct mc_fsinfo {
    char fstype[64]; /* from mountinfo ("ext4", "nfs4", "fuse.s3fs") */
    char source[256];
    char mnt[512];
    unsigned maj, min;           /* the path's st_dev */
    int kind;                    /* enum mc_fs_kind */
    char disk[64];               /* its disk's name in sysfs ("vda", "nvme0n1"); "" none */
    unsigned disk_maj, disk_min;
    char driver[64];             /* "virtio_blk", "nvme", "loop" ... */
    int rotational;              /* -1 unknown */
    char scheduler[32];
    long nr_requests, read_ahead_kb; /* -1 unknown */
    char backing[256];           /* a loop device's backing file */
    /* the cgroup's read limits on the device (0 none), and the file that sets them */
    double limit_bps, limit_iops;
    char limit_file[256];
} mc_fsinfo;

/* The kind of a file system type name. */
int mc_fs_kind(const char *fstype);
const char *mc_fs_kind_name(int kind);
/* Fill fi for path (sysfs under sysfs_root). 0, or -1 when path cannot be
 * stat'ed (fi->fstype then empty). */
int mc_fs_info(const char *path, const char *sysfs_root, const mc_cgroup *cg, mc_fsinfo *fi);
/* The `storage.fs` line: the file system, its device and queue, and
 * whether the cgroup throttles reads from it. */
void mc_check_fs(mc_list *l, const char *path, const mc_fsinfo *fi);
/* One phrase for a below-spec storage line: what about this file system
 * makes reads slow ("network file system (nfs4)", "cgroup read limit of
 * 21.0 MB/s"); "" when nothing is known. iops: the small-file line. */
void mc_fs_cause(const mc_fsinfo *fi, int iops, char *out, size_t cap);

#endif
