/* tsan_pinned.c — the pinned-memory registry's sequence lock
 * (preload/gs_pinned.c) under many threads, with ThreadSanitizer: 4 writers
 * add and remove their own ranges (growing the array past its first 4096
 * entries) while 8 readers look up addresses. A range registered before the
 * readers start and never removed is always found (pinned, with its bounds,
 * or "unknown" while writers keep changing the array), never "pageable"; an
 * address no one ever registers is never "pinned". */
#include <stdatomic.h>

#include "gs_pinned.h"
#include "tsan_util.h"

#define NSTABLE 64
#define NWRITERS 4
#define NREADERS 8
#define CHURN 1100 /* x 4 writers: past the array's first 4096 entries */

/* Address space of the test: stable ranges at 1 MiB steps, churn ranges
 * between them, holes (never registered) at +512 KiB + 1. */
#define BASE 0x100000000ull
#define STEP 0x100000ull

static _Atomic int g_stop;
static _Atomic uint64_t g_wrong, g_found, g_unknown;

static void *writer(void *arg)
{
    const uint64_t w = (uint64_t)(intptr_t)arg;
    /* above the stable ranges, added in rising and removed in falling order:
     * the array moves little (a few entries per change), the test stays
     * short under the sanitizer; the first ones also land between stable
     * ranges, where entries must move */
    for (uint64_t k = 0; k < CHURN; k++) {
        const uint64_t a = k < 16 ? BASE + k * STEP + 0x1000 + w * 0x10
                                  : BASE + NSTABLE * STEP + (k * NWRITERS + w) * 0x10;
        if (gs_pinned_add((void *)(uintptr_t)a, 0x8) != 0)
            atomic_fetch_add(&g_wrong, 1);
    }
    for (uint64_t k = CHURN; k-- > 0;) {
        const uint64_t a = k < 16 ? BASE + k * STEP + 0x1000 + w * 0x10
                                  : BASE + NSTABLE * STEP + (k * NWRITERS + w) * 0x10;
        if (gs_pinned_remove((void *)(uintptr_t)a, NULL) != 0)
            atomic_fetch_add(&g_wrong, 1);
    }
    return NULL;
}

static void *reader(void *arg)
{
    uint64_t k = (uint64_t)(intptr_t)arg;
    while (!atomic_load(&g_stop)) {
        k = (k * 6364136223846793005ull + 1442695040888963407ull);
        const uint64_t i = (k >> 33) % NSTABLE;
        uint64_t s = 0, e = 0;
        const int st = gs_pinned_lookup((void *)(uintptr_t)(BASE + i * STEP + 0x800), &s, &e);
        if (st == GS_PIN_PINNED && s == BASE + i * STEP && e == s + 0x1000)
            atomic_fetch_add(&g_found, 1);
        else if (st == GS_PIN_UNKNOWN)
            atomic_fetch_add(&g_unknown, 1);
        else
            atomic_fetch_add(&g_wrong, 1);
        if (gs_pinned_lookup((void *)(uintptr_t)(BASE + i * STEP + STEP / 2 + 1), NULL, NULL) ==
            GS_PIN_PINNED)
            atomic_fetch_add(&g_wrong, 1);
    }
    return NULL;
}

static void *role(void *arg)
{
    const int i = (int)(intptr_t)arg;
    if (i < NWRITERS) {
        writer((void *)(intptr_t)i);
        return NULL;
    }
    return reader((void *)(intptr_t)i);
}

static void *stopper(void *arg)
{
    (void)arg;
    tsan_run(NWRITERS, role); /* the writers */
    atomic_store(&g_stop, 1);
    return NULL;
}

static void *all(void *arg)
{
    const int i = (int)(intptr_t)arg;
    if (i == 0)
        return stopper(NULL);
    return reader((void *)(intptr_t)i);
}

int main(void)
{
    for (uint64_t i = 0; i < NSTABLE; i++)
        ASSERT_EQ(gs_pinned_add((void *)(uintptr_t)(BASE + i * STEP), 0x1000), 0);
    tsan_run(1 + NREADERS, all);
    ASSERT_EQ(atomic_load(&g_wrong), 0);
    ASSERT_TRUE(atomic_load(&g_found) > 0);
    ASSERT_EQ(gs_pinned_count(), NSTABLE); /* every churn range removed again */
    printf("tsan_pinned: %llu lookups found their range, %llu unknown (writers busy), 0 wrong\n",
           (unsigned long long)atomic_load(&g_found), (unsigned long long)atomic_load(&g_unknown));
    return gs_check_done("tsan_pinned");
}
