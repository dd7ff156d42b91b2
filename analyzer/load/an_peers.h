/* an_peers.h — the other processes busy as `gpustarve run` started the
 * program, read from beside the traces (an_peers.c). */
#ifndef AN_PEERS_H
#define AN_PEERS_H

#include "load/an_run.h"

/* Each process the <host>-<pid>.peers file beside its trace names, and
 * every traced process below it, gets peers_same_cores, peers_other_cores
 * and peers_known (unless its trace said them already). */
void an_run_read_peers(an_run *run);

#endif
