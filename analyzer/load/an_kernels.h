/* an_kernels.h — what a GPU kernel's name says: its name for people
 * (demangled) and its class (communication or compute), the busy class of
 * every GPU record, and the GPU time per kernel name of a process.
 *
 * Must never: demangle by hand (the C++ runtime's __cxa_demangle does it),
 * or print.
 */
#ifndef AN_KERNELS_H
#define AN_KERNELS_H

#include <stddef.h>
#include <stdint.h>

#include "base/an_index.h"
#include "load/an_timeline.h"
#include "gs_trace.h"

/* The name for people: the demangled form of a C++ (Itanium ABI) name,
 * else the name as it is. Writes at most n bytes (NUL-terminated, cut
 * short when longer) into out and returns out; "" for NULL. */
const char *an_kernel_display(const char *name, char *out, size_t n);

/* The function's own name, without namespaces, template arguments,
 * parameters or return type: "ncclDevKernel_AllReduce_Sum_f32_RING_LL" for
 * _Z39ncclDevKernel_AllReduce_Sum_f32_RING_LL24ncclDevKernelArgsStorageILm4096EE.
 * Into out (n bytes); returns out. */
const char *an_kernel_base(const char *name, char *out, size_t n);

/* 1 when the kernel moves data between GPUs: NCCL's kernels, whatever
 * their mangling (ncclDevKernel_*, ncclKernel_*, and other nccl* / *Nccl*
 * function names, and NCCL's one-rank oneRankReduce). */
int an_kernel_is_comm(const char *name);

/* What a GPU record (gpu_kernel, gpu_memcpy, gpu_memset) keeps the GPU busy
 * with, an enum an_busy (an_timeline.h): a kernel by its name's class (comm:
 * an_kernel_is_comm of its name, for the caller to cache), a peer-to-peer
 * copy as communication, a host-to-device copy by the host memory CUPTI
 * saw (pageable, pinned), any other copy or memset as other. The one rule
 * for the analysis (an_events.c) and the HTML timeline (report_pass2.c). */
static inline unsigned an_gpu_busy(const gs_event *e, int comm)
{
    /* RATIONALE: inline, as most GPU records are kernels: the call cost
     * more than the test (docs/performance.md, "A cheaper sweep") */
    if (e->kind == GS_K_GPU_KERNEL)
        return comm ? AN_BUSY_COMM : AN_BUSY_COMPUTE;
    if (e->kind != GS_K_GPU_MEMCPY)
        return AN_BUSY_OTHER;
    if (gs_copy_dir(e) == GS_DIR_PTOP)
        return AN_BUSY_COMM; /* between GPUs: what NCCL's peer-to-peer transport does */
    if (gs_copy_dir(e) == GS_DIR_HTOD) {
        const unsigned k = gs_copy_src_mem(e);
        if (k == GS_MEM_PAGEABLE)
            return AN_BUSY_H2D_PAGEABLE;
        if (k == GS_MEM_PINNED)
            return AN_BUSY_H2D_PINNED;
    }
    return AN_BUSY_OTHER;
}

/* GPU time per kernel name (string id) of one process. */
typedef struct an_kstat {
    char *name;     /* as recorded (mangled), owned */
    uint64_t ns;    /* summed durations */
    uint64_t count;
    int comm;       /* an_kernel_is_comm */
} an_kstat;

/* RATIONALE: string ids are the trace file's, any 32-bit value: ids below
 * AN_KSTATS_DIRECT index a table (the common case, no hashing), the others
 * a hash map, so a hostile id costs one entry (docs/collector-safety.md). */
#define AN_KSTATS_DIRECT 65536u
/* RATIONALE: a process's distinct kernel names kept by name; past this the
 * rest are summed in two entries, communication and compute, each named
 * "(other kernels: ...)", and counted in merged_names: a trace of millions
 * of distinct names costs the analysis what one of 65,536 does
 * (docs/collector-safety.md, "Limits"). */
#define AN_KSTATS_MAX_NAMES 65536u

typedef struct an_kstats {
    an_kstat *v;
    uint32_t *by_id; /* string id below AN_KSTATS_DIRECT -> index + 1 into v, 0 = none */
    an_index far;    /* the other string ids -> index */
    uint32_t nid, n, cap;
    uint32_t other[2]; /* the entries (index + 1, 0 none yet) where kernels of names
                        * past AN_KSTATS_MAX_NAMES are summed: compute, communication */
    uint64_t merged;   /* kernels summed there */
} an_kstats;

/* Add one kernel of string id (name: its string, NULL when not defined). */
void an_kstats_add(an_kstats *k, uint32_t id, const char *name, uint64_t dur);
/* Add one kernel of a string id already added (1), else nothing (0: call
 * an_kstats_add with its name). RATIONALE: a trace's kernels are mostly a
 * few names again and again; this skips the name lookup for them. */
static inline int an_kstats_add_known(an_kstats *k, uint32_t id, uint64_t dur)
{
    if (id >= k->nid || !k->by_id[id])
        return 0;
    an_kstat *s = &k->v[k->by_id[id] - 1];
    s->ns += dur;
    s->count++;
    return 1;
}
/* The n largest by time, into top (pointers into k); returns how many. */
size_t an_kstats_top(const an_kstats *k, const an_kstat **top, size_t n);
void an_kstats_free(an_kstats *k);

#endif
