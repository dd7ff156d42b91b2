/* hk_ctor.c — hooks called from another library's constructor (before ours
 * ran) work and are recorded. */
#include <fcntl.h>
#include <string.h>

#include "hk_util.h"

extern int hk_ctor_fd;
extern long hk_ctor_read;

static int act(void)
{
    ASSERT_TRUE(hk_ctor_fd >= 0);
    ASSERT_EQ(hk_ctor_read, 16);
    return hk_report();
}

static int verify(const char *dir)
{
    const hk_file *f = hk_load_one(dir);
    if (!f)
        return hk_report();
    const long long A = HK_ANY;
    hk_expect once[] = {
        {GS_K_OPEN, "/ctor.dat", A, GS_FDK_FILE, A, A, A, O_RDONLY, A},
        {GS_K_PREAD, "/ctor.dat", A, GS_FDK_FILE, 16, 16, 0, A, A},
        {GS_K_CLOSE, "/ctor.dat", A, GS_FDK_FILE, A, 0, A, A, A},
    };
    hk_expect_all(f, once, sizeof once / sizeof once[0], 0);
    return hk_report();
}

int main(int argc, char **argv)
{
    return (argc > 2 && strcmp(argv[1], "verify") == 0) ? verify(argv[2]) : act();
}
