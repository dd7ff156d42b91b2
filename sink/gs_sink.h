/* gs_sink.h — the seam between the collector (preload/) and a GPU source
 * (cupti/ today): the one header both sides include.
 *
 * It lives in sink/, a folder of its own, because both sides must include it
 * and neither may include the other's folder: preload/ is compiled with
 * -Isink -Ipreload -Itrace, cupti/ with -Isink -Icupti -Itrace and the CUDA
 * headers, never -Ipreload, so a stray include of a collector header from
 * cupti/ fails the build (docs/gpu-source.md, "The seam").
 *
 * A source registers a table of operations (gs_source_register), usually
 * from a constructor; the collector calls them at fixed points, never on a
 * hook's hot path, and the reasons it passes are enums. The source writes
 * through the sink functions below and nothing else of the collector's.
 * Sources are compiled into libgpustarve.so when their headers exist at
 * build time; with none registered every call below is a no-op.
 *
 * Must never: carry CUDA or CUPTI types (preload/ compiles without the CUDA
 * headers); expose the collector's rings, locks or thread-local state.
 */
#ifndef GS_SINK_H
#define GS_SINK_H

#include <stddef.h>
#include <stdint.h>

#include "gs_trace.h"

/* ---- the operations a source registers --------------------------------------- */

/* Why the collector asks a source to flush. */
enum gs_flush_reason {
    GS_FLUSH_EXIT = 1,   /* exit / return from main, from the collector's last handler
                          * (after library destructors: a source must have delivered
                          * already, from an atexit handler of its own) */
    GS_FLUSH_QUICK_EXIT, /* _exit / _Exit: libraries still intact */
    GS_FLUSH_SIGNAL,     /* fatal signal, from its handler: wait at most wait_ms */
    GS_FLUSH_EXEC,       /* before exec replaces the image */
    GS_FLUSH_FORK,       /* before fork: what is complete, quickly */
};

typedef struct gs_source_ops {
    const char *name;
    /* A hook saw the first CUDA runtime call of this process image (caller:
     * that hook, before the real call, guard held). */
    void (*first_cuda_call)(void);
    /* Deliver what the source holds before the collector drains, no lock
     * of the collector's held. */
    void (*flush)(enum gs_flush_reason why, unsigned wait_ms);
    /* The writer thread, once per period and when woken, no lock held. */
    void (*tick)(void);
    /* The writer, output lock held: put what was delivered (gs_sink_put).
     * final: the last drain of this process image. */
    void (*drain)(int final);
    /* In a fork child, before it starts its own file: whatever the source
     * holds is the parent's. */
    void (*after_fork_child)(void);
} gs_source_ops;

/* Register a source (ops must stay valid for the life of the process).
 * 0, or -1 when the table is full (GS_SOURCES_MAX). */
#define GS_SOURCES_MAX 4
int gs_source_register(const gs_source_ops *ops);

/* ---- what the collector offers a source ----------------------------------------- */

/* Start the collector if it has not started (an entry point the driver or
 * NVTX calls before our constructor ran, or in a process loaded without
 * LD_PRELOAD). */
void gs_sink_init(void);
/* 1 while the collector records. */
int gs_sink_active(void);
/* The trace clock: CLOCK_MONOTONIC nanoseconds. */
uint64_t gs_sink_now(void);

/* Everything between hold and release is the collector's own doing: the
 * hooks pass such calls through unrecorded (the source's dlopen, CUPTI's
 * file reads). errno is restored at release. Nests. */
typedef struct gs_sink_held {
    int depth;
    int err;
} gs_sink_held;
gs_sink_held gs_sink_hold(void);
void gs_sink_release(gs_sink_held h);

/* One "gpustarve: warning: <text>" line on stderr and a note record with
 * code (enum gs_note_code of trace/gs_format.h) and text, from the calling
 * thread. */
void gs_sink_warn(enum gs_note_code code, const char *text);

/* Intern len bytes (truncated to GS_STRING_MAX): id >= 1, or 0 when full. */
uint32_t gs_sink_intern(const char *s, size_t len);
/* Bytes and length of a string id; NULL when unknown. */
const char *gs_sink_string(uint32_t id, uint32_t *len);

/* The CUDA correlation id of the runtime call the calling thread is in
 * (0: none); the CUDA hooks put it in their records. */
void gs_sink_set_corr(uint32_t corr);

/* The source has started (call from the thread that started it, one of
 * the program's): from now on tick and drain run on a writer thread in the
 * program's descriptor table, where its library's descriptors are. Before
 * this, a writer in a table of its own calls neither. */
void gs_sink_started(void);

/* From drain only: put one device event (tid 0) into the pending frame. */
void gs_sink_put(const gs_event *ev);
/* Wake the writer thread (it calls tick, then drain). */
void gs_sink_wake(void);
/* Drain every source and ring into the file now, in the calling thread
 * (waits a bounded time for the output lock): for a source that must
 * deliver before its library is torn down. */
void gs_sink_drain_now(void);

#endif
