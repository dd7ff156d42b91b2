#!/usr/bin/env python3
"""What gpustarve adds to one next() on a DataLoader iterator in the training
process (docs/performance.md, "A DataLoader's next()"): the __next__ wrapper
(python/gpustarve/_torch.py _wrap_next: step and fetch markers through
ctypes, each with the collector's CPU sample of the thread). Prints figures,
asserts nothing; needs torch.

Method: a child process iterates a trivial loader (a list, batch_size=None,
num_workers=0: torch's own next() is a few microseconds) in blocks of N
next() calls and prints the calling thread's CPU time per call
(time.thread_time_ns), median of its blocks; it runs untraced and under
`gpustarve run`, alternately, ROUNDS times each; the figure is the traced
median minus the untraced one, with their ranges. `--cli` names another
build's gpustarve (its python/ folder comes with it), to compare two trees.

Usage: bench_next.py [--cli PATH] [--rounds R] [--n N] [PYTHON...]
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BLOCKS = 9


def child(n):
    from torch.utils.data import DataLoader
    loader = DataLoader(list(range(n * (BLOCKS + 1))), batch_size=None)
    it = iter(loader)
    for _ in range(n):  # warm up
        next(it)
    per = []
    for _ in range(BLOCKS):
        t0 = time.thread_time_ns()
        for _ in range(n):
            next(it)
        per.append((time.thread_time_ns() - t0) / n)
    print(statistics.median(per))
    return 0


def one(cmd):
    p = subprocess.run(cmd, check=True, stdout=subprocess.PIPE)
    return float(p.stdout.decode().split()[-1])


def main(argv):
    if argv[1:2] == ["--child"]:
        return child(int(argv[2]))
    ap = argparse.ArgumentParser(description="gpustarve's cost per DataLoader next()")
    ap.add_argument("--cli", default=os.path.join(ROOT, "build", "gpustarve"))
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--n", type=int, default=10000)
    ap.add_argument("python", nargs="*", default=["/usr/bin/python3"])
    a = ap.parse_args(argv[1:])
    print("load average %.2f %.2f %.2f" % os.getloadavg())
    me = os.path.abspath(__file__)
    for py in a.python:
        plain, traced = [], []
        with tempfile.TemporaryDirectory() as d:
            for r in range(a.rounds):
                plain.append(one([py, me, "--child", str(a.n)]))
                traced.append(one([a.cli, "run", "-q", "-o", os.path.join(d, "r%d" % r), "--",
                                   py, me, "--child", str(a.n)]))
        mp, mt = statistics.median(plain), statistics.median(traced)
        print("%s: next() untraced %.0f ns (%.0f-%.0f), traced %.0f ns (%.0f-%.0f): "
              "gpustarve adds %.0f ns (median of %d runs of %d blocks of %d)"
              % (py, mp, min(plain), max(plain), mt, min(traced), max(traced), mt - mp,
                 a.rounds, BLOCKS, a.n))
    print("load average %.2f %.2f %.2f" % os.getloadavg())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
