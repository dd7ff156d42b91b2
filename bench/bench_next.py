#!/usr/bin/env python3
"""What gpustarve adds to one next() on a DataLoader iterator in the training
process (docs/performance.md, "A DataLoader's next()"): the __next__ wrapper
(python/gpustarve/_torch.py _wrap_next: its hooks, the step and fetch
markers through ctypes, each with the collector's CPU sample of the thread).
Prints figures, asserts nothing; needs torch.

Method: a child process under `gpustarve run` iterates a trivial loader (a
list, batch_size=None, num_workers=0: torch's own next() is a few
microseconds) in blocks of N calls, alternating next(it) (through the
wrapper) and the original __next__ called directly (its __wrapped__), and
prints the calling thread's CPU time per call (time.thread_time_ns) of
each, median over its pairs of blocks; both halves run in the same process,
so machine load shifts them alike. The figure is wrapped minus bare, median
of ROUNDS children. `--cli` names another build's gpustarve (its python/
folder comes with it), to compare two trees.

Instruction counts, free of the machine's load (docs/performance.md says
how): `bench_next.py --loop N` makes N next() calls and nothing else; run
it under `gpustarve run -- valgrind --tool=callgrind` for two N.

Usage: bench_next.py [--cli PATH] [--rounds R] [--n N] [PYTHON...]
       bench_next.py --loop N
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PAIRS = 9


def child(n):
    from torch.utils.data import DataLoader
    loader = DataLoader(list(range(n * (2 * PAIRS + 2))), batch_size=None)
    it = iter(loader)
    bare = getattr(type(it).__next__, "__wrapped__", None)
    if bare is None:
        print("not traced: run under gpustarve run", file=sys.stderr)
        return 1
    for _ in range(n):  # warm up both
        next(it)
        bare(it)
    wrapped, plain = [], []
    for _ in range(PAIRS):
        t0 = time.thread_time_ns()
        for _ in range(n):
            next(it)
        t1 = time.thread_time_ns()
        for _ in range(n):
            bare(it)
        t2 = time.thread_time_ns()
        wrapped.append((t1 - t0) / n)
        plain.append((t2 - t1) / n)
    print(statistics.median(wrapped), statistics.median(plain))
    return 0


def loop(n):
    """n next() and nothing else: for instruction counts (callgrind) of two
    n, whose difference is n next() calls."""
    from torch.utils.data import DataLoader
    it = iter(DataLoader(list(range(n + 1)), batch_size=None))
    for _ in range(n):
        next(it)
    return 0


def main(argv):
    if argv[1:2] == ["--child"]:
        return child(int(argv[2]))
    if argv[1:2] == ["--loop"]:
        return loop(int(argv[2]))
    ap = argparse.ArgumentParser(description="gpustarve's cost per DataLoader next()")
    ap.add_argument("--cli", default=os.path.join(ROOT, "build", "gpustarve"))
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--n", type=int, default=5000)
    ap.add_argument("python", nargs="*", default=["/usr/bin/python3"])
    a = ap.parse_args(argv[1:])
    print("load average %.2f %.2f %.2f" % os.getloadavg())
    me = os.path.abspath(__file__)
    for py in a.python:
        w, b = [], []
        with tempfile.TemporaryDirectory() as d:
            for r in range(a.rounds):
                p = subprocess.run([a.cli, "run", "-q", "-o", os.path.join(d, "r%d" % r), "--",
                                    py, me, "--child", str(a.n)], check=True,
                                   stdout=subprocess.PIPE)
                x, y = p.stdout.decode().split()[-2:]
                w.append(float(x))
                b.append(float(y))
        d = [x - y for x, y in zip(w, b)]
        print("%s: next() %.0f ns through gpustarve's wrapper, %.0f ns bare: it adds %.0f ns "
              "(range %.0f-%.0f; median of %d runs, each the median of %d pairs of %d-call "
              "blocks)" % (py, statistics.median(w), statistics.median(b), statistics.median(d),
                           min(d), max(d), a.rounds, PAIRS, a.n))
    print("load average %.2f %.2f %.2f" % os.getloadavg())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
