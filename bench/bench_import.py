#!/usr/bin/env python3
"""bench_import.py — `gpustarve import` throughput and peak memory (`make
bench`; numbers only, no assertion).

  real    the real GPU traces (kept beside the repository:
          tests/import/real_traces.py; GS_REAL_TRACES=DIR, left out with
          one line when absent), plain JSON and the same gzipped: MB of JSON
          per second of the child's CPU time (user + system: the import is
          single-threaded, so this is the one-core figure), and the child's
          peak resident memory
  libs    the JSON libraries Debian ships, on one real trace (build/bench/
          json_libs, built when libyajl-dev, libcjson-dev and libjson-c-dev
          are installed): yajl as a SAX stream, cJSON and json-c into trees
  big     generated traces of about 100 MB and 400 MB (tests/import/
          mkkineto.py --pad): the same figures; peak memory should not grow
          with the size (the sort spills past --mem, 64 MB by default)

Targets (docs/import.md, "Memory and speed"): >= 100 MB/s of JSON on one core; peak memory
independent of trace size. Wall time is printed too, but on a loaded
machine only CPU time says what one core does.
"""
import gzip
import lzma
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
BUILD = os.environ.get("BUILD", os.path.join(ROOT, "build"))
GS = os.environ.get("GS_CLI") or os.path.join(BUILD, "gpustarve")
sys.path.insert(0, os.path.join(ROOT, "tests", "import"))
import real_traces  # noqa: E402

CHILD = ("import resource, subprocess, sys, time; t = time.monotonic(); "
         "r = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL); w = time.monotonic() - t; "
         "u = resource.getrusage(resource.RUSAGE_CHILDREN); "
         "print(r.returncode, u.ru_utime + u.ru_stime, w, u.ru_maxrss)")


def measure(args, repeat=3):
    """Best CPU seconds, its wall seconds, and the largest peak RSS (KB) over
    `repeat` runs, each in a fresh wrapper so that the rusage is the child's."""
    best = None
    rss = 0
    for _ in range(repeat):
        out = subprocess.run([sys.executable, "-c", CHILD] + args, capture_output=True,
                             text=True, check=True).stdout.split()
        if out[0] != "0":
            raise SystemExit("failed: %s" % " ".join(args))
        cpu, wall, kb = float(out[1]), float(out[2]), int(out[3])
        rss = max(rss, kb)
        if best is None or cpu < best[0]:
            best = (cpu, wall)
    return best[0], best[1], rss


def import_once(src, tmp, extra=()):
    out = os.path.join(tmp, "run")
    shutil.rmtree(out, ignore_errors=True)
    return [GS, "import", "-q", "-o", out] + list(extra) + [src]


def row(label, mb, cpu, wall, kb):
    print("  %-34s %8.1f MB  %7.0f MB/s cpu  %6.2f s cpu  %6.2f s wall  peak %6.1f MB"
          % (label, mb, mb / cpu if cpu else 0, cpu, wall, kb / 1024))


def main():
    if not os.access(GS, os.X_OK):
        raise SystemExit("%s missing: run make first" % GS)
    tmp = tempfile.mkdtemp(prefix="gs-bench-import-")
    try:
        plain = {}
        if real_traces.present():
            print("gpustarve import: real PyTorch profiler traces (best of 3)")
        else:
            print("gpustarve import: real traces left out: %s" % real_traces.absent_why())
        for name in real_traces.REAL if real_traces.present() else []:
            p = os.path.join(tmp, name + ".json")
            with lzma.open(real_traces.path(name), "rb") as f, open(p, "wb") as g:
                shutil.copyfileobj(f, g)
            gz = p + ".gz"
            with open(p, "rb") as f, gzip.open(gz, "wb", compresslevel=6) as g:
                shutil.copyfileobj(f, g)
            plain[name] = p
            mb = os.path.getsize(p) / 1e6
            for label, src in ((name, p), (name + " (.gz)", gz)):
                cmd = import_once(src, tmp)
                cpu, wall, kb = measure(["sh", "-c", 'rm -rf "$0" && exec "$@"',
                                         cmd[4]] + cmd)
                row(label, mb, cpu, wall, kb)
        libs = os.path.join(BUILD, "bench", "json_libs")
        if not plain:
            print("JSON libraries: skipped (they run on a real trace)")
        elif os.access(libs, os.X_OK):
            name = "hta_a100_dataloader"
            print("JSON libraries on %s (%.1f MB), one core:" % (name,
                                                                os.path.getsize(plain[name]) / 1e6))
            best = {}
            for _ in range(3):
                for line in subprocess.run([libs, plain[name]], capture_output=True, text=True,
                                           check=True).stdout.splitlines():
                    lib, v = line.split()
                    best[lib] = max(best.get(lib, 0), float(v))
            for lib, v in best.items():
                print("  %-34s %7.0f MB/s cpu" % (lib, v))
        else:
            print("JSON libraries: skipped (install libyajl-dev libcjson-dev libjson-c-dev, "
                  "then make bench-bins)")
        print("gpustarve import: generated traces (tests/import/mkkineto.py --pad)")
        mk = os.path.join(ROOT, "tests", "import", "mkkineto.py")
        # (steps, kernels per step, --mem): the last one keeps 500k records,
        # 48 MB of them, sorted with 8 MB in memory: spilled runs and a merge
        for steps, kernels, mem in ((250, 50, 64), (1000, 50, 64), (1000, 500, 8)):
            p = os.path.join(tmp, "gen%d.json" % steps)
            t = time.monotonic()
            subprocess.run([sys.executable, mk, "--steps", str(steps), "--pad", "1500",
                            "--kernels", str(kernels), p], check=True)
            mb = os.path.getsize(p) / 1e6
            cmd = import_once(p, tmp, ("--mem", str(mem)))
            cpu, wall, kb = measure(["sh", "-c", 'rm -rf "$0" && exec "$@"', cmd[4]] + cmd,
                                    repeat=2)
            row("%d steps x %d kernels, --mem %d" % (steps, kernels, mem), mb, cpu, wall, kb)
            print("  %-34s (generated in %.0f s)" % ("", time.monotonic() - t))
            os.unlink(p)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
