/* out_json.h — the one JSON writer of the analyzer: every JSON the commands
 * print (report --json, compare --json, sweep --json, dump --json, probe
 * --json, the Perfetto trace, the HTML page's data) goes through it.
 *
 * Strings: any bytes in, valid JSON out (docs/report-outputs.md, "JSON
 * strings"): '"' and '\' escaped; \n \t \r \b \f as such, every other
 * control character and DEL as \u00XX; valid UTF-8 as it is; each maximal
 * ill-formed UTF-8 subpart (a stray byte >= 0x80, a truncated or overlong
 * sequence, a surrogate) replaced by U+FFFD — what Python's
 * bytes.decode("utf-8", "replace") gives. With html_safe set, '<', '>' and
 * '&' are written \u003c, \u003e, \u0026 as well, so the text can sit inside
 * an HTML <script> element.
 *
 * Structure: gs_jw tracks nesting and writes the commas; a key is followed
 * by exactly one value (a scalar, or an object or array closed by
 * gs_jw_end). Several values at depth 0 are separate documents (JSON Lines:
 * the caller writes the newline), never comma-separated. No whitespace is
 * written except through gs_jw_newline.
 *
 * Must never: allocate, or write a number that is not JSON (NaN and the
 * infinities become null).
 */
#ifndef OUT_JSON_H
#define OUT_JSON_H

#include <stddef.h>
#include <stdint.h>

#include "base/out_buf.h"

#define GS_JW_MAX_DEPTH 63

typedef struct gs_jw {
    gs_out *o;
    unsigned depth;
    uint64_t has_value; /* bit d: a value was written at depth d (a comma is due) */
    uint64_t is_array;  /* bit d: the container at depth d is an array */
    int after_key;      /* the next value belongs to the key just written */
    int sep_done;       /* gs_jw_newline wrote the next value's comma already */
    int html_safe;      /* also escape < > & in strings */
} gs_jw;

void gs_jw_init(gs_jw *w, gs_out *o);

/* Containers. gs_jw_end closes the innermost one. */
void gs_jw_obj(gs_jw *w);
void gs_jw_arr(gs_jw *w);
void gs_jw_end(gs_jw *w);

/* An object member's key (an object must be innermost). */
void gs_jw_key(gs_jw *w, const char *key);
/* The same for a key that is a string literal needing no escape (letters,
 * digits, '_'): written with one copy, for the per-event paths (dump,
 * Perfetto). Only a literal compiles here. */
#define GS_JW_KEY_LIT(w, lit) gs_jw_key_raw((w), "\"" lit "\":", sizeof(lit) + 2)
static inline void gs_jw_key_raw(gs_jw *w, const char *quoted_colon, size_t n);
/* A string value that is a literal needing no escape, with one copy. */
#define GS_JW_STR_LIT(w, lit) gs_jw_raw((w), "\"" lit "\"", sizeof(lit) + 1)
static inline void gs_jw_raw(gs_jw *w, const char *json, size_t n);

/* Values. */
void gs_jw_str(gs_jw *w, const char *s); /* null when s is NULL */
void gs_jw_strn(gs_jw *w, const char *s, size_t n);
static inline void gs_jw_u64(gs_jw *w, uint64_t v);
static inline void gs_jw_i64(gs_jw *w, int64_t v);
void gs_jw_bool(gs_jw *w, int v);
void gs_jw_null(gs_jw *w);
/* A number with printf's %.<digits>g (report: 9 digits); null when not finite. */
void gs_jw_num(gs_jw *w, double v, int digits);
/* A number with printf's %.<decimals>f; null when not finite. */
void gs_jw_fixed(gs_jw *w, double v, int decimals);
/* v / 10^decimals with exactly that many decimals, from an integer. */
void gs_jw_scaled(gs_jw *w, int64_t v, int decimals);

/* Write the comma the next value needs now (if any), then ws (whitespace
 * only: "\n", "\n  "); the next value writes no comma of its own. For JSON
 * meant to be read by people and line-oriented tools (a Perfetto event a
 * line, a report section a line). */
void gs_jw_newline(gs_jw *w, const char *ws);

/* Key (a literal needing no escape, as GS_JW_KEY_LIT) and value. */
#define GS_JW_KU64(w, lit, v) (GS_JW_KEY_LIT(w, lit), gs_jw_u64((w), (v)))
#define GS_JW_KI64(w, lit, v) (GS_JW_KEY_LIT(w, lit), gs_jw_i64((w), (v)))
#define GS_JW_KSTR(w, lit, s) (GS_JW_KEY_LIT(w, lit), gs_jw_str((w), (s)))
#define GS_JW_KBOOL(w, lit, v) (GS_JW_KEY_LIT(w, lit), gs_jw_bool((w), (v)))

/* Key and value in one call. */
void gs_jw_kstr(gs_jw *w, const char *key, const char *s);
void gs_jw_ku64(gs_jw *w, const char *key, uint64_t v);
void gs_jw_ki64(gs_jw *w, const char *key, int64_t v);
void gs_jw_kbool(gs_jw *w, const char *key, int v);
void gs_jw_knull(gs_jw *w, const char *key);
void gs_jw_knum(gs_jw *w, const char *key, double v, int digits);
void gs_jw_kfixed(gs_jw *w, const char *key, double v, int decimals);

/* ---- the per-value paths, inline (they run a dozen times per dumped event) ---- */

/* Before every value and key: the comma, unless it is the first in its
 * container, a value after its key, or already written by gs_jw_newline. */
static inline void gs_jw_sep(gs_jw *w)
{
    if (w->after_key) {
        w->after_key = 0;
        return;
    }
    const uint64_t bit = 1ull << w->depth;
    if (w->sep_done)
        w->sep_done = 0;
    else if (w->depth && (w->has_value & bit))
        gs_out_char(w->o, ',');
    w->has_value |= bit;
}

static inline void gs_jw_key_raw(gs_jw *w, const char *quoted_colon, size_t n)
{
    gs_jw_sep(w);
    gs_out_mem(w->o, quoted_colon, n);
    w->after_key = 1;
}

/* A value already in JSON form (a quoted literal). */
static inline void gs_jw_raw(gs_jw *w, const char *json, size_t n)
{
    gs_jw_sep(w);
    gs_out_mem(w->o, json, n);
}

static inline void gs_jw_u64(gs_jw *w, uint64_t v)
{
    gs_jw_sep(w);
    gs_out_u64(w->o, v);
}

static inline void gs_jw_i64(gs_jw *w, int64_t v)
{
    gs_jw_sep(w);
    gs_out_i64(w->o, v);
}

#endif
