"""`gpustarve sweep` beyond the DataLoader: it sweeps only what the program
has (a DataLoader setting for a program without a DataLoader is refused
after its first run; an environment variable with --set, an argument with
--set-arg), in interleaved rounds, and stops early once the fastest is
proven (examples/train_loop on the simulated GPU, tests/simcuda), or at the
budget. The sweep with a real DataLoader is in test_python_side.py.

The step times these tests compare differ by 3 to 15 times (sleeps of the
program's loader, which overlap whatever else a busy machine runs): they
assert decisions and orderings that such a difference settles, never a time.
"""
import json
import os
import re
import subprocess

import pytest

from conftest import BUILD, CLI, DEBIAN_PY, HERE, LIB, clean_env

STEPS_PY = os.path.join(HERE, "sweep_steps.py")
SIM = os.path.join(BUILD, "simcuda")
TRAIN_LOOP = os.path.join(BUILD, "examples", "train_loop")


def sweep(tmp_path, args, cmd, env=None, timeout=300):
    out, js = tmp_path / "sweep", tmp_path / "sweep.json"
    p = subprocess.run([CLI, "sweep", "-o", str(out), "--json", str(js)] + args + ["--"] + cmd,
                       env=env or clean_env(), capture_output=True, timeout=timeout)
    doc = json.loads(js.read_text()) if js.exists() else None
    return p, doc, out


def run_order(stderr):
    """The configurations in the order the sweep ran them (its progress lines)."""
    return re.findall(r"sweep: round (\d+), run \d+/\d+: (.*)", stderr.decode())


@pytest.mark.parametrize("setting", [["--num-workers", "0,2"], ["--pin-memory", "0,1"]])
def test_dataloader_setting_refused_without_a_dataloader(built, tmp_path, setting):
    """A program without a DataLoader: its first run shows it, and the
    sweep stops there with exit 2 instead of timing the same program again."""
    p, doc, out = sweep(tmp_path, setting + ["--steps", "3", "--warmup", "1"],
                        [DEBIAN_PY, STEPS_PY, "--steps", "4"])
    assert p.returncode == 2, p.stderr.decode()
    err = p.stderr.decode()
    assert "the program has no PyTorch DataLoader" in err and "--set NAME=V1,V2" in err
    assert p.stdout == b"" and doc is None
    assert len(re.findall(r"sweep: round 1, run", err)) == 1  # one run, then no more
    assert len([d for d in os.listdir(out) if not d.endswith(".log")]) == 1


def test_env_variable(built, tmp_path):
    """--set LOADER_WAIT_MS=3,30: the variable reaches each run, the rounds
    alternate their order, the shorter wait is the proven fastest."""
    p, doc, out = sweep(tmp_path, ["--set", "LOADER_WAIT_MS=3,30", "--steps", "6", "--warmup", "1",
                                   "--repeat", "4"],
                        [DEBIAN_PY, STEPS_PY, "--steps", "7"])
    assert p.returncode == 0, p.stderr.decode()
    assert doc["schema"] == "gpustarve.sweep/3" and doc["by"] == "mean"
    assert doc["swept"] == [{"name": "LOADER_WAIT_MS", "kind": "env", "values": ["3", "30"]}]
    for c in doc["configs"]:
        assert c["num_workers"] is None and c["pin_memory"] is None
        for run in c["runs"]:
            log = open(run["log"]).read()
            assert "sweep_steps: wait_ms=%s\n" % c["settings"]["LOADER_WAIT_MS"] in log
            assert os.path.basename(run["dir"]).startswith("LOADER_WAIT_MS%s-r"
                                                           % c["settings"]["LOADER_WAIT_MS"])
    assert doc["best"]["settings"] == {"LOADER_WAIT_MS": "3"}
    assert doc["best"]["certainty"] == "proven" and doc["stopped"] == "proven"
    assert doc["best"]["versus"][0]["hi"] < 0.98
    # interleaved: round 1 forwards, round 2 backwards
    order = run_order(p.stderr)
    assert order[:4] == [("1", "LOADER_WAIT_MS=3"), ("1", "LOADER_WAIT_MS=30"),
                         ("2", "LOADER_WAIT_MS=30"), ("2", "LOADER_WAIT_MS=3")]
    table = p.stdout.decode()
    assert "best   LOADER_WAIT_MS=3  (proven)" in table
    assert re.search(r"^\* 3 ", table, re.M) and "LOADER_WAIT_MS" in table.splitlines()[2]


def test_judged_by_the_time_per_step(built, tmp_path):
    """A loader that stalls 60 ms every 4th step has a typical (median) step
    like one that never stalls, and a time per step 4 times as long. The
    sweep judges each run's mean step by default, the time training is made
    of, and finds the one that never stalls the fastest; --by median judges
    the typical step, in which the stalls do not show."""
    cmd = [DEBIAN_PY, STEPS_PY, "--steps", "13"]
    args = ["--set-arg", "--stall-ms=0,60", "--steps", "12", "--warmup", "1"]
    p, doc, _ = sweep(tmp_path, args + ["--repeat", "3"], cmd)
    assert p.returncode == 0, p.stderr.decode()
    assert doc["by"] == "mean"
    assert doc["best"]["settings"] == {"--stall-ms": "0"}
    assert doc["best"]["certainty"] == "proven", doc["best"]["why"]
    by = {c["settings"]["--stall-ms"]: c for c in doc["configs"]}
    assert by["60"]["step_ms"] > 2 * by["0"]["step_ms"]
    for r in by["60"]["runs"]:  # each run's both steps, its stalls in the mean only
        assert r["step_ms_mean"] > 2 * r["step_ms_median"] > 0
    assert "each run's mean step one sample" in p.stdout.decode()
    assert "mean step" in p.stderr.decode()

    (tmp_path / "median").mkdir()
    p, doc, _ = sweep(tmp_path / "median", args + ["--repeat", "2", "--by", "median"], cmd)
    assert p.returncode == 0, p.stderr.decode()
    assert doc["by"] == "median"
    by = {c["settings"]["--stall-ms"]: c for c in doc["configs"]}
    assert by["60"]["step_ms"] < 2 * by["0"]["step_ms"]  # the stalls do not show
    for c in doc["configs"]:
        assert c["step_ms_min"] <= min(r["step_ms_median"] for r in c["runs"]) * 1.0001
    assert "each run's median step one sample" in p.stdout.decode()


def test_by_needs_mean_or_median(built, tmp_path):
    p, doc, _ = sweep(tmp_path, ["--set", "X=1,2", "--by", "p90"], [DEBIAN_PY, STEPS_PY])
    assert p.returncode == 2 and doc is None
    assert b"--by needs mean or median, not 'p90'" in p.stderr


def test_argument_replaced_where_the_command_has_it(built, tmp_path):
    p, doc, _ = sweep(tmp_path, ["--set-arg", "--wait-ms=3,30", "--steps", "4", "--warmup", "1",
                                 "--repeat", "1"],
                      [DEBIAN_PY, STEPS_PY, "--wait-ms", "9", "--steps", "5"])
    assert p.returncode == 0, p.stderr.decode()
    assert doc["swept"][0]["kind"] == "arg"
    for c in doc["configs"]:
        log = open(c["runs"][0]["log"]).read()
        assert "wait_ms=%s\n" % c["settings"]["--wait-ms"] in log and "wait_ms=9" not in log
    # one round proves nothing, however far apart
    assert doc["best"]["settings"] == {"--wait-ms": "3"}
    assert doc["best"]["certainty"] == "not_proven" and doc["best"]["confidence"] is None
    assert "not proven: one run each" in p.stdout.decode()


@pytest.fixture(scope="module")
def sim():
    for path in (os.path.join(SIM, "libcudart.so.13"), TRAIN_LOOP, LIB):
        if not os.path.exists(path):
            pytest.skip("%s not built (needs the CUDA toolkit and nvcc)" % path)
    return clean_env(LD_LIBRARY_PATH=os.path.abspath(SIM),
                     SIMCUDA_KERNEL_US="train_step_kernel=5000")


def loop(*extra):
    return [TRAIN_LOOP, "--load-ms", "30", "--kernel-ms", "5", "--batch-mb", "1",
            "--steps", "18"] + list(extra)


def test_stops_early_on_a_clear_winner(built, tmp_path, sim):
    """The CUDA loop on the simulated GPU, its loader threads swept as an
    argument it has (--workers, added to its command line): 1 thread makes a
    30 ms step, 4 threads the 5 ms kernel's. Proven after a few of the 8
    rounds allowed, and the sweep stops there and says so."""
    p, doc, _ = sweep(tmp_path, ["--set-arg", "--workers=1,4", "--steps", "14", "--warmup", "2",
                                 "--repeat", "8"], loop(), env=sim)
    assert p.returncode == 0, p.stderr.decode()
    assert doc["best"]["settings"] == {"--workers": "4"}
    assert doc["stopped"] == "proven" and doc["best"]["proven"] is True
    assert 2 <= doc["rounds"] < 8
    assert b"stopping early" in p.stderr
    assert "stopped early: the fastest is proven" in p.stdout.decode()
    for c in doc["configs"]:
        assert len(c["runs"]) == doc["rounds"] and c["measured_runs"] == doc["rounds"]
        assert c["step_ms_lo"] <= c["step_ms"] <= c["step_ms_hi"]


def test_budget_in_runs(built, tmp_path, sim):
    """--budget 3 with two configurations: a second round would make 4 runs."""
    p, doc, _ = sweep(tmp_path, ["--set-arg", "--workers=1,4", "--steps", "6", "--warmup", "1",
                                 "--budget", "3"], loop(), env=sim)
    assert p.returncode == 0, p.stderr.decode()
    assert doc["rounds"] == 1 and doc["stopped"] == "budget"
    assert doc["budget"] == {"runs": 3, "seconds": None} and doc["max_rounds"] == 64
    assert doc["best"]["certainty"] == "not_proven"
    assert "stopped at the --budget" in p.stdout.decode()
