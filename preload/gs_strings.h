/* gs_strings.h — the process's string table (gs_strings.c): paths, thread
 * names, markers interned into ids the records carry.
 *
 * Must never: lock or allocate on a hook's path (lock-free insert into an
 * arena mapped at start-up; a full table answers 0).
 */
#ifndef GS_STRINGS_H
#define GS_STRINGS_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>

#include "gs_live.h"
#include "gs_preload.h"

int gs_strings_init(void);
/* Intern len bytes (truncated to GS_STRING_MAX); id >= 1, or 0 when full. */
uint32_t gs_str_intern(const char *s, size_t len);
/* Intern a NUL-terminated path; 0 for NULL. */
uint32_t gs_str_path(const char *path);
/* Intern a path relative to dirfd the way openat resolves it. */
uint32_t gs_str_path_at(int dirfd, const char *path);
/* Bytes and length of a string id; NULL when unknown. */
const char *gs_str_get(uint32_t id, uint32_t *len);
/* Largest id handed out so far (ids are 1..n). */
uint32_t gs_str_count(void);
/* Ids are below this bound (a live file's reader holds us to it). */
#define GS_STR_MAX_IDS (1u << 22)
_Static_assert(GS_STR_MAX_IDS <= GS_LIVE_STRING_IDS_MAX, "the reader keeps every logged id");

/* Intern path only when the call could have read it (not EFAULT). */
static inline uint32_t gs_str_path_safe(const char *path, long ret, int err)
{
    const char *p = (const char *)gs_launder(path);
    if (!p || (ret < 0 && err == EFAULT))
        return 0;
    return gs_str_path(p);
}

#endif
