/* gs_cpulimits.h — the CPUs this process may use (gs_cpulimits.c).
 *
 * Must never: be called from a hook.
 */
#ifndef GS_CPULIMITS_H
#define GS_CPULIMITS_H

/* One `cpu_limits` record: affinity, cgroup CPU quota, online CPUs; at
 * start and in each forked child. */
void gs_cpulimits_record(void);

#endif
