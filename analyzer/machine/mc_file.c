/* mc_file.c — small text files of /proc, /sys and the cgroup file systems,
 * read whole into a buffer of the caller's (mc_file.h).
 *
 * Must never: write, allocate, or read past the caller's buffer.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "machine/mc_file.h"

long mc_read_text(const char *path, char *buf, size_t cap)
{
    if (!cap)
        return -1;
    buf[0] = 0;
    const int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0)
        return -1;
    size_t n = 0;
    while (n + 1 < cap) {
        const ssize_t k = read(fd, buf + n, cap - 1 - n);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0) {
            if (k < 0 && n == 0) {
                close(fd);
                return -1;
            }
            break;
        }
        n += (size_t)k;
    }
    close(fd);
    buf[n] = 0;
    return (long)n;
}

int mc_read_i64(const char *path, int64_t *v)
{
    char buf[128], *end;
    if (mc_read_text(path, buf, sizeof buf) < 0)
        return -1;
    errno = 0;
    const long long x = strtoll(buf, &end, 10);
    if (end == buf || errno)
        return -1;
    *v = (int64_t)x;
    return 0;
}

int mc_read_double(const char *path, double *v)
{
    char buf[128], *end;
    if (mc_read_text(path, buf, sizeof buf) < 0)
        return -1;
    const double x = strtod(buf, &end);
    if (end == buf)
        return -1;
    *v = x;
    return 0;
}

int mc_read_line(const char *path, char *buf, size_t cap)
{
    if (mc_read_text(path, buf, cap) < 0)
        return -1;
    buf[strcspn(buf, "\n")] = 0;
    return 0;
}

char *mc_path(char *out, size_t cap, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(out, cap, fmt, ap);
    va_end(ap);
    return out;
}

void mc_copy(char *dst, size_t cap, const char *src)
{
    if (!cap)
        return;
    const size_t n = strnlen(src, cap - 1);
    memcpy(dst, src, n);
    dst[n] = 0;
}
