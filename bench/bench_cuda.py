#!/usr/bin/env python3
"""GPU-side collector benchmarks (`make bench`), on the simulated GPU
(build/simcuda). Prints figures, asserts nothing.

Method:
- cudaMemcpyAsync hook cost: build/bench/bench_cuda, preloaded, alternates
  blocks of 1000 pinned 64-byte host-to-device cudaMemcpyAsync calls through
  the hook with blocks through libcudart's own symbol (dlopen RTLD_NOLOAD +
  dlsym); per run the median of per-pair differences; median over runs.
  Target <= 100 ns.
- The same calls in a training thread's batch making (`bench_cuda CALLS
  --armed`): groups of 8 after an optimizer step_end marker, where the
  collector samples the thread's clocks at both ends of each call, against
  the same groups after a plain step_end; the added cost per call. No
  target: at most 8 such calls follow an update (docs/performance.md).
- CUPTI drops: examples/train_loop at its default settings under
  `gpustarve run`; the largest gpu_drops (CUPTI's dropped records) and drops
  (ring overflows) in the dump. Target 0.
"""
import json
import os
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
B = os.path.join(ROOT, "build")
CLI = os.path.join(B, "gpustarve")
LIB = os.path.join(B, "libgpustarve.so")
SIM = os.path.join(B, "simcuda")
BENCH = os.path.join(B, "bench", "bench_cuda")
LOOP = os.path.join(B, "examples", "train_loop")


def env(**kw):
    e = {k: v for k, v in os.environ.items() if not k.startswith("GPUSTARVE_")
         and k not in ("LD_PRELOAD", "CUDA_INJECTION64_PATH", "NVTX_INJECTION64_PATH")}
    e["LD_LIBRARY_PATH"] = SIM
    e.update(kw)
    return e


def alternated(tmp, tag, extra, rounds, calls):
    """Runs of bench_cuda (its three figures per run) as lists over runs."""
    cols = ([], [], [])
    for r in range(rounds):
        out = subprocess.run([BENCH, str(calls)] + extra,
                             env=env(LD_PRELOAD=LIB, GPUSTARVE_DIR=os.path.join(tmp, tag + str(r))),
                             capture_output=True, check=True).stdout.split()
        for col, x in zip(cols, out):
            col.append(float(x))
    return cols


def bench_hook(tmp, rounds=7, calls=200_000):
    traced, plain, added = alternated(tmp, "h", [], rounds, calls)
    print("cudaMemcpyAsync hook, simulated GPU: %d runs, each alternating blocks of 1000 "
          "hooked and libcudart calls (%d calls)" % (rounds, calls))
    print("  untraced   %7.1f ns/call (median of runs)" % statistics.median(plain))
    print("  traced     %7.1f ns/call" % statistics.median(traced))
    print("  added cost %7.1f ns/call median of runs (min %.1f, max %.1f)  target <= 100" % (
        statistics.median(added), min(added), max(added)))


def bench_armed(tmp, rounds=7, calls=100_000):
    armed, plain, added = alternated(tmp, "a", ["--armed"], rounds, calls)
    print("the same calls in a training thread's batch making (clocks sampled at both ends): "
          "%d runs of %d calls" % (rounds, calls))
    print("  after a plain marker   %7.1f ns/call (median of runs)" % statistics.median(plain))
    print("  after an update        %7.1f ns/call" % statistics.median(armed))
    print("  added cost %7.1f ns/call median of runs (min %.1f, max %.1f); at most 8 calls "
          "an update" % (statistics.median(added), min(added), max(added)))


def bench_drops(tmp):
    run = os.path.join(tmp, "loop")
    p = subprocess.run([CLI, "run", "-q", "-o", run, "--", LOOP],
                       env=env(SIMCUDA_KERNEL_US="train_step_kernel=10000"),
                       capture_output=True, check=True)
    out = subprocess.run([CLI, "dump", "--json", run], capture_output=True, check=True).stdout
    recs = [json.loads(l) for l in out.splitlines() if l.strip()]
    gpu_drops = max((r["dropped"] for r in recs if r["kind"] == "gpu_drops"), default=0)
    drops = max((r["dropped"] + r["lost"] for r in recs if r["kind"] == "drops"), default=0)
    kernels = sum(1 for r in recs if r["kind"] == "gpu_kernel")
    copies = sum(1 for r in recs if r["kind"] == "gpu_memcpy")
    warn = [l for l in p.stderr.decode().splitlines() if l.startswith("gpustarve: warning")]
    print("train_loop at default settings (50 steps), simulated GPU: %d kernels, %d copies "
          "recorded" % (kernels, copies))
    print("  CUPTI dropped records %d  target 0; ring drops + lost %d%s" % (
        gpu_drops, drops, ("; " + warn[0]) if warn else ""))


def main():
    for p in (BENCH, LOOP, os.path.join(SIM, "libcudart.so.13")):
        if not os.path.exists(p):
            print("bench_cuda: SKIP (%s not built: needs the CUDA toolkit)" % p)
            return 0
    with tempfile.TemporaryDirectory(prefix="gs_bench_cuda_") as tmp:
        bench_hook(tmp)
        bench_armed(tmp)
        bench_drops(tmp)
    return 0


if __name__ == "__main__":
    sys.exit(main())
