/* cmd_probe.c — `gpustarve probe [PATH]`: the ceilings the report's advice
 * needs, measured on this machine: the sequential read bandwidth of a file
 * or a directory tree, and the pinned vs pageable host-to-device copy
 * bandwidth when a CUDA device is present. JSON keys are the ones
 * `gpustarve report --probe FILE` reads (read_MBps, h2d_pinned_GBps,
 * h2d_pageable_GBps; null when unknown); docs/report-outputs.md.
 *
 * Responsible for: keeping the page cache out of the read figure (O_DIRECT
 * where the file system takes it, else POSIX_FADV_DONTNEED checked with
 * mincore) and saying which way it went, or that the figure may include
 * cached data; finding libcudart at run time (dlopen, as the collector does:
 * nothing links CUDA).
 *
 * Must never: write to PATH, or claim a figure is uncached when it could
 * not check.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <time.h>
#include <unistd.h>

#include "cmd/cli_util.h"

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

#define READ_CHUNK (8u << 20) /* large sequential reads; a multiple of any block size */
#define ALIGN 4096

/* ---- read bandwidth ---------------------------------------------------------------------- */

enum { M_DIRECT = 1, M_DROPPED = 2, M_CACHED = 4, M_MEMORY = 8 };

/* tmpfs and ramfs keep files in the page cache itself: nothing can keep
 * the cache out there, O_DIRECT or not. */
#define TMPFS_MAGIC_ 0x01021994
#define RAMFS_MAGIC_ 0x858458f6

static int memory_fs(int fd)
{
    struct statfs sf;
    return fstatfs(fd, &sf) == 0 &&
           ((unsigned long)sf.f_type == TMPFS_MAGIC_ || (unsigned long)sf.f_type == RAMFS_MAGIC_);
}

typedef struct rd {
    uint64_t max_bytes;
    uint64_t bytes, files, skipped;
    double seconds;
    unsigned methods;        /* M_* seen */
    int no_direct;           /* --no-direct */
    uint64_t cached_bytes;   /* bytes that were in the page cache before reading */
    uint64_t checked_bytes;  /* bytes whose residency was checked */
    void *buf;
    int err;
    char errmsg[300];
} rd;

static rd *g_rd; /* nftw has no context argument */

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* Bytes of the file [0, size) resident in the page cache, or -1 when it
 * cannot be told (mmap or mincore refused). */
static int64_t resident_bytes(int fd, uint64_t size)
{
    if (!size)
        return 0;
    const long pg = sysconf(_SC_PAGESIZE);
    void *m = mmap(NULL, size, PROT_READ, MAP_SHARED, fd, 0);
    if (m == MAP_FAILED)
        return -1;
    const size_t np = (size + (uint64_t)pg - 1) / (uint64_t)pg;
    unsigned char *vec = malloc(np);
    int64_t res = -1;
    if (vec && mincore(m, size, vec) == 0) {
        res = 0;
        for (size_t i = 0; i < np; i++)
            res += (vec[i] & 1) ? pg : 0;
        if ((uint64_t)res > size)
            res = (int64_t)size;
    }
    free(vec);
    munmap(m, size);
    return res;
}

/* Read fd to its end (or the byte budget). Returns bytes read, or -1 with
 * errno set (EINVAL from an O_DIRECT read: the caller falls back). */
static int64_t read_all(rd *r, int fd, double *secs)
{
    uint64_t got = 0;
    const double t0 = now();
    for (;;) {
        const uint64_t left = r->max_bytes - r->bytes - got;
        if (!left)
            break;
        size_t want = READ_CHUNK;
        if (left < want)
            want = (size_t)((left + ALIGN - 1) / ALIGN * ALIGN); /* O_DIRECT wants aligned sizes */
        ssize_t n = read(fd, r->buf, want);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        if (n == 0)
            break;
        got += (uint64_t)n;
        if (got > r->max_bytes - r->bytes)
            got = r->max_bytes - r->bytes;
    }
    *secs = now() - t0;
    return (int64_t)got;
}

static void read_file(rd *r, const char *path, uint64_t size)
{
    if (r->bytes >= r->max_bytes || r->err)
        return;
    double secs = 0;
    int64_t got = -1;
    unsigned method = 0;
    int fd = open(path, O_RDONLY | (r->no_direct ? 0 : O_DIRECT) | O_CLOEXEC);
    if (fd >= 0 && memory_fs(fd)) {
        close(fd);
        fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd >= 0) {
            got = read_all(r, fd, &secs);
            method = M_MEMORY;
            r->cached_bytes += size;
            r->checked_bytes += size;
            if (got < 0) {
                close(fd);
                fd = -1;
            }
        }
    } else if (fd >= 0 && r->no_direct) {
        close(fd);
        fd = -1;
    } else if (fd >= 0) {
        got = read_all(r, fd, &secs);
        if (got < 0 && errno == EINVAL && lseek(fd, 0, SEEK_SET) == 0) {
            close(fd); /* open took O_DIRECT but reads refuse it */
            fd = -1;
        } else {
            method = M_DIRECT;
        }
    }
    if (fd < 0 && method != M_MEMORY) {
        fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0) {
            if (errno == EACCES || errno == ENOENT || errno == ELOOP) {
                r->skipped++;
                return;
            }
            r->err = errno;
            snprintf(r->errmsg, sizeof r->errmsg, "%s: %s", path, strerror(errno));
            return;
        }
        /* drop what the cache holds of the file, then check that it is gone */
        posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
        const int64_t res = resident_bytes(fd, size);
        if (res == 0) {
            method = M_DROPPED;
        } else {
            method = M_CACHED;
            if (res > 0)
                r->cached_bytes += (uint64_t)res;
        }
        r->checked_bytes += res >= 0 ? size : 0;
        posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
        got = read_all(r, fd, &secs);
        posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED); /* leave the cache as we found it */
    }
    if (got < 0) {
        r->err = errno;
        snprintf(r->errmsg, sizeof r->errmsg, "%s: %s", path, strerror(errno));
        if (fd >= 0)
            close(fd);
        return;
    }
    close(fd);
    r->methods |= method;
    r->bytes += (uint64_t)got;
    r->seconds += secs;
    r->files++;
}

static int walk_fn(const char *path, const struct stat *st, int type, struct FTW *f)
{
    (void)f;
    if (type == FTW_F && S_ISREG(st->st_mode) && st->st_size > 0)
        read_file(g_rd, path, (uint64_t)st->st_size);
    return g_rd->err || g_rd->bytes >= g_rd->max_bytes ? 1 : 0;
}

static const char *method_name(unsigned m)
{
    if (m == M_DIRECT)
        return "o_direct";
    if (m == M_DROPPED)
        return "fadvise_dontneed";
    if (m == (M_DIRECT | M_DROPPED))
        return "o_direct+fadvise_dontneed";
    if (m & M_MEMORY)
        return "memory_fs";
    if (m & M_CACHED)
        return "cached";
    return "none";
}

/* ---- host-to-device copies ------------------------------------------------------------------ */

typedef int (*fn_i_pi)(int *);
typedef int (*fn_i_i)(int);
typedef int (*fn_i_ppz)(void **, size_t);
typedef int (*fn_i_p)(void *);
typedef int (*fn_memcpy)(void *, const void *, size_t, int);
typedef int (*fn_i_v)(void);
typedef int (*fn_i_pp)(void *, void *);
typedef int (*fn_elapsed)(float *, void *, void *);
typedef const char *(*fn_errstr)(int);
typedef int (*fn_props)(void *, int);

typedef struct h2d {
    int available;
    char runtime[64];
    char device[256];
    char note[200];
    double pinned_GBps, pageable_GBps; /* 0 unknown */
    const char *timing;
    size_t size;
    int repeats;
} h2d;

static int cmp_d(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

#define CUDA_MEMCPY_H2D 1

static void probe_h2d(h2d *h)
{
    static const char *const libs[] = {"libcudart.so.13", "libcudart.so.12", "libcudart.so"};
    void *lib = NULL;
    for (size_t i = 0; i < sizeof libs / sizeof libs[0] && !lib; i++) {
        lib = dlopen(libs[i], RTLD_NOW | RTLD_LOCAL);
        if (lib)
            snprintf(h->runtime, sizeof h->runtime, "%s", libs[i]);
    }
    if (!lib) {
        snprintf(h->note, sizeof h->note, "no CUDA runtime (libcudart.so.13/.12 not found)");
        return;
    }
#define SYM(type, name) type name = (type)dlsym(lib, #name)
    SYM(fn_i_pi, cudaGetDeviceCount);
    SYM(fn_i_i, cudaSetDevice);
    SYM(fn_i_ppz, cudaMalloc);
    SYM(fn_i_p, cudaFree);
    SYM(fn_i_ppz, cudaMallocHost);
    SYM(fn_i_p, cudaFreeHost);
    SYM(fn_memcpy, cudaMemcpy);
    SYM(fn_i_v, cudaDeviceSynchronize);
    SYM(fn_i_p, cudaEventCreate);
    SYM(fn_i_pp, cudaEventRecord);
    SYM(fn_i_p, cudaEventSynchronize);
    SYM(fn_elapsed, cudaEventElapsedTime);
    SYM(fn_i_p, cudaEventDestroy);
    SYM(fn_errstr, cudaGetErrorString);
#undef SYM
    fn_props props = (fn_props)dlsym(lib, "cudaGetDeviceProperties_v2");
    if (!props)
        props = (fn_props)dlsym(lib, "cudaGetDeviceProperties");
    if (!cudaGetDeviceCount || !cudaMalloc || !cudaFree || !cudaMallocHost || !cudaFreeHost ||
        !cudaMemcpy || !cudaDeviceSynchronize) {
        snprintf(h->note, sizeof h->note, "%s lacks the calls a copy test needs", h->runtime);
        dlclose(lib);
        return;
    }
    int n = 0, e = cudaGetDeviceCount(&n);
    if (e != 0 || n < 1) {
        snprintf(h->note, sizeof h->note, "no CUDA device (cudaGetDeviceCount: %s)",
                 e && cudaGetErrorString ? cudaGetErrorString(e) : e ? "error" : "0 devices");
        dlclose(lib);
        return;
    }
    if (cudaSetDevice)
        cudaSetDevice(0);
    if (props) {
        /* name is the first field of cudaDeviceProp in every version; the
         * buffer is far larger than the struct has ever been */
        char *p = calloc(1, 1 << 16);
        if (p && props(p, 0) == 0)
            snprintf(h->device, sizeof h->device, "%s", p);
        free(p);
    }
    void *dev = NULL, *pinned = NULL, *pageable = NULL;
    if (cudaMalloc(&dev, h->size) != 0 || cudaMallocHost(&pinned, h->size) != 0 ||
        !(pageable = malloc(h->size))) {
        snprintf(h->note, sizeof h->note, "could not allocate %zu bytes on the device and the host",
                 h->size);
        goto done;
    }
    memset(pinned, 1, h->size);
    memset(pageable, 1, h->size); /* touch every page: no first-touch faults in the timing */
    void *ev0 = NULL, *ev1 = NULL;
    int events = cudaEventCreate && cudaEventRecord && cudaEventSynchronize && cudaEventElapsedTime &&
                 cudaEventCreate(&ev0) == 0 && cudaEventCreate(&ev1) == 0;
    h->timing = events ? "cuda_events" : "wall_clock";
    double *gbps = calloc((size_t)h->repeats, sizeof *gbps);
    if (!gbps)
        goto done;
    for (int kind = 0; kind < 2; kind++) {
        const void *src = kind ? pageable : pinned;
        int bad = cudaMemcpy(dev, src, h->size, CUDA_MEMCPY_H2D) != 0; /* warm-up */
        for (int i = 0; i < h->repeats && !bad; i++) {
            double secs = 0;
            if (events) {
                float ms = 0;
                const double t0 = now();
                bad |= cudaEventRecord(ev0, NULL) != 0;
                bad |= cudaMemcpy(dev, src, h->size, CUDA_MEMCPY_H2D) != 0;
                bad |= cudaEventRecord(ev1, NULL) != 0;
                bad |= cudaEventSynchronize(ev1) != 0;
                bad |= cudaEventElapsedTime(&ms, ev0, ev1) != 0;
                secs = ms / 1e3;
                if (!(secs > 0)) /* a runtime whose events say nothing: the host clock */
                    secs = now() - t0;
            } else {
                const double t0 = now();
                bad |= cudaMemcpy(dev, src, h->size, CUDA_MEMCPY_H2D) != 0;
                bad |= cudaDeviceSynchronize() != 0;
                secs = now() - t0;
            }
            gbps[i] = secs > 0 ? (double)h->size / secs / 1e9 : 0;
        }
        if (bad) {
            snprintf(h->note, sizeof h->note, "cudaMemcpy failed");
            break;
        }
        qsort(gbps, (size_t)h->repeats, sizeof *gbps, cmp_d);
        const double med = h->repeats % 2 ? gbps[h->repeats / 2]
                                          : (gbps[h->repeats / 2 - 1] + gbps[h->repeats / 2]) / 2;
        if (kind)
            h->pageable_GBps = med;
        else
            h->pinned_GBps = med;
    }
    free(gbps);
    if (ev0 && cudaEventDestroy)
        cudaEventDestroy(ev0);
    if (ev1 && cudaEventDestroy)
        cudaEventDestroy(ev1);
    h->available = h->pinned_GBps > 0 && h->pageable_GBps > 0;
done:
    if (dev)
        cudaFree(dev);
    if (pinned)
        cudaFreeHost(pinned);
    free(pageable);
    /* RATIONALE: no dlclose: CUDA runtimes keep threads and atexit handlers */
}

/* ---- output ---------------------------------------------------------------------------------- */

static void jnum_or_null(gs_jw *w, const char *key, double v, int known)
{
    gs_jw_key(w, key);
    if (!known)
        gs_jw_null(w);
    else
        gs_jw_num(w, v, 6);
}

static void write_json(gs_out *o, const char *path, const rd *r, const char *read_note, const h2d *h,
                       int h2d_tried)
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
    gs_jw_kstr(w, "read_method", have_read ? method_name(r->methods) : NULL);
    gs_jw_key(w, "read_may_include_cache");
    if (have_read)
        gs_jw_bool(w, (r->methods & (M_CACHED | M_MEMORY)) != 0);
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
    jnum_or_null(w, "h2d_pinned_GBps", h->pinned_GBps, h->available);
    jnum_or_null(w, "h2d_pageable_GBps", h->pageable_GBps, h->available);
    gs_jw_ku64(w, "h2d_copy_bytes", h->size);
    gs_jw_ki64(w, "h2d_repeats", h->repeats);
    gs_jw_kstr(w, "h2d_timing", h->available ? h->timing : NULL);
    gs_jw_kstr(w, "cuda_runtime", h->runtime[0] ? h->runtime : NULL);
    gs_jw_kstr(w, "cuda_device", h->device[0] ? h->device : NULL);
    gs_jw_kstr(w, "h2d_note", !h2d_tried ? "not measured (--no-h2d)" : h->note[0] ? h->note : NULL);
    gs_jw_end(w);
    gs_out_char(o, '\n');
}

static void write_text(gs_out *o, const char *path, const rd *r, const char *read_note, const h2d *h,
                       int h2d_tried)
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
    else if (!h->available)
        gs_out_printf(o, "h2d    %s\n", h->note[0] ? h->note : "unknown");
    else
        gs_out_printf(o, "h2d    pinned %.2f GB/s, pageable %.2f GB/s (%.0f MiB x %d, %s, %s%s%s)\n",
                      h->pinned_GBps, h->pageable_GBps, (double)h->size / (1 << 20), h->repeats,
                      h->timing, h->runtime, h->device[0] ? ", " : "", h->device);
}

static int parse_size(const char *s, uint64_t *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || v < 0)
        return -1;
    double m = 1;
    switch (*end) {
    case 'k': case 'K': m = 1024; end++; break;
    case 'm': case 'M': m = 1024.0 * 1024; end++; break;
    case 'g': case 'G': m = 1024.0 * 1024 * 1024; end++; break;
    case 't': case 'T': m = 1024.0 * 1024 * 1024 * 1024; end++; break;
    }
    if (*end == 'i' || *end == 'B')
        end += *end == 'i' && end[1] == 'B' ? 2 : 1;
    if (*end || v * m > 1e18)
        return -1;
    *out = (uint64_t)(v * m);
    return 0;
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
            if (parse_size(optarg, &max_bytes) < 0 || !max_bytes)
                return gs_cli_usage_error("probe", "--max-bytes needs a size > 0, not '%s'", optarg);
            break;
        case 's':
            if (parse_size(optarg, &copy) < 0 || copy < 4096 || copy > (16ull << 30))
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
    rd r;
    memset(&r, 0, sizeof r);
    r.max_bytes = max_bytes;
    r.no_direct = no_direct;
    char note[400] = "";
    if (path) {
        struct stat st;
        if (stat(path, &st) != 0) {
            gs_cli_error("probe: %s: %s", path, strerror(errno));
            return GS_EXIT_USAGE;
        }
        if (posix_memalign(&r.buf, ALIGN, READ_CHUNK) != 0) {
            gs_cli_error("out of memory");
            return GS_EXIT_FAIL;
        }
        g_rd = &r;
        if (S_ISDIR(st.st_mode))
            nftw(path, walk_fn, 64, FTW_PHYS);
        else if (S_ISREG(st.st_mode))
            read_file(&r, path, (uint64_t)st.st_size);
        else {
            free(r.buf);
            gs_cli_error("probe: %s: not a regular file or directory", path);
            return GS_EXIT_USAGE;
        }
        g_rd = NULL;
        free(r.buf);
        if (r.err) {
            gs_cli_error("probe: %s", r.errmsg);
            rc = GS_EXIT_FAIL;
        }
        if (r.methods & M_MEMORY)
            snprintf(note, sizeof note,
                     "the file system keeps its files in memory (tmpfs/ramfs): the figure is memory "
                     "bandwidth, not storage");
        else if (r.methods & M_CACHED)
            snprintf(note, sizeof note,
                     "the page cache could not be kept out (no O_DIRECT here, and %.0f%% of the "
                     "bytes stayed cached after POSIX_FADV_DONTNEED): the figure may include cached data",
                     r.checked_bytes ? 100.0 * (double)r.cached_bytes / (double)r.checked_bytes : 100.0);
        else if (r.methods == M_DIRECT)
            snprintf(note, sizeof note, "read with O_DIRECT: the page cache was bypassed");
        else if (r.methods & M_DROPPED)
            snprintf(note, sizeof note,
                     "%sPOSIX_FADV_DONTNEED before reading, checked with mincore: nothing was cached",
                     r.methods & M_DIRECT ? "O_DIRECT where the file system allows it, else " : "");
        if (r.bytes >= max_bytes) {
            size_t l = strlen(note);
            snprintf(note + l, sizeof note - l, "; stopped after --max-bytes %llu",
                     (unsigned long long)max_bytes);
        }
        if (r.skipped) {
            size_t l = strlen(note);
            snprintf(note + l, sizeof note - l, "; %llu unreadable file%s skipped",
                     (unsigned long long)r.skipped, r.skipped == 1 ? "" : "s");
        }
    }
    h2d h;
    memset(&h, 0, sizeof h);
    h.size = (size_t)copy;
    h.repeats = (int)repeats;
    if (!no_h2d)
        probe_h2d(&h);
    gs_out *o = malloc(sizeof *o);
    if (!o) {
        gs_cli_error("out of memory");
        return GS_EXIT_FAIL;
    }
    gs_out_init(o, stdout);
    if (json)
        write_json(o, path, &r, note[0] ? note : NULL, &h, !no_h2d);
    else
        write_text(o, path, &r, note[0] ? note : NULL, &h, !no_h2d);
    gs_out_flush(o);
    if (outpath) {
        FILE *f = fopen(outpath, "w");
        if (!f) {
            gs_cli_error("probe: %s: %s", outpath, strerror(errno));
            rc = GS_EXIT_FAIL;
        } else {
            gs_out_init(o, f);
            write_json(o, path, &r, note[0] ? note : NULL, &h, !no_h2d);
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
