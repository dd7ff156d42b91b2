/* an_colls.c — the collectives of a process (an_colls.h): kept as the pass
 * meets their kernels, names resolved once per string id.
 *
 * Must never: print, grow past AN_COLLS_MAX, or compare a name per kernel
 * (a string id is resolved once).
 */
#include "load/an_colls.h"

#include <stdlib.h>
#include <string.h>

#include "base/an_grow.h"
#include "load/an_kernels.h"

/* The index of (dev, stream) among the streams, added when new; -1. */
static long stream_ix(an_colls *c, uint32_t dev, uint64_t stream)
{
    for (size_t i = c->nstreams; i-- > 0;)
        if (c->streams[i].dev == dev && c->streams[i].stream == stream)
            return (long)i;
    if (c->nstreams >= AN_COLLS_NAMES_MAX ||
        an_grow(&c->streams, &c->capstreams, c->nstreams + 1, sizeof *c->streams, 4) < 0)
        return -1;
    c->streams[c->nstreams] = (an_coll_stream){dev, 0, stream};
    return (long)c->nstreams++;
}

/* The index of string id str's base name among the names; -1. */
static long name_ix(an_colls *c, uint32_t str, const char *name)
{
    const long known = an_index_get(&c->by_str, str);
    if (known >= 0)
        return known;
    char base[256];
    an_kernel_base(name ? name : "?", base, sizeof base);
    size_t i = 0;
    while (i < c->nnames && strcmp(c->names[i], base) != 0)
        i++;
    if (i == c->nnames) {
        if (c->nnames >= AN_COLLS_NAMES_MAX ||
            an_grow(&c->names, &c->capnames, c->nnames + 1, sizeof *c->names, 4) < 0)
            return -1;
        if (!(c->names[i] = strdup(base)))
            return -1;
        c->nnames++;
    }
    /* a name not defined yet is not cached: it may be defined later */
    if (name && an_index_put(&c->by_str, str, (uint32_t)i) < 0)
        return -1;
    return (long)i;
}

long an_colls_add(an_colls *c, uint64_t ts, uint64_t end, uint32_t dev, uint64_t stream,
                  uint32_t str, const char *name, uint32_t tid, long *prev)
{
    *prev = -1;
    if (c->n >= AN_COLLS_MAX) {
        c->over++;
        return -1;
    }
    const long si = stream_ix(c, dev, stream), ni = name_ix(c, str, name);
    if (si < 0 || ni < 0 || an_grow(&c->v, &c->cap, c->n + 1, sizeof *c->v, 64) < 0)
        return -1;
    an_coll *k = &c->v[c->n];
    memset(k, 0, sizeof *k);
    k->ts = ts;
    k->end = end;
    k->stream = (uint16_t)si;
    k->name = (uint16_t)ni;
    k->tid = tid;
    *prev = (long)c->streams[si].last - 1;
    c->streams[si].last = (uint32_t)c->n + 1;
    return (long)c->n++;
}

void an_colls_snap(an_colls *c, uint64_t qid, const an_snap *s)
{
    const uint64_t i = (qid & ~AN_COLL_QID) >> 1;
    const int at_end = (int)(qid & 1);
    if (i >= c->n)
        return;
    an_coll *k = &c->v[i];
    const an_coll_snap x = {s->busy[AN_BUSY_COMPUTE], s->busy[AN_BUSY_COMM],
                            s->busy[AN_BUSY_H2D_PAGEABLE],
                            s->busy[AN_BUSY_H2D_PINNED] + s->busy[AN_BUSY_OTHER], s->idle_dw,
                            s->idle_pg};
    if (at_end)
        k->b = x;
    else
        k->a = x;
    k->have |= (uint8_t)(at_end ? 2 : 1);
}

void an_coll_snap_get(const an_coll *k, int at_end, an_snap *out)
{
    const an_coll_snap *x = at_end ? &k->b : &k->a;
    memset(out, 0, sizeof *out);
    out->t = at_end ? k->end : k->ts;
    out->busy[AN_BUSY_COMPUTE] = x->compute;
    out->busy[AN_BUSY_COMM] = x->comm;
    out->busy[AN_BUSY_H2D_PAGEABLE] = x->pageable;
    out->busy[AN_BUSY_OTHER] = x->other;
    out->idle_dw = x->idle_dw;
    out->idle_pg = x->idle_pg;
}

void an_colls_free(an_colls *c)
{
    for (size_t i = 0; i < c->nnames; i++)
        free(c->names[i]);
    free(c->names);
    free(c->streams);
    free(c->v);
    an_index_free(&c->by_str);
    memset(c, 0, sizeof *c);
}

_Static_assert(sizeof(an_coll) == 128, "an_coll: the size AN_COLLS_MAX's rationale counts");
