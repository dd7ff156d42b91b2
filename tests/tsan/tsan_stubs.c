/* tsan_stubs.c — the collector functions the structures under stress call
 * but which are not under test: the writer is never woken (the tests drain
 * themselves), there is no live file (rings are anonymous, strings are not
 * logged). */
#include <stddef.h>
#include <stdint.h>

#include "gs_livefile.h"
#include "gs_preload.h"

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

void gs_live_log_string(uint32_t id, const char *s, uint32_t len)
{
    (void)id;
    (void)s;
    (void)len;
}
