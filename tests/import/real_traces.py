"""Where the real GPU traces are. They are public PyTorch profiler traces
from other projects (torch-tb-profiler's ResNet-50 samples, Holistic Trace
Analysis's test traces), kept beside the repository, never in it: the
directory GS_REAL_TRACES names, else ../shared/data/real-gpu-traces next to
the repository's root. The README.md there gives each file's upstream path,
commit, checksum and licence. Without the directory the tests that read
them are skipped, with one line saying so (tests/import/conftest.py), and
bench/bench_import.py leaves them out.

Used by tests/import (conftest.py, peers.py) and bench/bench_import.py.
"""
import os

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))

# the four large ones (xz -9): steps, data wait and the peers' figures
REAL = ["kineto_resnet50_nw0", "kineto_resnet50_nw4", "hta_a100_dataloader",
        "hta_a100_pageable"]
# small ones of recent formats, gzip as upstream wrote them
SMALL = ["hta_a100_triton.json.gz", "hta_mi250_rocm.json.gz", "hta_cpu_only.json.gz"]


def directory():
    """The directory the real traces are read from (it may not exist)."""
    return os.environ.get("GS_REAL_TRACES") or os.path.normpath(
        os.path.join(ROOT, "..", "shared", "data", "real-gpu-traces"))


def present():
    return os.path.isdir(directory())


def absent_why():
    """The one line said when they are not there."""
    return ("no real GPU traces in %s (public data kept beside the repository: "
            "set GS_REAL_TRACES=DIR to read them from elsewhere)" % directory())


def path(name):
    """A real trace's file: NAME.json.xz for the large ones, else NAME."""
    return os.path.join(directory(), name + ".json.xz" if name in REAL else name)
