/* hk_util.c — the hook tests' trace loader (assertions: tests/gs_check.h). */
#include "hk_util.h"

#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int hk_report(void) { return gs_check_done(NULL); }

static int load_file(const char *path, hk_file *f)
{
    gs_reader *r;
    f->ok = 1;
    if (gs_reader_open(&r, path) != GS_OK) {
        f->ok = 0;
        return -1;
    }
    f->info = *gs_reader_info(r);
    snprintf(f->host, sizeof f->host, "%s", f->info.host ? f->info.host : "");
    size_t al = f->info.argv_len < sizeof f->argv ? f->info.argv_len : sizeof f->argv - 1;
    if (f->info.argv)
        memcpy(f->argv, f->info.argv, al);
    f->info.host = f->host;
    f->info.argv = f->argv;
    size_t cap = 0;
    for (;;) {
        const gs_event *evs;
        size_t n;
        int rc = gs_reader_next_frame(r, &evs, &n);
        if (rc == 0)
            break;
        if (rc < 0) {
            fprintf(stderr, "%s: frame error %s at %llu, %llu bytes unread\n", path,
                    gs_strerror(rc), (unsigned long long)gs_reader_offset(r),
                    (unsigned long long)gs_reader_unread(r));
            f->ok = 0;
            break;
        }
        for (size_t i = 0; i < n; i++) {
            if (f->n == cap) {
                cap = cap ? cap * 2 : 1024;
                f->ev = realloc(f->ev, cap * sizeof *f->ev);
            }
            hk_ev *x = &f->ev[f->n++];
            x->e = evs[i];
            x->str = NULL;
            if (evs[i].str) {
                const char *s = gs_reader_string(r, evs[i].str);
                if (!s)
                    f->undefined++;
                else
                    x->str = strdup(s);
            }
        }
    }
    gs_reader_close(r);
    return 0;
}

int hk_load_dir(const char *dir, hk_file **files)
{
    gs_run_files rf;
    if (gs_run_files_list(&rf, dir) != GS_OK)
        return -1;
    const int n = (int)rf.n;
    *files = calloc((size_t)n + 1, sizeof **files);
    for (int i = 0; i < n; i++) {
        const char *slash = strrchr(rf.path[i], '/');
        snprintf((*files)[i].name, sizeof (*files)[i].name, "%s", slash ? slash + 1 : rf.path[i]);
        load_file(rf.path[i], &(*files)[i]);
    }
    gs_run_files_free(&rf);
    return n;
}

const hk_file *hk_load_one(const char *dir)
{
    hk_file *files;
    const int n = hk_load_dir(dir, &files);
    ASSERT_EQ(n, 1);
    if (n < 1)
        return NULL;
    hk_check_files(files, n);
    return &files[0];
}

hk_file *hk_find(hk_file *files, int n, uint64_t pid, uint32_t seq)
{
    for (int i = 0; i < n; i++)
        if (files[i].info.pid == pid && files[i].info.exec_seq == seq)
            return &files[i];
    return NULL;
}

size_t hk_count(const hk_file *f, unsigned kind, const char *path)
{
    size_t c = 0;
    for (size_t i = 0; f && i < f->n; i++)
        if (f->ev[i].e.kind == kind && (!path || (f->ev[i].str && strcmp(f->ev[i].str, path) == 0)))
            c++;
    return c;
}

const hk_ev *hk_first(const hk_file *f, unsigned kind, const char *path)
{
    for (size_t i = 0; f && i < f->n; i++)
        if (f->ev[i].e.kind == kind && (!path || (f->ev[i].str && strcmp(f->ev[i].str, path) == 0)))
            return &f->ev[i];
    return NULL;
}

void hk_check_files(hk_file *files, int n)
{
    for (int i = 0; i < n; i++) {
        hk_file *f = &files[i];
        if (!f->ok || f->undefined)
            fprintf(stderr, "file %s: ok=%d undefined=%d\n", f->name, f->ok, f->undefined);
        ASSERT_TRUE(f->ok);
        ASSERT_EQ(f->undefined, 0);
        size_t bad_tid = 0, bad_ts = 0;
        for (size_t k = 0; k < f->n; k++) {
            if (f->ev[k].e.tid == 0)
                bad_tid++;
            if (f->ev[k].e.ts == 0)
                bad_ts++;
        }
        ASSERT_EQ(bad_tid, 0);
        ASSERT_EQ(bad_ts, 0);
    }
}

void hk_dump_file(const hk_file *f, FILE *out)
{
    fprintf(out, "# %s pid=%llu ppid=%llu flags=%u exec_seq=%u argc=%u host=%s\n", f->name,
            (unsigned long long)f->info.pid, (unsigned long long)f->info.ppid, f->info.flags,
            f->info.exec_seq, f->info.argc, f->info.host);
    for (size_t i = 0; i < f->n; i++) {
        const gs_event *e = &f->ev[i].e;
        fprintf(out,
                "%s tid=%u ts=%llu dur=%llu fd=%d fdk=%s str=%s bytes=%llu ret=%lld off=%lld "
                "aux=%llu aux2=%llu\n",
                gs_kind_name(e->kind), e->tid, (unsigned long long)e->ts,
                (unsigned long long)e->dur, e->fd, gs_fdkind_name(e->fd_kind),
                f->ev[i].str ? f->ev[i].str : "-", (unsigned long long)e->bytes,
                (long long)e->ret, (long long)e->offset, (unsigned long long)e->aux,
                (unsigned long long)e->aux2);
    }
}

static int suffix_ok(const char *s, const char *suffix)
{
    if (!suffix)
        return 1;
    if (!suffix[0])
        return s == NULL;
    if (!s)
        return 0;
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && strcmp(s + a - b, suffix) == 0;
}

size_t hk_match(const hk_file *f, const hk_expect *x)
{
    size_t c = 0;
    for (size_t i = 0; f && i < f->n; i++) {
        const gs_event *e = &f->ev[i].e;
        if (e->kind != x->kind || !suffix_ok(f->ev[i].str, x->path_suffix))
            continue;
        if ((x->fd != HK_ANY && e->fd != x->fd) || (x->fd_kind != HK_ANY && e->fd_kind != x->fd_kind) ||
            (x->bytes != HK_ANY && (long long)e->bytes != x->bytes) ||
            (x->ret != HK_ANY && e->ret != x->ret) ||
            (x->offset != HK_ANY && e->offset != x->offset) ||
            (x->aux != HK_ANY && (long long)e->aux != x->aux) ||
            (x->aux2 != HK_ANY && (long long)e->aux2 != x->aux2))
            continue;
        c++;
    }
    return c;
}

void hk_expect_all(const hk_file *f, const hk_expect *xs, size_t n, size_t times)
{
    for (size_t i = 0; i < n; i++) {
        size_t c = hk_match(f, &xs[i]);
        ASSERT_MSG(times ? c == times : c >= 1,
                   "expectation %zu (%s %s) matched %zu events, wanted %s%zu", i,
                   gs_kind_name(xs[i].kind), xs[i].path_suffix ? xs[i].path_suffix : "*", c,
                   times ? "" : ">= ", times ? times : 1);
    }
}

int hk_fd_ending(const char *suffix)
{
    const size_t k = strlen(suffix);
    for (int fd = 0; fd < 4096; fd++) {
        char link[64], target[PATH_MAX];
        snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
        ssize_t n = readlink(link, target, sizeof target - 1);
        if (n > (ssize_t)k) {
            target[n] = 0;
            if (strcmp(target + n - k, suffix) == 0)
                return fd;
        }
    }
    return -1;
}

const char *hk_tmp(char *buf, size_t cap, const char *leaf)
{
    const char *t = getenv("HK_TMP");
    snprintf(buf, cap, "%s/%s", t && *t ? t : "/tmp", leaf);
    return buf;
}

int hk_small_file(const char *leaf)
{
    char path[4096];
    hk_tmp(path, sizeof path, leaf);
    int w = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    ASSERT_EQ(write(w, "12345678", 8), 8);
    close(w);
    int fd = open(path, O_RDONLY);
    ASSERT_TRUE(fd >= 0);
    return fd;
}
