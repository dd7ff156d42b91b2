"""gpustarve import on small hostile documents: time and memory follow the
bytes really there, each limit of docs/import.md ("Limits") holds with a
clear word past it, and numbers that do not fit are skipped and counted,
never overflowed (`make test-san` runs this file against the UBSan build:
an overflow there aborts). Bounds are asserted on the command's CPU seconds
and peak memory (RUSAGE_CHILDREN of a wrapper), never on wall time.
"""
import gzip
import json
import os
import re
import subprocess
import sys

from conftest import GS, clean_env, gs, imp, run  # noqa: F401

REGRESS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "fuzz",
                       "regress")

MEASURE = ("import resource, subprocess, sys; r = subprocess.run(sys.argv[1:], "
           "stdout=subprocess.DEVNULL, stderr=subprocess.PIPE); u = resource.getrusage("
           "resource.RUSAGE_CHILDREN); sys.stderr.write(r.stderr.decode()); "
           "print(r.returncode, u.ru_maxrss, u.ru_utime + u.ru_stime)")

STEP = b'{"ph":"X","cat":"user_annotation","name":"ProfilerStep#%d","pid":1,"tid":1,"ts":%d,"dur":900}'


def measure(*args):
    """(exit status, peak KiB, CPU seconds, stderr) of the CLI with args."""
    p = subprocess.run([sys.executable, "-c", MEASURE, GS] + [str(a) for a in args],
                       capture_output=True, text=True, env=clean_env(), timeout=600)
    rc, kib, cpu = p.stdout.split()
    return int(rc), int(kib), float(cpu), p.stderr


def records(gs, rundir):
    """The run's records, one dict each (`dump --json`)."""
    return [json.loads(ln) for ln in run(gs, "dump", "--json", str(rundir)).stdout.splitlines()]


def doc(path, events, head=b"", tail=b""):
    """A gzipped document: head, then traceEvents from the iterable of
    byte strings, then tail (each a run of `"key": value,` pairs)."""
    with gzip.open(path, "wb", compresslevel=1) as f:
        f.write(b"{" + head + b'"traceEvents": [\n' + STEP % (1, 1000))
        for e in events:
            f.write(b",\n" + e)
        f.write(b",\n" + STEP % (2, 2000) + b"]" + tail + b"}\n")
    return str(path)


def test_many_thread_names_cost_linear_time(gs, tmp_path):
    """320,000 thread_name events (about 1 MB gzipped) took 26 CPU seconds,
    growing with their square; now each name is found by hashing. Past
    65,536 threads, names are left out and the import says how many."""
    f = doc(tmp_path / "t.json.gz",
            (b'{"ph":"M","name":"thread_name","pid":1,"tid":%d,"args":{"name":"t%d"}}' % (i + 2, i)
             for i in range(320000)))
    rc, kib, cpu, err = measure("import", "-o", tmp_path / "run", f)
    assert rc == 0, err
    assert cpu < 10, cpu
    assert "254464 thread or process names (after the first 65536)" in err, err


def test_one_huge_value_inside_an_event_is_refused_in_bounded_memory(gs, tmp_path):
    """One 64 MiB array inside an event (a ~1 GiB one once took 5.2 GB):
    the import stops at its 16 MiB limit for one value, says so, exit 2."""
    arr = b"[" + b"0," * (32 << 20) + b"0]"
    f = doc(tmp_path / "n.json.gz",
            [b'{"ph":"X","cat":"cpu_op","name":"x","pid":1,"tid":1,"ts":1,"dur":1,"args":{"a":' +
             arr + b"}}"])
    rc, kib, cpu, err = measure("import", "-o", tmp_path / "run", f)
    assert rc == 2, err
    assert "larger than 16 MiB, the import's limit" in err, err
    assert kib < 128 << 10, kib


def test_huge_top_level_value_not_read_streams_by(gs, tmp_path):
    """A top-level value the import does not read (here 64 MiB) is skipped
    as it streams by, held nowhere: the import succeeds in a few MB."""
    big = b'"stackFrames": {"a": [' + b'"x",' * (16 << 20) + b'"y"]}, '
    f = doc(tmp_path / "s.json.gz", [], head=big, tail=b', "other": ' + big[15:-2])
    rc, kib, cpu, err = measure("import", "-o", tmp_path / "run", f)
    assert rc == 0, err
    assert kib < 64 << 10, kib
    j = json.loads(run(gs, "report", "--json", "--skip", "0", str(tmp_path / "run")).stdout)
    assert j["steps"]["count"] == 2


def test_distinct_names_past_the_limit_are_merged_and_counted(gs, tmp_path):
    """20,000 kernels of 4 KiB names (80 MiB of names, over the 64 MiB
    limit), then 30 steps named ProfilerStep#3..32: the names past the
    limit are merged, one per kind (NCCL kernels apart), the steps stay
    steps, and the import says how many events were merged. The report's
    memory follows the names kept (10 million distinct names once took
    import 494 MB, then report 2.2 GB)."""
    pad = b"x" * 4080

    def events():
        for i in range(20000):
            kind = b"ncclKernel_" if i % 2 else b"gemm_"
            yield (b'{"ph":"X","cat":"kernel","name":"%s%05d%s","pid":0,"tid":7,"ts":%d,'
                   b'"dur":1,"args":{"device":0,"stream":7}}' % (kind, i, pad, 1100 + i // 40))
        for s in range(3, 33):
            yield STEP % (s, 1000 * s)
    f = doc(tmp_path / "k.json.gz", events())
    rc, kib, cpu, err = measure("import", "-o", tmp_path / "run", f)
    assert rc == 0, err
    m = re.search(r"(\d+) events past the limit are kept under one name per kind", err)
    assert m, err
    merged = int(m.group(1))
    assert 3000 < merged < 5000 + 30, err
    j = json.loads(run(gs, "report", "--json", "--skip", "0", str(tmp_path / "run")).stdout)
    assert j["steps"]["count"] == 32
    kernels = {k["mangled"]: k for k in j["kernels"]}
    comm = kernels["nccl_kernels_past_the_import_name_limit"]
    other = kernels["other_kernels_past_the_import_name_limit"]
    assert comm["class"] == "communication" and other["class"] == "compute"
    assert comm["count"] + other["count"] + 31 == merged  # steps 2-32: merged into the first
    rc, kib_report, _, err = measure("report", "--json", tmp_path / "run")
    assert rc == 0 and kib_report < 512 << 10, (err, kib_report)


def test_numbers_that_do_not_fit_are_skipped_and_counted(gs, tmp_path):
    """16-20 digit times, ends past 2^63 ns, 19-digit thread ids and
    compute capabilities that overflow: the events whose times do not fit
    are skipped and counted, the others keep their exact times (the UBSan
    build aborted at the first overflow; the release build wrote wrong
    times)."""
    f = os.path.join(REGRESS, "import-numbers.json")
    r = run(gs, "import", "-o", str(tmp_path / "run"), f)
    assert "6 events with a time out of range" in r.stderr, r.stderr
    recs = records(gs, tmp_path / "run")
    kernels = [(e["name"], e["ts_ns"], e["dur_ns"]) for e in recs if e.get("kind") == "gpu_kernel"]
    assert kernels == [("kok", 1100125, 200500)]
    steps = sorted((e["ts_ns"], e["dur_ns"]) for e in recs if e.get("kind") == "range")
    assert steps == [(1000000, 500000), (2000000, 500000),
                     (9223372036853775000, 1000000)]  # ends at 2^63 - 808 ns: it fits
    dev = [e for e in recs if e.get("kind") == "gpu_device"][0]
    assert dev["compute_capability"] == "0.0"  # 2^63 - 1 times 10 does not fit: unknown


def test_base_time_past_the_range_leaves_records_out_counted(gs, tmp_path):
    """baseTimeNanoseconds near 2^63: the records it puts past 2^63 ns are
    left out and counted; those it does not are kept."""
    f = os.path.join(REGRESS, "import-base-time.json")
    r = run(gs, "import", "-o", str(tmp_path / "run"), f)
    assert "3 records were left out: the trace's base time" in r.stderr, r.stderr
    recs = records(gs, tmp_path / "run")
    kept = sorted((e["kind"], e["ts_ns"]) for e in recs if e.get("kind") in ("range", "cuda_memcpy",
                                                                              "gpu_kernel"))
    assert kept == [("cuda_memcpy", 0), ("range", 0)], kept  # the kernel and step 2: past it


def test_copy_with_no_name_is_imported_with_its_direction_unknown(gs, tmp_path):
    """A GPU copy event without a name (found by test-fuzz: the UBSan build
    aborted, the name's NULL pointer given to memchr) is imported, its
    direction and memory kinds unknown."""
    f = tmp_path / "noname.json"
    f.write_text(json.dumps({"traceEvents": [
        {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1,
         "ts": 1000, "dur": 900},
        {"ph": "X", "cat": "gpu_memcpy", "pid": 0, "tid": 7, "ts": 1100, "dur": 50,
         "args": {"device": 0, "stream": 7, "correlation": 5, "bytes": 4096}}]}))
    recs = records(gs, imp(gs, tmp_path / "run", f))
    copies = [(e["direction"], e["src_mem"], e["dst_mem"], e["bytes"]) for e in recs
              if e.get("kind") == "gpu_memcpy"]
    assert copies == [("unknown", "unknown", "unknown", 4096)], copies
