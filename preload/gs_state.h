/* gs_state.h — the process state that start-up and the fork child write and
 * every module reads (gs_state.c): whether start-up finished, which process
 * this copy of the library serves. (Whether hooks record, gs_on, is the hot
 * path's: gs_preload.h.)
 *
 * Must never: grow a function that calls another module; this is a leaf,
 * so that reading the state does not tie a module to start-up.
 */
#ifndef GS_STATE_H
#define GS_STATE_H

#include <stdatomic.h>
#include <sys/types.h>

extern _Atomic int gs_inited; /* start-up finished (enabled or not) */
extern _Atomic pid_t gs_pid;  /* the pid this copy of the library serves */

/* 1 in a vfork child (or any clone we were not told about): the pid differs
 * from the one we set up for. Such a child must not flush or lock. */
int gs_in_foreign_child(void);

#endif
