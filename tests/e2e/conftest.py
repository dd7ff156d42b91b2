"""Shared helpers for the end-to-end tests: where the build is, how to run a
command under `gpustarve run`, and how to read a run back through
`gpustarve dump --json`."""
import os
import random
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import gstest  # noqa: E402  (tests/gstest.py: the helpers all suites share)
from gstest import (BUILD, CLI, LIB, READ_KINDS, ROOT, clean_env, dump,  # noqa: E402,F401
                    report_json, run_traced)

PY = gstest.DEBIAN_PY  # Debian's interpreter, with Debian's torch
READ_DATASET = os.path.join(BUILD, "examples", "read_dataset")


def run_plain(cmd, env=None, **kw):
    return gstest.run(cmd, env=env, **kw)


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
    gstest.require(CLI, LIB, READ_DATASET)
    return True


@pytest.fixture(scope="session")
def dataset(tmp_path_factory):
    root = tmp_path_factory.mktemp("dataset")
    return str(root), make_files(root, 300, seed=20261129)
