/* gpustarve.h — the public marker API of gpustarve, for C and C++ training
 * loops and data loaders: training steps, batch fetches, the loader's
 * configuration and a process's role, written into the trace of a run started
 * with `gpustarve run`.
 *
 * Header only: nothing to link. Each call looks up the function that
 * libgpustarve.so exports (dlsym on the process's global scope, once per
 * translation unit) and calls it; when the program runs without the preload
 * the lookup finds nothing and every call is a load and a branch. So a
 * program built with this header runs unchanged, with or without gpustarve.
 *
 *     #include <gpustarve.h>
 *     gpustarve_config("num_workers", "4", 0);
 *     for (uint64_t step = 0; ...; step++) {
 *         gpustarve_step_begin(step, 0);
 *         gpustarve_fetch_begin(step, 0);
 *         batch = next_batch(loader);          // the wait for data
 *         gpustarve_fetch_end(step, 0);
 *         train(batch);
 *         gpustarve_step_end(step, 0);
 *     }
 *
 * Build: nothing special on glibc >= 2.34; older glibc needs -ldl. Define
 * GPUSTARVE_NO_MARKERS to compile every call away.
 *
 * The calls never block, never allocate, leave errno as it was, and are safe
 * from any thread. `loader` tells several loaders (train, validation) apart;
 * use 0 when there is one. See docs/python.md ("C marker API").
 *
 * RATIONALE: dlsym rather than weak symbols. A weak undefined reference from
 * a non-PIE executable can be resolved to 0 by the static linker with no
 * dynamic relocation left for ld.so to fill in from LD_PRELOAD, so the markers
 * would silently never fire; dlsym(RTLD_DEFAULT) works for PIE, non-PIE and
 * shared objects alike.
 */
#ifndef GPUSTARVE_H
#define GPUSTARVE_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define GPUSTARVE_API_VERSION 2 /* 2: gpustarve_step_next, marker classes */

/* What a step or fetch marker stands for, in bits 24-31 of its `loader`
 * argument (the loader itself is bits 0-23; docs/trace-format.md, "NVTX
 * ranges and gpustarve markers"). 0, the default, is a loader's batches
 * and steps. GPUSTARVE_MARKS_EXPLICIT marks steps and waits the program
 * sets around its own loop: the report takes them before any other
 * source (a DataLoader's batches, NVTX ranges, optimizer steps). The other
 * classes are the Python side's. */
#define GPUSTARVE_MARKS_EXPLICIT 1u
#define GPUSTARVE_LOADER(marks, loader) \
    ((uint32_t)(marks) << 24 | ((uint32_t)(loader) & 0xffffffu))

/* Function types of the symbols libgpustarve.so exports (the ABI). */
typedef int (*gpustarve_active_fn)(void);
typedef void (*gpustarve_mark_fn)(uint64_t index, uint32_t loader);
typedef void (*gpustarve_next_fn)(uint64_t ended, uint64_t step, uint32_t loader);
typedef void (*gpustarve_config_fn)(const char *key, const char *value, uint32_t loader);
typedef void (*gpustarve_role_fn)(const char *role, uint64_t worker, uint32_t loader);

#if defined(GPUSTARVE_BUILDING_LIBRARY)
/* libgpustarve.so itself (preload/gs_marker.c): the exported definitions. */
int gpustarve_active(void);
void gpustarve_step_begin(uint64_t step, uint32_t loader);
void gpustarve_step_end(uint64_t step, uint32_t loader);
void gpustarve_step_next(uint64_t ended, uint64_t step, uint32_t loader);
void gpustarve_fetch_begin(uint64_t batch, uint32_t loader);
void gpustarve_fetch_end(uint64_t batch, uint32_t loader);
void gpustarve_config(const char *key, const char *value, uint32_t loader);
void gpustarve_role(const char *role, uint64_t worker, uint32_t loader);

#elif defined(GPUSTARVE_NO_MARKERS)
static inline int gpustarve_active(void) { return 0; }
static inline void gpustarve_step_begin(uint64_t s, uint32_t l) { (void)s; (void)l; }
static inline void gpustarve_step_end(uint64_t s, uint32_t l) { (void)s; (void)l; }
static inline void gpustarve_step_next(uint64_t e, uint64_t s, uint32_t l)
{
    (void)e; (void)s; (void)l;
}
static inline void gpustarve_fetch_begin(uint64_t b, uint32_t l) { (void)b; (void)l; }
static inline void gpustarve_fetch_end(uint64_t b, uint32_t l) { (void)b; (void)l; }
static inline void gpustarve_config(const char *k, const char *v, uint32_t l)
{
    (void)k; (void)v; (void)l;
}
static inline void gpustarve_role(const char *r, uint64_t w, uint32_t l)
{
    (void)r; (void)w; (void)l;
}

#else
#include <dlfcn.h>
#include <errno.h>

/* The exported functions, looked up once per translation unit. */
typedef struct gpustarve_api_ {
    gpustarve_active_fn active;
    gpustarve_mark_fn step_begin, step_end, fetch_begin, fetch_end;
    gpustarve_next_fn step_next;
    gpustarve_config_fn config;
    gpustarve_role_fn role;
} gpustarve_api_;

static gpustarve_api_ gpustarve_api_table_;
static int gpustarve_api_state_; /* 0 not looked up yet, 1 done */

static inline void *gpustarve_sym_(const char *name)
{
#ifdef RTLD_DEFAULT
    return dlsym(RTLD_DEFAULT, name);
#else
    return dlsym((void *)0, name); /* RTLD_DEFAULT on glibc and musl */
#endif
}

/* RATIONALE: two threads may look up at once; both write the same values,
 * and the state flag is published after the table (release/acquire). */
static inline const gpustarve_api_ *gpustarve_api_get_(void)
{
    if (__atomic_load_n(&gpustarve_api_state_, __ATOMIC_ACQUIRE))
        return &gpustarve_api_table_;
    int err = errno;
    gpustarve_api_ t = {0, 0, 0, 0, 0, 0, 0, 0};
    /* no gpustarve_active: no library (or a foreign one), stay silent */
    if ((t.active = (gpustarve_active_fn)(uintptr_t)gpustarve_sym_("gpustarve_active")) != 0) {
        t.step_begin = (gpustarve_mark_fn)(uintptr_t)gpustarve_sym_("gpustarve_step_begin");
        t.step_end = (gpustarve_mark_fn)(uintptr_t)gpustarve_sym_("gpustarve_step_end");
        t.step_next = (gpustarve_next_fn)(uintptr_t)gpustarve_sym_("gpustarve_step_next");
        t.fetch_begin = (gpustarve_mark_fn)(uintptr_t)gpustarve_sym_("gpustarve_fetch_begin");
        t.fetch_end = (gpustarve_mark_fn)(uintptr_t)gpustarve_sym_("gpustarve_fetch_end");
        t.config = (gpustarve_config_fn)(uintptr_t)gpustarve_sym_("gpustarve_config");
        t.role = (gpustarve_role_fn)(uintptr_t)gpustarve_sym_("gpustarve_role");
    }
    gpustarve_api_table_ = t;
    __atomic_store_n(&gpustarve_api_state_, 1, __ATOMIC_RELEASE);
    errno = err;
    return &gpustarve_api_table_;
}

/* 1 when the program runs under `gpustarve run` and tracing is on. */
static inline int gpustarve_active(void)
{
    const gpustarve_api_ *a = gpustarve_api_get_();
    return a->active ? a->active() : 0;
}

/* Training step `step` of loader `loader` begins / ends. A step runs from
 * its begin to its end on the calling thread (the training thread). */
static inline void gpustarve_step_begin(uint64_t step, uint32_t loader)
{
    const gpustarve_api_ *a = gpustarve_api_get_();
    if (a->step_begin)
        a->step_begin(step, loader);
}
static inline void gpustarve_step_end(uint64_t step, uint32_t loader)
{
    const gpustarve_api_ *a = gpustarve_api_get_();
    if (a->step_end)
        a->step_end(step, loader);
}

/* Step `ended` ends and step `step` begins, at one instant: a loop whose
 * steps follow each other (one step's end is the next one's begin) leaves
 * no time between them. A collector without it: the two calls. */
static inline void gpustarve_step_next(uint64_t ended, uint64_t step, uint32_t loader)
{
    const gpustarve_api_ *a = gpustarve_api_get_();
    if (a->step_next) {
        a->step_next(ended, step, loader);
    } else if (a->step_end) {
        a->step_end(ended, loader);
        if (a->step_begin)
            a->step_begin(step, loader);
    }
}

/* The calling thread starts / stops waiting for batch `batch` of `loader`.
 * Time between the two is the training side's data wait. */
static inline void gpustarve_fetch_begin(uint64_t batch, uint32_t loader)
{
    const gpustarve_api_ *a = gpustarve_api_get_();
    if (a->fetch_begin)
        a->fetch_begin(batch, loader);
}
static inline void gpustarve_fetch_end(uint64_t batch, uint32_t loader)
{
    const gpustarve_api_ *a = gpustarve_api_get_();
    if (a->fetch_end)
        a->fetch_end(batch, loader);
}

/* One item of loader `loader`'s configuration, recorded as "key=value"
 * (e.g. "num_workers", "4"); key + value are cut at 4 KiB. */
static inline void gpustarve_config(const char *key, const char *value, uint32_t loader)
{
    const gpustarve_api_ *a = gpustarve_api_get_();
    if (a->config)
        a->config(key, value, loader);
}

/* This process is `role` ("trainer", "loader_worker", ...), worker id
 * `worker` of loader `loader`. */
static inline void gpustarve_role(const char *role, uint64_t worker, uint32_t loader)
{
    const gpustarve_api_ *a = gpustarve_api_get_();
    if (a->role)
        a->role(role, worker, loader);
}
#endif

#ifdef __cplusplus
}
#endif

#endif
