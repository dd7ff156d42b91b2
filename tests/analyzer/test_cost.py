"""`report --price`: a traced run in money, the cost of 1,000 steps and what
of it paid for GPUs waiting for data (docs/report-schema.md, "Cost"), on a
scenario whose answer is known (scenarios.py)."""
import pytest

import scenarios
from conftest import report_json, run_report


def test_report_price(gs, gen, tmp_path):
    """loader_bound: measured steps of 100 ms, 40 ms of each waiting for
    data, one GPU. At 3.60 a GPU-hour, 1,000 steps (100 s) cost 0.10, and
    0.04 of it bought a GPU waiting for data."""
    d = scenarios.loader_bound().write(gen, str(tmp_path / "gpustarve-x"))
    assert report_json(gs, d)["cost"] is None
    j = report_json(gs, d, "--price", "3.6")
    c = j["cost"]
    assert c["price_per_gpu_hour"] == 3.6 and c["gpus"] == 1
    assert c["step_ms"] == pytest.approx(100, abs=1e-6)
    assert c["per_1000_steps"] == pytest.approx(0.10, abs=1e-9)
    assert c["data_wait_share"] == pytest.approx(j["share"]["idle_data_wait"], abs=1e-9)
    assert c["data_wait_share"] == pytest.approx(0.40, abs=0.01)
    assert c["data_wait_per_1000_steps"] == pytest.approx(0.04, abs=0.001)
    idle = sum(j["share"][k] for k in ("idle_data_wait", "idle_pageable_copy", "idle_host"))
    assert c["idle_share"] == pytest.approx(idle, abs=1e-9)
    r = run_report(gs, d, "--price", "3.6")
    assert r.returncode == 0
    line = [l for l in r.stdout.splitlines() if l.startswith("cost")]
    assert line == ["cost     0.10 per 1,000 steps (1 GPU at 3.60 an hour, 100.0 ms a step); "
                    "0.04 of it (40%) paid for GPUs waiting for data, 0.04 (40%) for GPUs idle"]
    assert "cost" not in run_report(gs, d).stdout


@pytest.mark.parametrize("bad", ["0", "-1", "x", ""])
def test_report_bad_price(gs, gen, tmp_path, bad):
    d = scenarios.loader_bound().write(gen, str(tmp_path / "gpustarve-x"))
    r = run_report(gs, d, "--price", bad)
    assert r.returncode == 2 and "--price" in r.stderr
