/* mc_files.h — the storage lines of one dataset path (mc_files.c): a bounded
 * walk that samples its files (a random sample of the small ones, the
 * largest ones), the sequential read of the largest files with the page
 * cache kept out (mc_seqread.h), and the small files read whole by several
 * threads at once as DataLoader workers read them, with the latency of
 * each file.
 *
 * Must never: write to the dataset, or leave files in the page cache that
 * were not there before (POSIX_FADV_DONTNEED after reading).
 */
#ifndef MC_FILES_H
#define MC_FILES_H

#include <stddef.h>
#include <stdint.h>

#include "machine/mc_check.h"
#include "machine/mc_fs.h"

#define MC_LARGEST 32

typedef struct mc_sample {
    char **small;           /* a uniform sample of the files up to o->small_file_bytes */
    uint64_t *small_size;
    size_t nsmall, cap;
    char *large[MC_LARGEST]; /* the largest files seen, largest first */
    uint64_t large_size[MC_LARGEST];
    size_t nlarge;
    uint64_t files, small_files; /* regular files seen (non-empty) */
    int cut;                 /* the walk stopped at its budget */
    double walk_s;
} mc_sample;

typedef struct mc_smallread {
    size_t files, failed;
    uint64_t bytes;
    double wall_s;
    double mean_ms, p50_ms, p90_ms, p99_ms; /* per file, open to close */
    double cached_share; /* of the sample's bytes still cached before reading */
    int memory_fs;
} mc_smallread;

/* Walk path (a file or a directory) within the walk budget. 0, or -1 out
 * of memory. */
int mc_sample_files(const char *path, const mc_opts *o, mc_sample *s);
void mc_sample_free(mc_sample *s);
/* Read the small files of the sample, o->file_threads at once. */
void mc_read_small(const mc_sample *s, const mc_opts *o, mc_smallread *r);
/* The `storage.seq_read` and `storage.small_files` lines of path. */
void mc_storage_lines(mc_list *l, const char *path, const mc_opts *o, const mc_fsinfo *fi);

/* The rules (docs/check.md, "Storage"), exposed for the unit tests: the
 * verdict of a sequential rate, and of the mean time a small file takes
 * (the mean, not the median: a throttle lets bursts through at once and
 * makes the rest wait, and the wait is what a loader feels). */
mc_verdict mc_rule_seq(double MBps, double expect_MBps);
mc_verdict mc_rule_small(double mean_ms, double expect_ms);

#endif
