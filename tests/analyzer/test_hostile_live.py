"""Live files (<host>-<pid>.live, what a process that died had not yet
written) that are hostile or damaged: every reader's time and memory follow
the bytes really in the file, not what its header claims, and a live file
that cannot be read is said and counted, never silently dropped
(docs/collector-safety.md, "Hostile and damaged traces cost bounded time
and memory" and "Counts that add up").

The files are made here from a real pair of tests/data/v1.2 (a process
killed while it read: its trace file holds the header, its live file the
records), with the layout of trace/gs_live.h. Bounds are asserted on CPU
seconds and peak memory of the command (RUSAGE_CHILDREN of a wrapper), never
on wall time.
"""
import array
import json
import os
import shutil
import struct
import subprocess
import sys

import pytest

import scenarios
from conftest import GS, clean_env, gen, gs  # noqa: F401

DATA = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "data", "v1.2")
NAME = "vm-16756"

# gs_live_header (trace/gs_live.h): offsets of the fields set here
VERSION, SLOTS, SLOT_BYTES, SLOTS_OFF = 12, 36, 40, 48
STRLOG_OFF, STRLOG_CAP, SLOTS_USED, STRLOG_USED = 56, 64, 72, 80
HEADER = 4096
RING_HDR, REC = 192, 64  # gs_ring header, gs_rec

# wrapper: run the command, print its exit status, peak RSS (KiB) and CPU s
MEASURE = ("import resource, subprocess, sys; r = subprocess.run(sys.argv[1:], "
           "stdout=subprocess.DEVNULL, stderr=subprocess.PIPE); u = resource.getrusage("
           "resource.RUSAGE_CHILDREN); sys.stderr.write(r.stderr.decode()); "
           "print(r.returncode, u.ru_maxrss, u.ru_utime + u.ru_stime)")


def measure(*args):
    """(exit status, peak KiB, CPU seconds, stderr) of the CLI with args."""
    p = subprocess.run([sys.executable, "-c", MEASURE, GS] + [str(a) for a in args],
                       capture_output=True, text=True, env=clean_env(), timeout=600)
    rc, kib, cpu = p.stdout.split()
    return int(rc), int(kib), float(cpu), p.stderr


def pair(tmp_path):
    """A run directory holding the real trace file and its live file's
    header; the live file's path."""
    run = tmp_path / "run"
    run.mkdir()
    shutil.copy(os.path.join(DATA, NAME + ".gst"), run)
    live = run / (NAME + ".live")
    with open(os.path.join(DATA, NAME + ".live"), "rb") as f:
        live.write_bytes(f.read(HEADER))
    return run, live


def put(path, off, fmt, *vals):
    with open(path, "r+b") as f:
        f.seek(off)
        f.write(struct.pack("<" + fmt, *vals))


def summary_totals(gs, run):
    p = subprocess.run([gs, "dump", "--summary", "--json", str(run)], capture_output=True,
                       text=True, env=clean_env())
    tot = [json.loads(line) for line in p.stdout.splitlines() if '"kind":"total"' in line]
    return p.returncode, tot[0] if tot else None, p.stderr


def real_pair(tmp_path):
    run = tmp_path / "run"
    shutil.copytree(DATA, run)
    for f in os.listdir(run):
        if f.endswith(".jsonl") or not f.startswith(NAME):
            os.unlink(run / f)
    return run, run / (NAME + ".live")


# ---- a header claiming far more than the file holds -----------------------------------

def test_sparse_live_file_costs_what_it_holds(gs, tmp_path):
    """256 slots, each claiming a full ring of 2^24 records (256 GiB of
    records in a sparse file of about 1 MiB on disk): the holes are not
    read (a file claiming 16 such slots took 51 s; 4,096 of them hours),
    and the records they claim are counted lost."""
    run, live = pair(tmp_path)
    slots, cap = 256, 1 << 24
    slot_bytes = RING_HDR + cap * REC
    slots_off = 2 * HEADER
    put(live, SLOTS, "IQQQQI", slots, slot_bytes, slots_off, HEADER, 16, slots)
    put(live, STRLOG_USED, "Q", 0)
    with open(live, "r+b") as f:
        f.truncate(slots_off + slots * slot_bytes)
        for i in range(slots):
            f.seek(slots_off + i * slot_bytes)
            ring = bytearray(RING_HDR)
            struct.pack_into("<Q", ring, 0, cap)             # head
            struct.pack_into("<Q", ring, 64, 0)              # tail
            struct.pack_into("<IIQ", ring, 128, 1, 16756, cap - 1)  # state live, tid, mask
            f.write(ring)
    assert os.stat(live).st_blocks * 512 < 8 << 20  # sparse: it really holds little
    for cmd in (["dump", "--summary"], ["report", "--json"]):
        rc, kib, cpu, err = measure(*cmd, run)
        assert rc in (0, 2), err
        assert cpu < 10 and kib < 256 << 10, (cmd, cpu, kib)
    rc, tot, err = summary_totals(gs, run)
    assert rc == 0, err
    assert tot["lost"] == slots * cap  # claimed, never written: counted, not read


def test_string_log_of_empty_strings_costs_what_it_holds(gs, tmp_path):
    """A 64 MiB string log of 8 million empty strings with distinct ids:
    read in windows, and cut at the first id no collector hands out (2^22):
    a 256 MiB log of such strings once took 162 s and 3.4 GB (two system
    calls and an allocation per string, every one kept). The cut is damage:
    dump exits 2 and counts it."""
    run, live = pair(tmp_path)
    n = 8 << 20
    size = n * 8
    put(live, SLOTS, "IQQQQI", 0, RING_HDR + REC, HEADER + size, HEADER, size, 0)
    put(live, STRLOG_USED, "Q", size)
    with open(live, "ab") as f:
        step = 1 << 20
        for start in range(0, n, step):
            # one entry = u32 id, u32 len 0: one little-endian u64 each
            f.write(array.array("Q", range(start + 1, start + step + 1)).tobytes())
    for cmd in (["dump", "--summary"], ["report", "--json"]):
        rc, kib, cpu, err = measure(*cmd, run)
        assert rc == 2, err
        assert cpu < 10 and kib < 512 << 10, (cmd, cpu, kib)
    rc, tot, err = summary_totals(gs, run)
    assert rc == 2 and tot["damaged"] == 1 and "string log is damaged" in err, err


def test_string_log_with_ids_no_collector_hands_out_is_damage(gs, tmp_path):
    """An id at or past 2^22 in the log: the log is cut there, and the
    live file counted damaged (its names after that point are missing)."""
    run, live = real_pair(tmp_path)  # its log: 16 bytes at 4096 ("d.bin", id 1)
    with open(live, "r+b") as f:
        f.seek(HEADER)
        f.write(struct.pack("<II", 1 << 22, 0) + struct.pack("<II", 7, 0))
    rc, tot, err = summary_totals(gs, run)
    assert rc == 2 and tot["damaged"] == 1
    assert "string log is damaged" in err


# ---- a live file that cannot be read is counted --------------------------------------

def damage(live, how):
    if how == "version":
        put(live, VERSION, "H", 2)
    elif how == "magic":
        put(live, 0, "8s", b"GSXXXX\0\0")
    else:
        put(live, SLOTS, "I", 1 << 20)


HOW = [
    ("version", "live file version 2 is not the one this gpustarve reads (1)"),
    ("magic", "its header is damaged"),
    ("slots", "its header is damaged"),
]


@pytest.mark.parametrize("how,words", HOW)
def test_unreadable_live_file_is_said_and_counted_by_dump(gs, tmp_path, how, words):
    """A live file of a newer version or with a damaged header once dropped
    every event it held with "0 dropped, 0 lost" and exit 0. Now dump says
    why and exits 2, and its summary counts the file damaged."""
    run, live = real_pair(tmp_path)
    rc, tot, _ = summary_totals(gs, run)
    assert rc == 0 and tot["damaged"] == 0 and tot["events"] > 40  # the records are recovered
    damage(live, how)
    rc, tot, err = summary_totals(gs, run)
    assert rc == 2 and tot["damaged"] == 1
    assert words in err and "the events it held are missing" in err, err


@pytest.mark.parametrize("how,words", HOW)
def test_unreadable_live_file_is_said_and_counted_by_report(gs, gen, tmp_path, how, words):
    """The same beside a trainer's trace: the report's trace line, its JSON
    count and its skipped list say so."""
    run = scenarios.gpu_bound(10).write(gen, str(tmp_path / "run"))
    trace = [f for f in os.listdir(run) if f.endswith(".gst")][0]
    live = os.path.join(run, trace[:-len(".gst")] + ".live")
    shutil.copy(os.path.join(DATA, NAME + ".live"), live)
    damage(live, how)
    p = subprocess.run([gs, "report", run], capture_output=True, text=True, env=clean_env())
    assert p.returncode == 0, p.stderr
    line = [ln for ln in p.stdout.splitlines() if ln.startswith("trace")]
    assert line and "1 live file unreadable" in line[0], p.stdout
    assert words in p.stdout
    p = subprocess.run([gs, "report", "--json", run], capture_output=True, text=True,
                       env=clean_env())
    j = json.loads(p.stdout)
    assert j["run"]["live_files_damaged"] == 1
    assert any(words in s["reason"] and s["used"] for s in j["run"]["skipped"])


def test_live_file_of_a_process_just_starting_is_not_damage(gs, tmp_path):
    """A live file with no header yet (the collector creates the file, then
    writes its header before it records anything) holds nothing: no damage."""
    run, live = real_pair(tmp_path)
    with open(live, "r+b") as f:
        f.write(bytes(HEADER))
    rc, tot, err = summary_totals(gs, run)
    assert rc == 0 and tot["damaged"] == 0, err
