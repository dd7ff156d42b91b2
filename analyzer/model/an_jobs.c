/* an_jobs.c — whether the ranked processes of a run are one job (an_jobs.h):
 * grouped by world size, then by running at the same time on the
 * realtime clock (each process's span through its header's clock pair),
 * in one sort and one sweep; a process whose world size is unknown joins
 * the group of its nearest traced ancestor that has one.
 *
 * Must never: read trace files, print, or take time quadratic in the
 * processes (a job of thousands of ranks and their workers).
 */
#include "model/an_jobs.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "model/an_result.h"

/* The world size the process knows: its header's, else the Python side's
 * distributed_world_size; -1. */
static int32_t world_of(const an_proc *p)
{
    if (p->world_size >= 1)
        return p->world_size;
    const char *v = an_cfg_value(p, "distributed_world_size");
    const long w = v ? strtol(v, NULL, 10) : -1;
    return w >= 1 && w <= INT32_MAX ? (int32_t)w : -1;
}

void an_proc_realtime_span(const an_proc *p, int64_t *a, int64_t *b)
{
    if (!p->real_ns) {
        *a = 0;
        *b = INT64_MAX;
        return;
    }
    const int64_t off = (int64_t)p->real_ns - (int64_t)p->mono_ns;
    const uint64_t first = p->first_ts ? p->first_ts : p->mono_ns;
    const uint64_t last = p->last_ts > first ? p->last_ts : first;
    *a = (int64_t)first + off;
    *b = (int64_t)last + off;
}

typedef struct item {
    int32_t ws;
    int64_t a, b;
    size_t i;
} item;

static int cmp_item(const void *x, const void *y)
{
    const item *p = x, *q = y;
    if (p->ws != q->ws)
        return p->ws < q->ws ? -1 : 1;
    if (p->a != q->a)
        return p->a < q->a ? -1 : 1;
    return (p->i > q->i) - (p->i < q->i);
}

/* The group of process i's nearest ancestor on its host that has one; -1. */
static int32_t group_up(const an_run *run, const int32_t *group, size_t i)
{
    const an_proc *p = &run->procs[i];
    for (int depth = 0; depth < 64; depth++) {
        size_t j = run->nprocs;
        for (size_t k = 0; k < run->nprocs && j == run->nprocs; k++)
            if (run->procs[k].pid == p->ppid && run->procs[k].pid != p->pid &&
                strcmp(run->procs[k].host, p->host) == 0)
                j = k;
        if (j == run->nprocs)
            return -1;
        if (group[j] >= 0)
            return group[j];
        p = &run->procs[j];
    }
    return -1;
}

typedef struct first {
    int64_t t;
    int32_t g;
} first;

static int cmp_first(const void *x, const void *y)
{
    const first *p = x, *q = y;
    if (p->t != q->t)
        return p->t < q->t ? -1 : 1;
    return (p->g > q->g) - (p->g < q->g);
}

/* Renumber the groups by their earliest start. */
static int order_groups(const an_run *run, int32_t *group, size_t ng)
{
    first *f = malloc((ng ? ng : 1) * sizeof *f);
    int32_t *to = malloc((ng ? ng : 1) * sizeof *to);
    if (!f || !to) {
        free(f);
        free(to);
        return -1;
    }
    for (size_t g = 0; g < ng; g++)
        f[g] = (first){INT64_MAX, (int32_t)g};
    for (size_t i = 0; i < run->nprocs; i++) {
        int64_t a, b;
        an_proc_realtime_span(&run->procs[i], &a, &b);
        if (group[i] >= 0 && a < f[group[i]].t)
            f[group[i]].t = a;
    }
    qsort(f, ng, sizeof *f, cmp_first);
    for (size_t g = 0; g < ng; g++)
        to[f[g].g] = (int32_t)g;
    for (size_t i = 0; i < run->nprocs; i++)
        if (group[i] >= 0)
            group[i] = to[group[i]];
    free(f);
    free(to);
    return 0;
}

/* A cluster of processes of one world size running at the same time: its
 * ranks (sorted, unique) and the group it joins. */
typedef struct cluster {
    int32_t ws;
    int32_t *ranks;
    size_t nranks;
    int32_t group;
} cluster;

static int cmp_i32(const void *a, const void *b)
{
    const int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

/* 1 when the sorted rank sets share no rank. */
static int disjoint(const cluster *x, const cluster *y)
{
    size_t i = 0, j = 0;
    while (i < x->nranks && j < y->nranks) {
        if (x->ranks[i] == y->ranks[j])
            return 0;
        if (x->ranks[i] < y->ranks[j])
            i++;
        else
            j++;
    }
    return 1;
}

/* Clusters into groups: a cluster joins the first earlier one of its world
 * size whose ranks it does not repeat (RATIONALE: ranks of one job whose
 * realtime clocks disagree by hours seem not to run together, but each
 * rank is there once; two runs of one job repeat its ranks). Returns the
 * number of groups. */
static size_t join_clusters(cluster *c, size_t nc)
{
    size_t ng = 0;
    for (size_t k = 0; k < nc; k++) {
        c[k].group = -1;
        for (size_t j = 0; j < k && c[k].group < 0; j++) {
            if (c[j].ws != c[k].ws || c[j].group != (int32_t)j)
                continue;
            int ok = 1; /* against every cluster already in j's group */
            for (size_t i = j; i < k && ok; i++)
                ok = c[i].group != (int32_t)j || disjoint(&c[i], &c[k]);
            if (ok)
                c[k].group = (int32_t)j;
        }
        if (c[k].group < 0) {
            c[k].group = (int32_t)k;
            ng++;
        }
    }
    return ng;
}

/* The clusters of v (n items sorted by world size, then start), each
 * item's cluster in cl[]. Returns how many, or (size_t)-1 out of memory. */
static size_t make_clusters(const an_run *run, int32_t (*rank_of)(const an_run *, const an_proc *),
                            const item *v, size_t n, size_t *cl, cluster *c)
{
    size_t nc = 0;
    int64_t end = 0;
    for (size_t k = 0; k < n; k++) {
        if (!k || v[k].ws != v[k - 1].ws ||
            (end < INT64_MAX - AN_JOB_GAP_NS && v[k].a > end + AN_JOB_GAP_NS)) {
            c[nc++] = (cluster){v[k].ws, NULL, 0, -1};
            end = v[k].b;
        }
        if (v[k].b > end)
            end = v[k].b;
        cl[k] = nc - 1;
    }
    for (size_t k = 0; k < n; k++) {
        cluster *x = &c[cl[k]];
        int32_t *r = realloc(x->ranks, (x->nranks + 1) * sizeof *r);
        if (!r)
            return (size_t)-1;
        x->ranks = r;
        x->ranks[x->nranks++] = rank_of(run, &run->procs[v[k].i]);
    }
    for (size_t j = 0; j < nc; j++) {
        qsort(c[j].ranks, c[j].nranks, sizeof *c[j].ranks, cmp_i32);
        size_t u = 0;
        for (size_t i = 0; i < c[j].nranks; i++)
            if (!u || c[j].ranks[u - 1] != c[j].ranks[i])
                c[j].ranks[u++] = c[j].ranks[i];
        c[j].nranks = u;
    }
    return nc;
}

size_t an_job_groups(const an_run *run, int32_t (*rank_of)(const an_run *, const an_proc *),
                     int32_t *group)
{
    const size_t np = run->nprocs ? run->nprocs : 1;
    item *v = malloc(np * sizeof *v);
    size_t *cl = malloc(np * sizeof *cl);
    cluster *c = calloc(np, sizeof *c);
    int32_t *id = malloc(np * sizeof *id); /* a group's first cluster -> its group number */
    size_t n = 0, nc = 0, ng = (size_t)-1;
    if (!v || !cl || !c || !id)
        goto done;
    for (size_t i = 0; i < run->nprocs; i++) {
        const an_proc *p = &run->procs[i];
        group[i] = -1;
        if (rank_of(run, p) < 0 || world_of(p) < 0)
            continue;
        v[n] = (item){world_of(p), 0, 0, i};
        an_proc_realtime_span(p, &v[n].a, &v[n].b);
        n++;
    }
    qsort(v, n, sizeof *v, cmp_item);
    if ((nc = make_clusters(run, rank_of, v, n, cl, c)) == (size_t)-1)
        goto done;
    ng = join_clusters(c, nc);
    /* group numbers 0.. in cluster order (order_groups renumbers them by start) */
    for (size_t k = 0; k < n; k++)
        group[v[k].i] = (int32_t)c[cl[k]].group;
    size_t g = 0;
    for (size_t j = 0; j < nc; j++)
        id[j] = c[j].group == (int32_t)j ? (int32_t)g++ : id[c[j].group];
    for (size_t i = 0; i < run->nprocs; i++)
        if (group[i] >= 0)
            group[i] = id[group[i]];
    /* the ranked processes of no known world size: their ancestors' group,
     * else the one group there is */
    for (size_t i = 0; i < run->nprocs; i++)
        if (group[i] < 0 && rank_of(run, &run->procs[i]) >= 0) {
            const int32_t up = group_up(run, group, i);
            group[i] = up >= 0 ? up : ng <= 1 ? 0 : -1;
        }
    if (!ng)
        for (size_t i = 0; i < run->nprocs && !ng; i++)
            ng = group[i] >= 0;
    else if (order_groups(run, group, ng) < 0)
        ng = (size_t)-1;
done:
    for (size_t j = 0; c && j < nc; j++)
        free(c[j].ranks);
    free(c);
    free(cl);
    free(v);
    free(id);
    return ng;
}

char *an_rank_list(const int32_t *ranks, size_t n, char *buf, size_t len)
{
    int32_t *v = malloc((n ? n : 1) * sizeof *v);
    buf[0] = '\0';
    if (!v)
        return buf;
    memcpy(v, ranks, n * sizeof *v);
    qsort(v, n, sizeof *v, cmp_i32);
    size_t at = 0;
    for (size_t i = 0; i < n && at < len;) {
        size_t j = i;
        while (j + 1 < n && (v[j + 1] == v[j] || v[j + 1] == v[j] + 1))
            j++;
        if (v[j] == v[i])
            at += (size_t)snprintf(buf + at, len - at, "%s%d", at ? ", " : "", v[i]);
        else
            at += (size_t)snprintf(buf + at, len - at, "%s%d-%d", at ? ", " : "", v[i], v[j]);
        i = j + 1;
    }
    free(v);
    return buf;
}

/* One group's line. */
static size_t describe_one(const an_run *run, const int32_t *group, int32_t g,
                           int32_t (*rank_of)(const an_run *, const an_proc *), int32_t *rk,
                           char *buf, size_t n)
{
    size_t nr = 0, np = 0, nfiles = 0;
    int32_t ws = -1;
    int64_t start = INT64_MAX;
    char files[200] = "";
    size_t fl = 0;
    for (size_t i = 0; i < run->nprocs; i++) {
        const an_proc *p = &run->procs[i];
        if (group[i] != g)
            continue;
        np++;
        rk[nr++] = rank_of(run, p);
        if (world_of(p) > ws)
            ws = world_of(p);
        int64_t a, b;
        an_proc_realtime_span(p, &a, &b);
        start = a < start ? a : start;
        if (nfiles++ < 3 && fl < sizeof files)
            fl += (size_t)snprintf(files + fl, sizeof files - fl, "%s%s", fl ? ", " : "", p->file);
    }
    char ranks[160], when[40] = "at an unknown time";
    an_rank_list(rk, nr, ranks, sizeof ranks);
    if (start > 0 && start < INT64_MAX) {
        const time_t s = (time_t)(start / 1000000000ll);
        struct tm tm;
        if (gmtime_r(&s, &tm))
            strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S UTC", &tm);
    }
    char wss[16] = "unknown";
    if (ws > 0)
        snprintf(wss, sizeof wss, "%d", ws);
    return (size_t)snprintf(buf, n, "job %d: world size %s, ranks %s, %zu process%s, started %s "
                                    "(%s%s)\n",
                            g + 1, wss, ranks, np, np == 1 ? "" : "es", when, files,
                            nfiles > 3 ? ", ..." : "");
}

void an_job_groups_describe(const an_run *run, const int32_t *group, size_t ngroups,
                            int32_t (*rank_of)(const an_run *, const an_proc *), char *buf,
                            size_t n)
{
    int32_t *rk = malloc((run->nprocs ? run->nprocs : 1) * sizeof *rk);
    size_t at = 0;
    buf[0] = '\0';
    for (size_t g = 0; rk && g < ngroups && at < n; g++)
        at += describe_one(run, group, (int32_t)g, rank_of, rk, buf + at, n - at);
    free(rk);
}
