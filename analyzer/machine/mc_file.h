/* mc_file.h — reading the small text files the check looks at (/proc,
 * /sys, cgroup files) and the numbers in them.
 *
 * Must never: write, follow more than the path given, or block on a file
 * that never ends (at most cap - 1 bytes are read).
 */
#ifndef MC_FILE_H
#define MC_FILE_H

#include <stddef.h>
#include <stdint.h>

/* Read the file into buf (NUL-terminated, at most cap - 1 bytes). Returns
 * the length, or -1 when it cannot be opened or read. */
long mc_read_text(const char *path, char *buf, size_t cap);
/* The first number in the file (leading blanks skipped). 0, or -1 when the
 * file cannot be read or does not start with a number. */
int mc_read_i64(const char *path, int64_t *v);
int mc_read_double(const char *path, double *v);
/* The first line of the file without its newline, in buf. 0 or -1. */
int mc_read_line(const char *path, char *buf, size_t cap);
/* Copy src into dst, cut to cap - 1 bytes. */
void mc_copy(char *dst, size_t cap, const char *src);
/* snprintf into out; returns out. */
char *mc_path(char *out, size_t cap, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#endif
