/* an_peers.h — the other processes busy as `gpustarve run` started the
 * program, read from beside the traces (an_peers.c). */
#ifndef AN_PEERS_H
#define AN_PEERS_H

#include "load/an_run.h"

/* Each process the <host>-<pid>.peers file beside its trace names, and
 * every traced process below it, gets peers_same_cores, peers_other_cores
 * and peers_known (unless its trace said them already). */
void an_run_read_peers(an_run *run);

/* "same=S other=O" (the file's line, or an older trace's config record
 * after "gpustarve_peers="): 0 with same and other set when both are
 * finite counts of cores from 0 to 10^6, else -1. */
int an_peers_parse(const char *s, double *same, double *other);

#endif
