/* dump_event.c — one event as `gpustarve dump` prints it: the text columns
 * or the JSON object, with the kind-specific meaning of aux/aux2 turned back
 * into the names the collector meant (flags, mode, timeout, direction,
 * memory kind, ...; trace/'s accessors unpack them); the process header
 * lines; an NVTX range line (paired by dump_range.c).
 *
 * Must never: allocate per event, or write a string without escaping it
 * (text: gs_text_str; JSON: out_json.h).
 */
#include <stdlib.h>
#include <string.h>

#include "cmd/dump.h"

/* Kind-specific fields: "key":value members of the event's JSON object, or
 * " key=value" in text. */
typedef struct xw {
    gs_out *o;
    gs_jw *j; /* JSON; NULL: text */
} xw;

/* A field's key in both forms, from a literal: "key": and " key=". */
typedef struct xkey {
    const char *json, *text;
    size_t jn, tn;
} xkey;
#define XK(lit) ((xkey){"\"" lit "\":", " " lit "=", sizeof(lit) + 2, sizeof(lit) + 1})

static void x_key(xw *w, xkey k)
{
    if (w->j)
        gs_jw_key_raw(w->j, k.json, k.jn);
    else
        gs_out_mem(w->o, k.text, k.tn);
}

static void x_u64(xw *w, xkey key, uint64_t v)
{
    x_key(w, key);
    if (w->j)
        gs_jw_u64(w->j, v);
    else
        gs_out_u64(w->o, v);
}

/* A value that may not have been measured: null in JSON, `-` in text. */
static void x_opt_u64(xw *w, xkey key, uint64_t v, unsigned present)
{
    if (present) {
        x_u64(w, key, v);
        return;
    }
    x_key(w, key);
    if (w->j)
        gs_jw_null(w->j);
    else
        gs_out_char(w->o, '-');
}

static void x_hex(xw *w, xkey key, uint64_t v) /* hex in text only */
{
    x_key(w, key);
    if (w->j)
        gs_jw_u64(w->j, v);
    else
        gs_out_hex(w->o, v);
}

/* A string from the trace; when s is NULL: null in JSON, `absent` in text. */
static void x_string(xw *w, xkey key, const char *s, char absent)
{
    x_key(w, key);
    if (w->j)
        gs_jw_str(w->j, s);
    else if (s)
        gs_text_str(w->o, s, strlen(s));
    else
        gs_out_char(w->o, absent);
}

/* A string the trace should have defined ('?' in text when it did not). */
static void x_str(xw *w, xkey key, const char *s)
{
    x_string(w, key, s, '?');
}

/* A string that may be absent by design ('-' in text). */
static void x_opt_str(xw *w, xkey key, const char *s)
{
    x_string(w, key, s, '-');
}

/* A name from a fixed table (no escaping needed in text), or null / '-'. */
static void x_name(xw *w, xkey key, const char *name)
{
    x_key(w, key);
    if (w->j)
        gs_jw_str(w->j, name);
    else
        gs_out_str(w->o, name ? name : "-");
}

/* The NVTX domain: its name, null / '-' for the default domain. */
static void x_domain(xw *w, const gs_reader *r, uint64_t id)
{
    x_opt_str(w, XK("domain"), id ? gs_reader_string(r, (uint32_t)id) : NULL);
}

/* device, stream, correlation. GPU records carry CUPTI's stream id; host
 * records the cudaStream_t handle (hex in text). */
static void write_gpu_where(xw *w, const gs_event *ev, int gpu)
{
    x_u64(w, XK("device"), ev->dev);
    if (gpu)
        x_u64(w, XK("stream"), ev->stream);
    else
        x_hex(w, XK("stream"), ev->stream);
    x_u64(w, XK("correlation"), ev->corr);
}

/* The event's string (a name, a path, an API), NULL when it has none. */
static const char *ev_str(const gs_reader *r, const gs_event *ev)
{
    return ev->str ? gs_reader_string(r, ev->str) : NULL;
}

/* The extras of the file and wait calls (open, stat, read, mmap, poll, ...).
 * Returns 1 when ev is one, else 0 (nothing written). */
static int write_file_extras(xw *w, const gs_event *ev)
{
    switch (ev->kind) {
    case GS_K_OPEN: case GS_K_OPEN64: case GS_K_CREAT: case GS_K_DUP3:
    case GS_K_FSTATAT: case GS_K_FSTATAT64: case GS_K_FXSTATAT: case GS_K_FXSTATAT64:
        x_hex(w, XK("flags"), ev->aux);
        return 1;
    case GS_K_OPENAT: case GS_K_OPENAT64:
        x_hex(w, XK("flags"), ev->aux);
        x_key(w, XK("mode"));
        if (w->j)
            gs_jw_u64(w->j, ev->aux2);
        else
            gs_out_printf(w->o, "0%llo", (unsigned long long)ev->aux2);
        return 1;
    case GS_K_STATX:
        x_hex(w, XK("flags"), ev->aux);
        x_hex(w, XK("mask"), ev->aux2);
        return 1;
    case GS_K_READV: case GS_K_READV_AT: case GS_K_PREADV: case GS_K_PREADV64:
        x_u64(w, XK("iovcnt"), ev->aux);
        return 1;
    case GS_K_PREADV2: case GS_K_PREADV64V2:
        x_u64(w, XK("iovcnt"), ev->aux);
        x_hex(w, XK("flags"), ev->aux2);
        return 1;
    case GS_K_FOPEN: case GS_K_FOPEN64: {
        char mode[9];
        const size_t n = gs_fopen_mode(ev, mode);
        x_key(w, XK("mode"));
        if (w->j)
            gs_jw_strn(w->j, mode, n);
        else
            gs_text_str(w->o, mode, n);
        return 1;
    }
    case GS_K_FREAD: case GS_K_FREAD_UNLOCKED:
        x_u64(w, XK("size"), ev->aux);
        return 1;
    case GS_K_MMAP: case GS_K_MMAP64:
        x_hex(w, XK("prot"), ev->aux);
        x_hex(w, XK("flags"), ev->aux2);
        return 1;
    case GS_K_MUNMAP:
        x_hex(w, XK("addr"), ev->aux);
        return 1;
    case GS_K_POLL: case GS_K_PPOLL: case GS_K_SELECT: case GS_K_PSELECT:
    case GS_K_EPOLL_WAIT: case GS_K_EPOLL_PWAIT:
        if (gs_wait_timeout_ms(ev) < 0) {
            x_key(w, XK("timeout_ms"));
            if (w->j)
                gs_jw_null(w->j);
            else
                gs_out_str(w->o, "forever");
        } else
            x_u64(w, XK("timeout_ms"), (uint64_t)gs_wait_timeout_ms(ev));
        return 1;
    default:
        return 0;
    }
}

/* How a process ended: its status, and how by name (the number when this
 * build does not know the reason). */
static void write_exit(xw *w, const gs_event *ev)
{
    const char *how = gs_exit_how_name(gs_exit_how_of(ev));
    x_u64(w, XK("status"), gs_exit_status(ev));
    x_key(w, XK("how"));
    if (!how) { /* a reason this build does not know */
        if (w->j)
            gs_jw_u64(w->j, ev->aux2);
        else
            gs_out_u64(w->o, ev->aux2);
    } else if (w->j) {
        gs_jw_str(w->j, how);
    } else {
        gs_out_str(w->o, how);
    }
}

/* The extras of the records about the process, its threads and the machine
 * (threads, CPU time and limits, losses, notes, exec, exit, mappings).
 * Returns 1 when ev is one, else 0 (nothing written). */
static int write_proc_extras(xw *w, const gs_reader *r, const gs_event *ev)
{
    switch (ev->kind) {
    case GS_K_THREAD:
        x_u64(w, XK("target_tid"), ev->aux);
        x_str(w, XK("name"), ev_str(r, ev));
        return 1;
    case GS_K_FAULTS:
        x_u64(w, XK("target_tid"), ev->aux);
        x_u64(w, XK("faults"), ev->aux2);
        return 1;
    case GS_K_CPU_LIMITS:
        x_u64(w, XK("affinity_cpus"), ev->aux);
        x_u64(w, XK("quota_millicpus"), ev->aux2);
        x_u64(w, XK("online_cpus"), ev->bytes);
        return 1;
    case GS_K_HOST_CPU:
        x_u64(w, XK("busy_ns"), gs_host_busy_ns(ev));
        x_u64(w, XK("idle_ns"), gs_host_idle_ns(ev));
        x_u64(w, XK("cpus"), gs_host_cpus(ev));
        return 1;
    case GS_K_CPU: {
        const unsigned has = gs_cpu_has(ev);
        x_u64(w, XK("target_tid"), gs_cpu_tid(ev));
        x_str(w, XK("source"), gs_cpu_source_name(gs_cpu_source(ev)));
        x_u64(w, XK("cpu_ns"), gs_cpu_ns(ev));
        x_opt_u64(w, XK("runq_ns"), gs_cpu_runq_ns(ev), has & GS_CPU_HAS_RUNQ);
        x_opt_u64(w, XK("majflt"), gs_cpu_majflt(ev), has & GS_CPU_HAS_FAULTS);
        x_opt_u64(w, XK("nvcsw"), gs_cpu_nvcsw(ev), has & GS_CPU_HAS_SWITCHES);
        x_opt_u64(w, XK("nivcsw"), gs_cpu_nivcsw(ev), has & GS_CPU_HAS_SWITCHES);
        x_opt_u64(w, XK("storage_read_bytes"), gs_cpu_storage_bytes(ev), has & GS_CPU_HAS_STORAGE);
        return 1;
    }
    case GS_K_DROPS:
        x_u64(w, XK("dropped"), ev->aux);
        x_u64(w, XK("lost"), ev->aux2);
        return 1;
    case GS_K_NOTE:
        x_u64(w, XK("code"), ev->aux);
        x_str(w, XK("text"), ev_str(r, ev));
        return 1;
    case GS_K_EXEC:
        x_str(w, XK("path"), ev_str(r, ev));
        return 1;
    case GS_K_EXIT:
        write_exit(w, ev);
        return 1;
    case GS_K_MAPPING:
        x_opt_str(w, XK("path"), ev_str(r, ev));
        x_hex(w, XK("start"), ev->aux);
        x_hex(w, XK("end"), ev->aux + ev->bytes);
        x_hex(w, XK("file_offset"), (uint64_t)ev->offset);
        x_opt_str(w, XK("build_id"), ev->aux2 ? gs_reader_string(r, (uint32_t)ev->aux2) : NULL);
        return 1;
    default:
        return 0;
    }
}

/* The extras of the GPU's records (CUPTI), the CUDA calls and NVTX marks.
 * Returns 1 when ev is one, else 0 (nothing written). */
static int write_gpu_extras(xw *w, const gs_reader *r, const gs_event *ev)
{
    switch (ev->kind) {
    case GS_K_GPU_KERNEL:
        x_str(w, XK("name"), ev_str(r, ev));
        write_gpu_where(w, ev, 1);
        return 1;
    case GS_K_GPU_MEMCPY:
        x_name(w, XK("direction"), gs_dir_name(gs_copy_dir(ev)));
        x_u64(w, XK("bytes"), ev->bytes);
        x_name(w, XK("src_mem"), gs_mem_name(gs_copy_src_mem(ev)));
        x_name(w, XK("dst_mem"), gs_mem_name(gs_copy_dst_mem(ev)));
        write_gpu_where(w, ev, 1);
        return 1;
    case GS_K_GPU_MEMSET:
        x_u64(w, XK("bytes"), ev->bytes);
        x_name(w, XK("mem"), gs_mem_name(gs_memset_mem(ev)));
        write_gpu_where(w, ev, 1);
        return 1;
    case GS_K_GPU_SYNC:
        x_name(w, XK("sync"), gs_gpu_sync_name(ev->aux));
        write_gpu_where(w, ev, 1);
        return 1;
    case GS_K_GPU_DEVICE: {
        x_u64(w, XK("device"), ev->dev);
        x_str(w, XK("name"), ev_str(r, ev));
        x_u64(w, XK("bytes"), ev->bytes);
        x_u64(w, XK("sms"), ev->aux);
        char cc[48];
        snprintf(cc, sizeof cc, "%llu.%llu", (unsigned long long)(ev->aux2 / 10),
                 (unsigned long long)(ev->aux2 % 10));
        x_name(w, XK("compute_capability"), cc);
        return 1;
    }
    case GS_K_GPU_DROPS:
        x_u64(w, XK("dropped"), ev->aux);
        return 1;
    case GS_K_CUDA_MEMCPY:
        x_str(w, XK("api"), ev_str(r, ev));
        x_name(w, XK("direction"), gs_dir_name(gs_copy_dir(ev)));
        x_u64(w, XK("bytes"), ev->bytes);
        x_name(w, XK("host_mem"), gs_mem_name(gs_copy_host_mem(ev)));
        write_gpu_where(w, ev, 0);
        return 1;
    case GS_K_CUDA_SYNC:
        x_str(w, XK("api"), ev_str(r, ev));
        write_gpu_where(w, ev, 0);
        x_hex(w, XK("event"), ev->aux2);
        return 1;
    case GS_K_CUDA_HOST_MEM:
        x_str(w, XK("api"), ev_str(r, ev));
        x_hex(w, XK("addr"), ev->aux);
        x_u64(w, XK("bytes"), ev->bytes);
        x_hex(w, XK("flags"), ev->aux2);
        return 1;
    case GS_K_NVTX_MARK:
        x_str(w, XK("name"), ev_str(r, ev));
        x_domain(w, r, ev->aux);
        return 1;
    default:
        return 0;
    }
}

/* The kind-specific meaning of aux/aux2 (the preload's contract); a kind
 * without a named meaning shows the raw fields. Then the call stack. */
static void write_extras(xw *w, const gs_reader *r, const gs_event *ev)
{
    if (!write_file_extras(w, ev) && !write_proc_extras(w, r, ev) &&
        !write_gpu_extras(w, r, ev)) {
        const unsigned f = gs_kind_fields(ev->kind);
        if (f & GS_F_AUX)
            x_u64(w, XK("aux"), ev->aux);
        if (f & GS_F_AUX2)
            x_u64(w, XK("aux2"), ev->aux2);
    }
    if (ev->stack) {
        x_u64(w, XK("stack"), ev->stack);
        x_u64(w, XK("stack_weight"), ev->stack_weight);
    }
}

static void write_event_json(gs_out *o, const gs_reader *r, uint64_t pid, const gs_event *ev)
{
    const unsigned f = gs_kind_fields(ev->kind);
    const char *name = gs_kind_name(ev->kind);
    gs_jw jw, *j = &jw;
    gs_jw_init(j, o);
    gs_jw_obj(j);
    GS_JW_KU64(j, "pid", pid);
    GS_JW_KU64(j, "tid", ev->tid);
    GS_JW_KEY_LIT(j, "kind");
    if (name)
        gs_jw_str(j, name);
    else
        gs_jw_u64(j, ev->kind); /* never from a reader that refuses unknown kinds */
    GS_JW_KU64(j, "ts_ns", ev->ts);
    GS_JW_KU64(j, "dur_ns", ev->dur);
    if (f & GS_F_FD) {
        GS_JW_KI64(j, "fd", ev->fd);
        GS_JW_KSTR(j, "fd_kind", gs_fdkind_name(ev->fd_kind));
        GS_JW_KSTR(j, "path", ev_str(r, ev));
        GS_JW_KU64(j, "bytes", ev->bytes);
        GS_JW_KI64(j, "ret", ev->ret);
        if (f & GS_F_OFFSET)
            GS_JW_KI64(j, "offset", ev->offset);
    } else if ((f & GS_F_RET) && ev->kind != GS_K_CPU) { /* cpu: storage bytes, in the extras */
        GS_JW_KI64(j, "ret", ev->ret);
    }
    xw w = {o, j};
    write_extras(&w, r, ev);
    gs_jw_end(j);
    gs_out_char(o, '\n');
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
    if ((f & GS_F_BYTES) && ev->kind != GS_K_CPU) { /* cpu: CPU time, in the details */
        n = gs_fmt_u64(b, ev->bytes);
        col(o, b, n, W_BYTES);
    } else {
        col_dash(o, W_BYTES);
    }
    if ((f & GS_F_RET) && ev->kind != GS_K_CPU) {
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
        const char *path = ev_str(r, ev);
        if (path)
            gs_text_str(o, path, strlen(path));
        else
            gs_out_char(o, ev->str ? '?' : '-');
    }
    xw w = {o, NULL};
    size_t before = o->len;
    write_extras(&w, r, ev);
    /* non-I/O kinds start their details without the separating blank */
    if (!(f & GS_F_FD) && o->len > before && o->buf[before] == ' ') {
        memmove(o->buf + before, o->buf + before + 1, o->len - before - 1);
        o->len--;
    }
    gs_out_char(o, '\n');
}

void dump_range_line(gs_out *o, int json, const gs_reader *r, uint64_t pid, uint64_t base,
                     uint32_t tid, uint32_t str, uint64_t domain, uint64_t ts, uint64_t end_ts,
                     int closed)
{
    const char *name = str ? gs_reader_string(r, str) : NULL;
    const uint64_t dur = end_ts >= ts ? end_ts - ts : 0;
    if (json) {
        gs_jw jw, *j = &jw;
        gs_jw_init(j, o);
        gs_jw_obj(j);
        gs_jw_ku64(j, "pid", pid);
        gs_jw_ku64(j, "tid", tid);
        gs_jw_kstr(j, "kind", "range");
        gs_jw_ku64(j, "ts_ns", ts);
        gs_jw_key(j, "dur_ns");
        if (closed)
            gs_jw_u64(j, dur);
        else
            gs_jw_null(j);
        xw w = {o, j};
        x_str(&w, XK("name"), name);
        x_domain(&w, r, domain);
        gs_jw_end(j);
        gs_out_char(o, '\n');
        return;
    }
    char b[48];
    size_t n;
    int64_t rel = (int64_t)(ts - base);
    int64_t us = rel >= 0 ? (rel + 500) / 1000 : -((-rel + 500) / 1000);
    n = gs_fmt_fixed(b, us, 3);
    gs_out_pad(o, b, n, W_TIME);
    n = gs_fmt_u64(b, pid);
    col(o, b, n, W_PID);
    n = gs_fmt_u64(b, tid);
    col(o, b, n, W_TID);
    col(o, "range", 5, W_KIND);
    col_dash(o, W_FD);
    col_dash(o, W_FDK);
    col_dash(o, W_BYTES);
    col_dash(o, W_RET);
    col_dash(o, W_OFF);
    if (closed) {
        n = gs_fmt_fixed(b, (int64_t)dur, 3);
        col(o, b, n, W_DUR);
    } else {
        col_dash(o, W_DUR);
    }
    gs_out_mem(o, "  ", 2);
    xw w = {o, NULL};
    size_t before = o->len;
    x_str(&w, XK("name"), name);
    x_domain(&w, r, domain);
    if (o->len > before && o->buf[before] == ' ') {
        memmove(o->buf + before, o->buf + before + 1, o->len - before - 1);
        o->len--;
    }
    gs_out_char(o, '\n');
}

void dump_argv_json(gs_jw *w, const gs_proc_info *pi)
{
    gs_jw_arr(w);
    const char *p = pi->argv, *end = pi->argv ? pi->argv + pi->argv_len : NULL;
    for (uint32_t i = 0; p && i < pi->argc && p < end; i++) {
        size_t len = strnlen(p, (size_t)(end - p));
        gs_jw_strn(w, p, len);
        p += len + 1;
    }
    gs_jw_end(w);
}

void dump_argv_text(gs_out *o, const gs_proc_info *pi)
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

static void json_rank(gs_jw *w, const char *key, int32_t v)
{
    gs_jw_key(w, key);
    if (v < 0)
        gs_jw_null(w);
    else
        gs_jw_i64(w, v);
}

void dump_process(gs_out *o, int json, const char *path, const gs_proc_info *pi)
{
    if (json) {
        gs_jw jw, *w = &jw;
        gs_jw_init(w, o);
        gs_jw_obj(w);
        gs_jw_kstr(w, "kind", "process");
        gs_jw_ku64(w, "pid", pi->pid);
        gs_jw_ku64(w, "ppid", pi->ppid);
        gs_jw_kstr(w, "host", pi->host);
        gs_jw_key(w, "argv");
        dump_argv_json(w, pi);
        gs_jw_ku64(w, "mono_ns", pi->mono_ns);
        gs_jw_ku64(w, "real_ns", pi->real_ns);
        json_rank(w, "rank", pi->rank);
        json_rank(w, "local_rank", pi->local_rank);
        json_rank(w, "world_size", pi->world_size);
        gs_jw_ku64(w, "exec_seq", pi->exec_seq);
        gs_jw_kbool(w, "forked", (pi->flags & GS_HDR_F_FORKED) != 0);
        char version[24];
        snprintf(version, sizeof version, "%u.%u", pi->version_major, pi->version_minor);
        gs_jw_kstr(w, "version", version);
        gs_jw_kstr(w, "file", path);
        gs_jw_end(w);
        gs_out_char(o, '\n');
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
        dump_argv_text(o, pi);
        gs_out_char(o, '\n');
        write_text_header(o);
    }
}

void dump_event(gs_out *o, int json, const gs_reader *r, uint64_t pid, uint64_t base,
                const gs_event *ev)
{
    if (json)
        write_event_json(o, r, pid, ev);
    else
        write_event_text(o, r, pid, base, ev);
}
