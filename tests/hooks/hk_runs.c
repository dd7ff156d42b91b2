/* hk_runs.c — runs of calls like the one before them (the writer's
 * put_repeats and the `repeats` record, docs/trace-format.md) come back as
 * the exact calls made: two threads of sequential preads, a jump, reads at
 * the end of the file (ret 0: the offset stays), a failed call between, and
 * reads without an offset; every event in order with its offset and result.
 * run.sh runs it with the default flush and with a drain every millisecond
 * (runs cut across drains and frames). */
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hk_util.h"

#define SEQ 5000   /* sequential 256-byte preads from offset 0 */
#define JUMP 100000
#define AFTER 50   /* sequential preads after the jump */
#define ATEND 20   /* preads at the end of the file */
#define READS 300  /* read() of 16 bytes */
#define FSIZE (2 << 20)

static char g_path[4096];

static void *reader(void *arg)
{
    (void)arg;
    char buf[256];
    int fd = open(g_path, O_RDONLY);
    ASSERT_TRUE(fd >= 0);
    for (int i = 0; i < SEQ; i++)
        ASSERT_EQ(pread(fd, buf, sizeof buf, (off_t)i * 256), 256);
    for (int i = 0; i <= AFTER; i++)
        ASSERT_EQ(pread(fd, buf, sizeof buf, JUMP + (off_t)i * 256), 256);
    ASSERT_EQ(pread(-1, buf, sizeof buf, 0), -1);
    for (int i = 0; i < ATEND; i++)
        ASSERT_EQ(pread(fd, buf, sizeof buf, FSIZE), 0);
    for (int i = 0; i < READS; i++)
        ASSERT_EQ(read(fd, buf, 16), 16);
    close(fd);
    return NULL;
}

static int act(void)
{
    hk_tmp(g_path, sizeof g_path, "runs.dat");
    int w = open(g_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    ASSERT_TRUE(w >= 0);
    ASSERT_EQ(ftruncate(w, FSIZE), 0);
    close(w);
    pthread_t th;
    ASSERT_EQ(pthread_create(&th, NULL, reader, NULL), 0);
    reader(NULL);
    pthread_join(th, NULL);
    return hk_report();
}

/* The calls of thread tid, in the order made. */
static void check_thread(const hk_file *f, uint32_t tid)
{
    size_t np = 0, nr = 0, bad = 0;
    for (size_t i = 0; i < f->n; i++) {
        const gs_event *e = &f->ev[i].e;
        const char *s = f->ev[i].str;
        if (e->tid != tid || !s || !strstr(s, "/runs.dat"))
            continue;
        if (e->kind == GS_K_PREAD) {
            long long off, ret = 256;
            if (np < SEQ)
                off = (long long)np * 256;
            else if (np <= SEQ + AFTER)
                off = JUMP + (long long)(np - SEQ) * 256;
            else
                off = FSIZE, ret = 0;
            if (e->offset != off || e->ret != ret || e->bytes != 256 || e->fd < 0 ||
                e->fd_kind != GS_FDK_FILE || e->dur == 0)
                bad++;
            np++;
        } else if (e->kind == GS_K_READ) {
            bad += e->ret != 16 || e->bytes != 16 || e->fd < 0;
            nr++;
        }
    }
    ASSERT_EQ(np, SEQ + AFTER + 1 + ATEND);
    ASSERT_EQ(nr, READS);
    ASSERT_EQ(bad, 0);
}

static int verify(const char *dir)
{
    const hk_file *f = hk_load_one(dir);
    if (!f)
        return hk_report();
    /* the two threads that read, and nothing dropped */
    uint32_t tids[2] = {0, 0};
    for (size_t i = 0; i < f->n; i++) {
        const gs_event *e = &f->ev[i].e;
        if (e->kind != GS_K_PREAD || e->fd >= 0)
            continue; /* each thread's one failed call */
        ASSERT_EQ(e->ret, -1);
        if (!tids[0])
            tids[0] = e->tid;
        else if (e->tid != tids[0])
            tids[1] = e->tid;
    }
    ASSERT_TRUE(tids[0] && tids[1]);
    check_thread(f, tids[0]);
    check_thread(f, tids[1]);
    for (size_t i = 0; i < f->n; i++)
        if (f->ev[i].e.kind == GS_K_DROPS)
            ASSERT_TRUE(f->ev[i].e.aux == 0 && f->ev[i].e.aux2 == 0);
    return hk_report();
}

int main(int argc, char **argv)
{
    return (argc > 2 && strcmp(argv[1], "verify") == 0) ? verify(argv[2]) : act();
}
