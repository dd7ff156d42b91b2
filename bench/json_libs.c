/* json_libs.c — how fast the JSON libraries Debian ships read a PyTorch
 * profiler trace on one core (`make bench`, bench/bench_import.py): yajl as
 * a SAX stream with callbacks that pick the fields the import reads, cJSON
 * and json-c parsing the whole document into their trees (their only
 * mode). Built only when their -dev packages are installed; the figure for
 * simdjson is gpustarve import itself. Prints "LIB MB/s" lines (CPU time).
 *
 * Usage: json_libs FILE.json
 */
#include <cjson/cJSON.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <yajl/yajl_parse.h>

static double cpu_s(void)
{
    struct rusage u;
    getrusage(RUSAGE_SELF, &u);
    return (double)u.ru_utime.tv_sec + (double)u.ru_utime.tv_usec / 1e6 +
           (double)u.ru_stime.tv_sec + (double)u.ru_stime.tv_usec / 1e6;
}

typedef struct sax {
    int depth;
    char key[32];
    unsigned long long sum;
} sax;

static int y_null(void *c) { (void)c; return 1; }
static int y_bool(void *c, int b) { (void)c; (void)b; return 1; }
static int y_num(void *c, const char *s, size_t l)
{
    sax *x = c;
    if (x->depth >= 3 && (!strcmp(x->key, "ts") || !strcmp(x->key, "dur") ||
                          !strcmp(x->key, "correlation") || !strcmp(x->key, "stream")))
        x->sum += l + (unsigned char)s[0];
    return 1;
}
static int y_str(void *c, const unsigned char *s, size_t l)
{
    sax *x = c;
    if (x->depth == 3 && (!strcmp(x->key, "name") || !strcmp(x->key, "cat") || !strcmp(x->key, "ph")))
        x->sum += l + s[0];
    return 1;
}
static int y_open(void *c) { ((sax *)c)->depth++; return 1; }
static int y_close(void *c) { ((sax *)c)->depth--; return 1; }
static int y_key(void *c, const unsigned char *k, size_t l)
{
    sax *x = c;
    if (l > 31)
        l = 31;
    memcpy(x->key, k, l);
    x->key[l] = 0;
    return 1;
}
static yajl_callbacks ycb = {y_null, y_bool, NULL, NULL, y_num, y_str, y_open, y_key, y_close,
                             y_open, y_close};

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: json_libs FILE.json\n");
        return 2;
    }
    FILE *f = fopen(argv[1], "rb");
    if (!f)
        return 1;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = malloc((size_t)n + 1);
    if (!b || fread(b, 1, (size_t)n, f) != (size_t)n)
        return 1;
    b[n] = 0;
    fclose(f);
    const double mb = (double)n / 1e6;

    sax s = {0};
    yajl_handle h = yajl_alloc(&ycb, NULL, &s);
    double t = cpu_s();
    for (long o = 0; o < n; o += 1 << 16) {
        size_t l = n - o < (1 << 16) ? (size_t)(n - o) : 1 << 16;
        if (yajl_parse(h, (unsigned char *)b + o, l) != yajl_status_ok)
            return 1;
    }
    yajl_complete_parse(h);
    printf("yajl-sax %.0f\n", mb / (cpu_s() - t));
    yajl_free(h);

    t = cpu_s();
    cJSON *j = cJSON_ParseWithLength(b, (size_t)n);
    printf("cjson-tree %.0f\n", mb / (cpu_s() - t));
    cJSON_Delete(j);

    t = cpu_s();
    json_tokener *tok = json_tokener_new_ex(64);
    json_object *o = json_tokener_parse_ex(tok, b, (int)n);
    printf("json-c-tree %.0f\n", mb / (cpu_s() - t));
    json_object_put(o);
    json_tokener_free(tok);
    free(b);
    return (int)(s.sum & 0) | (j && o ? 0 : 1);
}
