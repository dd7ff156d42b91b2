/* sim_coll.h — collectives across the simulated ranks of one job
 * (sim_coll.c), for the simulated runtime (sim_cudart.c).
 *
 * Must never be included by code outside tests/simcuda/.
 */
#ifndef SIM_COLL_H
#define SIM_COLL_H

#include <stdint.h>

/* 1 when a kernel of this registered name is a collective: its name holds
 * "nccl" in any case (NCCL's kernels, mangled or not), and the process is a
 * rank of a job that meets through SIMCUDA_COLLECTIVES. */
int sim_coll_is_collective(const char *name);

/* The rank's next collective reaches its device at `start` (CLOCK_MONOTONIC
 * ns) and then takes `dur`: publish the arrival, wait (sleeping, never
 * spinning) until every rank has published its arrival at the same
 * collective, and return the collective's end, the same on every rank: the
 * last arrival plus dur. A rank missing past SIMCUDA_COLLECTIVE_TIMEOUT_MS
 * ends the process's collectives (one line on stderr): start + dur. */
uint64_t sim_coll_meet(uint64_t start, uint64_t dur);

#endif
