/* out_json.c — the JSON writer (out_json.h): string escaping and structure.
 *
 * Must never: allocate, or leave a byte that is not valid JSON in a string.
 */
#include "base/out_json.h"

#include <assert.h>
#include <math.h>

/* Bytes copied as they are: bit 0 in plain JSON, bit 1 in html_safe JSON
 * (printable ASCII but '"' and '\\'; html_safe also not < > &). */
static uint8_t k_plain[256];

static void init_plain(void)
{
    for (unsigned c = 0x20; c < 0x7F; c++)
        k_plain[c] = c == '"' || c == '\\' ? 0 : c == '<' || c == '>' || c == '&' ? 1 : 3;
}

/* One escaper for both modes; html: also < > & as \u00XX. */
static void json_str(gs_out *o, const char *str, size_t n, int html)
{
    static const char hexd[] = "0123456789abcdef";
    const unsigned char *s = (const unsigned char *)str;
    const uint8_t mask = html ? 2 : 1;
    if (!k_plain['a'])
        init_plain(); /* idempotent: racing threads write the same bytes */
    gs_out_char(o, '"');
    size_t i = 0;
    while (i < n) {
        /* copy the longest run that needs no escaping in one go */
        size_t j = i;
        while (j < n && (k_plain[s[j]] & mask))
            j++;
        if (j > i) {
            gs_out_mem(o, s + i, j - i);
            i = j;
            continue;
        }
        unsigned char c = s[i];
        gs_out_reserve(o, 8);
        char *p = o->buf + o->len;
        if (c == '"' || c == '\\') {
            p[0] = '\\';
            p[1] = (char)c;
            o->len += 2;
            i++;
        } else if (c < 0x20 || c == 0x7F || c == '<' || c == '>' || c == '&') {
            const char *short_esc = NULL;
            switch (c) {
            case '\n': short_esc = "\\n"; break;
            case '\t': short_esc = "\\t"; break;
            case '\r': short_esc = "\\r"; break;
            case '\b': short_esc = "\\b"; break;
            case '\f': short_esc = "\\f"; break;
            }
            if (short_esc) {
                memcpy(p, short_esc, 2);
                o->len += 2;
            } else {
                memcpy(p, "\\u00", 4);
                p[4] = hexd[c >> 4];
                p[5] = hexd[c & 15];
                o->len += 6;
            }
            i++;
        } else {
            size_t bad = 0;
            size_t len = gs_utf8_seq(s + i, n - i, &bad);
            if (len) {
                memcpy(p, s + i, len);
                o->len += len;
                i += len;
            } else {
                memcpy(p, "\xEF\xBF\xBD", 3); /* U+FFFD */
                o->len += 3;
                i += bad;
            }
        }
    }
    gs_out_char(o, '"');
}

/* ---- structure ------------------------------------------------------------- */

void gs_jw_init(gs_jw *w, gs_out *o)
{
    memset(w, 0, sizeof *w);
    w->o = o;
}

static void open_c(gs_jw *w, char c, int array)
{
    gs_jw_sep(w);
    assert(w->depth < GS_JW_MAX_DEPTH);
    gs_out_char(w->o, c);
    w->depth++;
    const uint64_t bit = 1ull << w->depth;
    w->has_value &= ~bit;
    if (array)
        w->is_array |= bit;
    else
        w->is_array &= ~bit;
}

void gs_jw_obj(gs_jw *w)
{
    open_c(w, '{', 0);
}

void gs_jw_arr(gs_jw *w)
{
    open_c(w, '[', 1);
}

void gs_jw_end(gs_jw *w)
{
    assert(w->depth > 0 && !w->after_key);
    const uint64_t bit = 1ull << w->depth;
    gs_out_char(w->o, (w->is_array & bit) ? ']' : '}');
    w->depth--;
    w->sep_done = 0;
}

void gs_jw_key(gs_jw *w, const char *key)
{
    assert(w->depth > 0 && !(w->is_array & (1ull << w->depth)) && !w->after_key);
    gs_jw_sep(w);
    json_str(w->o, key, strlen(key), w->html_safe);
    gs_out_char(w->o, ':');
    w->after_key = 1;
}

void gs_jw_newline(gs_jw *w, const char *ws)
{
    assert(strspn(ws, " \t\r\n") == strlen(ws));
    if (w->after_key)
        return;
    if (w->depth && (w->has_value & (1ull << w->depth)) && !w->sep_done) {
        gs_out_char(w->o, ',');
        w->sep_done = 1;
    }
    gs_out_str(w->o, ws);
}

/* ---- values ------------------------------------------------------------------ */

void gs_jw_strn(gs_jw *w, const char *s, size_t n)
{
    gs_jw_sep(w);
    json_str(w->o, s, n, w->html_safe);
}

void gs_jw_str(gs_jw *w, const char *s)
{
    gs_jw_sep(w);
    if (s)
        json_str(w->o, s, strlen(s), w->html_safe);
    else
        gs_out_mem(w->o, "null", 4);
}

void gs_jw_bool(gs_jw *w, int v)
{
    gs_jw_sep(w);
    if (v)
        gs_out_mem(w->o, "true", 4);
    else
        gs_out_mem(w->o, "false", 5);
}

void gs_jw_null(gs_jw *w)
{
    gs_jw_sep(w);
    gs_out_mem(w->o, "null", 4);
}

void gs_jw_num(gs_jw *w, double v, int digits)
{
    gs_jw_sep(w);
    if (!isfinite(v))
        gs_out_mem(w->o, "null", 4);
    else
        gs_out_printf(w->o, "%.*g", digits, v);
}

void gs_jw_fixed(gs_jw *w, double v, int decimals)
{
    gs_jw_sep(w);
    if (!isfinite(v))
        gs_out_mem(w->o, "null", 4);
    else
        gs_out_printf(w->o, "%.*f", decimals, v);
}

void gs_jw_scaled(gs_jw *w, int64_t v, int decimals)
{
    gs_jw_sep(w);
    gs_out_fixed(w->o, v, decimals);
}

/* ---- key and value --------------------------------------------------------------- */

void gs_jw_kstr(gs_jw *w, const char *key, const char *s)
{
    gs_jw_key(w, key);
    gs_jw_str(w, s);
}

void gs_jw_ku64(gs_jw *w, const char *key, uint64_t v)
{
    gs_jw_key(w, key);
    gs_jw_u64(w, v);
}

void gs_jw_ki64(gs_jw *w, const char *key, int64_t v)
{
    gs_jw_key(w, key);
    gs_jw_i64(w, v);
}

void gs_jw_kbool(gs_jw *w, const char *key, int v)
{
    gs_jw_key(w, key);
    gs_jw_bool(w, v);
}

void gs_jw_knull(gs_jw *w, const char *key)
{
    gs_jw_key(w, key);
    gs_jw_null(w);
}

void gs_jw_knum(gs_jw *w, const char *key, double v, int digits)
{
    gs_jw_key(w, key);
    gs_jw_num(w, v, digits);
}

void gs_jw_kfixed(gs_jw *w, const char *key, double v, int decimals)
{
    gs_jw_key(w, key);
    gs_jw_fixed(w, v, decimals);
}
