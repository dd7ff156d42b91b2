/* gen_scenario.c — writes a gpustarve run directory from a plain-text
 * description of processes and events, for the analyzer's scenario tests
 * (tests/analyzer). Built by tests/analyzer/conftest.py against the trace
 * library sources.
 *
 * Input (stdin), one directive per line; '#' starts a comment line:
 *   proc PID PPID [exec=N] [forked] [host=H] [version=MAJ.MIN] [rank=R]
 *        [local=L] [world=W] [real=NS] -- ARGV...
 *                       start a new process file OUTDIR/H-PID[.N].gst
 *                       (rank, local rank, world size: -1 unless given;
 *                       real: the header's CLOCK_REALTIME, whose
 *                       CLOCK_MONOTONIC is always 1 s)
 *   string ID TEXT      define string ID (TEXT = rest of the line)
 *   tid TID             the following events belong to thread TID
 *   stack ID ADDR...    define call stack ID (return addresses, innermost
 *                       first; decimal or 0x hex)
 *   ev KIND k=v ...     one event; KIND is a kind name (gs_kind_by_name);
 *                       keys: ts dur fd fdk str bytes ret off aux aux2 dev
 *                       stream corr stack weight (defaults: fd -1, off -1,
 *                       ret = bytes, weight 1 with a stack, the rest 0)
 *   frame               end the current frame here
 * Frames also end every 2000 records.
 *
 * Must never: depend on the analyzer.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gs_trace.h"

static void die(const char *m, int line)
{
    fprintf(stderr, "gen_scenario: line %d: %s\n", line, m);
    exit(2);
}

static FILE *out;
static uint8_t *raw, *frame;
static size_t frame_cap;
static gs_encoder enc;
static void *cctx;
static uint32_t cur_tid;
static int have_tid;

static void flush_frame(void)
{
    if (!out || enc.nrec == 0)
        return;
    long n = gs_frame_compress(cctx, raw, enc.len, enc.nrec, frame, frame_cap);
    if (n < 0 || fwrite(frame, 1, (size_t)n, out) != (size_t)n)
        die("writing a frame failed", 0);
    gs_encoder_reset(&enc);
    if (have_tid && gs_encode_tid(&enc, cur_tid) != GS_OK)
        die("encode tid", 0);
}

static void end_proc(void)
{
    if (!out)
        return;
    /* a frame holding only the TID record carries nothing */
    if (enc.nrec > (have_tid ? 1u : 0u))
        flush_frame();
    fclose(out);
    out = NULL;
}

static void room(size_t need, int line)
{
    if (enc.nrec >= 2000 || enc.len + need > GS_FRAME_RAW_MAX - 64) {
        flush_frame();
        if (enc.len + need > GS_FRAME_RAW_MAX - 64)
            die("record too large", line);
    }
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: gen_scenario OUTDIR < description\n");
        return 2;
    }
    const char *dir = argv[1];
    raw = malloc(GS_FRAME_RAW_MAX);
    frame_cap = gs_frame_bound(GS_FRAME_RAW_MAX);
    frame = malloc(frame_cap);
    cctx = gs_frame_cctx_new(3);
    if (!raw || !frame || !cctx)
        die("out of memory", 0);
    gs_encoder_init(&enc, raw, GS_FRAME_RAW_MAX);
    static char line[65536];
    int ln = 0;
    while (fgets(line, sizeof line, stdin)) {
        ln++;
        size_t l = strlen(line);
        while (l && (line[l - 1] == '\n' || line[l - 1] == '\r'))
            line[--l] = '\0';
        char *p = line;
        while (*p == ' ')
            p++;
        if (!*p || *p == '#')
            continue;
        if (strncmp(p, "proc ", 5) == 0) {
            end_proc();
            gs_encoder_reset(&enc);
            have_tid = 0;
            char *args = strstr(p, " -- ");
            char argvbuf[4096];
            size_t alen = 0;
            uint32_t argc2 = 0;
            if (args) {
                *args = '\0';
                char *save, *tok = strtok_r(args + 4, " ", &save);
                for (; tok; tok = strtok_r(NULL, " ", &save)) {
                    size_t tl = strlen(tok);
                    if (alen + tl + 1 > sizeof argvbuf)
                        die("argv too long", ln);
                    memcpy(argvbuf + alen, tok, tl + 1);
                    alen += tl + 1;
                    argc2++;
                }
            }
            unsigned long long pid, ppid;
            if (sscanf(p + 5, "%llu %llu", &pid, &ppid) != 2)
                die("proc needs PID PPID", ln);
            unsigned exec_seq = 0, vmaj = GS_VERSION_MAJOR, vmin = GS_VERSION_MINOR;
            int forked = 0;
            char host[64] = "testhost";
            char *q;
            if ((q = strstr(p, "exec=")))
                exec_seq = (unsigned)atoi(q + 5);
            if (strstr(p, " forked"))
                forked = 1;
            if ((q = strstr(p, "host=")))
                sscanf(q + 5, "%63s", host);
            if ((q = strstr(p, "version=")))
                sscanf(q + 8, "%u.%u", &vmaj, &vmin);
            gs_proc_info pi;
            memset(&pi, 0, sizeof pi);
            pi.pid = pid;
            pi.ppid = ppid;
            pi.mono_ns = 1000000000ull;
            pi.real_ns = 1764430000000000000ull;
            pi.rank = pi.local_rank = pi.world_size = -1;
            if ((q = strstr(p, "rank=")))
                pi.rank = atoi(q + 5);
            if ((q = strstr(p, "local=")))
                pi.local_rank = atoi(q + 6);
            if ((q = strstr(p, "world=")))
                pi.world_size = atoi(q + 6);
            if ((q = strstr(p, "real=")))
                pi.real_ns = strtoull(q + 5, NULL, 10);
            pi.flags = forked ? GS_HDR_F_FORKED : 0;
            pi.exec_seq = exec_seq;
            pi.host = host;
            pi.argc = argc2;
            pi.argv = argvbuf;
            pi.argv_len = (uint32_t)alen;
            uint8_t hdr[8192];
            long hl = gs_header_build(hdr, sizeof hdr, &pi);
            if (hl < 0)
                die("header", ln);
            uint16_t maj = (uint16_t)vmaj, min = (uint16_t)vmin;
            memcpy(hdr + 12, &maj, 2);
            memcpy(hdr + 14, &min, 2);
            char path[4096];
            if (exec_seq)
                snprintf(path, sizeof path, "%s/%s-%llu.%u.gst", dir, host, pid, exec_seq);
            else
                snprintf(path, sizeof path, "%s/%s-%llu.gst", dir, host, pid);
            out = fopen(path, "wb");
            if (!out || fwrite(hdr, 1, (size_t)hl, out) != (size_t)hl)
                die("cannot write the trace file", ln);
            continue;
        }
        if (!out)
            die("event before any proc", ln);
        if (strncmp(p, "string ", 7) == 0) {
            char *end;
            unsigned long id = strtoul(p + 7, &end, 10);
            const char *text = *end == ' ' ? end + 1 : end;
            room(strlen(text) + 16, ln);
            if (gs_encode_string(&enc, (uint32_t)id, text, strlen(text)) != GS_OK)
                die("encode string", ln);
            continue;
        }
        if (strncmp(p, "tid ", 4) == 0) {
            cur_tid = (uint32_t)strtoul(p + 4, NULL, 10);
            have_tid = 1;
            room(16, ln);
            if (gs_encode_tid(&enc, cur_tid) != GS_OK)
                die("encode tid", ln);
            continue;
        }
        if (strncmp(p, "stack ", 6) == 0) {
            char *end;
            unsigned long id = strtoul(p + 6, &end, 10);
            uint64_t frames[GS_STACK_FRAMES_MAX];
            size_t nf = 0;
            for (char *q = end; *q && nf < GS_STACK_FRAMES_MAX;) {
                while (*q == ' ')
                    q++;
                if (!*q)
                    break;
                frames[nf++] = strtoull(q, &q, 0);
            }
            room(GS_STACK_MAX_ENCODED, ln);
            if (gs_encode_stack(&enc, (uint32_t)id, frames, nf) != GS_OK)
                die("encode stack", ln);
            continue;
        }
        if (strcmp(p, "frame") == 0) {
            flush_frame();
            continue;
        }
        if (strncmp(p, "ev ", 3) == 0) {
            char *save, *tok = strtok_r(p + 3, " ", &save);
            if (!tok)
                die("ev needs a kind", ln);
            unsigned kind = gs_kind_by_name(tok);
            if (!kind)
                die("unknown kind", ln);
            gs_event ev;
            gs_event_clear(&ev);
            ev.kind = (uint16_t)kind;
            int have_ret = 0;
            while ((tok = strtok_r(NULL, " ", &save))) {
                char *eq = strchr(tok, '=');
                if (!eq)
                    die("key=value expected", ln);
                *eq = '\0';
                const char *k = tok;
                long long sv = strtoll(eq + 1, NULL, 0);
                unsigned long long uv = strtoull(eq + 1, NULL, 0);
                if (!strcmp(k, "ts")) ev.ts = uv;
                else if (!strcmp(k, "dur")) ev.dur = uv;
                else if (!strcmp(k, "fd")) ev.fd = (int32_t)sv;
                else if (!strcmp(k, "fdk")) ev.fd_kind = (uint8_t)uv;
                else if (!strcmp(k, "str")) ev.str = (uint32_t)uv;
                else if (!strcmp(k, "bytes")) ev.bytes = uv;
                else if (!strcmp(k, "ret")) { ev.ret = sv; have_ret = 1; }
                else if (!strcmp(k, "off")) ev.offset = sv;
                else if (!strcmp(k, "aux")) ev.aux = uv;
                else if (!strcmp(k, "aux2")) ev.aux2 = uv;
                else if (!strcmp(k, "dev")) ev.dev = (uint32_t)uv;
                else if (!strcmp(k, "stream")) ev.stream = uv;
                else if (!strcmp(k, "corr")) ev.corr = uv;
                else if (!strcmp(k, "stack")) ev.stack = (uint32_t)uv;
                else if (!strcmp(k, "weight")) ev.stack_weight = (uint32_t)uv;
                else die("unknown key", ln);
            }
            if (!have_ret)
                ev.ret = (int64_t)ev.bytes;
            if (ev.stack && !ev.stack_weight)
                ev.stack_weight = 1;
            ev.tid = cur_tid;
            room(GS_EVENT_MAX_ENCODED, ln);
            if (gs_encode_event(&enc, &ev) != GS_OK)
                die("encode event", ln);
            continue;
        }
        die("unknown directive", ln);
    }
    end_proc();
    gs_frame_cctx_free(cctx);
    free(raw);
    free(frame);
    return 0;
}
