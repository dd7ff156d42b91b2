/* gs_lifecycle.h — the collector across fork, exec, exit and signals
 * (gs_lifecycle.c): the entry points of the process hooks (hook_proc.c,
 * hook_signal.c) and start-up's set-up call.
 *
 * Must never: be called in a vfork child for anything but the exec
 * environment (gs_env_need, gs_env_build: no allocation).
 */
#ifndef GS_LIFECYCLE_H
#define GS_LIFECYCLE_H

#include <stddef.h>
#include <stdint.h>

#include "gs_trace.h"

/* Start-up: pthread_atfork, on_exit, the signal handlers, the LD_PRELOAD
 * value an exec'd image gets. */
void gs_lifecycle_init(void);
/* Final flush with an EXIT record saying how the process ends (status: the
 * exit status, or the signal for GS_EXIT_HOW_SIGNAL). */
void gs_finish(int status, enum gs_exit_how how, unsigned wait_ms);
/* exec support: flush with an EXEC record, and the environment fix-up. */
void gs_exec_flush(const char *path);
void gs_exec_failed(const char *path, uint64_t t0);
size_t gs_env_need(char *const envp[]);
char *const *gs_env_build(char *const envp[], void *mem);
/* 1 when sa is a handler the collector installed where the disposition was
 * SIG_DFL: flush-and-reraise (SIGTERM, SIGINT, SIGHUP) or note-and-reraise
 * (crashes, abort, SIGQUIT); hook_signal.c reports both as SIG_DFL. */
struct sigaction;
int gs_signal_is_ours(const struct sigaction *sa);
/* 1 when h (signal()'s result) is one of those handlers. */
int gs_signal_handler_is_ours(void (*h)(int));
/* For a program's SIG_DFL on sig: 1 with *sa our handler for it (the
 * default action, after the flush or the note) while the collector records
 * in this process; 0 when SIG_DFL goes in as it is. */
int gs_signal_default_for(int sig, struct sigaction *sa);

#endif
