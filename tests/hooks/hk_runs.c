/* hk_runs.c — runs of calls like the one before them (the writer's
 * put_repeats and the `repeats` record, docs/trace-format.md) come back as
 * the exact calls made: two threads of sequential preads, a jump, reads at
 * the end of the file (ret 0: the offset stays), a failed call between, and
 * reads without an offset; every event in order with its offset and result.
 * run.sh runs it with the default flush and with a drain every millisecond
 * (runs cut across drains and frames), and with GPUSTARVE_ZSTD_LEVEL set.
 * The frames: a frame of runs may be stored (zstd raw blocks, gs_frame_store)
 * only when it is at most 3.5 raw bytes per record, and never when
 * GPUSTARVE_ZSTD_LEVEL is set (docs/performance.md, "Compression of runs"). */
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
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
    /* verify runs without the act's environment: tell it the level */
    char lpath[4096];
    FILE *lf = fopen(hk_tmp(lpath, sizeof lpath, "level"), "w");
    ASSERT_TRUE(lf != NULL);
    fprintf(lf, "%s\n", getenv("GPUSTARVE_ZSTD_LEVEL") ? "set" : "unset");
    fclose(lf);
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

/* Frames of the trace file: stored ones (a zstd frame of raw blocks, as
 * gs_frame_store writes: descriptor 0xA4, first block raw) and the others. */
static void count_frames(const char *dir, const char *name, int *stored, int *other)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "rb");
    ASSERT_TRUE(f != NULL);
    if (!f)
        return;
    gs_file_header h;
    ASSERT_EQ(fread(&h, sizeof h, 1, f), 1);
    long off = (long)h.header_size;
    gs_frame_header fh;
    uint8_t z[10];
    *stored = *other = 0;
    while (fseek(f, off, SEEK_SET) == 0 && fread(&fh, sizeof fh, 1, f) == 1 &&
           fread(z, sizeof z, 1, f) == 1) {
        if (z[4] == 0xA4 && (z[9] & 6) == 0) {
            (*stored)++;
            ASSERT_TRUE(2 * (uint64_t)fh.raw_size <= 7 * (uint64_t)fh.nrec);
        } else {
            (*other)++;
        }
        off += (long)(sizeof fh + fh.comp_size);
    }
    fclose(f);
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
    char lpath[4096], level[16] = "";
    FILE *lf = fopen(hk_tmp(lpath, sizeof lpath, "level"), "r");
    ASSERT_TRUE(lf != NULL && fgets(level, sizeof level, lf) != NULL);
    if (lf)
        fclose(lf);
    int stored = 0, other = 0;
    count_frames(dir, f->name, &stored, &other);
    ASSERT_TRUE(stored + other > 0);
    if (strcmp(level, "set\n") == 0)
        ASSERT_EQ(stored, 0);
    printf("frames: %d stored, %d compressed; GPUSTARVE_ZSTD_LEVEL %s", stored, other, level);
    return hk_report();
}

int main(int argc, char **argv)
{
    return (argc > 2 && strcmp(argv[1], "verify") == 0) ? verify(argv[2]) : act();
}
