/* hk_stacks.c — GPUSTARVE_STACKS=1: the hooks still return what the real
 * call returned and leave errno as it left it, never allocate once a thread
 * has made its first hooked call (malloc, calloc, realloc and friends are
 * counted by this program's own definitions, which every library in the
 * process binds to), and every recorded call carries a stack whose frames
 * the file defines, inside recorded MAPPING ranges, innermost frame in the
 * function that made the call.
 *
 * act mode runs with GPUSTARVE_STACKS=1; run.sh also runs it with stacks
 * off and with GPUSTARVE_STACK_EVERY=1 (every call unwound). */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hk_util.h"

/* ---- allocation counter: this executable's malloc family wins ----------------- */

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);
extern void __libc_free(void *);

static _Atomic long g_allocs;
static _Atomic int g_counting;
static __thread int t_worker; /* only the calling threads count (not the writer) */

static void count(void)
{
    if (t_worker && atomic_load_explicit(&g_counting, memory_order_relaxed))
        atomic_fetch_add(&g_allocs, 1);
}

void *malloc(size_t n)
{
    count();
    return __libc_malloc(n);
}

void *calloc(size_t a, size_t b)
{
    count();
    return __libc_calloc(a, b);
}

void *realloc(void *p, size_t n)
{
    count();
    return __libc_realloc(p, n);
}

void *memalign(size_t al, size_t n)
{
    count();
    return __libc_memalign(al, n);
}

int posix_memalign(void **out, size_t al, size_t n)
{
    count();
    void *p = __libc_memalign(al, n);
    if (!p)
        return ENOMEM;
    *out = p;
    return 0;
}

void *aligned_alloc(size_t al, size_t n)
{
    count();
    return __libc_memalign(al, n);
}

void free(void *p)
{
    __libc_free(p);
}

/* ---- the calls ------------------------------------------------------------------ */

#define NTHREADS 4
#define NCALLS 20000

static char g_path[4096];
static pthread_barrier_t g_start;

__attribute__((noinline)) static ssize_t site_a(int fd, char *buf, long i)
{
    return pread(fd, buf, 512, (i * 512) % 65536);
}

__attribute__((noinline)) static ssize_t site_b(int fd, char *buf, long i)
{
    return pread(fd, buf, 256, (i * 256) % 65536);
}

static void *worker(void *arg)
{
    (void)arg;
    char buf[512];
    int fd = open(g_path, O_RDONLY); /* the thread's first hooked calls: out of the window */
    struct stat st;
    stat(g_path, &st);
    (void)!site_a(fd, buf, 0);
    (void)!site_b(fd, buf, 0);
    pthread_barrier_wait(&g_start);
    t_worker = 1;
    long bad = 0;
    for (long i = 0; i < NCALLS; i++) {
        bad += site_a(fd, buf, i) != 512;
        bad += site_b(fd, buf, i) != 256;
        if (i % 1000 == 0)
            bad += stat(g_path, &st) != 0;
    }
    t_worker = 0;
    pthread_barrier_wait(&g_start);
    close(fd);
    return (void *)bad;
}

static int act(void)
{
    hk_tmp(g_path, sizeof g_path, "stacks.dat");
    int fd = open(g_path, O_RDWR | O_CREAT | O_TRUNC, 0600);
    static char block[65536 + 512];
    memset(block, 'x', sizeof block);
    ASSERT_EQ(write(fd, block, sizeof block), (long)sizeof block);
    close(fd);

    /* results and errno as the real calls left them */
    char buf[512];
    errno = 0;
    ASSERT_EQ(pread(-1, buf, 4, 0), -1);
    ASSERT_EQ(errno, EBADF);
    errno = 0;
    ASSERT_EQ(open("/nonexistent/hk_stacks", O_RDONLY), -1);
    ASSERT_EQ(errno, ENOENT);
    fd = open(g_path, O_RDONLY);
    ASSERT_TRUE(fd >= 0);
    for (int i = 0; i < 100; i++) { /* unwound or not: same result, errno untouched */
        errno = 1234;
        ASSERT_EQ(site_a(fd, buf, 0), 512);
        ASSERT_EQ(errno, 1234);
    }
    close(fd);

    pthread_t th[NTHREADS];
    pthread_barrier_init(&g_start, NULL, NTHREADS + 1);
    for (int i = 0; i < NTHREADS; i++)
        pthread_create(&th[i], NULL, worker, NULL);
    pthread_barrier_wait(&g_start); /* every thread has made its first calls */
    atomic_store(&g_allocs, 0);
    atomic_store(&g_counting, 1);
    pthread_barrier_wait(&g_start); /* every thread is done */
    atomic_store(&g_counting, 0);
    long allocs = atomic_load(&g_allocs);
    long bad = 0;
    for (int i = 0; i < NTHREADS; i++) {
        void *r;
        pthread_join(th[i], &r);
        bad += (long)r;
    }
    fprintf(stderr, "hk_stacks: %ld allocations during %d hooked calls\n", allocs,
            NTHREADS * NCALLS * 2);
    ASSERT_EQ(bad, 0);
    ASSERT_EQ(allocs, 0);
    return hk_report();
}

static int verify(const char *dir, int stacks_on)
{
    const hk_file *f = hk_load_one(dir);
    if (!f)
        return hk_report();
    size_t preads = 0, stacked = 0, maps = 0;
    const hk_ev *last_drops = NULL;
    for (size_t i = 0; i < f->n; i++) {
        const gs_event *e = &f->ev[i].e;
        if (e->kind == GS_K_PREAD || e->kind == GS_K_PREAD64) {
            preads++;
            stacked += e->stack != 0;
        }
        maps += e->kind == GS_K_MAPPING;
        if (e->kind == GS_K_DROPS)
            last_drops = &f->ev[i];
    }
    ASSERT_TRUE(preads >= (size_t)NTHREADS * NCALLS * 2);
    ASSERT_TRUE(last_drops && last_drops->e.aux == 0 && last_drops->e.aux2 == 0);
    if (!stacks_on) {
        ASSERT_EQ(stacked, 0);
        ASSERT_EQ(maps, 0);
        return hk_report();
    }
    ASSERT_EQ(stacked, preads); /* every call carries a stack (pread(-1) too) */
    ASSERT_TRUE(maps >= 3);
    /* every stack is defined; its innermost frame lies in a mapping of this
     * program (site_a / site_b / main called pread) */
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, f->name);
    gs_reader *r = NULL;
    ASSERT_EQ(gs_reader_open(&r, path), GS_OK);
    if (!r)
        return hk_report();
    uint64_t lo[256], hi[256];
    int nm = 0, exe = -1;
    char self[4096];
    ssize_t sl = readlink("/proc/self/exe", self, sizeof self - 1);
    self[sl > 0 ? sl : 0] = 0;
    const gs_event *ev;
    size_t ne;
    size_t undefined = 0, inside = 0, checked = 0;
    while (gs_reader_next_frame(r, &ev, &ne) > 0) {
        for (size_t i = 0; i < ne; i++) {
            const gs_event *e = &ev[i];
            if (e->kind == GS_K_MAPPING && nm < 256) {
                const char *p = gs_reader_string(r, e->str);
                if (p && strcmp(p, self) == 0)
                    exe = nm;
                lo[nm] = e->aux;
                hi[nm++] = e->aux + e->bytes;
            }
            if (!e->stack)
                continue;
            size_t nf = 0;
            const uint64_t *fr = gs_reader_stack(r, e->stack, &nf);
            if (!fr || nf == 0) {
                undefined++;
                continue;
            }
            ASSERT_TRUE(e->stack_weight >= 1);
            if (e->kind != GS_K_PREAD && e->kind != GS_K_PREAD64)
                continue;
            checked++;
            if (exe >= 0 && fr[0] >= lo[exe] && fr[0] < hi[exe])
                inside++;
        }
    }
    gs_reader_close(r);
    ASSERT_EQ(undefined, 0);
    ASSERT_TRUE(exe >= 0);
    /* under the sanitized collector the ASan runtime's pread interceptor is
     * the hook's caller: the innermost frame is in it (run.sh says so) */
    if (!getenv("HK_CALLER_ANY"))
        ASSERT_EQ(inside, checked);
    return hk_report();
}

int main(int argc, char **argv)
{
    if (argc > 2 && strcmp(argv[1], "verify") == 0)
        return verify(argv[2], !(argc > 3 && strcmp(argv[3], "off") == 0));
    return act();
}
