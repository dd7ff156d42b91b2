/* report_pass2.c — the report's second pass over the trace files, for
 * --perfetto and --html: the same loader as the analysis (an_load.c) with
 * hooks that hand each event, on the job's clock, to the Perfetto writer
 * (report_perfetto.c) and the HTML page's timelines (report_timeline.c),
 * then write the page (report_html.c).
 *
 * Must never: hold events.
 */
#include "report/report_pass2.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/gs_diag.h"
#include "gs_trace.h"
#include "model/an_callsites.h"
#include "model/an_ranks.h"
#include "report/report_perfetto.h"
#include "report/report_timeline.h"

static void p2_file_read(pass2 *x, const gs_event *e, uint64_t bytes)
{
    if (x->pf)
        rep_pf_file_read(x, e, bytes);
    /* per step, all processes */
    const an_result *r = x->res;
    size_t lo = 0, hi = r->nsteps;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (jt(x->top_off, r->steps[mid].v.t0) <= e->ts)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo && e->ts < jt(x->top_off, r->steps[lo - 1].v.t1) && x->step_bytes)
        x->step_bytes[lo - 1] += (double)bytes;
}

/* Each process's host as a number, in the order the run's files were read
 * (0: the first host; a process of no host: 0). NULL when out of memory:
 * every process then counts as the first host's. */
static uint32_t *host_numbers(const an_run *run)
{
    uint32_t *k = calloc(run->nprocs ? run->nprocs : 1, sizeof *k);
    uint32_t next = 0;
    for (size_t i = 0; k && i < run->nprocs; i++) {
        const char *h = run->procs[i].host;
        size_t j = 0;
        while (j < i && !(h && run->procs[j].host && strcmp(run->procs[j].host, h) == 0))
            j++;
        k[i] = !h ? 0 : j < i ? k[j] : next++;
    }
    return k;
}

/* The Perfetto pid of process img: its pid on the run's first host; on the
 * k-th other host, pid + k x PF_PID_HOST_STRIDE, so that processes of two
 * hosts with the same pid keep tracks of their own. */
static uint64_t track_pid(const pass2 *x, size_t img, uint64_t pid)
{
    const uint64_t k = x->hostk && img < x->run->nprocs ? x->hostk[img] : 0;
    if (!k)
        return pid;
    return pid % PF_PID_HOST_STRIDE + (k % PF_MAX_HOSTS) * PF_PID_HOST_STRIDE;
}

static void p2_on_file(void *ctx, const an_proc *p, struct gs_reader *r)
{
    pass2 *x = ctx;
    x->p1 = NULL;
    for (size_t i = 0; i < x->run->nprocs; i++)
        if (strcmp(x->run->procs[i].path, p->path) == 0) {
            x->p1 = &x->run->procs[i];
            x->img = i;
        }
    x->pid = p->pid;
    x->tpid = track_pid(x, x->p1 ? x->img : (size_t)-1, p->pid);
    if (x->res->callsites && an_cs_has_stacks(x->res->callsites))
        an_cs_proc_begin(x->res->callsites, p->path, gs_reader_info(r)); /* its mappings */
    x->nth = x->nst = x->nrg = 0;
    x->last_th = -1;
    an_index_free(&x->thx);
    x->ngpu_named = 0;
    x->rbin = -1;
    x->rbytes = 0;
    /* by file: in a job of ranks the result's processes are its rank's
     * copies of the run's (an_ranks.h) */
    x->is_trainer = x->p1 && strcmp(x->p1->path, x->res->trainer->path) == 0;
    x->is_worker = 0;
    long wi = -1;
    for (size_t i = 0; i < x->res->nworkers; i++)
        if (x->p1 && strcmp(x->res->workers[i].p->path, x->p1->path) == 0 && !x->is_trainer) {
            x->is_worker = 1;
            wi = (long)i;
        }
    if (!x->p1) /* cannot happen: the same files in the same order */
        x->p1 = p;
    x->off = an_job_clock_offset(x->job, x->run, x->p1);
    if (x->pf)
        rep_pf_file(x, p, wi);
    x->gbin = -1;
    x->gbusy = 0;
    x->glast = -1;
    x->pk = 0;
}

static void p2_on_event(void *ctx, const an_proc *p, struct gs_reader *r, const gs_event *e)
{
    pass2 *x = ctx;
    (void)p;
    const unsigned k = e->kind;
    if (k == GS_K_MAPPING && x->res->callsites) {
        an_cs_mapping(x->res->callsites, r, e); /* so call sites can be named */
        return;
    }
    /* from here on, every time is on the job's clock */
    gs_event ev = *e;
    ev.ts = jt(x->off, e->ts);
    e = &ev;
    if (k == GS_K_GPU_KERNEL || k == GS_K_GPU_MEMCPY || k == GS_K_GPU_MEMSET) {
        if (x->html && x->is_trainer)
            rep_hx_gpu(x, r, e);
        if (x->pf)
            rep_pf_gpu(x, r, e);
        return;
    }
    if (!e->ts || k == GS_K_GPU_SYNC)
        return;
    if (e->fd_kind == GS_FDK_FILE && gs_kind_is_read(k))
        p2_file_read(x, e, gs_read_bytes(e));
    if (x->html)
        rep_hx_event(x, e);
    if (x->pf)
        rep_pf_event(x, r, e);
}

static void p2_on_piece(void *ctx, uint64_t t0, uint64_t t1, unsigned cls)
{
    pass2 *x = ctx;
    if (cls >= AN_NPC)
        return;
    t0 = jt(x->top_off, t0); /* the trainer's clock on the job's */
    t1 = jt(x->top_off, t1);
    if (x->html)
        rep_hx_piece(x, t0, t1, cls);
    if (x->pf)
        rep_pf_piece(x, t0, t1, cls);
}

static void p2_on_file_end(void *ctx, const an_proc *p)
{
    pass2 *x = ctx;
    (void)p;
    if (x->pf)
        rep_pf_file_end(x);
}

/* ---- running the second pass ---- */

static FILE *open_out(const char *path, const char *what)
{
    FILE *f = fopen(path, "w");
    if (!f)
        gs_cli_error("report: %s %s: %s", what, path, strerror(errno));
    return f;
}

static int close_out(FILE *f, gs_out *o, const char *path, const char *what)
{
    gs_out_flush(o);
    int bad = ferror(f);
    if (fclose(f) != 0)
        bad = 1;
    if (bad) {
        gs_cli_error("report: writing %s %s failed: %s", what, path, strerror(errno));
        return -1;
    }
    gs_cli_msg(2, "report: wrote %s %s", what, path);
    return 0;
}

/* Read the run again for --perfetto and/or --html. Returns 0 or -1 (a
 * message was printed). */
int rep_second_pass(const char *dir, const an_opts *o1, const an_run *run, const an_result *res,
                    const an_job *job, const char *perfetto, const char *html)
{
    pass2 *x = calloc(1, sizeof *x);
    if (!x) {
        gs_cli_error("out of memory");
        return -1;
    }
    int rc = 0;
    x->run = run;
    x->res = res;
    x->job = job;
    x->hostk = host_numbers(run);
    x->top_off = an_job_clock_offset(job, run, res->trainer);
    x->base = UINT64_MAX;
    for (size_t i = 0; i < run->nprocs; i++) {
        const uint64_t f = jt(an_job_clock_offset(job, run, &run->procs[i]), run->procs[i].first_ts);
        if (f && f < x->base)
            x->base = f;
    }
    if (x->base == UINT64_MAX)
        x->base = 0;
    x->step_bytes = calloc(res->nsteps ? res->nsteps : 1, sizeof *x->step_bytes);
    FILE *pff = NULL, *hf = NULL;
    gs_out *pfo = NULL;
    gs_jw pjw;
    if (perfetto) {
        pff = open_out(perfetto, "--perfetto");
        pfo = pff ? malloc(sizeof *pfo) : NULL;
        if (!pfo) {
            if (pff)
                fclose(pff);
            free(x->step_bytes);
            free(x->hostk);
            free(x);
            return -1;
        }
        gs_out_init(pfo, pff);
        x->pf = pfo;
        gs_jw_init(&pjw, pfo);
        x->pj = &pjw;
        rep_pf_header(x);
    }
    if (html)
        rep_hx_windows(x);
    an_hooks hk = {0};
    hk.ctx = x;
    hk.on_file = p2_on_file;
    hk.on_event = p2_on_event;
    hk.on_file_end = p2_on_file_end;
    if (res->thread) {
        hk.on_piece = p2_on_piece;
        hk.piece_path = res->trainer->path;
        hk.piece_pid = res->trainer->pid;
        hk.piece_exec_seq = res->trainer->exec_seq;
        hk.piece_tid = res->thread->tid;
    }
    an_opts o2 = *o1; /* the same compiled patterns; freed once, by the caller */
    o2.hooks = &hk;
    o2.progress = NULL;
    an_run run2;
    char err[512];
    (void)dir; /* the directories the first pass read: run->dirs */
    if (an_run_load_dirs(&run2, run->dirs, run->ndirs, &o2, err, sizeof err) < 0) {
        gs_cli_error("report: second pass: %s", err);
        rc = -1;
    }
    an_run_free(&run2);
    if (pfo) {
        rep_pf_footer(x);
        if (close_out(pff, pfo, perfetto, "--perfetto") < 0)
            rc = -1;
        free(pfo);
    }
    if (html && rc == 0) {
        hf = open_out(html, "--html");
        gs_out *ho = hf ? malloc(sizeof *ho) : NULL;
        if (!ho) {
            if (hf)
                fclose(hf);
            rc = -1;
        } else {
            gs_out_init(ho, hf);
            rep_write_html(ho, x);
            if (close_out(hf, ho, html, "--html") < 0)
                rc = -1;
            free(ho);
        }
    }
    for (size_t w = 0; w < x->nwin; w++) {
        free(x->win[w].it);
        free(x->win[w].last);
    }
    free(x->rows);
    free(x->th);
    an_index_free(&x->thx);
    free(x->st);
    free(x->rg);
    free(x->step_bytes);
    free(x->hostk);
    free(x);
    return rc;
}
