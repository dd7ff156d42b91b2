"""`gpustarve check --run DIR`: the shared memory DataLoader workers need,
sized from a traced run (docs/check.md, "Shared memory"), on scenarios whose
answers are known (scenarios.py)."""
import json
import subprocess

import scenarios
from conftest import clean_env


def check_json(gs, *args):
    p = subprocess.run([gs, "check", "--json", "--quick", "--no-gpu"] + list(args),
                       capture_output=True, text=True, env=clean_env())
    assert p.returncode == 0, p.stderr
    return {i["id"]: i for i in json.loads(p.stdout)["items"]}


def test_check_shm_from_run(gs, gen, tmp_path):
    """The run's num_workers (3), prefetch_factor (4) and bytes copied to
    the GPU per step (8 MiB) are what the workers keep in /dev/shm."""
    sc = scenarios.loader_bound(workers=3, extra_config=(("prefetch_factor", 4),))
    d = sc.write(gen, str(tmp_path / "gpustarve-x"))
    s = check_json(gs, "--run", d)["shm"]["details"]
    assert (s["workers"], s["prefetch_factor"], s["batch_bytes"]) == (3, 4, 8 << 20)
    assert s["need_bytes"] == 3 * 4 * (8 << 20)
    assert s["need_from"] == "from the run in %s" % d
    # the options win over the run
    s = check_json(gs, "--run", d, "--workers", "5", "--batch-mb", "1")["shm"]["details"]
    assert (s["workers"], s["prefetch_factor"], s["batch_bytes"]) == (5, 4, 1e6)


def test_check_shm_from_a_run_without_copies(gs, gen, tmp_path):
    d = scenarios.loader_bound(gpu=False).write(gen, str(tmp_path / "gpustarve-x"))
    s = check_json(gs, "--run", d)["shm"]["details"]
    assert s["workers"] == 2 and s["batch_bytes"] == 256 * 3 * 224 * 224 * 4
    assert "the run copied nothing" in s["need_from"]


def test_check_bad_run(gs, tmp_path):
    p = subprocess.run([gs, "check", "--quick", "--no-gpu", "--run", str(tmp_path)],
                       capture_output=True, text=True, env=clean_env())
    assert p.returncode == 2 and "--run" in p.stderr
