"""PyTorch's torch.cuda.nvtx goes through the NVTX injection door that
`gpustarve run` opens (NVTX_INJECTION64_PATH): its ranges and marks are in
the trace. NVTX needs no GPU, so this runs on the CPU with the torch 2.x of
.venv (its wheels are built with CUDA, hence with NVTX).

NVTX is the collector's, not the CUPTI source's: a libgpustarve.so built
without any CUDA header (CUDA_HOME pointing nowhere, so no cupti/ in it)
records the same ranges."""
import os
import subprocess

import pytest

from conftest import BUILD, ROOT, clean_env, dump, run_plain, run_traced

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


@pytest.fixture(scope="module")
def lib_without_cuda():
    """build/nocuda/libgpustarve.so: the library as a machine without the
    CUDA toolkit builds it."""
    out = os.path.join(BUILD, "nocuda")
    p = subprocess.run(["make", "-s", "BUILD=" + out, "CUDA_HOME=/nonexistent",
                        os.path.join(out, "libgpustarve.so")],
                       cwd=ROOT, capture_output=True, timeout=900)
    assert p.returncode == 0, p.stderr.decode()
    lib = os.path.join(out, "libgpustarve.so")
    syms = subprocess.run(["nm", "-D", "--defined-only", lib], capture_output=True).stdout.decode()
    assert "InitializeInjectionNvtx2" in syms and "InitializeInjection\n" not in syms
    return lib


@pytest.mark.parametrize("build", ["with_cuda_headers", "without_cuda_headers"])
def test_torch_cuda_nvtx_ranges_and_marks(built, tmp_path, request, build):
    if not os.path.exists(VENV_PY):
        pytest.skip("no .venv with torch 2.x (make venv creates it)")
    if build == "with_cuda_headers":
        p = run_traced([VENV_PY, "-c", SCRIPT], tmp_path / "run")
    else:
        lib = request.getfixturevalue("lib_without_cuda")
        p = run_plain([VENV_PY, "-c", SCRIPT],
                      env=clean_env(LD_PRELOAD=lib, NVTX_INJECTION64_PATH=lib,
                                    GPUSTARVE_DIR=str(tmp_path / "run")))
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
