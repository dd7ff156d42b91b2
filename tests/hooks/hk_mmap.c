/* hk_mmap.c — file mmap/mmap64/munmap are recorded; anonymous mappings and
 * ranges we did not see mapped are not. */
#include <fcntl.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "hk_util.h"

static int act(void)
{
    char path[4096], buf[8192];
    hk_tmp(path, sizeof path, "map.dat");
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
    memset(buf, 'm', sizeof buf);
    ASSERT_EQ(write(fd, buf, sizeof buf), (long)sizeof buf);
    void *p = mmap(NULL, 8192, PROT_READ, MAP_SHARED, fd, 0);
    ASSERT_TRUE(p != MAP_FAILED);
    void *q = mmap64(NULL, 4096, PROT_READ, MAP_PRIVATE, fd, 4096);
    ASSERT_TRUE(q != MAP_FAILED);
    void *a = mmap(NULL, 65536, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ASSERT_TRUE(a != MAP_FAILED);
    ASSERT_EQ(((volatile char *)p)[100], 'm');
    ASSERT_EQ(munmap(p, 8192), 0);
    ASSERT_EQ(munmap(q, 4096), 0);
    ASSERT_EQ(munmap(a, 65536), 0);
    ASSERT_TRUE(mmap(NULL, 4096, PROT_READ, MAP_SHARED, 999, 0) == MAP_FAILED);
    close(fd);
    /* tell verify the addresses */
    char ap[4096];
    hk_tmp(ap, sizeof ap, "map.addr");
    FILE *af = fopen(ap, "w");
    fprintf(af, "%llu %llu\n", (unsigned long long)(uintptr_t)p, (unsigned long long)(uintptr_t)q);
    fclose(af);
    return hk_report();
}

static int verify(const char *dir)
{
    const hk_file *f = hk_load_one(dir);
    if (!f)
        return hk_report();
    char ap[4096];
    unsigned long long p = 0, q = 0;
    FILE *af = fopen(hk_tmp(ap, sizeof ap, "map.addr"), "r");
    ASSERT_TRUE(af && fscanf(af, "%llu %llu", &p, &q) == 2);
    const long long A = HK_ANY;
    const long long F = GS_FDK_FILE;
    hk_expect once[] = {
        {GS_K_MMAP, "/map.dat", A, F, 8192, (long long)p, 0, PROT_READ, MAP_SHARED},
        {GS_K_MMAP64, "/map.dat", A, F, 4096, (long long)q, 4096, PROT_READ, MAP_PRIVATE},
        {GS_K_MUNMAP, "/map.dat", A, F, 8192, 0, A, (long long)p, A},
        {GS_K_MUNMAP, "/map.dat", A, F, 4096, 0, A, (long long)q, A},
        {GS_K_MMAP, "", 999, A, 4096, -1, 0, PROT_READ, MAP_SHARED},
    };
    hk_expect_all(f, once, sizeof once / sizeof once[0], 1);
    ASSERT_EQ(hk_count(f, GS_K_MMAP, NULL), 2);   /* not the anonymous one */
    ASSERT_EQ(hk_count(f, GS_K_MUNMAP, NULL), 2); /* not the anonymous one */
    return hk_report();
}

int main(int argc, char **argv)
{
    return (argc > 2 && strcmp(argv[1], "verify") == 0) ? verify(argv[2]) : act();
}
