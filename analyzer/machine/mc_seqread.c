/* mc_seqread.c — sequential reads of files with the page cache kept out
 * (mc_seqread.h): large reads into an aligned buffer, O_DIRECT where the
 * file system takes it, else POSIX_FADV_DONTNEED checked with mincore; on
 * tmpfs and ramfs nothing can keep the cache out, and the figure is said to
 * be memory bandwidth. Moved here from `probe`, which reads a path with it;
 * `check` reads a dataset's largest files.
 *
 * Must never: write to a file, or leave in the page cache what was not
 * there before it read (DONTNEED again after a buffered read).
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <time.h>
#include <unistd.h>

#include "machine/mc_seqread.h"

#define READ_CHUNK (8u << 20) /* large sequential reads; a multiple of any block size */
#define ALIGN 4096

/* tmpfs and ramfs keep files in the page cache itself: nothing can keep
 * the cache out there, O_DIRECT or not. */
#define TMPFS_MAGIC_ 0x01021994
#define RAMFS_MAGIC_ 0x858458f6

int mc_memory_fs(int fd)
{
    struct statfs sf;
    return fstatfs(fd, &sf) == 0 &&
           ((unsigned long)sf.f_type == TMPFS_MAGIC_ || (unsigned long)sf.f_type == RAMFS_MAGIC_);
}

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

int64_t mc_resident_bytes(int fd, uint64_t size)
{
    if (!size)
        return 0;
    const long pg = sysconf(_SC_PAGESIZE);
    void *m = mmap(NULL, size, PROT_READ, MAP_SHARED, fd, 0);
    if (m == MAP_FAILED)
        return -1;
    const size_t np = (size + (uint64_t)pg - 1) / (uint64_t)pg;
    unsigned char *vec = malloc(np);
    int64_t res = -1;
    if (vec && mincore(m, size, vec) == 0) {
        res = 0;
        for (size_t i = 0; i < np; i++)
            res += (vec[i] & 1) ? pg : 0;
        if ((uint64_t)res > size)
            res = (int64_t)size;
    }
    free(vec);
    munmap(m, size);
    return res;
}

int mc_seqread_init(mc_seqread *r, uint64_t max_bytes, double max_seconds, int no_direct)
{
    memset(r, 0, sizeof *r);
    r->max_bytes = max_bytes;
    r->max_seconds = max_seconds;
    r->no_direct = no_direct;
    return posix_memalign(&r->buf, ALIGN, READ_CHUNK) == 0 ? 0 : -1;
}

void mc_seqread_free(mc_seqread *r)
{
    free(r->buf);
    r->buf = NULL;
}

int mc_seqread_done(const mc_seqread *r)
{
    return r->bytes >= r->max_bytes || (r->max_seconds > 0 && r->seconds >= r->max_seconds);
}

/* Read fd to its end (or the budget). Returns bytes read, or -1 with errno
 * set (EINVAL from an O_DIRECT read: the caller falls back). */
static int64_t read_all(mc_seqread *r, int fd, double *secs)
{
    uint64_t got = 0;
    const double t0 = now();
    for (;;) {
        const uint64_t left = r->max_bytes - r->bytes - got;
        if (!left || (r->max_seconds > 0 && r->seconds + (now() - t0) >= r->max_seconds))
            break;
        size_t want = READ_CHUNK;
        if (left < want)
            want = (size_t)((left + ALIGN - 1) / ALIGN * ALIGN); /* O_DIRECT wants aligned sizes */
        ssize_t n = read(fd, r->buf, want);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        if (n == 0)
            break;
        got += (uint64_t)n;
        if (got > r->max_bytes - r->bytes)
            got = r->max_bytes - r->bytes;
    }
    *secs = now() - t0;
    return (int64_t)got;
}

/* A buffered read with the file's cached pages dropped first and checked
 * with mincore; -1 when it cannot be opened (r->err set unless skipped). */
static int64_t read_dropped(mc_seqread *r, const char *path, uint64_t size, double *secs,
                            unsigned *method, int *fdp)
{
    const int fd = open(path, O_RDONLY | O_CLOEXEC);
    *fdp = fd;
    if (fd < 0) {
        if (errno == EACCES || errno == ENOENT || errno == ELOOP) {
            r->skipped++;
            return -2;
        }
        r->err = errno;
        snprintf(r->errmsg, sizeof r->errmsg, "%s: %s", path, strerror(errno));
        return -2;
    }
    /* drop what the cache holds of the file, then check that it is gone */
    posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    const int64_t res = mc_resident_bytes(fd, size);
    if (res == 0) {
        *method = MC_RD_DROPPED;
    } else {
        *method = MC_RD_CACHED;
        if (res > 0)
            r->cached_bytes += (uint64_t)res;
    }
    r->checked_bytes += res >= 0 ? size : 0;
    posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
    const int64_t got = read_all(r, fd, secs);
    posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED); /* leave the cache as we found it */
    return got;
}

void mc_seqread_file(mc_seqread *r, const char *path, uint64_t size)
{
    if (mc_seqread_done(r) || r->err)
        return;
    double secs = 0;
    int64_t got = -1;
    unsigned method = 0;
    int fd = open(path, O_RDONLY | (r->no_direct ? 0 : O_DIRECT) | O_CLOEXEC);
    if (fd >= 0 && mc_memory_fs(fd)) {
        close(fd);
        fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd >= 0) {
            got = read_all(r, fd, &secs);
            method = MC_RD_MEMORY;
            r->cached_bytes += size;
            r->checked_bytes += size;
            if (got < 0) {
                close(fd);
                fd = -1;
            }
        }
    } else if (fd >= 0 && r->no_direct) {
        close(fd);
        fd = -1;
    } else if (fd >= 0) {
        got = read_all(r, fd, &secs);
        if (got < 0 && errno == EINVAL && lseek(fd, 0, SEEK_SET) == 0) {
            close(fd); /* open took O_DIRECT but reads refuse it */
            fd = -1;
        } else {
            method = MC_RD_DIRECT;
        }
    }
    if (fd < 0 && method != MC_RD_MEMORY) {
        got = read_dropped(r, path, size, &secs, &method, &fd);
        if (got == -2)
            return;
    }
    if (got < 0) {
        r->err = errno;
        snprintf(r->errmsg, sizeof r->errmsg, "%s: %s", path, strerror(errno));
        if (fd >= 0)
            close(fd);
        return;
    }
    close(fd);
    r->methods |= method;
    r->bytes += (uint64_t)got;
    r->seconds += secs;
    r->files++;
    if (size > r->largest)
        r->largest = size;
}

static mc_seqread *g_rd; /* nftw has no context argument */

static int walk_fn(const char *path, const struct stat *st, int type, struct FTW *f)
{
    (void)f;
    if (type == FTW_F && S_ISREG(st->st_mode) && st->st_size > 0)
        mc_seqread_file(g_rd, path, (uint64_t)st->st_size);
    return g_rd->err || mc_seqread_done(g_rd) ? 1 : 0;
}

void mc_seqread_path(mc_seqread *r, const char *path)
{
    struct stat st;
    if (stat(path, &st) != 0) {
        r->err = errno;
        snprintf(r->errmsg, sizeof r->errmsg, "%s: %s", path, strerror(errno));
        return;
    }
    if (S_ISREG(st.st_mode)) {
        mc_seqread_file(r, path, (uint64_t)st.st_size);
        return;
    }
    g_rd = r;
    nftw(path, walk_fn, 64, FTW_PHYS);
    g_rd = NULL;
}

const char *mc_seqread_method(unsigned m)
{
    if (m == MC_RD_DIRECT)
        return "o_direct";
    if (m == MC_RD_DROPPED)
        return "fadvise_dontneed";
    if (m == (MC_RD_DIRECT | MC_RD_DROPPED))
        return "o_direct+fadvise_dontneed";
    if (m & MC_RD_MEMORY)
        return "memory_fs";
    if (m & MC_RD_CACHED)
        return "cached";
    return "none";
}

void mc_seqread_note(const mc_seqread *r, char *note, size_t cap)
{
    note[0] = 0;
    if (r->methods & MC_RD_MEMORY)
        snprintf(note, cap,
                 "the file system keeps its files in memory (tmpfs/ramfs): the figure is memory "
                 "bandwidth, not storage");
    else if (r->methods & MC_RD_CACHED)
        snprintf(note, cap,
                 "the page cache could not be kept out (no O_DIRECT here, and %.0f%% of the "
                 "bytes stayed cached after POSIX_FADV_DONTNEED): the figure may include cached data",
                 r->checked_bytes ? 100.0 * (double)r->cached_bytes / (double)r->checked_bytes : 100.0);
    else if (r->methods == MC_RD_DIRECT)
        snprintf(note, cap, "read with O_DIRECT: the page cache was bypassed");
    else if (r->methods & MC_RD_DROPPED)
        snprintf(note, cap,
                 "%sPOSIX_FADV_DONTNEED before reading, checked with mincore: nothing was cached",
                 r->methods & MC_RD_DIRECT ? "O_DIRECT where the file system allows it, else " : "");
    if (r->bytes >= r->max_bytes) {
        size_t l = strlen(note);
        snprintf(note + l, cap - l, "; stopped after --max-bytes %llu",
                 (unsigned long long)r->max_bytes);
    }
    if (r->skipped) {
        size_t l = strlen(note);
        snprintf(note + l, cap - l, "; %llu unreadable file%s skipped",
                 (unsigned long long)r->skipped, r->skipped == 1 ? "" : "s");
    }
}
