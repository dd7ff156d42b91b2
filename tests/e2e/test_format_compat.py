"""Traces written by released format versions keep loading: each directory
tests/data/vX.Y/ holds a small run written by that version's collector, and
tests/data/vX.Y.expected.jsonl what `dump --json` printed for it then.
v1.2 holds two processes that died (SIGKILL, a segmentation fault) right
after their reads (tests/tools/die_after_reads.c), with their live files
compacted by tests/tools/compact_live.py: nearly every record is recovered
from the live file.

Every version the reader claims must have one: the reader accepts the major
version of trace/gs_format.h (GS_VERSION_MAJOR) and every minor up to
GS_VERSION_MINOR was released (docs/trace-format.md, Compatibility), so
v<major>.0 ... v<major>.<minor> are checked, and a claimed version without a
committed trace fails."""
import glob
import json
import os
import re

import pytest

from conftest import CLI, ROOT, run_plain

DATA = os.path.join(ROOT, "tests", "data")


def claimed_versions():
    with open(os.path.join(ROOT, "trace", "gs_format.h")) as f:
        text = f.read()
    major = int(re.search(r"#define GS_VERSION_MAJOR (\d+)", text).group(1))
    minor = int(re.search(r"#define GS_VERSION_MINOR (\d+)", text).group(1))
    return ["v%d.%d" % (major, m) for m in range(minor + 1)]


CLAIMED = claimed_versions()
COMMITTED = sorted(os.path.basename(d) for d in glob.glob(os.path.join(DATA, "v*"))
                   if os.path.isdir(d))


def test_every_claimed_version_has_a_trace():
    missing = [v for v in CLAIMED
               if not glob.glob(os.path.join(DATA, v, "*.gst"))
               or not os.path.exists(os.path.join(DATA, v + ".expected.jsonl"))]
    assert not missing, ("the reader claims %s but tests/data/ has no trace (and "
                         "expected dump) of %s" % (", ".join(CLAIMED), ", ".join(missing)))


def test_no_trace_of_an_unclaimed_version():
    assert set(COMMITTED) <= set(CLAIMED), (COMMITTED, CLAIMED)


@pytest.mark.parametrize("version", CLAIMED)
def test_old_trace_dumps_as_it_did(built, version):
    expected = os.path.join(DATA, version + ".expected.jsonl")
    if not os.path.exists(expected):
        pytest.fail("no %s: test_every_claimed_version_has_a_trace says more" % expected)
    p = run_plain([CLI, "dump", "--json", os.path.join("tests", "data", version)], cwd=ROOT)
    assert p.returncode == 0, p.stderr.decode()
    got = [json.loads(l) for l in p.stdout.decode().splitlines()]
    with open(expected) as f:
        want = [json.loads(l) for l in f]
    # the files are of the version their directory names
    assert {r["version"] for r in got if r["kind"] == "process"} == {version[1:]}
    # fields added by later dump versions may appear; none may change or vanish
    assert len(got) == len(want)
    for g, w in zip(got, want):
        for k, v in w.items():
            assert g.get(k) == v, (k, g, w)


def test_v12_records_come_back_from_the_live_files(built):
    """What makes 1.2: the trace files hold a header and almost nothing
    else; the 40 reads of each process, how it ended, come from beside it."""
    p = run_plain([CLI, "dump", "--json", os.path.join("tests", "data", "v1.2")], cwd=ROOT)
    assert p.returncode == 0, p.stderr.decode()
    recs = [json.loads(l) for l in p.stdout.decode().splitlines()]
    procs = [r for r in recs if r["kind"] == "process"]
    assert [pr["argv"][-1] for pr in procs] == ["kill", "segv"]
    for pr in procs:
        mine = [r for r in recs if r.get("pid") == pr["pid"]]
        assert len([r for r in mine if r["kind"] == "pread"]) == 40
        notes = [r for r in mine if r["kind"] == "note"]
        assert len(notes) == 1 and notes[0]["code"] == 6
        exits = [(r["status"], r["how"]) for r in mine if r["kind"] == "exit"]
        assert exits == ([] if pr["argv"][-1] == "kill" else [(11, "signal")])
    for f in glob.glob(os.path.join(DATA, "v1.2", "*.gst")):
        assert os.path.getsize(f) < 200  # the header only: nothing was flushed


def test_v13_threads_carry_their_own_clocks(built):
    """What makes 1.3: cpu records, from the training thread at its fetch
    and step-end markers (with switch counts) and from the writer for every
    thread (with run-queue delay), CPU time never going back."""
    p = run_plain([CLI, "dump", "--json", os.path.join("tests", "data", "v1.3")], cwd=ROOT)
    assert p.returncode == 0, p.stderr.decode()
    recs = [json.loads(l) for l in p.stdout.decode().splitlines()]
    # the C training loop (tests/tools/loader_parts.c); the other process
    # is test_v13_processes_record_their_cpu_limits'
    loop = {r["pid"] for r in recs if r["kind"] == "process" and r["argv"][0] == "./loader"}
    assert len(loop) == 1
    recs = [r for r in recs if r.get("pid") in loop]
    cpu = [r for r in recs if r["kind"] == "cpu"]
    marker = [r for r in cpu if r["source"] == "marker"]
    periodic = [r for r in cpu if r["source"] == "periodic"]
    fetches = [r for r in recs if r["kind"] in ("fetch_begin", "fetch_end", "step_end")]
    assert len(marker) == len(fetches) == 12
    assert all(r["runq_ns"] is None and r["nvcsw"] is not None for r in marker)
    assert {r["target_tid"] for r in periodic} >= {r["tid"] for r in marker}
    assert len({r["target_tid"] for r in periodic}) == 2  # the loader thread too
    assert all(r["runq_ns"] is not None for r in periodic)
    for tid in {r["target_tid"] for r in cpu}:
        mine = sorted((r["ts_ns"], r["cpu_ns"]) for r in cpu if r["target_tid"] == tid)
        # marker samples have µs resolution, periodic ones ns: within 1 µs
        assert all(b[1] + 1000 >= a[1] for a, b in zip(mine, mine[1:])), mine


def test_v13_processes_record_their_cpu_limits(built):
    """Also new in 1.3: each process image records once the CPUs it may use
    (a `head -c 8` traced on a 2-CPU machine without a cgroup quota)."""
    p = run_plain([CLI, "dump", "--json", os.path.join("tests", "data", "v1.3")], cwd=ROOT)
    assert p.returncode == 0, p.stderr.decode()
    recs = [json.loads(l) for l in p.stdout.decode().splitlines()]
    head = [r["pid"] for r in recs if r["kind"] == "process" and r["argv"][0] == "head"]
    assert len(head) == 1
    lim = [r for r in recs if r["kind"] == "cpu_limits" and r["pid"] == head[0]]
    assert [(r["affinity_cpus"], r["quota_millicpus"], r["online_cpus"]) for r in lim] == [(2, 0, 2)]


def test_v13_repeated_reads_come_back_whole(built):
    """What makes 1.3: a call like the one before it (same descriptor, size,
    result, the next offset) is stored as a `repeat` record of its gap and
    duration only. tests/data/v1.3 is bench/pread_loop reading a 64 KiB file
    4 KiB at a time (16 warm-up reads, then 40 wrapping at the end): every
    read must come back with its own offset, size, result and path."""
    p = run_plain([CLI, "dump", "--json", os.path.join("tests", "data", "v1.3")], cwd=ROOT)
    assert p.returncode == 0, p.stderr.decode()
    recs = [json.loads(l) for l in p.stdout.decode().splitlines()]
    # bench/pread_loop's process, run as ./v13 (the others: the two tests above)
    loop = {r["pid"] for r in recs if r["kind"] == "process" and r["argv"][0] == "./v13"}
    assert len(loop) == 1
    reads = [r for r in recs if r["kind"] == "pread" and r["pid"] in loop]
    assert len(reads) == 56
    assert [r["offset"] for r in reads] == [(i % 16) * 4096 for i in range(56)]
    assert {(r["fd"], r["path"], r["bytes"], r["ret"]) for r in reads} == {(3, "d.bin", 4096, 4096)}
    assert all(a["ts_ns"] + a["dur_ns"] <= b["ts_ns"] for a, b in zip(reads, reads[1:]))


def test_v14_processes_record_the_machines_cpu_time(built):
    """What makes 1.4: host_cpu records, the machine's CPU time over the CPUs
    a process may run on, cumulative (a `sh -c 'head -c 8 ...; sleep 0.5'`
    traced on a 2-CPU machine: every CPU in its affinity mask)."""
    p = run_plain([CLI, "dump", "--json", os.path.join("tests", "data", "v1.4")], cwd=ROOT)
    assert p.returncode == 0, p.stderr.decode()
    recs = [json.loads(l) for l in p.stdout.decode().splitlines()]
    pids = {r["pid"] for r in recs if r["kind"] == "process"}
    assert len(pids) == 3
    for pid in pids:
        host = sorted((r["ts_ns"], r["busy_ns"], r["idle_ns"], r["cpus"])
                      for r in recs if r["kind"] == "host_cpu" and r["pid"] == pid)
        assert len(host) >= 2, pid  # one at the first drain, one at the last
        assert {h[3] for h in host} == {2}
        # cumulative: never going back; counted in ticks of 10 ms
        assert all(b[1] >= a[1] and b[2] >= a[2] for a, b in zip(host, host[1:])), host
        assert all(h[1] % 10000000 == 0 and h[2] % 10000000 == 0 for h in host)
    # the sleeping process's samples span its 0.5 s: the machine's CPU time
    # grew by about 2 CPUs x 0.5 s (ticks: within 0.2 s)
    sleep = [r["pid"] for r in recs if r["kind"] == "process" and r["argv"][0] == "sleep"][0]
    host = sorted((r["ts_ns"], r["busy_ns"] + r["idle_ns"]) for r in recs
                  if r["kind"] == "host_cpu" and r["pid"] == sleep)
    wall = host[-1][0] - host[0][0]
    assert abs((host[-1][1] - host[0][1]) - 2 * wall) <= 2e8, (host, wall)


def test_v17_threads_that_began_traced_have_births(built):
    """What makes 1.7: cpu records of source birth, every value 0, stamped
    before the thread existed (tests/hooks/hk_births: a parent with a
    joinable and a detached thread forks a child that starts one thread).
    The joinable threads and the forked child's first thread have one each,
    before any other record of them; the parent's first thread (it began
    before tracing) and the detached thread have none."""
    p = run_plain([CLI, "dump", "--json", os.path.join("tests", "data", "v1.7")], cwd=ROOT)
    assert p.returncode == 0, p.stderr.decode()
    recs = [json.loads(l) for l in p.stdout.decode().splitlines()]
    procs = {r["pid"]: r for r in recs if r["kind"] == "process"}
    assert sorted(r["forked"] for r in procs.values()) == [False, True]
    births = [r for r in recs if r["kind"] == "cpu" and r["source"] == "birth"]
    assert len(births) == 3
    for b in births:
        assert (b["cpu_ns"], b["runq_ns"]) == (0, 0), b
        mine = [r for r in recs if r is not b and r.get("pid") == b["pid"] and
                (r.get("target_tid") == b["target_tid"] or
                 (r.get("tid") == b["target_tid"] and "target_tid" not in r))]
        assert mine and all(r["ts_ns"] >= b["ts_ns"] for r in mine), b
    child = [pid for pid, r in procs.items() if r["forked"]][0]
    parent = [pid for pid, r in procs.items() if not r["forked"]][0]
    assert {b["target_tid"] for b in births if b["pid"] == child} >= {child}
    assert sum(b["pid"] == parent for b in births) == 1
    assert parent not in {b["target_tid"] for b in births}
    # every sampled thread of the parent but its first began traced; one of
    # them (the detached thread) has no birth
    sampled = {r["target_tid"] for r in recs if r["kind"] == "cpu" and r["pid"] == parent}
    assert len(sampled - {parent}) == 2
