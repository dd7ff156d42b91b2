"""Fixtures of the analyzer scenario tests: the gpustarve binary, the scenario
generator (gen_scenario.c, compiled here against trace/*.c), and a small
builder that describes a run in Python and writes it as real trace files.

Run with: /usr/bin/python3 -m pytest tests/analyzer   (after `make build/gpustarve`)
"""
import json
import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import gstest  # noqa: E402  (tests/gstest.py: the helpers all suites share)
from gstest import ROOT, clean_env, gs  # noqa: E402,F401  (re-exported to the tests; gs: the CLI fixture)

HERE = os.path.dirname(os.path.abspath(__file__))
# GS_CLI selects another build of the CLI (make test-san runs these tests with
# the AddressSanitizer + UBSan one).
GS = gstest.CLI

MS = 1000000  # ns

# aux of gpu_memcpy / cuda_memcpy: direction | source (host) kind << 8
HTOD, DTOH = 1, 2
PAGEABLE, PINNED, DEVICE = 1, 2, 3
FILE, PIPE, SOCKET = 1, 2, 3


@pytest.fixture(scope="session")
def gen(tmp_path_factory):
    out = tmp_path_factory.mktemp("gen") / "gen_scenario"
    return gstest.build_c(out, [os.path.join(HERE, "gen_scenario.c")])


class Proc:
    """One process image: strings, and events kept in the order given (the
    order they are written in the file)."""

    def __init__(self, pid, ppid, argv, exec_seq=0, forked=False, version=None, host=None,
                 rank=None, local=None, world=None, real=None):
        self.pid, self.ppid, self.argv = pid, ppid, argv
        self.exec_seq, self.forked, self.version = exec_seq, forked, version
        self.host, self.rank, self.local, self.world = host, rank, local, world
        self.real = real
        self.strings = {}
        self.lines = []
        self.cur_tid = None

    def s(self, text):
        if text not in self.strings:
            sid = len(self.strings) + 1
            self.strings[text] = sid
            self.lines.append("string %d %s" % (sid, text))
        return self.strings[text]

    def ev(self, tid, kind, **f):
        if "str" in f and isinstance(f["str"], str):
            f["str"] = self.s(f["str"])
        if tid != self.cur_tid:
            self.lines.append("tid %d" % tid)
            self.cur_tid = tid
        self.lines.append("ev %s %s" % (kind, " ".join("%s=%d" % (k, int(v))
                                                        for k, v in f.items())))

    def frame(self):
        self.lines.append("frame")

    # conveniences -----------------------------------------------------------
    def kernel(self, t0, t1, name="gemm_kernel", stream=7, dev=0):
        self.ev(self.pid, "gpu_kernel", ts=t0, dur=t1 - t0, str=name, dev=dev, stream=stream)

    def gpu_copy(self, t0, t1, nbytes, kind=PINNED, direction=HTOD, stream=7, dev=0):
        self.ev(self.pid, "gpu_memcpy", ts=t0, dur=t1 - t0, bytes=nbytes,
                aux=direction | kind << 8 | DEVICE << 16, dev=dev, stream=stream)

    def cuda_copy(self, tid, t0, t1, nbytes, kind=PAGEABLE, direction=HTOD):
        self.ev(tid, "cuda_memcpy", ts=t0, dur=t1 - t0, str="cudaMemcpy", bytes=nbytes,
                ret=0, aux=direction | kind << 8)

    def poll(self, tid, t0, t1, fd=5):
        self.ev(tid, "poll", ts=t0, dur=t1 - t0, fd=fd, fdk=PIPE, bytes=1, ret=1, aux=0)

    def pipe_read(self, tid, t0, t1, nbytes=4, fd=5):
        self.ev(tid, "read", ts=t0, dur=t1 - t0, fd=fd, fdk=PIPE, bytes=nbytes)

    def file_read(self, tid, t0, t1, nbytes, path="/data/shard0", fd=9, off=0):
        self.ev(tid, "pread64", ts=t0, dur=t1 - t0, fd=fd, fdk=FILE, str=path,
                bytes=nbytes, off=off)

    def config(self, tid, t, key, value, loader=0):
        self.ev(tid, "config", ts=t, str="%s=%s" % (key, value), aux=loader)

    def text(self):
        head = "proc %d %d" % (self.pid, self.ppid)
        if self.exec_seq:
            head += " exec=%d" % self.exec_seq
        if self.forked:
            head += " forked"
        if self.version:
            head += " version=%s" % self.version
        for key, v in (("host", self.host), ("rank", self.rank), ("local", self.local),
                       ("world", self.world), ("real", self.real)):
            if v is not None:
                head += " %s=%s" % (key, v)
        return "\n".join([head + " -- " + self.argv] + self.lines) + "\n"


class Scenario:
    def __init__(self):
        self.procs = []

    def proc(self, pid, ppid, argv="python train.py", **kw):
        p = Proc(pid, ppid, argv, **kw)
        self.procs.append(p)
        return p

    def write(self, gen, outdir):
        os.makedirs(outdir, exist_ok=True)
        text = "".join(p.text() for p in self.procs)
        p = gstest.run([gen, outdir], input=text.encode())
        assert p.returncode == 0, p.stderr.decode()
        return outdir


def run_report(gs, d, *args, env=None):
    return gstest.run([gs, "report"] + list(args) + [str(d)], env=env, text=True)


def report_json(gs, d, *args):
    r = run_report(gs, d, "--json", *args)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)
