/* run_peers.h — the other processes busy when `gpustarve run` starts the
 * program, by scheduling group (run_peers.c). */
#ifndef GS_RUN_PEERS_H
#define GS_RUN_PEERS_H

#include <stddef.h>

typedef struct gs_peers gs_peers;

/* Every other process (this one and its ancestors left out), by id only.
 * NULL when /proc cannot be listed. Taken once, just before the program
 * starts. */
gs_peers *gs_run_peers_begin(void);

/* Once the program, child, has started: the first reading (those
 * processes' threads and their CPU time), then the second, 40 ms later
 * (or sooner when the program exits), of the same threads only:
 * "same=S other=O", the cores they kept
 * busy in the run's own scheduling group (the kernel shares the CPUs with
 * them thread by thread) and in other groups (session by session, cgroup
 * by cgroup), into out. 0, or -1 when it cannot say (out untouched), as
 * when the program was done within 5 ms. */
int gs_run_peers_end(gs_peers *pe, int child, char *out, size_t cap);

/* text as <host>-<pid>.peers (GS_PEERS_SUFFIX) in the directory dir_fd,
 * pid the program's (docs/trace-format.md, "A run"); 0, or -1 when it could
 * not be written or a file of that name is there. */
int gs_run_peers_save(int dir_fd, int pid, const char *text);

#endif
