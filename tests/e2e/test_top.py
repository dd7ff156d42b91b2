"""`gpustarve top` and `gpustarve run --live` on a run in progress: a traced
C program (tests/tools/paced_steps.c) takes one step per byte the test
writes to its stdin and prints its own measure of each step's data wait,
the ground truth the live lines are held against. Every wait is on a marker
the other side makes (a step line, a top line, a file); the deadlines only
bound a broken run."""
import contextlib
import os
import re
import shutil
import subprocess
import threading
import time

import pytest

from conftest import BUILD, CLI, clean_env
import gstest

PACED = os.path.join(BUILD, "tests", "paced_steps")
# the test's "loader": seconds between a step's end and its next byte
PAUSE_S = 0.03
WORK_MS = 20

LINE = re.compile(r"^(running|ended) (\d+)/(\d+) \| rank (\S+) pid (\d+): (\d+) steps, "
                  r"(\S+) steps/s, data wait (\S+), GPU busy (\S+), pageable copy (\S+), "
                  r"loader batch (.+)$")


class Lines:
    """Collects a stream's lines on a thread."""

    def __init__(self, stream):
        self.lines = []
        self.lock = threading.Lock()
        self.t = threading.Thread(target=self._read, args=(stream,), daemon=True)
        self.t.start()

    def _read(self, stream):
        for raw in stream:
            with self.lock:
                self.lines.append(raw.decode(errors="replace").rstrip("\n"))

    def snapshot(self):
        with self.lock:
            return list(self.lines)

    def wait(self, pred, why, timeout=gstest.DEADLINE_S):
        found = []

        def cond():
            for l in self.snapshot():
                if pred(l):
                    found.append(l)
                    return True
            return False
        gstest.wait_for(cond, why, timeout)
        return found[0]


class Paced:
    """paced_steps [prog_args] under `gpustarve run [args] -o run_dir`."""

    def __init__(self, run_dir, cli_args=(), prog_args=()):
        gstest.require(CLI, PACED)
        self.p = subprocess.Popen([CLI, "run", "-q"] + list(cli_args) + ["-o", str(run_dir), "--",
                                                                      PACED] + list(prog_args),
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, env=clean_env(),
                                  preexec_fn=gstest.default_signals)
        self.out = Lines(self.p.stdout)
        self.err = Lines(self.p.stderr)
        self.truth = []  # (wait_ns, step_ns) per step
        self.batches = []  # with a worker: its own measure of each batch (ns)

    def steps(self, n, work_ms=WORK_MS, pause_s=PAUSE_S):
        for _ in range(n):
            want = len(self.truth) + 1
            self.p.stdin.write(bytes([work_ms]))
            self.p.stdin.flush()
            self.out.wait(lambda l, w=want: l.startswith("%d " % (w - 1)),
                          "step %d never ended" % want)
            lines = self.out.snapshot()
            fields = lines[want - 1].split()
            self.truth.append((int(fields[1]), int(fields[2])))
            if len(fields) > 3:
                self.batches.append(int(fields[3]))
            time.sleep(pause_s)  # the data wait of the next step (measured, not assumed)

    def wait_share(self):
        return sum(w for w, _ in self.truth) / sum(s for _, s in self.truth)

    def finish(self):
        self.p.stdin.close()
        rc = self.p.wait(timeout=gstest.DEADLINE_S)
        self.out.t.join(timeout=10)
        self.err.t.join(timeout=10)
        return rc

    def kill(self):
        if self.p.poll() is None:
            self.p.kill()
            self.p.wait()


def pct(text):
    assert text.endswith("%"), text
    return float(text[:-1]) / 100


@pytest.fixture
def paced(tmp_path):
    made = []

    def make(cli_args=(), prog_args=()):
        made.append(Paced(tmp_path / "run", cli_args, prog_args))
        return made[-1]
    yield make
    for p in made:
        p.kill()


def start_top(run_dir, *args):
    p = subprocess.Popen([CLI, "top"] + list(args) + [str(run_dir)], stdin=subprocess.DEVNULL,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=clean_env(),
                         preexec_fn=gstest.default_signals)
    return p, Lines(p.stdout)


@contextlib.contextmanager
def top_following(run, run_dir, *args):
    """`top ARGS run_dir` beside a paced run: yields (top, its lines). When
    the body ends without failing, the run must finish with status 0 and
    top then exit 0; top is killed whatever happened."""
    top, lines = start_top(run_dir, *args)
    try:
        yield top, lines
        assert run.finish() == 0
        assert top.wait(timeout=gstest.DEADLINE_S) == 0
    finally:
        if top.poll() is None:
            top.kill()
            top.wait()


def window_empties_then_fills(run, lines, idle_text, **steps):
    """The paced run waits after its first steps: top's 1 s window empties
    (a line holding idle_text); then 6 more steps without pauses fill it
    again (a line with 10 steps and a rate). Returns both lines."""
    idle = lines.wait(lambda l: l.startswith("running") and idle_text in l,
                      "the window never emptied")
    seen = len(lines.snapshot())
    run.steps(6, pause_s=0.0, **steps)
    busy = lines.wait(lambda l: l.startswith("running") and " 10 steps," in l and
                      LINE.match(l).group(7) != "-", "the new steps never showed")
    assert lines.snapshot().index(busy) >= seen
    return idle, busy


def test_top_lines_hold_the_steps_and_their_data_wait(built, paced, tmp_path):
    run = paced()
    run.steps(12)
    with top_following(run, tmp_path / "run", "-i", "1", "-w", "600") as (top, lines):
        line = lines.wait(lambda l: l.startswith("running 1/1") and " 12 steps," in l,
                          "top never showed the 12 steps")
        m = LINE.match(line)
        assert m, line
        assert m.group(4) == "-"  # no ranks: one row
        assert abs(pct(m.group(8)) - run.wait_share()) <= 0.05, (line, run.wait_share())
        assert pct(m.group(9)) == 0.0  # no GPU
        rate = float(m.group(7))
        # every step counted over at least the time the steps took
        assert 0 < rate <= 12 / (sum(s for _, s in run.truth) / 1e9) * 1.05, line
    lines.t.join(timeout=10)
    last = lines.snapshot()[-1]
    m = LINE.match(last)
    assert m and m.group(1) == "ended" and m.group(6) == "12", last
    assert abs(pct(m.group(8)) - run.wait_share()) <= 0.05, (last, run.wait_share())
    assert all(LINE.match(l) or l.startswith("waiting") for l in lines.snapshot())


def test_top_window_forgets_old_steps(built, paced, tmp_path):
    run = paced()
    run.steps(4)
    with top_following(run, tmp_path / "run", "-i", "1", "-w", "1") as (top, lines):
        # the program waits for its next byte: after a second no step ended inside the window
        idle, _ = window_empties_then_fills(run, lines, " 4 steps, - steps/s, data wait -")
        assert LINE.match(idle), idle


def test_top_batch_time_is_over_the_window(built, paced, tmp_path):
    """A loader worker that marks its batches (paced_steps worker: each
    batch B ms of its busy work between fetch_begin and fetch_end): top's
    loader batch time covers only the batches that ended in its window, each
    as the worker itself measured it; a window without one shows '-'."""
    run = paced(prog_args=["worker"])
    run.steps(4, work_ms=10)
    with top_following(run, tmp_path / "run", "-i", "1", "-w", "1") as (top, lines):
        # the worker waits for its next byte: after a second no step (and so
        # no batch, which ends inside its step) ended inside the window
        idle, busy = window_empties_then_fills(run, lines, " 4 steps, - steps/s,", work_ms=60)
        assert LINE.match(idle).group(11) == "-", idle
        text = LINE.match(busy).group(11)
        assert text.endswith(" ms"), busy  # over the window, not '(run so far)'
        ms = float(text[:-3])
        # only the 60 ms batches: the run so far would be about 40 ms; the
        # markers lie inside the worker's own measure of each batch
        new = [b / 1e6 for b in run.batches[4:]]
        assert min(new) * 0.98 <= ms <= max(new) + 0.05, (busy, new)
    old = [b / 1e6 for b in run.batches[:4]]
    assert max(old) < 30 and len(run.batches) == 10, run.batches


def test_run_live_prints_summary_lines_to_stderr(built, paced):
    run = paced(["--live"])
    run.steps(6)
    line = run.err.wait(lambda l: l.startswith("gpustarve: live: running 1/1") and
                        " 6 steps," in l, "run --live never printed the 6 steps")
    m = LINE.match(line[len("gpustarve: live: "):])
    assert m, line
    assert abs(pct(m.group(8)) - run.wait_share()) <= 0.05, (line, run.wait_share())
    assert run.finish() == 0
    # the program's own output untouched: its step lines, nothing else
    out = run.out.snapshot()
    assert len(out) == 6 and all(re.match(r"^\d+ \d+ \d+$", l) for l in out), out


def test_top_bad_input(built, tmp_path):
    p = gstest.run([CLI, "top", str(tmp_path / "missing")])
    assert p.returncode == 2
    assert b"No such file or directory" in p.stderr
    p = gstest.run([CLI, "top", "-w", "0", str(tmp_path)])
    assert p.returncode == 2


@pytest.mark.parametrize("then", ["removed", "made-again"])
def test_top_stops_when_its_directory_is_removed(built, tmp_path, then):
    """top waits in a directory with no trace yet; the directory is removed
    (and, in one case, a new one of that name made): top says so and exits
    1 instead of waiting for ever."""
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    top, lines = start_top(run_dir, "-i", "1")
    try:
        lines.wait(lambda l: l.startswith("waiting"), "top never started waiting")
        shutil.rmtree(run_dir)
        if then == "made-again":
            run_dir.mkdir()
        assert top.wait(timeout=gstest.DEADLINE_S) == 1
        err = top.stderr.read().decode()
    finally:
        if top.poll() is None:
            top.kill()
            top.wait()
    assert "top: the run directory %s was removed" % run_dir in err, err
    assert err.endswith("; nothing left to follow\n"), err


# ---- a real terminal ------------------------------------------------------------------------

@pytest.mark.parametrize("key", ["q", "C-c"])
def test_top_in_a_terminal(built, paced, tmp_path, key):
    tmux = shutil.which("tmux")
    if not tmux:
        pytest.fail("tmux is missing: tools/deps.sh test installs it")
    run = paced()
    run.steps(3)
    sock = str(tmp_path / "tmux.sock")
    script = tmp_path / "pane.sh"
    # the shell outlives a Ctrl-C meant for top (a handler, so top gets SIGINT's default)
    script.write_text("trap : INT\nstty -g > %s/before\n%s top %s/run\necho $? > %s/rc.tmp\n"
                      "mv %s/rc.tmp %s/rc\nstty -g > %s/after.tmp\nmv %s/after.tmp %s/after\n"
                      "exec cat\n" % ((tmp_path, CLI, tmp_path) + (tmp_path,) * 6))
    env = clean_env(TERM="xterm")
    base = [tmux, "-S", sock, "-f", "/dev/null"]

    def pane():
        return subprocess.run(base + ["capture-pane", "-p", "-t", "t"], env=env,
                              capture_output=True, timeout=30).stdout.decode()
    try:
        subprocess.run(base + ["new-session", "-d", "-s", "t", "-x", "120", "-y", "30",
                               "sh %s" % script], env=env, check=True, timeout=30)
        row = re.compile(r"^\s+-\s+\d+\s+\S+\s+3\s", re.M)
        gstest.wait_for(lambda: "RANK" in pane() and row.search(pane()),
                        "top never showed the rank row")
        assert not (tmp_path / "rc").exists()  # still running
        subprocess.run(base + ["send-keys", "-t", "t", key], env=env, check=True, timeout=30)
        gstest.wait_for_file(tmp_path / "rc", "top did not exit on %s" % key)
        gstest.wait_for_file(tmp_path / "after", "the pane script did not go on")
        assert (tmp_path / "rc").read_text().strip() == "0"
        # the terminal's settings exactly as before top
        assert (tmp_path / "after").read_text() == (tmp_path / "before").read_text()
        # back on the normal screen, the last table left on it
        text = pane()
        assert "RANK" in text and row.search(text), text
    finally:
        subprocess.run(base + ["kill-server"], env=env, capture_output=True, timeout=30)
    assert run.finish() == 0


# ---- ranks ------------------------------------------------------------------------------------

PART = re.compile(r"rank (\d+) pid (\d+): (\d+) steps, (\S+) steps/s, data wait (\S+), ")


def test_top_has_a_row_per_rank(built, tmp_path):
    """Two ranks (RANK, WORLD_SIZE) under one launcher, each paced through its
    own FIFO, rank 1 with less work per step: one part per rank, each with its
    own data wait."""
    gstest.require(CLI, PACED)
    fifos = [tmp_path / ("in%d" % r) for r in (0, 1)]
    outs = [tmp_path / ("out%d" % r) for r in (0, 1)]
    for f in fifos:
        os.mkfifo(f)
    launch = " & ".join("RANK=%d LOCAL_RANK=%d WORLD_SIZE=2 %s < %s > %s" % (r, r, PACED, fifos[r],
                                                                         outs[r])
                        for r in (0, 1)) + " & wait"
    run = subprocess.Popen([CLI, "run", "-q", "-o", str(tmp_path / "run"), "--", "sh", "-c",
                            launch], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                           env=clean_env(), preexec_fn=gstest.default_signals)
    fds = []
    top = None
    try:
        for f in fifos:  # a FIFO opens for writing once its reader has it open
            def opened(f=f):
                try:
                    fds.append(os.open(f, os.O_WRONLY | os.O_NONBLOCK))
                    return True
                except OSError:
                    return False
            gstest.wait_for(opened, "rank never opened %s" % f)

        def lines_of(r):
            return outs[r].read_text().splitlines() if outs[r].exists() else []
        work = (60, 10)  # ms: rank 1 waits for data most of its step
        for i in range(8):
            for r in (0, 1):
                os.write(fds[r], bytes([work[r]]))
                gstest.wait_for(lambda r=r: len(lines_of(r)) > i,
                                "rank %d step %d never ended" % (r, i))
            time.sleep(PAUSE_S)
        truth = []
        for r in (0, 1):
            rows = [tuple(map(int, l.split()[1:])) for l in lines_of(r)]
            assert len(rows) == 8
            truth.append(sum(w for w, _ in rows) / sum(s for _, s in rows))
        assert truth[1] - truth[0] > 0.2, truth  # the rows can tell the ranks apart
        top, lines = start_top(tmp_path / "run", "-w", "600")
        line = lines.wait(lambda l: l.startswith("running") and len(PART.findall(l)) == 2 and
                          all(p[2] == "8" for p in PART.findall(l)), "top never showed both ranks")
        parts = PART.findall(line)
        assert [p[0] for p in parts] == ["0", "1"], line
        for r, p in enumerate(parts):
            assert abs(pct(p[4]) - truth[r]) <= 0.05, (line, truth)
    finally:
        for fd in fds:
            os.close(fd)
        for f in fifos:  # a rank still opening its FIFO gets EOF
            try:
                os.close(os.open(f, os.O_WRONLY | os.O_NONBLOCK))
            except OSError:
                pass
        for p in (run, top):
            if p is not None:
                try:
                    p.wait(timeout=gstest.DEADLINE_S)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()
    assert run.returncode == 0
    assert top.returncode == 0  # the run ended: top too
