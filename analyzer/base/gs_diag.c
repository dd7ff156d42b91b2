/* gs_diag.c — diagnostics on stderr at the -q/-v level (gs_diag.h).
 *
 * Must never: write to stdout, or split a line in several writes (lines
 * from several processes sharing stderr would interleave).
 */
#include "base/gs_diag.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

int gs_verbosity = 1;

static void vmsg(const char *fmt, va_list ap)
{
    /* One fputs of the whole line, so lines from several processes sharing
     * stderr do not interleave mid-line. */
    char line[1024];
    int n = snprintf(line, sizeof line, "gpustarve: ");
    vsnprintf(line + n, sizeof line - (size_t)n - 1, fmt, ap);
    size_t len = strlen(line);
    line[len] = '\n';
    line[len + 1] = '\0';
    fflush(stdout);
    fputs(line, stderr);
}

void gs_cli_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vmsg(fmt, ap);
    va_end(ap);
}

void gs_cli_msg(int level, const char *fmt, ...)
{
    if (gs_verbosity < level)
        return;
    va_list ap;
    va_start(ap, fmt);
    vmsg(fmt, ap);
    va_end(ap);
}
