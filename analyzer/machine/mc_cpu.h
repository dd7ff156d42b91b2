/* mc_cpu.h — the CPU lines of the check (mc_cpu.c): the CPUs the process
 * may use against those the machine shows, the steal time over the check,
 * the clock frequency under load.
 *
 * Must never: change the affinity, the governor or any other setting.
 */
#ifndef MC_CPU_H
#define MC_CPU_H

#include <stdint.h>

#include "machine/mc_cgroup.h"
#include "machine/mc_check.h"

/* The machine's CPU time from the first line of /proc/stat, in ticks. */
typedef struct mc_cpustat {
    uint64_t total; /* user + nice + system + idle + iowait + irq + softirq + steal */
    uint64_t steal;
    int has_steal;  /* the kernel writes the steal column */
    int ok;
} mc_cpustat;

/* Parse the text of /proc/stat: 0, or -1 when it has no "cpu " line. */
int mc_parse_proc_stat(const char *text, mc_cpustat *s);
/* Read /proc/stat now (s->ok 0 when it cannot be read). */
void mc_cpustat_now(mc_cpustat *s);

/* The usable CPUs: the affinity mask and the cgroup quota, against the
 * CPUs shown (online) or o->cpus_paid. */
void mc_check_cpus(mc_list *l, const mc_opts *o, const mc_cgroup *cg);
/* The share of CPU time stolen by the hypervisor between a and b (secs
 * apart). */
void mc_check_steal(mc_list *l, const mc_cpustat *a, const mc_cpustat *b, double secs);
/* The clock of the CPU this thread runs on, read after a short busy loop,
 * against its cpufreq maximum (sysfs root o->sysfs). */
void mc_check_freq(mc_list *l, const mc_opts *o);

/* The verdict rules, exposed for the unit tests. The steal share at which
 * a VM counts as crowded (docs/check.md, "CPU"). */
#define MC_STEAL_BELOW 0.05
/* The usable CPUs against those expected: below spec when fewer than
 * expected - 0.5 (a quota of 7.65 on 8 shown is below, 7.9 is not). */
mc_verdict mc_rule_cpus(double usable, double expected);

#endif
