/* gs_fdtable.c — what the collector knows about file descriptors and file
 * mappings.
 *
 * Responsible for: the fd table (one atomic 64-bit word per fd: valid bit,
 * GS_FDK_* kind, path string id, "epoll set holds a pipe/socket" bit),
 * classifying fds seen without an open with one real fstat, and the
 * lock-free table of file-backed mmap ranges keyed by start address (CAS
 * slots) that munmap consults.
 *
 * Must never: lock, allocate after init, call a hooked function (raw system
 * calls only), or make a system call except the one-time fstat of an fd
 * first seen without an open.
 */
#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "gs_fdtable.h"

_Atomic uint64_t *gs_fdtab;
static _Atomic uint32_t g_fd_top; /* 1 + the largest fd ever entered */

static inline void note_fd(int fd)
{
    uint32_t top = atomic_load_explicit(&g_fd_top, memory_order_relaxed);
    while ((uint32_t)fd >= top &&
           !atomic_compare_exchange_weak_explicit(&g_fd_top, &top, (uint32_t)fd + 1,
                                                  memory_order_relaxed, memory_order_relaxed))
        ;
}

static void *map_noreserve(size_t len)
{
    long p = syscall(SYS_mmap, NULL, len, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    return (p == -1) ? NULL : (void *)p;
}

int gs_fdtab_init(void)
{
    gs_fdtab = map_noreserve(GS_FD_MAX * sizeof(uint64_t));
    return gs_fdtab ? 0 : -1;
}

static unsigned kind_of_mode(mode_t m)
{
    if (S_ISREG(m))
        return GS_FDK_FILE;
    if (S_ISFIFO(m))
        return GS_FDK_PIPE;
    if (S_ISSOCK(m))
        return GS_FDK_SOCKET;
    if (S_ISDIR(m))
        return GS_FDK_DIR;
    return GS_FDK_OTHER;
}

unsigned gs_fd_kind_of(int fd)
{
    struct stat st;
    int saved = errno; /* callers may run before the real call */
    long rc = syscall(SYS_fstat, fd, &st);
    errno = saved;
    return rc != 0 ? GS_FDK_UNKNOWN : kind_of_mode(st.st_mode);
}

static uint64_t make_word(uint32_t str, unsigned kind)
{
    return GS_FDW_VALID | ((uint64_t)(kind & 7u) << 32) | str;
}

static uint64_t fd_classify(int fd)
{
    if ((unsigned)fd >= GS_FD_MAX)
        return 0;
    unsigned kind = gs_fd_kind_of(fd);
    if (kind == GS_FDK_UNKNOWN)
        return 0; /* not open: leave the slot for a later open */
    uint64_t w = make_word(0, kind);
    note_fd(fd);
    uint64_t old = atomic_load_explicit(&gs_fdtab[fd], memory_order_relaxed);
    if (old & GS_FDW_VALID)
        return old;
    /* An open on another thread may have filled the slot meanwhile: keep it. */
    if (!atomic_compare_exchange_strong_explicit(&gs_fdtab[fd], &old, w, memory_order_relaxed,
                                                 memory_order_relaxed))
        return old;
    return w;
}

/* The read hooks do not save errno around it (preload/hook_io.c): keep it. */
uint64_t gs_fd_classify(int fd)
{
    const int e = errno;
    const uint64_t w = fd_classify(fd);
    errno = e;
    return w;
}

void gs_fd_set(int fd, uint32_t str, unsigned kind)
{
    if ((unsigned)fd < GS_FD_MAX) {
        note_fd(fd);
        atomic_store_explicit(&gs_fdtab[fd], make_word(str, kind), memory_order_relaxed);
    }
}

void gs_fd_clear(int fd, uint64_t seen)
{
    /* RATIONALE: compare-and-swap, not a store. Between the real close and
     * this line another thread may have opened a new file on the same fd
     * number and set its entry; that entry must survive. */
    if ((unsigned)fd < GS_FD_MAX)
        atomic_compare_exchange_strong_explicit(&gs_fdtab[fd], &seen, 0, memory_order_relaxed,
                                                memory_order_relaxed);
}

void gs_fd_copy(int from, int to)
{
    if ((unsigned)to >= GS_FD_MAX)
        return;
    uint64_t w = gs_fd_word(from);
    note_fd(to);
    atomic_store_explicit(&gs_fdtab[to], w, memory_order_relaxed);
}

void gs_fd_clear_range(unsigned first, unsigned last)
{
    if (!gs_fdtab)
        return;
    uint32_t top = atomic_load_explicit(&g_fd_top, memory_order_relaxed);
    if (last >= top)
        last = top ? top - 1 : 0;
    for (uint64_t fd = first; fd <= last && fd < top; fd++)
        atomic_store_explicit(&gs_fdtab[fd], 0, memory_order_relaxed);
}

void gs_fd_mark_epstream(int epfd)
{
    if ((unsigned)epfd >= GS_FD_MAX)
        return;
    uint64_t w = gs_fd_word(epfd);
    if (!(w & GS_FDW_VALID))
        w = make_word(0, GS_FDK_OTHER);
    note_fd(epfd);
    atomic_store_explicit(&gs_fdtab[epfd], w | GS_FDW_EPSTREAM, memory_order_relaxed);
}

/* ---- file mmap table ---------------------------------------------------- */

/* RATIONALE: 16384 slots with 64 probes hold far more live file mappings than
 * data loaders keep (a few per open shard); a mapping that finds no slot is
 * still recorded at mmap time, only its munmap goes unseen. */
#define MAP_SLOTS 16384u
#define MAP_PROBES 64u
#define KEY_EMPTY ((uintptr_t)0)
#define KEY_BUSY ((uintptr_t)1)
#define KEY_TOMB ((uintptr_t)2)

typedef struct map_slot {
    _Atomic uintptr_t key; /* start address, or KEY_* */
    uint64_t len;
    int32_t fd;
    uint32_t str;
    uint32_t kind;
    uint32_t reserved;
} map_slot;

static map_slot *g_maps;
static _Atomic uint32_t g_maps_live;

int gs_maptab_init(void)
{
    g_maps = map_noreserve(MAP_SLOTS * sizeof(map_slot));
    return g_maps ? 0 : -1;
}

static uint32_t addr_hash(uintptr_t a)
{
    uint64_t x = (uint64_t)a >> 12;
    x *= 0x9E3779B97F4A7C15ull;
    return (uint32_t)(x >> 40);
}

void gs_map_add(uintptr_t addr, uint64_t len, int fd, uint32_t str, unsigned kind)
{
    if (!g_maps || addr <= KEY_TOMB)
        return;
    uint32_t h = addr_hash(addr);
    for (uint32_t i = 0; i < MAP_PROBES; i++) {
        map_slot *s = &g_maps[(h + i) & (MAP_SLOTS - 1)];
        uintptr_t k = atomic_load_explicit(&s->key, memory_order_acquire);
        if (k != KEY_EMPTY && k != KEY_TOMB)
            continue;
        if (!atomic_compare_exchange_strong_explicit(&s->key, &k, KEY_BUSY, memory_order_acquire,
                                                     memory_order_relaxed))
            continue;
        s->len = len;
        s->fd = fd;
        s->str = str;
        s->kind = kind;
        atomic_fetch_add_explicit(&g_maps_live, 1, memory_order_relaxed);
        atomic_store_explicit(&s->key, addr, memory_order_release);
        return;
    }
}

int gs_map_take(uintptr_t addr, int *fd, uint32_t *str, unsigned *kind)
{
    if (!g_maps || addr <= KEY_TOMB || atomic_load_explicit(&g_maps_live, memory_order_relaxed) == 0)
        return 0;
    uint32_t h = addr_hash(addr);
    for (uint32_t i = 0; i < MAP_PROBES; i++) {
        map_slot *s = &g_maps[(h + i) & (MAP_SLOTS - 1)];
        uintptr_t k = atomic_load_explicit(&s->key, memory_order_acquire);
        if (k == KEY_EMPTY)
            return 0;
        if (k != addr)
            continue;
        int f = s->fd;
        uint32_t id = s->str;
        unsigned kd = s->kind;
        if (!atomic_compare_exchange_strong_explicit(&s->key, &k, KEY_TOMB, memory_order_acq_rel,
                                                     memory_order_relaxed))
            return 0; /* another munmap of the same range won */
        atomic_fetch_sub_explicit(&g_maps_live, 1, memory_order_relaxed);
        *fd = f;
        *str = id;
        *kind = kd;
        return 1;
    }
    return 0;
}
