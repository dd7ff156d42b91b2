/* mc_cpu.c — the CPU lines of the check: how many CPUs the process may use
 * (its affinity mask, its cgroup's quota) against how many the machine
 * shows, the share of time the hypervisor stole over the check (/proc/stat),
 * and the clock under load against cpufreq's maximum (mc_cpu.h).
 *
 * Must never: change the affinity, the cgroup or the governor; spin for
 * longer than the frequency reading needs (a fraction of a second).
 */
#include <math.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "machine/mc_cpu.h"
#include "machine/mc_file.h"

int mc_parse_proc_stat(const char *text, mc_cpustat *s)
{
    memset(s, 0, sizeof *s);
    const char *p = strstr(text, "cpu ");
    if (!p || (p != text && p[-1] != '\n'))
        return -1;
    unsigned long long f[8] = {0};
    const int n = sscanf(p + 4, "%llu %llu %llu %llu %llu %llu %llu %llu", &f[0], &f[1], &f[2],
                         &f[3], &f[4], &f[5], &f[6], &f[7]);
    if (n < 4)
        return -1;
    for (int i = 0; i < n; i++)
        s->total += f[i];
    s->has_steal = n >= 8;
    s->steal = n >= 8 ? f[7] : 0;
    s->ok = 1;
    return 0;
}

void mc_cpustat_now(mc_cpustat *s)
{
    char buf[1024];
    if (mc_read_text("/proc/stat", buf, sizeof buf) < 0 || mc_parse_proc_stat(buf, s) < 0)
        memset(s, 0, sizeof *s);
}

mc_verdict mc_rule_cpus(double usable, double expected)
{
    return usable < expected - 0.5 ? MC_BELOW_SPEC : MC_TO_SPEC;
}

static int affinity_count(void)
{
    for (int n = 1024; n <= 1 << 16; n *= 2) {
        cpu_set_t *set = CPU_ALLOC(n);
        if (!set)
            return -1;
        const size_t sz = CPU_ALLOC_SIZE(n);
        if (sched_getaffinity(0, sz, set) == 0) {
            const int c = CPU_COUNT_S(sz, set);
            CPU_FREE(set);
            return c;
        }
        CPU_FREE(set);
    }
    return -1;
}

void mc_check_cpus(mc_list *l, const mc_opts *o, const mc_cgroup *cg)
{
    mc_item *it = mc_add(l, "cpu", "");
    if (!it)
        return;
    const long shown = sysconf(_SC_NPROCESSORS_ONLN);
    const int aff = affinity_count();
    double quota = 0;
    char where[1100] = "";
    const int q = mc_cgroup_cpu_quota(cg, &quota, where, sizeof where);
    mc_num(it, "shown", (double)shown);
    mc_num(it, "affinity", aff);
    mc_num(it, "cgroup_quota", q == 1 ? quota : NAN);
    if (shown < 1 || aff < 1) {
        mc_cause(it, "the online CPUs or the affinity mask could not be read");
        return;
    }
    double usable = aff;
    if (q == 1 && quota < usable)
        usable = quota;
    const double expected = o->cpus_paid > 0 ? o->cpus_paid : (double)shown;
    mc_judge(it, mc_rule_cpus(usable, expected), usable, expected, "CPUs");
    mc_what(it, "%ld cores shown, %.2f usable", shown, usable);
    if (o->cpus_paid > 0) {
        char tail[96];
        snprintf(tail, sizeof tail, " (%.2f paid for)", o->cpus_paid);
        strncat(it->what, tail, sizeof it->what - strlen(it->what) - 1);
    }
    if (it->verdict == MC_BELOW_SPEC) {
        if (q == 1 && quota <= aff)
            mc_cause(it, "cgroup CPU quota of %.2f CPUs (%s): size num_workers and torch threads "
                         "from it, not from os.cpu_count()", quota, where);
        else if (aff < shown)
            mc_cause(it, "the affinity mask holds %d of the %ld CPUs (taskset, cpuset or the "
                         "container's --cpuset-cpus)", aff, shown);
        else
            mc_cause(it, "the machine has fewer CPUs than were paid for");
    }
    mc_str(it, "quota_file", q == 1 ? where : NULL);
}

void mc_check_steal(mc_list *l, const mc_cpustat *a, const mc_cpustat *b, double secs)
{
    mc_item *it = mc_add(l, "cpu.steal", "");
    if (!it)
        return;
    if (!a->ok || !b->ok) {
        mc_cause(it, "/proc/stat could not be read");
        return;
    }
    if (!a->has_steal) {
        mc_cause(it, "this kernel's /proc/stat has no steal column");
        return;
    }
    const uint64_t dt = b->total - a->total;
    if (dt == 0 || b->total < a->total) {
        mc_cause(it, "no CPU time passed between the two readings of /proc/stat");
        return;
    }
    const double share = (double)(b->steal - a->steal) / (double)dt;
    mc_judge(it, share >= MC_STEAL_BELOW ? MC_BELOW_SPEC : MC_TO_SPEC, 100 * share,
             100 * MC_STEAL_BELOW, "%");
    mc_what(it, "%.1f%% of CPU time stolen by the hypervisor over %.1f s of the check",
            100 * share, secs);
    mc_num(it, "seconds", secs);
    if (it->verdict == MC_BELOW_SPEC)
        mc_cause(it, "a crowded host: other VMs get the CPUs this one was promised (a noisy "
                     "neighbour); loader workers run slower than their CPU time says");
}

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* "cpu MHz" of the first processor in /proc/cpuinfo; 0 unknown. */
static double cpuinfo_mhz(void)
{
    char *buf = malloc(1 << 16);
    double mhz = 0;
    if (buf && mc_read_text("/proc/cpuinfo", buf, 1 << 16) >= 0) {
        const char *p = strstr(buf, "cpu MHz");
        const char *colon = p ? strchr(p, ':') : NULL;
        if (colon)
            mhz = strtod(colon + 1, NULL);
    }
    free(buf);
    return mhz;
}

void mc_check_freq(mc_list *l, const mc_opts *o)
{
    mc_item *it = mc_add(l, "cpu.freq", "");
    if (!it)
        return;
    /* RATIONALE: a core at rest runs at its lowest clock; 0.3 s of work on
     * this thread lets the governor raise it before it is read */
    volatile double x = 1;
    const double t0 = now_s();
    while (now_s() - t0 < 0.3)
        for (int i = 0; i < 10000; i++)
            x = x * 1.0000001 + 1e-9;
    const int cpu = sched_getcpu();
    char p[512], gov[64] = "";
    double cur = 0, max = 0;
    const int have = cpu >= 0 &&
        mc_read_double(mc_path(p, sizeof p, "%s/devices/system/cpu/cpu%d/cpufreq/scaling_cur_freq",
                               o->sysfs, cpu), &cur) == 0 &&
        mc_read_double(mc_path(p, sizeof p, "%s/devices/system/cpu/cpu%d/cpufreq/cpuinfo_max_freq",
                               o->sysfs, cpu), &max) == 0 && cur > 0 && max > 0;
    if (!have) {
        const double mhz = cpuinfo_mhz();
        mc_num(it, "cpuinfo_MHz", mhz > 0 ? mhz : NAN);
        if (mhz > 0)
            mc_what(it, "%.2f GHz in /proc/cpuinfo", mhz / 1000);
        mc_cause(it, "no cpufreq in sysfs (a VM or a container without it): the maximum clock "
                     "is unknown");
        return;
    }
    mc_read_line(mc_path(p, sizeof p, "%s/devices/system/cpu/cpu%d/cpufreq/scaling_governor",
                         o->sysfs, cpu), gov, sizeof gov);
    const double ratio = cur / max;
    mc_judge(it, ratio < 0.7 ? MC_BELOW_SPEC : MC_TO_SPEC, cur / 1e6, max / 1e6, "GHz");
    mc_what(it, "CPU %d at %.2f GHz under load, maximum %.2f GHz", cpu, cur / 1e6, max / 1e6);
    mc_str(it, "governor", gov[0] ? gov : NULL);
    if (it->verdict == MC_BELOW_SPEC)
        mc_cause(it, "the clock stays low under load: governor %s, or a thermal or power limit",
                 gov[0] ? gov : "unknown");
    (void)x;
}
