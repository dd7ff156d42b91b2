"""`gpustarve run` and the other processes busy as it starts the program
(analyzer/cmd/run_peers.c; docs/report-schema.md, "The model"): a CPU
burner of the test's own session is counted in the run's scheduling group,
one started in a session of its own (setsid) in another; the collector
records what `gpustarve run` measured, and the model of the spinning
loader thread beside it takes the load as yielding (shared thread by
thread) only in the first case (and only where the burner is most of
the machine's other load: on a busy machine other sessions' load counts
as another group's). The reading lies beside the program's start, in
<host>-<pid>.peers in the run directory: the program itself, however busy,
is never counted; the report takes what stands at that name only when it
is one line of counts.

The burner is tests/tools/cpu_load.py; a burner on a loaded machine gets
less than a core, so the counts are held to a fifth of one."""
import glob
import json
import os
import shutil
import subprocess

import pytest

from conftest import BUILD, CLI, PY, ROOT, clean_env, run_traced

LOAD_TOOL = os.path.join(ROOT, "tests", "tools", "cpu_load.py")
TRAIN_LOOP = os.path.join(BUILD, "examples", "train_loop")
SIM = os.path.join(BUILD, "simcuda")
SEEN = 0.2  # cores: a steady burner counted (it may get less than one on a busy machine)


class Burner:
    def __init__(self, own_session):
        self.own_session = own_session

    def __enter__(self):
        self.p = subprocess.Popen([PY, LOAD_TOOL, "--busy-ms", "100", "--sleep-ms", "0",
                                   "--seconds", "120"], stdout=subprocess.PIPE, env=clean_env(),
                                  text=True, start_new_session=self.own_session)
        line = self.p.stdout.readline()
        assert line.startswith("ready"), line
        return self

    def __exit__(self, *exc):
        self.p.terminate()
        self.p.communicate(timeout=60)
        return False


def peers(run_dir, cmd=(PY, "-c", "pass")):
    """What `gpustarve run` left beside the traces as cmd started: (same, other)."""
    p = run_traced(list(cmd), run_dir, env=clean_env())
    assert p.returncode == 0, p.stderr.decode()
    files = glob.glob(os.path.join(str(run_dir), "*.peers"))
    assert len(files) == 1, files
    pid = min(int(f.rsplit("-", 1)[1].split(".")[0]) for f in glob.glob(os.path.join(str(run_dir), "*.gst")))
    assert files[0].endswith("-%d.peers" % pid), (files, pid)  # the program's pid
    with open(files[0]) as f:
        text = f.read()
    assert text.endswith("\n") and text.count("\n") == 1, text
    same, other = (float(kv.split("=")[1]) for kv in text.split())
    return same, other


def peers_seen(tmp_path, own_session):
    """(same, other) beside the burner, and without it first (the load
    the machine had in each group: a busy machine's own)."""
    base = peers(tmp_path / "base")
    with Burner(own_session):
        return peers(tmp_path / "run"), base


def test_a_burner_of_this_session_is_in_the_runs_group(built, tmp_path):
    (same, _), _ = peers_seen(tmp_path, False)
    assert same >= SEEN, same


def test_a_burner_of_its_own_session_is_in_another_group(built, tmp_path):
    """The burner adds to the other groups' load, not to the run's group's
    (beside 2 CPU burners of the test's session: that group had 1.08 cores
    busy before the burner and about as much with it)."""
    (same, other), (same0, _) = peers_seen(tmp_path, True)
    assert other >= SEEN, other
    assert same < same0 + SEEN, (same0, same)


def test_the_program_itself_is_never_counted(built, tmp_path):
    """The reading is taken beside the program's start: a program that
    burns a CPU from its first instant (and a child that burns another)
    adds nothing to the run's group beyond what the machine had.
    The machine's own load moves between two readings beside CPU burners
    (1.21 then 1.69 cores in one stress run): a program counted would add
    its cores to every pair, so the pair is taken up to 3 times."""
    burn = ("import os, time\n"
            "def spin(s):\n"
            "    t = time.time() + s\n"
            "    while time.time() < t: pass\n"
            "if os.fork() == 0:\n"
            "    spin(0.3); os._exit(0)\n"
            "spin(0.3); os.wait()\n")
    pairs = []
    for k in range(3):
        same0, _ = peers(tmp_path / ("base%d" % k))
        same, _ = peers(tmp_path / ("run%d" % k), (PY, "-c", burn))
        pairs.append((same0, same))
        if same < same0 + SEEN:
            return
    assert False, pairs


def need_train_loop():
    if not os.path.exists(TRAIN_LOOP) or not os.path.exists(os.path.join(SIM, "libcudart.so.13")):
        pytest.skip("train_loop or the simulated GPU was not built (needs nvcc)")


@pytest.fixture(scope="module")
def loop_beside_burner(built, tmp_path_factory):
    """A short train_loop run traced beside a burner of this session."""
    need_train_loop()
    d = tmp_path_factory.mktemp("peers-loop") / "run"
    with Burner(False):
        p = run_traced([TRAIN_LOOP, "--workers", "1", "--load-ms", "20", "--kernel-ms", "10",
                        "--steps", "20"], d, env=clean_env(LD_LIBRARY_PATH=SIM))
    assert p.returncode == 0, p.stderr.decode()
    return d


def model_of(run_dir):
    r = subprocess.run([CLI, "report", "--json", str(run_dir)], capture_output=True, timeout=120)
    assert r.returncode == 0, r.stderr.decode()
    return json.loads(r.stdout)["model"]


def test_a_trainer_below_the_command_takes_the_commands_reading(built, tmp_path):
    """The command is a shell that starts the trainer as its child: the
    file names the shell, and the report's model takes its numbers for the
    trainer below it, as written."""
    need_train_loop()
    d = tmp_path / "run"
    loop = "%s --workers 1 --load-ms 20 --kernel-ms 10 --steps 20; true" % TRAIN_LOOP
    p = run_traced(["/bin/sh", "-c", loop], d, env=clean_env(LD_LIBRARY_PATH=SIM))
    assert p.returncode == 0, p.stderr.decode()
    files = glob.glob(os.path.join(str(d), "*.peers"))
    assert len(files) == 1, files
    with open(files[0]) as f:
        same, other = (float(kv.split("=")[1]) for kv in f.read().split())
    m = model_of(d)
    assert (m["busy_at_start_same_group_cores"], m["busy_at_start_other_groups_cores"]) == \
        pytest.approx((same, other), abs=0.006), (m, same, other)


@pytest.mark.parametrize("content", ["fifo", "same=-1 other=0\n", "same=nan other=0\n",
                                     "x" * 100000, "same=1e300 other=0\n"])
def test_the_report_takes_only_a_line_of_counts(loop_beside_burner, tmp_path, content):
    """Whatever stands at the .peers name that is not one line of counts
    (a FIFO nobody writes, negative, not a number, huge, a long file) is
    left out: the report neither blocks nor takes it; the file as `run`
    wrote it is taken."""
    assert model_of(loop_beside_burner)["busy_at_start_same_group_cores"] >= SEEN
    d = tmp_path / "run"
    shutil.copytree(str(loop_beside_burner), str(d))
    f = glob.glob(os.path.join(str(d), "*.peers"))[0]
    os.unlink(f)
    if content == "fifo":
        os.mkfifo(f, 0o600)
    else:
        with open(f, "w") as fh:
            fh.write(content)
    m = model_of(d)
    assert m["busy_at_start_same_group_cores"] is None, m
    assert m["busy_at_start_other_groups_cores"] is None, m


@pytest.mark.parametrize("own_session", [False, True], ids=["same-session", "own-session"])
def test_the_model_reads_whether_the_load_yields(built, tmp_path, own_session):
    """One spinning loader thread with the trainer asleep in the GPU sync,
    beside the burner: the report's model says what the start measured,
    and takes the worst load as shared thread by thread only when the
    burner is of the run's session."""
    need_train_loop()
    with Burner(own_session):
        p = run_traced([TRAIN_LOOP, "--workers", "1", "--spin", "1", "--load-ms", "50",
                        "--kernel-ms", "20", "--steps", "40"], tmp_path / "run",
                       env=clean_env(LD_LIBRARY_PATH=SIM))
    assert p.returncode == 0, p.stderr.decode()
    m = model_of(tmp_path / "run")
    if own_session:
        assert m["busy_at_start_other_groups_cores"] >= SEEN, m
    else:
        assert m["busy_at_start_same_group_cores"] >= SEEN, m
    if m["other_load_worst_cores"] is None:
        pytest.skip("the other load was not measured over the steps: no range")
    same, other = m["busy_at_start_same_group_cores"], m["busy_at_start_other_groups_cores"]
    # the rule (an_workers_model.c, yields): at least 0.8 of the busy load in
    # the run's group; other sessions' load on a busy machine counts as other
    assert m["other_load_yields"] is (same + other >= 0.1 and same >= 0.8 * (same + other)), m
    if own_session:
        assert m["other_load_yields"] is False, m
