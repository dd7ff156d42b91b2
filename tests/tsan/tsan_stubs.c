/* tsan_stubs.c — the collector functions the structures under stress call
 * but which are not under test: the writer is never woken (the tests drain
 * themselves), there is no live file (rings are anonymous, strings are not
 * logged, no page of it is touched first). */
#include <stddef.h>
#include <stdint.h>

#include "gs_livefile.h"
#include "gs_preload.h"

/* the thread's ring, for the files under test that read it without
 * gs_ring.c (tsan_strings); tsan_ring links gs_ring.c's own */
__attribute__((weak)) __thread gs_ring *gs_t_ring;

void gs_writer_poke(void)
{
}

void gs_writer_poke_map(void)
{
}

gs_ring *gs_live_slot(void)
{
    return NULL;
}

uint64_t gs_live_ring_capacity(void)
{
    return 0;
}

int gs_live_owns(const void *p)
{
    (void)p;
    return 0;
}

void gs_live_log_string(gs_ring *g, uint32_t id, const char *s, uint32_t len)
{
    (void)g;
    (void)id;
    (void)s;
    (void)len;
}

void gs_live_first_touch(gs_ring *g, const gs_rec *slot)
{
    (void)g;
    (void)slot;
}

uint64_t gs_live_open_faults(uint32_t tid)
{
    (void)tid;
    return 0;
}
