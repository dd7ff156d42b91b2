"""Fixtures of the `gpustarve check` tests (tests/check): the CLI, the
simulated GPU (build/simcuda: its runtime, cuBLAS, NVML and NCCL stand-ins,
configured through SIMCUDA_* variables, tests/simcuda/README.md), and a
runner that returns the check's JSON with a lookup by item id.

Run with: /usr/bin/python3 -m pytest tests/check   (after `make build/gpustarve simcuda-bins`)
"""
import json
import os
import subprocess
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import gstest  # noqa: E402  (tests/gstest.py: the helpers all suites share)
from gstest import ROOT, clean_env, gs  # noqa: E402,F401  (gs: the CLI fixture)

SIMCUDA = os.path.join(ROOT, "build", "simcuda")
SIM_LIBS = ("libcudart.so.13", "libcublas.so.13", "libnvidia-ml.so.1", "libnccl.so.2")


class Check:
    """One run's JSON, and its items by id (and subject)."""

    def __init__(self, doc, stderr):
        self.doc, self.stderr = doc, stderr

    def items(self, id_):
        return [i for i in self.doc["items"] if i["id"] == id_]

    def __getitem__(self, id_):
        found = self.items(id_)
        assert len(found) == 1, "%s: %d items %r" % (id_, len(found), [i["id"] for i in self.doc["items"]])
        return found[0]


def run_check(*args, env=None, rc=0):
    """`gpustarve check --json ARGS` with env (a clean environment when
    None); the exit status must be rc."""
    p = subprocess.run([gstest.CLI, "check", "--json"] + list(args), capture_output=True,
                       text=True, env=env or clean_env())
    assert p.returncode == rc, p.stderr
    return Check(json.loads(p.stdout), p.stderr) if rc == 0 else p


@pytest.fixture(scope="session")
def sim():
    """The simulated GPU's folder; the tests that need it skip, saying so,
    when it is not built (no CUDA headers)."""
    missing = [l for l in SIM_LIBS if not os.path.exists(os.path.join(SIMCUDA, l))]
    if missing:
        pytest.skip("build/simcuda lacks %s (make simcuda-bins)" % ", ".join(missing))
    return SIMCUDA


@pytest.fixture
def sim_env(sim, tmp_path):
    """An environment that loads the simulated GPU: copies move no bytes
    (SIMCUDA_COPY_DATA=0: their time is the simulated link's alone, however
    fast it is configured), and sysfs is an empty folder (no machine's own
    PCI devices in the way) unless a test makes one."""
    sysfs = tmp_path / "sys"
    sysfs.mkdir()

    def make(**kw):
        base = dict(LD_LIBRARY_PATH=sim, SIMCUDA_COPY_DATA="0", GPUSTARVE_SYSFS_ROOT=str(sysfs))
        base.update({k: str(v) for k, v in kw.items()})
        return clean_env(**base)
    make.sysfs = sysfs
    return make


# the quick check on the simulator: small copies, GEMMs long enough that the
# device, not the host, sets their time
GPU_ARGS = ("--quick", "--copy-size", "16M", "--gemm-size", "4096", "--repeats", "3")
