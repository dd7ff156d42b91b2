"""Traces written by the PyTorch this machine has, on the CPU: Debian's torch
1.13 (built without Kineto: the legacy autograd profiler's bare array, no
categories, "pid": "CPU functions") and torch 2.x from .venv (Kineto's
format with baseTimeNanoseconds and host_name). Steps and data wait against
the trace's own ProfilerStep and DataLoader spans."""
import os

import pytest

import gstest
import kineto_truth as kt
from conftest import HERE, imp, report_json, run

PROFILE = os.path.join(HERE, "torch_profile.py")
PYTHONS = {"debian-torch-1.13": gstest.DEBIAN_PY, "venv-torch-2": gstest.VENV_PY}


def write_trace(py, out, workers):
    if not os.access(py, os.X_OK):
        pytest.fail("%s missing (tools/deps.sh test and make venv install it)" % py)
    r = gstest.run([py, PROFILE, str(out), str(workers)], text=True)
    assert r.returncode == 0, r.stderr
    return str(out)


@pytest.mark.parametrize("which", sorted(PYTHONS))
def test_torch_trace_steps_and_data_wait(gs, tmp_path, which):
    src = write_trace(PYTHONS[which], tmp_path / "trace.json", 0)
    truth = kt.truth(kt.load(src))
    assert len(truth) == 4  # the schedule's active steps
    j = report_json(gs, imp(gs, tmp_path / "run", src), "--skip", "0")
    assert j["steps"]["count"] == 4
    med = kt.median([t["dur_ms"] for t in truth])
    assert abs(j["step_ms"]["median"] - med) <= 0.01 * med
    for t, s in zip(truth, j["per_step"]):
        assert abs(s["dur_ms"] - t["dur_ms"]) <= 0.01 * t["dur_ms"]
        # no GPU: the whole DataLoader span is data wait
        assert abs(s["idle_data_wait_ms"] / s["dur_ms"] - t["dataloader_share"]) <= 0.01
    assert j["dataloader"]["config"] == [{"loader": 0, "key": "num_workers", "value": "0"}]
    assert j["no_gpu_activity"] is True


def test_torch_2_multi_process_loader(gs, tmp_path):
    src = write_trace(PYTHONS["venv-torch-2"], tmp_path / "trace.json", 2)
    out = imp(gs, tmp_path / "run", src)
    text = run(gs, "report", out).stdout
    assert "multi-process iterator" in text and "count unknown" in text
    # Kineto 2.x writes host_name: the file is named after it
    host = "".join(c if c.isalnum() or c in "._" else "-" for c in os.uname().nodename)[:63]
    assert os.listdir(out) == ["%s-%d.gst" % (host, kt.load(src)["traceEvents"][0]["pid"])]
