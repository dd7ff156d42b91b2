/* an_load.c — reading a run: the directory's trace files (trace/'s
 * gs_run_files_list), each decoded batch by batch and handed to the pass
 * (an_events.c) and to a second pass's hooks, progress about every second,
 * and damaged or unreadable files listed in run->skipped with the reason.
 *
 * Must never: keep events, or stop at a damaged file (what was readable is
 * used, the rest is listed in run->skipped).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "an_events.h"
#include "an_model.h"
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
    if (run->nprocs == run->capprocs) {
        size_t nc = run->capprocs ? run->capprocs * 2 : 16;
        an_proc *n = realloc(run->procs, nc * sizeof *n);
        if (!n)
            return -1;
        run->procs = n;
        run->capprocs = nc;
    }
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

/* Progress of the whole run, about every second. */
typedef struct prog {
    const an_opts *o;
    const an_run *run;
    uint64_t bytes_before; /* of the files before this one */
    struct timespec t_last;
} prog;

static void progress(prog *g, const gs_reader *r)
{
    if (!g->o->progress)
        return;
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    double since_last = (double)(t.tv_sec - g->t_last.tv_sec) + (t.tv_nsec - g->t_last.tv_nsec) / 1e9;
    if (since_last < 1.0)
        return;
    g->t_last = t;
    g->o->progress(g->o->progress_ctx, g->bytes_before + gs_reader_offset(r), g->run->bytes);
}

int an_run_load_file(an_run *run, const char *path, const an_opts *o)
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
        skipped_add(run, path, why, stat(path, &st) == 0 ? (uint64_t)st.st_size : 0, 1);
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
    prog g = {o, run, run->bytes_done, {0, 0}};
    clock_gettime(CLOCK_MONOTONIC, &g.t_last);
    const an_hooks *hk = o->hooks;
    if (hk && hk->on_piece &&
        (hk->piece_path ? strcmp(p->path, hk->piece_path) == 0
                        : p->pid == hk->piece_pid && p->exec_seq == hk->piece_exec_seq))
        an_pass_watch(c, hk->piece_tid, hk->on_piece, hk->ctx);
    if (hk && hk->on_file)
        hk->on_file(hk->ctx, p, r);
    const gs_event *ev;
    size_t n;
    int rc;
    while ((rc = gs_reader_next_batch(r, &ev, &n)) > 0) {
        p->events += n;
        if (hk && hk->on_event)
            for (size_t i = 0; i < n; i++)
                if (!hk->event_kinds || hk->event_kinds[ev[i].kind])
                    hk->on_event(hk->ctx, p, r, &ev[i]);
        an_pass_events(c, ev, n);
        progress(&g, r);
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
        hk->on_file_end(hk->ctx, p);
    run->events += p->events;
    if (rc < 0) {
        p->damaged = rc;
        p->unread = gs_reader_unread(r);
        damage_reason(why, sizeof why, rc, pi);
        char msg[320];
        snprintf(msg, sizeof msg, "%s at offset %llu; the %llu bytes after it were not read", why,
                 (unsigned long long)gs_reader_offset(r), (unsigned long long)p->unread);
        skipped_add(run, path, msg, p->unread, 0);
    }
    run->bytes_done = g.bytes_before + gs_reader_file_size(r);
    an_pass_free(c);
    gs_reader_close(r);
    return 0;
}

int an_run_load(an_run *run, const char *dir, const an_opts *o, char *err, size_t errlen)
{
    char *const dirs[1] = {(char *)dir};
    return an_run_load_dirs(run, dirs, 1, o, err, errlen);
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
        for (size_t i = 0; rc == 0 && i < files[d].n; i++) {
            struct stat st;
            if (stat(files[d].path[i], &st) == 0)
                run->bytes += (uint64_t)st.st_size;
        }
        if (rc == 0)
            run->nfiles += files[d].n;
    }
    for (size_t d = 0; d < ndirs && rc == 0; d++)
        for (size_t i = 0; i < files[d].n && rc == 0; i++) {
            if (an_run_load_file(run, files[d].path[i], o) < 0) {
                snprintf(err, errlen, "out of memory reading %s", files[d].path[i]);
                rc = -1;
            }
        }
    for (size_t d = 0; d < ndirs; d++)
        gs_run_files_free(&files[d]);
    free(files);
    if (rc < 0)
        return rc;
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
        an_kstats_free(&p->kstats);
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
    const char *s = step_re ? step_re : AN_STEP_RE_DEFAULT;
    const char *f = fetch_re ? fetch_re : AN_FETCH_RE_DEFAULT;
    if (regcomp(&o->step_re, s, REG_EXTENDED | REG_NOSUB | REG_ICASE) != 0) {
        *bad = s;
        return -1;
    }
    if (regcomp(&o->fetch_re, f, REG_EXTENDED | REG_NOSUB | REG_ICASE) != 0) {
        regfree(&o->step_re);
        *bad = f;
        return -1;
    }
    return 0;
}

void an_opts_free(an_opts *o)
{
    regfree(&o->step_re);
    regfree(&o->fetch_re);
}
