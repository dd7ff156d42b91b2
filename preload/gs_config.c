/* gs_config.c — configuration and start-up of the collector.
 *
 * Responsible for: reading GPUSTARVE_* from the environment (never in a
 * set-user-ID/set-group-ID process, which is not traced), and bringing
 * every part up in order, exactly once per process image, whether the first
 * caller is our constructor or a hook called before it (another library's
 * constructor): real symbols, clock, tables, rings, output file, writer
 * thread, fork/exit/signal handling; then switching recording on.
 *
 * Must never: record while initialising (the guard is held), allocate on a
 * hook's path after start-up, or fail loudly: anything that goes wrong leaves
 * the library a pure pass-through (and prints at most the one warning).
 */
#include <pthread.h>
#include <stdlib.h>
#include <sys/auxv.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "gs_collector.h"
#include "gs_preload.h"
#include "gs_real.h"
#include "gs_ring.h"
#include "gs_stacks.h"

/* RATIONALE: zstd's fast level -3 with Huffman-coded literals (trace/gs_file.c)
 * costs the least CPU per event and writes the fewest bytes on a busy read
 * loop; the figures are in docs/performance.md, "Compression level". */
#define ZSTD_LEVEL_DEFAULT (-3)
/* RATIONALE: a frame made almost only of runs of calls like the one before
 * them (`repeats` records: a tight read loop) is two columns of short
 * numbers with few matches to find; zstd's level -100 compresses it for
 * about half the CPU of -3 (5.0-5.8 against 10.6-12.4 ns per event, 1.82
 * against 1.47 bytes per event), where a DataLoader's mixed frames would
 * grow by half (docs/performance.md, "Compression of runs"). */
#define ZSTD_LEVEL_RUNS (-100)
/* RATIONALE: such a frame of at most 3.5 raw bytes per event
 * (GS_STORE_MAX_X2) is stored, not compressed: zstd at -100 was 62-70 of
 * the collector's 165 instructions per event there, for about 1 byte per
 * event (3.0 stored against 2.1 compressed, on a tight pread loop); a frame
 * with more (slower calls: longer durations) is compressed at -100, so that
 * a run stays under the 4 bytes per event of the target
 * (docs/performance.md, "Compression of runs"). */

/* RATIONALE: 32768 events per ring: a ring's records stay in it until the
 * frame that holds them is written (docs/collector-safety.md, "Nothing lost
 * when a process dies"), so while the writer compresses and writes, the
 * producer has only what is left; with 16384, a tight pread loop on a loaded
 * 2-core machine (zstd level 3) dropped 28-75% of its events (the collector that frees
 * ring space at copy time, 23-37%); with 32768, 0-8% (docs/collector-safety.md). */
gs_config gs_cfg = {.flush_ms = 200, .ring_events = 32768, .zstd_level = ZSTD_LEVEL_DEFAULT,
                    .zstd_level_runs = ZSTD_LEVEL_RUNS, .store_runs = 1};
_Atomic int gs_on;
_Atomic int gs_inited;
_Atomic pid_t gs_pid;

static pthread_once_t g_init_once = PTHREAD_ONCE_INIT;

/* Unsigned decimal from the environment, clamped to [lo, hi]; dflt when unset
 * or not a number. */
static uint64_t env_u64(const char *name, uint64_t dflt, uint64_t lo, uint64_t hi)
{
    const char *v = getenv(name);
    if (!v || !*v)
        return dflt;
    uint64_t x = 0;
    for (const char *p = v; *p; p++) {
        if (*p < '0' || *p > '9')
            return dflt;
        x = x * 10 + (uint64_t)(*p - '0');
        if (x > hi)
            return hi;
    }
    return x < lo ? lo : x;
}

/* The same for a signed decimal (zstd's fast levels are below 0). */
static int env_int(const char *name, int dflt, int lo, int hi)
{
    const char *v = getenv(name);
    const char *p = v ? v + (v[0] == '-') : NULL;
    if (!p || !*p)
        return dflt;
    int64_t x = 0;
    for (; *p; p++) {
        if (*p < '0' || *p > '9')
            return dflt;
        x = x < 1000000 ? x * 10 + (*p - '0') : x;
    }
    x = v[0] == '-' ? -x : x;
    return x < lo ? lo : x > hi ? hi : (int)x;
}

/* RATIONALE: a set-user-ID or set-group-ID program (AT_SECURE) must not
 * take orders from its caller's environment: GPUSTARVE_DIR would let the
 * caller choose where the privileged process writes, and a library path
 * reaches dlopen. Such a process is not traced at all (pure pass-through),
 * whatever GPUSTARVE_* says; ld.so itself ignores LD_PRELOAD there unless
 * the library is a set-user-ID one in a trusted directory, or linked. */
static void read_config(void)
{
    if (getauxval(AT_SECURE)) {
        gs_cfg.disabled = 1;
        return;
    }
    const char *d = getenv("GPUSTARVE_DISABLE");
    gs_cfg.disabled = d && d[0] && strcmp(d, "0") != 0;
    gs_cfg.flush_ms = (unsigned)env_u64("GPUSTARVE_FLUSH_MS", 200, 1, 60000);
    gs_cfg.ring_events = env_u64("GPUSTARVE_RING_EVENTS", 32768, 64, 1u << 24);
    /* a level the user set is every frame's; 1000 (out of range): not set */
    const int zl = env_int("GPUSTARVE_ZSTD_LEVEL", 1000, -7, 19);
    gs_cfg.zstd_level = zl == 1000 ? ZSTD_LEVEL_DEFAULT : zl;
    gs_cfg.zstd_level_runs = zl == 1000 ? ZSTD_LEVEL_RUNS : zl;
    gs_cfg.store_runs = zl == 1000;
    gs_cfg.clock = getenv("GPUSTARVE_CLOCK");
}

static void init_all(void)
{
    gs_real_resolve();
    read_config();
    atomic_store(&gs_pid, (pid_t)syscall(SYS_getpid));
    if (gs_cfg.disabled)
        return;
    gs_clock_init(gs_cfg.clock);
    if (gs_out_warn_init() != 0 || gs_strings_init() != 0 || gs_fdtab_init() != 0 ||
        gs_maptab_init() != 0 || gs_rings_init(gs_cfg.ring_events) != 0 ||
        gs_writer_init() != 0)
        return; /* out of address space: stay a pass-through */
    gs_stacks_init(); /* GPUSTARVE_STACKS: on failure stacks stay off */
    gs_lifecycle_init(); /* atfork, on_exit, signals, exec environment */
    if (gs_out_setup_dir() != 0 || gs_out_open(0) != 0)
        return; /* warned; hooks pass through */
    gs_writer_start();
    atomic_store_explicit(&gs_on, 1, memory_order_release);
    gs_cpulimits_record();
}

static void init_guarded(void)
{
    int depth = gs_t_depth;
    gs_t_depth = 1; /* our own calls during start-up are not the program's */
    init_all();
    atomic_store(&gs_inited, 1);
    gs_t_depth = depth;
}

void gs_init(void)
{
    pthread_once(&g_init_once, init_guarded);
}

int gs_enter_slow(void)
{
    if (!atomic_load_explicit(&gs_inited, memory_order_acquire))
        gs_init();
    if (!atomic_load_explicit(&gs_on, memory_order_acquire))
        return 0;
    gs_t_depth = 1;
    return 1;
}

__attribute__((constructor)) static void gs_constructor(void)
{
    gs_init();
}
