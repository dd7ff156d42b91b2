/* run_peers.h — the other processes busy when `gpustarve run` starts the
 * program, by scheduling group (run_peers.c). */
#ifndef GS_RUN_PEERS_H
#define GS_RUN_PEERS_H

#include <stddef.h>

/* "same=S other=O": cores other processes kept busy over a 40 ms window
 * in the run's own scheduling group (the kernel shares the CPUs with them
 * thread by thread) and in other groups (session by session, cgroup by
 * cgroup), into out. 0, or -1 when /proc could not be read (out untouched). */
int gs_run_peers(char *out, size_t cap);

#endif
