/* hk_secure.c — a set-group-ID program is never traced, whatever GPUSTARVE_*
 * says (the caller must not choose where a privileged process writes).
 *
 * Linked against libgpustarve.so (so the library loads without LD_PRELOAD,
 * which ld.so ignores for such programs). run.sh runs a set-group-ID copy:
 * it must report AT_SECURE, behave normally, and leave GPUSTARVE_DIR
 * untouched; the same binary without the bit is traced (the control). */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/auxv.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    char buf[64];
    int fd = open(argc > 1 ? argv[1] : "/proc/self/cmdline", O_RDONLY);
    ssize_t n = fd >= 0 ? read(fd, buf, sizeof buf) : -1;
    if (fd >= 0)
        close(fd);
    printf("secure %lu read %s\n", getauxval(AT_SECURE), n > 0 ? "ok" : "failed");
    return n > 0 ? 0 : 1;
}
