/* gs_strings.c — the process-wide string arena (paths, thread names, notes).
 *
 * Responsible for: handing out string ids (1, 2, ...) for byte strings, with
 * lock-free deduplication, so that a record carries a 32-bit id instead of a
 * path. Storage is one mmap'd MAP_NORESERVE arena filled by atomic bump
 * allocation; an id->offset index lets the writer find a string's bytes when
 * it first meets the id in a frame (that is how define-before-use holds).
 *
 * Must never: malloc, lock, or free (strings live until exit); make a string
 * visible through the index or the hash table before its bytes are written.
 */
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "gs_fdtable.h"
#include "gs_livefile.h"
#include "gs_strings.h"

/* RATIONALE: virtual sizes only (MAP_NORESERVE, touched as used): 256 MiB of
 * text holds millions of dataset paths; past it, interning returns 0 and
 * records carry no path rather than failing. */
#define ARENA_BYTES (256ull << 20)
#define MAX_IDS GS_STR_MAX_IDS

/* RATIONALE: the hash table is five levels of 2^14, 2^16, 2^18, 2^20 and
 * 2^22 slots, searched in that order; a string goes into the first level
 * whose probe window has an empty slot. A process that opens a few hundred
 * files so touches the first level's 16 pages, where one table of 2^22
 * slots took a page fault for nearly every string (and a forked DataLoader
 * worker a copy of every page it wrote): docs/performance.md, "Start-up,
 * fork and the string table". A slot holds the id and 10 bits of the hash
 * (the tag), so a window is passed over without reading its entries. Slots
 * only ever go from empty to full: a window seen full stays full, so every
 * thread that interns a string reaches the same slot first, and no string
 * found in a level is missed by a later search. */
#define LEVELS 5
#define LEVEL0_BITS 14 /* level k has 2^(LEVEL0_BITS + 2k) slots */
#define HASH_SLOTS ((((1u << (2 * LEVELS)) - 1) / 3) << LEVEL0_BITS) /* their sum */
#define HASH_PROBES 64
#define ID_BITS 22
#define ID_MASK ((1u << ID_BITS) - 1)
#define TAG_MASK ((1u << (32 - ID_BITS)) - 1)
_Static_assert(MAX_IDS == 1u << ID_BITS, "a slot holds an id in ID_BITS bits");
_Static_assert(LEVEL0_BITS + 2 * (LEVELS - 1) == ID_BITS, "the last level holds every id");

typedef struct str_entry {
    uint32_t len;
    uint32_t hash;
    char bytes[]; /* len bytes + NUL */
} str_entry;

static char *g_arena;
static _Atomic uint64_t g_arena_used;
static _Atomic uint32_t g_next_id = 1;
static _Atomic uint32_t *g_index; /* id -> offset + 1 */
static _Atomic uint32_t *g_hash;  /* slot -> id | tag << ID_BITS */

static void *map_noreserve(size_t len)
{
    long p = syscall(SYS_mmap, NULL, len, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    return (p == -1) ? NULL : (void *)p;
}

int gs_strings_init(void)
{
    g_arena = map_noreserve(ARENA_BYTES);
    g_index = map_noreserve(MAX_IDS * sizeof(uint32_t));
    g_hash = map_noreserve(HASH_SLOTS * sizeof(uint32_t));
    return (g_arena && g_index && g_hash) ? 0 : -1;
}

/* RATIONALE: eight bytes a step (a multiply and a shift each, then a final
 * mix), not FNV-1a's byte a step: a Python start interns thousands of paths
 * of 60 to 100 bytes (every stat and open of the import system), and the
 * byte loop made interning the library's costliest function there
 * (docs/performance.md, "A Python process's start, by part"). Only this
 * process reads these hashes: nothing stores them. */
static uint32_t hash_bytes(const char *s, size_t len)
{
    const uint64_t k = 0xff51afd7ed558ccdull;
    uint64_t h = 0x9E3779B97F4A7C15ull ^ len;
    size_t i = 0;
    for (; i + 8 <= len; i += 8) {
        uint64_t w;
        memcpy(&w, s + i, 8);
        h = (h ^ w) * k;
        h ^= h >> 32;
    }
    if (i < len) {
        uint64_t w = 0;
        for (unsigned b = 0; i < len; i++, b += 8)
            w |= (uint64_t)(uint8_t)s[i] << b;
        h = (h ^ w) * k;
        h ^= h >> 32;
    }
    h ^= h >> 29;
    h *= 0xc4ceb9fe1a85ec53ull;
    h ^= h >> 32;
    const uint32_t r = (uint32_t)h;
    return r ? r : 1;
}

static uint32_t create(const char *s, uint32_t len, uint32_t h)
{
    uint64_t size = (sizeof(str_entry) + len + 1 + 7) & ~7ull;
    uint64_t off = atomic_fetch_add_explicit(&g_arena_used, size, memory_order_relaxed);
    if (off + size > ARENA_BYTES)
        return 0;
    uint32_t id = atomic_fetch_add_explicit(&g_next_id, 1, memory_order_relaxed);
    if (id >= MAX_IDS)
        return 0;
    str_entry *e = (str_entry *)(g_arena + off);
    e->len = len;
    e->hash = h;
    memcpy(e->bytes, s, len);
    e->bytes[len] = 0;
    atomic_store_explicit(&g_index[id], (uint32_t)off + 1, memory_order_release);
    gs_live_log_string(gs_t_ring, id, e->bytes, len); /* recoverable after a crash */
    return id;
}

static const str_entry *entry_of(uint32_t id)
{
    if (id == 0 || id >= MAX_IDS)
        return NULL;
    uint32_t off = atomic_load_explicit(&g_index[id], memory_order_acquire);
    return off ? (const str_entry *)(g_arena + off - 1) : NULL;
}

uint32_t gs_str_intern(const char *s, size_t n)
{
    if (!g_arena)
        return 0;
    uint32_t len = (uint32_t)(n > GS_STRING_MAX ? GS_STRING_MAX : n);
    uint32_t h = hash_bytes(s, len);
    const uint32_t tag = h & TAG_MASK;
    const uint32_t mixed = h * 0x9E3779B1u; /* a level's start: the top bits */
    uint32_t mine = 0;
    _Atomic uint32_t *level = g_hash;
    for (unsigned k = 0; k < LEVELS; level += 1u << (LEVEL0_BITS + 2 * k), k++) {
        const unsigned bits = LEVEL0_BITS + 2 * k;
        const uint32_t start = mixed >> (32 - bits), mask = (1u << bits) - 1;
        for (uint32_t i = 0; i < HASH_PROBES; i++) {
            _Atomic uint32_t *slot = &level[(start + i) & mask];
            uint32_t v = atomic_load_explicit(slot, memory_order_acquire);
            if (v == 0) {
                if (!mine)
                    mine = create(s, len, h);
                if (!mine)
                    return 0;
                if (atomic_compare_exchange_strong_explicit(slot, &v, mine | tag << ID_BITS,
                                                            memory_order_acq_rel,
                                                            memory_order_acquire))
                    return mine;
                /* lost the race: v now holds the winner; compare it below */
            }
            if (v >> ID_BITS != tag)
                continue;
            const str_entry *e = entry_of(v & ID_MASK);
            if (e && e->hash == h && e->len == len && memcmp(e->bytes, s, len) == 0)
                return v & ID_MASK; /* an entry we created, if any, stays unused */
        }
    }
    return mine ? mine : create(s, len, h);
}

uint32_t gs_str_path(const char *path)
{
    return path ? gs_str_intern(path, strlen(path)) : 0;
}

uint32_t gs_str_path_at(int dirfd, const char *path)
{
    if (!path)
        return 0;
    if (path[0] == '/' || dirfd == AT_FDCWD)
        return gs_str_path(path);
    uint64_t w = gs_fd_word(dirfd);
    uint32_t dlen = 0;
    const char *dir = gs_str_get(GS_FDW_STR(w), &dlen);
    if (!dir)
        return gs_str_path(path);
    if (path[0] == 0)
        return GS_FDW_STR(w); /* AT_EMPTY_PATH: the fd itself */
    if (GS_FDW_KIND(w) != GS_FDK_DIR)
        return gs_str_path(path);
    char buf[GS_STRING_MAX];
    size_t plen = strlen(path);
    size_t n = dlen < sizeof buf ? dlen : sizeof buf;
    memcpy(buf, dir, n);
    if (n < sizeof buf && !(n > 0 && buf[n - 1] == '/'))
        buf[n++] = '/';
    size_t c = plen < sizeof buf - n ? plen : sizeof buf - n;
    memcpy(buf + n, path, c);
    return gs_str_intern(buf, n + c);
}

const char *gs_str_get(uint32_t id, uint32_t *len)
{
    const str_entry *e = entry_of(id);
    if (!e)
        return NULL;
    if (len)
        *len = e->len;
    return e->bytes;
}

uint32_t gs_str_count(void)
{
    uint32_t n = atomic_load_explicit(&g_next_id, memory_order_relaxed);
    return n > 0 ? n - 1 : 0;
}
