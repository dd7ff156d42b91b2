"""Shared helpers for the end-to-end tests: where the build is, how to run a
command under `gpustarve run`, and how to read a run back through
`gpustarve dump --json`."""
import json
import os
import random
import subprocess
import sys

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BUILD = os.path.join(ROOT, "build")
CLI = os.path.join(BUILD, "gpustarve")
LIB = os.path.join(BUILD, "libgpustarve.so")
PY = "/usr/bin/python3"  # Debian's interpreter, with Debian's torch
READ_DATASET = os.path.join(BUILD, "examples", "read_dataset")

READ_KINDS = {"read", "pread", "pread64", "readv", "preadv", "preadv64", "preadv2",
              "preadv64v2", "__read_chk", "__pread_chk", "__pread64_chk"}


def clean_env(**extra):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("GPUSTARVE_") and k != "LD_PRELOAD"}
    env.update(extra)
    return env


def run_traced(cmd, run_dir, env=None, timeout=300, **kw):
    """Runs cmd under `gpustarve run -o run_dir`; returns CompletedProcess."""
    return subprocess.run([CLI, "run", "-o", str(run_dir), "--"] + list(cmd),
                          env=env or clean_env(), capture_output=True, timeout=timeout, **kw)


def run_plain(cmd, env=None, timeout=300, **kw):
    return subprocess.run(list(cmd), env=env or clean_env(), capture_output=True,
                          timeout=timeout, **kw)


def dump(run_dir, check=True):
    """Returns (records, stderr, returncode) of `gpustarve dump --json`."""
    p = subprocess.run([CLI, "dump", "--json", str(run_dir)], capture_output=True, timeout=300)
    if check and p.returncode != 0:
        raise AssertionError("dump failed (%d): %s" % (p.returncode, p.stderr.decode()))
    recs = [json.loads(line) for line in p.stdout.decode().splitlines() if line.strip()]
    return recs, p.stderr.decode(), p.returncode


def bytes_read_by_path(recs, prefix):
    """Bytes moved by read-family calls and fread, per path under prefix."""
    out = {}
    for r in recs:
        path = r.get("path")
        if not path or not path.startswith(prefix):
            continue
        if r["kind"] in READ_KINDS:
            n = max(r["ret"], 0)
        elif r["kind"] in ("fread", "fread_unlocked"):
            n = r["ret"] * r["size"]
        else:
            continue
        out[path] = out.get(path, 0) + n
    return out


def make_files(root, n, seed, lo=1, hi=200_000):
    """n files of seeded random sizes; returns {path: size}."""
    rng = random.Random(seed)
    os.makedirs(root, exist_ok=True)
    sizes = {}
    for i in range(n):
        size = rng.randint(lo, hi)
        path = os.path.join(str(root), "f%05d.bin" % i)
        with open(path, "wb") as f:
            f.write(rng.randbytes(size))
        sizes[path] = size
    return sizes


@pytest.fixture(scope="session")
def built():
    for p in (CLI, LIB, READ_DATASET):
        if not os.path.exists(p):
            pytest.fail("%s is missing: run `make` first" % p)
    return True


@pytest.fixture(scope="session")
def dataset(tmp_path_factory):
    root = tmp_path_factory.mktemp("dataset")
    return str(root), make_files(root, 300, seed=20261129)
