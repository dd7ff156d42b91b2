/* an_load.c — reading a run: the directory's trace files (trace/'s
 * gs_run_files_list), each decoded batch by batch and handed to the pass
 * (an_events.c) and to a second pass's hooks, progress about every second,
 * and damaged or unreadable files listed in run->skipped with the reason
 * (the .peers file beside them: an_peers.c);
 * the files spread over threads (an_opts.threads), the run the same as one
 * thread makes.
 *
 * Must never: keep events, or stop at a damaged file (what was readable is
 * used, the rest is listed in run->skipped).
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "load/an_events.h"
#include "load/an_peers.h"
#include "base/an_grow.h"
#include "load/an_run.h"
#include "gs_trace.h"

/* ---- files ------------------------------------------------------------------------- */

static void skipped_add(an_run *run, const char *file, const char *reason, uint64_t unread,
                        int whole)
{
    an_skipped *n = realloc(run->skipped, (run->nskipped + 1) * sizeof *n);
    if (!n)
        return;
    run->skipped = n;
    an_skipped *s = &n[run->nskipped++];
    s->file = strdup(file);
    s->reason = strdup(reason);
    s->unread = unread;
    s->whole = whole;
}

static const char *base_name(const char *path)
{
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

static void damage_reason(char *buf, size_t n, int err, const gs_proc_info *pi)
{
    switch (err) {
    case GS_ERR_VERSION:
        snprintf(buf, n, "trace format version %u.%u is not supported (this gpustarve reads %d.x)",
                 pi ? pi->version_major : 0, pi ? pi->version_minor : 0, GS_VERSION_MAJOR);
        break;
    case GS_ERR_MAGIC:
        snprintf(buf, n, "not a gpustarve trace");
        break;
    case GS_ERR_TRUNCATED:
        snprintf(buf, n, "truncated");
        break;
    case GS_ERR_KIND:
        snprintf(buf, n, "record kind unknown to this gpustarve (newer trace format minor version)");
        break;
    default:
        snprintf(buf, n, "%s", gs_strerror(err));
        break;
    }
}

static int proc_new(an_run *run, const char *path, const gs_proc_info *pi, an_proc **out)
{
    if (an_grow(&run->procs, &run->capprocs, run->nprocs + 1, sizeof *run->procs, 16) < 0)
        return -1;
    an_proc *p = &run->procs[run->nprocs];
    memset(p, 0, sizeof *p);
    p->path = strdup(path);
    p->file = strdup(base_name(path));
    p->host = strdup(pi->host ? pi->host : "");
    p->argv = malloc((size_t)pi->argv_len + 1);
    if (!p->path || !p->file || !p->host || !p->argv) {
        free(p->path);
        free(p->file);
        free(p->host);
        free(p->argv);
        return -1;
    }
    memcpy(p->argv, pi->argv ? pi->argv : "", pi->argv_len);
    p->argv[pi->argv_len] = '\0';
    for (uint32_t i = 0; i + 1 < pi->argv_len; i++)
        if (p->argv[i] == '\0')
            p->argv[i] = ' ';
    p->pid = pi->pid;
    p->ppid = pi->ppid;
    p->exec_seq = pi->exec_seq;
    p->flags = pi->flags;
    p->mono_ns = pi->mono_ns;
    p->real_ns = pi->real_ns;
    p->rank = pi->rank;
    p->local_rank = pi->local_rank;
    p->world_size = pi->world_size;
    p->worker_id = p->loader_id = -1;
    run->nprocs++;
    *out = p;
    return 0;
}

/* Progress of the whole run, about every second, from whichever thread
 * reads: the bytes of every file as far as it is read. */
typedef struct prog {
    const an_opts *o;
    uint64_t total;
    _Atomic uint64_t done;
    pthread_mutex_t lock; /* held while o->progress runs; t_last */
    struct timespec t_last;
} prog;

static void prog_init(prog *g, const an_opts *o, uint64_t done, uint64_t total)
{
    g->o = o;
    g->total = total;
    atomic_init(&g->done, done);
    pthread_mutex_init(&g->lock, NULL);
    clock_gettime(CLOCK_MONOTONIC, &g->t_last);
}

/* add the bytes read since *seen (a file's offset) */
static void progress(prog *g, uint64_t offset, uint64_t *seen)
{
    if (offset > *seen) {
        atomic_fetch_add_explicit(&g->done, offset - *seen, memory_order_relaxed);
        *seen = offset;
    }
    if (!g->o->progress || pthread_mutex_trylock(&g->lock) != 0)
        return;
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    double since_last = (double)(t.tv_sec - g->t_last.tv_sec) + (t.tv_nsec - g->t_last.tv_nsec) / 1e9;
    if (since_last >= 1.0) {
        g->t_last = t;
        g->o->progress(g->o->progress_ctx, atomic_load_explicit(&g->done, memory_order_relaxed),
                       g->total);
    }
    pthread_mutex_unlock(&g->lock);
}

/* One file into run (procs, skipped and the totals), with hooks hk whose
 * context is hctx (NULL hk: none). */
static int load_file(an_run *run, const char *path, const an_opts *o, const an_hooks *hk,
                     void *hctx, prog *g)
{
    gs_reader *r = NULL;
    int err = gs_reader_open(&r, path);
    char why[256];
    if (err != GS_OK) {
        if (err == GS_ERR_IO)
            snprintf(why, sizeof why, "cannot read: %s", strerror(errno));
        else if (err == GS_ERR_VERSION) {
            /* the reader does not say which version: read it ourselves */
            gs_proc_info pi = {0};
            FILE *f = fopen(path, "rb");
            gs_file_header h;
            if (f && fread(&h, sizeof h, 1, f) == 1) {
                pi.version_major = h.version_major;
                pi.version_minor = h.version_minor;
            }
            if (f)
                fclose(f);
            damage_reason(why, sizeof why, err, &pi);
        } else
            damage_reason(why, sizeof why, err, NULL);
        struct stat st;
        const uint64_t size = stat(path, &st) == 0 ? (uint64_t)st.st_size : 0;
        skipped_add(run, path, why, size, 1);
        uint64_t seen = 0;
        progress(g, size, &seen);
        return 0;
    }
    const gs_proc_info *pi = gs_reader_info(r);
    an_proc *p;
    if (proc_new(run, path, pi, &p) < 0) {
        gs_reader_close(r);
        return -1;
    }
    an_pass *c = an_pass_new(p, o, r);
    if (!c) {
        gs_reader_close(r);
        return -1;
    }
    uint64_t seen = 0;
    if (hk && hk->on_piece &&
        (hk->piece_path ? strcmp(p->path, hk->piece_path) == 0
                        : p->pid == hk->piece_pid && p->exec_seq == hk->piece_exec_seq))
        an_pass_watch(c, hk->piece_tid, hk->on_piece, hctx);
    if (hk && hk->on_file)
        hk->on_file(hctx, p, r);
    if (hk && hk->on_event)
        an_pass_hook(c, hk, hctx);
    const gs_event *ev;
    size_t n;
    int rc;
    while ((rc = gs_reader_next_batch(r, &ev, &n)) > 0) {
        p->events += n;
        an_pass_events(c, ev, n);
        progress(g, gs_reader_offset(r), &seen);
    }
    gs_reader_totals tot;
    gs_reader_get_totals(r, &tot);
    p->dropped = tot.dropped;
    p->lost = tot.lost;
    p->recovered = tot.recovered;
    p->ended = tot.ended;
    run->dropped += tot.dropped;
    run->lost += tot.lost;
    run->recovered += tot.recovered;
    /* RATIONALE: a live file that says "never ended" is also what a process
     * still running leaves; only its mapping tells the two apart */
    p->running = (tot.ended == GS_END_ABRUPT || tot.ended == GS_END_UNKNOWN) &&
                 an_trace_running(path, p->pid, p->host);
    run->running += p->running;
    run->abrupt += !p->running && (tot.ended == GS_END_SIGNAL || tot.ended == GS_END_ABRUPT);
    an_pass_finish(c);
    if (hk && hk->on_file_end)
        hk->on_file_end(hctx, p);
    run->events += p->events;
    p->live_damaged = tot.live_damaged;
    run->live_damaged += tot.live_damaged;
    if (rc == GS_ERR_LIVE) {
        /* the trace file was read whole; what its live file held is missing */
        char msg[448];
        snprintf(msg, sizeof msg, "its live file could not be read: %s", gs_reader_live_problem(r));
        skipped_add(run, path, msg, 0, 0);
    } else if (rc < 0) {
        p->damaged = rc;
        p->unread = gs_reader_unread(r);
        damage_reason(why, sizeof why, rc, pi);
        char msg[320];
        snprintf(msg, sizeof msg, "%s at offset %llu; the %llu bytes after it were not read", why,
                 (unsigned long long)gs_reader_offset(r), (unsigned long long)p->unread);
        skipped_add(run, path, msg, p->unread, 0);
    }
    progress(g, gs_reader_file_size(r), &seen);
    run->bytes_done += gs_reader_file_size(r);
    an_pass_free(c);
    gs_reader_close(r);
    return 0;
}

int an_run_load_file(an_run *run, const char *path, const an_opts *o)
{
    prog g;
    prog_init(&g, o, run->bytes_done, run->bytes);
    const int rc = load_file(run, path, o, o->hooks, o->hooks ? o->hooks->ctx : NULL, &g);
    pthread_mutex_destroy(&g.lock);
    return rc;
}

int an_run_load(an_run *run, const char *dir, const an_opts *o, char *err, size_t errlen)
{
    char *const dirs[1] = {(char *)dir};
    return an_run_load_dirs(run, dirs, 1, o, err, errlen);
}

/* RATIONALE: each thread holds one open file's buffers and pass state (a
 * few MiB, up to the timeline's window); on a large shared machine the
 * report need not take every core and that much memory per core. */
#define AN_THREADS_DEFAULT_MAX 16

int an_default_threads(void)
{
    cpu_set_t set;
    long n;
    if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0)
        n = CPU_COUNT(&set);
    else
        n = sysconf(_SC_NPROCESSORS_ONLN);
    if (n > AN_THREADS_DEFAULT_MAX)
        n = AN_THREADS_DEFAULT_MAX;
    return n > 0 ? (int)n : 1;
}

/* ---- several threads ------------------------------------------------------------- */

/* RATIONALE: each file is read whole by one thread into a run of its own
 * (a slot); a finished slot is appended to the run as soon as every file
 * before it is appended too (under the pool's lock, by whichever thread
 * finished last), so the run is the one a single thread makes. Files are
 * taken a group of TAKE_GROUP files per thread after the other, in file
 * order, and inside a group the largest first: so the slots waiting for
 * an earlier file are at most about a group and the threads, and the run
 * does not end with one thread reading a large file (a rank's trainer)
 * while the others have nothing left to take. Memory: a thread holds one
 * open file at a time (its reader's frame and batch buffers and the pass's
 * state, as with one thread); what a waiting slot keeps is what the run
 * keeps of its file anyway, and its call-site shard. */
#define TAKE_GROUP 8
typedef struct slot {
    const char *path;
    an_run run;
    void *fctx; /* the hooks' context of this file (file_new), NULL */
    int failed; /* out of memory */
    int done;   /* read (under the pool's lock) */
} slot;

typedef struct pool {
    slot *slots;
    size_t n;
    size_t *order;       /* the files in the order they are taken */
    _Atomic size_t next; /* the next of order to take */
    const an_opts *o;
    prog *g;
    pthread_mutex_t lock; /* done, merged, run, rc and the hooks' file_merge */
    size_t merged;        /* slots appended */
    an_run *run;
    int rc;
} pool;

/* Append slot s's run to run (moves its allocations). */
static int slot_merge(an_run *run, slot *s)
{
    an_run *m = &s->run;
    if (m->nprocs &&
        an_grow(&run->procs, &run->capprocs, run->nprocs + m->nprocs, sizeof *run->procs, 16) < 0)
        return -1;
    if (m->nskipped) {
        an_skipped *n = realloc(run->skipped, (run->nskipped + m->nskipped) * sizeof *n);
        if (!n)
            return -1;
        run->skipped = n;
    }
    if (m->nprocs) /* (memcpy from a NULL array is undefined even for 0 bytes) */
        memcpy(run->procs + run->nprocs, m->procs, m->nprocs * sizeof *m->procs);
    run->nprocs += m->nprocs;
    if (m->nskipped)
        memcpy(run->skipped + run->nskipped, m->skipped, m->nskipped * sizeof *m->skipped);
    run->nskipped += m->nskipped;
    run->events += m->events;
    run->dropped += m->dropped;
    run->lost += m->lost;
    run->recovered += m->recovered;
    run->abrupt += m->abrupt;
    run->running += m->running;
    run->live_damaged += m->live_damaged;
    run->bytes_done += m->bytes_done;
    free(m->procs);
    free(m->skipped);
    memset(m, 0, sizeof *m);
    return 0;
}

/* Slot i is read: append it and every read slot after it that can go now. */
static void slot_done(pool *pl, size_t i)
{
    const an_hooks *hk = pl->o->hooks;
    pthread_mutex_lock(&pl->lock);
    pl->slots[i].done = 1;
    while (pl->merged < pl->n && pl->slots[pl->merged].done) {
        slot *s = &pl->slots[pl->merged++];
        if (pl->rc == 0 && (s->failed || slot_merge(pl->run, s) < 0))
            pl->rc = -1;
        if (hk && s->fctx)
            hk->file_merge(hk->ctx, s->fctx); /* takes it, merged or not */
        s->fctx = NULL;
        an_run_free(&s->run);
    }
    pthread_mutex_unlock(&pl->lock);
}

static void *reader_thread(void *arg)
{
    pool *pl = arg;
    const an_hooks *hk = pl->o->hooks;
    for (;;) {
        const size_t k = atomic_fetch_add(&pl->next, 1);
        if (k >= pl->n)
            break;
        const size_t i = pl->order[k];
        slot *s = &pl->slots[i];
        void *hctx = NULL;
        if (hk) {
            s->fctx = hk->file_new(hk->ctx);
            hctx = s->fctx;
        }
        if (load_file(&s->run, s->path, pl->o, hctx ? hk : NULL, hctx, pl->g) < 0)
            s->failed = 1;
        slot_done(pl, i);
    }
    return NULL;
}

typedef struct take {
    uint64_t size;
    size_t i;
} take;

/* larger first, then in file order */
static int cmp_take(const void *a, const void *b)
{
    const take *x = a, *y = b;
    if (x->size != y->size)
        return x->size > y->size ? -1 : 1;
    return (x->i > y->i) - (x->i < y->i);
}

/* The order the files are taken in (TAKE_GROUP): order[0..n). */
static int take_order(size_t *order, const uint64_t *sizes, size_t n, int nthreads)
{
    const size_t group = (size_t)nthreads * TAKE_GROUP;
    take *t = malloc((n < group ? n : group) * sizeof *t);
    if (!t)
        return -1;
    for (size_t s = 0; s < n; s += group) {
        const size_t m = n - s < group ? n - s : group;
        for (size_t j = 0; j < m; j++)
            t[j] = (take){sizes[s + j], s + j};
        qsort(t, m, sizeof *t, cmp_take);
        for (size_t j = 0; j < m; j++)
            order[s + j] = t[j].i;
    }
    free(t);
    return 0;
}

/* Read paths[0..n) (sizes[i] bytes each) on nthreads threads (the caller's
 * among them) into run. */
static int load_parallel(an_run *run, char **paths, const uint64_t *sizes, size_t n, int nthreads,
                         const an_opts *o, prog *g)
{
    pool pl = {0};
    pl.slots = calloc(n, sizeof *pl.slots);
    pl.order = malloc(n * sizeof *pl.order);
    pthread_t *tids = calloc((size_t)nthreads, sizeof *tids);
    if (!pl.slots || !pl.order || !tids || take_order(pl.order, sizes, n, nthreads) < 0) {
        free(pl.slots);
        free(pl.order);
        free(tids);
        return -1;
    }
    pl.n = n;
    pl.o = o;
    pl.g = g;
    pl.run = run;
    atomic_init(&pl.next, 0);
    pthread_mutex_init(&pl.lock, NULL);
    for (size_t i = 0; i < n; i++)
        pl.slots[i].path = paths[i];
    int started = 0;
    for (int t = 1; t < nthreads; t++) {
        if (pthread_create(&tids[t], NULL, reader_thread, &pl) != 0)
            break; /* fewer threads: the files are still all read */
        started++;
    }
    reader_thread(&pl);
    for (int t = 1; t <= started; t++)
        pthread_join(tids[t], NULL);
    pthread_mutex_destroy(&pl.lock);
    free(pl.slots);
    free(pl.order);
    free(tids);
    return pl.rc;
}

int an_run_load_dirs(an_run *run, char *const *dirs, size_t ndirs, const an_opts *o, char *err,
                     size_t errlen)
{
    memset(run, 0, sizeof *run);
    run->dir = strdup(dirs[0]);
    run->dirs = calloc(ndirs, sizeof *run->dirs);
    if (!run->dir || !run->dirs) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    gs_run_files *files = calloc(ndirs, sizeof *files);
    if (!files) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    int rc = 0;
    for (size_t d = 0; d < ndirs && rc == 0; d++) {
        const char *dir = dirs[d];
        run->dirs[run->ndirs++] = strdup(dir);
        const int lrc = gs_run_files_list(&files[d], dir);
        if (lrc == GS_ERR_IO) {
            snprintf(err, errlen, "%s: cannot read directory: %s", dir, strerror(errno));
            rc = -1;
        } else if (lrc != GS_OK) {
            snprintf(err, errlen, "%s: out of memory listing the directory", dir);
            rc = -1;
        } else if (files[d].n == 0) {
            snprintf(err, errlen, "%s: no trace files (*" GS_TRACE_SUFFIX ") in this directory", dir);
            rc = -1;
        }
        if (rc == 0)
            run->nfiles += files[d].n;
    }
    /* every path, in the order one thread reads them, and its size */
    char **paths = rc == 0 ? calloc(run->nfiles ? run->nfiles : 1, sizeof *paths) : NULL;
    uint64_t *sizes = rc == 0 ? calloc(run->nfiles ? run->nfiles : 1, sizeof *sizes) : NULL;
    if (rc == 0 && (!paths || !sizes)) {
        snprintf(err, errlen, "out of memory");
        rc = -1;
    }
    size_t npaths = 0;
    for (size_t d = 0; d < ndirs && rc == 0; d++)
        for (size_t i = 0; i < files[d].n; i++) {
            struct stat st;
            sizes[npaths] = stat(files[d].path[i], &st) == 0 ? (uint64_t)st.st_size : 0;
            run->bytes += sizes[npaths];
            paths[npaths++] = files[d].path[i];
        }
    const an_hooks *hk = o->hooks;
    int nthreads = o->threads > 0 ? o->threads : an_default_threads();
    if (hk && (!hk->file_new || !hk->file_merge || hk->on_piece))
        nthreads = 1;
    if ((size_t)nthreads > npaths)
        nthreads = (int)(npaths ? npaths : 1);
    prog g;
    prog_init(&g, o, 0, run->bytes);
    if (rc == 0 && nthreads > 1) {
        if (load_parallel(run, paths, sizes, npaths, nthreads, o, &g) < 0) {
            snprintf(err, errlen, "out of memory reading %s", dirs[0]);
            rc = -1;
        }
    } else
        for (size_t i = 0; i < npaths && rc == 0; i++)
            if (load_file(run, paths[i], o, hk, hk ? hk->ctx : NULL, &g) < 0) {
                snprintf(err, errlen, "out of memory reading %s", paths[i]);
                rc = -1;
            }
    pthread_mutex_destroy(&g.lock);
    free(paths);
    free(sizes);
    for (size_t d = 0; d < ndirs; d++)
        gs_run_files_free(&files[d]);
    free(files);
    if (rc < 0)
        return rc;
    an_run_read_peers(run);
    if (o->progress)
        o->progress(o->progress_ctx, run->bytes, run->bytes);
    return rc;
}

void an_run_free(an_run *run)
{
    for (size_t i = 0; i < run->nprocs; i++) {
        an_proc *p = &run->procs[i];
        free(p->path);
        free(p->file);
        free(p->argv);
        free(p->host);
        free(p->cfg);
        free(p->devs);
        free(p->hcpu);
        free(p->preads.v);
        an_kstats_free(&p->kstats);
        an_colls_free(&p->colls);
        for (size_t t = 0; t < p->nth; t++) {
            free(p->th[t].cand);
            free(p->th[t].nvtx);
            an_cpu_log_free(p->th[t].cpu);
        }
        free(p->th);
    }
    free(run->procs);
    for (size_t i = 0; i < run->nskipped; i++) {
        free(run->skipped[i].file);
        free(run->skipped[i].reason);
    }
    free(run->skipped);
    free(run->dir);
    for (size_t d = 0; d < run->ndirs; d++)
        free(run->dirs[d]);
    free(run->dirs);
    memset(run, 0, sizeof *run);
}

/* ---- options --------------------------------------------------------------------- */

int an_opts_init(an_opts *o, const char *step_re, const char *fetch_re, const char **bad)
{
    memset(o, 0, sizeof *o);
    o->skip = -1;
    o->burst_gap_ns = 1000000; /* 1 ms */
    return gs_ranges_init(&o->ranges, step_re, fetch_re, bad);
}

void an_opts_free(an_opts *o)
{
    gs_ranges_free(&o->ranges);
}
