#!/usr/bin/env python3
"""bench_report.py — `gpustarve report` throughput and peak memory on large
generated traces (`make bench`; numbers only, no assertion).

Generates, once per invocation, into a temporary directory:
  big     50M events, 2000 steps of 100 ms (1 trainer, 4 forked loader workers)
  small    5M events, the same 2000 steps (10x fewer events per step)
  many     5M events, 20000 steps (10x the steps)
with bench/gen_bigtrace.c (through the trace API: the collector's frame size
and zstd level, jittered times so that it compresses like a real run).
Then times `gpustarve report --json --threads 1` on each (best of --repeat
runs): wall and user CPU seconds of the child, events per second per core,
and the child's peak resident memory (wait4 rusage). Then `gpustarve dump`
in text, --json and --summary form on the small trace (wall time, events/s).

Last, a distributed job (--ranks ranks x --workers-job workers, 64 x 8 = 576
files, --job-events in all) and the same job at half the events per file:
`report --json` with --threads 1 and --threads 2 (and --baseline GS, an
older build, as it runs; the runs alternate; best wall of --repeat runs
each): wall, user and system CPU, events/s of wall and per CPU second, peak
RSS; the reports of 1 and 2 threads must be byte-identical.

Targets (docs/performance.md, "Report"): >= 20M events/s on one core (aim
50); >= 50M events/s of wall on 2 cores for the job; peak memory that does
not grow with the number of events (big vs small, job vs half job), only with
the steps (many vs small).
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


def run_report(d, threads=1):
    """The report's JSON text (one run, which also warms the page cache)."""
    p = subprocess.run([GS, "report", "--json", "--cores", "8", "--threads", str(threads), d],
                       capture_output=True)
    if p.returncode != 0:
        sys.exit("gpustarve report failed on %s: %s" % (d, p.stderr.decode()[-500:]))
    return p.stdout


def measure(d, cmd=("report", "--json", "--cores", "8", "--threads", "1"), gs=GS):
    """(wall s, user s, sys s, peak RSS bytes) of one `gpustarve CMD d`
    (output to /dev/null), from wait4."""
    pid = os.fork()
    if pid == 0:
        fd = os.open(os.devnull, os.O_WRONLY)
        os.dup2(fd, 1)
        os.execv(gs, [gs] + list(cmd) + [d])
    t0 = time.perf_counter()
    _, status, ru = os.wait4(pid, 0)
    wall = time.perf_counter() - t0
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit("gpustarve %s failed on %s" % (cmd[0], d))
    return wall, ru.ru_utime, ru.ru_stime, ru.ru_maxrss * 1024


def load_line():
    with open("/proc/loadavg") as f:
        return "load average %s (%d CPUs)" % (" ".join(f.read().split()[:3]), os.cpu_count())


def bench_job(gen, tmp, a):
    """The multi-file job: threads 1 vs 2; returns {(name, threads): row}."""
    ranks, workers, steps = a.ranks, a.workers_job, a.job_steps
    cases = [("job", int(a.job_events)), ("job/2", int(a.job_events) // 2)]
    print()
    print("report of a job: %d ranks x (1 trainer + %d workers) = %d files, %d steps "
          "(best wall of %d runs; %s)" % (ranks, workers, ranks * (workers + 1), steps, a.repeat,
                                          load_line()))
    print("%-6s %11s %9s %7s %7s %7s %7s %11s %11s %8s" % (
        "job", "events", "MB on disk", "threads", "wall s", "user s", "sys s", "Mev/s wall",
        "Mev/s CPU", "peak MB"))
    rows = {}
    for name, ev in cases:
        d = os.path.join(tmp, name.replace("/", "_"))
        if not os.path.isdir(d):
            subprocess.run([gen, d, str(ev), str(steps), str(workers), str(ranks),
                            str(a.job_collectives)], check=True, stdout=subprocess.DEVNULL)
        one = run_report(d, 1)
        if run_report(d, 2) != one:
            sys.exit("bench_report: %s: --threads 2 wrote another report than --threads 1" % d)
        events = json.loads(one)["run"]["events"]
        size = du(d)
        # the runs alternate (1, 2[, baseline], 1, 2, ...) so that a change of
        # the machine's load falls on each alike
        kinds = [1, 2] + (["base"] if a.baseline else [])
        runs = {k: [] for k in kinds}
        for _ in range(a.repeat):
            for k in kinds:
                if k == "base":
                    runs[k].append(measure(d, ("report", "--json", "--cores", "8"), a.baseline))
                else:
                    runs[k].append(measure(d, ("report", "--json", "--cores", "8", "--threads",
                                               str(k))))
        for k in kinds:
            wall, user, sys_s, rss = min(runs[k], key=lambda m: m[0])
            rows[name, k] = (events, wall, user + sys_s, rss)
            print("%-6s %11d %9.1f %7s %7.2f %7.2f %7.2f %11.1f %11.1f %8.1f" % (
                name, events, size / 1e6, k, wall, user, sys_s, events / wall / 1e6,
                events / (user + sys_s) / 1e6, rss / 1e6))
    j1, j2, h2 = rows["job", 1], rows["job", 2], rows["job/2", 2]
    print("job: 2 threads %.2fx the events/s of 1 (wall); peak memory job/(job/2) = %.2fx for "
          "%.1fx the events per file" % (j1[1] / j2[1], j2[3] / h2[3], j2[0] / h2[0]))
    print("target: >= 50 Mev/s of wall on 2 cores; the same report for any --threads")
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--events", type=float, default=50e6, help="events of the big trace")
    ap.add_argument("--steps", type=int, default=2000)
    ap.add_argument("--workers", type=int, default=4)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--keep", metavar="DIR", help="generate into DIR and keep it")
    ap.add_argument("--job-events", type=float, default=50e6, help="events of the job")
    ap.add_argument("--ranks", type=int, default=64)
    ap.add_argument("--workers-job", type=int, default=8, help="loader workers per rank")
    ap.add_argument("--job-steps", type=int, default=500)
    ap.add_argument("--job-collectives", type=int, default=0,
                    help="NCCL all-reduces a step in every rank of the job (default 0)")
    ap.add_argument("--only-job", action="store_true", help="only the job (threads 1 vs 2)")
    ap.add_argument("--baseline", metavar="GS",
                    help="also time this gpustarve (an older build; run without --threads) "
                         "on the job")
    a = ap.parse_args()
    if not os.access(GS, os.X_OK):
        sys.exit("%s missing: make build/gpustarve" % GS)
    tmp = a.keep or tempfile.mkdtemp(prefix="gs-bench-report-")
    os.makedirs(tmp, exist_ok=True)
    free = shutil.disk_usage(tmp).free
    need = int((0 if a.only_job else a.events) * 7 + a.job_events * 1.5 * 7)
    # ~5 compressed bytes per event, with room
    if free < need:
        sys.exit("bench_report: %s has %.0f MB free, needs ~%.0f MB" % (tmp, free / 1e6, need / 1e6))
    gen = gen_binary(tmp)
    if a.only_job:
        try:
            bench_job(gen, tmp, a)
        finally:
            if not a.keep:
                shutil.rmtree(tmp, ignore_errors=True)
        return
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
            rep = json.loads(run_report(d))
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
        bench_job(gen, tmp, a)
    finally:
        if not a.keep:
            shutil.rmtree(tmp, ignore_errors=True)
    b, s, m = rows["big"], rows["small"], rows["many"]
    print("peak memory: big/small = %.2fx for %.0fx the events (same steps); "
          "many/small = %.2fx for 10x the steps" % (b[1] / s[1], b[0] / s[0], m[1] / s[1]))
    print("targets: >= 20 Mev/s per core (aim 50); memory independent of the number of events")


if __name__ == "__main__":
    main()
