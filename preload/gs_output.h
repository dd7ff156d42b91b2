/* gs_output.h — the run directory and this process's trace file
 * (gs_output.c): where it is, the descriptor that holds it, writing to it,
 * the file thread that holds it in a descriptor table of its own, and the
 * warning lines.
 *
 * Must never: be called from a hook's hot path; a hook may only ask whether
 * a descriptor is the collector's (gs_fd_is_ours) and move the trace off a
 * number the program takes (gs_out_yield_fd).
 */
#ifndef GS_OUTPUT_H
#define GS_OUTPUT_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "gs_clock.h"

/* The collector's descriptor in the program's table, -1 when none (the
 * usual case: the trace file lives in a table of its own, gs_output.c). */
extern _Atomic int gs_trace_fd;

/* 1 when fd is the collector's own output descriptor. */
static inline int gs_fd_is_ours(int fd)
{
    return fd >= 0 && fd == atomic_load_explicit(&gs_trace_fd, memory_order_relaxed);
}

/* Kinds of warning line: each is printed at most once per run. */
enum {
    GS_WARN_DIR = 1u << 0,   /* the run directory cannot be made or used */
    GS_WARN_FILE = 1u << 1,  /* a trace file cannot be created */
    GS_WARN_WRITE = 1u << 2, /* writing a trace file failed */
    GS_WARN_FULL = 1u << 3,  /* the file system is full or nearly (or a size limit) */
    GS_WARN_FD = 1u << 4,    /* no descriptor out of the program's way */
};
int gs_out_warn_init(void);
/* msg on the program's stderr, only while descriptor 2 is still the file it
 * was when this image started (never into a file the program put there). */
void gs_out_say(const char *msg, size_t n);
/* Print "gpustarve: warning: WHAT PATH[: strerror(err)]; tracing stopped"
 * unless a warning of this kind was printed already in this run. */
void gs_out_warn(unsigned kind, const char *what, const char *path, int err);
int gs_out_setup_dir(void);
/* Create this process's file, write its header, create its live file beside
 * it (gs_livefile.c: rings of gs_ring_capacity records, the hook clock's
 * calibration cal) and put its descriptor out of the program's way
 * (docs/collector-safety.md); -1 (warned) on failure. late: a process
 * with one thread: the file is closed again and no thread of ours starts
 * (docs/collector-safety.md, "Threads started late") until
 * gs_out_start_late. */
int gs_out_open(int forked, const gs_calib *cal, int late);
/* The file opened late held as gs_out_open would have: by the file thread
 * (threads: 1), else, or where the thread has no table of its own, at 900
 * or above in the program's table (threads: 0, system calls only: an exit
 * path, a signal handler's included); low_ok: the process ends and runs
 * none of the program's code after this, so any number will do where 900
 * is over the limit. Once; 0, or -1 when it could not be held (warned;
 * what was recorded stays in the live file, for the reader). */
int gs_out_start_late(int threads, int low_ok);
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
/* Output stops (one warning of its kind): "WHAT PATH: strerror(err)", or,
 * when a write was refused because the file system is nearly full
 * (gs_space.h), that. */
void gs_out_fail(const char *what, int err);
/* The free space (avail bytes) allowed no blocks set aside for a live file
 * (gs_space.h): one line, of the kind GS_WARN_FULL, so a later stop for a
 * nearly full file system adds none. */
void gs_out_warn_space(uint64_t avail);
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

#endif
