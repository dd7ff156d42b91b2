/* cli_util.h — what every gpustarve subcommand shares: the command table
 * entry, exit codes, diagnostics on stderr with -q/-v levels, option-error
 * reporting, a fast buffered stdout writer, and the JSON / text string
 * escapers.
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

#define GS_CLI_VERSION "0.1.0"

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

/* -q lowers, -v raises; 0 = quiet, 1 = normal (default), 2+ = verbose. */
extern int gs_verbosity;

/* "gpustarve: <message>\n" on stderr, always (errors). */
void gs_cli_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Same, only when gs_verbosity >= level. */
void gs_cli_msg(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

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

/* Flush stdout and check ferror(stdout). Returns rc, or GS_EXIT_FAIL (with a
 * message) when writing stdout failed and rc was 0. Call before exit. */
int gs_cli_finish(int rc);

/* ---- buffered output ---------------------------------------------------- */

/* A byte buffer in front of a FILE: appends are plain memcpy, and the buffer
 * goes to the FILE with one fwrite when it fills. No allocation per line. */
#define GS_OUT_CAP (1u << 16)
typedef struct gs_out {
    FILE *f;
    size_t len;
    char buf[GS_OUT_CAP];
} gs_out;

void gs_out_init(gs_out *o, FILE *f);
/* Write out what is buffered (fwrite; errors surface in ferror(o->f)). */
void gs_out_flush(gs_out *o);

static inline void gs_out_reserve(gs_out *o, size_t n)
{
    if (o->len + n > GS_OUT_CAP)
        gs_out_flush(o);
}
static inline void gs_out_mem(gs_out *o, const void *p, size_t n)
{
    if (n > GS_OUT_CAP / 2) {
        gs_out_flush(o);
        fwrite(p, 1, n, o->f);
        return;
    }
    gs_out_reserve(o, n);
    memcpy(o->buf + o->len, p, n);
    o->len += n;
}
static inline void gs_out_str(gs_out *o, const char *s) { gs_out_mem(o, s, strlen(s)); }
static inline void gs_out_char(gs_out *o, char c)
{
    gs_out_reserve(o, 1);
    o->buf[o->len++] = c;
}
void gs_out_u64(gs_out *o, uint64_t v);
void gs_out_i64(gs_out *o, int64_t v);
void gs_out_hex(gs_out *o, uint64_t v); /* "0x1f" */
/* v/10^decimals with exactly `decimals` digits after the point ("12.345"). */
void gs_out_fixed(gs_out *o, int64_t v, int decimals);
/* Pad s (n bytes) with spaces to width: right-aligned when width > 0,
 * left-aligned when width < 0. */
void gs_out_pad(gs_out *o, const char *s, size_t n, int width);
/* printf into the buffer (slow path: headers, summaries). */
void gs_out_printf(gs_out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Format helpers into a caller buffer (>= 24 bytes); return the length. */
size_t gs_fmt_u64(char *buf, uint64_t v);
size_t gs_fmt_i64(char *buf, int64_t v);
size_t gs_fmt_fixed(char *buf, int64_t v, int decimals);

/* ---- escapers ------------------------------------------------------------ */

/* Write s (n bytes, any bytes) as a JSON string with its quotes. Control
 * characters become \n, \t, ... or \u00XX; invalid UTF-8 becomes U+FFFD,
 * one per maximal ill-formed subpart (the Unicode recommendation, which is
 * also what Python's bytes.decode("utf-8", "replace") does). */
void gs_json_str(gs_out *o, const char *s, size_t n);
/* JSON string or null when s is NULL. */
void gs_json_cstr(gs_out *o, const char *s);

/* Write s for a one-line human-readable field: printable UTF-8 as is;
 * backslash, control characters and invalid bytes as C escapes (\n, \x01).
 * Never writes a newline. */
void gs_text_str(gs_out *o, const char *s, size_t n);

/* Length of the well-formed UTF-8 sequence at s (n bytes available), or 0
 * when the bytes there are ill-formed; *bad gets the length of the maximal
 * ill-formed subpart (>= 1) in that case. Exposed for tests. */
size_t gs_utf8_seq(const unsigned char *s, size_t n, size_t *bad);

#endif
