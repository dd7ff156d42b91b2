"""Run directories that cannot lie (docs/report-schema.md, "How the run is
read"): a run still in progress is reported as in progress, not as processes
that ended abruptly, and the same directory reads as finished once the
program has ended; `run -o` keeps a second run out of a used directory, and
out of one another run has just started into; a removed run directory is
called removed; a process's end is named as far as the trace knows it."""
import fcntl
import json
import os
import signal
import subprocess
import threading

import pytest

import gstest
from conftest import CLI, PY, clean_env

# A training loop stand-in: 12 steps with the Python side's markers, then a
# marker file, then it blocks until its stdin closes.
LOOP = r"""
import sys, time
from gpustarve import _native as n
for s in range(12):
    n.step_begin(s); n.fetch_begin(s); time.sleep(0.002); n.fetch_end(s)
    time.sleep(0.003); n.step_end(s)
open(sys.argv[1], "w").close()
sys.stdin.read()
"""


def report(run_dir, *args):
    p = subprocess.run([CLI, "report"] + list(args) + [str(run_dir)], capture_output=True,
                       text=True, env=clean_env(), timeout=120)
    assert p.returncode == 0, p.stderr
    return p.stdout


def test_run_in_progress_is_labelled(built, tmp_path):
    script = tmp_path / "loop.py"
    script.write_text(LOOP)
    ready, run_dir = tmp_path / "ready", tmp_path / "run"
    proc = subprocess.Popen([CLI, "run", "-q", "-o", str(run_dir), "--", PY, str(script),
                             str(ready)], stdin=subprocess.PIPE, env=clean_env(),
                            preexec_fn=gstest.default_signals)
    try:
        gstest.wait_for_file(ready, "the traced loop never finished its steps")
        j = json.loads(report(run_dir, "--json"))
        assert j["run"]["in_progress"] is True and j["run"]["running"] == 1
        assert j["run"]["ended_abruptly"] == 0
        assert j["steps"]["count"] == 12
        txt = report(run_dir)
        assert "IN PROGRESS  1 of 1 processes still running" in txt
        assert "1 still running" in txt and "ended abruptly" not in txt
        report(run_dir, "--html", str(tmp_path / "page.html"))
        assert "In progress: 1 of 1 processes still running" in (tmp_path / "page.html").read_text()
    finally:
        proc.stdin.close()
        assert proc.wait(timeout=120) == 0
    j = json.loads(report(run_dir, "--json"))
    assert j["run"]["in_progress"] is False and j["run"]["running"] == 0
    assert j["steps"]["count"] == 12
    assert "IN PROGRESS" not in report(run_dir)


def test_second_run_into_a_used_directory_is_refused(built, tmp_path):
    run_dir = tmp_path / "a" / "b" / "run"  # parents are created
    assert gstest.run_traced([PY, "-c", "pass"], run_dir).returncode == 0
    before = sorted(os.listdir(str(run_dir)))
    assert before and all(f.endswith((".gst", ".peers")) for f in before)
    p = gstest.run_traced([PY, "-c", "open('%s', 'w')" % (tmp_path / "ran")], run_dir)
    assert p.returncode == 2 and b"already holds" in p.stderr
    assert not (tmp_path / "ran").exists()
    assert sorted(os.listdir(str(run_dir))) == before
    p = gstest.run_traced([PY, "-c", "pass"], run_dir, cli_args=["--append"])
    assert p.returncode == 0
    assert len(os.listdir(str(run_dir))) == 2 * len(before)


# A child that outlives the command until the test releases it.
OUTLIVE = r"""
import os, sys, time
if os.fork() == 0:
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, 1)
    os.dup2(null, 2)
    deadline = time.monotonic() + 300  # bounds a broken test only
    while not os.path.exists(sys.argv[1]) and time.monotonic() < deadline:
        time.sleep(0.01)
    os._exit(0)
"""


def test_run_says_which_processes_it_left_running(built, tmp_path):
    """`run` waits 5 s for processes the command left behind; one still
    running then is 'still running' in its closing line, not 'ended
    abruptly'."""
    release = tmp_path / "release"
    try:
        p = gstest.run_traced([PY, "-c", OUTLIVE, str(release)], tmp_path / "run")
        assert p.returncode == 0, p.stderr.decode()
        last = p.stderr.decode().splitlines()[-1]
        assert "traced 2 processes" in last and "1 still running" in last, last
        assert "ended abruptly" not in last
    finally:
        release.write_text("")


# ---- one run at a time in a directory --------------------------------------------------------

RACE_TRIES = 12
LOCK = ".gpustarve-run.lock"


@pytest.mark.parametrize("exists", [False, True], ids=["new-dir", "empty-dir"])
def test_two_runs_started_together_one_is_refused(built, tmp_path, exists):
    """Two `run -o DIR` released at the same instant (both wait on one pipe
    until the test closes it), RACE_TRIES times, into a missing directory
    and into an existing empty one: each time exactly one runs its command;
    the other exits 2 saying why and runs nothing. Before the lock, both ran
    in most tries."""
    for i in range(RACE_TRIES):
        d, ran = tmp_path / ("run%d" % i), tmp_path / ("ran%d" % i)
        if exists:
            d.mkdir()
        r, w = os.pipe()
        cmd = ["sh", "-c", 'read x; exec "$0" "$@"', CLI, "run", "-q", "-o", str(d), "--",
               "sh", "-c", "echo ran >> %s" % ran]
        ps = [subprocess.Popen(cmd, stdin=r, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                               env=clean_env(), preexec_fn=gstest.default_signals)
              for _ in range(2)]
        os.close(r)
        os.close(w)  # both read EOF: go
        got = sorted((p.wait(timeout=gstest.DEADLINE_S), p.communicate()[1].decode())
                     for p in ps)
        assert [rc for rc, _ in got] == [0, 2], (i, got)
        assert ("in use by another gpustarve run" in got[1][1] or
                "already holds" in got[1][1]), got
        assert ran.read_text() == "ran\n"
        assert not (d / LOCK).exists()  # given back


def test_a_dead_runs_lock_blocks_nothing(built, tmp_path):
    """A lock file left by a run that died (its pid written, no one holding
    it) is taken over; one that a live run holds refuses `run -o` (naming
    that run) but not `run --append`."""
    stale = tmp_path / "stale"
    stale.mkdir()
    dead = subprocess.Popen(["true"])
    dead.wait()
    (stale / LOCK).write_text("%d\n" % dead.pid)
    p = gstest.run_traced(["true"], stale)
    assert p.returncode == 0, p.stderr.decode()
    assert not (stale / LOCK).exists()

    held = tmp_path / "held"
    held.mkdir()
    fd = os.open(str(held / LOCK), os.O_RDWR | os.O_CREAT, 0o600)
    try:
        os.write(fd, b"%d\n" % os.getpid())
        fcntl.flock(fd, fcntl.LOCK_EX)  # this test is the run in progress
        p = gstest.run_traced(["sh", "-c", "echo ran > %s" % (tmp_path / "ran")], held)
        assert p.returncode == 2
        assert ("is in use by another gpustarve run (pid %d)" % os.getpid()).encode() in p.stderr
        assert not (tmp_path / "ran").exists() and os.listdir(held) == [LOCK]
        p = gstest.run_traced(["true"], held, cli_args=["--append"])
        assert p.returncode == 0, p.stderr.decode()
        assert (held / LOCK).exists()  # still the test's
    finally:
        os.close(fd)


# ---- what `run` says when its directory went away -----------------------------------------------

REMOVE_DIR = r"""
import shutil, sys
shutil.rmtree(sys.argv[1])
sys.stdin.read()
"""


def test_run_says_its_directory_was_removed(built, tmp_path):
    """The command removes the run directory: --live says so once and stops,
    and the closing line says the traces are gone, not that the library was
    not loaded."""
    d = tmp_path / "run"
    p = subprocess.Popen([CLI, "run", "--live", "-o", str(d), "--", PY, "-c", REMOVE_DIR, str(d)],
                         stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                         env=clean_env(), preexec_fn=gstest.default_signals)
    lines = []

    def read():
        for raw in p.stderr:
            lines.append(raw.decode())
    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        # the live thread's line comes while the command waits on its stdin
        gstest.wait_for(lambda: any("no more live lines" in l for l in list(lines)),
                        "run --live never said the directory was removed")
        p.stdin.close()
        assert p.wait(timeout=gstest.DEADLINE_S) == 0
        reader.join(timeout=gstest.DEADLINE_S)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    text = "".join(lines)
    assert ("gpustarve: live: the run directory %s was removed; no more live lines" % d) in text
    assert ("the run directory %s was removed while the command ran: its traces are gone" % d) \
        in text
    assert "loaded" not in text and not d.exists()


# ---- how a process ended, in the words of the trace ---------------------------------------------

# Ctrl-C: KeyboardInterrupt, after which Python puts SIG_DFL back on SIGINT
# and dies of it (exit 130); or a program that set SIG_DFL itself.
CTRL_C = r"""
import os, signal, sys
if sys.argv[1] == "SIG_DFL":
    signal.signal(signal.SIGINT, signal.SIG_DFL)
print("before", flush=True)
os.kill(os.getpid(), signal.SIGINT)
print("not reached")
"""


@pytest.mark.parametrize("how", ["KeyboardInterrupt", "SIG_DFL"])
def test_ctrl_c_in_python_is_recorded_as_sigint(built, tmp_path, how):
    """Exit status and output as untraced; the trace ends with an exit
    record for signal 2, not with a note that guesses SIGKILL."""
    cmd = [PY, "-c", CTRL_C, how]
    plain = gstest.run(cmd)
    traced = gstest.run_traced(cmd, tmp_path / "run")
    assert plain.returncode == -signal.SIGINT and traced.returncode == 130
    assert traced.stdout == plain.stdout == b"before\n"
    own = [l for l in traced.stderr.splitlines() if not l.startswith(b"gpustarve: ")]
    assert own == plain.stderr.splitlines()
    recs, _, _ = gstest.dump(tmp_path / "run")
    assert [(r["status"], r["how"]) for r in recs if r["kind"] == "exit"] == [(2, "signal")]
    assert not [r for r in recs if r["kind"] == "note" and r["code"] == 6]
    assert b"ended abruptly" not in traced.stderr


def test_sigkill_is_not_called_out_of_memory(built, tmp_path):
    """Nothing in a trace tells SIGKILL from the out-of-memory killer: the
    note says what is known."""
    p = gstest.run_traced([PY, "-c", "import os, signal; os.kill(os.getpid(), signal.SIGKILL)"],
                          tmp_path / "run")
    assert p.returncode == 128 + signal.SIGKILL
    recs, _, _ = gstest.dump(tmp_path / "run")
    notes = [r["text"] for r in recs if r["kind"] == "note" and r["code"] == 6]
    assert len(notes) == 1 and "SIGKILL" in notes[0], notes
    assert "out of memory" not in notes[0]
