/* an_index.h — a map from 64-bit keys read from a trace (thread ids, range
 * ids, stack ids, GPU streams) to small dense indexes, for the analyzer's
 * per-key tables.
 *
 * Responsible for: lookups in constant expected time whatever the keys are
 * (open addressing, linear probing, a mixing hash), memory proportional to
 * the keys stored — never to their values: a hostile trace naming a thread
 * 2^32-1 or 200,000 threads costs one entry each.
 *
 * Must never: be sized by a key's value.
 */
#ifndef AN_INDEX_H
#define AN_INDEX_H

#include <stddef.h>
#include <stdint.h>

typedef struct an_index {
    uint64_t *keys;
    uint32_t *vals; /* index + 1; 0 = empty slot */
    size_t cap, n;
} an_index;

/* The index stored under key, or -1. */
long an_index_get(const an_index *m, uint64_t key);
/* Store index under key (replacing); 0, or -1 when out of memory. */
int an_index_put(an_index *m, uint64_t key, uint32_t index);
/* Remove key (no-op when absent). */
void an_index_del(an_index *m, uint64_t key);
void an_index_free(an_index *m);

#endif
