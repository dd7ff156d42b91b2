/* an_replica.c — copies among the workers' positioned reads (an_replica.h).
 *
 * Every worker process's kept reads (an_proc.preads: a key of path, offset
 * and bytes returned) go into one array sorted by key and time. A group of
 * reads of one key, each within the window of the group's first, is one
 * read of those bytes by as many workers as the group has distinct ones;
 * read_copies is that count averaged over the groups, weighted by bytes.
 * Then, from the same reads by start and end, the storage's speed by reads
 * in flight: each read's mean count in flight over its duration (itself
 * included), rounded, is its k; a read among k is served at 1/k of the
 * storage's speed with k in flight, so read_speed[k] is k times the bytes
 * over the durations of the reads of that k.
 *
 * Must never: read trace files, print, or divide by zero.
 */
#include "model/an_replica.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct rd {
    uint64_t key, ts, bytes;
    uint32_t worker;
} rd;

static int by_key_ts(const void *a, const void *b)
{
    const rd *x = a, *y = b;
    if (x->key != y->key)
        return x->key < y->key ? -1 : 1;
    return x->ts < y->ts ? -1 : x->ts > y->ts;
}

/* The window: AN_REPLICA_BATCHES of the workers' mean batch time, bounded. */
static uint64_t window_ns(const an_result *res)
{
    double ns = res->batch_ms * 1e6 * AN_REPLICA_BATCHES;
    if (!(ns >= (double)AN_REPLICA_MIN_NS))
        ns = (double)AN_REPLICA_MIN_NS;
    if (ns > (double)AN_REPLICA_MAX_NS)
        ns = (double)AN_REPLICA_MAX_NS;
    return (uint64_t)ns;
}

/* Distinct workers among v[0..n), counted up to DISTINCT_MAX (a group of
 * many reads stays linear). */
#define DISTINCT_MAX 64
static size_t distinct_workers(const rd *v, size_t n)
{
    uint32_t seen[DISTINCT_MAX];
    size_t d = 0;
    for (size_t i = 0; i < n && d < DISTINCT_MAX; i++) {
        size_t j = 0;
        while (j < d && seen[j] != v[i].worker)
            j++;
        if (j == d)
            seen[d++] = v[i].worker;
    }
    return d;
}

/* A read's start (up 1) or end (0), by time, ends first at one instant. */
typedef struct edge {
    uint64_t t;
    uint32_t read;
    uint32_t up;
} edge;

static int by_t(const void *a, const void *b)
{
    const edge *x = a, *y = b;
    if (x->t != y->t)
        return x->t < y->t ? -1 : 1;
    return (int)x->up - (int)y->up;
}

/* A worker process of the loader (not a thread of the trainer). */
static int proc_worker(const an_result *res, const an_worker *w)
{
    return !w->th && w->p != res->trainer;
}

/* res->read_speed and read_inflight from the first `each` kept reads of
 * every worker process (those an_replica compares). Returns 0, -1 out of
 * memory (nothing set). */
static int speed_by_inflight(an_result *res, size_t each)
{
    size_t n = 0;
    for (size_t i = 0; i < res->nworkers; i++)
        if (proc_worker(res, &res->workers[i]))
            n += res->workers[i].p->preads.n < each ? res->workers[i].p->preads.n : each;
    edge *e = malloc(2 * (n ? n : 1) * sizeof *e);
    const an_pread **rd = malloc((n ? n : 1) * sizeof *rd);
    double *k_int = malloc((n ? n : 1) * sizeof *k_int); /* each read's integral of k over it */
    if (!e || !rd || !k_int) {
        free(e);
        free(rd);
        free(k_int);
        return -1;
    }
    size_t m = 0, nr = 0;
    for (size_t i = 0; i < res->nworkers; i++) {
        if (!proc_worker(res, &res->workers[i]))
            continue;
        const an_preads *k = &res->workers[i].p->preads;
        for (size_t j = 0; j < k->n && j < each; j++) {
            const an_pread *r = &k->v[j];
            if (!r->dur || !r->bytes)
                continue;
            e[m++] = (edge){r->ts, (uint32_t)nr, 1};
            e[m++] = (edge){r->ts + r->dur, (uint32_t)nr, 0};
            rd[nr++] = r;
        }
    }
    qsort(e, m, sizeof *e, by_t);
    double integral = 0, busy = 0;
    long k = 0;
    for (size_t i = 0; i < m; i++) {
        if (i && k > 0) {
            const double dt = (double)(e[i].t - e[i - 1].t);
            integral += (double)k * dt;
            busy += dt;
        }
        /* a read's start comes before its end (its duration is not 0) */
        k_int[e[i].read] = e[i].up ? -integral : k_int[e[i].read] + integral;
        k += e[i].up ? 1 : -1;
    }
    double bytes[AN_READ_K + 1] = {0}, dur[AN_READ_K + 1] = {0}, all = 0;
    for (size_t r = 0; r < nr; r++) {
        const double d = (double)rd[r]->dur;
        long kk = lround(k_int[r] / d);
        kk = kk < 1 ? 1 : kk > AN_READ_K ? AN_READ_K : kk;
        bytes[kk] += rd[r]->bytes;
        dur[kk] += d;
        all += d;
    }
    free(e);
    free(rd);
    free(k_int);
    memset(res->read_speed, 0, sizeof res->read_speed);
    res->read_inflight = busy > 0 ? integral / busy : 0;
    for (int kk = 1; kk <= AN_READ_K; kk++)
        if (dur[kk] > 0 && dur[kk] >= AN_SPEED_MIN_SHARE * all)
            res->read_speed[kk] = kk * bytes[kk] / dur[kk];
    return 0;
}

int an_replica(an_result *res)
{
    res->read_copies = res->read_positioned = res->read_inflight = 0;
    memset(res->read_speed, 0, sizeof res->read_speed);
    size_t total = 0, procs = 0;
    for (size_t i = 0; i < res->nworkers; i++) {
        const an_worker *w = &res->workers[i];
        if (!proc_worker(res, w))
            continue;
        total += w->p->preads.n;
        procs++;
    }
    if (procs < 2 || !total)
        return 0;
    /* each worker's first reads, its share of AN_REPLICA_MAX_READS (so
     * that they add up to at most that) */
    const size_t each = total > AN_REPLICA_MAX_READS ? AN_REPLICA_MAX_READS / procs : SIZE_MAX;
    rd *v = malloc((total < AN_REPLICA_MAX_READS ? total : AN_REPLICA_MAX_READS) * sizeof *v);
    if (!v)
        return -1;
    size_t n = 0;
    uint64_t pos_bytes = 0, all_bytes = 0;
    for (size_t i = 0; i < res->nworkers; i++) {
        const an_worker *w = &res->workers[i];
        if (!proc_worker(res, w))
            continue;
        const an_preads *k = &w->p->preads;
        const size_t m = k->n < each ? k->n : each;
        for (size_t j = 0; j < m; j++) {
            v[n++] = (rd){k->v[j].key, k->v[j].ts, k->v[j].bytes, (uint32_t)i};
            pos_bytes += k->v[j].bytes;
        }
        /* the bytes of its reads in all, scaled to the positioned reads
         * compared of all it made (kept or past AN_PREADS_MAX) */
        const double made = (double)k->n + (double)k->past;
        all_bytes += made > 0 ? (uint64_t)((double)w->bytes * (double)m / made) : w->bytes;
    }
    if (!all_bytes) {
        free(v);
        return 0;
    }
    qsort(v, n, sizeof *v, by_key_ts);
    const uint64_t win = window_ns(res);
    double weighted = 0, groups_bytes = 0;
    for (size_t i = 0; i < n;) {
        size_t j = i + 1;
        while (j < n && v[j].key == v[i].key && v[j].ts - v[i].ts <= win)
            j++;
        const double b = (double)v[i].bytes;
        weighted += b * (double)distinct_workers(v + i, j - i);
        groups_bytes += b;
        i = j;
    }
    free(v);
    if (speed_by_inflight(res, each) != 0)
        return -1;
    res->read_copies = groups_bytes > 0 ? weighted / groups_bytes : 0;
    res->read_positioned = (double)pos_bytes / (double)all_bytes;
    if (res->read_positioned > 1)
        res->read_positioned = 1;
    return 0;
}
