"""Traces written by released format versions keep loading: each directory
tests/data/vX.Y/ holds a small run written by that version's collector, and
tests/data/vX.Y.expected.jsonl what `dump --json` printed for it then.
v1.2 holds two processes that died (SIGKILL, a segmentation fault) right
after their reads (tests/tools/die_after_reads.c), with their live files
compacted by tests/tools/compact_live.py: nearly every record is recovered
from the live file."""
import glob
import json
import os
import subprocess

import pytest

from conftest import CLI, ROOT

DATA = os.path.join(ROOT, "tests", "data")
VERSIONS = sorted(os.path.basename(d) for d in glob.glob(os.path.join(DATA, "v*"))
                  if os.path.isdir(d))


def test_there_is_a_trace_of_every_version():
    assert "v1.0" in VERSIONS
    assert "v1.2" in VERSIONS


@pytest.mark.parametrize("version", VERSIONS)
def test_old_trace_dumps_as_it_did(built, version):
    p = subprocess.run([CLI, "dump", "--json", os.path.join("tests", "data", version)],
                       capture_output=True, cwd=ROOT)
    assert p.returncode == 0, p.stderr.decode()
    got = [json.loads(l) for l in p.stdout.decode().splitlines()]
    with open(os.path.join(DATA, version + ".expected.jsonl")) as f:
        want = [json.loads(l) for l in f]
    # fields added by later dump versions may appear; none may change or vanish
    assert len(got) == len(want)
    for g, w in zip(got, want):
        for k, v in w.items():
            assert g.get(k) == v, (k, g, w)


def test_v12_records_come_back_from_the_live_files(built):
    """What makes 1.2: the trace files hold a header and almost nothing
    else; the 40 reads of each process, how it ended, come from beside it."""
    p = subprocess.run([CLI, "dump", "--json", os.path.join("tests", "data", "v1.2")],
                       capture_output=True, cwd=ROOT)
    assert p.returncode == 0, p.stderr.decode()
    recs = [json.loads(l) for l in p.stdout.decode().splitlines()]
    procs = [r for r in recs if r["kind"] == "process"]
    assert [pr["argv"][-1] for pr in procs] == ["kill", "segv"]
    for pr in procs:
        mine = [r for r in recs if r.get("pid") == pr["pid"]]
        assert len([r for r in mine if r["kind"] == "pread"]) == 40
        notes = [r for r in mine if r["kind"] == "note"]
        assert len(notes) == 1 and notes[0]["code"] == 4
        exits = [(r["status"], r["how"]) for r in mine if r["kind"] == "exit"]
        assert exits == ([] if pr["argv"][-1] == "kill" else [(11, "signal")])
    for f in glob.glob(os.path.join(DATA, "v1.2", "*.gst")):
        assert os.path.getsize(f) < 200  # the header only: nothing was flushed
