/* gs_startup.h — the collector's start-up, once per process image. (The
 * state it leaves is gs_state.h's; the lazy start from a hook,
 * gs_enter_slow, is the hot path's: gs_preload.h.)
 *
 * Must never: be included by a module for anything but the lazy start
 * (gs_init); see gs_startup.c for the one circle it closes.
 */
#ifndef GS_STARTUP_H
#define GS_STARTUP_H

/* Full start-up, once (constructor, first hook, or a source's entry point
 * called before our constructor ran). */
void gs_init(void);

#endif
