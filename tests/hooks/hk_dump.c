/* hk_dump.c — print every event of a run directory (debugging aid for the
 * hook tests; `gpustarve dump` is the real tool). Exit 1 when a file is
 * damaged or refers to an undefined string. */
#include "hk_util.h"

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: hk_dump DIR\n");
        return 2;
    }
    hk_file *files;
    int n = hk_load_dir(argv[1], &files);
    if (n < 0) {
        perror(argv[1]);
        return 2;
    }
    int bad = 0;
    for (int i = 0; i < n; i++) {
        hk_dump_file(&files[i], stdout);
        bad |= !files[i].ok || files[i].undefined;
    }
    return bad;
}
