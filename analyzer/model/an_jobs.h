/* an_jobs.h — whether the ranked processes of a run are one job: processes
 * of one job agree on the world size and run at the same time; files of
 * different jobs read together (another world size, or start times that
 * cannot be one job) are told apart, never merged into one job
 * (docs/report-schema.md, "One job, or say it isn't").
 *
 * Must never: read trace files, print, or put a process of no rank into a
 * group (the launchers stay out of every job).
 */
#ifndef AN_JOBS_H
#define AN_JOBS_H

#include <stddef.h>
#include <stdint.h>

#include "load/an_run.h"

/* RATIONALE: processes of one job overlap in time; on hosts whose realtime
 * clocks disagree by up to this much they may seem not to. Two groups whose
 * spans lie farther apart than this are two jobs. */
#define AN_JOB_GAP_NS 60000000000ll

/* The job group of each process of the run (group[i] for run->procs[i]):
 * 0, 1, ... in the order of each group's earliest start, -1 for a process
 * of no rank (rank_of(run, p) < 0). Returns the number of groups, or
 * (size_t)-1 out of memory. */
size_t an_job_groups(const an_run *run, int32_t (*rank_of)(const an_run *, const an_proc *),
                     int32_t *group);

/* One line per group into buf (n bytes): "job N: world size W, ranks R,
 * H host(s), P processes, started T (files ...)". */
void an_job_groups_describe(const an_run *run, const int32_t *group, size_t ngroups,
                            int32_t (*rank_of)(const an_run *, const an_proc *), char *buf,
                            size_t n);

/* The process's span on the realtime clock (ns, through its header's clock
 * pair); [0, INT64_MAX] when its header has no realtime reading. */
void an_proc_realtime_span(const an_proc *p, int64_t *a, int64_t *b);

/* "0-3, 5, 7-127" of the set ranks (n values, any order, repeats allowed)
 * into buf (len bytes); returns buf. */
char *an_rank_list(const int32_t *ranks, size_t n, char *buf, size_t len);

#endif
