#!/usr/bin/env python3
"""The whole cost per event (`make bench`): CPU time of every thread of a
traced process (the hooks, the writer thread draining the rings, encoding
and compressing frames, start-up and exit) per 4 KiB pread event, by zstd
level; and traced against untraced processes, CPU and wall time. Prints
figures, asserts nothing (docs/performance.md, "The whole cost per event").

Method (build/bench/pread_loop, 4 KiB preads from a 16 MiB file in the page
cache, after one warm-up pass of 4096 preads):

1. In one traced process (--alternate-cpu), blocks of 5000 preads through
   the hook alternate with blocks through libc's own pread: the calling
   thread's CPU time per call (CLOCK_THREAD_CPUTIME_ID), hooked minus libc,
   median over pairs = the hook's cost on the calling thread. The process's
   CPU time of all threads (wait4) minus the calling thread's = the writer
   thread and the exit flush, divided by the events the process recorded.
   Their sum is the whole cost per event. Both halves run in the same
   multi-threaded process, so machine load shifts them alike.
2. Separate processes, rounds alternating untraced / untraced with one idle
   extra thread (sharing the descriptor table, or with one of its own) /
   traced at each level (order rotating by round): the CPU
   time of all threads (wait4) and the wall time, per round traced minus
   untraced of the same round, median [min, max] over rounds. Noisier: two
   processes never see the same machine.
3. build/bench/frame_cost: the writer's encoding and compression of one
   traced run's frames, offline, by level (thread CPU time).

A level "default" leaves GPUSTARVE_ZSTD_LEVEL unset: the collector's own
choice (level -3; frames made almost only of runs of repeated calls stored
when at most 3.5 bytes per event, else at -100: docs/performance.md,
"Compression of runs"). Table 3 also shows "level store" (every frame
stored).

With --other-lib PATH, tables 1 and 2 also have "other lib": the same
traced run through another build of libgpustarve.so (an older commit, built
elsewhere; at the first level), in the same rounds, so that two versions are
compared under the same load.

Usage: bench_cost.py [--rounds N] [--calls N] [--levels=default,-3,1,3] [--other-lib PATH]
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

from bench_collector import B, LIB, env  # the same build, the same clean environment

LOOP = os.path.join(B, "bench", "pread_loop")
FRAME_COST = os.path.join(B, "bench", "frame_cost")
BLOB_BYTES = 16 << 20
WARM_CALLS = BLOB_BYTES // 4096  # pread_loop's warm-up pass


def run_once(blob, calls, extra, environ):
    """(wall s, CPU s of all threads, loop's thread CPU ns per call) of one run."""
    t0 = time.perf_counter()
    p = subprocess.Popen([LOOP, blob, str(calls)] + extra, env=environ,
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    out = p.stdout.read()
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t0
    p.stdout.close()
    p.returncode = 0  # reaped above
    if status != 0:
        raise SystemExit("bench_cost: pread_loop failed (status %d)" % status)
    loop_cpu = float(out.split()[1])
    return wall, ru.ru_utime + ru.ru_stime, loop_cpu


def trace_bytes(run_dir):
    return sum(os.path.getsize(os.path.join(run_dir, f)) for f in os.listdir(run_dir))


def stats(v):
    return "%7.1f  [%6.1f, %6.1f]" % (statistics.median(v), min(v), max(v))


def load():
    try:
        with open("/proc/loadavg") as f:
            return " ".join(f.read().split()[:3])
    except OSError:
        return "?"


def level_env(level, **kw):
    """env() for a traced run at level ("default": GPUSTARVE_ZSTD_LEVEL unset)."""
    if level != "default":
        kw["GPUSTARVE_ZSTD_LEVEL"] = level
    return env(**kw)


def alternate_cpu(blob, calls, level, run, lib=LIB):
    """(hook CPU ns/call on the calling thread, other threads' CPU ns per
    recorded event, trace bytes per event) of one --alternate-cpu run."""
    p = subprocess.Popen([LOOP, blob, str(calls), "--alternate-cpu"], stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL,
                         env=level_env(level, LD_PRELOAD=lib, GPUSTARVE_DIR=run))
    out = p.stdout.read().split()
    _, status, ru = os.wait4(p.pid, 0)
    p.stdout.close()
    p.returncode = 0  # reaped above
    if status != 0 or len(out) != 8:
        raise SystemExit("bench_cost: pread_loop --alternate-cpu failed (status %d)" % status)
    hook_cpu, hooked, main_cpu = float(out[5]), int(out[6]), float(out[7])
    recorded = hooked + WARM_CALLS
    other = ((ru.ru_utime + ru.ru_stime) * 1e9 - main_cpu) / recorded
    return hook_cpu, other, trace_bytes(run) / recorded


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--calls", type=int, default=1_000_000)
    ap.add_argument("--levels", default="default,-3,-5,-1,1,3",
                    help="zstd levels, comma-separated, 'default' for the collector's own "
                         "choice (give as --levels=default,-3,1)")
    ap.add_argument("--other-lib", default="",
                    help="another libgpustarve.so, traced at the first level in tables 1 and 2")
    a = ap.parse_args()
    if a.other_lib and not os.path.isfile(a.other_lib):
        print("bench_cost: --other-lib %s: no such file" % a.other_lib, file=sys.stderr)
        return 2
    levels = [x if x == "default" else str(int(x)) for x in a.levels.split(",") if x]
    events = a.calls + WARM_CALLS
    with tempfile.TemporaryDirectory(prefix="gs_cost_") as tmp:
        blob = os.path.join(tmp, "blob")
        with open(blob, "wb") as f:
            f.write(os.urandom(BLOB_BYTES))
        print("whole cost per event, 4 KiB page-cache preads (bench/bench_cost.py); load average "
              "%s at the start" % load())
        print("1. one traced process, hooked and libc blocks alternating (%d calls); %d rounds of "
              "one run per level; CPU ns per event, median [min, max] of runs" % (a.calls, a.rounds))
        print("  %-9s %-24s %-24s %-24s %s" % ("level", "hook (calling thread)",
                                              "writer thread + exit", "whole", "bytes/ev"))
        keep = None
        rows1 = list(levels) + (["other lib"] if a.other_lib else [])
        per = {lv: ([], [], [], []) for lv in rows1}  # hook, other, whole, bytes
        for r in range(a.rounds):
            k = r % len(rows1)
            for lv in rows1[k:] + rows1[:k]:  # every row each round, the order rotating
                run = os.path.join(tmp, "alt%d_%s" % (r, lv.replace(" ", "_")))
                if lv == "other lib":
                    h, o, b = alternate_cpu(blob, a.calls, levels[0], run, a.other_lib)
                else:
                    h, o, b = alternate_cpu(blob, a.calls, lv, run)
                for v, x in zip(per[lv], (h, o, h + o, b)):
                    v.append(x)
                if keep is None and lv == levels[0]:
                    keep = max((os.path.join(run, f) for f in os.listdir(run)),
                               key=os.path.getsize)
        for lv in rows1:
            hook, other, whole, size = per[lv]
            print("  %-9s %-24s %-24s %-24s %.2f" % (lv, stats(hook), stats(other), stats(whole),
                                                     statistics.median(size)))
        print("  (not in these figures: what any second thread costs a single-threaded "
              "program's own calls, glibc's cancellation bookkeeping; the kernel's shared-table "
              "file references, 'idle thread' against 'idle, own fd table' in 2., are not paid: "
              "the collector's threads keep descriptor tables of their own while no GPU source "
              "runs; a multi-threaded program's table is shared anyway, so nothing changes for "
              "it)")

        configs = [("untraced", [], None), ("idle thread", ["--idle-thread"], None),
                   ("idle, own fd table", ["--idle-thread-own-table"], None)]
        configs += [("traced, level %s" % lv, [], lv) for lv in levels]
        if a.other_lib:
            configs.append(("other lib, lv %s" % levels[0], [], levels[0]))
        res = {name: [] for name, _, _ in configs}
        size = {name: [] for name, _, _ in configs}
        fixed = []  # traced minus untraced CPU s of a process with no timed calls
        for r in range(a.rounds):
            k = r % len(configs)
            for name, extra, lv in configs[k:] + configs[:k]:
                if lv is None:
                    e = env()
                else:
                    run = os.path.join(tmp, "run%d_%s" % (r, lv))
                    lib = a.other_lib if name.startswith("other lib") else LIB
                    e = level_env(lv, LD_PRELOAD=lib, GPUSTARVE_DIR=run + name[0])
                res[name].append(run_once(blob, a.calls, extra, e))
                if lv is not None:
                    size[name].append(trace_bytes(run + name[0]) / events)
            _, u0, _ = run_once(blob, 0, [], env())
            _, t0, _ = run_once(blob, 0, [], level_env(levels[0], LD_PRELOAD=LIB, GPUSTARVE_DIR=os.path.join(
                tmp, "fixed%d" % r)))
            fixed.append((t0 - u0) * 1e3)
        print("2. separate processes, %d preads each, %d rounds alternating every configuration; "
              "ns per event, median [min, max] of the per-round differences to the untraced run"
              % (events, a.rounds))
        print("  %-18s %-24s %-24s %-24s %s" % (
            "configuration", "CPU all threads", "calling thread", "wall", "bytes/ev"))
        base = res["untraced"]
        for name, _, lv in configs:
            rows = res[name]
            if name == "untraced":
                print("  %-18s %-24s %-24s %-24s" % (
                    name, "%7.1f (absolute)" % statistics.median(c * 1e9 / events for _, c, _ in rows),
                    "%7.1f (absolute)" % statistics.median(l for _, _, l in rows),
                    "%7.1f (absolute)" % statistics.median(w * 1e9 / events for w, _, _ in rows)))
                continue
            cpu = [(c - bc) * 1e9 / events for (_, c, _), (_, bc, _) in zip(rows, base)]
            own = [(l - bl) * a.calls / events for (_, _, l), (_, _, bl) in zip(rows, base)]
            wall = [(w - bw) * 1e9 / events for (w, _, _), (bw, _, _) in zip(rows, base)]
            print("  %-18s %-24s %-24s %-24s %s" % (
                name, stats(cpu), stats(own), stats(wall),
                "%.2f" % statistics.median(size[name]) if size[name] else ""))
        print("  start-up and exit of the collector (a process with only the %d warm-up preads, "
              "level %s): %.2f ms of CPU, median [%.2f, %.2f]; %.1f ns/event of the figures above"
              % (WARM_CALLS, levels[0], statistics.median(fixed), min(fixed), max(fixed),
                 statistics.median(fixed) * 1e6 / events))
        if keep and os.path.exists(FRAME_COST):
            print("3. the writer's work per event, offline on one traced run's frames "
                  "(build/bench/frame_cost, thread CPU time, median of 5 passes):")
            nums = set(int(lv) for lv in levels if lv != "default") | {5, -100}
            out = subprocess.run([FRAME_COST, keep] + [str(lv) for lv in sorted(nums)] + ["store"],
                                 capture_output=True, text=True, check=True).stdout
            for line in out.splitlines()[1:]:
                print("  " + line)
        if a.other_lib:
            print("  other lib: %s" % a.other_lib)
        print("load average at the end: %s" % load())
    return 0


if __name__ == "__main__":
    sys.exit(main())
