/* gs_idmap.c — hash map by id and the string table of the trace reader
 * (gs_idmap.h).
 *
 * Must never: trust an id (any 32-bit value is a key, none an index), or
 * let a text outgrow the room noted before it.
 */
#include <stdlib.h>
#include <string.h>

#include "gs_format.h"
#include "gs_idmap.h"

static inline uint32_t id_hash(uint32_t id)
{
    return (uint32_t)(((uint64_t)id * 0x9E3779B97F4A7C15ull) >> 32);
}

void *gs_idmap_get(const gs_idmap *m, uint32_t id)
{
    if (!m->cap)
        return NULL;
    const uint32_t mask = m->cap - 1;
    for (uint32_t h = id_hash(id) & mask;; h = (h + 1) & mask) {
        if (!m->vals[h])
            return NULL;
        if (m->ids[h] == id)
            return m->vals[h];
    }
}

static int grow(gs_idmap *m)
{
    const uint32_t cap = m->cap ? m->cap * 2 : 256;
    if (cap < m->cap)
        return -1;
    uint32_t *ids = calloc(cap, sizeof *ids);
    void **vals = calloc(cap, sizeof *vals);
    if (!ids || !vals) {
        free(ids);
        free(vals);
        return -1;
    }
    for (uint32_t i = 0; i < m->cap; i++) {
        if (!m->vals[i])
            continue;
        uint32_t h = id_hash(m->ids[i]) & (cap - 1);
        while (vals[h])
            h = (h + 1) & (cap - 1);
        ids[h] = m->ids[i];
        vals[h] = m->vals[i];
    }
    free(m->ids);
    free(m->vals);
    m->ids = ids;
    m->vals = vals;
    m->cap = cap;
    return 0;
}

int gs_idmap_put(gs_idmap *m, uint32_t id, void *v, void **old)
{
    *old = NULL;
    if ((uint64_t)(m->n + 1) * 2 > m->cap && grow(m) != 0)
        return -1;
    const uint32_t mask = m->cap - 1;
    uint32_t h = id_hash(id) & mask;
    while (m->vals[h] && m->ids[h] != id)
        h = (h + 1) & mask;
    if (m->vals[h])
        *old = m->vals[h];
    else
        m->n++;
    m->ids[h] = id;
    m->vals[h] = v;
    return 0;
}

void gs_idmap_free(gs_idmap *m, int free_vals)
{
    for (uint32_t i = 0; free_vals && i < m->cap; i++)
        free(m->vals[i]);
    free(m->ids);
    free(m->vals);
    memset(m, 0, sizeof *m);
}

/* ---- the string table ------------------------------------------------------------ */

#define BLOCK (256u << 10)
_Static_assert(BLOCK >= GS_STRING_MAX + 3, "a block holds the longest string");

/* Room for n bytes (the text's NUL included) after a 2-byte note of it. */
static char *room(gs_strtab *t, size_t n)
{
    if (!t->nblocks || t->used + 2 + n > BLOCK) {
        if (t->nblocks == t->capblocks) {
            const size_t nc = t->capblocks ? t->capblocks * 2 : 16;
            char **nb = realloc(t->blocks, nc * sizeof *nb);
            if (!nb)
                return NULL;
            t->blocks = nb;
            t->capblocks = nc;
        }
        if (!(t->blocks[t->nblocks] = malloc(BLOCK)))
            return NULL;
        t->nblocks++;
        t->used = 0;
    }
    char *p = t->blocks[t->nblocks - 1] + t->used;
    t->used += 2 + n;
    const uint16_t cap = (uint16_t)n;
    memcpy(p, &cap, 2);
    return p + 2;
}

int gs_strtab_put(gs_strtab *t, uint32_t id, const char *s, size_t len)
{
    char *at = gs_idmap_get(&t->map, id);
    uint16_t cap = 0;
    if (at)
        memcpy(&cap, at - 2, 2);
    if (!at || cap < len + 1) {
        /* RATIONALE: the room at least doubles, so ids redefined ever longer
         * cost a few times their longest text, not the sum of them all */
        size_t want = len + 1 > (size_t)cap * 2 ? len + 1 : (size_t)cap * 2;
        if (want > GS_STRING_MAX + 1)
            want = GS_STRING_MAX + 1;
        char *p = room(t, want);
        void *old;
        if (!p || gs_idmap_put(&t->map, id, p, &old) != 0)
            return -1;
        at = p;
    }
    memcpy(at, s, len);
    at[len] = '\0';
    return 0;
}

const char *gs_strtab_get(const gs_strtab *t, uint32_t id)
{
    return gs_idmap_get(&t->map, id);
}

void gs_strtab_free(gs_strtab *t)
{
    gs_idmap_free(&t->map, 0);
    for (size_t i = 0; i < t->nblocks; i++)
        free(t->blocks[i]);
    free(t->blocks);
    memset(t, 0, sizeof *t);
}
