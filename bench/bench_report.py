#!/usr/bin/env python3
"""bench_report.py — `gpustarve report` throughput and peak memory on large
generated traces (`make bench`; numbers only, no assertion).

Generates, once per invocation, into a temporary directory:
  big     50M events, 2000 steps of 100 ms (1 trainer, 4 forked loader workers)
  small    5M events, the same 2000 steps (10x fewer events per step)
  many     5M events, 20000 steps (10x the steps)
with bench/gen_bigtrace.c (through the trace API: the collector's frame size
and zstd level, jittered times so that it compresses like a real run).
Then times `gpustarve report --json` on each (best of --repeat runs): wall
and user CPU seconds of the child, events per second per core, and the
child's peak resident memory (wait4 rusage). The report is single-threaded,
so events/s of user CPU is the per-core figure. Last, `gpustarve dump` in
text, --json and --summary form on the small trace (wall time, events/s).

Targets (docs/performance.md, "Report"): >= 20M events/s on one core (aim 50); peak memory that
does not grow with the number of events (big vs small), only with the steps
(many vs small).
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
BUILD = os.environ.get("BUILD", os.path.join(ROOT, "build"))
GS = os.environ.get("GS_CLI") or os.path.join(BUILD, "gpustarve")


def gen_binary(tmp):
    exe = os.path.join(BUILD, "bench", "gen_bigtrace")
    if os.access(exe, os.X_OK):
        return exe
    exe = os.path.join(tmp, "gen_bigtrace")
    trace = sorted(os.path.join(ROOT, "trace", f) for f in os.listdir(os.path.join(ROOT, "trace"))
                   if f.endswith(".c"))
    subprocess.run([os.environ.get("CC", "cc"), "-std=gnu11", "-O2", "-D_GNU_SOURCE",
                    "-I" + os.path.join(ROOT, "trace"), "-o", exe,
                    os.path.join(ROOT, "bench", "gen_bigtrace.c")] + trace + ["-lzstd", "-lm"],
                   check=True)
    return exe


def du(path):
    return sum(os.path.getsize(os.path.join(path, f)) for f in os.listdir(path))


def run_report(d):
    """The report's JSON (one run, which also warms the page cache)."""
    p = subprocess.run([GS, "report", "--json", "--cores", "8", d], capture_output=True)
    if p.returncode != 0:
        sys.exit("gpustarve report failed on %s: %s" % (d, p.stderr.decode()[-500:]))
    return json.loads(p.stdout)


def measure(d, cmd=("report", "--json", "--cores", "8")):
    """(wall s, user s, sys s, peak RSS bytes) of one `gpustarve CMD d`
    (output to /dev/null), from wait4."""
    pid = os.fork()
    if pid == 0:
        fd = os.open(os.devnull, os.O_WRONLY)
        os.dup2(fd, 1)
        os.execv(GS, [GS] + list(cmd) + [d])
    t0 = time.perf_counter()
    _, status, ru = os.wait4(pid, 0)
    wall = time.perf_counter() - t0
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit("gpustarve %s failed on %s" % (cmd[0], d))
    return wall, ru.ru_utime, ru.ru_stime, ru.ru_maxrss * 1024


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--events", type=float, default=50e6, help="events of the big trace")
    ap.add_argument("--steps", type=int, default=2000)
    ap.add_argument("--workers", type=int, default=4)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--keep", metavar="DIR", help="generate into DIR and keep it")
    a = ap.parse_args()
    if not os.access(GS, os.X_OK):
        sys.exit("%s missing: make build/gpustarve" % GS)
    tmp = a.keep or tempfile.mkdtemp(prefix="gs-bench-report-")
    os.makedirs(tmp, exist_ok=True)
    free = shutil.disk_usage(tmp).free
    need = int(a.events * 7)  # ~5 compressed bytes per event, with room
    if free < need:
        sys.exit("bench_report: %s has %.0f MB free, needs ~%.0f MB" % (tmp, free / 1e6, need / 1e6))
    gen = gen_binary(tmp)
    big = int(a.events)
    cases = [("big", big, a.steps), ("small", big // 10, a.steps), ("many", big // 10, a.steps * 10)]
    print("gpustarve report: throughput and peak memory (%s)" % GS)
    print("%-6s %12s %7s %9s %10s %8s %8s %12s %12s %9s" % (
        "trace", "events", "steps", "MB on disk", "B/event", "wall s", "user s",
        "Mev/s wall", "Mev/s user", "peak MB"))
    rows = {}
    try:
        for name, ev, steps in cases:
            d = os.path.join(tmp, name)
            if not os.path.isdir(d):
                t = time.perf_counter()
                subprocess.run([gen, d, str(ev), str(steps), str(a.workers)], check=True,
                               stdout=subprocess.DEVNULL)
                gen_s = time.perf_counter() - t
            else:
                gen_s = 0
            rep = run_report(d)
            events = rep["run"]["events"]
            best = None
            for _ in range(a.repeat):
                m = measure(d)
                if best is None or m[1] + m[2] < best[1] + best[2]:
                    best = m
            wall, user, sys_s, rss = best
            size = du(d)
            rows[name] = (events, rss)
            print("%-6s %12d %7d %9.1f %10.2f %8.2f %8.2f %12.1f %12.1f %9.1f" % (
                name, events, rep["steps"]["count"], size / 1e6, size / events, wall, user,
                events / wall / 1e6, events / user / 1e6 if user else 0, rss / 1e6))
            if gen_s:
                print("       (generated in %.1f s)" % gen_s)
        # dump: every event printed (the small trace; best of --repeat)
        small = os.path.join(tmp, "small")
        for mode in ([], ["--json"], ["--summary"]):
            wall = min(measure(small, ["dump"] + mode)[0] for _ in range(a.repeat))
            print("dump %-9s small: %.2f s wall, %.1f Mev/s" % (
                " ".join(mode) or "(text)", wall, rows["small"][0] / wall / 1e6))
    finally:
        if not a.keep:
            shutil.rmtree(tmp, ignore_errors=True)
    b, s, m = rows["big"], rows["small"], rows["many"]
    print("peak memory: big/small = %.2fx for %.0fx the events (same steps); "
          "many/small = %.2fx for 10x the steps" % (b[1] / s[1], b[0] / s[0], m[1] / s[1]))
    print("targets: >= 20 Mev/s per core (aim 50); memory independent of the number of events")


if __name__ == "__main__":
    main()
