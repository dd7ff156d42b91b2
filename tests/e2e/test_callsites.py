"""Call sites (README, "Call sites"): `gpustarve run --stacks` records sampled call
stacks; `report` and `dump --callsites` name the code behind small reads,
symbolised offline by build id."""
import glob
import json
import os
import re
import shutil
import subprocess
import sys

import pytest

from conftest import CLI, ROOT, clean_env, report_json

# A training loop stand-in: each step's batch is read by two known functions,
# read_small_a (70% of the 4 KiB preads) and read_small_b (30%).
PROG = r"""
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>
#include "gpustarve.h"
static char buf[1 << 16];
__attribute__((noinline)) void read_small_a(int fd, long i)
{
    if (pread(fd, buf, 4096, (i * 4096) % (1 << 20)) < 0)
        exit(1);
}
__attribute__((noinline)) void read_small_b(int fd, long i)
{
    if (pread(fd, buf, 4096, (i * 8192) % (1 << 20)) < 0)
        exit(1);
}
int main(int argc, char **argv)
{
    int fd = open(argv[1], O_RDONLY);
    long steps = atol(argv[2]), per = 200;
    for (long s = 0; s < steps; s++) {
        gpustarve_step_begin(s, 0);
        gpustarve_fetch_begin(s, 0);
        for (long i = 0; i < per; i++) {
            if (i % 10 < 7)
                read_small_a(fd, s * per + i);
            else
                read_small_b(fd, s * per + i);
        }
        gpustarve_fetch_end(s, 0);
        gpustarve_step_end(s, 0);
    }
    close(fd);
    return 0;
}
"""


@pytest.fixture(scope="module")
def prog(tmp_path_factory):
    d = tmp_path_factory.mktemp("callsites")
    src = d / "prog.c"
    src.write_text(PROG)
    exe = d / "prog"
    subprocess.run(["cc", "-O1", "-g", "-I", os.path.join(ROOT, "include"), "-o", str(exe),
                    str(src), "-ldl"], check=True)
    data = d / "data.bin"
    data.write_bytes(os.urandom(1 << 20))
    return d, exe, data


def traced_run(prog, run_dir, *extra, env=None):
    d, exe, data = prog
    p = subprocess.run([CLI, "run", "-q", "--stacks", "-o", str(run_dir)] + list(extra) +
                       ["--", str(exe), str(data), "40"], env=env or clean_env(),
                       capture_output=True, timeout=120)
    assert p.returncode == 0, p.stderr.decode()
    return run_dir


def small_reads(cs):
    f = [x for x in cs["findings"] if x["finding"] == "small_reads"]
    assert f, cs
    return f[0]


def perfetto_preads(run, tmp_path):
    """[(call site function, dur)] of the pread slices of the Perfetto trace."""
    pf = tmp_path / ("%s.perfetto.json" % run.name)
    p = subprocess.run([CLI, "report", "--perfetto", str(pf), str(run)], capture_output=True,
                       timeout=120)
    assert p.returncode == 0, p.stderr.decode()
    return [(ev["args"]["call_site"].split("+")[0], ev["dur"])
            for ev in json.loads(pf.read_text())["traceEvents"]
            if ev.get("ph") == "X" and ev.get("name", "").startswith("pread")]


def test_report_names_both_functions_with_their_shares(prog, tmp_path):
    """Sampled stacks (1 call in 64 after the first ones): the call counts are
    estimated from the samples, which are taken by count, not by time, so the
    estimates are known; the time shares are the sampled calls' durations
    scaled up, which on a loaded machine a single slow sampled call can
    sway, so they are checked against their own definition here and against
    every call's duration in the next test."""
    run = traced_run(prog, tmp_path / "run")
    rep = report_json(run)
    cs = rep["call_sites"]
    assert cs["stacks"] is True
    f = small_reads(cs)
    assert f["calls"] == 8000
    by_fn = {s["frames"][0]["function"]: s for s in f["sites"]}
    assert set(by_fn) >= {"read_small_a", "read_small_b"}, by_fn.keys()
    a, b = by_fn["read_small_a"], by_fn["read_small_b"]
    assert a["calls_est"] == pytest.approx(5600, rel=0.02)
    assert b["calls_est"] == pytest.approx(2400, rel=0.05)
    for site in (a, b):
        assert site["share"] == pytest.approx(min(1, site["time_ns_est"] / f["time_ns"]),
                                              abs=1e-4)
    assert a["frames"][1]["function"] == "main"
    if shutil.which("addr2line"):
        assert a["frames"][0]["file"].endswith("prog.c") and a["frames"][0]["line"] > 0
    # and the terminal report says the same
    p = subprocess.run([CLI, "report", str(run)], capture_output=True, timeout=120)
    text = p.stdout.decode()
    shares = {fn: float(pct) for pct, fn in
              re.findall(r"(\d+\.\d)%[^\n]*\n\s+(read_small_[ab])\+", text)}
    # the text rounds the full-precision share to 0.1 point; the JSON keeps 4
    # digits (0.7045 may print as 70.4 or 70.5), so the two agree to within
    # half a printed digit plus half a JSON digit
    assert set(shares) == {"read_small_a", "read_small_b"}, text
    for fn, site in (("read_small_a", a), ("read_small_b", b)):
        assert abs(shares[fn] - 100 * site["share"]) <= 0.05 + 0.005 + 1e-9, (fn, text)
    # and so does the HTML page, escaped, in its own section
    page = tmp_path / "r.html"
    p = subprocess.run([CLI, "report", "--html", str(page), str(run)], capture_output=True,
                       timeout=120)
    assert p.returncode == 0, p.stderr.decode()
    html = page.read_text()
    section = html[html.index('<section id="callsites">'):]
    section = section[:section.index("</section>")]
    assert "read_small_a+" in section and "read_small_b+" in section
    assert "&lt;- main+" in section and "<- main" not in section
    # and each pread slice of the Perfetto trace names its call site
    sites = {}
    for fn, _ in perfetto_preads(run, tmp_path):
        sites[fn] = sites.get(fn, 0) + 1
    assert sites == {"read_small_a": 5600, "read_small_b": 2400}


def test_time_shares_with_every_stack(prog, tmp_path):
    """With a stack on every call (GPUSTARVE_STACK_EVERY=1) the counts are
    exact and each site's time share is its calls' share of the time in
    small reads, as the per-call durations in the Perfetto trace add up."""
    run = traced_run(prog, tmp_path / "run", env=clean_env(GPUSTARVE_STACK_EVERY="1"))
    f = small_reads(report_json(run)["call_sites"])
    by_fn = {s["frames"][0]["function"]: s for s in f["sites"]}
    a, b = by_fn["read_small_a"], by_fn["read_small_b"]
    assert (a["calls_est"], b["calls_est"]) == (5600, 2400)
    assert (a["samples"], b["samples"]) == (5600, 2400)
    dur = {}
    for fn, d in perfetto_preads(run, tmp_path):
        dur[fn] = dur.get(fn, 0) + d
    total = sum(dur.values())
    assert a["share"] == pytest.approx(dur["read_small_a"] / total, abs=0.002), (a, dur)
    assert b["share"] == pytest.approx(dur["read_small_b"] / total, abs=0.002), (b, dur)


def test_stacks_leave_no_drops(prog, tmp_path):
    run = traced_run(prog, tmp_path / "run")
    p = subprocess.run([CLI, "dump", "--json", str(run)], capture_output=True, timeout=120)
    recs = [json.loads(l) for l in p.stdout.decode().splitlines()]
    drops = [r for r in recs if r["kind"] == "drops"]
    assert drops and all(r["dropped"] == 0 and r["lost"] == 0 for r in drops)
    preads = [r for r in recs if r["kind"] in ("pread", "pread64")]
    assert len(preads) == 8000 and all(r.get("stack") for r in preads)
    maps = [r for r in recs if r["kind"] == "mapping"]
    exe = str(prog[1])
    mine = [m for m in maps if m["path"] == exe]
    assert mine and mine[0]["build_id"] and len(mine[0]["build_id"]) >= 16


def test_moved_binary_found_by_build_id(prog, tmp_path):
    d, exe, data = prog
    run = traced_run(prog, tmp_path / "run")
    # another "machine": the trace copied elsewhere, the binary moved and renamed
    copy = tmp_path / "elsewhere" / "run"
    shutil.copytree(run, copy)
    syms = tmp_path / "symbols" / "bin"
    syms.mkdir(parents=True)
    moved = syms / "prog-renamed"
    shutil.copy(exe, moved)
    hidden = str(exe) + ".away"
    os.rename(exe, hidden)
    try:
        # not found: says so, with module+offset and the build id
        p = subprocess.run([CLI, "dump", "--callsites", "--no-lines", str(copy)],
                           capture_output=True, timeout=120)
        out = p.stdout.decode()
        assert p.returncode == 0
        assert "unsymbolised" in out and "prog+0x" in out and "build id" in out
        assert "read_small_a" not in out
        js = report_json(copy, "--no-lines")["call_sites"]
        fr = small_reads(js)["sites"][0]["frames"][0]
        assert fr["symbolised"] == "unsymbolised" and fr["function"] is None
        # found again by build id under --symbol-path
        rep = report_json(copy, "--symbol-path", str(tmp_path / "symbols"))
        names = [s["frames"][0]["function"] for s in small_reads(rep["call_sites"])["sites"]]
        assert "read_small_a" in names and "read_small_b" in names
    finally:
        os.rename(hidden, exe)


def test_without_stacks_no_call_sites(prog, tmp_path):
    d, exe, data = prog
    p = subprocess.run([CLI, "run", "-q", "-o", str(tmp_path / "run"), "--", str(exe),
                        str(data), "10"], env=clean_env(), capture_output=True, timeout=120)
    assert p.returncode == 0
    rep = report_json(tmp_path / "run")
    assert "call_sites" not in rep
    p = subprocess.run([CLI, "dump", "--callsites", str(tmp_path / "run")], capture_output=True)
    assert b"no call stacks in this trace" in p.stdout


def _python_with_perf_maps():
    """An interpreter that writes perf maps (3.12+), or None."""
    for py in ["python3.14", "python3.13", "python3.12", "/usr/bin/python3",
               os.path.join(ROOT, ".venv", "bin", "python")]:
        exe = shutil.which(py) or (py if os.path.exists(py) else None)
        if not exe:
            continue
        p = subprocess.run([exe, "-c", "import sys; print(sys.version_info[:2] >= (3, 12))"],
                           capture_output=True)
        if p.stdout.strip() == b"True":
            return exe
    return None


PY_SCRIPT = r"""
import os, sys
def load_sample(path):
    with open(path, "rb") as f:
        return f.read(4096)
def epoch(path, n):
    for _ in range(n):
        load_sample(path)
epoch(sys.argv[1], 3000)
"""


def test_python_frames(prog, tmp_path):
    py = _python_with_perf_maps()
    d, exe, data = prog
    script = tmp_path / "reader.py"
    script.write_text(PY_SCRIPT)
    if py is None:
        # the report still works and says that only native frames are there
        p = subprocess.run([CLI, "run", "-q", "--python-frames", "-o", str(tmp_path / "run"),
                            "--", "/usr/bin/python3", str(script), str(data)],
                           env=clean_env(), capture_output=True, timeout=120)
        assert p.returncode == 0, p.stderr.decode()
        p = subprocess.run([CLI, "dump", "--callsites", "--no-lines", str(tmp_path / "run")],
                           capture_output=True, timeout=120)
        assert b"only native frames are available" in p.stdout, p.stdout.decode()
        pytest.skip("no Python 3.12+ here (Debian's and the .venv's are 3.11): perf maps, and "
                    "so Python function names, need 3.12+")
    p = subprocess.run([CLI, "run", "-q", "--python-frames", "-o", str(tmp_path / "run"), "--",
                        py, str(script), str(data)], env=clean_env(), capture_output=True,
                       timeout=120)
    assert p.returncode == 0, p.stderr.decode()
    assert glob.glob(str(tmp_path / "run" / "*.perfmap"))
    p = subprocess.run([CLI, "dump", "--callsites", str(tmp_path / "run")], capture_output=True,
                       timeout=120)
    assert b"load_sample" in p.stdout, p.stdout.decode()


SHORT_PROG = r"""
#include <fcntl.h>
#include <unistd.h>
static char buf[1 << 15];
int main(int argc, char **argv)
{
    int fd = open(argv[1], O_RDONLY);
    for (int i = 0; i < 500; i++)
        if (pread(fd, buf, sizeof buf, 0) != 1000)
            return 1;
    close(fd);
    return 0;
}
"""


def test_small_reads_are_counted_in_bytes_read_not_asked(tmp_path):
    """500 reads asking 32 KiB of a 1000-byte file: 500,000 bytes read,
    16,384,000 asked; the report says both and calls neither by the other's
    name."""
    src = tmp_path / "short.c"
    src.write_text(SHORT_PROG)
    exe = tmp_path / "short"
    subprocess.run(["cc", "-O1", "-o", str(exe), str(src)], check=True)
    data = tmp_path / "short.bin"
    data.write_bytes(os.urandom(1000))
    run = tmp_path / "run"
    p = subprocess.run([CLI, "run", "-q", "--stacks", "-o", str(run), "--", str(exe), str(data)],
                       env=clean_env(), capture_output=True, timeout=120)
    assert p.returncode == 0, p.stderr.decode()
    p = subprocess.run([CLI, "dump", "--callsites", "--json", str(run)], capture_output=True,
                       timeout=120)
    assert p.returncode == 0, p.stderr.decode()
    cs = json.loads(p.stdout)
    f = small_reads(cs)
    assert f["calls"] == 500
    assert f["bytes"] == 500 * 1000
    assert f["requested_bytes"] == 500 * 32768
    p = subprocess.run([CLI, "dump", "--callsites", str(run)], capture_output=True, timeout=120)
    assert "488.3 KiB read (15.6 MiB requested)" in p.stdout.decode(), p.stdout.decode()


def test_processes_read_on_threads_merge_as_on_one(prog, tmp_path):
    """Three traced processes (two at once): `report --threads N` reads each
    file's call sites on its own thread and merges them in file order, so the
    sites, their estimates, process counts and first addresses (each process
    has its own address layout) are those of --threads 1, byte for byte."""
    d, exe, data = prog
    run = tmp_path / "run"
    p = subprocess.run([CLI, "run", "-q", "--stacks", "-o", str(run), "--", "/bin/sh", "-c",
                        '"$0" "$1" 20; "$0" "$1" 30 & "$0" "$1" 25; wait', str(exe), str(data)],
                       env=clean_env(), capture_output=True, timeout=120)
    assert p.returncode == 0, p.stderr.decode()
    outs = {}
    for n in (1, 2, 4):
        for mode in ("--json", "--per-step"):
            r = subprocess.run([CLI, "report", "--threads", str(n), mode, str(run)],
                               capture_output=True, timeout=120)
            assert r.returncode == 0, r.stderr.decode()
            outs[n, mode] = r.stdout
    for n in (2, 4):
        for mode in ("--json", "--per-step"):
            assert outs[n, mode] == outs[1, mode], (n, mode)
    f = small_reads(json.loads(outs[1, "--json"])["call_sites"])
    assert f["calls"] == 200 * (20 + 30 + 25)
    by_fn = {s["frames"][0]["function"]: s for s in f["sites"]}
    assert by_fn["read_small_a"]["processes"] == 3
