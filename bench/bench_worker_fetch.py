#!/usr/bin/env python3
"""What a DataLoader worker's batch markers cost per batch (`make bench`;
docs/performance.md, "Worker batch markers"): the wrapper gpustarve puts
around a worker's fetch (python/gpustarve/_torch.py _wrap_fetch: the
batch's index from the worker loop's frame, fetch_begin and fetch_end
through ctypes, each with the collector's CPU sample of the thread).
Prints figures, asserts nothing; needs no torch.

Method: the script runs itself under `gpustarve run`. There, a fetcher
whose fetch returns its argument is called from a function named
`_worker_loop` holding `idx` (as torch's worker loop does), in blocks of
5000 calls alternating the wrapped and the bare fetch; the calling thread's
CPU time per call (time.thread_time_ns), wrapped minus bare, median over 15
pairs of blocks, for each interpreter given (default /usr/bin/python3).
Both halves run in the same process, so machine load shifts them alike.

Usage: bench_worker_fetch.py [PYTHON...]
"""
import os
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CLI = os.path.join(ROOT, "build", "gpustarve")
BLOCK, PAIRS = 5000, 15


class Fetcher(object):
    def fetch(self, possibly_batched_index):
        return possibly_batched_index


def _worker_loop(fetcher, n):
    """The shape of torch's worker loop: idx in a local, fetch(index)."""
    a = b = c = d = e = f = g = h = None  # torch's loop has about 25 locals
    t0 = time.thread_time_ns()
    for idx in range(n):
        index = idx
        fetcher.fetch(index)
    return time.thread_time_ns() - t0


def child():
    sys.path.insert(0, os.path.join(ROOT, "python"))
    from gpustarve import _native, _torch
    lb = _native.lib()
    if lb is None:
        print("not traced: run under gpustarve run", file=sys.stderr)
        return 1

    class Wrapped(Fetcher):
        pass
    Wrapped.fetch = _torch._wrap_fetch(Fetcher.fetch, 0, lb)
    bare, wrapped = Fetcher(), Wrapped()
    _worker_loop(bare, BLOCK)
    _worker_loop(wrapped, BLOCK)
    diffs = []
    for _ in range(PAIRS):
        nb = _worker_loop(bare, BLOCK)
        nw = _worker_loop(wrapped, BLOCK)
        diffs.append((nw - nb) / BLOCK)
    print("%s %d.%d: worker batch markers %.0f ns per batch (median of %d pairs of %d; "
          "range %.0f-%.0f)" % (os.path.realpath(sys.executable), sys.version_info[0],
                                sys.version_info[1], statistics.median(diffs), PAIRS, BLOCK,
                                min(diffs), max(diffs)))
    return 0


def main(argv):
    if argv[1:2] == ["--child"]:
        return child()
    pys = argv[1:] or ["/usr/bin/python3"]
    print("load average %.2f %.2f %.2f" % os.getloadavg())
    for py in pys:
        with tempfile.TemporaryDirectory() as d:
            subprocess.run([CLI, "run", "-q", "-o", os.path.join(d, "run"), "--", py,
                            os.path.abspath(__file__), "--child"], check=True)
    print("load average %.2f %.2f %.2f" % os.getloadavg())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
