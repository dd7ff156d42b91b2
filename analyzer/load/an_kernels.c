/* an_kernels.c — GPU kernel names: for people (demangled), by class
 * (communication or compute), and GPU time per name; the busy class of a
 * GPU record.
 *
 * Responsible for: demangling through the C++ runtime (__cxa_demangle,
 * linked from libstdc++), finding the function's own name in a demangled
 * one, deciding communication from that name, and the per-process table of
 * GPU time by kernel name that the reports show.
 *
 * Must never: demangle by hand, or classify by a prefix of the mangled
 * string (CUPTI reports C++ kernels mangled: "_Z39ncclDevKernel_..." starts
 * with "_Z", not "nccl").
 */
#include <stdlib.h>
#include <string.h>

#include "load/an_kernels.h"
#include "load/an_timeline.h"
#include "gs_trace.h"

/* The Itanium C++ ABI demangler of the C++ runtime (cxxabi.h, for C). */
char *__cxa_demangle(const char *mangled, char *buf, size_t *len, int *status);

const char *an_kernel_display(const char *name, char *out, size_t n)
{
    if (!n)
        return out;
    out[0] = 0;
    if (!name)
        return out;
    int status = -1;
    char *d = strncmp(name, "_Z", 2) == 0 ? __cxa_demangle(name, NULL, NULL, &status) : NULL;
    const char *s = d && status == 0 ? d : name;
    size_t len = strlen(s);
    if (len >= n)
        len = n - 1;
    memcpy(out, s, len);
    out[len] = 0;
    free(d);
    return out;
}

/* Index of the '(' that opens the parameter list: the first at template
 * depth 0 that does not open "(anonymous namespace)"; -1 when none. */
static long params_at(const char *s)
{
    static const char anon[] = "(anonymous namespace)";
    int depth = 0;
    for (long i = 0; s[i]; i++) {
        if (s[i] == '<')
            depth++;
        else if (s[i] == '>' && depth > 0)
            depth--;
        else if (s[i] == '(' && depth == 0) {
            if (strncmp(s + i, anon, sizeof anon - 1) == 0) {
                i += (long)sizeof anon - 2;
                continue;
            }
            return i;
        }
    }
    return -1;
}

const char *an_kernel_base(const char *name, char *out, size_t n)
{
    char full[4096];
    an_kernel_display(name, full, sizeof full);
    long end = params_at(full);
    if (end < 0)
        end = (long)strlen(full);
    /* template arguments of the function itself */
    if (end > 0 && full[end - 1] == '>') {
        int depth = 0;
        for (long i = end - 1; i >= 0; i--) {
            if (full[i] == '>')
                depth++;
            else if (full[i] == '<' && --depth == 0) {
                end = i;
                break;
            }
        }
    }
    /* back to the last "::" or space at depth 0 (namespaces, return type) */
    long start = end;
    int depth = 0;
    while (start > 0) {
        char c = full[start - 1];
        if (c == '>' || c == ')')
            depth++;
        else if ((c == '<' || c == '(') && depth > 0)
            depth--;
        else if (depth == 0 && (c == ' ' || c == ':'))
            break;
        start--;
    }
    size_t len = (size_t)(end - start);
    if (n) {
        if (len >= n)
            len = n - 1;
        memcpy(out, full + start, len);
        out[len] = 0;
    }
    return out;
}

int an_kernel_is_comm(const char *name)
{
    if (!name)
        return 0;
    char base[512];
    an_kernel_base(name, base, sizeof base);
    /* RATIONALE: oneRankReduce is NCCL's own kernel for a collective on a
     * one-rank communicator (a reduction that scales, such as ncclAvg): the
     * whole of a single-GPU DDP step's communication */
    return strncmp(base, "nccl", 4) == 0 || strstr(base, "Nccl") != NULL ||
           strcmp(base, "oneRankReduce") == 0;
}

/* ---- GPU time per name ------------------------------------------------------------ */

/* A new entry for name; its index, or -1 when out of memory. */
static long kstat_new(an_kstats *k, const char *name)
{
    if (k->n == k->cap) {
        uint32_t cap = k->cap ? k->cap * 2 : 64;
        an_kstat *nv = realloc(k->v, (size_t)cap * sizeof *nv);
        if (!nv)
            return -1;
        k->v = nv;
        k->cap = cap;
    }
    an_kstat *s = &k->v[k->n];
    s->name = strdup(name);
    if (!s->name)
        return -1;
    s->ns = s->count = 0;
    s->comm = an_kernel_is_comm(name);
    return (long)k->n++;
}

/* The entry where a kernel whose name is past AN_KSTATS_MAX_NAMES is
 * summed (its class's); -1 out of memory. */
static long kstat_other(an_kstats *k, const char *name)
{
    const int comm = an_kernel_is_comm(name);
    if (!k->other[comm]) {
        const long ix = kstat_new(k, comm ? "(other communication kernels: names past the limit)"
                                          : "(other kernels: names past the limit)");
        if (ix < 0)
            return -1;
        k->v[ix].comm = comm;
        k->other[comm] = (uint32_t)ix + 1;
    }
    k->merged++;
    return (long)k->other[comm] - 1;
}

void an_kstats_add(an_kstats *k, uint32_t id, const char *name, uint64_t dur)
{
    if (!id || !name)
        return;
    long ix;
    const int full = k->n >= AN_KSTATS_MAX_NAMES;
    if (id >= AN_KSTATS_DIRECT) {
        ix = an_index_get(&k->far, id);
        if (ix < 0 && full) {
            ix = kstat_other(k, name); /* not mapped: the map stays bounded too */
        } else if (ix < 0 && (ix = kstat_new(k, name)) >= 0 &&
                   an_index_put(&k->far, id, (uint32_t)ix) != 0) {
            free(k->v[--k->n].name);
            return;
        }
    } else {
        if (id >= k->nid) {
            uint32_t nid = k->nid ? k->nid : 256;
            while (nid <= id)
                nid *= 2;
            uint32_t *nb = realloc(k->by_id, (size_t)nid * sizeof *nb);
            if (!nb)
                return;
            memset(nb + k->nid, 0, (size_t)(nid - k->nid) * sizeof *nb);
            k->by_id = nb;
            k->nid = nid;
        }
        ix = (long)k->by_id[id] - 1;
        if (ix < 0 && (ix = full ? kstat_other(k, name) : kstat_new(k, name)) >= 0)
            k->by_id[id] = (uint32_t)ix + 1;
    }
    if (ix < 0)
        return;
    k->v[ix].ns += dur;
    k->v[ix].count++;
}

/* a before b: more time, then the name, so the order is stable */
static int before(const an_kstat *a, const an_kstat *b)
{
    return a->ns > b->ns || (a->ns == b->ns && strcmp(a->name, b->name) < 0);
}

size_t an_kstats_top(const an_kstats *k, const an_kstat **top, size_t n)
{
    size_t got = 0;
    for (uint32_t i = 0; i < k->n && n; i++) {
        const an_kstat *s = &k->v[i];
        size_t pos;
        if (got < n)
            pos = got++;
        else if (before(s, top[n - 1]))
            pos = n - 1;
        else
            continue;
        while (pos > 0 && before(s, top[pos - 1])) {
            top[pos] = top[pos - 1];
            pos--;
        }
        top[pos] = s;
    }
    return got;
}

void an_kstats_free(an_kstats *k)
{
    for (uint32_t i = 0; i < k->n; i++)
        free(k->v[i].name);
    free(k->v);
    free(k->by_id);
    an_index_free(&k->far);
    memset(k, 0, sizeof *k);
}
