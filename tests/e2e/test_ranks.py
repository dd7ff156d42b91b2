"""Truth tests for distributed jobs: `gpustarve run -- torchrun ...` with 2
and 4 ranks (gloo on the CPU, torch 2.x from .venv), some ranks' loaders
starved (their dataset sleeps per sample). Each rank's data-wait share must
be within 5 points of what the rank measured itself, its num_workers its
own, its loader workers its own, and the straggler a starved rank. Also: the
launcher variables of Open MPI, MPICH and Slurm give a process its rank; and
two per-node launches made two hosts (a test hook) merged by `report A B`
with their clocks aligned.

The expectations follow what each rank measured in the same run, never the
machine's speed: a loaded machine makes every step longer, not the shares
disagree (docs/testing.md)."""
import json
import os
import re
import socket
import subprocess

import pytest

from conftest import BUILD, READ_DATASET, dump, report_json, run_traced
import gstest

SCRIPT = os.path.join(os.path.dirname(__file__), "ddp_ranks.py")
STEPS = 8
SKIP = 2  # warm-up left out on both sides: worker start-up, the first all-reduce
SLEEP_MS = 60  # per sample, 4 samples a batch: 240 ms of loading per batch, started only when asked for (ddp_ranks.py)


def own_share(rec):
    """The rank's data-wait share over the steps the report measures."""
    w = sum(rec["wait_s"][SKIP:])
    s = sum(rec["step_s"][SKIP:])
    return w / s


def run_job(tmp_path, nranks, starved):
    if not os.access(gstest.VENV_PY, os.X_OK):
        pytest.skip("%s is missing (make venv)" % gstest.VENV_PY)
    out = tmp_path / "out"
    out.mkdir()
    cmd = [gstest.VENV_PY, "-m", "torch.distributed.run", "--standalone",
           "--nproc_per_node=%d" % nranks, SCRIPT, str(out), str(STEPS),
           ",".join(str(r) for r in starved), str(SLEEP_MS)]
    p = run_traced(cmd, tmp_path / "run", timeout=600)
    assert p.returncode == 0, p.stderr.decode()[-3000:]
    own = {}
    for r in range(nranks):
        with open(out / ("rank%d.json" % r)) as f:
            own[r] = json.load(f)
    rep = report_json(tmp_path / "run", "--skip", str(SKIP))
    return rep, own


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def check_ranks(rep, own, nranks, starved):
    assert rep["job"]["ranks"] == nranks
    assert rep["job"]["unranked_processes"] >= 1  # the launcher
    ranks = {r["rank"]: r for r in rep["ranks"]}
    assert sorted(ranks) == list(range(nranks))
    for r, R in ranks.items():
        assert R["error"] is None, R
        assert R["steps"] == STEPS - SKIP, R
        mine = own_share(own[r])
        assert abs(R["share"]["idle_data_wait"] - mine) <= 0.05, (r, R["share"], mine)
        # its own loader: its num_workers, and exactly its workers
        assert R["dataloader"]["num_workers"] == own[r]["num_workers"], R["dataloader"]
        assert R["dataloader"]["workers_seen"] == own[r]["num_workers"], R["dataloader"]
        assert R["processes"] == 1 + own[r]["num_workers"], R
    for r in starved:
        assert ranks[r]["verdict"]["label"] == "HIGHLY_INPUT_BOUND", ranks[r]["verdict"]
    # the ranks that are not starved wait for the starved ones in all-reduce
    for r in set(range(nranks)) - set(starved):
        assert ranks[r]["peer_wait"]["source"] == "inferred"
        assert ranks[r]["peer_wait"]["share"] >= 0.5, ranks[r]
    s = rep["straggler"]
    assert s is not None and s["rank"] in starved, s
    assert ("rank %d waits for data" % s["rank"]) in s["why"], s
    # the top-level fields describe the straggler: its trainer, its loader
    assert rep["job"]["limiting_rank"] == s["rank"]
    assert rep["run"]["trainer"]["rank"] == s["rank"]
    assert rep["run"]["trainer"]["pid"] == ranks[s["rank"]]["pid"]
    assert rep["loader"]["workers_seen"] == own[s["rank"]]["num_workers"]


def test_two_ranks_one_starved(tmp_path):
    rep, own = run_job(tmp_path, 2, [1])
    check_ranks(rep, own, 2, [1])
    assert "rank 0 waits for rank 1 in collectives" in rep["straggler"]["why"]


def test_four_ranks_two_starved(tmp_path):
    rep, own = run_job(tmp_path, 4, [1, 3])
    check_ranks(rep, own, 4, [1, 3])
    why = rep["straggler"]["why"]
    waiting = re.search(r"; ranks ([0-9, ]+) wait for rank", why)
    assert waiting, why
    assert {0, 2} <= {int(x) for x in waiting.group(1).split(", ")}, why


def test_spawned_ranks_without_rank_variables(tmp_path):
    """torch.multiprocessing.spawn, as PyTorch's DDP tutorial starts ranks:
    no RANK in any environment; the rank comes from the initialised process
    group (the Python side's distributed_rank record)."""
    if not os.access(gstest.VENV_PY, os.X_OK):
        pytest.skip("%s is missing (make venv)" % gstest.VENV_PY)
    out = tmp_path / "out"
    out.mkdir()
    cmd = [gstest.VENV_PY, SCRIPT, "--spawn", "2", str(free_port()), str(out), str(STEPS), "1",
           str(SLEEP_MS)]
    p = run_traced(cmd, tmp_path / "run", timeout=600)
    assert p.returncode == 0, p.stderr.decode()[-3000:]
    recs, _, _ = dump(tmp_path / "run")
    assert all(r["rank"] is None for r in recs if r["kind"] == "process")
    own = {}
    for r in (0, 1):
        with open(out / ("rank%d.json" % r)) as f:
            own[r] = json.load(f)
    rep = report_json(tmp_path / "run", "--skip", str(SKIP))
    check_ranks(rep, own, 2, [1])


@pytest.mark.parametrize("env,rank,local,size", [
    ({"OMPI_COMM_WORLD_RANK": "3", "OMPI_COMM_WORLD_LOCAL_RANK": "1",
      "OMPI_COMM_WORLD_SIZE": "8"}, 3, 1, 8),
    ({"PMI_RANK": "5", "MPI_LOCALRANKID": "0", "PMI_SIZE": "6"}, 5, 0, 6),
    ({"SLURM_PROCID": "2", "SLURM_LOCALID": "2", "SLURM_NTASKS": "4"}, 2, 2, 4),
    # torchrun under srun: torchrun's RANK wins over the task's SLURM_PROCID
    ({"SLURM_PROCID": "0", "RANK": "6", "LOCAL_RANK": "2", "WORLD_SIZE": "16"}, 6, 2, 16),
    ({"RANK": "not a number", "SLURM_PROCID": "1"}, 1, None, None),
])
def test_launcher_variables_give_the_rank(tmp_path, env, rank, local, size):
    gstest.require(READ_DATASET)
    data = tmp_path / "data"
    data.mkdir()
    (data / "f").write_bytes(b"x" * 4096)
    p = run_traced([READ_DATASET, str(data)], tmp_path / "run", env=gstest.clean_env(**env))
    assert p.returncode == 0, p.stderr.decode()
    recs, _, _ = dump(tmp_path / "run")
    procs = [r for r in recs if r["kind"] == "process"]
    assert [(q["rank"], q["local_rank"], q["world_size"]) for q in procs] == [(rank, local, size)]


SKEW_NS = 5 * 10**9  # the second "host"'s realtime clock is 5 s ahead


def test_two_hosts_per_node_launches_merged(tmp_path):
    """Two torchrun per-node launches (--nnodes=2), each under its own
    `gpustarve run` into its own directory, made two hosts by the test hook
    (GPUSTARVE_TEST_HOST; the second's realtime clock GPUSTARVE_TEST_REALTIME_OFFSET_NS
    ahead); `report A B` reads them as one job. Both really share one
    CLOCK_MONOTONIC, so the aligned clock must put the second host back by
    the known skew."""
    if not os.access(gstest.VENV_PY, os.X_OK):
        pytest.skip("%s is missing (make venv)" % gstest.VENV_PY)
    out = tmp_path / "out"
    out.mkdir()
    port = free_port()
    procs = []
    for node in (0, 1):
        env = gstest.clean_env(GPUSTARVE_TEST_HOST="node%d" % node,
                               GPUSTARVE_TEST_REALTIME_OFFSET_NS=str(node * SKEW_NS))
        cmd = [gstest.CLI, "run", "-o", str(tmp_path / ("node%d" % node)), "--",
               gstest.VENV_PY, "-m", "torch.distributed.run", "--nnodes=2",
               "--node_rank=%d" % node, "--nproc_per_node=1", "--master_addr=127.0.0.1",
               "--master_port=%d" % port, SCRIPT, str(out), str(STEPS), "1", str(SLEEP_MS)]
        procs.append(subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE,
                                      stderr=subprocess.STDOUT,
                                      preexec_fn=gstest.default_signals))
    for p in procs:
        text = p.communicate(timeout=600)[0]
        assert p.returncode == 0, text.decode()[-3000:]
    assert all(f.startswith("node0-") for f in os.listdir(tmp_path / "node0"))
    assert all(f.startswith("node1-") for f in os.listdir(tmp_path / "node1"))
    own = {}
    for r in (0, 1):
        with open(out / ("rank%d.json" % r)) as f:
            own[r] = json.load(f)
    p = gstest.run([gstest.CLI, "report", "--json", "--skip", str(SKIP), tmp_path / "node0",
                    tmp_path / "node1"])
    assert p.returncode == 0, p.stderr.decode()
    rep = json.loads(p.stdout)
    assert rep["run"]["dirs"] == [str(tmp_path / "node0"), str(tmp_path / "node1")]
    check_ranks(rep, own, 2, [1])
    assert rep["job"]["hosts"] == 2
    assert rep["job"]["unranked_processes"] == 2  # the two launchers
    r0, r1 = rep["ranks"]
    assert (r0["host"], r1["host"]) == ("node0", "node1")
    assert r0["clock"]["source"] == "same_host"
    c = r1["clock"]
    assert c["source"] == "step_ends"  # gloo: no collective kernel, the step ends
    # the header pairs see the skew (plus the microseconds between reading
    # the two clocks); the step ends take it back out
    assert abs(c["realtime_offset_ns"] - SKEW_NS) < 10**6, c
    assert abs(c["offset_ns"]) < 30 * 10**6, c
    # --perfetto draws both hosts with that offset: over the aligned steps
    # (measured in both), the two ranks' step ends lie as far apart as the
    # spread the report prints (its median), to the trace's 1 ns rounding
    pf = tmp_path / "t.json"
    p = gstest.run([gstest.CLI, "report", "-q", "--skip", str(SKIP), "--perfetto", pf,
                    tmp_path / "node0", tmp_path / "node1"])
    assert p.returncode == 0, p.stderr.decode()
    with open(pf) as f:
        ev = json.load(f)["traceEvents"]
    tracks = {e["args"]["name"]: e["tid"] for e in ev
              if e["ph"] == "M" and e["name"] == "thread_name" and e["pid"] == 999999999}
    ends = []
    for rank, host in ((0, "node0"), (1, "node1")):
        tid = tracks["steps of rank %d (host %s)" % (rank, host)]
        ends.append({e["args"]["index"]: (e["ts"] + e["dur"], e["args"]["warmup"]) for e in ev
                     if e["ph"] == "X" and e["pid"] == 999999999 and e["tid"] == tid})
    d = sorted(abs(ends[0][i][0] - ends[1][i][0]) for i in ends[0]
               if i in ends[1] and not ends[0][i][1] and not ends[1][i][1])
    assert len(d) == rep["job"]["aligned_steps"], (d, rep["job"])
    assert abs(d[len(d) // 2] - c["spread_ms"] * 1000) <= 0.003, (d, c)
