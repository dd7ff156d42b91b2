"""What a PyTorch profiler (Kineto) trace says about itself, read with
Python's own json module (no gpustarve code): per ProfilerStep#N range, its
duration, the share of it covered by DataLoader __next__ spans, the share in
which the GPU ran something (kernels, copies, memsets), and the share of
DataLoader time during which the GPU was idle.

The import tests compare `gpustarve import` + `report` with these numbers;
tests/import/peers.py prints them beside torch-tb-profiler's and HTA's.

Usage: python3 kineto_truth.py TRACE.json[.gz|.xz]   (prints JSON)
"""
import gzip
import json
import lzma
import re
import sys

STEP_RE = re.compile(r"^ProfilerStep#\d+$")
GPU_CATS = {"kernel", "Kernel", "gpu_memcpy", "Memcpy", "gpu_memset", "Memset"}
CPU_CATS = {"cpu_op", "Operator", "user_annotation", "python_function"}


def load(path):
    if path.endswith(".xz"):
        opener = lzma.open
    elif path.endswith(".gz"):
        opener = gzip.open
    else:
        opener = open
    with opener(path, "rb") as f:
        return json.loads(f.read())


def is_dataloader(name):
    """A DataLoader __next__ span: record_function 'enumerate(DataLoader)#...'
    (and the python_function frame of dataloader.py's __next__)."""
    return "dataloader" in name.lower() and name.endswith("__next__")


def union(ivs):
    out = []
    for s, e in sorted(ivs):
        if out and s <= out[-1][1]:
            if e > out[-1][1]:
                out[-1][1] = e
        else:
            out.append([s, e])
    return out


def clip(ivs, s, e):
    return [(max(a, s), min(b, e)) for a, b in ivs if b > s and a < e]


def length(ivs):
    return sum(b - a for a, b in ivs)


def minus(a_ivs, b_ivs):
    """a minus b, both unions (sorted, disjoint)."""
    out = []
    j = 0
    for s, e in a_ivs:
        cur = s
        while j < len(b_ivs) and b_ivs[j][1] <= cur:
            j += 1
        k = j
        while k < len(b_ivs) and b_ivs[k][0] < e:
            bs, be = b_ivs[k]
            if bs > cur:
                out.append((cur, bs))
            cur = max(cur, be)
            k += 1
        if cur < e:
            out.append((cur, e))
    return out


def truth(doc):
    evs = doc["traceEvents"] if isinstance(doc, dict) else doc
    steps, dl, gpu = [], [], []
    for e in evs:
        if e.get("ph") != "X" or "ts" not in e:
            continue
        ts = float(e["ts"])
        end = ts + float(e.get("dur", 0) or 0)
        cat, name = e.get("cat", ""), e.get("name", "")
        if "cat" not in e:  # the legacy autograd profiler (torch without Kineto)
            cat = "kernel" if e.get("pid") == "CUDA functions" else "cpu_op"
        if cat in GPU_CATS:
            gpu.append((ts, end))
        elif cat in CPU_CATS:
            if STEP_RE.match(name):
                steps.append((ts, end, name))
            elif is_dataloader(name):
                dl.append((ts, end))
    steps.sort()
    dl_u, gpu_u = union(dl), union(gpu)
    out = []
    for s, e, name in steps:
        d = e - s
        dls = clip(dl_u, s, e)
        out.append({
            "name": name,
            "dur_ms": d / 1e3,
            "dataloader_share": length(dls) / d if d else 0.0,
            "dataloader_gpu_idle_share": length(minus(dls, clip(gpu_u, s, e))) / d if d else 0.0,
            "gpu_busy_share": length(clip(gpu_u, s, e)) / d if d else 0.0,
        })
    return out


def median(v):
    v = sorted(v)
    n = len(v)
    if not n:
        return 0.0
    return v[n // 2] if n % 2 else (v[n // 2 - 1] + v[n // 2]) / 2


if __name__ == "__main__":
    print(json.dumps(truth(load(sys.argv[1])), indent=1))
