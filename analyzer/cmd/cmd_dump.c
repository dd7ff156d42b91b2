/* cmd_dump.c — `gpustarve dump`: print every event of a run directory or
 * trace file, one line each (aligned text or JSON Lines), a per-process
 * summary of what the trace holds, or the call sites of its stacks.
 *
 * Responsible for: options, the input files, the loop over their frames
 * (events of a frame in time order), handing each event to its part
 * (dump_event.c, dump_range.c, dump_summary.c, an_callsites.c; see dump.h),
 * reporting damaged files after printing everything readable before the
 * damage.
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

#include "report/report_callsites.h"
#include "cmd/cli_util.h"
#include "cmd/dump.h"
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

/* The state of one dump: the mode, the output, and the parts' state. */
typedef struct dump_ctx {
    int json;
    an_cs *cs;         /* --callsites */
    dump_summary *sum; /* --summary */
    dump_ranges *ranges;
    gs_out out;
    uint32_t *order; /* index array for sorting a frame, reused */
    uint64_t *keys;
    size_t order_cap;
    uint64_t *pids; /* traced pids, for the summary's role guess */
    size_t npids;
} dump_ctx;

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
        if (c->sum)
            dump_summary_damaged(c->sum);
        return GS_EXIT_USAGE;
    }
    gs_cli_msg(2, "reading %s", path);
    const gs_proc_info *pi = gs_reader_info(r);
    if (c->cs)
        an_cs_proc_begin(c->cs, path, pi);
    else if (c->sum)
        dump_summary_begin(c->sum);
    else
        dump_process(&c->out, c->json, path, pi);
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
        if (c->sum) {
            for (size_t i = 0; i < n; i++)
                dump_summary_event(c->sum, &ev[i]);
            continue;
        }
        const uint32_t *order = frame_order(c, ev, n);
        for (size_t i = 0; i < n; i++) {
            const gs_event *e = order ? &ev[order[i]] : &ev[i];
            if (first) {
                base = e->ts;
                first = 0;
            }
            if (gs_kind_is_nvtx_range(e->kind))
                dump_ranges_event(c->ranges, &c->out, c->json, r, pi->pid, base, e);
            else
                dump_event(&c->out, c->json, r, pi->pid, base, e);
        }
    }
    if (c->cs)
        an_cs_proc_end(c->cs, r);
    else if (c->sum)
        dump_summary_end(c->sum, &c->out, c->json, path, pi, r);
    else
        dump_ranges_finish(c->ranges, &c->out, c->json, r, pi->pid, base);
    gs_out_flush(&c->out);
    int ret = GS_EXIT_OK;
    if (rc == GS_ERR_LIVE) {
        fflush(stdout); /* what was readable comes first */
        gs_cli_error("%s: its live file could not be read: %s", path, gs_reader_live_problem(r));
        if (c->sum)
            dump_summary_damaged(c->sum);
        ret = GS_EXIT_USAGE;
    } else if (rc < 0) {
        fflush(stdout); /* what was readable comes first */
        report_damage(path, rc, gs_reader_offset(r), gs_reader_unread(r));
        if (c->sum)
            dump_summary_damaged(c->sum);
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
    c->json = json;
    gs_out_init(&c->out, stdout);
    if (summary)
        collect_pids(c, &files);
    if ((callsites && !(c->cs = an_cs_new(&cso))) ||
        (summary && !(c->sum = dump_summary_new(c->pids, c->npids))) ||
        !(c->ranges = dump_ranges_new())) {
        gs_cli_error("out of memory");
        an_cs_free(c->cs);
        dump_summary_free(c->sum);
        free(c->pids);
        free(c);
        return GS_EXIT_FAIL;
    }
    for (size_t i = 0; i < files.n; i++) {
        int frc = dump_file(c, files.v[i]);
        if (frc != GS_EXIT_OK && rc == GS_EXIT_OK)
            rc = frc;
        if (ferror(stdout))
            break; /* reader gone (closed pipe, full disk): no point going on */
    }
    if (c->sum && files.n)
        dump_summary_totals(c->sum, &c->out, json);
    if (c->cs && files.n) {
        an_cs_finish(c->cs);
        if (json) {
            gs_jw w;
            gs_jw_init(&w, &c->out);
            rep_cs_write_json(c->cs, &w);
            gs_out_char(&c->out, '\n');
        } else {
            gs_out_str(&c->out, "call sites (sampled call stacks)\n");
            rep_cs_write_text(c->cs, cs_emit, &c->out, 0, 0);
        }
    }
    an_cs_free(c->cs);
    gs_out_flush(&c->out);

    for (size_t i = 0; i < files.n; i++)
        free(files.v[i]);
    free(files.v);
    free(c->order);
    free(c->keys);
    dump_summary_free(c->sum);
    dump_ranges_free(c->ranges);
    free(c->pids);
    free(c);
    return rc;
}
