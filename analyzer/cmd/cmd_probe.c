/* cmd_probe.c — `gpustarve probe [PATH]`: the ceilings the report's advice
 * needs, measured on this machine: the sequential read bandwidth of a file
 * or a directory tree, and the pinned vs pageable host-to-device copy
 * bandwidth when a CUDA device is present. JSON keys are the ones
 * `gpustarve report --probe FILE` reads (read_MBps, h2d_pinned_GBps,
 * h2d_pageable_GBps; null when unknown); docs/report-outputs.md.
 *
 * Responsible for: its options and its two outputs. The measurements are
 * the check's (analyzer/machine/): the read with the page cache kept out
 * (mc_seqread.c), the copies through the CUDA runtime found at run time
 * (mc_gpu.c, mc_cudalib.c: nothing links CUDA).
 *
 * Must never: write to PATH, or claim a figure is uncached when it could
 * not check.
 */
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cmd/cli_util.h"
#include "machine/mc_gpu.h"
#include "machine/mc_seqread.h"

static const char usage_text[] =
    "usage: gpustarve probe [options] [PATH]\n"
    "\n"
    "Measure the ceilings the report's advice uses: the sequential read\n"
    "bandwidth of PATH (a file, or every file under a directory, each read\n"
    "fully with large reads, page cache kept out), and the pinned vs pageable\n"
    "host-to-device copy bandwidth when a CUDA device is present. Save the JSON\n"
    "and give it to 'gpustarve report --probe FILE'.\n"
    "\n"
    "options:\n"
    "  --json              JSON on stdout (schema gpustarve.probe/1)\n"
    "  -o, --output FILE   also write the JSON to FILE\n"
    "  --max-bytes N       read at most N bytes of PATH (suffix K, M, G; default 2G)\n"
    "  --copy-size N       bytes per host-to-device copy (default 64M)\n"
    "  --repeats N         copies per kind, after one warm-up (default 5)\n"
    "  --no-direct         do not use O_DIRECT (drop the file's cached pages with\n"
    "                      POSIX_FADV_DONTNEED and check with mincore instead)\n"
    "  --no-h2d            do not look for CUDA\n"
    "  -q, --quiet         fewer messages on stderr\n"
    "  -v, --verbose       more messages on stderr\n"
    "  -h, --help          show this help\n"
    "\n"
    "Without PATH only the copy bandwidth is measured. Exit status: 0 measured\n"
    "(parts that cannot be measured are null and say why); 1 reading PATH or\n"
    "writing FILE failed; 2 bad usage.\n";

/* ---- output ---------------------------------------------------------------------------------- */

static void jnum_or_null(gs_jw *w, const char *key, double v, int known)
{
    gs_jw_key(w, key);
    if (!known)
        gs_jw_null(w);
    else
        gs_jw_num(w, v, 6);
}

static void write_json(gs_out *o, const char *path, const mc_seqread *r, const char *read_note, const mc_h2d *h,
                       int h2d_tried, uint64_t copy, int repeats)
{
    const int have_read = path && r->bytes && r->seconds > 0;
    gs_jw jw, *w = &jw;
    gs_jw_init(w, o);
    gs_jw_obj(w);
    gs_jw_kstr(w, "schema", "gpustarve.probe/1");
    gs_jw_newline(w, "\n");
    gs_jw_kstr(w, "path", path);
    gs_jw_newline(w, "\n");
    jnum_or_null(w, "read_MBps", have_read ? (double)r->bytes / 1e6 / r->seconds : 0, have_read);
    gs_jw_kstr(w, "read_method", have_read ? mc_seqread_method(r->methods) : NULL);
    gs_jw_key(w, "read_may_include_cache");
    if (have_read)
        gs_jw_bool(w, (r->methods & (MC_RD_CACHED | MC_RD_MEMORY)) != 0);
    else
        gs_jw_null(w);
    gs_jw_ku64(w, "read_bytes", r->bytes);
    gs_jw_ku64(w, "read_files", r->files);
    gs_jw_kfixed(w, "read_seconds", r->seconds, 6);
    jnum_or_null(w, "read_cached_fraction",
                 r->checked_bytes ? (double)r->cached_bytes / (double)r->checked_bytes : 0,
                 r->checked_bytes > 0);
    gs_jw_kstr(w, "read_note", read_note);
    gs_jw_newline(w, "\n");
    const int have = h->pinned_GBps > 0;
    jnum_or_null(w, "h2d_pinned_GBps", h->pinned_GBps, have);
    jnum_or_null(w, "h2d_pageable_GBps", h->pageable_GBps, have);
    gs_jw_ku64(w, "h2d_copy_bytes", copy);
    gs_jw_ki64(w, "h2d_repeats", repeats);
    gs_jw_kstr(w, "h2d_timing", have ? "cuda_events" : NULL);
    gs_jw_kstr(w, "cuda_runtime", h->runtime[0] ? h->runtime : NULL);
    gs_jw_kstr(w, "cuda_device", h->device[0] ? h->device : NULL);
    gs_jw_kstr(w, "h2d_note", !h2d_tried ? "not measured (--no-h2d)" : h->why[0] ? h->why : NULL);
    gs_jw_end(w);
    gs_out_char(o, '\n');
}

static void write_text(gs_out *o, const char *path, const mc_seqread *r, const char *read_note, const mc_h2d *h,
                       int h2d_tried, uint64_t copy, int repeats)
{
    if (!path) {
        gs_out_str(o, "read   not measured (no PATH given)\n");
    } else if (!r->bytes || r->seconds <= 0) {
        gs_out_str(o, "read   ");
        gs_text_str(o, path, strlen(path));
        gs_out_printf(o, ": nothing to read (%s)\n", read_note ? read_note : "no regular file with data");
    } else {
        gs_out_str(o, "read   ");
        gs_text_str(o, path, strlen(path));
        gs_out_printf(o, ": %.1f MB in %llu file%s at %.1f MB/s\n", (double)r->bytes / 1e6,
                      (unsigned long long)r->files, r->files == 1 ? "" : "s",
                      (double)r->bytes / 1e6 / r->seconds);
        gs_out_printf(o, "       %s\n", read_note);
    }
    if (!h2d_tried)
        gs_out_str(o, "h2d    not measured (--no-h2d)\n");
    else if (h->pinned_GBps <= 0)
        gs_out_printf(o, "h2d    %s\n", h->why[0] ? h->why : "unknown");
    else
        gs_out_printf(o, "h2d    pinned %.2f GB/s, pageable %.2f GB/s (%.0f MiB x %d, cuda_events, %s%s%s)\n",
                      h->pinned_GBps, h->pageable_GBps, (double)copy / (1 << 20), repeats,
                      h->runtime, h->device[0] ? ", " : "", h->device);
}

int gs_cmd_probe(int argc, char **argv)
{
    static const struct option opts[] = {
        {"json", no_argument, NULL, 'j'},
        {"output", required_argument, NULL, 'o'},
        {"max-bytes", required_argument, NULL, 'm'},
        {"copy-size", required_argument, NULL, 's'},
        {"repeats", required_argument, NULL, 'r'},
        {"no-h2d", no_argument, NULL, 'N'},
        {"no-direct", no_argument, NULL, 'D'},
        {"quiet", no_argument, NULL, 'q'},
        {"verbose", no_argument, NULL, 'v'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    static const char optstring[] = "o:qvh";
    int json = 0, no_h2d = 0, no_direct = 0, opt;
    const char *outpath = NULL;
    uint64_t max_bytes = 2ull << 30, copy = 64u << 20;
    long repeats = 5;
    optind = 0;
    opterr = 0;
    while ((opt = getopt_long(argc, argv, optstring, opts, NULL)) != -1) {
        switch (opt) {
        case 'j': json = 1; break;
        case 'o': outpath = optarg; break;
        case 'm':
            if (gs_cli_size(optarg, &max_bytes) < 0 || !max_bytes)
                return gs_cli_usage_error("probe", "--max-bytes needs a size > 0, not '%s'", optarg);
            break;
        case 's':
            if (gs_cli_size(optarg, &copy) < 0 || copy < 4096 || copy > (16ull << 30))
                return gs_cli_usage_error("probe", "--copy-size needs a size from 4K to 16G, not '%s'", optarg);
            break;
        case 'r':
            if (gs_cli_long(optarg, 1, 1000, &repeats) < 0)
                return gs_cli_usage_error("probe", "--repeats needs a number from 1 to 1000, not '%s'", optarg);
            break;
        case 'N': no_h2d = 1; break;
        case 'D': no_direct = 1; break;
        case 'q': gs_verbosity--; break;
        case 'v': gs_verbosity++; break;
        case 'h': fputs(usage_text, stdout); return GS_EXIT_OK;
        default: return gs_cli_bad_option("probe", argc, argv, optstring, opts);
        }
    }
    if (argc - optind > 1)
        return gs_cli_usage_error("probe", "takes one PATH");
    const char *path = optind < argc ? argv[optind] : NULL;
    int rc = GS_EXIT_OK;
    mc_seqread r;
    char note[400] = "";
    if (mc_seqread_init(&r, max_bytes, 0, no_direct) < 0) {
        gs_cli_error("out of memory");
        return GS_EXIT_FAIL;
    }
    if (path) {
        struct stat st;
        if (stat(path, &st) != 0) {
            mc_seqread_free(&r);
            gs_cli_error("probe: %s: %s", path, strerror(errno));
            return GS_EXIT_USAGE;
        }
        if (!S_ISDIR(st.st_mode) && !S_ISREG(st.st_mode)) {
            mc_seqread_free(&r);
            gs_cli_error("probe: %s: not a regular file or directory", path);
            return GS_EXIT_USAGE;
        }
        mc_seqread_path(&r, path);
        if (r.err) {
            gs_cli_error("probe: %s", r.errmsg);
            rc = GS_EXIT_FAIL;
        }
        mc_seqread_note(&r, note, sizeof note);
    }
    mc_seqread_free(&r);
    mc_h2d h;
    memset(&h, 0, sizeof h);
    if (!no_h2d)
        mc_h2d_probe((size_t)copy, (int)repeats, &h);
    gs_out *o = malloc(sizeof *o);
    if (!o) {
        gs_cli_error("out of memory");
        return GS_EXIT_FAIL;
    }
    gs_out_init(o, stdout);
    if (json)
        write_json(o, path, &r, note[0] ? note : NULL, &h, !no_h2d, copy, (int)repeats);
    else
        write_text(o, path, &r, note[0] ? note : NULL, &h, !no_h2d, copy, (int)repeats);
    gs_out_flush(o);
    if (outpath) {
        FILE *f = fopen(outpath, "w");
        if (!f) {
            gs_cli_error("probe: %s: %s", outpath, strerror(errno));
            rc = GS_EXIT_FAIL;
        } else {
            gs_out_init(o, f);
            write_json(o, path, &r, note[0] ? note : NULL, &h, !no_h2d, copy, (int)repeats);
            gs_out_flush(o);
            if (ferror(f) | (fclose(f) != 0)) {
                gs_cli_error("probe: writing %s failed", outpath);
                rc = GS_EXIT_FAIL;
            }
        }
    }
    free(o);
    return rc;
}
