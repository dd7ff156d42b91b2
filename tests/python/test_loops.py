"""Training loops written the ways real projects write them, traced with no
marker added, and the report held against what each script times itself
(tests/python/loop_clock.py; docs/python.md "Steps without a DataLoader",
docs/report-schema.md "Measured time"):

  nanogpt     no DataLoader: get_batch maps a token file with np.memmap
              per batch on the training thread (loop_nanogpt.py)
  generator   no DataLoader: a generator reads and tokenizes text records
              on the training thread, 2 micro-batches a step (loop_generator.py;
              also with its model through torch.compile, torch 2)
  threadpool  a ThreadPoolExecutor reads and decodes PNGs (loop_threadpool.py)
  stream0/2   an IterableDataset over tar shards, 0 and 2 workers (loop_stream.py)
  persistent  persistent_workers, prefetch_factor=4, a 10 ms collate_fn
  dataloader  a plain DataLoader loop (both loop_persistent.py)

Each must have its steps found, and the report must agree with the script:
the data-wait share within 2 points, each part of the loader's batch
(file I/O, page faults, CPU, waiting for a CPU, other blocking) within 20%
(or 1 ms: parts that small are the scale of the scripts' own clock reads
and of one preemption; over the script's units that end inside the
report's measured steps), the trainer's wait split (blocked, receiving,
waiting for a CPU) within 1 ms per step (medians; or 15% of a part when
the machine's load makes the wait 10-20 ms a step). These are shares and ratios of one run's
own numbers, so they hold on a busy machine; but a preemption of 10-20 ms
that lands between a marker and the script's own clock read moves one
run's share by a point or two on a loaded 2-core machine, so a style that
misses a tolerance is run twice more and each comparison's median error
over the three runs is held to it.

Data is made per session in a temporary folder; runs last a few seconds.
"""
import json
import os
import re
import statistics
import subprocess
import sys

import pytest

from loop_clock import read_parts  # noqa: E402  (tests/python is on sys.path)
from conftest import BUILD, CLI, DEBIAN_PY, HERE, PYDIR, VENV_PY, clean_env, interpreters, run_traced

SHARE_PTS = 0.02     # data-wait share, absolute
PART_REL = 0.20      # each part of a loader's batch
PART_ABS_MS = 1.0    # ... or this much
SPLIT_MS = 1.0       # the trainer's wait split, per step
SPLIT_REL = 0.15     # ... or this much of it (10-20 ms of waiting for a CPU a step
                     # beside other sessions' load: docs/testing.md)
MEDIAN_RANKS = 2     # ... beyond the script's steps this many ranks from the median
RUNS = 3             # runs of a style that missed, for the median
SIM = os.path.join(BUILD, "simcuda")

MAKE_DATA = r"""
import io, os, sys, tarfile
import numpy as np
from PIL import Image
root = sys.argv[1]
rng = np.random.default_rng(20261205)
with open(os.path.join(root, "tokens.bin"), "wb") as f:
    f.write(rng.integers(0, 256, size=8 << 20, dtype=np.uint16).tobytes())
    f.flush()
    os.fsync(f.fileno())  # so that posix_fadvise(DONTNEED) can drop it
os.makedirs(os.path.join(root, "png"))
for i in range(48):
    a = rng.integers(0, 256, size=(64, 64, 3)).astype(np.uint8)
    Image.fromarray(a).save(os.path.join(root, "png", "%03d.png" % i))
os.makedirs(os.path.join(root, "shards"))
for s in range(4):
    with tarfile.open(os.path.join(root, "shards", "s%d.tar" % s), "w") as tf:
        for j in range(40):
            b = rng.standard_normal(4096).astype(np.float32).tobytes()
            ti = tarfile.TarInfo("%05d.bin" % j)
            ti.size = len(b)
            tf.addfile(ti, io.BytesIO(b))
words = np.array([b"w%d" % i for i in range(2000)])
with open(os.path.join(root, "text.bin"), "wb") as f:
    for r in range(400):  # records of loop_generator.RECORD bytes
        line = b" ".join(words[rng.integers(0, len(words), size=120)])
        f.write(line[:1023].ljust(1023) + b"\n")
os.makedirs(os.path.join(root, "bins"))
for i in range(64):
    rng.standard_normal(4096).astype(np.float32).tofile(os.path.join(root, "bins", "%03d.bin" % i))
"""


@pytest.fixture(scope="session")
def data(tmp_path_factory):
    root = str(tmp_path_factory.mktemp("loops"))
    p = subprocess.run([DEBIAN_PY, "-c", MAKE_DATA, root], capture_output=True, timeout=300)
    assert p.returncode == 0, p.stderr.decode()
    return root


# style: (script, arguments (data folder d), samples per batch (0: a unit is a batch))
STYLES = {
    "nanogpt": ("loop_nanogpt.py", lambda d: [os.path.join(d, "tokens.bin"), "--steps", "30",
                                             "--batch", "32"], 0),
    # 2 micro-batches a step: a unit is one, a step's wait two
    "generator": ("loop_generator.py", lambda d: [os.path.join(d, "text.bin"), "--steps", "30",
                                                 "--batch", "64"],
                  2),
    "threadpool": ("loop_threadpool.py", lambda d: [os.path.join(d, "png"), "--steps", "24",
                                                   "--batch", "8", "--sleep-ms", "2"], 0),
    "stream0": ("loop_stream.py", lambda d: [os.path.join(d, "shards"), "--workers", "0",
                                             "--decode-ms", "2", "--sleep-ms", "1"], 4),
    "stream2": ("loop_stream.py", lambda d: [os.path.join(d, "shards"), "--workers", "2",
                                             "--decode-ms", "2", "--sleep-ms", "1"], 4),
    "persistent": ("loop_persistent.py", lambda d: [os.path.join(d, "bins"), "--workers", "2",
                                                   "--persistent", "--prefetch", "4",
                                                   "--collate-ms", "10", "--item-ms", "1"], 4),
    # batches of 2: 16 a worker, so that its first (start-up, lazy imports)
    # weigh little in the script's means over all its units
    "dataloader": ("loop_persistent.py", lambda d: [os.path.join(d, "bins"), "--workers", "2",
                                                   "--epochs", "1", "--batch", "2",
                                                   "--item-ms", "3", "--sleep-ms", "1"], 2),
}
OPTIMIZER_STEPS = ("nanogpt", "threadpool", "generator")


class Run(object):
    """One traced run of a style: the report and the script's own timing."""

    def __init__(self, py, style, data, run_dir, env_extra=None, extra_args=()):
        script, args, self.per_batch = STYLES[style]
        parts_dir = str(run_dir) + "-parts"
        os.makedirs(parts_dir)
        env = clean_env(PYTHONPATH=PYDIR + os.pathsep + HERE, LOOP_PARTS_DIR=parts_dir,
                        **(env_extra or {}))
        p = run_traced([py, os.path.join(HERE, script)] + args(data) + list(extra_args), run_dir,
                       env=env)
        err = p.stderr.decode(errors="replace")
        assert p.returncode == 0, err[-3000:]
        self.loop, self.parts = None, {}
        for line in err.splitlines():
            if line.startswith("loop "):
                self.loop = json.loads(line[5:])
            elif line.startswith("loop-part "):
                r = json.loads(line[10:])
                self.parts[(r["pid"], r["tid"], r["what"])] = r  # the last totals
        assert self.loop is not None, err[-3000:]
        self.parts.update(read_parts(parts_dir))
        r = subprocess.run([CLI, "report", "--json", "--per-step", str(run_dir)],
                           capture_output=True, timeout=300)
        assert r.returncode == 0, r.stderr.decode()
        self.j = json.loads(r.stdout)
        self.style = style
        meas = [x for x in self.j["per_step"] if not x["warmup"]]
        self.window = (min(x["start_ns"] for x in meas),
                       max(x["start_ns"] + x["dur_ms"] * 1e6 for x in meas))

    # ---- the script's side -----------------------------------------------------------

    def script_steps(self):
        """The script's steps that the report's measured steps cover: the
        report leaves `warmup` out; a step cut at optimizer steps runs from
        one step() to the next, so it covers the script's next step."""
        skip = self.j["steps"]["warmup"] + (1 if self.style in OPTIMIZER_STEPS else 0)
        return self.loop["steps"][skip:]

    def script_share(self):
        s = self.script_steps()
        return sum(x["wait"] for x in s) / sum(x["wall"] for x in s)

    def script_split(self):
        s = self.script_steps()
        return {k: statistics.median(x[k] for x in s) / 1e6
                for k in ("wait_blocked", "wait_cpu", "wait_runq")}

    def script_split_band(self):
        """Per part of the wait: the script's steps' values MEDIAN_RANKS
        ranks either side of the median, ms. RATIONALE: where half the
        steps find a batch ready and half wait (persistent workers beside
        other load), the median sits between two clusters, and a step
        counted on the other side of its boundary by the report moves it
        by milliseconds: the report's median is held to the middle steps'
        values, not to one of them."""
        s = self.script_steps()
        out = {}
        for k in ("wait_blocked", "wait_cpu", "wait_runq"):
            v = sorted(x[k] / 1e6 for x in s)
            m = (len(v) - 1) // 2
            out[k] = (v[max(0, m - MEDIAN_RANKS)], v[min(len(v) - 1, len(v) - 1 - m + MEDIAN_RANKS)])
        return out


def unit_means(rec, skip=0, window=None):
    """A loop-part record's parts per unit, ms: the units that end inside
    `window` (the report's measured steps, ns: the units the report cuts,
    docs/report-schema.md "Measured time"), when at least 3 do; else past
    the units the script left out of its `skipped` totals (a loader's
    start-up), when enough remain; else each unit's past `skip` when the
    record has them. RATIONALE: beside other load a unit's run-queue delay
    ranges from none to tens of ms, so means over two sets of units that
    differ by one or two at their ends differ by more than the tolerance."""
    keys = ("wall", "io", "cpu", "runq", "fault", "blocked")
    inside = [u for u in rec.get("each") or ()
              if window and window[0] <= u.get("end", -1) <= window[1]]
    if len(inside) >= 3:
        return {k: sum(u[k] for u in inside) / len(inside) / 1e6 for k in keys}
    sk = rec.get("skipped") or {}
    if sk.get("units") and rec["units"] - sk["units"] >= 3:
        n = rec["units"] - sk["units"]
        return {k: (rec[k] - sk[k]) / n / 1e6 for k in keys}
    if rec.get("each") and len(rec["each"]) > skip + 3:
        each = rec["each"][skip:]
        return {k: sum(u[k] for u in each) / len(each) / 1e6 for k in keys}
    n = rec["units"]
    return {k: rec[k] / n / 1e6 for k in keys}


# the report's parts (measured.mean_ms) against the script's
PARTS = (("file_io", "io"), ("cpu", "cpu"), ("runq", "runq"),
         ("page_fault_io", "fault"), ("other_blocked", "blocked"))


def part_errors(tool, script, label):
    """{label.part: error in units of the tolerance (1.0: at the edge)}."""
    out = {}
    for tk, sk in PARTS:
        t = tool.get(tk) or 0.0
        s = script[sk]
        out["%s.%s (%.2f vs %.2f ms)" % (label, tk, t, s)] = \
            abs(t - s) / max(PART_REL * s, PART_ABS_MS)
    return out


def loaders(run):
    """[(label, the report's measured parts per batch, the script's)]."""
    j, style = run.j, run.style
    out = []
    if style in ("nanogpt", "stream0", "generator"):
        m = j["measured"]["loader"]
        assert m is not None and m["in_training_thread"], j["measured"]
        (rec,) = [r for r in run.parts.values()]
        skip = 2 + j["steps"]["warmup"] if style == "nanogpt" else 0
        s = unit_means(rec, skip, run.window)
        if run.per_batch:
            s = {k: v * run.per_batch for k, v in s.items()}
        out.append((style, m["mean_ms"], s))
    elif style == "threadpool":
        for n, w in enumerate(sorted(j["loader"]["workers"], key=lambda w: w["tid"])):
            m = w["measured"]
            assert m is not None and m["per_batch"] == "items", w
            rec = run.parts[(w["pid"], w["tid"], "pool_item")]
            k = m["batches"] / m["work_items"]  # per batch -> per item
            out.append(("thread %d" % n, {x: v * k for x, v in m["mean_ms"].items()},
                        unit_means(rec, window=run.window)))
    else:
        for n, w in enumerate(sorted(j["loader"]["workers"], key=lambda w: w["pid"])):
            m = w["measured"]
            assert m is not None and m["per_batch"] == "markers", w
            whole = run.parts.get((w["pid"], w["pid"], "batch"))
            if whole:  # the script timed each batch whole (a collate function ends it)
                out.append(("worker %d" % n, m["mean_ms"], unit_means(whole, window=run.window)))
                continue
            what = "stream_sample" if style.startswith("stream") else "item"
            s = {k: v * run.per_batch
                 for k, v in unit_means(run.parts[(w["pid"], w["pid"], what)],
                                        window=run.window).items()}
            out.append(("worker %d" % n, m["mean_ms"], s))
    return out


def errors(run):
    """Every comparison of one run, as its error over its tolerance."""
    j = run.j
    e = {"share (%.3f vs %.3f)" % (j["share"]["idle_data_wait"], run.script_share()):
         abs(j["share"]["idle_data_wait"] - run.script_share()) / SHARE_PTS}
    t, s, band = j["measured"]["trainer"], run.script_split(), run.script_split_band()
    for tk, sk in (("blocked_ms", "wait_blocked"), ("receiving_ms", "wait_cpu"),
                   ("fetch_runq_ms", "wait_runq")):
        v, (lo, hi) = t[tk] or 0, band[sk]
        e["trainer %s (%.2f vs %.2f, middle steps %.2f..%.2f)" % (tk, v, s[sk], lo, hi)] = \
            max(0.0, lo - v, v - hi) / max(SPLIT_MS, SPLIT_REL * s[sk])
    for label, tool, script in loaders(run):
        e.update(part_errors(tool, script, label))
    return e


def held(make_run):
    """make_run(k) -> Run number k. Every comparison within its tolerance
    in the first run, else its median error over RUNS runs."""
    first = make_run(0)
    e0 = errors(first)
    if all(v <= 1 for v in e0.values()):
        return first
    runs = [e0] + [errors(make_run(k)) for k in range(1, RUNS)]
    med = {}
    for key0 in e0:  # keys carry each run's values: match on the name before them
        name = key0.split(" (")[0]
        vals = [v for r in runs for k, v in r.items() if k.split(" (")[0] == name]
        med[key0] = statistics.median(vals)
    bad = {k: round(v, 2) for k, v in med.items() if v > 1}
    assert not bad, "median over %d runs beyond tolerance: %s\nall: %s" % (RUNS, bad, runs)
    return first


def share_held(make_run):
    """make_run(k) -> Run number k. Its data-wait share within SHARE_PTS
    of the script's in the first run, else in the median over RUNS runs;
    returns the first run."""
    def error(run):
        return abs(run.j["share"]["idle_data_wait"] - run.script_share())
    runs = [make_run(0)]
    if error(runs[0]) > SHARE_PTS:
        runs += [make_run(k) for k in range(1, RUNS)]
    assert statistics.median(error(r) for r in runs) <= SHARE_PTS, \
        [(r.j["share"]["idle_data_wait"], r.script_share()) for r in runs]
    return runs[0]


EXPECT_SOURCE = {
    "nanogpt": "optimizer steps (optimizer.step())",
    "threadpool": "optimizer steps (optimizer.step())",
    "generator": "optimizer steps (optimizer.step())",
    "stream0": "step markers", "stream2": "step markers",
    "persistent": "step markers", "dataloader": "step markers",
}


@pytest.mark.parametrize("py", interpreters())
@pytest.mark.parametrize("style", sorted(STYLES))
def test_steps_shares_and_parts_agree_with_the_script(built, data, tmp_path, py, style):
    run = held(lambda k: Run(py, style, data, tmp_path / ("run%d" % k)))
    j = run.j
    assert j["steps"]["source_detail"] == EXPECT_SOURCE[style], j["steps"]
    assert j["steps"]["measured"] >= 15, j["steps"]
    if style == "persistent":
        # the collate function, measured in the workers: 10 ms of CPU a batch
        for w in j["loader"]["workers"]:
            m = w["measured"]
            assert 0.8 * 10 <= m["collate_cpu_ms"] <= 1.5 * 10 + 1, m
            assert m["collate_ms"] >= m["collate_cpu_ms"]
    if style == "threadpool":
        assert j["loader"]["workers_seen"] == 2  # the pool's two threads load
    if style in ("stream0", "stream2", "persistent", "dataloader"):
        cfg = {c["key"]: c["value"] for c in j["dataloader"]["config"]}
        assert cfg["dataset_iterable"] == ("1" if style.startswith("stream") else "0"), cfg
    # more workers for an IterableDataset: the note says each iterates its own copy
    more = [a["value"] for a in j["advice"]
            if a["setting"] == "num_workers" and (a["value"] or 0) >= 2]
    said = [n for n in j["notes"] if n.startswith("the dataset is an IterableDataset")]
    assert len(said) == (1 if style == "stream0" and more else 0), (j["advice"], said)


@pytest.mark.parametrize("style", sorted(STYLES))
def test_steps_on_the_simulated_gpu(built, data, tmp_path, style):
    """The same loops on the simulated GPU: each step copies its batch to the
    device and runs a 6 ms kernel. Steps found the same way; the data wait is
    GPU idle while the trainer waits, and it agrees with the script as on
    the CPU: share, the trainer's wait split, each loader part. The
    generator's batch making is cut by its copy and its synchronisation
    (the collector samples the clocks at both ends of each: measured)."""
    if not os.path.exists(os.path.join(SIM, "libcudart.so.13")):
        pytest.skip("the simulated GPU is not built (make simcuda-bins)")
    env = {"LOOP_SIM_GPU": SIM, "LD_LIBRARY_PATH": SIM, "SIMCUDA_KERNEL_US": "loop_kernel=6000"}

    j = held(lambda k: Run(DEBIAN_PY, style, data, tmp_path / ("run%d" % k), env_extra=env)).j
    assert not j["no_gpu_activity"], j["run"]
    assert j["steps"]["source_detail"] == EXPECT_SOURCE[style], j["steps"]
    assert j["share"]["gpu_compute"] > 0
    # the loops whose training thread makes its batches: said so, measured or not
    assert j["loader"]["in_training_thread"] == (style in ("nanogpt", "generator", "stream0")), \
        j["loader"]


def test_compiled_model_s_helpers_are_no_loader(built, data, tmp_path):
    """The generator loop with its model through torch.compile (torch 2):
    its first step runs the compiler's processes, which read files (headers,
    the code they hash) and answer the trainer through pipes. They load no
    batch of the measured steps: no loader worker, the training thread makes
    its batches itself, and the report agrees with the script as without
    compile."""
    py = VENV_PY
    if not os.access(py, os.X_OK):
        pytest.skip("torch 2.x not tested: no .venv (make venv creates it from PyPI)")
    # a cold compile, on a pool of compile processes that answer through pipes
    env = {"TORCHINDUCTOR_CACHE_DIR": str(tmp_path / "inductor"),
           "TORCHINDUCTOR_COMPILE_THREADS": "4"}
    run = held(lambda k: Run(py, "generator", data, tmp_path / ("run%d" % k), env_extra=env,
                             extra_args=["--compile"]))
    d = subprocess.run([CLI, "dump", "--summary", str(tmp_path / "run0")], capture_output=True,
                       timeout=120)
    helpers = [l for l in d.stdout.decode().splitlines()
               if l.startswith("process ") and "loop_generator.py" not in l]
    if not helpers:
        pytest.skip("torch.compile started no process here")
    lo = run.j["loader"]
    assert lo["workers"] == [] and lo["worker_processes"] == 0, (lo, helpers)
    assert lo["in_training_thread"], lo
    # its waits on the compiler's pipes are no sign of an untraced worker
    said = [run.j["advice_none_why"] or ""] + run.j["notes"]
    assert not [n for n in said if "no loader worker was traced" in n], said


def test_cold_memmap_faults_are_named(built, tmp_path):
    """nanoGPT's token file dropped from the page cache: its first batches
    are read through page faults on the training thread. The report names
    them: a note on those before the measured steps (the first get_batch
    runs before the first optimizer step), and the in-thread loader's line
    those in them; together they are the faults the script counted."""
    tokens = tmp_path / "cold.bin"
    raw = bytearray(32 << 20)
    raw[0::2] = os.urandom(16 << 20)  # uint16 tokens below 256
    with open(str(tokens), "wb") as f:
        f.write(raw)
        f.flush()
        os.fsync(f.fileno())  # clean pages: DONTNEED can drop them
    env = clean_env(PYTHONPATH=PYDIR + os.pathsep + HERE)
    p = run_traced([DEBIAN_PY, os.path.join(HERE, "loop_nanogpt.py"), str(tokens), "--steps", "12",
                    "--batch", "32", "--cold"], tmp_path / "run", env=env)
    assert p.returncode == 0, p.stderr.decode()
    part = [json.loads(l[10:]) for l in p.stderr.decode().splitlines()
            if l.startswith("loop-part ")][-1]
    if part["majflt"] == 0:
        pytest.skip("no major fault read storage: the file system kept the file cached")
    r = subprocess.run([CLI, "report", "--json", str(tmp_path / "run")], capture_output=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr.decode()
    j = json.loads(r.stdout)
    before = [n for n in j["notes"] if "before the measured steps" in n]
    t = j["measured"]["trainer"]
    # RATIONALE: the same note may first say how long a slow first step took
    faults = re.search(r"took (\d+) major page faults", before[0]) if before else None
    assert not before or faults, before
    named = (int(faults.group(1)) if faults else 0) + t["major_faults"]
    assert before or t["major_faults"] >= 1, (j["notes"], t)
    if before:
        assert "MB read through them" in before[0] and "cold page cache" in before[0]
    assert 0.5 * part["majflt"] - 2 <= named <= 1.5 * part["majflt"] + 2, (named, part, j["notes"])
    assert j["measured"]["loader"]["in_training_thread"]


def test_without_python_steps_come_from_file_bursts(built, data, tmp_path):
    """The nanoGPT loop with the Python side off (GPUSTARVE_PYTHON=0, as a
    C program would be): steps are inferred from the main thread's periodic
    bursts on the token file, and its memmap's mapping is the data wait,
    within 2 points of the script's (docs/report-schema.md, "Steps")."""
    j = share_held(lambda k: Run(DEBIAN_PY, "nanogpt", data, tmp_path / ("run%d" % k),
                                 env_extra={"GPUSTARVE_PYTHON": "0"})).j
    assert j["steps"]["source"] == "inferred", j["steps"]
    assert j["steps"]["source_detail"].startswith("file reads"), j["steps"]
    assert j["steps"]["measured"] >= 20, j["steps"]


def test_no_steps_says_what_to_add(built, tmp_path):
    """A program with no loop gpustarve can find: the message names the
    marker API (README, "Marking steps")."""
    p = run_traced([DEBIAN_PY, "-c", "import time; time.sleep(0.3)"], tmp_path / "run",
                   env=clean_env())
    assert p.returncode == 0, p.stderr.decode()
    r = subprocess.run([CLI, "report", str(tmp_path / "run")], capture_output=True, timeout=120)
    assert r.returncode == 2
    msg = r.stderr.decode()
    assert "no training steps found" in msg
    assert "gpustarve.step()" in msg and "@gpustarve.step" in msg and "gpustarve_step_begin" in msg


MARKED = r"""
import time
import gpustarve

@gpustarve.step
def train_step(i):
    with gpustarve.fetch():
        time.sleep(0.004)           # the wait for data
    time.sleep(0.006)               # the rest of the step
    return i

for i in range(12):
    assert train_step(i) == i
with gpustarve.step():              # a context manager too; a step inside
    with gpustarve.step():          # a step is the same step
        time.sleep(0.002)
"""


@pytest.mark.parametrize("py", interpreters())
def test_marker_api_step_and_fetch(built, tmp_path, py):
    """gpustarve.step() and gpustarve.fetch() as decorator and context
    manager: the report cuts steps at them (the program's own markers come
    first) and the fetch is the data wait."""
    p = run_traced([py, "-c", MARKED], tmp_path / "run",
                   env=clean_env())
    assert p.returncode == 0, p.stderr.decode()
    r = subprocess.run([CLI, "report", "--json", str(tmp_path / "run")], capture_output=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr.decode()
    j = json.loads(r.stdout)
    assert j["steps"]["source_detail"] == "gpustarve.step() markers"
    assert j["steps"]["count"] == 13
    # 4 of 10 ms: sleeps only, so the shares hold whatever the machine runs
    assert 0.3 <= j["share"]["idle_data_wait"] <= 0.5, j["share"]


if __name__ == "__main__":
    sys.exit(pytest.main([__file__] + sys.argv[1:]))


UNSEEN = r"""
import inspect, json, sys, traceback, warnings
from concurrent.futures import ThreadPoolExecutor
import numpy as np
import torch
from torch.utils.data import DataLoader
import gpustarve

out = {}

def seen(tag):
    out[tag] = [(s.filename, s.lineno, s.function) for s in inspect.stack()[1:]]

class Opt(torch.optim.SGD):  # its step runs inside gpustarve's optimizer wrapper
    def step(self, closure=None):
        seen("optimizer_step")
        warnings.warn("from step", stacklevel=2)
        return super().step(closure)

def collate(batch):
    seen("collate")
    return torch.stack(batch)

def item(i):
    seen("pool_item")
    if i == 1:
        raise KeyError("bad item")
    return i

@gpustarve.step
def train_step(x):
    seen("decorated_step")
    return x

w = torch.zeros(2, requires_grad=True)
w.register_hook(lambda g: seen("backward_hook"))
opt = Opt([w], lr=0.1)
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    for x in DataLoader([torch.ones(2)] * 2, batch_size=2, collate_fn=collate):
        (w * x).sum().backward()
        opt.step()
        train_step(x)
out["warning"] = [(c.filename, c.lineno) for c in caught]
with ThreadPoolExecutor(1) as pool:
    out["results"] = pool.submit(item, 0).result()
    try:
        pool.submit(item, 1).result()
    except KeyError:
        out["traceback"] = [(f.filename, f.lineno, f.name) for f in
                            traceback.extract_tb(sys.exc_info()[2])]
mm = np.memmap(sys.argv[1], dtype=np.uint8, mode="r")
out["memmap"] = [type(mm).__name__, int(mm[3]), str(inspect.signature(np.memmap))]
out["isfunction"] = [inspect.isfunction(Opt.step), inspect.isfunction(torch.autograd.backward),
                     inspect.getsourcefile(torch.autograd.backward)]
print(json.dumps(out))
"""


@pytest.mark.parametrize("py", interpreters())
def test_new_wraps_leave_no_trace(built, tmp_path, py):
    """The wrappers of docs/python.md's new rows (an optimizer's step,
    backward, a pool's submit/result and work items, the collate function,
    numpy.memmap, a gpustarve.step-decorated function) are frame-free: a
    stack walked inside them, a warning's location and a traceback through
    them are the untraced ones ("Invisible to the program")."""
    script = tmp_path / "unseen.py"
    script.write_text(UNSEEN)
    data = tmp_path / "bytes.bin"
    data.write_bytes(bytes(range(16)))
    plain = subprocess.run([py, str(script), str(data)], capture_output=True, timeout=300,
                           env=clean_env(PYTHONPATH=PYDIR, LD_PRELOAD=None))
    traced = run_traced([py, str(script), str(data)], tmp_path / "run", env=clean_env())
    assert plain.returncode == 0, plain.stderr.decode()
    assert traced.returncode == 0, traced.stderr.decode()
    a, b = json.loads(plain.stdout), json.loads(traced.stdout)
    assert set(a) >= {"optimizer_step", "collate", "pool_item", "decorated_step",
                      "backward_hook", "warning", "traceback", "memmap"}, a
    assert a == b
    assert b"gpustarve" not in traced.stdout.replace(b"/gpustarve/", b"")
    # and the traced run went through the wrappers
    r = subprocess.run([CLI, "report", "--json", str(tmp_path / "run")], capture_output=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr.decode()
    assert json.loads(r.stdout)["steps"]["source_detail"] == "gpustarve.step() markers"


def test_collate_on_the_training_thread_is_named(built, data, tmp_path):
    """No workers: the training thread runs the collate function, 10 ms of
    CPU a batch beside 1 ms a sample in __getitem__. The report measures it
    on the trainer (measured.trainer.collate_ms, against the script's own
    collate timing: within 20% or 1 ms) and says it in a note, in the
    program's terms: move it into the workers, or make it cheaper. With 2
    workers the same function runs in the workers and no such note is
    made."""
    def go(workers, name):
        parts_dir = tmp_path / (name + "-parts")
        parts_dir.mkdir()
        env = clean_env(PYTHONPATH=PYDIR + os.pathsep + HERE, LOOP_PARTS_DIR=str(parts_dir))
        p = run_traced([DEBIAN_PY, os.path.join(HERE, "loop_persistent.py"),
                        os.path.join(data, "bins"), "--workers", str(workers), "--epochs", "1",
                        "--collate-ms", "10", "--item-ms", "1"], tmp_path / name, env=env)
        assert p.returncode == 0, p.stderr.decode()[-3000:]
        r = subprocess.run([CLI, "report", "--json", str(tmp_path / name)], capture_output=True,
                           timeout=300)
        assert r.returncode == 0, r.stderr.decode()
        return json.loads(r.stdout), read_parts(str(parts_dir))

    j, parts = go(0, "inline")
    (coll,) = [v for k, v in parts.items() if k[2] == "collate"]
    want = unit_means(coll)["wall"]
    got = j["measured"]["trainer"]["collate_ms"]
    assert got is not None and abs(got - want) <= max(PART_REL * want, PART_ABS_MS), (got, want)
    said = [n for n in j["notes"] if "collate function takes" in n]
    assert len(said) == 1 and "move it into the workers" in said[0], j["notes"]

    j, _ = go(2, "workers")
    assert j["measured"]["trainer"]["collate_ms"] is None, j["measured"]["trainer"]
    assert not [n for n in j["notes"] if "collate function takes" in n], j["notes"]
