/* out_buf.h — the analyzer's output primitives: a fast buffered writer in
 * front of a FILE, number formatting, the one-line text escaper and the
 * UTF-8 checker. Shared by the commands and the model files that write
 * (an_callsites.c); the JSON writer (out_json.h) sits on top.
 *
 * Must never: allocate per call on the output path (these run once per
 * printed event), or print diagnostics.
 */
#ifndef OUT_BUF_H
#define OUT_BUF_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

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

/* Write s for a one-line human-readable field: printable UTF-8 as is;
 * backslash, control characters and invalid bytes as C escapes (\n, \x01).
 * Never writes a newline. */
void gs_text_str(gs_out *o, const char *s, size_t n);

/* Write n bytes of s as HTML text: & < and > as entities; " and ' as
 * entities, and a control character as a space, unless it is in keep (the
 * characters the place it goes takes as they are: "" for an attribute,
 * "\t" for text, "\n\"'" inside a <pre>). */
void gs_html_str(gs_out *o, const char *s, size_t n, const char *keep);

/* Length of the well-formed UTF-8 sequence at s (n bytes available), or 0
 * when the bytes there are ill-formed; *bad gets the length of the maximal
 * ill-formed subpart (>= 1) in that case. Exposed for tests. */
size_t gs_utf8_seq(const unsigned char *s, size_t n, size_t *bad);

#endif
