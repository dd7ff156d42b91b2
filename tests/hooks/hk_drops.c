/* hk_drops.c — a full ring drops and counts, never waits: with a 64-event
 * ring, every call is either in the trace or in the final DROPS count. */
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "hk_util.h"

#define NCALLS 200000

static int act(void)
{
    char path[4096], buf[8];
    hk_tmp(path, sizeof path, "drops.dat");
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
    ASSERT_EQ(write(fd, "12345678", 8), 8);
    long ok = 0;
    for (int i = 0; i < NCALLS; i++)
        ok += pread(fd, buf, 4, 0) == 4;
    ASSERT_EQ(ok, NCALLS);
    close(fd);
    return hk_report();
}

static int verify(const char *dir)
{
    const hk_file *f = hk_load_one(dir);
    if (!f)
        return hk_report();
    size_t reads = hk_count(f, GS_K_PREAD, NULL);
    const hk_ev *last = NULL;
    for (size_t i = 0; i < f->n; i++)
        if (f->ev[i].e.kind == GS_K_DROPS)
            last = &f->ev[i];
    ASSERT_TRUE(last != NULL);
    if (last) {
        fprintf(stderr, "hk_drops: %zu recorded, %llu dropped\n", reads,
                (unsigned long long)last->e.aux);
        ASSERT_TRUE(last->e.aux > 0);
        /* the close after the loop may also have been dropped */
        ASSERT_TRUE(reads + last->e.aux == NCALLS || reads + last->e.aux == NCALLS + 1);
        ASSERT_EQ(last->e.aux2, 0);
    }
    return hk_report();
}

int main(int argc, char **argv)
{
    return (argc > 2 && strcmp(argv[1], "verify") == 0) ? verify(argv[2]) : act();
}
