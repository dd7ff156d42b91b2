/* gs_state.c — the process state: whether hooks record (gs_on), whether
 * start-up finished (gs_inited), which process this copy of the library
 * serves (gs_pid).
 *
 * Responsible for: holding those words, written by start-up (gs_startup.c)
 * and by the fork child and the exit paths (gs_lifecycle.c), read by every
 * module and, inline, by every hook (gs_enter).
 *
 * Must never: call another module of the collector. It is a leaf, so that a
 * module that reads the state (the writer, the samplers, the rings' users)
 * is not tied to start-up, which calls them (docs/architecture.md,
 * "Dependencies").
 */
#include <sys/syscall.h>
#include <unistd.h>

#include "gs_preload.h"
#include "gs_state.h"

_Atomic int gs_on;
_Atomic int gs_inited;
_Atomic pid_t gs_pid;

int gs_in_foreign_child(void)
{
    return (pid_t)syscall(SYS_getpid) != atomic_load(&gs_pid);
}
