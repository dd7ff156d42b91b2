"""Steps from loader iterations (docs/report-schema.md, "Steps"): a PyTorch
profiler trace without ProfilerStep#N ranges but with DataLoader __next__
spans is cut into one step per iteration, before anything is inferred from
copies, and the report says so. The synthetic trace (mkkineto.py --no-steps)
knows its answer: 30 iterations of 100 ms, 30 ms of them waiting for data,
the last one ending with its GPU work 86 ms after it began."""
import pytest

from conftest import imp, mk, report_json, run

ITER = 30


def test_one_step_per_loader_iteration(gs, tmp_path):
    src = mk(tmp_path / "t.json", "--no-steps", "--steps", str(ITER))
    out = imp(gs, tmp_path / "run", src)
    j = report_json(gs, out, "--skip", "0", "--per-step")
    assert j["steps"]["count"] == ITER, j["steps"]
    assert (j["steps"]["source"], j["steps"]["source_detail"]) == \
        ("nvtx", "loader iterations (batch-wait ranges)")
    durs = [s["dur_ms"] for s in j["per_step"]]
    assert durs[:-1] == pytest.approx([100.0] * (ITER - 1), abs=1e-6)
    assert durs[-1] == pytest.approx(86.0, abs=1e-6)  # its DataLoader span to its last kernel's end
    assert all(s["idle_data_wait_ms"] == pytest.approx(30.0, abs=1e-6) for s in j["per_step"])
    text = run(gs, "report", out).stdout
    assert "steps 30 from loader iterations (batch-wait ranges)" in text, text


def test_step_ranges_still_come_first(gs, tmp_path):
    src = mk(tmp_path / "t.json", "--steps", "6")
    j = report_json(gs, imp(gs, tmp_path / "run", src), "--skip", "0")
    assert (j["steps"]["count"], j["steps"]["source_detail"]) == (6, "NVTX ranges")
