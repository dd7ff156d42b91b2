/* report_callsites.c — the call sites behind a run's findings
 * (model/an_callsites.h) as text, through the caller's output function,
 * and as one JSON value (report_callsites.h; docs/report-schema.md).
 *
 * Must never: change what the analysis found, or symbolise anything (the
 * frames come symbolised, an_cs_finish).
 */
#include "report/report_callsites.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "load/an_symbols.h"

static const char *base_name(const char *p)
{
    const char *b = p ? strrchr(p, '/') : NULL;
    return b ? b + 1 : (p ? p : "?");
}

static const char *status_name(int st)
{
    switch (st) {
    case AN_SYM_OK: return "ok";
    case AN_SYM_NOSYM: return "no_symbol";
    case AN_SYM_NOFILE: return "unsymbolised";
    case AN_SYM_NOMAP: return "no_mapping";
    case AN_SYM_PERFMAP: return "perf_map";
    }
    return "?";
}

void rep_cs_frame_text(const an_cs_frame *f, char *buf, size_t cap)
{
    int n = 0;
    switch (f->status) {
    case AN_SYM_OK:
    case AN_SYM_NOSYM:
        if (f->func[0] && f->func_off == AN_SYM_OFF_UNKNOWN)
            n = snprintf(buf, cap, "%s", f->func);
        else if (f->func[0])
            n = snprintf(buf, cap, "%s+0x%llx", f->func, (unsigned long long)f->func_off);
        else
            n = snprintf(buf, cap, "%s+0x%llx", base_name(f->module),
                         (unsigned long long)f->offset);
        if (n >= 0 && (size_t)n < cap && f->line)
            n += snprintf(buf + n, cap - (size_t)n, " (%s:%u)", base_name(f->file), f->line);
        if (n >= 0 && (size_t)n < cap && f->func[0])
            snprintf(buf + n, cap - (size_t)n, " in %s", base_name(f->module));
        break;
    case AN_SYM_PERFMAP:
        snprintf(buf, cap, "%s", f->func);
        break;
    case AN_SYM_NOMAP:
        snprintf(buf, cap, "0x%llx (unsymbolised: in no recorded mapping)",
                 (unsigned long long)f->addr);
        break;
    default:
        if (f->module && strcmp(f->module, "[anon]") == 0)
            snprintf(buf, cap, "[anon]+0x%llx (unsymbolised: anonymous code, no perf map)",
                     (unsigned long long)f->offset);
        else
            snprintf(buf, cap, "%s+0x%llx (unsymbolised: %s not found%s%s)", base_name(f->module),
                     (unsigned long long)f->offset, f->module ? f->module : "?",
                     f->build_id && f->build_id[0] ? ", build id " : "",
                     f->build_id ? f->build_id : "");
        break;
    }
}

static void emitf(rep_cs_emit_fn emit, void *ctx, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void emitf(rep_cs_emit_fn emit, void *ctx, const char *fmt, ...)
{
    char b[2048];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(b, sizeof b, fmt, ap);
    va_end(ap);
    if (n > 0)
        emit(ctx, b, (size_t)n < sizeof b ? (size_t)n : sizeof b - 1);
}

static void fmt_ms(char *b, size_t cap, double ns)
{
    if (ns >= 1e9)
        snprintf(b, cap, "%.2f s", ns / 1e9);
    else
        snprintf(b, cap, "%.2f ms", ns / 1e6);
}

static void fmt_bytes(char *b, size_t cap, double v)
{
    const char *u[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    int i = 0;
    while (v >= 1024 && i < 4) {
        v /= 1024;
        i++;
    }
    snprintf(b, cap, i ? "%.1f %s" : "%.0f %s", v, u[i]);
}

void rep_cs_write_text(const an_cs *cs, rep_cs_emit_fn emit, void *ctx, unsigned indent,
                       unsigned max_frames)
{
    char pad[64];
    unsigned ind = indent < sizeof pad - 1 ? indent : sizeof pad - 1;
    memset(pad, ' ', ind);
    pad[ind] = 0;
    if (!an_cs_has_stacks(cs)) {
        emitf(emit, ctx, "%sno call stacks in this trace (trace with 'gpustarve run --stacks')\n",
              pad);
        return;
    }
    if (an_cs_python_note(cs))
        emitf(emit, ctx, "%snote: %s\n", pad, an_cs_python_note(cs));
    for (int k = 0; k < AN_CS_NFIND; k++) {
        const an_cs_find *f = an_cs_get(cs, k);
        if (!f->calls)
            continue;
        char t[32], b[32];
        fmt_ms(t, sizeof t, (double)f->time_ns);
        fmt_bytes(b, sizeof b, (double)f->bytes);
        if (k == AN_CS_MMAP)
            emitf(emit, ctx, "%s%s: %llu calls, %s mapped\n", pad, an_cs_finding_title(k),
                  (unsigned long long)f->calls, b);
        else if (f->requested != f->bytes) { /* reads that got less than they asked */
            char q[32];
            fmt_bytes(q, sizeof q, (double)f->requested);
            emitf(emit, ctx, "%s%s: %llu calls, %s, %s read (%s requested)\n", pad, an_cs_finding_title(k),
                  (unsigned long long)f->calls, t, b, q);
        } else
            emitf(emit, ctx, "%s%s: %llu calls, %s%s%s\n", pad, an_cs_finding_title(k),
                  (unsigned long long)f->calls, t, f->bytes ? ", " : "", f->bytes ? b : "");
        if (!f->nsites) {
            emitf(emit, ctx, "%s  (no stacks sampled)\n", pad);
            continue;
        }
        for (size_t i = 0; i < f->nsites; i++) {
            const an_cs_site *s = &f->sites[i];
            char m[32];
            if (k == AN_CS_MMAP)
                fmt_bytes(m, sizeof m, s->est_bytes);
            else
                fmt_ms(m, sizeof m, s->est_ns);
            emitf(emit, ctx, "%s  %5.1f%%  %s  %.0f calls%s\n", pad, 100.0 * s->share, m,
                  s->est_calls, s->nprocs > 1 ? "  (several processes)" : "");
            unsigned nf = s->nframes;
            if (max_frames && nf > max_frames)
                nf = max_frames;
            for (unsigned j = 0; j < nf; j++) {
                char fb[1200];
                rep_cs_frame_text(&s->frames[j], fb, sizeof fb);
                emitf(emit, ctx, "%s      %s%s\n", pad, j ? "<- " : "", fb);
            }
            if (nf < s->nframes)
                emitf(emit, ctx, "%s      ... %u more frames\n", pad, s->nframes - nf);
        }
        if (f->nsites < f->nsites_all)
            emitf(emit, ctx, "%s  ... %zu more call stacks\n", pad, f->nsites_all - f->nsites);
    }
}

void rep_cs_write_json(const an_cs *cs, gs_jw *w)
{
    gs_jw_obj(w);
    gs_jw_kbool(w, "stacks", an_cs_has_stacks(cs));
    gs_jw_kstr(w, "python_frames", an_cs_python_note(cs));
    gs_jw_key(w, "findings");
    gs_jw_arr(w);
    for (int k = 0; k < AN_CS_NFIND; k++) {
        const an_cs_find *f = an_cs_get(cs, k);
        if (!f->calls)
            continue;
        gs_jw_obj(w);
        gs_jw_kstr(w, "finding", an_cs_finding_name(k));
        gs_jw_ku64(w, "calls", f->calls);
        gs_jw_ku64(w, "time_ns", f->time_ns);
        gs_jw_ku64(w, "bytes", f->bytes);
        gs_jw_ku64(w, "requested_bytes", f->requested);
        gs_jw_ku64(w, "stacked_events", f->stacked);
        gs_jw_ku64(w, "call_stacks", f->nsites_all);
        gs_jw_key(w, "sites");
        gs_jw_arr(w);
        for (size_t i = 0; i < f->nsites; i++) {
            const an_cs_site *s = &f->sites[i];
            gs_jw_obj(w);
            gs_jw_kfixed(w, "share", s->share, 4);
            gs_jw_kfixed(w, "time_ns_est", s->est_ns, 0);
            gs_jw_kfixed(w, "calls_est", s->est_calls, 0);
            gs_jw_kfixed(w, "bytes_est", s->est_bytes, 0);
            gs_jw_ku64(w, "samples", s->samples);
            gs_jw_ku64(w, "processes", s->nprocs);
            gs_jw_key(w, "frames");
            gs_jw_arr(w);
            for (uint32_t j = 0; j < s->nframes; j++) {
                const an_cs_frame *fr = &s->frames[j];
                gs_jw_obj(w);
                gs_jw_kstr(w, "function", fr->func[0] ? fr->func : NULL);
                gs_jw_key(w, "function_offset");
                if (fr->func[0] && fr->func_off != AN_SYM_OFF_UNKNOWN)
                    gs_jw_u64(w, fr->func_off);
                else
                    gs_jw_null(w);
                gs_jw_kstr(w, "file", fr->file[0] ? fr->file : NULL);
                gs_jw_key(w, "line");
                if (fr->line)
                    gs_jw_u64(w, fr->line);
                else
                    gs_jw_null(w);
                gs_jw_kstr(w, "module", fr->module);
                gs_jw_ku64(w, "module_offset", fr->offset);
                gs_jw_ku64(w, "address", fr->addr);
                gs_jw_kstr(w, "build_id", fr->build_id && fr->build_id[0] ? fr->build_id : NULL);
                gs_jw_kstr(w, "symbolised", status_name(fr->status));
                gs_jw_end(w);
            }
            gs_jw_end(w);
            gs_jw_end(w);
        }
        gs_jw_end(w);
        gs_jw_end(w);
    }
    gs_jw_end(w);
    gs_jw_end(w);
}

size_t rep_cs_site_text(const an_cs_site *s, unsigned max_frames, char *buf, size_t cap)
{
    if (!cap)
        return 0;
    size_t len = 0;
    buf[0] = '\0';
    for (uint32_t q = 0; q < s->nframes && (!max_frames || q < max_frames); q++) {
        char t[1024];
        rep_cs_frame_text(&s->frames[q], t, sizeof t);
        const int w = snprintf(buf + len, cap - len, "%s%s", q ? " <- " : "", t);
        if (w < 0 || (size_t)w >= cap - len) {
            len = cap - 1;
            break;
        }
        len += (size_t)w;
    }
    return len;
}
