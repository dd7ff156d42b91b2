"""Shared fixtures of the Python-side tests: the build, the interpreters to
test (Debian's torch 1.13 and torch 2.x from the .venv), running a command
under `gpustarve run` with python/ on PYTHONPATH, and reading the markers
back.

Interpreters: GS_TEST_PYTHON=/path/to/python tests that one only; otherwise
/usr/bin/python3 (Debian, torch 1.13) and .venv/bin/python (torch 2.x, made
by `make venv`), the latter skipped with a reason when .venv is missing.

RATIONALE: the tests put python/ on PYTHONPATH themselves, so they pass
whether or not `gpustarve run` does it for them (a duplicate entry is
harmless: the sitecustomize there runs once).
"""
import json
import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import gstest  # noqa: E402  (tests/gstest.py: the helpers all suites share)
from gstest import BUILD, CLI, DEBIAN_PY, LIB, PYDIR, ROOT, VENV_PY  # noqa: E402,F401

HERE = os.path.dirname(os.path.abspath(__file__))
TRAIN = os.path.join(ROOT, "examples", "pytorch", "train.py")


def interpreters():
    forced = os.environ.get("GS_TEST_PYTHON")
    if forced:
        return [pytest.param(forced, id=os.path.basename(os.path.dirname(os.path.dirname(forced)))
                             or "forced")]
    return [
        pytest.param(DEBIAN_PY, id="debian-torch1"),
        pytest.param(VENV_PY, id="venv-torch2", marks=pytest.mark.skipif(
            not os.access(VENV_PY, os.X_OK),
            reason="torch 2.x not tested: no .venv (make venv creates it from PyPI)")),
    ]


def clean_env(**extra):
    """gstest.clean_env with python/ on PYTHONPATH (extra may override it)."""
    return gstest.clean_env(**dict({"PYTHONPATH": PYDIR, "PYTHONDONTWRITEBYTECODE": "1"},
                                   **extra))


def run_traced(cmd, run_dir, env=None, timeout=240, cli_args=()):
    return gstest.run_traced(cmd, run_dir, env=env or clean_env(),
                             cli_args=("-q",) + tuple(cli_args), timeout=timeout)


def run_plain(cmd, env=None, timeout=240):
    return gstest.run(cmd, env=env or clean_env(), timeout=timeout)


def train_summary(stderr):
    """The `train.py {json}` line train.py prints on stderr."""
    for line in stderr.decode(errors="replace").splitlines():
        if line.startswith("train.py {"):
            return json.loads(line[len("train.py "):])
    raise AssertionError("no train.py summary in:\n" + stderr.decode(errors="replace"))


class Markers:
    """The markers of a run, read with the gs_markers helper."""

    def __init__(self, tool, run_dir):
        p = gstest.run([tool, str(run_dir)], timeout=120)
        assert p.returncode == 0, p.stderr.decode()
        recs = [json.loads(x) for x in p.stdout.decode().splitlines() if x.strip()]
        self.procs = [r for r in recs if r["kind"] == "process"]
        self.marks = sorted((r for r in recs if r["kind"] != "process"),
                            key=lambda r: r["ts"])

    def of(self, kind, loader=None, pid=None):
        out = []
        for r in self.marks:
            if r["kind"] != kind or (pid is not None and r["pid"] != pid):
                continue
            lid = r["aux"] if kind == "config" else r["aux2"]
            if loader is not None and lid != loader:
                continue
            out.append(r)
        return out

    def _configs(self, loader):
        """(pid, written by a worker process, key, value) of each of a
        loader's config records, in order."""
        wp = self.worker_pids()
        for r in self.of("config", loader):
            k, _, v = r["text"].partition("=")
            yield r["pid"], r["pid"] in wp, k, v

    def config(self, loader=0):
        """{key: value} of a loader's config records in the processes that
        are not its workers (the last value wins)."""
        return {k: v for _, worker, k, v in self._configs(loader) if not worker}

    def worker_config(self, loader=0):
        """{worker pid: {key: value}}: the config records each worker
        process of a loader wrote itself."""
        out = {}
        for pid, worker, k, v in self._configs(loader):
            if worker:
                out.setdefault(pid, {})[k] = v
        return out

    def roles(self, role):
        return [r for r in self.of("role") if r["text"] == role]

    def steps(self, loader=0):
        """Complete steps [(index, t0, t1)] of a loader: a step_end closes the
        step_begin of the same index before it."""
        opened, out = {}, []
        for r in self.marks:
            if r["aux2"] != loader or r["kind"] not in ("step_begin", "step_end"):
                continue
            if r["kind"] == "step_begin":
                opened[r["aux"]] = r["ts"]
            elif r["aux"] in opened:
                out.append((r["aux"], opened.pop(r["aux"]), r["ts"]))
        return out

    def worker_pids(self):
        return {r["pid"] for r in self.roles("loader_worker")}

    def fetches(self, loader=0, workers=False):
        """Complete fetches [(index, t0, t1)] of a loader: the trainer's
        waits for its batches, or with workers=True the batches its worker
        processes loaded (docs/python.md, "Worker batches")."""
        wp = self.worker_pids()
        opened, out = {}, []
        for r in self.marks:
            if r["aux2"] != loader or r["kind"] not in ("fetch_begin", "fetch_end"):
                continue
            if (r["pid"] in wp) != workers:
                continue
            if r["kind"] == "fetch_begin":
                opened[(r["tid"], r["aux"])] = r["ts"]
            else:
                t0 = opened.pop((r["tid"], r["aux"]), None)
                if t0 is not None:
                    out.append((r["aux"], t0, r["ts"]))
        return out

    def data_wait_share(self, loader=0):
        """Time inside fetch markers within the loader's steps / their total."""
        steps = self.steps(loader)
        fetches = self.fetches(loader)
        total = sum(t1 - t0 for _, t0, t1 in steps)
        wait = 0
        for _, f0, f1 in fetches:
            for _, s0, s1 in steps:
                wait += max(0, min(f1, s1) - max(f0, s0))
        return wait / total if total else 0.0


@pytest.fixture(scope="session")
def built():
    gstest.require(CLI, LIB)
    return True


@pytest.fixture(scope="session")
def markers_tool(tmp_path_factory, built):
    d = tmp_path_factory.mktemp("tools")
    return gstest.build_c(d / "gs_markers", [os.path.join(HERE, "gs_markers.c")])


@pytest.fixture(scope="session")
def read_markers(markers_tool):
    return lambda run_dir: Markers(markers_tool, run_dir)


@pytest.fixture(scope="session")
def compile_c(tmp_path_factory):
    d = tmp_path_factory.mktemp("cbin")
    return lambda name, srcs, extra=(): gstest.build_c(d / name, srcs, extra, with_trace=False)


@pytest.fixture(scope="session")
def images(tmp_path_factory):
    """A 96-image dataset written by train.py itself."""
    root = str(tmp_path_factory.mktemp("images"))
    py = os.environ.get("GS_TEST_PYTHON", DEBIAN_PY)
    p = gstest.run([py, TRAIN, "--data", root, "--make-data", "96", "--steps", "1"],
                   env=clean_env(PYTHONPATH=""), timeout=240)
    assert p.returncode == 0, p.stderr.decode()
    return root
