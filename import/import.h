/* import.h — the pieces of `gpustarve import` (PyTorch profiler / Kineto
 * trace JSON to a gpustarve run directory) and the seams between them:
 *
 *   cmd_import.c        the command (analyzer/cmd/): options, output
 *                       directory, summary line
 *   import_unpack.c     the input files: plain, gzip, xz or zstd (told by
 *                       their first bytes), decompressed as a stream
 *   import_json.cpp     streaming JSON: splits the document into top-level
 *                       values and batches of trace events, parses them with
 *                       simdjson On-Demand and hands out flat ik_event structs
 *                       (the only C++ file of the project; see RATIONALE there)
 *   import_conv.c   what a Kineto event means: categories of every format
 *                       since PyTorch 1.8, copy names, ranges, threads, devices
 *   import_names.c  the distinct names (string table) and the thread and
 *                       process names, within the import's limits
 *   import_sort.c   bounded-memory external sort of the converted records
 *                       by time, the host-call <-> GPU-copy link, and the
 *                       .gst writer (trace/'s encoder, header and frames)
 *
 * Must never: hold the document or its events in memory (memory is bounded
 * by the sort's run buffer, the distinct names, the JSON window and the
 * decompressor's window, each within a limit below: docs/import.md,
 * "Limits"), or guess what the trace does not record (worker processes,
 * their count, I/O).
 */
#ifndef CMD_IMPORT_H
#define CMD_IMPORT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- limits (docs/import.md, "Limits") ------------------------------------------- */

/* RATIONALE: a hostile document of a few MB must not cost GBs or hours.
 * Each limit is far above what a real profile holds (a few thousand
 * distinct names, dozens of threads, events of a few KB, 8 GPUs).
 *   IK_VALUE_MAX        one trace event, or one top-level value the import
 *                       reads, in bytes: past it the import stops (exit 2)
 *   IK_NAMES_MAX,       distinct names kept (kernels, ranges, threads, calls)
 *   IK_NAME_BYTES_MAX   and their text: past either, a new name is merged
 *                       into one per kind (counted, said once)
 *   IK_THREAD_NAMES_MAX thread and process names (distinct pid/tid): later
 *                       ones are left out (counted)
 *   IK_DEVICES_MAX      deviceProperties entries kept */
#define IK_VALUE_MAX (16u << 20)
#define IK_NAMES_MAX (1u << 20)
#define IK_NAME_BYTES_MAX (64u << 20)
#define IK_THREAD_NAMES_MAX 65536u
#define IK_DEVICES_MAX 256u

/* ---- streaming JSON (import_json.cpp) ------------------------------------------ */

/* A string inside the document (not NUL-terminated; valid during the callback). */
typedef struct ik_str {
    const char *s;
    size_t n;
} ik_str;

/* An id that is a number in some formats and a string in others
 * (Kineto 1.8/1.9 wrote "tid": "25738" and "tid": "stream 7"). */
typedef struct ik_id {
    int is_num, is_str;
    int64_t num;
    ik_str str;
} ik_id;

/* One element of traceEvents, the fields the import reads. Timestamps are
 * converted from the document's microseconds (with up to 3 decimals) to
 * nanoseconds exactly, without going through a double. */
typedef struct ik_event {
    char ph; /* 'X', 'M', 'i', 's', 'f', ...; 0 when absent */
    ik_str cat, name;
    ik_id pid, tid;
    int has_ts, has_dur;
    int bad_time; /* ts or dur is a number that does not fit int64 nanoseconds */
    int64_t ts_ns, dur_ns;
    /* args */
    int has_device, has_stream, has_corr, has_bytes;
    int64_t device, stream, corr, bytes;
    ik_str arg_name; /* args.name (metadata events: thread_name, process_name) */
} ik_event;

/* One element of deviceProperties. */
typedef struct ik_device {
    int64_t id;
    ik_str name;
    uint64_t total_mem;
    int64_t sms, major, minor;
} ik_device;

typedef struct ik_callbacks {
    void *ctx;
    /* each trace event; return 0 to go on, nonzero to stop (out of memory) */
    int (*on_event)(void *ctx, const ik_event *e);
    void (*on_device)(void *ctx, const ik_device *d);
    /* distributedInfo: rank / world_size (-1 when absent) */
    void (*on_dist)(void *ctx, int64_t rank, int64_t world_size);
    /* other top-level facts: "schemaVersion", "baseTimeNanoseconds" */
    void (*on_number)(void *ctx, const char *key, int64_t v);
    /* top-level strings: "host_name" (Kineto 2.x) */
    void (*on_string)(void *ctx, const char *key, const char *s, size_t n);
} ik_callbacks;

/* Reads up to n bytes of the document into buf: bytes read, 0 at the end,
 * -1 on error (the reader keeps its own message). */
typedef long (*ik_read_fn)(void *src, char *buf, size_t n);

typedef struct ik_json_stats {
    uint64_t bytes;       /* JSON bytes read */
    uint64_t events;      /* trace events delivered */
    uint64_t repaired;    /* events parsed only after repair (bare N/A, nan, bad UTF-8, control bytes) */
    uint64_t bad;         /* events that could not be parsed at all: skipped */
    uint64_t control_bytes; /* raw control bytes inside strings, read as spaces */
    uint64_t window_max;  /* largest window the reader needed (bytes) */
} ik_json_stats;

/* Stream the whole document from rd through the callbacks. Returns 0, or -1
 * with a message in err (not JSON, not a trace-event document, truncated,
 * read error). Memory: one window (a few MiB, grown only for a single value
 * larger than it) and simdjson's parser for one batch. */
int ik_json_read(ik_read_fn rd, void *src, const ik_callbacks *cb, ik_json_stats *st, char *err,
                 size_t errlen);

/* Microsecond text ("1623142623529248", "1712195495501688.512", "2.5e3",
 * "-3") to nanoseconds, exactly for up to 3 decimals. 0 on success, -1 when
 * it is not a number, -2 when it is one whose nanoseconds do not fit int64
 * (beyond about 292 years). Exposed for the unit test. */
int ik_us_to_ns(const char *s, size_t n, int64_t *out);


/* ---- input files (import_unpack.c) ---------------------------------------------- */

typedef struct ik_input ik_input;

/* Opens path and tells its format by its first bytes, never by its name:
 * plain JSON, gzip, xz or zstd (concatenated gzip members, xz streams or
 * zstd frames read as one document). Returns NULL with a message in err: a
 * missing file, a directory, or a format it does not read, named with the
 * command that unpacks it ("FILE is bzip2-compressed: unpack it with
 * bunzip2 first"). show_progress: a progress line on stderr every 2 s. */
ik_input *ik_input_open(const char *path, int show_progress, char *err, size_t errlen);

/* An ik_read_fn over the decompressed document (src: the ik_input); on -1
 * ik_input_error says why (a read error, a damaged or truncated stream, a
 * window larger than the import allows). */
long ik_input_read(void *src, char *buf, size_t n);

/* The last error ("" when none). */
const char *ik_input_error(const ik_input *in);

/* Clears the progress line if one was shown, frees everything; NULL is fine. */
void ik_input_close(ik_input *in);


/* ---- converted records and their external sort (import_sort.c) ---------------- */

/* One record of the output trace before it is encoded: a gs_event's fields
 * the import uses, with the sort key. ts is relative to the document's
 * base time (the writer adds it). */
typedef struct ik_rec {
    int64_t ts;
    uint64_t dur, bytes, stream, corr, aux, aux2;
    uint64_t seq; /* input order: the last sort key, so the output is deterministic */
    uint32_t tid, str, dev;
    uint16_t kind;  /* enum gs_kind */
    uint8_t order;  /* at equal ts: IK_ORD_END first, then IK_ORD_MID, then IK_ORD_START */
    uint8_t pad;
} ik_rec;

enum { IK_ORD_END = 0, IK_ORD_MID = 1, IK_ORD_START = 2 };

typedef struct ik_sorter ik_sorter;

/* A sorter that keeps up to run_bytes of records in memory and spills
 * sorted runs to one unlinked temporary file in tmpdir (allocates). NULL
 * when out of memory. */
ik_sorter *ik_sorter_new(const char *tmpdir, size_t run_bytes);
/* Add a record (its seq is set here). 0, or -1 with a message in
 * ik_sorter_error (the temporary file could not be written). */
int ik_sorter_add(ik_sorter *s, const ik_rec *r);
/* Hand every record to fn in (ts, order, seq) order; fn returns 0 to go on.
 * 0, or -1 (see ik_sorter_error, or fn's own failure). */
int ik_sorter_drain(ik_sorter *s, int (*fn)(void *ctx, const ik_rec *r), void *ctx);
const char *ik_sorter_error(const ik_sorter *s);
uint64_t ik_sorter_count(const ik_sorter *s);
/* Runs written to the temporary file (0: everything fitted in memory). */
uint64_t ik_sorter_spills(const ik_sorter *s);
void ik_sorter_free(ik_sorter *s);

/* ---- conversion of Kineto events (import_conv.c) ------------------------------ */

/* Flags of a name, computed once per distinct name. */
enum {
    IK_SF_STEP = 1,   /* matches the analyzer's default step-range pattern (ProfilerStep#N) */
    IK_SF_FETCH = 2,  /* matches its default fetch-range pattern (DataLoader __next__) */
    IK_SF_SINGLE = 4, /* _SingleProcessDataLoaderIter: num_workers=0 */
    IK_SF_MULTI = 8,  /* _MultiProcessingDataLoaderIter: worker processes */
};

typedef struct ik_thread_name {
    int64_t pid;
    uint32_t tid, str;
} ik_thread_name;

/* Names by (pid, tid), in the order first seen; a later name replaces an
 * earlier one. */
typedef struct ik_name_list {
    ik_thread_name *v;
    size_t n, cap;
    uint32_t *hash; /* open addressing: 0 empty, else index + 1 */
    uint32_t hcap;
} ik_name_list;

typedef struct ik_dev {
    int64_t id;
    uint32_t name; /* string id */
    uint64_t total_mem;
    int64_t sms, major, minor;
} ik_dev;

/* What a name is, for the name it is merged into past the limits. */
enum ik_name_kind { IK_NAME_KERNEL, IK_NAME_RANGE, IK_NAME_THREAD, IK_NAME_CALL, IK_NAME_KINDS };

/* What one input file turns into: metadata, counts, the string table and
 * the sorted records. Filled by the callbacks of ik_conv_callbacks. */
typedef struct ik_conv {
    /* strings: id -> text (ids from 1); the hash table lives in import_names.c */
    char *arena;
    size_t arena_len, arena_cap;
    uint64_t *soff;   /* id -> arena offset */
    uint32_t *slen;   /* id -> length */
    uint8_t *sflags;  /* id -> IK_SF_* */
    uint32_t nstr, capstr;
    uint32_t *hash; /* open addressing: 0 empty, else id */
    uint32_t hcap;
    uint32_t merged_id[IK_NAME_KINDS + 1]; /* the name past-limit names become (+1: NCCL kernels) */
    uint32_t first_step, first_fetch;     /* the first step / DataLoader range name kept */
    char name_buf[4097];                   /* a past-limit name, NUL-terminated, to classify */
    struct gs_ranges *re; /* the step and batch-wait patterns (gs_ranges.h) */
    /* metadata */
    int64_t pid;          /* the CPU process (first CPU event's pid), -1 unknown */
    uint64_t other_pids;  /* CPU events of another pid (kept in this file) */
    int64_t rank, world_size;
    int64_t schema_version, base_ns;
    int have_base;
    char host[64]; /* host_name (Kineto 2.x), "" when absent */
    uint64_t n_legacy; /* events of the legacy autograd profiler (no "cat") */
    ik_name_list tnames; /* thread_name per (pid, tid) */
    ik_name_list pnames; /* process_name per pid (tid unused) */
    ik_dev *devs;
    size_t ndevs, capdevs;
    uint64_t used_devs; /* bit d: device d ran something */
    int64_t first_ts, last_ts;
    uint64_t range_id;
    /* counts by what they became */
    uint64_t n_kernel, n_memcpy, n_memset, n_runtime, n_copy_calls, n_sync_calls;
    uint64_t n_ranges, n_steps, n_fetch, n_flow, n_other;
    uint64_t n_pageable_h2d, n_pinned_h2d;
    /* what the limits and the time range cost: events named by a merged
     * name, thread/process names and devices left out, events skipped */
    uint64_t n_names_merged, n_thread_names_over, n_devices_over, n_bad_time;
    int iter_single, iter_multi;
    ik_sorter *sorter;
    int failed;
} ik_conv;

/* New conversion state (allocates); records are sorted in tmpdir. NULL when
 * out of memory. */
ik_conv *ik_conv_new(const char *tmpdir, size_t run_bytes);
void ik_conv_free(ik_conv *c);
/* Callbacks to pass to ik_json_read. */
void ik_conv_callbacks(ik_conv *c, ik_callbacks *cb);
/* Text of string id (NUL-terminated), and its length. */
const char *ik_conv_string(const ik_conv *c, uint32_t id, size_t *len);
/* Intern a string: its id (>= 1), or 0 when out of memory. No limit: for
 * the few strings the import writes itself. */
uint32_t ik_conv_intern(ik_conv *c, const char *s, size_t n);
/* A name of the document (import_names.c): its id, within the limits (past
 * them the id of the name its kind is merged into, counted in
 * n_names_merged), or 0 when out of memory. *flags (may be NULL): the
 * IK_SF_* of the name itself, merged or not. */
uint32_t ik_conv_name(ik_conv *c, const char *s, size_t n, enum ik_name_kind kind,
                      uint8_t *flags);
/* Set the name of (pid, tid) in l (a later one replaces an earlier one):
 * 0, or -1 when out of memory. Past IK_THREAD_NAMES_MAX entries a new
 * (pid, tid) is left out and counted. */
int ik_names_set(ik_conv *c, ik_name_list *l, int64_t pid, uint32_t tid, uint32_t str);
void ik_names_free(ik_name_list *l);
/* FNV-1a of n bytes, folded to 32 bits. */
uint32_t ik_hash_bytes(const char *s, size_t n);
/* Parse "Memcpy HtoD (Pageable -> Device)" / "Memset (Device)" into the
 * gpu_memcpy / gpu_memset aux of docs/trace-format.md. */
uint64_t ik_memcpy_aux(const char *name, size_t n);
uint64_t ik_memset_aux(const char *name, size_t n);

/* ---- the .gst writer (import_write.c) -------------------------------------- */

typedef struct ik_write_info {
    const char *path;   /* output file */
    const char *source; /* the input's name, for the header's argv and the note */
    const char *host;   /* the header's host name */
    uint64_t linked, unlinked; /* copy calls matched / not matched to their GPU copy */
    uint64_t records, bytes;   /* written */
    uint64_t bad_time; /* records left out: with the base time, past 2^63 - 1 ns */
} ik_write_info;

/* Write the converted file: header, then the process's threads, devices,
 * the import note and what the trace says of the DataLoader, then every
 * record in time order (draining c->sorter). 0, or -1 with a message. */
int ik_write_gst(ik_conv *c, ik_write_info *wi, char *err, size_t errlen);

#ifdef __cplusplus
}
#endif

#endif
