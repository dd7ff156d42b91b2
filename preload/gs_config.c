/* gs_config.c — the collector's settings, read from the environment.
 *
 * Responsible for: reading every GPUSTARVE_* variable of the collector
 * (gs_config.h) once per process image, at start-up (gs_startup.c), with
 * one number parser; the defaults and their reasons; reading nothing in a
 * set-user-ID/set-group-ID process, which is not traced.
 *
 * Must never: be called on a hook's path (getenv is read at start-up only:
 * a forked child keeps what its parent read, an exec'd image reads its own
 * environment, which the exec hooks keep traced); warn or fail (a value
 * that is not a number is its default, one out of range its nearest bound).
 *
 * The GPU source's own variables (GPUSTARVE_CUPTI_*) are read by the source
 * when it starts (cupti/gs_cupti.c, read_settings): the collector does not
 * know a source's settings.
 */
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/auxv.h>

#include "gs_config.h"

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
                    .zstd_level_runs = ZSTD_LEVEL_RUNS, .store_runs = 1, .stack_depth = 16,
                    .stack_first = 8, .stack_every = 64};

/* The number the decimal digits of p spell: 0 and *x, or -1 when p is empty
 * or holds anything but digits. Once past cap the number stops growing (*x
 * is then some number above cap); lazy: the characters after that point
 * are not looked at. */
static int parse_dec(const char *p, uint64_t cap, int lazy, uint64_t *x)
{
    if (!*p)
        return -1;
    uint64_t v = 0;
    for (; *p; p++) {
        if (*p < '0' || *p > '9')
            return -1;
        if (v <= cap)
            v = v * 10 + (uint64_t)(*p - '0');
        if (v > cap && lazy)
            break;
    }
    *x = v;
    return 0;
}

/* Unsigned decimal from the environment, clamped to [lo, hi]; dflt when unset
 * or not a number (digits past the point where the number passed hi are not
 * read: it is hi). */
static uint64_t env_u64(const char *name, uint64_t dflt, uint64_t lo, uint64_t hi)
{
    const char *v = getenv(name);
    uint64_t x;
    if (!v || parse_dec(v, hi, 1, &x) != 0)
        return dflt;
    return x < lo ? lo : x > hi ? hi : x;
}

/* The same for a signed decimal (zstd's fast levels are below 0); every
 * character must be a digit after the sign. */
static int env_int(const char *name, int dflt, int lo, int hi)
{
    const char *v = getenv(name);
    const uint64_t cap = (uint64_t)(hi > -lo ? hi : -lo);
    uint64_t x;
    if (!v || parse_dec(v + (v[0] == '-'), cap, 0, &x) != 0)
        return dflt;
    const int64_t s = v[0] == '-' ? -(int64_t)x : (int64_t)x;
    return s < lo ? lo : s > hi ? hi : (int)s;
}

/* 1 when name is set to anything but "" or "0". */
static int env_flag(const char *name)
{
    const char *v = getenv(name);
    return v && v[0] && strcmp(v, "0") != 0;
}

static void read_stacks(void)
{
    gs_cfg.stacks = env_flag("GPUSTARVE_STACKS");
    if (!gs_cfg.stacks)
        return;
    gs_cfg.stack_depth = (uint32_t)env_u64("GPUSTARVE_STACK_DEPTH", 16, 1, GS_STACK_DEPTH_MAX);
    gs_cfg.stack_first = (uint32_t)env_u64("GPUSTARVE_STACK_FIRST", 8, 0, 1u << 30);
    gs_cfg.stack_every = (uint32_t)env_u64("GPUSTARVE_STACK_EVERY", 64, 0, 1u << 20);
}

/* The test hooks (README, "Preloading by hand"): read as they always were,
 * the offset as strtoll reads it. */
static void read_test_hooks(void)
{
    const char *th = getenv("GPUSTARVE_TEST_HOST");
    if (th && *th)
        snprintf(gs_cfg.test_host, sizeof gs_cfg.test_host, "%s", th);
    const char *toff = getenv("GPUSTARVE_TEST_REALTIME_OFFSET_NS");
    if (toff && *toff)
        gs_cfg.test_realtime_offset_ns = strtoll(toff, NULL, 10);
}

/* RATIONALE: a set-user-ID or set-group-ID program (AT_SECURE) must not
 * take orders from its caller's environment: GPUSTARVE_DIR would let the
 * caller choose where the privileged process writes, and a library path
 * reaches dlopen. Such a process is not traced at all (pure pass-through),
 * whatever GPUSTARVE_* says; ld.so itself ignores LD_PRELOAD there unless
 * the library is a set-user-ID one in a trusted directory, or linked. */
void gs_config_read(void)
{
    if (getauxval(AT_SECURE)) {
        gs_cfg.disabled = 1;
        return;
    }
    gs_cfg.disabled = env_flag("GPUSTARVE_DISABLE");
    gs_cfg.flush_ms = (unsigned)env_u64("GPUSTARVE_FLUSH_MS", 200, 1, 60000);
    gs_cfg.ring_events = env_u64("GPUSTARVE_RING_EVENTS", 32768, 64, 1u << 24);
    /* a level the user set is every frame's; 1000 (out of range): not set */
    const int zl = env_int("GPUSTARVE_ZSTD_LEVEL", 1000, -7, 19);
    gs_cfg.zstd_level = zl == 1000 ? ZSTD_LEVEL_DEFAULT : zl;
    gs_cfg.zstd_level_runs = zl == 1000 ? ZSTD_LEVEL_RUNS : zl;
    gs_cfg.store_runs = zl == 1000;
    gs_cfg.clock = getenv("GPUSTARVE_CLOCK");
    gs_cfg.dir = getenv("GPUSTARVE_DIR");
    gs_cfg.eager_threads = env_flag("GPUSTARVE_EAGER_THREADS");
    read_stacks();
    read_test_hooks();
}
