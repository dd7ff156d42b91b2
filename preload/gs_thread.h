/* gs_thread.h — how the collector starts a thread of its own (the writer,
 * the file thread): gs_thread.c.
 *
 * Must never: be called from a hook.
 */
#ifndef GS_THREAD_H
#define GS_THREAD_H

/* Start a detached collector thread running fn(NULL) (256 KiB stack, every
 * signal blocked); 0 or -1. */
int gs_thread_start(void *(*fn)(void *));

#endif
