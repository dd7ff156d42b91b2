#!/usr/bin/python3
"""bench_compare_trials.py — how often `gpustarve compare` over runs calls a
change, with real runs: examples/train_loop on the simulated GPU
(tests/simcuda), side A against side B, K runs a side interleaved
(A B B A A B ...), beside a CPU burner (`yes`) or not. Each trial's runs
are judged by each run's mean step (compare's default) and by its median
(`--by median`). It prints each trial's labels and intervals, then the
counts of each; it measures and never fails.

    /usr/bin/python3 bench/bench_compare_trials.py identical --runs 3 --load changing
    /usr/bin/python3 bench/bench_compare_trials.py change --runs 3 --load none
    /usr/bin/python3 bench/bench_compare_trials.py change --runs 5 --load steady

identical: both sides `--workers 2 --load-ms 20 --spin 1` (two CPU-bound
loader threads: a busy CPU slows them). change: A `--workers 1`, B
`--workers 2`, each `--load-ms 15.5` of sleep and a 10 ms kernel: one
thread makes a ~15.5 ms step, two the kernel's ~10.8 ms (about -30%).
--load none: nothing started; steady: one burner through the whole trial;
changing: before each run 0, 1 or 2 burners, drawn from a seeded sequence.
Needs `make` (build/gpustarve, build/examples/train_loop, build/simcuda).
"""
import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GS = os.path.join(ROOT, "build", "gpustarve")
LOOP = os.path.join(ROOT, "build", "examples", "train_loop")
SIM = os.path.join(ROOT, "build", "simcuda")

BY = ("mean", "median")  # each run's sample, as compare --by names it
SIDES = {
    "identical": (["--workers", "2", "--load-ms", "20", "--spin", "1"],) * 2,
    "change": (["--workers", "1", "--load-ms", "15.5"], ["--workers", "2", "--load-ms", "15.5"]),
}


class Burners:
    """`yes > /dev/null` processes this script started, by their pids."""

    def __init__(self):
        self.procs = []

    def set(self, n):
        while len(self.procs) > n:
            p = self.procs.pop()
            p.kill()
            p.wait()
        while len(self.procs) < n:
            self.procs.append(subprocess.Popen(["yes"], stdout=subprocess.DEVNULL))


def one_run(out, args, env, steps):
    cmd = [GS, "run", "-q", "-o", out, "--", LOOP, "--kernel-ms", "10", "--steps", str(steps)] + args
    p = subprocess.run(cmd, env=env, capture_output=True, timeout=120)
    if p.returncode != 0:
        sys.stderr.write("run failed: %s\n" % p.stderr.decode()[-300:])


def judge(dirs, by, loads):
    """compare --by BY of a trial's runs: (its helped object, a line), or (None, why)."""
    p = subprocess.run([GS, "compare", "--json", "--by", by] + dirs["A"] + ["--"] + dirs["B"],
                       capture_output=True, text=True, timeout=300)
    if p.returncode != 0:
        return None, p.stderr.strip()
    j = json.loads(p.stdout)
    h = j["helped"]
    other = [r["other_load_cores"] for s in ("a", "b") for r in j[s]["runs"]]
    return h, "ratio %.3f [%s, %s] other load %s burners %s" % (
        h["ratio"], "%.3f" % h["ratio_lo"] if h["ratio_lo"] else "-",
        "%.3f" % h["ratio_hi"] if h["ratio_hi"] else "-",
        ",".join("%.2f" % x if x is not None else "-" for x in other), loads)


def trial(t, mode, runs, load, burners, tmp, env, steps):
    rng = random.Random(1000 + t)
    a_args, b_args = SIDES[mode]
    dirs = {"A": [], "B": []}
    order = ("ABBA" * runs)[:2 * runs]
    burners.set(1 if load == "steady" else 0)
    loads = []
    for i, side in enumerate(order):
        if load == "changing":
            n = rng.choice((0, 1, 2))
            burners.set(n)
            loads.append(n)
        d = os.path.join(tmp, "t%d-%s%d" % (t, side, i))
        one_run(d, a_args if side == "A" else b_args, env, steps)
        dirs[side].append(d)
    burners.set(0)
    return {by: judge(dirs, by, loads or load) for by in BY}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("mode", choices=sorted(SIDES))
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--trials", type=int, default=20)
    ap.add_argument("--steps", type=int, default=40, help="steps per run (default 40)")
    ap.add_argument("--load", choices=("none", "steady", "changing"), default="none")
    a = ap.parse_args()
    env = dict(os.environ, LD_LIBRARY_PATH=SIM, SIMCUDA_KERNEL_US="train_step_kernel=10000")
    tmp = tempfile.mkdtemp(prefix="gs-trials-")
    burners = Burners()
    counts = {by: {} for by in BY}
    try:
        for t in range(a.trials):
            judged = trial(t, a.mode, a.runs, a.load, burners, tmp, env, a.steps)
            for by in BY:
                h, text = judged[by]
                label = h["label"] if h else "error"
                counts[by][label] = counts[by].get(label, 0) + 1
                print("trial %2d  by %-6s %-17s %s" % (t, by, label, text), flush=True)
    finally:
        burners.set(0)
        shutil.rmtree(tmp, ignore_errors=True)
    for by in BY:
        print("%s, %d runs a side of %d steps, load %s, by each run's %s step: %s (of %d trials)" % (
            a.mode, a.runs, a.steps, a.load, by,
            ", ".join("%s %d" % kv for kv in sorted(counts[by].items())), a.trials))


if __name__ == "__main__":
    main()
