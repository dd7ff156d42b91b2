"""`gpustarve report --threads N` (docs/performance.md, "Report"): the trace
files are read on N threads, and the report is byte-for-byte the one a
single thread writes, for runs of several processes, ranks, hosts and run
directories, damaged files included (their messages too)."""
import json
import os
import shutil

import pytest

import scenarios
from conftest import Scenario, run_report
from test_ranks_report import REAL, SKEW, add_rank, job

THREADS = (2, 3, 8)


def same_for_any_threads(gs, dirs, *args):
    """The report (stdout, stderr, exit status) with --threads 1 and with each
    of THREADS; returns the one-thread stdout."""
    def one(n):
        r = run_report(gs, dirs[0], "--threads", str(n), *args, *dirs[1:])
        return r.returncode, r.stdout, r.stderr
    base = one(1)
    assert base[0] == 0, base[2]
    for n in THREADS:
        assert one(n) == base, "--threads %d differs from --threads 1" % n
    return base[1]


def test_loader_run(gs, gen, tmp_path):
    d = scenarios.loader_bound(workers=6).write(gen, str(tmp_path / "run"))
    assert len(os.listdir(d)) == 7
    for args in (("--json", "--per-step"), ("--per-step",)):
        out = same_for_any_threads(gs, [d], *args)
        assert out  # a report was written
    # the analysis saw every worker whichever thread read it
    out = same_for_any_threads(gs, [d], "--json")
    assert json.loads(out)["loader"]["workers_seen"] == 6


def test_two_host_job(gs, gen, tmp_path):
    d = job(gen, tmp_path)
    out = same_for_any_threads(gs, [d], "--json", "--per-step")
    assert json.loads(out)["job"]["limiting_rank"] == 1
    same_for_any_threads(gs, [d])


def test_job_in_one_directory_per_host(gs, gen, tmp_path):
    """Each host's files in its own run directory, read as one job."""
    n0, n1 = Scenario(), Scenario()
    n0.proc(50, 1, "torchrun --nproc_per_node=1 train.py", host="n0")
    add_rank(n0, "n0", 0, dw_ms=2, workers=3, worker_rank=0)
    add_rank(n1, "n1", 1, dw_ms=80, workers=1, worker_rank=None, real=REAL + SKEW)
    a = n0.write(gen, str(tmp_path / "n0"))
    b = n1.write(gen, str(tmp_path / "n1"))
    out = same_for_any_threads(gs, [a, b], "--json")
    assert json.loads(out)["job"]["hosts"] == 2
    # the order of the directories is the order of the files, for any N
    same_for_any_threads(gs, [b, a], "--json")


def test_damaged_and_unreadable_files(gs, gen, tmp_path):
    """A truncated file is used as far as it reads, a file of garbage is
    skipped; the list of them and the messages on stderr keep file order."""
    d = scenarios.loader_bound(workers=4).write(gen, str(tmp_path / "run"))
    files = sorted(f for f in os.listdir(d) if f.endswith(".gst"))
    cut = os.path.join(d, files[2])
    size = os.path.getsize(cut)
    with open(cut, "r+b") as f:
        f.truncate(size - 100)
    with open(os.path.join(d, "zz-garbage.gst"), "wb") as f:
        f.write(b"not a trace at all" * 10)
    shutil.copy(cut, os.path.join(d, "aa-copy.gst"))
    out = same_for_any_threads(gs, [d], "--json")
    assert "truncated" in out and "not a gpustarve trace" in out
    same_for_any_threads(gs, [d])


@pytest.mark.parametrize("bad", ["0", "-1", "x", "2000"])
def test_bad_thread_count(gs, gen, tmp_path, bad):
    d = scenarios.loader_bound().write(gen, str(tmp_path / "run"))
    r = run_report(gs, d, "--threads", bad)
    assert r.returncode == 2 and "--threads" in r.stderr and not r.stdout
