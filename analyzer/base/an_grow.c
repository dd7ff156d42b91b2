/* an_grow.c — the growable array (an_grow.h).
 *
 * Must never: free or move the caller's array when it fails.
 */
#include "base/an_grow.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int an_grow(void *arrayp, size_t *cap, size_t need, size_t size, size_t first)
{
    /* RATIONALE: the pointer is read and written through memcpy, so an
     * an_step ** is never accessed as a void ** (strict aliasing) */
    if (need <= *cap)
        return 0;
    size_t nc = *cap ? *cap : (first ? first : 1);
    while (nc < need) {
        if (nc > SIZE_MAX / 2)
            return -1;
        nc *= 2;
    }
    if (size && nc > SIZE_MAX / size)
        return -1;
    void *old;
    memcpy(&old, arrayp, sizeof old);
    void *n = realloc(old, nc * size);
    if (!n)
        return -1;
    memcpy(arrayp, &n, sizeof n);
    *cap = nc;
    return 0;
}
