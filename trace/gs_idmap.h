/* gs_idmap.h — the reader's tables keyed by an id read from a file (string
 * and stack ids): a hash map, and a string table whose texts live in an
 * arena. Used by gs_reader.c only.
 *
 * Must never: size anything by an id's value (a single id near 2^32 costs
 * one entry), or allocate per string.
 */
#ifndef GS_IDMAP_H
#define GS_IDMAP_H

#include <stddef.h>
#include <stdint.h>

/* id -> value, open addressing. */
typedef struct gs_idmap {
    uint32_t *ids;
    void **vals; /* NULL: empty */
    uint32_t cap, n;
} gs_idmap;

void *gs_idmap_get(const gs_idmap *m, uint32_t id);
/* Store v under id; *old gets the value it replaces (NULL: none). 0 or -1. */
int gs_idmap_put(gs_idmap *m, uint32_t id, void *v, void **old);
/* Free the map, and each value too when free_vals. */
void gs_idmap_free(gs_idmap *m, int free_vals);

/* id -> NUL-terminated text. RATIONALE: one allocation per string cost
 * 32 bytes or more beside each text (a live file's log of 33 million empty
 * strings once took 3.4 GB); texts go in blocks of an arena instead, each
 * with room noted so that a redefinition that fits is written in place. */
typedef struct gs_strtab {
    gs_idmap map;
    char **blocks;
    size_t nblocks, capblocks, used; /* used: bytes of the last block */
} gs_strtab;

/* Keep len bytes of s (len <= GS_STRING_MAX) as id's text: 0, or -1 when
 * out of memory (nothing changed). */
int gs_strtab_put(gs_strtab *t, uint32_t id, const char *s, size_t len);
const char *gs_strtab_get(const gs_strtab *t, uint32_t id);
void gs_strtab_free(gs_strtab *t);

#endif
