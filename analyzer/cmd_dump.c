/* cmd_dump.c — `gpustarve dump`: print every event of a run directory or
 * trace file, one line each (aligned text or JSON Lines), or a per-process
 * summary of what the trace holds.
 *
 * Responsible for: turning decoded events back into the names the preload
 * meant (flags, mode, timeout, ...), reporting damaged files after printing
 * everything readable before the damage.
 *
 * Must never: allocate per event or per line (1M events dump in about a
 * second), stop at the first damaged file (the others are still printed),
 * or print diagnostics to stdout.
 */
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "an_callsites.h"
#include "cli_util.h"
#include "gs_trace.h"

static const char usage_text[] =
    "usage: gpustarve dump [--json] [--summary | --callsites [--symbol-path DIR]...\n"
    "                      [--top N] [--no-lines]] [-q|-v] DIR|FILE...\n"
    "\n"
    "Print the events of a trace. A DIR means every *.gst file in it, sorted\n"
    "by name; a FILE is one process's trace. Processes are printed one after\n"
    "another; within each written batch (frame) events are sorted by time.\n"
    "\n"
    "options:\n"
    "  --json       JSON Lines: a {\"kind\":\"process\",...} line per process,\n"
    "               then one object per event\n"
    "  --summary    per process: role, events by kind, bytes read, files\n"
    "               opened, time in I/O, drops, threads; then totals\n"
    "               (with --json: one summary object per process + a total)\n"
    "  --callsites  the call sites behind small reads, metadata calls, pageable\n"
    "               copies and file mmaps, from the sampled call stacks of a run\n"
    "               traced with 'gpustarve run --stacks', symbolised (with\n"
    "               --json: one object)\n"
    "  --symbol-path DIR  also look for binaries (by build id) under DIR\n"
    "               (repeatable); binaries are first looked for at their\n"
    "               recorded path, then in /usr/lib/debug/.build-id\n"
    "  --top N      call sites shown per finding (default 5)\n"
    "  --no-lines   no file:line (addr2line is not run)\n"
    "  -q, --quiet  fewer messages on stderr\n"
    "  -v, --verbose  more messages on stderr\n"
    "  -h, --help   show this help\n"
    "\n"
    "Text columns: time_ms (since the process's first event), pid, tid, kind,\n"
    "fd, fd kind, bytes (requested), ret, offset, dur_us, then the path and\n"
    "kind-specific fields. '-' marks a field the kind does not carry. Events\n"
    "sampled with a call stack show stack=ID (and stack_weight: the calls the\n"
    "sample stands for).\n"
    "NVTX push/pop and start/end records are printed paired, as one 'range'\n"
    "line each (at the closing record; ranges never closed at the end of their\n"
    "process, with no duration). GPU records (from CUPTI) have tid 0.\n"
    "\n"
    "Exit status: 0 ok; 2 bad usage, no trace files, or a damaged trace (what\n"
    "could be read is printed first, then the damage is reported on stderr).\n";

enum { MODE_TEXT, MODE_JSON };

/* ---- small sets ------------------------------------------------------------ */

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

/* ---- per-process state ------------------------------------------------------ */

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
} proc_stats;

typedef struct totals {
    uint64_t procs, events, damaged;
    uint64_t by_kind[GS_K_MAX];
    uint64_t bytes_read, bytes_read_file, read_calls, opened, open_failed;
    uint64_t io_ns, wait_ns, dropped, lost, threads, faults;
    strset paths;
} totals;

/* An NVTX range opened (push or start) and not yet closed. */
typedef struct open_range {
    uint32_t tid, str;
    uint64_t domain, id, ts;
} open_range;

typedef struct range_list {
    open_range *v;
    size_t n, cap;
} range_list;

typedef struct dump_ctx {
    int mode;
    int summary;
    an_cs *cs; /* --callsites */
    gs_out out;
    uint32_t *order; /* index array for sorting a frame, reused */
    uint64_t *keys;
    size_t order_cap;
    uint64_t *pids; /* traced pids, for the role guess (summary only) */
    size_t npids;
    proc_stats ps;
    totals tot;
    range_list pushes; /* per process: open push ranges, any thread/domain */
    range_list starts; /* per process: open start ranges */
} dump_ctx;

static void stats_reset(proc_stats *ps)
{
    u32set paths = ps->paths, tids = ps->tids;
    void *faults = ps->faults;
    size_t cf = ps->cap_faults;
    tname *names = ps->names;
    size_t cn = ps->cap_names;
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
        for (i = 0; i < ps->nfaults; i++)
            if (ps->faults[i].tid == (uint32_t)ev->aux)
                break;
        if (i == ps->nfaults) {
            if (ps->nfaults == ps->cap_faults) {
                size_t nc = ps->cap_faults ? ps->cap_faults * 2 : 16;
                void *p = realloc(ps->faults, nc * sizeof *ps->faults);
                if (!p)
                    break;
                ps->faults = p;
                ps->cap_faults = nc;
            }
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
        for (i = 0; i < ps->nnames; i++)
            if (ps->names[i].tid == (uint32_t)ev->aux)
                break;
        if (i == ps->nnames) {
            if (ps->nnames == ps->cap_names) {
                size_t nc = ps->cap_names ? ps->cap_names * 2 : 16;
                void *p = realloc(ps->names, nc * sizeof *ps->names);
                if (!p)
                    break;
                ps->names = p;
                ps->cap_names = nc;
            }
            ps->nnames++;
        }
        ps->names[i].tid = (uint32_t)ev->aux;
        ps->names[i].name = ev->str;
        break;
    }
    }
}

/* ---- event output ------------------------------------------------------------ */

/* Extra fields: ,"key":value in JSON, " key=value" in text. */
typedef struct xw {
    gs_out *o;
    int json;
} xw;

static void x_key(xw *w, const char *key)
{
    if (w->json) {
        gs_out_mem(w->o, ",\"", 2);
        gs_out_str(w->o, key);
        gs_out_mem(w->o, "\":", 2);
    } else {
        gs_out_char(w->o, ' ');
        gs_out_str(w->o, key);
        gs_out_char(w->o, '=');
    }
}

static void x_u64(xw *w, const char *key, uint64_t v)
{
    x_key(w, key);
    gs_out_u64(w->o, v);
}

static void x_hex(xw *w, const char *key, uint64_t v) /* hex in text only */
{
    x_key(w, key);
    if (w->json)
        gs_out_u64(w->o, v);
    else
        gs_out_hex(w->o, v);
}

static void x_str(xw *w, const char *key, const char *s)
{
    x_key(w, key);
    if (w->json)
        gs_json_cstr(w->o, s);
    else if (s)
        gs_text_str(w->o, s, strlen(s));
    else
        gs_out_char(w->o, '?');
}

static void x_lit(xw *w, const char *key, const char *json_lit, const char *text)
{
    x_key(w, key);
    gs_out_str(w->o, w->json ? json_lit : text);
}

/* A name, or null (JSON) / '-' (text) for NULL. */
static void x_name(xw *w, const char *key, const char *name)
{
    x_key(w, key);
    if (w->json)
        gs_json_cstr(w->o, name);
    else
        gs_out_str(w->o, name ? name : "-");
}

/* A string that may be absent: null (JSON) / '-' (text), escaped in text. */
static void x_opt_str(xw *w, const char *key, const char *s)
{
    x_key(w, key);
    if (w->json)
        gs_json_cstr(w->o, s);
    else if (s)
        gs_text_str(w->o, s, strlen(s));
    else
        gs_out_char(w->o, '-');
}

/* The NVTX domain: its name, null for the default domain. */
static void x_domain(xw *w, const gs_reader *r, uint64_t id)
{
    const char *d = id ? gs_reader_string(r, (uint32_t)id) : NULL;
    x_key(w, "domain");
    if (w->json)
        gs_json_cstr(w->o, d);
    else if (d)
        gs_text_str(w->o, d, strlen(d));
    else
        gs_out_char(w->o, '-');
}

/* device, stream, correlation. GPU records carry CUPTI's stream id; host
 * records the cudaStream_t handle (hex in text). */
static void write_gpu_where(xw *w, const gs_event *ev, int gpu)
{
    x_u64(w, "device", ev->dev);
    if (gpu)
        x_u64(w, "stream", ev->stream);
    else
        x_hex(w, "stream", ev->stream);
    x_u64(w, "correlation", ev->corr);
}

/* The kind-specific meaning of aux/aux2 (the preload's contract). */
static void write_extras(xw *w, const gs_reader *r, const gs_event *ev)
{
    switch (ev->kind) {
    case GS_K_OPEN: case GS_K_OPEN64: case GS_K_CREAT: case GS_K_DUP3:
    case GS_K_FSTATAT: case GS_K_FSTATAT64: case GS_K_FXSTATAT: case GS_K_FXSTATAT64:
        x_hex(w, "flags", ev->aux);
        break;
    case GS_K_OPENAT: case GS_K_OPENAT64:
        x_hex(w, "flags", ev->aux);
        x_key(w, "mode");
        if (w->json) {
            gs_out_u64(w->o, ev->aux2);
        } else {
            gs_out_printf(w->o, "0%llo", (unsigned long long)ev->aux2);
        }
        break;
    case GS_K_STATX:
        x_hex(w, "flags", ev->aux);
        x_hex(w, "mask", ev->aux2);
        break;
    case GS_K_READV: case GS_K_PREADV: case GS_K_PREADV64:
        x_u64(w, "iovcnt", ev->aux);
        break;
    case GS_K_PREADV2: case GS_K_PREADV64V2:
        x_u64(w, "iovcnt", ev->aux);
        x_hex(w, "flags", ev->aux2);
        break;
    case GS_K_FOPEN: case GS_K_FOPEN64: {
        char mode[9];
        const size_t n = gs_fopen_mode(ev, mode);
        x_key(w, "mode");
        if (w->json)
            gs_json_str(w->o, mode, n);
        else
            gs_text_str(w->o, mode, n);
        break;
    }
    case GS_K_FREAD: case GS_K_FREAD_UNLOCKED:
        x_u64(w, "size", ev->aux);
        break;
    case GS_K_MMAP: case GS_K_MMAP64:
        x_hex(w, "prot", ev->aux);
        x_hex(w, "flags", ev->aux2);
        break;
    case GS_K_MUNMAP:
        x_hex(w, "addr", ev->aux);
        break;
    case GS_K_POLL: case GS_K_PPOLL: case GS_K_SELECT: case GS_K_PSELECT:
    case GS_K_EPOLL_WAIT: case GS_K_EPOLL_PWAIT:
        if (gs_wait_timeout_ms(ev) < 0)
            x_lit(w, "timeout_ms", "null", "forever");
        else
            x_u64(w, "timeout_ms", (uint64_t)gs_wait_timeout_ms(ev));
        break;
    case GS_K_THREAD:
        x_u64(w, "target_tid", ev->aux);
        x_str(w, "name", ev->str ? gs_reader_string(r, ev->str) : NULL);
        break;
    case GS_K_FAULTS:
        x_u64(w, "target_tid", ev->aux);
        x_u64(w, "faults", ev->aux2);
        break;
    case GS_K_DROPS:
        x_u64(w, "dropped", ev->aux);
        x_u64(w, "lost", ev->aux2);
        break;
    case GS_K_NOTE:
        x_u64(w, "code", ev->aux);
        x_str(w, "text", ev->str ? gs_reader_string(r, ev->str) : NULL);
        break;
    case GS_K_EXEC:
        x_str(w, "path", ev->str ? gs_reader_string(r, ev->str) : NULL);
        break;
    case GS_K_EXIT: {
        const char *how = gs_exit_how_name(gs_exit_how_of(ev));
        x_u64(w, "status", gs_exit_status(ev));
        x_key(w, "how");
        if (!how)
            gs_out_u64(w->o, ev->aux2); /* a reason this build does not know */
        else if (w->json)
            gs_json_cstr(w->o, how);
        else
            gs_out_str(w->o, how);
        break;
    }
    case GS_K_GPU_KERNEL:
        x_str(w, "name", ev->str ? gs_reader_string(r, ev->str) : NULL);
        write_gpu_where(w, ev, 1);
        break;
    case GS_K_GPU_MEMCPY:
        x_name(w, "direction", gs_dir_name(gs_copy_dir(ev)));
        x_u64(w, "bytes", ev->bytes);
        x_name(w, "src_mem", gs_mem_name(gs_copy_src_mem(ev)));
        x_name(w, "dst_mem", gs_mem_name(gs_copy_dst_mem(ev)));
        write_gpu_where(w, ev, 1);
        break;
    case GS_K_GPU_MEMSET:
        x_u64(w, "bytes", ev->bytes);
        x_name(w, "mem", gs_mem_name(gs_memset_mem(ev)));
        write_gpu_where(w, ev, 1);
        break;
    case GS_K_GPU_SYNC:
        x_name(w, "sync", gs_gpu_sync_name(ev->aux));
        write_gpu_where(w, ev, 1);
        break;
    case GS_K_GPU_DEVICE:
        x_u64(w, "device", ev->dev);
        x_str(w, "name", ev->str ? gs_reader_string(r, ev->str) : NULL);
        x_u64(w, "bytes", ev->bytes);
        x_u64(w, "sms", ev->aux);
        x_key(w, "compute_capability");
        if (w->json)
            gs_out_printf(w->o, "\"%llu.%llu\"", (unsigned long long)(ev->aux2 / 10),
                          (unsigned long long)(ev->aux2 % 10));
        else
            gs_out_printf(w->o, "%llu.%llu", (unsigned long long)(ev->aux2 / 10),
                          (unsigned long long)(ev->aux2 % 10));
        break;
    case GS_K_GPU_DROPS:
        x_u64(w, "dropped", ev->aux);
        break;
    case GS_K_CUDA_MEMCPY:
        x_str(w, "api", ev->str ? gs_reader_string(r, ev->str) : NULL);
        x_name(w, "direction", gs_dir_name(gs_copy_dir(ev)));
        x_u64(w, "bytes", ev->bytes);
        x_name(w, "host_mem", gs_mem_name(gs_copy_host_mem(ev)));
        write_gpu_where(w, ev, 0);
        break;
    case GS_K_CUDA_SYNC:
        x_str(w, "api", ev->str ? gs_reader_string(r, ev->str) : NULL);
        write_gpu_where(w, ev, 0);
        x_hex(w, "event", ev->aux2);
        break;
    case GS_K_CUDA_HOST_MEM:
        x_str(w, "api", ev->str ? gs_reader_string(r, ev->str) : NULL);
        x_hex(w, "addr", ev->aux);
        x_u64(w, "bytes", ev->bytes);
        x_hex(w, "flags", ev->aux2);
        break;
    case GS_K_NVTX_MARK:
        x_str(w, "name", ev->str ? gs_reader_string(r, ev->str) : NULL);
        x_domain(w, r, ev->aux);
        break;
    case GS_K_MAPPING:
        x_opt_str(w, "path", ev->str ? gs_reader_string(r, ev->str) : NULL);
        x_hex(w, "start", ev->aux);
        x_hex(w, "end", ev->aux + ev->bytes);
        x_hex(w, "file_offset", (uint64_t)ev->offset);
        x_opt_str(w, "build_id", ev->aux2 ? gs_reader_string(r, (uint32_t)ev->aux2) : NULL);
        break;
    default: { /* a kind without a named meaning: show the raw fields */
        unsigned f = gs_kind_fields(ev->kind);
        if (f & GS_F_AUX)
            x_u64(w, "aux", ev->aux);
        if (f & GS_F_AUX2)
            x_u64(w, "aux2", ev->aux2);
        break;
    }
    }
    if (ev->stack) {
        x_u64(w, "stack", ev->stack);
        x_u64(w, "stack_weight", ev->stack_weight);
    }
}

static void write_event_json(gs_out *o, const gs_reader *r, uint64_t pid, const gs_event *ev)
{
    unsigned f = gs_kind_fields(ev->kind);
    const char *name = gs_kind_name(ev->kind);
    gs_out_mem(o, "{\"pid\":", 7);
    gs_out_u64(o, pid);
    gs_out_mem(o, ",\"tid\":", 7);
    gs_out_u64(o, ev->tid);
    gs_out_mem(o, ",\"kind\":", 8);
    if (name) {
        gs_json_cstr(o, name);
    } else {
        gs_out_u64(o, ev->kind); /* never from a reader that refuses unknown kinds */
    }
    gs_out_mem(o, ",\"ts_ns\":", 9);
    gs_out_u64(o, ev->ts);
    gs_out_mem(o, ",\"dur_ns\":", 10);
    gs_out_u64(o, ev->dur);
    if (f & GS_F_FD) {
        gs_out_mem(o, ",\"fd\":", 6);
        gs_out_i64(o, ev->fd);
        gs_out_mem(o, ",\"fd_kind\":", 11);
        gs_json_cstr(o, gs_fdkind_name(ev->fd_kind));
        gs_out_mem(o, ",\"path\":", 8);
        gs_json_cstr(o, ev->str ? gs_reader_string(r, ev->str) : NULL);
        gs_out_mem(o, ",\"bytes\":", 9);
        gs_out_u64(o, ev->bytes);
        gs_out_mem(o, ",\"ret\":", 7);
        gs_out_i64(o, ev->ret);
        if (f & GS_F_OFFSET) {
            gs_out_mem(o, ",\"offset\":", 10);
            gs_out_i64(o, ev->offset);
        }
    } else if (f & GS_F_RET) {
        gs_out_mem(o, ",\"ret\":", 7);
        gs_out_i64(o, ev->ret);
    }
    xw w = {o, 1};
    write_extras(&w, r, ev);
    gs_out_mem(o, "}\n", 2);
}

/* Column widths of the text mode; the header line uses the same. */
#define W_TIME 12
#define W_PID 8
#define W_TID 8
#define W_KIND -14
#define W_FD 5
#define W_FDK -7
#define W_BYTES 11
#define W_RET 14
#define W_OFF 12
#define W_DUR 12

static void col(gs_out *o, const char *s, size_t n, int width)
{
    gs_out_char(o, ' ');
    gs_out_pad(o, s, n, width);
}

static void col_dash(gs_out *o, int width)
{
    col(o, "-", 1, width);
}

static void write_text_header(gs_out *o)
{
    gs_out_char(o, '#');
    gs_out_pad(o, "time_ms", 7, W_TIME - 1);
    col(o, "pid", 3, W_PID);
    col(o, "tid", 3, W_TID);
    col(o, "kind", 4, W_KIND);
    col(o, "fd", 2, W_FD);
    col(o, "fdkind", 6, W_FDK);
    col(o, "bytes", 5, W_BYTES);
    col(o, "ret", 3, W_RET);
    col(o, "offset", 6, W_OFF);
    col(o, "dur_us", 6, W_DUR);
    gs_out_str(o, "  path/details\n");
}

static void write_event_text(gs_out *o, const gs_reader *r, uint64_t pid, uint64_t base,
                             const gs_event *ev)
{
    char b[48];
    size_t n;
    unsigned f = gs_kind_fields(ev->kind);
    int64_t rel = (int64_t)(ev->ts - base);
    int64_t us = rel >= 0 ? (rel + 500) / 1000 : -((-rel + 500) / 1000);
    n = gs_fmt_fixed(b, us, 3);
    gs_out_pad(o, b, n, W_TIME);
    n = gs_fmt_u64(b, pid);
    col(o, b, n, W_PID);
    n = gs_fmt_u64(b, ev->tid);
    col(o, b, n, W_TID);
    const char *name = gs_kind_name(ev->kind);
    if (!name) {
        n = (size_t)snprintf(b, sizeof b, "kind%u", ev->kind);
        name = b;
    }
    col(o, name, strlen(name), W_KIND);
    if (f & GS_F_FD) {
        n = gs_fmt_i64(b, ev->fd);
        col(o, b, n, W_FD);
        const char *fk = gs_fdkind_name(ev->fd_kind);
        col(o, fk, strlen(fk), W_FDK);
    } else {
        col_dash(o, W_FD);
        col_dash(o, W_FDK);
    }
    if (f & GS_F_BYTES) {
        n = gs_fmt_u64(b, ev->bytes);
        col(o, b, n, W_BYTES);
    } else {
        col_dash(o, W_BYTES);
    }
    if (f & GS_F_RET) {
        if ((ev->kind == GS_K_MMAP || ev->kind == GS_K_MMAP64) && ev->ret != -1)
            n = (size_t)snprintf(b, sizeof b, "0x%llx", (unsigned long long)ev->ret);
        else
            n = gs_fmt_i64(b, ev->ret);
        col(o, b, n, W_RET);
    } else {
        col_dash(o, W_RET);
    }
    if (f & GS_F_OFFSET) {
        n = gs_fmt_i64(b, ev->offset);
        col(o, b, n, W_OFF);
    } else {
        col_dash(o, W_OFF);
    }
    if (f & GS_F_DUR) {
        n = gs_fmt_fixed(b, (int64_t)ev->dur, 3);
        col(o, b, n, W_DUR);
    } else {
        col_dash(o, W_DUR);
    }
    gs_out_mem(o, "  ", 2);
    if (f & GS_F_FD) {
        const char *path = ev->str ? gs_reader_string(r, ev->str) : NULL;
        if (path)
            gs_text_str(o, path, strlen(path));
        else
            gs_out_char(o, ev->str ? '?' : '-');
    }
    xw w = {o, 0};
    size_t before = o->len;
    write_extras(&w, r, ev);
    /* non-I/O kinds start their details without the separating blank */
    if (!(f & GS_F_FD) && o->len > before && o->buf[before] == ' ') {
        memmove(o->buf + before, o->buf + before + 1, o->len - before - 1);
        o->len--;
    }
    gs_out_char(o, '\n');
}

/* ---- NVTX ranges ------------------------------------------------------------------ */

static int range_add(range_list *l, const open_range *x)
{
    if (l->n == l->cap) {
        size_t nc = l->cap ? l->cap * 2 : 64;
        open_range *nv = realloc(l->v, nc * sizeof *nv);
        if (!nv)
            return -1;
        l->v = nv;
        l->cap = nc;
    }
    l->v[l->n++] = *x;
    return 0;
}

static void range_del(range_list *l, size_t i)
{
    memmove(l->v + i, l->v + i + 1, (l->n - i - 1) * sizeof *l->v);
    l->n--;
}

/* One "range" line: a push/pop or start/end pair; end_ts 0 = never closed
 * (dur_ns null). */
static void write_range(dump_ctx *c, const gs_reader *r, uint64_t pid, uint64_t base,
                        const open_range *x, uint64_t end_ts, int closed)
{
    gs_out *o = &c->out;
    const char *name = x->str ? gs_reader_string(r, x->str) : NULL;
    if (c->mode == MODE_JSON) {
        gs_out_mem(o, "{\"pid\":", 7);
        gs_out_u64(o, pid);
        gs_out_mem(o, ",\"tid\":", 7);
        gs_out_u64(o, x->tid);
        gs_out_str(o, ",\"kind\":\"range\",\"ts_ns\":");
        gs_out_u64(o, x->ts);
        gs_out_mem(o, ",\"dur_ns\":", 10);
        if (closed)
            gs_out_u64(o, end_ts >= x->ts ? end_ts - x->ts : 0);
        else
            gs_out_mem(o, "null", 4);
        xw w = {o, 1};
        x_str(&w, "name", name);
        x_domain(&w, r, x->domain);
        gs_out_mem(o, "}\n", 2);
        return;
    }
    char b[48];
    size_t n;
    int64_t rel = (int64_t)(x->ts - base);
    int64_t us = rel >= 0 ? (rel + 500) / 1000 : -((-rel + 500) / 1000);
    n = gs_fmt_fixed(b, us, 3);
    gs_out_pad(o, b, n, W_TIME);
    n = gs_fmt_u64(b, pid);
    col(o, b, n, W_PID);
    n = gs_fmt_u64(b, x->tid);
    col(o, b, n, W_TID);
    col(o, "range", 5, W_KIND);
    col_dash(o, W_FD);
    col_dash(o, W_FDK);
    col_dash(o, W_BYTES);
    col_dash(o, W_RET);
    col_dash(o, W_OFF);
    if (closed) {
        n = gs_fmt_fixed(b, (int64_t)(end_ts >= x->ts ? end_ts - x->ts : 0), 3);
        col(o, b, n, W_DUR);
    } else {
        col_dash(o, W_DUR);
    }
    gs_out_mem(o, "  ", 2);
    xw w = {o, 0};
    size_t before = o->len;
    x_str(&w, "name", name);
    x_domain(&w, r, x->domain);
    if (o->len > before && o->buf[before] == ' ') {
        memmove(o->buf + before, o->buf + before + 1, o->len - before - 1);
        o->len--;
    }
    gs_out_char(o, '\n');
}

/* Pair NVTX records into ranges: push/pop per thread and domain (a stack),
 * start/end by range id (any thread). A pop or end without its opening
 * record prints nothing. */
static void range_event(dump_ctx *c, const gs_reader *r, uint64_t pid, uint64_t base,
                        const gs_event *e)
{
    open_range x = {e->tid, e->str, e->aux, e->aux2, e->ts};
    switch (e->kind) {
    case GS_K_NVTX_PUSH:
        x.id = 0;
        range_add(&c->pushes, &x);
        return;
    case GS_K_NVTX_START:
        range_add(&c->starts, &x);
        return;
    case GS_K_NVTX_POP:
        for (size_t i = c->pushes.n; i-- > 0;) {
            const open_range *p = &c->pushes.v[i];
            if (p->tid == e->tid && p->domain == e->aux) {
                write_range(c, r, pid, base, p, e->ts, 1);
                range_del(&c->pushes, i);
                return;
            }
        }
        return;
    case GS_K_NVTX_END:
        for (size_t i = 0; i < c->starts.n; i++) {
            if (c->starts.v[i].id == e->aux2) {
                write_range(c, r, pid, base, &c->starts.v[i], e->ts, 1);
                range_del(&c->starts, i);
                return;
            }
        }
        return;
    }
}

static int cmp_open(const void *a, const void *b)
{
    const open_range *x = a, *y = b;
    return x->ts < y->ts ? -1 : x->ts > y->ts;
}

/* End of a process: the ranges never closed, by start time, dur_ns null. */
static void ranges_finish(dump_ctx *c, const gs_reader *r, uint64_t pid, uint64_t base)
{
    for (size_t i = 0; i < c->starts.n; i++)
        range_add(&c->pushes, &c->starts.v[i]);
    /* RATIONALE: qsort is not stable, but two open ranges with one ts and
     * different content in one process are rare and both get printed. */
    if (c->pushes.n)
        qsort(c->pushes.v, c->pushes.n, sizeof *c->pushes.v, cmp_open);
    for (size_t i = 0; i < c->pushes.n; i++)
        write_range(c, r, pid, base, &c->pushes.v[i], 0, 0);
    c->pushes.n = 0;
    c->starts.n = 0;
}

static void write_argv_json(gs_out *o, const gs_proc_info *pi)
{
    gs_out_char(o, '[');
    const char *p = pi->argv, *end = pi->argv ? pi->argv + pi->argv_len : NULL;
    for (uint32_t i = 0; p && i < pi->argc && p < end; i++) {
        size_t len = strnlen(p, (size_t)(end - p));
        if (i)
            gs_out_char(o, ',');
        gs_json_str(o, p, len);
        p += len + 1;
    }
    gs_out_char(o, ']');
}

static void write_argv_text(gs_out *o, const gs_proc_info *pi)
{
    const char *p = pi->argv, *end = pi->argv ? pi->argv + pi->argv_len : NULL;
    for (uint32_t i = 0; p && i < pi->argc && p < end; i++) {
        size_t len = strnlen(p, (size_t)(end - p));
        if (i)
            gs_out_char(o, ' ');
        gs_text_str(o, p, len);
        p += len + 1;
    }
}

static void json_rank(gs_out *o, const char *key, int32_t v)
{
    gs_out_printf(o, ",\"%s\":", key);
    if (v < 0)
        gs_out_mem(o, "null", 4);
    else
        gs_out_i64(o, v);
}

static void write_process(dump_ctx *c, const char *path, const gs_proc_info *pi)
{
    gs_out *o = &c->out;
    if (c->mode == MODE_JSON) {
        gs_out_mem(o, "{\"kind\":\"process\",\"pid\":", 24);
        gs_out_u64(o, pi->pid);
        gs_out_mem(o, ",\"ppid\":", 8);
        gs_out_u64(o, pi->ppid);
        gs_out_mem(o, ",\"host\":", 8);
        gs_json_cstr(o, pi->host);
        gs_out_mem(o, ",\"argv\":", 8);
        write_argv_json(o, pi);
        gs_out_printf(o, ",\"mono_ns\":%llu,\"real_ns\":%llu", (unsigned long long)pi->mono_ns,
                      (unsigned long long)pi->real_ns);
        json_rank(o, "rank", pi->rank);
        json_rank(o, "local_rank", pi->local_rank);
        json_rank(o, "world_size", pi->world_size);
        gs_out_printf(o, ",\"exec_seq\":%u,\"forked\":%s,\"version\":\"%u.%u\",\"file\":",
                      pi->exec_seq, (pi->flags & GS_HDR_F_FORKED) ? "true" : "false",
                      pi->version_major, pi->version_minor);
        gs_json_cstr(o, path);
        gs_out_mem(o, "}\n", 2);
    } else {
        gs_out_printf(o, "# process %llu  ppid %llu  host ", (unsigned long long)pi->pid,
                      (unsigned long long)pi->ppid);
        gs_text_str(o, pi->host ? pi->host : "?", pi->host ? strlen(pi->host) : 1);
        if (pi->rank >= 0)
            gs_out_printf(o, "  rank %d", pi->rank);
        if (pi->local_rank >= 0)
            gs_out_printf(o, "  local_rank %d", pi->local_rank);
        if (pi->world_size >= 0)
            gs_out_printf(o, "  world_size %d", pi->world_size);
        if (pi->exec_seq)
            gs_out_printf(o, "  exec %u", pi->exec_seq);
        if (pi->flags & GS_HDR_F_FORKED)
            gs_out_str(o, "  forked");
        gs_out_str(o, "  file ");
        gs_text_str(o, path, strlen(path));
        gs_out_str(o, "\n# argv ");
        write_argv_text(o, pi);
        gs_out_char(o, '\n');
        write_text_header(o);
    }
}

/* ---- summary output ---------------------------------------------------------- */

static int pid_traced(const dump_ctx *c, uint64_t pid)
{
    for (size_t i = 0; i < c->npids; i++)
        if (c->pids[i] == pid)
            return 1;
    return 0;
}

static void role_guess(const dump_ctx *c, const gs_proc_info *pi, char *buf, size_t cap)
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

static void write_by_kind_json(gs_out *o, const uint64_t *by_kind)
{
    gs_out_mem(o, ",\"by_kind\":{", 12);
    int first = 1;
    for (unsigned k = 0; k < GS_K_MAX; k++) {
        if (!by_kind[k])
            continue;
        const char *name = gs_kind_name(k);
        if (!first)
            gs_out_char(o, ',');
        if (name)
            gs_json_cstr(o, name);
        else
            gs_out_printf(o, "\"kind%u\"", k);
        gs_out_char(o, ':');
        gs_out_u64(o, by_kind[k]);
        first = 0;
    }
    gs_out_char(o, '}');
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

static void write_summary(dump_ctx *c, const char *path, const gs_proc_info *pi,
                          const gs_reader *r)
{
    gs_out *o = &c->out;
    proc_stats *ps = &c->ps;
    char role[128] = "";
    role_guess(c, pi, role, sizeof role);
    uint64_t faults = stats_faults(ps);
    uint64_t span = ps->events ? ps->last_ts - ps->first_ts : 0;
    if (c->mode == MODE_JSON) {
        gs_out_mem(o, "{\"kind\":\"summary\",\"pid\":", 24);
        gs_out_u64(o, pi->pid);
        gs_out_printf(o, ",\"ppid\":%llu,\"role\":", (unsigned long long)pi->ppid);
        gs_json_cstr(o, role);
        gs_out_mem(o, ",\"argv\":", 8);
        write_argv_json(o, pi);
        gs_out_mem(o, ",\"file\":", 8);
        gs_json_cstr(o, path);
        gs_out_printf(o, ",\"events\":%llu", (unsigned long long)ps->events);
        write_by_kind_json(o, ps->by_kind);
        gs_out_printf(o,
                      ",\"span_ns\":%llu,\"bytes_read\":%llu,\"bytes_read_file\":%llu,"
                      "\"read_calls\":%llu,\"files_opened\":%llu,\"open_failed\":%llu,"
                      "\"paths_read\":%zu,\"io_ns\":%llu,\"wait_ns\":%llu,\"dropped\":%llu,"
                      "\"lost\":%llu,\"threads\":%zu,\"major_faults\":%llu,\"thread_names\":[",
                      (unsigned long long)span, (unsigned long long)ps->bytes_read,
                      (unsigned long long)ps->bytes_read_file, (unsigned long long)ps->read_calls,
                      (unsigned long long)ps->opened, (unsigned long long)ps->open_failed,
                      ps->paths.n, (unsigned long long)ps->io_ns, (unsigned long long)ps->wait_ns,
                      (unsigned long long)ps->dropped, (unsigned long long)ps->lost, ps->tids.n,
                      (unsigned long long)faults);
        for (size_t i = 0; i < ps->nnames; i++) {
            if (i)
                gs_out_char(o, ',');
            gs_json_cstr(o, gs_reader_string(r, ps->names[i].name));
        }
        gs_out_mem(o, "]}\n", 3);
        return;
    }
    gs_out_printf(o, "process %llu  %s  ", (unsigned long long)pi->pid, role);
    write_argv_text(o, pi);
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

static void totals_add(dump_ctx *c, const gs_reader *r)
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

static void write_totals(dump_ctx *c)
{
    gs_out *o = &c->out;
    totals *t = &c->tot;
    if (c->mode == MODE_JSON) {
        gs_out_printf(o, "{\"kind\":\"total\",\"processes\":%llu,\"damaged\":%llu,\"events\":%llu",
                      (unsigned long long)t->procs, (unsigned long long)t->damaged,
                      (unsigned long long)t->events);
        write_by_kind_json(o, t->by_kind);
        gs_out_printf(o,
                      ",\"bytes_read\":%llu,\"bytes_read_file\":%llu,\"read_calls\":%llu,"
                      "\"files_opened\":%llu,\"open_failed\":%llu,\"paths_read\":%zu,"
                      "\"io_ns\":%llu,\"wait_ns\":%llu,\"dropped\":%llu,\"lost\":%llu,"
                      "\"threads\":%llu,\"major_faults\":%llu}\n",
                      (unsigned long long)t->bytes_read, (unsigned long long)t->bytes_read_file,
                      (unsigned long long)t->read_calls, (unsigned long long)t->opened,
                      (unsigned long long)t->open_failed, t->paths.n, (unsigned long long)t->io_ns,
                      (unsigned long long)t->wait_ns, (unsigned long long)t->dropped,
                      (unsigned long long)t->lost, (unsigned long long)t->threads,
                      (unsigned long long)t->faults);
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

/* ---- files -------------------------------------------------------------------- */

static uint64_t file_size(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 ? (uint64_t)st.st_size : 0;
}

static void report_damage(const char *path, int err, uint64_t offset, uint64_t unread)
{
    gs_cli_error("%s: %s at offset %llu (%llu bytes unread)", path, gs_strerror(err),
                 (unsigned long long)offset, (unsigned long long)unread);
}

static int cmp_pair(const void *a, const void *b)
{
    const uint64_t *x = a, *y = b;
    if (x[0] != y[0])
        return x[0] < y[0] ? -1 : 1;
    return x[1] < y[1] ? -1 : x[1] > y[1];
}

/* Order of a frame's events by ts, stable. Returns NULL when the frame is
 * already in order (the usual case: one thread appends in time order). */
static const uint32_t *frame_order(dump_ctx *c, const gs_event *ev, size_t n)
{
    size_t i;
    for (i = 1; i < n; i++)
        if (ev[i].ts < ev[i - 1].ts)
            break;
    if (i >= n)
        return NULL;
    if (n > c->order_cap) {
        free(c->order);
        free(c->keys);
        c->order = malloc(n * sizeof *c->order);
        c->keys = malloc(n * 2 * sizeof *c->keys);
        if (!c->order || !c->keys) {
            c->order_cap = 0;
            return NULL; /* out of memory: print in file order rather than fail */
        }
        c->order_cap = n;
    }
    /* RATIONALE: qsort is not stable; sorting (ts, index) pairs makes it so. */
    for (i = 0; i < n; i++) {
        c->keys[2 * i] = ev[i].ts;
        c->keys[2 * i + 1] = i;
    }
    qsort(c->keys, n, 2 * sizeof *c->keys, cmp_pair);
    for (i = 0; i < n; i++)
        c->order[i] = (uint32_t)c->keys[2 * i + 1];
    return c->order;
}

/* Returns GS_EXIT_OK, or GS_EXIT_USAGE when the file is damaged/unreadable. */
static int dump_file(dump_ctx *c, const char *path)
{
    gs_reader *r = NULL;
    int err = gs_reader_open(&r, path);
    if (err != GS_OK) {
        if (err == GS_ERR_IO)
            gs_cli_error("%s: cannot read: %s", path, strerror(errno));
        else
            report_damage(path, err, 0, file_size(path));
        c->tot.damaged++;
        return GS_EXIT_USAGE;
    }
    gs_cli_msg(2, "reading %s", path);
    const gs_proc_info *pi = gs_reader_info(r);
    if (c->cs)
        an_cs_proc_begin(c->cs, path, pi);
    else if (!c->summary)
        write_process(c, path, pi);
    else
        stats_reset(&c->ps);
    int first = 1;
    uint64_t base = 0;
    const gs_event *ev;
    size_t n;
    int rc;
    while ((rc = gs_reader_next_frame(r, &ev, &n)) > 0) {
        if (c->cs) {
            for (size_t i = 0; i < n; i++)
                an_cs_event(c->cs, r, &ev[i]);
            continue;
        }
        const uint32_t *order = c->summary ? NULL : frame_order(c, ev, n);
        for (size_t i = 0; i < n; i++) {
            const gs_event *e = order ? &ev[order[i]] : &ev[i];
            if (e->kind == GS_K_STRING || e->kind == GS_K_TID)
                continue;
            if (c->summary) {
                stats_add(&c->ps, e);
                continue;
            }
            if (first) {
                base = e->ts;
                first = 0;
            }
            if (gs_kind_is_nvtx_range(e->kind)) {
                range_event(c, r, pi->pid, base, e);
                continue;
            }
            if (c->mode == MODE_JSON)
                write_event_json(&c->out, r, pi->pid, e);
            else
                write_event_text(&c->out, r, pi->pid, base, e);
        }
    }
    if (c->cs) {
        an_cs_proc_end(c->cs, r);
    } else if (c->summary) {
        write_summary(c, path, pi, r);
        totals_add(c, r);
    } else {
        ranges_finish(c, r, pi->pid, base);
    }
    gs_out_flush(&c->out);
    int ret = GS_EXIT_OK;
    if (rc < 0) {
        fflush(stdout); /* what was readable comes first */
        report_damage(path, rc, gs_reader_offset(r), gs_reader_unread(r));
        c->tot.damaged++;
        ret = GS_EXIT_USAGE;
    }
    gs_reader_close(r);
    return ret;
}

/* ---- inputs -------------------------------------------------------------------- */

typedef struct pathlist {
    char **v;
    size_t n, cap;
} pathlist;

static int pathlist_add(pathlist *l, char *p)
{
    if (l->n == l->cap) {
        size_t nc = l->cap ? l->cap * 2 : 16;
        char **nv = realloc(l->v, nc * sizeof *nv);
        if (!nv)
            return -1;
        l->v = nv;
        l->cap = nc;
    }
    l->v[l->n++] = p;
    return 0;
}

/* Append the trace files of dir, sorted by name. Returns an exit code. */
static int add_dir(pathlist *l, const char *dir)
{
    gs_run_files rf;
    const int rc = gs_run_files_list(&rf, dir);
    if (rc == GS_ERR_IO) {
        gs_cli_error("%s: cannot read directory: %s", dir, strerror(errno));
        return GS_EXIT_USAGE;
    }
    if (rc != GS_OK) {
        gs_cli_error("out of memory");
        return GS_EXIT_FAIL;
    }
    if (rf.n == 0) {
        gs_run_files_free(&rf);
        gs_cli_error("%s: no trace files (*" GS_TRACE_SUFFIX ") in this directory", dir);
        return GS_EXIT_USAGE;
    }
    for (size_t i = 0; i < rf.n; i++) {
        if (pathlist_add(l, rf.path[i]) < 0) {
            for (size_t j = i; j < rf.n; j++)
                free(rf.path[j]);
            free(rf.path);
            gs_cli_error("out of memory");
            return GS_EXIT_FAIL;
        }
    }
    free(rf.path); /* the paths now belong to l */
    return GS_EXIT_OK;
}

static void collect_pids(dump_ctx *c, const pathlist *l)
{
    c->pids = calloc(l->n ? l->n : 1, sizeof *c->pids);
    if (!c->pids)
        return;
    for (size_t i = 0; i < l->n; i++) {
        gs_reader *r = NULL;
        if (gs_reader_open(&r, l->v[i]) == GS_OK) {
            c->pids[c->npids++] = gs_reader_info(r)->pid;
            gs_reader_close(r);
        }
    }
}

static void cs_emit(void *ctx, const char *s, size_t n)
{
    gs_out_mem(ctx, s, n);
}

int gs_cmd_dump(int argc, char **argv)
{
    static const struct option opts[] = {
        {"json", no_argument, NULL, 'j'},   {"summary", no_argument, NULL, 's'},
        {"quiet", no_argument, NULL, 'q'},  {"verbose", no_argument, NULL, 'v'},
        {"help", no_argument, NULL, 'h'},   {"callsites", no_argument, NULL, 'c'},
        {"symbol-path", required_argument, NULL, 'S'}, {"top", required_argument, NULL, 'T'},
        {"no-lines", no_argument, NULL, 'L'}, {NULL, 0, NULL, 0},
    };
    static const char optstring[] = "qvh";
    int json = 0, summary = 0, callsites = 0, opt;
    an_cs_opts cso = {0};
    const char *sympaths[64];
    optind = 0;
    opterr = 0;
    while ((opt = getopt_long(argc, argv, optstring, opts, NULL)) != -1) {
        switch (opt) {
        case 'j': json = 1; break;
        case 's': summary = 1; break;
        case 'c': callsites = 1; break;
        case 'S':
            if (cso.nsymbol_paths >= sizeof sympaths / sizeof sympaths[0])
                return gs_cli_usage_error("dump", "too many --symbol-path options");
            sympaths[cso.nsymbol_paths++] = optarg;
            break;
        case 'T': {
            long t;
            if (gs_cli_long(optarg, 1, 1000, &t) < 0)
                return gs_cli_usage_error("dump", "--top wants a number from 1 to 1000");
            cso.top = (unsigned)t;
            break;
        }
        case 'L': cso.no_lines = 1; break;
        case 'q': gs_verbosity--; break;
        case 'v': gs_verbosity++; break;
        case 'h': fputs(usage_text, stdout); return GS_EXIT_OK;
        default: return gs_cli_bad_option("dump", argc, argv, optstring, opts);
        }
    }
    if (optind >= argc)
        return gs_cli_usage_error("dump", "needs a run directory or trace file");
    if (callsites && summary)
        return gs_cli_usage_error("dump", "--callsites and --summary do not go together");
    cso.symbol_paths = sympaths;

    pathlist files = {0};
    int rc = GS_EXIT_OK;
    for (int i = optind; i < argc; i++) {
        struct stat st;
        if (stat(argv[i], &st) != 0) {
            gs_cli_error("%s: %s", argv[i], strerror(errno));
            rc = GS_EXIT_USAGE;
        } else if (S_ISDIR(st.st_mode)) {
            int drc = add_dir(&files, argv[i]);
            if (drc != GS_EXIT_OK)
                rc = drc;
        } else {
            char *p = strdup(argv[i]);
            if (!p || pathlist_add(&files, p) < 0) {
                gs_cli_error("out of memory");
                return GS_EXIT_FAIL;
            }
        }
    }

    dump_ctx *c = calloc(1, sizeof *c);
    if (!c) {
        gs_cli_error("out of memory");
        return GS_EXIT_FAIL;
    }
    c->mode = json ? MODE_JSON : MODE_TEXT;
    c->summary = summary;
    gs_out_init(&c->out, stdout);
    if (callsites && !(c->cs = an_cs_new(&cso))) {
        gs_cli_error("out of memory");
        free(c);
        return GS_EXIT_FAIL;
    }
    if (summary)
        collect_pids(c, &files);
    for (size_t i = 0; i < files.n; i++) {
        int frc = dump_file(c, files.v[i]);
        if (frc != GS_EXIT_OK && rc == GS_EXIT_OK)
            rc = frc;
        if (ferror(stdout))
            break; /* reader gone (closed pipe, full disk): no point going on */
    }
    if (summary && files.n)
        write_totals(c);
    if (c->cs && files.n) {
        an_cs_finish(c->cs);
        if (json) {
            an_cs_write_json(c->cs, cs_emit, &c->out);
            gs_out_char(&c->out, '\n');
        } else {
            gs_out_str(&c->out, "call sites (sampled call stacks)\n");
            an_cs_write_text(c->cs, cs_emit, &c->out, 0, 0);
        }
    }
    an_cs_free(c->cs);
    gs_out_flush(&c->out);

    for (size_t i = 0; i < files.n; i++)
        free(files.v[i]);
    free(files.v);
    free(c->order);
    free(c->keys);
    free(c->pids);
    free(c->ps.paths.keys);
    free(c->ps.tids.keys);
    free(c->ps.faults);
    free(c->ps.names);
    free(c->pushes.v);
    free(c->starts.v);
    strset_free(&c->tot.paths);
    free(c);
    return rc;
}
