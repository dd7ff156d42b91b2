/* mc_check.h — what `gpustarve check` says about this machine: a list of
 * items, one line each, every one "to spec", "below spec" (measured vs
 * expected, and the likely cause) or "cannot tell" (and why), with the
 * numbers behind it for the JSON (docs/check.md).
 *
 * The measuring files fill the list, one concern each:
 *   the CPUs the process may use, steal time, frequency   mc_cpu.c
 *   memory, swap, shared memory (/dev/shm)                mc_mem.c
 *   storage: file system, queue, I/O limits               mc_fs.c
 *   storage: sequential read, page cache kept out         mc_seqread.c (also `probe`'s)
 *   storage: small files read as a DataLoader reads them  mc_files.c
 *   the GPUs, their link, copies, GEMM, throttling         mc_gpu.c, mc_gemm.c
 *   several GPUs: peer copies, all-reduce, scaling        mc_multi.c
 * with the cgroup files (mc_cgroup.c), small file reads (mc_file.c), the
 * datasheet table (mc_datasheet.c, analyzer/machine/gpus.tsv) and CUDA libraries found
 * at run time (mc_cudalib.c). Each file judges its own lines; the rules'
 * constants are in its header (docs/check.md says each rule).
 *
 * Must never: change a setting of the machine, need root, write anywhere
 * but its own buffers, or link a CUDA library (mc_cudalib.c dlopens them).
 */
#ifndef MC_CHECK_H
#define MC_CHECK_H

#include <stddef.h>
#include <stdint.h>

typedef enum mc_verdict { MC_CANNOT_TELL = 0, MC_TO_SPEC = 1, MC_BELOW_SPEC = 2 } mc_verdict;

#define MC_MAX_NUMS 16
#define MC_MAX_STRS 6

typedef struct mc_item {
    char id[40];       /* stable key: "cpu", "storage.seq_read", "gpu.h2d", ... */
    char subject[200]; /* what it is about: "" (the machine), a path, "GPU 0" */
    mc_verdict verdict;
    double measured, expected; /* the compared pair; NAN when not known */
    char unit[16];             /* of measured and expected: "CPUs", "MB/s", ... */
    char what[400];            /* the line: what was measured, vs what */
    char cause[480];           /* below spec: the likely cause; cannot tell: why */
    struct { char key[32]; double v; } nums[MC_MAX_NUMS]; /* more numbers (JSON) */
    size_t nnums;
    struct { char key[32]; char v[400]; int null; } strs[MC_MAX_STRS];
    size_t nstrs;
} mc_item;

typedef struct mc_list {
    mc_item *v;
    size_t n, cap;
} mc_list;

/* Append an item (verdict cannot tell, measured and expected NAN). Returns
 * it, or NULL out of memory (the caller skips that line). */
mc_item *mc_add(mc_list *l, const char *id, const char *subject);
void mc_list_free(mc_list *l);
/* Set the compared pair and the verdict in one call. */
void mc_judge(mc_item *it, mc_verdict v, double measured, double expected, const char *unit);
/* Extra numbers and strings for the JSON (dropped past MC_MAX_*); a NULL
 * string and a NAN number are written null, so every key is always there. */
void mc_num(mc_item *it, const char *key, double v);
void mc_str(mc_item *it, const char *key, const char *v);
/* printf into it->what / it->cause. */
void mc_what(mc_item *it, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void mc_cause(mc_item *it, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* "to spec", "below spec", "cannot tell"; and the JSON's "to_spec", ... */
const char *mc_verdict_text(mc_verdict v);
const char *mc_verdict_key(mc_verdict v);

/* What the command line asked for (cmd_check.c fills it). */
typedef struct mc_opts {
    int quick;                /* --quick: smaller samples, shorter budgets */
    double cpus_paid;         /* --cpus N: what the offer says; 0 = compare with what is shown */
    double memory_paid_gib;   /* --memory GIB; 0 = compare with what is shown */
    const char *shm_path;     /* --shm PATH (default /dev/shm) */
    /* what DataLoader workers keep in shared memory: workers x prefetch x
     * batch bytes, from --run DIR or the rule (docs/check.md, "Shared memory") */
    int shm_workers, shm_prefetch;
    double shm_batch_bytes;
    char shm_need_from[200]; /* "the run in DIR" or "the rule" */
    /* storage */
    uint64_t read_max_bytes;  /* sequential read: at most this much per path */
    double read_budget_s;     /* ... and about this long */
    double read_expect_MBps;  /* --expect-read-mbps; default the rule */
    int files_max;            /* small files: at most this many per path */
    double files_budget_s;
    int file_threads;         /* readers at once, as DataLoader workers */
    uint64_t small_file_bytes; /* files up to this size count as small */
    double file_expect_ms;    /* mean time per small file at most this (the rule) */
    /* GPU */
    int no_gpu;
    uint64_t copy_bytes;      /* per host<->device copy */
    int repeats;              /* copies per kind, after a warm-up */
    int gemm_n;               /* square GEMM size */
    int scaling_n;            /* the scaling workload's layer size */
    int scaling_steps;
    const char *datasheet;    /* --datasheet FILE; NULL: the built-in table */
    const char *sysfs;        /* where sysfs is (GPUSTARVE_SYSFS_ROOT; "/sys") */
} mc_opts;

/* Defaults for a full (quick = 0) or quick check. */
void mc_opts_default(mc_opts *o, int quick);

#endif
