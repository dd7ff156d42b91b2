/* out_buf.c — the buffered writer, number formatting, the text escaper and
 * the UTF-8 checker (out_buf.h).
 *
 * Must never: allocate per call (gs_out_printf of a line longer than 1 KiB
 * is the one exception), or write anywhere but the gs_out's FILE.
 */
#include "base/out_buf.h"

#include <stdarg.h>
#include <stdlib.h>

/* ---- buffered output ------------------------------------------------------ */

void gs_out_init(gs_out *o, FILE *f)
{
    o->f = f;
    o->len = 0;
}

void gs_out_flush(gs_out *o)
{
    if (o->len)
        fwrite(o->buf, 1, o->len, o->f);
    o->len = 0;
}

size_t gs_fmt_u64(char *buf, uint64_t v)
{
    char tmp[24];
    size_t n = 0;
    do {
        tmp[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    for (size_t i = 0; i < n; i++)
        buf[i] = tmp[n - 1 - i];
    buf[n] = '\0';
    return n;
}

size_t gs_fmt_i64(char *buf, int64_t v)
{
    if (v < 0) {
        buf[0] = '-';
        return 1 + gs_fmt_u64(buf + 1, (uint64_t)0 - (uint64_t)v);
    }
    return gs_fmt_u64(buf, (uint64_t)v);
}

size_t gs_fmt_fixed(char *buf, int64_t v, int decimals)
{
    if (decimals <= 0)
        return gs_fmt_i64(buf, v);
    uint64_t scale = 1;
    for (int i = 0; i < decimals; i++)
        scale *= 10;
    size_t n = 0;
    uint64_t mag = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
    if (v < 0)
        buf[n++] = '-';
    n += gs_fmt_u64(buf + n, mag / scale);
    buf[n++] = '.';
    uint64_t frac = mag % scale;
    for (int i = decimals - 1; i >= 0; i--) {
        buf[n + (size_t)i] = (char)('0' + frac % 10);
        frac /= 10;
    }
    n += (size_t)decimals;
    buf[n] = '\0';
    return n;
}

void gs_out_u64(gs_out *o, uint64_t v)
{
    gs_out_reserve(o, 24);
    o->len += gs_fmt_u64(o->buf + o->len, v);
}

void gs_out_i64(gs_out *o, int64_t v)
{
    gs_out_reserve(o, 24);
    o->len += gs_fmt_i64(o->buf + o->len, v);
}

void gs_out_hex(gs_out *o, uint64_t v)
{
    static const char digits[] = "0123456789abcdef";
    char tmp[20];
    size_t n = 0;
    do {
        tmp[n++] = digits[v & 15];
        v >>= 4;
    } while (v);
    gs_out_reserve(o, 20);
    o->buf[o->len++] = '0';
    o->buf[o->len++] = 'x';
    while (n)
        o->buf[o->len++] = tmp[--n];
}

void gs_out_fixed(gs_out *o, int64_t v, int decimals)
{
    gs_out_reserve(o, 48);
    o->len += gs_fmt_fixed(o->buf + o->len, v, decimals);
}

void gs_out_pad(gs_out *o, const char *s, size_t n, int width)
{
    size_t w = (size_t)(width < 0 ? -width : width);
    size_t pad = n < w ? w - n : 0;
    gs_out_reserve(o, pad);
    if (width > 0) {
        memset(o->buf + o->len, ' ', pad);
        o->len += pad;
    }
    gs_out_mem(o, s, n);
    if (width < 0) {
        gs_out_reserve(o, pad);
        memset(o->buf + o->len, ' ', pad);
        o->len += pad;
    }
}

void gs_out_printf(gs_out *o, const char *fmt, ...)
{
    char tmp[1024];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    if ((size_t)n < sizeof tmp) {
        gs_out_mem(o, tmp, (size_t)n);
        return;
    }
    char *big = malloc((size_t)n + 1);
    if (!big)
        return;
    va_start(ap, fmt);
    vsnprintf(big, (size_t)n + 1, fmt, ap);
    va_end(ap);
    gs_out_mem(o, big, (size_t)n);
    free(big);
}

/* ---- escapers ------------------------------------------------------------- */

size_t gs_utf8_seq(const unsigned char *s, size_t n, size_t *bad)
{
    unsigned char c = s[0];
    size_t need;
    unsigned char lo = 0x80, hi = 0xBF; /* allowed range of the 2nd byte */
    if (c < 0x80)
        return 1;
    if (c >= 0xC2 && c <= 0xDF) {
        need = 2;
    } else if (c >= 0xE0 && c <= 0xEF) {
        need = 3;
        if (c == 0xE0)
            lo = 0xA0; /* overlong */
        else if (c == 0xED)
            hi = 0x9F; /* surrogates */
    } else if (c >= 0xF0 && c <= 0xF4) {
        need = 4;
        if (c == 0xF0)
            lo = 0x90; /* overlong */
        else if (c == 0xF4)
            hi = 0x8F; /* above U+10FFFF */
    } else {
        *bad = 1; /* stray continuation byte, C0, C1, F5..FF */
        return 0;
    }
    size_t i = 1;
    for (; i < need; i++) {
        if (i >= n)
            break;
        unsigned char b = s[i];
        unsigned char l = i == 1 ? lo : 0x80, h = i == 1 ? hi : 0xBF;
        if (b < l || b > h)
            break;
    }
    if (i == need)
        return need;
    *bad = i; /* the lead byte plus the continuation bytes that fit */
    return 0;
}

void gs_text_str(gs_out *o, const char *str, size_t n)
{
    static const char hexd[] = "0123456789abcdef";
    const unsigned char *s = (const unsigned char *)str;
    size_t i = 0;
    while (i < n) {
        size_t j = i;
        while (j < n && s[j] >= 0x20 && s[j] < 0x7F && s[j] != '\\')
            j++;
        if (j > i) {
            gs_out_mem(o, s + i, j - i);
            i = j;
            continue;
        }
        unsigned char c = s[i];
        gs_out_reserve(o, 8);
        char *p = o->buf + o->len;
        size_t bad = 0, len = 0;
        if (c == '\\') {
            memcpy(p, "\\\\", 2);
            o->len += 2;
            i++;
        } else if (c == '\n' || c == '\t' || c == '\r') {
            p[0] = '\\';
            p[1] = c == '\n' ? 'n' : c == '\t' ? 't' : 'r';
            o->len += 2;
            i++;
        } else if (c >= 0x80 && (len = gs_utf8_seq(s + i, n - i, &bad)) != 0) {
            memcpy(p, s + i, len);
            o->len += len;
            i += len;
        } else {
            p[0] = '\\';
            p[1] = 'x';
            p[2] = hexd[c >> 4];
            p[3] = hexd[c & 15];
            o->len += 4;
            i++;
        }
    }
}

void gs_html_str(gs_out *o, const char *s, size_t n, const char *keep)
{
    for (size_t i = 0; i < n; i++) {
        const char c = s[i];
        switch (c) {
        case '&': gs_out_str(o, "&amp;"); break;
        case '<': gs_out_str(o, "&lt;"); break;
        case '>': gs_out_str(o, "&gt;"); break;
        default: {
            const int kept = c && strchr(keep, c);
            if (c == '"' && !kept)
                gs_out_str(o, "&quot;");
            else if (c == '\'' && !kept)
                gs_out_str(o, "&#39;");
            else
                gs_out_char(o, (unsigned char)c < 0x20 && !kept ? ' ' : c);
        }
        }
    }
}
