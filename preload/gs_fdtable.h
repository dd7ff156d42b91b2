/* gs_fdtable.h — what the collector knows of the program's descriptors and
 * file mappings (gs_fdtable.c): per fd a word (kind, path string id), read
 * inline by the hooks; per file mapping its range, descriptor and path.
 *
 * Must never: lock or allocate on a hook's path (one atomic word per fd; an
 * fd seen without an open is classified once with a real fstat).
 */
#ifndef GS_FDTABLE_H
#define GS_FDTABLE_H

#include <stdatomic.h>
#include <stdint.h>

#include "gs_preload.h"

#define GS_FD_MAX (1u << 20)
#define GS_FDW_VALID (1ull << 63)
#define GS_FDW_EPSTREAM (1ull << 62) /* epoll set holds a pipe or socket */
#define GS_FDW_KIND(w) ((unsigned)(((w) >> 32) & 7u))
#define GS_FDW_STR(w) ((uint32_t)(w))

extern GS_HIDDEN _Atomic uint64_t *gs_fdtab;

int gs_fdtab_init(void);
/* Classify an fd seen without an open (real fstat); returns its word. Keeps
 * errno. */
uint64_t gs_fd_classify(int fd);
void gs_fd_set(int fd, uint32_t str, unsigned kind);
/* Forget fd after a close, unless its entry changed since `seen` was read
 * (another thread reopened the number). */
void gs_fd_clear(int fd, uint64_t seen);
void gs_fd_copy(int from, int to);
/* Forget every fd in [first, last] (close_range, closefrom). */
void gs_fd_clear_range(unsigned first, unsigned last);
void gs_fd_mark_epstream(int epfd);
/* Kind of an open fd (one real fstat); GS_FDK_UNKNOWN when not open. */
unsigned gs_fd_kind_of(int fd);

/* fd table word of fd (classified on first use); 0 when out of range/bad. */
static inline uint64_t gs_fd_word(int fd)
{
    if ((unsigned)fd >= GS_FD_MAX)
        return 0;
    uint64_t w = atomic_load_explicit(&gs_fdtab[fd], memory_order_relaxed);
    if (GS_UNLIKELY(!(w & GS_FDW_VALID)))
        w = gs_fd_classify(fd);
    return w;
}

/* Fill r->fd, r->fd_kind and r->str from the fd table; returns the word. */
static inline uint64_t gs_fd_describe(int fd, gs_rec *r)
{
    uint64_t w = gs_fd_word(fd);
    r->fd = fd;
    r->fd_kind = (uint8_t)GS_FDW_KIND(w);
    r->str = GS_FDW_STR(w);
    return w;
}

/* ---- file mappings ---- */

/* File mmap table: ranges mapped from files, keyed by start address. */
int gs_maptab_init(void);
void gs_map_add(uintptr_t addr, uint64_t len, int fd, uint32_t str, unsigned kind);
/* Remove the range starting at addr; 1 and its fd/path when it was tracked. */
int gs_map_take(uintptr_t addr, int *fd, uint32_t *str, unsigned *kind);

#endif
