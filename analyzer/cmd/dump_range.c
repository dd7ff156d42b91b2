/* dump_range.c — NVTX records printed as ranges: nvtx_push/nvtx_pop pair
 * per thread and domain (a stack), nvtx_start/nvtx_end by range id from any
 * thread (docs/trace-format.md, "gpustarve dump --json"). A range's line is
 * printed at its closing record; ranges still open when the process's
 * trace ends follow its last event, by start time, with no duration. A pop
 * or end without its opening record prints nothing.
 *
 * Must never: hold more than the ranges open in one process.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/dump.h"
#include "base/an_grow.h"

/* An NVTX range opened (push or start) and not yet closed. */
typedef struct open_range {
    uint32_t tid, str;
    uint64_t domain, id, ts;
} open_range;

typedef struct range_list {
    open_range *v;
    size_t n, cap;
} range_list;

struct dump_ranges {
    range_list pushes; /* open push ranges, any thread/domain */
    range_list starts; /* open start ranges */
};

dump_ranges *dump_ranges_new(void)
{
    return calloc(1, sizeof(dump_ranges));
}

void dump_ranges_free(dump_ranges *g)
{
    if (!g)
        return;
    free(g->pushes.v);
    free(g->starts.v);
    free(g);
}

/* RATIONALE: at most this many ranges open at once per process (real
 * programs have a few dozen): a damaged or hostile trace that opens millions
 * costs bounded memory and a bounded search per close; the ranges opened
 * past it are not printed (as a pop or end without its opening record). */
#define DUMP_MAX_OPEN 4096

static int range_add(range_list *l, const open_range *x, size_t max)
{
    if (l->n >= max)
        return -1;
    if (an_grow(&l->v, &l->cap, l->n + 1, sizeof *l->v, 64) < 0)
        return -1;
    l->v[l->n++] = *x;
    return 0;
}

static void range_del(range_list *l, size_t i)
{
    memmove(l->v + i, l->v + i + 1, (l->n - i - 1) * sizeof *l->v);
    l->n--;
}

static void line(gs_out *o, int json, const gs_reader *r, uint64_t pid, uint64_t base,
                 const open_range *x, uint64_t end_ts, int closed)
{
    dump_range_line(o, json, r, pid, base, x->tid, x->str, x->domain, x->ts, end_ts, closed);
}

void dump_ranges_event(dump_ranges *g, gs_out *o, int json, const gs_reader *r, uint64_t pid,
                       uint64_t base, const gs_event *e)
{
    open_range x = {e->tid, e->str, e->aux, e->aux2, e->ts};
    switch (e->kind) {
    case GS_K_NVTX_PUSH:
        x.id = 0;
        range_add(&g->pushes, &x, DUMP_MAX_OPEN);
        return;
    case GS_K_NVTX_START:
        range_add(&g->starts, &x, DUMP_MAX_OPEN);
        return;
    case GS_K_NVTX_POP:
        for (size_t i = g->pushes.n; i-- > 0;) {
            const open_range *p = &g->pushes.v[i];
            if (p->tid == e->tid && p->domain == e->aux) {
                line(o, json, r, pid, base, p, e->ts, 1);
                range_del(&g->pushes, i);
                return;
            }
        }
        return;
    case GS_K_NVTX_END:
        for (size_t i = 0; i < g->starts.n; i++) {
            if (g->starts.v[i].id == e->aux2) {
                line(o, json, r, pid, base, &g->starts.v[i], e->ts, 1);
                range_del(&g->starts, i);
                return;
            }
        }
        return;
    }
}

static int cmp_open(const void *a, const void *b)
{
    const open_range *x = a, *y = b;
    return x->ts < y->ts ? -1 : x->ts > y->ts;
}

void dump_ranges_finish(dump_ranges *g, gs_out *o, int json, const gs_reader *r, uint64_t pid,
                        uint64_t base)
{
    for (size_t i = 0; i < g->starts.n; i++)
        range_add(&g->pushes, &g->starts.v[i], SIZE_MAX);
    /* RATIONALE: qsort is not stable, but two open ranges with one ts and
     * different content in one process are rare and both get printed. */
    if (g->pushes.n)
        qsort(g->pushes.v, g->pushes.n, sizeof *g->pushes.v, cmp_open);
    for (size_t i = 0; i < g->pushes.n; i++)
        line(o, json, r, pid, base, &g->pushes.v[i], 0, 0);
    g->pushes.n = 0;
    g->starts.n = 0;
}
