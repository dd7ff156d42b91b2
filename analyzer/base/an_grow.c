/* an_grow.c — the growable array (an_grow.h).
 *
 * Must never: free or move the caller's array when it fails.
 */
#include "base/an_grow.h"

#include <stdint.h>
#include <stdlib.h>

int an_grow(void **p, size_t *cap, size_t need, size_t size, size_t first)
{
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
    void *n = realloc(*p, nc * size);
    if (!n)
        return -1;
    *p = n;
    *cap = nc;
    return 0;
}
