/* sim_inject.h — what the test injection library (sim_inject.c) exposes to
 * the simulator tests.  The library is loaded by the simulated runtime through
 * CUDA_INJECTION64_PATH (RTLD_GLOBAL), so tests find these with dlsym. */
#ifndef SIM_INJECT_H
#define SIM_INJECT_H

#include <stddef.h>
#include <stdint.h>

/* One activity record, copied out of a CUPTI buffer. */
struct sim_rec {
    uint32_t kind;            /* CUpti_ActivityKind */
    uint64_t start, end;      /* as CUPTI delivered them (timestamp-callback clock) */
    uint32_t device, stream, corr;
    uint64_t bytes;
    uint32_t copy_kind, src_kind, dst_kind, flags, value;
    uint32_t sync_type, cbid;
    char name[64];
};

struct sim_inject_stats {
    int init_calls;           /* InitializeInjection calls */
    size_t buffers_completed; /* buffers handed back by CUPTI */
    size_t nrec;              /* records copied so far */
    size_t dropped;           /* sum of cuptiActivityGetNumDroppedRecords */
    int subscribe_result;     /* cuptiSubscribe result at init */
    int second_subscribe_result;
    int64_t ts_offset_ns;     /* what the timestamp callback adds to CLOCK_MONOTONIC */
};

typedef const struct sim_inject_stats *(*sim_inject_stats_fn)(void);
typedef const struct sim_rec *(*sim_inject_records_fn)(size_t *n);
typedef void (*sim_inject_reset_fn)(void);

#endif
