/* cli_util.h — what every gpustarve subcommand shares: the command table
 * entry, exit codes, option-error reporting, option numbers, the final
 * stdout check (diagnostics with -q/-v levels are base/gs_diag.h; the
 * buffered writer and the escapers base/out_buf.h and base/out_json.h, all
 * included here).
 *
 * Must never: print diagnostics to stdout, or exit from a helper other than
 * the ones named *_or_die (the CLI's own convention; library code never exits).
 */
#ifndef GS_CLI_UTIL_H
#define GS_CLI_UTIL_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "base/gs_diag.h"
#include "base/gs_version.h"
#include "base/out_buf.h"
#include "base/out_json.h"

/* Exit codes of every subcommand. */
enum {
    GS_EXIT_OK = 0,
    GS_EXIT_FAIL = 1,  /* the work could not be done (I/O error, ...) */
    GS_EXIT_USAGE = 2, /* bad usage or bad input (damaged trace, ...) */
};

/* One subcommand. fn gets argv[0] == name; "--help" among its options prints
 * usage to stdout and returns 0. */
typedef struct gs_cmd {
    const char *name;
    int (*fn)(int argc, char **argv);
    const char *summary; /* one line, lower case, no full stop */
} gs_cmd;

int gs_cmd_run(int argc, char **argv);
int gs_cmd_dump(int argc, char **argv);
int gs_cmd_report(int argc, char **argv);
int gs_cmd_compare(int argc, char **argv);
int gs_cmd_probe(int argc, char **argv);
int gs_cmd_sweep(int argc, char **argv);
int gs_cmd_import(int argc, char **argv);
int gs_cmd_check(int argc, char **argv);

/* Report a getopt failure for subcommand cmd ("unknown option '--x'",
 * "option '-o' needs a value") plus a "Try 'gpustarve help CMD'" line.
 * Returns GS_EXIT_USAGE. argv/optind as getopt_long left them. */
struct option;
int gs_cli_bad_option(const char *cmd, int argc, char **argv, const char *optstring,
                      const struct option *longopts);
/* Report another usage error for cmd; returns GS_EXIT_USAGE. */
int gs_cli_usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Parse a whole decimal option value in [lo, hi] into *out: 0, or -1 when it
 * is not one (the caller says what it wanted). */
int gs_cli_long(const char *text, long lo, long hi, long *out);
/* The same for a decimal number in [lo, hi]. */
int gs_cli_double(const char *text, double lo, double hi, double *out);
/* A size with an optional suffix K, M, G, T (powers of 1024; "KiB", "MB"
 * taken as the same): 0 with *out, or -1 when it is not one. */
int gs_cli_size(const char *text, uint64_t *out);

/* Flush stdout and check ferror(stdout). Returns rc, or GS_EXIT_FAIL (with a
 * message) when writing stdout failed and rc was 0. Call before exit. */
int gs_cli_finish(int rc);

#endif
