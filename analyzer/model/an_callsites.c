/* an_callsites.c — the call sites behind each finding. See an_callsites.h.
 *
 * Must never: allocate per event (accumulators are arrays indexed by stack
 * id, grown when a larger id appears), or symbolise sites that are not
 * shown.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "model/an_callsites.h"
#include "base/an_index.h"
#include "load/an_run.h" /* AN_HOOK_EVENTS_* */
#include "load/an_symbols.h"

typedef struct acc {
    double ns, calls, bytes;
    uint64_t samples;
} acc;

/* A module of the whole run: a mapped file (path + build id), or a name
 * from a perf map (perf = 1: path holds the function name), or the
 * pseudo-modules "[anon]" and NULL (no mapping). */
typedef struct gmod {
    char *path; /* NULL: no mapping */
    char *build_id;
    int perf;
    int anon;
} gmod;

typedef struct pmap {
    uint64_t start, end, off;
    uint32_t mod;
} pmap;

typedef struct perf_ent {
    uint64_t start, size;
    uint32_t mod;
} perf_ent;

typedef struct kframe {
    uint32_t mod;
    uint64_t off;  /* file offset of addr - 1 (module), or name-relative (perf) */
    uint64_t addr; /* as recorded, first process seen */
} kframe;

/* What one stack of a process adds to the sites: kept by a shard (one
 * file read on another thread) until an_cs_merge adds it in file order. */
typedef struct contrib {
    uint32_t n;
    kframe *f;
    acc a[AN_CS_NFIND];
} contrib;

typedef struct gsite {
    uint32_t n, hash;
    kframe *f;
    acc a;
    uint32_t nprocs, last_proc;
} gsite;

struct an_cs {
    an_cs_opts o;
    gmod *mods;
    size_t nmods, capmods;
    /* the process being read */
    pmap *maps;
    size_t nmaps, capmaps;
    perf_ent *perf;
    size_t nperf, capperf;
    /* per stack id of the current process image: accs[k][i] for the id
     * acc_ids[i]; ids map to i through acc_ix (never a table sized by an id) */
    acc *accs[AN_CS_NFIND];
    uint32_t *acc_ids;
    uint32_t acc_n, acc_cap;
    an_index acc_ix;
    an_index mod_ix; /* mod_key -> index in mods */
    uint32_t proc_seq;
    int proc_python; /* minor version of the process's Python 3, 0 = none */
    /* the run */
    int has_stacks;
    int py_minor;         /* smallest Python 3 minor seen, 0 = none */
    int py_without_perf;  /* a Python process had no perf map */
    int py_with_perf;
    gsite *sites[AN_CS_NFIND];
    size_t nsites[AN_CS_NFIND], capsites[AN_CS_NFIND];
    an_cs_find find[AN_CS_NFIND];
    char note[256];
    /* a shard (an_cs_shard): proc_end keeps the process's stacks here */
    int shard;
    contrib *contribs;
    size_t ncontribs, capcontribs;
};

static const char *const k_names[AN_CS_NFIND] = {"small_reads", "metadata", "pageable_copy",
                                                 "mmap"};
static const char *const k_titles[AN_CS_NFIND] = {
    "small reads (< 64 KiB from files)", "metadata (stat, open)",
    "pageable host copies (cudaMemcpy* from/to pageable memory)",
    "file mmaps (reads through them are page faults; by bytes mapped)"};

const char *an_cs_finding_name(int k)
{
    return k >= 0 && k < AN_CS_NFIND ? k_names[k] : "?";
}

const char *an_cs_finding_title(int k)
{
    return k >= 0 && k < AN_CS_NFIND ? k_titles[k] : "?";
}

an_cs *an_cs_new(const an_cs_opts *opts)
{
    an_cs *cs = calloc(1, sizeof *cs);
    if (!cs)
        return NULL;
    if (opts)
        cs->o = *opts;
    if (!cs->o.top)
        cs->o.top = 5;
    return cs;
}

void an_cs_free(an_cs *cs)
{
    if (!cs)
        return;
    for (size_t i = 0; i < cs->nmods; i++) {
        free(cs->mods[i].path);
        free(cs->mods[i].build_id);
    }
    free(cs->mods);
    free(cs->maps);
    free(cs->perf);
    free(cs->acc_ids);
    for (size_t i = 0; i < cs->ncontribs; i++)
        free(cs->contribs[i].f);
    free(cs->contribs);
    an_index_free(&cs->acc_ix);
    an_index_free(&cs->mod_ix);
    for (int k = 0; k < AN_CS_NFIND; k++) {
        free(cs->accs[k]);
        for (size_t i = 0; i < cs->nsites[k]; i++)
            free(cs->sites[k][i].f);
        free(cs->sites[k]);
        for (size_t i = 0; i < cs->find[k].nsites; i++)
            free(cs->find[k].sites[i].frames);
        free(cs->find[k].sites);
    }
    free(cs);
}

/* ---- modules ---------------------------------------------------------------- */

static int str_eq(const char *a, const char *b)
{
    if (!a || !b)
        return a == b;
    return strcmp(a, b) == 0;
}

static uint64_t mod_key(const char *path, const char *bid, int perf, int anon)
{
    uint64_t h = 1469598103934665603ull ^ (uint64_t)(perf * 2 + anon);
    for (const char *p = path ? path : "\x01"; *p; p++)
        h = (h ^ (uint8_t)*p) * 1099511628211ull;
    h = (h ^ 0xff) * 1099511628211ull;
    for (const char *p = bid; *p; p++)
        h = (h ^ (uint8_t)*p) * 1099511628211ull;
    return h;
}

static int mod_is(const gmod *m, const char *path, const char *bid, int perf, int anon)
{
    return m->perf == perf && m->anon == anon && str_eq(m->path, path) &&
           strcmp(m->build_id, bid) == 0;
}

/* RATIONALE: a Python perf map names a module per function (tens of
 * thousands): found by hash, not by a search through them all. */
static uint32_t mod_get(an_cs *cs, const char *path, const char *bid, int perf, int anon)
{
    bid = bid ? bid : "";
    const uint64_t key = mod_key(path, bid, perf, anon);
    const long had = an_index_get(&cs->mod_ix, key);
    if (had >= 0 && mod_is(&cs->mods[had], path, bid, perf, anon))
        return (uint32_t)had;
    if (had >= 0) /* two modules with one hash: the slow way */
        for (size_t i = cs->nmods; i-- > 0;)
            if (mod_is(&cs->mods[i], path, bid, perf, anon))
                return (uint32_t)i;
    if (cs->nmods == cs->capmods) {
        size_t nc = cs->capmods ? 2 * cs->capmods : 64;
        gmod *n = realloc(cs->mods, nc * sizeof *n);
        if (!n)
            return 0;
        cs->mods = n;
        cs->capmods = nc;
    }
    gmod *m = &cs->mods[cs->nmods];
    m->path = path ? strdup(path) : NULL;
    m->build_id = strdup(bid);
    m->perf = perf;
    m->anon = anon;
    if (had < 0)
        an_index_put(&cs->mod_ix, key, (uint32_t)cs->nmods);
    return (uint32_t)cs->nmods++;
}

/* 3.X from ".../python3.X" or ".../libpython3.X.so..."; 0 when not Python. */
static int python_minor(const char *path)
{
    const char *b = strrchr(path, '/');
    b = b ? b + 1 : path;
    if (strncmp(b, "lib", 3) == 0)
        b += 3;
    if (strncmp(b, "python3.", 8) != 0)
        return 0;
    int v = atoi(b + 8);
    return v > 0 ? v : 0;
}

/* ---- per process --------------------------------------------------------------- */

static int cmp_perf(const void *a, const void *b)
{
    const perf_ent *x = a, *y = b;
    return x->start < y->start ? -1 : x->start > y->start;
}

static void perf_load(an_cs *cs, const char *path)
{
    /* RATIONALE: /tmp/perf-PID.map is in everyone's directory: only a
     * regular file of the user's, reached without a symlink, and opened so
     * that a FIFO put there cannot hang the report */
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    struct stat st;
    if (fd < 0)
        return;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid()) {
        close(fd);
        return;
    }
    FILE *f = fdopen(fd, "r");
    if (!f) {
        close(fd);
        return;
    }
    char line[4096];
    while (fgets(line, sizeof line, f)) {
        char *p = line, *e;
        unsigned long long start = strtoull(p, &e, 16);
        if (e == p)
            continue;
        p = e;
        unsigned long long size = strtoull(p, &e, 16);
        if (e == p || *e != ' ')
            continue;
        char *name = e + 1;
        name[strcspn(name, "\n")] = 0;
        if (cs->nperf == cs->capperf) {
            size_t nc = cs->capperf ? 2 * cs->capperf : 1024;
            perf_ent *n = realloc(cs->perf, nc * sizeof *n);
            if (!n)
                break;
            cs->perf = n;
            cs->capperf = nc;
        }
        cs->perf[cs->nperf++] = (perf_ent){start, size, mod_get(cs, name, "", 1, 0)};
    }
    fclose(f);
    qsort(cs->perf, cs->nperf, sizeof *cs->perf, cmp_perf);
}

void an_cs_proc_begin(an_cs *cs, const char *trace_path, const gs_proc_info *pi)
{
    cs->nmaps = 0;
    cs->nperf = 0;
    cs->proc_seq++;
    cs->proc_python = 0;
    if (cs->accs[0])
        for (int k = 0; k < AN_CS_NFIND; k++)
            memset(cs->accs[k], 0, cs->acc_cap * sizeof(acc));
    cs->acc_n = 0; /* stack ids are per process image */
    an_index_free(&cs->acc_ix);
    /* Python's perf map: copied beside the trace at exit, or still in /tmp
     * when the analysis runs on the traced host after the process began */
    char p[4200];
    size_t n = trace_path ? strlen(trace_path) : 0;
    const size_t ns = sizeof GS_TRACE_SUFFIX - 1;
    if (n > ns && n + sizeof GS_PERFMAP_SUFFIX < sizeof p &&
        strcmp(trace_path + n - ns, GS_TRACE_SUFFIX) == 0) {
        memcpy(p, trace_path, n - ns);
        memcpy(p + n - ns, GS_PERFMAP_SUFFIX, sizeof GS_PERFMAP_SUFFIX);
        perf_load(cs, p);
    }
    if (cs->nperf == 0 && !cs->o.no_tmp_perfmap && pi) {
        char host[256] = "";
        gethostname(host, sizeof host - 1);
        struct stat st;
        snprintf(p, sizeof p, "/tmp/perf-%llu.map", (unsigned long long)pi->pid);
        if (pi->host && strcmp(host, pi->host) == 0 && stat(p, &st) == 0 &&
            (uint64_t)st.st_mtime * 1000000000ull >= pi->real_ns)
            perf_load(cs, p);
    }
}

/* The finding of an event, -1 for none; *bytes its bytes metric (a read:
 * the bytes it got; a copy: copied; a mapping: mapped), *asked the bytes a
 * read asked for (the same as *bytes for the others). */
static int classify(const gs_event *ev, uint64_t *bytes, uint64_t *asked)
{
    *bytes = *asked = 0;
    if (gs_kind_is_read(ev->kind)) {
        if (ev->fd_kind != GS_FDK_FILE || ev->bytes >= AN_CS_SMALL_READ_MAX)
            return -1;
        *bytes = gs_read_bytes(ev);
        *asked = ev->bytes;
        return AN_CS_SMALL_READS;
    }
    if (gs_kind_is_metadata(ev->kind))
        return AN_CS_METADATA;
    if (ev->kind == GS_K_CUDA_MEMCPY) {
        if (gs_copy_host_mem(ev) != GS_MEM_PAGEABLE)
            return -1;
        *bytes = *asked = ev->bytes;
        return AN_CS_PAGEABLE_COPY;
    }
    if (ev->kind == GS_K_MMAP || ev->kind == GS_K_MMAP64) { /* munmap maps nothing */
        if (ev->ret == -1)
            return -1;
        *bytes = *asked = ev->bytes;
        return AN_CS_MMAP;
    }
    return -1;
}

const unsigned char *an_cs_kinds(uint64_t *small_bytes)
{
    static unsigned char k[GS_K_MAX];
    *small_bytes = AN_CS_SMALL_READ_MAX;
    if (!k[GS_K_MAPPING]) {
        for (unsigned i = 0; i < GS_K_MAX; i++)
            k[i] = gs_kind_is_read(i)       ? AN_HOOK_EVENTS_SMALL_FILE
                   : gs_kind_is_metadata(i) ? AN_HOOK_EVENTS_ALL
                                            : 0;
        k[GS_K_CUDA_MEMCPY] = k[GS_K_MMAP] = k[GS_K_MMAP64] = AN_HOOK_EVENTS_ALL;
        k[GS_K_MAPPING] = AN_HOOK_EVENTS_ALL;
    }
    return k;
}

static void add_mapping(an_cs *cs, const gs_reader *r, const gs_event *ev)
{
    const char *path = ev->str ? gs_reader_string(r, ev->str) : NULL;
    const char *bid = ev->aux2 ? gs_reader_string(r, (uint32_t)ev->aux2) : NULL;
    int anon = !path || !path[0];
    if (path && path[0]) {
        int v = python_minor(path);
        if (v)
            cs->proc_python = v;
    }
    if (cs->nmaps == cs->capmaps) {
        size_t nc = cs->capmaps ? 2 * cs->capmaps : 256;
        pmap *n = realloc(cs->maps, nc * sizeof *n);
        if (!n)
            return;
        cs->maps = n;
        cs->capmaps = nc;
    }
    uint64_t off = ev->offset < 0 ? 0 : (uint64_t)ev->offset;
    cs->maps[cs->nmaps++] = (pmap){ev->aux, ev->aux + ev->bytes, off,
                                   mod_get(cs, anon ? "[anon]" : path, bid, 0, anon)};
}

/* The accumulator index of stack id (made when new); -1 out of memory. */
static long acc_of(an_cs *cs, uint32_t id)
{
    const long had = an_index_get(&cs->acc_ix, id);
    if (had >= 0)
        return had;
    if (cs->acc_n == cs->acc_cap) {
        const uint32_t cap = cs->acc_cap ? cs->acc_cap * 2 : 1024;
        uint32_t *ids = realloc(cs->acc_ids, cap * sizeof *ids);
        if (!ids)
            return -1;
        cs->acc_ids = ids;
        for (int k = 0; k < AN_CS_NFIND; k++) {
            acc *n = realloc(cs->accs[k], cap * sizeof *n);
            if (!n)
                return -1;
            memset(n + cs->acc_cap, 0, (cap - cs->acc_cap) * sizeof *n);
            cs->accs[k] = n;
        }
        cs->acc_cap = cap;
    }
    if (an_index_put(&cs->acc_ix, id, cs->acc_n) != 0)
        return -1;
    cs->acc_ids[cs->acc_n] = id;
    return cs->acc_n++;
}

void an_cs_event(an_cs *cs, const gs_reader *r, const gs_event *ev)
{
    if (ev->kind == GS_K_MAPPING) {
        add_mapping(cs, r, ev);
        return;
    }
    uint64_t bytes, asked;
    int k = classify(ev, &bytes, &asked);
    if (k < 0)
        return;
    an_cs_find *f = &cs->find[k];
    f->calls++;
    f->time_ns += ev->dur;
    f->bytes += bytes;
    f->requested += asked;
    if (!ev->stack)
        return;
    cs->has_stacks = 1;
    f->stacked++;
    const long ai = acc_of(cs, ev->stack);
    if (ai < 0)
        return;
    acc *a = &cs->accs[k][ai];
    const double w = ev->stack_weight ? ev->stack_weight : 1;
    a->ns += w * (double)ev->dur;
    a->calls += w;
    a->bytes += w * (double)bytes;
    a->samples++;
}

static uint32_t key_hash(const kframe *f, uint32_t n)
{
    uint64_t h = 1469598103934665603ull ^ n;
    for (uint32_t i = 0; i < n; i++)
        h = ((h ^ f[i].mod) * 1099511628211ull ^ f[i].off) * 1099511628211ull;
    return (uint32_t)(h ^ (h >> 32));
}

/* The site of this key in finding k (created when new). */
static gsite *site_get(an_cs *cs, int k, const kframe *f, uint32_t n)
{
    uint32_t h = key_hash(f, n);
    for (size_t i = 0; i < cs->nsites[k]; i++) {
        gsite *s = &cs->sites[k][i];
        if (s->hash != h || s->n != n)
            continue;
        uint32_t j = 0;
        while (j < n && s->f[j].mod == f[j].mod && s->f[j].off == f[j].off)
            j++;
        if (j == n)
            return s;
    }
    if (cs->nsites[k] == cs->capsites[k]) {
        size_t nc = cs->capsites[k] ? 2 * cs->capsites[k] : 64;
        gsite *ns = realloc(cs->sites[k], nc * sizeof *ns);
        if (!ns)
            return NULL;
        cs->sites[k] = ns;
        cs->capsites[k] = nc;
    }
    gsite *s = &cs->sites[k][cs->nsites[k]];
    memset(s, 0, sizeof *s);
    s->f = malloc(n * sizeof *f);
    if (!s->f)
        return NULL;
    memcpy(s->f, f, n * sizeof *f);
    s->n = n;
    s->hash = h;
    cs->nsites[k]++;
    return s;
}

static kframe key_frame(an_cs *cs, uint64_t addr)
{
    const uint64_t a = addr ? addr - 1 : 0; /* inside the call instruction */
    kframe kf = {0, a, addr};
    for (size_t i = cs->nmaps; i-- > 0;) {
        const pmap *m = &cs->maps[i];
        if (a < m->start || a >= m->end)
            continue;
        if (!cs->mods[m->mod].anon) {
            kf.mod = m->mod;
            kf.off = a - m->start + m->off;
            return kf;
        }
        break; /* anonymous: a perf map may name it */
    }
    if (cs->nperf) {
        size_t lo = 0, hi = cs->nperf;
        while (lo < hi) {
            size_t mid = (lo + hi) / 2;
            if (cs->perf[mid].start <= a)
                lo = mid + 1;
            else
                hi = mid;
        }
        if (lo > 0 && a < cs->perf[lo - 1].start + cs->perf[lo - 1].size) {
            kf.mod = cs->perf[lo - 1].mod;
            kf.off = a - cs->perf[lo - 1].start;
            return kf;
        }
    }
    for (size_t i = cs->nmaps; i-- > 0;)
        if (a >= cs->maps[i].start && a < cs->maps[i].end) {
            kf.mod = cs->maps[i].mod; /* [anon] */
            kf.off = a - cs->maps[i].start;
            return kf;
        }
    kf.mod = mod_get(cs, NULL, "", 0, 0);
    kf.off = a;
    return kf;
}

/* A shard keeps stack ai's frames and accumulators for an_cs_merge. */
static void keep_contrib(an_cs *cs, const kframe *kf, uint32_t n, uint32_t ai)
{
    if (cs->ncontribs == cs->capcontribs) {
        size_t nc = cs->capcontribs ? 2 * cs->capcontribs : 64;
        contrib *c = realloc(cs->contribs, nc * sizeof *c);
        if (!c)
            return;
        cs->contribs = c;
        cs->capcontribs = nc;
    }
    contrib *c = &cs->contribs[cs->ncontribs];
    c->f = malloc(n * sizeof *kf);
    if (!c->f)
        return;
    memcpy(c->f, kf, n * sizeof *kf);
    c->n = n;
    for (int k = 0; k < AN_CS_NFIND; k++)
        c->a[k] = cs->accs[k][ai];
    cs->ncontribs++;
}

/* The sites of one process: each stack's accumulators added to the site of
 * its frames (cs->proc_seq names the process). */
static void add_stack(an_cs *cs, const kframe *kf, uint32_t n, const acc *const *a)
{
    for (int k = 0; k < AN_CS_NFIND; k++) {
        if (!a[k]->samples)
            continue;
        gsite *s = site_get(cs, k, kf, n);
        if (!s)
            continue;
        s->a.ns += a[k]->ns;
        s->a.calls += a[k]->calls;
        s->a.bytes += a[k]->bytes;
        s->a.samples += a[k]->samples;
        if (s->last_proc != cs->proc_seq) {
            s->last_proc = cs->proc_seq;
            s->nprocs++;
        }
    }
}

an_cs *an_cs_shard(const an_cs *cs)
{
    an_cs *sh = an_cs_new(&cs->o);
    if (sh)
        sh->shard = 1;
    return sh;
}

void an_cs_merge(an_cs *cs, an_cs *sh)
{
    /* its modules, in the order it met them: new ones are appended to cs's
     * in the order one pass over the files meets them */
    uint32_t *map = sh->nmods ? malloc(sh->nmods * sizeof *map) : NULL;
    if (sh->nmods && !map)
        return;
    for (size_t i = 0; i < sh->nmods; i++) {
        const gmod *m = &sh->mods[i];
        map[i] = mod_get(cs, m->path, m->build_id, m->perf, m->anon);
    }
    cs->proc_seq++;
    if (sh->py_minor && (!cs->py_minor || sh->py_minor < cs->py_minor))
        cs->py_minor = sh->py_minor;
    cs->py_with_perf |= sh->py_with_perf;
    cs->py_without_perf |= sh->py_without_perf;
    cs->has_stacks |= sh->has_stacks;
    for (int k = 0; k < AN_CS_NFIND; k++) {
        an_cs_find *f = &cs->find[k];
        const an_cs_find *g = &sh->find[k];
        f->calls += g->calls;
        f->time_ns += g->time_ns;
        f->bytes += g->bytes;
        f->requested += g->requested;
        f->stacked += g->stacked;
    }
    for (size_t i = 0; i < sh->ncontribs; i++) {
        contrib *c = &sh->contribs[i];
        for (uint32_t j = 0; j < c->n; j++)
            c->f[j].mod = map[c->f[j].mod];
        const acc *a[AN_CS_NFIND];
        for (int k = 0; k < AN_CS_NFIND; k++)
            a[k] = &c->a[k];
        add_stack(cs, c->f, c->n, a);
    }
    free(map);
}

void an_cs_proc_end(an_cs *cs, const gs_reader *r)
{
    if (cs->proc_python) {
        if (!cs->py_minor || cs->proc_python < cs->py_minor)
            cs->py_minor = cs->proc_python;
        if (cs->nperf)
            cs->py_with_perf = 1;
        else
            cs->py_without_perf = 1;
    }
    kframe kf[GS_STACK_FRAMES_MAX];
    for (uint32_t ai = 0; ai < cs->acc_n; ai++) {
        const uint32_t id = cs->acc_ids[ai];
        int any = 0;
        for (int k = 0; k < AN_CS_NFIND; k++)
            any |= cs->accs[k][ai].samples != 0;
        if (!any)
            continue;
        size_t n = 0;
        const uint64_t *fr = gs_reader_stack(r, id, &n);
        if (!fr || n == 0)
            continue;
        for (size_t i = 0; i < n; i++)
            kf[i] = key_frame(cs, fr[i]);
        if (cs->shard) {
            keep_contrib(cs, kf, (uint32_t)n, ai);
            continue;
        }
        const acc *a[AN_CS_NFIND];
        for (int k = 0; k < AN_CS_NFIND; k++)
            a[k] = &cs->accs[k][ai];
        add_stack(cs, kf, (uint32_t)n, a);
    }
    if (cs->shard) {
        /* what the merge does not need: the process's maps, perf map and
         * per-stack accumulators (a shard may wait for earlier files) */
        free(cs->maps);
        free(cs->perf);
        free(cs->acc_ids);
        cs->maps = NULL;
        cs->perf = NULL;
        cs->acc_ids = NULL;
        cs->nmaps = cs->capmaps = cs->nperf = cs->capperf = 0;
        for (int k = 0; k < AN_CS_NFIND; k++) {
            free(cs->accs[k]);
            cs->accs[k] = NULL;
        }
        cs->acc_n = cs->acc_cap = 0;
        an_index_free(&cs->acc_ix);
    }
}

/* ---- finish: top sites, symbolised ----------------------------------------------- */

static int g_sort_k; /* qsort has no context argument */

static double metric(const acc *a, int k)
{
    return k == AN_CS_MMAP ? a->bytes : a->ns;
}

static int cmp_site(const void *x, const void *y)
{
    double a = metric(&((const gsite *)x)->a, g_sort_k);
    double b = metric(&((const gsite *)y)->a, g_sort_k);
    return a > b ? -1 : a < b;
}

void an_cs_finish(an_cs *cs)
{
    size_t nreq = 0;
    for (int k = 0; k < AN_CS_NFIND; k++) {
        g_sort_k = k;
        if (cs->nsites[k] > 1)
            qsort(cs->sites[k], cs->nsites[k], sizeof(gsite), cmp_site);
        an_cs_find *f = &cs->find[k];
        f->nsites_all = cs->nsites[k];
        f->nsites = cs->nsites[k] < cs->o.top ? cs->nsites[k] : cs->o.top;
        f->sites = calloc(f->nsites ? f->nsites : 1, sizeof *f->sites);
        if (!f->sites) {
            f->nsites = 0;
            continue;
        }
        const double total = k == AN_CS_MMAP ? (double)f->bytes : (double)f->time_ns;
        for (size_t i = 0; i < f->nsites; i++) {
            const gsite *g = &cs->sites[k][i];
            an_cs_site *s = &f->sites[i];
            s->est_ns = g->a.ns;
            s->est_calls = g->a.calls;
            s->est_bytes = g->a.bytes;
            s->samples = g->a.samples;
            s->nprocs = g->nprocs;
            double m = metric(&g->a, k);
            s->share = total > 0 ? m / total : 0;
            if (s->share > 1)
                s->share = 1; /* sampling error on a site that is nearly all of it */
            s->frames = calloc(g->n, sizeof *s->frames);
            if (!s->frames)
                continue;
            s->nframes = g->n;
            nreq += g->n;
        }
    }
    /* symbolise the shown frames: one batch (an_symbols groups by module) */
    an_sym_req *req = nreq ? calloc(nreq, sizeof *req) : NULL;
    an_symtab *st = nreq ? an_sym_new(cs->o.symbol_paths, cs->o.nsymbol_paths, !cs->o.no_lines)
                         : NULL;
    size_t q = 0;
    for (int k = 0; req && k < AN_CS_NFIND; k++) {
        for (size_t i = 0; i < cs->find[k].nsites; i++) {
            an_cs_site *s = &cs->find[k].sites[i];
            const gsite *g = &cs->sites[k][i];
            for (uint32_t j = 0; j < s->nframes; j++) {
                const gmod *m = &cs->mods[g->f[j].mod];
                an_cs_frame *fr = &s->frames[j];
                fr->addr = g->f[j].addr;
                fr->module = m->perf ? NULL : m->path;
                fr->build_id = m->build_id;
                fr->offset = g->f[j].off;
                if (m->perf) {
                    fr->status = AN_SYM_PERFMAP;
                    snprintf(fr->func, sizeof fr->func, "%s", m->path);
                    fr->func_off = g->f[j].off;
                    fr->module = "[perf map]";
                } else if (!m->path) {
                    fr->status = AN_SYM_NOMAP;
                } else if (m->anon) {
                    fr->status = AN_SYM_NOFILE;
                } else {
                    req[q].path = m->path;
                    req[q].build_id = m->build_id;
                    req[q].file_off = g->f[j].off;
                    q++;
                }
            }
        }
    }
    if (req && st)
        an_sym_resolve(st, req, q);
    q = 0;
    for (int k = 0; req && k < AN_CS_NFIND; k++) {
        for (size_t i = 0; i < cs->find[k].nsites; i++) {
            an_cs_site *s = &cs->find[k].sites[i];
            const gsite *g = &cs->sites[k][i];
            for (uint32_t j = 0; j < s->nframes; j++) {
                const gmod *m = &cs->mods[g->f[j].mod];
                if (m->perf || !m->path || m->anon)
                    continue;
                an_cs_frame *fr = &s->frames[j];
                fr->status = st ? req[q].status : AN_SYM_NOFILE;
                memcpy(fr->func, req[q].func, sizeof fr->func);
                fr->func_off = req[q].func_off;
                memcpy(fr->file, req[q].file, sizeof fr->file);
                fr->line = req[q].line;
                q++;
            }
        }
    }
    free(req);
    an_sym_free(st);
    /* what the stacks say about Python */
    if (cs->py_minor && cs->py_minor < 12)
        snprintf(cs->note, sizeof cs->note,
                 "Python 3.%d: only native frames are available (Python function names need "
                 "Python 3.12+ traced with 'gpustarve run --python-frames')",
                 cs->py_minor);
    else if (cs->py_minor && cs->py_without_perf)
        snprintf(cs->note, sizeof cs->note,
                 "Python 3.%d without a perf map: only native frames are available (trace with "
                 "'gpustarve run --python-frames' to name Python functions)",
                 cs->py_minor);
}

const an_cs_find *an_cs_get(const an_cs *cs, int k)
{
    return &cs->find[k];
}

int an_cs_has_stacks(const an_cs *cs)
{
    return cs->has_stacks;
}

const char *an_cs_python_note(const an_cs *cs)
{
    return cs->note[0] ? cs->note : NULL;
}

void an_cs_mapping(an_cs *cs, const gs_reader *r, const gs_event *ev)
{
    if (ev->kind == GS_K_MAPPING)
        add_mapping(cs, r, ev);
}

const an_cs_site *an_cs_event_site(an_cs *cs, const gs_reader *r, const gs_event *ev)
{
    uint64_t bytes, asked;
    const int k = ev->stack ? classify(ev, &bytes, &asked) : -1;
    size_t n = 0;
    const uint64_t *fr = k >= 0 ? gs_reader_stack(r, ev->stack, &n) : NULL;
    if (!fr || n == 0 || n > GS_STACK_FRAMES_MAX)
        return NULL;
    kframe kf[GS_STACK_FRAMES_MAX];
    for (size_t i = 0; i < n; i++)
        kf[i] = key_frame(cs, fr[i]);
    const uint32_t h = key_hash(kf, (uint32_t)n);
    const an_cs_find *f = &cs->find[k];
    for (size_t i = 0; i < f->nsites; i++) { /* the shown sites lead sites[k] */
        const gsite *g = &cs->sites[k][i];
        if (g->hash != h || g->n != n)
            continue;
        uint32_t j = 0;
        while (j < n && g->f[j].mod == kf[j].mod && g->f[j].off == kf[j].off)
            j++;
        if (j < n)
            continue;
        return &f->sites[i];
    }
    return NULL;
}
