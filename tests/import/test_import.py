"""gpustarve import: real GPU traces give the trace's own steps and DataLoader
time; every PyTorch format since 1.8 reads; bad input is refused clearly;
memory does not grow with the trace; imported runs compare with traced ones."""
import gzip
import json
import os
import sys

import pytest

from conftest import REAL, ROOT, SMALL, busy_ms, imp, mk, peak_kb, report_json, run
import kineto_truth as kt


# ---- real GPU traces against what they say themselves ------------------------------------

@pytest.mark.parametrize("name", REAL)
def test_real_trace_steps_and_data_wait(gs, real, tmp_path, name):
    truth = kt.truth(kt.load(real[name]))
    j = report_json(gs, imp(gs, tmp_path / "run", real[name]), "--skip", "0")
    steps = j["per_step"]
    # step count and median: the trace's own ProfilerStep durations
    assert j["steps"]["count"] == len(truth) == len(steps)
    med = kt.median([t["dur_ms"] for t in truth])
    assert abs(j["step_ms"]["median"] - med) <= 0.01 * med
    for t, s in zip(truth, steps):
        assert abs(s["dur_ms"] - t["dur_ms"]) <= 0.01 * t["dur_ms"], t["name"]
        share = s["idle_data_wait_ms"] / s["dur_ms"]
        # data wait: the DataLoader spans' share of the step while the GPU is
        # idle (docs/import.md: while the GPU still runs the last step's
        # kernels, the loop is not starving it)
        assert abs(share - t["dataloader_gpu_idle_share"]) <= 0.01, t["name"]
        assert share <= t["dataloader_share"] + 1e-4, t["name"]
        assert abs(busy_ms(s) / s["dur_ms"] - t["gpu_busy_share"]) <= 0.01, t["name"]
    assert j["run"]["source"] == "pytorch_profiler"
    assert any("PyTorch profiler trace" in n for n in j["notes"])


def thread_fetch_shares(doc):
    """Per ProfilerStep#N (in start order): the share of it covered by the
    union of the DataLoader __next__ spans of the thread that runs the
    steps, from the raw trace (Python's json; the interval helpers of
    kineto_truth.py are plain lists)."""
    evs = doc["traceEvents"] if isinstance(doc, dict) else doc
    steps, spans = [], {}
    for e in evs:
        if e.get("ph") != "X" or "ts" not in e or "cat" not in e:
            continue
        if e["cat"] not in kt.CPU_CATS:
            continue
        ts = float(e["ts"])
        iv = (ts, ts + float(e.get("dur", 0) or 0))
        who = (str(e.get("pid")), str(e.get("tid")))
        if kt.STEP_RE.match(e.get("name", "")):
            steps.append(iv + (who,))
        elif kt.is_dataloader(e.get("name", "")):
            spans.setdefault(who, []).append(iv)
    steps.sort()
    threads = {w for _, _, w in steps}
    assert len(threads) == 1, threads  # one training thread runs the steps
    mine = kt.union(spans.get(threads.pop(), []))
    return [kt.length(kt.clip(mine, s, e)) / (e - s) for s, e, _ in steps], bool(mine)


@pytest.mark.parametrize("name", REAL)
def test_real_trace_fetch_share(gs, real, tmp_path, name):
    """The trainer's fetch share per step (trainer_fetch_ms) is the share of
    the step its DataLoader spans cover, GPU busy or not; the data wait is
    the GPU-idle part of it (docs/report-schema.md, "Summary numbers")."""
    want, has_spans = thread_fetch_shares(kt.load(real[name]))
    truth = kt.truth(kt.load(real[name]))
    j = report_json(gs, imp(gs, tmp_path / "run", real[name]), "--skip", "0")
    steps = j["per_step"]
    assert len(steps) == len(want) == len(truth)
    for t, w, s in zip(truth, want, steps):
        assert abs(s["dur_ms"] - t["dur_ms"]) <= 0.01 * t["dur_ms"], t["name"]
        got = s["trainer_fetch_ms"] / s["dur_ms"]
        assert abs(got - w) <= 0.01, (t["name"], got, w)
        assert s["idle_data_wait_ms"] <= s["trainer_fetch_ms"] + 1e-6, t["name"]
    if has_spans and any(w > 0 for w in want):
        tf = j["trainer_fetch"]
        total = sum(s["trainer_fetch_ms"] for s in steps) / sum(s["dur_ms"] for s in steps)
        assert tf["share"] == pytest.approx(total, abs=1e-6)
        assert tf["share"] >= j["share"]["idle_data_wait"]
        assert "trainer in batch fetch %.1f%%" % (100 * tf["share"]) in run(
            gs, "report", "--skip", "0", str(tmp_path / "run")).stdout
    else:
        assert j["trainer_fetch"] is None
        assert all(s["trainer_fetch_ms"] == 0 for s in steps)


def test_real_pageable_copies_are_found(gs, real, tmp_path):
    """The tb-profiler sample copies its batch from pageable memory; the A100
    trace has pageable host-to-device copies as well."""
    j = report_json(gs, imp(gs, tmp_path / "a", real["kineto_resnet50_nw0"]), "--skip", "0")
    assert j["median_ms"]["gpu_h2d_pageable"] > 1.0
    d = run(gs, "dump", "--json", imp(gs, tmp_path / "b", real["hta_a100_pageable"])).stdout
    kinds = [json.loads(l) for l in d.splitlines() if '"gpu_memcpy"' in l]
    assert sum(1 for k in kinds if k["direction"] == "HtoD" and k["src_mem"] == "pageable") == 45
    calls = [json.loads(l) for l in d.splitlines() if '"cuda_memcpy"' in l]
    assert calls and all(c["direction"] != "unknown" for c in calls if c["correlation"])


def test_advice_from_single_process_loader_says_what_it_cannot_know(gs, real, tmp_path):
    j = report_json(gs, imp(gs, tmp_path / "run", real["kineto_resnet50_nw0"]))
    assert j["dataloader"]["config"] == [{"loader": 0, "key": "num_workers", "value": "0"}]
    adv = [a for a in j["advice"] if a["setting"] == "num_workers"]
    assert adv and adv[0]["value"] >= 1
    why = adv[0]["why"]
    assert "not in the trace" in why and "does not split it into I/O and CPU" in why


def test_multi_process_loader_is_not_sized(gs, real, tmp_path):
    j = report_json(gs, imp(gs, tmp_path / "run", real["kineto_resnet50_nw4"]))
    assert not [a for a in j["advice"] if a["setting"] == "num_workers"]
    text = run(gs, "report", imp(gs, tmp_path / "r2", real["kineto_resnet50_nw4"])).stdout
    assert "multi-process iterator" in text and "count unknown" in text


# ---- formats ------------------------------------------------------------------------------

@pytest.mark.parametrize("fmt", ["1.9", "2.0", "2.4"])
def test_synthetic_formats_exact(gs, tmp_path, fmt):
    src = mk(tmp_path / "t.json", "--format", fmt, "--quirks", "--rank", "1")
    r = run(gs, "import", "-v", "-o", str(tmp_path / "run"), src)
    assert "needed repair" in r.stderr  # bare N/A, nan, control byte, bad UTF-8
    j = report_json(gs, str(tmp_path / "run"), "--skip", "0")
    assert j["steps"]["count"] == 6
    m = j["median_ms"]
    assert j["step_ms"]["median"] == pytest.approx(100.0, abs=1e-6)
    assert m["idle_data_wait"] == pytest.approx(30.0, abs=1e-6)
    assert m["gpu_h2d_pageable"] == pytest.approx(4.0, abs=1e-6)
    assert m["idle_pageable_copy"] == pytest.approx(2.0, abs=1e-6)
    assert m["gpu_compute"] == pytest.approx(50.0, abs=1e-6)
    assert os.listdir(tmp_path / "run") == ["rank1-4242.gst"]


def test_gzip_and_bare_array_read_the_same(gs, tmp_path):
    plain = mk(tmp_path / "p.json", "--format", "2.4")
    gz = mk(tmp_path / "g.json.gz", "--format", "2.4", "--gzip")
    # a bare array has no baseTimeNanoseconds: absolute times (2.0) to compare
    arr = mk(tmp_path / "a.json", "--format", "2.0", "--bare-array")
    obj = mk(tmp_path / "o.json", "--format", "2.0")

    def events(path, out):
        d = run(gs, "dump", "--json", imp(gs, tmp_path / out, path)).stdout
        return [l for l in d.splitlines() if '"kind":"process"' not in l and '"note"' not in l]

    a = events(plain, "rp")
    assert a == events(gz, "rg")
    # and no deviceProperties: the same events but for the device
    assert [l for l in events(obj, "ro") if "gpu_device" not in l] == events(arr, "ra")


def test_timestamps_keep_nanoseconds(gs, tmp_path):
    doc = {"baseTimeNanoseconds": 1700000000000000000, "traceEvents": [
        {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 1234.567,
         "dur": 2.001, "args": {"device": 0, "stream": 7, "correlation": 1}},
        {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 9, "tid": 9,
         "ts": 1000.001, "dur": 500}]}
    p = tmp_path / "t.json"
    p.write_text(json.dumps(doc))
    d = run(gs, "dump", "--json", imp(gs, tmp_path / "run", p)).stdout
    k = [json.loads(l) for l in d.splitlines() if '"gpu_kernel"' in l][0]
    assert k["ts_ns"] == 1700000000000000000 + 1234567 and k["dur_ns"] == 2001


def test_python_function_dataloader_frames(gs, tmp_path):
    """A trace recorded with_stack, whose DataLoader spans are only
    python_function frames of dataloader.py's __next__ (the category
    docs/import.md lists, which no other input here has): the same data wait."""
    ev = []
    for i in range(6):
        t0 = 1000000 + i * 100000
        ev += [{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#%d" % i, "pid": 1,
                "tid": 1, "ts": t0, "dur": 100000},
               {"ph": "X", "cat": "python_function", "pid": 1, "tid": 1, "ts": t0 + 10,
                "dur": 30000, "name": "torch/utils/data/dataloader.py(628): __next__"},
               {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": t0 + 40000,
                "dur": 50000, "args": {"device": 0, "stream": 7, "correlation": i + 1}}]
    p = tmp_path / "t.json"
    p.write_text(json.dumps({"traceEvents": ev}))
    j = report_json(gs, imp(gs, tmp_path / "run", p), "--skip", "0")
    assert j["steps"]["count"] == 6
    assert j["median_ms"]["idle_data_wait"] == pytest.approx(30.0, abs=1e-6)
    assert j["median_ms"]["gpu_compute"] == pytest.approx(50.0, abs=1e-6)


@pytest.mark.parametrize("name", SMALL)
def test_small_real_traces_of_recent_formats(gs, real_dir, tmp_path, name):
    out = imp(gs, tmp_path / "run", os.path.join(real_dir, name))
    r = run(gs, "report", "--skip", "0", out, check=False)
    assert r.returncode == 0, r.stderr
    assert "PyTorch profiler trace" in r.stdout


def test_ranks_become_files(gs, tmp_path):
    a = mk(tmp_path / "r0.json", "--rank", "0")
    b = mk(tmp_path / "r1.json.gz", "--rank", "1", "--gzip")
    out = imp(gs, tmp_path / "run", a, b)
    assert sorted(os.listdir(out)) == ["rank0-4242.gst", "rank1-4242.gst"]
    d = run(gs, "dump", "--json", out).stdout
    ranks = sorted(json.loads(l)["rank"] for l in d.splitlines() if '"kind":"process"' in l)
    assert ranks == [0, 1]
    run(gs, "report", out)


# ---- bad input ---------------------------------------------------------------------------

@pytest.mark.parametrize("content,msg", [
    (b"", "empty input"),
    (b"hello", "not a trace-event JSON document"),
    (b'{"traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "ts": 1, "dur', "truncated"),
    (b'{"schemaVersion": 1}', "no traceEvents"),
    (b'{"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "aten::add", "ts": 1, "dur": 2}]}',
     "no PyTorch profiler events"),
    (b"\x1f\x8b\x08\x00junk", "gzip"),
])
def test_bad_input(gs, tmp_path, content, msg):
    p = tmp_path / "bad.json"
    p.write_bytes(content)
    r = run(gs, "import", "-o", str(tmp_path / "run"), str(p), check=False)
    assert r.returncode == 2, r.stderr
    assert msg in r.stderr and r.stdout == ""
    assert not (tmp_path / "run").exists()  # the directory it made went with the failure


def test_usage(gs, tmp_path):
    assert run(gs, "import", check=False).returncode == 2
    assert run(gs, "import", "--nope", "x", check=False).returncode == 2
    assert run(gs, "import", "-o", str(tmp_path / "r"), str(tmp_path / "missing.json"),
               check=False).returncode == 2
    h = run(gs, "import", "--help")
    assert h.stdout.startswith("usage: gpustarve import") and h.stdout == run(gs, "help",
                                                                               "import").stdout
    src = mk(tmp_path / "t.json")
    imp(gs, tmp_path / "run", src)
    r = run(gs, "import", "-o", str(tmp_path / "run"), src, check=False)
    assert r.returncode == 2 and "already holds a run" in r.stderr


# ---- bounded memory and the external sort ---------------------------------------------------

def test_memory_does_not_grow_with_the_trace(gs, tmp_path):
    small = mk(tmp_path / "s.json", "--steps", "10", "--pad", "2000")
    big = mk(tmp_path / "b.json", "--steps", "40", "--pad", "2000")
    assert os.path.getsize(big) > 3.5 * os.path.getsize(small)
    # --mem 1: runs of 1 MB of records, so the big one spills and merges
    ks = peak_kb(gs, "import", "-q", "--mem", "1", "-o", str(tmp_path / "rs"), small)
    kb = peak_kb(gs, "import", "-q", "--mem", "1", "-o", str(tmp_path / "rb"), big)
    assert kb < ks * 1.2 + 2048, (ks, kb)
    # and the spilled, merged result is the one an in-memory sort gives
    imp(gs, tmp_path / "rm", big, extra=("--mem", "256"))
    a = run(gs, "dump", str(tmp_path / "rb")).stdout.split("\n", 2)[2]
    b = run(gs, "dump", str(tmp_path / "rm")).stdout.split("\n", 2)[2]
    assert a == b


# ---- imported runs in the other commands ------------------------------------------------------

def test_compare_imported_runs(gs, real, tmp_path):
    a = imp(gs, tmp_path / "nw0", real["kineto_resnet50_nw0"])
    b = imp(gs, tmp_path / "nw4", real["kineto_resnet50_nw4"])
    r = run(gs, "compare", "--json", a, b, check=False)
    assert r.returncode == 0, r.stderr
    j = json.loads(r.stdout)
    assert j["a"]["step_ms"]["median"] > j["b"]["step_ms"]["median"]


def test_compare_imported_with_traced(gs, tmp_path):
    """A: an imported num_workers=0 trace (30 ms of data wait in a 100 ms
    step); B: a run traced by gpustarve (the analyzer's scenario builder,
    trace files as the collector writes them) whose loader keeps up."""
    import importlib.util
    import gstest
    adir = os.path.join(ROOT, "tests", "analyzer")

    def load(name, path):
        spec = importlib.util.spec_from_file_location(name, path)
        m = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(m)
        return m

    # scenarios.py imports its own folder's conftest by that name
    ac = load("analyzer_conftest", os.path.join(adir, "conftest.py"))
    saved = sys.modules.get("conftest")
    sys.modules["conftest"] = ac
    try:
        scenarios = load("analyzer_scenarios", os.path.join(adir, "scenarios.py"))
    finally:
        sys.modules["conftest"] = saved
    gen = gstest.build_c(tmp_path / "gen_scenario", [os.path.join(adir, "gen_scenario.c")])
    a = imp(gs, tmp_path / "imp", mk(tmp_path / "t.json", "--steps", "12"))
    b = scenarios.loader_bound(workers=4, step_ms=72, wait_ms=2, jitter_ms=2).write(
        gen, str(tmp_path / "traced"))
    r = run(gs, "compare", "--json", a, b, check=False)
    assert r.returncode == 0, r.stderr
    j = json.loads(r.stdout)
    assert j["a"]["step_ms"]["median"] == pytest.approx(100.0, abs=0.01)
    assert j["b"]["step_ms"]["median"] < 80
    # one run a side: the change is shown, never proven (docs/report-outputs.md)
    assert j["helped"]["label"] == "no_proven_change" and j["helped"]["reason"] == "too_few_runs"
    assert j["helped"]["ratio"] < 0.8
    text = run(gs, "compare", a, b).stdout
    assert "num_workers" in text


def test_perfetto_and_html_of_an_imported_run(gs, real, tmp_path):
    out = imp(gs, tmp_path / "run", real["kineto_resnet50_nw0"])
    pf, html = tmp_path / "t.json", tmp_path / "r.html"
    run(gs, "report", "--perfetto", str(pf), "--html", str(html), out)
    doc = json.loads(pf.read_text())
    evs = doc["traceEvents"] if isinstance(doc, dict) else doc
    assert any("ProfilerStep" in str(e.get("name", "")) or e.get("cat") == "step" for e in evs)
    assert "<html" in html.read_text().lower()
