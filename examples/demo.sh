#!/bin/sh
# examples/demo.sh — the main job, as `make demo` runs it: a PyTorch
# DataLoader training loop traced by gpustarve, then the trace's summary.
# Run from the repository root after `make`.
set -eu
PY=${PYTHON:-/usr/bin/python3}
out=${DEMO_DIR:-build/demo}
data="$out/data"
run="$out/run-$(date +%Y%m%d-%H%M%S)"
mkdir -p "$out"
if [ ! -d "$data" ]; then
    echo "demo: writing a 600-image dataset to $data" >&2
    "$PY" examples/pytorch/train.py --data "$data" --make-data 600 --steps 1 >/dev/null 2>&1
fi
echo "demo: tracing examples/pytorch/train.py (2 DataLoader workers, CPU) into $run" >&2
build/gpustarve run -o "$run" -- "$PY" examples/pytorch/train.py --data "$data" \
    --num-workers 2 --epochs 2
echo
build/gpustarve dump --summary "$run"
echo
echo "demo: every event is in 'build/gpustarve dump $run' (add --json for JSON Lines)"
