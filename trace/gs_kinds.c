/* gs_kinds.c — the kind table (names, field masks and classes) generated
 * from GS_KIND_LIST, the names of packed values, error strings and small
 * event helpers.
 *
 * Must never: allocate, or hold state that changes after load.
 */
#include <string.h>

#include "gs_trace.h"

typedef struct kind_info {
    const char *name;
    unsigned fields;
} kind_info;

static const kind_info g_kinds[GS_K_MAX] = {
#define GS_X_TABLE(n, id, s, f, c) [id] = {s, f},
    GS_KIND_LIST(GS_X_TABLE)
#undef GS_X_TABLE
};

const uint8_t gs_kind_classes[GS_K_MAX] = {
#define GS_X_CLASS(n, id, s, f, c) [id] = GS_CLASS_##c,
    GS_KIND_LIST(GS_X_CLASS)
#undef GS_X_CLASS
};

const char *gs_class_name(unsigned cls)
{
    static const char *const names[GS_NCLASS] = {
        [GS_CLASS_NONE] = "none",     [GS_CLASS_RECORD] = "record", [GS_CLASS_PROC] = "process",
        [GS_CLASS_OPEN] = "open",     [GS_CLASS_CLOSE] = "close",   [GS_CLASS_DUP] = "dup",
        [GS_CLASS_READ] = "read",     [GS_CLASS_MMAP] = "mmap",     [GS_CLASS_STAT] = "stat",
        [GS_CLASS_WAIT] = "wait",     [GS_CLASS_GPU] = "gpu",       [GS_CLASS_GPU_INFO] = "gpu_info",
        [GS_CLASS_CUDA] = "cuda",     [GS_CLASS_NVTX] = "nvtx",     [GS_CLASS_MARKER] = "marker",
    };
    return cls < GS_NCLASS ? names[cls] : "none";
}

size_t gs_fopen_mode(const gs_event *e, char *buf)
{
    size_t n = 0;
    for (; n < 8; n++) { /* packed little-endian, NUL-padded */
        const char c = (char)(e->aux >> (8 * n));
        if (!c)
            break;
        buf[n] = c;
    }
    buf[n] = '\0';
    return n;
}

const char *gs_dir_name(uint64_t dir)
{
    static const char *const names[] = {"unknown", "HtoD", "DtoH", "DtoD", "HtoH", "PtoP"};
    return dir < sizeof names / sizeof names[0] ? names[dir] : "unknown";
}

const char *gs_mem_name(uint64_t mem)
{
    static const char *const names[] = {"unknown", "pageable", "pinned",
                                        "device",  "managed",  "array"};
    return mem < sizeof names / sizeof names[0] ? names[mem] : "unknown";
}

/* CUPTI's CUpti_ActivitySynchronizationType values, in order. */
const char *gs_gpu_sync_name(uint64_t type)
{
    static const char *const names[] = {"unknown", "event_synchronize", "stream_wait_event",
                                        "stream_synchronize", "context_synchronize"};
    return type < sizeof names / sizeof names[0] ? names[type] : "unknown";
}

const char *gs_cpu_source_name(unsigned src)
{
    switch (src) {
    case GS_CPU_SRC_PERIODIC: return "periodic";
    case GS_CPU_SRC_MARKER: return "marker";
    case GS_CPU_SRC_BIRTH: return "birth";
    }
    return "unknown";
}

const char *gs_exit_how_name(uint64_t how)
{
    static const char *const names[GS_NEXIT_HOW] = {
        [GS_EXIT_HOW_EXIT] = "exit", [GS_EXIT_HOW__EXIT] = "_exit", [GS_EXIT_HOW_SIGNAL] = "signal"};
    return how < GS_NEXIT_HOW ? names[how] : NULL;
}

const char *gs_kind_name(unsigned kind)
{
    return kind < GS_K_MAX ? g_kinds[kind].name : NULL;
}

unsigned gs_kind_fields(unsigned kind)
{
    return kind < GS_K_MAX ? g_kinds[kind].fields : 0;
}

int gs_kind_known(unsigned kind)
{
    return kind < GS_K_MAX && g_kinds[kind].name != NULL;
}

unsigned gs_kind_by_name(const char *name)
{
    for (unsigned k = 1; k < GS_K_MAX; k++)
        if (g_kinds[k].name && strcmp(g_kinds[k].name, name) == 0)
            return k;
    return 0;
}

const char *gs_fdkind_name(unsigned fdk)
{
    static const char *const names[] = {"unknown", "file", "pipe", "socket", "dir", "other"};
    return fdk < sizeof names / sizeof names[0] ? names[fdk] : "unknown";
}

void gs_event_clear(gs_event *ev)
{
    memset(ev, 0, sizeof *ev);
    ev->fd = -1;
    ev->offset = -1;
}

const char *gs_strerror(int err)
{
    switch (err) {
    case GS_OK: return "success";
    case GS_ERR_IO: return "input/output error";
    case GS_ERR_MAGIC: return "not a gpustarve trace (bad magic)";
    case GS_ERR_VERSION: return "unsupported trace format version";
    case GS_ERR_TRUNCATED: return "truncated (file ends inside a header or frame)";
    case GS_ERR_CORRUPT: return "corrupt data";
    case GS_ERR_NOMEM: return "out of memory";
    case GS_ERR_FULL: return "buffer full";
    case GS_ERR_ARG: return "invalid argument";
    case GS_ERR_KIND: return "unknown record kind (written by a newer gpustarve?)";
    case GS_ERR_ZSTD: return "compression error";
    case GS_ERR_LIVE: return "its live file could not be read";
    default: return "unknown error";
    }
}
