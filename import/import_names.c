/* import_names.c — the distinct names of one imported document: the string
 * table (id -> text, each name classified once: step, DataLoader, iterator
 * kind) and the thread and process names by (pid, tid), each within the
 * import's limits (import.h, docs/import.md "Limits").
 *
 * Past IK_NAMES_MAX names or IK_NAME_BYTES_MAX bytes of them, a name not
 * yet kept is merged: a step or DataLoader range into the first such name
 * kept (the analysis still sees the step or the wait), a kernel into one
 * name per class (NCCL or not, so the report's communication share stays
 * right), any other range, thread or call name into one name per kind.
 * Each event so named is counted (n_names_merged).
 *
 * Must never: grow with anything but the names kept (a merged name costs
 * nothing), or look up a (pid, tid) by a scan (320,000 thread names once
 * took 26 CPU seconds, growing with their square).
 */
#include <stdlib.h>
#include <string.h>

#include "gs_format.h"
#include "gs_ranges.h"
#include "import.h"

_Static_assert(sizeof(((ik_conv *)0)->name_buf) == GS_STRING_MAX + 1, "a whole name and its NUL");

uint32_t ik_hash_bytes(const char *s, size_t n)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
    return (uint32_t)(h ^ (h >> 32));
}

/* ---- the string table ------------------------------------------------------------ */

static int grow_hash(ik_conv *c)
{
    uint32_t ncap = c->hcap ? c->hcap * 2 : 1024;
    uint32_t *nh = calloc(ncap, sizeof *nh);
    if (!nh)
        return -1;
    for (uint32_t i = 0; i < c->hcap; i++) {
        const uint32_t id = c->hash[i];
        if (!id)
            continue;
        uint32_t h = ik_hash_bytes(c->arena + c->soff[id], c->slen[id]) & (ncap - 1);
        while (nh[h])
            h = (h + 1) & (ncap - 1);
        nh[h] = id;
    }
    free(c->hash);
    c->hash = nh;
    c->hcap = ncap;
    return 0;
}

static uint8_t classify(const ik_conv *c, const char *s)
{
    uint8_t f = 0;
    if (gs_range_is_step(c->re, s))
        f |= IK_SF_STEP;
    if (gs_range_is_fetch(c->re, s))
        f |= IK_SF_FETCH;
    if (strstr(s, "_SingleProcessDataLoaderIter"))
        f |= IK_SF_SINGLE;
    if (strstr(s, "_MultiProcessingDataLoaderIter"))
        f |= IK_SF_MULTI;
    return f;
}

/* The hash slot of s: where it is (c->hash[*slot] != 0) or would go. */
static uint32_t find(const ik_conv *c, const char *s, size_t n, uint32_t *slot)
{
    uint32_t h = ik_hash_bytes(s, n) & (c->hcap - 1);
    while (c->hash[h]) {
        const uint32_t id = c->hash[h];
        if (c->slen[id] == n && (!n || memcmp(c->arena + c->soff[id], s, n) == 0))
            break;
        h = (h + 1) & (c->hcap - 1);
    }
    *slot = h;
    return c->hash[h];
}

static int grow_table(ik_conv *c, size_t n)
{
    if (c->nstr + 2 > c->capstr) {
        uint32_t nc = c->capstr ? c->capstr * 2 : 1024;
        uint64_t *no = realloc(c->soff, nc * sizeof *no);
        if (!no)
            return -1;
        c->soff = no;
        uint32_t *nl = realloc(c->slen, nc * sizeof *nl);
        if (!nl)
            return -1;
        c->slen = nl;
        uint8_t *nf = realloc(c->sflags, nc);
        if (!nf)
            return -1;
        c->sflags = nf;
        c->capstr = nc;
    }
    if (c->arena_len + n + 1 > c->arena_cap) {
        size_t nc = c->arena_cap ? c->arena_cap * 2 : 1 << 16;
        while (nc < c->arena_len + n + 1)
            nc *= 2;
        char *na = realloc(c->arena, nc);
        if (!na)
            return -1;
        c->arena = na;
        c->arena_cap = nc;
    }
    return 0;
}

/* Add s (not present; its hash slot is `slot`): its id, or 0. */
static uint32_t add(ik_conv *c, const char *s, size_t n, uint32_t slot)
{
    if (grow_table(c, n) < 0)
        return 0;
    const uint32_t id = ++c->nstr;
    c->soff[id] = c->arena_len;
    c->slen[id] = (uint32_t)n;
    if (n) /* an absent name is (NULL, 0) */
        memcpy(c->arena + c->arena_len, s, n);
    c->arena[c->arena_len + n] = '\0';
    c->arena_len += n + 1;
    c->sflags[id] = classify(c, c->arena + c->soff[id]);
    c->hash[slot] = id;
    return id;
}

uint32_t ik_conv_intern(ik_conv *c, const char *s, size_t n)
{
    if (n > GS_STRING_MAX)
        n = GS_STRING_MAX; /* the trace format's limit; longer names are cut */
    if ((c->nstr + 1) * 2 >= c->hcap && grow_hash(c) < 0)
        return 0;
    uint32_t slot;
    const uint32_t id = find(c, s, n, &slot);
    return id ? id : add(c, s, n, slot);
}

const char *ik_conv_string(const ik_conv *c, uint32_t id, size_t *len)
{
    if (!id || id > c->nstr) {
        if (len)
            *len = 0;
        return "";
    }
    if (len)
        *len = c->slen[id];
    return c->arena + c->soff[id];
}

/* ---- names past the limits ------------------------------------------------------- */

/* RATIONALE: the analyzer's rule for communication kernels (NCCL's) is on
 * the function's base name; a substring test is enough to keep the merged
 * kernels of each class apart. */
static int nccl_like(const char *s)
{
    return strstr(s, "nccl") || strstr(s, "Nccl") || strstr(s, "oneRankReduce");
}

static const char *const merged_text[IK_NAME_KINDS + 1] = {
    [IK_NAME_KERNEL] = "other_kernels_past_the_import_name_limit",
    [IK_NAME_RANGE] = "other ranges past the import's name limit",
    [IK_NAME_THREAD] = "threads past the import's name limit",
    [IK_NAME_CALL] = "calls past the import's name limit",
    [IK_NAME_KINDS] = "nccl_kernels_past_the_import_name_limit",
};

/* The id a past-limit name of this kind and flags becomes. */
static uint32_t merged(ik_conv *c, enum ik_name_kind kind, uint8_t f, const char *s)
{
    if (kind == IK_NAME_RANGE && (f & IK_SF_STEP) && c->first_step)
        return c->first_step;
    if (kind == IK_NAME_RANGE && (f & IK_SF_FETCH) && c->first_fetch)
        return c->first_fetch;
    if (kind == IK_NAME_RANGE && (f & (IK_SF_STEP | IK_SF_FETCH)))
        return 0; /* the first of its class: kept past the limit */
    const unsigned k = kind == IK_NAME_KERNEL && nccl_like(s) ? IK_NAME_KINDS : (unsigned)kind;
    if (!c->merged_id[k])
        c->merged_id[k] = ik_conv_intern(c, merged_text[k], strlen(merged_text[k]));
    return c->merged_id[k];
}

uint32_t ik_conv_name(ik_conv *c, const char *s, size_t n, enum ik_name_kind kind, uint8_t *flags)
{
    if (n > GS_STRING_MAX)
        n = GS_STRING_MAX;
    if ((c->nstr + 1) * 2 >= c->hcap && grow_hash(c) < 0)
        return 0;
    uint32_t slot;
    uint32_t id = find(c, s, n, &slot);
    if (!id && (c->nstr >= IK_NAMES_MAX || c->arena_len + n + 1 > IK_NAME_BYTES_MAX)) {
        if (n)
            memcpy(c->name_buf, s, n);
        c->name_buf[n] = '\0';
        const uint8_t f = kind == IK_NAME_RANGE ? classify(c, c->name_buf) : 0;
        if (flags)
            *flags = f;
        id = merged(c, kind, f, c->name_buf);
        if (id) {
            c->n_names_merged++;
            return id;
        }
        find(c, s, n, &slot); /* merged() may have added a name: the slot moved */
    }
    if (!id && !(id = add(c, s, n, slot)))
        return 0;
    const uint8_t f = c->sflags[id];
    if (flags)
        *flags = f;
    if (kind == IK_NAME_RANGE && (f & IK_SF_STEP) && !c->first_step)
        c->first_step = id;
    if (kind == IK_NAME_RANGE && (f & IK_SF_FETCH) && !c->first_fetch)
        c->first_fetch = id;
    return id;
}

/* ---- thread and process names ---------------------------------------------------- */

static uint32_t pid_tid_hash(int64_t pid, uint32_t tid)
{
    const uint64_t k = (uint64_t)pid * 0x9E3779B97F4A7C15ull ^ tid;
    return (uint32_t)((k * 0xD6E8FEB86659FD93ull) >> 32);
}

static int names_grow(ik_name_list *l)
{
    const uint32_t ncap = l->hcap ? l->hcap * 2 : 64;
    uint32_t *nh = calloc(ncap, sizeof *nh);
    if (!nh)
        return -1;
    for (size_t i = 0; i < l->n; i++) {
        uint32_t h = pid_tid_hash(l->v[i].pid, l->v[i].tid) & (ncap - 1);
        while (nh[h])
            h = (h + 1) & (ncap - 1);
        nh[h] = (uint32_t)i + 1;
    }
    free(l->hash);
    l->hash = nh;
    l->hcap = ncap;
    return 0;
}

int ik_names_set(ik_conv *c, ik_name_list *l, int64_t pid, uint32_t tid, uint32_t str)
{
    if ((l->n + 1) * 2 > l->hcap && names_grow(l) < 0)
        return -1;
    uint32_t h = pid_tid_hash(pid, tid) & (l->hcap - 1);
    for (; l->hash[h]; h = (h + 1) & (l->hcap - 1)) {
        ik_thread_name *t = &l->v[l->hash[h] - 1];
        if (t->pid == pid && t->tid == tid) {
            t->str = str; /* a later name replaces an earlier one */
            return 0;
        }
    }
    if (l->n >= IK_THREAD_NAMES_MAX) {
        c->n_thread_names_over++;
        return 0;
    }
    if (l->n == l->cap) {
        size_t nc = l->cap ? l->cap * 2 : 16;
        ik_thread_name *nv = realloc(l->v, nc * sizeof *nv);
        if (!nv)
            return -1;
        l->v = nv;
        l->cap = nc;
    }
    l->v[l->n++] = (ik_thread_name){pid, tid, str};
    l->hash[h] = (uint32_t)l->n;
    return 0;
}

void ik_names_free(ik_name_list *l)
{
    free(l->v);
    free(l->hash);
    memset(l, 0, sizeof *l);
}
