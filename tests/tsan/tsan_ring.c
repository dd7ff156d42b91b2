/* tsan_ring.c — the per-thread rings (preload/gs_ring.c) under many threads,
 * with ThreadSanitizer: 16 producers at a time, in 4 waves (threads end and
 * their rings are recycled and taken again by the next wave), each appending
 * numbered records through gs_emit into rings of 1024 records; one consumer
 * drains as the collector's writer does (head snapshot, records, tail,
 * recycle of dead rings). Every record a producer made is seen exactly once,
 * in its order, or counted dropped: seen + dropped = made, per producer. */
#include <stdatomic.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "gs_preload.h"
#include "gs_ring.h"
#include "tsan_util.h"

#define WAVES 4
#define PER_WAVE 16
#define NPROD (WAVES * PER_WAVE)
#define RECORDS 5000

static _Atomic uint32_t g_tid_of[NPROD];
static uint64_t g_next[NPROD];    /* consumer: next sequence expected */
static uint64_t g_seen[NPROD];    /* consumer: records seen */
static uint64_t g_dropped[NPROD]; /* consumer: drops of recycled rings */
static uint64_t g_bad;
static _Atomic int g_done;
static int g_wave;

static int producer_of_tid(uint32_t tid)
{
    for (int p = 0; p < NPROD; p++)
        if (atomic_load(&g_tid_of[p]) == tid)
            return p;
    return -1;
}

static void *produce(void *arg)
{
    const int p = g_wave * PER_WAVE + (int)(intptr_t)arg;
    atomic_store(&g_tid_of[p], (uint32_t)syscall(SYS_gettid));
    for (uint64_t s = 0; s < RECORDS; s++) {
        gs_rec r = GS_REC_INIT(GS_K_READ, s);
        r.fd = p;
        r.offset = (int64_t)s;
        gs_emit(&r);
    }
    return NULL;
}

/* One pass of the writer's drain. */
static void drain(void)
{
    const uint32_t n = gs_ring_count();
    for (uint32_t i = 0; i < n; i++) {
        gs_ring *r = gs_ring_at(i);
        if (!r)
            continue;
        const uint32_t st = atomic_load_explicit(&r->state, memory_order_acquire);
        if (st == GS_RING_FREE)
            continue;
        const uint64_t h = atomic_load_explicit(&r->head, memory_order_acquire);
        uint64_t t = atomic_load_explicit(&r->tail, memory_order_relaxed);
        for (; t < h; t++) {
            const gs_rec *x = &r->ev[t & r->mask];
            const int p = x->fd;
            if (p < 0 || p >= NPROD || (uint64_t)x->offset < g_next[p]) {
                g_bad++;
                continue;
            }
            g_next[p] = (uint64_t)x->offset + 1;
            g_seen[p]++;
        }
        atomic_store_explicit(&r->tail, h, memory_order_release);
        if (st == GS_RING_DEAD) {
            const int p = producer_of_tid(r->tid);
            if (p >= 0)
                g_dropped[p] += atomic_load_explicit(&r->dropped, memory_order_relaxed);
            else
                g_bad++;
            gs_ring_recycle(r);
        }
    }
}

static void *consume(void *arg)
{
    (void)arg;
    while (!atomic_load(&g_done))
        drain();
    drain();
    return NULL;
}

int main(void)
{
    ASSERT_EQ(gs_rings_init(1024), 0);
    pthread_t c;
    pthread_create(&c, NULL, consume, NULL);
    for (g_wave = 0; g_wave < WAVES; g_wave++)
        tsan_run(PER_WAVE, produce);
    atomic_store(&g_done, 1);
    pthread_join(c, NULL);
    drain();
    uint64_t seen = 0, dropped = 0;
    for (int p = 0; p < NPROD; p++) {
        ASSERT_EQ(g_seen[p] + g_dropped[p], RECORDS);
        seen += g_seen[p];
        dropped += g_dropped[p];
    }
    ASSERT_EQ(g_bad, 0);
    ASSERT_EQ(gs_ring_dropped_noring(), 0);
    ASSERT_TRUE(gs_ring_count() <= NPROD);
    printf("tsan_ring: %llu records seen, %llu dropped (rings of 1024), %u rings for %d threads\n",
           (unsigned long long)seen, (unsigned long long)dropped, gs_ring_count(), NPROD);
    return gs_check_done("tsan_ring");
}
