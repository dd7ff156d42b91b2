"""Shared fixtures of the CLI tests: where the gpustarve binary and the trace
generator are, a harmless preload library for `gpustarve run`, and helpers
to run commands.

Run with: /usr/bin/python3 -m pytest tests/cli   (after `make build/gpustarve`)
Regenerate golden files after a deliberate output change:
    GS_UPDATE_GOLDEN=1 /usr/bin/python3 -m pytest tests/cli -k golden
"""
import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import gstest  # noqa: E402  (tests/gstest.py: the helpers all suites share)
from gstest import BUILD, CC, ROOT, clean_env, default_signals, wait_for, wait_for_file  # noqa: E402,F401

HERE = os.path.dirname(os.path.abspath(__file__))
GS = os.path.join(BUILD, "gpustarve")
REAL_LIB = gstest.LIB
MKTRACE_BUILT = os.path.join(BUILD, "tests", "gs_mktrace")


@pytest.fixture(scope="session")
def gs():
    if not os.access(GS, os.X_OK):
        pytest.fail("%s is missing: run `make build/gpustarve` first" % GS)
    return GS


@pytest.fixture(scope="session")
def mktrace(tmp_path_factory):
    """build/tests/gs_mktrace, or (until the Makefile builds it) a copy
    compiled here from tests/tools/gs_mktrace.c and trace/*.c."""
    if os.access(MKTRACE_BUILT, os.X_OK):
        return MKTRACE_BUILT
    out = tmp_path_factory.mktemp("tools") / "gs_mktrace"
    return gstest.build_c(out, [os.path.join(ROOT, "tests", "tools", "gs_mktrace.c")])


@pytest.fixture(scope="session")
def noop_lib(tmp_path_factory):
    """A shared object that does nothing: GPUSTARVE_LIB for tests of `run`
    that are about the runner, not the collector."""
    d = tmp_path_factory.mktemp("noop")
    out = str(d / "libnoop.so")
    gstest.build_c(out, [os.path.join(HERE, "noop_preload.c")], ["-shared", "-fPIC"],
                   with_trace=False)
    return out


@pytest.fixture(scope="session")
def lib(noop_lib):
    """The real collector once it is built, else the no-op stand-in."""
    return REAL_LIB if os.path.exists(REAL_LIB) else noop_lib


def run(args, **kw):
    """gstest.run: captured output, clean environment, default signals."""
    return gstest.run(args, **kw)
