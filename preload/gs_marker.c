/* gs_marker.c — the exported marker API (include/gpustarve.h): training
 * steps, batch fetches, loader configuration and process roles, called by the
 * Python side (python/gpustarve, through ctypes) and by C/C++ programs.
 *
 * Responsible for: turning each call into one STEP_BEGIN / STEP_END /
 * FETCH_BEGIN / FETCH_END / CONFIG / ROLE record (a STEP_END and a
 * STEP_BEGIN for gpustarve_step_next) on the calling thread's ring,
 * with the hooks' clock, so markers and I/O line up; a batch boundary's
 * marker preceded by the thread's CPU sample (gs_cpustat.c); a role
 * loader_worker turns on the file position of reads (gs_read_pos, hook_io.c).
 *
 * Must never: allocate, lock, block or print (the same rules as a hook: the
 * caller is the training loop); change errno; record while the thread is
 * already inside the collector (the nesting guard); fail when called before
 * the collector started or after it stopped (it simply records nothing).
 */
#include <errno.h>
#include <string.h>

#include "gs_cpustat.h"
#include "gs_preload.h"
#include "gs_strings.h"

#define GPUSTARVE_BUILDING_LIBRARY 1
#include "../include/gpustarve.h"

/* set once, by the first role loader_worker; read by every read hook */
_Atomic int gs_read_pos;

#pragma GCC visibility push(default)

#define LOADER_WORKER "loader_worker"

/* Batch boundaries (a fetch's begin and end, a step's end: a loader
 * worker's batch) carry the thread's own clocks, in a CPU record just
 * before the marker, with the same stamp (docs/trace-format.md). */
static void emit_marker(uint16_t kind, uint64_t aux, uint32_t aux2)
{
    gs_start_threads(); /* a loop's markers: the writer runs from here on */
    if (!gs_enter())
        return;
    int err = errno;
    uint64_t t0 = 0;
    if (kind == GS_K_FETCH_BEGIN)
        t0 = gs_cpu_at_marker(gs_now());
    else if (kind == GS_K_FETCH_END || kind == GS_K_STEP_END)
        t0 = gs_cpu_at_marker(0);
    else
        t0 = gs_now();
    const unsigned mc = aux2 >> 24; /* its class (gs_mark_class) */
    if (kind == GS_K_STEP_END && (mc == GS_MARK_OPTIMIZER || mc == GS_MARK_BACKWARD))
        gs_cpu_prep_arm(1); /* the batch making that may follow: its CUDA calls sampled */
    else if (kind == GS_K_FETCH_END && mc == GS_MARK_FORWARD)
        gs_cpu_prep_arm(0);
    gs_rec r = GS_REC_INIT(kind, t0);
    r.aux = aux;
    r.aux2 = aux2;
    gs_emit(&r);
    gs_leave();
    errno = err;
}

int gpustarve_active(void)
{
    if (!gs_enter())
        return 0;
    gs_leave();
    return 1;
}

void gpustarve_step_begin(uint64_t step, uint32_t loader)
{
    emit_marker(GS_K_STEP_BEGIN, step, loader);
}

void gpustarve_step_end(uint64_t step, uint32_t loader)
{
    emit_marker(GS_K_STEP_END, step, loader);
}

/* RATIONALE: one stamp for both, and no clock sample: a boundary written
 * as two calls lost the time between them from every step (a thread
 * preempted at the end marker's sample, a system call's return, fell
 * between the steps); the next fetch_begin samples the clocks. */
void gpustarve_step_next(uint64_t ended, uint64_t step, uint32_t loader)
{
    gs_start_threads();
    if (!gs_enter())
        return;
    int err = errno;
    const uint64_t t0 = gs_now();
    gs_rec r = GS_REC_INIT(GS_K_STEP_END, t0);
    r.aux = ended;
    r.aux2 = loader;
    gs_emit(&r);
    gs_rec b = GS_REC_INIT(GS_K_STEP_BEGIN, t0);
    b.aux = step;
    b.aux2 = loader;
    gs_emit(&b);
    gs_leave();
    errno = err;
}

void gpustarve_fetch_begin(uint64_t batch, uint32_t loader)
{
    emit_marker(GS_K_FETCH_BEGIN, batch, loader);
}

void gpustarve_fetch_end(uint64_t batch, uint32_t loader)
{
    emit_marker(GS_K_FETCH_END, batch, loader);
}

/* Copy at most cap - 1 bytes of s to dst; returns the bytes copied. */
static size_t copy_cut(char *dst, size_t cap, const char *s)
{
    size_t n = 0;
    while (n + 1 < cap && s[n])
        n++;
    memcpy(dst, s, n);
    return n;
}

void gpustarve_config(const char *key, const char *value, uint32_t loader)
{
    key = gs_launder(key);
    value = gs_launder(value);
    if (!key || !*key || !gs_enter())
        return;
    int err = errno;
    uint64_t t0 = gs_now();
    /* RATIONALE: "key=value" is built on the stack (no malloc on the caller's
     * path) and cut at the longest string the format carries. */
    char kv[GS_STRING_MAX + 1];
    size_t n = copy_cut(kv, sizeof kv - 1, key);
    kv[n++] = '=';
    if (value)
        n += copy_cut(kv + n, sizeof kv - n, value);
    gs_rec r = GS_REC_INIT(GS_K_CONFIG, t0);
    r.str = gs_str_intern(kv, n);
    r.aux = loader;
    gs_emit(&r);
    gs_leave();
    errno = err;
}

void gpustarve_role(const char *role, uint64_t worker, uint32_t loader)
{
    role = gs_launder(role);
    if (!role || !gs_enter())
        return;
    int err = errno;
    uint64_t t0 = gs_now();
    gs_rec r = GS_REC_INIT(GS_K_ROLE, t0);
    const size_t n = strnlen(role, GS_STRING_MAX);
    /* RATIONALE: a loader worker's reads are where workers reading the same
     * bytes show (docs/report-schema.md, "The model"): from here on its
     * read, readv and __read_chk of a regular file say where they read */
    if (n == sizeof LOADER_WORKER - 1 && memcmp(role, LOADER_WORKER, n) == 0)
        atomic_store_explicit(&gs_read_pos, 1, memory_order_relaxed);
    r.str = gs_str_intern(role, n);
    r.aux = worker;
    r.aux2 = loader;
    gs_emit(&r);
    gs_leave();
    errno = err;
}

#pragma GCC visibility pop
