/* test_out_json.c — the analyzer's one JSON writer (analyzer/base/out_json.h):
 * every single byte escaped as docs/report-outputs.md ("JSON strings")
 * says, ill-formed UTF-8 sequences replaced one U+FFFD per maximal subpart,
 * html_safe, and the structure (commas, keys, nesting, documents at depth 0,
 * newlines, null for non-finite numbers); and the HTML text escaper beside
 * it (analyzer/base/out_buf.h, gs_html_str) in each of its three places. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "gs_check.h"
#include "base/out_json.h"

/* Run fn on a writer over a memory stream; the text into buf. */
static char buf[1 << 16];
static gs_out out;

static const char *capture(void (*fn)(gs_jw *), int html)
{
    FILE *f = fmemopen(buf, sizeof buf - 1, "w");
    if (!f)
        abort();
    gs_out_init(&out, f);
    gs_jw w;
    gs_jw_init(&w, &out);
    w.html_safe = html;
    fn(&w);
    gs_out_flush(&out);
    long n = ftell(f);
    fclose(f);
    buf[n] = '\0';
    return buf;
}

static const char *g_s;
static size_t g_n;
static void one_string(gs_jw *w)
{
    gs_jw_strn(w, g_s, g_n);
}

static const char *str_json(const char *s, size_t n, int html)
{
    g_s = s;
    g_n = n;
    return capture(one_string, html);
}

static void test_every_byte(void)
{
    char want[16];
    for (unsigned b = 0; b < 256; b++) {
        const char c = (char)b;
        if (b == '"')
            strcpy(want, "\"\\\"\"");
        else if (b == '\\')
            strcpy(want, "\"\\\\\"");
        else if (b == '\n')
            strcpy(want, "\"\\n\"");
        else if (b == '\t')
            strcpy(want, "\"\\t\"");
        else if (b == '\r')
            strcpy(want, "\"\\r\"");
        else if (b == '\b')
            strcpy(want, "\"\\b\"");
        else if (b == '\f')
            strcpy(want, "\"\\f\"");
        else if (b < 0x20 || b == 0x7f)
            snprintf(want, sizeof want, "\"\\u00%02x\"", b);
        else if (b >= 0x80)
            strcpy(want, "\"\xEF\xBF\xBD\""); /* a lone byte >= 0x80 is ill-formed */
        else
            snprintf(want, sizeof want, "\"%c\"", c);
        const char *got = str_json(&c, 1, 0);
        if (strcmp(got, want) != 0)
            fprintf(stderr, "byte 0x%02x: got %s want %s\n", b, got, want);
        ASSERT_TRUE(strcmp(got, want) == 0);
    }
}

static void test_utf8(void)
{
    static const struct {
        const char *in;
        size_t n;
        const char *want;
    } rows[] = {
        {"\xc3\xa9", 2, "\"\xc3\xa9\""},                      /* é */
        {"\xe2\x82\xac", 3, "\"\xe2\x82\xac\""},              /* € */
        {"\xf0\x9f\x98\x80", 4, "\"\xf0\x9f\x98\x80\""},      /* U+1F600 */
        {"\xe2\x82", 2, "\"\xEF\xBF\xBD\""},                  /* truncated: one subpart */
        {"\xe2\x82x", 3, "\"\xEF\xBF\xBDx\""},
        {"\xc0\xaf", 2, "\"\xEF\xBF\xBD\xEF\xBF\xBD\""},      /* overlong: two */
        {"\xed\xa0\x80", 3, "\"\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\""}, /* surrogate */
        {"\xf4\x90\x80\x80", 4, "\"\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\""},
        {"a\0b", 3, "\"a\\u0000b\""},                         /* NUL inside */
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
        ASSERT_TRUE(strcmp(str_json(rows[i].in, rows[i].n, 0), rows[i].want) == 0);
    /* html_safe: < > & escaped too, nothing else changes */
    ASSERT_TRUE(strcmp(str_json("</script>&", 10, 1), "\"\\u003c/script\\u003e\\u0026\"") == 0);
    ASSERT_TRUE(strcmp(str_json("</script>&", 10, 0), "\"</script>&\"") == 0);
}

static void structure(gs_jw *w)
{
    gs_jw_obj(w);
    gs_jw_kstr(w, "a", "x");
    gs_jw_key(w, "b");
    gs_jw_arr(w);
    gs_jw_u64(w, 1);
    gs_jw_i64(w, -2);
    gs_jw_newline(w, "\n ");
    gs_jw_obj(w);
    gs_jw_end(w);
    gs_jw_arr(w);
    gs_jw_end(w);
    gs_jw_null(w);
    gs_jw_end(w);
    gs_jw_newline(w, "\n");
    gs_jw_kbool(w, "t", 1);
    gs_jw_knum(w, "n", 0.1, 9);
    gs_jw_knum(w, "nan", NAN, 9);
    gs_jw_kfixed(w, "inf", INFINITY, 3);
    gs_jw_kfixed(w, "f", 2.5, 3);
    gs_jw_key(w, "s");
    gs_jw_scaled(w, -12345, 3);
    gs_jw_kstr(w, "null", NULL);
    gs_jw_end(w);
    /* a second document at depth 0: no comma */
    gs_jw_obj(w);
    gs_jw_end(w);
}

static void test_structure(void)
{
    const char *want = "{\"a\":\"x\",\"b\":[1,-2,\n {},[],null],\n\"t\":true,\"n\":0.1,"
                       "\"nan\":null,\"inf\":null,\"f\":2.500,\"s\":-12.345,\"null\":null}{}";
    const char *got = capture(structure, 0);
    if (strcmp(got, want) != 0)
        fprintf(stderr, "got  %s\nwant %s\n", got, want);
    ASSERT_TRUE(strcmp(got, want) == 0);
}

static const char *g_keep;
static void one_html(gs_jw *w)
{
    gs_html_str(w->o, g_s, g_n, g_keep);
}

static void test_html(void)
{
    static const char in[] = "a&b<c>d\"e'f\tg\nh\x01i";
    static const struct { const char *keep, *want; } t[] = {
        {"", "a&amp;b&lt;c&gt;d&quot;e&#39;f g h i"},
        {"\t", "a&amp;b&lt;c&gt;d&quot;e&#39;f\tg h i"},
        {"\n\"'", "a&amp;b&lt;c&gt;d\"e'f g\nh i"},
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        g_s = in;
        g_n = sizeof in - 1;
        g_keep = t[i].keep;
        const char *got = capture(one_html, 0);
        ASSERT_MSG(strcmp(got, t[i].want) == 0, "keep %zu: got %s", i, got);
    }
}

int main(void)
{
    test_every_byte();
    test_html();
    test_utf8();
    test_structure();
    return gs_check_done("test_out_json");
}
