/* sim_coll.c — collectives across the simulated ranks of one job: the
 * ranks are processes (as torchrun starts them: RANK and WORLD_SIZE in
 * their environment) that meet in a file every rank maps shared, named by
 * SIMCUDA_COLLECTIVES. The n-th collective of every rank is the same
 * operation; it ends on every rank at the same instant, when the last rank
 * has arrived plus its own duration, as NCCL's kernels do: each rank's
 * kernel starts when its stream reaches it (its arrival) and runs, waiting,
 * until the last one arrives.
 *
 * The meeting place: COLL_SLOTS slots, the n-th collective in slot n %
 * COLL_SLOTS, each with a count of arrivals and of departures over all its
 * rounds and one arrival time per rank. A rank writes its arrival once
 * every rank has left the slot's previous round, adds itself to the
 * arrivals, and sleeps on the count (a futex on the shared mapping, which
 * wakes across processes) until the round is full.
 *
 * Must never: spin, hold the runtime's lock (the caller drops it), or wait
 * for ever: a rank missing past the timeout ends this process's
 * collectives with one line on stderr.
 */
#define _GNU_SOURCE
#include "sim_coll.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define COLL_SLOTS 8
#define COLL_MAX_RANKS 256
#define COLL_TIMEOUT_MS_DEFAULT 120000

struct coll_slot {
    _Atomic uint32_t arrived;  /* arrivals over every round of this slot */
    _Atomic uint32_t departed; /* ranks that read the round's end */
    _Atomic uint64_t start[COLL_MAX_RANKS];
};

struct coll_shm {
    struct coll_slot slot[COLL_SLOTS];
};

static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static struct coll_shm *_Atomic g_shm;
static int g_rank, g_world;
static uint64_t g_timeout_ns;
static uint64_t g_next; /* this rank's next collective */
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;

static long env_long(const char *name, long def)
{
    const char *s = getenv(name);
    if (!s || !*s)
        return def;
    char *end;
    const long v = strtol(s, &end, 10);
    return *end ? def : v;
}

static void init_once(void)
{
    const char *path = getenv("SIMCUDA_COLLECTIVES");
    g_rank = (int)env_long("RANK", -1);
    g_world = (int)env_long("WORLD_SIZE", -1);
    g_timeout_ns = (uint64_t)env_long("SIMCUDA_COLLECTIVE_TIMEOUT_MS", COLL_TIMEOUT_MS_DEFAULT) *
                   1000000ull;
    if (!path || !*path || g_world < 1 || g_world > COLL_MAX_RANKS || g_rank < 0 ||
        g_rank >= g_world)
        return;
    const int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0) {
        fprintf(stderr, "simcuda: SIMCUDA_COLLECTIVES %s: %s\n", path, strerror(errno));
        return;
    }
    /* every rank makes the file long enough; the growth reads as zeros and
     * a rank that comes second changes nothing */
    struct stat st;
    if (fstat(fd, &st) == 0 && (size_t)st.st_size < sizeof *g_shm &&
        ftruncate(fd, (off_t)sizeof *g_shm) != 0)
        fprintf(stderr, "simcuda: SIMCUDA_COLLECTIVES %s: %s\n", path, strerror(errno));
    void *m = mmap(NULL, sizeof *g_shm, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (m == MAP_FAILED) {
        fprintf(stderr, "simcuda: SIMCUDA_COLLECTIVES %s: %s\n", path, strerror(errno));
        return;
    }
    g_shm = m;
}

int sim_coll_is_collective(const char *name)
{
    pthread_once(&g_once, init_once);
    return g_shm && name && strcasestr(name, "nccl") != NULL;
}

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Sleep until *word reaches at least want, or the deadline passes (0). */
static int wait_for(_Atomic uint32_t *word, uint32_t want, uint64_t deadline)
{
    for (;;) {
        const uint32_t v = atomic_load(word);
        if (v >= want)
            return 1;
        const uint64_t now = now_ns();
        if (now >= deadline)
            return 0;
        const uint64_t left = deadline - now;
        struct timespec ts = {(time_t)(left / 1000000000ull), (long)(left % 1000000000ull)};
        /* not FUTEX_PRIVATE: the word is in a mapping other processes share */
        syscall(SYS_futex, (uint32_t *)word, FUTEX_WAIT, v, &ts, NULL, 0);
    }
}

static void wake(_Atomic uint32_t *word)
{
    syscall(SYS_futex, (uint32_t *)word, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
}

uint64_t sim_coll_meet(uint64_t start, uint64_t dur)
{
    pthread_once(&g_once, init_once);
    pthread_mutex_lock(&g_lock); /* one collective of this rank at a time, in order */
    struct coll_shm *shm = g_shm;
    if (!shm) {
        pthread_mutex_unlock(&g_lock);
        return start + dur;
    }
    const uint64_t n = g_next++;
    struct coll_slot *s = &shm->slot[n % COLL_SLOTS];
    const uint32_t round = (uint32_t)(n / COLL_SLOTS), world = (uint32_t)g_world;
    const uint64_t deadline = now_ns() + g_timeout_ns;
    uint64_t last = start;
    /* the slot's previous round is read by every rank before it is reused */
    int ok = wait_for(&s->departed, round * world, deadline);
    if (ok) {
        atomic_store(&s->start[g_rank], start);
        if (atomic_fetch_add(&s->arrived, 1) + 1 == (round + 1) * world)
            wake(&s->arrived);
        ok = wait_for(&s->arrived, (round + 1) * world, deadline);
    }
    if (ok) {
        for (int r = 0; r < g_world; r++) {
            const uint64_t t = atomic_load(&s->start[r]);
            if (t > last)
                last = t;
        }
        atomic_fetch_add(&s->departed, 1);
        wake(&s->departed);
    } else {
        fprintf(stderr, "simcuda: rank %d: collective %llu: not every rank of %d arrived "
                        "within %llu ms; this rank's collectives run alone from now on\n",
                g_rank, (unsigned long long)n, g_world,
                (unsigned long long)(g_timeout_ns / 1000000ull));
        g_shm = NULL; /* left mapped: another thread may still test it */
        last = start;
    }
    pthread_mutex_unlock(&g_lock);
    return last + dur;
}
