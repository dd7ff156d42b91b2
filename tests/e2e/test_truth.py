"""Truth tests: examples/train_loop on the simulated GPU in four regimes with a
known answer. The example measures its own wait for batches; the report must
agree within 3 points, give the right verdict, advise num_workers only when
loader-bound (within one of the right number) and pin_memory only when
pageable copies cost time.

The right verdict is taken from what the example measured, not from the
regime's name alone: on a loaded machine the training thread itself is slow
(late wake-ups after each synchronisation), the GPU idles for host reasons,
and HOST_BOUND is then the true answer. The device's part of a step is exact
(simulated), so the example's own host share is step - wait - device."""
import json
import math
import os
import subprocess

import pytest

from conftest import BUILD, CLI, clean_env, run_traced

TRAIN_LOOP = os.path.join(BUILD, "examples", "train_loop")
SIM = os.path.join(BUILD, "simcuda")
H2D_PINNED_GBPS = 25.0  # the simulator's default

# name: (workers, load_ms, kernel_ms, pinned, batch_mb)
REGIMES = {
    "loader-bound-1-worker": (1, 30, 10, 1, 2),
    "balanced": (2, 20, 10, 1, 2),
    "gpu-bound": (2, 5, 20, 1, 2),
    "pageable-copy-bound": (2, 2, 5, 0, 64),
}


# Within this distance of a verdict threshold (docs/report-schema.md) the
# example's and the report's measures of the same steps may fall on either
# side: both answers are accepted there.
AMBIGUOUS = 0.07


def band(share):
    if share >= 0.20:
        return "HIGHLY_INPUT_BOUND"
    if share >= 0.05:
        return "MODERATELY_INPUT_BOUND"
    return "NOT_INPUT_BOUND"


def verdicts(wait, copy, host):
    """The verdicts that fit the shares the example measured: rule 1 of the
    verdict (HOST_BOUND) where it clearly applies, the data-wait band where
    it clearly does not, and both near its thresholds."""
    clearly_host = host >= 0.20 + AMBIGUOUS and host > wait + copy + AMBIGUOUS
    clearly_not = host < 0.20 - AMBIGUOUS or host < wait + copy - AMBIGUOUS
    out = set()
    if not clearly_not:
        out.add("HOST_BOUND")
    if not clearly_host:
        out.update(band(w) for w in (wait - 0.03, wait, wait + 0.03))
    return out


@pytest.fixture(scope="module")
def have_sim():
    if not os.path.exists(TRAIN_LOOP) or not os.path.exists(os.path.join(SIM, "libcudart.so.13")):
        pytest.skip("train_loop or the simulated GPU was not built (needs nvcc and CUDA headers)")


@pytest.mark.parametrize("name", list(REGIMES))
def test_regime(built, have_sim, tmp_path, name):
    workers, load_ms, kernel_ms, pinned, batch_mb = REGIMES[name]
    env = clean_env(LD_LIBRARY_PATH=SIM,
                    SIMCUDA_KERNEL_US="train_step_kernel=%d" % (kernel_ms * 1000))
    run = tmp_path / "run"
    p = run_traced([TRAIN_LOOP, "--workers", str(workers), "--load-ms", str(load_ms),
                    "--kernel-ms", str(kernel_ms), "--pinned", str(pinned),
                    "--batch-mb", str(batch_mb), "--steps", "60"], run, env=env)
    assert p.returncode == 0, p.stderr.decode()
    own = json.loads([l for l in p.stderr.decode().splitlines()
                      if l.startswith('{"example":"train_loop"')][-1])
    # RATIONALE: --cores 8: the loader threads sleep (like waiting on storage),
    # so the 2 CPUs of a CI machine are not what limits more workers here.
    r = subprocess.run([CLI, "report", "--json", "--per-step", "--cores", "8", str(run)],
                       capture_output=True, env=clean_env())
    assert r.returncode == 0, r.stderr.decode()
    rep = json.loads(r.stdout)
    assert rep["steps"]["source"] == "nvtx"
    assert rep["steps"]["measured"] >= 55

    # data wait as the example measured it (steps after the first; the report
    # leaves the first out as warm-up)
    assert abs(rep["share"]["idle_data_wait"] - own["steady_wait_share"]) <= 0.03, (rep, own)
    # the trainer's fetch share (its next_batch ranges, GPU busy or idle:
    # docs/report-schema.md, "Fetch time, beside the split") is the same
    # wait as the example timed it, and no step's data wait exceeds its fetch
    # time (the loop waits and reads nowhere else)
    assert rep["trainer_fetch"] is not None, rep
    assert abs(rep["trainer_fetch"]["share"] - own["steady_wait_share"]) <= 0.03, (rep, own)
    for s in rep["per_step"]:
        assert s["trainer_fetch_ms"] + 1e-6 >= s["idle_data_wait_ms"], s
        assert s["trainer_fetch_ms"] <= s["dur_ms"] + 1e-6, s
    # the example's step: its wait for a batch, the device's part (exact), the
    # rest is host time; a pageable copy holds the host for the whole call
    # (the report's pageable-copy share), a pinned one only for its transfer
    step = own["steady_step_ms"]
    own_wait = own["steady_wait_share"]
    own_copy = 0.0 if pinned else own["steady_copy_call_ms"] / step
    device_ms = kernel_ms + (batch_mb * (1 << 20) / (H2D_PINNED_GBPS * 1e9) * 1e3 if pinned else 0)
    own_host = max(0.0, 1 - own_wait - own_copy - device_ms / step)
    allowed = verdicts(own_wait, own_copy, own_host)
    assert rep["verdict"]["label"] in allowed, (rep["verdict"], rep["share"], own, own_host)
    advice = {a["setting"]: a for a in rep["advice"]}

    copy_ms = batch_mb * (1 << 20) / (H2D_PINNED_GBPS * 1e9) * 1e3
    right_workers = math.ceil(load_ms / (kernel_ms + copy_ms))
    if name == "loader-bound-1-worker" and "HOST_BOUND" not in allowed:
        assert rep["verdict"]["label"] == "HIGHLY_INPUT_BOUND"
        assert "num_workers" in advice, rep["advice"]
        assert abs(advice["num_workers"]["value"] - right_workers) <= 1, advice
        # the prediction: the step without its wait for data, the GPU's part
        # and the trainer's own host time as the example measured them (both
        # stay when the batches are ready). Not half the step: the host part
        # grows with the machine's load (2.2 ms of trainer CPU a step on the
        # quiet test VM; a CI run predicted 15.9 ms of a 30.1 ms step)
        pred = advice["num_workers"]["predicted_step_ms"]
        without_wait = step * (1 - own_wait)
        assert device_ms * 0.95 <= pred <= without_wait * 1.10 + 1.0, (advice, own)
        assert pred < own["median_step_ms"], (advice, own)
    elif name == "loader-bound-1-worker":
        # RATIONALE: a machine so busy that the example itself measured its
        # trainer late (its own host share near or above the wait: seen with
        # the test at nice 19 beside CPU burners at nice 0) is not the
        # loader-bound regime any more; the verdict is held to the example's
        # shares above, and advice, if any, must still promise a shorter step
        if "num_workers" in advice:
            assert advice["num_workers"]["predicted_step_ms"] < own["steady_step_ms"], advice
    else:
        assert "num_workers" not in advice, rep["advice"]
    if name == "pageable-copy-bound":
        assert "pin_memory" in advice, rep["advice"]
        assert advice["pin_memory"]["predicted_saving_ms"] > 0
        assert rep["share"]["gpu_h2d_pageable"] + rep["share"]["idle_pageable_copy"] > 0.3
    else:
        assert "pin_memory" not in advice, rep["advice"]
    if name == "gpu-bound":
        assert rep["verdict"]["label"] in ("NOT_INPUT_BOUND", "HOST_BOUND")
        # the GPU computes for the share of a step the example's kernel takes
        # (> 0.9 on an idle machine, less when the host is late)
        own_compute = kernel_ms / own["steady_step_ms"]
        assert abs(rep["share"]["gpu_compute"] - own_compute) <= 0.05, (rep["share"], own)
