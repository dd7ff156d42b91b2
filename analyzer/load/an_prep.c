/* an_prep.c — the pieces of a training thread's own batch preparation
 * (an_prep.h). */
#include "load/an_prep.h"

#include <string.h>

void an_prep_arm(an_prep *g, uint64_t ts, uint64_t waits)
{
    memset(g, 0, sizeof *g);
    g->t0 = g->from = ts;
    g->waits = waits;
}

void an_prep_cut(an_prep *g, uint64_t s, uint64_t e)
{
    if (!g->t0 || e <= g->from)
        return; /* not armed, or a call that ended before the piece */
    g->cut++;
    if (s > g->from && g->n < AN_PREP_PIECES) {
        g->piece[g->n][0] = g->from;
        g->piece[g->n][1] = s;
        g->n++;
    } else if (s > g->from) {
        g->t0 = 0; /* cut too often: no batch's preparation */
        return;
    }
    g->from = e;
}

unsigned an_prep_end(an_prep *g, uint64_t ts, uint64_t waits, uint64_t max_ns,
                     uint64_t out[][2])
{
    const an_prep x = *g;
    g->t0 = 0;
    if (!x.t0 || waits != x.waits || ts <= x.t0 || ts - x.t0 > max_ns)
        return 0;
    unsigned n = 0;
    for (uint32_t i = 0; i < x.n; i++) {
        out[n][0] = x.piece[i][0];
        out[n][1] = x.piece[i][1];
        n++;
    }
    if (ts > x.from) {
        out[n][0] = x.from;
        out[n][1] = ts;
        n++;
    }
    return n;
}
