/* an_copies.c — the two witnesses of a host copy's memory kind: the copies
 * waiting for their CUPTI record, and the rule that decides between the
 * hooks' word and CUPTI's.
 *
 * Must never: allocate per copy (the table grows by doubling), or keep a
 * copy past AN_COPIES_MAX.
 */
#include <stdlib.h>
#include <string.h>

#include "load/an_copies.h"
#include "gs_format.h"

static uint32_t slot_of(uint32_t corr, uint32_t cap)
{
    return (corr * 2654435761u) & (cap - 1);
}

static int grow(an_copies *t)
{
    uint32_t cap = t->cap ? t->cap * 2 : 256;
    an_copy *v = calloc(cap, sizeof *v);
    if (!v)
        return -1;
    for (uint32_t i = 0; i < t->cap; i++) {
        if (!t->v[i].corr)
            continue;
        uint32_t j = slot_of(t->v[i].corr, cap);
        while (v[j].corr)
            j = (j + 1) & (cap - 1);
        v[j] = t->v[i];
    }
    free(t->v);
    t->v = v;
    t->cap = cap;
    return 0;
}

int an_copies_put(an_copies *t, const an_copy *c)
{
    if (!c->corr || t->n >= AN_COPIES_MAX)
        return -1;
    if ((t->n + 1) * 2 > t->cap && grow(t) < 0)
        return -1;
    uint32_t j = slot_of(c->corr, t->cap);
    while (t->v[j].corr && t->v[j].corr != c->corr)
        j = (j + 1) & (t->cap - 1);
    if (!t->v[j].corr)
        t->n++;
    t->v[j] = *c; /* a repeated id (never seen) replaces the older copy */
    return 0;
}

int an_copies_take(an_copies *t, uint32_t corr, an_copy *out)
{
    if (!corr || !t->n)
        return 0;
    uint32_t j = slot_of(corr, t->cap);
    while (t->v[j].corr && t->v[j].corr != corr)
        j = (j + 1) & (t->cap - 1);
    if (!t->v[j].corr)
        return 0;
    *out = t->v[j];
    /* backward-shift deletion keeps every probe chain unbroken */
    uint32_t hole = j;
    for (uint32_t k = (j + 1) & (t->cap - 1); t->v[k].corr; k = (k + 1) & (t->cap - 1)) {
        uint32_t home = slot_of(t->v[k].corr, t->cap);
        /* move k into the hole when its home is not in (hole, k] */
        if (((k - home) & (t->cap - 1)) >= ((k - hole) & (t->cap - 1))) {
            t->v[hole] = t->v[k];
            hole = k;
        }
    }
    memset(&t->v[hole], 0, sizeof t->v[hole]);
    t->n--;
    return 1;
}

void an_copies_drain(an_copies *t, void (*fn)(void *ctx, const an_copy *c), void *ctx)
{
    for (uint32_t i = 0; i < t->cap; i++)
        if (t->v[i].corr) {
            an_copy c = t->v[i];
            memset(&t->v[i], 0, sizeof t->v[i]);
            fn(ctx, &c);
        }
    t->n = 0;
}

void an_copies_free(an_copies *t)
{
    free(t->v);
    memset(t, 0, sizeof *t);
}

static int known(unsigned m)
{
    return m == GS_MEM_PINNED || m == GS_MEM_PAGEABLE;
}

unsigned an_copy_kind_decide(an_copy_kinds *k, unsigned host_mem, unsigned cupti_mem)
{
    k->matched++;
    if (known(host_mem) && known(cupti_mem) && host_mem != cupti_mem) {
        if (host_mem == GS_MEM_PAGEABLE)
            k->pageable_by_hooks_pinned_by_cupti++;
        else
            k->pinned_by_hooks_pageable_by_cupti++;
    }
    return known(cupti_mem) ? cupti_mem : host_mem;
}
