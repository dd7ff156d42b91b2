/* gs_startup.h — the collector's start-up, once per process image, and the
 * state it leaves: whether start-up finished, which process it served.
 * (Whether hooks record, gs_on, and the lazy start from a hook,
 * gs_enter_slow, are the hot path's: gs_preload.h.)
 *
 * Must never: be included by a module for anything but this state and the
 * lazy start (gs_init); see gs_startup.c for the one circle it closes.
 */
#ifndef GS_STARTUP_H
#define GS_STARTUP_H

#include <stdatomic.h>
#include <sys/types.h>

extern _Atomic int gs_inited; /* start-up finished (enabled or not) */
extern _Atomic pid_t gs_pid;  /* the pid this copy of the library serves */

/* Full start-up, once (constructor, first hook, or a source's entry point
 * called before our constructor ran). */
void gs_init(void);
/* 1 in a vfork child (or any clone we were not told about): the pid differs
 * from the one we set up for. Such a child must not flush or lock. */
int gs_in_foreign_child(void);

#endif
