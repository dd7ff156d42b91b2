"""Fixtures of the import tests: the gpustarve binary, the committed real
traces (tests/import/data, sources and licences in its README.md) as plain
JSON, and helpers to import and report.

Run with: /usr/bin/python3 -m pytest tests/import   (after `make build/gpustarve`)
"""
import json
import lzma
import os
import shutil
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
import gstest  # noqa: E402  (tests/gstest.py: the helpers all suites share)
from gstest import ROOT, clean_env, gs  # noqa: E402,F401  (re-exported to the tests; gs: the CLI fixture)

sys.path.insert(0, HERE)
DATA = os.path.join(HERE, "data")
GS = gstest.CLI

REAL = ["kineto_resnet50_nw0", "kineto_resnet50_nw4", "hta_a100_dataloader", "hta_a100_pageable"]


@pytest.fixture(scope="session")
def real(tmp_path_factory):
    """name -> path of the plain JSON of each committed real trace."""
    d = tmp_path_factory.mktemp("real")
    out = {}
    for name in REAL:
        p = str(d / (name + ".json"))
        with lzma.open(os.path.join(DATA, name + ".json.xz"), "rb") as f, open(p, "wb") as g:
            shutil.copyfileobj(f, g)
        out[name] = p
    return out


MKK = os.path.join(HERE, "mkkineto.py")


def mk(path, *args):
    """A synthetic trace by mkkineto.py (its answer known by construction)."""
    subprocess.run([sys.executable, MKK, str(path)] + list(args), check=True)
    return str(path)


MAXRSS = ("import resource, subprocess, sys; r = subprocess.run(sys.argv[1:]); "
          "print(r.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)")


def peak_kb(gs, *args):
    """Peak resident set (KB) of `gs ARGS`, which must succeed."""
    out = subprocess.run([sys.executable, "-c", MAXRSS, gs] + list(args), capture_output=True,
                         text=True, env=clean_env(), check=True).stdout.split()
    assert out[-2] == "0"
    return int(out[-1])


def run(gs, *args, check=True):
    r = gstest.run([gs] + list(args), text=True)
    if check and r.returncode != 0:
        raise AssertionError("gpustarve %s: exit %d\n%s%s" % (" ".join(args), r.returncode,
                                                               r.stdout, r.stderr))
    return r


def imp(gs, out, *files, extra=()):
    run(gs, "import", "-q", "-o", str(out), *extra, *[str(f) for f in files])
    return str(out)


def report_json(gs, rundir, *extra):
    r = run(gs, "report", "--json", "--per-step", *extra, rundir)
    return json.loads(r.stdout)


BUSY = ("gpu_compute_ms", "gpu_comm_ms", "gpu_h2d_pinned_ms", "gpu_h2d_pageable_ms",
        "gpu_copy_other_ms")


def busy_ms(step):
    return sum(step[k] for k in BUSY)
