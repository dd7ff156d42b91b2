/* gs_livefile.c — the collector's side of the live file (trace/gs_live.h):
 * what this process has recorded but not yet written, kept where it
 * outlives the process.
 *
 * Responsible for: creating <trace>.live next to the trace file (0600,
 * O_EXCL, O_NOFOLLOW), laying it out (header, string log, ring slots) as a
 * sparse file mapped MAP_SHARED, allocating disk blocks (fallocate) ahead of
 * use so that a store into the mapping can never fault on a full disk,
 * handing ring slots to threads, writing their pages into the page cache
 * ahead of the threads (the first write to a page is a major fault, which
 * the program's thread would count as its own: docs/collector-safety.md),
 * counting the first touches a thread takes itself (left out of its
 * recorded faults), logging interned strings, publishing the
 * hook clock's calibration and the drop/loss counters, recording how the
 * process ended (also from a fatal-signal handler), and removing the file
 * once everything is in the trace file, or cutting it to its header page
 * (the counts) when not. Blocks are set aside only as the free space allows
 * (gs_space.c): on a file system with little free space the file is its
 * header page and the rings are anonymous.
 *
 * Must never: touch a byte of the mapping whose blocks are not allocated
 * (SIGBUS on a full disk); lock or allocate on a hook's path (a slot and a
 * log entry are taken with one compare-and-swap); write to the parent's live
 * file from a forked child.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "gs_clock.h"
#include "gs_fsize.h"
#include "gs_livefile.h"
#include "gs_preload.h"
#include "gs_space.h"

/* RATIONALE: sizes are virtual (a sparse file); blocks are allocated in
 * chunks as threads appear and strings are interned: 64 MiB of log holds
 * several hundred thousand paths, 512 slots far more recording threads than
 * a process has at once (slots are reused when threads end). Blocks for 4
 * slots and 256 KiB of log are allocated at start (8.3 MiB: a DataLoader
 * worker records on one or two threads; it was 8 slots and 1 MiB, 17.5 MiB
 * a process, 3.5 GB for 200 workers), then the writer keeps 3 spare (a
 * thread's first event pokes it), each only as the free space allows
 * (gs_space.c). A thread that finds no allocated slot gets an anonymous
 * ring: traced as before, only not recoverable after a crash. */
#define STRLOG_CAP (64ull << 20)
#define STRLOG_CHUNK (256ull << 10)
#define SLOTS_MAX 512u
#define SLOTS_FIRST 4u
#define SLOTS_SPARE 3u
#define VIRTUAL_MAX (64ull << 30)
/* RATIONALE: the mapping is address space the program may count on: under a
 * finite RLIMIT_AS (`ulimit -v`, some batch schedulers) the live file takes
 * 1/32 of the limit at most (2 GiB: 64 MiB, a quarter of it string log), so
 * a program that fits in its limit untraced still fits traced (1.1 GiB of
 * mapping once made a 1.5 GiB allocation fail under `ulimit -v 2000000`). */
#define AS_SHARE 32u

static gs_live_header *g_live;
static uint64_t g_size;
static char g_path[PATH_MAX + 64];
static dev_t g_dev;
static ino_t g_ino;
static _Atomic uint32_t g_slots_ready;  /* slots [0, ready) have their blocks */
static _Atomic uint64_t g_strlog_ready; /* log bytes [0, ready) have their blocks */

gs_live_header *gs_live(void)
{
    return g_live;
}

/* Allocate the blocks of [off, off + len) for use (gs_space.h): 0, -EFBIG
 * (RLIMIT_FSIZE), -ENOSPC (the free space does not allow it), or the
 * kernel's error. */
static int alloc_range(int fd, uint64_t off, uint64_t len, enum gs_space_use use,
                       uint64_t *avail)
{
    if (len == 0)
        return 0;
    if (!gs_fsize_allows(off + len))
        return -EFBIG;
    if (!gs_space_allows(fd, len, use, avail))
        return -ENOSPC;
    return syscall(SYS_fallocate, fd, 0, (off_t)off, (off_t)len) == 0 ? 0 : -errno;
}

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23 /* Linux 5.14; older kernels answer EINVAL, ignored */
#endif
#define PAGE_BYTES 4096u
/* RATIONALE: of each slot, populated where it is set aside: its ring's header
 * and first 250 records. A new thread asks the writer to map more at its
 * 32nd record (GS_LIVE_FIRST_POKE); a thread that records a burst (256
 * reads in about 1 ms) outran the writer's wake-up within one page and took
 * 3 faults. */
#define SLOT_FIRST_BYTES (16u << 10)
/* RATIONALE: the writer maps a ring's pages ahead of its thread (gs_live_keep_ahead) by
 * this much at least, and by twice what the thread wrote since the last pass: at a
 * flush every 200 ms a DataLoader worker writes 30 to 100 KiB, so the thread's own
 * stores never find an unmapped page, and a thread that ends leaves little mapped
 * for nothing. */
#define AHEAD_MIN_BYTES (128u << 10)

/* Per slot, the writer's: the ring's head at the last pass (a slot taken again
 * starts below it). What of the slot is mapped is its ring header's `mapped`. */
static uint64_t g_last_head[SLOTS_MAX];
/* The string log's bytes known to be mapped (populated, or first touched by a
 * thread), and how far ahead of its use the writer maps: a new path interned
 * is one entry of a few dozen bytes. */
static _Atomic uint64_t g_log_mapped;
#define LOG_AHEAD_BYTES (64u << 10)

/* a rounded up to a page boundary */
static uintptr_t page_up(uintptr_t a)
{
    return (a + PAGE_BYTES - 1) & ~(uintptr_t)(PAGE_BYTES - 1);
}

/* *at raised to v (never lowered): the writer and the threads both raise it. */
static void raise_to(_Atomic uint64_t *at, uint64_t v)
{
    uint64_t was = atomic_load_explicit(at, memory_order_relaxed);
    while (was < v && !atomic_compare_exchange_weak_explicit(at, &was, v, memory_order_relaxed,
                                                             memory_order_relaxed))
        ;
}

/* The pages of the live file whose first byte lies in [from, to) (offsets in
 * one region that starts page-aligned or not, base its address) and at or past
 * *mapped: first touched by the calling thread, which takes their faults.
 * Counted as own_faults of g, its ring (none: not counted), and *mapped raised
 * past them.
 * RATIONALE: the first store to a page of the fallocated file is a major fault
 * of the thread that makes it; where the writer has not mapped the page ahead
 * (its threads not started: a single-threaded program, a forked worker before
 * its first marker; or a burst that outran it), the thread's major faults as
 * recorded leave these out, so that the report does not count the collector's
 * pages as the program's page-fault I/O (docs/collector-safety.md). One fault
 * a page: the mapping is MADV_RANDOM, so a fault maps no neighbour. */
static void first_touch(const char *base, uint64_t from, uint64_t to, _Atomic uint64_t *mapped,
                        gs_ring *g)
{
    const uint64_t m = atomic_load_explicit(mapped, memory_order_relaxed);
    if (to <= m)
        return;
    if (from < m)
        from = m;
    const uintptr_t a = (uintptr_t)base + from, e = (uintptr_t)base + to;
    const uintptr_t p0 = page_up(a);
    const uint64_t pages = e > p0 ? (page_up(e) - p0) / PAGE_BYTES : 0;
    if (pages && g)
        atomic_store_explicit(&g->own_faults,
                              atomic_load_explicit(&g->own_faults, memory_order_relaxed) + pages,
                              memory_order_relaxed);
    raise_to(mapped, to);
}

void gs_live_first_touch(gs_ring *g, const gs_rec *slot)
{
    const uint64_t off = (uint64_t)((const char *)slot - (const char *)g);
    first_touch((const char *)g, off, off + sizeof *slot, &g->mapped, g);
}

/* The whole pages holding [from, to) of the mapping written into the page
 * cache and mapped, by the calling thread (its faults are its own). */
static void populate(const char *from, const char *to)
{
    if (to <= from)
        return;
    const uintptr_t a = (uintptr_t)from & ~(uintptr_t)(PAGE_BYTES - 1);
    const uintptr_t e = page_up((uintptr_t)to);
    syscall(SYS_madvise, (void *)a, (size_t)(e - a), MADV_POPULATE_WRITE);
}

/* [*mapped, want) of the region at base written into the page cache and mapped
 * by the calling thread, and *mapped raised to want: the writer's map-ahead of
 * a ring's slot and of the string log (gs_live_keep_ahead, _keep_log_ahead). */
static void map_ahead(const char *base, _Atomic uint64_t *mapped, uint64_t want)
{
    const uint64_t had = atomic_load_explicit(mapped, memory_order_relaxed);
    if (want <= had)
        return;
    populate(base + had, base + want);
    raise_to(mapped, want);
}

/* The first SLOT_FIRST_BYTES of slots [from, to) of the mapping at base (slots
 * at slots_off, slot_bytes each) in the page cache and mapped, by the
 * calling thread.
 * RATIONALE: the first write to a page of the fallocated file is a major
 * fault, and the thread that claims a slot would take it on its first
 * hooked call, counted as its own page-fault I/O: a C loader thread that
 * maps nothing showed one in its batches whenever the writer sampled it
 * before that call (docs/testing.md, "The stress check"). Populated where
 * the slots are reserved (the process's start, the writer), the fault is
 * taken there. */
static void populate_slots(char *base, uint64_t slots_off, uint64_t slot_bytes, uint32_t from,
                           uint32_t to)
{
    for (uint32_t i = from; i < to; i++) {
        const char *s = base + slots_off + (uint64_t)i * slot_bytes;
        const uint64_t n = slot_bytes < SLOT_FIRST_BYTES ? slot_bytes : SLOT_FIRST_BYTES;
        populate(s, s + n);
        /* to the end of the page that holds byte n - 1 (a forked child's
         * file is new: nothing of it was mapped before) */
        atomic_store_explicit(&((gs_ring *)s)->mapped,
                              page_up((uintptr_t)s + n) - (uintptr_t)s,
                              memory_order_relaxed);
        g_last_head[i] = 0;
    }
}

/* The log's first chunk and the first slots, as far as the free space
 * allows: all of SLOTS_FIRST, else one slot, else none. 1 when the space
 * cut it short. */
static int reserve_first(int fd, uint64_t strlog_off, uint64_t strlog_cap, uint64_t slots_off,
                         uint64_t slot_bytes, uint32_t first, uint64_t *log_ready,
                         uint32_t *slots_ready, uint64_t *avail)
{
    int cut = 0;
    *log_ready = 0;
    *slots_ready = 0;
    if (strlog_cap) {
        const int rc = alloc_range(fd, strlog_off, STRLOG_CHUNK, GS_SPACE_RESERVE, avail);
        *log_ready = rc == 0 ? STRLOG_CHUNK : 0;
        cut |= rc == -ENOSPC;
    }
    for (uint32_t n = first; n > 0 && !*slots_ready; n = n > 1 ? 1 : 0) {
        const int rc = alloc_range(fd, slots_off, n * slot_bytes, GS_SPACE_RESERVE, avail);
        if (rc == 0)
            *slots_ready = n;
        cut |= rc == -ENOSPC;
        if (rc != 0 && rc != -ENOSPC)
            break;
    }
    return cut;
}

static int open_live(const char *trace_path, uint32_t exec_seq, uint64_t ring_capacity,
                     const gs_calib *cal, uint64_t *avail)
{
    g_live = NULL;
    const size_t tl = strlen(trace_path), ns = sizeof GS_TRACE_SUFFIX - 1;
    if (tl <= ns || tl - ns + sizeof GS_LIVE_SUFFIX > sizeof g_path)
        return -1;
    memcpy(g_path, trace_path, tl - ns);
    memcpy(g_path + tl - ns, GS_LIVE_SUFFIX, sizeof GS_LIVE_SUFFIX);
    long fd = syscall(SYS_openat, AT_FDCWD, g_path,
                      O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0)
        return -1;
    const uint64_t slot_bytes = sizeof(gs_ring) + ring_capacity * sizeof(gs_rec);
    uint64_t slots = SLOTS_MAX;
    if (slots * slot_bytes > VIRTUAL_MAX)
        slots = VIRTUAL_MAX / slot_bytes;
    uint64_t strlog_cap = STRLOG_CAP;
    struct rlimit as;
    if (syscall(SYS_prlimit64, 0, RLIMIT_AS, NULL, &as) == 0 && as.rlim_cur != RLIM_INFINITY) {
        const uint64_t budget = (uint64_t)as.rlim_cur / AS_SHARE;
        uint64_t log = (budget / 4) & ~(STRLOG_CHUNK - 1);
        if (log < STRLOG_CHUNK)
            log = STRLOG_CHUNK;
        if (log < strlog_cap)
            strlog_cap = log;
        const uint64_t fixed = GS_LIVE_HEADER_SIZE + strlog_cap;
        const uint64_t room = budget > fixed ? (budget - fixed) / slot_bytes : 0;
        if (room < slots)
            slots = room;
    }
    const uint64_t strlog_off = GS_LIVE_HEADER_SIZE;
    uint64_t slots_off = (strlog_off + strlog_cap + 4095) & ~4095ull;
    uint64_t size = slots_off + slots * slot_bytes;
    struct stat st;
    void *p = MAP_FAILED;
    /* RATIONALE: the header page is what matters most: on a full disk it is
     * where the count of events that could not be written is kept. Log and
     * slots come after, as far as the disk allows; where the file cannot
     * even be laid out (RLIMIT_FSIZE), it is the header alone. */
    if (!gs_fsize_allows(size) || syscall(SYS_ftruncate, (int)fd, (off_t)size) != 0) {
        slots = 0;
        strlog_cap = 0;
        slots_off = size = GS_LIVE_HEADER_SIZE;
    }
    const uint32_t first = slots < SLOTS_FIRST ? (uint32_t)slots : SLOTS_FIRST;
    if ((size == GS_LIVE_HEADER_SIZE &&
         (!gs_fsize_allows(size) || syscall(SYS_ftruncate, (int)fd, (off_t)size) != 0)) ||
        alloc_range((int)fd, 0, GS_LIVE_HEADER_SIZE, GS_SPACE_WRITE, NULL) != 0 ||
        syscall(SYS_fstat, (int)fd, &st) != 0 ||
        (p = (void *)syscall(SYS_mmap, NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, (int)fd,
                             0)) == MAP_FAILED) {
        /* no file system support (fallocate), or full: rings stay anonymous */
        syscall(SYS_close, (int)fd);
        syscall(SYS_unlinkat, AT_FDCWD, g_path, 0);
        g_path[0] = 0;
        return -1;
    }
    uint64_t log_ready;
    uint32_t slots_ready;
    const int cut = reserve_first((int)fd, strlog_off, strlog_cap, slots_off, slot_bytes, first,
                                  &log_ready, &slots_ready, avail);
    syscall(SYS_close, (int)fd);
    /* RATIONALE: no read-ahead on a fault: the first touch of the header or
     * of a ring slot otherwise zero-fills and maps a large read-ahead window
     * of the sparse file (about 3.6 ms of CPU for each of the two first
     * faults of a process, measured with perf; docs/performance.md) */
    syscall(SYS_madvise, p, size, MADV_RANDOM);
    populate_slots(p, slots_off, slot_bytes, 0, slots_ready);
    /* and the log's first page: a thread's first path is logged before the
     * writer's first pass maps ahead of it */
    const uint64_t log_first = log_ready < PAGE_BYTES ? 0 : PAGE_BYTES;
    populate(p + strlog_off, p + strlog_off + log_first);
    atomic_store_explicit(&g_log_mapped, log_first, memory_order_relaxed);
    g_dev = st.st_dev;
    g_ino = st.st_ino;
    g_size = size;
    gs_live_header *h = p;
    memcpy(h->magic, GS_LIVE_MAGIC, 8);
    h->byte_order = GS_BYTE_ORDER_MARK;
    h->version = GS_LIVE_VERSION;
    h->header_size = GS_LIVE_HEADER_SIZE;
    h->flags = gs_clock_tsc ? GS_HDR_F_TSC : 0;
    h->pid = (uint64_t)syscall(SYS_getpid);
    h->exec_seq = exec_seq;
    h->slots = (uint32_t)slots;
    h->slot_bytes = slot_bytes;
    h->slots_off = slots_off;
    h->strlog_off = strlog_off;
    h->strlog_cap = strlog_cap;
    atomic_store(&g_slots_ready, slots_ready);
    atomic_store(&g_strlog_ready, log_ready);
    g_live = h;
    if (cal)
        gs_live_calib(cal);
    return cut;
}

/* The major faults the opening thread took in open_live (the header page, the
 * first slots' and the log's first pages), for that thread's ring to count as
 * its own first touches (gs_live_open_faults). */
static _Atomic uint64_t g_open_faults;
static _Atomic uint32_t g_open_tid;

int gs_live_open(const char *trace_path, uint32_t exec_seq, uint64_t ring_capacity,
                 const gs_calib *cal, uint64_t *avail)
{
    struct rusage a, b;
    const int before = syscall(SYS_getrusage, RUSAGE_THREAD, &a) == 0;
    const int rc = open_live(trace_path, exec_seq, ring_capacity, cal, avail);
    atomic_store_explicit(&g_open_faults, 0, memory_order_relaxed);
    if (before && syscall(SYS_getrusage, RUSAGE_THREAD, &b) == 0 && b.ru_majflt > a.ru_majflt) {
        atomic_store_explicit(&g_open_tid, (uint32_t)syscall(SYS_gettid), memory_order_relaxed);
        atomic_store_explicit(&g_open_faults, (uint64_t)(b.ru_majflt - a.ru_majflt),
                              memory_order_release);
    }
    return rc;
}

uint64_t gs_live_open_faults(uint32_t tid)
{
    if (atomic_load_explicit(&g_open_faults, memory_order_acquire) == 0 ||
        atomic_load_explicit(&g_open_tid, memory_order_relaxed) != tid)
        return 0;
    return atomic_exchange_explicit(&g_open_faults, 0, memory_order_relaxed);
}

gs_ring *gs_live_slot(void)
{
    gs_live_header *h = g_live;
    if (!h)
        return NULL;
    uint32_t i = atomic_load_explicit(&h->slots_used, memory_order_relaxed);
    do {
        if (i >= atomic_load_explicit(&g_slots_ready, memory_order_acquire)) {
            gs_writer_poke(); /* the writer allocates more */
            return NULL;
        }
    } while (!atomic_compare_exchange_weak_explicit(&h->slots_used, &i, i + 1,
                                                    memory_order_acq_rel, memory_order_relaxed));
    if (i + SLOTS_SPARE >= atomic_load_explicit(&g_slots_ready, memory_order_relaxed))
        gs_writer_poke(); /* keep spares ahead of the next threads */
    return (gs_ring *)((char *)h + h->slots_off + (uint64_t)i * h->slot_bytes);
}

uint64_t gs_live_ring_capacity(void)
{
    return g_live ? (g_live->slot_bytes - sizeof(gs_ring)) / sizeof(gs_rec) : 0;
}

void gs_live_keep_ahead(gs_ring *r, uint64_t head)
{
    const gs_live_header *h = g_live;
    if (!h || !gs_live_owns(r))
        return;
    const uint64_t off = (uint64_t)((const char *)r - (const char *)h) - h->slots_off;
    const uint64_t i = off / h->slot_bytes;
    if (i >= SLOTS_MAX || i >= atomic_load_explicit(&g_slots_ready, memory_order_acquire))
        return;
    const uint64_t cap = r->mask + 1, at = head < cap ? head : cap;
    if (head < g_last_head[i])
        g_last_head[i] = 0; /* the slot's ring is another thread's now */
    const uint64_t wrote = (head - g_last_head[i]) * sizeof(gs_rec);
    g_last_head[i] = head;
    const uint64_t ahead = wrote * 2 > AHEAD_MIN_BYTES ? wrote * 2 : AHEAD_MIN_BYTES;
    uint64_t want = sizeof(gs_ring) + at * sizeof(gs_rec) + ahead;
    if (want > h->slot_bytes)
        want = h->slot_bytes;
    /* whole pages, up to the one that holds the slot's last byte at most (its
     * blocks are the slot's: fallocate allocates whole blocks) */
    map_ahead((const char *)r, &r->mapped, want);
    const uint64_t mapped = atomic_load_explicit(&r->mapped, memory_order_relaxed);
    /* the thread wakes the writer for more half-way into what is mapped
     * ahead of it (the head at that record); never once the whole slot is */
    const uint64_t recs =
        mapped > sizeof(gs_ring) ? (mapped - sizeof(gs_ring)) / sizeof(gs_rec) : 0;
    atomic_store_explicit(&r->map_poke, recs < cap && recs > at ? at + (recs - at) / 2 + 1 : 0,
                          memory_order_relaxed);
}

void gs_live_keep_log_ahead(void)
{
    gs_live_header *h = g_live;
    if (!h)
        return;
    uint64_t want = atomic_load_explicit(&h->strlog_used, memory_order_relaxed) + LOG_AHEAD_BYTES;
    const uint64_t ready = atomic_load_explicit(&g_strlog_ready, memory_order_acquire);
    if (want > ready)
        want = ready;
    want = want & ~(uint64_t)(PAGE_BYTES - 1); /* whole pages of allocated blocks */
    map_ahead((const char *)h + h->strlog_off, &g_log_mapped, want);
}

int gs_live_owns(const void *p)
{
    return g_live && (const char *)p >= (const char *)g_live &&
           (const char *)p < (const char *)g_live + g_size;
}

void gs_live_log_string(gs_ring *g, uint32_t id, const char *s, uint32_t len)
{
    gs_live_header *h = g_live;
    if (!h || !id)
        return;
    const uint64_t size = GS_LIVE_STR_SIZE(len);
    uint64_t off = atomic_load_explicit(&h->strlog_used, memory_order_relaxed);
    do {
        if (off + size > atomic_load_explicit(&g_strlog_ready, memory_order_acquire)) {
            gs_writer_poke();
            return; /* not recoverable after a crash; the trace file has it */
        }
    } while (!atomic_compare_exchange_weak_explicit(&h->strlog_used, &off, off + size,
                                                    memory_order_acq_rel, memory_order_relaxed));
    first_touch((const char *)h + h->strlog_off, off, off + size, &g_log_mapped, g);
    gs_live_str *e = (gs_live_str *)((char *)h + h->strlog_off + off);
    e->len = len;
    memcpy(e->bytes, s, len);
    atomic_store_explicit(&e->id, id, memory_order_release);
}

/* Allocate blocks for what is about to be used: spare slots and log. Runs
 * where the trace file lives (gs_out_run): it opens the live file. */
void gs_live_alloc_blocks(void *arg)
{
    gs_live_space *sp = arg;
    uint64_t avail = 0;
    gs_live_header *h = g_live;
    if (!h)
        return; /* no live file */
    uint32_t ready = atomic_load(&g_slots_ready);
    uint32_t want = atomic_load(&h->slots_used) + (sp && sp->ahead ? sp->ahead : SLOTS_SPARE);
    if (want > h->slots)
        want = h->slots;
    uint64_t lready = atomic_load(&g_strlog_ready);
    uint64_t lwant = lready;
    while (atomic_load(&h->strlog_used) + STRLOG_CHUNK / 2 > lwant && lwant < h->strlog_cap)
        lwant += STRLOG_CHUNK;
    if (lwant > h->strlog_cap)
        lwant = h->strlog_cap;
    if (want <= ready && lwant <= lready)
        return;
    long fd = syscall(SYS_openat, AT_FDCWD, g_path, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return;
    struct stat st;
    if (syscall(SYS_fstat, (int)fd, &st) == 0 && st.st_dev == g_dev && st.st_ino == g_ino) {
        const int rc = want > ready ? alloc_range((int)fd, h->slots_off + ready * h->slot_bytes,
                                                  (uint64_t)(want - ready) * h->slot_bytes,
                                                  GS_SPACE_RESERVE, &avail)
                                    : 1;
        if (rc == 0) {
            populate_slots((char *)h, h->slots_off, h->slot_bytes, ready, want);
            atomic_store_explicit(&g_slots_ready, want, memory_order_release);
        }
        const int lrc = lwant > lready ? alloc_range((int)fd, h->strlog_off + lready,
                                                     lwant - lready, GS_SPACE_RESERVE, &avail)
                                       : 1;
        if (lrc == 0)
            atomic_store_explicit(&g_strlog_ready, lwant, memory_order_release);
        if (sp && (rc == -ENOSPC || lrc == -ENOSPC)) {
            sp->cut = 1;
            sp->avail = avail;
        }
    }
    syscall(SYS_close, (int)fd);
}

int gs_live_needs_blocks(void)
{
    gs_live_header *h = g_live;
    if (!h)
        return 0;
    uint32_t want = atomic_load(&h->slots_used) + SLOTS_SPARE;
    int need = want <= h->slots && want > atomic_load(&g_slots_ready);
    need |= atomic_load(&h->strlog_used) + STRLOG_CHUNK / 2 > atomic_load(&g_strlog_ready) &&
            atomic_load(&g_strlog_ready) < h->strlog_cap;
    return need;
}

void gs_live_calib(const gs_calib *c)
{
    gs_live_header *h = g_live;
    if (!h)
        return;
    uint32_t s = atomic_load_explicit(&h->cal_seq, memory_order_relaxed);
    atomic_store_explicit(&h->cal_seq, s + 1, memory_order_relaxed);
    atomic_thread_fence(memory_order_release);
    h->cal_tsc0 = c->tsc0;
    h->cal_mono0 = c->mono0;
    h->cal_tsc1 = c->tsc1;
    h->cal_mono1 = c->mono1;
    atomic_store_explicit(&h->cal_seq, s + 2, memory_order_release);
}

void gs_live_counts(uint64_t dropped_base, uint64_t lost, uint32_t stack_every)
{
    gs_live_header *h = g_live;
    if (!h)
        return;
    atomic_store_explicit(&h->dropped_base, dropped_base, memory_order_relaxed);
    atomic_store_explicit(&h->lost, lost, memory_order_relaxed);
    atomic_store_explicit(&h->stack_every, stack_every, memory_order_relaxed);
}

void gs_live_end(unsigned how, uint32_t status)
{
    gs_live_header *h = g_live;
    if (!h)
        return;
    h->end_status = status;
    h->end_ts = gs_mono_ns();
    atomic_store_explicit(&h->end, how, memory_order_release);
}

/* RATIONALE: a process that ends with events it could not write (a full
 * disk, a failed write) keeps its live file for the counts in its header
 * page; the slots and the log hold nothing a reader needs any more (the
 * writer counted their records lost), yet their blocks were set aside. The
 * header page goes to a file of its own that takes the live file's name;
 * the old file's blocks return to the file system when this process's
 * mapping of it goes, at its end. Its mapping is left alone: another thread
 * may still store into its ring, and a hole there would fault on a full
 * disk. */
void gs_live_keep_header(void *arg)
{
    (void)arg;
    static uint8_t page[GS_LIVE_HEADER_SIZE];
    static char tmp[sizeof g_path + 8];
    gs_live_header *h = g_live;
    const size_t pl = strlen(g_path);
    if (!h || !pl || (h->slots == 0 && h->strlog_cap == 0) || pl + 5 > sizeof tmp)
        return; /* nothing set aside to give back */
    memcpy(tmp, g_path, pl);
    memcpy(tmp + pl, ".tmp", 5);
    long fd = syscall(SYS_openat, AT_FDCWD, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                      0600);
    if (fd < 0)
        return;
    memcpy(page, h, sizeof page);
    gs_live_header *c = (gs_live_header *)page;
    c->slots = 0;
    c->slots_off = c->strlog_off = GS_LIVE_HEADER_SIZE;
    c->strlog_cap = 0;
    atomic_store_explicit(&c->slots_used, 0, memory_order_relaxed);
    atomic_store_explicit(&c->strlog_used, 0, memory_order_relaxed);
    atomic_store_explicit(&c->pend_end, 0, memory_order_relaxed);
    long n = gs_fsize_allows(sizeof page) ? syscall(SYS_write, (int)fd, page, sizeof page) : -1;
    syscall(SYS_close, (int)fd);
    if (n != (long)sizeof page || syscall(SYS_renameat, AT_FDCWD, tmp, AT_FDCWD, g_path) != 0)
        syscall(SYS_unlinkat, AT_FDCWD, tmp, 0); /* the whole file stays */
}

void gs_live_remove(void)
{
    if (g_live && g_path[0])
        syscall(SYS_unlinkat, AT_FDCWD, g_path, 0);
    g_path[0] = 0;
}

void gs_live_discard(void)
{
    gs_live_remove();
    if (g_live)
        syscall(SYS_munmap, g_live, g_size);
    g_live = NULL;
}

void gs_live_after_fork_child(void)
{
    /* the mapping is the parent's file: leave it untouched, and out of reach */
    if (g_live)
        syscall(SYS_munmap, g_live, g_size);
    g_live = NULL;
    g_path[0] = 0;
}
