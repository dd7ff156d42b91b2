/* mc_mem.h — the memory lines of the check (mc_mem.c): the RAM the process
 * may use (the machine's, its cgroup's limit), swap, and the shared memory
 * DataLoader workers hand their batches through, against what they need.
 *
 * Must never: allocate or touch the memory it reports on.
 */
#ifndef MC_MEM_H
#define MC_MEM_H

#include "machine/mc_cgroup.h"
#include "machine/mc_check.h"

/* A field of /proc/meminfo ("MemTotal") in bytes; -1 when missing. */
double mc_meminfo(const char *text, const char *field);

void mc_check_memory(mc_list *l, const mc_opts *o, const mc_cgroup *cg);
/* The shared memory file system at o->shm_path against o->shm_workers x
 * o->shm_prefetch x o->shm_batch_bytes. */
void mc_check_shm(mc_list *l, const mc_opts *o);

/* The container default of /dev/shm (Docker's --shm-size default). */
#define MC_SHM_DOCKER_DEFAULT (64.0 * 1024 * 1024)
/* The rule when no traced run says otherwise (docs/check.md, "Shared
 * memory"): PyTorch's default prefetch_factor and an ImageNet-sized batch
 * (256 images of 3 x 224 x 224 float32). */
#define MC_SHM_RULE_PREFETCH 2
#define MC_SHM_RULE_BATCH_BYTES (256.0 * 3 * 224 * 224 * 4)
#define MC_SHM_RULE_MAX_WORKERS 8

#endif
