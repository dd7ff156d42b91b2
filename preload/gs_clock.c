/* gs_clock.c — the hook clock and its conversion to CLOCK_MONOTONIC.
 *
 * Responsible for: choosing rdtsc or clock_gettime for hook timestamps
 * (GPUSTARVE_CLOCK, CPU flags) and the piecewise-linear calibration the
 * writer uses to turn TSC ticks into CLOCK_MONOTONIC nanoseconds (the
 * segment's rate also as a fixed-point multiplier, gs_calib_ts).
 *
 * Must never: be called on the hot path except through gs_now(); read files
 * through hooked functions (raw system calls only).
 */
#include <fcntl.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "gs_clock.h"
#include "gs_preload.h"

int gs_clock_tsc;

#if defined(__x86_64__)
/* 1 when the first "flags" line of /proc/cpuinfo has both words. */
static int cpu_has_stable_tsc(void)
{
    static char buf[16384];
    long fd = syscall(SYS_openat, AT_FDCWD, "/proc/cpuinfo", O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    if (fd < 0)
        return 0;
    size_t len = 0;
    for (;;) {
        long n = syscall(SYS_read, (int)fd, buf + len, sizeof buf - 1 - len);
        if (n <= 0)
            break;
        len += (size_t)n;
        if (len >= sizeof buf - 1)
            break;
    }
    syscall(SYS_close, (int)fd);
    buf[len] = 0;
    char *flags = strstr(buf, "\nflags");
    if (!flags)
        return 0;
    char *eol = strchr(flags + 1, '\n');
    if (!eol)
        return 0;
    *eol = 0;
    return strstr(flags, " constant_tsc") && strstr(flags, " nonstop_tsc");
}

/* A (tsc, mono) pair read as close together as we can manage. */
static void read_pair(uint64_t *tsc, uint64_t *mono)
{
    uint64_t best = UINT64_MAX;
    for (int i = 0; i < 5; i++) {
        uint64_t a = __rdtsc();
        uint64_t m = gs_mono_ns();
        uint64_t b = __rdtsc();
        if (b - a < best) {
            best = b - a;
            *tsc = a + (b - a) / 2;
            *mono = m;
        }
    }
}
#endif

void gs_clock_init(const char *mode)
{
    gs_clock_tsc = 0;
#if defined(__x86_64__)
    if (mode && strcmp(mode, "mono") == 0)
        return;
    gs_clock_tsc = cpu_has_stable_tsc();
#endif
}

/* The segment's rate as a 32.32 fixed-point multiplier; 0 (exact path)
 * when there is no segment or the rate does not fit 64 bits. */
static void derive_mult(gs_calib *c)
{
    c->mult = 0;
    if (!gs_clock_tsc || c->tsc1 <= c->tsc0 || c->mono1 < c->mono0)
        return;
    const unsigned __int128 m =
        ((unsigned __int128)(c->mono1 - c->mono0) << 32) / (c->tsc1 - c->tsc0);
    if (m <= UINT64_MAX)
        c->mult = (uint64_t)m;
}

void gs_calib_start(gs_calib *c)
{
    memset(c, 0, sizeof *c);
#if defined(__x86_64__)
    if (gs_clock_tsc) {
        /* RATIONALE: a first segment of 50 us (rate within ~0.1%) before any
         * hook records: the records of a process that dies before the
         * writer's first calibration point still convert (live file) */
        read_pair(&c->tsc0, &c->mono0);
        do
            read_pair(&c->tsc1, &c->mono1);
        while (c->mono1 - c->mono0 < 50000 || c->tsc1 <= c->tsc0);
        derive_mult(c);
    }
#endif
}

/* The pair (t, m) ends a new latest segment; the one it ends is kept. */
static void calib_push(gs_calib *c, uint64_t t, uint64_t m)
{
    if (t <= c->tsc1 || m <= c->mono1)
        return; /* keep the last segment: no time passed */
    const gs_calib_seg was = {c->tsc0, c->mono0, c->tsc1, c->mono1, c->mult};
    c->old[c->at] = was;
    c->at = (c->at + 1) % GS_CALIB_KEEP;
    if (c->nold < GS_CALIB_KEEP)
        c->nold++;
    c->tsc0 = c->tsc1;
    c->mono0 = c->mono1;
    c->tsc1 = t;
    c->mono1 = m;
    derive_mult(c);
}

void gs_calib_point(gs_calib *c)
{
#if defined(__x86_64__)
    if (!gs_clock_tsc)
        return;
    uint64_t t, m;
    read_pair(&t, &m);
    calib_push(c, t, m);
#else
    (void)c;
#endif
}

uint64_t gs_calib_ts_exact(const gs_calib *c, uint64_t raw)
{
    return gs_live_ts(gs_clock_tsc, c->tsc0, c->mono0, c->tsc1, c->mono1, raw);
}

/* raw by segment s, as gs_calib_ts gave it while s was the latest */
static uint64_t seg_ts(const gs_calib_seg *s, uint64_t raw)
{
    uint64_t ns;
    if (gs_calib_fast(s->tsc0, s->mono0, s->mult, raw, &ns))
        return ns;
    return gs_live_ts(gs_clock_tsc, s->tsc0, s->mono0, s->tsc1, s->mono1, raw);
}

uint64_t gs_calib_ts_slow(const gs_calib *c, uint64_t raw)
{
    if (raw < c->tsc0 && c->nold) {
        /* newest first: a stamp is mostly a pass or two old */
        for (uint32_t k = 1; k <= c->nold; k++) {
            const gs_calib_seg *s = &c->old[(c->at + GS_CALIB_KEEP - k) % GS_CALIB_KEEP];
            if (raw >= s->tsc0 || k == c->nold)
                return seg_ts(s, raw);
        }
    }
    return gs_calib_ts_exact(c, raw);
}

uint64_t gs_calib_dur_exact(const gs_calib *c, uint64_t raw)
{
    return gs_live_dur(gs_clock_tsc, c->tsc0, c->mono0, c->tsc1, c->mono1, raw);
}
