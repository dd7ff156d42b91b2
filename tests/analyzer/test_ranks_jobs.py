"""One job, or say it isn't (docs/report-schema.md, "One job, or say it
isn't"): trace files of two jobs read together -- another world size, or
the same one hours later -- are never merged into one job: `report` lists
the jobs and stops (exit 2) until --job picks one. A rank missing from
0..world-1, a rank in two processes at once, and two machines of one host
name whose clocks lie 2 h apart are named."""
import json

from conftest import Scenario, report_json, run_report
from test_ranks_report import REAL, add_rank

HOUR = 3600 * 10**9


def write(gen, tmp_path, ranks, name="run"):
    """ranks: (host, rank, world, real, pid) of each rank's trainer (+ one worker)."""
    sc = Scenario()
    for host, rank, world, real, pid in ranks:
        add_rank(sc, host, rank, dw_ms=80 if rank == 1 else 2, workers=1, worker_rank=rank,
                 real=real, world=world, pid=pid)
    return sc.write(gen, str(tmp_path / name))


def test_two_world_sizes_are_two_jobs(gs, gen, tmp_path):
    d = write(gen, tmp_path, [("a0", 0, 2, REAL, 100), ("a1", 1, 2, REAL, 100),
                              ("b0", 0, 4, REAL + 5 * 10**9, 300),
                              ("b1", 1, 4, REAL + 5 * 10**9, 300),
                              ("b2", 2, 4, REAL + 5 * 10**9, 300),
                              ("b3", 3, 4, REAL + 5 * 10**9, 300)])
    p = run_report(gs, d)
    assert p.returncode == 2, p.stdout
    err = p.stderr
    assert "the traces are of 2 jobs, not one" in err, err
    assert "job 1: world size 2, ranks 0-1, 4 processes" in err, err
    assert "job 2: world size 4, ranks 0-3, 8 processes" in err, err
    assert "report one with --job N" in err
    assert p.stdout == ""
    r = report_json(gs, d, "--job", "2")
    assert (r["job"]["ranks"], r["job"]["jobs"], r["job"]["job_index"]) == (4, 2, 2)
    assert (r["job"]["world_size"], r["job"]["missing_ranks"]) == (4, [])
    assert {R["host"] for R in r["ranks"]} == {"b0", "b1", "b2", "b3"}
    r = report_json(gs, d, "--job", "1")
    assert (r["job"]["ranks"], r["job"]["world_size"]) == (2, 2)
    assert {R["host"] for R in r["ranks"]} == {"a0", "a1"}
    p = run_report(gs, d, "--job", "1")
    assert "note   the traces are of 2 jobs: this is job 1 (--job 1;" in p.stdout
    p = run_report(gs, d, "--job", "3")
    assert p.returncode == 2 and "(a number from the list)" in p.stderr


def test_the_same_job_twice_hours_apart(gs, gen, tmp_path):
    """Ranks 0 and 1 of world size 2, and again 2 h later: two runs."""
    d = write(gen, tmp_path, [("a0", 0, 2, REAL, 100), ("a1", 1, 2, REAL, 100),
                              ("a0", 0, 2, REAL + 2 * HOUR, 200),
                              ("a1", 1, 2, REAL + 2 * HOUR, 200)])
    p = run_report(gs, d)
    assert p.returncode == 2 and "the traces are of 2 jobs" in p.stderr, p.stderr


def test_missing_and_duplicated_ranks(gs, gen, tmp_path):
    d = write(gen, tmp_path, [("n0", 0, 4, REAL, 100), ("n1", 1, 4, REAL, 100),
                              ("n2", 1, 4, REAL, 200), ("n3", 3, 4, REAL, 100)])
    r = report_json(gs, d)
    assert (r["job"]["jobs"], r["job"]["world_size"]) == (1, 4)
    assert r["job"]["missing_ranks"] == [2]
    assert r["job"]["duplicated_ranks"] == [1]
    out = run_report(gs, d).stdout
    assert "note   1 of the 4 ranks have no trace here: rank 2; the job is read over the 3 ranks" in out
    assert "note   rank 1 is in 2 processes that ran at the same time" in out and \
        "a duplicated rank" in out, out


def test_one_host_name_two_clocks(gs, gen, tmp_path):
    """Ranks 0 and 1 both say host n0, but rank 1's realtime/monotonic pair
    lies 2 h from rank 0's: two machines of one name (their CLOCK_MONOTONIC
    is not one clock), one job (each rank once): named, and aligned apart by
    the collectives' ends."""
    d = write(gen, tmp_path, [("n0", 0, 2, REAL, 100), ("n0", 1, 2, REAL + 2 * HOUR, 200)])
    r = report_json(gs, d)
    assert r["job"]["jobs"] == 1 and r["job"]["ranks"] == 2
    c = r["ranks"][1]["clock"]
    assert c["separate_machine"] and c["source"] == "collectives", c
    assert (c["realtime_offset_ns"], c["offset_ns"]) == (2 * HOUR, 0), c
    out = run_report(gs, d).stdout
    assert "rank 1 says host n0, as rank 0 does, but its clock is 7200.0 s away" in out, out
    json.dumps(r)
