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

#include "gs_live.h"
#include "gs_sink.h"
#include "gs_trace.h"

typedef struct gs_config {
    unsigned flush_ms;    /* GPUSTARVE_FLUSH_MS, default 200 */
    uint64_t ring_events; /* GPUSTARVE_RING_EVENTS, default 32768 */
    int zstd_level;       /* GPUSTARVE_ZSTD_LEVEL, default -3 (gs_config.c) */
    int zstd_level_runs;  /* frames of runs: GPUSTARVE_ZSTD_LEVEL, default -100 */
    int store_runs;       /* frames of runs of few bytes stored (not set: 1) */
    int disabled;         /* GPUSTARVE_DISABLE=1 */
    const char *clock;    /* GPUSTARVE_CLOCK */
} gs_config;

/* A frame of runs is stored when its raw bytes are at most this many half
 * bytes per event (gs_config.c). */
#define GS_STORE_MAX_X2 7u

extern gs_config gs_cfg;
extern _Atomic int gs_inited;   /* init finished (enabled or not) */
extern _Atomic pid_t gs_pid;    /* the pid this copy of the library serves */
/* The collector's descriptor in the program's table, -1 when none (the
 * usual case: the trace file lives in a table of its own, gs_output.c). */
extern _Atomic int gs_trace_fd;

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
/* 1 when sa is a handler the collector installed where the disposition was
 * SIG_DFL: flush-and-reraise (SIGTERM, SIGINT, SIGHUP) or note-and-reraise
 * (crashes, abort, SIGQUIT); hook_signal.c reports both as SIG_DFL. */
struct sigaction;
int gs_signal_is_ours(const struct sigaction *sa);
/* 1 when h (signal()'s result) is one of those handlers. */
int gs_signal_handler_is_ours(void (*h)(int));

/* ---- output (gs_output.c) ---- */
/* Kinds of warning line: each is printed at most once per run. */
enum {
    GS_WARN_DIR = 1u << 0,   /* the run directory cannot be made or used */
    GS_WARN_FILE = 1u << 1,  /* a trace file cannot be created */
    GS_WARN_WRITE = 1u << 2, /* writing a trace file failed */
    GS_WARN_FULL = 1u << 3,  /* the file system is full (or a size limit) */
    GS_WARN_FD = 1u << 4,    /* no descriptor out of the program's way */
};
int gs_out_warn_init(void);
/* msg on the program's stderr, only while descriptor 2 is still the file it
 * was when this image started (never into a file the program put there). */
void gs_out_say(const char *msg, size_t n);
/* 1 when a file may grow to `end` bytes under RLIMIT_FSIZE: past the limit,
 * write, ftruncate and fallocate raise SIGXFSZ, whose default action kills
 * the program, so the collector checks before it makes a file grow. */
int gs_fsize_allows(uint64_t end);
/* Print "gpustarve: warning: WHAT PATH[: strerror(err)]; tracing stopped"
 * unless a warning of this kind was printed already in this run. */
void gs_out_warn(unsigned kind, const char *what, const char *path, int err);
int gs_out_setup_dir(void);
/* Create this process's file, write its header and put its descriptor out of
 * the program's way (docs/collector-safety.md); -1 (warned) on failure. */
int gs_out_open(int forked);
/* Write all of buf; -1 (tracing stopped, warned once) on failure. */
int gs_out_write(const void *buf, size_t len);
/* The same after a failure (the last NOTE): no warning, no state change. */
int gs_out_write_final(const void *buf, size_t len, unsigned wait_ms);
/* Bound each later write to ms (exit paths: the file may sit on a hung
 * disk); 0 = no bound. */
void gs_out_limit_wait(unsigned ms);
/* Bytes written to the trace file so far (its size, header included). */
uint64_t gs_out_size(void);
/* errno of the last failed write (0 when none). */
int gs_out_last_error(void);
void gs_out_fail(const char *what, int err);
int gs_out_alive(void);
/* 1 when the trace file is held in a descriptor table of its own. */
int gs_out_private(void);
/* The calling collector thread leaves the program's descriptor table: it
 * gets a copy (unshare(CLONE_FILES)) and closes every descriptor in it, so
 * it holds no file of the program's. 0, or -1 (still in the program's). */
int gs_out_leave_table(void);
/* 1 when the calling thread has left the program's descriptor table. */
int gs_out_own_table(void);
/* A thread of the program's table prints a warning a thread in a table of
 * its own could not (no pidfd_getfd); nothing from a thread of its own. */
void gs_out_say_pending(void);
/* Run fn(arg) where the trace file lives (output lock held): on the file
 * thread, in its own descriptor table, while the caller waits (at most the
 * gs_out_limit_wait bound); inline when there is no file thread. Files the
 * collector reads (/proc, mapped objects, perf maps) are opened in there, so
 * they never take a number in the program's table. */
void gs_out_run(void (*fn)(void *), void *arg);
/* 1 after a gs_out_run or write did not finish within its bound: the
 * writer's state may still be in use there; touch nothing more. */
int gs_out_stuck(void);
/* The program is about to put something on descriptor fd (dup2/dup3): when
 * it is the collector's, move the trace to another number first. */
void gs_out_yield_fd(int fd);
/* Close the descriptor held in the program's table (if any). */
void gs_out_close_shared(void);
void gs_out_close(void);
/* Fork child: forget the parent's descriptors and file thread. */
void gs_out_after_fork_child(void);
const char *gs_out_dir(void);
/* Path of this process image's trace file ("" before it is opened). */
const char *gs_out_path(void);

/* ---- writer (gs_writer.c) ---- */
/* Start a detached collector thread (256 KiB stack, every signal blocked);
 * 0 or -1. */
int gs_thread_start(void *(*fn)(void *));
int gs_writer_init(void);
int gs_writer_start(void);
/* Wait up to ms ms until the newest writer thread runs its own code. Fork
 * calls it first: a thread still starting may be inside the allocator (a
 * sanitizer runtime allocates there), and a child must not inherit that
 * allocator's lock taken. */
void gs_writer_wait_started(unsigned ms);
void gs_writer_stop(void);
void gs_writer_after_fork_child(void);
/* A GPU source started (its tick and drain call a library that may use the
 * program's descriptors): the writer runs in the program's descriptor table
 * from now on. Call from a thread of the program's table. */
void gs_writer_share_table(void);
void gs_out_lock(void);
/* Lock with a bounded wait; 0 when not taken (held too long or by us). */
int gs_out_trylock_for(unsigned ms);
void gs_out_unlock(void);
/* Drain every ring into frames and write them (lock held). final: write a
 * DROPS record even when the counts did not change. */
void gs_drain_locked(int final);
/* After the EXIT record: the writer writes nothing more. */
void gs_writer_set_final(void);
/* Events not written because output failed, so far. */
uint64_t gs_writer_lost(void);
/* The hook clock's calibration (output lock held, or before the writer). */
const struct gs_calib *gs_writer_calib(void);
int gs_writer_is_final(void);
/* Put a record made outside the rings (EXIT, EXEC, NOTE) under the calling
 * thread's tid, ts in CLOCK_MONOTONIC ns (lock held). */
void gs_put_direct(const gs_event *ev);
/* Encode one event of thread tid into the pending frame (lock held);
 * device records use tid 0. */
void gs_put_event(uint32_t tid, const gs_event *ev);
/* Compress and write the pending frame (lock held). */
void gs_frame_flush_locked(void);

/* ---- live file (gs_livefile.c, trace/gs_live.h) ---- */
/* Create and map <trace>.live for rings of ring_capacity records; -1 when
 * the file system cannot hold one (rings then stay anonymous). */
struct gs_calib;
int gs_live_open(const char *trace_path, uint32_t exec_seq, uint64_t ring_capacity,
                 const struct gs_calib *cal);
gs_live_header *gs_live(void);
/* Writer (output lock held): allocate blocks for spare slots and log. */
void gs_live_prepare_locked(void);
void gs_live_calib(const struct gs_calib *c);
void gs_live_counts(uint64_t dropped_base, uint64_t lost, uint32_t stack_every);
/* How the process ended (enum gs_live_end); async-signal-safe. */
void gs_live_end(unsigned how, uint32_t status);
/* Everything is in the trace file: the live file goes. */
void gs_live_remove(void);
/* Tracing stopped before this process recorded anything: the live file
 * goes (unlinked and unmapped), so no reader takes the process for killed. */
void gs_live_discard(void);
/* Fork child: unmap the parent's live file without touching it. */
void gs_live_after_fork_child(void);
/* ---- GPU sources (gs_source.c; the seam itself is sink/gs_sink.h) ---- */
void gs_sources_first_cuda_call(void);
void gs_sources_flush(enum gs_flush_reason why, unsigned wait_ms);
void gs_sources_tick(void);
void gs_sources_drain(int final);
void gs_sources_after_fork_child(void);

/* ---- lifecycle (gs_lifecycle.c) ---- */
void gs_lifecycle_init(void);
/* One `cpu_limits` record: affinity, cgroup CPU quota, online CPUs (gs_cpulimits.c);
 * at start and in each forked child. */
void gs_cpulimits_record(void);
/* Final flush with an EXIT record saying how the process ends (status: the
 * exit status, or the signal for GS_EXIT_HOW_SIGNAL). */
void gs_finish(int status, enum gs_exit_how how, unsigned wait_ms);
/* exec support: flush with an EXEC record, and the environment fix-up. */
void gs_exec_flush(const char *path);
void gs_exec_failed(const char *path, uint64_t t0);
size_t gs_env_need(char *const envp[]);
char *const *gs_env_build(char *const envp[], void *mem);

#endif
