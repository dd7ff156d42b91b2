/* mc_files.c — one dataset path's storage lines (mc_files.h): a walk of the
 * path bounded in entries and time that keeps a uniform sample of its
 * small files (reservoir sampling, fixed seed: the same tree gives the same
 * sample) and its largest files; the largest read sequentially with the
 * page cache kept out (mc_seqread.c); the small ones, each dropped from the
 * page cache first (POSIX_FADV_DONTNEED, checked with mincore), read whole
 * in a shuffled order by o->file_threads threads at once (open, read to the
 * end, close: what a map-style Dataset's __getitem__ does), each file's
 * latency kept for the percentiles.
 *
 * Must never: write to the dataset, or leave a file in the page cache that
 * it put there.
 */
#include <fcntl.h>
#include <ftw.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/an_grow.h"
#include "base/an_stats.h"
#include "machine/mc_files.h"
#include "machine/mc_seqread.h"

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

mc_verdict mc_rule_seq(double MBps, double expect_MBps)
{
    return MBps < expect_MBps ? MC_BELOW_SPEC : MC_TO_SPEC;
}

mc_verdict mc_rule_small(double mean_ms, double expect_ms)
{
    return mean_ms > expect_ms ? MC_BELOW_SPEC : MC_TO_SPEC;
}

/* ---- the walk ----------------------------------------------------------------- */

typedef struct walk {
    mc_sample *s;
    const mc_opts *o;
    uint64_t rng, entries, max_entries;
    double t0, budget;
    int oom;
} walk;

static walk *g_walk; /* nftw has no context argument */

static uint64_t rnd(uint64_t *x)
{
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    return *x;
}

static void keep_large(mc_sample *s, const char *path, uint64_t size)
{
    if (s->nlarge == MC_LARGEST && size <= s->large_size[MC_LARGEST - 1])
        return;
    char *p = strdup(path);
    if (!p)
        return;
    size_t i = s->nlarge < MC_LARGEST ? s->nlarge++ : MC_LARGEST - 1;
    if (i == MC_LARGEST - 1 && s->large[i])
        free(s->large[i]);
    for (; i > 0 && s->large_size[i - 1] < size; i--) {
        s->large[i] = s->large[i - 1];
        s->large_size[i] = s->large_size[i - 1];
    }
    s->large[i] = p;
    s->large_size[i] = size;
}

static void keep_small(walk *w, const char *path, uint64_t size)
{
    mc_sample *s = w->s;
    const size_t max = (size_t)w->o->files_max;
    s->small_files++;
    size_t slot;
    if (s->nsmall < max) {
        if (an_grow((void **)&s->small, &s->cap, s->nsmall + 1, sizeof *s->small, 256) < 0 ||
            !(s->small_size = realloc(s->small_size, s->cap * sizeof *s->small_size))) {
            w->oom = 1;
            return;
        }
        slot = s->nsmall++;
        s->small[slot] = NULL;
    } else {
        slot = (size_t)(rnd(&w->rng) % s->small_files); /* reservoir: keep with p = max / seen */
        if (slot >= max)
            return;
        free(s->small[slot]);
    }
    s->small[slot] = strdup(path);
    s->small_size[slot] = size;
    if (!s->small[slot])
        w->oom = 1;
}

static int walk_fn(const char *path, const struct stat *st, int type, struct FTW *f)
{
    (void)f;
    walk *w = g_walk;
    w->entries++;
    if (type == FTW_F && S_ISREG(st->st_mode) && st->st_size > 0) {
        w->s->files++;
        keep_large(w->s, path, (uint64_t)st->st_size);
        if ((uint64_t)st->st_size <= w->o->small_file_bytes)
            keep_small(w, path, (uint64_t)st->st_size);
    }
    if (w->oom)
        return 1;
    if (w->entries >= w->max_entries || ((w->entries & 255) == 0 && now() - w->t0 > w->budget)) {
        w->s->cut = 1;
        return 1;
    }
    return 0;
}

int mc_sample_files(const char *path, const mc_opts *o, mc_sample *s)
{
    memset(s, 0, sizeof *s);
    /* RATIONALE: a dataset of millions of files takes minutes to walk; the
     * sample of a bounded walk is what fits the check's time budget */
    walk w = {s, o, 0x9E3779B97F4A7C15ull, 0, o->quick ? 100000 : 500000, now(),
              o->quick ? 1.5 : 5.0, 0};
    g_walk = &w;
    nftw(path, walk_fn, 64, FTW_PHYS);
    g_walk = NULL;
    s->walk_s = now() - w.t0;
    /* shuffle: the order a sampler with shuffle=True reads them in */
    for (size_t i = s->nsmall; i > 1; i--) {
        const size_t j = (size_t)(rnd(&w.rng) % i);
        char *p = s->small[i - 1];
        const uint64_t z = s->small_size[i - 1];
        s->small[i - 1] = s->small[j];
        s->small_size[i - 1] = s->small_size[j];
        s->small[j] = p;
        s->small_size[j] = z;
    }
    return w.oom ? -1 : 0;
}

void mc_sample_free(mc_sample *s)
{
    for (size_t i = 0; i < s->nsmall; i++)
        free(s->small[i]);
    for (size_t i = 0; i < s->nlarge; i++)
        free(s->large[i]);
    free(s->small);
    free(s->small_size);
    memset(s, 0, sizeof *s);
}

/* ---- small files, several readers ------------------------------------------------ */

typedef struct readers {
    const mc_sample *s;
    atomic_size_t next;
    double *lat_ms;
    atomic_uint_fast64_t bytes;
    atomic_size_t failed;
    double deadline;
} readers;

static void *reader(void *arg)
{
    readers *r = arg;
    char *buf = malloc(256 << 10);
    if (!buf)
        return NULL;
    for (;;) {
        const size_t i = atomic_fetch_add(&r->next, 1);
        if (i >= r->s->nsmall || now() > r->deadline)
            break;
        const double t0 = now();
        const int fd = open(r->s->small[i], O_RDONLY | O_CLOEXEC);
        ssize_t n = 0;
        uint64_t got = 0;
        if (fd >= 0) {
            while ((n = read(fd, buf, 256 << 10)) > 0)
                got += (uint64_t)n;
            close(fd);
        }
        r->lat_ms[i] = (now() - t0) * 1e3;
        if (fd < 0 || n < 0) {
            atomic_fetch_add(&r->failed, 1);
            r->lat_ms[i] = -1;
        }
        atomic_fetch_add(&r->bytes, got);
    }
    free(buf);
    return NULL;
}

/* Drop the sample from the page cache (and count what stayed), or, after,
 * what the reads put there. */
static void drop_cache(const mc_sample *s, mc_smallread *out, int count)
{
    uint64_t cached = 0, total = 0;
    for (size_t i = 0; i < s->nsmall; i++) {
        const int fd = open(s->small[i], O_RDONLY | O_CLOEXEC);
        if (fd < 0)
            continue;
        if (count && mc_memory_fs(fd))
            out->memory_fs = 1;
        posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
        if (count) {
            const int64_t res = mc_resident_bytes(fd, s->small_size[i]);
            cached += res > 0 ? (uint64_t)res : 0;
            total += s->small_size[i];
        }
        close(fd);
    }
    if (count)
        out->cached_share = total ? (double)cached / (double)total : 0;
}

void mc_read_small(const mc_sample *s, const mc_opts *o, mc_smallread *out)
{
    memset(out, 0, sizeof *out);
    if (!s->nsmall)
        return;
    readers r = {.s = s, .lat_ms = calloc(s->nsmall, sizeof(double))};
    if (!r.lat_ms)
        return;
    drop_cache(s, out, 1);
    const int nt = o->file_threads < 1 ? 1 : o->file_threads > 64 ? 64 : o->file_threads;
    pthread_t th[64];
    int started = 0;
    const double t0 = now();
    r.deadline = t0 + o->files_budget_s;
    for (int i = 0; i < nt; i++)
        started += pthread_create(&th[started], NULL, reader, &r) == 0;
    for (int i = 0; i < started; i++)
        pthread_join(th[i], NULL);
    out->wall_s = now() - t0;
    drop_cache(s, out, 0); /* leave the cache as it was found */
    size_t n = 0;
    double sum = 0;
    const size_t done = atomic_load(&r.next) < s->nsmall ? atomic_load(&r.next) : s->nsmall;
    for (size_t i = 0; i < done; i++)
        if (r.lat_ms[i] > 0) {
            sum += r.lat_ms[i];
            r.lat_ms[n++] = r.lat_ms[i];
        }
    out->files = n;
    out->failed = atomic_load(&r.failed);
    out->bytes = atomic_load(&r.bytes);
    out->mean_ms = n ? sum / (double)n : 0;
    out->p50_ms = an_percentile(r.lat_ms, n, 0.5);
    out->p90_ms = an_percentile(r.lat_ms, n, 0.9);
    out->p99_ms = an_percentile(r.lat_ms, n, 0.99);
    free(r.lat_ms);
}
