/* test_kinds.c — what an event means (trace/gs_format.h, gs_trace.h): every
 * kind of GS_KIND_LIST has a class, the class predicates agree with the
 * table for every id, the classes agree with the fields each kind carries,
 * the packed-field accessors undo their packers, and the run-directory
 * listing finds exactly the trace files. */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gs_check.h"
#include "gs_trace.h"

/* The kinds of the list, as the list itself says (id, class). */
static const struct {
    unsigned id, cls;
    const char *name;
} k_list[] = {
#define X_ROW(n, id, s, f, c) {id, GS_CLASS_##c, s},
    GS_KIND_LIST(X_ROW)
#undef X_ROW
};
#define NLIST (sizeof k_list / sizeof k_list[0])

/* docs/trace-format.md, "Kinds", written out again by hand: the class each
 * documented kind must have. A kind added to the list without a line here
 * fails test_every_kind_documented. */
static const struct {
    const char *name;
    unsigned cls;
} k_doc[] = {
    {"string", GS_CLASS_RECORD},     {"tid", GS_CLASS_RECORD},
    {"stack", GS_CLASS_RECORD},      {"callsite", GS_CLASS_RECORD},
    {"repeat", GS_CLASS_RECORD},     {"repeats", GS_CLASS_RECORD},
    {"mapping", GS_CLASS_PROC},      {"thread", GS_CLASS_PROC},
    {"faults", GS_CLASS_PROC},       {"drops", GS_CLASS_PROC},
    {"note", GS_CLASS_PROC},         {"exec", GS_CLASS_PROC},
    {"exit", GS_CLASS_PROC},         {"cpu", GS_CLASS_PROC},
    {"cpu_limits", GS_CLASS_PROC},
    {"host_cpu", GS_CLASS_PROC},
    {"open", GS_CLASS_OPEN},
    {"open64", GS_CLASS_OPEN},       {"openat", GS_CLASS_OPEN},
    {"openat64", GS_CLASS_OPEN},     {"creat", GS_CLASS_OPEN},
    {"fopen", GS_CLASS_OPEN},        {"fopen64", GS_CLASS_OPEN},
    {"close", GS_CLASS_CLOSE},       {"fclose", GS_CLASS_CLOSE},
    {"dup", GS_CLASS_DUP},           {"dup2", GS_CLASS_DUP},
    {"dup3", GS_CLASS_DUP},          {"read", GS_CLASS_READ},
    {"pread", GS_CLASS_READ},        {"pread64", GS_CLASS_READ},
    {"readv", GS_CLASS_READ},        {"preadv", GS_CLASS_READ},
    {"preadv64", GS_CLASS_READ},     {"preadv2", GS_CLASS_READ},
    {"preadv64v2", GS_CLASS_READ},   {"__read_chk", GS_CLASS_READ},
    {"__pread_chk", GS_CLASS_READ},  {"__pread64_chk", GS_CLASS_READ},
    {"read_at", GS_CLASS_READ},      {"readv_at", GS_CLASS_READ},
    {"__read_chk_at", GS_CLASS_READ},
    {"fread", GS_CLASS_READ},        {"fread_unlocked", GS_CLASS_READ},
    {"fgets", GS_CLASS_READ},        {"mmap", GS_CLASS_MMAP},
    {"mmap64", GS_CLASS_MMAP},       {"munmap", GS_CLASS_MMAP},
    {"stat", GS_CLASS_STAT},         {"stat64", GS_CLASS_STAT},
    {"lstat", GS_CLASS_STAT},        {"lstat64", GS_CLASS_STAT},
    {"fstat", GS_CLASS_STAT},        {"fstat64", GS_CLASS_STAT},
    {"fstatat", GS_CLASS_STAT},      {"fstatat64", GS_CLASS_STAT},
    {"statx", GS_CLASS_STAT},        {"__xstat", GS_CLASS_STAT},
    {"__xstat64", GS_CLASS_STAT},    {"__lxstat", GS_CLASS_STAT},
    {"__lxstat64", GS_CLASS_STAT},   {"__fxstat", GS_CLASS_STAT},
    {"__fxstat64", GS_CLASS_STAT},   {"__fxstatat", GS_CLASS_STAT},
    {"__fxstatat64", GS_CLASS_STAT}, {"poll", GS_CLASS_WAIT},
    {"ppoll", GS_CLASS_WAIT},        {"select", GS_CLASS_WAIT},
    {"pselect", GS_CLASS_WAIT},      {"epoll_wait", GS_CLASS_WAIT},
    {"epoll_pwait", GS_CLASS_WAIT},  {"gpu_kernel", GS_CLASS_GPU},
    {"gpu_memcpy", GS_CLASS_GPU},    {"gpu_memset", GS_CLASS_GPU},
    {"gpu_sync", GS_CLASS_GPU},      {"gpu_device", GS_CLASS_GPU_INFO},
    {"gpu_drops", GS_CLASS_GPU_INFO}, {"cuda_memcpy", GS_CLASS_CUDA},
    {"cuda_sync", GS_CLASS_CUDA},    {"cuda_host_mem", GS_CLASS_CUDA},
    {"nvtx_push", GS_CLASS_NVTX},    {"nvtx_pop", GS_CLASS_NVTX},
    {"nvtx_start", GS_CLASS_NVTX},   {"nvtx_end", GS_CLASS_NVTX},
    {"mark", GS_CLASS_NVTX},         {"step_begin", GS_CLASS_MARKER},
    {"step_end", GS_CLASS_MARKER},   {"fetch_begin", GS_CLASS_MARKER},
    {"fetch_end", GS_CLASS_MARKER},  {"config", GS_CLASS_MARKER},
    {"role", GS_CLASS_MARKER},
};
#define NDOC (sizeof k_doc / sizeof k_doc[0])

static void test_every_kind_has_a_class(void)
{
    int in_list[GS_K_MAX] = {0};
    for (size_t i = 0; i < NLIST; i++) {
        const unsigned k = k_list[i].id;
        ASSERT_TRUE(k > 0 && k < GS_K_MAX);
        ASSERT_TRUE(!in_list[k]); /* ids are unique */
        in_list[k] = 1;
        ASSERT_TRUE(k_list[i].cls > GS_CLASS_NONE && k_list[i].cls < GS_NCLASS);
        ASSERT_EQ(gs_kind_class(k), k_list[i].cls);
        ASSERT_TRUE(strcmp(gs_class_name(gs_kind_class(k)), "none") != 0);
    }
    /* ids outside the list have no class, and neither does anything past the table */
    for (unsigned k = 0; k < GS_K_MAX; k++)
        if (!in_list[k]) {
            ASSERT_EQ(gs_kind_class(k), GS_CLASS_NONE);
            ASSERT_TRUE(!gs_kind_known(k));
        }
    ASSERT_EQ(gs_kind_class(GS_K_MAX), GS_CLASS_NONE);
    ASSERT_EQ(gs_kind_class(100000), GS_CLASS_NONE);
    /* every class names itself differently */
    for (unsigned a = 0; a < GS_NCLASS; a++)
        for (unsigned b = a + 1; b < GS_NCLASS; b++)
            ASSERT_TRUE(strcmp(gs_class_name(a), gs_class_name(b)) != 0);
}

static void test_every_kind_documented(void)
{
    for (size_t i = 0; i < NLIST; i++) {
        size_t j = 0;
        while (j < NDOC && strcmp(k_doc[j].name, k_list[i].name) != 0)
            j++;
        if (j == NDOC) {
            fprintf(stderr, "kind %s has no class in test_kinds.c (and docs?)\n", k_list[i].name);
            ASSERT_TRUE(0);
            continue;
        }
        ASSERT_EQ(gs_kind_class(k_list[i].id), k_doc[j].cls);
    }
    for (size_t j = 0; j < NDOC; j++)
        ASSERT_TRUE(gs_kind_by_name(k_doc[j].name) != 0);
    ASSERT_EQ(NDOC, NLIST);
}

/* Each predicate is its class (or union of classes), for every id. */
static void test_predicates_agree(void)
{
    for (unsigned k = 0; k < GS_K_MAX + 4; k++) {
        const unsigned c = gs_kind_class(k);
        ASSERT_EQ(gs_kind_is_read(k), c == GS_CLASS_READ);
        ASSERT_EQ(gs_kind_is_open(k), c == GS_CLASS_OPEN);
        ASSERT_EQ(gs_kind_is_stat(k), c == GS_CLASS_STAT);
        ASSERT_EQ(gs_kind_is_metadata(k), c == GS_CLASS_OPEN || c == GS_CLASS_STAT);
        ASSERT_EQ(gs_kind_is_wait(k), c == GS_CLASS_WAIT);
        ASSERT_EQ(gs_kind_is_mmap(k), c == GS_CLASS_MMAP);
        ASSERT_EQ(gs_kind_is_gpu(k), c == GS_CLASS_GPU);
        ASSERT_EQ(gs_kind_is_cuda(k), c == GS_CLASS_CUDA);
        ASSERT_EQ(gs_kind_is_nvtx(k), c == GS_CLASS_NVTX);
        ASSERT_EQ(gs_kind_is_nvtx_range(k), c == GS_CLASS_NVTX && k != GS_K_NVTX_MARK);
        ASSERT_EQ(gs_kind_is_io_call(k),
                  c == GS_CLASS_OPEN || c == GS_CLASS_CLOSE || c == GS_CLASS_DUP ||
                      c == GS_CLASS_READ || c == GS_CLASS_MMAP || c == GS_CLASS_STAT ||
                      c == GS_CLASS_WAIT);
    }
}

/* A class promises fields: a reader that trusts the class finds them. */
static void test_classes_match_fields(void)
{
    for (size_t i = 0; i < NLIST; i++) {
        const unsigned k = k_list[i].id, f = gs_kind_fields(k), c = k_list[i].cls;
        /* hooked I/O calls are exactly the kinds with a descriptor */
        ASSERT_EQ(gs_kind_is_io_call(k), (f & GS_F_FD) != 0);
        if (gs_kind_is_io_call(k))
            ASSERT_EQ(f & (GS_F_TS | GS_F_DUR | GS_F_FDKIND | GS_F_STR | GS_F_BYTES | GS_F_RET),
                      GS_F_TS | GS_F_DUR | GS_F_FDKIND | GS_F_STR | GS_F_BYTES | GS_F_RET);
        ASSERT_EQ(c == GS_CLASS_RECORD, f == 0);
        if (c == GS_CLASS_GPU)
            ASSERT_EQ(f & (GS_F_TS | GS_F_DUR | GS_F_DEV | GS_F_STREAM | GS_F_CORR),
                      GS_F_TS | GS_F_DUR | GS_F_DEV | GS_F_STREAM | GS_F_CORR);
        if (c == GS_CLASS_CUDA)
            ASSERT_EQ(f & (GS_F_TS | GS_F_DUR | GS_F_STR | GS_F_RET),
                      GS_F_TS | GS_F_DUR | GS_F_STR | GS_F_RET);
        if (c == GS_CLASS_NVTX || c == GS_CLASS_MARKER || c == GS_CLASS_PROC ||
            c == GS_CLASS_GPU_INFO)
            ASSERT_TRUE((f & GS_F_TS) && !(f & GS_F_FD) && !(f & GS_F_DUR));
    }
    /* the kinds whose aux the accessors unpack carry an aux */
    ASSERT_TRUE(gs_kind_fields(GS_K_GPU_MEMCPY) & GS_F_AUX);
    ASSERT_TRUE(gs_kind_fields(GS_K_CUDA_MEMCPY) & GS_F_AUX);
    ASSERT_TRUE(gs_kind_fields(GS_K_GPU_MEMSET) & GS_F_AUX);
    ASSERT_TRUE(gs_kind_fields(GS_K_EXIT) & GS_F_AUX2);
    ASSERT_TRUE(gs_kind_fields(GS_K_FREAD) & GS_F_AUX);
}

static void test_packed_fields(void)
{
    gs_event e;
    for (unsigned dir = 0; dir <= GS_DIR_PTOP; dir++)
        for (unsigned src = 0; src <= GS_MEM_ARRAY; src++)
            for (unsigned dst = 0; dst <= GS_MEM_ARRAY; dst++) {
                gs_event_clear(&e);
                e.kind = GS_K_GPU_MEMCPY;
                e.aux = gs_pack_gpu_copy(dir, src, dst);
                ASSERT_EQ(gs_copy_dir(&e), dir);
                ASSERT_EQ(gs_copy_src_mem(&e), src);
                ASSERT_EQ(gs_copy_dst_mem(&e), dst);
                ASSERT_EQ(gs_h2d_source_mem(&e), dir == GS_DIR_HTOD ? src : GS_MEM_UNKNOWN);
                e.kind = GS_K_CUDA_MEMCPY;
                e.aux = gs_pack_host_copy(dir, src);
                ASSERT_EQ(gs_copy_dir(&e), dir);
                ASSERT_EQ(gs_copy_host_mem(&e), src);
                ASSERT_EQ(gs_h2d_source_mem(&e), dir == GS_DIR_HTOD ? src : GS_MEM_UNKNOWN);
            }
    /* the bit layout of docs/trace-format.md, written out */
    ASSERT_EQ(gs_pack_gpu_copy(GS_DIR_HTOD, GS_MEM_PAGEABLE, GS_MEM_DEVICE), 0x030101);
    ASSERT_EQ(gs_pack_host_copy(GS_DIR_DTOH, GS_MEM_PINNED), 0x0202);
    gs_event_clear(&e);
    e.kind = GS_K_GPU_MEMSET;
    e.aux = GS_MEM_DEVICE;
    ASSERT_EQ(gs_memset_mem(&e), GS_MEM_DEVICE);
    ASSERT_EQ(gs_h2d_source_mem(&e), GS_MEM_UNKNOWN);

    /* bytes transferred */
    gs_event_clear(&e);
    e.kind = GS_K_PREAD64;
    e.bytes = 4096;
    e.ret = 100;
    ASSERT_EQ(gs_read_bytes(&e), 100);
    e.ret = -1;
    ASSERT_EQ(gs_read_bytes(&e), 0);
    e.kind = GS_K_FREAD;
    e.ret = 3; /* items */
    e.aux = 512; /* size */
    ASSERT_EQ(gs_read_bytes(&e), 1536);
    e.kind = GS_K_FREAD_UNLOCKED;
    ASSERT_EQ(gs_read_bytes(&e), 1536);
    e.kind = GS_K_OPEN; /* not a read */
    ASSERT_EQ(gs_read_bytes(&e), 0);

    /* wait timeouts: aux = ms + 1, 0 = forever */
    gs_event_clear(&e);
    e.kind = GS_K_POLL;
    ASSERT_EQ(gs_wait_timeout_ms(&e), -1);
    e.aux = 1;
    ASSERT_EQ(gs_wait_timeout_ms(&e), 0);
    e.aux = 101;
    ASSERT_EQ(gs_wait_timeout_ms(&e), 100);

    /* fopen mode */
    char mode[9];
    gs_event_clear(&e);
    e.kind = GS_K_FOPEN;
    e.aux = 'r' | ('b' << 8) | ('e' << 16);
    ASSERT_EQ(gs_fopen_mode(&e, mode), 3);
    ASSERT_TRUE(strcmp(mode, "rbe") == 0);
    e.aux = 0x6867666564636261ull; /* eight bytes: no NUL in aux */
    ASSERT_EQ(gs_fopen_mode(&e, mode), 8);
    ASSERT_TRUE(strcmp(mode, "abcdefgh") == 0);

    /* exit */
    gs_event_clear(&e);
    e.kind = GS_K_EXIT;
    e.aux = 9;
    e.aux2 = GS_EXIT_HOW_SIGNAL;
    ASSERT_EQ(gs_exit_status(&e), 9);
    ASSERT_EQ(gs_exit_how_of(&e), GS_EXIT_HOW_SIGNAL);
    ASSERT_TRUE(strcmp(gs_exit_how_name(GS_EXIT_HOW_EXIT), "exit") == 0);
    ASSERT_TRUE(strcmp(gs_exit_how_name(GS_EXIT_HOW__EXIT), "_exit") == 0);
    ASSERT_TRUE(strcmp(gs_exit_how_name(GS_EXIT_HOW_SIGNAL), "signal") == 0);
    ASSERT_TRUE(gs_exit_how_name(GS_NEXIT_HOW) == NULL);
    ASSERT_TRUE(gs_exit_how_name(1ull << 40) == NULL);

    /* names of packed values; out of range is "unknown" */
    ASSERT_TRUE(strcmp(gs_dir_name(GS_DIR_HTOD), "HtoD") == 0);
    ASSERT_TRUE(strcmp(gs_dir_name(GS_DIR_PTOP), "PtoP") == 0);
    ASSERT_TRUE(strcmp(gs_dir_name(6), "unknown") == 0);
    ASSERT_TRUE(strcmp(gs_mem_name(GS_MEM_PAGEABLE), "pageable") == 0);
    ASSERT_TRUE(strcmp(gs_mem_name(GS_MEM_ARRAY), "array") == 0);
    ASSERT_TRUE(strcmp(gs_mem_name(1ull << 33), "unknown") == 0);
    ASSERT_TRUE(strcmp(gs_gpu_sync_name(3), "stream_synchronize") == 0);
    ASSERT_TRUE(strcmp(gs_gpu_sync_name(5), "unknown") == 0);
}

static char tmpdir[] = "/tmp/gs_kinds_XXXXXX";

static void touch(const char *name)
{
    char p[256];
    snprintf(p, sizeof p, "%s/%s", tmpdir, name);
    int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ASSERT_TRUE(fd >= 0);
    if (fd >= 0)
        close(fd);
}

static void test_run_files(void)
{
    ASSERT_TRUE(gs_is_trace_name("h-1.gst"));
    ASSERT_TRUE(gs_is_trace_name("h-1.2.gst"));
    ASSERT_TRUE(!gs_is_trace_name(".gst"));
    ASSERT_TRUE(!gs_is_trace_name("h-1.gst.tmp"));
    ASSERT_TRUE(!gs_is_trace_name("h-1.GST"));
    ASSERT_TRUE(!gs_is_trace_name("h-1.perfmap"));
    ASSERT_TRUE(!gs_is_trace_name(""));

    gs_run_files rf;
    errno = 0;
    ASSERT_EQ(gs_run_files_list(&rf, "/nonexistent/gs_kinds"), GS_ERR_IO);
    ASSERT_EQ(errno, ENOENT);
    ASSERT_EQ(rf.n, 0);

    ASSERT_TRUE(mkdtemp(tmpdir) != NULL);
    ASSERT_EQ(gs_run_files_list(&rf, tmpdir), GS_OK);
    ASSERT_EQ(rf.n, 0);
    gs_run_files_free(&rf);
    const char *names[] = {"b-2.gst", "a-1.1.gst", "a-1.gst", ".gst", "a-1.perfmap",
                           "notes.txt", "x.gst.part"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        touch(names[i]);
    ASSERT_EQ(gs_run_files_list(&rf, tmpdir), GS_OK);
    ASSERT_EQ(rf.n, 3);
    char want[256];
    const char *order[] = {"a-1.1.gst", "a-1.gst", "b-2.gst"}; /* by name */
    for (size_t i = 0; i < rf.n && i < 3; i++) {
        snprintf(want, sizeof want, "%s/%s", tmpdir, order[i]);
        ASSERT_TRUE(strcmp(rf.path[i], want) == 0);
    }
    gs_run_files_free(&rf);
    ASSERT_TRUE(rf.path == NULL && rf.n == 0);
    /* a trailing slash gives one slash, not two */
    char with_slash[64];
    snprintf(with_slash, sizeof with_slash, "%s/", tmpdir);
    ASSERT_EQ(gs_run_files_list(&rf, with_slash), GS_OK);
    ASSERT_EQ(rf.n, 3);
    if (rf.n) {
        snprintf(want, sizeof want, "%s/a-1.1.gst", tmpdir);
        ASSERT_TRUE(strcmp(rf.path[0], want) == 0);
    }
    gs_run_files_free(&rf);
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        char p[256];
        snprintf(p, sizeof p, "%s/%s", tmpdir, names[i]);
        unlink(p);
    }
    rmdir(tmpdir);
}

int main(void)
{
    test_every_kind_has_a_class();
    test_every_kind_documented();
    test_predicates_agree();
    test_classes_match_fields();
    test_packed_fields();
    test_run_files();
    return gs_check_done("test_kinds");
}
