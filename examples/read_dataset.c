/* read_dataset.c — a small data-loader-shaped C program: reads every regular
 * file of a directory with a chosen I/O style, optionally from several
 * threads and forked worker processes, and prints the byte count and a
 * checksum. The end-to-end tests run it traced and untraced and compare.
 *
 *   read_dataset DIR [--mode read|pread|readv|fread|mmap|mixed] [--threads N]
 *                [--workers N] [--chunk BYTES] [--exit CODE]
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

enum mode { M_READ, M_PREAD, M_READV, M_FREAD, M_MMAP, M_MIXED };

static char **files;
static int nfiles;
static enum mode mode = M_PREAD;
static size_t chunk = 4096;
static int nthreads = 1;

typedef struct {
    int first, step;
    uint64_t bytes, sum;
} part;

static void die(const char *what, const char *path)
{
    fprintf(stderr, "read_dataset: %s %s: %s\n", what, path, strerror(errno));
    exit(1);
}

static void mix(part *p, const unsigned char *b, size_t n)
{
    for (size_t i = 0; i < n; i++)
        p->sum = p->sum * 31 + b[i];
    p->bytes += n;
}

static void read_one(part *p, const char *path, enum mode m, unsigned char *buf)
{
    if (m == M_FREAD) {
        FILE *f = fopen(path, "rb");
        if (!f)
            die("fopen", path);
        size_t n;
        while ((n = fread(buf, 1, chunk, f)) > 0)
            mix(p, buf, n);
        fclose(f);
        return;
    }
    int fd = open(path, O_RDONLY);
    if (fd < 0)
        die("open", path);
    struct stat st;
    if (fstat(fd, &st) < 0)
        die("fstat", path);
    if (m == M_MMAP) {
        if (st.st_size > 0) {
            void *a = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
            if (a == MAP_FAILED)
                die("mmap", path);
            mix(p, a, (size_t)st.st_size);
            munmap(a, (size_t)st.st_size);
        }
        close(fd);
        return;
    }
    off_t off = 0;
    for (;;) {
        ssize_t n;
        if (m == M_READ) {
            n = read(fd, buf, chunk);
        } else if (m == M_READV) {
            struct iovec iov[2] = {{buf, chunk / 2}, {buf + chunk / 2, chunk - chunk / 2}};
            n = readv(fd, iov, 2);
        } else {
            n = pread(fd, buf, chunk, off);
        }
        if (n < 0)
            die("read", path);
        if (n == 0)
            break;
        mix(p, buf, (size_t)n);
        off += n;
    }
    close(fd);
}

static void *worker(void *arg)
{
    part *p = arg;
    unsigned char *buf = malloc(chunk);
    for (int i = p->first; i < nfiles; i += p->step) {
        enum mode m = mode == M_MIXED ? (enum mode)(i % 5) : mode;
        read_one(p, files[i], m, buf);
    }
    free(buf);
    return NULL;
}

static int cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void list_dir(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        die("opendir", dir);
    struct dirent *e;
    int cap = 0;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        if (nfiles == cap) {
            cap = cap ? cap * 2 : 64;
            files = realloc(files, (size_t)cap * sizeof *files);
        }
        if (asprintf(&files[nfiles++], "%s/%s", dir, e->d_name) < 0)
            exit(1);
    }
    closedir(d);
    qsort(files, (size_t)nfiles, sizeof *files, cmp);
}

/* Reads the share [first, first+step*k) of the files with nthreads threads. */
static void run_share(int first, int step, uint64_t *bytes, uint64_t *sum)
{
    part parts[64];
    pthread_t th[64];
    for (int t = 0; t < nthreads; t++) {
        parts[t] = (part){first + t * step, step * nthreads, 0, 0};
        pthread_create(&th[t], NULL, worker, &parts[t]);
    }
    *bytes = 0;
    *sum = 0;
    for (int t = 0; t < nthreads; t++) {
        pthread_join(th[t], NULL);
        *bytes += parts[t].bytes;
        *sum += parts[t].sum;
    }
}

int main(int argc, char **argv)
{
    static const struct option opts[] = {{"mode", 1, 0, 'm'},    {"threads", 1, 0, 't'},
                                         {"workers", 1, 0, 'w'}, {"chunk", 1, 0, 'c'},
                                         {"exit", 1, 0, 'x'},    {0, 0, 0, 0}};
    int workers = 0, code = 0, c;
    const char *names[] = {"read", "pread", "readv", "fread", "mmap", "mixed"};
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (c) {
        case 'm':
            mode = (enum mode)-1;
            for (int i = 0; i < 6; i++)
                if (strcmp(optarg, names[i]) == 0)
                    mode = (enum mode)i;
            if ((int)mode < 0) {
                fprintf(stderr, "read_dataset: unknown mode %s\n", optarg);
                return 2;
            }
            break;
        case 't': nthreads = atoi(optarg); break;
        case 'w': workers = atoi(optarg); break;
        case 'c': chunk = (size_t)atol(optarg); break;
        case 'x': code = atoi(optarg); break;
        default: return 2;
        }
    }
    if (optind != argc - 1 || nthreads < 1 || nthreads > 64 || chunk < 2 || workers < 0) {
        fprintf(stderr, "usage: read_dataset DIR [--mode M] [--threads N] [--workers N] "
                        "[--chunk BYTES] [--exit CODE]\n");
        return 2;
    }
    list_dir(argv[optind]);
    uint64_t bytes = 0, sum = 0;
    if (workers == 0) {
        run_share(0, 1, &bytes, &sum);
    } else {
        /* forked workers, each reporting its share through a pipe */
        int fds[2];
        if (pipe(fds) < 0)
            return 1;
        for (int w = 0; w < workers; w++) {
            pid_t pid = fork();
            if (pid == 0) {
                uint64_t r[2];
                run_share(w, workers, &r[0], &r[1]);
                if (write(fds[1], r, sizeof r) != sizeof r)
                    _exit(1);
                _exit(0);
            }
        }
        close(fds[1]);
        for (int w = 0; w < workers; w++) {
            uint64_t r[2];
            if (read(fds[0], r, sizeof r) != sizeof r)
                return 1;
            bytes += r[0];
            sum += r[1];
        }
        while (wait(NULL) > 0)
            ;
    }
    printf("files %d bytes %llu checksum %016llx\n", nfiles, (unsigned long long)bytes,
           (unsigned long long)sum);
    return code;
}
