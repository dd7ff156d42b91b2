"""Regenerate the peers' figures on the real GPU traces (kept beside the
repository: real_traces.py; GS_REAL_TRACES=DIR reads them from DIR):
torch-tb-profiler 0.4.3 (its overall step-time breakdown) and Holistic Trace
Analysis 0.5 (its temporal breakdown and its parsed GPU events), both from
PyPI in their own environment (`make peers` creates build/peers-venv; the
shared .venv is not touched). Writes tests/import/peers_golden.json, which
test_peers.py compares with gpustarve on every `make test`.

Run: build/peers-venv/bin/python tests/import/peers.py [OUT.json]

Per trace the golden holds:
  profiler_steps  the ProfilerStep#N windows (kineto_truth.py)
  tb.own_steps    tb-profiler's breakdown per step as it shows it (its steps
                  run from a ProfilerStep's start to the end of the GPU work
                  it launched, so they differ from the ProfilerStep windows)
  tb.windows      tb-profiler's categories over the ProfilerStep windows
                  (its own OverallParser.aggregate, given those windows)
  hta.temporal    HTA's get_temporal_breakdown (whole trace, last
                  iteration left out, as HTA does)
  hta.windows     HTA's GPU busy time per ProfilerStep window: its parsed GPU
                  events (stream != -1, as its temporal breakdown takes
                  them), clipped to the window, merged with its
                  merge_kernel_intervals
Times in ms.
"""
import json
import lzma
import os
import shutil
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import kineto_truth  # noqa: E402
import real_traces  # noqa: E402

TRACES = real_traces.REAL
TB_ROLES = ["kernel", "memcpy", "memset", "communication", "runtime", "dataloader",
            "cpu_op", "other"]


def plain_copy(name, work):
    """The real trace's .json.xz as plain JSON in work (what both peers read)."""
    src = real_traces.path(name)
    dst = os.path.join(work, name, name + ".json")
    os.makedirs(os.path.dirname(dst), exist_ok=True)
    with lzma.open(src, "rb") as f, open(dst, "wb") as g:
        shutil.copyfileobj(f, g)
    return dst


def run_tb(path, windows_us):
    from torch_tb_profiler.profiler.data import RunProfileData
    from torch_tb_profiler.profiler.overall_parser import OverallParser
    d = RunProfileData.parse("worker0", "span", path, tempfile.mkdtemp())
    if isinstance(d, tuple):
        d = d[0]
    d.process()

    def costs(c):
        out = {r: c.costs[i] / 1e3 for i, r in enumerate(TB_ROLES)}
        out["total_ms"] = c.costs[len(TB_ROLES)] / 1e3
        return out

    own = []
    for name, c in zip(d.steps_names, d.steps_costs):
        row = costs(c)
        row["name"] = "ProfilerStep#" + str(name)
        own.append(row)
    op = OverallParser()
    op.aggregate([(int(round(s)), int(round(e))) for s, e in windows_us], d.role_ranges)
    return {"own_steps": own, "windows": [costs(c) for c in op.steps_costs]}


def run_hta(path, windows_us):
    import pandas as pd
    from hta.trace_analysis import TraceAnalysis
    from hta.utils.utils import merge_kernel_intervals
    ta = TraceAnalysis(trace_dir=os.path.dirname(path))
    tb = ta.get_temporal_breakdown(visualize=False)
    row = tb.iloc[0]
    temporal = {
        "idle_ms": float(row["idle_time(us)"]) / 1e3,
        "compute_ms": float(row["compute_time(us)"]) / 1e3,
        "non_compute_ms": float(row["non_compute_time(us)"]) / 1e3,
        "kernel_time_ms": float(row["kernel_time(us)"]) / 1e3,
    }
    df = list(ta.t.traces.values())[0]
    # HTA keeps ts relative to the trace's start and "end" absolute: the
    # windows are absolute, so the absolute start is end - dur
    gpu = df[df["stream"].ne(-1)][["end", "dur"]].copy()
    gpu["ts"] = gpu["end"] - gpu["dur"]
    gpu = gpu[["ts", "dur"]]
    windows = []
    for s, e in windows_us:
        g = gpu[(gpu["ts"] < e) & (gpu["ts"] + gpu["dur"] > s)].copy()
        if g.empty:
            windows.append({"gpu_busy_ms": 0.0})
            continue
        end = (g["ts"] + g["dur"]).clip(upper=e)
        g["ts"] = g["ts"].clip(lower=s)
        g["dur"] = end - g["ts"]
        m = merge_kernel_intervals(pd.DataFrame(g))
        windows.append({"gpu_busy_ms": float((m["end"] - m["ts"]).sum()) / 1e3})
    return {"temporal": temporal, "windows": windows}


def main():
    out_path = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "peers_golden.json")
    if not real_traces.present():
        raise SystemExit("peers.py: %s" % real_traces.absent_why())
    import importlib.metadata as md
    golden = {"versions": {p: md.version(p) for p in ("torch-tb-profiler", "HolisticTraceAnalysis",
                                                       "pandas", "numpy")},
              "traces": {}}
    work = tempfile.mkdtemp(prefix="gs-peers-")
    try:
        for name in TRACES:
            path = plain_copy(name, work)
            doc = kineto_truth.load(path)
            steps = []
            windows = []
            for e in doc["traceEvents"]:
                if (e.get("ph") == "X" and kineto_truth.STEP_RE.match(e.get("name", ""))
                        and e.get("cat") in kineto_truth.CPU_CATS):
                    steps.append({"name": e["name"], "ts_us": float(e["ts"]),
                                  "dur_us": float(e["dur"])})
            steps.sort(key=lambda s: s["ts_us"])
            windows = [(s["ts_us"], s["ts_us"] + s["dur_us"]) for s in steps]
            print("%s: %d steps; tb-profiler ..." % (name, len(steps)), flush=True)
            tb = run_tb(path, windows)
            print("%s: HTA ..." % name, flush=True)
            hta = run_hta(path, windows)
            golden["traces"][name] = {"profiler_steps": steps, "tb": tb, "hta": hta}
    finally:
        shutil.rmtree(work, ignore_errors=True)
    with open(out_path, "w") as f:
        json.dump(golden, f, indent=1, sort_keys=True)
        f.write("\n")
    print("wrote", out_path)


if __name__ == "__main__":
    main()
