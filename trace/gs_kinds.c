/* gs_kinds.c — the kind table (names and field masks) generated from
 * GS_KIND_LIST, error strings and small event helpers.
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
#define GS_X_TABLE(n, id, s, f) [id] = {s, f},
    GS_KIND_LIST(GS_X_TABLE)
#undef GS_X_TABLE
};

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
    default: return "unknown error";
    }
}
