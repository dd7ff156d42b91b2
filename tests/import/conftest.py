"""Fixtures of the import tests: the gpustarve binary, the real GPU traces
(kept beside the repository: tests/import/real_traces.py) as plain JSON,
and helpers to import and report.

Without the real traces their tests are skipped, and one line at the end
says why; the rest runs.

Run with: /usr/bin/python3 -m pytest tests/import   (after `make build/gpustarve`)
    GS_REAL_TRACES=DIR: the real traces from DIR
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
import real_traces  # noqa: E402
from real_traces import REAL, SMALL  # noqa: E402,F401  (re-exported to the tests)

GS = gstest.CLI


@pytest.fixture(scope="session")
def real_dir():
    """The real traces' directory; the test is skipped when it is absent."""
    if not real_traces.present():
        pytest.skip(real_traces.absent_why())
    return real_traces.directory()


@pytest.fixture(scope="session")
def real(real_dir, tmp_path_factory):
    """name -> path of the plain JSON of each large real trace."""
    d = tmp_path_factory.mktemp("real")
    out = {}
    for name in REAL:
        p = str(d / (name + ".json"))
        with lzma.open(real_traces.path(name), "rb") as f, open(p, "wb") as g:
            shutil.copyfileobj(f, g)
        out[name] = p
    return out


def pytest_terminal_summary(terminalreporter):
    """One line for all the tests skipped for want of the real traces."""
    why = real_traces.absent_why()
    n = sum(1 for r in terminalreporter.stats.get("skipped", []) if why in str(r.longrepr))
    if n:
        terminalreporter.write_line("tests/import: %d tests skipped: %s" % (n, why))


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
