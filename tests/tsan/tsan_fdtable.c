/* tsan_fdtable.c — the fd table and the file-mapping table
 * (preload/gs_fdtable.c) under many threads, with ThreadSanitizer: 8 threads
 * each open and close their own block of fd numbers (set, describe, copy,
 * clear with the compare-and-swap of close, clear_range of close_range)
 * while all of them also race on one shared block; and add and take their
 * own mappings. Each thread's own entries end as it left them. */
#include "gs_fdtable.h"
#include "tsan_util.h"

#define NTHREADS 8
#define BLOCK 512
#define SHARED (NTHREADS * BLOCK)
#define ROUNDS 200

static _Atomic uint64_t g_wrong;

static void *worker(void *arg)
{
    const int t = (int)(intptr_t)arg;
    const int lo = t * BLOCK;
    for (int round = 0; round < ROUNDS; round++) {
        for (int fd = lo; fd < lo + BLOCK; fd++)
            gs_fd_set(fd, (uint32_t)(fd + 1), GS_FDK_FILE);
        for (int fd = lo; fd < lo + BLOCK; fd++) {
            gs_rec r = GS_REC_INIT(GS_K_READ, 0);
            const uint64_t w = gs_fd_describe(fd, &r);
            if (r.str != (uint32_t)(fd + 1) || r.fd_kind != GS_FDK_FILE)
                atomic_fetch_add(&g_wrong, 1);
            if (fd % 2)
                gs_fd_clear(fd, w);
            /* the shared block: everyone sets, copies and clears it */
            const int s = SHARED + (fd + round) % BLOCK;
            gs_fd_set(s, (uint32_t)t + 1, GS_FDK_PIPE);
            gs_fd_copy(s, SHARED + (s + 1) % BLOCK);
            gs_fd_clear(s, gs_fd_word(s));
        }
        for (int fd = lo; fd < lo + BLOCK; fd++) {
            const uint64_t w = atomic_load_explicit(&gs_fdtab[fd], memory_order_relaxed);
            if ((fd % 2) != !(w & GS_FDW_VALID))
                atomic_fetch_add(&g_wrong, 1);
        }
        gs_fd_clear_range((unsigned)lo, (unsigned)(lo + BLOCK - 1));
        for (int k = 0; k < 64; k++) {
            const uintptr_t a = ((uintptr_t)(t + 1) << 32) + ((uintptr_t)k << 12);
            gs_map_add(a, 4096, k, (uint32_t)k, GS_FDK_FILE);
        }
        for (int k = 0; k < 64; k++) {
            const uintptr_t a = ((uintptr_t)(t + 1) << 32) + ((uintptr_t)k << 12);
            int fd = -1;
            uint32_t str = 0;
            unsigned kind = 0;
            if (!gs_map_take(a, &fd, &str, &kind) || fd != k || str != (uint32_t)k)
                atomic_fetch_add(&g_wrong, 1);
        }
    }
    return NULL;
}

int main(void)
{
    ASSERT_EQ(gs_fdtab_init(), 0);
    ASSERT_EQ(gs_maptab_init(), 0);
    tsan_run(NTHREADS, worker);
    ASSERT_EQ(atomic_load(&g_wrong), 0);
    return gs_check_done("tsan_fdtable");
}
