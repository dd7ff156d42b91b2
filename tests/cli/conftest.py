"""Shared fixtures of the CLI tests: where the gpustarve binary and the trace
generator are, a harmless preload library for `gpustarve run`, and helpers
to run commands.

Run with: /usr/bin/python3 -m pytest tests/cli   (after `make build/gpustarve`)
Regenerate golden files after a deliberate output change:
    GS_UPDATE_GOLDEN=1 /usr/bin/python3 -m pytest tests/cli -k golden
"""
import os
import subprocess

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
BUILD = os.path.join(ROOT, "build")
GS = os.path.join(BUILD, "gpustarve")
REAL_LIB = os.path.join(BUILD, "libgpustarve.so")
MKTRACE_BUILT = os.path.join(BUILD, "tests", "gs_mktrace")
CC = os.environ.get("CC", "cc")
CFLAGS = ["-std=gnu11", "-Wall", "-Wextra", "-Werror", "-Wno-unused-parameter", "-O2",
          "-D_GNU_SOURCE"]


def clean_env(**extra):
    """The caller's environment without anything gpustarve reads."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("GPUSTARVE_") and k != "LD_PRELOAD"}
    env["LC_ALL"] = "C"
    env.update(extra)
    return env


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
    out = str(tmp_path_factory.mktemp("tools") / "gs_mktrace")
    trace_src = sorted(os.path.join(ROOT, "trace", f)
                       for f in os.listdir(os.path.join(ROOT, "trace")) if f.endswith(".c"))
    subprocess.run([CC] + CFLAGS + ["-I" + os.path.join(ROOT, "trace"), "-o", out,
                    os.path.join(ROOT, "tests", "tools", "gs_mktrace.c")] + trace_src +
                   ["-lzstd", "-lm"], check=True)
    return out


@pytest.fixture(scope="session")
def noop_lib(tmp_path_factory):
    """A shared object that does nothing: GPUSTARVE_LIB for tests of `run`
    that are about the runner, not the collector."""
    d = tmp_path_factory.mktemp("noop")
    out = str(d / "libnoop.so")
    subprocess.run([CC, "-shared", "-fPIC", "-o", out, os.path.join(HERE, "noop_preload.c")],
                   check=True)
    return out


@pytest.fixture(scope="session")
def lib(noop_lib):
    """The real collector once it is built, else the no-op stand-in."""
    return REAL_LIB if os.path.exists(REAL_LIB) else noop_lib


def run(args, **kw):
    if "stdout" not in kw and "stderr" not in kw:
        kw.setdefault("capture_output", True)
    else:
        kw.setdefault("stdout", subprocess.PIPE)
        kw.setdefault("stderr", subprocess.PIPE)
    kw.setdefault("timeout", 120)
    return subprocess.run(args, **kw)
