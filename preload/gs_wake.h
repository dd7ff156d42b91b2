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

/* Threads started late (docs/collector-safety.md): gs_threads_late is 1
 * while this image runs with no thread of ours (start-up and the fork child
 * set it, gs_start_threads clears it); a poke while so sets
 * gs_threads_wanted (a ring half full, the live file's string log full, a
 * GPU source): the next safe point starts them (gs_safe_point,
 * gs_preload.h). */
extern _Atomic int gs_threads_late;
extern _Atomic int gs_threads_wanted;
/* What starts them (gs_start_threads), registered by start-up as atfork
 * handlers are: the pthread_create hook calls it through this word, so the
 * hooks' layer calls nothing above it (docs/architecture.md,
 * "Dependencies"). NULL until start-up set it. */
extern void (*_Atomic gs_threads_starter)(void);

/* The word's value now: pass it to gs_wake_wait. */
uint32_t gs_wake_seen(void);
/* Sleep until the word moves past seen, or ts passes (NULL: no bound). */
void gs_wake_wait(uint32_t seen, const struct timespec *ts);
/* Pokes of gs_writer_poke_map so far: a wake-up that only they explain
 * asks for pages, not a drain. Read after gs_wake_seen. */
uint32_t gs_wake_map_pokes(void);
/* Wake every thread waiting (a writer that must end, and its successor). */
void gs_wake_all(void);

#endif
