"""A two-rank job with known answers (docs/report-schema.md, "Ranks and the
straggler"), written as real trace files: rank 1 waits 80 ms of each 100 ms
step for data while rank 0 sits 83 ms in an NCCL all-reduce kernel, which
ends on both ranks at the same instant, 95 ms into the step (as a
collective does: it ends when the last rank has arrived). The ranks
run on two hosts with the same pids (as in a job of two nodes), each with its
own loader worker, the second worker without the rank variables (it inherits
its rank from its parent on its own host). Checked in the JSON, text and HTML
reports and in compare; a run of no rank keeps job null and ranks empty."""
import json
import re

import scenarios
from conftest import MS, Scenario, report_json, run_report
import gstest

T0 = 2000 * MS
NSTEPS = 12
NCCL = "ncclKernel_AllReduce_RING_LL_Sum_float"


REAL = 1764430000000000000  # the generator's CLOCK_REALTIME at CLOCK_MONOTONIC 1 s
SKEW = 7 * 1000 * MS  # host n1's realtime clock is 7 s ahead


def add_rank(sc, host, rank, dw_ms, workers, worker_rank, real=None, mono=0, world=2, pid=100):
    """mono: how far this host's CLOCK_MONOTONIC is ahead of n0's (ns)."""
    T0 = globals()["T0"] + mono
    tr = sc.proc(pid, 50, "python train.py", host=host, rank=rank, local=0, world=world,
                 real=real)
    tr.ev(pid, "thread", ts=T0 - 5 * MS, str="MainThread", aux=pid)
    tr.config(pid, T0 - 2 * MS, "num_workers", workers)
    tr.ev(pid, "gpu_device", ts=T0 - 3 * MS, dev=0, str="NVIDIA H200", bytes=141 << 30,
          aux=132, aux2=90)
    for n in range(NSTEPS):
        a = T0 + n * 100 * MS
        b = a + 100 * MS
        dw = dw_ms * MS
        tr.ev(pid, "step_begin", ts=a, aux=n)
        tr.ev(pid, "fetch_begin", ts=a, aux=n)
        tr.poll(pid, a, a + dw - MS)
        tr.pipe_read(pid, a + dw - MS, a + dw, nbytes=4096)
        tr.ev(pid, "fetch_end", ts=a + dw, aux=n)
        tr.kernel(a + dw, a + dw + 10 * MS)
        tr.kernel(a + dw + 10 * MS, a + 95 * MS, name=NCCL, stream=9)  # the all-reduce
        tr.ev(pid, "step_end", ts=b, aux=n)
    w = sc.proc(pid + 1, pid, "python train.py", forked=True, host=host, rank=worker_rank,
                real=real)
    for n in range(NSTEPS):
        t = T0 + n * 100 * MS
        w.file_read(pid + 1, t, t + 50 * MS, 1 << 20, off=n << 20)


def job(gen, tmp_path, name="job", mono=0, later=0):
    """mono: host n1's CLOCK_MONOTONIC ahead of n0's (as on two real
    machines, booted at different times); its realtime clock stays SKEW
    ahead. later: the job starts this much later on the realtime clock."""
    sc = Scenario()
    sc.proc(50, 1, "torchrun --nproc_per_node=1 train.py", host="n0")  # the launcher
    add_rank(sc, "n0", 0, dw_ms=2, workers=3, worker_rank=0, real=REAL + later if later else None)
    add_rank(sc, "n1", 1, dw_ms=80, workers=1, worker_rank=None,
             real=REAL + SKEW - mono + later, mono=mono)
    return sc.write(gen, str(tmp_path / name))


def test_job_json(gs, gen, tmp_path):
    d = job(gen, tmp_path)
    r = report_json(gs, d)
    assert r["job"] == {"ranks": 2, "hosts": 2, "unranked_processes": 1, "aligned_steps": NSTEPS - 1,
                        "step_ms": 100, "limiting_rank": 1, "clock_rank": 0,
                        "collectives": {"used": True, "not_used_why": None, "communicators": 1,
                                        "matched": NSTEPS, "in_aligned_steps": NSTEPS - 1,
                                        "names_differ": 0, "wait_ms": 78 * (NSTEPS - 1),
                                        "last_arriver_changes": False, "changes_why": None},
                        "jobs": 1, "job_index": 1, "world_size": 2, "missing_ranks": [],
                        "duplicated_ranks": []}
    r0, r1 = r["ranks"]
    assert (r0["rank"], r0["host"], r0["local_rank"], r0["processes"]) == (0, "n0", 0, 2)
    assert (r1["rank"], r1["host"], r1["processes"]) == (1, "n1", 2)
    assert r0["peer_wait"]["source"] == "measured"
    assert abs(r0["peer_wait"]["share"] - 0.83) < 1e-6
    assert abs(r1["peer_wait"]["share"] - 0.05) < 1e-6
    assert abs(r1["share"]["idle_data_wait"] - 0.80) < 1e-6
    assert abs(r0["share"]["gpu_comm"] - 0.83) < 1e-6
    # at every all-reduce rank 0 waited 78 ms for rank 1 (its kernel ran 83
    # ms, rank 1's 5 ms: the same end)
    assert (r0["caused_wait_ms"], r0["waited_ms"], r0["waited_for_ms"], r0["last_arrivals"]) == \
        (0, 78 * (NSTEPS - 1), {"1": 78 * (NSTEPS - 1)}, 0)
    assert (r1["caused_wait_ms"], r1["waited_ms"], r1["waited_for_ms"], r1["last_arrivals"]) == \
        (78 * (NSTEPS - 1), 0, {}, NSTEPS - 1)
    # each rank's own loader: its num_workers, its one worker
    assert (r0["dataloader"]["num_workers"], r0["dataloader"]["workers_seen"]) == (3, 1)
    assert (r1["dataloader"]["num_workers"], r1["dataloader"]["workers_seen"]) == (1, 1)
    assert r1["verdict"]["label"] == "HIGHLY_INPUT_BOUND"
    assert (r0["limits_job"], r1["limits_job"]) == (False, True)
    assert r1["limits_steps"] == NSTEPS - 1
    assert (r0["root_processes"], r1["root_processes"]) == (1, 1)
    # both "hosts" ran on one clock; n1's realtime said 7 s ahead; the step
    # ends put it back
    # the all-reduce's ends put it back
    assert r0["clock"] == {"source": "same_host", "offset_ns": 0, "realtime_offset_ns": 0,
                           "refined_ns": 0, "spread_ms": 0, "collectives": NSTEPS, "max_ms": 0,
                           "separate_machine": False}
    assert r1["clock"] == {"source": "collectives", "offset_ns": 0, "realtime_offset_ns": SKEW,
                           "refined_ns": -SKEW, "spread_ms": 0, "collectives": NSTEPS,
                           "max_ms": 0, "separate_machine": False}
    # rank 1 arrives 78 ms late at every all-reduce: between the previous
    # one's end and its own start it waits 80 ms for data, rank 0 2 ms
    assert r["straggler"] == {
        "rank": 1, "cost_ms": 78 * (NSTEPS - 1), "share": 0.78, "source": "collectives",
        "cause": "data_wait",
        "parts": {"data_wait_ms": 78 * (NSTEPS - 1), "host_ms": 0, "pageable_copy_ms": 0,
                  "compute_ms": 0, "communication_ms": 0, "other_ms": 0, "late_step_start_ms": 0},
        "late_collectives": NSTEPS - 1, "measured_collectives": NSTEPS - 1,
        "late_ms": 78 * (NSTEPS - 1),
        "why": "rank 1 arrived last at 11 of 11 collectives; the other ranks waited 858.0 ms for "
               "it, 78% of their step time (measured: collective kernels end together on every "
               "rank); 78.00 ms late on average; before each collective it was late at, it spent "
               "78.00 ms more than the other ranks waiting for data"}
    # the top level is rank 1's: its trainer on n1, its one worker
    assert r["run"]["trainer"]["rank"] == 1
    assert r["run"]["trainer"]["file"] == "n1-100.gst"
    assert r["loader"]["workers_seen"] == 1
    assert [w["file"] for w in r["loader"]["workers"]] == ["n1-101.gst"]
    assert r["verdict"]["label"] == "HIGHLY_INPUT_BOUND"


def test_job_text_and_html(gs, gen, tmp_path):
    d = job(gen, tmp_path)
    p = run_report(gs, d)
    assert p.returncode == 0, p.stderr
    out = p.stdout
    assert out.startswith("job   2 ranks on 2 hosts, 11 steps aligned by index, job step median "
                          "100.0 ms (1 process of no rank left out: the launcher)\n"), out
    assert "\nstraggler rank 1: rank 1 arrived last at 11 of 11 collectives" in out
    assert "  83.0% meas" in out
    assert ("\nclock  host n1 on rank 0's clock: +7000.000 ms from the realtime pairs, -7000.000 ms "
            "from 12 collectives' ends (they agree to 0.000 ms, at worst 0.000 ms)\n") in out
    assert ("\n  rank  caused ms  last at  waited ms  waited most for\n"
            "     1      858.0       11        0.0  -\n"
            "     0        0.0        0      858.0  rank 1 (858.0 ms)\n") in out
    assert "\nrun   python train.py   rank 1, 1 trainer (pid 100), 1 loader worker" in out
    html = tmp_path / "r.html"
    p = run_report(gs, d, "--html", str(html))
    assert p.returncode == 0, p.stderr
    page = html.read_text()
    assert '<section id="ranks">' in page
    assert page.count('<tr class="rank') == 2
    assert '<p id="straggler"><b>Straggler: rank 1.</b> rank 1 arrived last at 11 of 11' in page
    # the timelines are rank 1's (pid 100 on n1, not pid 100 on n0): its
    # GPU streams, its training thread, its one worker
    m = re.search(r'<script type="application/json" id="gs-data">(.*?)</script>', page, re.S)
    data = json.loads(m.group(1))
    assert [row["name"] for row in data["rows"]] == ["GPU 0 stream 7", "GPU 0 stream 9",
                                                     "training thread", "loader pid 101"]
    thread_row = 2
    for w in data["windows"]:
        mine = [it for it in w["items"] if it[0] == thread_row]
        # rank 1 waits 80 ms for data in each step: one data-wait piece of 80 ms
        waits = [it for it in mine if it[3] - it[2] > 70]
        assert len(waits) == 1, w


BOOT = 5 * 1000 * MS  # host n1 booted 5 s before n0: its CLOCK_MONOTONIC is 5 s ahead


def test_perfetto_puts_the_hosts_on_one_clock(gs, gen, tmp_path):
    """--perfetto draws every host on the job's clock, with the offsets the
    report prints: the two ranks' steps, and their trainers' own step
    markers, start together although n1's clock reads 5 s more."""
    d = job(gen, tmp_path, mono=BOOT)
    pf = tmp_path / "t.json"
    p = run_report(gs, d, "--json", "--perfetto", str(pf))
    assert p.returncode == 0, p.stderr
    r1 = json.loads(p.stdout)["ranks"][1]
    clock = r1["clock"]
    # the realtime pairs say +2 s (7 s of realtime skew, 5 s of boot); the
    # all-reduces' ends put n1 5 s back
    assert (clock["source"], clock["realtime_offset_ns"], clock["offset_ns"]) == \
        ("collectives", SKEW - BOOT, -BOOT), clock
    # RATIONALE: after the report's offset, corresponding steps are as far
    # apart as its spread of step ends, plus the trace's ts rounding (1 ns
    # written as µs with 3 decimals)
    tol_us = clock["spread_ms"] * 1000 + 0.001
    with open(pf) as f:
        ev = json.load(f)["traceEvents"]
    # each trainer's own "step_end N" marker, one per host
    for n in range(NSTEPS):
        ts = [e["ts"] for e in ev if e["ph"] == "i" and e["name"] == "step_end %d" % n]
        assert len(ts) == 2 and abs(ts[0] - ts[1]) <= tol_us, (n, ts)
    # pid 100 on both hosts: two processes of their own, named with their host
    names = {e["pid"]: e["args"]["name"] for e in ev
             if e["ph"] == "M" and e["name"] == "process_name" and e["pid"] < 999999999}
    assert names[100] == "python train.py (pid 100 on n0)", names
    assert names[100 + (1 << 22)] == "trainer: python train.py (pid 100 on n1)", names
    ends = {e["pid"] for e in ev if e["ph"] == "i" and e["name"].startswith("step_end")}
    assert ends == {100, 100 + (1 << 22)}
    # each rank's steps on a track of its own
    tracks = {e["args"]["name"]: e["tid"] for e in ev
              if e["ph"] == "M" and e["name"] == "thread_name" and e["pid"] == 999999999}
    steps = {}
    for rank, host in ((0, "n0"), (1, "n1")):
        tid = tracks["steps of rank %d (host %s)" % (rank, host)]
        steps[rank] = sorted((e["args"]["index"], e["ts"]) for e in ev
                             if e["ph"] == "X" and e["pid"] == 999999999 and e["tid"] == tid)
    assert [i for i, _ in steps[0]] == [i for i, _ in steps[1]] == list(range(NSTEPS))
    for (i, a), (_, b) in zip(steps[0], steps[1]):
        assert abs(a - b) <= tol_us, (i, a, b)
    # the limiting rank's "steps" track and starvation pieces are on the
    # same axis: rank 1's steps
    top = sorted(e["ts"] for e in ev if e["ph"] == "X" and e["tid"] == tracks["steps"]
                 and e["pid"] == 999999999)
    assert top == [b for _, b in steps[1]]
    # the page's timelines are one rank's (the limiting rank's processes, one
    # host), drawn from its step's start on the same job clock: each slowest
    # step shows rank 1's 80 ms data wait, every item inside its window
    html = tmp_path / "r.html"
    p = run_report(gs, d, "--html", str(html))
    assert p.returncode == 0, p.stderr
    m = re.search(r'<script type="application/json" id="gs-data">(.*?)</script>',
                  html.read_text(), re.S)
    data = json.loads(m.group(1))
    thread_row = [row["name"] for row in data["rows"]].index("training thread")
    assert data["windows"]
    for w in data["windows"]:
        assert all(0 <= it[2] <= it[3] <= w["d"] for it in w["items"]), w
        waits = [it for it in w["items"] if it[0] == thread_row and it[3] - it[2] > 70]
        assert len(waits) == 1 and data["classes"][waits[0][1]]["key"] == "idle_data_wait", w


def test_compare_shows_ranks(gs, gen, tmp_path):
    d = job(gen, tmp_path)
    p = gstest.run([gs, "compare", d, d], text=True)
    assert p.returncode == 0, p.stderr
    assert "rank 0 step median ms        100.0       100.0   +0.0 ms" in p.stdout, p.stdout
    assert "rank 1 data wait             80.0%       80.0%   +0.0 points" in p.stdout, p.stdout
    assert "straggler A              rank 1: rank 1 arrived last at 11 of 11" in p.stdout
    p = gstest.run([gs, "compare", "--json", d, d], text=True)
    assert p.returncode == 0, p.stderr
    c = json.loads(p.stdout)
    assert [x["rank"] for x in c["a"]["ranks"]] == [0, 1]
    assert c["a"]["ranks"][1]["num_workers"] == 1
    assert c["b"]["straggler"]["rank"] == 1


def test_two_runs_of_one_job_noted(gs, gen, tmp_path):
    """The same job's directory twice is refused; two runs of it read
    together, the second 10 s after the first, are noted per rank (each
    rank then has two trainers; 2 h apart they would be two jobs,
    test_ranks_jobs.py)."""
    a = job(gen, tmp_path, "a")
    p = run_report(gs, a, a)
    assert p.returncode == 2 and "are the same directory" in p.stderr, p.stderr
    b = job(gen, tmp_path, "b", later=10 * 10**9)
    p = run_report(gs, a, b)
    assert p.returncode == 0, p.stderr
    assert "note   rank 0 has 2 processes no process of the rank started" in p.stdout
    p = run_report(gs, b, "--json", a)  # report --json a b
    assert p.returncode == 0, p.stderr
    r = json.loads(p.stdout)
    assert r["run"]["dirs"] == [a, b]
    assert [x["root_processes"] for x in r["ranks"]] == [2, 2]


def test_run_without_ranks(gs, gen, tmp_path):
    d = scenarios.loader_bound().write(gen, str(tmp_path / "run"))
    r = report_json(gs, d)
    assert (r["job"], r["ranks"], r["straggler"]) == (None, [], None)
    out = run_report(gs, d).stdout
    assert out.startswith("run   python train.py --epochs 1   1 trainer (pid 100)")
