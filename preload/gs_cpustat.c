/* gs_cpustat.c — the traced threads' own clocks: CPU time, run-queue delay
 * (runnable, not running), major page faults and context switches, written
 * as CPU records (docs/trace-format.md, "Thread CPU samples").
 *
 * Responsible for: (a) the sample a thread takes of itself at its batch
 * boundaries (gs_cpu_at_marker, called by gs_marker.c before a fetch_begin,
 * fetch_end or step_end record): its CPU clock in ns
 * (CLOCK_THREAD_CPUTIME_ID), getrusage(RUSAGE_THREAD) for faults and
 * switches, and its run-queue delay in ns from /proc/thread-self/schedstat,
 * read only when the thread was switched out since its last read
 * (docs/performance.md "Thread CPU samples" has the cost), on its own ring,
 * and the same around the first CUDA calls of a training thread's own batch
 * making (gs_cpu_prep_arm, gs_cpu_cut_begin/end, called by gs_marker.c and
 * the CUDA hooks); (b) the
 * periodic sample of every thread of the process (gs_cpu_periodic, called by
 * the writer's drain where the trace file lives: the thread's schedstat
 * (/proc/<tid>/task/<tid>/schedstat, gs_task_read) gives CPU time and
 * run-queue delay in ns; for a thread with a
 * ring, its major faults as the writer read them in the same drain and the
 * bytes it had read from storage, task io's read_bytes), which also covers
 * threads that make no hooked call (C/C++ loader threads, intra-op pools)
 * and names them with a THREAD record the first time it is seen, when its
 * first sample follows a birth record if the thread began while traced
 * (gs_births.h: every clock 0 before it existed); (c) the
 * machine's CPU time (/proc/stat) over the CPUs the process may run on, at
 * most every HOST_PERIOD_NS, as a HOST_CPU record: what every process of
 * the machine kept busy, which the analyzer sets against the run's own
 * threads (docs/trace-format.md, "Machine CPU samples").
 *
 * Must never: call a hooked function or anything that allocates (raw system
 * calls only), keep a descriptor open (every /proc file is opened, read and
 * closed inside one call: the periodic ones where the trace file lives,
 * docs/collector-safety.md "The trace file is never the program's
 * descriptor"; the marker's schedstat, close-on-exec, in the program's
 * table on its own thread, as libc reads /proc), block, change errno
 * (the marker path's caller saves it; the periodic path runs on the
 * collector's threads), or sample the collector's own threads.
 */
#include <assert.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <sys/auxv.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "gs_births.h"
#include "gs_cpustat.h"
#include "gs_preload.h"
#include "gs_ring.h"
#include "gs_state.h"
#include "gs_strings.h"

/* ---- (a) at a marker, on the calling thread ----------------------------------------- */

static const char *parse_u64(const char *p, uint64_t *v);

static uint32_t cut32(long v)
{
    return v < 0 ? 0 : (unsigned long)v > 0xffffffffUL ? 0xffffffffu : (uint32_t)v;
}

/* The run-queue delay this thread read last at a marker, and its context
 * switches then. RATIONALE: the kernel adds to a thread's run_delay only
 * when the thread gets a CPU after waiting in a run queue, and it leaves
 * the CPU only through a switch (voluntary or preempted, both counted):
 * with no switch since the last read, run_delay is what it was, and the
 * /proc read (most of the sample's cost) is skipped. tid: a forked child's
 * thread inherits these and starts its counts afresh. */
static __thread uint32_t t_rq_tid GS_TLS_IE;
static __thread uint64_t t_rq_switches GS_TLS_IE;
static __thread uint64_t t_rq_ns GS_TLS_IE;

/* This thread's run-queue delay (ns) from /proc/thread-self/schedstat; 0
 * when unreadable (then *ok is 0). */
static uint64_t runq_now(uint32_t tid, uint64_t switches, int *ok)
{
    if (t_rq_tid == tid && t_rq_switches == switches) {
        *ok = 1;
        return t_rq_ns;
    }
    char buf[96];
    uint64_t cpu = 0, rq = 0;
    const char *p = gs_proc_read_at(AT_FDCWD, "/proc/thread-self/schedstat", buf, sizeof buf) > 0
                        ? parse_u64(buf, &cpu) : NULL;
    if (!p || !parse_u64(p, &rq)) {
        *ok = 0;
        return 0;
    }
    t_rq_tid = tid;
    t_rq_switches = switches;
    t_rq_ns = rq;
    *ok = 1;
    return rq;
}

uint64_t gs_cpu_at_marker(uint64_t t0)
{
    struct timespec cpu;
    struct rusage ru;
    /* RATIONALE: the thread's CPU clock in ns: getrusage's own CPU times
     * leave out what the thread ran since the scheduler last accounted it
     * (a tick, up to 4 ms), so a short fetch often read 0 ms of CPU; the
     * CPU clock adds it (docs/performance.md, "Thread CPU samples") */
    if (syscall(SYS_clock_gettime, CLOCK_THREAD_CPUTIME_ID, &cpu) != 0 ||
        syscall(SYS_getrusage, RUSAGE_THREAD, &ru) != 0)
        return t0 ? t0 : gs_now();
    gs_ring *g = gs_t_ring;
    const uint32_t tid = g ? g->tid : (uint32_t)syscall(SYS_gettid);
    const uint64_t switches = (uint64_t)ru.ru_nvcsw + (uint64_t)ru.ru_nivcsw;
    int rq_ok;
    const uint64_t rq = runq_now(tid, switches, &rq_ok);
    if (!t0)
        t0 = gs_now();
    gs_rec r = GS_REC_INIT(GS_K_CPU, t0);
    r.bytes = (uint64_t)cpu.tv_sec * 1000000000u + (uint64_t)cpu.tv_nsec;
    r.aux = gs_pack_cpu_aux(tid, GS_CPU_SRC_MARKER,
                            GS_CPU_HAS_FAULTS | GS_CPU_HAS_SWITCHES | (rq_ok ? GS_CPU_HAS_RUNQ : 0));
    /* less the live file's pages it touched first (the writer's FAULTS: the same) */
    const long own = g ? (long)atomic_load_explicit(&g->own_faults, memory_order_relaxed) : 0;
    r.aux2 = cut32(ru.ru_majflt - own);
    r.ret = (int64_t)((uint64_t)cut32(ru.ru_nvcsw) | (uint64_t)cut32(ru.ru_nivcsw) << 32);
    r.offset = (int64_t)rq; /* run-queue delay */
    gs_emit(&r);
    return t0;
}

/* CUDA calls left to sample around in the thread's batch making (0:
 * not armed), and whether the call it is in took a sample at its start. */
static __thread uint8_t t_prep_left GS_TLS_IE;
static __thread uint8_t t_prep_open GS_TLS_IE;

void gs_cpu_prep_arm(int on)
{
    t_prep_left = on ? GS_PREP_SAMPLED_CUTS : 0;
    t_prep_open = 0;
}

uint64_t gs_cpu_cut_begin(void)
{
    if (GS_LIKELY(!t_prep_left))
        return gs_now();
    t_prep_left--;
    t_prep_open = 1;
    const int err = errno; /* the program's, before its call */
    const uint64_t t0 = gs_cpu_at_marker(0);
    errno = err;
    return t0;
}

uint64_t gs_cpu_cut_end(void)
{
    const uint64_t t1 = gs_now();
    if (GS_UNLIKELY(t_prep_open)) {
        t_prep_open = 0;
        const int err = errno;
        gs_cpu_at_marker(t1);
        errno = err;
    }
    return t1;
}

/* ---- (b) every thread, from the writer ------------------------------------------------ */

/* RATIONALE: samples closer than this add cost and no information (the
 * writer also drains when a ring is half full, which can be often). */
#define MIN_PERIOD_NS 50000000ull
/* Threads sampled per period at most: ~15 µs each (docs/performance.md). */
#define MAX_THREADS 512
/* Threads remembered (named, or known to be the collector's own). */
#define SEEN_CAP 2048u

enum { SEEN_NAMED = 1, SEEN_OURS = 2 };

static uint64_t g_last;
static int g_force;
static uint64_t g_host_last; /* (c) below */
static void host_sample(uint64_t now, uint32_t tid, gs_cpu_put_fn put);
static pid_t g_for_pid; /* the process the tables below describe (a fork child starts afresh) */
static uint32_t g_seen_tid[SEEN_CAP];
static uint8_t g_seen_flags[SEEN_CAP];

static uint8_t *seen_slot(uint32_t tid, int add)
{
    uint32_t h = (tid * 2654435761u) & (SEEN_CAP - 1);
    for (uint32_t n = 0; n < SEEN_CAP; n++, h = (h + 1) & (SEEN_CAP - 1)) {
        if (g_seen_tid[h] == tid)
            return &g_seen_flags[h];
        if (!g_seen_tid[h]) {
            if (!add)
                return NULL;
            g_seen_tid[h] = tid;
            g_seen_flags[h] = 0;
            return &g_seen_flags[h];
        }
    }
    return NULL; /* full: sampled, never named */
}

long gs_proc_read_at(int dfd, const char *rel, char *buf, size_t cap)
{
    long fd = syscall(SYS_openat, dfd, rel, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    if (fd < 0)
        return -1;
    long n = syscall(SYS_read, (int)fd, buf, cap - 1);
    syscall(SYS_close, (int)fd);
    if (n < 0)
        return -1;
    buf[n] = 0;
    return n;
}

/* RATIONALE: a thread's files are read as /proc/<tid>/task/<tid>/<leaf>,
 * not /proc/self/task/<tid>/<leaf>. The kernel drops a thread's /proc
 * entries when the thread is released, and those under /proc/<pid>/ when
 * the process is reaped; a thread released at the process's end (every
 * thread but the main one, the collector's own included) drops entries
 * under /proc/<pid>/task/<tid>/ while the parent, reaping the process,
 * walks /proc/<pid>/, and the parent's walk then spins until the thread's
 * is done: 3 to 6 ms of the parent's CPU per reaped child, on its thread
 * that called wait (a DataLoader's main thread at the end of every epoch;
 * docs/performance.md, "Forked workers"). Under /proc/<tid>/ the entries
 * are the thread's alone. The listing of /proc/self/task makes entries
 * only for the threads themselves, which the parent's walk passes at no
 * cost. A thread that ended between the listing and the read may have had
 * its tid given to a thread of another process by then: pids are handed
 * out in a cycle (pid_max), so that is one sample of a stranger in a
 * window of microseconds. */
static char *put_str(char *p, const char *s)
{
    while (*s)
        *p++ = *s++;
    return p;
}

static char *put_u32(char *p, uint32_t v)
{
    char d[10];
    int n = 0;
    do
        d[n++] = (char)('0' + v % 10);
    while ((v /= 10) != 0);
    while (n)
        *p++ = d[--n];
    return p;
}

long gs_task_read(uint32_t tid, const char *leaf, char *buf, size_t cap)
{
    char path[64];
    assert(strlen(leaf) < 16);
    char *p = put_u32(put_str(path, "/proc/"), tid);
    p = put_u32(put_str(p, "/task/"), tid);
    *put_str(put_str(p, "/"), leaf) = 0;
    return gs_proc_read_at(AT_FDCWD, path, buf, cap);
}

static const char *parse_u64(const char *p, uint64_t *v)
{
    while (*p == ' ')
        p++;
    if (*p < '0' || *p > '9')
        return NULL;
    uint64_t x = 0;
    while (*p >= '0' && *p <= '9')
        x = x * 10 + (uint64_t)(*p++ - '0');
    *v = x;
    return p;
}

/* The live ring of thread tid, or NULL (a thread that made no hooked call). */
static gs_ring *ring_of(uint32_t tid)
{
    uint32_t n = gs_ring_count();
    for (uint32_t i = 0; i < n; i++) {
        gs_ring *r = gs_ring_at(i);
        if (r && r->tid == tid &&
            atomic_load_explicit(&r->state, memory_order_relaxed) == GS_RING_LIVE)
            return r;
    }
    return NULL;
}

/* read_bytes of the thread's io file: what the thread had read from
 * storage. 0 when the kernel keeps no task I/O accounting. */
static int storage_read(uint32_t tid, uint64_t *out)
{
    char buf[512];
    if (gs_task_read(tid, "io", buf, sizeof buf) <= 0)
        return 0;
    const char *p = strstr(buf, "\nread_bytes:");
    return p && parse_u64(p + 12, out) != NULL;
}

/* First sight of a thread: the collector's own (skipped from now on), or
 * named with a THREAD record when the writer does not name it (no ring). */
static int first_sight(uint32_t tid, uint32_t self, uint64_t now, uint8_t *flags,
                       gs_cpu_put_fn put)
{
    char comm[64];
    long n = gs_task_read(tid, "comm", comm, sizeof comm);
    while (n > 0 && comm[n - 1] == '\n')
        n--;
    if (tid == self || (n == 9 && memcmp(comm, "gpustarve", 9) == 0)) {
        if (flags)
            *flags = SEEN_OURS;
        return 0;
    }
    if (flags)
        *flags = SEEN_NAMED;
    if (n > 0 && !ring_of(tid)) {
        uint32_t id = gs_str_intern(comm, (size_t)n);
        if (id) {
            gs_event ev;
            gs_event_clear(&ev);
            ev.kind = GS_K_THREAD;
            ev.ts = now;
            ev.str = id;
            ev.aux = tid;
            put(tid, &ev);
        }
    }
    return 1;
}

/* A thread seen for the first time that began while this process was
 * traced: its first record says every clock it has was 0 before it
 * existed (gs_births.h), with the fields its periodic samples carry. */
static void put_birth(uint32_t tid, unsigned has, uint64_t now, gs_cpu_put_fn put)
{
    uint64_t before;
    if (!gs_birth_take(tid, &before) || before > now)
        return;
    gs_event ev;
    gs_event_clear(&ev);
    ev.kind = GS_K_CPU;
    ev.ts = before;
    ev.aux = gs_pack_cpu_aux(tid, GS_CPU_SRC_BIRTH, has);
    put(tid, &ev);
}

void gs_cpu_periodic(uint64_t now, gs_cpu_put_fn put)
{
    const pid_t pid = atomic_load(&gs_pid);
    if (pid != g_for_pid) {
        g_for_pid = pid;
        g_last = 0;
        g_host_last = 0;
        memset(g_seen_tid, 0, sizeof g_seen_tid);
    }
    if (!g_force && g_last && now - g_last < MIN_PERIOD_NS)
        return;
    g_force = 0;
    g_last = now;
    host_sample(now, (uint32_t)pid, put);
    long dfd = syscall(SYS_openat, AT_FDCWD, "/proc/self/task",
                       O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NONBLOCK);
    if (dfd < 0)
        return;
    const uint32_t self = (uint32_t)syscall(SYS_gettid);
    char dents[4096];
    unsigned sampled = 0;
    for (;;) {
        long nb = syscall(SYS_getdents64, (int)dfd, dents, sizeof dents);
        if (nb <= 0)
            break;
        for (long off = 0; off < nb;) {
            const struct dirent64 *d = (const struct dirent64 *)(dents + off);
            off += d->d_reclen;
            uint64_t tid64;
            const char *end = parse_u64(d->d_name, &tid64);
            if (!end || *end || !tid64 || tid64 > 0xffffffffu || sampled >= MAX_THREADS)
                continue;
            const uint32_t tid = (uint32_t)tid64;
            uint8_t *fl = seen_slot(tid, 1);
            if (fl && (*fl & SEEN_OURS))
                continue;
            const int first = !fl || !*fl;
            if (first && !first_sight(tid, self, now, fl, put))
                continue;
            char buf[128];
            /* schedstat: ns on a CPU, ns runnable waiting for one, timeslices */
            uint64_t cpu = 0, runq = 0;
            const char *p =
                gs_task_read(tid, "schedstat", buf, sizeof buf) > 0 ? parse_u64(buf, &cpu) : NULL;
            if (!p || !parse_u64(p, &runq))
                continue;
            gs_event ev;
            gs_event_clear(&ev);
            ev.kind = GS_K_CPU;
            ev.ts = now;
            ev.bytes = cpu;
            ev.aux2 = runq;
            /* a thread with a ring: the writer read its major faults in
             * this same drain (the FAULTS record), before this sample; and
             * what it read from storage (page faults included) */
            const gs_ring *ring = ring_of(tid);
            unsigned has = GS_CPU_HAS_RUNQ;
            ev.dev = ring ? (uint32_t)ring->faults : 0;
            has |= ring ? GS_CPU_HAS_FAULTS : 0;
            uint64_t storage;
            if (ring && storage_read(tid, &storage)) {
                ev.ret = (int64_t)storage;
                has |= GS_CPU_HAS_STORAGE;
            }
            if (first)
                put_birth(tid, has, now, put);
            ev.aux = gs_pack_cpu_aux(tid, GS_CPU_SRC_PERIODIC, has);
            put(tid, &ev);
            sampled++;
        }
    }
    syscall(SYS_close, (int)dfd);
}

/* ---- (c) the machine, from the writer ----------------------------------------------- */

/* RATIONALE: /proc/stat is made whole on every read (all CPUs, every
 * interrupt counter); its values tick at USER_HZ (10 ms), so samples closer
 * than this say nothing more and only cost (docs/performance.md). */
#define HOST_PERIOD_NS 200000000ull

static int g_host_force;
/* RATIONALE: static, not on the writer's stack: one writer thread calls
 * this, and 16 KiB holds the per-CPU lines of about 150 CPUs */
static char g_stat[16384];

/* One "cpu..." line's fields after the name: busy and idle ticks. busy is
 * user + nice + system + irq + softirq + steal (time the CPU was not
 * there for anyone who waited), idle is idle + iowait. */
static const char *stat_line(const char *p, uint64_t *busy, uint64_t *idle)
{
    uint64_t v[8] = {0};
    for (int i = 0; i < 8; i++) {
        const char *q = parse_u64(p, &v[i]);
        if (!q)
            return i >= 4 ? p : NULL; /* old kernels have fewer fields */
        p = q;
    }
    *busy = v[0] + v[1] + v[2] + v[5] + v[6] + v[7];
    *idle = v[3] + v[4];
    return p;
}

static void host_sample(uint64_t now, uint32_t tid, gs_cpu_put_fn put)
{
    if (!g_host_force && g_host_last && now - g_host_last < HOST_PERIOD_NS)
        return;
    g_host_force = 0;
    g_host_last = now;
    const unsigned long hz = getauxval(AT_CLKTCK);
    if (!hz)
        return;
    cpu_set_t set;
    CPU_ZERO(&set);
    const long ns = syscall(SYS_sched_getaffinity, 0, sizeof set, &set);
    if (gs_proc_read_at(AT_FDCWD, "/proc/stat", g_stat, sizeof g_stat) <= 0 ||
        memcmp(g_stat, "cpu ", 4) != 0)
        return;
    uint64_t all_busy = 0, all_idle = 0, busy = 0, idle = 0;
    if (!stat_line(g_stat + 4, &all_busy, &all_idle))
        return;
    /* the per-CPU lines of the CPUs in the affinity mask */
    unsigned seen = 0, counted = 0;
    for (const char *p = strchr(g_stat, '\n'); p && memcmp(p + 1, "cpu", 3) == 0;
         p = strchr(p + 1, '\n')) {
        uint64_t cpu, b, i;
        const char *q = parse_u64(p + 4, &cpu);
        if (!q || !stat_line(q, &b, &i))
            break;
        seen++;
        if (ns > 0 && cpu < CPU_SETSIZE && CPU_ISSET((int)cpu, &set)) {
            busy += b;
            idle += i;
            counted++;
        }
    }
    if (!counted || counted == seen) {
        /* every CPU (or the lines did not fit): the first line */
        busy = all_busy;
        idle = all_idle;
        counted = seen;
    }
    const uint64_t tick = 1000000000ull / hz;
    gs_event ev;
    gs_event_clear(&ev);
    ev.kind = GS_K_HOST_CPU;
    ev.ts = now;
    ev.bytes = busy * tick;
    ev.aux = idle * tick;
    ev.aux2 = counted;
    put(tid, &ev);
}

int gs_cpu_periodic_due(uint64_t now)
{
    return g_force || !g_last || atomic_load(&gs_pid) != g_for_pid || now - g_last >= MIN_PERIOD_NS;
}

void gs_cpu_periodic_force(void)
{
    g_force = 1;
    g_host_force = 1;
}
