/* cli_util.c — shared CLI plumbing: option errors, the final stdout check,
 * option numbers.
 *
 * Must never: write diagnostics to stdout, or allocate per call on the
 * output path (gs_out_* and the escapers run once per printed event).
 */
#include "cmd/cli_util.h"

#include <errno.h>
#include <getopt.h>
#include <stdlib.h>

int gs_cli_bad_option(const char *cmd, int argc, char **argv, const char *optstring,
                      const struct option *longopts)
{
    const char *arg = (optind > 0 && optind <= argc) ? argv[optind - 1] : "?";
    /* getopt_long sets optopt to 0 for an unknown long option and to the
     * option's val for a known one used wrongly */
    int is_long = strncmp(arg, "--", 2) == 0 && arg[2] != '\0' && optopt == 0;
    for (const struct option *o = longopts; o && o->name && !is_long; o++)
        is_long = strncmp(arg, "--", 2) == 0 && optopt != 0 && o->val == optopt;
    if (!is_long && optopt != 0) {
        /* short option: optopt is the letter; a ':' after it in optstring
         * means it was known but lacked its value */
        const char *p = strchr(optstring, optopt);
        if (p && p[1] == ':')
            gs_cli_error("%s: option '-%c' needs a value", cmd, optopt);
        else
            gs_cli_error("%s: unknown option '-%c'", cmd, optopt);
    } else if (is_long) {
        const char *name = arg + 2;
        size_t len = strcspn(name, "=");
        const struct option *match = NULL;
        int nmatch = 0;
        for (const struct option *o = longopts; o && o->name; o++) {
            if (strncmp(o->name, name, len) != 0)
                continue;
            if (strlen(o->name) == len) { /* exact */
                match = o;
                nmatch = 1;
                break;
            }
            match = o;
            nmatch++;
        }
        if (nmatch > 1)
            gs_cli_error("%s: option '--%.*s' is ambiguous", cmd, (int)len, name);
        else if (match && match->has_arg == required_argument && name[len] == '\0')
            gs_cli_error("%s: option '--%s' needs a value", cmd, match->name);
        else if (match && match->has_arg == no_argument && name[len] == '=')
            gs_cli_error("%s: option '--%s' takes no value", cmd, match->name);
        else
            gs_cli_error("%s: unknown option '--%.*s'", cmd, (int)len, name);
    } else {
        gs_cli_error("%s: unknown option '%s'", cmd, arg);
    }
    fprintf(stderr, "Try 'gpustarve help %s'.\n", cmd);
    return GS_EXIT_USAGE;
}

int gs_cli_usage_error(const char *cmd, const char *fmt, ...)
{
    char text[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    gs_cli_error("%s: %s", cmd, text);
    fprintf(stderr, "Try 'gpustarve help %s'.\n", cmd);
    return GS_EXIT_USAGE;
}

int gs_cli_finish(int rc)
{
    /* RATIONALE: a full disk or closed pipe shows up only here; a tool whose
     * output is silently cut must not exit 0. */
    if (fflush(stdout) != 0 || ferror(stdout)) {
        int e = errno;
        if (rc == GS_EXIT_OK) {
            gs_cli_error("error writing standard output: %s", strerror(e ? e : EIO));
            rc = GS_EXIT_FAIL;
        }
    }
    return rc;
}

int gs_cli_long(const char *text, long lo, long hi, long *out)
{
    char *end;
    errno = 0;
    const long v = strtol(text, &end, 10);
    if (end == text || *end || errno || v < lo || v > hi)
        return -1;
    *out = v;
    return 0;
}

int gs_cli_size(const char *s, uint64_t *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || v < 0)
        return -1;
    double m = 1;
    switch (*end) {
    case 'k': case 'K': m = 1024; end++; break;
    case 'm': case 'M': m = 1024.0 * 1024; end++; break;
    case 'g': case 'G': m = 1024.0 * 1024 * 1024; end++; break;
    case 't': case 'T': m = 1024.0 * 1024 * 1024 * 1024; end++; break;
    }
    if (*end == 'i' || *end == 'B')
        end += *end == 'i' && end[1] == 'B' ? 2 : 1;
    if (*end || v * m > 1e18)
        return -1;
    *out = (uint64_t)(v * m);
    return 0;
}

int gs_cli_double(const char *text, double lo, double hi, double *out)
{
    char *end;
    errno = 0;
    const double v = strtod(text, &end);
    if (end == text || *end || errno || !(v >= lo) || !(v <= hi))
        return -1;
    *out = v;
    return 0;
}
