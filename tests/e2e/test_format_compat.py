"""Traces written by released format versions keep loading: each directory
tests/data/vX.Y/ holds a small run written by that version's collector, and
tests/data/vX.Y.expected.jsonl what `dump --json` printed for it then."""
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
