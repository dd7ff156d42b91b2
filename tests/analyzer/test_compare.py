"""`gpustarve compare A B` on scenario runs (scenarios.py): the change in
each number, "helped" only beyond the step-to-step noise (Mann-Whitney U),
and whether A's predicted step time for the change B made held."""
import json
import subprocess

import pytest

import scenarios
from conftest import clean_env

SHARES = ["gpu_compute", "gpu_comm", "gpu_h2d_pinned", "gpu_h2d_pageable", "gpu_copy_other",
          "idle_data_wait", "idle_pageable_copy", "idle_host"]


def run_compare(gs, a, b, *args):
    return subprocess.run([gs, "compare"] + list(args) + [str(a), str(b)], capture_output=True,
                          text=True, env=clean_env())


def compare_json(gs, a, b, *args):
    r = run_compare(gs, a, b, "--json", "--cores", "8", *args)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def mk(gen, tmp_path, name, sc):
    return sc.write(gen, str(tmp_path / ("gpustarve-" + name)))


def check_schema(j):
    assert j["schema"] == "gpustarve.compare/1"
    for s in ("a", "b"):
        side = j[s]
        assert set(side["step_ms"]) >= {"median", "p90"}
        assert set(side["share"]) == set(SHARES)
        assert abs(sum(side["share"].values()) - 1) < 1e-6
        for k in ("bytes_read", "pageable_copy_ms_per_step", "verdict", "dataloader", "steps_measured"):
            assert k in side
    assert set(j["change"]["share"]) == set(SHARES)
    assert j["helped"]["label"] in ("helped", "hurt", "no_clear_change", "no_op")
    assert (j["helped"]["no_op_why"] is None) == (j["helped"]["label"] != "no_op")
    assert j["helped"]["test"] == "mann-whitney-u"
    assert 0 <= j["helped"]["p_value"] <= 1
    assert j["prediction"]["outcome"] in ("held", "beaten", "missed", "none")


def test_more_workers_helped_and_prediction_held(gs, gen, tmp_path):
    a = mk(gen, tmp_path, "a", scenarios.loader_bound(workers=2, jitter_ms=2))
    b = mk(gen, tmp_path, "b", scenarios.loader_bound(workers=4, step_ms=62, wait_ms=2, jitter_ms=2))
    j = compare_json(gs, a, b)
    check_schema(j)
    assert j["a"]["verdict"]["label"] == "HIGHLY_INPUT_BOUND"
    assert j["a"]["dataloader"]["num_workers"] == 2 and j["b"]["dataloader"]["num_workers"] == 4
    assert j["change"]["dataloader"] == [{"key": "num_workers", "a": 2, "b": 4}]
    assert j["change"]["step_ms_median"] == pytest.approx(-38, abs=1.5)
    assert j["change"]["share"]["idle_data_wait"] < -0.3
    assert j["helped"]["label"] == "helped" and j["helped"]["p_value"] < 1e-4
    assert j["helped"]["p_b_step_shorter"] == pytest.approx(1.0)
    p = j["prediction"]
    assert p["applied"] == "num_workers=4"
    assert p["predicted_step_ms"] == pytest.approx(60.0, abs=0.5)
    assert p["actual_step_ms"] == pytest.approx(62.0, abs=1)
    assert p["outcome"] == "held" and p["held"] is True
    # the text says the same
    r = run_compare(gs, a, b, "--cores", "8")
    assert r.returncode == 0, r.stderr
    assert "HELPED" in r.stdout and "HELD" in r.stdout and "num_workers=4" in r.stdout
    # the trainer's fetch share beside the shares: here its fetches wait with
    # the GPU idle throughout, so it is the data wait
    fa, fb = j["a"]["trainer_fetch_share"], j["b"]["trainer_fetch_share"]
    assert fa == pytest.approx(j["a"]["share"]["idle_data_wait"], abs=1e-6)
    assert fb == pytest.approx(j["b"]["share"]["idle_data_wait"], abs=1e-6)
    assert j["change"]["trainer_fetch_share"] == pytest.approx(fb - fa, abs=1e-6)
    assert "trainer in batch fetch%11.1f%% %10.1f%%" % (100 * fa, 100 * fb) in r.stdout


def test_dataloader_booleans_are_json_booleans(gs, gen, tmp_path):
    a = mk(gen, tmp_path, "a", scenarios.loader_bound(pin_memory="0"))
    b = mk(gen, tmp_path, "b", scenarios.loader_bound(pin_memory="1"))
    j = compare_json(gs, a, b)
    assert j["a"]["dataloader"]["pin_memory"] is False
    assert j["b"]["dataloader"]["pin_memory"] is True
    assert j["change"]["dataloader"] == [{"key": "pin_memory", "a": False, "b": True}]


NOCUDA = (("pin_memory_effective", "0"),)


def test_pin_memory_without_cuda_is_a_no_op(gs, gen, tmp_path):
    """pin_memory 0 -> 1 where the DataLoader could not pin (no CUDA): a
    difference in step time, however clear, is not the change's doing."""
    a = mk(gen, tmp_path, "a", scenarios.loader_bound(pin_memory="0", jitter_ms=2,
                                                      extra_config=NOCUDA))
    b = mk(gen, tmp_path, "b", scenarios.loader_bound(pin_memory="1", step_ms=96, jitter_ms=2,
                                                      extra_config=NOCUDA))
    j = compare_json(gs, a, b)
    check_schema(j)
    assert j["helped"]["p_value"] < 0.05  # the statistics alone would say "helped"
    assert j["helped"]["label"] == "no_op"
    assert "pin_memory_effective=False" in j["helped"]["no_op_why"]
    r = run_compare(gs, a, b, "--cores", "8")
    assert r.returncode == 0, r.stderr
    assert "NO-OP" in r.stdout and "HELPED" not in r.stdout
    # the report of B says so too
    rep = subprocess.run([gs, "report", "--cores", "8", b], capture_output=True, text=True,
                         env=clean_env())
    assert "pin_memory=True is a no-op here" in rep.stdout
    # where the iterator did pin (CUDA), the same change is judged as usual
    b2 = mk(gen, tmp_path, "b2", scenarios.loader_bound(pin_memory="1", step_ms=96, jitter_ms=2,
                                                       extra_config=(("pin_memory_effective", "1"),)))
    a2 = mk(gen, tmp_path, "a2", scenarios.loader_bound(pin_memory="0", jitter_ms=2,
                                                       extra_config=(("pin_memory_effective", "0"),)))
    assert compare_json(gs, a2, b2)["helped"]["label"] == "helped"
    # another setting changed too: the statistics decide
    b3 = mk(gen, tmp_path, "b3", scenarios.loader_bound(workers=4, pin_memory="1", step_ms=96,
                                                       jitter_ms=2, extra_config=NOCUDA))
    assert compare_json(gs, a, b3)["helped"]["label"] == "helped"


def test_cpu_only_runs_have_no_gpu_rows(gs, gen, tmp_path):
    a = mk(gen, tmp_path, "a", scenarios.loader_bound(gpu=False, workers=2, jitter_ms=2))
    b = mk(gen, tmp_path, "b", scenarios.loader_bound(gpu=False, workers=4, step_ms=62, wait_ms=2,
                                                      jitter_ms=2))
    r = run_compare(gs, a, b, "--cores", "8")
    assert r.returncode == 0, r.stderr
    assert "GPU" not in r.stdout, r.stdout
    assert "data wait" in r.stdout and "training thread waits for data 40%" in r.stdout


def test_prediction_missed_with_a_tight_tolerance(gs, gen, tmp_path):
    a = mk(gen, tmp_path, "a", scenarios.loader_bound(workers=2))
    b = mk(gen, tmp_path, "b", scenarios.loader_bound(workers=4, step_ms=75, wait_ms=15))
    j = compare_json(gs, a, b)
    assert j["helped"]["label"] == "helped"
    assert j["prediction"]["outcome"] == "missed" and j["prediction"]["held"] is False
    assert j["prediction"]["error_rel"] == pytest.approx(0.25, abs=0.01)
    j = compare_json(gs, a, b, "--tolerance", "30")
    assert j["prediction"]["outcome"] == "held" and j["prediction"]["tolerance"] == 0.3


def test_same_run_no_change(gs, gen, tmp_path):
    a = mk(gen, tmp_path, "a", scenarios.loader_bound(workers=2, jitter_ms=3))
    j = compare_json(gs, a, a)
    check_schema(j)
    assert j["helped"]["label"] == "no_clear_change"
    assert j["change"]["step_ms_median"] == 0
    assert j["change"]["dataloader"] == []
    # A advised num_workers=4; B (the same run) did not apply it
    assert j["prediction"]["outcome"] == "none" and j["prediction"]["held"] is None
    assert [x["applied_in_b"] for x in j["prediction"]["advice"]] == [False]


def test_small_change_within_noise(gs, gen, tmp_path):
    """Medians 1 ms apart with steps spread +-10 ms: not a verdict."""
    a = mk(gen, tmp_path, "a", scenarios.loader_bound(workers=2, jitter_ms=10))
    b = mk(gen, tmp_path, "b", scenarios.loader_bound(workers=2, step_ms=99, wait_ms=39, jitter_ms=10))
    j = compare_json(gs, a, b)
    assert j["change"]["step_ms_median"] == pytest.approx(-1, abs=0.01)
    assert j["helped"]["label"] == "no_clear_change" and j["helped"]["p_value"] > 0.05


def test_slower_is_hurt(gs, gen, tmp_path):
    a = mk(gen, tmp_path, "a", scenarios.gpu_bound())
    b = mk(gen, tmp_path, "b", scenarios.loader_bound(workers=2))
    j = compare_json(gs, a, b)
    # gpu_bound steps are 100 ms as well: same median, so no verdict ...
    assert j["helped"]["label"] == "no_clear_change"
    # ... but slower steps are
    b2 = mk(gen, tmp_path, "b2", scenarios.loader_bound(workers=2, step_ms=130, wait_ms=70))
    j = compare_json(gs, a, b2)
    assert j["helped"]["label"] == "hurt"
    assert j["b"]["verdict"]["label"] == "HIGHLY_INPUT_BOUND"


def test_pin_memory_prediction(gs, gen, tmp_path):
    a = mk(gen, tmp_path, "a", scenarios.pageable())
    ja = json.loads(subprocess.run([gs, "report", "--json", a], capture_output=True, text=True,
                                   env=clean_env()).stdout)
    pin = [x for x in ja["advice"] if x["setting"] == "pin_memory"][0]
    b = mk(gen, tmp_path, "b", scenarios.gpu_bound())  # pin_memory=True, 100 ms steps
    j = compare_json(gs, a, b)
    assert j["prediction"]["applied"] == "pin_memory=True"
    assert j["prediction"]["predicted_step_ms"] == pytest.approx(pin["predicted_step_ms"])
    assert j["a"]["pageable_copy_ms_per_step"] == pytest.approx(20.0)
    assert j["b"]["pageable_copy_ms_per_step"] == 0
    assert j["change"]["pageable_copy_ms_per_step"] == pytest.approx(-20.0)


@pytest.mark.parametrize("args", [[], ["only_one"], ["a", "b", "c"]])
def test_usage(gs, args):
    r = subprocess.run([gs, "compare"] + args, capture_output=True, text=True, env=clean_env())
    assert r.returncode == 2
    assert "compare" in r.stderr


def test_bad_runs(gs, gen, tmp_path):
    a = mk(gen, tmp_path, "a", scenarios.gpu_bound())
    r = run_compare(gs, a, tmp_path / "missing")
    assert r.returncode == 2 and "missing" in r.stderr
    empty = tmp_path / "empty"
    empty.mkdir()
    r = run_compare(gs, empty, a)
    assert r.returncode == 2 and "no trace files" in r.stderr
    ns = mk(gen, tmp_path, "nosteps", scenarios.no_steps())
    r = run_compare(gs, a, ns)
    assert r.returncode == 2 and "no training steps" in r.stderr
    assert r.stdout == ""


def test_help(gs):
    r = subprocess.run([gs, "compare", "--help"], capture_output=True, text=True)
    assert r.returncode == 0 and r.stdout.startswith("usage: gpustarve compare")
    r2 = subprocess.run([gs, "help", "compare"], capture_output=True, text=True)
    assert r2.stdout == r.stdout
