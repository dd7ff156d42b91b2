/* an_grow.h — the one growable array of the analyzer and the importer's
 * callers: room for `need` elements, the capacity doubled from `first`.
 *
 * Must never: lose the array or change the capacity when realloc fails, or
 * overflow the size it asks for.
 */
#ifndef AN_GROW_H
#define AN_GROW_H

#include <stddef.h>

/* Make room for need elements of size bytes in the array whose pointer is
 * at arrayp (any T **, passed as is: an_grow(&v, &cap, n + 1, sizeof *v, 64))
 * and whose capacity is *cap: when need > *cap, the capacity becomes first
 * (or *cap) doubled until it holds need, and the array is reallocated.
 * Returns 0, or -1 out of memory (or a size that would overflow) with the
 * array and *cap unchanged. */
int an_grow(void *arrayp, size_t *cap, size_t need, size_t size, size_t first);

#endif
