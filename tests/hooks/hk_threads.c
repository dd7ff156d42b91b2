/* hk_threads.c — 8 threads reading at once: every call recorded once, under
 * the right thread, with THREAD names; nothing dropped with default rings. */
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "hk_util.h"

#define NTHREADS 8
#define NCALLS 5000

static char g_path[4096];

static void *worker(void *arg)
{
    long id = (long)arg;
    char name[16], buf[64];
    snprintf(name, sizeof name, "hkworker%ld", id);
    pthread_setname_np(pthread_self(), name);
    int fd = open(g_path, O_RDONLY);
    long ok = 0;
    for (int i = 0; i < NCALLS; i++)
        ok += pread(fd, buf, (size_t)(id + 1), i % 32) == id + 1;
    close(fd);
    return (void *)ok;
}

static int act(void)
{
    hk_tmp(g_path, sizeof g_path, "thr.dat");
    int fd = open(g_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    char buf[128];
    memset(buf, 't', sizeof buf);
    ASSERT_EQ(write(fd, buf, sizeof buf), (long)sizeof buf);
    close(fd);
    pthread_t th[NTHREADS];
    for (long i = 0; i < NTHREADS; i++)
        pthread_create(&th[i], NULL, worker, (void *)i);
    for (int i = 0; i < NTHREADS; i++) {
        void *r;
        pthread_join(th[i], &r);
        ASSERT_EQ((long)r, NCALLS);
    }
    return hk_report();
}

static int verify(const char *dir)
{
    const hk_file *f = hk_load_one(dir);
    if (!f)
        return hk_report();
    for (long id = 0; id < NTHREADS; id++) {
        /* each thread's reads: its own size, all under one tid */
        uint32_t tid = 0;
        size_t count = 0, wrong_tid = 0;
        for (size_t i = 0; i < f->n; i++) {
            const gs_event *e = &f->ev[i].e;
            if (e->kind != GS_K_PREAD || e->bytes != (uint64_t)(id + 1))
                continue;
            if (!tid)
                tid = e->tid;
            wrong_tid += e->tid != tid;
            count++;
        }
        ASSERT_EQ(count, NCALLS);
        ASSERT_EQ(wrong_tid, 0);
        char name[16];
        snprintf(name, sizeof name, "hkworker%ld", id);
        const hk_ev *t = hk_first(f, GS_K_THREAD, name);
        ASSERT_TRUE(t && t->e.aux == tid);
    }
    const hk_ev *d = NULL;
    for (size_t i = 0; i < f->n; i++)
        if (f->ev[i].e.kind == GS_K_DROPS)
            d = &f->ev[i];
    ASSERT_TRUE(d && d->e.aux == 0 && d->e.aux2 == 0);
    return hk_report();
}

int main(int argc, char **argv)
{
    return (argc > 2 && strcmp(argv[1], "verify") == 0) ? verify(argv[2]) : act();
}
