#!/usr/bin/env python3
"""A forked Python worker's cost (`make bench`): what tracing adds to each
worker process a torch program forks, as a DataLoader forks its workers.
Prints figures, asserts nothing (docs/performance.md, "A forked Python
worker").

Method: a parent that has imported torch and numpy forks CHILDREN workers
one after another (multiprocessing's fork context, as a DataLoader's); each
opens a queue, reads READS images of examples/pytorch/train.py's data set,
turns each into a float array, puts one number on the queue and ends. Per
way and round the parent reports, per worker: the workers' CPU time (its
children's resource usage), the wall time from start() to join(), and their
minor page faults; and, around the round, the machine's TLB shootdowns
(/proc/interrupts, "TLB": interrupts one CPU sends another to drop a stale
address translation, machine-wide, so another busy process adds to them).
The ways, untraced and traced (the library preloaded), run in a random
order each round; per way the median of the rounds, and the median of each
round's traced minus untraced difference with its order-statistics interval
(bench_collector.median_interval).

Why a worker costs more traced (docs/performance.md): its files (trace and
live file: created, blocks set aside, first pages mapped), the collector's
threads that start with the worker's first thread, their first drain, the
worker's exit; and a worker forked from a Python parent writes to most pages
it inherits (reference counts), each a copy-on-write fault: while one of the
collector's threads runs on another CPU, each such fault also sends it a TLB
shootdown, which a virtual machine pays in exits to its hypervisor.
"""
import argparse
import os
import random
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_collector import ROOT, LIB, PY, env, median_interval  # noqa: E402


def tlb_shootdowns():
    """The machine's TLB shootdown interrupts so far (all CPUs), or None."""
    try:
        with open("/proc/interrupts") as f:
            for line in f:
                p = line.split()
                if p and p[0] == "TLB:":
                    return sum(int(x) for x in p[1:] if x.isdigit())
    except OSError:
        pass
    return None


def parent(data, children, reads):
    """The forking parent (run as `bench_pyfork.py --parent`)."""
    import glob
    import multiprocessing as mp
    import numpy as np
    import torch  # noqa: F401  (the parent a DataLoader forks from has it)
    paths = sorted(glob.glob(os.path.join(data, "*.raw")))[:reads]

    def work(q):
        s = 0.0
        for p in paths:
            with open(p, "rb") as f:
                s += float(np.frombuffer(f.read(), dtype=np.uint8).astype(np.float32).mean())
        q.put(s)  # the queue's feeder thread: the worker's first thread

    ctx = mp.get_context("fork")
    c0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    for _ in range(children):
        q = ctx.Queue()
        w = ctx.Process(target=work, args=(q,))
        w.start()
        q.get()
        w.join()
    wall = time.perf_counter() - t0
    c1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = c1.ru_utime - c0.ru_utime + c1.ru_stime - c0.ru_stime
    print("%.6f %.6f %d" % (cpu / children, wall / children,
                            (c1.ru_minflt - c0.ru_minflt) // children))


def one(way, tmp, data, lib, children, reads):
    """(CPU ms, wall ms, minor faults, TLB shootdowns) per worker of one round."""
    cmd = [PY, os.path.abspath(__file__), "--parent", data, "--children", str(children),
           "--reads", str(reads)]
    run = os.path.join(tmp, "run")
    e = env(LD_PRELOAD=lib, GPUSTARVE_DIR=run) if way == "traced" else env()
    a = tlb_shootdowns()
    out = subprocess.run(cmd, env=e, capture_output=True, check=True, text=True).stdout.split()
    b = tlb_shootdowns()
    shutil.rmtree(run, ignore_errors=True)
    tlb = (b - a) / children if a is not None and b is not None else float("nan")
    return 1e3 * float(out[0]), 1e3 * float(out[1]), int(out[2]), tlb


def positive(text):
    """argparse type: an integer of at least 1 (else the usage and exit 2)."""
    try:
        v = int(text)
    except ValueError:
        v = 0
    if v < 1:
        raise argparse.ArgumentTypeError("%r is not a whole number of at least 1" % text)
    return v


def main():
    ap = argparse.ArgumentParser(description="A forked Python worker's cost, untraced and traced "
                                 "(docs/performance.md, \"A forked Python worker\").")
    ap.add_argument("--lib", default=LIB, help="the collector to measure (default %(default)s)")
    ap.add_argument("--rounds", type=positive, default=12, help="rounds of both ways (default 12)")
    ap.add_argument("--children", type=positive, default=30, help="workers forked a round (default 30)")
    ap.add_argument("--reads", type=positive, default=150, help="images each worker reads (default 150)")
    ap.add_argument("--parent", metavar="DATA", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.parent:
        return parent(a.parent, a.children, a.reads)
    if not os.path.exists(a.lib):
        print("bench_pyfork: %s not found: run make first" % a.lib, file=sys.stderr)
        return 2
    tmp = tempfile.mkdtemp(prefix="gs-pyfork-")
    try:
        data = os.path.join(tmp, "imgs")
        script = os.path.join(ROOT, "examples", "pytorch", "train.py")
        subprocess.run([PY, script, "--data", data, "--make-data", str(a.reads), "--steps", "1"],
                       env=env(), capture_output=True, check=True)
        res = {"untraced": [], "traced": []}
        loads = [os.getloadavg()[0]]
        for r in range(a.rounds):
            ways = list(res)
            random.shuffle(ways)
            for way in ways:
                res[way].append(one(way, tmp, data, a.lib, a.children, a.reads))
            loads.append(os.getloadavg()[0])
            print("  round %d of %d" % (r + 1, a.rounds), file=sys.stderr, flush=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print("A forked Python worker (a torch parent forks %d a round, each reads %d images), "
          "%d rounds in a random order; load average %.1f to %.1f; collector %s"
          % (a.children, a.reads, a.rounds, min(loads), max(loads), a.lib))
    names = ("CPU", "wall", "minor faults", "TLB shootdowns")
    units = (" ms", " ms", "", "")
    for i, name in enumerate(names):
        u = [x[i] for x in res["untraced"]]
        t = [x[i] for x in res["traced"]]
        d = [y - x for x, y in zip(u, t)]
        lo, hi, cover = median_interval(d)
        print("  %-15s untraced %.2f%s, traced %.2f%s: traced - untraced %+.2f%s "
              "[%+.2f, %+.2f] (%.0f %%)" % (name + ":", statistics.median(u), units[i],
                                            statistics.median(t), units[i], statistics.median(d),
                                            units[i], lo, hi, 100 * cover))
    return 0


if __name__ == "__main__":
    sys.exit(main())
