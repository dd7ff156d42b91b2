"""Shared helpers for the end-to-end tests: where the build is, how to run a
command under `gpustarve run`, and how to read a run back through
`gpustarve dump --json`."""
import os
import random
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import gstest  # noqa: E402  (tests/gstest.py: the helpers all suites share)
from gstest import (BUILD, CLI, LIB, PRELOAD, READ_KINDS, ROOT, clean_env, dump,  # noqa: E402,F401
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


# ---- tests/e2e/advice_regimes.py: its interpreter and data files -------------

REGIMES_PY = os.path.join(ROOT, "tests", "e2e", "advice_regimes.py")
# GS_TRUTH_PYTHON: the interpreter of the PyTorch regimes (default Debian's)
REGIMES_INTERP = os.environ.get("GS_TRUTH_PYTHON") or PY


def random_file(name):
    """A data file of 64 MiB of random bytes under build/, made once."""
    d = os.path.join(BUILD, "tests", "advice-truth")
    os.makedirs(d, exist_ok=True)
    path = os.path.join(d, name)
    if not os.path.exists(path) or os.path.getsize(path) != 64 << 20:
        with open(path + ".tmp", "wb") as f:
            for _ in range(64):
                f.write(os.urandom(1 << 20))
        os.replace(path + ".tmp", path)
    return path


def pool_file():
    """The thread-pool regime's data file; its samples read 64 KiB each,
    warm after the first run."""
    return random_file("pool-64M.bin")


def skip_file():
    """The skip regime's data file (2 MiB records), on disk: its reads
    bypass the page cache (O_DIRECT); skipped where the file system
    refuses O_DIRECT (tmpfs)."""
    path = random_file("skip-64M.bin")
    try:
        os.close(os.open(path, os.O_RDONLY | os.O_DIRECT))
    except OSError as e:
        pytest.skip("the skip regime reads with O_DIRECT, which %s refuses: %s" % (path, e))
    return path
