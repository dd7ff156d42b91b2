/* mc_cgroup.h — this process's cgroups (v2, and v1 per controller, as a
 * hybrid host mounts them) and the limits the check reports from them: the
 * CPU quota, the memory limit, the I/O limits of a block device. Each limit
 * is the smallest along the path from the process's cgroup up to the root
 * of the mounted hierarchy.
 *
 * Must never: write a cgroup file, or take a missing file for "no limit"
 * when no cgroup was found (the callers say "cannot tell" then).
 */
#ifndef MC_CGROUP_H
#define MC_CGROUP_H

#include <stddef.h>

#define MC_CG_V1_MAX 16

typedef struct mc_cgroup {
    char v2_dir[1024]; /* the process's v2 cgroup directory; "" none */
    char v2_top[512];  /* the cgroup2 mount point (the walk's end) */
    struct {
        char ctrls[96]; /* "cpu", "cpu,cpuacct", "memory", ... */
        char dir[1024];
        char top[512];
    } v1[MC_CG_V1_MAX];
    size_t nv1;
} mc_cgroup;

/* From the texts of /proc/self/cgroup and /proc/self/mountinfo. */
void mc_cgroup_parse(mc_cgroup *cg, const char *self_cgroup, const char *mountinfo);
/* This process's. Returns 0, -1 when /proc cannot be read. */
int mc_cgroup_load(mc_cgroup *cg);

/* In the text of a /proc/<pid>/cgroup, the path of the cgroup that holds
 * controller ctrl: the v1 hierarchy's that has it, else the v2 one's.
 * Returns 0 with the path in out, -1 when neither is there. */
int mc_cgroup_path(const char *proc_cgroup, const char *ctrl, char *out, size_t cap);

/* The directory of the cgroup that holds controller ctrl (v1 where a v1
 * hierarchy has it, else v2) and the top of its walk; NULL when none.
 * *v2 says which. */
const char *mc_cgroup_dir(const mc_cgroup *cg, const char *ctrl, int *v2, const char **top);

/* The CPU quota in CPUs (quota / period), smallest along the path.
 * Returns 1 with *cpus set (and where: the cgroup file that set it), 0 no
 * quota, -1 no cgroup with the cpu controller found. */
int mc_cgroup_cpu_quota(const mc_cgroup *cg, double *cpus, char *where, size_t wcap);
/* The memory limit in bytes, smallest along the path. 1, 0 none, -1 unknown. */
int mc_cgroup_mem_limit(const mc_cgroup *cg, double *bytes, char *where, size_t wcap);
/* The read limits of block device maj:min: bytes/s and reads/s (0 = none
 * for that one). 1 when either is set, 0 none, -1 unknown. */
int mc_cgroup_io_limit(const mc_cgroup *cg, unsigned maj, unsigned min, double *rbps,
                       double *riops, char *where, size_t wcap);

/* The parsers, exposed for the unit tests. */
/* cpu.max ("max 100000", "150000 100000"): 1 with *cpus, 0 none, -1 bad. */
int mc_parse_cpu_max(const char *text, double *cpus);
/* io.max lines ("8:0 rbps=1048576 wbps=max riops=max wiops=max") for
 * maj:min: 1 with either set, 0 none. */
int mc_parse_io_max(const char *text, unsigned maj, unsigned min, double *rbps, double *riops);
/* blkio.throttle.read_*_device lines ("8:0 1048576"): 1 with *v, 0 none. */
int mc_parse_blkio(const char *text, unsigned maj, unsigned min, double *v);

#endif
