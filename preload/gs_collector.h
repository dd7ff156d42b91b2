/* gs_collector.h — how the collector's own files (config, output, writer,
 * lifecycle) talk to each other. Hooks include gs_preload.h instead.
 *
 * Must never: be included by a hook file for anything but gs_pid /
 * gs_fd_is_ours / the exec and exit entry points.
 */
#ifndef GS_COLLECTOR_H
#define GS_COLLECTOR_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "gs_sink.h"
#include "gs_trace.h"

typedef struct gs_config {
    unsigned flush_ms;    /* GPUSTARVE_FLUSH_MS, default 200 */
    uint64_t ring_events; /* GPUSTARVE_RING_EVENTS, default 16384 */
    int zstd_level;       /* GPUSTARVE_ZSTD_LEVEL, default -3 (gs_config.c) */
    int disabled;         /* GPUSTARVE_DISABLE=1 */
    const char *clock;    /* GPUSTARVE_CLOCK */
} gs_config;

extern gs_config gs_cfg;
extern _Atomic int gs_inited;   /* init finished (enabled or not) */
extern _Atomic pid_t gs_pid;    /* the pid this copy of the library serves */
extern _Atomic int gs_trace_fd; /* our output fd, -1 when none */

/* 1 when fd is the collector's own output descriptor. */
static inline int gs_fd_is_ours(int fd)
{
    return fd >= 0 && fd == atomic_load_explicit(&gs_trace_fd, memory_order_relaxed);
}

/* Full initialisation, once (constructor or first hook). */
void gs_init(void);
/* 1 in a vfork child (or any clone we were not told about): the pid differs
 * from the one we set up for. Such a child must not flush or lock. */
int gs_in_foreign_child(void);
/* 1 when sa is the flush-and-reraise handler the collector installed for a
 * fatal signal (hook_signal.c reports it to the program as SIG_DFL). */
struct sigaction;
int gs_signal_is_ours(const struct sigaction *sa);
/* That handler, for comparing with signal()'s result. */
void (*gs_signal_handler(void))(int);

/* ---- output (gs_output.c) ---- */
int gs_out_warn_init(void);
int gs_out_setup_dir(void);
/* Open this process's file and write its header; -1 (warned) on failure. */
int gs_out_open(int forked);
/* Write all of buf; -1 (tracing stopped, warned once) on failure. */
int gs_out_write(const void *buf, size_t len);
void gs_out_fail(const char *what, int err);
int gs_out_alive(void);
void gs_out_close(void);
const char *gs_out_dir(void);
/* Path of this process image's trace file ("" before it is opened). */
const char *gs_out_path(void);

/* ---- writer (gs_writer.c) ---- */
int gs_writer_init(void);
int gs_writer_start(void);
void gs_writer_stop(void);
void gs_writer_after_fork_child(void);
void gs_out_lock(void);
/* Lock with a bounded wait; 0 when not taken (held too long or by us). */
int gs_out_trylock_for(unsigned ms);
void gs_out_unlock(void);
/* Drain every ring into frames and write them (lock held). final: write a
 * DROPS record even when the counts did not change. */
void gs_drain_locked(int final);
/* After the EXIT record: the writer writes nothing more. */
void gs_writer_set_final(void);
int gs_writer_is_final(void);
/* Put a record made outside the rings (EXIT, EXEC, NOTE) under the calling
 * thread's tid, ts in CLOCK_MONOTONIC ns (lock held). */
void gs_put_direct(const gs_event *ev);
/* Encode one event of thread tid into the pending frame (lock held);
 * device records use tid 0. */
void gs_put_event(uint32_t tid, const gs_event *ev);
/* Compress and write the pending frame (lock held). */
void gs_frame_flush_locked(void);

/* ---- GPU sources (gs_source.c; the seam itself is sink/gs_sink.h) ---- */
void gs_sources_first_cuda_call(void);
void gs_sources_flush(enum gs_flush_reason why, unsigned wait_ms);
void gs_sources_tick(void);
void gs_sources_drain(int final);
void gs_sources_after_fork_child(void);

/* ---- lifecycle (gs_lifecycle.c) ---- */
void gs_lifecycle_init(void);
/* Final flush with an EXIT record saying how the process ends (status: the
 * exit status, or the signal for GS_EXIT_HOW_SIGNAL). */
void gs_finish(int status, enum gs_exit_how how, unsigned wait_ms);
/* exec support: flush with an EXEC record, and the environment fix-up. */
void gs_exec_flush(const char *path);
void gs_exec_failed(const char *path, uint64_t t0);
size_t gs_env_need(char *const envp[]);
char *const *gs_env_build(char *const envp[], void *mem);

#endif
