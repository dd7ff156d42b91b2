/* an_callsites.h — call sites behind a run's findings, from the sampled
 * call stacks of a trace (GPUSTARVE_STACKS=1, format 1.1).
 *
 * Responsible for: classifying events into findings (small reads, metadata
 * calls, pageable copies, file mmaps), estimating each call stack's share of
 * a finding from the sampled events (an event sampled 1 in M stands for M
 * calls: its CALLSITE weight), merging the same stack across processes (by
 * module and file offset, so forked and spawned workers agree), choosing the
 * top sites and symbolising only those (an_symbols); report_callsites.c
 * writes them.
 *
 * Must never: symbolise what will not be shown, or allocate per event (the
 * per-process accumulators are indexed by stack id).
 *
 * Use: an_cs_new; per process an_cs_proc_begin, an_cs_event for each event,
 * an_cs_proc_end (while the reader is open: it holds the stacks), on the
 * an_cs or on a shard of it (an_cs_shard, an_cs_merge: processes read on
 * several threads); then an_cs_finish once; then read or write the results.
 */
#ifndef AN_CALLSITES_H
#define AN_CALLSITES_H

#include <stddef.h>
#include <stdint.h>

#include "gs_trace.h"

enum an_cs_finding {
    AN_CS_SMALL_READS = 0, /* read family on files, fewer than 64 KiB asked */
    AN_CS_METADATA,        /* stat family and opens */
    AN_CS_PAGEABLE_COPY,   /* cuda_memcpy whose host side is pageable */
    AN_CS_MMAP,            /* mmap of files (reads through them are page faults) */
    AN_CS_NFIND
};

#define AN_CS_SMALL_READ_MAX (64u << 10)

typedef struct an_cs_opts {
    unsigned top;                     /* sites per finding (default 5) */
    const char *const *symbol_paths; /* --symbol-path folders */
    size_t nsymbol_paths;
    int no_lines;                     /* 1: no addr2line */
    int no_tmp_perfmap;               /* 1: never read /tmp/perf-PID.map */
} an_cs_opts;

typedef struct an_cs_frame {
    uint64_t addr;        /* the return address as recorded (one process's) */
    const char *module;   /* mapping path; "" anonymous, NULL no mapping */
    const char *build_id; /* hex or "" */
    uint64_t offset;      /* file offset of addr - 1 in module */
    int status;           /* enum an_sym_status (an_symbols.h) */
    char func[256];
    uint64_t func_off;
    char file[512];
    unsigned line;
} an_cs_frame;

typedef struct an_cs_site {
    double est_ns;    /* estimated time in the calls of this stack */
    double est_calls; /* estimated calls */
    double est_bytes; /* estimated bytes read (reads), copied or mapped (mmap) */
    double share;     /* of the finding's metric (time; bytes for mmap), 0..1 */
    uint64_t samples; /* stacked events seen */
    uint32_t nprocs;  /* processes it was seen in */
    uint32_t nframes;
    an_cs_frame *frames;
} an_cs_site;

typedef struct an_cs_find {
    uint64_t calls, time_ns, bytes; /* every event of the finding; bytes: read (what
                                     * the reads got), copied or mapped */
    uint64_t requested;             /* bytes the reads asked for (copies, mmaps: = bytes) */
    uint64_t stacked;               /* events that carried a stack */
    size_t nsites_all;              /* distinct stacks */
    size_t nsites;                  /* shown: the top ones */
    an_cs_site *sites;
} an_cs_find;

typedef struct an_cs an_cs;

an_cs *an_cs_new(const an_cs_opts *opts);
void an_cs_free(an_cs *cs);
/* trace_path: the process's .gst file (its .perfmap sits beside it). */
void an_cs_proc_begin(an_cs *cs, const char *trace_path, const gs_proc_info *pi);
void an_cs_event(an_cs *cs, const gs_reader *r, const gs_event *ev);
/* The kinds an_cs_event looks at (GS_K_MAX entries, nonzero = wanted), so a
 * caller can skip the rest (an_hooks.event_kinds): the read class is
 * AN_HOOK_EVENTS_SMALL_FILE (an_run.h), the only reads an_cs_event counts,
 * the others AN_HOOK_EVENTS_ALL. *small_bytes gets the size below which a
 * read is small (AN_CS_SMALL_READ_MAX, for an_hooks.small_bytes): the table
 * and its threshold go together. */
const unsigned char *an_cs_kinds(uint64_t *small_bytes);
void an_cs_proc_end(an_cs *cs, const gs_reader *r);
/* Files read on other threads: a shard of cs takes one process (proc_begin,
 * events, proc_end, on any one thread); an_cs_merge then adds it to cs, the
 * shards in file order, with the result one an_cs fed every file in that
 * order makes. The shard is then only to be freed. */
an_cs *an_cs_shard(const an_cs *cs);
void an_cs_merge(an_cs *cs, an_cs *shard);
void an_cs_finish(an_cs *cs);

/* Finding k (enum an_cs_finding); never NULL after an_cs_finish. */
const an_cs_find *an_cs_get(const an_cs *cs, int k);
const char *an_cs_finding_name(int k);  /* "small_reads", ... */
const char *an_cs_finding_title(int k); /* "small reads (< 64 KiB)", ... */
/* 1 when any event carried a stack (the run was traced with stacks). */
int an_cs_has_stacks(const an_cs *cs);
/* What the stacks can say about Python, or NULL: "only native frames ...". */
const char *an_cs_python_note(const an_cs *cs);

/* After an_cs_finish, for a second pass over the files (the Perfetto
 * export): per process an_cs_proc_begin, then an_cs_mapping for each event
 * (only mapping records are used; nothing is counted again), and for an
 * event with a stack an_cs_event_site: the shown site that is its call
 * site, or NULL. Do not call an_cs_proc_end in that pass. */
void an_cs_mapping(an_cs *cs, const gs_reader *r, const gs_event *ev);
const an_cs_site *an_cs_event_site(an_cs *cs, const gs_reader *r, const gs_event *ev);

#endif
