/* fuzz_reader.c — libFuzzer target over the trace reader (trace/): the
 * input is a trace file, or (first byte 'L') a live file beside a fixed
 * valid trace file header, so that recovery (trace/gs_recover.c) reads it.
 * Every event is decoded twice (whole frames, batches), every string and
 * stack it names is looked up, and the totals are taken. Nothing may crash,
 * leak, read out of bounds, or take time or memory beyond the input's size.
 * Seeds: tests/data/ and tests/fuzz/regress/ (tests/fuzz/run.sh). */
#include <fcntl.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gs_live.h"
#include "gs_trace.h"

static char g_gst[256], g_live[256];

static void put_file(const char *path, const uint8_t *data, size_t size)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd < 0)
        abort();
    size_t done = 0;
    while (done < size) {
        ssize_t n = write(fd, data + done, size - done);
        if (n <= 0)
            abort();
        done += (size_t)n;
    }
    close(fd);
}

/* A trace file header, and nothing else, of the process image the live file
 * names (so that the reader does not ignore it as another image's). */
static void put_header_only(const uint8_t *live, size_t size)
{
    uint8_t buf[512];
    gs_proc_info pi;
    memset(&pi, 0, sizeof pi);
    if (size >= offsetof(gs_live_header, slots)) {
        memcpy(&pi.pid, live + offsetof(gs_live_header, pid), sizeof pi.pid);
        memcpy(&pi.exec_seq, live + offsetof(gs_live_header, exec_seq), sizeof pi.exec_seq);
    }
    pi.host = "fuzz";
    pi.argv = "a";
    pi.argv_len = 2;
    pi.argc = 1;
    long n = gs_header_build(buf, sizeof buf, &pi);
    if (n < 0)
        abort();
    put_file(g_gst, buf, (size_t)n);
}

static uint64_t read_all(int batches)
{
    gs_reader *r = NULL;
    if (gs_reader_open(&r, g_gst) != GS_OK)
        return 0;
    const gs_event *ev;
    size_t n;
    int rc;
    uint64_t sum = 0;
    while ((rc = batches ? gs_reader_next_batch(r, &ev, &n) : gs_reader_next_frame(r, &ev, &n)) > 0) {
        for (size_t i = 0; i < n; i++) {
            const char *s = gs_reader_string(r, ev[i].str);
            if (s)
                sum += strlen(s);
            size_t nf = 0;
            const uint64_t *fr = gs_reader_stack(r, ev[i].stack, &nf);
            if (fr && nf)
                sum += fr[nf - 1];
            sum += ev[i].ts + ev[i].dur;
        }
    }
    gs_reader_totals t;
    gs_reader_get_totals(r, &t);
    sum += t.events + t.dropped + t.lost + gs_reader_unread(r) + gs_reader_offset(r);
    gs_reader_close(r);
    return sum;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    const char *tmp = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    char dir[200];
    snprintf(dir, sizeof dir, "%s/gs-fuzz-reader.XXXXXX", tmp);
    if (!mkdtemp(dir))
        abort();
    snprintf(g_gst, sizeof g_gst, "%s/f.gst", dir);
    snprintf(g_live, sizeof g_live, "%s/f.live", dir);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 0 && data[0] == 'L') {
        put_header_only(data + 1, size - 1);
        put_file(g_live, data + 1, size - 1);
    } else {
        unlink(g_live);
        put_file(g_gst, data, size);
    }
    volatile uint64_t a = read_all(0), b = read_all(1);
    (void)a;
    (void)b;
    return 0;
}
