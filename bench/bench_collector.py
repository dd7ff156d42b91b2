#!/usr/bin/env python3
"""Collector benchmarks (`make bench`): read-hook cost, compressed bytes per
event, DataLoader wall-time overhead. Prints figures, asserts nothing: the
targets are checked by reading these numbers (see README, "Performance").

Method:
- hook cost: build/bench/pread_loop --alternate, preloaded, does 4 KiB
  preads from a file in the page cache, alternating blocks of 5000 calls
  through the hooked pread with blocks through libc's own pread (so both see
  the same machine state); per run, the median of per-pair differences; the
  median over runs is reported.
- bytes per event: the traced runs' trace bytes / events recorded.
- DataLoader: examples/pytorch/train.py (2 workers, 2 epochs over 600
  images) alternated traced/untraced, the order of the pair swapped every
  round; median wall time of each, and the CPU time of all the run's
  processes (the children's resource usage). Also the traced/untraced
  ratio of each round's pair, its median and a distribution-free interval
  for that median (order statistics: no assumption about how single runs
  spread): the 2 % target is shown met only when the interval's upper end
  is at most 2 %, shown missed only when its lower end is above.
"""
import json
import math
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
B = os.path.join(ROOT, "build")
CLI = os.path.join(B, "gpustarve")
LIB = os.path.join(B, "libgpustarve.so")
PY = "/usr/bin/python3"


def env(**kw):
    e = {k: v for k, v in os.environ.items() if not k.startswith("GPUSTARVE_")
         and k != "LD_PRELOAD"}
    e.update(kw)
    return e


def trace_stats(run_dir):
    """(events, bytes on disk) of a run directory, via dump --summary --json."""
    size = sum(os.path.getsize(os.path.join(run_dir, f)) for f in os.listdir(run_dir))
    out = subprocess.run([CLI, "dump", "--json", run_dir], capture_output=True, check=True)
    events = sum(1 for line in out.stdout.splitlines()
                 if line and not line.startswith(b'{"kind":"process"'))
    return events, size


def bench_hook(tmp, rounds=7, calls=2_000_000):
    blob = os.path.join(tmp, "blob")
    with open(blob, "wb") as f:
        f.write(os.urandom(16 << 20))
    loop = os.path.join(B, "bench", "pread_loop")
    added, traced, plain, per_event = [], [], [], []
    for r in range(rounds):
        run = os.path.join(tmp, "hook%d" % r)
        out = subprocess.run([loop, blob, str(calls), "--alternate"],
                             env=env(LD_PRELOAD=LIB, GPUSTARVE_DIR=run),
                             capture_output=True, check=True).stdout.split()
        t, u, d = (float(x) for x in out)
        traced.append(t)
        plain.append(u)
        added.append(d)
        ev, size = trace_stats(run)
        per_event.append(size / ev)
    print("read hook, 4 KiB page-cache preads: %d runs, each alternating blocks of 5000 "
          "hooked and libc preads (%d calls)" % (rounds, calls))
    print("  untraced   %7.1f ns/call (median of runs)" % statistics.median(plain))
    print("  traced     %7.1f ns/call" % statistics.median(traced))
    print("  added cost %7.1f ns/call median of runs (min %.1f, max %.1f)  target <= 60" % (
        statistics.median(added), min(added), max(added)))
    print("  trace size %7.2f bytes/event (median; %d events per run)  target <= 8" % (
        statistics.median(per_event), ev))


def median_interval(xs, conf=0.95):
    """(low, high, coverage): order statistics around the median of xs whose
    interval holds the true median with at least `conf` probability, from the
    binomial distribution alone; (min, max, coverage) when xs are too few."""
    xs = sorted(xs)
    n = len(xs)
    k = 0  # xs[k] .. xs[n-1-k]
    while k + 1 < n - 1 - (k + 1):
        tail = sum(math.comb(n, i) for i in range(k + 2)) / 2 ** n
        if 2 * tail > 1 - conf:
            break
        k += 1
    cover = 1 - 2 * sum(math.comb(n, i) for i in range(k + 1)) / 2 ** n
    return xs[k], xs[n - 1 - k], cover


def bench_dataloader(tmp, rounds=21):
    data = os.path.join(tmp, "imgs")
    script = os.path.join(ROOT, "examples", "pytorch", "train.py")
    subprocess.run([PY, script, "--data", data, "--make-data", "600", "--steps", "1"],
                   env=env(), capture_output=True, check=True)
    cmd = [PY, script, "--data", data, "--num-workers", "2", "--epochs", "2"]
    wall = {0: [], 1: []}  # untraced, traced
    cpu = {0: [], 1: []}  # CPU time of all the run's processes (children's rusage)
    per_event = []
    for r in range(rounds):
        for traced in ((0, 1) if r % 2 == 0 else (1, 0)):  # neither always goes first
            run = os.path.join(tmp, "dl%d" % r)
            e = env(LD_PRELOAD=LIB, GPUSTARVE_DIR=run) if traced else env()
            c0 = resource.getrusage(resource.RUSAGE_CHILDREN)
            t0 = time.perf_counter()
            subprocess.run(cmd, env=e, capture_output=True, check=True)
            wall[traced].append(time.perf_counter() - t0)
            c1 = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpu[traced].append(c1.ru_utime - c0.ru_utime + c1.ru_stime - c0.ru_stime)
        ev, size = trace_stats(run)
        per_event.append(size / ev)
    u, t = statistics.median(wall[0]), statistics.median(wall[1])
    cu, ct = statistics.median(cpu[0]), statistics.median(cpu[1])
    print("DataLoader workload (train.py, 2 workers, 2 epochs x 600 images), %d rounds, the order "
          "alternating" % rounds)
    print("  untraced median %.3f s, traced median %.3f s: overhead %+.2f%%  target <= 2%%" % (
        u, t, 100 * (t - u) / u))
    print("  (wall of single runs: untraced %.2f to %.2f s, traced %.2f to %.2f s)" % (
        min(wall[0]), max(wall[0]), min(wall[1]), max(wall[1])))
    print("  CPU time, all processes: untraced median %.3f s, traced %.3f s: %+.2f%% (%+.0f ms)" % (
        cu, ct, 100 * (ct - cu) / cu, 1e3 * (ct - cu)))
    for what, xs in (("wall", wall), ("CPU", cpu)):
        ratios = [100 * (t1 / t0 - 1) for t0, t1 in zip(xs[0], xs[1])]
        lo, hi, cover = median_interval(ratios)
        verdict = ("target met" if hi <= 2 else "target missed" if lo > 2 else
                   "neither shown: the interval holds 2%")
        print("  %s, traced/untraced of each round's pair: median %+.2f%%, %.0f%% interval "
              "[%+.2f%%, %+.2f%%] (single pairs %+.1f%% to %+.1f%%): %s" % (
                  what, statistics.median(ratios), 100 * cover, lo, hi, min(ratios),
                  max(ratios), verdict))
    print("  trace size %.2f bytes/event (median, %d events per run)" % (
        statistics.median(per_event), ev))


def main():
    with tempfile.TemporaryDirectory(prefix="gs_bench_") as tmp:
        print("machine: %s, %d cores" % (os.uname().nodename, os.cpu_count()))
        bench_hook(tmp)
        bench_dataloader(tmp)
    return 0


if __name__ == "__main__":
    sys.exit(main())
