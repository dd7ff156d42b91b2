/* gs_diag.h — diagnostics of the gpustarve command on stderr, one line each,
 * "gpustarve: <message>", at the -q/-v level the command was given: what the
 * commands and the writers of report/ say about their work (a file that
 * could not be written, a second pass that failed).
 *
 * Must never: write to stdout (results only go there), or print from the
 * analysis layers (load/, model/, decide/ return errors; their callers say
 * them).
 */
#ifndef GS_DIAG_H
#define GS_DIAG_H

/* -q lowers, -v raises; 0 = quiet, 1 = normal (default), 2+ = verbose. */
extern int gs_verbosity;

/* "gpustarve: <message>\n" on stderr, always (errors). */
void gs_cli_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Same, only when gs_verbosity >= level. */
void gs_cli_msg(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
