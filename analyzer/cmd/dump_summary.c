/* dump_summary.c — `gpustarve dump --summary`: per process, events by
 * kind, bytes read (read class: gs_read_bytes), files opened, distinct paths
 * read, time in I/O calls and in waits, drops, threads and major faults;
 * then the totals over every process (distinct paths across processes by
 * name). Text, or one JSON object per process and a total.
 *
 * Must never: allocate per event (sets grow by doubling), or keep a
 * process's string ids past its file (the totals copy the paths).
 */
#include <stdlib.h>
#include <string.h>

#include "base/an_index.h"
#include "base/an_grow.h"
#include "cmd/dump.h"

/* Open-addressing set of nonzero uint32 keys (string ids, tids). */
typedef struct u32set {
    uint32_t *keys;
    size_t cap, n;
} u32set;

static int u32set_add(u32set *s, uint32_t key) /* 1 when new, -1 on ENOMEM */
{
    if (key == 0)
        key = 0xFFFFFFFFu; /* 0 marks empty slots */
    if ((s->n + 1) * 2 > s->cap) {
        size_t ncap = s->cap ? s->cap * 2 : 64;
        uint32_t *nk = calloc(ncap, sizeof *nk);
        if (!nk)
            return -1;
        for (size_t i = 0; i < s->cap; i++) {
            if (!s->keys[i])
                continue;
            size_t h = (s->keys[i] * 2654435761u) & (ncap - 1);
            while (nk[h])
                h = (h + 1) & (ncap - 1);
            nk[h] = s->keys[i];
        }
        free(s->keys);
        s->keys = nk;
        s->cap = ncap;
    }
    size_t h = (key * 2654435761u) & (s->cap - 1);
    while (s->keys[h]) {
        if (s->keys[h] == key)
            return 0;
        h = (h + 1) & (s->cap - 1);
    }
    s->keys[h] = key;
    s->n++;
    return 1;
}

static void u32set_clear(u32set *s)
{
    if (s->keys)
        memset(s->keys, 0, s->cap * sizeof *s->keys);
    s->n = 0;
}

/* Set of strings (owned copies), for distinct paths across processes. */
typedef struct strset {
    char **keys;
    size_t cap, n;
} strset;

static uint64_t str_hash(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

static int strset_add(strset *s, const char *key)
{
    if ((s->n + 1) * 2 > s->cap) {
        size_t ncap = s->cap ? s->cap * 2 : 64;
        char **nk = calloc(ncap, sizeof *nk);
        if (!nk)
            return -1;
        for (size_t i = 0; i < s->cap; i++) {
            if (!s->keys[i])
                continue;
            size_t h = str_hash(s->keys[i]) & (ncap - 1);
            while (nk[h])
                h = (h + 1) & (ncap - 1);
            nk[h] = s->keys[i];
        }
        free(s->keys);
        s->keys = nk;
        s->cap = ncap;
    }
    size_t h = str_hash(key) & (s->cap - 1);
    while (s->keys[h]) {
        if (strcmp(s->keys[h], key) == 0)
            return 0;
        h = (h + 1) & (s->cap - 1);
    }
    s->keys[h] = strdup(key);
    if (!s->keys[h])
        return -1;
    s->n++;
    return 1;
}

static void strset_free(strset *s)
{
    for (size_t i = 0; i < s->cap; i++)
        free(s->keys[i]);
    free(s->keys);
}

typedef struct tname {
    uint32_t tid;
    uint32_t name; /* string id */
} tname;

typedef struct proc_stats {
    uint64_t events;
    uint64_t by_kind[GS_K_MAX];
    uint64_t bytes_read, bytes_read_file, read_calls;
    uint64_t opened, open_failed;
    uint64_t io_ns, wait_ns;
    uint64_t dropped, lost;
    uint64_t first_ts, last_ts;
    u32set paths; /* string ids of paths read */
    u32set tids;
    /* faults: cumulative per thread; keep the largest seen per tid */
    struct { uint32_t tid; uint64_t faults; } *faults;
    size_t nfaults, cap_faults;
    tname *names;
    size_t nnames, cap_names;
    an_index faults_ix, names_ix; /* tid -> index in faults, names */
} proc_stats;

typedef struct totals {
    uint64_t procs, events, damaged;
    uint64_t by_kind[GS_K_MAX];
    uint64_t bytes_read, bytes_read_file, read_calls, opened, open_failed;
    uint64_t io_ns, wait_ns, dropped, lost, threads, faults;
    strset paths;
} totals;

struct dump_summary {
    const uint64_t *pids; /* traced pids, for the role guess */
    size_t npids;
    proc_stats ps;
    totals tot;
};

static void stats_reset(proc_stats *ps)
{
    u32set paths = ps->paths, tids = ps->tids;
    void *faults = ps->faults;
    size_t cf = ps->cap_faults;
    tname *names = ps->names;
    size_t cn = ps->cap_names;
    an_index_free(&ps->faults_ix);
    an_index_free(&ps->names_ix);
    memset(ps, 0, sizeof *ps);
    ps->paths = paths;
    ps->tids = tids;
    u32set_clear(&ps->paths);
    u32set_clear(&ps->tids);
    ps->faults = faults;
    ps->cap_faults = cf;
    ps->names = names;
    ps->cap_names = cn;
}

static void stats_add(proc_stats *ps, const gs_event *ev)
{
    unsigned k = ev->kind;
    if (ps->events == 0 || ev->ts < ps->first_ts)
        ps->first_ts = ev->ts;
    if (ev->ts + ev->dur > ps->last_ts)
        ps->last_ts = ev->ts + ev->dur;
    ps->events++;
    ps->by_kind[k]++;
    if (ev->tid)
        u32set_add(&ps->tids, ev->tid);
    if (gs_kind_is_read(k)) {
        uint64_t b = gs_read_bytes(ev);
        ps->bytes_read += b;
        if (ev->fd_kind == GS_FDK_FILE)
            ps->bytes_read_file += b;
        ps->read_calls++;
        if (ev->str)
            u32set_add(&ps->paths, ev->str);
    }
    if (gs_kind_is_open(k)) {
        if (ev->ret >= 0)
            ps->opened++;
        else
            ps->open_failed++;
    }
    if (gs_kind_is_io_call(k)) {
        if (gs_kind_is_wait(k))
            ps->wait_ns += ev->dur;
        else
            ps->io_ns += ev->dur;
    }
    switch (k) {
    case GS_K_DROPS:
        if (ev->aux > ps->dropped)
            ps->dropped = ev->aux;
        if (ev->aux2 > ps->lost)
            ps->lost = ev->aux2;
        break;
    case GS_K_FAULTS: {
        size_t i;
        const long had = an_index_get(&ps->faults_ix, (uint32_t)ev->aux);
        i = had >= 0 ? (size_t)had : ps->nfaults;
        if (i == ps->nfaults) {
            if (an_grow(&ps->faults, &ps->cap_faults, ps->nfaults + 1, sizeof *ps->faults, 16) < 0)
                break;
            if (an_index_put(&ps->faults_ix, (uint32_t)ev->aux, (uint32_t)i) != 0)
                break;
            ps->faults[i].tid = (uint32_t)ev->aux;
            ps->faults[i].faults = 0;
            ps->nfaults++;
        }
        if (ev->aux2 > ps->faults[i].faults)
            ps->faults[i].faults = ev->aux2;
        break;
    }
    case GS_K_THREAD: {
        if (ev->aux)
            u32set_add(&ps->tids, (uint32_t)ev->aux);
        size_t i;
        const long had = an_index_get(&ps->names_ix, (uint32_t)ev->aux);
        i = had >= 0 ? (size_t)had : ps->nnames;
        if (i == ps->nnames) {
            if (an_grow(&ps->names, &ps->cap_names, ps->nnames + 1, sizeof *ps->names, 16) < 0)
                break;
            if (an_index_put(&ps->names_ix, (uint32_t)ev->aux, (uint32_t)i) != 0)
                break;
            ps->nnames++;
        }
        ps->names[i].tid = (uint32_t)ev->aux;
        ps->names[i].name = ev->str;
        break;
    }
    }
}

static int pid_traced(const dump_summary *c, uint64_t pid)
{
    for (size_t i = 0; i < c->npids; i++)
        if (c->pids[i] == pid)
            return 1;
    return 0;
}

static void role_guess(const dump_summary *c, const gs_proc_info *pi, char *buf, size_t cap)
{
    int n;
    if (!pid_traced(c, pi->ppid))
        n = snprintf(buf, cap, "main");
    else if (pi->flags & GS_HDR_F_FORKED)
        n = snprintf(buf, cap, "fork of %llu", (unsigned long long)pi->ppid);
    else
        n = snprintf(buf, cap, "child of %llu", (unsigned long long)pi->ppid);
    if (n < 0 || (size_t)n >= cap)
        return;
    if (pi->exec_seq)
        n += snprintf(buf + n, cap - (size_t)n, ", exec #%u", pi->exec_seq);
    if (pi->rank >= 0 && (size_t)n < cap)
        snprintf(buf + n, cap - (size_t)n, ", rank %d", pi->rank);
}

static uint64_t stats_faults(const proc_stats *ps)
{
    uint64_t sum = 0;
    for (size_t i = 0; i < ps->nfaults; i++)
        sum += ps->faults[i].faults;
    return sum;
}

static void write_by_kind_text(gs_out *o, const uint64_t *by_kind)
{
    int first = 1;
    for (unsigned k = 0; k < GS_K_MAX; k++) {
        if (!by_kind[k])
            continue;
        const char *name = gs_kind_name(k);
        gs_out_str(o, first ? " (" : ", ");
        if (name)
            gs_out_str(o, name);
        else
            gs_out_printf(o, "kind%u", k);
        gs_out_char(o, ' ');
        gs_out_u64(o, by_kind[k]);
        first = 0;
    }
    if (!first)
        gs_out_char(o, ')');
}

static void write_by_kind_json(gs_jw *w, const uint64_t *by_kind)
{
    gs_jw_key(w, "by_kind");
    gs_jw_obj(w);
    for (unsigned k = 0; k < GS_K_MAX; k++) {
        if (!by_kind[k])
            continue;
        const char *name = gs_kind_name(k);
        char other[16];
        if (!name) {
            snprintf(other, sizeof other, "kind%u", k);
            name = other;
        }
        gs_jw_ku64(w, name, by_kind[k]);
    }
    gs_jw_end(w);
}

/* The JSON twin of write_io_lines: members shared by a process's summary and
 * the totals. */
static void write_io_json(gs_jw *w, uint64_t bytes_read, uint64_t read_calls,
                          uint64_t bytes_read_file, size_t npaths, uint64_t opened,
                          uint64_t open_failed, uint64_t io_ns, uint64_t wait_ns,
                          uint64_t dropped, uint64_t lost)
{
    gs_jw_ku64(w, "bytes_read", bytes_read);
    gs_jw_ku64(w, "bytes_read_file", bytes_read_file);
    gs_jw_ku64(w, "read_calls", read_calls);
    gs_jw_ku64(w, "files_opened", opened);
    gs_jw_ku64(w, "open_failed", open_failed);
    gs_jw_ku64(w, "paths_read", npaths);
    gs_jw_ku64(w, "io_ns", io_ns);
    gs_jw_ku64(w, "wait_ns", wait_ns);
    gs_jw_ku64(w, "dropped", dropped);
    gs_jw_ku64(w, "lost", lost);
}

static void write_bytes_human(gs_out *o, uint64_t b)
{
    if (b >= (1ull << 30))
        gs_out_printf(o, "%.1f GiB", (double)b / (double)(1ull << 30));
    else if (b >= (1ull << 20))
        gs_out_printf(o, "%.1f MiB", (double)b / (double)(1ull << 20));
    else if (b >= 1024)
        gs_out_printf(o, "%.1f KiB", (double)b / 1024.0);
    else
        gs_out_printf(o, "%llu B", (unsigned long long)b);
}

/* The read / opened / io time / drops lines, shared by a process's summary
 * and the totals (the caller has written "  read        "). */
static void write_io_lines(gs_out *o, uint64_t bytes_read, uint64_t read_calls,
                           uint64_t bytes_read_file, size_t npaths, uint64_t opened,
                           uint64_t open_failed, uint64_t io_ns, uint64_t wait_ns,
                           uint64_t dropped, uint64_t lost)
{
    write_bytes_human(o, bytes_read);
    gs_out_printf(o, " in %llu calls (from files ", (unsigned long long)read_calls);
    write_bytes_human(o, bytes_read_file);
    gs_out_printf(o, "), %zu distinct paths\n", npaths);
    gs_out_printf(o, "  opened      %llu files (%llu failed opens)\n",
                  (unsigned long long)opened, (unsigned long long)open_failed);
    gs_out_str(o, "  io time     ");
    gs_out_fixed(o, (int64_t)((io_ns + 500) / 1000), 3);
    gs_out_str(o, " ms in I/O calls, ");
    gs_out_fixed(o, (int64_t)((wait_ns + 500) / 1000), 3);
    gs_out_str(o, " ms in poll/select/epoll\n");
    gs_out_printf(o, "  drops       %llu dropped, %llu lost\n", (unsigned long long)dropped,
                  (unsigned long long)lost);
}

static void write_summary(dump_summary *c, gs_out *o, int json, const char *path,
                          const gs_proc_info *pi, const gs_reader *r)
{
    proc_stats *ps = &c->ps;
    char role[128] = "";
    role_guess(c, pi, role, sizeof role);
    uint64_t faults = stats_faults(ps);
    uint64_t span = ps->events ? ps->last_ts - ps->first_ts : 0;
    if (json) {
        gs_jw jw, *w = &jw;
        gs_jw_init(w, o);
        gs_jw_obj(w);
        gs_jw_kstr(w, "kind", "summary");
        gs_jw_ku64(w, "pid", pi->pid);
        gs_jw_ku64(w, "ppid", pi->ppid);
        gs_jw_kstr(w, "role", role);
        gs_jw_key(w, "argv");
        dump_argv_json(w, pi);
        gs_jw_kstr(w, "file", path);
        gs_jw_ku64(w, "events", ps->events);
        write_by_kind_json(w, ps->by_kind);
        gs_jw_ku64(w, "span_ns", span);
        write_io_json(w, ps->bytes_read, ps->read_calls, ps->bytes_read_file, ps->paths.n,
                      ps->opened, ps->open_failed, ps->io_ns, ps->wait_ns, ps->dropped, ps->lost);
        gs_jw_ku64(w, "threads", ps->tids.n);
        gs_jw_ku64(w, "major_faults", faults);
        gs_jw_key(w, "thread_names");
        gs_jw_arr(w);
        for (size_t i = 0; i < ps->nnames; i++)
            gs_jw_str(w, gs_reader_string(r, ps->names[i].name));
        gs_jw_end(w);
        gs_jw_end(w);
        gs_out_char(o, '\n');
        return;
    }
    gs_out_printf(o, "process %llu  %s  ", (unsigned long long)pi->pid, role);
    dump_argv_text(o, pi);
    gs_out_str(o, "\n  file        ");
    gs_text_str(o, path, strlen(path));
    gs_out_str(o, "\n  events      ");
    gs_out_u64(o, ps->events);
    write_by_kind_text(o, ps->by_kind);
    gs_out_str(o, "\n  span        ");
    gs_out_fixed(o, (int64_t)((span + 500) / 1000), 3);
    gs_out_str(o, " ms\n  read        ");
    write_io_lines(o, ps->bytes_read, ps->read_calls, ps->bytes_read_file, ps->paths.n,
                   ps->opened, ps->open_failed, ps->io_ns, ps->wait_ns, ps->dropped, ps->lost);
    gs_out_printf(o, "  threads     %zu", ps->tids.n);
    for (size_t i = 0; i < ps->nnames; i++) {
        const char *name = gs_reader_string(r, ps->names[i].name);
        gs_out_str(o, i ? ", " : " (");
        gs_out_printf(o, "%u ", ps->names[i].tid);
        gs_text_str(o, name ? name : "?", name ? strlen(name) : 1);
    }
    gs_out_str(o, ps->nnames ? ")\n" : "\n");
    gs_out_printf(o, "  faults      %llu major\n\n", (unsigned long long)faults);
}

static void totals_add(dump_summary *c, const gs_reader *r)
{
    totals *t = &c->tot;
    proc_stats *ps = &c->ps;
    t->procs++;
    t->events += ps->events;
    for (unsigned k = 0; k < GS_K_MAX; k++)
        t->by_kind[k] += ps->by_kind[k];
    t->bytes_read += ps->bytes_read;
    t->bytes_read_file += ps->bytes_read_file;
    t->read_calls += ps->read_calls;
    t->opened += ps->opened;
    t->open_failed += ps->open_failed;
    t->io_ns += ps->io_ns;
    t->wait_ns += ps->wait_ns;
    t->dropped += ps->dropped;
    t->lost += ps->lost;
    t->threads += ps->tids.n;
    t->faults += stats_faults(ps);
    for (size_t i = 0; i < ps->paths.cap; i++) {
        uint32_t id = ps->paths.keys[i];
        const char *s = id ? gs_reader_string(r, id) : NULL;
        if (s)
            strset_add(&t->paths, s);
    }
}

void dump_summary_totals(dump_summary *c, gs_out *o, int json)
{
    totals *t = &c->tot;
    if (json) {
        gs_jw jw, *w = &jw;
        gs_jw_init(w, o);
        gs_jw_obj(w);
        gs_jw_kstr(w, "kind", "total");
        gs_jw_ku64(w, "processes", t->procs);
        gs_jw_ku64(w, "damaged", t->damaged);
        gs_jw_ku64(w, "events", t->events);
        write_by_kind_json(w, t->by_kind);
        write_io_json(w, t->bytes_read, t->read_calls, t->bytes_read_file, t->paths.n, t->opened,
                      t->open_failed, t->io_ns, t->wait_ns, t->dropped, t->lost);
        gs_jw_ku64(w, "threads", t->threads);
        gs_jw_ku64(w, "major_faults", t->faults);
        gs_jw_end(w);
        gs_out_char(o, '\n');
        return;
    }
    gs_out_printf(o, "total  %llu processes", (unsigned long long)t->procs);
    if (t->damaged)
        gs_out_printf(o, " (%llu damaged)", (unsigned long long)t->damaged);
    gs_out_str(o, "\n  events      ");
    gs_out_u64(o, t->events);
    write_by_kind_text(o, t->by_kind);
    gs_out_str(o, "\n  read        ");
    write_io_lines(o, t->bytes_read, t->read_calls, t->bytes_read_file, t->paths.n, t->opened,
                   t->open_failed, t->io_ns, t->wait_ns, t->dropped, t->lost);
    gs_out_printf(o, "  threads     %llu\n", (unsigned long long)t->threads);
    gs_out_printf(o, "  faults      %llu major\n", (unsigned long long)t->faults);
}

/* ---- the parts dump.h names ---- */

dump_summary *dump_summary_new(const uint64_t *pids, size_t npids)
{
    dump_summary *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->pids = pids;
    s->npids = npids;
    return s;
}

void dump_summary_free(dump_summary *s)
{
    if (!s)
        return;
    free(s->ps.paths.keys);
    free(s->ps.tids.keys);
    free(s->ps.faults);
    free(s->ps.names);
    an_index_free(&s->ps.faults_ix);
    an_index_free(&s->ps.names_ix);
    strset_free(&s->tot.paths);
    free(s);
}

void dump_summary_begin(dump_summary *s)
{
    stats_reset(&s->ps);
}

void dump_summary_event(dump_summary *s, const gs_event *ev)
{
    stats_add(&s->ps, ev);
}

void dump_summary_end(dump_summary *s, gs_out *o, int json, const char *path,
                      const gs_proc_info *pi, const gs_reader *r)
{
    write_summary(s, o, json, path, pi, r);
    totals_add(s, r);
}

void dump_summary_damaged(dump_summary *s)
{
    s->tot.damaged++;
}
