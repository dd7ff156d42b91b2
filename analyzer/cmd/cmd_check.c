/* cmd_check.c — `gpustarve check [PATH...]`: is the rented machine what
 * you pay for? The CPUs, memory and shared memory, the storage under each
 * dataset PATH, each GPU and its link, several GPUs together, each against
 * what it should give: one line per item, "to spec", "below spec"
 * (measured vs expected, the likely cause) or "cannot tell" (why), and the
 * JSON of docs/check.md.
 *
 * Responsible for: options, the order of the measurements (the steal time
 * spans all of them), sizing the shared memory need from a traced run
 * (--run DIR), and handing the items to check_out.c.
 *
 * Must never: change a setting of the machine, need root, or exit nonzero
 * because a verdict is "below spec" (the verdicts are the output).
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "cmd/check.h"
#include "cmd/cli_util.h"
#include "machine/mc_cpu.h"
#include "machine/mc_files.h"
#include "machine/mc_fs.h"
#include "machine/mc_gpu.h"
#include "machine/mc_mem.h"
#include "model/an_model.h"
#include "model/an_ranks.h"

static const char usage_text[] =
    "usage: gpustarve check [options] [PATH...]\n"
    "\n"
    "Is this machine what you pay for? Measure the CPUs the job may use, memory\n"
    "and shared memory, the storage under each PATH (give your dataset), each\n"
    "GPU and its PCIe link (copies, memory bandwidth, GEMM rates, throttling),\n"
    "and several GPUs together (peer copies, NCCL all-reduce, 1-vs-N scaling),\n"
    "and compare each with what it should give: one line per item, \"to spec\",\n"
    "\"below spec\" (measured vs expected, likely cause) or \"cannot tell\" (why).\n"
    "CUDA, cuBLAS, NVML and NCCL are loaded at run time; a missing one is a\n"
    "\"cannot tell\" line. About 2 minutes with one GPU; --quick about 20 s.\n"
    "\n"
    "options:\n"
    "  --quick              smaller samples and budgets\n"
    "  --json               JSON on stdout (schema gpustarve.check/1, docs/check.md)\n"
    "  -o, --output FILE    also write the JSON to FILE\n"
    "  --shm PATH           the shared memory file system (default /dev/shm)\n"
    "  --run DIR            size the shared memory need from a traced run: its\n"
    "                       num_workers, prefetch_factor and bytes copied per step\n"
    "  --workers N          DataLoader workers for the shared memory need (default:\n"
    "                       the usable CPUs, at most 8)\n"
    "  --batch-mb MB        bytes of one batch, for the shared memory need\n"
    "                       (default 154: 256 images of 3x224x224 float32)\n"
    "  --cpus N             the CPUs the offer promises (default: those shown)\n"
    "  --memory GIB         the memory the offer promises (default: what is shown)\n"
    "  --price AMOUNT       the price of one GPU for one hour, any currency: a cost\n"
    "                       line with what an hour of datasheet compute costs\n"
    "  --expect-read-mbps N sequential read the storage should give (default 200)\n"
    "  --max-bytes N        read at most N bytes sequentially per PATH (suffix K,\n"
    "                       M, G; default 1G, --quick 256M)\n"
    "  --files N            small files to read per PATH (default 2000, --quick 300)\n"
    "  --threads N          small-file readers at once (default 4)\n"
    "  --copy-size N        bytes per GPU copy (default 256M, --quick 64M)\n"
    "  --repeats N          timed repeats of each GPU measurement (default 5,\n"
    "                       --quick 3)\n"
    "  --gemm-size N        square GEMM size (default 8192, --quick 4096)\n"
    "  --no-gpu             do not look for CUDA\n"
    "  --datasheet FILE     another datasheet table, in the format of the built-in\n"
    "                       one (analyzer/machine/gpus.tsv, docs/check.md)\n"
    "  -q, --quiet          fewer messages on stderr\n"
    "  -v, --verbose        more messages on stderr\n"
    "  -h, --help           show this help\n"
    "\n"
    "Exit status: 0 checked (whatever the verdicts); 1 writing FILE failed;\n"
    "2 bad usage (a PATH that does not exist, a bad option).\n";

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* The shared memory need from a traced run: 0, or -1 (said on stderr). */
static int shm_from_run(const char *dir, mc_opts *mo)
{
    an_opts ao;
    const char *bad = NULL;
    if (an_opts_init(&ao, NULL, NULL, &bad) < 0)
        return -1;
    an_run run;
    an_job job;
    char err[512];
    int rc = -1;
    if (an_run_load(&run, dir, &ao, err, sizeof err) < 0) {
        gs_cli_error("check: --run %s: %s", dir, err);
        an_run_free(&run); /* what a failed load holds */
        an_opts_free(&ao);
        return -1;
    }
    if (an_job_analyze(&run, &ao, &job, err, sizeof err) < 0) {
        gs_cli_error("check: --run %s: %s", dir, err);
    } else {
        const an_result *r = job.top;
        const an_proc *tr = r->trainer;
        const char *pf = an_cfg_value(tr, "prefetch_factor");
        const uint64_t h2d = tr->h2d_pinned_bytes + tr->h2d_pageable_bytes;
        if (r->cur_workers > 0)
            mo->shm_workers = r->cur_workers;
        if (pf && atoi(pf) > 0)
            mo->shm_prefetch = atoi(pf);
        if (h2d && r->nsteps)
            mo->shm_batch_bytes = (double)h2d / (double)r->nsteps;
        snprintf(mo->shm_need_from, sizeof mo->shm_need_from, "from the run in %s%s", dir,
                 h2d && r->nsteps ? "" : "; batch size from the rule: the run copied nothing");
        rc = 0;
    }
    an_job_free(&job);
    an_run_free(&run);
    an_opts_free(&ao);
    return rc;
}

/* The GPU lines: every device, then the devices together and the cost. */
static void check_gpus(mc_list *l, const mc_opts *o, const mc_sheet *sheet, double price)
{
    mc_cuda cu;
    mc_cuda_open(&cu, o);
    if (!cu.ndev) {
        mc_gpu_none(l, &cu);
        return;
    }
    mc_gpu *g = calloc((size_t)cu.ndev, sizeof *g);
    if (!g)
        return;
    for (int d = 0; d < cu.ndev; d++) {
        gs_cli_msg(2, "check: GPU %d", d);
        mc_gpu_props(&cu, o, sheet, d, &g[d]);
        mc_gpu_copies(&cu, o, &g[d]);
        mc_gpu_gemm(&cu, o, &g[d]);
        mc_gpu_lines(l, &cu, &g[d]);
    }
    mc_multi_lines(l, &cu, o, g, cu.ndev);
    if (price > 0)
        mc_cost_line(l, g, cu.ndev, price);
    free(g);
}

/* Option values: 0, or the usage error said (GS_EXIT_USAGE). */
static int opt_double(const char *name, const char *arg, double lo, double hi, const char *want,
                      double *out)
{
    return gs_cli_double(arg, lo, hi, out) < 0
               ? gs_cli_usage_error("check", "%s needs %s, not '%s'", name, want, arg)
               : 0;
}

static int opt_long(const char *name, const char *arg, long lo, long hi, long *out)
{
    return gs_cli_long(arg, lo, hi, out) < 0
               ? gs_cli_usage_error("check", "%s needs a number from %ld to %ld, not '%s'", name, lo, hi, arg)
               : 0;
}

static int opt_size(const char *name, const char *arg, uint64_t lo, uint64_t hi, uint64_t *out)
{
    uint64_t v = 0;
    if (gs_cli_size(arg, &v) < 0 || v < lo || v > hi)
        return gs_cli_usage_error("check", "%s needs a size (suffix K, M, G) from %llu bytes, "
                                  "not '%s'", name, (unsigned long long)lo, arg);
    *out = v;
    return 0;
}

typedef struct check_args {
    int json, workers;
    double batch_mb, price;
    const char *outpath, *run;
} check_args;

static int parse(int argc, char **argv, mc_opts *o, check_args *a)
{
    static const struct option opts[] = {
        {"quick", no_argument, NULL, 'Q'}, {"json", no_argument, NULL, 'j'},
        {"output", required_argument, NULL, 'o'}, {"shm", required_argument, NULL, 'S'},
        {"run", required_argument, NULL, 'R'}, {"workers", required_argument, NULL, 'W'},
        {"batch-mb", required_argument, NULL, 'B'}, {"cpus", required_argument, NULL, 'C'},
        {"memory", required_argument, NULL, 'M'}, {"price", required_argument, NULL, 'P'},
        {"expect-read-mbps", required_argument, NULL, 'E'},
        {"max-bytes", required_argument, NULL, 'm'}, {"files", required_argument, NULL, 'F'},
        {"threads", required_argument, NULL, 'T'}, {"copy-size", required_argument, NULL, 's'},
        {"repeats", required_argument, NULL, 'r'}, {"gemm-size", required_argument, NULL, 'G'},
        {"no-gpu", no_argument, NULL, 'N'}, {"datasheet", required_argument, NULL, 'D'},
        {"quiet", no_argument, NULL, 'q'}, {"verbose", no_argument, NULL, 'v'},
        {"help", no_argument, NULL, 'h'}, {NULL, 0, NULL, 0},
    };
    static const char optstring[] = "o:qvh";
    /* --quick first: the other options override its defaults */
    int quick = 0;
    for (int i = 1; i < argc; i++)
        quick |= strcmp(argv[i], "--quick") == 0;
    mc_opts_default(o, quick);
    memset(a, 0, sizeof *a);
    long v = 0;
    int opt, bad = 0;
    optind = 0;
    opterr = 0;
    while (!bad && (opt = getopt_long(argc, argv, optstring, opts, NULL)) != -1) {
        switch (opt) {
        case 'Q': break;
        case 'j': a->json = 1; break;
        case 'o': a->outpath = optarg; break;
        case 'S': o->shm_path = optarg; break;
        case 'R': a->run = optarg; break;
        case 'W': bad = opt_long("--workers", optarg, 1, 1024, &v); a->workers = (int)v; break;
        case 'B': bad = opt_double("--batch-mb", optarg, 0.001, 1e6, "megabytes > 0", &a->batch_mb); break;
        case 'C': bad = opt_double("--cpus", optarg, 0.01, 1e5, "a number > 0", &o->cpus_paid); break;
        case 'M':
            bad = opt_double("--memory", optarg, 0.001, 1e7, "GiB > 0", &o->memory_paid_gib);
            break;
        case 'P': bad = opt_double("--price", optarg, 1e-9, 1e9, "an amount > 0", &a->price); break;
        case 'E':
            bad = opt_double("--expect-read-mbps", optarg, 0.001, 1e9, "MB/s > 0", &o->read_expect_MBps);
            break;
        case 'm': bad = opt_size("--max-bytes", optarg, 1, 1ull << 50, &o->read_max_bytes); break;
        case 'F': bad = opt_long("--files", optarg, 1, 10000000, &v); o->files_max = (int)v; break;
        case 'T': bad = opt_long("--threads", optarg, 1, 64, &v); o->file_threads = (int)v; break;
        case 's': bad = opt_size("--copy-size", optarg, 4096, 16ull << 30, &o->copy_bytes); break;
        case 'r': bad = opt_long("--repeats", optarg, 1, 64, &v); o->repeats = (int)v; break;
        case 'G':
            bad = opt_long("--gemm-size", optarg, 64, 65536, &v);
            o->gemm_n = o->scaling_n = (int)v;
            break;
        case 'N': o->no_gpu = 1; break;
        case 'D': o->datasheet = optarg; break;
        case 'q': gs_verbosity--; break;
        case 'v': gs_verbosity++; break;
        case 'h': fputs(usage_text, stdout); return -1;
        default: return gs_cli_bad_option("check", argc, argv, optstring, opts);
        }
    }
    if (bad)
        return bad;
    for (int i = optind; i < argc; i++) {
        struct stat st;
        if (stat(argv[i], &st) != 0)
            return gs_cli_usage_error("check", "%s: %s", argv[i], strerror(errno));
    }
    return 0;
}

/* The shared memory need: --run, else the options and the rule. */
static int shm_need(mc_opts *o, const check_args *a, const mc_list *l)
{
    double usable = 1;
    for (size_t i = 0; i < l->n; i++)
        if (strcmp(l->v[i].id, "cpu") == 0 && !isnan(l->v[i].measured))
            usable = l->v[i].measured;
    o->shm_workers = (int)floor(usable);
    o->shm_workers = o->shm_workers < 1 ? 1 : o->shm_workers > MC_SHM_RULE_MAX_WORKERS
                                                  ? MC_SHM_RULE_MAX_WORKERS : o->shm_workers;
    o->shm_prefetch = MC_SHM_RULE_PREFETCH;
    o->shm_batch_bytes = MC_SHM_RULE_BATCH_BYTES;
    snprintf(o->shm_need_from, sizeof o->shm_need_from, "the rule");
    if (a->run && shm_from_run(a->run, o) < 0)
        return -1;
    if (a->workers)
        o->shm_workers = a->workers;
    if (a->batch_mb > 0)
        o->shm_batch_bytes = a->batch_mb * 1e6;
    if (!a->run && (a->workers || a->batch_mb > 0))
        snprintf(o->shm_need_from, sizeof o->shm_need_from, "the options and the rule");
    return 0;
}

static int write_outputs(const check_run *c, const check_args *a)
{
    gs_out *o = malloc(sizeof *o);
    int rc = GS_EXIT_OK;
    if (!o) {
        gs_cli_error("out of memory");
        return GS_EXIT_FAIL;
    }
    gs_out_init(o, stdout);
    if (a->json)
        check_write_json(o, c);
    else
        check_write_text(o, c);
    gs_out_flush(o);
    if (a->outpath) {
        FILE *f = fopen(a->outpath, "w");
        if (!f) {
            gs_cli_error("check: %s: %s", a->outpath, strerror(errno));
            rc = GS_EXIT_FAIL;
        } else {
            gs_out_init(o, f);
            check_write_json(o, c);
            gs_out_flush(o);
            if (ferror(f) | (fclose(f) != 0)) {
                gs_cli_error("check: writing %s failed", a->outpath);
                rc = GS_EXIT_FAIL;
            }
        }
    }
    free(o);
    return rc;
}

int gs_cmd_check(int argc, char **argv)
{
    mc_opts o;
    check_args a;
    const int p = parse(argc, argv, &o, &a);
    if (p != 0)
        return p < 0 ? GS_EXIT_OK : p;
    const char *sysfs = getenv("GPUSTARVE_SYSFS_ROOT");
    if (sysfs && *sysfs)
        o.sysfs = sysfs;
    mc_sheet sheet;
    char err[300];
    if (mc_sheet_load(&sheet, o.datasheet, err, sizeof err) < 0) {
        mc_sheet_free(&sheet);
        return gs_cli_usage_error("check", "--datasheet: %s", err);
    }
    const double t0 = now_s();
    mc_cpustat st0, st1;
    mc_cpustat_now(&st0);
    mc_cgroup cg;
    mc_cgroup_load(&cg);
    mc_list l = {0};
    mc_check_cpus(&l, &o, &cg);
    mc_check_freq(&l, &o);
    mc_check_memory(&l, &o, &cg);
    int rc = GS_EXIT_OK;
    if (shm_need(&o, &a, &l) < 0)
        rc = GS_EXIT_USAGE;
    else
        mc_check_shm(&l, &o);
    for (int i = optind; i < argc && rc == GS_EXIT_OK; i++) {
        gs_cli_msg(2, "check: storage %s", argv[i]);
        mc_fsinfo fi;
        mc_fs_info(argv[i], o.sysfs, &cg, &fi);
        mc_check_fs(&l, argv[i], &fi);
        mc_storage_lines(&l, argv[i], &o, &fi);
    }
    if (rc == GS_EXIT_OK)
        check_gpus(&l, &o, &sheet, a.price);
    mc_cpustat_now(&st1);
    const double secs = now_s() - t0;
    mc_check_steal(&l, &st0, &st1, secs);
    if (rc == GS_EXIT_OK) {
        const check_run c = {&l, &o, argv + optind, argc - optind, secs, sheet.from};
        rc = write_outputs(&c, &a);
    }
    mc_list_free(&l);
    mc_sheet_free(&sheet);
    return rc;
}
