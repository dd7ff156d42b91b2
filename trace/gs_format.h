/* gs_format.h — the on-disk trace format: the one contract between the
 * collector (preload/, cupti/) and the analyzer.
 *
 * Responsible for: magic numbers, versions, the fixed file and frame headers,
 * the list of record kinds and which fields each kind carries. Everything here
 * is fixed-width and little-endian on disk. docs/trace-format.md is the prose
 * twin of this file; change both together.
 *
 * Must never: depend on anything but the C library, change the meaning of an
 * existing kind id or field bit without bumping GS_VERSION_MAJOR.
 *
 * Versioning: bump GS_VERSION_MINOR when adding a kind, a header field or a
 * value of a field (1.7: a CPU record's source) that old readers may safely
 * ignore or misread only slightly; bump GS_VERSION_MAJOR when an existing layout
 * changes. Readers refuse a different major version. They accept a newer
 * minor version and stop, with GS_ERR_KIND, at the first record of a kind
 * they do not know (its length is not stored, so it cannot be skipped).
 */
#ifndef GS_FORMAT_H
#define GS_FORMAT_H

#include <stdint.h>

#define GS_MAGIC "GSTRACE" /* 7 chars + NUL = 8 bytes */
#define GS_MAGIC_LEN 8
/* Written as a native uint32; a reader that sees 0x04030201 has the wrong
 * byte order (the format is little-endian only; such files are refused). */
#define GS_BYTE_ORDER_MARK 0x01020304u
#define GS_VERSION_MAJOR 1
#define GS_VERSION_MINOR 7

/* A run is a directory of trace files, one per process image, named
 * <host>-<pid>.gst, then <host>-<pid>.<n>.gst after the n-th exec
 * (docs/trace-format.md, "A run"); gs_run_files_list (gs_trace.h) finds
 * them. Python's perf map of an image is copied beside its trace as
 * <trace file without .gst>.perfmap. `gpustarve run` leaves the other
 * processes' load as it started the program (pid) in <host>-<pid>.peers. */
#define GS_TRACE_SUFFIX ".gst"
#define GS_PERFMAP_SUFFIX ".perfmap"
#define GS_PEERS_SUFFIX ".peers"

#define GS_FRAME_MAGIC 0x52465347u /* "GSFR" little-endian */
/* Largest decompressed frame a writer may produce and a reader accepts.
 * RATIONALE: 4 MiB bounds the reader's memory per file while leaving room for
 * ~200k records per frame, far more than one flush period produces. */
#define GS_FRAME_RAW_MAX (4u << 20)
/* Longest string a STRING record may carry (paths, thread names, notes). */
#define GS_STRING_MAX 4096u
/* Most frames a STACK record may carry (1.1). */
#define GS_STACK_FRAMES_MAX 128u

/* File header: fixed part, then host (host_len bytes, no NUL), then argv
 * (argv_len bytes: argc NUL-terminated strings back to back). header_size is
 * the total, so a reader skips fields it does not know. */
typedef struct gs_file_header {
    char magic[GS_MAGIC_LEN];
    uint32_t byte_order;
    uint16_t version_major;
    uint16_t version_minor;
    uint32_t header_size;
    uint32_t flags; /* GS_HDR_F_* */
    uint64_t pid;
    uint64_t ppid;
    uint64_t mono_ns; /* CLOCK_MONOTONIC at process trace start */
    uint64_t real_ns; /* CLOCK_REALTIME read right after mono_ns */
    int32_t rank;     /* RANK, -1 when unset */
    int32_t local_rank;
    int32_t world_size;
    uint32_t host_len;
    uint32_t argv_len;
    uint32_t argc;
    uint32_t exec_seq; /* 0 for the first image of this pid, +1 per exec */
    uint32_t reserved0;
    uint64_t reserved[5];
} gs_file_header;
_Static_assert(sizeof(gs_file_header) == 128, "file header is 128 bytes on disk");

#define GS_HDR_F_FORKED 0x1u /* process began as a fork of a traced parent */
#define GS_HDR_F_TSC 0x2u    /* host timestamps came from a calibrated TSC */

/* Frame header, followed by comp_size bytes: one zstd frame (with content
 * checksum) that decompresses to raw_size bytes holding nrec records. */
typedef struct gs_frame_header {
    uint32_t magic;
    uint32_t comp_size;
    uint32_t raw_size;
    uint32_t nrec;
} gs_frame_header;
_Static_assert(sizeof(gs_frame_header) == 16, "frame header is 16 bytes on disk");

/* Generic record fields, encoded in this order when the kind carries them.
 * See docs/trace-format.md for the exact delta rules. */
enum {
    GS_F_TS = 1u << 0,     /* zigzag(ts - prev_ts); prev_ts = 0 at frame start */
    GS_F_DUR = 1u << 1,    /* uvarint ns */
    GS_F_FD = 1u << 2,     /* zigzag(fd) */
    GS_F_FDKIND = 1u << 3, /* uvarint GS_FDK_* */
    GS_F_STR = 1u << 4,    /* uvarint string id (0 = none) */
    GS_F_BYTES = 1u << 5,  /* uvarint */
    GS_F_RET = 1u << 6,    /* zigzag(bytes - ret) */
    GS_F_OFFSET = 1u << 7, /* zigzag(offset - next_off) */
    GS_F_AUX = 1u << 8,    /* uvarint */
    GS_F_AUX2 = 1u << 9,   /* uvarint */
    GS_F_DEV = 1u << 10,   /* uvarint device ordinal */
    GS_F_STREAM = 1u << 11, /* uvarint stream id */
    GS_F_CORR = 1u << 12,  /* uvarint correlation id (host call <-> GPU record) */
};

#define GS_IO_FIELDS (GS_F_TS | GS_F_DUR | GS_F_FD | GS_F_FDKIND | GS_F_STR | GS_F_BYTES | GS_F_RET)
#define GS_IOO_FIELDS (GS_IO_FIELDS | GS_F_OFFSET)
/* GPU activity (from CUPTI): start, duration, where, and the host call it
 * came from. */
#define GS_GPU_FIELDS (GS_F_TS | GS_F_DUR | GS_F_DEV | GS_F_STREAM | GS_F_CORR)
/* Host-side CUDA runtime calls: str = the API's name ("cudaMemcpyAsync"). */
#define GS_CUDA_FIELDS (GS_F_TS | GS_F_DUR | GS_F_STR | GS_F_RET)

/* Copy directions (aux bits 0-7 of gpu_memcpy and cuda_memcpy). */
enum {
    GS_DIR_UNKNOWN = 0,
    GS_DIR_HTOD = 1,
    GS_DIR_DTOH = 2,
    GS_DIR_DTOD = 3,
    GS_DIR_HTOH = 4,
    GS_DIR_PTOP = 5,
};

/* Memory kinds (gpu_memcpy aux bits 8-15 = source, 16-23 = destination;
 * cuda_memcpy aux bits 8-15 = the host side's kind). */
enum {
    GS_MEM_UNKNOWN = 0,
    GS_MEM_PAGEABLE = 1,
    GS_MEM_PINNED = 2,
    GS_MEM_DEVICE = 3,
    GS_MEM_MANAGED = 4,
    GS_MEM_ARRAY = 5,
};

/* Packed aux of the copy kinds. gpu_memcpy: bits 0-7 direction (GS_DIR_*),
 * 8-15 source memory kind, 16-23 destination memory kind (GS_MEM_*).
 * cuda_memcpy: bits 0-7 direction, 8-15 the host side's memory kind.
 * gpu_memset: bits 0-7 memory kind. Writers pack with these; readers use the
 * accessors of gs_trace.h (gs_copy_dir, ...). */
static inline uint64_t gs_pack_gpu_copy(unsigned dir, unsigned src_mem, unsigned dst_mem)
{
    return (uint64_t)(dir & 0xffu) | (uint64_t)(src_mem & 0xffu) << 8 |
           (uint64_t)(dst_mem & 0xffu) << 16;
}
static inline uint64_t gs_pack_host_copy(unsigned dir, unsigned host_mem)
{
    return (uint64_t)(dir & 0xffu) | (uint64_t)(host_mem & 0xffu) << 8;
}

/* How a process ended: the EXIT record's aux2 (its aux is the status, or
 * the signal number for GS_EXIT_HOW_SIGNAL). */
enum gs_exit_how {
    GS_EXIT_HOW_EXIT = 0,   /* exit(), or return from main */
    GS_EXIT_HOW__EXIT = 1,  /* _exit(), _Exit() (DataLoader workers end so) */
    GS_EXIT_HOW_SIGNAL = 2, /* a fatal signal the collector caught */
    GS_NEXIT_HOW
};

/* The NOTE record's aux: what the collector says. */
enum gs_note_code {
    GS_NOTE_MESSAGE = 0,           /* a message, nothing more */
    GS_NOTE_OUTPUT_FAILED = 1,     /* trace output failed: tracing stopped */
    GS_NOTE_CUPTI_UNAVAILABLE = 2, /* no usable CUPTI: CUDA calls, no GPU activity */
    GS_NOTE_CUPTI_BUSY = 3,        /* another profiler holds CUPTI: the same */
    /* written by `gpustarve import` (docs/import.md), not by the collector */
    GS_NOTE_IMPORTED = 4,          /* converted from another profiler's trace, str names it */
    GS_NOTE_WORKERS_UNSEEN = 5,    /* its DataLoader ran worker processes it did not record */
    GS_NOTE_ABRUPT = 6, /* (1.2) made by a reader: the process ended without writing
                         * everything; its records were recovered from its live file */
};

/* The CPU record's aux: bits 0-31 the thread sampled, bits 32-39 who took
 * the sample (GS_CPU_SRC_*), bits 40-47 what it measured (GS_CPU_HAS_*;
 * CPU time is always measured). Writers pack with gs_pack_cpu_aux; readers
 * use the accessors of gs_trace.h (gs_cpu_tid, ...). */
enum {
    GS_CPU_SRC_PERIODIC = 0, /* the collector's writer, every flush, from /proc schedstat */
    GS_CPU_SRC_MARKER = 1,   /* the thread itself at one of its markers (getrusage); the
                              * marker record follows it, with the same ts */
    GS_CPU_SRC_BIRTH = 2,    /* (1.7) the writer, for a thread that began while traced: a
                              * time before it existed, every value 0 */
};
enum {
    GS_CPU_HAS_RUNQ = 1u << 0,     /* aux2: run-queue delay */
    GS_CPU_HAS_FAULTS = 1u << 1,   /* dev: major faults */
    GS_CPU_HAS_SWITCHES = 1u << 2, /* stream, corr: voluntary, involuntary switches */
    GS_CPU_HAS_STORAGE = 1u << 3,  /* ret: bytes the thread had read from storage */
};
static inline uint64_t gs_pack_cpu_aux(uint32_t tid, unsigned src, unsigned has)
{
    return (uint64_t)tid | (uint64_t)(src & 0xffu) << 32 | (uint64_t)(has & 0xffu) << 40;
}

/* fd kinds */
enum {
    GS_FDK_UNKNOWN = 0,
    GS_FDK_FILE = 1,
    GS_FDK_PIPE = 2,
    GS_FDK_SOCKET = 3,
    GS_FDK_DIR = 4,
    GS_FDK_OTHER = 5, /* character/block device, eventfd, epoll, ... */
};

/* What a kind is (its class): every kind has exactly one, given beside its
 * id in GS_KIND_LIST, so a reader asks gs_kind_class() (gs_trace.h) instead
 * of listing ids or ranges that would miss a kind added later. Classes are
 * not stored in traces: a new class or a kind moved to another one needs no
 * format version, only docs/trace-format.md ("Kinds") in step. */
enum gs_class {
    GS_CLASS_NONE = 0, /* not a kind this build knows */
    GS_CLASS_RECORD,   /* string, tid, stack, callsite, repeat: own layouts (a repeat
                        * stands for an event of its previous event's kind) */
    GS_CLASS_PROC,     /* process and thread bookkeeping: thread names, faults,
                        * drops, notes, exec, exit, code mappings */
    GS_CLASS_OPEN,     /* a call that opens a file by name: open family, fopen */
    GS_CLASS_CLOSE,    /* close, fclose */
    GS_CLASS_DUP,      /* dup family */
    GS_CLASS_READ,     /* a call that reads data: read family, stdio reads */
    GS_CLASS_MMAP,     /* file mappings (mmap, munmap) */
    GS_CLASS_STAT,     /* a call that reads a file's attributes: stat family */
    GS_CLASS_WAIT,     /* a wait on pipes/sockets: poll, select, epoll */
    GS_CLASS_GPU,      /* GPU activity from CUPTI: kernels, copies, memsets, syncs */
    GS_CLASS_GPU_INFO, /* GPU bookkeeping from CUPTI: devices, dropped records */
    GS_CLASS_CUDA,     /* host-side CUDA runtime calls: copies, syncs, host memory */
    GS_CLASS_NVTX,     /* NVTX ranges and marks */
    GS_CLASS_MARKER,   /* gpustarve markers: steps, batch fetches, config, role */
    GS_NCLASS
};

/* X(ID_NAME, id, "name", fields, CLASS). Ids are forever: never renumber,
 * never reuse. Names of hooked-call kinds are the hooked function's own
 * name. CLASS names an enum gs_class value without its GS_CLASS_ prefix.
 * Per-kind meaning of the generic fields: docs/trace-format.md.
 * STRING, TID, STACK, CALLSITE, REPEAT and REPEATS (field mask 0) have their own layouts;
 * STACK, CALLSITE and MAPPING are new in 1.1 (call stacks, GPUSTARVE_STACKS);
 * REPEAT, CPU and CPU_LIMITS are new in 1.3 (an event like the one before
 * it, docs/trace-format.md; a thread's own clocks: gs_cpu_* in gs_trace.h;
 * the CPUs the process may use); HOST_CPU is new in 1.4 (the machine's CPU
 * time over the CPUs the process may run on: gs_host_* in gs_trace.h);
 * REPEATS is new in 1.5 (a run of REPEAT events, gaps then durations);
 * READ_AT, READV_AT and READ_CHK_AT are new in 1.6 (read, readv and
 * __read_chk of a regular file with the file position they read from, in
 * a process with the role loader_worker). */
#define GS_KIND_LIST(X)                                                                        \
    X(STRING, 1, "string", 0, RECORD)                                                          \
    X(TID, 2, "tid", 0, RECORD)                                                                \
    X(STACK, 9, "stack", 0, RECORD)                                                            \
    X(CALLSITE, 10, "callsite", 0, RECORD)                                                     \
    X(REPEAT, 15, "repeat", 0, RECORD)                                                         \
    X(REPEATS, 25, "repeats", 0, RECORD)                                                       \
    X(MAPPING, 11, "mapping", GS_F_TS | GS_F_STR | GS_F_BYTES | GS_F_OFFSET | GS_F_AUX | GS_F_AUX2, PROC) \
    X(THREAD, 3, "thread", GS_F_TS | GS_F_STR | GS_F_AUX, PROC)                                \
    X(HOST_CPU, 14, "host_cpu", GS_F_TS | GS_F_BYTES | GS_F_AUX | GS_F_AUX2, PROC)                 \
    X(CPU_LIMITS, 13, "cpu_limits", GS_F_TS | GS_F_BYTES | GS_F_AUX | GS_F_AUX2, PROC)               \
    X(FAULTS, 4, "faults", GS_F_TS | GS_F_AUX | GS_F_AUX2, PROC)                               \
    X(DROPS, 5, "drops", GS_F_TS | GS_F_AUX | GS_F_AUX2, PROC)                                 \
    X(NOTE, 6, "note", GS_F_TS | GS_F_STR | GS_F_AUX, PROC)                                    \
    X(EXEC, 7, "exec", GS_F_TS | GS_F_STR | GS_F_RET, PROC)                                    \
    X(EXIT, 8, "exit", GS_F_TS | GS_F_AUX | GS_F_AUX2, PROC)                                   \
    X(CPU, 12, "cpu", GS_F_TS | GS_F_BYTES | GS_F_RET | GS_F_AUX | GS_F_AUX2 | GS_F_DEV | GS_F_STREAM | GS_F_CORR, PROC) \
    X(OPEN, 16, "open", GS_IO_FIELDS | GS_F_AUX, OPEN)                                         \
    X(OPEN64, 17, "open64", GS_IO_FIELDS | GS_F_AUX, OPEN)                                     \
    X(OPENAT, 18, "openat", GS_IO_FIELDS | GS_F_AUX | GS_F_AUX2, OPEN)                         \
    X(OPENAT64, 19, "openat64", GS_IO_FIELDS | GS_F_AUX | GS_F_AUX2, OPEN)                     \
    X(CREAT, 20, "creat", GS_IO_FIELDS | GS_F_AUX, OPEN)                                       \
    X(CLOSE, 21, "close", GS_IO_FIELDS, CLOSE)                                                 \
    X(DUP, 22, "dup", GS_IO_FIELDS, DUP)                                                       \
    X(DUP2, 23, "dup2", GS_IO_FIELDS, DUP)                                                     \
    X(DUP3, 24, "dup3", GS_IO_FIELDS | GS_F_AUX, DUP)                                          \
    X(READ, 32, "read", GS_IO_FIELDS, READ)                                                    \
    X(PREAD, 33, "pread", GS_IOO_FIELDS, READ)                                                 \
    X(PREAD64, 34, "pread64", GS_IOO_FIELDS, READ)                                             \
    X(READV, 35, "readv", GS_IO_FIELDS | GS_F_AUX, READ)                                       \
    X(PREADV, 36, "preadv", GS_IOO_FIELDS | GS_F_AUX, READ)                                    \
    X(PREADV64, 37, "preadv64", GS_IOO_FIELDS | GS_F_AUX, READ)                                \
    X(PREADV2, 38, "preadv2", GS_IOO_FIELDS | GS_F_AUX | GS_F_AUX2, READ)                      \
    X(PREADV64V2, 39, "preadv64v2", GS_IOO_FIELDS | GS_F_AUX | GS_F_AUX2, READ)                \
    X(READ_CHK, 40, "__read_chk", GS_IO_FIELDS, READ)                                          \
    X(PREAD_CHK, 41, "__pread_chk", GS_IOO_FIELDS, READ)                                       \
    X(PREAD64_CHK, 42, "__pread64_chk", GS_IOO_FIELDS, READ)                                   \
    X(READ_AT, 43, "read_at", GS_IOO_FIELDS, READ)                                             \
    X(READV_AT, 44, "readv_at", GS_IOO_FIELDS | GS_F_AUX, READ)                                \
    X(READ_CHK_AT, 45, "__read_chk_at", GS_IOO_FIELDS, READ)                                   \
    X(FOPEN, 48, "fopen", GS_IO_FIELDS | GS_F_AUX, OPEN)                                       \
    X(FOPEN64, 49, "fopen64", GS_IO_FIELDS | GS_F_AUX, OPEN)                                   \
    X(FREAD, 50, "fread", GS_IO_FIELDS | GS_F_AUX, READ)                                       \
    X(FGETS, 51, "fgets", GS_IO_FIELDS, READ)                                                  \
    X(FCLOSE, 52, "fclose", GS_IO_FIELDS, CLOSE)                                               \
    X(FREAD_UNLOCKED, 53, "fread_unlocked", GS_IO_FIELDS | GS_F_AUX, READ)                     \
    X(MMAP, 56, "mmap", GS_IOO_FIELDS | GS_F_AUX | GS_F_AUX2, MMAP)                            \
    X(MMAP64, 57, "mmap64", GS_IOO_FIELDS | GS_F_AUX | GS_F_AUX2, MMAP)                        \
    X(MUNMAP, 58, "munmap", GS_IO_FIELDS | GS_F_AUX, MMAP)                                     \
    X(STAT, 64, "stat", GS_IO_FIELDS, STAT)                                                    \
    X(STAT64, 65, "stat64", GS_IO_FIELDS, STAT)                                                \
    X(LSTAT, 66, "lstat", GS_IO_FIELDS, STAT)                                                  \
    X(LSTAT64, 67, "lstat64", GS_IO_FIELDS, STAT)                                              \
    X(FSTAT, 68, "fstat", GS_IO_FIELDS, STAT)                                                  \
    X(FSTAT64, 69, "fstat64", GS_IO_FIELDS, STAT)                                              \
    X(FSTATAT, 70, "fstatat", GS_IO_FIELDS | GS_F_AUX, STAT)                                   \
    X(FSTATAT64, 71, "fstatat64", GS_IO_FIELDS | GS_F_AUX, STAT)                               \
    X(STATX, 72, "statx", GS_IO_FIELDS | GS_F_AUX | GS_F_AUX2, STAT)                           \
    X(XSTAT, 73, "__xstat", GS_IO_FIELDS, STAT)                                                \
    X(XSTAT64, 74, "__xstat64", GS_IO_FIELDS, STAT)                                            \
    X(LXSTAT, 75, "__lxstat", GS_IO_FIELDS, STAT)                                              \
    X(LXSTAT64, 76, "__lxstat64", GS_IO_FIELDS, STAT)                                          \
    X(FXSTAT, 77, "__fxstat", GS_IO_FIELDS, STAT)                                              \
    X(FXSTAT64, 78, "__fxstat64", GS_IO_FIELDS, STAT)                                          \
    X(FXSTATAT, 79, "__fxstatat", GS_IO_FIELDS | GS_F_AUX, STAT)                               \
    X(FXSTATAT64, 80, "__fxstatat64", GS_IO_FIELDS | GS_F_AUX, STAT)                           \
    X(POLL, 88, "poll", GS_IO_FIELDS | GS_F_AUX, WAIT)                                         \
    X(PPOLL, 89, "ppoll", GS_IO_FIELDS | GS_F_AUX, WAIT)                                       \
    X(SELECT, 90, "select", GS_IO_FIELDS | GS_F_AUX, WAIT)                                     \
    X(PSELECT, 91, "pselect", GS_IO_FIELDS | GS_F_AUX, WAIT)                                   \
    X(EPOLL_WAIT, 92, "epoll_wait", GS_IO_FIELDS | GS_F_AUX, WAIT)                             \
    X(EPOLL_PWAIT, 93, "epoll_pwait", GS_IO_FIELDS | GS_F_AUX, WAIT)                           \
    X(GPU_KERNEL, 100, "gpu_kernel", GS_GPU_FIELDS | GS_F_STR, GPU)                            \
    X(GPU_MEMCPY, 101, "gpu_memcpy", GS_GPU_FIELDS | GS_F_BYTES | GS_F_AUX, GPU)               \
    X(GPU_MEMSET, 102, "gpu_memset", GS_GPU_FIELDS | GS_F_BYTES | GS_F_AUX, GPU)               \
    X(GPU_SYNC, 103, "gpu_sync", GS_GPU_FIELDS | GS_F_AUX, GPU)                                \
    X(GPU_DEVICE, 104, "gpu_device", GS_F_TS | GS_F_DEV | GS_F_STR | GS_F_BYTES | GS_F_AUX | GS_F_AUX2, GPU_INFO) \
    X(GPU_DROPS, 105, "gpu_drops", GS_F_TS | GS_F_AUX, GPU_INFO)                               \
    X(CUDA_MEMCPY, 120, "cuda_memcpy", GS_CUDA_FIELDS | GS_F_BYTES | GS_F_AUX | GS_F_DEV | GS_F_STREAM | GS_F_CORR, CUDA) \
    X(CUDA_SYNC, 121, "cuda_sync", GS_CUDA_FIELDS | GS_F_AUX2 | GS_F_DEV | GS_F_STREAM | GS_F_CORR, CUDA) \
    X(CUDA_HOST_MEM, 122, "cuda_host_mem", GS_CUDA_FIELDS | GS_F_BYTES | GS_F_AUX | GS_F_AUX2, CUDA) \
    X(NVTX_PUSH, 130, "nvtx_push", GS_F_TS | GS_F_STR | GS_F_AUX, NVTX)                        \
    X(NVTX_POP, 131, "nvtx_pop", GS_F_TS | GS_F_AUX, NVTX)                                     \
    X(NVTX_START, 132, "nvtx_start", GS_F_TS | GS_F_STR | GS_F_AUX | GS_F_AUX2, NVTX)          \
    X(NVTX_END, 133, "nvtx_end", GS_F_TS | GS_F_AUX2, NVTX)                                    \
    X(NVTX_MARK, 134, "mark", GS_F_TS | GS_F_STR | GS_F_AUX, NVTX)                             \
    X(STEP_BEGIN, 140, "step_begin", GS_F_TS | GS_F_AUX | GS_F_AUX2, MARKER)                   \
    X(STEP_END, 141, "step_end", GS_F_TS | GS_F_AUX | GS_F_AUX2, MARKER)                       \
    X(FETCH_BEGIN, 142, "fetch_begin", GS_F_TS | GS_F_AUX | GS_F_AUX2, MARKER)                 \
    X(FETCH_END, 143, "fetch_end", GS_F_TS | GS_F_AUX | GS_F_AUX2, MARKER)                     \
    X(CONFIG, 144, "config", GS_F_TS | GS_F_STR | GS_F_AUX, MARKER)                            \
    X(ROLE, 145, "role", GS_F_TS | GS_F_STR | GS_F_AUX | GS_F_AUX2, MARKER)

enum gs_kind {
#define GS_X_ENUM(n, id, s, f, c) GS_K_##n = id,
    GS_KIND_LIST(GS_X_ENUM)
#undef GS_X_ENUM
    GS_K_MAX = 256
};

#endif
