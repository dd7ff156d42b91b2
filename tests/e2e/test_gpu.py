"""The GPU side on the simulated GPU (tests/simcuda): examples/train_loop under
`gpustarve run`, read back with `dump --json`.

- kernels, copies (CUPTI's and the host hooks') and NVTX ranges all in the
  dump, on one clock: each step's GPU work lies inside its train_step range;
- pageable vs pinned classified alike by CUPTI (gpu_memcpy src_mem) and by
  the host hooks (cuda_memcpy host_mem) for --pinned 0 and 1;
- CUPTI absent or held by another profiler: exactly one warning line, a note
  record, and a run that goes on with the hooks only;
- nothing dropped at default settings;
- a program started with LD_PRELOAD alone (no CUDA_INJECTION64_PATH) still
  gets CUPTI, started at its first CUDA call;
- once CUPTI runs, the writer is in the program's descriptor table and
  writes GPU records while the program runs (a SIGKILL keeps them);
- between an update and the next forward, the thread's first 8 CUDA calls
  carry its clock samples at both ends (its own batch making).
"""
import json
import os
import re
import shutil
import signal
import subprocess
import time

import pytest

import gstest
from conftest import BUILD, CLI, LIB, clean_env, dump, report_json, run_plain, run_traced

SIM = os.path.join(BUILD, "simcuda")
TRAIN_LOOP = os.path.join(BUILD, "examples", "train_loop")
STEPS = 8
KERNEL_US = 3000
# RATIONALE: the host records a range's end after the call that ends it
# returns; a few hundred microseconds covers scheduling on a busy CI host.
SLACK_NS = 500_000


@pytest.fixture(scope="module")
def sim():
    for p in (os.path.join(SIM, "libcudart.so.13"), os.path.join(SIM, "libcupti.so.13"),
              TRAIN_LOOP, LIB):
        if not os.path.exists(p):
            pytest.skip("%s not built (needs the CUDA toolkit and nvcc)" % p)
    return SIM


def sim_env(libdir=SIM, **extra):
    extra.setdefault("SIMCUDA_KERNEL_US", "train_step_kernel=%d" % KERNEL_US)
    return clean_env(LD_LIBRARY_PATH=os.path.abspath(libdir), **extra)


def loop_cmd(pinned, steps=STEPS):
    return [TRAIN_LOOP, "--steps", str(steps), "--workers", "2", "--load-ms", "2",
            "--batch-mb", "1", "--pinned", str(pinned)]


def of(recs, kind, **match):
    return [r for r in recs if r["kind"] == kind and all(r.get(k) == v for k, v in match.items())]


def warnings(stderr):
    return [l for l in stderr.decode().splitlines() if l.startswith("gpustarve: warning:")]


@pytest.mark.parametrize("pinned", [0, 1])
def test_train_loop_gpu_host_and_nvtx_on_one_clock(sim, tmp_path, pinned):
    p = run_traced(loop_cmd(pinned), tmp_path / "run", env=sim_env())
    assert p.returncode == 0, p.stderr
    assert warnings(p.stderr) == []
    recs, _, _ = dump(tmp_path / "run")
    assert len(of(recs, "process")) == 1

    kernels = sorted(of(recs, "gpu_kernel", name="train_step_kernel"), key=lambda r: r["ts_ns"])
    assert len(kernels) == STEPS
    assert all(abs(k["dur_ns"] - KERNEL_US * 1000) < 1000 and k["tid"] == 0 for k in kernels)

    mem = "pinned" if pinned else "pageable"
    gpu_h2d = sorted(of(recs, "gpu_memcpy", direction="HtoD"), key=lambda r: r["ts_ns"])
    assert len(gpu_h2d) == STEPS
    assert {(r["src_mem"], r["dst_mem"], r["bytes"]) for r in gpu_h2d} == {(mem, "device", 1 << 20)}
    host_h2d = sorted(of(recs, "cuda_memcpy", direction="HtoD"), key=lambda r: r["ts_ns"])
    assert len(host_h2d) == STEPS
    assert {(r["api"], r["host_mem"], r["bytes"], r["ret"]) for r in host_h2d} == \
        {("cudaMemcpyAsync", mem, 1 << 20, 0)}
    # the final header check copies 8 bytes back into a pageable long
    assert [(r["src_mem"], r["dst_mem"]) for r in of(recs, "gpu_memcpy", direction="DtoH")] == \
        [("device", "pageable")]
    assert [r["host_mem"] for r in of(recs, "cuda_memcpy", direction="DtoH")] == ["pageable"]
    host_mem = of(recs, "cuda_host_mem")
    assert len([r for r in host_mem if r["api"] == "cudaMallocHost"]) == (7 if pinned else 0)
    assert len(of(recs, "cuda_sync", api="cudaStreamSynchronize")) == STEPS

    steps = sorted((r for r in of(recs, "range", name="train_step")), key=lambda r: r["ts_ns"])
    waits = of(recs, "range", name="next_batch")
    assert len(steps) == STEPS and len(waits) == STEPS
    assert all(r["dur_ns"] is not None and r["domain"] is None for r in steps + waits)
    for i, step in enumerate(steps):
        t0, t1 = step["ts_ns"], step["ts_ns"] + step["dur_ns"]
        # the host call is issued inside the step and before its GPU copy
        assert t0 <= host_h2d[i]["ts_ns"] <= gpu_h2d[i]["ts_ns"] + SLACK_NS
        for g in (gpu_h2d[i], kernels[i]):
            assert t0 <= g["ts_ns"] and g["ts_ns"] + g["dur_ns"] <= t1 + SLACK_NS, (i, g, step)
        # the kernel follows its copy on the stream
        assert kernels[i]["ts_ns"] >= gpu_h2d[i]["ts_ns"] + gpu_h2d[i]["dur_ns"] - 1000

    devices = of(recs, "gpu_device")
    assert len(devices) == 1 and devices[0]["name"] == "gpustarve simulated GPU"
    assert devices[0]["sms"] == 132 and devices[0]["compute_capability"] == "9.0"
    # nothing dropped at default settings
    assert all(r["dropped"] == 0 and r["lost"] == 0 for r in of(recs, "drops"))
    assert all(r["dropped"] == 0 for r in of(recs, "gpu_drops"))
    assert of(recs, "note") == []


def test_output_unchanged_by_tracing(sim, tmp_path):
    plain = run_plain(loop_cmd(1, steps=3), env=sim_env())
    traced = run_traced(loop_cmd(1, steps=3), tmp_path / "run", env=sim_env())
    assert plain.returncode == traced.returncode == 0
    assert plain.stdout == traced.stdout


def hooks_only_checks(p, run_dir, code, words):
    assert p.returncode == 0, p.stderr
    w = warnings(p.stderr)
    assert len(w) == 1, p.stderr.decode()
    assert words in w[0] and w[0].endswith("recording CUDA calls only")
    recs, _, _ = dump(run_dir)
    notes = of(recs, "note")
    assert len(notes) == 1 and notes[0]["code"] == code and words in notes[0]["text"]
    assert [r for r in recs if r["kind"].startswith("gpu_")] == []
    assert len(of(recs, "cuda_memcpy", direction="HtoD")) == 3
    assert len(of(recs, "range", name="train_step")) == 3  # NVTX does not need CUPTI


def test_cupti_absent_means_hooks_only(sim, tmp_path):
    """No libcupti anywhere we look: the runtime and driver alone in a folder whose
    libcupti.so.13 / libcupti.so are empty files (they end the default
    search, which would otherwise find the toolkit's real one through
    ld.so.cache), CUDA_HOME and GPUSTARVE_CUPTI_LIB pointing nowhere."""
    lib = tmp_path / "lib"
    lib.mkdir()
    for name in ("libcudart.so.13", "libcuda.so.1"):
        shutil.copy(os.path.join(SIM, name), str(lib))
    for name in ("libcupti.so.13", "libcupti.so"):
        (lib / name).write_bytes(b"")
    env = sim_env(libdir=lib, CUDA_HOME=str(tmp_path / "no-cuda"),
                  GPUSTARVE_CUPTI_LIB=str(tmp_path / "nowhere" / "libcupti.so.13"))
    p = run_traced(loop_cmd(0, steps=3), tmp_path / "run", env=env)
    hooks_only_checks(p, tmp_path / "run", 2, "CUPTI unavailable")


def test_cupti_held_by_another_profiler(sim, tmp_path):
    p = run_traced(loop_cmd(1, steps=3), tmp_path / "run", env=sim_env(SIMCUDA_CUPTI_BUSY="1"))
    hooks_only_checks(p, tmp_path / "run", 3, "held by another profiler")


def test_started_without_injection_path(sim, tmp_path):
    """LD_PRELOAD by hand: no CUDA_INJECTION64_PATH, so CUPTI starts at the
    first CUDA call the hooks see (NVTX is not injected: no ranges)."""
    env = sim_env(LD_PRELOAD=LIB, GPUSTARVE_DIR=str(tmp_path / "run"))
    p = run_plain(loop_cmd(0, steps=4), env=env)
    assert p.returncode == 0, p.stderr
    assert warnings(p.stderr) == []
    recs, _, _ = dump(tmp_path / "run")
    assert len(of(recs, "gpu_kernel", name="train_step_kernel")) == 4
    assert len(of(recs, "gpu_memcpy", direction="HtoD", src_mem="pageable")) == 4
    assert len(of(recs, "cuda_memcpy", direction="HtoD", host_mem="pageable")) == 4
    assert of(recs, "range") == []


def test_user_injection_path_is_kept(sim, tmp_path):
    """A CUDA_INJECTION64_PATH the user set stands (gpustarve run does not
    override it); here it names the simulator's test collector, which takes
    CUPTI first: gpustarve says so once and records the CUDA calls."""
    inj = os.path.join(SIM, "sim_inject.so")
    if not os.path.exists(inj):
        pytest.skip("sim_inject.so not built")
    p = run_traced(loop_cmd(1, steps=3), tmp_path / "run",
                   env=sim_env(CUDA_INJECTION64_PATH=inj))
    hooks_only_checks(p, tmp_path / "run", 3, "held by another profiler")


# ---- every simulator mode: CUDA 12.x, 13.0, 13.2 ---------------------------------------------

MODES = {"12.x": os.path.join(SIM, "cu12"), "13.0": SIM, "13.2": os.path.join(SIM, "cu13.2")}
RUNTIME = {"12.x": "12080", "13.0": "13000", "13.2": "13020"}


def mode_dir(mode):
    d = MODES[mode]
    if not os.path.exists(os.path.join(d, "sim_step")):
        pytest.skip("simulator mode %s not built (%s)" % (mode, d))
    return d


def step_cmd(d, *args, steps=6):
    return [os.path.join(d, "sim_step"), "--steps", str(steps)] + list(args)


@pytest.mark.parametrize("pinned", ["0", "1"])
@pytest.mark.parametrize("mode", sorted(MODES))
def test_each_mode_gpu_and_host_records(tmp_path, mode, pinned):
    """sim_step against the mode's own libcudart (.so.12 or .so.13): gpustarve
    finds the mode's libcupti, accepts its API version, decodes its record
    versions (Kernel9/Memcpy5/Sync v1; Kernel10; Kernel11/Device6), and the
    program's output is the same as untraced."""
    d = mode_dir(mode)
    env = clean_env(LD_LIBRARY_PATH=d, SIMCUDA_KERNEL_US="train_step_kernel=2000")
    plain = run_plain(step_cmd(d, "--pinned", pinned), env=env)
    p = run_traced(step_cmd(d, "--pinned", pinned), tmp_path / "run", env=env)
    assert p.returncode == plain.returncode == 0, p.stderr
    assert p.stdout == plain.stdout and ("runtime " + RUNTIME[mode]).encode() in p.stdout
    assert warnings(p.stderr) == []
    recs, _, _ = dump(tmp_path / "run")
    kernels = of(recs, "gpu_kernel", name="train_step_kernel")
    assert len(kernels) == 6 and all(abs(k["dur_ns"] - 2_000_000) < 1000 for k in kernels)
    mem = "pinned" if pinned == "1" else "pageable"
    assert [r["src_mem"] for r in of(recs, "gpu_memcpy", direction="HtoD")] == [mem] * 6
    assert [r["host_mem"] for r in of(recs, "cuda_memcpy", direction="HtoD")] == [mem] * 6
    assert len(of(recs, "gpu_sync")) >= 6  # cudaStreamSynchronize: Synchronization v1 or v2
    assert len(of(recs, "range", name="train_step")) == 6
    devices = of(recs, "gpu_device")
    assert len(devices) == 1 and devices[0]["sms"] == 132 and devices[0]["compute_capability"] == "9.0"
    assert of(recs, "note") == []
    assert all(r["dropped"] == 0 for r in of(recs, "gpu_drops"))


def one_warning(p, words):
    w = warnings(p.stderr)
    assert len(w) == 1, p.stderr.decode()
    assert words in w[0] and w[0].endswith("recording CUDA calls only"), w
    return w[0]


def test_driver_older_than_a_cuda13_runtime(tmp_path):
    """The 13.2 runtime and CUPTI with a 13.0 driver: libcupti 13.x does not
    fail cleanly against a driver it cannot use, so it is not touched."""
    d = mode_dir("13.2")
    lib = tmp_path / "lib"
    lib.mkdir()
    for name in ("libcudart.so.13", "libcupti.so.13"):
        shutil.copy(os.path.join(d, name), str(lib))
    shutil.copy(os.path.join(SIM, "libcuda.so.1"), str(lib))  # the 13.0 driver
    env = clean_env(LD_LIBRARY_PATH=str(lib))
    p = run_traced(step_cmd(d, steps=2), tmp_path / "run", env=env)
    assert p.returncode == 0, p.stderr
    one_warning(p, "the CUDA driver (13.0) is older than the CUDA runtime (13.2)")
    recs, _, _ = dump(tmp_path / "run")
    assert [r for r in recs if r["kind"].startswith("gpu_")] == []
    assert len(of(recs, "cuda_memcpy", direction="HtoD")) == 2


def test_no_device(tmp_path):
    """A driver with no device: hooks only, with the runtime's own errors."""
    prog = os.path.join(SIM, "cuda_calls")
    if not os.path.exists(prog):
        pytest.skip("cuda_calls not built")
    env = sim_env(SIMCUDA_DEVICES="0")
    plain = run_plain([prog], env=env)
    p = run_plain([prog], env=sim_env(SIMCUDA_DEVICES="0", LD_PRELOAD=LIB,
                                      GPUSTARVE_DIR=str(tmp_path / "run")))
    assert p.returncode == plain.returncode == 0 and p.stdout == plain.stdout
    one_warning(p, "no CUDA device")


@pytest.mark.parametrize("mode,version,words", [
    ("13.0", "130300", "is CUPTI API version 130300"),
    ("13.0", "26", "is CUDA 12's CUPTI, the program runs CUDA 13"),
    ("12.x", "130001", "is CUDA 13's CUPTI, the program runs CUDA 12"),
    ("12.x", "17", "is CUPTI API version 17"),
])
def test_cupti_of_a_version_not_read(tmp_path, mode, version, words):
    d = mode_dir(mode)
    env = clean_env(LD_LIBRARY_PATH=d, SIMCUDA_CUPTI_API_VERSION=version)
    p = run_traced(step_cmd(d, steps=2), tmp_path / "run", env=env)
    assert p.returncode == 0, p.stderr
    one_warning(p, words)


@pytest.mark.parametrize("case", ["loaded-before-beside", "beside-before-cuda-home",
                                  "cuda-home", "env-before-loaded"])
def test_which_libcupti(tmp_path, case):
    """The order of docs/gpu-source.md, "Which libcupti": GPUSTARVE_CUPTI_LIB,
    a libcupti already loaded, the one beside libcudart, $CUDA_HOME. Every
    copy is the 13.0 simulator's, made to report an API version gpustarve
    refuses, so the one warning names the copy that was loaded."""
    def copy_to(folder, *names):
        folder.mkdir(parents=True)
        for n in names:
            shutil.copy(os.path.join(SIM, n), str(folder))
        return str(folder)
    rt = copy_to(tmp_path / "rt", "libcudart.so.13", "libcuda.so.1")
    if case != "cuda-home":
        shutil.copy(os.path.join(SIM, "libcupti.so.13"), rt)
    home = tmp_path / "cuda"
    copy_to(home / "extras" / "CUPTI" / "lib64", "libcupti.so.13")
    loaded = copy_to(tmp_path / "loaded", "libcupti.so.13")
    chosen = copy_to(tmp_path / "chosen", "libcupti.so.13")
    env = dict(LD_LIBRARY_PATH=rt, CUDA_HOME=str(home), SIMCUDA_CUPTI_API_VERSION="130300",
               GPUSTARVE_DIR=str(tmp_path / "run"),
               LD_PRELOAD=LIB + (":" + os.path.join(loaded, "libcupti.so.13")
                                 if case in ("loaded-before-beside", "env-before-loaded") else ""))
    if case == "env-before-loaded":
        env["GPUSTARVE_CUPTI_LIB"] = os.path.join(chosen, "libcupti.so.13")
    want = {"loaded-before-beside": loaded, "beside-before-cuda-home": rt,
            "cuda-home": str(home / "extras" / "CUPTI" / "lib64"), "env-before-loaded": chosen}[case]
    p = run_plain([os.path.join(SIM, "cuda_calls")], env=clean_env(**env))
    assert p.returncode == 0, p.stderr
    w = one_warning(p, "is CUPTI API version 130300")
    assert "CUPTI unavailable: %s/libcupti.so.13 " % want in w, w


def test_real_cu12_cupti_found_in_the_wheel_layout(tmp_path):
    """The real CUDA 12.9 runtime from its PyPI wheel (nvidia/cuda_runtime/lib):
    the libcupti loaded is the real libcupti.so.12 of the cupti wheel
    (nvidia/cuda_cupti/lib), not the toolkit's libcupti.so.13. The driver is
    the simulator's, which real CUPTI 12.9 cannot initialise against: it
    says CUPTI_ERROR_NOT_INITIALIZED, which the warning reports with the
    library's path; the program runs on unchanged."""
    nv = os.path.join(BUILD, "wheels", "cu12", "nvidia")
    rt, cupti = os.path.join(nv, "cuda_runtime", "lib"), os.path.join(nv, "cuda_cupti", "lib")
    prog = os.path.join(SIM, "cu12", "cuda_calls")
    if not (os.path.isdir(rt) and os.path.isdir(cupti) and os.path.exists(prog)):
        pytest.skip("make gpu-wheels simcuda-bins")
    drv = tmp_path / "driver"
    drv.mkdir()
    shutil.copy(os.path.join(SIM, "cu12", "libcuda.so.1"), str(drv))
    env = clean_env(LD_LIBRARY_PATH="%s:%s" % (rt, drv))
    plain = run_plain([prog], env=env)
    p = run_plain([prog], env=clean_env(LD_LIBRARY_PATH="%s:%s" % (rt, drv), LD_PRELOAD=LIB,
                                        GPUSTARVE_DIR=str(tmp_path / "run")))
    assert p.returncode == plain.returncode == 0 and p.stdout == plain.stdout
    w = one_warning(p, "CUPTI unavailable: ")
    assert os.path.realpath(os.path.join(cupti, "libcupti.so.12")) in w, w


# ---- kernel names: NCCL under its real mangled names -------------------------------------------

# From the PyPI wheel nvidia-nccl-cu13 2.30.7 (torch 2.15's NCCL):
# nm nvidia/nccl/lib/libnccl.so.2 | grep ncclDevKernel
NCCL_ALLREDUCE = "_Z39ncclDevKernel_AllReduce_Sum_f32_RING_LL24ncclDevKernelArgsStorageILm4096EE"
NCCL_SHOWN = "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)"


def share_in_steps(steps, intervals):
    """The share of the steps' total time that the (disjoint) intervals
    cover: the truth the report's shares are held to."""
    step_ns = cover_ns = 0
    for s in steps:
        t0, t1 = s["ts_ns"], s["ts_ns"] + s["dur_ns"]
        step_ns += t1 - t0
        cover_ns += sum(min(t1, i["ts_ns"] + i["dur_ns"]) - max(t0, i["ts_ns"])
                        for i in intervals if i["ts_ns"] < t1 and i["ts_ns"] + i["dur_ns"] > t0)
    return cover_ns / step_ns


@pytest.mark.parametrize("mode", sorted(MODES))
def test_nccl_share_under_its_mangled_name(tmp_path, mode):
    """A step of 4 ms compute and a 2 ms NCCL all-reduce (CUPTI reports it
    mangled): the report's communication share is within 3 points of the
    share the trace's own kernel and step times give, and every output
    shows the name demangled."""
    d = mode_dir(mode)
    env = clean_env(LD_LIBRARY_PATH=d,
                    SIMCUDA_KERNEL_US="fwd_kernel=4000,%s=2000" % NCCL_ALLREDUCE)
    run = tmp_path / "run"
    p = run_traced(step_cmd(d, "--kernel", "fwd_kernel", "--comm", NCCL_ALLREDUCE, "--pinned", "1",
                            steps=12), run, env=env)
    assert p.returncode == 0, p.stderr
    recs, _, _ = dump(run)
    steps = sorted(of(recs, "range", name="train_step"), key=lambda r: r["ts_ns"])
    comm = of(recs, "gpu_kernel", name=NCCL_ALLREDUCE)
    assert len(steps) == 12 and len(comm) == 12
    j = report_json(run)
    warmup = j["steps"]["warmup"]
    assert j["steps"]["measured"] == 12 - warmup >= 10
    truth = share_in_steps(steps[warmup:], comm)  # over the steps the report measures
    assert abs(j["share"]["gpu_comm"] - truth) <= 0.03, (j["share"], truth)
    assert truth > 0.1
    kernels = {k["mangled"]: k for k in j["kernels"]}
    assert kernels[NCCL_ALLREDUCE]["name"] == NCCL_SHOWN
    assert kernels[NCCL_ALLREDUCE]["class"] == "communication" and kernels[NCCL_ALLREDUCE]["count"] == 12
    assert kernels["fwd_kernel"]["class"] == "compute"
    text = subprocess.run([CLI, "report", str(run)], capture_output=True, timeout=120).stdout.decode()
    assert "communication  " + NCCL_SHOWN in text
    html, pf = tmp_path / "r.html", tmp_path / "r.json"
    subprocess.run([CLI, "report", "--html", str(html), "--perfetto", str(pf), str(run)],
                   capture_output=True, timeout=120, check=True)
    assert NCCL_SHOWN.replace("<", "&lt;").replace(">", "&gt;") in html.read_text()
    slices = [e for e in json.loads(pf.read_text())["traceEvents"]
              if e.get("cat") == "gpu_kernel" and e.get("args", {}).get("mangled") == NCCL_ALLREDUCE]
    assert len(slices) == 12 and {e["name"] for e in slices} == {NCCL_SHOWN}


# ---- pinned or pageable: the driver API, and two witnesses --------------------------------------

DRIVER_APIS = {"hostalloc": ("cuMemHostAlloc", "cuMemFreeHost"),
               "allochost": ("cuMemAllocHost", "cuMemFreeHost"),
               "register": ("cuMemHostRegister", "cuMemHostUnregister"),
               "proc": ("cuMemHostAlloc", "cuMemFreeHost"),    # from cuGetProcAddress
               "entry": ("cuMemHostAlloc", "cuMemFreeHost")}   # from cudaGetDriverEntryPoint


@pytest.mark.parametrize("how", sorted(DRIVER_APIS))
@pytest.mark.parametrize("mode", sorted(MODES))
def test_driver_api_pinning(tmp_path, mode, how):
    """Memory pinned through the driver API — called by name, or through a
    pointer from cuGetProcAddress or cudaGetDriverEntryPoint (which the
    simulated driver hands out at addresses other than its exports, as a
    real one may) — is pinned for the hooks too, and both witnesses agree."""
    d = mode_dir(mode)
    env = clean_env(LD_LIBRARY_PATH=d, SIMCUDA_KERNEL_US="train_step_kernel=1000")
    p = run_traced(step_cmd(d, "--pinned", how, steps=4), tmp_path / "run", env=env)
    assert p.returncode == 0, p.stderr
    assert warnings(p.stderr) == []
    recs, _, _ = dump(tmp_path / "run")
    pin, free = DRIVER_APIS[how]
    assert [(r["api"], r["ret"], r["bytes"]) for r in of(recs, "cuda_host_mem")] == \
        [(pin, 0, 1 << 20), (free, 0, 1 << 20)]
    assert [r["host_mem"] for r in of(recs, "cuda_memcpy", direction="HtoD")] == ["pinned"] * 4
    assert [r["src_mem"] for r in of(recs, "gpu_memcpy", direction="HtoD")] == ["pinned"] * 4
    j = report_json(tmp_path / "run")
    assert j["host_copy_kinds"]["matched"] == 5  # 4 batches and the final header read back
    assert j["host_copy_kinds"]["pageable_by_hooks_pinned_by_cupti"] == 0
    assert j["share"]["idle_pageable_copy"] == 0


def _gpustarve_threads_hold(pid, fd):
    """Whether every thread of pid named gpustarve (the writer) sees fd,
    a descriptor of the program's table; None when there is none."""
    seen = []
    for tid in os.listdir("/proc/%d/task" % pid):
        try:
            with open("/proc/%d/task/%s/comm" % (pid, tid)) as f:
                if f.read().strip() != "gpustarve":
                    continue
            seen.append(str(fd) in os.listdir("/proc/%d/task/%s/fd" % (pid, tid)))
        except OSError:
            continue  # the thread ended
    return all(seen) if seen else None


def test_gpu_records_are_written_while_the_program_runs(sim, tmp_path):
    """Once CUPTI runs, the writer thread is in the program's descriptor
    table (docs/collector-safety.md: it sees the program's descriptors) and
    decodes CUPTI's buffers into the file while the program runs: kernels
    are in the trace before the program ends, and a SIGKILL keeps them."""
    r, w = os.pipe()  # a descriptor the program holds all along
    run_dir = tmp_path / "run"
    env = sim_env(SIMCUDA_KERNEL_US="train_step_kernel=1000")
    if gstest.SAN_LIB:
        env["GPUSTARVE_LIB"] = gstest.SAN_LIB
        env["LD_PRELOAD"] = gstest.SAN_RUNTIME
    p = subprocess.Popen([CLI, "run", "-o", str(run_dir), "--", os.path.join(SIM, "sim_step"),
                          "--steps", "10000000"], env=env, pass_fds=(w,),
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                         preexec_fn=gstest.default_signals)
    os.close(w)
    os.close(r)
    pid, kernels, shared = None, 0, None
    deadline = time.monotonic() + 120
    try:
        while time.monotonic() < deadline and p.poll() is None:
            names = [f for f in os.listdir(run_dir) if f.endswith(".gst")] \
                if run_dir.exists() else []
            if names and pid is None:
                pid = int(names[0][:-len(".gst")].rsplit("-", 1)[1])
            if pid is not None:
                recs, _, _ = dump(run_dir, check=False)
                kernels = len(of(recs, "gpu_kernel", name="train_step_kernel"))
                shared = _gpustarve_threads_hold(pid, w)
                if kernels and shared:
                    break
            time.sleep(0.05)
        assert pid is not None and p.poll() is None, p.stderr.read().decode() if p.poll() else ""
        assert kernels > 0, "no kernel reached the trace while the program ran"
        assert shared, "the writer does not see the program's descriptors"
        os.kill(pid, signal.SIGKILL)
        p.wait(timeout=300)
    finally:
        if p.poll() is None:
            if pid is not None:
                os.kill(pid, signal.SIGKILL)
            p.wait(timeout=300)
    recs, _, _ = dump(run_dir, check=False)
    assert len(of(recs, "gpu_kernel", name="train_step_kernel")) >= kernels


def test_cupti_witness_wins_where_no_hook_sees_the_pinning(tmp_path):
    """Memory pinned through a pointer no hook sees (dlsym on libcuda.so.1):
    the hooks' registry says pageable, CUPTI's record of the same copy
    (matched by correlation id) says pinned. CUPTI wins: no time in
    pageable copies, no pin_memory advice, the disagreement counted."""
    env = clean_env(LD_LIBRARY_PATH=SIM, SIMCUDA_KERNEL_US="train_step_kernel=2000",
                    SIMCUDA_H2D_PAGEABLE_GBPS="0.5")
    runs = {}
    for how in ("0", "dlsym"):
        runs[how] = tmp_path / how
        p = run_traced(step_cmd(SIM, "--pinned", how, "--batch-mb", "2", steps=10), runs[how],
                       env=env)
        assert p.returncode == 0, p.stderr
    recs, _, _ = dump(runs["dlsym"])
    host = of(recs, "cuda_memcpy", direction="HtoD")
    gpu = {r["correlation"]: r for r in of(recs, "gpu_memcpy", direction="HtoD")}
    assert len(host) == 10 and all(h["correlation"] for h in host)
    assert all(h["host_mem"] == "pageable" and gpu[h["correlation"]]["src_mem"] == "pinned"
               for h in host)
    pageable, dlsym = report_json(runs["0"]), report_json(runs["dlsym"])
    # the control: really pageable copies cost GPU time and get the advice
    assert pageable["share"]["gpu_h2d_pageable"] > 0.05
    assert [a["setting"] for a in pageable["advice"]] == ["pin_memory"]
    assert pageable["host_copy_kinds"]["pageable_by_hooks_pinned_by_cupti"] == 0
    assert dlsym["share"]["gpu_h2d_pageable"] == 0 and dlsym["share"]["gpu_h2d_pinned"] > 0
    assert dlsym["share"]["idle_pageable_copy"] == 0 and dlsym["advice"] == []
    assert dlsym["host_copy_kinds"] == {"matched": 11, "pageable_by_hooks_pinned_by_cupti": 10,
                                        "pinned_by_hooks_pageable_by_cupti": 0}
    assert any("CUPTI's word was taken" in n for n in dlsym["notes"])


# ---- CUPTI's lifecycle --------------------------------------------------------------------------

TEARDOWN_LINE = b"simcuda: cuptiActivityGetNextRecord after libcupti's teardown"


@pytest.mark.parametrize("mode", sorted(MODES))
def test_last_buffers_decoded_before_teardown(tmp_path, mode):
    """The last records (the final read-back copy, delivered by the forced
    flush at exit) are in the trace, decoded while libcupti was intact: the
    simulated CUPTI says so on stderr when asked for records after its
    destructor ran."""
    d = mode_dir(mode)
    p = run_traced(step_cmd(d, steps=2), tmp_path / "run", env=clean_env(LD_LIBRARY_PATH=d))
    assert p.returncode == 0, p.stderr
    assert TEARDOWN_LINE not in p.stderr
    recs, _, _ = dump(tmp_path / "run")
    assert [(r["bytes"], r["dst_mem"]) for r in of(recs, "gpu_memcpy", direction="DtoH")] == \
        [(8, "pageable")]
    assert len(of(recs, "gpu_kernel")) == 2


def test_unknown_timestamps_dropped_and_counted(tmp_path):
    """A kernel still running at exit comes out of CUPTI's forced flush with
    unknown (0) times, as real CUPTI gives them: it is not in the trace, the
    drop is counted (gpu_drops, a note) and the report says numbers
    undercount."""
    env = sim_env(SIMCUDA_KERNEL_US="train_step_kernel=1000,tail_kernel=2000000")
    p = run_traced(step_cmd(SIM, "--tail", "tail_kernel", steps=3), tmp_path / "run", env=env)
    assert p.returncode == 0, p.stderr
    assert warnings(p.stderr) == []
    recs, _, _ = dump(tmp_path / "run")
    assert of(recs, "gpu_kernel", name="tail_kernel") == []
    assert all(r["ts_ns"] > 0 for r in recs if r["kind"].startswith("gpu_") and r["kind"] != "gpu_device")
    assert max(r["dropped"] for r in of(recs, "gpu_drops")) == 1
    notes = of(recs, "note")
    assert len(notes) == 1 and notes[0]["code"] == 0 and notes[0]["text"].endswith("flushed): 1")
    j = report_json(tmp_path / "run")
    assert any("1 GPU records" in n for n in j["notes"]), j["notes"]


def test_pageable_copy_returns_after_staging(tmp_path):
    """8 MiB from pageable memory at 1 GB/s: the simulator returns from the
    call with the last staged MiB still in flight (NVIDIA's documented
    behaviour; tests/simcuda/test_simcuda.c checks the return in simulated
    time); the report's pageable-copy time is still the GPU's copy time
    (within 2 points of what the trace's own copy and step times give) and
    pin_memory is advised."""
    env = sim_env(SIMCUDA_KERNEL_US="train_step_kernel=4000", SIMCUDA_H2D_PAGEABLE_GBPS="1")
    p = run_traced(step_cmd(SIM, "--batch-mb", "8", steps=10), tmp_path / "run", env=env)
    assert p.returncode == 0, p.stderr
    recs, _, _ = dump(tmp_path / "run")
    steps = sorted(of(recs, "range", name="train_step"), key=lambda r: r["ts_ns"])
    copies = of(recs, "gpu_memcpy", direction="HtoD", src_mem="pageable")
    assert len(copies) == 10 and all(abs(c["dur_ns"] - (8 << 20)) < 1000 for c in copies)
    j = report_json(tmp_path / "run")
    truth = share_in_steps(steps[j["steps"]["warmup"]:], copies)
    assert abs(j["share"]["gpu_h2d_pageable"] - truth) <= 0.02, (j["share"], truth)
    assert [a["setting"] for a in j["advice"]] == ["pin_memory"]


# ---- another CUPTI subscriber: the user's profiler ----------------------------------------------

def profiled_run(tmp_path, mode, start, steps, says):
    """sim_step as its own profiler from step `start`, untraced and traced:
    the same exit status and output (its profiler's record count `says`)."""
    d = mode_dir(mode)
    env = clean_env(LD_LIBRARY_PATH=d)
    cmd = step_cmd(d, "--profile-from", str(start), steps=steps)
    plain = run_plain(cmd, env=env)
    assert plain.returncode == 0 and says in plain.stdout
    p = run_traced(cmd, tmp_path / "run", env=env)
    assert p.returncode == 0 and p.stdout == plain.stdout, p.stderr
    return p


@pytest.mark.parametrize("mode", sorted(MODES))
def test_profiler_started_mid_run_gets_cupti(tmp_path, mode):
    """The program starts its own profiler at step 3 (cuptiSubscribe,
    buffer callbacks, kernel activity), while gpustarve holds CUPTI: gpustarve
    hands CUPTI over — its records so far delivered, one warning — and the
    profiler gets exactly what it gets untraced."""
    p = profiled_run(tmp_path, mode, 3, 8, b"profiler: 5 kernel records\n")
    one_warning(p, "another CUPTI client started (cuptiSubscribe): CUPTI is left to it")
    recs, _, _ = dump(tmp_path / "run")
    assert len(of(recs, "gpu_kernel")) == 3  # steps 0-2, before the profiler
    assert len(of(recs, "cuda_memcpy", direction="HtoD")) == 8  # the hooks go on
    assert [n["code"] for n in of(recs, "note")] == [3]
    j = report_json(tmp_path / "run")
    assert any("took CUPTI" in n for n in j["notes"]), j["notes"]


@pytest.mark.parametrize("mode", sorted(MODES))
def test_profiler_started_first_keeps_cupti(tmp_path, mode):
    """The program's profiler subscribes before its first CUDA call:
    gpustarve never takes CUPTI (no replaced buffer callbacks), says so
    once, and records the CUDA calls."""
    p = profiled_run(tmp_path, mode, 0, 4, b"profiler: 4 kernel records\n")
    one_warning(p, "CUPTI is held by another profiler (it called cuptiSubscribe first)")
    recs, _, _ = dump(tmp_path / "run")
    assert [r for r in recs if r["kind"].startswith("gpu_")] == []
    assert len(of(recs, "cuda_memcpy", direction="HtoD")) == 4


def test_validate_script_on_the_simulator():
    """tests/gpu/validate.sh, the real-GPU validation, proven on the
    simulator: every case it can run there passes (torch needs a driver)."""
    if not os.path.exists(os.path.join(SIM, "sim_step")):
        pytest.skip("simulator not built")
    script = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "gpu",
                          "validate.sh")
    p = run_plain([script, "--sim", "--steps", "6"], env=clean_env(), timeout=600)
    out = p.stdout.decode()
    assert p.returncode == 0, out[-3000:] + p.stderr.decode()[-2000:]
    for case in ("train_loop_pinned0", "train_loop_pinned1", "sim_nccl_step", "sim_own_profiler"):
        assert "== PASS %s\n" % case in out, out[-3000:]
    assert "SKIP torch_cuda (--sim" in out
    # the machine check's lines, the simulated card to its datasheet
    assert "== PASS gpustarve check" in out, out[-3000:]
    assert re.search(r"^   gpu\.gemm_16 GPU 0 +to spec +dense BF16 GEMM", out, re.M), out[-3000:]


def test_truth_summary_prints_each_comparison(tmp_path):
    """tests/gpu/truth_summary.py (validate.sh --truth): one line per logged
    comparison, advised or not, the repeat's drift where there was one; a
    log that cannot be read is exit status 2."""
    script = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "gpu",
                          "truth_summary.py")
    log = tmp_path / "truth.jsonl"
    entries = [
        {"regime": "latency-threads", "attempt": 0, "workers": 1, "step_ms": 60.2,
         "model": {"cpus": 16}, "outcome": "advised", "value": 3, "predicted_ms": 20.7,
         "measured_ms": 21.0, "error": -0.0143, "ok": True},
        {"regime": "mixed", "attempt": 1, "workers": 1, "step_ms": 40.0, "model": None,
         "outcome": "no advice", "value": 3, "measured_ms": 30.0, "gain": 0.25, "ok": False,
         "again_ms": 50.0, "drift": 0.25},
    ]
    log.write_text("".join(json.dumps(e) + "\n" for e in entries))
    p = run_plain([gstest.DEBIAN_PY, script, str(log)], env=clean_env())
    assert p.returncode == 0, p.stderr.decode()
    out = p.stdout.decode().splitlines()
    assert len(out) == 2, out
    assert "latency-threads" in out[0] and "cpus 16" in out[0], out
    assert "advice 3: predicted 20.7, measured 21.0 ms (-1%)  held" in out[0], out
    assert "no advice: 3 workers 30.0 ms (gain +25%)" in out[1], out
    assert "missed; first setting again 50.0 ms (+25%)" in out[1], out
    log.write_text("{not json\n")
    p = run_plain([gstest.DEBIAN_PY, script, str(log)], env=clean_env())
    assert p.returncode == 2 and b"truth.jsonl" in p.stderr, p


ARMED = r"""
import ctypes, os, sys
rt = ctypes.CDLL(os.path.join(sys.argv[1], "libcudart.so.13"), mode=ctypes.RTLD_GLOBAL)
g = ctypes.CDLL(None)
copy = g.cudaMemcpy
copy.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
dev = ctypes.c_void_p()
rt.cudaMalloc.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_size_t]
assert rt.cudaMalloc(ctypes.byref(dev), 4096) == 0
host = ctypes.create_string_buffer(64)
step_end, fetch_end = g.gpustarve_step_end, g.gpustarve_fetch_end
for f in (step_end, fetch_end):
    f.argtypes = [ctypes.c_uint64, ctypes.c_uint32]

def copies(n):
    for _ in range(n):
        assert copy(dev, host, 64, 1) == 0  # cudaMemcpyHostToDevice

copies(2)                  # not armed
step_end(1, 2 << 24)       # an optimizer's update: armed
copies(3)                  # sampled at both ends
fetch_end(0, 8 << 24)      # the forward: disarmed
copies(2)
step_end(2, 3 << 24)       # a backward(): armed
copies(10)                 # its first 8 sampled
fetch_end(1, 8 << 24)
step_end(3, 0)             # a plain step_end arms nothing
copies(2)
"""


def test_batch_making_cuda_calls_carry_clock_samples(sim, tmp_path):
    """After an update (a step_end of class optimizer or backward) the
    collector samples the thread's clocks at both ends of its next 8 CUDA
    calls at most, none once the forward has come, none after a plain
    step_end (docs/trace-format.md, "Thread CPU samples")."""
    p = run_traced(["/usr/bin/python3", "-c", ARMED, SIM], tmp_path / "run",
                   env=sim_env(GPUSTARVE_PYTHON="0"))
    assert p.returncode == 0, p.stderr.decode()
    recs, _, _ = dump(tmp_path / "run")
    main = [r for r in recs if r.get("tid") == r.get("pid")]
    calls = sorted(of(main, "cuda_memcpy", api="cudaMemcpy", direction="HtoD"),
                   key=lambda r: r["ts_ns"])
    assert len(calls) == 19
    own = [r["ts_ns"] for r in of(main, "cpu", source="marker")]

    def sampled(t):
        return any(0 <= s - t <= 1 for s in own)  # ts + dur may read 1 ns early

    got = [(sampled(c["ts_ns"]), sampled(c["ts_ns"] + c["dur_ns"])) for c in calls]
    want = ([(False, False)] * 2 + [(True, True)] * 3 + [(False, False)] * 2 +
            [(True, True)] * 8 + [(False, False)] * 4)
    assert got == want, got
