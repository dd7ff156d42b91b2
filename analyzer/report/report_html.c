/* report_html.c — the one-page HTML report: verdict, advice, per-step
 * stacked bars, timelines of the slowest steps; inline CSS, JS and SVG only.
 *
 * Must never: load anything from the network, or embed unescaped text.
 */
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "model/an_model.h"
#include "base/gs_version.h"
#include "base/out_buf.h"
#include "base/out_json.h"
#include "gs_format.h"
#include "gs_trace.h"
#include "report/report_json_parts.h"
#include "report/report_pass2.h"
#include "report/report_ranks.h"
#include "report/report_style.h"
#include "report/report_callsites.h"
#include "report/report_pass2.h"

static const char html_css[] =
    ":root{--fg:#1d2430;--muted:#5b6573;--line:#e3e7ed;--bg:#f6f7f9;--card:#fff}\n"
    "*{box-sizing:border-box}\n"
    "body{margin:0;background:var(--bg);color:var(--fg);font:14px/1.45 system-ui,-apple-system,\"Segoe UI\",Roboto,\"Noto Sans\",\"DejaVu Sans\",sans-serif}\n"
    "main{max-width:1180px;margin:0 auto;padding:24px 28px 40px}\n"
    "header h1{font-size:20px;margin:0 0 4px;letter-spacing:.2px}\n"
    "header h1 span{color:var(--muted);font-weight:400}\n"
    ".run{color:var(--muted);font-size:13px;word-break:break-all}\n"
    "section{background:var(--card);border:1px solid var(--line);border-radius:10px;padding:16px 20px;margin:16px 0}\n"
    "h2{font-size:15px;margin:0 0 12px}\n"
    "h3{font-size:13px;margin:14px 0 6px;font-weight:600}\n"
    ".verdict{font-size:17px;font-weight:600;border-left:6px solid #888}\n"
    ".verdict small{display:block;font-size:13px;font-weight:400;color:var(--muted);margin-top:4px}\n"
    ".v-HIGHLY_INPUT_BOUND{border-left-color:#d62839;background:#fff4f5}\n"
    ".v-MODERATELY_INPUT_BOUND{border-left-color:#e9a23b;background:#fffaf0}\n"
    ".v-NOT_INPUT_BOUND{border-left-color:#3a9d5d;background:#f3fbf6}\n"
    ".v-HOST_BOUND{border-left-color:#7b5ea7;background:#f8f5fc}\n"
    "ul.advice{list-style:none;margin:0;padding:0}\n"
    "ul.advice li{padding:8px 0;border-top:1px solid var(--line)}\n"
    "ul.advice li:first-child{border-top:0;padding-top:0}\n"
    "pre.cs{font-family:ui-monospace,\"DejaVu Sans Mono\",monospace;font-size:12px;white-space:pre-wrap;margin:0}\n"
    ".setting{font-family:ui-monospace,\"DejaVu Sans Mono\",monospace;font-weight:600;background:#eef2f7;padding:1px 6px;border-radius:4px}\n"
    ".pred{margin-left:8px}\n"
    ".why{color:var(--muted);font-size:13px;margin-top:2px}\n"
    "table.share{border-collapse:collapse;width:100%}\n"
    "table.share td{padding:4px 8px;border-top:1px solid var(--line);white-space:nowrap}\n"
    "table.share td.num{text-align:right;font-variant-numeric:tabular-nums;width:90px}\n"
    "table.share td.barcell{width:45%}\n"
    ".sw{display:inline-block;width:10px;height:10px;border-radius:2px;margin-right:8px;vertical-align:-1px}\n"
    ".hbar{height:10px;border-radius:3px;min-width:1px}\n"
    ".legend{display:flex;flex-wrap:wrap;gap:6px 16px;font-size:12px;color:var(--muted);margin-top:8px}\n"
    ".legend span{white-space:nowrap}\n"
    "svg{display:block;max-width:100%;height:auto}\n"
    "svg text{font:11px system-ui,-apple-system,\"Segoe UI\",Roboto,\"DejaVu Sans\",sans-serif;fill:#5b6573}\n"
    "svg .grid{stroke:#e9edf2;stroke-width:1}\n"
    "svg .axis{stroke:#9aa5b1;stroke-width:1}\n"
    "svg .median{stroke:#1d2430;stroke-width:1;stroke-dasharray:4 3}\n"
    "svg .lane{fill:#f4f6f9}\n"
    "svg .lane.alt{fill:#fafbfc}\n"
    "svg g.bar.warmup{opacity:.35}\n"
    "svg g.bar.worst rect.mark{fill:none;stroke:#1d2430;stroke-width:1.2}\n"
    "svg g.bar:hover{opacity:.8}\n"
    ".meta{color:var(--muted);font-size:12px}\n"
    ".notes li{color:var(--muted);font-size:13px}\n"
    "footer{color:var(--muted);font-size:12px;text-align:center;margin-top:20px}\n";

static const char html_js[] =
    "(function () {\n"
    "  \"use strict\";\n"
    "  var D = JSON.parse(document.getElementById(\"gs-data\").textContent);\n"
    "  var NS = \"http://www.w3.org/2000/svg\";\n"
    "  function el(tag, attrs, parent) {\n"
    "    var e = document.createElementNS(NS, tag);\n"
    "    for (var k in attrs) e.setAttribute(k, attrs[k]);\n"
    "    if (parent) parent.appendChild(e);\n"
    "    return e;\n"
    "  }\n"
    "  function fmt(ms) {\n"
    "    if (ms === 0) return \"0\";\n"
    "    return ms >= 100 ? ms.toFixed(0) : ms >= 10 ? ms.toFixed(1) : ms.toFixed(2);\n"
    "  }\n"
    "  function nice(x) {\n"
    "    if (!(x > 0)) return 1;\n"
    "    var p = Math.pow(10, Math.floor(Math.log(x) / Math.LN10)), m = x / p;\n"
    "    return (m <= 1 ? 1 : m <= 2 ? 2 : m <= 5 ? 5 : 10) * p;\n"
    "  }\n"
    "  function width(host) {\n"
    "    var w = host.clientWidth || 1000;\n"
    "    return Math.max(600, Math.min(1120, w));\n"
    "  }\n"
    "  var C = D.classes;\n"
    "\n"
    "  function legend(host, from, to, extra) {\n"
    "    for (var k = from; k < to; k++) {\n"
    "      var s = document.createElement(\"span\");\n"
    "      s.innerHTML = '<i class=\"sw\" style=\"background:' + C[k].color + '\"></i>';\n"
    "      s.appendChild(document.createTextNode(C[k].label));\n"
    "      host.appendChild(s);\n"
    "    }\n"
    "    if (extra) {\n"
    "      var e = document.createElement(\"span\");\n"
    "      e.innerHTML = '<i class=\"sw\" style=\"background:#f4f6f9;border:1px solid #d5dbe3\"></i>';\n"
    "      e.appendChild(document.createTextNode(extra));\n"
    "      host.appendChild(e);\n"
    "    }\n"
    "  }\n"
    "\n"
    "  function bars() {\n"
    "    var host = document.getElementById(\"bars\");\n"
    "    var n = D.steps.length;\n"
    "    if (!n) return;\n"
    "    var W = width(host), H = 230, L = 56, T = 12, B = 30;\n"
    "    var svg = el(\"svg\", { width: W, height: T + H + B, viewBox: \"0 0 \" + W + \" \" + (T + H + B),\n"
    "                          \"class\": \"chart\", role: \"img\", \"aria-label\": \"per-step stacked bars\" }, host);\n"
    "    var max = 0;\n"
    "    D.steps.forEach(function (s) { if (s.d > max) max = s.d; });\n"
    "    if (!(max > 0)) max = 1;\n"
    "    var tick = nice(max / 5);\n"
    "    max = Math.ceil(max / tick) * tick;\n"
    "    for (var v = 0; v <= max + 1e-9; v += tick) {\n"
    "      var y = T + H - v / max * H;\n"
    "      el(\"line\", { x1: L, x2: W, y1: y, y2: y, \"class\": \"grid\" }, svg);\n"
    "      var t = el(\"text\", { x: L - 6, y: y + 4, \"text-anchor\": \"end\" }, svg);\n"
    "      t.textContent = fmt(v) + \" ms\";\n"
    "    }\n"
    "    var bw = (W - L) / n, gap = bw > 5 ? Math.min(2, bw * 0.15) : 0;\n"
    "    var worst = {};\n"
    "    D.windows.forEach(function (w, i) { worst[w.index] = i + 1; });\n"
    "    D.steps.forEach(function (s, i) {\n"
    "      var g = el(\"g\", { \"class\": \"bar\" + (s.w ? \" warmup\" : \"\") + (worst[i] ? \" worst\" : \"\"),\n"
    "                        \"data-step\": s.n }, svg);\n"
    "      var y = T + H, x = L + i * bw, wd = Math.max(bw - gap, 0.6);\n"
    "      var tip = \"step \" + s.n + (s.w ? \" (warm-up, left out)\" : \"\") + \": \" + fmt(s.d) + \" ms\";\n"
    "      for (var k = 0; k < 8; k++) {\n"
    "        var val = s.p[k];\n"
    "        if (!(val > 0)) continue;\n"
    "        var h = val / max * H;\n"
    "        y -= h;\n"
    "        el(\"rect\", { x: x, y: y, width: wd, height: h, fill: C[k].color }, g);\n"
    "        tip += \"\\n\" + C[k].label + \": \" + fmt(val) + \" ms\";\n"
    "      }\n"
    "      if (worst[i]) {\n"
    "        el(\"rect\", { \"class\": \"mark\", x: x - 0.5, y: y - 0.5, width: wd + 1, height: T + H - y + 1 }, g);\n"
    "        var lab = el(\"text\", { x: x + wd / 2, y: y - 4, \"text-anchor\": \"middle\" }, g);\n"
    "        lab.textContent = \"#\" + worst[i];\n"
    "      }\n"
    "      el(\"title\", {}, g).textContent = tip;\n"
    "    });\n"
    "    if (D.median_ms > 0) {\n"
    "      var my = T + H - D.median_ms / max * H;\n"
    "      el(\"line\", { x1: L, x2: W, y1: my, y2: my, \"class\": \"median\" }, svg);\n"
    "      var mt = el(\"text\", { x: W - 4, y: my - 4, \"text-anchor\": \"end\" }, svg);\n"
    "      mt.textContent = \"median \" + fmt(D.median_ms) + \" ms\";\n"
    "    }\n"
    "    el(\"line\", { x1: L, x2: W, y1: T + H, y2: T + H, \"class\": \"axis\" }, svg);\n"
    "    var every = Math.max(1, Math.ceil(n / 12));\n"
    "    for (var i = 0; i < n; i += every) {\n"
    "      var tx = el(\"text\", { x: L + (i + 0.5) * bw, y: T + H + 16, \"text-anchor\": \"middle\" }, svg);\n"
    "      tx.textContent = D.steps[i].n;\n"
    "    }\n"
    "    var xl = el(\"text\", { x: L, y: T + H + B - 1 }, svg);\n"
    "    xl.textContent = \"step\";\n"
    "    legend(document.getElementById(\"bars-legend\"), 0, 8);\n"
    "  }\n"
    "\n"
    "  function timelines() {\n"
    "    var host = document.getElementById(\"timelines\");\n"
    "    if (!D.windows.length) {\n"
    "      host.textContent = \"No measured step.\";\n"
    "      return;\n"
    "    }\n"
    "    D.windows.forEach(function (w, wi) {\n"
    "      var box = document.createElement(\"div\");\n"
    "      box.className = \"tl\";\n"
    "      host.appendChild(box);\n"
    "      var h = document.createElement(\"h3\");\n"
    "      var parts = [];\n"
    "      for (var k = 0; k < 8; k++)\n"
    "        if (w.p[k] >= 0.005 * w.d) parts.push(C[k].label + \" \" + fmt(w.p[k]) + \" ms\");\n"
    "      h.textContent = \"#\" + (wi + 1) + \" slowest: step \" + w.n + \", \" + fmt(w.d) + \" ms\";\n"
    "      box.appendChild(h);\n"
    "      var m = document.createElement(\"div\");\n"
    "      m.className = \"meta\";\n"
    "      m.textContent = parts.join(\" \\u00b7 \");\n"
    "      box.appendChild(m);\n"
    "      var used = {};\n"
    "      w.items.forEach(function (it) { used[it[0]] = 1; });\n"
    "      var rows = [];\n"
    "      D.rows.forEach(function (r, i) { if (used[i]) rows.push(i); });\n"
    "      rows.sort(function (a, b) {\n"
    "        return D.rows[a].type - D.rows[b].type || (D.rows[a].name < D.rows[b].name ? -1 : 1);\n"
    "      });\n"
    "      var pos = {};\n"
    "      rows.forEach(function (r, i) { pos[r] = i; });\n"
    "      var W = width(host), LW = 170, RH = 22, T = 4, B = 22;\n"
    "      var H = T + rows.length * RH + B;\n"
    "      var svg = el(\"svg\", { width: W, height: H, viewBox: \"0 0 \" + W + \" \" + H, \"class\": \"timeline\",\n"
    "                            role: \"img\", \"aria-label\": \"timeline of step \" + w.n }, box);\n"
    "      var PW = W - LW - 8;\n"
    "      rows.forEach(function (r, i) {\n"
    "        var y = T + i * RH;\n"
    "        el(\"rect\", { x: LW, y: y + 2, width: PW, height: RH - 4, \"class\": \"lane\" + (i % 2 ? \" alt\" : \"\") }, svg);\n"
    "        var t = el(\"text\", { x: LW - 8, y: y + RH / 2 + 4, \"text-anchor\": \"end\" }, svg);\n"
    "        t.textContent = D.rows[r].name;\n"
    "      });\n"
    "      var g = el(\"g\", { \"class\": \"items\" }, svg);\n"
    "      w.items.forEach(function (it) {\n"
    "        var y = T + pos[it[0]] * RH + 3;\n"
    "        var x0 = LW + it[2] / w.d * PW, x1 = LW + it[3] / w.d * PW;\n"
    "        var r = el(\"rect\", { x: x0, y: y, width: Math.max(x1 - x0, 0.7), height: RH - 6,\n"
    "                             fill: C[it[1]].color }, g);\n"
    "        if (x1 - x0 > 4)\n"
    "          el(\"title\", {}, r).textContent = C[it[1]].label + \": \" + fmt(it[3] - it[2]) + \" ms at +\" + fmt(it[2]) + \" ms\";\n"
    "      });\n"
    "      var tick = nice(w.d / 8), ay = T + rows.length * RH;\n"
    "      el(\"line\", { x1: LW, x2: LW + PW, y1: ay + 1, y2: ay + 1, \"class\": \"axis\" }, svg);\n"
    "      for (var v = 0; v <= w.d + 1e-9; v += tick) {\n"
    "        var x = LW + v / w.d * PW;\n"
    "        el(\"line\", { x1: x, x2: x, y1: ay + 1, y2: ay + 5, \"class\": \"axis\" }, svg);\n"
    "        var tt = el(\"text\", { x: x, y: ay + 17,\n"
    "                              \"text-anchor\": x > LW + PW - 30 ? \"end\" : \"middle\" }, svg);\n"
    "        tt.textContent = \"+\" + fmt(v) + \" ms\";\n"
    "      }\n"
    "      if (w.truncated) {\n"
    "        var n = document.createElement(\"div\");\n"
    "        n.className = \"meta\";\n"
    "        n.textContent = \"(too much activity to draw all of it: the rest of this step is not shown)\";\n"
    "        box.appendChild(n);\n"
    "      }\n"
    "    });\n"
    "    legend(document.getElementById(\"timeline-legend\"), 0, C.length, \"CPU work or untraced\");\n"
    "  }\n"
    "\n"
    "  bars();\n"
    "  timelines();\n"
    "  document.body.setAttribute(\"data-rendered\", \"1\");\n"
    "})();\n";

/* ---- HTML ------------------------------------------------------------------------------ */

static const char *const hx_labels[HX_NCLS] = {
    "GPU compute", "GPU communication", "GPU H2D pinned", "GPU H2D pageable", "GPU other copies",
    "idle: data wait", "idle: pageable copy", "idle: host", "loader: file read",
    "loader: open/stat", "loader: pipe wait",
};
static const char *const hx_colors[HX_NCLS] = {
    "#3a9d5d", "#2a7f9e", "#5b8def", "#f08c2e", "#9aa5b1",
    "#d62839", "#f4b942", "#a78bcd", "#1f4e79", "#8ecae6", "#b7c0cc",
};

/* Text for HTML: & < > " ' as entities, control characters but tabs as
 * spaces. */
static void html_text(gs_out *o, const char *s)
{
    if (s)
        gs_html_str(o, s, strlen(s), "\t");
}

/* rep_cs_emit_fn: call-site text into a <pre>, escaped (newlines kept). */
static void html_emit(void *ctx, const char *s, size_t n)
{
    gs_html_str(ctx, s, n, "\n\"'");
}

static void step_parts_ms(const an_step *s, double *p)
{
    const uint64_t parts[AN_NSH] = {
        s->v.busy[AN_BUSY_COMPUTE], s->v.busy[AN_BUSY_COMM], s->v.busy[AN_BUSY_H2D_PINNED],
        s->v.busy[AN_BUSY_H2D_PAGEABLE], s->v.busy[AN_BUSY_OTHER], s->v.idle_dw, s->v.idle_pg,
        s->v.idle_host};
    for (int k = 0; k < AN_NSH; k++)
        p[k] = (double)parts[k] / 1e6;
}

static void json_ms4(gs_jw *w, uint64_t ns)
{
    gs_jw_scaled(w, (int64_t)((ns + 50) / 100), 4); /* ms, 0.1 µs */
}

static void json_parts(gs_jw *w, const an_step *s)
{
    double p[AN_NSH];
    step_parts_ms(s, p);
    gs_jw_key(w, "p");
    gs_jw_arr(w);
    for (int k = 0; k < AN_NSH; k++)
        gs_jw_fixed(w, p[k], 4);
    gs_jw_end(w);
}

/* The page's data, as JSON safe inside a <script> element (html_safe: no
 * '<' in it can close the element). */
static void html_data(gs_out *o, const pass2 *x)
{
    const an_result *r = x->res;
    gs_jw jw, *w = &jw;
    gs_jw_init(w, o);
    w->html_safe = 1;
    gs_jw_obj(w);
    gs_jw_key(w, "classes");
    gs_jw_arr(w);
    for (int k = 0; k < HX_NCLS; k++) {
        gs_jw_obj(w);
        gs_jw_kstr(w, "key", hx_cls_names[k]);
        gs_jw_kstr(w, "label",
                   r->no_gpu && k >= AN_SH_DATA_WAIT && k <= AN_SH_HOST ? hx_labels[k] + 6
                                                                          : hx_labels[k]);
        gs_jw_kstr(w, "color", hx_colors[k]);
        gs_jw_end(w);
    }
    gs_jw_end(w);
    gs_jw_newline(w, "\n");
    gs_jw_key(w, "median_ms");
    rep_json_num(w, r->step_ms_median);
    gs_jw_newline(w, "\n");
    gs_jw_key(w, "steps");
    gs_jw_arr(w);
    for (size_t i = 0; i < r->nsteps; i++) {
        const an_step *s = &r->steps[i];
        gs_jw_newline(w, "\n");
        gs_jw_obj(w);
        gs_jw_ku64(w, "n", s->num);
        gs_jw_kbool(w, "w", s->warmup);
        gs_jw_key(w, "d");
        json_ms4(w, s->v.t1 - s->v.t0);
        json_parts(w, s);
        gs_jw_end(w);
    }
    gs_jw_end(w);
    gs_jw_newline(w, "\n");
    gs_jw_key(w, "rows");
    gs_jw_arr(w);
    for (size_t i = 0; i < x->nrows; i++) {
        gs_jw_obj(w);
        gs_jw_kstr(w, "name", x->rows[i].name);
        gs_jw_ki64(w, "type", x->rows[i].type);
        gs_jw_end(w);
    }
    gs_jw_end(w);
    gs_jw_newline(w, "\n");
    gs_jw_key(w, "windows");
    gs_jw_arr(w);
    for (size_t wi = 0; wi < x->nwin; wi++) {
        const hx_window *v = &x->win[wi];
        const an_step *s = &r->steps[v->step];
        gs_jw_newline(w, "\n");
        gs_jw_obj(w);
        gs_jw_ku64(w, "index", v->step);
        gs_jw_ku64(w, "n", s->num);
        gs_jw_key(w, "d");
        json_ms4(w, v->t1 - v->t0);
        gs_jw_kbool(w, "truncated", v->full);
        json_parts(w, s);
        gs_jw_key(w, "items");
        gs_jw_arr(w);
        for (size_t i = 0; i < v->n; i++) {
            const hx_item *it = &v->it[i];
            if (i && i % 8 == 0)
                gs_jw_newline(w, "\n");
            gs_jw_arr(w);
            gs_jw_u64(w, it->row);
            gs_jw_u64(w, it->cls);
            json_ms4(w, it->t0 - v->t0);
            json_ms4(w, it->t1 - v->t0);
            gs_jw_end(w);
        }
        gs_jw_end(w);
        gs_jw_end(w);
    }
    gs_jw_end(w);
    gs_jw_end(w);
}

static void html_advice(gs_out *o, const an_result *r)
{
    if (!r->nadvice && r->advice_none_why[0]) {
        /* input-bound, yet nothing advised: why (docs/report-schema.md, "Advice") */
        gs_out_str(o, "<p id=\"no-advice\">Nothing advised: ");
        html_text(o, r->advice_none_why);
        gs_out_str(o, "</p>\n");
        return;
    }
    if (!r->nadvice) {
        gs_out_str(o, "<p id=\"no-advice\">No change to <span class=\"setting\">num_workers</span> or "
                      "<span class=\"setting\">pin_memory</span> would help.</p>\n");
        return;
    }
    gs_out_str(o, "<ul class=\"advice\">\n");
    for (size_t i = 0; i < r->nadvice; i++) {
        const an_advice *a = &r->advice[i];
        gs_out_str(o, "<li class=\"advice-item\"><span class=\"setting\">");
        char set[48];
        an_advice_text(a, set, sizeof set);
        gs_out_str(o, set);
        gs_out_str(o, "</span><span class=\"pred\">");
        if (!a->has_value)
            gs_out_str(o, "more workers will not help");
        else /* on the statistic it was made on (docs/report-schema.md, "Advice") */
            gs_out_printf(o, "predicted %s step %.1f ms (&minus;%.1f ms, &minus;%.0f%%)",
                          a->base == AN_BASE_MEDIAN ? "median" : "mean", a->predicted_step_ms,
                          a->predicted_saving_ms,
                          a->base_step_ms > 0 ? 100 * a->predicted_saving_ms / a->base_step_ms : 0.0);
        gs_out_str(o, "</span><div class=\"why\">");
        html_text(o, a->why);
        gs_out_str(o, "</div></li>\n");
    }
    gs_out_str(o, "</ul>\n");
}

void rep_write_html(gs_out *o, const pass2 *x)
{
    const an_run *run = x->run;
    const an_result *r = x->res;
    const an_proc *tr = r->trainer;
    gs_out_str(o, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
                  "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
                  "<meta name=\"generator\" content=\"gpustarve " GS_CLI_VERSION "\">\n<title>gpustarve report: ");
    html_text(o, tr->argv[0] ? tr->argv : tr->file);
    gs_out_str(o, "</title>\n<style>\n");
    gs_out_str(o, html_css);
    gs_out_str(o, "</style></head>\n<body><main>\n<header><h1>gpustarve report <span>");
    html_text(o, run->dir);
    gs_out_str(o, "</span></h1>\n<div class=\"run\">");
    html_text(o, tr->argv[0] ? tr->argv : tr->file);
    const int configured = !r->nworkers && r->cur_workers > 0;
    const size_t nw = configured ? (size_t)r->cur_workers : r->nworker_slots;
    gs_out_printf(o, " &middot; trainer pid %llu &middot; %zu loader %s%s%s", (unsigned long long)tr->pid,
                  nw, r->nworkers && r->workers[0].p == tr ? "thread" : "worker", nw == 1 ? "" : "s",
                  configured ? " (configuration)" : "");
    if (tr->ndevs) {
        gs_out_str(o, " &middot; ");
        html_text(o, tr->devs[0].name);
    }
    gs_out_printf(o, " &middot; %zu steps from ", r->measured);
    html_text(o, r->source_detail);
    gs_out_printf(o, " (%zu warm-up left out), median %.1f ms, p90 %.1f ms</div>",
                  r->warmup, r->step_ms_median, r->step_ms_p90);
    if (run->running)
        gs_out_printf(o, "<div class=\"run\" id=\"in-progress\">In progress: %zu of %zu processes "
                         "still running; the numbers cover what was written so far.</div>",
                      run->running, run->nprocs);
    if (r->separate_runs > 1)
        gs_out_printf(o, "<div class=\"run\" id=\"mixed\">This directory holds %zu separate runs; "
                         "this page is of the one with the trainer (pid %llu).</div>",
                      r->separate_runs, (unsigned long long)tr->pid);
    gs_out_str(o, "</header>\n");

    gs_out_str(o, "<section id=\"verdict\" class=\"verdict v-");
    gs_out_str(o, an_verdict_label(r->verdict));
    gs_out_str(o, "\">");
    html_text(o, r->verdict_text);
    if (r->no_gpu)
        gs_out_str(o, "<small>No GPU activity seen: shares are of the training thread's time.</small>");
    gs_out_str(o, "</section>\n");
    rep_write_ranks_html(o, r->job);
    gs_out_str(o, "<section id=\"advice\"><h2>Advice</h2>\n");
    html_advice(o, r);
    gs_out_str(o, "</section>\n");
    if (r->callsites && an_cs_has_stacks(r->callsites)) {
        /* the code behind the findings (run --stacks), as the text report
         * shows it */
        gs_out_str(o, "<section id=\"callsites\"><h2>Where in the code</h2>\n<pre class=\"cs\">");
        rep_cs_write_text(r->callsites, html_emit, o, 0, 8);
        gs_out_str(o, "</pre></section>\n");
    }

    gs_out_str(o, "<section id=\"summary\"><h2>Where the step time goes</h2>\n<table class=\"share\">"
                  "<tr><td></td><td class=\"num\"><b>median ms</b></td><td class=\"num\"><b>share</b>"
                  "</td><td></td></tr>\n");
    double maxsh = 0;
    for (int k = 0; k < AN_NSH; k++)
        if (r->share[k] > maxsh)
            maxsh = r->share[k];
    for (int k = 0; k < AN_NSH; k++) {
        if (r->no_gpu && k < AN_SH_DATA_WAIT)
            continue;
        gs_out_printf(o, "<tr><td><i class=\"sw\" style=\"background:%s\"></i>%s</td>"
                         "<td class=\"num\">%.1f</td><td class=\"num\">%.1f%%</td>"
                         "<td class=\"barcell\"><div class=\"hbar\" style=\"width:%.1f%%;background:%s\">"
                         "</div></td></tr>\n",
                      hx_colors[k], r->no_gpu ? hx_labels[k] + 6 : hx_labels[k], r->median_ms[k],
                      100 * r->share[k], maxsh > 0 ? 100 * r->share[k] / maxsh : 0.0, hx_colors[k]);
    }
    gs_out_str(o, "</table>\n");
    if (r->has_fetch) /* beside the shares, not one of them (docs/report-schema.md) */
        gs_out_printf(o, "<p class=\"meta\">trainer in batch fetch: %.1f%% of step time (median "
                         "%.1f ms a step); data wait %.1f%%</p>\n",
                      100 * r->fetch_share, r->fetch_median_ms, 100 * r->share[AN_SH_DATA_WAIT]);
    if (r->nworkers) {
        gs_out_printf(o, "<p class=\"meta\">loader: %zu %s, %.1f ms per batch each, %.1f MB/s together</p>\n",
                      r->nworker_slots, r->workers[0].p == tr ? "threads" : "workers", r->batch_ms,
                      r->worker_MBps_total);
    }
    gs_out_str(o, "</section>\n");
    const an_kstat *top[10];
    size_t nk = an_kstats_top(&tr->kstats, top, 10);
    if (nk) {
        gs_out_str(o, "<section id=\"kernels\"><h2>GPU time by kernel (whole run)</h2>\n"
                      "<table class=\"share\"><tr><td class=\"num\"><b>ms</b></td><td class=\"num\">"
                      "<b>count</b></td><td><b>class</b></td><td><b>kernel</b></td></tr>\n");
        for (size_t i = 0; i < nk; i++) {
            char shown[4096];
            gs_out_printf(o, "<tr><td class=\"num\">%.1f</td><td class=\"num\">%llu</td><td>%s</td><td>",
                          top[i]->ns / 1e6, (unsigned long long)top[i]->count,
                          top[i]->comm ? "communication" : "compute");
            html_text(o, an_kernel_display(top[i]->name, shown, sizeof shown));
            gs_out_str(o, "</td></tr>\n");
        }
        gs_out_str(o, "</table></section>\n");
    }

    gs_out_printf(o, "<section id=\"steps\"><h2>Every step (%zu, warm-up faded)</h2>\n"
                     "<div id=\"bars\"></div><div class=\"legend\" id=\"bars-legend\"></div></section>\n",
                  r->nsteps);
    gs_out_str(o, "<section id=\"worst\"><h2>The slowest steps: the training thread, the GPU streams "
                  "and the loader side by side</h2>\n"
                  "<div id=\"timelines\"></div><div class=\"legend\" id=\"timeline-legend\"></div></section>\n");
    if (r->nnotes || run->nskipped) {
        gs_out_str(o, "<section id=\"notes\"><h2>Notes</h2><ul class=\"notes\">\n");
        for (size_t i = 0; i < r->nnotes; i++) {
            gs_out_str(o, "<li>");
            html_text(o, r->notes[i]);
            gs_out_str(o, "</li>\n");
        }
        for (size_t i = 0; i < run->nskipped; i++) {
            gs_out_str(o, "<li>skipped ");
            html_text(o, run->skipped[i].file);
            gs_out_str(o, ": ");
            html_text(o, run->skipped[i].reason);
            gs_out_str(o, "</li>\n");
        }
        gs_out_str(o, "</ul></section>\n");
    }
    gs_out_str(o, "<footer>gpustarve " GS_CLI_VERSION " &middot; one self-contained page, nothing "
                  "loaded from the network &middot; rules: docs/report-schema.md</footer>\n</main>\n");

    /* the data, escaped so that nothing in it can close the script */
    gs_out_str(o, "<script type=\"application/json\" id=\"gs-data\">");
    html_data(o, x);
    gs_out_str(o, "</script>\n<script>\n");
    gs_out_str(o, html_js);
    gs_out_str(o, "</script>\n</body></html>\n");
}

