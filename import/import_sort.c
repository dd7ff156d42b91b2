/* import_sort.c — external sort of the import's records by time.
 *
 * A Kineto document lists CPU events first and GPU events after them, so a
 * step's kernels arrive long after its ranges; the analyzer's timeline
 * wants every source roughly in start order. Records are sorted here in
 * runs of a fixed size; runs that do not fit in memory go, sorted, to one
 * unlinked temporary file, and are merged back (64 at a time, so memory
 * stays bounded however many runs there are).
 *
 * Must never: hold more than one run in memory plus a small buffer per
 * merged run, or lose a record silently (an I/O error fails the import).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "import.h"

/* RATIONALE: 64 runs of 1024 buffered records (80 KiB each) cost 5 MiB to
 * merge; more runs are first merged into one longer run. */
#define MERGE_WAY 64
#define RBUF 1024

typedef struct key {
    int64_t ts;
    uint64_t tb; /* order << 56 | seq */
    uint32_t idx;
} key;

typedef struct run {
    uint64_t off; /* byte offset in the temporary file */
    uint64_t n;   /* records */
} run;

struct ik_sorter {
    char err[256];
    int fd; /* temporary file, -1 until the first spill */
    char *tmpdir;
    uint64_t fend; /* bytes written to the file */
    ik_rec *buf;
    key *keys;
    size_t n, cap;
    run *runs;
    size_t nruns, capruns;
    uint64_t seq, spills;
};

ik_sorter *ik_sorter_new(const char *tmpdir, size_t run_bytes)
{
    ik_sorter *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->fd = -1;
    s->cap = run_bytes / sizeof(ik_rec);
    if (s->cap < 1024)
        s->cap = 1024;
    s->tmpdir = strdup(tmpdir ? tmpdir : ".");
    s->buf = malloc(s->cap * sizeof *s->buf);
    if (!s->tmpdir || !s->buf) {
        ik_sorter_free(s);
        return NULL;
    }
    return s;
}

void ik_sorter_free(ik_sorter *s)
{
    if (!s)
        return;
    if (s->fd >= 0)
        close(s->fd);
    free(s->tmpdir);
    free(s->buf);
    free(s->keys);
    free(s->runs);
    free(s);
}

const char *ik_sorter_error(const ik_sorter *s)
{
    return s->err;
}

uint64_t ik_sorter_count(const ik_sorter *s)
{
    return s->seq;
}

uint64_t ik_sorter_spills(const ik_sorter *s)
{
    return s->spills;
}

static inline int rec_less(const ik_rec *a, const ik_rec *b)
{
    if (a->ts != b->ts)
        return a->ts < b->ts;
    if (a->order != b->order)
        return a->order < b->order;
    return a->seq < b->seq;
}

static int cmp_key(const void *pa, const void *pb)
{
    const key *a = pa, *b = pb;
    if (a->ts != b->ts)
        return a->ts < b->ts ? -1 : 1;
    return a->tb < b->tb ? -1 : a->tb > b->tb;
}

/* Sort the in-memory records: s->keys[0..n) in order. */
static int sort_buf(ik_sorter *s)
{
    if (!s->keys) {
        s->keys = malloc(s->cap * sizeof *s->keys);
        if (!s->keys) {
            snprintf(s->err, sizeof s->err, "out of memory sorting records");
            return -1;
        }
    }
    for (size_t i = 0; i < s->n; i++) {
        s->keys[i].ts = s->buf[i].ts;
        s->keys[i].tb = (uint64_t)s->buf[i].order << 56 | (s->buf[i].seq & ((1ull << 56) - 1));
        s->keys[i].idx = (uint32_t)i;
    }
    qsort(s->keys, s->n, sizeof *s->keys, cmp_key);
    return 0;
}

static int write_all(ik_sorter *s, const void *p, size_t n, uint64_t off)
{
    const char *c = p;
    while (n) {
        ssize_t w = pwrite(s->fd, c, n, (off_t)off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            snprintf(s->err, sizeof s->err, "cannot write the temporary sort file in %s: %s",
                     s->tmpdir, w < 0 ? strerror(errno) : "no space");
            return -1;
        }
        c += w;
        n -= (size_t)w;
        off += (uint64_t)w;
    }
    return 0;
}

static int open_tmp(ik_sorter *s)
{
    if (s->fd >= 0)
        return 0;
    size_t l = strlen(s->tmpdir) + 40;
    char *path = malloc(l);
    if (!path)
        return -1;
    snprintf(path, l, "%s/.gpustarve-import-XXXXXX", s->tmpdir);
    s->fd = mkstemp(path);
    if (s->fd < 0) {
        snprintf(s->err, sizeof s->err, "cannot create a temporary sort file in %s: %s", s->tmpdir,
                 strerror(errno));
        free(path);
        return -1;
    }
    unlink(path);
    free(path);
    return 0;
}

static int add_run(ik_sorter *s, uint64_t off, uint64_t n)
{
    if (s->nruns == s->capruns) {
        size_t nc = s->capruns ? s->capruns * 2 : 16;
        run *nr = realloc(s->runs, nc * sizeof *nr);
        if (!nr) {
            snprintf(s->err, sizeof s->err, "out of memory");
            return -1;
        }
        s->runs = nr;
        s->capruns = nc;
    }
    s->runs[s->nruns++] = (run){off, n};
    return 0;
}

/* Write the in-memory records as one sorted run. */
static int spill(ik_sorter *s)
{
    if (!s->n)
        return 0;
    if (open_tmp(s) < 0 || sort_buf(s) < 0)
        return -1;
    const uint64_t off = s->fend;
    /* in sorted order, through a small staging buffer */
    ik_rec stage[256];
    size_t k = 0;
    for (size_t i = 0; i < s->n; i++) {
        stage[k++] = s->buf[s->keys[i].idx];
        if (k == 256 || i + 1 == s->n) {
            if (write_all(s, stage, k * sizeof *stage, s->fend) < 0)
                return -1;
            s->fend += k * sizeof *stage;
            k = 0;
        }
    }
    if (add_run(s, off, s->n) < 0)
        return -1;
    s->spills++;
    s->n = 0;
    return 0;
}

int ik_sorter_add(ik_sorter *s, const ik_rec *r)
{
    if (s->n == s->cap && spill(s) < 0)
        return -1;
    ik_rec *d = &s->buf[s->n++];
    *d = *r;
    d->seq = s->seq++;
    return 0;
}

/* ---- merge --------------------------------------------------------------------------- */

typedef struct cursor {
    uint64_t off, left; /* next record's offset, records left in the file */
    ik_rec *b;
    size_t i, n; /* position and fill of b */
} cursor;

static int cur_fill(ik_sorter *s, cursor *c)
{
    size_t want = c->left < RBUF ? (size_t)c->left : RBUF;
    size_t got = 0;
    char *p = (char *)c->b;
    while (got < want * sizeof(ik_rec)) {
        ssize_t r = pread(s->fd, p + got, want * sizeof(ik_rec) - got, (off_t)(c->off + got));
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) {
            snprintf(s->err, sizeof s->err, "cannot read the temporary sort file: %s",
                     r < 0 ? strerror(errno) : "short read");
            return -1;
        }
        got += (size_t)r;
    }
    c->off += got;
    c->left -= want;
    c->i = 0;
    c->n = want;
    return 0;
}

/* Merge runs[first, first + k) into fn (or, with fn NULL, into a new run at
 * the end of the file). */
static int merge(ik_sorter *s, size_t first, size_t k, int (*fn)(void *, const ik_rec *),
                 void *ctx)
{
    cursor *cs = calloc(k, sizeof *cs);
    size_t *heap = calloc(k, sizeof *heap);
    ik_rec *out = fn ? NULL : malloc(RBUF * sizeof *out);
    int rc = -1;
    if (!cs || !heap || (!fn && !out)) {
        snprintf(s->err, sizeof s->err, "out of memory merging sorted runs");
        goto done;
    }
    size_t nh = 0;
    for (size_t i = 0; i < k; i++) {
        cs[i].off = s->runs[first + i].off;
        cs[i].left = s->runs[first + i].n;
        cs[i].b = malloc(RBUF * sizeof(ik_rec));
        if (!cs[i].b) {
            snprintf(s->err, sizeof s->err, "out of memory merging sorted runs");
            goto done;
        }
        if (cs[i].left) {
            if (cur_fill(s, &cs[i]) < 0)
                goto done;
            /* sift up */
            size_t j = nh++;
            heap[j] = i;
            while (j && rec_less(&cs[heap[j]].b[cs[heap[j]].i], &cs[heap[(j - 1) / 2]].b[cs[heap[(j - 1) / 2]].i])) {
                size_t t = heap[j];
                heap[j] = heap[(j - 1) / 2];
                heap[(j - 1) / 2] = t;
                j = (j - 1) / 2;
            }
        }
    }
    const uint64_t out_off = s->fend;
    uint64_t out_n = 0;
    size_t on = 0;
    while (nh) {
        cursor *c = &cs[heap[0]];
        const ik_rec *r = &c->b[c->i];
        if (fn) {
            if (fn(ctx, r) != 0)
                goto done;
        } else {
            out[on++] = *r;
            out_n++;
            if (on == RBUF) {
                if (write_all(s, out, on * sizeof *out, s->fend) < 0)
                    goto done;
                s->fend += on * sizeof *out;
                on = 0;
            }
        }
        if (++c->i == c->n) {
            if (c->left) {
                if (cur_fill(s, c) < 0)
                    goto done;
            } else {
                heap[0] = heap[--nh];
                if (!nh)
                    break;
            }
        }
        /* sift down */
        size_t j = 0;
        for (;;) {
            size_t l = 2 * j + 1, m = j;
            if (l < nh && rec_less(&cs[heap[l]].b[cs[heap[l]].i], &cs[heap[m]].b[cs[heap[m]].i]))
                m = l;
            if (l + 1 < nh &&
                rec_less(&cs[heap[l + 1]].b[cs[heap[l + 1]].i], &cs[heap[m]].b[cs[heap[m]].i]))
                m = l + 1;
            if (m == j)
                break;
            size_t t = heap[j];
            heap[j] = heap[m];
            heap[m] = t;
            j = m;
        }
    }
    if (!fn) {
        if (on && write_all(s, out, on * sizeof *out, s->fend) < 0)
            goto done;
        s->fend += on * sizeof *out;
        if (add_run(s, out_off, out_n) < 0)
            goto done;
    }
    rc = 0;
done:
    if (cs)
        for (size_t i = 0; i < k; i++)
            free(cs[i].b);
    free(cs);
    free(heap);
    free(out);
    return rc;
}

int ik_sorter_drain(ik_sorter *s, int (*fn)(void *ctx, const ik_rec *r), void *ctx)
{
    if (!s->nruns) { /* everything fitted in memory */
        if (sort_buf(s) < 0)
            return -1;
        for (size_t i = 0; i < s->n; i++)
            if (fn(ctx, &s->buf[s->keys[i].idx]) != 0)
                return -1;
        return 0;
    }
    if (spill(s) < 0)
        return -1;
    /* RATIONALE: the run buffers are not needed while merging */
    free(s->buf);
    free(s->keys);
    s->buf = NULL;
    s->keys = NULL;
    s->cap = 0;
    size_t first = 0;
    while (s->nruns - first > MERGE_WAY) {
        if (merge(s, first, MERGE_WAY, NULL, NULL) < 0)
            return -1;
        first += MERGE_WAY;
    }
    return merge(s, first, s->nruns - first, fn, ctx);
}
