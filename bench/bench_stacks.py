#!/usr/bin/env python3
"""Call-stack benchmark (`make bench`; docs/performance.md): the read hook's added cost
with GPUSTARVE_STACKS=1 at its defaults (first 8 calls of each caller
unwound, then 1 in 64; depth 16) against the same hook with stacks off.

Method: build/bench/pread_loop FILE CALLS --alternate, preloaded, does 4 KiB
preads from a file in the page cache, alternating blocks of 5000 calls
through the hooked pread with blocks through libc's own pread; it prints
"traced untraced added" ns per call (medians over blocks). Runs with stacks
off and on are interleaved; the median of each is reported, and their
ratio. In this loop every call has the same caller address, so after the
first 8 calls only 1 in 64 is unwound (the others carry that stack).

Target: added cost with stacks on <= 2x added cost with stacks off.
"""
import os
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
B = os.path.join(ROOT, "build")
LIB = os.path.join(B, "libgpustarve.so")
LOOP = os.path.join(B, "bench", "pread_loop")


def env(**kw):
    e = {k: v for k, v in os.environ.items() if not k.startswith("GPUSTARVE_")
         and k != "LD_PRELOAD"}
    e.update(kw)
    return e


def one(blob, calls, run_dir, stacks):
    extra = {"GPUSTARVE_STACKS": "1"} if stacks else {}
    # as `gpustarve run --stacks` preloads it: libunwind after the library
    pre = LIB + ":libgcc_s.so.1:libunwind.so.8" if stacks else LIB
    out = subprocess.run([LOOP, blob, str(calls), "--alternate"],
                         env=env(LD_PRELOAD=pre, GPUSTARVE_DIR=run_dir, **extra),
                         capture_output=True, check=True).stdout.split()
    return [float(x) for x in out]


def main():
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 7
    calls = int(sys.argv[2]) if len(sys.argv) > 2 else 2_000_000
    with tempfile.TemporaryDirectory(prefix="gs-bench-stacks-") as tmp:
        blob = os.path.join(tmp, "blob")
        with open(blob, "wb") as f:
            f.write(os.urandom(16 << 20))
        off, on, t_off, t_on, plain = [], [], [], [], []
        for r in range(rounds):
            for stacks in (False, True):
                d = os.path.join(tmp, "run%d%s" % (r, "s" if stacks else ""))
                os.mkdir(d)
                t, u, a = one(blob, calls, d, stacks)
                (on if stacks else off).append(a)
                (t_on if stacks else t_off).append(t)
                plain.append(u)
        a_off, a_on = statistics.median(off), statistics.median(on)
        ratio = a_on / a_off if a_off > 0 else float("inf")
        print("read hook with call stacks, 4 KiB page-cache preads: %d runs each way, "
              "alternating blocks of 5000 hooked and libc preads (%d calls)" % (rounds, calls))
        print("  untraced            %7.1f ns/call (median)" % statistics.median(plain))
        print("  stacks off: traced  %7.1f ns/call, added %6.1f ns (min %.1f, max %.1f)" % (
            statistics.median(t_off), a_off, min(off), max(off)))
        print("  stacks on:  traced  %7.1f ns/call, added %6.1f ns (min %.1f, max %.1f)" % (
            statistics.median(t_on), a_on, min(on), max(on)))
        print("  ratio on/off of the added cost  %.2fx  target <= 2x  %s" % (
            ratio, "ok" if ratio <= 2 else "OVER"))


if __name__ == "__main__":
    main()
