"""`gpustarve report` on scenario runs with known answers (scenarios.py),
on damaged and empty inputs, and the JSON schema (docs/report-schema.md)."""
import json
import os
import struct
import subprocess

import pytest

import scenarios
from conftest import clean_env, report_json, run_report

SHARES = ["gpu_compute", "gpu_comm", "gpu_h2d_pinned", "gpu_h2d_pageable", "gpu_copy_other",
          "idle_data_wait", "idle_pageable_copy", "idle_host"]


def write(gen, tmp_path, name, sc):
    return sc.write(gen, str(tmp_path / ("gpustarve-" + name)))


def check_schema(j, per_step=False):
    assert j["schema"] == "gpustarve.report/1"
    for k in ("run", "steps", "step_ms", "share", "median_ms", "input_bound_share", "verdict",
              "dataloader", "loader", "advice", "notes", "no_gpu_activity"):
        assert k in j, k
    assert set(j["steps"]) >= {"count", "measured", "warmup", "source"}
    assert j["steps"]["source"] in ("markers", "nvtx", "inferred")
    assert set(j["step_ms"]) >= {"median", "p90"}
    assert set(j["share"]) == set(SHARES)
    assert abs(sum(j["share"].values()) - 1.0) <= 1e-6
    assert all(0 <= v <= 1 for v in j["share"].values())
    assert j["verdict"]["label"] in ("HIGHLY_INPUT_BOUND", "MODERATELY_INPUT_BOUND",
                                     "NOT_INPUT_BOUND", "HOST_BOUND")
    assert isinstance(j["verdict"]["text"], str) and j["verdict"]["text"]
    for a in j["advice"]:
        assert set(a) >= {"setting", "value", "predicted_step_ms", "predicted_saving_ms",
                          "predicted_base", "predicted_range_ms", "why"}
        assert a["predicted_base"] in ("mean_step", "median_step")
        rng = a["predicted_range_ms"]
        assert rng is None or (rng[0] == a["predicted_step_ms"] and rng[1] >= rng[0])
    assert ("per_step" in j) == per_step
    if per_step:
        assert len(j["per_step"]) == j["steps"]["count"]
        for s in j["per_step"]:
            parts = sum(s[k + "_ms"] for k in SHARES)
            assert abs(parts - s["dur_ms"]) < 1e-5


def test_loader_bound(gs, gen, tmp_path):
    d = write(gen, tmp_path, "loader", scenarios.loader_bound())
    j = report_json(gs, d, "--cores", "8", "--per-step")
    check_schema(j, per_step=True)
    assert j["steps"] == {"count": 21, "measured": 20, "warmup": 1, "warmup_auto": True,
                          "source": "markers", "source_detail": "step markers"}
    assert j["step_ms"]["median"] == pytest.approx(100.0)
    assert j["share"]["idle_data_wait"] == pytest.approx(0.40, abs=1e-6)
    assert j["share"]["gpu_h2d_pinned"] == pytest.approx(0.05, abs=1e-6)
    assert j["share"]["gpu_compute"] == pytest.approx(0.55, abs=1e-6)
    assert j["input_bound_share"] == pytest.approx(0.40)
    assert j["verdict"]["label"] == "HIGHLY_INPUT_BOUND"
    assert j["dataloader"]["num_workers"] == 2 and j["dataloader"]["pin_memory"] is True
    assert j["loader"]["workers_seen"] == 2
    w = j["loader"]["workers"][0]
    assert w["role"] == "loader_worker" and w["requests"] == 50
    assert w["bytes_read"] == 50 << 20 and w["major_faults"] == 7
    assert {h["min_bytes"]: h["count"] for h in w["request_size_hist"]} == {1 << 20: 50}
    assert w["ms_per_batch"]["file_io"] > w["ms_per_batch"]["cpu"] > w["ms_per_batch"]["metadata"]
    adv = {a["setting"]: a for a in j["advice"]}
    assert set(adv) == {"num_workers"}
    assert adv["num_workers"]["value"] == 4
    assert adv["num_workers"]["predicted_step_ms"] == pytest.approx(60.0)
    assert adv["num_workers"]["predicted_saving_ms"] == pytest.approx(40.0)
    # the warm-up step is reported but not measured
    assert j["per_step"][0]["warmup"] and j["per_step"][0]["dur_ms"] == pytest.approx(300)


# the Python side writes booleans as 1/0 and None as "none"
PY_CONFIG = (("pin_memory_effective", "1"), ("persistent_workers", "0"), ("drop_last", "1"),
             ("prefetch_factor", "none"), ("requested.pin_memory", "0"))


def test_dataloader_booleans_are_json_booleans(gs, gen, tmp_path):
    d = write(gen, tmp_path, "loader", scenarios.loader_bound(pin_memory="1",
                                                               extra_config=PY_CONFIG))
    dl = report_json(gs, d, "--cores", "8")["dataloader"]
    assert dl["pin_memory"] is True and dl["pin_memory_effective"] is True
    assert dl["persistent_workers"] is False
    assert dl["prefetch_factor"] is None
    assert dl["num_workers"] == 2 and dl["batch_size"] == 32
    # the raw records stay strings, as written
    assert {"loader": 0, "key": "pin_memory", "value": "1"} in dl["config"]
    d = write(gen, tmp_path, "loader0", scenarios.loader_bound(pin_memory="0"))
    dl = report_json(gs, d, "--cores", "8")["dataloader"]
    assert dl["pin_memory"] is False and dl["pin_memory_effective"] is None


def test_loader_bound_capped_by_cores(gs, gen, tmp_path):
    d = write(gen, tmp_path, "loader", scenarios.loader_bound())
    j = report_json(gs, d, "--cores", "3")
    adv = {a["setting"]: a for a in j["advice"]}
    assert adv["num_workers"]["value"] == 3
    assert "CPU cores" in adv["num_workers"]["why"]
    assert adv["num_workers"]["predicted_step_ms"] > 60


def test_loader_bound_storage_wall(gs, gen, tmp_path):
    d = write(gen, tmp_path, "loader", scenarios.loader_bound())
    probe = tmp_path / "probe.json"
    probe.write_text(json.dumps({"read_MBps": 55.0, "h2d_pinned_GBps": 20}))
    j = report_json(gs, d, "--cores", "8", "--probe", str(probe))
    adv = {a["setting"]: a for a in j["advice"]}
    assert adv["num_workers"]["value"] is None
    assert "storage" in adv["num_workers"]["why"]
    assert adv["num_workers"]["predicted_saving_ms"] == 0


def test_late_gpu_records_same_answer(gs, gen, tmp_path):
    a = report_json(gs, write(gen, tmp_path, "a", scenarios.loader_bound()), "--cores", "8")
    b = report_json(gs, write(gen, tmp_path, "b", scenarios.loader_bound(late_gpu=True)),
                    "--cores", "8")
    assert a["share"] == b["share"]
    assert b["run"]["late_ms"] == 0


def test_gpu_bound(gs, gen, tmp_path):
    j = report_json(gs, write(gen, tmp_path, "gpu", scenarios.gpu_bound()))
    check_schema(j)
    assert j["verdict"]["label"] == "NOT_INPUT_BOUND"
    assert j["advice"] == []
    assert j["share"]["gpu_comm"] == pytest.approx(0.40, abs=1e-6)  # NCCL after compute ends
    assert j["share"]["gpu_compute"] == pytest.approx(0.55, abs=1e-6)
    assert j["share"]["idle_data_wait"] == pytest.approx(0.02, abs=1e-6)


def test_fetch_beside_data_wait(gs, gen, tmp_path):
    """The trainer's fetch share counts its fetches whole; the data wait only
    their part with the GPU idle (docs/report-schema.md, "Fetch time, beside
    the split")."""
    d = write(gen, tmp_path, "fetch", scenarios.fetch_over_gpu())
    j = report_json(gs, d, "--per-step")
    check_schema(j, per_step=True)
    assert j["trainer_fetch"]["share"] == pytest.approx(0.40, abs=1e-6)
    assert j["trainer_fetch"]["median_ms"] == pytest.approx(40.0, abs=1e-6)
    assert j["share"]["idle_data_wait"] == pytest.approx(0.30, abs=1e-6)
    assert j["share"]["gpu_compute"] == pytest.approx(0.65, abs=1e-6)
    for s in j["per_step"][1:]:
        assert s["trainer_fetch_ms"] == pytest.approx(40.0, abs=1e-6)
        assert s["idle_data_wait_ms"] == pytest.approx(30.0, abs=1e-6)
    # the warm-up step: nothing ran before its fetch
    assert j["per_step"][0]["trainer_fetch_ms"] == pytest.approx(40.0, abs=1e-6)
    assert j["per_step"][0]["idle_data_wait_ms"] == pytest.approx(40.0, abs=1e-6)
    out = run_report(gs, d).stdout
    assert ("fetch    trainer in batch fetch 40.0% of step time (median 40.0 ms); "
            "the GPU idle for 30.0 points of it (data wait)") in out
    rows = run_report(gs, d, "--per-step").stdout.splitlines()
    head = [i for i, ln in enumerate(rows) if ln.lstrip().startswith("step ")][0]
    assert rows[head].split()[-1] == "fetch"
    assert [ln.split()[-1] for ln in rows[head + 1:head + 22]] == ["40.000"] * 21
    assert [ln.split()[-4] for ln in rows[head + 2:head + 22]] == ["30.000"] * 20  # data_wait
    # a run without fetches has no fetch share (and no line)
    d = write(gen, tmp_path, "nofetch", scenarios.loader_bound(marker_steps=False))
    assert report_json(gs, d)["trainer_fetch"] is None
    assert "trainer in batch fetch" not in run_report(gs, d).stdout


def test_pageable_copy(gs, gen, tmp_path):
    j = report_json(gs, write(gen, tmp_path, "pg", scenarios.pageable()))
    check_schema(j)
    assert j["share"]["gpu_h2d_pageable"] == pytest.approx(0.10, abs=1e-6)
    assert j["share"]["idle_pageable_copy"] == pytest.approx(0.10, abs=1e-6)
    adv = {a["setting"]: a for a in j["advice"]}
    assert set(adv) == {"pin_memory"}
    assert adv["pin_memory"]["value"] is True
    # 20 ms of pageable cost; pinned assumed 2x the 6.7 GB/s pageable rate: 5 ms
    assert adv["pin_memory"]["predicted_saving_ms"] == pytest.approx(15.0, rel=1e-3)
    assert adv["pin_memory"]["predicted_step_ms"] == pytest.approx(85.0, rel=1e-3)


def test_pageable_copy_probe_bandwidth(gs, gen, tmp_path):
    d = write(gen, tmp_path, "pg", scenarios.pageable())
    probe = tmp_path / "probe.json"
    probe.write_text('{"read_MBps": 900, "h2d_pinned_GBps": 25.0}')
    j = report_json(gs, d, "--probe", str(probe))
    adv = {a["setting"]: a for a in j["advice"]}
    # 64 MiB at 25 GB/s = 2.68 ms
    assert adv["pin_memory"]["predicted_saving_ms"] == pytest.approx(20 - 67.108864 / 25, rel=1e-3)


def test_host_bound(gs, gen, tmp_path):
    j = report_json(gs, write(gen, tmp_path, "host", scenarios.host_bound()))
    check_schema(j)
    assert j["verdict"]["label"] == "HOST_BOUND"
    assert j["share"]["idle_host"] == pytest.approx(0.58, abs=1e-6)
    assert j["advice"] == []


def test_no_gpu(gs, gen, tmp_path):
    d = write(gen, tmp_path, "cpu", scenarios.no_gpu())
    j = report_json(gs, d)
    check_schema(j)
    assert j["no_gpu_activity"] is True and j["run"]["gpu_activity"] is False
    assert j["share"]["idle_data_wait"] == pytest.approx(0.30, abs=1e-6)
    assert j["share"]["idle_host"] == pytest.approx(0.70, abs=1e-6)
    assert j["verdict"]["label"] == "HIGHLY_INPUT_BOUND"
    r = run_report(gs, d)
    assert r.returncode == 0
    assert "no GPU activity seen: shares of the training thread's time" in r.stdout


@pytest.mark.parametrize("start_end", [False, True])
def test_nvtx_steps(gs, gen, tmp_path, start_end):
    j = report_json(gs, write(gen, tmp_path, "nvtx", scenarios.nvtx(use_start_end=start_end)))
    check_schema(j)
    assert j["steps"]["source"] == "nvtx"
    assert j["steps"]["count"] == 21 and j["steps"]["measured"] == 20
    assert j["share"]["idle_data_wait"] == pytest.approx(0.30, abs=1e-6)
    assert j["verdict"]["label"] == "HIGHLY_INPUT_BOUND"
    # loading happens in the training thread, and the trace records no
    # DataLoader: one loader thread keeps up, named as the program can set it
    adv = {a["setting"]: a for a in j["advice"]}
    assert adv["loader_threads"]["value"] == 1
    r = run_report(gs, write(gen, tmp_path, "nvtx-text", scenarios.nvtx(use_start_end=start_end)))
    assert "loader_threads=1" in r.stdout and "num_workers" not in r.stdout


def test_nvtx_custom_pattern(gs, gen, tmp_path):
    d = write(gen, tmp_path, "nvtx", scenarios.nvtx())
    # no step range left: the DataLoader __next__ ranges, one step each (one
    # to a ProfilerStep here)
    j = report_json(gs, d, "--step-range", "^no-such-range$")
    assert (j["steps"]["count"], j["steps"]["source_detail"]) == \
        (report_json(gs, d)["steps"]["count"], "loader iterations (batch-wait ranges)")
    # no range is a step or a batch wait: the training thread's periodic
    # file reads are (docs/report-schema.md, "Steps": inferred, the last resort)
    r = run_report(gs, d, "--json", "--step-range", "^no-such-range$", "--fetch-range",
                   "^no-such-range$")
    assert r.returncode == 0, r.stderr
    j = json.loads(r.stdout)
    assert j["steps"]["source"] == "inferred"
    assert j["steps"]["source_detail"].startswith("file reads")
    assert j["steps"]["count"] == 20  # the 21 bursts' starts, one to the next
    r = run_report(gs, d, "--step-range", "([")
    assert r.returncode == 2 and "regular expression" in r.stderr


def test_inferred_steps(gs, gen, tmp_path):
    j = report_json(gs, write(gen, tmp_path, "inf", scenarios.inferred()))
    check_schema(j)
    assert j["steps"]["source"] == "inferred"
    assert j["steps"]["measured"] >= 19
    assert j["step_ms"]["median"] == pytest.approx(100.0)
    assert j["share"]["idle_data_wait"] == pytest.approx(0.30, abs=1e-3)
    assert j["verdict"]["label"] == "HIGHLY_INPUT_BOUND"


@pytest.mark.parametrize("split", [(0, 1), (1, 3), (1, 2), (2, 3), (1, 1)])
def test_file_bursts_split_in_two(gs, gen, tmp_path, split):
    """A step's file events cut in two bursts, in none of the steps, a
    third, half, two thirds or all of them: still one step per period
    (docs/report-schema.md, "Steps": the period is the gap that makes the
    bursts regular)."""
    j = report_json(gs, write(gen, tmp_path, "fb", scenarios.file_bursts(split=split)))
    assert j["steps"]["source_detail"].startswith("file reads"), j["steps"]
    assert j["steps"]["count"] == 40, j["steps"]
    assert j["step_ms"]["median"] == pytest.approx(100.0)


def test_markers_absent_loader_inferred(gs, gen, tmp_path):
    j = report_json(gs, write(gen, tmp_path, "inf2", scenarios.loader_bound(marker_steps=False)),
                    "--cores", "8")
    assert j["steps"]["source"] == "inferred"
    assert j["share"]["idle_data_wait"] == pytest.approx(0.40, abs=1e-3)


def test_skip_option(gs, gen, tmp_path):
    d = write(gen, tmp_path, "gpu", scenarios.gpu_bound())
    j = report_json(gs, d, "--skip", "5")
    assert j["steps"]["warmup"] == 5 and j["steps"]["measured"] == 16
    assert j["steps"]["warmup_auto"] is False
    r = run_report(gs, d, "--skip", "100")
    assert r.returncode == 2 and "warm-up" in r.stderr
    r = run_report(gs, d, "--skip", "x")
    assert r.returncode == 2


def test_text_report(gs, gen, tmp_path):
    d = write(gen, tmp_path, "loader", scenarios.loader_bound())
    r = run_report(gs, d, "--cores", "8")
    assert r.returncode == 0, r.stderr
    out = r.stdout
    assert "\033[" not in out  # not a terminal: no colour
    for s in ("steps 20 from step markers (1 warm-up left out", "GPU idle: data wait",
              "HIGHLY INPUT-BOUND", "num_workers=4",
              "predicted median step 60.0 ms (-40% of 100.0 ms)",
              "2 loader workers", "NVIDIA H200"):
        assert s in out, s
    assert r.stderr == ""


def test_default_dir_is_newest(gs, gen, tmp_path):
    write(gen, tmp_path, "20260101-000000", scenarios.gpu_bound())
    newest = write(gen, tmp_path, "20260102-000000", scenarios.host_bound())
    os.utime(newest, (2e9, 2e9))
    import subprocess
    r = subprocess.run([gs, "report", "--json"], cwd=str(tmp_path), capture_output=True,
                       text=True, env=clean_env())
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["verdict"]["label"] == "HOST_BOUND"


# ---- bad input -----------------------------------------------------------------------------

def test_missing_dir(gs, tmp_path):
    r = run_report(gs, tmp_path / "nope")
    assert r.returncode == 2 and "nope" in r.stderr and r.stdout == ""


def test_no_default_dir(gs, tmp_path):
    import subprocess
    r = subprocess.run([gs, "report"], cwd=str(tmp_path), capture_output=True, text=True,
                       env=clean_env())
    assert r.returncode == 2 and "no gpustarve-* directory" in r.stderr


def test_empty_dir(gs, tmp_path):
    r = run_report(gs, tmp_path)
    assert r.returncode == 2 and "no trace files" in r.stderr


def test_not_a_dir(gs, tmp_path):
    f = tmp_path / "x.gst"
    f.write_bytes(b"hello")
    r = run_report(gs, f)
    assert r.returncode == 2 and "not a directory" in r.stderr


def test_garbage_only(gs, tmp_path):
    (tmp_path / "a.gst").write_bytes(os.urandom(4096))
    (tmp_path / "b.gst").write_bytes(b"")
    r = run_report(gs, tmp_path)
    assert r.returncode == 2
    assert "no readable trace file" in r.stderr
    assert "not a gpustarve trace" in r.stderr


def test_garbage_beside_good_files(gs, gen, tmp_path):
    d = write(gen, tmp_path, "gpu", scenarios.gpu_bound())
    with open(os.path.join(d, "zz-999.gst"), "wb") as f:
        f.write(b"GSTRACE\0" + os.urandom(500))
    r = run_report(gs, d, "--json")
    assert r.returncode == 0
    j = json.loads(r.stdout)
    assert j["verdict"]["label"] == "NOT_INPUT_BOUND"
    sk = j["run"]["skipped"]
    assert len(sk) == 1 and sk[0]["file"].endswith("zz-999.gst") and sk[0]["used"] is False
    assert "zz-999.gst" in r.stderr


def test_future_version(gs, gen, tmp_path):
    sc = scenarios.gpu_bound()
    sc.procs[0].version = "2.0"
    d = write(gen, tmp_path, "v2", sc)
    r = run_report(gs, d)
    assert r.returncode == 2
    assert "version 2.0" in r.stderr


def test_truncated_file_partial_report(gs, gen, tmp_path):
    d = write(gen, tmp_path, "trunc", scenarios.gpu_bound(nsteps=40))
    path = os.path.join(d, "testhost-100.gst")
    size = os.path.getsize(path)
    with open(path, "r+b") as f:
        f.truncate(size - 100)
    r = run_report(gs, d, "--json")
    assert r.returncode == 0, r.stderr
    j = json.loads(r.stdout)
    assert 30 <= j["steps"]["count"] < 41
    sk = j["run"]["skipped"]
    assert len(sk) == 1 and sk[0]["used"] is True and "truncated" in sk[0]["reason"]
    assert "truncated" in r.stderr
    r = run_report(gs, d)
    assert "skipped" in r.stdout and "truncated" in r.stdout


def test_no_steps(gs, gen, tmp_path):
    r = run_report(gs, write(gen, tmp_path, "none", scenarios.no_steps()))
    assert r.returncode == 2 and "no training steps" in r.stderr and r.stdout == ""


def test_help(gs):
    import subprocess
    a = subprocess.run([gs, "report", "--help"], capture_output=True, text=True)
    b = subprocess.run([gs, "help", "report"], capture_output=True, text=True)
    assert a.returncode == 0 and a.stdout == b.stdout and "--json" in a.stdout
    c = subprocess.run([gs, "report", "--bogus"], capture_output=True, text=True)
    assert c.returncode == 2 and "unknown option" in c.stderr


def test_header_version_bytes():
    # gen_scenario writes the version at offset 12 (docs/trace-format.md)
    assert struct.calcsize("<8sIHH") == 16


# ---- run directories that hold more than one run ----------------------------------------

def _shifted(sc, d, rank=None):
    """The scenario's processes with pid d added (a second run's pids)."""
    for p in sc.procs:
        p.pid += d
        if p.ppid != 1:
            p.ppid += d
        p.lines = ["tid %d" % (int(ln.split()[1]) + d) if ln.startswith("tid ") else ln
                   for ln in p.lines]
        if rank is not None:
            p.rank = rank
    return sc


def test_two_runs_in_one_directory_are_named(gs, gen, tmp_path):
    """Two unrelated runs (two roots that train) written into one directory:
    the report says so, and the other run's loader workers are not counted
    as this run's."""
    d = str(tmp_path / "mixed")
    scenarios.loader_bound(workers=2).write(gen, d)
    _shifted(scenarios.loader_bound(workers=3), 1000).write(gen, d)
    j = report_json(gs, d, "--cores", "8")
    assert j["run"]["processes"] == 7
    assert j["run"]["separate_runs"] == 2
    mine = j["run"]["trainer"]["pid"]
    assert j["run"]["other_run_roots"] == [1100 if mine == 100 else 100]
    assert j["loader"]["workers_seen"] == (2 if mine == 100 else 3)
    assert any("holds 2 separate runs" in n for n in j["notes"])
    txt = run_report(gs, d, "--cores", "8")
    assert txt.returncode == 0
    assert "MIXED" in txt.stdout and "holds 2 separate runs" in txt.stdout
    cmp = subprocess.run([gs, "compare", "--cores", "8", d, d], capture_output=True, text=True,
                         env=clean_env())
    assert "A's directory holds 2 separate runs" in cmp.stdout
    page = tmp_path / "mixed.html"
    assert run_report(gs, d, "--cores", "8", "--html", str(page)).returncode == 0
    assert "This directory holds 2 separate runs" in page.read_text()
    # one run alone: nothing said
    one = write(gen, tmp_path, "one", scenarios.loader_bound(workers=2))
    j = report_json(gs, one, "--cores", "8")
    assert j["run"]["separate_runs"] == 1 and j["run"]["other_run_roots"] == []
    assert "MIXED" not in run_report(gs, one).stdout


def test_ranks_without_a_common_parent_are_one_run(gs, gen, tmp_path):
    """Ranks of one job started by a launcher that is not traced (srun) are
    separate roots, one rank each, running together: one run, not two."""
    d = str(tmp_path / "ranks")
    _shifted(scenarios.loader_bound(workers=2), 0, rank=0).write(gen, d)
    _shifted(scenarios.loader_bound(workers=2), 1000, rank=1).write(gen, d)
    j = report_json(gs, d, "--cores", "8")
    assert j["run"]["separate_runs"] == 1
    # the same rank twice is two runs of the job
    d2 = str(tmp_path / "twice")
    _shifted(scenarios.loader_bound(workers=2), 0, rank=0).write(gen, d2)
    _shifted(scenarios.loader_bound(workers=2), 1000, rank=0).write(gen, d2)
    assert report_json(gs, d2, "--cores", "8")["run"]["separate_runs"] == 2


# ---- one vocabulary ------------------------------------------------------------------------

def test_cpu_only_run_never_speaks_of_a_gpu(gs, gen, tmp_path):
    d = write(gen, tmp_path, "cpu", scenarios.loader_bound(gpu=False))
    j = report_json(gs, d, "--cores", "8")
    assert j["no_gpu_activity"] is True
    assert j["share"]["idle_data_wait"] == pytest.approx(0.40, abs=1e-6)
    assert j["advice"][0]["setting"] == "num_workers" and j["advice"][0]["value"] == 4
    txt = run_report(gs, d, "--cores", "8").stdout
    lines = [ln for ln in txt.splitlines() if "GPU" in ln]
    assert lines == ["no GPU activity seen: shares of the training thread's time"], txt
    assert "verdict  HIGHLY INPUT-BOUND: the training thread waits for data 40% of its time" in txt
    assert "the training thread's own work" in txt
    # enough workers already (190 ms per batch, 170 ms of other work): the
    # note says who waits
    d = write(gen, tmp_path, "cpu2", scenarios.loader_bound(gpu=False, step_ms=200, wait_ms=30))
    txt = run_report(gs, d, "--cores", "8").stdout
    assert "yet the training thread waits" in txt
    assert [ln for ln in txt.splitlines() if "GPU" in ln] == \
        ["no GPU activity seen: shares of the training thread's time"], txt


def test_verdict_quotes_the_table(gs, gen, tmp_path):
    d = write(gen, tmp_path, "loader", scenarios.loader_bound(wait_ms=30, jitter_ms=3))
    j = report_json(gs, d, "--cores", "8")
    txt = run_report(gs, d, "--cores", "8").stdout
    row = [ln for ln in txt.splitlines() if ln.startswith("GPU idle: data wait")][0]
    pct = "%.0f%%" % (100 * j["share"]["idle_data_wait"])
    assert row.split()[5] == "%.1f%%" % (100 * j["share"]["idle_data_wait"])
    assert ("waits for data %s of every step" % pct) in j["verdict"]["text"]
    lo, hi = j["input_bound_share_interval"]
    assert lo <= j["input_bound_share"] <= hi
    assert j["verdict"]["borderline"] is False


def test_share_near_a_band_edge_is_borderline(gs, gen, tmp_path):
    """20 ms of data wait in steps of 100 +- 5 ms: the share is 19-21% from
    step to step, across the 20% edge between MODERATELY and HIGHLY: the
    verdict says so instead of a bare label that another run could flip."""
    d = write(gen, tmp_path, "edge", scenarios.loader_bound(wait_ms=20, jitter_ms=5))
    j = report_json(gs, d, "--cores", "8")
    lo, hi = j["input_bound_share_interval"]
    assert lo < 0.20 <= hi
    assert j["verdict"]["borderline"] is True
    assert "borderline" in j["verdict"]["text"]
    assert "between MODERATELY and HIGHLY" in j["verdict"]["text"]
    # far from an edge: not borderline
    d = write(gen, tmp_path, "far", scenarios.loader_bound(wait_ms=40, jitter_ms=5))
    j = report_json(gs, d, "--cores", "8")
    assert j["verdict"]["borderline"] is False and "borderline" not in j["verdict"]["text"]


def test_moderately_input_bound_without_advice_says_why(gs, gen, tmp_path):
    # 2 workers at ~190 ms per batch keep up with 185 ms of GPU-bound step
    d = write(gen, tmp_path, "mod", scenarios.loader_bound(step_ms=200, wait_ms=15))
    j = report_json(gs, d, "--cores", "8")
    assert j["verdict"]["label"] == "MODERATELY_INPUT_BOUND"
    assert j["advice"] == []
    assert j["advice_none_why"].startswith("the loader should keep up")
    txt = run_report(gs, d, "--cores", "8").stdout
    assert "advice   none: the loader should keep up" in txt
    assert "nothing in the loader settings would help" not in txt
    page = tmp_path / "mod.html"
    assert run_report(gs, d, "--cores", "8", "--html", str(page)).returncode == 0
    assert "Nothing advised: the loader should keep up" in page.read_text()
    # not input-bound: null
    d = write(gen, tmp_path, "gpu", scenarios.gpu_bound())
    assert report_json(gs, d, "--cores", "8")["advice_none_why"] is None


def test_workers_started_each_epoch_count_once(gs, gen, tmp_path):
    """DataLoader workers without persistent_workers are new processes every
    epoch; they are the same 2 workers, not 4."""
    d = write(gen, tmp_path, "epochs", scenarios.loader_bound(workers=2, epochs=2))
    j = report_json(gs, d, "--cores", "8")
    assert j["loader"]["workers_seen"] == 2 and j["loader"]["worker_processes"] == 4
    assert len(j["loader"]["workers"]) == 4
    assert j["advice"][0]["value"] == 4
    txt = run_report(gs, d, "--cores", "8").stdout
    assert "2 loader workers" in txt
    assert "loader   2 workers (4 processes: started again each epoch)" in txt
    one = report_json(gs, write(gen, tmp_path, "one", scenarios.loader_bound(workers=2)),
                      "--cores", "8")
    assert one["loader"]["workers_seen"] == one["loader"]["worker_processes"] == 2


def test_run_line_and_loader_line_give_one_worker_count(gs, gen, tmp_path):
    """Workers that are configured but not traced (threads, untraced
    processes): the run line gives the configured count the loader line
    gives, not 0."""
    d = write(gen, tmp_path, "gpu", scenarios.gpu_bound())  # num_workers=4, no worker traced
    txt = run_report(gs, d, "--cores", "8").stdout
    assert "1 trainer (pid 100), 4 loader workers (configuration)" in txt
    assert "loader   num_workers=4 (configuration)" in txt
    assert "0 loader workers" not in txt


def test_other_load_is_measured_from_the_machines_cpu_time(gs, gen, tmp_path):
    """host_cpu records (format 1.4): the machine's busy cores over the
    measured steps less the run's own threads' CPU are other processes'
    load, reported and bounding the model's fitted load from below
    (docs/report-schema.md, "The model")."""
    d = scenarios.measured_load(other_ms=120).write(gen, tmp_path / "load")
    m = report_json(gs, d)["model"]
    assert m is not None
    # 2 x 161 ms busy of 200 ms: 1.61 cores, 0.41 of them the trainer's
    assert abs(m["other_load_cores"] - 1.2) < 0.02, m
    assert m["other_load_bounds"] is True and m["other_load_capped"] is False
    assert m["other_process_threads"] > 1.0, m  # no run-queue delay: the measurement alone
    notes = report_json(gs, d)["notes"]
    assert any("other processes kept 1.20 of the 2 CPUs busy" in n for n in notes), notes
    # the same run without the records (format 1.3): the fit alone
    d = scenarios.measured_load(host=False).write(gen, tmp_path / "nohost")
    m = report_json(gs, d)["model"]
    assert m["other_load_cores"] is None and m["other_load_bounds"] is False
    assert m["other_load_capped"] is False
    assert m["other_process_threads"] == 0


def test_children_that_read_only_outside_the_steps_are_no_workers(gs, gen, tmp_path):
    """torch.compile runs a compiler and a hashing tool in its first step
    (warm-up); they read files, but load none of the measured steps'
    batches: not loader workers (docs/report-schema.md, "Loader workers").
    A child that reads during the steps still is one."""
    sc = scenarios.loader_bound(workers=2)
    early = sc.proc(300, 100, "cc1plus -E header.hpp")
    for r in range(20):  # inside the 300 ms warm-up step
        early.file_read(300, scenarios.T0 + (10 + 10 * r) * scenarios.MS,
                        scenarios.T0 + (15 + 10 * r) * scenarios.MS, 64 << 10,
                        path="/usr/include/h%d.h" % r)
    # a compile pool's process: it reads as it starts, then waits for work
    # through the whole run
    pool = sc.proc(302, 100, "python -m torch._inductor.compile_worker")
    pool.file_read(302, scenarios.T0 + 20 * scenarios.MS, scenarios.T0 + 30 * scenarios.MS, 4096,
                   path="/venv/torch/__init__.py")
    pool.pipe_read(302, scenarios.T0 + 30 * scenarios.MS, scenarios.T0 + 3000 * scenarios.MS)
    j = report_json(gs, write(gen, tmp_path, "early", sc), "--cores", "8")
    assert j["loader"]["workers_seen"] == 2, j["loader"]
    assert not {300, 302} & {w["pid"] for w in j["loader"]["workers"]}
    sc = scenarios.loader_bound(workers=2)
    during = sc.proc(301, 100, "decoder")
    for r in range(20):  # through the measured steps (from 300 ms on)
        during.file_read(301, scenarios.T0 + (310 + 50 * r) * scenarios.MS,
                         scenarios.T0 + (320 + 50 * r) * scenarios.MS, 64 << 10,
                         path="/data/v%d" % r)
    j = report_json(gs, write(gen, tmp_path, "during", sc), "--cores", "8")
    assert 301 in [w["pid"] for w in j["loader"]["workers"]], j["loader"]


def test_threads_that_read_only_outside_the_steps_are_no_workers(gs, gen, tmp_path):
    """No worker process: the trainer's threads that read files during the
    measured steps are its loaders, not one that read only in the warm-up
    step (a compile thread)."""
    sc = scenarios.loader_bound(workers=0)
    tr = sc.procs[0]
    for r in range(10):
        tr.file_read(150, scenarios.T0 + (10 + 10 * r) * scenarios.MS,
                     scenarios.T0 + (15 + 10 * r) * scenarios.MS, 4096, path="/venv/m%d.py" % r)
        tr.file_read(151, scenarios.T0 + (310 + 100 * r) * scenarios.MS,
                     scenarios.T0 + (330 + 100 * r) * scenarios.MS, 1 << 20,
                     path="/data/img%d.jpg" % r)
    j = report_json(gs, write(gen, tmp_path, "threads", sc), "--cores", "8")
    assert [w["tid"] for w in j["loader"]["workers"]] == [151], j["loader"]
