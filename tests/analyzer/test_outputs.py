"""`gpustarve report --perfetto FILE` and `--html FILE` on scenario runs
(scenarios.py): the Perfetto file is valid Chrome trace-event JSON whose
slices nest on every track and whose starvation pieces add up to the
report's own numbers; the HTML page is self-contained and renders in
headless Chromium (skipped, with the reason, where `chromium` is absent)."""
import collections
import json
import math
import os
import re
import shutil
import struct
import subprocess
import zlib

import pytest

import scenarios
from conftest import clean_env, report_json, run_report

SHARES = ["gpu_compute", "gpu_comm", "gpu_h2d_pinned", "gpu_h2d_pageable", "gpu_copy_other",
          "idle_data_wait", "idle_pageable_copy", "idle_host"]
CAUSE = {"data_wait": "idle_data_wait", "pageable_copy": "idle_pageable_copy",
         "host": "idle_host"}
PID_ANALYSIS = 999999999

SCENARIOS = {
    "loader": lambda: scenarios.loader_bound(),
    "loader_late_gpu": lambda: scenarios.loader_bound(late_gpu=True),
    "gpu": scenarios.gpu_bound,
    "pageable": scenarios.pageable,
    "host": scenarios.host_bound,
    "nogpu": scenarios.no_gpu,
    "nvtx": scenarios.nvtx,
    "nvtx_start_end": lambda: scenarios.nvtx(use_start_end=True),
    "inferred": scenarios.inferred,
}


def write(gen, tmp_path, name):
    return SCENARIOS[name]().write(gen, str(tmp_path / ("gpustarve-" + name)))


def no_constants(name):
    raise ValueError("non-finite number in JSON: " + name)


def load_perfetto(path):
    with open(path) as f:
        return json.load(f, parse_constant=no_constants)


def check_trace_events(t):
    """Structure of the legacy JSON format as ui.perfetto.dev imports it."""
    assert isinstance(t, dict) and isinstance(t["traceEvents"], list)
    assert t["displayTimeUnit"] == "ms"
    for e in t["traceEvents"]:
        assert e["ph"] in ("X", "M", "C", "i", "b", "e"), e
        assert isinstance(e["pid"], int) and isinstance(e["tid"], int), e
        assert isinstance(e["name"], str), e
        if e["ph"] != "M":
            assert isinstance(e["ts"], (int, float)) and math.isfinite(e["ts"]) and e["ts"] >= 0, e
        if e["ph"] == "X":
            assert isinstance(e["dur"], (int, float)) and math.isfinite(e["dur"]) and e["dur"] >= 0, e
            assert isinstance(e["cat"], str)
        if e["ph"] == "M":
            assert e["name"] in ("process_name", "thread_name", "process_sort_index"), e
            assert isinstance(e["args"], dict)
        if e["ph"] == "C":
            assert all(isinstance(v, (int, float)) and math.isfinite(v) for v in e["args"].values()), e
        if e["ph"] in ("b", "e"):
            assert "id" in e and "cat" in e, e


def check_nesting(t):
    """Perfetto needs the complete slices of one thread track to nest: two
    slices either are disjoint or one contains the other."""
    tracks = collections.defaultdict(list)
    for e in t["traceEvents"]:
        if e["ph"] == "X":
            # the JSON carries µs with 3 decimals: compare in integer ns
            a = round(e["ts"] * 1000)
            tracks[(e["pid"], e["tid"])].append((a, a + round(e["dur"] * 1000), e["name"]))
    for key, sl in tracks.items():
        sl.sort(key=lambda s: (s[0], -s[1]))
        stack = []
        for a, b, name in sl:
            while stack and stack[-1][1] <= a:
                stack.pop()
            assert not stack or b <= stack[-1][1], \
                "slices cross on track %r: %r and %r" % (key, stack[-1], (a, b, name))
            stack.append((a, b, name))
    return tracks


def names(t):
    procs, threads = {}, {}
    for e in t["traceEvents"]:
        if e["ph"] == "M" and e["name"] == "process_name":
            procs[e["pid"]] = e["args"]["name"]
        if e["ph"] == "M" and e["name"] == "thread_name":
            threads[(e["pid"], e["tid"])] = e["args"]["name"]
    return procs, threads


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_perfetto_valid(gs, gen, tmp_path, name):
    d = write(gen, tmp_path, name)
    out = tmp_path / "trace.json"
    r = run_report(gs, d, "--json", "--per-step", "--cores", "8", "--perfetto", str(out))
    assert r.returncode == 0, r.stderr
    rep = json.loads(r.stdout)
    t = load_perfetto(out)
    check_trace_events(t)
    tracks = check_nesting(t)
    procs, threads = names(t)
    ev = t["traceEvents"]

    # steps: one slice per step, on the analysis pseudo-process
    steps = [e for e in ev if e["pid"] == PID_ANALYSIS and e["ph"] == "X" and e["cat"] == "step"]
    assert len(steps) == rep["steps"]["count"]
    assert sum(1 for s in steps if "warm-up" in s["name"]) == rep["steps"]["warmup"]
    # the starvation track: idle pieces of measured steps, by cause; per
    # cause they add up to the report's numbers (the same sweep made both)
    pieces = [e for e in ev if e["ph"] == "X" and e["cat"] == "starvation"]
    assert all(p["pid"] == PID_ANALYSIS and p["tid"] == 2 for p in pieces)
    total = collections.Counter()
    for p in pieces:
        assert p["name"] in CAUSE
        total[CAUSE[p["name"]]] += p["dur"] / 1000.0
    measured = [s for s in rep["per_step"] if not s["warmup"]]
    for cls in CAUSE.values():
        want = sum(s[cls + "_ms"] for s in measured)
        assert total[cls] == pytest.approx(want, abs=1e-3 * max(1, len(pieces))), cls
    # every starvation piece lies inside a measured step
    spans = [(round(s["ts"] * 1000), round((s["ts"] + s["dur"]) * 1000)) for s in steps
             if "warm-up" not in s["name"]]
    for p in pieces:
        a, b = round(p["ts"] * 1000), round((p["ts"] + p["dur"]) * 1000)
        assert any(x <= a and b <= y for x, y in spans), p

    # a track per thread of every process; I/O slices carry their arguments
    io = [e for e in ev if e["ph"] == "X" and e["cat"] == "io"]
    assert io
    for e in io:
        assert {"fd", "bytes", "ret", "fd_kind"} <= set(e["args"]), e
        assert e["pid"] in procs
    reads = [e for e in io if e["name"] in ("pread64", "read") and e["args"]["fd_kind"] == "file"]
    for e in reads:
        assert e["args"]["path"].startswith("/data/")
    trainer = rep["run"]["trainer"]["pid"]
    assert procs[trainer].startswith("trainer: ")
    assert any(v.endswith("(training thread)") for (p, _), v in threads.items() if p == trainer)
    # a track per GPU stream in a pseudo-process named after the device
    gpu = [e for e in ev if e["ph"] == "X" and e["cat"] in ("gpu_kernel", "gpu_copy")]
    if rep["no_gpu_activity"]:
        assert not gpu
    else:
        assert gpu
        for e in gpu:
            assert e["pid"] not in (trainer, PID_ANALYSIS)
            assert procs[e["pid"]].startswith("GPU ")
            assert threads[(e["pid"], e["tid"])].startswith("stream ")
        if rep["run"]["gpus"]:
            assert any(rep["run"]["gpus"][0]["name"] in v for v in procs.values())
        busy = [e for e in ev if e["ph"] == "C" and e["name"] == "GPU busy %"]
        assert busy and all(0 <= e["args"]["value"] <= 100 for e in busy)
    if rep["loader"]["bytes_read"] or any(e["args"]["fd_kind"] == "file" for e in reads):
        rd = [e for e in ev if e["ph"] == "C" and e["name"] == "read MB/s"]
        assert rd and max(e["args"]["value"] for e in rd) > 0
        per_step = [e for e in ev if e["ph"] == "C" and e["name"].startswith("read MB/s per step")]
        assert per_step
    if name.startswith("nvtx"):
        if name == "nvtx":
            assert any(e["ph"] == "X" and e["cat"] == "nvtx" and e["name"] == "ProfilerStep#3"
                       for e in ev)
        else:
            b = [e for e in ev if e["ph"] == "b" and e["name"] == "train_step"]
            en = [e for e in ev if e["ph"] == "e"]
            assert len(b) == len(en) == rep["steps"]["count"]


def test_perfetto_loader_numbers(gs, gen, tmp_path):
    """loader_bound: 40 ms of data wait in each of the 20 measured steps, one
    piece each; a worker's 1 MiB read starting in a 10 ms bin shows as
    104.9 MB/s in that bin."""
    d = write(gen, tmp_path, "loader")
    out = tmp_path / "t.json"
    assert run_report(gs, d, "--perfetto", str(out)).returncode == 0
    t = load_perfetto(out)
    pieces = [e for e in t["traceEvents"] if e.get("cat") == "starvation"]
    assert len(pieces) == 20
    assert all(e["name"] == "data_wait" and e["dur"] == pytest.approx(40000) for e in pieces)
    rd = [e["args"]["value"] for e in t["traceEvents"] if e["ph"] == "C" and e["name"] == "read MB/s"]
    assert max(rd) == pytest.approx((1 << 20) / 1e6 / 0.010)


def test_perfetto_unwritable(gs, gen, tmp_path):
    d = write(gen, tmp_path, "gpu")
    r = run_report(gs, d, "--perfetto", str(tmp_path / "no" / "such" / "dir.json"))
    assert r.returncode == 1
    assert "--perfetto" in r.stderr
    assert "verdict" in r.stdout  # the report itself was written


# ---- HTML -------------------------------------------------------------------------------

def chromium():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        p = shutil.which(name)
        if p:
            return p
    return None


def html_report(gs, gen, tmp_path, name, *args):
    d = write(gen, tmp_path, name)
    out = tmp_path / "report.html"
    r = run_report(gs, d, "--json", "--cores", "8", "--html", str(out), *args)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout), out


@pytest.mark.parametrize("name", ["loader", "pageable", "nogpu", "nvtx"])
def test_html_self_contained(gs, gen, tmp_path, name):
    rep, out = html_report(gs, gen, tmp_path, name)
    page = out.read_text()
    assert page.startswith("<!DOCTYPE html>")
    # nothing from the network or beside the page
    assert not re.search(r"<(script|img|iframe|link)[^>]*\b(src|href)=", page, re.I)
    assert not re.search(r"url\(|@import|https?://(?!www\.w3\.org/2000/svg)", page)
    # the data the script draws from is valid JSON
    m = re.search(r'<script type="application/json" id="gs-data">(.*?)</script>', page, re.S)
    data = json.loads(m.group(1), parse_constant=no_constants)
    assert len(data["steps"]) == rep["steps"]["count"]
    assert len(data["windows"]) == min(3, rep["steps"]["measured"])
    for w in data["windows"]:
        for row, cls, a, b in w["items"]:
            assert 0 <= row < len(data["rows"]) and 0 <= cls < len(data["classes"])
            assert 0 <= a <= b <= w["d"] + 1e-3
    # the slowest measured steps, slowest first
    assert all(isinstance(s["w"], bool) for s in data["steps"])  # warm-up: a JSON boolean
    assert [s["w"] for s in data["steps"]][:1] == [True]
    durs = [s["d"] for s in data["steps"] if not s["w"]]
    assert [w["d"] for w in data["windows"]] == sorted(durs, reverse=True)[:len(data["windows"])]
    assert rep["verdict"]["text"].replace("&", "&amp;") in page
    # the trainer's fetch share beside the shares, when it fetches
    tf = rep["trainer_fetch"]
    assert (tf is not None) == ("trainer in batch fetch" in page)
    if tf:
        assert "trainer in batch fetch: %.1f%%" % (100 * tf["share"]) in page


def test_html_escapes_script_close(gs, gen, tmp_path):
    sc = scenarios.gpu_bound()
    sc.procs[0].argv = "python </script><b>x</b> train.py"
    d = sc.write(gen, str(tmp_path / "gpustarve-x"))
    out = tmp_path / "r.html"
    assert run_report(gs, d, "--html", str(out)).returncode == 0
    page = out.read_text()
    assert page.count("</script>") == 2  # the data's and the code's own
    assert "<b>x</b>" not in page


def png_is_blank(path):
    """True when the PNG's pixel data has (almost) no variety."""
    data = open(path, "rb").read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat = 8, b""
    while pos < len(data):
        n, typ = struct.unpack(">I4s", data[pos:pos + 8])
        if typ == b"IDAT":
            idat += data[pos + 8:pos + 8 + n]
        pos += 12 + n
    raw = zlib.decompress(idat)
    return len(set(raw)) < 16


@pytest.mark.skipif(chromium() is None,
                    reason="chromium not installed (Debian package 'chromium'; tools/deps.sh test)")
@pytest.mark.parametrize("name", ["loader", "pageable", "nogpu"])
def test_html_renders_in_chromium(gs, gen, tmp_path, name):
    rep, out = html_report(gs, gen, tmp_path, name)
    cmd = [chromium(), "--headless", "--disable-gpu", "--no-sandbox", "--no-first-run",
           "--user-data-dir=" + str(tmp_path / "profile"), "--window-size=1280,2000"]
    env = clean_env(HOME=str(tmp_path))
    r = subprocess.run(cmd + ["--dump-dom", out.as_uri()], capture_output=True, text=True,
                       timeout=120, env=env)
    assert r.returncode == 0, r.stderr[-2000:]
    dom = r.stdout
    assert 'data-rendered="1"' in dom, "the page's script did not run to its end"
    # one bar per step, warm-up included
    assert len(re.findall(r'<g class="bar[ "]', dom)) == rep["steps"]["count"]
    assert len(re.findall(r'<g class="bar[^"]*worst', dom)) == min(3, rep["steps"]["measured"])
    assert rep["verdict"]["text"] in dom.replace("&amp;", "&")
    for a in rep["advice"]:
        assert a["why"].replace("&", "&amp;") in dom
    if not rep["advice"]:
        assert 'id="no-advice"' in dom
    # a timeline per slowest step, with its rows
    assert len(re.findall(r'<svg[^>]*class="timeline"', dom)) == min(3, rep["steps"]["measured"])
    assert "training thread" in dom
    if not rep["no_gpu_activity"]:
        assert "GPU 0 stream 7" in dom
    if rep["loader"]["workers_seen"]:
        assert "loader pid 101" in dom
    png = tmp_path / "shot.png"
    r = subprocess.run(cmd + ["--hide-scrollbars", "--screenshot=" + str(png), out.as_uri()],
                       capture_output=True, text=True, timeout=120, env=env)
    assert r.returncode == 0 and png.exists(), r.stderr[-2000:]
    assert not png_is_blank(png)
