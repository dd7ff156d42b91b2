"""gstest — the helpers every Python test suite shares (tests/analyzer,
tests/cli, tests/e2e, tests/python and those that come): where the build is,
a clean environment, running a command (plain, under `gpustarve run`, the
dump read back), compiling a helper program against trace/, and waiting for
another process without guessing how long it takes.

Each suite's conftest.py puts tests/ on sys.path and takes what it needs from
here; suite-specific builders (the analyzer's Scenario, the Python side's
Markers) stay in their conftest.py.

Determinism (docs/testing.md): nothing here sleeps for a fixed time. A wait
is for a marker another process makes (wait_for, wait_for_file), with a
deadline that only bounds a broken run; children start with the signals
gpustarve forwards at their default action (default_signals), whatever the
caller of the suite had ignored.
"""
import json
import os
import shutil
import signal
import subprocess
import time

import pytest

TESTS = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(TESTS)
BUILD = os.path.join(ROOT, "build")
# GS_CLI selects another build of the CLI (make test-san runs the analyzer
# tests with the AddressSanitizer + UBSan one).
CLI = os.environ.get("GS_CLI") or os.path.join(BUILD, "gpustarve")
LIB = os.path.join(BUILD, "libgpustarve.so")
# GS_SAN_LIB (make test-san-collector): the collector built with ASan + UBSan;
# it is preloaded after the sanitizer runtime GS_SAN_RUNTIME (ld.so wants the
# runtime first). PRELOAD is what LD_PRELOAD must hold to trace by hand.
SAN_LIB = os.environ.get("GS_SAN_LIB")
SAN_RUNTIME = os.environ.get("GS_SAN_RUNTIME", "")
PRELOAD = SAN_RUNTIME + ":" + SAN_LIB if SAN_LIB else LIB
PYDIR = os.path.join(ROOT, "python")
DEBIAN_PY = "/usr/bin/python3"  # Debian's interpreter, with Debian's torch 1.13
VENV_PY = os.path.join(ROOT, ".venv", "bin", "python")  # torch 2.x (make venv)
CC = os.environ.get("CC", "cc")
CFLAGS = ["-std=gnu11", "-Wall", "-Wextra", "-Werror", "-Wno-unused-parameter", "-O2",
          "-D_GNU_SOURCE"]

# Kinds of `dump --json` records that read bytes from an fd (ret = bytes).
READ_KINDS = {"read", "pread", "pread64", "readv", "preadv", "preadv64", "preadv2",
              "preadv64v2", "__read_chk", "__pread_chk", "__pread64_chk", "read_at",
              "readv_at", "__read_chk_at"}

# How long a deadline waits for a marker before calling the run broken.
DEADLINE_S = 60


# ---- fixtures ------------------------------------------------------------------------

@pytest.fixture(scope="session")
def gs():
    """The CLI under test (CLI): a suite that needs it fails, not skips, when
    it is not built. A conftest imports this fixture to offer it."""
    if not os.access(CLI, os.X_OK):
        pytest.fail("%s is missing: run `make build/gpustarve` first" % CLI)
    return CLI


# ---- environment and signals ---------------------------------------------------------

def clean_env(**extra):
    """The caller's environment without what gpustarve or the interpreter
    would read from it (GPUSTARVE_*, LD_PRELOAD, PYTHONPATH, NO_COLOR), in
    the C locale; extra entries added (None removes one)."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("GPUSTARVE_") and k not in ("LD_PRELOAD", "PYTHONPATH",
                                                           "NO_COLOR")}
    env["LC_ALL"] = "C"
    for k, v in extra.items():
        if v is None:
            env.pop(k, None)
        else:
            env[k] = v
    return env


def default_signals():
    """preexec_fn: the signals gpustarve forwards back at their default
    action. A shell leaves SIGINT and SIGQUIT ignored in background jobs (a
    suite run with `&`), and gpustarve, sh and Python rightly keep an ignored
    signal ignored: a test about signals would then see none."""
    for sig in (signal.SIGINT, signal.SIGQUIT, signal.SIGTERM, signal.SIGHUP,
                signal.SIGUSR1, signal.SIGUSR2):
        signal.signal(sig, signal.SIG_DFL)


# ---- running commands ---------------------------------------------------------------------

def run(args, **kw):
    """subprocess.run with output captured (unless redirected), a clean
    environment, default signals and a 300 s bound on a hung run."""
    if "stdout" not in kw and "stderr" not in kw:
        kw.setdefault("capture_output", True)
    else:
        kw.setdefault("stdout", subprocess.PIPE)
        kw.setdefault("stderr", subprocess.PIPE)
    kw.setdefault("timeout", 300)
    kw.setdefault("preexec_fn", default_signals)
    if kw.get("env") is None:
        kw["env"] = clean_env()
    # subprocess.run's arguments, on a Popen that is still alive when the
    # bound passes, so that hung_tree can see it
    timeout, data, check = kw.pop("timeout"), kw.pop("input", None), kw.pop("check", False)
    if kw.pop("capture_output", False):
        kw["stdout"] = kw["stderr"] = subprocess.PIPE
    if data is not None:
        kw["stdin"] = subprocess.PIPE
    with subprocess.Popen([str(a) for a in args], **kw) as p:
        try:
            out, err = p.communicate(input=data, timeout=timeout)
        except subprocess.TimeoutExpired as e:
            hung = HungRun(e.cmd, e.timeout, hung_tree(p.pid))
            p.kill()
            p.communicate()
            raise hung from None
    if check and p.returncode:
        raise subprocess.CalledProcessError(p.returncode, p.args, out, err)
    return subprocess.CompletedProcess(p.args, p.returncode, out, err)


class HungRun(subprocess.TimeoutExpired):
    """A run past its bound; says what its processes were doing."""

    def __init__(self, cmd, timeout, tree):
        super().__init__(cmd, timeout)
        self.tree = tree

    def __str__(self):
        return super().__str__() + "\n" + self.tree


def hung_tree(root):
    """What a hung run's processes are doing, for the failure message: each
    descendant of root, its state and every thread's kernel wait channel,
    and, where gdb is installed, every thread's stack."""
    kids = {}
    for d in os.listdir("/proc"):
        try:
            with open(f"/proc/{d}/stat") as f:
                st = f.read()
            ppid = int(st.rsplit(")", 1)[1].split()[1])
            kids.setdefault(ppid, []).append(int(d))
        except (OSError, ValueError, IndexError):
            continue
    lines, todo = ["processes of the hung run:"], [root]
    while todo:
        pid = todo.pop(0)
        todo.extend(kids.get(pid, []))
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode(errors="replace")[:200]
            waits = []
            for t in sorted(os.listdir(f"/proc/{pid}/task")):
                with open(f"/proc/{pid}/task/{t}/stat") as f:
                    state = f.read().rsplit(")", 1)[1].split()[0]
                with open(f"/proc/{pid}/task/{t}/wchan") as f:
                    waits.append(f"{t}:{state}:{f.read().strip() or '-'}")
        except OSError:
            continue
        lines.append(f"  {pid} {cmd}\n    threads {' '.join(waits)}")
        if shutil.which("gdb"):
            g = subprocess.run(["gdb", "-p", str(pid), "-batch", "-nx",
                                "-ex", "thread apply all bt 30"],
                               capture_output=True, timeout=60)
            lines += ["    " + ln for ln in g.stdout.decode(errors="replace").splitlines()
                      if ln.startswith(("#", "Thread "))]
    return "\n".join(lines)


def run_traced(cmd, run_dir, env=None, cli_args=(), **kw):
    """cmd under `gpustarve run [cli_args] -o run_dir --`; CompletedProcess.
    With GS_SAN_LIB, `run` preloads the sanitized collector after the runtime."""
    if SAN_LIB:
        # RATIONALE: in place, so a test comparing the child's environment
        # with the one it passed sees these as its own
        env = env if env is not None else clean_env()
        env["GPUSTARVE_LIB"] = SAN_LIB
        env["LD_PRELOAD"] = SAN_RUNTIME + (":" + env["LD_PRELOAD"] if env.get("LD_PRELOAD") else "")
    return run([CLI, "run"] + list(cli_args) + ["-o", str(run_dir), "--"] + list(cmd),
               env=env, **kw)


def dump(run_dir, check=True, args=()):
    """(records, stderr, returncode) of `gpustarve dump --json [args] run_dir`."""
    p = run([CLI, "dump", "--json"] + list(args) + [str(run_dir)])
    if check and p.returncode != 0:
        raise AssertionError("dump failed (%d): %s" % (p.returncode, p.stderr.decode()))
    recs = [json.loads(line) for line in p.stdout.decode().splitlines() if line.strip()]
    return recs, p.stderr.decode(), p.returncode


def report_json(run_dir, *args):
    """`gpustarve report --json [args] run_dir`, parsed; fails the test on error."""
    p = run([CLI, "report", "--json"] + list(args) + [str(run_dir)])
    assert p.returncode == 0, p.stderr.decode()
    return json.loads(p.stdout)


# ---- building helpers --------------------------------------------------------------------

def trace_sources():
    d = os.path.join(ROOT, "trace")
    return sorted(os.path.join(d, f) for f in os.listdir(d) if f.endswith(".c"))


def build_c(out, srcs, extra=(), with_trace=True):
    """Compiles srcs (with trace/*.c, the reader and writer, unless
    with_trace is false) into out, with trace/ and include/ on the include
    path; fails the test with the compiler's message when that does not
    work. Returns out."""
    cmd = [CC] + CFLAGS + ["-I" + os.path.join(ROOT, "trace"), "-I" + os.path.join(ROOT, "include"),
                           "-o", str(out)] + [str(s) for s in srcs]
    if with_trace:
        cmd += trace_sources() + ["-lzstd", "-lm"]
    p = subprocess.run(cmd + list(extra), capture_output=True)
    if p.returncode != 0:
        pytest.fail("cannot build %s: %s" % (out, p.stderr.decode()))
    return str(out)


def require(*paths):
    """Fails the test (not skips: `make` should have built them) when a
    build output is missing."""
    for p in paths:
        if not os.path.exists(p):
            pytest.fail("%s is missing: run `make` first" % p)


# ---- waiting for another process -------------------------------------------------------------

def wait_for(cond, why, timeout=DEADLINE_S):
    """Polls cond() until it is true. A marker another process makes, not a
    time guess: the deadline only bounds a broken run (the test fails with
    why)."""
    deadline = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < deadline, why
        time.sleep(0.01)


def wait_for_file(path, why, timeout=DEADLINE_S):
    wait_for(lambda: os.path.exists(str(path)), why, timeout)
