"""`gpustarve compare` on scenario runs (scenarios.py): runs of each side, the
change as B's step time over A's with a 95% interval over the runs (Welch's
t on the logarithms of each run's mean step, or with --by median its median
step), "helped" or "hurt" only when
the interval clears the minimum effect, one run a side never proven (with the
other processes' load of each run shown), whether A's predicted step time
for the change B made held, and the CI gate (--fail-if-slower)."""
import json
import math
import random
import re
import subprocess

import pytest

import scenarios
from conftest import clean_env

SHARES = ["gpu_compute", "gpu_comm", "gpu_h2d_pinned", "gpu_h2d_pageable", "gpu_copy_other",
          "idle_data_wait", "idle_pageable_copy", "idle_host"]


def sides(a, b):
    """The run arguments: A B for one run a side, else A1 A2 ... -- B1 B2 ..."""
    a = [str(x) for x in (a if isinstance(a, (list, tuple)) else [a])]
    b = [str(x) for x in (b if isinstance(b, (list, tuple)) else [b])]
    return a + b if len(a) == 1 and len(b) == 1 else a + ["--"] + b


def run_compare(gs, a, b, *args):
    return subprocess.run([gs, "compare"] + list(args) + sides(a, b), capture_output=True,
                          text=True, env=clean_env())


def compare_json(gs, a, b, *args):
    r = run_compare(gs, a, b, "--json", "--cores", "8", *args)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def mk(gen, tmp_path, name, sc):
    return sc.write(gen, str(tmp_path / ("gpustarve-" + name)))


def mk_runs(gen, tmp_path, name, make, step_ms):
    """One run per step time: make(step_ms=x) written as NAME-1, NAME-2, ..."""
    return [mk(gen, tmp_path, "%s-%d" % (name, i + 1), make(step_ms=x))
            for i, x in enumerate(step_ms)]


def geomean(xs):
    return math.exp(sum(math.log(x) for x in xs) / len(xs))


def run_means(side):
    return [r["step_ms_mean"] for r in side["runs"]]


def check_schema(j, by="mean"):
    assert j["schema"] == "gpustarve.compare/3" and j["by"] == by
    for s in ("a", "b"):
        side = j[s]
        assert set(side["step_ms"]) >= {"median", "p90"}
        assert set(side["share"]) == set(SHARES)
        assert abs(sum(side["share"].values()) - 1) < 1e-6
        for k in ("bytes_read", "pageable_copy_ms_per_step", "verdict", "dataloader", "steps_measured",
                  "step_ms_over_runs", "other_load_cores", "runs", "settings_differ"):
            assert k in side
        assert side["dir"] in [r["dir"] for r in side["runs"]]  # the middle run
    assert set(j["change"]["share"]) == set(SHARES)
    h = j["helped"]
    assert h["label"] in ("helped", "hurt", "no_proven_change", "no_op")
    assert (h["no_op_why"] is None) == (h["label"] != "no_op")
    assert (h["reason"] is None) == (h["label"] != "no_proven_change")
    assert h["reason"] in (None, "too_few_runs", "within_min_effect", "interval_too_wide")
    assert h["method"] == "welch-t-log-run-%ss" % by and h["confidence"] == 0.95
    assert h["runs_a"] == len(j["a"]["runs"]) and h["runs_b"] == len(j["b"]["runs"])
    if h["ratio_lo"] is not None:
        assert h["ratio_lo"] <= h["ratio"] <= h["ratio_hi"]
    assert j["prediction"]["outcome"] in ("held", "beaten", "missed", "unclear", "none")


def lb_a(step_ms=100):
    return scenarios.loader_bound(workers=2, jitter_ms=2, step_ms=step_ms)


def lb_b(step_ms=62):
    return scenarios.loader_bound(workers=4, step_ms=step_ms, wait_ms=2, jitter_ms=2)


def test_more_workers_helped_and_prediction_held(gs, gen, tmp_path):
    a = mk_runs(gen, tmp_path, "a", lb_a, [100, 103, 98])
    b = mk_runs(gen, tmp_path, "b", lb_b, [62, 64, 61])
    j = compare_json(gs, a, b)
    check_schema(j)
    assert j["a"]["dir"] == a[0] and j["b"]["dir"] == b[0]  # the middle runs
    assert [r["dir"] for r in j["a"]["runs"]] == a
    assert j["a"]["verdict"]["label"] == "HIGHLY_INPUT_BOUND"
    assert j["a"]["dataloader"]["num_workers"] == 2 and j["b"]["dataloader"]["num_workers"] == 4
    assert j["change"]["dataloader"] == [{"key": "num_workers", "a": 2, "b": 4}]
    # the geometric means of the runs' mean steps
    ga, gb = geomean(run_means(j["a"])), geomean(run_means(j["b"]))
    assert [round(x) for x in run_means(j["a"])] == [100, 103, 98]
    assert j["a"]["step_ms_over_runs"]["geomean"] == pytest.approx(ga, rel=1e-6)
    assert j["change"]["step_ms"] == pytest.approx(gb - ga, rel=1e-5)
    assert j["change"]["share"]["idle_data_wait"] < -0.3
    h = j["helped"]
    assert h["label"] == "helped" and h["reason"] is None
    assert h["ratio"] == pytest.approx(gb / ga, rel=1e-6)
    assert h["ratio_lo"] < gb / ga < h["ratio_hi"] < 0.98
    p = j["prediction"]
    assert p["applied"] == "num_workers=4"
    assert p["predicted_ratio"] == pytest.approx(60.0 / 100.1, abs=0.01)
    assert p["actual_ratio_lo"] <= p["actual_ratio"] <= p["actual_ratio_hi"]
    assert p["outcome"] == "held" and p["held"] is True
    # the text says the same
    r = run_compare(gs, a, b, "--cores", "8")
    assert r.returncode == 0, r.stderr
    out = r.stdout
    assert "result   HELPED: mean step %.1f -> %.1f ms" % (ga, gb) in out
    assert "step mean ms (runs)" in out
    assert "95% interval" in out and "over 3 / 3 runs" in out
    assert "HELD" in out and "num_workers=4" in out
    for d in a + b:  # each run, its median and mean step
        assert re.search(re.escape(d) + r"   median step [\d.]+ ms, mean [\d.]+ ms", out), d


def test_fetch_share_beside_the_shares(gs, gen, tmp_path):
    a = mk(gen, tmp_path, "a", lb_a())
    b = mk(gen, tmp_path, "b", lb_b())
    j = compare_json(gs, a, b)
    check_schema(j)
    # here the trainer's fetches wait with the GPU idle throughout: the data wait
    fa, fb = j["a"]["trainer_fetch_share"], j["b"]["trainer_fetch_share"]
    assert fa == pytest.approx(j["a"]["share"]["idle_data_wait"], abs=1e-6)
    assert fb == pytest.approx(j["b"]["share"]["idle_data_wait"], abs=1e-6)
    assert j["change"]["trainer_fetch_share"] == pytest.approx(fb - fa, abs=1e-6)
    r = run_compare(gs, a, b, "--cores", "8")
    assert "trainer in batch fetch%11.1f%% %10.1f%%" % (100 * fa, 100 * fb) in r.stdout
    # one run a side: the same numbers, and the prediction checked on these two runs
    assert j["change"]["step_ms"] == pytest.approx(-38, abs=1.5)
    assert j["prediction"]["outcome"] == "held"


def test_one_run_a_side_proves_nothing(gs, gen, tmp_path):
    """Steps of one run are not samples of its setting: two single runs,
    however different, are no proven change; the text says why and shows the
    other processes' load measured in each run."""
    a = mk(gen, tmp_path, "a", scenarios.measured_load(other_ms=32))
    b = mk(gen, tmp_path, "b", scenarios.measured_load(other_ms=149, step_ms=120))
    j = compare_json(gs, a, b)
    check_schema(j)
    h = j["helped"]
    assert h["label"] == "no_proven_change" and h["reason"] == "too_few_runs"
    assert h["ratio"] == pytest.approx(1.2, rel=1e-3)  # +20%, as the steps say
    assert h["ratio_lo"] is None and h["ratio_hi"] is None
    la, lb = j["a"]["other_load_cores"], j["b"]["other_load_cores"]
    assert la == pytest.approx(0.32, abs=0.02) and lb == pytest.approx(1.49, abs=0.02)
    assert j["a"]["runs"][0]["cpus"] == 2
    assert j["change"]["other_load_cores"] == pytest.approx(lb - la)
    r = run_compare(gs, a, b)
    assert r.returncode == 0, r.stderr
    assert "result   NO PROVEN CHANGE: mean step 100.0 -> 120.0 ms (+20.0%, one run a side)" \
        in r.stdout
    assert "one run a side cannot separate the change from the machine" in r.stdout
    assert "other processes kept %.2f of 2 CPUs busy in A, %.2f of 2 in B" % (la, lb) in r.stdout
    assert "HURT" not in r.stdout
    # traces without the load measured say so instead
    a2 = mk(gen, tmp_path, "a2", scenarios.measured_load(host=False))
    r = run_compare(gs, a2, b)
    assert "A's trace does not measure the other processes' load (format 1.3 or older, or " \
        "imported)" in r.stdout
    assert "other processes kept %.2f of 2 CPUs busy in B" % lb in r.stdout
    ja = compare_json(gs, a2, b)["a"]
    assert ja["other_load_cores"] is None and ja["runs"][0]["other_load_why"] == "no_records"
    assert j["a"]["runs"][0]["other_load_why"] is None
    # a run too short to measure it says so, with what its samples cover
    short = mk(gen, tmp_path, "short", scenarios.measured_load(nsteps=4, other_ms=32))
    r = run_compare(gs, short, b)
    assert re.search(r"A's machine samples cover 0\.[1-4]\d s of its measured steps, under the "
                     r"0\.5 s that measure the other processes' load \(a longer run does\)",
                     r.stdout), r.stdout
    assert compare_json(gs, short, b)["a"]["runs"][0]["other_load_why"] == "short"
    # a side of several runs against one run: still no interval
    j = compare_json(gs, [a, a2], b)
    assert j["helped"]["reason"] == "too_few_runs"
    assert "B has one run" in run_compare(gs, [a, a2], b).stdout


def busy_run(gen, tmp_path, name, rng, base_ms):
    """A run on a busy machine: another process keeps 0 to 1.5 of the 2 CPUs
    busy, a different load each run, which stretches the step by up to 90%,
    and 3% of noise besides."""
    load = rng.uniform(0, 1.5)
    step = base_ms * (1 + 0.6 * load) * rng.lognormvariate(0, 0.03)
    return mk(gen, tmp_path, name, scenarios.measured_load(other_ms=100 * load, step_ms=step))


def test_identical_settings_on_a_busy_machine(gs, gen, tmp_path):
    """The same setting on both sides, 3 runs a side, the machine's load
    changing from run to run: no proven change in at least 19 of 20 trials
    (seeds 0-19, the same every time)."""
    proven = []
    for t in range(20):
        rng = random.Random(t)
        a = [busy_run(gen, tmp_path, "t%d-a%d" % (t, i), rng, 100) for i in range(3)]
        b = [busy_run(gen, tmp_path, "t%d-b%d" % (t, i), rng, 100) for i in range(3)]
        j = compare_json(gs, a, b)
        if j["helped"]["label"] != "no_proven_change":
            proven.append((t, j["helped"]["label"], j["helped"]["ratio_lo"], j["helped"]["ratio_hi"]))
    assert len(proven) <= 1, proven


def test_real_change_found_with_three_runs(gs, gen, tmp_path):
    """A 30% shorter step, 3 runs a side on a quiet machine (2% noise): HELPED
    in every one of 10 trials."""
    found = 0
    for t in range(10):
        rng = random.Random(100 + t)
        a = [mk(gen, tmp_path, "q%d-a%d" % (t, i),
                scenarios.measured_load(other_ms=5, step_ms=100 * rng.lognormvariate(0, 0.02)))
             for i in range(3)]
        b = [mk(gen, tmp_path, "q%d-b%d" % (t, i),
                scenarios.measured_load(other_ms=5, step_ms=70 * rng.lognormvariate(0, 0.02)))
             for i in range(3)]
        j = compare_json(gs, a, b)
        found += j["helped"]["label"] == "helped" and j["helped"]["ratio_hi"] < 0.98
    assert found == 10


def test_fail_if_slower_gate(gs, gen, tmp_path):
    a = mk_runs(gen, tmp_path, "a", lb_a, [100, 101, 99])
    slow = mk_runs(gen, tmp_path, "slow", lb_a, [110, 111, 109])   # +10%
    same = mk_runs(gen, tmp_path, "same", lb_a, [101, 100, 100.5])  # +0.5%
    fast = mk_runs(gen, tmp_path, "fast", lb_b, [62, 63, 61])
    r = run_compare(gs, a, slow, "--fail-if-slower", "3%")
    assert r.returncode == 1, r.stderr
    gate = [ln for ln in r.stdout.splitlines() if ln.startswith("gate")]
    assert len(gate) == 1 and gate[0].startswith("gate     FAIL: B's mean step +10.0%"), gate
    assert "is slower than A by more than 3%" in gate[0]
    for other in (same, fast):
        r = run_compare(gs, a, other, "--fail-if-slower", "3")
        assert r.returncode == 0, r.stdout
        assert "gate     PASS:" in r.stdout and "is not proven slower" in r.stdout
    # a limit above the slowdown passes it
    assert run_compare(gs, a, slow, "--fail-if-slower", "15").returncode == 0
    # JSON: the gate object, and the one line on stderr
    r = run_compare(gs, a, slow, "--json", "--fail-if-slower", "3")
    assert r.returncode == 1
    g = json.loads(r.stdout)["gate"]
    assert g["fail_if_slower"] == 0.03 and g["failed"] is True and g["reason"].startswith("FAIL")
    assert r.stderr.count("\n") == 1 and "compare: FAIL: B's mean step" in r.stderr
    assert json.loads(run_compare(gs, a, same, "--json").stdout)["gate"] is None
    # one run a side proves nothing: the gate passes and says why
    r = run_compare(gs, a[0], slow[0], "--fail-if-slower", "3")
    assert r.returncode == 0 and "gate     PASS: nothing proven with one run on a side" in r.stdout


def test_judged_by_the_time_per_step(gs, gen, tmp_path):
    """B stalls 60 ms every 4th step, A never: the median step is the same,
    the time per step 15% longer. By each run's mean step (the default, what
    the report's predictions are of) that is HURT, and the gate fails; by
    its median (--by median) no change shows."""
    a = mk_runs(gen, tmp_path, "a", lb_a, [100, 101, 99])
    b = mk_runs(gen, tmp_path, "b", lambda step_ms: scenarios.loader_bound(
        workers=2, jitter_ms=2, step_ms=step_ms, stall_every=4, stall_ms=60), [100, 101, 99])
    j = compare_json(gs, a, b)
    check_schema(j)
    assert j["helped"]["label"] == "hurt"
    assert j["helped"]["ratio_lo"] > 1.1
    assert j["change"]["step_ms_rel"] == pytest.approx(0.15, abs=0.01)
    for r in j["b"]["runs"]:  # the stalls are in the mean, not in the median
        assert r["step_ms_mean"] > 1.1 * r["step_ms_median"]
    j = compare_json(gs, a, b, "--by", "median")
    check_schema(j, by="median")
    assert j["helped"]["label"] == "no_proven_change", j["helped"]
    assert j["helped"]["ratio"] == pytest.approx(1, abs=0.01), j["helped"]
    assert j["a"]["step_ms_over_runs"]["geomean"] == pytest.approx(
        geomean([r["step_ms_median"] for r in j["a"]["runs"]]), rel=1e-6)
    r = run_compare(gs, a, b, "--fail-if-slower", "5")
    assert r.returncode == 1 and "gate     FAIL: B's mean step +15" in r.stdout, r.stdout
    r = run_compare(gs, a, b, "--fail-if-slower", "5", "--by", "median")
    assert r.returncode == 0, r.stdout
    assert "step median ms (runs)" in r.stdout
    assert "the step median and its interval are over the runs (each run's median step)" \
        in r.stdout
    assert "result   NO PROVEN CHANGE: median step" in r.stdout


def test_min_effect(gs, gen, tmp_path):
    a = mk_runs(gen, tmp_path, "a", lb_a, [100, 100.2, 99.8])
    b = mk_runs(gen, tmp_path, "b", lb_a, [104, 104.2, 103.8])  # +4%, tight
    assert compare_json(gs, a, b)["helped"]["label"] == "hurt"
    j = compare_json(gs, a, b, "--min-effect", "5")
    assert j["helped"]["label"] == "no_proven_change"
    assert j["helped"]["reason"] == "within_min_effect" and j["helped"]["min_effect"] == 0.05
    r = run_compare(gs, a, b, "--min-effect", "5")
    assert "any change is smaller than the 5% minimum effect" in r.stdout


def test_option_among_runs(gs, gen, tmp_path):
    """Options may stand among A's runs; everything after '--' is B's runs."""
    a = mk_runs(gen, tmp_path, "a", lb_a, [100, 101])
    b = mk_runs(gen, tmp_path, "b", lb_b, [62, 63])
    r = subprocess.run([gs, "compare", a[0], "--json", a[1], "--", b[0], b[1]],
                       capture_output=True, text=True, env=clean_env())
    assert r.returncode == 0, r.stderr
    j = json.loads(r.stdout)
    assert [x["dir"] for x in j["a"]["runs"]] == a and [x["dir"] for x in j["b"]["runs"]] == b


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
    def a_runs(name, eff="0"):
        return mk_runs(gen, tmp_path, name, lambda step_ms: scenarios.loader_bound(
            pin_memory="0", jitter_ms=2, step_ms=step_ms,
            extra_config=(("pin_memory_effective", eff),)), [100, 101, 99])

    def b_runs(name, eff="0", workers=2):
        return mk_runs(gen, tmp_path, name, lambda step_ms: scenarios.loader_bound(
            workers=workers, pin_memory="1", jitter_ms=2, step_ms=step_ms,
            extra_config=(("pin_memory_effective", eff),)), [90, 91, 89])

    a, b = a_runs("a"), b_runs("b")
    j = compare_json(gs, a, b)
    check_schema(j)
    assert j["helped"]["ratio_hi"] < 0.98  # the interval alone would say "helped"
    assert j["helped"]["label"] == "no_op"
    assert "pin_memory_effective=False" in j["helped"]["no_op_why"]
    r = run_compare(gs, a, b, "--cores", "8")
    assert r.returncode == 0, r.stderr
    assert "NO-OP" in r.stdout and "HELPED" not in r.stdout
    # the report of B says so too
    rep = subprocess.run([gs, "report", "--cores", "8", b[0]], capture_output=True, text=True,
                         env=clean_env())
    assert "pin_memory=True is a no-op here" in rep.stdout
    # where the iterator did pin (CUDA), the same change is judged as usual
    assert compare_json(gs, a_runs("a2", "0"), b_runs("b2", "1"))["helped"]["label"] == "helped"
    # another setting changed too: the interval decides
    assert compare_json(gs, a, b_runs("b3", workers=4))["helped"]["label"] == "helped"


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
    assert j["prediction"]["outcome"] == "missed" and j["prediction"]["held"] is False
    assert j["prediction"]["error_rel"] == pytest.approx(0.25, abs=0.01)
    j = compare_json(gs, a, b, "--tolerance", "30")
    assert j["prediction"]["outcome"] == "held" and j["prediction"]["tolerance"] == 0.3


def test_prediction_unclear_when_the_interval_is_wide(gs, gen, tmp_path):
    """Runs of B spread over 50-75 ms: the interval of B's mean step reaches
    both inside and outside 10% of the predicted 60 ms."""
    a = mk_runs(gen, tmp_path, "a", lambda step_ms: scenarios.loader_bound(workers=2, step_ms=step_ms),
                [100, 100.5, 99.5])
    b = mk_runs(gen, tmp_path, "b", lambda step_ms: scenarios.loader_bound(
        workers=4, step_ms=step_ms, wait_ms=2), [50, 60, 75])
    j = compare_json(gs, a, b)
    p = j["prediction"]
    assert p["outcome"] == "unclear" and p["held"] is None
    assert p["actual_ratio_lo"] < p["predicted_ratio"] * 0.9 < p["predicted_ratio"] * 1.1 < \
        p["actual_ratio_hi"]
    assert "UNCLEAR" in run_compare(gs, a, b, "--cores", "8").stdout


def test_same_run_no_change(gs, gen, tmp_path):
    a = mk(gen, tmp_path, "a", scenarios.loader_bound(workers=2, jitter_ms=3))
    j = compare_json(gs, a, a)
    check_schema(j)
    assert j["helped"]["label"] == "no_proven_change" and j["helped"]["reason"] == "too_few_runs"
    assert j["change"]["step_ms"] == 0
    assert j["change"]["dataloader"] == []
    # A advised num_workers=4; B (the same run) did not apply it
    assert j["prediction"]["outcome"] == "none" and j["prediction"]["held"] is None
    assert [x["applied_in_b"] for x in j["prediction"]["advice"]] == [False]
    # the same run three times a side: no spread, the interval is the point, 1
    j = compare_json(gs, [a, a, a], [a, a, a])
    assert j["helped"]["label"] == "no_proven_change"
    assert j["helped"]["reason"] == "within_min_effect"
    assert j["helped"]["ratio_lo"] == j["helped"]["ratio_hi"] == 1


def test_small_change_within_noise(gs, gen, tmp_path):
    """Medians 1% apart with runs spread +-5%: the interval reaches both ways."""
    a = mk_runs(gen, tmp_path, "a", lb_a, [100, 95, 105])
    b = mk_runs(gen, tmp_path, "b", lb_a, [99, 104, 94])
    j = compare_json(gs, a, b)
    assert j["helped"]["label"] == "no_proven_change"
    assert j["helped"]["reason"] == "interval_too_wide"
    assert j["helped"]["ratio_lo"] < 0.98 and j["helped"]["ratio_hi"] > 1.02
    assert "more runs a side narrow it" in run_compare(gs, a, b).stdout


def test_slower_is_hurt(gs, gen, tmp_path):
    a = [mk(gen, tmp_path, "a", scenarios.gpu_bound())]
    b = mk_runs(gen, tmp_path, "b", lambda step_ms: scenarios.loader_bound(workers=2, step_ms=step_ms),
                [100, 100, 100])
    # gpu_bound steps are 100 ms as well: the same step, so no change
    j = compare_json(gs, a * 3, b)
    assert j["helped"]["label"] == "no_proven_change"
    # ... but slower steps are
    b2 = mk_runs(gen, tmp_path, "b2", lambda step_ms: scenarios.loader_bound(
        workers=2, step_ms=step_ms, wait_ms=70), [130, 131, 129])
    j = compare_json(gs, a * 3, b2)
    assert j["helped"]["label"] == "hurt"
    assert j["b"]["verdict"]["label"] == "HIGHLY_INPUT_BOUND"
    assert "result   HURT" in run_compare(gs, a * 3, b2).stdout


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


@pytest.mark.parametrize("args", [[], ["only_one"], ["a", "b", "c"], ["a", "--"], ["--", "b"],
                                  ["--min-effect", "x", "a", "b"], ["--fail-if-slower", "-1", "a", "b"],
                                  ["--by", "p90", "a", "b"]])
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
