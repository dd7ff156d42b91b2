/* sim_nccl.c — a stand-in libnccl.so.2 for the simulated GPU
 * (build/simcuda): communicators for the devices of one process
 * (ncclCommInitAll), and an all-reduce that is, on every rank's stream, a
 * piece of device work starting when the last rank's stream is ready (a
 * collective waits for all) and lasting 2 (n - 1) / n bytes / bus
 * bandwidth (SIMCUDA_NCCL_BUSBW_GBPS, default 100). Calls between
 * ncclGroupStart and ncclGroupEnd are launched together at the end, as
 * NCCL does; outside a group, one communicator's call waits only for its
 * own stream. It reduces nothing.
 *
 * Must never: touch the buffers, or export a name the real libnccl does not
 * (test_symbols.sh).
 */
#define _GNU_SOURCE
#include <nccl.h>

#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

#include "simcuda_link.h"

#define SIM_MAX_RANKS 16

struct ncclComm {
    int rank, nranks, device;
};

/* The runtime's link (the runtime is loaded first: a handle, a
 * communicator need a device). */
static const struct simcuda_rt *rt(void)
{
    static const struct simcuda_rt *r;
    if (!r)
        r = simcuda_rt_find();
    return r && r->enqueue ? r : NULL;
}

/* The calls of the open group (one thread drives all ranks, as the check does). */
static __thread int t_depth;
static __thread struct pending {
    struct ncclComm *comm;
    cudaStream_t stream;
    uint64_t ns;
} t_pend[SIM_MAX_RANKS * 4];
static __thread int t_npend;

static size_t type_size(ncclDataType_t t)
{
    switch (t) {
    case ncclInt8: case ncclUint8: return 1;
    case ncclFloat16: case ncclBfloat16: return 2;
    case ncclInt32: case ncclUint32: case ncclFloat32: return 4;
    default: return 8;
    }
}

static uint64_t allreduce_ns(size_t bytes, int n)
{
    const char *s = getenv("SIMCUDA_NCCL_BUSBW_GBPS");
    double bw = s && *s ? strtod(s, NULL) : 0;
    bw = bw > 0 ? bw : 100;
    return n > 1 ? (uint64_t)(2.0 * (n - 1) / n * (double)bytes / bw + 0.5) : 0;
}

/* Launch the pending calls together: each starts when the last is ready. */
static ncclResult_t launch(void)
{
    uint64_t start = 0;
    for (int i = 0; i < t_npend; i++) {
        const uint64_t r = rt()->ready_at(t_pend[i].stream, t_pend[i].comm->device);
        start = r > start ? r : start;
    }
    ncclResult_t res = ncclSuccess;
    for (int i = 0; i < t_npend; i++)
        if (rt()->enqueue(t_pend[i].stream, t_pend[i].comm->device, start, t_pend[i].ns,
                          "ncclDevKernel_AllReduce_Sum_f32_RING_LL", NULL, NULL) != 0)
            res = ncclUnhandledCudaError;
    t_npend = 0;
    return res;
}

ncclResult_t ncclGetVersion(int *version)
{
    if (!version)
        return ncclInvalidArgument;
    *version = NCCL_VERSION_CODE;
    return ncclSuccess;
}

const char *ncclGetErrorString(ncclResult_t result)
{
    return result == ncclSuccess ? "no error" : "simulated NCCL error";
}

ncclResult_t ncclCommInitAll(ncclComm_t *comms, int ndev, const int *devlist)
{
    if (!comms || ndev < 1 || ndev > SIM_MAX_RANKS)
        return ncclInvalidArgument;
    if (!rt())
        return ncclSystemError;
    for (int i = 0; i < ndev; i++) {
        comms[i] = calloc(1, sizeof *comms[i]);
        if (!comms[i])
            return ncclSystemError;
        comms[i]->rank = i;
        comms[i]->nranks = ndev;
        comms[i]->device = devlist ? devlist[i] : i;
    }
    return ncclSuccess;
}

ncclResult_t ncclCommDestroy(ncclComm_t comm)
{
    free(comm);
    return ncclSuccess;
}

ncclResult_t ncclGroupStart(void)
{
    t_depth++;
    return ncclSuccess;
}

ncclResult_t ncclGroupEnd(void)
{
    if (t_depth <= 0)
        return ncclInvalidUsage;
    return --t_depth == 0 ? launch() : ncclSuccess;
}

ncclResult_t ncclAllReduce(const void *sendbuff, void *recvbuff, size_t count,
                           ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                           cudaStream_t stream)
{
    if (!comm || !rt())
        return ncclInvalidArgument;
    if (t_npend >= (int)(sizeof t_pend / sizeof t_pend[0]))
        return ncclInvalidUsage;
    t_pend[t_npend++] = (struct pending){comm, stream, allreduce_ns(count * type_size(datatype), comm->nranks)};
    return t_depth ? ncclSuccess : launch();
}
