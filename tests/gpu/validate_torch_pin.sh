#!/bin/bash
# validate_torch_pin.sh — on a real GPU: examples/pytorch/train.py on CUDA
# under `gpustarve run`, with pin_memory off and on, and the trace must show
# pageable host-to-device copies of the batches in the first run and none in
# the second.
#
#   tests/gpu/validate_torch_pin.sh [--steps N] [--workers N]
#
# Needs `make` done (build/gpustarve, build/libgpustarve.so) and a Python with
# torch + CUDA: $GS_TORCH_PYTHON, else .venv/bin/python, else python3. The
# Python side is loaded by putting python/ on PYTHONPATH (as `gpustarve run`
# does), so the batches' steps are marked and only copies made inside the
# training steps count (the model's weights are copied, pageable, in both
# runs before the first step).
#
# Checked in each run, within the trainer's steps:
#   pin off: host copy calls (cuda_memcpy HtoD, host_mem pageable) and CUPTI
#            copies (gpu_memcpy HtoD, src_mem pageable): >= 1 per step each
#   pin on:  none of either; pinned HtoD copies instead (>= 1 per step)
# and the DataLoader config says pin_memory_effective=1 in the second run.
# Prints PASS/FAIL/SKIP lines; exit 0 pass, 1 fail, 3 skipped (no torch with
# CUDA). Every command runs under `timeout`; about a minute in all.
set -u
cd "$(dirname "$0")/../.." || exit 2
ROOT=$(pwd)
STEPS=30
WORKERS=2
while [ $# -gt 0 ]; do
    case $1 in
    --steps) STEPS=$2; shift ;;
    --workers) WORKERS=$2; shift ;;
    -h|--help) sed -n '2,22p' "$0"; exit 0 ;;
    *) echo "validate_torch_pin.sh: unknown option $1" >&2; exit 2 ;;
    esac
    shift
done

CLI=$ROOT/build/gpustarve
for f in "$CLI" "$ROOT/build/libgpustarve.so"; do
    [ -e "$f" ] || { echo "FAIL torch-pin: $f missing (run make)"; exit 1; }
done
PY=${GS_TORCH_PYTHON:-}
if [ -z "$PY" ]; then
    if [ -x "$ROOT/.venv/bin/python" ]; then PY=$ROOT/.venv/bin/python; else PY=python3; fi
fi
if ! timeout 120 "$PY" -c 'import sys, torch; sys.exit(0 if torch.cuda.is_available() else 1)' \
        >/dev/null 2>&1; then
    echo "SKIP torch-pin: $PY has no torch with a usable CUDA device"
    exit 3
fi

WORK=$(mktemp -d "${TMPDIR:-/tmp}/gs-torch-pin.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
DATA=$WORK/data
timeout 300 "$PY" examples/pytorch/train.py --data "$DATA" --make-data 1024 --steps 1 \
    >/dev/null 2>&1 || { echo "FAIL torch-pin: cannot write the dataset"; exit 1; }

fail=0
for pin in 0 1; do
    run=$WORK/run-pin$pin
    args=(--data "$DATA" --device cuda --num-workers "$WORKERS" --batch-size 32
          --steps "$STEPS")
    [ "$pin" = 1 ] && args+=(--pin-memory)
    if ! PYTHONPATH=$ROOT/python${PYTHONPATH:+:$PYTHONPATH} timeout 300 \
            "$CLI" run -q -o "$run" -- "$PY" examples/pytorch/train.py "${args[@]}" \
            >"$WORK/out-$pin.log" 2>&1; then
        echo "FAIL torch-pin pin_memory=$pin: the training run failed:"
        tail -20 "$WORK/out-$pin.log" | sed 's/^/    /'
        fail=1
        continue
    fi
    timeout 300 "$CLI" dump --json "$run" >"$WORK/dump-$pin.jsonl" 2>"$WORK/dump-$pin.err" ||
        { echo "FAIL torch-pin pin_memory=$pin: dump failed"; fail=1; continue; }
    # the config strings are not in dump's JSON; the copies and markers are
    if ! timeout 120 /usr/bin/env python3 - "$WORK/dump-$pin.jsonl" "$pin" "$STEPS" <<'EOF'
import json, sys
path, pin, steps = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
recs = [json.loads(l) for l in open(path) if l.strip()]
begins = [r for r in recs if r["kind"] == "step_begin"]
ends = [r for r in recs if r["kind"] == "step_end"]
if not begins or not ends:
    print("FAIL torch-pin pin_memory=%d: no step markers (Python side not loaded?)" % pin)
    sys.exit(1)
trainer = begins[0]["pid"]
t0 = min(r["ts_ns"] for r in begins if r["pid"] == trainer)
t1 = max(r["ts_ns"] for r in ends if r["pid"] == trainer)
nsteps = len([r for r in ends if r["pid"] == trainer])
inside = [r for r in recs if t0 <= r.get("ts_ns", -1) <= t1 and r.get("direction") == "HtoD"]
host = {"pageable": 0, "pinned": 0}
gpu = {"pageable": 0, "pinned": 0}
for r in inside:
    if r["kind"] == "cuda_memcpy" and r.get("host_mem") in host:
        host[r["host_mem"]] += 1
    elif r["kind"] == "gpu_memcpy" and r.get("src_mem") in gpu:
        gpu[r["src_mem"]] += 1
kernels = len([r for r in recs if r["kind"] == "gpu_kernel"])
msg = "steps=%d kernels=%d host HtoD calls %s, GPU HtoD copies %s" % (nsteps, kernels, host, gpu)
ok = nsteps >= steps - 1 and kernels > 0
if pin == 0:
    ok = ok and host["pageable"] >= nsteps and gpu["pageable"] >= nsteps
else:
    ok = ok and host["pageable"] == 0 and gpu["pageable"] == 0 and \
        host["pinned"] >= nsteps and gpu["pinned"] >= nsteps
print("%s torch-pin pin_memory=%d: %s" % ("PASS" if ok else "FAIL", pin, msg))
sys.exit(0 if ok else 1)
EOF
    then
        fail=1
    fi
    if "$CLI" help report >/dev/null 2>&1; then  # informational, when report exists
        timeout 120 "$CLI" report --json "$run" 2>/dev/null | timeout 60 python3 -c '
import json, sys
d = json.load(sys.stdin)
print("     report: step %.2f ms, gpu_h2d_pageable %.1f%%, idle_pageable_copy %.1f%%, %s" % (
    d["step_ms"]["median"], 100 * d["share"]["gpu_h2d_pageable"],
    100 * d["share"]["idle_pageable_copy"], d["verdict"]["label"]))' 2>/dev/null || true
    fi
done
exit $fail
