#!/bin/sh
# examples/demo.sh — the main job, as `make demo` runs it: trace a training
# loop whose GPU starves for data, read the report, apply its advice, check
# with `compare` whether the prediction held.
# Run from the repository root after `make`.
set -eu
PY=${PYTHON:-/usr/bin/python3}
out=${DEMO_DIR:-build/demo}
stamp=$(date +%Y%m%d-%H%M%S)
mkdir -p "$out"
GS=build/gpustarve

# A real GPU when there is one (a driver answers nvidia-smi), else the
# simulated GPU of tests/simcuda, and we say so.
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then
    echo "demo: running on the real GPU: $(nvidia-smi -L | head -1)" >&2
    SIMENV=""
else
    echo "demo: no GPU here: running on the SIMULATED GPU (tests/simcuda), whose kernels take" >&2
    echo "demo: the time SIMCUDA_KERNEL_US says and whose copies run at configured bandwidths" >&2
    SIMENV="LD_LIBRARY_PATH=$(pwd)/build/simcuda SIMCUDA_KERNEL_US=train_step_kernel=10000"
fi

if [ -x build/examples/train_loop ]; then
    run1="$out/loop-1worker-$stamp"
    echo >&2
    echo "demo: 1. examples/train_loop: 1 loader thread at 30 ms a batch, a 10 ms GPU step" >&2
    env $SIMENV $GS run -q -o "$run1" -- build/examples/train_loop \
        --workers 1 --load-ms 30 --kernel-ms 10 --steps 60 2>/dev/null
    $GS report "$run1"
    nw=$($GS report --json "$run1" | "$PY" -c \
        'import json,sys; a=[x for x in json.load(sys.stdin)["advice"] if x["setting"]=="num_workers"]; print(a[0]["value"] if a else "")')
    if [ -n "$nw" ]; then
        run2="$out/loop-${nw}workers-$stamp"
        echo >&2
        echo "demo: 2. the same loop with the advised --workers $nw" >&2
        env $SIMENV $GS run -q -o "$run2" -- build/examples/train_loop \
            --workers "$nw" --load-ms 30 --kernel-ms 10 --steps 60 2>/dev/null
        $GS report "$run2"
        echo >&2
        echo "demo: did it help, and did the prediction hold?" >&2
        $GS compare "$run1" "$run2" | sed -n '/^result/,$p'
    fi
else
    echo "demo: build/examples/train_loop is missing (no nvcc): skipping the CUDA loop" >&2
fi

data="$out/data"
if [ ! -d "$data" ]; then
    echo "demo: writing a 600-image dataset to $data" >&2
    "$PY" examples/pytorch/train.py --data "$data" --make-data 600 --steps 1 >/dev/null 2>&1
fi
run3="$out/pytorch-$stamp"
echo >&2
echo "demo: 3. examples/pytorch/train.py: a CPU training loop, DataLoader with 2 workers" >&2
$GS run -q -o "$run3" -- "$PY" examples/pytorch/train.py --data "$data" --num-workers 2 --epochs 2
$GS report "$run3"
echo
echo "demo: traces are in $out; 'gpustarve dump DIR' prints every event, 'gpustarve report --json DIR' the report as JSON"
