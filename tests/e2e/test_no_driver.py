"""No CUDA driver: a traced program behaves exactly as untraced.

A machine with the CUDA runtime and CUPTI but no driver (a CPU-only CI box,
a container started without the GPU) must not change a traced program:
libcupti 13.2's cuptiGetVersion recurses on its failed dlopen of
libcuda.so.1 until the stack overflows, so a program calling one hooked
runtime function, run under a plain LD_PRELOAD, exited 139 where it exits
0 untraced (this file reproduced that before the fix). gpustarve now checks
the driver before loading or calling anything of CUPTI.

The matrix: {gpustarve run, plain LD_PRELOAD} x {simulated CUDA 12.x, 13.0,
13.2 without their libcuda.so.1, the real CUDA 13.2 wheel, the real CUDA
12.9 wheels}, running tests/gpu/cuda_calls.c: same exit status and stdout as
untraced, exactly one warning line that says there is no CUDA driver, a note
in the trace, and the CUDA calls recorded by the hooks.
"""
import ctypes
import os
import shutil

import pytest

from conftest import BUILD, LIB, clean_env, dump, run_plain, run_traced

SIM = os.path.join(BUILD, "simcuda")
WHEELS = os.path.join(BUILD, "wheels")
# (case, folder of the runtime (and CUPTI), the cuda_calls linked against its soname)
CASES = {
    "sim-12.x": (os.path.join(SIM, "cu12"), os.path.join(SIM, "cu12", "cuda_calls")),
    "sim-13.0": (SIM, os.path.join(SIM, "cuda_calls")),
    "sim-13.2": (os.path.join(SIM, "cu13.2"), os.path.join(SIM, "cu13.2", "cuda_calls")),
    "wheel-13.2": (os.path.join(WHEELS, "cu13", "nvidia", "cu13", "lib"),
                   os.path.join(SIM, "cuda_calls")),
    "wheel-12.9": (os.path.join(WHEELS, "cu12", "nvidia", "cuda_runtime", "lib"),
                   os.path.join(SIM, "cu12", "cuda_calls")),
}


def have_driver():
    try:
        ctypes.CDLL("libcuda.so.1")
        return True
    except OSError:
        return False


def libdir_without_driver(case, tmp_path):
    """The runtime folder as a program on a driverless machine sees it: for
    the simulator, its libcudart and libcupti copied apart from its
    libcuda.so.1; the real wheels have no driver in them."""
    folder, prog = CASES[case]
    if not os.path.isdir(folder) or not os.path.exists(prog):
        pytest.skip("%s not there (make simcuda-bins gpu-wheels)" % folder)
    if not case.startswith("sim-"):
        return folder, prog
    lib = tmp_path / "lib"
    lib.mkdir()
    for name in os.listdir(folder):
        if name.startswith(("libcudart.so.", "libcupti.so.")):
            shutil.copy(os.path.join(folder, name), str(lib))
    return str(lib), prog


def gs_lines(stderr):
    return [l for l in stderr.decode().splitlines() if l.startswith("gpustarve:")]


@pytest.mark.parametrize("mode", ["run", "preload"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_no_driver_changes_nothing(tmp_path, case, mode):
    if have_driver():
        pytest.skip("this machine has a CUDA driver")
    libdir, prog = libdir_without_driver(case, tmp_path)
    env = clean_env(LD_LIBRARY_PATH=libdir)
    plain = run_plain([prog], env=env)
    assert plain.returncode == 0, plain.stderr
    # the runtime really ran without a driver: every call failed
    assert "cudaSetDevice 35\n" in plain.stdout.decode()
    assert gs_lines(plain.stderr) == []
    run_dir = tmp_path / "run"
    if mode == "run":
        traced = run_traced([prog], run_dir, env=env)
    else:
        traced = run_plain([prog], env=clean_env(LD_LIBRARY_PATH=libdir, LD_PRELOAD=LIB,
                                                 GPUSTARVE_DIR=str(run_dir)))
    assert traced.returncode == plain.returncode, traced.stderr
    assert traced.stdout == plain.stdout
    warnings = [l for l in gs_lines(traced.stderr) if l.startswith("gpustarve: warning:")]
    assert len(warnings) == 1, traced.stderr.decode()
    assert "no CUDA driver" in warnings[0], warnings
    recs, _, _ = dump(run_dir)
    notes = [r for r in recs if r["kind"] == "note"]
    assert len(notes) == 1 and notes[0]["code"] == 2 and "no CUDA driver" in notes[0]["text"]
    assert [r for r in recs if r["kind"].startswith("gpu_")] == []
    copies = [r for r in recs if r["kind"] == "cuda_memcpy"]
    assert {(r["api"], r["ret"]) for r in copies} == {("cudaMemcpy", 35), ("cudaMemcpyAsync", 35)}
