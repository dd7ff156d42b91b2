"""Every JSON output of gpustarve stays valid JSON whatever bytes the trace
and the command line carry: a run directory, host, argv, thread name, file
path, kernel and device names, config value and code-mapping path that are
not UTF-8 and hold control characters, quotes and backslashes go through
report --json (with --per-step and call sites), report --perfetto and
--html (the page's data), compare --json, dump --json (events, --summary,
--callsites), probe --json and sweep --json; each is parsed back with
Python's json (strict: raw control characters and invalid UTF-8 fail) and
each nasty string reads back as Python's bytes.decode("utf-8", "replace")
of what went in (docs/report-outputs.md, "JSON strings")."""
import json
import os
import re
import subprocess

import pytest

from conftest import MS, clean_env

NASTY = b"\xff\x01\t\r\"q\\\x7f\xe2\x82 \xc3\xa9\xc0\xaf\x1f"
ARGV1 = b"tr\xffain.py"
ARGV2 = b"--tag=a\"b\\c\x01d\xed\xa0\x80"  # a surrogate in UTF-8 form: ill-formed
HOST = b"h\xffx"
THREAD = b"Main" + NASTY + b"</script>"
PATH = b"/data/sh" + NASTY + b".bin"
KERNEL = b"gemm\xfe<k>&" + NASTY
DEVICE = b"GPU \xc3\xa9\xc0 \x02"
CONFIG = b"v\xff\x02"
MODULE = b"/lib/mod\xff\x03ule.so"


def R(b):
    """What a JSON string of these bytes must read back as."""
    return b.decode("utf-8", "replace")


def describe():
    """gen_scenario input: a loader-bound trainer whose strings are nasty,
    with sampled call stacks on its small file reads."""
    t0 = 2000 * MS
    lines = [b"proc 100 1 host=" + HOST + b" -- python " + ARGV1 + b" " + ARGV2]
    strings = [THREAD, PATH, b"num_workers=2", b"nasty=" + CONFIG, KERNEL, DEVICE, MODULE,
               b"cudaMemcpy"]
    for i, s in enumerate(strings, 1):
        assert b"\n" not in s and not s.endswith(b"\r")
        lines.append(b"string %d %s" % (i, s))
    ev = lambda kind, **f: lines.append(
        ("ev %s " % kind).encode() + " ".join("%s=%d" % kv for kv in f.items()).encode())
    lines.append(b"tid 100")
    ev("thread", ts=t0 - 5 * MS, str=1, aux=100)
    ev("config", ts=t0 - 4 * MS, str=3, aux=0)
    ev("config", ts=t0 - 4 * MS, str=4, aux=0)
    ev("gpu_device", ts=t0 - 3 * MS, dev=0, str=6, bytes=1 << 30, aux=132, aux2=90)
    ev("mapping", ts=t0 - 2 * MS, str=7, bytes=0x100000, off=0, aux=0x400000, aux2=0)
    lines.append(b"stack 1 0x400123 0x400456")
    for n in range(12):
        a = t0 + n * 100 * MS
        ev("step_begin", ts=a, aux=n)
        ev("fetch_begin", ts=a, aux=n)
        ev("pread64", ts=a + MS, dur=30 * MS, fd=9, fdk=1, str=2, bytes=4096, off=n * 4096,
           stack=1)
        ev("fetch_end", ts=a + 40 * MS, aux=n)
        ev("cuda_memcpy", ts=a + 40 * MS, dur=MS, str=8, bytes=8 << 20, ret=0, aux=1 | 1 << 8)
        ev("gpu_kernel", ts=a + 45 * MS, dur=50 * MS, str=5, dev=0, stream=7)
        ev("step_end", ts=a + 100 * MS, aux=n)
        lines.append(b"frame")
    return b"\n".join(lines) + b"\n"


@pytest.fixture(scope="module")
def nasty_runs(gen, tmp_path_factory):
    base = os.fsencode(str(tmp_path_factory.mktemp("jsonbytes")))
    runs = []
    for tag in (b"a", b"b"):
        d = base + b"/run-" + tag + NASTY
        os.mkdir(d)
        p = subprocess.run([gen, d], input=describe(), capture_output=True)
        assert p.returncode == 0, p.stderr
        runs.append(d)
    return base, runs


def cli(gs, *args, ok=(0,)):
    p = subprocess.run([os.fsencode(gs)] + list(args), capture_output=True, env=clean_env(),
                       timeout=300)
    assert p.returncode in ok, p.stderr.decode(errors="replace")
    return p


def strict(data):
    """json.loads of bytes: UTF-8 only, no raw control characters."""
    return json.loads(data)


def test_report_json(gs, nasty_runs):
    _, (run, _) = nasty_runs
    rep = strict(cli(gs, b"report", b"--json", b"--per-step", run).stdout)
    assert rep["run"]["dir"] == R(run)
    tr = rep["run"]["trainer"]
    assert tr["file"] == R(HOST + b"-100.gst")
    assert tr["argv"] == R(b"python " + ARGV1 + b" " + ARGV2)
    assert tr["training_thread_name"] == R(THREAD[:31])  # the report keeps 31 bytes
    assert rep["run"]["gpus"][0]["name"] == R(DEVICE)
    assert {"loader": 0, "key": "nasty", "value": R(CONFIG)} in rep["dataloader"]["config"]
    assert len(rep["per_step"]) == rep["steps"]["count"]
    cs = rep["call_sites"]
    site = cs["findings"][0]["sites"][0]
    assert site["frames"][0]["module"] == R(MODULE)


def test_perfetto_and_html(gs, nasty_runs, tmp_path):
    _, (run, _) = nasty_runs
    pf, html = tmp_path / "t.json", tmp_path / "t.html"
    cli(gs, b"report", b"-q", b"--perfetto", os.fsencode(str(pf)), b"--html",
        os.fsencode(str(html)), run)
    doc = strict(pf.read_bytes())
    names = {e["args"]["name"] for e in doc["traceEvents"]
             if e["ph"] == "M" and e["name"] == "thread_name"}
    assert any(n.startswith(R(THREAD)[:20]) for n in names), names
    paths = {e["args"].get("path") for e in doc["traceEvents"] if e.get("cat") == "io"}
    assert R(PATH) in paths
    kernels = {e["name"] for e in doc["traceEvents"] if e.get("cat") == "gpu_kernel"}
    assert R(KERNEL) in kernels
    page = html.read_bytes()
    m = re.search(rb'<script type="application/json" id="gs-data">(.*?)</script>', page, re.S)
    assert m, "no data element"
    data = strict(m.group(1))
    assert data["steps"] and data["classes"]
    assert b"<" not in m.group(1)  # nothing in the data can end the element


def test_compare_json(gs, nasty_runs):
    _, (a, b) = nasty_runs
    doc = strict(cli(gs, b"compare", b"--json", a, b).stdout)
    assert doc["a"]["dir"] == R(a) and doc["b"]["dir"] == R(b)
    assert doc["a"]["argv"] == R(b"python " + ARGV1 + b" " + ARGV2)


def test_dump_json(gs, nasty_runs):
    _, (run, _) = nasty_runs
    lines = cli(gs, b"dump", b"--json", run).stdout.splitlines()
    recs = [strict(ln) for ln in lines]
    proc = recs[0]
    assert proc["kind"] == "process" and proc["host"] == R(HOST)
    assert proc["argv"] == [R(b"python"), R(ARGV1), R(ARGV2)]
    assert proc["file"] == R(run + b"/" + HOST + b"-100.gst")
    by_kind = {}
    for r in recs[1:]:
        by_kind.setdefault(r["kind"], r)
    assert by_kind["thread"]["name"] == R(THREAD)
    assert by_kind["pread64"]["path"] == R(PATH)
    assert by_kind["gpu_kernel"]["name"] == R(KERNEL)
    assert by_kind["gpu_device"]["name"] == R(DEVICE)
    assert by_kind["mapping"]["path"] == R(MODULE)

    summ = [strict(ln) for ln in cli(gs, b"dump", b"--json", b"--summary", run).stdout.splitlines()]
    assert summ[0]["kind"] == "summary" and summ[0]["argv"][1] == R(ARGV1)
    assert summ[0]["thread_names"] == [R(THREAD)]
    assert summ[-1]["kind"] == "total"

    cs = strict(cli(gs, b"dump", b"--json", b"--callsites", b"--no-lines", run).stdout)
    assert cs["findings"][0]["sites"][0]["frames"][0]["module"] == R(MODULE)


def test_probe_json(gs, nasty_runs):
    base, _ = nasty_runs
    d = base + b"/probe-" + NASTY
    os.mkdir(d)
    with open(d + b"/f" + NASTY, "wb") as f:
        f.write(b"x" * 65536)
    doc = strict(cli(gs, b"probe", b"--json", b"--no-h2d", d).stdout)
    assert doc["schema"] == "gpustarve.probe/1" and doc["path"] == R(d)


def test_sweep_json(gs, nasty_runs):
    base, _ = nasty_runs
    out = base + b"/sweep-" + NASTY
    arg = b"x" + NASTY
    # /bin/true has no steps: the configuration fails, the JSON still comes
    p = cli(gs, b"sweep", b"-q", b"--set", b"V=0", b"--steps", b"1", b"--warmup", b"0",
            b"-o", out, b"--json", b"-", b"--", b"/bin/true", arg, ok=(1,))
    doc = strict(p.stdout)
    assert doc["schema"] == "gpustarve.sweep/3"
    assert doc["command"] == ["/bin/true", R(arg)]
    assert doc["out_dir"] == R(out)
    run = doc["configs"][0]["runs"][0]
    assert run["dir"] == R(out + b"/V0-r1") and run["log"] == R(out + b"/V0-r1.log")
    assert doc["best"] is None and doc["stopped"] == "none" and doc["rounds"] == 1
