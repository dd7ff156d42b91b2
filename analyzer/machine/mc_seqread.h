/* mc_seqread.h — the sequential read bandwidth of files with the page cache
 * kept out (mc_seqread.c): O_DIRECT where the file system takes it, else
 * POSIX_FADV_DONTNEED checked with mincore, saying which way it went or
 * that the figure may include cached data. `probe` reads a path with it,
 * `check` a dataset's largest files.
 *
 * Must never: write to the files, or claim a figure is uncached when it
 * could not check.
 */
#ifndef MC_SEQREAD_H
#define MC_SEQREAD_H

#include <stddef.h>
#include <stdint.h>

/* How the cache was kept out, per file (OR-ed over the files read). */
enum { MC_RD_DIRECT = 1, MC_RD_DROPPED = 2, MC_RD_CACHED = 4, MC_RD_MEMORY = 8 };

typedef struct mc_seqread {
    uint64_t max_bytes;     /* stop after this many bytes */
    double max_seconds;     /* ... or after this long reading (0: no limit) */
    int no_direct;          /* never O_DIRECT (fadvise and mincore only) */
    uint64_t bytes, files, skipped;
    double seconds;         /* inside the reads */
    unsigned methods;       /* MC_RD_* seen */
    uint64_t cached_bytes;  /* bytes that were in the page cache before reading */
    uint64_t checked_bytes; /* bytes whose residency was checked */
    uint64_t largest;       /* the largest file read */
    void *buf;
    int err;
    char errmsg[300];
} mc_seqread;

/* Prepare r (its buffer); 0, or -1 out of memory. */
int mc_seqread_init(mc_seqread *r, uint64_t max_bytes, double max_seconds, int no_direct);
void mc_seqread_free(mc_seqread *r);
/* Read one file of size bytes to its end (or the budget). */
void mc_seqread_file(mc_seqread *r, const char *path, uint64_t size);
/* Read a file, or every file under a directory in walk order. */
void mc_seqread_path(mc_seqread *r, const char *path);
/* 1 once the byte or time budget is spent. */
int mc_seqread_done(const mc_seqread *r);
/* "o_direct", "fadvise_dontneed", "o_direct+fadvise_dontneed", "cached",
 * "memory_fs", "none" */
const char *mc_seqread_method(unsigned methods);
/* One sentence on how the cache was kept out (empty when nothing was read). */
void mc_seqread_note(const mc_seqread *r, char *note, size_t cap);
/* Bytes of the file's [0, size) in the page cache; -1 when it cannot be told. */
int64_t mc_resident_bytes(int fd, uint64_t size);
/* 1 when fd is on tmpfs or ramfs (files live in the page cache itself). */
int mc_memory_fs(int fd);

#endif
