/* gs_stacks.c — sampled call stacks (GPUSTARVE_STACKS=1) and the executable
 * mappings that make them readable offline.
 *
 * Responsible for: the per-caller-address sampling decision (unwind the
 * first GPUSTARVE_STACK_FIRST calls of each caller, then 1 in
 * GPUSTARVE_STACK_EVERY; the calls between carry the caller's last stack),
 * the unwind (libunwind's unw_backtrace, local,
 * at most GPUSTARVE_STACK_DEPTH frames), a lock-free table that interns
 * frame arrays into stack ids (1..32767 per process image), and, for the
 * writer, MAPPING records (path, range, file offset, GNU build id) of the
 * executable mappings from /proc/self/maps, and the copy of Python's perf
 * map (/tmp/perf-<pid>.map) next to the trace at exit.
 *
 * Must never: allocate, lock or make a system call on a hook's path after
 * the calling thread's first unwind; unwind with the guard clear; let a full
 * table do anything but record no stack (the event itself is kept).
 *
 * RATIONALE (libunwind and allocation): unw_backtrace keeps a per-thread
 * cache of frame layouts (created once per thread with mmap, never malloc)
 * and falls back to unw_step on a miss. unw_step's own register-state cache
 * is global and taken with a lock (and two sigprocmask calls) under
 * UNW_CACHE_GLOBAL; this libunwind (1.6) has no per-thread variant, so we
 * select UNW_CACHE_NONE: a miss re-reads the unwind info (dl_iterate_phdr,
 * a few microseconds, once per new return address per thread), a hit never
 * leaves the thread. Everything libunwind initialises once (tdep init, the
 * pthread key of the trace cache) is done here at start-up by one unwind
 * outside any hook.
 *
 * RATIONALE (linking): libunwind is referenced weakly and the library is
 * not linked with it (a dependency costs every process's symbol lookups:
 * the Makefile). `gpustarve run --stacks` preloads libgcc_s and libunwind
 * after the library (libgcc_s first in the global scope, so that
 * libunwind's own _Unwind_* never become the program's C++ exception
 * unwinder): the weak references bind to it at start-up and its TLS is
 * static. Otherwise (GPUSTARVE_STACKS=1 set by hand) it is dlopen'ed
 * RTLD_LOCAL here at start-up, and glibc allocates its 16 bytes of TLS with
 * malloc at each thread's first unwind.
 */
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#define UNW_LOCAL_ONLY
#include <libunwind.h>

#include "gs_buildid.h"
#include "gs_config.h"
#include "gs_fsize.h"
#include "gs_preload.h"
#include "gs_stacks.h"
#include "gs_strings.h"

/* weak: resolved when libunwind is preloaded (gpustarve run --stacks) */
extern int unw_backtrace(void **, int) __attribute__((weak));
extern int unw_set_caching_policy(unw_addr_space_t, unw_caching_policy_t) __attribute__((weak));
extern unw_addr_space_t unw_local_addr_space __attribute__((weak));

#define GS_STR2(x) #x
#define GS_STR(x) GS_STR2(x)

typedef int (*backtrace_fn)(void **, int);
typedef int (*policy_fn)(unw_addr_space_t, unw_caching_policy_t);

int gs_stacks_on;
static backtrace_fn g_bt;
static __thread int t_unwinding GS_TLS_IE; /* 1 while libunwind runs for us */
static uint32_t g_depth = 16, g_first = 8, g_every = 64;
static uintptr_t g_self_lo, g_self_hi; /* our own object's address span */

/* ---- config ------------------------------------------------------------------ */

uint32_t gs_stacks_every(void)
{
    return g_every;
}

static void *map_noreserve(size_t len)
{
    long p = syscall(SYS_mmap, NULL, len, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    return (p == -1) ? NULL : (void *)p;
}

/* ---- call sites: caller address -> calls seen ------------------------------------ */

/* RATIONALE: 16k caller addresses cover every hooked call site of a large
 * program (each distinct return address into the program is one); past
 * that, unknown callers share one counter and are sampled together. */
#define SITE_SLOTS (1u << 14)
#define SITE_PROBES 32

typedef struct site {
    _Atomic uintptr_t key;
    _Atomic uint32_t calls;
    _Atomic uint32_t last; /* the stack id last unwound here, 0 = none yet */
} site;

static site *g_sites;
static site g_site_overflow;

static site *site_of(uintptr_t caller)
{
    uint32_t h = (uint32_t)((caller * 0x9E3779B97F4A7C15ull) >> 50);
    for (uint32_t i = 0; i < SITE_PROBES; i++) {
        site *s = &g_sites[(h + i) & (SITE_SLOTS - 1)];
        uintptr_t k = atomic_load_explicit(&s->key, memory_order_relaxed);
        if (k == caller)
            return s;
        if (k == 0) {
            if (atomic_compare_exchange_strong_explicit(&s->key, &k, caller,
                                                        memory_order_relaxed,
                                                        memory_order_relaxed) ||
                k == caller)
                return s;
        }
    }
    return &g_site_overflow;
}

/* ---- stack table: frames -> id ------------------------------------------------------ */

#define STACK_HASH_SLOTS (1u << 16)
#define STACK_PROBES 64

typedef struct stack_entry {
    uint32_t n;
    uint32_t hash;
    uint64_t f[]; /* g_depth frames */
} stack_entry;

static uint8_t *g_stk;         /* (GS_STACK_IDS_MAX + 1) entries of g_stride bytes */
static size_t g_stride;
static _Atomic uint8_t *g_ready; /* id -> entry written */
static _Atomic uint32_t *g_stk_hash; /* slot -> id */
static _Atomic uint32_t g_stk_next = 1;

static stack_entry *entry_at(uint32_t id)
{
    return (stack_entry *)(g_stk + (size_t)id * g_stride);
}

static uint32_t hash_frames(const uint64_t *f, uint32_t n)
{
    uint64_t h = 1469598103934665603ull ^ n;
    for (uint32_t i = 0; i < n; i++)
        h = (h ^ f[i]) * 1099511628211ull;
    uint32_t x = (uint32_t)(h ^ (h >> 32));
    return x ? x : 1;
}

static uint32_t stack_create(const uint64_t *f, uint32_t n, uint32_t h)
{
    uint32_t id = atomic_fetch_add_explicit(&g_stk_next, 1, memory_order_relaxed);
    if (id > GS_STACK_IDS_MAX)
        return 0;
    stack_entry *e = entry_at(id);
    e->n = n;
    e->hash = h;
    memcpy(e->f, f, n * sizeof *f);
    atomic_store_explicit(&g_ready[id], 1, memory_order_release);
    return id;
}

static int stack_same(uint32_t id, const uint64_t *f, uint32_t n, uint32_t h)
{
    if (!id || id > GS_STACK_IDS_MAX || !atomic_load_explicit(&g_ready[id], memory_order_acquire))
        return 0;
    const stack_entry *e = entry_at(id);
    return e->hash == h && e->n == n && memcmp(e->f, f, n * sizeof *f) == 0;
}

static uint32_t stack_intern(const uint64_t *f, uint32_t n)
{
    uint32_t h = hash_frames(f, n);
    uint32_t mine = 0;
    for (uint32_t i = 0; i < STACK_PROBES; i++) {
        _Atomic uint32_t *slot = &g_stk_hash[(h + i) & (STACK_HASH_SLOTS - 1)];
        uint32_t id = atomic_load_explicit(slot, memory_order_acquire);
        if (id == 0) {
            if (!mine)
                mine = stack_create(f, n, h);
            if (!mine)
                return 0;
            if (atomic_compare_exchange_strong_explicit(slot, &id, mine, memory_order_acq_rel,
                                                        memory_order_acquire))
                return mine;
        }
        if (stack_same(id, f, n, h))
            return id; /* an entry we created, if any, stays unused */
    }
    return mine ? mine : stack_create(f, n, h);
}

const uint64_t *gs_stack_frames(uint32_t id, uint32_t *n)
{
    if (!g_stk || !id || id > GS_STACK_IDS_MAX ||
        !atomic_load_explicit(&g_ready[id], memory_order_acquire))
        return NULL;
    const stack_entry *e = entry_at(id);
    *n = e->n;
    return e->f;
}

/* ---- the hot path's slow half ---------------------------------------------------- */

/* RATIONALE: every call carries a stack id, unwound or not: calls between
 * two unwinds of the same caller address carry the stack last unwound there
 * (weight 1, so the analyzer's time per call site is exact for a caller
 * with one stack, and sampled in the proportions of the unwinds for one
 * with many, such as an interpreter's read). Only callers that overflow the
 * site table share a counter: their unwound calls stand for M calls
 * (GS_STACK_SAMPLED) and the others carry none. */
static uint16_t stack_slow(const void *caller)
{
    site *s = site_of((uintptr_t)caller);
    uint32_t k = atomic_fetch_add_explicit(&s->calls, 1, memory_order_relaxed);
    const int shared = s == &g_site_overflow;
    if (k >= g_first && (g_every == 0 || (k - g_first) % g_every != g_every - 1))
        return shared ? 0 : (uint16_t)atomic_load_explicit(&s->last, memory_order_relaxed);
    void *buf[GS_STACK_DEPTH_MAX + 16];
    t_unwinding = 1;
    int got = g_bt(buf, (int)g_depth + 16);
    t_unwinding = 0;
    uint64_t f[GS_STACK_DEPTH_MAX];
    uint32_t n = 0;
    int i = 0;
    /* our own frames (this function, the record helper, the hook) first */
    while (i < got && (uintptr_t)buf[i] >= g_self_lo && (uintptr_t)buf[i] < g_self_hi)
        i++;
    for (; i < got && n < g_depth; i++)
        f[n++] = (uint64_t)(uintptr_t)buf[i];
    if (n == 0)
        f[n++] = (uint64_t)(uintptr_t)caller; /* the unwinder gave up: the caller at least */
    uint32_t id = stack_intern(f, n);
    if (!id)
        return 0;
    if (shared)
        return (uint16_t)(id | (k >= g_first && g_every > 1 ? GS_STACK_SAMPLED : 0));
    atomic_store_explicit(&s->last, id, memory_order_relaxed);
    return (uint16_t)id;
}

/* The read hooks do not save errno around it (preload/hook_io.c): keep it. */
uint16_t gs_stack_slow(const void *caller)
{
    const int e = errno;
    const uint16_t id = stack_slow(caller);
    errno = e;
    return id;
}

/* ---- start-up --------------------------------------------------------------------- */

static int find_self(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    uintptr_t me = (uintptr_t)arg;
    uintptr_t lo = UINTPTR_MAX, hi = 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD)
            continue;
        uintptr_t a = info->dlpi_addr + ph->p_vaddr;
        if (a < lo)
            lo = a;
        if (a + ph->p_memsz > hi)
            hi = a + ph->p_memsz;
    }
    if (me >= lo && me < hi) {
        g_self_lo = lo;
        g_self_hi = hi;
        return 1;
    }
    return 0;
}

static int bring_up_libunwind_(void);

static int bring_up_libunwind(void)
{
    t_unwinding = 1; /* libunwind's one-time set-up opens its pipe in here */
    int rc = bring_up_libunwind_();
    t_unwinding = 0;
    return rc;
}

static int bring_up_libunwind_(void)
{
    policy_fn policy = NULL;
    unw_addr_space_t *as = NULL;
    if (unw_backtrace && unw_set_caching_policy && &unw_local_addr_space) {
        g_bt = unw_backtrace;
        policy = unw_set_caching_policy;
        as = &unw_local_addr_space;
    } else {
        void *h = dlopen("libunwind.so.8", RTLD_NOW | RTLD_LOCAL);
        if (!h)
            return -1;
        g_bt = (backtrace_fn)dlsym(h, "unw_backtrace");
        policy = (policy_fn)dlsym(h, GS_STR(unw_set_caching_policy));
        as = (unw_addr_space_t *)dlsym(h, GS_STR(unw_local_addr_space));
        if (!g_bt || !policy || !as)
            return -1;
    }
    policy(*as, UNW_CACHE_NONE);
    void *warm[8];
    return g_bt(warm, 8) > 0 ? 0 : -1;
}

/* RATIONALE: libunwind (1.6) validates addresses of frames without unwind
 * info by writing them into a pipe it opens at set-up (and reopens when its
 * descriptors stop working). Left alone it takes the program's lowest free
 * descriptors (3 and 4), and every open() of the program returns another
 * number than it would untraced. This pipe2 — the only one the process
 * sees, exported — moves the pipes libunwind opens for us up to
 * GS_UNWIND_FD_MIN and above, as gs_output.c moves the trace file, and is
 * the plain system call for everyone else. */
#define GS_UNWIND_FD_MIN 900

static int move_high(int fd, int cloexec)
{
    int hi = (int)syscall(SYS_fcntl, fd, cloexec ? F_DUPFD_CLOEXEC : F_DUPFD, GS_UNWIND_FD_MIN);
    if (hi < 0)
        return fd; /* RLIMIT_NOFILE below the floor: stays where it is */
    syscall(SYS_close, fd);
    return hi;
}

__attribute__((visibility("default"))) int pipe2(int fds[2], int flags)
{
    long r = syscall(SYS_pipe2, fds, flags);
    if (r == 0 && t_unwinding) {
        int err = errno;
        fds[0] = move_high(fds[0], flags & O_CLOEXEC);
        fds[1] = move_high(fds[1], flags & O_CLOEXEC);
        errno = err;
    }
    return (int)r;
}

int gs_stacks_init(void)
{
    if (!gs_cfg.stacks)
        return 0;
    g_depth = gs_cfg.stack_depth;
    g_first = gs_cfg.stack_first;
    g_every = gs_cfg.stack_every;
    g_stride = sizeof(stack_entry) + g_depth * sizeof(uint64_t);
    g_sites = map_noreserve(SITE_SLOTS * sizeof(site));
    g_stk = map_noreserve((GS_STACK_IDS_MAX + 1) * g_stride);
    g_ready = map_noreserve(GS_STACK_IDS_MAX + 1);
    g_stk_hash = map_noreserve(STACK_HASH_SLOTS * sizeof(uint32_t));
    if (!g_sites || !g_stk || !g_ready || !g_stk_hash)
        return -1;
    dl_iterate_phdr(find_self, (void *)(uintptr_t)gs_stacks_init);
    if (!g_self_hi || bring_up_libunwind() != 0)
        return -1;
    gs_stacks_on = 1;
    return 0;
}

/* ---- mappings (writer, output lock held) ------------------------------------------- */

#define MAPS_MAX 8192

typedef struct gmap {
    uint64_t start, end, off, ino;
    uint64_t dev_major, dev_minor;
} gmap;

static gmap *g_maps; /* known executable mappings, in the order seen */
static uint32_t g_nmaps;
static unsigned long long g_adds, g_subs; /* dl_iterate_phdr's load/unload counts */
static int g_maps_read;

static int dl_counts(struct dl_phdr_info *info, size_t size, void *arg)
{
    unsigned long long *c = arg;
    if (size >= offsetof(struct dl_phdr_info, dlpi_subs) + sizeof info->dlpi_subs) {
        c[0] = info->dlpi_adds;
        c[1] = info->dlpi_subs;
    }
    return 1;
}

static int map_known(uint64_t a)
{
    for (uint32_t i = g_nmaps; i-- > 0;)
        if (a >= g_maps[i].start && a < g_maps[i].end)
            return 1;
    return 0;
}

static int map_seen(const gmap *m)
{
    for (uint32_t i = 0; i < g_nmaps; i++)
        if (g_maps[i].start == m->start && g_maps[i].end == m->end && g_maps[i].off == m->off &&
            g_maps[i].ino == m->ino)
            return 1;
    return 0;
}

static int read_fd(void *ctx, uint64_t off, void *buf, size_t len)
{
    long fd = (long)(intptr_t)ctx;
    long n = syscall(SYS_pread64, (int)fd, buf, len, (off_t)off);
    return n == (long)len ? 0 : -1;
}

static int read_mem(void *ctx, uint64_t off, void *buf, size_t len)
{
    memcpy(buf, (const char *)ctx + off, len);
    return 0;
}

/* Hex GNU build id of an ELF image read through rd; its length, 0 when none.
 * The notes are read into one buffer: the writer calls this with the output
 * lock held. */
static size_t build_id(gs_elf_read_fn rd, void *ctx, char *hex)
{
    static uint8_t note[4096];
    return gs_build_id_phdrs(rd, ctx, note, sizeof note, hex);
}

static void put_mapping(const gmap *m, const char *path, size_t plen,
                        void (*put)(const gs_event *ev))
{
    char hex[GS_BUILD_ID_HEX];
    size_t hlen = 0;
    if (plen && path[0] == '/') {
        char p[4096];
        size_t n = plen < sizeof p - 1 ? plen : sizeof p - 1;
        memcpy(p, path, n);
        p[n] = 0;
        /* RATIONALE: only the very file that is mapped (same device and
         * inode, a regular file): never a FIFO or a file put at that path
         * since, whose bytes would otherwise end up in the trace. */
        long fd = syscall(SYS_openat, AT_FDCWD, p, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
        if (fd >= 0) {
            struct stat st;
            if (syscall(SYS_fstat, (int)fd, &st) == 0 && S_ISREG(st.st_mode) &&
                st.st_ino == m->ino && major(st.st_dev) == m->dev_major &&
                minor(st.st_dev) == m->dev_minor)
                hlen = build_id(read_fd, (void *)(intptr_t)fd, hex);
            syscall(SYS_close, (int)fd);
        }
    } else if (plen == 6 && memcmp(path, "[vdso]", 6) == 0) {
        hlen = build_id(read_mem, (void *)(uintptr_t)m->start, hex);
    }
    gs_event ev;
    gs_event_clear(&ev);
    ev.kind = GS_K_MAPPING;
    ev.ts = gs_mono_ns();
    ev.str = plen ? gs_str_intern(path, plen) : 0;
    ev.aux = m->start;
    ev.bytes = m->end - m->start;
    ev.offset = (int64_t)m->off;
    ev.aux2 = hlen ? gs_str_intern(hex, hlen) : 0;
    put(&ev);
}

static uint64_t hex_num(const char **pp)
{
    const char *p = *pp;
    uint64_t x = 0;
    for (;; p++) {
        unsigned d;
        if (*p >= '0' && *p <= '9')
            d = (unsigned)(*p - '0');
        else if (*p >= 'a' && *p <= 'f')
            d = (unsigned)(*p - 'a' + 10);
        else
            break;
        x = x * 16 + d;
    }
    *pp = p;
    return x;
}

/* One line of /proc/self/maps: "start-end perms offset dev inode   path". */
static void maps_line(const char *l, size_t len, void (*put)(const gs_event *ev))
{
    const char *p = l, *end = l + len;
    gmap m;
    m.start = hex_num(&p);
    if (*p++ != '-')
        return;
    m.end = hex_num(&p);
    if (*p++ != ' ' || end - p < 5 || p[2] != 'x')
        return; /* not executable */
    p += 5;
    m.off = hex_num(&p);
    while (p < end && *p == ' ')
        p++;
    m.dev_major = hex_num(&p); /* dev: "major:minor" in hex */
    if (p < end && *p == ':')
        p++;
    m.dev_minor = hex_num(&p);
    while (p < end && *p != ' ')
        p++;
    while (p < end && *p == ' ')
        p++;
    m.ino = 0;
    while (p < end && *p >= '0' && *p <= '9')
        m.ino = m.ino * 10 + (uint64_t)(*p++ - '0');
    while (p < end && *p == ' ')
        p++;
    if (m.end <= m.start || g_nmaps >= MAPS_MAX || map_seen(&m))
        return;
    if (end - p == 10 && memcmp(p, "[vsyscall]", 10) == 0)
        return;
    g_maps[g_nmaps++] = m;
    put_mapping(&m, p, (size_t)(end - p), put);
}

static void maps_read(void (*put)(const gs_event *ev))
{
    static char buf[64 << 10];
    long fd = syscall(SYS_openat, AT_FDCWD, "/proc/self/maps", O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    if (fd < 0)
        return;
    size_t have = 0;
    for (;;) {
        long n = syscall(SYS_read, (int)fd, buf + have, sizeof buf - have);
        if (n <= 0)
            break;
        have += (size_t)n;
        size_t start = 0;
        for (size_t i = 0; i < have; i++) {
            if (buf[i] == '\n') {
                maps_line(buf + start, i - start, put);
                start = i + 1;
            }
        }
        memmove(buf, buf + start, have - start);
        have -= start;
        if (have == sizeof buf)
            have = 0; /* a line longer than the buffer: drop it */
    }
    syscall(SYS_close, (int)fd);
}

void gs_maps_cover(const uint64_t *frames, uint32_t n, void (*put)(const gs_event *ev))
{
    if (!g_maps) {
        g_maps = map_noreserve(MAPS_MAX * sizeof(gmap));
        if (!g_maps)
            return;
    }
    unsigned long long c[2] = {g_adds, g_subs};
    dl_iterate_phdr(dl_counts, c);
    int need = !g_maps_read || c[0] != g_adds || c[1] != g_subs;
    for (uint32_t i = 0; i < n && !need; i++)
        need = !map_known(frames[i]);
    if (!need)
        return;
    g_adds = c[0];
    g_subs = c[1];
    g_maps_read = 1;
    maps_read(put);
}

void gs_stacks_after_fork_child(void)
{
    g_nmaps = 0;
    g_maps_read = 0;
}

/* ---- Python's perf map ---------------------------------------------------------------- */

void gs_perfmap_copy(const char *trace_path)
{
    if (!gs_stacks_on || !trace_path || !trace_path[0])
        return;
    char src[64], dst[4200];
    snprintf(src, sizeof src, "/tmp/perf-%d.map", (int)syscall(SYS_getpid));
    const size_t tl = strlen(trace_path), ns = sizeof GS_TRACE_SUFFIX - 1;
    if (tl < ns || tl + sizeof GS_PERFMAP_SUFFIX > sizeof dst)
        return;
    memcpy(dst, trace_path, tl - ns); /* without the trace suffix */
    memcpy(dst + tl - ns, GS_PERFMAP_SUFFIX, sizeof GS_PERFMAP_SUFFIX);
    /* RATIONALE: /tmp is everyone's: the map is copied only when it is a
     * regular file of ours, reached without a symlink, and opening it can
     * not block (a FIFO put there would hang the exit). */
    long in = syscall(SYS_openat, AT_FDCWD, src, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    if (in < 0)
        return;
    struct stat st;
    if (syscall(SYS_fstat, (int)in, &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid()) {
        syscall(SYS_close, (int)in);
        return;
    }
    long out = syscall(SYS_openat, AT_FDCWD, dst,
                       O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (out >= 0) {
        static char buf[64 << 10];
        /* RATIONALE: 256 MiB bounds the time spent at exit on a runaway map */
        for (uint64_t total = 0; total < (256u << 20);) {
            long n = syscall(SYS_read, (int)in, buf, sizeof buf);
            if (n <= 0)
                break;
            if (!gs_fsize_allows(total + (uint64_t)n) ||
                syscall(SYS_write, (int)out, buf, (size_t)n) != n)
                break;
            total += (uint64_t)n;
        }
        syscall(SYS_close, (int)out);
    }
    syscall(SYS_close, (int)in);
}
