/* hk_stdio.c — fopen, fopen64, fread, fread_unlocked, fgets, fclose from
 * main, and no double counting: glibc's own open/read under them are not
 * recorded. */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hk_util.h"

#undef fread_unlocked

static int act(void)
{
    char path[4096], buf[4096];
    hk_tmp(path, sizeof path, "stdio.txt");
    FILE *w = fopen(path, "w");
    for (int i = 0; i < 100; i++)
        fprintf(w, "line %d\n", i);
    fclose(w);
    FILE *f = fopen(path, "rb");
    ASSERT_EQ(fread(buf, 1, 10, f), 10);
    ASSERT_EQ(fread_unlocked(buf, 2, 5, f), 5);
    ASSERT_TRUE(fgets(buf, 64, f) != NULL);
    ASSERT_EQ(fclose(f), 0);
    f = fopen64(path, "r");
    ASSERT_EQ(fread(buf, 4, 1000, f), 790 / 4); /* short read at EOF */
    ASSERT_TRUE(fgets(buf, 64, f) == NULL);
    fclose(f);
    ASSERT_TRUE(fopen("/nonexistent/x", "r") == NULL);
    return hk_report();
}

static int verify(const char *dir)
{
    const hk_file *f = hk_load_one(dir);
    if (!f)
        return hk_report();
    const long long A = HK_ANY;
    const long long F = GS_FDK_FILE;
    hk_expect once[] = {
        {GS_K_FOPEN, "/stdio.txt", A, F, A, A, A, 'w', A},
        {GS_K_FOPEN, "/stdio.txt", A, F, A, A, A, 'r' | ('b' << 8), A},
        {GS_K_FREAD, "/stdio.txt", A, F, 10, 10, A, 1, A},
        {GS_K_FREAD_UNLOCKED, "/stdio.txt", A, F, 10, 5, A, 2, A},
        {GS_K_FGETS, "/stdio.txt", A, F, 64, 1, A, A, A},
        {GS_K_FOPEN64, "/stdio.txt", A, F, A, A, A, 'r', A},
        {GS_K_FREAD, "/stdio.txt", A, F, 4000, 197, A, 4, A},
        {GS_K_FGETS, "/stdio.txt", A, F, 64, -1, A, A, A},
        {GS_K_FOPEN, "/nonexistent/x", -1, A, A, -1, A, 'r', A},
    };
    hk_expect_all(f, once, sizeof once / sizeof once[0], 1);
    hk_expect fclose3 = {GS_K_FCLOSE, "/stdio.txt", A, F, A, 0, A, A, A};
    hk_expect_all(f, &fclose3, 1, 3);
    /* glibc's internal open/read/close are not seen: no double counting */
    static const unsigned inner[] = {GS_K_OPEN, GS_K_OPENAT, GS_K_READ, GS_K_CLOSE, GS_K_FSTAT};
    for (size_t i = 0; i < sizeof inner / sizeof inner[0]; i++) {
        hk_expect x = {inner[i], "/stdio.txt", A, A, A, A, A, A, A};
        ASSERT_EQ(hk_match(f, &x), 0);
    }
    return hk_report();
}

int main(int argc, char **argv)
{
    return (argc > 2 && strcmp(argv[1], "verify") == 0) ? verify(argv[2]) : act();
}
