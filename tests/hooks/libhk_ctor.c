/* libhk_ctor.c — a library whose constructor calls hooked functions. The
 * dynamic loader runs it before libgpustarve.so's constructor, so these
 * calls exercise the collector's lazy initialisation. */
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

int hk_ctor_fd = -1;
long hk_ctor_read = -1;

__attribute__((constructor)) static void hk_ctor(void)
{
    char path[4096], buf[64];
    const char *t = getenv("HK_TMP");
    int n = 0;
    for (const char *s = t ? t : "/tmp"; *s && n < 4000; s++)
        path[n++] = *s;
    const char *leaf = "/ctor.dat";
    for (const char *s = leaf; *s; s++)
        path[n++] = *s;
    path[n] = 0;
    int w = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (w >= 0) {
        if (write(w, "0123456789abcdef", 16) != 16)
            _exit(99);
        close(w);
    }
    hk_ctor_fd = open(path, O_RDONLY);
    hk_ctor_read = pread(hk_ctor_fd, buf, 16, 0);
    close(hk_ctor_fd);
}
