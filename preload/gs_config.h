/* gs_config.h — the collector's settings: every GPUSTARVE_* variable the
 * collector reads (README, "Preloading by hand"), parsed once per process
 * image by gs_config.c into one struct the other modules read.
 *
 * Must never: be written after start-up (a forked child keeps its parent's
 * settings; an exec'd image reads its own); be read from the environment
 * anywhere but gs_config.c (make check-deps checks it).
 */
#ifndef GS_CONFIG_H
#define GS_CONFIG_H

#include <stdint.h>
#include <sys/single_threaded.h>

/* GPUSTARVE_STACK_DEPTH is at most this many frames (gs_stacks.c). */
#define GS_STACK_DEPTH_MAX 64
/* A frame of runs is stored when its raw bytes are at most this many half
 * bytes per event (gs_config.c, gs_writer.c). */
#define GS_STORE_MAX_X2 7u
/* Bytes of GPUSTARVE_TEST_HOST kept, its NUL included. */
#define GS_TEST_HOST_MAX 256

typedef struct gs_config {
    int disabled;         /* GPUSTARVE_DISABLE set and not "0", or a set-user-ID program */
    unsigned flush_ms;    /* GPUSTARVE_FLUSH_MS, default 200 */
    uint64_t ring_events; /* GPUSTARVE_RING_EVENTS, default 32768 */
    int zstd_level;       /* GPUSTARVE_ZSTD_LEVEL, default -3 (gs_config.c) */
    int zstd_level_runs;  /* frames of runs: GPUSTARVE_ZSTD_LEVEL, default -100 */
    int store_runs;       /* frames of runs of few bytes stored (no level set: 1) */
    const char *clock;    /* GPUSTARVE_CLOCK ("mono"), NULL when unset; start-up only */
    const char *dir;      /* GPUSTARVE_DIR, NULL when unset; start-up only */
    int stacks;           /* GPUSTARVE_STACKS set and not "0" */
    int eager_threads;    /* GPUSTARVE_EAGER_THREADS set and not "0": threads at start-up */
    /* GPUSTARVE_STACK_DEPTH, _FIRST, _EVERY: read only when stacks is set,
     * else their defaults 16, 8 and 64 */
    uint32_t stack_depth, stack_first, stack_every;
    /* test hooks (README): the host name the trace records ("" when unset),
     * nanoseconds added to the header's CLOCK_REALTIME reading */
    char test_host[GS_TEST_HOST_MAX];
    int64_t test_realtime_offset_ns;
} gs_config;

extern gs_config gs_cfg;

/* 1 when this image's threads start late (docs/collector-safety.md,
 * "Threads started late"): it has one thread (glibc's
 * __libc_single_threaded, which a thread once started leaves 0 for good)
 * and GPUSTARVE_EAGER_THREADS is unset. A forked child, which always has
 * one, decides in gs_lifecycle.c. */
static inline int gs_cfg_threads_late(void)
{
    return __libc_single_threaded && !gs_cfg.eager_threads;
}

/* Read every GPUSTARVE_* variable into gs_cfg (at start-up, guard held). */
void gs_config_read(void);

#endif
