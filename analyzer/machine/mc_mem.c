/* mc_mem.c — the memory lines of the check: RAM shown (/proc/meminfo) and
 * usable (the cgroup's memory limit), swap, and the size of the shared
 * memory file system against what DataLoader workers keep in it: each
 * worker's prefetched batches, passed to the trainer through /dev/shm
 * (mc_mem.h, docs/check.md "Shared memory").
 *
 * Must never: write to the shared memory file system or allocate memory
 * to test it (statfs only).
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>

#include "machine/mc_file.h"
#include "machine/mc_mem.h"

#define GIB (1024.0 * 1024 * 1024)
#define MIB (1024.0 * 1024)

double mc_meminfo(const char *text, const char *field)
{
    const size_t fl = strlen(field);
    for (const char *l = text; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL)
        if (strncmp(l, field, fl) == 0 && l[fl] == ':') {
            char *end;
            const double kb = strtod(l + fl + 1, &end);
            return end != l + fl + 1 ? kb * 1024 : -1;
        }
    return -1;
}

/* "23.5 GiB", "64 MiB" */
static void human(char *out, size_t cap, double bytes)
{
    if (bytes >= GIB)
        snprintf(out, cap, "%.1f GiB", bytes / GIB);
    else
        snprintf(out, cap, "%.0f MiB", bytes / MIB);
}

void mc_check_memory(mc_list *l, const mc_opts *o, const mc_cgroup *cg)
{
    mc_item *it = mc_add(l, "memory", "");
    if (!it)
        return;
    char buf[8192];
    if (mc_read_text("/proc/meminfo", buf, sizeof buf) < 0) {
        mc_cause(it, "/proc/meminfo could not be read");
        return;
    }
    const double total = mc_meminfo(buf, "MemTotal"), swap = mc_meminfo(buf, "SwapTotal");
    double limit = 0;
    char where[1100] = "";
    const int lim = mc_cgroup_mem_limit(cg, &limit, where, sizeof where);
    const double usable = lim == 1 && limit < total ? limit : total;
    const double expected = o->memory_paid_gib > 0 ? o->memory_paid_gib * GIB : total;
    mc_num(it, "shown_bytes", total);
    mc_num(it, "cgroup_limit_bytes", lim == 1 ? limit : NAN);
    mc_num(it, "swap_bytes", swap >= 0 ? swap : NAN);
    if (total <= 0) {
        mc_cause(it, "/proc/meminfo has no MemTotal");
        return;
    }
    mc_judge(it, usable < 0.9 * expected ? MC_BELOW_SPEC : MC_TO_SPEC, usable / GIB,
             expected / GIB, "GiB");
    char u[32], t[32], s[32];
    human(u, sizeof u, usable);
    human(t, sizeof t, total);
    human(s, sizeof s, swap > 0 ? swap : 0);
    mc_what(it, "%s usable of %s shown (%s), swap %s", u, t,
            lim == 1 ? "cgroup memory limit" : lim == 0 ? "no cgroup limit" : "cgroup unknown",
            swap > 0 ? s : "none");
    if (it->verdict == MC_BELOW_SPEC && lim == 1 && limit < total)
        mc_cause(it, "cgroup memory limit (%s): DataLoader workers, pinned buffers and the page "
                     "cache of the dataset all count against it; past it the kernel kills the "
                     "job", where);
    else if (it->verdict == MC_BELOW_SPEC)
        mc_cause(it, "the machine has less memory than was paid for");
    mc_str(it, "limit_file", lim == 1 ? where : NULL);
}

void mc_check_shm(mc_list *l, const mc_opts *o)
{
    mc_item *it = mc_add(l, "shm", o->shm_path);
    if (!it)
        return;
    const double need = (double)o->shm_workers * o->shm_prefetch * o->shm_batch_bytes;
    mc_num(it, "need_bytes", need);
    mc_num(it, "workers", o->shm_workers);
    mc_num(it, "prefetch_factor", o->shm_prefetch);
    mc_num(it, "batch_bytes", o->shm_batch_bytes);
    mc_str(it, "need_from", o->shm_need_from);
    struct statvfs sv;
    if (statvfs(o->shm_path, &sv) != 0) {
        mc_judge(it, MC_BELOW_SPEC, 0, need / MIB, "MiB");
        mc_what(it, "%s: %s", o->shm_path, strerror(errno));
        mc_cause(it, "no shared memory file system: DataLoader workers cannot hand batches to "
                     "the trainer (mount a tmpfs on /dev/shm, or docker run --ipc=host)");
        return;
    }
    const double size = (double)sv.f_blocks * (double)sv.f_frsize;
    const double avail = (double)sv.f_bavail * (double)sv.f_frsize;
    mc_num(it, "size_bytes", size);
    mc_num(it, "free_bytes", avail);
    char sz[32], fr[32], nd[32];
    human(sz, sizeof sz, size);
    human(fr, sizeof fr, avail);
    human(nd, sizeof nd, need);
    const int small = size < need, full = !small && avail < need;
    mc_judge(it, small || full ? MC_BELOW_SPEC : MC_TO_SPEC, (small ? size : avail) / MIB,
             need / MIB, "MiB");
    mc_what(it, "%s, %s free, vs %s needed (%d workers x %d batches x %.0f MB, %s)", sz, fr, nd,
            o->shm_workers, o->shm_prefetch, o->shm_batch_bytes / 1e6, o->shm_need_from);
    /* RATIONALE: tmpfs rounds its size to pages; 64 MiB give or take one
     * page is Docker's default */
    const int docker = fabs(size - MC_SHM_DOCKER_DEFAULT) <= 4096;
    const double want_gib = ceil(need * 1.5 / GIB);
    if (small && docker)
        mc_cause(it, "the container default of 64 MB (docker run without --shm-size): DataLoader "
                     "workers die with \"bus error\" when a batch does not fit; run with "
                     "--shm-size=%.0fg or --ipc=host", want_gib);
    else if (small)
        mc_cause(it, "too small for the workers' batches: DataLoader workers die with \"bus "
                     "error\"; make it at least %.0f GiB (--shm-size, or the tmpfs size)", want_gib);
    else if (full)
        mc_cause(it, "big enough, but only %s free: other processes hold the rest", fr);
}
