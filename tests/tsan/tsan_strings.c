/* tsan_strings.c — the string table (preload/gs_strings.c) under many
 * threads, with ThreadSanitizer: 16 threads intern the same 4,096 strings in
 * different orders at once. Each string gets one id whoever interns it
 * first, every thread sees that id, and the id gives back the string. */
#include <stdio.h>
#include <string.h>

#include "gs_strings.h"
#include "tsan_util.h"

#define NTHREADS 16
#define NSTR 32768 /* a power of two: every odd stride below visits each string */

static uint32_t g_ids[NTHREADS][NSTR];

static void name_of(int i, char *buf, size_t cap)
{
    snprintf(buf, cap, "/data/train/shard-%05d/sample-%d.jpg", i % 97, i);
}

static void *intern(void *arg)
{
    const int t = (int)(intptr_t)arg;
    char buf[96];
    for (int k = 0; k < NSTR; k++) {
        const int i = (k * (2 * t + 1) + t * 131) % NSTR; /* a different order per thread */
        name_of(i, buf, sizeof buf);
        g_ids[t][i] = gs_str_intern(buf, strlen(buf));
    }
    return NULL;
}

int main(void)
{
    ASSERT_EQ(gs_strings_init(), 0);
    tsan_run(NTHREADS, intern);
    int differ = 0, wrong = 0;
    char buf[96];
    for (int i = 0; i < NSTR; i++) {
        for (int t = 1; t < NTHREADS; t++)
            differ += g_ids[t][i] != g_ids[0][i];
        uint32_t len = 0;
        const char *s = gs_str_get(g_ids[0][i], &len);
        name_of(i, buf, sizeof buf);
        wrong += !s || len != strlen(buf) || memcmp(s, buf, len) != 0;
    }
    ASSERT_EQ(differ, 0);
    ASSERT_EQ(wrong, 0);
    ASSERT_TRUE(gs_str_count() >= NSTR);
    return gs_check_done("tsan_strings");
}
