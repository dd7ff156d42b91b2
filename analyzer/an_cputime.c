/* an_cputime.c — the measured parts of a loader's batch and of the
 * trainer's wait, from the threads' CPU samples (an_cputime.h,
 * docs/report-schema.md "Measured time").
 *
 * Must never: read trace files, print, divide by zero, or report a part it
 * did not measure as 0 (absent is -1).
 */
#include <string.h>

#include "an_cputime.h"

void an_loader_time_absent(an_loader_time *t)
{
    memset(t, 0, sizeof *t);
    t->measured = 0;
    t->per_batch = AN_PB_NONE;
    t->batches = t->wall_ms = t->io_ms = t->fault_ms = t->cpu_ms = t->runq_ms = -1;
    t->blocked_ms = t->read_bytes = t->requested_bytes = t->majflt = t->fault_bytes = -1;
    t->fault_MBps = t->vol_switches = t->invol_switches = t->cpu_cores = -1;
}

void an_trainer_time_absent(an_trainer_time *t)
{
    memset(t, 0, sizeof *t);
    t->blocked_ms = t->receiving_ms = t->fetch_runq_ms = t->cpu_ms = t->runq_ms = -1;
    t->cpu_cores = t->proc_cpu_cores = t->share_blocked = t->share_receiving = -1;
}

void an_other_time_absent(an_other_time *t)
{
    memset(t, 0, sizeof *t);
    t->cpu_cores = t->runq_ms_per_step = -1;
}
