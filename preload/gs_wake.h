/* gs_wake.h — the writer's wake-up word (gs_wake.c): what the writer waits
 * on. Whoever has work for the writer pokes it with gs_writer_poke
 * (declared with the hot path, gs_preload.h: a hook's full ring pokes).
 *
 * Must never: be used for anything but waking the writer.
 */
#ifndef GS_WAKE_H
#define GS_WAKE_H

#include <stdint.h>
#include <time.h>

/* The word's value now: pass it to gs_wake_wait. */
uint32_t gs_wake_seen(void);
/* Sleep until the word moves past seen, or ts passes (NULL: no bound). */
void gs_wake_wait(uint32_t seen, const struct timespec *ts);
/* Wake every thread waiting (a writer that must end, and its successor). */
void gs_wake_all(void);

#endif
