"""gpustarve's Python side and marker API, end to end: real PyTorch
DataLoader programs (examples/pytorch/train.py) under `gpustarve run`, with
Debian's torch 1.13 and with torch 2.x from .venv (see conftest.py), read back
through the trace reader.

    /usr/bin/python3 -m pytest -q tests/python         (both interpreters)
    GS_TEST_PYTHON=.venv/bin/python python3 -m pytest tests/python
"""
import json
import os
import subprocess

import pytest

import gstest
from conftest import (BUILD, CLI, DEBIAN_PY, HERE, LIB, PYDIR, ROOT, TRAIN, clean_env, interpreters,
                      run_plain, run_traced, train_summary)

PYS = interpreters()
# RATIONALE: a small sleep per file makes the loader take a known part of
# each step (the sweep below needs a larger one, SWEEP_DELAY).
DELAY = "1.5"


def train_cmd(py, images, *extra, delay=DELAY):
    return [py, TRAIN, "--data", images, "--batch-size", "8", "--read-delay-ms", delay] + \
        [str(x) for x in extra]


def worker_roles(m, loader=0):
    return sorted((r["aux"], r["pid"]) for r in m.roles("loader_worker") if r["aux2"] == loader)


# ---- steps, configuration and data wait for num_workers 0, 2, 3 ----------------

@pytest.mark.parametrize("py", PYS)
@pytest.mark.parametrize("workers", [0, 2, 3])
def test_steps_config_and_data_wait(built, read_markers, images, tmp_path, py, workers):
    p = run_traced(train_cmd(py, images, "--num-workers", workers), tmp_path / "run")
    assert p.returncode == 0, p.stderr.decode()
    own = train_summary(p.stderr)
    m = read_markers(tmp_path / "run")
    # one step per batch: 96 images / 8 = 12 batches, each a complete step
    steps = m.steps(0)
    assert own["steps"] == 12
    assert [s[0] for s in steps] == list(range(12))
    # every fetch is paired; the 13th finds the end of the epoch
    assert len(m.fetches(0)) == 13
    # the trainer's markers come from the training thread of one process;
    # the workers' own, from each worker's main thread: each of the 12
    # batches loaded once, in a worker (docs/python.md, "Worker batches")
    wp = m.worker_pids()
    assert len({(r["pid"], r["tid"]) for r in m.marks if r["kind"] != "role" and
                r["kind"] != "config" and r["pid"] not in wp}) == 1
    loaded = [r for r in m.marks if r["pid"] in wp and r["kind"] not in ("role", "config")]
    assert {(r["pid"], r["tid"]) for r in loaded} <= {(p, p) for p in wp}
    assert {r["kind"] for r in loaded} <= {"fetch_begin", "fetch_end"}
    assert sorted(b for b, _, _ in m.fetches(0, workers=True)) == \
        (list(range(12)) if workers else [])
    cfg = m.config(0)
    assert cfg["num_workers"] == str(workers)
    assert cfg["pin_memory"] == "0"
    assert cfg["batch_size"] == "8"
    assert cfg["persistent_workers"] == "0"
    assert cfg["drop_last"] == "0"
    assert cfg["dataset"] == "RawImages"
    assert cfg["sampler"].endswith("RandomSampler")
    assert cfg["prefetch_factor"] == ("2" if workers else "none")
    assert cfg["multiprocessing_context"] == ("fork" if workers else "none")
    assert cfg["sharing_strategy"] == ("file_descriptor" if workers else "none")
    assert cfg["torch_version"].split(".")[0] in ("1", "2")
    # workers tagged 0..n-1, one process each; the trainer tagged once
    roles = worker_roles(m)
    assert [w for w, _ in roles] == list(range(workers))
    assert len({pid for _, pid in roles}) == workers
    assert len(m.roles("trainer")) == 1
    # the data-wait share seen by the markers is the one the script measured
    share = m.data_wait_share(0)
    assert abs(share - own["data_wait_share"]) <= 0.05, (share, own)


# ---- multiprocessing contexts -----------------------------------------------------

@pytest.mark.parametrize("py", PYS)
@pytest.mark.parametrize("ctx", ["spawn", "forkserver"])
def test_spawn_and_forkserver_workers(built, read_markers, images, tmp_path, py, ctx):
    # RATIONALE: torch 1.13 itself sometimes aborts a spawn worker that is
    # shut down soon after it started ("terminate called without an active
    # exception", and "DataLoader worker ... is killed by signal: Aborted"
    # when the trainer is still there to notice): 4 of 40 untraced runs of
    # this command here. A worker killed by SIGABRT
    # keeps only what it flushed, so such a run says nothing about tagging;
    # run again (at most twice more) when torch reports that abort.
    for attempt in range(3):
        run = tmp_path / ("run%d" % attempt)
        p = run_traced(train_cmd(py, images, "--num-workers", 2, "--mp-context", ctx,
                                 "--steps", 6), run)
        if (b"is killed by signal: Aborted" not in p.stderr and
                b"terminate called without an active exception" not in p.stderr):
            break
    assert p.returncode == 0, p.stderr.decode()
    m = read_markers(run)
    assert len(m.steps(0)) == 6
    assert m.config(0)["multiprocessing_context"] == ctx
    roles = worker_roles(m)
    assert [w for w, _ in roles] == [0, 1], m.roles("loader_worker")
    # the workers exec'd a fresh interpreter (spawn) or were forked from the
    # fork server: either way not the trainer, and traced
    trainer = m.roles("trainer")[0]["pid"]
    assert trainer not in {pid for _, pid in roles}


# ---- persistent workers over two epochs -------------------------------------------

@pytest.mark.parametrize("py", PYS)
def test_persistent_workers_two_epochs(built, read_markers, images, tmp_path, py):
    p = run_traced(train_cmd(py, images, "--num-workers", 2, "--persistent-workers",
                             "--epochs", 2), tmp_path / "run")
    assert p.returncode == 0, p.stderr.decode()
    assert train_summary(p.stderr)["steps"] == 24
    m = read_markers(tmp_path / "run")
    steps = m.steps(0)
    assert [s[0] for s in steps] == list(range(24))
    # steps do not overlap, and the workers were started once
    assert all(a[2] <= b[1] for a, b in zip(steps, steps[1:]))
    assert [w for w, _ in worker_roles(m)] == [0, 1]
    assert m.config(0)["persistent_workers"] == "1"
    assert len([r for r in m.of("config", 0) if r["text"].startswith("num_workers=")]) == 1


@pytest.mark.parametrize("py", PYS)
def test_workers_started_each_epoch_are_one_worker_count(built, read_markers, images, tmp_path,
                                                         py):
    """Without persistent_workers torch starts the 2 workers again every
    epoch: 4 processes over 2 epochs, which the report counts as the same 2
    workers (docs/report-schema.md, "Loader numbers")."""
    p = run_traced(train_cmd(py, images, "--num-workers", 2, "--epochs", 2), tmp_path / "run")
    assert p.returncode == 0, p.stderr.decode()
    m = read_markers(tmp_path / "run")
    assert sorted(w for w, _ in worker_roles(m)) == [0, 0, 1, 1]  # 2 processes per worker id
    rep = subprocess.run([CLI, "report", "--json", str(tmp_path / "run")], capture_output=True,
                         timeout=120)
    assert rep.returncode == 0, rep.stderr.decode()
    loader = json.loads(rep.stdout)["loader"]
    assert loader["workers_seen"] == 2 and loader["worker_processes"] == 4
    txt = subprocess.run([CLI, "report", str(tmp_path / "run")], capture_output=True,
                         timeout=120).stdout.decode()
    assert "2 loader workers" in txt and "2 workers (4 processes: started again each epoch)" in txt


# ---- a train and a validation loader ------------------------------------------------

@pytest.mark.parametrize("py", PYS)
def test_train_and_validation_loaders_kept_apart(built, read_markers, images, tmp_path, py):
    # 72 training images (9 batches), 24 validation images (3 batches), 2 epochs
    p = run_traced(train_cmd(py, images, "--num-workers", 2, "--val-samples", 24,
                             "--epochs", 2), tmp_path / "run")
    assert p.returncode == 0, p.stderr.decode()
    own = train_summary(p.stderr)
    assert own["steps"] == 18 and own["val_batches"] == 6
    m = read_markers(tmp_path / "run")
    train, val = m.steps(0), m.steps(1)
    assert [s[0] for s in train] == list(range(18))
    assert [s[0] for s in val] == list(range(6))
    # apart in time: each validation step lies between training steps
    for _, v0, v1 in val:
        assert all(t1 <= v0 or t0 >= v1 for _, t0, t1 in train)
    # each loader has its configuration and its own workers
    assert m.config(0)["sampler"].endswith("RandomSampler")
    assert m.config(1)["sampler"].endswith("SequentialSampler")
    assert [w for w, _ in worker_roles(m, 0)] == [0, 0, 1, 1]  # re-created each epoch
    assert [w for w, _ in worker_roles(m, 1)] == [0, 0, 1, 1]


# ---- overrides and GPUSTARVE_STEPS, by hand ------------------------------------------

@pytest.mark.parametrize("py", PYS)
def test_environment_overrides_and_steps(built, read_markers, images, tmp_path, py):
    env = clean_env(GPUSTARVE_NUM_WORKERS="2", GPUSTARVE_PIN_MEMORY="1", GPUSTARVE_STEPS="5")
    p = run_traced(train_cmd(py, images, "--num-workers", 0, "--epochs", 3), tmp_path / "run",
                   env=env)
    assert p.returncode == 0, p.stderr.decode()
    assert b"GPUSTARVE_STEPS=5" in p.stderr
    assert b"train.py {" not in p.stderr  # ended before its own summary
    m = read_markers(tmp_path / "run")
    assert [s[0] for s in m.steps(0)] == [0, 1, 2, 3, 4]
    cfg = m.config(0)
    assert cfg["num_workers"] == "2" and cfg["requested.num_workers"] == "0"
    assert cfg["pin_memory"] == "1" and cfg["requested.pin_memory"] == "0"
    assert cfg["pin_memory_effective"] == "0"  # no GPU here
    assert cfg["gpustarve_steps"] == "5"
    assert [w for w, _ in worker_roles(m)] == [0, 1]


@pytest.mark.parametrize("py", PYS)
def test_override_to_zero_workers_drops_worker_options(built, read_markers, images, tmp_path,
                                                         py):
    """num_workers forced to 0 on a loader built with persistent workers and a
    context: torch would refuse those options, so they go back to defaults."""
    env = clean_env(GPUSTARVE_NUM_WORKERS="0", GPUSTARVE_STEPS="3")
    p = run_traced(train_cmd(py, images, "--num-workers", 2, "--persistent-workers",
                             "--mp-context", "spawn"), tmp_path / "run", env=env)
    assert p.returncode == 0, p.stderr.decode()
    m = read_markers(tmp_path / "run")
    cfg = m.config(0)
    assert cfg["num_workers"] == "0" and cfg["requested.num_workers"] == "2"
    assert cfg["persistent_workers"] == "0" and cfg["requested.persistent_workers"] == "1"
    assert len(m.steps(0)) == 3
    assert not m.roles("loader_worker")


@pytest.mark.parametrize("py", PYS)
def test_prefetch_and_persistent_overrides(built, read_markers, images, tmp_path, py):
    """GPUSTARVE_PREFETCH_FACTOR and GPUSTARVE_PERSISTENT_WORKERS reach a
    loader with workers; one without workers keeps its own, with a warning."""
    env = clean_env(GPUSTARVE_PREFETCH_FACTOR="4", GPUSTARVE_PERSISTENT_WORKERS="1",
                    GPUSTARVE_STEPS="3")
    p = run_traced(train_cmd(py, images, "--num-workers", 2), tmp_path / "run", env=env)
    assert p.returncode == 0, p.stderr.decode()
    cfg = read_markers(tmp_path / "run").config(0)
    # the program gave none: torch's default (2) was in force
    assert cfg["prefetch_factor"] == "4" and cfg["requested.prefetch_factor"] == "none"
    assert cfg["persistent_workers"] == "1" and cfg["requested.persistent_workers"] == "0"
    assert b"GPUSTARVE_PREFETCH_FACTOR" not in p.stderr
    p = run_traced(train_cmd(py, images, "--num-workers", 0), tmp_path / "run0", env=env)
    assert p.returncode == 0, p.stderr.decode()
    cfg = read_markers(tmp_path / "run0").config(0)
    assert cfg["prefetch_factor"] == "none" and cfg["persistent_workers"] == "0"
    assert "requested.prefetch_factor" not in cfg
    assert b"a DataLoader without workers takes neither" in p.stderr
    bad = clean_env(GPUSTARVE_PREFETCH_FACTOR="0", GPUSTARVE_STEPS="2")
    p = run_traced(train_cmd(py, images, "--num-workers", 1), tmp_path / "bad", env=bad)
    assert p.returncode == 0 and b"GPUSTARVE_PREFETCH_FACTOR=0 is not a number >= 1" in p.stderr


@pytest.mark.parametrize("py", PYS)
def test_sharing_strategy_override(built, read_markers, images, tmp_path, py):
    """GPUSTARVE_SHARING_STRATEGY sets torch.multiprocessing's strategy
    before the workers start; the configuration records the one in force,
    and a name torch does not know is ignored with one line."""
    env = clean_env(GPUSTARVE_SHARING_STRATEGY="file_system", GPUSTARVE_STEPS="3")
    p = run_traced(train_cmd(py, images, "--num-workers", 2), tmp_path / "run", env=env)
    assert p.returncode == 0, p.stderr.decode()
    assert read_markers(tmp_path / "run").config(0)["sharing_strategy"] == "file_system"
    bad = clean_env(GPUSTARVE_SHARING_STRATEGY="by_carrier_pigeon", GPUSTARVE_STEPS="2")
    p = run_traced(train_cmd(py, images, "--num-workers", 1), tmp_path / "bad", env=bad)
    assert p.returncode == 0, p.stderr.decode()
    assert p.stderr.count(b"GPUSTARVE_SHARING_STRATEGY=by_carrier_pigeon is not one of "
                          b"file_descriptor, file_system; ignored") == 1
    assert read_markers(tmp_path / "bad").config(0)["sharing_strategy"] == "file_descriptor"


SPAWNED = """
import sys
import torch
from torch.utils.data import DataLoader, TensorDataset

if __name__ == "__main__":
    if sys.argv[1:] == ["trainer"]:
        torch.multiprocessing.set_sharing_strategy("file_system")
    data = TensorDataset(torch.arange(48.0).reshape(48, 1))
    for _ in DataLoader(data, batch_size=8, num_workers=2, multiprocessing_context="spawn"):
        pass
"""


@pytest.mark.parametrize("py", PYS)
def test_spawned_workers_sharing_strategy(built, read_markers, tmp_path, py):
    """A spawned worker has a torch.multiprocessing of its own, and its
    strategy decides how its tensors travel: the trainer's does not reach
    it. Each worker records its own (docs/python.md); the report's
    dataloader.sharing_strategy is theirs; GPUSTARVE_SHARING_STRATEGY is
    applied in each worker too."""
    script = tmp_path / "spawned.py"
    script.write_text(SPAWNED)
    p = run_traced([py, str(script), "trainer"], tmp_path / "trainer")
    assert p.returncode == 0, p.stderr.decode()
    m = read_markers(tmp_path / "trainer")
    assert m.config(0)["sharing_strategy"] == "file_system"
    workers = m.worker_config(0)
    assert len(workers) == 2
    assert {c["sharing_strategy"] for c in workers.values()} == {"file_descriptor"}
    r = run_plain([CLI, "report", "--json", str(tmp_path / "trainer")], env=clean_env())
    assert r.returncode == 0, r.stderr.decode()
    assert json.loads(r.stdout)["dataloader"]["sharing_strategy"] == "file_descriptor"

    env = clean_env(GPUSTARVE_SHARING_STRATEGY="file_system")
    p = run_traced([py, str(script)], tmp_path / "override", env=env)
    assert p.returncode == 0, p.stderr.decode()
    workers = read_markers(tmp_path / "override").worker_config(0)
    assert {c["sharing_strategy"] for c in workers.values()} == {"file_system"}


# ---- programs that are not PyTorch training loops --------------------------------------

@pytest.mark.parametrize("py", PYS)
def test_script_without_torch_runs_unchanged(built, tmp_path, py):
    script = os.path.join(HERE, "no_torch.py")
    plain = run_plain([py, script, "3", "x y"], env=clean_env(PYTHONPATH=""))
    traced = run_traced([py, script, "3", "x y"], tmp_path / "run")
    assert plain.returncode == traced.returncode == 3
    assert traced.stdout == plain.stdout
    out = json.loads(traced.stdout)
    assert out["torch_modules"] == []
    assert b"gpustarve_loaded=True" in traced.stderr


@pytest.mark.parametrize("py", PYS)
def test_user_sitecustomize_still_runs(built, tmp_path, py):
    user = os.path.join(HERE, "usersite")
    env = clean_env(PYTHONPATH=PYDIR + os.pathsep + user)
    traced = run_traced([py, os.path.join(HERE, "no_torch.py")], tmp_path / "run", env=env)
    assert traced.returncode == 0, traced.stderr.decode()
    out = json.loads(traced.stdout)
    assert out["user_sitecustomize"] == os.path.join(user, "sitecustomize.py")
    # `import sitecustomize` gives the program its own module, not ours
    assert out["sitecustomize_file"] == os.path.join(user, "sitecustomize.py")
    assert b"gpustarve_loaded=True" in traced.stderr


@pytest.mark.parametrize("py", PYS)
def test_distribution_sitecustomize_still_runs(built, tmp_path, py):
    """Without a user one, the interpreter's own (Debian's) is chained to."""
    plain = run_plain([py, "-c", "import sitecustomize, sys; print(sitecustomize.__file__)"],
                      env=clean_env(PYTHONPATH=""))
    traced = run_traced([py, "-c", "import sitecustomize, sys; print(sitecustomize.__file__)"],
                        tmp_path / "run")
    assert traced.returncode == 0, traced.stderr.decode()
    if plain.returncode == 0:
        assert traced.stdout == plain.stdout


@pytest.mark.parametrize("py", PYS)
def test_import_without_preload_does_nothing(built, py):
    code = (
        "import sys, gpustarve\n"
        "assert 'torch' not in sys.modules\n"
        "assert gpustarve.active() is False and gpustarve.install() is False\n"
        "gpustarve.step_begin(1); gpustarve.fetch_begin(1); gpustarve.fetch_end(1)\n"
        "gpustarve.step_end(1); gpustarve.config('k', 'v'); gpustarve.role('trainer')\n"
        "from torch.utils.data import DataLoader\n"
        "import torch.utils.data.dataloader as dl\n"
        "assert not hasattr(dl._BaseDataLoaderIter.__next__, '_gpustarve_wrapper')\n"
        "assert not any(type(f).__module__.startswith('gpustarve') for f in sys.meta_path)\n"
        "print('ok')\n")
    p = run_plain([py, "-c", code])
    assert p.returncode == 0, p.stderr.decode()
    assert p.stdout == b"ok\n" and p.stderr == b""


@pytest.mark.parametrize("py", PYS)
def test_import_after_torch_under_preload(built, read_markers, tmp_path, py):
    """`import gpustarve` after torch (no sitecustomize) instruments at once."""
    code = (
        "import torch, sys\n"
        "from torch.utils.data import DataLoader\n"
        "import gpustarve\n"
        "assert gpustarve.active()\n"
        "n = sum(1 for _ in DataLoader(list(range(20)), batch_size=4))\n"
        "print(n)\n")
    env = clean_env()
    del env["PYTHONPATH"]  # no sitecustomize of ours: only the explicit import
    p = run_traced([py, "-c", "import sys; sys.path.insert(0, %r)\n" % PYDIR + code],
                   tmp_path / "run", env=env)
    assert p.returncode == 0, p.stderr.decode()
    assert p.stdout == b"5\n"
    m = read_markers(tmp_path / "run")
    assert [s[0] for s in m.steps(0)] == [0, 1, 2, 3, 4]


FORWARD_HOOK = r"""
import json, os, sys
import torch
import torch.nn.modules.module as mm

hooks = lambda: len(mm._global_forward_pre_hooks)
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.ReLU(), torch.nn.Linear(4, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x = torch.ones(2, 4)
seen, outs = [], []
for step in range(3):
    out = model(x)  # the first forward after an update ends the span
    seen.append(hooks())
    outs.append(out.sum().item())
    out.sum().backward()
    opt.step()
    opt.zero_grad()
    seen.append(hooks())  # armed: registered until the next forward
pid = os.fork()
if pid == 0:  # a forked child starts disarmed: no hook, no marker
    ok = hooks() == 0
    model(x)
    os._exit(0 if ok else 3)
_, status = os.waitpid(pid, 0)
model(x)
print(json.dumps({"hooks": seen, "after": hooks(), "outs": outs, "child": status}))
"""


@pytest.mark.parametrize("py", PYS)
def test_forward_hook_comes_and_goes(built, read_markers, tmp_path, py):
    """The first module forward after each update writes one `forward`
    marker (docs/python.md, "Steps without a DataLoader"): torch's global
    forward pre-hook is registered at the update and gone after that
    forward, the module's outputs are the untraced ones, and a forked child
    starts without it and writes none."""
    script = tmp_path / "fwd.py"
    script.write_text(FORWARD_HOOK)
    plain = subprocess.run([py, str(script)], capture_output=True, timeout=300,
                           env=clean_env(PYTHONPATH=PYDIR, LD_PRELOAD=None))
    traced = run_traced([py, str(script)], tmp_path / "run", env=clean_env())
    assert plain.returncode == 0, plain.stderr.decode()
    assert traced.returncode == 0, traced.stderr.decode()
    a, b = json.loads(plain.stdout), json.loads(traced.stdout)
    assert a["hooks"] == [0] * 6 and a["after"] == 0, a
    assert b["hooks"] == [0, 1, 0, 1, 0, 1], b  # armed after each update, gone at the forward
    assert b["after"] == 0 and b["child"] == 0, b
    assert a["outs"] == b["outs"]
    m = read_markers(tmp_path / "run")
    fwd = [r for r in m.marks if r["kind"] == "fetch_end" and r["aux2"] >> 24 == 8]
    # the forwards of steps 1 and 2 and the parent's last; none in the child
    assert len(fwd) == 3, fwd
    assert {r["pid"] for r in fwd} == {r["pid"] for r in m.roles("trainer")}, fwd


# ---- sweep ------------------------------------------------------------------------------

# RATIONALE: 20 ms per image (160 ms of sleep per batch of 8) for the sweep:
# beside two CPU burners a CPU step of the model took ~80 ms and two worker
# processes added ~40 ms of their own CPU to it, so 1.5 ms per image (12 ms a
# batch) no longer made the loader what limits the step, and the sweep rightly
# picked 0 workers. Sleep overlaps across workers however busy the CPUs are.
SWEEP_DELAY = "20"


@pytest.mark.parametrize("py", PYS)
def test_sweep_picks_more_workers_when_loader_bound(built, images, tmp_path, py):
    out = tmp_path / "sweep"
    js = tmp_path / "sweep.json"
    p = subprocess.run([CLI, "sweep", "--num-workers", "0,2", "--steps", "8", "--warmup", "2",
                        "--repeat", "3", "-o", str(out), "--json", str(js), "--"] +
                       train_cmd(py, images, "--epochs", 3, delay=SWEEP_DELAY),
                       env=clean_env(), capture_output=True, timeout=300)
    assert p.returncode == 0, p.stderr.decode()
    table = p.stdout.decode()
    best = [ln for ln in table.splitlines() if ln.startswith("*")]
    assert len(best) == 1 and best[0].split()[1] == "2", table
    assert "best   num_workers=2" in table
    doc = json.loads(js.read_text())
    assert doc["schema"] == "gpustarve.sweep/3"
    assert doc["best"]["num_workers"] == 2 and doc["best"]["settings"] == {"num_workers": 2}
    assert 2 <= doc["rounds"] <= 3  # one round proves nothing
    by_nw = {c["num_workers"]: c for c in doc["configs"]}
    assert by_nw[2]["step_ms"] < by_nw[0]["step_ms"]
    # without workers the trainer itself sleeps DELAY per image of its batch
    # of 8 inside every fetch: at least that share of its longest step. (That
    # 2 workers wait less than 0 holds on an idle machine only: on a loaded
    # one they compete with the trainer for the CPU; 0.32 against 0.45 was
    # seen beside two CPU burners.)
    assert by_nw[0]["data_wait_share"] >= 0.99 * 8 * float(SWEEP_DELAY) / by_nw[0]["step_ms_max"], \
        by_nw[0]
    assert all(0 <= c["data_wait_share"] <= 1 for c in doc["configs"])
    for c in doc["configs"]:
        run = c["runs"][0]
        assert run["exit"] == 0 and run["steps"] == 8 and run["not_applied"] is None
        assert os.path.isdir(run["dir"]) and os.path.isfile(run["log"])
        assert c["source"] == "markers"  # the steps came from the DataLoader markers
        # the sweep's numbers are the report's own (the same analysis, in process)
        rep = subprocess.run([CLI, "report", "--json", "--skip", "2", run["dir"]],
                             capture_output=True, timeout=120)
        assert rep.returncode == 0, rep.stderr.decode()
        r = json.loads(rep.stdout)
        assert run["step_ms_median"] == pytest.approx(r["step_ms"]["median"], abs=1e-4)
        assert run["step_ms_mean"] == pytest.approx(r["step_ms"]["mean"], abs=1e-4)
        assert run["data_wait_share"] == pytest.approx(r["share"]["idle_data_wait"], abs=1e-5)
        assert run["pageable_copy_ms"] == pytest.approx(
            r["median_ms"]["idle_pageable_copy"] + r["median_ms"]["gpu_h2d_pageable"], abs=1e-4)
        assert run["verdict"] == r["verdict"]["label"]
        assert run["steps"] == r["steps"]["measured"]
    assert b"sweep: round 1, run 2/2" in p.stderr  # progress on stderr


def test_sweep_sharing_strategy_reaches_spawned_workers(built, read_markers, images, tmp_path):
    """--sharing-strategy sweeps torch.multiprocessing's strategy: each run
    has it in the trainer and in every worker, spawned ones too (which do
    not inherit the trainer's), and the JSON keeps the names."""
    out, js = tmp_path / "sweep", tmp_path / "sweep.json"
    p = subprocess.run([CLI, "sweep", "--sharing-strategy", "file_descriptor,file_system",
                        "--steps", "4", "--warmup", "1", "--repeat", "1", "-o", str(out),
                        "--json", str(js), "--"] +
                       train_cmd(DEBIAN_PY, images, "--num-workers", 2, "--mp-context", "spawn"),
                       env=clean_env(), capture_output=True, timeout=300)
    assert p.returncode == 0, p.stderr.decode()
    doc = json.loads(js.read_text())
    assert doc["swept"] == [{"name": "sharing_strategy", "kind": "dataloader",
                             "values": ["file_descriptor", "file_system"]}], doc["swept"]
    for c in doc["configs"]:
        want = c["settings"]["sharing_strategy"]
        run = c["runs"][0]
        assert run["exit"] == 0 and run["not_applied"] is None, run
        assert os.path.basename(run["dir"]) == "ss%s-r1" % want
        m = read_markers(run["dir"])
        assert m.config(0)["sharing_strategy"] == want
        workers = m.worker_config(0)
        assert len(workers) == 2 and {w["sharing_strategy"] for w in workers.values()} == {want}
    assert "sharing_strategy=file_system" in p.stdout.decode()


@pytest.mark.parametrize("py", PYS)
def test_sweep_leaves_out_pin_memory_without_cuda(built, images, tmp_path, py):
    """Without CUDA, pin_memory=True pins nothing (torch's iterator says so:
    pin_memory_effective): after the first such run the sweep leaves the
    pin_memory axis out instead of timing the same loader twice."""
    out = tmp_path / "sweep"
    js = tmp_path / "sweep.json"
    p = subprocess.run([CLI, "sweep", "--num-workers", "0,1", "--pin-memory", "0,1", "--steps",
                        "4", "--warmup", "1", "--repeat", "1", "-o", str(out), "--json", str(js),
                        "--"] +
                       train_cmd(py, images, "--epochs", 2),
                       env=clean_env(), capture_output=True, timeout=300)
    assert p.returncode == 0, p.stderr.decode()
    doc = json.loads(js.read_text())
    cfg = {(c["num_workers"], c["pin_memory"]): c for c in doc["configs"]}
    pinned = cfg[(0, True)]["runs"][0]
    rep = subprocess.run([CLI, "report", "--json", "--skip", "1", pinned["dir"]],
                         capture_output=True, timeout=120)
    assert rep.returncode == 0, rep.stderr.decode()
    dl = json.loads(rep.stdout)["dataloader"]
    assert dl["pin_memory"] is True
    if dl["pin_memory_effective"]:
        pytest.skip("this machine has CUDA: pin_memory pins here")
    assert doc["pin_memory_noop"] is True
    assert cfg[(0, True)]["left_out"] == cfg[(1, True)]["left_out"] == "pin_memory_noop"
    assert cfg[(0, False)]["left_out"] is None and cfg[(1, False)]["left_out"] is None
    # the first pin_memory=True run told; the second was never started
    assert pinned["exit"] == 0
    assert cfg[(1, True)]["runs"][0]["exit"] is None
    assert not os.path.exists(cfg[(1, True)]["runs"][0]["dir"])
    assert doc["best"]["pin_memory"] is False
    assert b"pin_memory axis is left out" in p.stderr
    table = subprocess.run([CLI, "sweep", "--help"], capture_output=True).stdout
    assert b"no-op" in table


@pytest.mark.parametrize("py", PYS)
def test_sweep_prefetch_factor(built, images, tmp_path, py):
    """A DataLoader setting beyond num_workers: each run's loader has the
    prefetch_factor set (its configuration records say so)."""
    js = tmp_path / "sweep.json"
    p = subprocess.run([CLI, "sweep", "--num-workers", "1", "--prefetch-factor", "2,4",
                        "--steps", "3", "--warmup", "1", "--repeat", "1", "-o",
                        str(tmp_path / "sweep"), "--json", str(js), "--"] +
                       train_cmd(py, images, "--epochs", 2),
                       env=clean_env(), capture_output=True, timeout=300)
    assert p.returncode == 0, p.stderr.decode()
    doc = json.loads(js.read_text())
    assert [c["settings"] for c in doc["configs"]] == [
        {"num_workers": 1, "prefetch_factor": 2}, {"num_workers": 1, "prefetch_factor": 4}]
    for c in doc["configs"]:
        run = c["runs"][0]
        assert run["exit"] == 0 and run["not_applied"] is None, run
        assert os.path.basename(run["dir"]) == "nw1-pf%d-r1" % c["settings"]["prefetch_factor"]


@pytest.mark.parametrize("args", [
    ["--", "true"],                                    # no setting
    ["--set", "1X=1,2", "--", "true"],                 # not a variable's name
    ["--set", "GPUSTARVE_STEPS=1,2", "--", "true"],    # gpustarve's own
    ["--set", "X", "--", "true"],
    ["--set-arg", "threads=1,2", "--", "true"],        # not an argument
    ["--set", "X=1,1", "--", "true"],
    ["--num-workers", "0", "--budget", "10x", "--", "true"],
    ["--num-workers", "0", "--min-effect", "-1", "--", "true"],
    ["--prefetch-factor", "0", "--", "true"],
    ["--num-workers", "a,b", "--", "true"],
    ["--num-workers", "1,1", "--", "true"],
    ["--pin-memory", "2", "--", "true"],
    ["--num-workers", "0", "--steps", "0", "--", "true"],
    ["--num-workers", "0", "--repeat", "x", "--", "true"],
    ["--num-workers", "0"],                            # no command
    ["--bogus"],
])
def test_sweep_bad_usage(built, tmp_path, args):
    p = subprocess.run([CLI, "sweep"] + args, capture_output=True, cwd=tmp_path, timeout=30)
    assert p.returncode == 2, (args, p.stderr)
    assert p.stdout == b""
    assert not os.listdir(tmp_path)  # nothing created


def test_sweep_help(built):
    p = subprocess.run([CLI, "sweep", "--help"], capture_output=True, timeout=30)
    assert p.returncode == 0 and b"usage: gpustarve sweep" in p.stdout


# ---- the C marker API ----------------------------------------------------------------------

@pytest.mark.parametrize("pie", ["-pie", "-no-pie"])
def test_c_marker_api_with_and_without_preload(built, compile_c, read_markers, tmp_path, pie):
    src = os.path.join(HERE, "marker_demo.c")
    extra = [pie] + (["-fPIE"] if pie == "-pie" else ["-fno-pie"])
    exe = compile_c("marker_demo" + pie, [src], extra + ["-ldl"])
    plain = run_plain([exe, "4"], env=clean_env())
    assert plain.returncode == 0 and plain.stdout == b"active=0 steps=4 errno=0\n"
    traced = run_traced([exe, "4"], tmp_path / "run")
    assert traced.returncode == 0, traced.stderr.decode()
    assert traced.stdout == b"active=1 steps=4 errno=0\n"
    m = read_markers(tmp_path / "run")
    assert [s[0] for s in m.steps(0)] == [0, 1, 2, 3]
    assert len(m.fetches(0)) == 4
    assert m.config(0) == {"num_workers": "3", "loader": "c-threaded"}
    assert len(m.roles("trainer")) == 1
    # each marker where the program put it: inside the CLOCK_MONOTONIC
    # readings that bracket the call (SLACK: the TSC-to-monotonic conversion,
    # far below the 2 ms and 3 ms sleeps that keep the brackets apart)
    SLACK = 200000
    brackets = {int(w[1]): [int(x) for x in w[2:]] for w in
                (ln.split() for ln in traced.stderr.decode().splitlines())
                if len(w) == 8 and w[0] == "step"}
    assert sorted(brackets) == [0, 1, 2, 3], traced.stderr.decode()

    def within(ts, lo, hi):
        return lo - SLACK <= ts <= hi + SLACK

    for (i, s0, s1), (j, f0, f1) in zip(m.steps(0), m.fetches(0)):
        t = brackets[i]
        assert i == j
        assert within(s0, t[0], t[1]) and within(f0, t[0], t[1]), (i, s0, f0, t)
        assert within(f1, t[2], t[3]) and within(s1, t[4], t[5]), (i, f1, s1, t)
    # so the data-wait share lies between what the brackets allow
    lo = sum(t[2] - t[1] for t in brackets.values()) / sum(t[5] - t[0] for t in brackets.values())
    hi = sum(t[3] - t[0] for t in brackets.values()) / sum(t[4] - t[1] for t in brackets.values())
    share = m.data_wait_share(0)
    assert lo - 0.01 <= share <= hi + 0.01, (lo, share, hi)


def test_c_header_compiles_as_cxx_and_without_markers(built, tmp_path):
    src = tmp_path / "x.cc"
    src.write_text('#include "gpustarve.h"\nint main() { gpustarve_step_begin(0, 0);'
                   ' return gpustarve_active(); }\n')
    inc = "-I" + os.path.join(ROOT, "include")
    for cc, extra in (("c++", []), ("cc", ["-x", "c", "-DGPUSTARVE_NO_MARKERS"])):
        p = subprocess.run([cc, "-Wall", "-Wextra", "-Werror", inc] + extra +
                           [str(src), "-o", str(tmp_path / ("x-" + cc)), "-ldl"],
                           capture_output=True)
        if p.returncode != 0 and b"not found" in p.stderr:
            pytest.skip("%s not installed" % cc)
        assert p.returncode == 0, p.stderr.decode()
        assert subprocess.run([str(tmp_path / ("x-" + cc))]).returncode == 0


def test_library_exports_marker_api(built):
    p = subprocess.run(["nm", "-D", "--defined-only", LIB], capture_output=True)
    if p.returncode != 0:
        pytest.skip("nm not available")
    names = {ln.split()[-1] for ln in p.stdout.decode().splitlines() if ln.strip()}
    for n in ("gpustarve_active", "gpustarve_step_begin", "gpustarve_step_end",
              "gpustarve_fetch_begin", "gpustarve_fetch_end", "gpustarve_config",
              "gpustarve_role"):
        assert n in names


@pytest.mark.parametrize("py", PYS)
def test_python_keeps_its_sigint_handler(built, tmp_path, py):
    """Ctrl-C still raises KeyboardInterrupt in a traced Python program (the
    collector's C handler would otherwise hide Python's; see
    gpustarve._restore_python_sigint)."""
    code = "import signal; print(signal.getsignal(signal.SIGINT) is signal.default_int_handler)"
    p = run_traced([py, "-c", code], tmp_path / "run")
    assert p.returncode == 0, p.stderr.decode()
    assert p.stdout == b"True\n"


# ---- each batch marked in the worker that loads it ----------------------------------

@pytest.mark.parametrize("py", PYS)
@pytest.mark.parametrize("kind", ["map", "iterable"])
def test_workers_mark_each_batch_they_load(built, read_markers, tmp_path, py, kind):
    """fetch_begin/fetch_end of batch i in the worker that loads it, i =
    torch's index of the batch; a fetch that finds the end of an iterable
    dataset leaves its begin open; the report counts each worker's batches
    from them (docs/python.md, "Worker batches")."""
    p = run_traced([py, os.path.join(HERE, "worker_batches.py"), kind], tmp_path / "run")
    assert p.returncode == 0, p.stderr.decode()
    assert p.stdout.decode().split() == ["batches", "10", "items", "40"]
    m = read_markers(tmp_path / "run")
    wp = m.worker_pids()
    assert len(wp) == 2
    loaded = m.fetches(0, workers=True)
    assert sorted(i for i, _, _ in loaded) == list(range(10))
    per = {}
    for pid in wp:
        every = [r for r in m.marks if r["pid"] == pid and r["kind"].startswith("fetch_")]
        assert {r["tid"] for r in every} == {pid}
        marks = [r for r in every if r["aux2"] >> 24 == 0]  # the batches (class plain)
        # the collate function's markers (class collate, 6) inside each
        # batch, with its index (docs/python.md, "Worker batches")
        coll = [r for r in every if r["aux2"] >> 24 == 6]
        assert {r["aux2"] & 0xFFFFFF for r in coll} <= {0}
        batch = {}
        for r in marks:
            batch.setdefault(r["aux"], {})[r["kind"]] = r["ts"]
        done = [(i, b) for i, b in batch.items() if "fetch_end" in b]
        for i, b in done:
            c = {r["kind"]: r["ts"] for r in coll if r["aux"] == i}
            assert b["fetch_begin"] <= c["fetch_begin"] <= c["fetch_end"] <= b["fetch_end"], (i, b, c)
        ends = [r["aux"] for r in marks if r["kind"] == "fetch_end"]
        begins = [r["aux"] for r in marks if r["kind"] == "fetch_begin"]
        # one batch at a time, begin then end of the same index
        assert [r["kind"] for r in marks[:2 * len(ends)]] == ["fetch_begin", "fetch_end"] * len(ends)
        assert begins[:len(ends)] == ends
        # the iterable worker's last fetch found its end: no batch, no end
        assert len(begins) - len(ends) == (1 if kind == "iterable" else 0)
        per[pid] = len(ends)
    assert sum(per.values()) == 10
    if kind == "iterable":
        assert sorted(per.values()) == [5, 5]
    # the trainer's own fetches are untouched: 10 batches and the end
    assert len(m.fetches(0)) == 11
    rep = subprocess.run([CLI, "report", "--json", str(tmp_path / "run")], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, timeout=120)
    assert rep.returncode == 0, rep.stderr.decode()
    workers = [w for w in json.loads(rep.stdout)["loader"]["workers"] if w["role"] == "loader_worker"]
    assert sorted((w["pid"], w["batches"], w["batches_source"]) for w in workers) == \
        sorted((pid, n, "markers") for pid, n in per.items())


@pytest.mark.parametrize("impl", ["c", "py"])
@pytest.mark.parametrize("python", interpreters())
def test_wrap_contract(python, impl):
    """gpustarve._frames.wrap()'s promises (hooks, arguments, exceptions,
    inspect, pickle, references), with the C wrapper and with the Python
    wrappers that stand in without it (tests/python/wrap_contract.py)."""
    so = os.path.join(BUILD, "gpustarve_cwrap.abi3.so")
    gstest.require(so)
    p = gstest.run([python, os.path.join(HERE, "wrap_contract.py"), impl, PYDIR, so])
    assert p.returncode == 0, p.stderr.decode()
    assert p.stdout == b"ok\n"
    # the hook that raised while orig's exception was set aside was reported
    assert p.stderr.decode().count("ZeroDivisionError") == 1, p.stderr.decode()
