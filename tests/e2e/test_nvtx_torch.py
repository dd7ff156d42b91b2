"""PyTorch's torch.cuda.nvtx goes through the NVTX injection door that
`gpustarve run` opens (NVTX_INJECTION64_PATH): its ranges and marks are in
the trace. NVTX needs no GPU, so this runs on the CPU with the torch 2.x of
.venv (its wheels are built with CUDA, hence with NVTX)."""
import os

import pytest

from conftest import ROOT, dump, run_traced

VENV_PY = os.path.join(ROOT, ".venv", "bin", "python")

SCRIPT = r"""
import torch
torch.cuda.nvtx.range_push("outer_step")
torch.cuda.nvtx.mark("hello")
torch.cuda.nvtx.range_push("inner")
torch.cuda.nvtx.range_pop()
torch.cuda.nvtx.range_pop()
with torch.cuda.nvtx.range("ctx_range"):
    pass
print("ok")
"""


def test_torch_cuda_nvtx_ranges_and_marks(built, tmp_path):
    if not os.path.exists(VENV_PY):
        pytest.skip("no .venv with torch 2.x (make venv creates it)")
    p = run_traced([VENV_PY, "-c", SCRIPT], tmp_path / "run")
    assert p.returncode == 0, p.stderr.decode()
    assert p.stdout == b"ok\n"
    recs, _, _ = dump(tmp_path / "run")
    ranges = {r["name"]: r for r in recs if r["kind"] == "range"}
    assert set(ranges) == {"outer_step", "inner", "ctx_range"}
    outer, inner = ranges["outer_step"], ranges["inner"]
    assert outer["ts_ns"] <= inner["ts_ns"]
    assert inner["ts_ns"] + inner["dur_ns"] <= outer["ts_ns"] + outer["dur_ns"]
    marks = [r for r in recs if r["kind"] == "mark"]
    assert [m["name"] for m in marks] == ["hello"]
    assert outer["ts_ns"] <= marks[0]["ts_ns"] <= outer["ts_ns"] + outer["dur_ns"]
