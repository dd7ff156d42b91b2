/* report_style.h — the terminal style every text writer takes: colours on a terminal,
 * none otherwise (the caller decides).
 *
 * Must never: hold anything but the escape strings.
 */
#ifndef REPORT_STYLE_H
#define REPORT_STYLE_H


/* Terminal colours; all "" when the output is not a terminal. */
typedef struct style {
    const char *bold, *red, *yellow, *green, *dim, *off;
} style;

#endif
