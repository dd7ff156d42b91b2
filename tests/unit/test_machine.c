/* test_machine.c — the pure parts of `gpustarve check` (analyzer/machine/):
 * the parsers of /proc/stat, cgroup files, mountinfo and meminfo from
 * hand-written texts; the file system kinds; the PCIe rates; the verdict
 * rules at their edges (docs/check.md); the built-in datasheet table (every
 * row parsed, with a source) and the row a real device name matches. */
#include <math.h>
#include <string.h>

#include "gs_check.h"
#include "machine/mc_cgroup.h"
#include "machine/mc_cpu.h"
#include "machine/mc_datasheet.h"
#include "machine/mc_files.h"
#include "machine/mc_fs.h"
#include "machine/mc_gpu.h"
#include "machine/mc_mem.h"

#define NEAR(a, b) (fabs((a) - (b)) < 1e-9)

static void test_proc_stat(void)
{
    mc_cpustat s;
    ASSERT_EQ(mc_parse_proc_stat("cpu  100 2 30 400 5 0 6 7 0 0\ncpu0 1 2 3 4\n", &s), 0);
    ASSERT_EQ(s.total, 100 + 2 + 30 + 400 + 5 + 0 + 6 + 7);
    ASSERT_EQ(s.steal, 7);
    ASSERT_TRUE(s.has_steal && s.ok);
    /* an old kernel: no steal column */
    ASSERT_EQ(mc_parse_proc_stat("cpu  1 2 3 4 5 6 7\n", &s), 0);
    ASSERT_TRUE(!s.has_steal && s.total == 28);
    ASSERT_EQ(mc_parse_proc_stat("intr 1 2 3\n", &s), -1);
    ASSERT_EQ(mc_parse_proc_stat("xcpu 1 2 3 4\n", &s), -1);
}

/* The steal line from two readings of /proc/stat, as the check makes them. */
static void test_steal(void)
{
    mc_list l = {0};
    mc_cpustat a, b;
    mc_parse_proc_stat("cpu  100 0 0 900 0 0 0 0 0 0\n", &a);
    mc_parse_proc_stat("cpu  180 0 0 1800 0 0 0 20 0 0\n", &b); /* 20 of 1000 ticks: 2% */
    mc_check_steal(&l, &a, &b, 10.0);
    mc_parse_proc_stat("cpu  180 0 0 1800 0 0 0 120 0 0\n", &b); /* 120 of 1100: 10.9% */
    mc_check_steal(&l, &a, &b, 10.0);
    mc_parse_proc_stat("cpu  1 2 3 4 5 6 7\n", &a); /* no steal column */
    mc_check_steal(&l, &a, &b, 10.0);
    mc_parse_proc_stat("cpu  100 0 0 900 0 0 0 0 0 0\n", &a);
    mc_check_steal(&l, &a, &a, 0.0); /* no time between them */
    ASSERT_EQ(l.n, 4);
    ASSERT_TRUE(l.v[0].verdict == MC_TO_SPEC && NEAR(l.v[0].measured, 2.0) && NEAR(l.v[0].expected, 5.0));
    ASSERT_TRUE(l.v[1].verdict == MC_BELOW_SPEC && fabs(l.v[1].measured - 100.0 * 120 / 1100) < 1e-9);
    ASSERT_TRUE(strstr(l.v[1].cause, "noisy neighbour") != NULL);
    ASSERT_TRUE(l.v[2].verdict == MC_CANNOT_TELL && strstr(l.v[2].cause, "no steal column"));
    ASSERT_TRUE(l.v[3].verdict == MC_CANNOT_TELL && strstr(l.v[3].cause, "no CPU time passed"));
    mc_list_free(&l);
}

static void test_cgroup_files(void)
{
    double cpus = 0, b = 0, i = 0, v = 0;
    ASSERT_EQ(mc_parse_cpu_max("max 100000\n", &cpus), 0);
    ASSERT_EQ(mc_parse_cpu_max("765000 100000\n", &cpus), 1);
    ASSERT_TRUE(NEAR(cpus, 7.65));
    ASSERT_EQ(mc_parse_cpu_max("garbage", &cpus), -1);
    const char *io = "8:0 rbps=max wbps=max riops=max wiops=max\n"
                     "7:3 rbps=20971520 wbps=max riops=200 wiops=max\n";
    ASSERT_EQ(mc_parse_io_max(io, 7, 3, &b, &i), 1);
    ASSERT_TRUE(NEAR(b, 20971520) && NEAR(i, 200));
    ASSERT_EQ(mc_parse_io_max(io, 8, 0, &b, &i), 0);
    ASSERT_EQ(mc_parse_io_max(io, 9, 9, &b, &i), 0);
    ASSERT_EQ(mc_parse_blkio("7:0 20971520\n8:16 5\n", 8, 16, &v), 1);
    ASSERT_TRUE(NEAR(v, 5));
    ASSERT_EQ(mc_parse_blkio("7:0 20971520\n", 7, 1, &v), 0);
}

static void test_cgroup_paths(void)
{
    mc_cgroup cg;
    int v2;
    const char *top;
    /* a hybrid host: v1 controllers, an empty v2 beside them */
    mc_cgroup_parse(&cg,
                    "9:name=systemd:/\n4:memory:/process_api/abc\n1:cpu:/\n2:cpuacct:/\n0::/\n",
                    "32 31 0:29 / /sys/fs/cgroup/cpu rw - cgroup cgroup rw,cpu\n"
                    "35 31 0:32 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n"
                    "41 31 0:38 / /sys/fs/cgroup/unified rw - cgroup2 cgroup2 rw\n");
    const char *d = mc_cgroup_dir(&cg, "memory", &v2, &top);
    ASSERT_TRUE(d && strcmp(d, "/sys/fs/cgroup/memory/process_api/abc") == 0 && !v2);
    ASSERT_TRUE(strcmp(top, "/sys/fs/cgroup/memory") == 0);
    d = mc_cgroup_dir(&cg, "cpu", &v2, &top);
    ASSERT_TRUE(d && strcmp(d, "/sys/fs/cgroup/cpu") == 0 && !v2);
    d = mc_cgroup_dir(&cg, "io", &v2, &top); /* not in v1: the v2 hierarchy */
    ASSERT_TRUE(d && strcmp(d, "/sys/fs/cgroup/unified") == 0 && v2);
    /* v2 only, a container whose namespace root is the mount's root */
    mc_cgroup_parse(&cg, "0::/\n",
                    "25 20 0:30 /docker/abc /sys/fs/cgroup ro - cgroup2 cgroup rw\n");
    d = mc_cgroup_dir(&cg, "cpu", &v2, &top);
    ASSERT_TRUE(d && strcmp(d, "/sys/fs/cgroup") == 0 && v2);
    /* v2, the host's view of a child */
    mc_cgroup_parse(&cg, "0::/user.slice/job-1\n",
                    "25 20 0:30 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n");
    d = mc_cgroup_dir(&cg, "memory", &v2, &top);
    ASSERT_TRUE(d && strcmp(d, "/sys/fs/cgroup/user.slice/job-1") == 0);
    /* no cgroup mounted at all */
    mc_cgroup_parse(&cg, "0::/x\n", "1 0 8:1 / / rw - ext4 /dev/sda1 rw\n");
    ASSERT_TRUE(mc_cgroup_dir(&cg, "cpu", &v2, &top) == NULL);
    double q;
    ASSERT_EQ(mc_cgroup_cpu_quota(&cg, &q, NULL, 0), -1);
}

/* Another process's cgroup by controller, from its /proc/<pid>/cgroup
 * alone (run_peers.c: the scheduling group of a busy process). */
static void test_cgroup_path_of_a_process(void)
{
    char p[64];
    /* v1's cpu line wins over the v2 line, wherever cpu is in the list */
    ASSERT_EQ(mc_cgroup_path("0::/\n3:cpuacct,cpu:/job\n1:name=systemd:/x\n", "cpu", p,
                             sizeof p), 0);
    ASSERT_TRUE(strcmp(p, "/job") == 0);
    ASSERT_EQ(mc_cgroup_path("2:cpu,cpuacct:/a\n", "cpu", p, sizeof p), 0);
    ASSERT_TRUE(strcmp(p, "/a") == 0);
    /* cpuacct alone is not cpu: the v2 line */
    ASSERT_EQ(mc_cgroup_path("2:cpuacct:/a\n0::/user.slice/b", "cpu", p, sizeof p), 0);
    ASSERT_TRUE(strcmp(p, "/user.slice/b") == 0);
    ASSERT_EQ(mc_cgroup_path("2:cpuacct:/a\n", "cpu", p, sizeof p), -1);
    ASSERT_EQ(mc_cgroup_path("", "cpu", p, sizeof p), -1);
}

static void test_meminfo_and_fs(void)
{
    const char *mi = "MemTotal:       24683792 kB\nMemFree: 1 kB\nSwapTotal:             0 kB\n";
    ASSERT_TRUE(NEAR(mc_meminfo(mi, "MemTotal"), 24683792.0 * 1024));
    ASSERT_TRUE(NEAR(mc_meminfo(mi, "SwapTotal"), 0));
    ASSERT_TRUE(mc_meminfo(mi, "Mem") < 0); /* a prefix is not a field */
    ASSERT_EQ(mc_fs_kind("ext4"), MC_FS_LOCAL);
    ASSERT_EQ(mc_fs_kind("nfs4"), MC_FS_NETWORK);
    ASSERT_EQ(mc_fs_kind("lustre"), MC_FS_NETWORK);
    ASSERT_EQ(mc_fs_kind("fuse.s3fs"), MC_FS_FUSE);
    ASSERT_EQ(mc_fs_kind("fuse.sshfs"), MC_FS_NETWORK);
    ASSERT_EQ(mc_fs_kind("fuseblk"), MC_FS_LOCAL);
    ASSERT_EQ(mc_fs_kind("overlay"), MC_FS_OVERLAY);
    ASSERT_EQ(mc_fs_kind("tmpfs"), MC_FS_MEMORY);
    ASSERT_EQ(mc_fs_kind("virtiofs"), MC_FS_HOST);
    ASSERT_EQ(mc_fs_kind(""), MC_FS_UNKNOWN);
    mc_fsinfo fi;
    memset(&fi, 0, sizeof fi);
    char c[400];
    fi.kind = MC_FS_NETWORK;
    snprintf(fi.fstype, sizeof fi.fstype, "nfs4");
    snprintf(fi.source, sizeof fi.source, "srv:/data");
    mc_fs_cause(&fi, 1, c, sizeof c);
    ASSERT_TRUE(strstr(c, "network file system") && strstr(c, "nfs4") && strstr(c, "srv:/data"));
    fi.limit_bps = 20971520; /* a cgroup limit is the first cause named */
    snprintf(fi.disk, sizeof fi.disk, "loop3");
    mc_fs_cause(&fi, 0, c, sizeof c);
    ASSERT_TRUE(strstr(c, "21.0 MB/s") && strstr(c, "loop3"));
}

static void test_rules(void)
{
    ASSERT_EQ(mc_rule_cpus(7.65, 96), MC_BELOW_SPEC);
    ASSERT_EQ(mc_rule_cpus(7.5, 8), MC_TO_SPEC);
    ASSERT_EQ(mc_rule_cpus(7.49, 8), MC_BELOW_SPEC);
    ASSERT_EQ(mc_rule_seq(199.9, 200), MC_BELOW_SPEC);
    ASSERT_EQ(mc_rule_seq(200, 200), MC_TO_SPEC);
    ASSERT_EQ(mc_rule_small(2.0, 2.0), MC_TO_SPEC);
    ASSERT_EQ(mc_rule_small(2.01, 2.0), MC_BELOW_SPEC);
    ASSERT_EQ(mc_pcie_gen(2.5), 1);
    ASSERT_EQ(mc_pcie_gen(8.0), 3);
    ASSERT_EQ(mc_pcie_gen(16.0), 4);
    ASSERT_EQ(mc_pcie_gen(32.0), 5);
    ASSERT_EQ(mc_pcie_gen(12.0), 0);
    ASSERT_TRUE(NEAR(mc_pcie_GBps(4, 16), 31.504));
    ASSERT_TRUE(NEAR(mc_pcie_GBps(3, 8), 7.88));
    ASSERT_TRUE(mc_pcie_GBps(7, 16) == 0 && mc_pcie_GBps(4, 0) == 0);
    const double secs[] = {0.4, 0.1, 0.2};
    ASSERT_TRUE(NEAR(mc_rate_median(secs, 3, 1e9), 5e9));
    char r[300];
    mc_reasons_text(MC_NVML_REASON_IDLE | MC_NVML_REASON_DISPLAY, r, sizeof r);
    ASSERT_TRUE(r[0] == 0); /* idle and display clocks slow nothing down */
    mc_reasons_text(MC_NVML_REASON_SW_POWER | MC_NVML_REASON_HW_THERMAL, r, sizeof r);
    ASSERT_TRUE(strcmp(r, "power cap, HW thermal slowdown") == 0);
}

static void test_datasheet(void)
{
    mc_sheet s;
    char err[300] = "";
    ASSERT_EQ(mc_sheet_load(&s, NULL, err, sizeof err), 0);
    ASSERT_MSG(s.n >= 19, "%zu rows (%s)", s.n, err);
    for (size_t i = 0; i < s.n; i++) {
        const mc_card *c = &s.v[i];
        ASSERT_MSG(strstr(c->source, "https://") != NULL, "%s: no URL in its source", c->name);
        ASSERT_MSG(c->sms > 0 && c->mem_gb > 0 && c->mem_GBps > 0 && c->fp32_tflops > 0 &&
                       c->f16_tflops > c->fp32_tflops,
                   "%s: a figure missing or out of order", c->name);
    }
    const struct { const char *device, *row; } names[] = {
        {"NVIDIA GeForce RTX 3090", "NVIDIA GeForce RTX 3090"},
        {"NVIDIA GeForce RTX 3090 Ti", NULL},
        {"NVIDIA GeForce RTX 4090", "NVIDIA GeForce RTX 4090"},
        {"NVIDIA A10", "NVIDIA A10"},
        {"NVIDIA A10G", NULL},
        {"NVIDIA A40", "NVIDIA A40"},
        {"NVIDIA L4", "NVIDIA L4"},
        {"NVIDIA L40S", "NVIDIA L40S"},
        {"NVIDIA L40", NULL},
        {"Tesla V100-SXM2-16GB", "NVIDIA V100 SXM2 16GB"},
        {"Tesla V100-PCIE-32GB", "NVIDIA V100 PCIe 32GB"},
        {"NVIDIA A100-PCIE-40GB", "NVIDIA A100 PCIe 40GB"},
        {"NVIDIA A100 80GB PCIe", "NVIDIA A100 PCIe 80GB"},
        {"NVIDIA A100-SXM4-40GB", "NVIDIA A100 SXM4 40GB"},
        {"NVIDIA A100-SXM4-80GB", "NVIDIA A100 SXM4 80GB"},
        {"NVIDIA A100-SXM4-40GB MIG 3g.20gb", "NVIDIA A100 SXM4 40GB"},
        {"NVIDIA H100 80GB HBM3", "NVIDIA H100 SXM"},
        {"NVIDIA H100 PCIe", "NVIDIA H100 PCIe"},
        {"NVIDIA H100 NVL", NULL},
        {"NVIDIA H200", "NVIDIA H200 SXM"},
        {"NVIDIA H200 NVL", NULL},
        {"NVIDIA B200", "NVIDIA B200"},
        {"AMD Instinct MI300X", "AMD Instinct MI300X"},
        {"gpustarve simulated GPU", NULL},
    };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        const mc_card *c = mc_sheet_match(&s, names[i].device);
        ASSERT_MSG(names[i].row ? c && strcmp(c->name, names[i].row) == 0 : c == NULL,
                   "%s matched %s, want %s", names[i].device, c ? c->name : "none",
                   names[i].row ? names[i].row : "none");
    }
    const mc_card *h = mc_sheet_match(&s, "NVIDIA H100 80GB HBM3");
    ASSERT_TRUE(h && h->sms == 132 && h->pcie_gen == 5 && h->pcie_width == 16 && h->f16_bf16);
    const mc_card *v = mc_sheet_match(&s, "Tesla V100-SXM2-32GB");
    ASSERT_TRUE(v && !v->f16_bf16 && v->pcie_gen == 3);
    ASSERT_TRUE(strcmp(mc_mig_profile("NVIDIA A100-SXM4-40GB MIG 3g.20gb"), "3g.20gb") == 0);
    ASSERT_TRUE(mc_mig_profile("NVIDIA A100-SXM4-40GB") == NULL);
    mc_sheet_free(&s);
    /* a table that does not parse is refused, saying where */
    mc_sheet bad = {0};
    ASSERT_EQ(mc_sheet_parse(&bad, "# c\nA\t*A\t1\t2\n", err, sizeof err), -1);
    ASSERT_TRUE(strstr(err, "line 2") != NULL);
    mc_sheet_free(&bad);
    ASSERT_EQ(mc_sheet_parse(&bad, "A\t*A\tx\t1\t1\t1\t2\tbf16\t4\t16\tsome source\n", err, sizeof err), -1);
    mc_sheet_free(&bad);
}

int main(void)
{
    test_proc_stat();
    test_steal();
    test_cgroup_files();
    test_cgroup_paths();
    test_cgroup_path_of_a_process();
    test_meminfo_and_fs();
    test_rules();
    test_datasheet();
    return gs_check_done("test_machine");
}
