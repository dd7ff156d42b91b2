#!/usr/bin/env python3
"""check_dump.py RUN_DIR --mem pinned|pageable|any [--steps N] [--kernel NAME]
[--nvtx NAME] [--min-copies N] [--comm] [--host-only]

Reads `gpustarve dump --json RUN_DIR` and checks what tests/gpu/validate.sh
needs: GPU kernels present (CUPTI), host-to-device copies classified as
--mem by CUPTI (gpu_memcpy src_mem) and by the host hooks (cuda_memcpy
host_mem; `any`: not checked), NVTX ranges present, nothing dropped; with
--comm, `gpustarve report --json` gives communication a share > 0 and lists
a communication kernel (named, demangled). Prints one line per check
("ok ..." / "FAIL ...") and exits 1 when any failed. --host-only skips the
CUPTI checks (CUPTI could not run: the caller says why)."""
import argparse
import json
import os
import subprocess
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
CLI = os.path.join(ROOT, "build", "gpustarve")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("run")
    ap.add_argument("--mem", choices=["pinned", "pageable", "any"], required=True)
    ap.add_argument("--steps", type=int, default=0)
    ap.add_argument("--kernel", default=None)
    ap.add_argument("--nvtx", default=None)
    ap.add_argument("--min-copies", type=int, default=1)
    ap.add_argument("--comm", action="store_true")
    ap.add_argument("--host-only", action="store_true")
    a = ap.parse_args()
    p = subprocess.run([CLI, "dump", "--json", a.run], capture_output=True)
    if p.returncode != 0:
        print("FAIL dump: %s" % p.stderr.decode().strip())
        return 1
    recs = [json.loads(l) for l in p.stdout.decode().splitlines() if l.strip()]
    fails = 0

    def check(ok, what):
        nonlocal fails
        print(("ok   " if ok else "FAIL ") + what)
        fails += 0 if ok else 1

    kinds = {}
    for r in recs:
        kinds[r["kind"]] = kinds.get(r["kind"], 0) + 1
    host = [r for r in recs if r["kind"] == "cuda_memcpy" and r["direction"] == "HtoD"
            and r["ret"] == 0]
    big = [r for r in host if r["bytes"] >= 4096]
    check(len(big) >= a.min_copies and all(a.mem in ("any", r["host_mem"]) for r in big),
          "host hooks: %d HtoD copies >= 4 KiB, host_mem %s (want all %s)" % (
              len(big), sorted({r["host_mem"] for r in big}), a.mem))
    if not a.host_only:
        kern = [r for r in recs if r["kind"] == "gpu_kernel"]
        if a.kernel:
            kern = [r for r in kern if a.kernel in (r["name"] or "")]
        want = a.steps if a.kernel and a.steps else 1
        check(len(kern) >= want, "CUPTI kernels: %d%s (want >= %d)" % (
            len(kern), " named %s" % a.kernel if a.kernel else "", want))
        gpu = [r for r in recs if r["kind"] == "gpu_memcpy" and r["direction"] == "HtoD"
               and r["bytes"] >= 4096]
        check(len(gpu) >= a.min_copies and all(a.mem in ("any", r["src_mem"]) for r in gpu),
              "CUPTI copies: %d HtoD >= 4 KiB, src_mem %s (want all %s)" % (
                  len(gpu), sorted({r["src_mem"] for r in gpu}), a.mem))
        dev = [r for r in recs if r["kind"] == "gpu_device"]
        check(len(dev) >= 1, "CUPTI device record: %s" % (
            ", ".join("%s (%d SMs, cc %s)" % (d["name"], d["sms"], d["compute_capability"])
                      for d in dev) or "none"))
        gd = max((r["dropped"] for r in recs if r["kind"] == "gpu_drops"), default=0)
        check(gd == 0, "CUPTI dropped records: %d" % gd)
        # one clock: every GPU record lies within the process's host span
        hts = [r["ts_ns"] for r in recs if r.get("tid") and r["kind"] != "process"]
        gts = [r["ts_ns"] for r in recs if r["kind"].startswith("gpu_")
               and r["kind"] not in ("gpu_device", "gpu_drops")]
        if hts and gts:
            check(min(hts) - 10**9 <= min(gts) and max(gts) <= max(hts) + 10**9,
                  "GPU timestamps on the host clock (GPU %.3f..%.3f s, host %.3f..%.3f s)" % (
                      min(gts) / 1e9, max(gts) / 1e9, min(hts) / 1e9, max(hts) / 1e9))
    if a.comm and not a.host_only:
        p = subprocess.run([CLI, "report", "--json", a.run], capture_output=True)
        rep = json.loads(p.stdout) if p.returncode == 0 else {}
        comm = [k for k in rep.get("kernels", []) if k["class"] == "communication"]
        share = rep.get("share", {}).get("gpu_comm", 0)
        check(share > 0 and comm, "communication: %.1f%% of each step; kernels %s" % (
            100 * share, "; ".join("%s (%.1f ms, %dx)" % (k["name"], k["total_ms"], k["count"])
                                   for k in comm) or "none"))
    if a.nvtx:
        rng = [r for r in recs if r["kind"] == "range" and r["name"] == a.nvtx]
        want = a.steps or 1
        check(len(rng) >= want, "NVTX ranges %r: %d (want >= %d)" % (a.nvtx, len(rng), want))
    d = max((r["dropped"] + r["lost"] for r in recs if r["kind"] == "drops"), default=0)
    check(d == 0, "host events dropped or lost: %d" % d)
    print("     kinds: " + ", ".join("%s %d" % kv for kv in sorted(kinds.items())))
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
