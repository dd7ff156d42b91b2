/* gs_trace.h — the trace library's public API: the decoded event, the kind
 * table, error codes, the record codec (raw frame encoder/decoder), the file
 * header and frame helpers, and the file reader.
 *
 * Used by preload/ and cupti/ (encoder, header, frame compression) and by the
 * analyzer (reader). Depends on libzstd only. No function here allocates
 * except gs_reader_open / gs_frame_compressor_new, which say so.
 */
#ifndef GS_TRACE_H
#define GS_TRACE_H

#include <stddef.h>
#include <stdint.h>

#include "gs_format.h"

/* ---- errors ---------------------------------------------------------- */

typedef enum gs_err {
    GS_OK = 0,
    GS_ERR_IO = -1,        /* a system call failed (errno kept) */
    GS_ERR_MAGIC = -2,     /* not a gpustarve trace */
    GS_ERR_VERSION = -3,   /* unsupported format version */
    GS_ERR_TRUNCATED = -4, /* file ends inside a header or frame */
    GS_ERR_CORRUPT = -5,   /* bytes present but invalid */
    GS_ERR_NOMEM = -6,
    GS_ERR_FULL = -7,      /* output buffer has no room for the record */
    GS_ERR_ARG = -8,       /* invalid argument */
    GS_ERR_KIND = -9,      /* record kind unknown to this reader */
    GS_ERR_ZSTD = -10,     /* compression failed */
    GS_ERR_LIVE = -11,     /* the process's live file could not be read (gs_reader_live_problem) */
} gs_err;

/* Short English text for an error code; never NULL. */
const char *gs_strerror(int err);

/* ---- events ---------------------------------------------------------- */

/* One decoded record. Fields a kind does not carry hold their defaults
 * (see gs_event_clear): fd -1, offset -1, everything else 0. */
typedef struct gs_event {
    uint16_t kind;   /* enum gs_kind */
    uint8_t fd_kind; /* GS_FDK_* */
    uint8_t reserved;
    int32_t fd;
    uint32_t str; /* string id: path, thread name, note text, ... */
    uint32_t tid; /* set by the reader from the last TID record */
    uint64_t ts;  /* ns, CLOCK_MONOTONIC */
    uint64_t dur; /* ns */
    uint64_t bytes;
    int64_t ret;
    int64_t offset;
    uint64_t aux;
    uint64_t aux2;
    uint64_t stream; /* GPU stream id */
    uint64_t corr;   /* CUDA correlation id */
    uint32_t dev;    /* GPU device ordinal */
    uint32_t stack;  /* call stack id (STACK record), 0 = none (1.1) */
    uint32_t stack_weight; /* calls this stacked event stands for (>= 1 when stack) */
    uint32_t reserved2;
} gs_event;

void gs_event_clear(gs_event *ev);

/* ---- what an event means (generated from GS_KIND_LIST) ------------------ */

/* The class of every kind id, GS_CLASS_NONE for ids not in the list. */
extern const uint8_t gs_kind_classes[GS_K_MAX];
static inline unsigned gs_kind_class(unsigned kind)
{
    return kind < GS_K_MAX ? gs_kind_classes[kind] : GS_CLASS_NONE;
}
/* "read", "open", ... (docs/trace-format.md, "Kinds"); "none" when unknown. */
const char *gs_class_name(unsigned cls);

/* A call that reads file or pipe data (read family, fread, fgets). */
static inline int gs_kind_is_read(unsigned k) { return gs_kind_class(k) == GS_CLASS_READ; }
/* A call that opens a file by name (open family, creat, fopen). */
static inline int gs_kind_is_open(unsigned k) { return gs_kind_class(k) == GS_CLASS_OPEN; }
/* A call that reads a file's attributes (stat family). */
static inline int gs_kind_is_stat(unsigned k) { return gs_kind_class(k) == GS_CLASS_STAT; }
/* Metadata: opens and stat calls, the per-file cost of small-file datasets. */
static inline int gs_kind_is_metadata(unsigned k)
{
    return gs_kind_is_open(k) || gs_kind_is_stat(k);
}
/* A wait on pipes or sockets (poll, select, epoll). */
static inline int gs_kind_is_wait(unsigned k) { return gs_kind_class(k) == GS_CLASS_WAIT; }
/* A file mapping (mmap, mmap64, munmap). */
static inline int gs_kind_is_mmap(unsigned k) { return gs_kind_class(k) == GS_CLASS_MMAP; }
/* A hooked POSIX or stdio call: it carries fd, fd_kind, path, bytes, ret. */
static inline int gs_kind_is_io_call(unsigned k)
{
    switch (gs_kind_class(k)) {
    case GS_CLASS_OPEN: case GS_CLASS_CLOSE: case GS_CLASS_DUP: case GS_CLASS_READ:
    case GS_CLASS_MMAP: case GS_CLASS_STAT: case GS_CLASS_WAIT:
        return 1;
    }
    return 0;
}
/* GPU activity (an interval on a device and stream). */
static inline int gs_kind_is_gpu(unsigned k) { return gs_kind_class(k) == GS_CLASS_GPU; }
/* A host-side CUDA runtime call. */
static inline int gs_kind_is_cuda(unsigned k) { return gs_kind_class(k) == GS_CLASS_CUDA; }
/* An NVTX range record or mark. */
static inline int gs_kind_is_nvtx(unsigned k) { return gs_kind_class(k) == GS_CLASS_NVTX; }
/* An NVTX record that opens or closes a range (push, pop, start, end). */
static inline int gs_kind_is_nvtx_range(unsigned k)
{
    return gs_kind_is_nvtx(k) && k != GS_K_NVTX_MARK;
}

/* ---- packed fields ---------------------------------------------------------- */

/* gpu_memcpy and cuda_memcpy: the copy's direction (GS_DIR_*). */
static inline unsigned gs_copy_dir(const gs_event *e)
{
    return (unsigned)(e->aux & 0xff);
}
/* gpu_memcpy: source and destination memory kinds (GS_MEM_*). */
static inline unsigned gs_copy_src_mem(const gs_event *e)
{
    return (unsigned)(e->aux >> 8) & 0xff;
}
static inline unsigned gs_copy_dst_mem(const gs_event *e)
{
    return (unsigned)(e->aux >> 16) & 0xff;
}
/* cuda_memcpy: the host side's memory kind (pinned or pageable, from the
 * collector's registry; GS_MEM_UNKNOWN for device-only copies). */
static inline unsigned gs_copy_host_mem(const gs_event *e)
{
    return (unsigned)(e->aux >> 8) & 0xff;
}
/* gpu_memset: the memory kind. */
static inline unsigned gs_memset_mem(const gs_event *e)
{
    return (unsigned)(e->aux & 0xff);
}
/* The memory a host-to-device copy came from: GS_MEM_* of the source for a
 * gpu_memcpy HtoD, of the host side for a cuda_memcpy HtoD; GS_MEM_UNKNOWN
 * for any other event. */
static inline unsigned gs_h2d_source_mem(const gs_event *e)
{
    if (gs_copy_dir(e) != GS_DIR_HTOD)
        return GS_MEM_UNKNOWN;
    if (e->kind == GS_K_GPU_MEMCPY)
        return gs_copy_src_mem(e);
    if (e->kind == GS_K_CUDA_MEMCPY)
        return gs_copy_host_mem(e);
    return GS_MEM_UNKNOWN;
}
/* Bytes a read-class event transferred: max(ret, 0), or ret x size (aux)
 * for fread, whose ret counts items. 0 for other classes. */
static inline uint64_t gs_read_bytes(const gs_event *e)
{
    if (!gs_kind_is_read(e->kind) || e->ret <= 0)
        return 0;
    if (e->kind == GS_K_FREAD || e->kind == GS_K_FREAD_UNLOCKED)
        return (uint64_t)e->ret * e->aux;
    return (uint64_t)e->ret;
}
/* Wait-class events: the timeout in ms, or -1 for none (forever). */
static inline int64_t gs_wait_timeout_ms(const gs_event *e)
{
    return e->aux ? (int64_t)(e->aux - 1) : -1;
}
/* fopen, fopen64: the mode string (at most 8 bytes, packed little-endian)
 * into buf (>= 9 bytes); returns its length. */
size_t gs_fopen_mode(const gs_event *e, char *buf);
/* exit: how the process ended (enum gs_exit_how) and its status (exit
 * status, or the signal number). */
static inline uint64_t gs_exit_how_of(const gs_event *e) { return e->aux2; }
static inline uint64_t gs_exit_status(const gs_event *e) { return e->aux; }

/* cpu (1.3): a thread's own clocks, cumulative since the thread began.
 * Fields that gs_cpu_has() says were not measured read 0. */
static inline uint32_t gs_cpu_tid(const gs_event *e) { return (uint32_t)e->aux; }
static inline unsigned gs_cpu_source(const gs_event *e) { return (unsigned)(e->aux >> 32) & 0xff; }
static inline unsigned gs_cpu_has(const gs_event *e) { return (unsigned)(e->aux >> 40) & 0xff; }
static inline uint64_t gs_cpu_ns(const gs_event *e) { return e->bytes; }       /* user + system */
static inline uint64_t gs_cpu_runq_ns(const gs_event *e) { return e->aux2; }   /* runnable, not running */
static inline uint64_t gs_cpu_majflt(const gs_event *e) { return e->dev; }     /* major page faults */
static inline uint64_t gs_cpu_nvcsw(const gs_event *e) { return e->stream; }   /* voluntary switches */
static inline uint64_t gs_cpu_nivcsw(const gs_event *e) { return e->corr; }    /* involuntary */
/* bytes the thread caused to be read from storage (read() misses and page
 * faults alike: /proc task io read_bytes) */
static inline uint64_t gs_cpu_storage_bytes(const gs_event *e) { return (uint64_t)e->ret; }
const char *gs_cpu_source_name(unsigned src); /* "periodic", "marker", "birth", "unknown" */

/* step_begin, step_end, fetch_begin, fetch_end: aux2 bits 0-23 are the
 * loader, bits 24-31 what the marker stands for (docs/trace-format.md,
 * "NVTX ranges and gpustarve markers"); traces before the classes hold
 * class 0 only. */
enum gs_mark_class {
    GS_MARK_PLAIN = 0,     /* a DataLoader's batches and steps, the C marker API */
    GS_MARK_EXPLICIT = 1,  /* the program's own gpustarve.step() / gpustarve.fetch() */
    GS_MARK_OPTIMIZER = 2, /* step_end: an optimizer's step() returned */
    GS_MARK_BACKWARD = 3,  /* step_end: a backward() returned */
    GS_MARK_WAIT = 4,      /* fetch: the thread waits for a result another thread makes */
    GS_MARK_ITEM = 5,      /* fetch: a pool thread runs one work item */
    GS_MARK_COLLATE = 6,   /* fetch: the collate function makes a batch of its samples */
    GS_MARK_LOAD = 7,      /* fetch: the thread maps a file to read a batch (np.memmap's life) */
    GS_MARK_FORWARD = 8,   /* fetch_end alone: the thread's first module forward after its
                            * last optimizer or backward step_end (its own batch preparation) */
};
/* RATIONALE: a loop's own code between an update and its forward copies a
 * few tensors to the GPU (inputs, targets, a mask) and may wait for the GPU
 * once (a logged loss); a span cut more often is not a batch's making (the
 * analyzer counts no wait of it), so the collector samples the clocks
 * around this many of a thread's CUDA calls there at most. */
#define GS_PREP_SAMPLED_CUTS 8
static inline unsigned gs_mark_class(const gs_event *e) { return (unsigned)(e->aux2 >> 24) & 0xff; }
static inline uint32_t gs_mark_loader(const gs_event *e) { return (uint32_t)e->aux2 & 0xffffffu; }

/* host_cpu (1.4): the machine's CPU time, cumulative since boot, summed over
 * the CPUs the process may run on (its affinity mask; every CPU when the
 * mask holds them all), in ns at the kernel's tick (USER_HZ, 10 ms). */
static inline uint64_t gs_host_busy_ns(const gs_event *e) { return e->bytes; } /* user, nice,
                                                    system, irq, softirq, steal */
static inline uint64_t gs_host_idle_ns(const gs_event *e) { return e->aux; }   /* idle, iowait */
static inline uint64_t gs_host_cpus(const gs_event *e) { return e->aux2; }     /* CPUs summed */

/* Names of packed values, as dump prints them. Unknown values give
 * "unknown" (gs_exit_how_name: NULL). */
const char *gs_dir_name(uint64_t dir);        /* "HtoD", "DtoH", ... */
const char *gs_mem_name(uint64_t mem);        /* "pageable", "pinned", ... */
const char *gs_gpu_sync_name(uint64_t type);  /* "stream_synchronize", ... */
const char *gs_exit_how_name(uint64_t how);   /* "exit", "_exit", "signal" */

/* Name ("pread64") of a kind, or NULL when unknown. */
const char *gs_kind_name(unsigned kind);
/* Field mask (GS_F_*) of a kind; 0 for STRING/TID and unknown kinds. */
unsigned gs_kind_fields(unsigned kind);
/* 1 when the kind is known to this build. */
int gs_kind_known(unsigned kind);
/* Kind id for a name, or 0. */
unsigned gs_kind_by_name(const char *name);
/* "file", "pipe", "socket", "dir", "other", "unknown". */
const char *gs_fdkind_name(unsigned fdk);

/* ---- raw frame encoder ------------------------------------------------ */

/* Encodes records into a caller-owned buffer, applying the delta rules of
 * docs/trace-format.md. Never allocates. */
/* The fields a REPEAT record takes from the event before it. */
typedef struct gs_repeat_key {
    uint64_t bytes, aux, aux2, stream, corr;
    int64_t ret;
    int32_t fd;
    uint32_t str, dev;
    uint16_t kind;
    uint8_t fd_kind;
    uint8_t valid; /* 1: the frame's last event can be repeated */
} gs_repeat_key;

typedef struct gs_encoder {
    uint8_t *buf;
    size_t cap;
    size_t len;
    uint32_t nrec;
    uint64_t prev_ts;
    int64_t next_off;
    uint64_t prev_end;  /* ts + dur of the last event (REPEAT's reference) */
    gs_repeat_key last; /* the last event of the current tid run */
} gs_encoder;

void gs_encoder_init(gs_encoder *e, uint8_t *buf, size_t cap);
/* Start a new frame in the same buffer (len, nrec and deltas reset). */
void gs_encoder_reset(gs_encoder *e);
/* Append one record. Return GS_OK, GS_ERR_FULL (nothing written) or
 * GS_ERR_KIND / GS_ERR_ARG. */
int gs_encode_tid(gs_encoder *e, uint32_t tid);
int gs_encode_string(gs_encoder *e, uint32_t id, const char *s, size_t len);
/* An event with ev->stack != 0 is preceded by its CALLSITE record (stack id
 * and weight); both are written or neither. An event equal to the one
 * before it in every field but ts and dur (offset continuing, no stack) is
 * written as a REPEAT record (docs/trace-format.md). */
int gs_encode_event(gs_encoder *e, const gs_event *ev);
/* n events (n >= 1) that each repeat the one before them (the frame's last
 * event, then each other), given by their ts and dur only: the caller has
 * checked that every other field is the last event's (e->last: same kind,
 * fd, fd_kind, str, bytes, ret, aux, aux2, dev, stream, corr; no call stack;
 * when the kind carries an offset, each one's is e->next_off advanced by
 * ret per event before it). One event is written as a REPEAT record, more
 * as one REPEATS record (docs/trace-format.md). Returns how many were
 * written: n, fewer when the buffer fills, 0 when e->last.valid is 0. */
size_t gs_encode_repeats(gs_encoder *e, const uint64_t *ts, const uint64_t *dur, size_t n);
/* How many events a run may still add to e's frame (gs_encode_repeats or
 * gs_encode_repeats_cols); 0 when e->last.valid is 0. */
size_t gs_encode_repeats_room(const gs_encoder *e);
struct gs_runcols;
/* gs_encode_repeats for a run whose n events the caller has put in c
 * (gs_runcols.h: started at e->prev_end, the same checks on every event):
 * the same bytes. Returns n, or 0 (nothing written) when n is 0 or more than
 * gs_encode_repeats_room(e). */
size_t gs_encode_repeats_cols(gs_encoder *e, const struct gs_runcols *c, size_t n);
/* Worst-case encoded size of one event in a gs_encode_repeats run. */
#define GS_REPEAT_MAX_ENCODED 21
/* STACK record: defines stack id (>= 1) as frames[0..n) (return addresses,
 * innermost first; 1 <= n <= GS_STACK_FRAMES_MAX). */
int gs_encode_stack(gs_encoder *e, uint32_t id, const uint64_t *frames, size_t n);
/* Worst-case encoded size of one gs_encode_event record (CALLSITE included). */
#define GS_EVENT_MAX_ENCODED 160
/* Worst-case encoded size of one STACK record. */
#define GS_STACK_MAX_ENCODED (1 + 10 + 10 + 10 * GS_STACK_FRAMES_MAX)

/* ---- raw frame decoder ------------------------------------------------ */

/* Called for each STRING record met while decoding. */
typedef void (*gs_string_fn)(void *ctx, uint32_t id, const char *s, size_t len);
/* Called for each STACK record: frames[0..n), innermost first (valid during
 * the call only). */
typedef void (*gs_stack_fn)(void *ctx, uint32_t id, const uint64_t *frames, size_t n);

/* Decode a whole raw frame into events[] (at most max). Strings go to
 * on_string; TID records set the tid of the events after them. Returns the
 * number of events (>= 0) or a negative gs_err. *tid carries the current
 * thread id in and out (frames normally start with a TID record). */
long gs_decode_frame(const uint8_t *raw, size_t len, uint32_t nrec, gs_event *events, size_t max,
                     uint32_t *tid, gs_string_fn on_string, void *ctx);
/* Resumable decoding of one raw frame, for readers that want events in
 * small batches (a whole frame's events can be several MiB, past the CPU
 * caches). */
typedef struct gs_decoder {
    const uint8_t *p, *end;
    uint32_t left; /* records not yet decoded */
    uint32_t cs_stack, cs_weight; /* a CALLSITE waiting for its event */
    uint64_t prev_ts;
    int64_t next_off;
    int have_prev;  /* prev holds the last event of the current tid run */
    gs_event prev;  /* (the one a REPEAT record repeats) */
    /* a REPEATS record being decoded: its gap column [run_g, run_gend)
     * (p is in its duration column), and its events not yet out */
    const uint8_t *run_g, *run_gend;
    uint32_t run_left;
} gs_decoder;

void gs_decoder_init(gs_decoder *d, const uint8_t *raw, size_t len, uint32_t nrec);
/* Decode records until max events are out or the frame's records are done.
 * Returns the events decoded (>= 0) or a negative gs_err. Once d->left is 0
 * every byte of the frame must have been used (else GS_ERR_CORRUPT). */
long gs_decode_some(gs_decoder *d, gs_event *events, size_t max, uint32_t *tid,
                    gs_string_fn on_string, gs_stack_fn on_stack, void *ctx);

/* The decoder packs long varints with one BMI2 PEXT where the CPU has a fast
 * one (checked once, at the first decode), else with shifts; both give the
 * same events. gs_decode_portable(1) makes every later decode use the
 * shifts (tests and benchmarks compare the two), (0) checks the CPU again.
 * gs_decode_uses_pext() says which one decodes now. */
void gs_decode_portable(int on);
int gs_decode_uses_pext(void);

/* The same, with STACK records passed to on_stack (may be NULL: skipped).
 * A CALLSITE record sets stack and stack_weight of the event that follows. */
long gs_decode_frame_cb(const uint8_t *raw, size_t len, uint32_t nrec, gs_event *events,
                        size_t max, uint32_t *tid, gs_string_fn on_string, gs_stack_fn on_stack,
                        void *ctx);

/* ---- file header -------------------------------------------------------- */

typedef struct gs_proc_info {
    uint64_t pid, ppid;
    uint64_t mono_ns, real_ns;
    int32_t rank, local_rank, world_size;
    uint32_t flags;
    uint32_t exec_seq;
    uint16_t version_major, version_minor;
    const char *host; /* NUL-terminated */
    uint32_t argc;
    const char *argv; /* argv_len bytes: argc NUL-terminated strings */
    uint32_t argv_len;
} gs_proc_info;

/* Serialise a header into buf. Returns its size, or GS_ERR_FULL. */
long gs_header_build(uint8_t *buf, size_t cap, const gs_proc_info *pi);

/* ---- frames ------------------------------------------------------------- */

/* Compress raw (len bytes, nrec records) into out as a frame header plus one
 * zstd frame. cctx is a ZSTD_CCtx* created by gs_frame_cctx_new (allocates;
 * call it outside any hot path). Returns total bytes or a negative gs_err. */
void *gs_frame_cctx_new(int level);
void gs_frame_cctx_free(void *cctx);
size_t gs_frame_bound(size_t raw_len);
long gs_frame_compress(void *cctx, const uint8_t *raw, size_t len, uint32_t nrec, uint8_t *out,
                       size_t cap);
/* The same frame stored, not compressed: one zstd frame of raw blocks with
 * its content checksum (any zstd decoder reads it; docs/trace-format.md,
 * "Frames"). Costs a copy and a hash of len bytes. Total bytes or a
 * negative gs_err; gs_frame_bound(len) is always enough room. */
long gs_frame_store(const uint8_t *raw, size_t len, uint32_t nrec, uint8_t *out, size_t cap);
/* XXH64 of len bytes (trace/gs_xxh64.c): zstd's content checksum is its low
 * 32 bits, with seed 0. */
uint64_t gs_xxh64(const void *data, size_t len, uint64_t seed);

/* ---- reader ------------------------------------------------------------- */

typedef struct gs_reader gs_reader;

/* Open a trace file and parse its header (allocates). Returns GS_OK or a
 * negative gs_err; *out is NULL on error. */
int gs_reader_open(gs_reader **out, const char *path);
void gs_reader_close(gs_reader *r);
const gs_proc_info *gs_reader_info(const gs_reader *r);

/* Decode the next frame. On success (1) *events / *n hold its events, valid
 * until the next call. 0 at a clean end of file. Negative gs_err at the first
 * damaged or incomplete frame: gs_reader_offset tells where it starts and
 * gs_reader_unread tells how many bytes of the file were not read. */
int gs_reader_next_frame(gs_reader *r, const gs_event **events, size_t *n);
/* Like gs_reader_next_frame, but at most GS_READ_BATCH events a call, so a
 * consumer works on cache-sized batches (the analyzer's hot loop). A frame
 * spans several calls; an error is reported as for gs_reader_next_frame, at
 * the offset of the frame it is in (events of that frame already returned
 * stay valid: zstd's checksum has vouched for the frame's bytes). Do not mix
 * with gs_reader_next_frame on one reader. */
#define GS_READ_BATCH 1024
int gs_reader_next_batch(gs_reader *r, const gs_event **events, size_t *n);
/* String by id, or NULL when the trace has not defined it (yet). */
const char *gs_reader_string(const gs_reader *r, uint32_t id);
/* Frames of stack id (innermost first) and their count, or NULL when the
 * trace has not defined it (yet). Valid until gs_reader_close. */
const uint64_t *gs_reader_stack(const gs_reader *r, uint32_t id, size_t *n);
/* Largest stack id defined so far (ids are 1..n, possibly with gaps). */
uint32_t gs_reader_stack_count(const gs_reader *r);
/* 1 once the trace file's frames are done: later events come from the
 * process's live file (records it had not written when it ended) or are
 * the reader's closing records (docs/trace-format.md, "Live files"). */
int gs_reader_recovering(const gs_reader *r);

/* How a process image ended, as far as its trace (and live file) tell. */
enum gs_end {
    GS_END_UNKNOWN = 0, /* no exit record and no live file: still running, or killed */
    GS_END_EXIT = 1,    /* an exit record */
    GS_END_EXEC = 2,    /* it exec'd (the next image has its own file) */
    GS_END_SIGNAL = 3,  /* a fatal signal noted in its live file: crash or abort */
    GS_END_ABRUPT = 4,  /* its live file says it never ended: killed by a signal not caught, or running */
};

/* What one trace file accounts for. dropped/lost/ended are final once the
 * reader has returned 0 or an error. Every event the process recorded is in
 * events, dropped or lost. */
typedef struct gs_reader_totals {
    uint64_t events;      /* events handed out (frames, recovered, closing records) */
    uint64_t recovered;   /* of which recovered from the live file */
    uint64_t dropped;     /* dropped by the collector: a thread's buffer was full */
    uint64_t lost;        /* not written (output failed) or not readable (damage) */
    uint64_t damaged_records; /* records of damaged or unreadable frames, within lost */
    uint64_t gpu_dropped; /* CUPTI activity records dropped */
    int ended;            /* enum gs_end */
    /* 1 when the process left a live file that could not be read, whole or
     * in part (a damaged header, another version, a read error): the events
     * it held are missing, in a number no one can know; the reader then
     * ends with GS_ERR_LIVE, and gs_reader_live_problem says why */
    int live_damaged;
} gs_reader_totals;
void gs_reader_get_totals(const gs_reader *r, gs_reader_totals *t);
/* Why the live file could not be read ("vm-12.live: live file version 2 is
 * not the one this gpustarve reads (1); the events it held are missing"),
 * or NULL when it could (or there is none). */
const char *gs_reader_live_problem(const gs_reader *r);

uint64_t gs_reader_offset(const gs_reader *r);
uint64_t gs_reader_unread(const gs_reader *r);
uint64_t gs_reader_file_size(const gs_reader *r);

/* ---- run directories ------------------------------------------------------ */

/* 1 when a file name (no folder) names a trace file: "*.gst" with a name
 * before the suffix. */
int gs_is_trace_name(const char *name);

/* The trace files of a run directory, full paths ("dir/name", one slash),
 * sorted by name. */
typedef struct gs_run_files {
    char **path;
    size_t n;
} gs_run_files;

/* List dir's trace files into rf (allocates; rf->n may be 0). Returns GS_OK,
 * GS_ERR_IO (the directory cannot be read; errno kept) or GS_ERR_NOMEM. */
int gs_run_files_list(gs_run_files *rf, const char *dir);
void gs_run_files_free(gs_run_files *rf);

#endif
