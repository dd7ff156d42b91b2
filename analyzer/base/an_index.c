/* an_index.c — the key -> dense index map of an_index.h.
 *
 * Must never: allocate more than twice the keys stored (plus the first 64
 * slots), or loop without bound: the table is at most half full.
 */
#include <stdlib.h>
#include <string.h>

#include "base/an_index.h"

static inline size_t slot_of(uint64_t key, size_t cap)
{
    key ^= key >> 33;
    key *= 0xff51afd7ed558ccdull;
    key ^= key >> 33;
    return (size_t)key & (cap - 1);
}

long an_index_get(const an_index *m, uint64_t key)
{
    if (!m->cap)
        return -1;
    for (size_t h = slot_of(key, m->cap);; h = (h + 1) & (m->cap - 1)) {
        if (!m->vals[h])
            return -1;
        if (m->keys[h] == key)
            return (long)m->vals[h] - 1;
    }
}

static int grow(an_index *m)
{
    const size_t cap = m->cap ? m->cap * 2 : 64;
    uint64_t *keys = calloc(cap, sizeof *keys);
    uint32_t *vals = calloc(cap, sizeof *vals);
    if (!keys || !vals) {
        free(keys);
        free(vals);
        return -1;
    }
    for (size_t i = 0; i < m->cap; i++) {
        if (!m->vals[i])
            continue;
        size_t h = slot_of(m->keys[i], cap);
        while (vals[h])
            h = (h + 1) & (cap - 1);
        keys[h] = m->keys[i];
        vals[h] = m->vals[i];
    }
    free(m->keys);
    free(m->vals);
    m->keys = keys;
    m->vals = vals;
    m->cap = cap;
    return 0;
}

int an_index_put(an_index *m, uint64_t key, uint32_t index)
{
    if (index == UINT32_MAX)
        return -1;
    if ((m->n + 1) * 2 > m->cap && grow(m) != 0)
        return -1;
    size_t h = slot_of(key, m->cap);
    while (m->vals[h] && m->keys[h] != key)
        h = (h + 1) & (m->cap - 1);
    if (!m->vals[h])
        m->n++;
    m->keys[h] = key;
    m->vals[h] = index + 1;
    return 0;
}

void an_index_del(an_index *m, uint64_t key)
{
    if (!m->cap)
        return;
    size_t h = slot_of(key, m->cap);
    while (m->vals[h] && m->keys[h] != key)
        h = (h + 1) & (m->cap - 1);
    if (!m->vals[h])
        return;
    /* backward-shift deletion: no tombstones, probes stay short */
    m->vals[h] = 0;
    m->n--;
    for (size_t j = (h + 1) & (m->cap - 1); m->vals[j]; j = (j + 1) & (m->cap - 1)) {
        const size_t want = slot_of(m->keys[j], m->cap);
        /* move j back to h when its home is not in (h, j] (cyclically) */
        const int stays = h <= j ? (want > h && want <= j) : (want > h || want <= j);
        if (stays)
            continue;
        m->keys[h] = m->keys[j];
        m->vals[h] = m->vals[j];
        m->vals[j] = 0;
        h = j;
    }
}

void an_index_free(an_index *m)
{
    free(m->keys);
    free(m->vals);
    memset(m, 0, sizeof *m);
}
