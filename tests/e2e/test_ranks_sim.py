"""Stragglers on the simulated GPU: jobs of 4 simulated ranks (sim_step
started by tests/simcuda/sim_job.py as torchrun starts ranks), whose NCCL
kernels are collectives across the ranks: each ends when the last rank has
arrived (tests/simcuda/README.md, "Collectives across ranks"). One rank is
made late on purpose -- its loader slower, more host work, more kernels --
or none is. The report must name the rank the others waited for, with the
cause, and every rank's waiting must be what the raw kernel timestamps of
the trace (`gpustarve dump --json`) say, computed here from them.

The same runs, converted to PyTorch profiler (Kineto) JSON and imported
with `gpustarve import` (one file per rank, each with its own clock skewed
on purpose), must give the same answer. And four "hosts" (the test hook
GPUSTARVE_TEST_HOST, realtime clocks 5 s apart) must be put back on one
clock by the collectives' ends within 0.1 ms: they really share one
CLOCK_MONOTONIC.

Every expectation comes from the trace's own timestamps, never from the
machine's speed (docs/testing.md)."""
import json
import os
import sys

import pytest

from conftest import BUILD, clean_env, dump, report_json, run_traced
import gstest

SIM = os.path.join(BUILD, "simcuda")
JOB = os.path.join(gstest.ROOT, "tests", "simcuda", "sim_job.py")
RANKS = 4
STEPS = 10
SKIP = 1  # the first step: processes starting, the collectives' first meeting
GATHER = "ncclDevKernel_AllGather_RING_LL"
REDUCE = "ncclDevKernel_AllReduce_Sum_f32_RING_LL"
# RATIONALE: steps of about 0.4 s of simulated GPU time, and 100 ms of lateness
# a step for the late rank: a loaded 2-core machine delays a rank's host by a few
# ms now and then, which must stay far below both the 5% threshold and the
# lateness made on purpose
KERNEL_US = "fwd=150000,bwd=250000,extra=50000,%s=1000,%s=2000" % (GATHER, REDUCE)
BASE = ["--steps", str(STEPS), "--load-ms", "5", "--kernel", "fwd", "--kernel", GATHER,
        "--kernel", "bwd", "--kernel", REDUCE]
LATE = {
    "data_wait": ["--load-ms", "105"],
    "host": ["--host-ms", "100"],
    "compute": ["--kernel", "extra*2"],
}


def require_sim():
    if not os.path.exists(os.path.join(SIM, "sim_step")):
        pytest.skip("the simulated GPU is not built (make simcuda-bins)")


def run_job(run_dir, late_rank=None, late_args=(), rank_env=None):
    require_sim()
    cmd = [gstest.DEBIAN_PY, JOB, "--nproc", str(RANKS)]
    if late_rank is not None:
        for a in late_args:
            cmd += ["--rank", str(late_rank), a]
    for r, kv in (rank_env or {}).items():
        for k, v in kv.items():
            cmd += ["--rank-env", str(r), "%s=%s" % (k, v)]
    cmd += ["--", os.path.join(SIM, "sim_step")] + BASE
    env = clean_env(LD_LIBRARY_PATH=SIM, SIMCUDA_KERNEL_US=KERNEL_US)
    p = run_traced(cmd, run_dir, env=env, timeout=600)
    assert p.returncode == 0, p.stderr.decode()[-3000:]


# ---- the truth, from the raw timestamps --------------------------------------------------

def ranks_of(recs):
    """rank -> {"pid", "host", "colls": [(ts, end, name)], "steps": [(t0, t1)]}."""
    procs = {r["pid"]: r for r in recs if r["kind"] == "process" and r["rank"] is not None}
    out = {q["rank"]: {"pid": pid, "proc": q, "colls": [], "steps": []}
           for pid, q in procs.items()}
    by_pid = {v["pid"]: v for v in out.values()}
    for r in recs:
        v = by_pid.get(r["pid"])
        if v is None:
            continue
        if r["kind"] == "gpu_kernel" and "nccl" in r["name"]:
            v["colls"].append((r["ts_ns"], r["ts_ns"] + r["dur_ns"], r["name"]))
        elif r["kind"] == "range" and r["name"] == "train_step":
            v["steps"].append((r["ts_ns"], r["ts_ns"] + r["dur_ns"]))
    for v in out.values():
        v["colls"].sort()
        v["steps"].sort()
    return out


def truth(recs):
    """What the kernels say: per rank the waiting it caused and its waiting
    for each rank, over the collectives ending in rank 0's measured steps;
    the ranks' step time there; the straggler as the report must name it."""
    R = ranks_of(recs)
    assert sorted(R) == list(range(RANKS))
    n = min(len(v["colls"]) for v in R.values())
    assert n >= 2 * (STEPS - SKIP), {r: len(v["colls"]) for r, v in R.items()}
    steps = R[0]["steps"][SKIP:STEPS]
    caused = {r: 0 for r in R}
    waited = {r: {s: 0 for s in R} for r in R}
    counted = 0
    for i in range(n):
        end0 = R[0]["colls"][i][1]
        if not any(a <= end0 < b for a, b in steps):
            continue
        counted += 1
        assert len({R[r]["colls"][i][2] for r in R}) == 1  # the same operation on every rank
        durs = {r: R[r]["colls"][i][1] - R[r]["colls"][i][0] for r in R}
        last = min(R, key=lambda r: (durs[r], r))
        for r in R:
            w = durs[r] - durs[last]
            waited[r][last] += w
            caused[last] += w
    total = sum(caused.values())
    time = {r: sum(b - a for a, b in v["steps"][SKIP:STEPS]) for r, v in R.items()}
    top = max(R, key=lambda r: (caused[r], -r))
    share = caused[top] / sum(time[r] for r in R if r != top)
    named = top if share >= 0.05 and 2 * caused[top] > total else None
    return {"caused": caused, "waited": waited, "counted": counted, "straggler": named,
            "share": share, "ranks": R}


def close(a_ms, b_ns, rel=0.005):
    return abs(a_ms - b_ns / 1e6) <= rel * b_ns / 1e6 + 0.01


def check_against_truth(rep, t):
    coll = rep["job"]["collectives"]
    assert coll["used"] and coll["in_aligned_steps"] == t["counted"], coll
    ranks = {R["rank"]: R for R in rep["ranks"]}
    for r, R in ranks.items():
        assert close(R["caused_wait_ms"], t["caused"][r]), (r, R["caused_wait_ms"], t["caused"])
        for s, w in t["waited"][r].items():
            got = (R["waited_for_ms"] or {}).get(str(s), 0)
            assert close(got, w), (r, s, got, w)
    s = rep["straggler"]
    if t["straggler"] is None:
        assert s is None, s
    else:
        assert s is not None and s["rank"] == t["straggler"], (s, t["straggler"], t["caused"])
        assert close(s["cost_ms"], t["caused"][t["straggler"]])
        assert abs(s["share"] - t["share"]) < 0.02, (s["share"], t["share"])


# ---- the jobs ------------------------------------------------------------------------------

@pytest.mark.parametrize("cause", sorted(LATE))
def test_late_rank_named_with_its_cause(tmp_path, cause):
    """One of 4 ranks is late at every step by 100 ms: its loader slower
    (data wait), more host work (host), or two more kernels (compute)."""
    late = 2
    run_job(tmp_path / "run", late, LATE[cause])
    recs, _, _ = dump(tmp_path / "run")
    t = truth(recs)
    assert t["straggler"] == late, t  # the job does what it was made to
    rep = report_json(tmp_path / "run", "--skip", str(SKIP), "--per-step")
    check_against_truth(rep, t)
    s = rep["straggler"]
    assert s["cause"] == cause, s
    assert s["source"] == "collectives"
    # the part named explains most of the lateness, in ms
    assert s["parts"][cause + "_ms"] >= 0.7 * s["late_ms"], s
    assert rep["job"]["limiting_rank"] == late
    assert ("rank %d arrived last" % late) in s["why"], s["why"]
    steps = [p for p in rep["per_step"] if not p["warmup"]]
    assert steps and all(p["straggler"]["rank"] == late for p in steps), steps
    text = gstest.run([gstest.CLI, "report", "--skip", str(SKIP), str(tmp_path / "run")])
    assert text.returncode == 0
    assert ("straggler rank %d: rank %d arrived last" % (late, late)).encode() in text.stdout


def test_balanced_job_has_no_straggler(tmp_path):
    run_job(tmp_path / "run")
    recs, _, _ = dump(tmp_path / "run")
    t = truth(recs)
    rep = report_json(tmp_path / "run", "--skip", str(SKIP))
    check_against_truth(rep, t)
    assert t["straggler"] is None and rep["straggler"] is None, (t, rep["straggler"])


def test_four_hosts_aligned_by_collective_ends(tmp_path):
    """Each rank its own "host" whose realtime clock is r x 5 s ahead: the
    header pairs see the skew, the collectives' ends take it out to within
    0.1 ms (the four really share CLOCK_MONOTONIC: the true offset is 0)."""
    skew = 5 * 10**9
    env = {r: {"GPUSTARVE_TEST_HOST": "node%d" % r,
               "GPUSTARVE_TEST_REALTIME_OFFSET_NS": str(r * skew)} for r in range(RANKS)}
    run_job(tmp_path / "run", 1, LATE["data_wait"], rank_env=env)
    rep = report_json(tmp_path / "run", "--skip", str(SKIP))
    assert rep["job"]["hosts"] == RANKS
    errors = []
    for R in rep["ranks"][1:]:
        c = R["clock"]
        assert c["source"] == "collectives" and c["collectives"] >= 2 * (STEPS - 1), c
        assert abs(c["realtime_offset_ns"] - R["rank"] * skew) < 10**6, c
        errors.append(abs(c["offset_ns"]))
        assert c["max_ms"] < 0.1, c  # the ends agree: the same instant on every rank
    print("clock alignment error (ns) of ranks 1..3: %s" % errors)
    assert max(errors) < 100_000, errors
    recs, _, _ = dump(tmp_path / "run")
    check_against_truth(rep, truth(recs))


# ---- the same runs imported as PyTorch profiler traces -------------------------------------

def kineto_of(rank, v, recs, path, skew_ns, world):
    """One rank's trainer as a PyTorch profiler trace (2.x layout), its
    timestamps on its realtime clock plus skew_ns."""
    pid, q = v["pid"], v["proc"]
    off = q["real_ns"] - q["mono_ns"] + skew_ns

    def us(ns):
        t = ns + off
        return "%d.%03d" % (t // 1000, t % 1000)

    ev = ['{"ph": "M", "name": "process_name", "pid": %d, "tid": 0, "args": {"name": "python"}}'
          % pid]
    for r in recs:
        if r["pid"] != pid:
            continue
        k = r["kind"]
        if k == "range" and r["name"] in ("train_step", "next_batch"):
            name = "ProfilerStep#%d" % (len([e for e in ev if "ProfilerStep" in e]) + 1) \
                if r["name"] == "train_step" \
                else "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__"
            ev.append('{"ph": "X", "cat": "user_annotation", "name": "%s", "pid": %d, "tid": %d, '
                      '"ts": %s, "dur": %.3f}' % (name, pid, r["tid"], us(r["ts_ns"]),
                                                  r["dur_ns"] / 1e3))
        elif k in ("cuda_memcpy", "cuda_sync"):
            ev.append('{"ph": "X", "cat": "cuda_runtime", "name": "%s", "pid": %d, "tid": %d, '
                      '"ts": %s, "dur": %.3f, "args": {"correlation": %d}}'
                      % (r["api"], pid, r["tid"], us(r["ts_ns"]), r["dur_ns"] / 1e3,
                         r["correlation"]))
        elif k == "gpu_kernel":
            ev.append('{"ph": "X", "cat": "kernel", "name": "%s", "pid": %d, "tid": %d, '
                      '"ts": %s, "dur": %.3f, "args": {"device": %d, "stream": %d, '
                      '"correlation": %d}}' % (r["name"], r["device"], r["stream"],
                                               us(r["ts_ns"]), r["dur_ns"] / 1e3, r["device"],
                                               r["stream"], r["correlation"]))
        elif k == "gpu_memcpy" and r["direction"] == "HtoD":
            ev.append('{"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy HtoD (%s -> Device)", '
                      '"pid": %d, "tid": %d, "ts": %s, "dur": %.3f, "args": {"device": %d, '
                      '"stream": %d, "correlation": %d, "bytes": %d}}'
                      % (r["src_mem"].capitalize(), r["device"], r["stream"], us(r["ts_ns"]),
                         r["dur_ns"] / 1e3, r["device"], r["stream"], r["correlation"],
                         r["bytes"]))
    with open(path, "w") as f:
        f.write('{"schemaVersion": 1, "distributedInfo": {"backend": "nccl", "rank": %d, '
                '"world_size": %d},\n"traceEvents": [\n%s\n]}\n' % (rank, world, ",\n".join(ev)))


def test_imported_job_same_straggler(tmp_path):
    """The data-wait job as 4 PyTorch profiler traces, rank r's clock 3r ms
    off: import, then report: the same straggler, cause and waits as the raw
    timestamps say, and the clocks put back within 0.1 ms."""
    run_job(tmp_path / "run", 1, LATE["data_wait"])
    recs, _, _ = dump(tmp_path / "run")
    t = truth(recs)
    files = []
    for r, v in sorted(t["ranks"].items()):
        files.append(str(tmp_path / ("rank%d.json" % r)))
        kineto_of(r, v, recs, files[-1], r * 3_000_000, RANKS)
    p = gstest.run([gstest.CLI, "import", "-o", str(tmp_path / "imp")] + files)
    assert p.returncode == 0, p.stderr.decode()
    rep = report_json(tmp_path / "imp", "--skip", str(SKIP))
    assert rep["job"]["ranks"] == RANKS and rep["job"]["hosts"] == RANKS
    check_against_truth(rep, t)
    assert rep["straggler"]["rank"] == 1 and rep["straggler"]["cause"] == "data_wait"
    for R in rep["ranks"][1:]:
        assert R["clock"]["source"] == "collectives", R["clock"]
        assert abs(R["clock"]["offset_ns"] + R["rank"] * 3_000_000) < 100_000, R["clock"]


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-v"]))
