/* cmd_import.c — `gpustarve import`: PyTorch profiler (Kineto) trace JSON,
 * plain or compressed (gzip, xz, zstd), one file per rank, into a gpustarve run directory that
 * `report`, `compare` and `sweep`'s comparison read like a traced run.
 * docs/import.md says what maps to what and what cannot be known.
 *
 * Responsible for: options, checking the inputs are regular files before
 * anything is made, the output directory (private, 0700, as `run` makes
 * its own; its files 0600), each input's run through the unpacker
 * (import/import_unpack.c), the JSON reader and the converter, naming each
 * output file, the summary line per file, and on failure removing what
 * this import made (its files, and the directory when it made it).
 *
 * Must never: leave a half-written trace file behind (the writer removes
 * it on failure), write into a directory that already holds a run, open an
 * input that could block (a FIFO), or remove anything it did not make.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cmd/cli_util.h"
#include "import.h"

static const char usage[] =
    "usage: gpustarve import [-o DIR] [--tmpdir DIR] [--mem MB] [-q|-v] FILE...\n"
    "\n"
    "Convert PyTorch profiler traces (torch.profiler / Kineto JSON, plain or\n"
    "compressed with gzip, xz or zstd, any format PyTorch has written since\n"
    "1.8; one file per rank) into a gpustarve run directory. 'report',\n"
    "'compare' and the comparison of 'sweep' read it like a traced run:\n"
    "steps from ProfilerStep#N, data wait from the DataLoader __next__ spans,\n"
    "pageable or pinned from the copy names, the rank from distributedInfo.\n"
    "The format is told by the file's first bytes, not its name; another\n"
    "(bzip2, zip, ...) is named with the command that unpacks it.\n"
    "\n"
    "options:\n"
    "  -o, --output DIR  the run directory to write (created private to you, as\n"
    "                    'run' makes its own; it must not hold a run already).\n"
    "                    Default: gpustarve-import-YYYYMMDD-HHMMSS\n"
    "      --tmpdir DIR  where large traces spill sorted records (default: the\n"
    "                    run directory; removed when done)\n"
    "      --mem MB      records sorted in memory before spilling (default 64)\n"
    "  -q, --quiet       print only errors\n"
    "  -v, --verbose     say more about each file\n"
    "  -h, --help        show this help\n"
    "\n"
    "FILE must be a regular file (a FIFO or a device is refused). The run\n"
    "directory's path is printed on stdout. When an import fails, the files it\n"
    "wrote go, and the directory too when it made it.\n"
    "A PyTorch profiler trace records no DataLoader worker process: worker\n"
    "count, worker I/O and loader CPU time stay unknown, and the report says so.\n";

/* ---- output directory ----------------------------------------------------------------- */

static int holds_run(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    struct dirent *de;
    int found = 0;
    while ((de = readdir(d)) != NULL) {
        size_t l = strlen(de->d_name);
        if (l > 4 && strcmp(de->d_name + l - 4, ".gst") == 0) {
            found = 1;
            break;
        }
    }
    closedir(d);
    return found;
}

/* Make dir (*made: this call made it), or take an existing one that holds
 * no run. 0, or an exit code (message printed). */
static int make_dir(const char *dir, int *made)
{
    *made = 0;
    if (mkdir(dir, 0700) == 0) {
        *made = 1;
        return 0;
    }
    if (errno != EEXIST) {
        gs_cli_error("import: cannot create %s: %s", dir, strerror(errno));
        return GS_EXIT_FAIL;
    }
    struct stat st;
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
        gs_cli_error("import: %s exists and is not a directory", dir);
        return GS_EXIT_USAGE;
    }
    if (holds_run(dir)) {
        gs_cli_error("import: %s already holds a run (*.gst files); choose another -o", dir);
        return GS_EXIT_USAGE;
    }
    return 0;
}

/* RATIONALE: a FIFO would block open() until something writes into it, and
 * the format is told with pread, which a pipe or device cannot do: only a
 * regular file is read, opened without blocking to find out. 0, or
 * GS_EXIT_USAGE (message printed). */
static int check_input(const char *path)
{
    const int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        gs_cli_error("import: %s: cannot read: %s", path, strerror(errno));
        return GS_EXIT_USAGE;
    }
    struct stat st;
    const int rc = fstat(fd, &st);
    const int e = errno;
    close(fd);
    if (rc != 0) {
        gs_cli_error("import: %s: cannot read: %s", path, strerror(e));
        return GS_EXIT_USAGE;
    }
    if (S_ISREG(st.st_mode))
        return 0;
    const char *what = S_ISDIR(st.st_mode)    ? "a directory"
                       : S_ISFIFO(st.st_mode) ? "a FIFO (named pipe)"
                       : S_ISCHR(st.st_mode)  ? "a character device"
                       : S_ISBLK(st.st_mode)  ? "a block device"
                       : S_ISSOCK(st.st_mode) ? "a socket"
                                              : "not a regular file";
    gs_cli_error("import: %s: is %s, not a trace file: import reads regular files (save the "
                 "trace to a file first)",
                 path, what);
    return GS_EXIT_USAGE;
}

/* A failed import: remove the files it wrote (made[0..n)) and the
 * directory when it made it; whatever was there before stays. */
static void undo(const char *dir, int dir_made, char (*made)[4096], size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (made[i][0])
            unlink(made[i]);
    if (dir_made && rmdir(dir) != 0)
        gs_cli_msg(1, "import: %s: not removed: %s", dir, strerror(errno));
}

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* ---- one file ---------------------------------------------------------------------------- */

/* What the import's limits and the time range left out or merged, said
 * once per file (docs/import.md, "Limits"). */
static void import_limits_said(const char *file, const ik_conv *c, const ik_write_info *wi)
{
    if (c->n_bad_time)
        gs_cli_msg(1, "%s: %llu events with a time out of range (a number, or the event's end, "
                      "past 2^63 ns: about 292 years) were skipped",
                   file, (unsigned long long)c->n_bad_time);
    if (wi->bad_time)
        gs_cli_msg(1, "%s: %llu records were left out: the trace's base time "
                      "(baseTimeNanoseconds) puts them past 2^63 ns",
                   file, (unsigned long long)wi->bad_time);
    if (c->n_names_merged)
        gs_cli_msg(1, "%s: more than %u distinct names (or %u MiB of them): %llu events past the "
                      "limit are kept under one name per kind",
                   file, IK_NAMES_MAX, IK_NAME_BYTES_MAX >> 20,
                   (unsigned long long)c->n_names_merged);
    if (c->n_thread_names_over || c->n_devices_over)
        gs_cli_msg(1, "%s: past the import's limits, %llu thread or process names (after the "
                      "first %u) and %llu devices (after the first %u) were left out",
                   file, (unsigned long long)c->n_thread_names_over, IK_THREAD_NAMES_MAX,
                   (unsigned long long)c->n_devices_over, IK_DEVICES_MAX);
}

/* Import file into dir; *written its output's path once written ("" until
 * then). An exit code. */
static int import_one(const char *file, size_t index, const char *dir, const char *tmpdir,
                      size_t mem, char (*used)[96], size_t nused, char written[4096])
{
    written[0] = '\0';
    char err[512] = "";
    ik_input *in = ik_input_open(file, gs_verbosity >= 1 && isatty(2), err, sizeof err);
    if (!in) {
        gs_cli_error("import: %s", err);
        return GS_EXIT_USAGE;
    }
    ik_conv *c = ik_conv_new(tmpdir, mem);
    if (!c) {
        ik_input_close(in);
        gs_cli_error("import: out of memory");
        return GS_EXIT_FAIL;
    }
    ik_callbacks cb;
    ik_conv_callbacks(c, &cb);
    ik_json_stats js;
    const double t0 = now_s();
    int jr = ik_json_read(ik_input_read, in, &cb, &js, err, sizeof err);
    const double t_parse = now_s() - t0;
    const char *in_err = ik_input_error(in);
    int rc = GS_EXIT_OK;
    if (jr != 0) {
        if (in_err[0])
            gs_cli_error("import: %s", in_err);
        else if (c->failed && ik_sorter_error(c->sorter)[0])
            gs_cli_error("import: %s", ik_sorter_error(c->sorter));
        else
            gs_cli_error("import: %s: %s", file, err);
        rc = in_err[0] || !c->failed ? GS_EXIT_USAGE : GS_EXIT_FAIL;
        goto done;
    }
    if (!ik_sorter_count(c->sorter)) {
        gs_cli_error("import: %s: no PyTorch profiler events (no kernel, copy, step or DataLoader "
                     "range): is this a torch.profiler trace?",
                     file);
        rc = GS_EXIT_USAGE;
        goto done;
    }
    /* host name: the trace's host_name, else the rank, else the file's
     * place; with several ranks on one host the pids keep the files apart */
    char host[96];
    if (c->host[0])
        snprintf(host, sizeof host, "%s", c->host);
    else if (c->rank >= 0)
        snprintf(host, sizeof host, "rank%lld", (long long)c->rank);
    else
        snprintf(host, sizeof host, "trace%zu", index + 1);
    for (size_t i = 0; i < nused; i++)
        if (strcmp(used[i], host) == 0) {
            snprintf(host + strlen(host), sizeof host - strlen(host), "-%zu", index + 1);
            break;
        }
    snprintf(used[nused], sizeof used[nused], "%s", host);
    char path[4096];
    snprintf(path, sizeof path, "%s/%s-%lld.gst", dir, host, (long long)(c->pid > 0 ? c->pid : 1));
    ik_write_info wi;
    memset(&wi, 0, sizeof wi);
    wi.path = path;
    wi.source = file;
    wi.host = host;
    if (ik_write_gst(c, &wi, err, sizeof err) != 0) {
        gs_cli_error("import: %s", err);
        rc = GS_EXIT_FAIL;
        goto done;
    }
    snprintf(written, 4096, "%s", path);
    const double t_all = now_s() - t0;
    gs_cli_msg(1,
               "%s: %llu events -> %s: %llu steps, %llu DataLoader spans, %llu kernels, %llu "
               "copies (%llu pageable H2D), %.1f MB of JSON in %.2f s",
               file, (unsigned long long)js.events, path, (unsigned long long)c->n_steps,
               (unsigned long long)c->n_fetch, (unsigned long long)c->n_kernel,
               (unsigned long long)c->n_memcpy, (unsigned long long)c->n_pageable_h2d,
               (double)js.bytes / 1e6, t_all);
    gs_cli_msg(2,
               "%s: parse+convert %.2f s wall (%.0f MB/s), %llu records written (%llu bytes), %llu "
               "sorted runs spilled, copy calls linked %llu / unlinked %llu, JSON window %llu "
               "bytes",
               file, t_parse, t_parse > 0 ? (double)js.bytes / 1e6 / t_parse : 0,
               (unsigned long long)wi.records, (unsigned long long)wi.bytes,
               (unsigned long long)ik_sorter_spills(c->sorter), (unsigned long long)wi.linked,
               (unsigned long long)wi.unlinked, (unsigned long long)js.window_max);
    if (js.repaired || js.bad || js.control_bytes)
        gs_cli_msg(1, "%s: %llu events needed repair (bare N/A, nan, bad UTF-8), %llu could not "
                      "be read and were skipped, %llu control bytes inside strings read as spaces",
                   file, (unsigned long long)js.repaired, (unsigned long long)js.bad,
                   (unsigned long long)js.control_bytes);
    import_limits_said(file, c, &wi);
    if (!c->n_steps)
        gs_cli_msg(1, "%s: no ProfilerStep#N range: 'report' will need --step-range or infer "
                      "steps",
                   file);
    if (!c->n_kernel && !c->n_memcpy)
        gs_cli_msg(1, "%s: no GPU activity in this trace (CPU-only profile)", file);
    if (c->other_pids)
        gs_cli_msg(1, "%s: %llu ranges of another process id were kept with process %lld", file,
                   (unsigned long long)c->other_pids, (long long)c->pid);
done:
    ik_conv_free(c);
    ik_input_close(in);
    return rc;
}

int gs_cmd_import(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"output", required_argument, NULL, 'o'},
        {"tmpdir", required_argument, NULL, 'T'},
        {"mem", required_argument, NULL, 'm'},
        {"quiet", no_argument, NULL, 'q'},
        {"verbose", no_argument, NULL, 'v'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    static const char optstring[] = "+o:qvh";
    const char *out = NULL, *tmpdir = NULL;
    long mem_mb = 64;
    int ch;
    optind = 1;
    opterr = 0;
    while ((ch = getopt_long(argc, argv, optstring, longopts, NULL)) != -1) {
        switch (ch) {
        case 'o':
            out = optarg;
            break;
        case 'T':
            tmpdir = optarg;
            break;
        case 'm':
            if (gs_cli_long(optarg, 1, 1 << 20, &mem_mb) < 0)
                return gs_cli_usage_error("import", "--mem wants a size in MB (1 or more), not '%s'",
                                          optarg);
            break;
        case 'q':
            gs_verbosity = 0;
            break;
        case 'v':
            gs_verbosity++;
            break;
        case 'h':
            fputs(usage, stdout);
            return GS_EXIT_OK;
        default:
            return gs_cli_bad_option("import", argc, argv, optstring, longopts);
        }
    }
    if (optind >= argc)
        return gs_cli_usage_error("import", "which trace files? (FILE...)");
    char defdir[64];
    if (!out) {
        const time_t t = time(NULL);
        struct tm tm;
        localtime_r(&t, &tm);
        strftime(defdir, sizeof defdir, "gpustarve-import-%Y%m%d-%H%M%S", &tm);
        out = defdir;
    }
    /* inputs are checked before anything is created */
    for (int i = optind; i < argc; i++)
        if (check_input(argv[i]) != 0)
            return GS_EXIT_USAGE;
    const size_t nfiles = (size_t)(argc - optind);
    char(*used)[96] = calloc(nfiles, sizeof *used);
    char(*written)[4096] = calloc(nfiles, sizeof *written);
    if (!used || !written) {
        free(used);
        free(written);
        gs_cli_error("import: out of memory");
        return GS_EXIT_FAIL;
    }
    int dir_made;
    int rc = make_dir(out, &dir_made);
    for (size_t i = 0; i < nfiles && rc == GS_EXIT_OK; i++)
        rc = import_one(argv[optind + (int)i], i, out, tmpdir ? tmpdir : out,
                        (size_t)mem_mb << 20, used, i, written[i]);
    if (rc != GS_EXIT_OK)
        undo(out, dir_made, written, nfiles);
    free(used);
    free(written);
    if (rc == GS_EXIT_OK) {
        printf("%s\n", out);
        gs_cli_msg(1, "next: gpustarve report %s", out);
    }
    return rc;
}
