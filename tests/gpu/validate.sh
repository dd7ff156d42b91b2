#!/bin/bash
# validate.sh — end-to-end validation of the GPU side against a real GPU.
#
#   tests/gpu/validate.sh [--sim] [--no-torch] [--truth] [--steps N]
#
# Builds what it needs, then runs under `gpustarve run`, against the real
# CUDA runtime and CUPTI (no LD_LIBRARY_PATH to the simulator):
#   1. examples/train_loop --pinned 0 and --pinned 1;
#   2. with a Python with torch + CUDA (python3, $GS_TORCH_PYTHON, .venv, or
#      the venv build/gpu-venv, created with `pip install torch` when pip can
#      reach an index; otherwise SKIP, said plainly):
#      - tests/gpu/torch_cuda.py with pin_memory 0 and 1, and
#        examples/pytorch/train.py through validate_torch_pin.sh;
#      - tests/gpu/torch_ddp.py: a single-GPU DDP step on the NCCL backend:
#        communication share > 0, NCCL's kernels named (demangled);
#      - tests/gpu/torch_profiler.py: torch.profiler started inside the
#        traced run: gpustarve hands CUPTI over with one warning, the
#        profiler still sees CUDA kernels;
#   3. `gpustarve check` of the machine and the repository as a dataset:
#      its lines (each GPU measured against its datasheet row) printed for
#      docs/gpu-validation.md, its JSON kept in $GS_CHECK_OUT (default
#      build/gpu-check.json);
# and checks each dump (tests/gpu/check_dump.py): CUPTI kernels present,
# host-to-device copies classified pageable/pinned as configured by CUPTI
# and by the host hooks, NVTX ranges present, nothing dropped, GPU and host
# timestamps on one clock. Prints a PASS/FAIL/SKIP line per case and a
# summary; exit 0 when nothing failed. Record each real-GPU run in
# docs/gpu-validation.md.
#
# --truth also runs the advice truth tests (tests/e2e/test_advice_truth.py,
# every regime, GS_TRUTH_ALL=1) on this machine's own cores: a traced run per
# regime, its num_workers advice followed in a second run, the prediction
# held to it (docs/testing.md). They run on the simulated GPU and the CPU
# whatever GPU the machine has; what they add here is the machine's cores
# (a GPU machine has many more than the 2 of the test VM). They need a
# Python with torch, numpy and pytest ($GS_TRUTH_PYTHON, python3 or
# /usr/bin/python3). One PASS/FAIL/SKIP line per regime, each comparison
# printed (advice, predicted and measured step).
# --sim runs the same checks on the simulated GPU (LD_LIBRARY_PATH=
# build/simcuda; torch is skipped: it needs the real driver; in its place
# sim_step runs a step with a mangled NCCL kernel and a program that is its
# own CUPTI profiler), to prove the script where no GPU exists. Bounded:
# every step runs under `timeout`, the whole script stays under about 6
# minutes (GS_VALIDATE_BUDGET seconds; 9 with --truth).
set -u
cd "$(dirname "$0")/../.." || exit 2
ROOT=$(pwd)
SIM=0
TORCH=1
TRUTH=0
STEPS=20
while [ $# -gt 0 ]; do
    case $1 in
    --sim) SIM=1 ;;
    --no-torch) TORCH=0 ;;
    --truth) TRUTH=1 ;;
    --steps) STEPS=$2; shift ;;
    -h|--help) sed -n '2,40p' "$0"; exit 0 ;;
    *) echo "validate.sh: unknown option $1" >&2; exit 2 ;;
    esac
    shift
done
BUDGET=${GS_VALIDATE_BUDGET:-$([ $TRUTH = 1 ] && echo 540 || echo 360)}
START=$(date +%s)
WORK=$(mktemp -d "${TMPDIR:-/tmp}/gs-validate.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
RESULTS=()
FAILED=0

left() { echo $((BUDGET - ($(date +%s) - START))); }
result() { RESULTS+=("$1 $2"); [ "$1" = FAIL ] && FAILED=$((FAILED + 1)); echo "== $1 $2"; }
# bounded <seconds> cmd...: never past the budget
bounded() {
    local t=$1; shift
    local l; l=$(left)
    [ "$l" -lt 5 ] && { echo "validate.sh: out of time" >&2; return 124; }
    [ "$t" -gt "$l" ] && t=$l
    timeout --kill-after=5 "$t" "$@"
}

if [ $SIM = 0 ] && ! nvidia-smi -L >/dev/null 2>&1; then
    echo "validate.sh: no NVIDIA GPU here (nvidia-smi -L failed); --sim checks the script on the simulated GPU" >&2
    exit 2
fi
echo "gpustarve GPU validation: $([ $SIM = 1 ] && echo 'SIMULATED GPU (--sim)' || echo 'real CUDA + CUPTI')"
if [ $SIM = 0 ] && command -v nvidia-smi >/dev/null; then
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null | sed 's/^/   GPU: /'
fi

# ---- build ----------------------------------------------------------------------
targets="build/libgpustarve.so build/gpustarve cuda-example-bins"
[ $SIM = 1 ] && targets="$targets simcuda-bins"
# the truth tests' programs: the simulated GPU, and the examples (read_dataset:
# tests/e2e's check that the build is there)
[ $TRUTH = 1 ] && targets="$targets simcuda-bins example-bins"
# the build packages first, bounded (a device machine may have no network:
# then what is there is used, and make is told not to try again)
bounded 120 ./tools/deps.sh build >"$WORK/deps.log" 2>&1 ||
    echo "validate: tools/deps.sh build failed (no network?): building with the packages here" >&2
if ! bounded 150 make -j"$(nproc)" DEPS_SH= $targets >"$WORK/make.log" 2>&1; then
    tail -20 "$WORK/make.log"
    result FAIL "build (make $targets)"
fi
GS=$ROOT/build/gpustarve
LOOP=$ROOT/build/examples/train_loop
ENVS=(env -u LD_PRELOAD -u CUDA_INJECTION64_PATH -u NVTX_INJECTION64_PATH)
if [ $SIM = 1 ]; then
    ENVS+=(LD_LIBRARY_PATH="$ROOT/build/simcuda" SIMCUDA_KERNEL_US=train_step_kernel=5000)
fi

# run_case <name> [--expect-warning=WORDS] [--stdout-has=REGEX] <check args...> -- <command...>
# --expect-warning: the run must print exactly one gpustarve warning, with
# WORDS in it (and the CUPTI checks still run); --stdout-has: the command's
# stdout must match REGEX.
run_case() {
    local name=$1; shift
    local check=() expect="" stdout_re=""
    while [ "$1" != -- ]; do
        case $1 in
        --expect-warning=*) expect=${1#--expect-warning=} ;;
        --stdout-has=*) stdout_re=${1#--stdout-has=} ;;
        *) check+=("$1") ;;
        esac
        shift
    done
    shift
    local run=$WORK/$name
    if ! bounded 120 "${ENVS[@]}" "$GS" run -o "$run" -- "$@" >"$WORK/$name.out" 2>"$WORK/$name.err"; then
        sed 's/^/   | /' "$WORK/$name.err" | tail -15
        result FAIL "$name (command failed)"
        return
    fi
    grep -E '^\{|^gpustarve:' "$WORK/$name.err" | sed 's/^/   | /'
    local host_only=()
    if [ -n "$expect" ]; then
        if [ "$(grep -c '^gpustarve: warning:' "$WORK/$name.err")" != 1 ] ||
            ! grep '^gpustarve: warning:' "$WORK/$name.err" | grep -qF "$expect"; then
            result FAIL "$name (wanted exactly one warning with: $expect)"
            return
        fi
    elif grep -q '^gpustarve: warning: .*CUPTI' "$WORK/$name.err"; then
        host_only=(--host-only)
    fi
    if [ -n "$stdout_re" ] && ! grep -qE "$stdout_re" "$WORK/$name.out"; then
        sed 's/^/   | /' "$WORK/$name.out" | tail -5
        result FAIL "$name (stdout lacks /$stdout_re/)"
        return
    fi
    if python3 tests/gpu/check_dump.py "$run" "${check[@]}" "${host_only[@]}" >"$WORK/$name.chk" 2>&1; then
        sed 's/^/   /' "$WORK/$name.chk"
        if [ ${#host_only[@]} -gt 0 ]; then
            result FAIL "$name (CUPTI did not run; host hooks ok)"
        else
            result PASS "$name"
        fi
    else
        sed 's/^/   /' "$WORK/$name.chk"
        result FAIL "$name"
    fi
}

# ---- 1. the CUDA example ----------------------------------------------------------
if [ -x "$LOOP" ]; then
    for pinned in 0 1; do
        mem=$([ $pinned = 1 ] && echo pinned || echo pageable)
        run_case "train_loop_pinned$pinned" --mem "$mem" --steps "$STEPS" \
            --kernel train_step_kernel --nvtx train_step --min-copies "$STEPS" -- \
            "$LOOP" --steps "$STEPS" --workers 2 --load-ms 5 --batch-mb 8 --kernel-ms 5 --pinned $pinned
    done
else
    result FAIL "train_loop (not built: nvcc missing?)"
fi

# ---- 1b. on the simulator: a mangled NCCL kernel, a program that is its own profiler --------
NCCL_K=_Z39ncclDevKernel_AllReduce_Sum_f32_RING_LL24ncclDevKernelArgsStorageILm4096EE
if [ $SIM = 1 ] && [ -x build/simcuda/sim_step ]; then
    ENVS+=(SIMCUDA_KERNEL_US="train_step_kernel=5000,fwd_kernel=4000,$NCCL_K=2000")
    run_case "sim_nccl_step" --mem pinned --steps "$STEPS" --nvtx train_step --comm -- \
        build/simcuda/sim_step --steps "$STEPS" --kernel fwd_kernel --comm "$NCCL_K" --pinned 1
    run_case "sim_own_profiler" --expect-warning="another CUPTI client started" \
        --stdout-has="profiler: $((STEPS - 4)) kernel records" --mem any --min-copies 0 --nvtx train_step -- \
        build/simcuda/sim_step --steps "$STEPS" --profile-from 4
fi

# ---- 2. PyTorch --------------------------------------------------------------------
find_torch() {
    for py in "${GS_TORCH_PYTHON:-}" python3 "$ROOT/.venv/bin/python" "$ROOT/build/gpu-venv/bin/python"; do
        [ -n "$py" ] && command -v "$py" >/dev/null 2>&1 || continue
        if bounded 60 "$py" -c 'import torch,sys; sys.exit(0 if torch.cuda.is_available() else 3)' \
            >/dev/null 2>&1; then
            echo "$py"
            return 0
        fi
    done
    # none: try a venv with pip (needs an index; bounded)
    if [ "$(left)" -gt 150 ] && python3 -m venv "$ROOT/build/gpu-venv" >/dev/null 2>&1; then
        if bounded 120 "$ROOT/build/gpu-venv/bin/pip" install -q torch >"$WORK/pip.log" 2>&1 &&
            bounded 60 "$ROOT/build/gpu-venv/bin/python" -c \
                'import torch,sys; sys.exit(0 if torch.cuda.is_available() else 3)' >/dev/null 2>&1; then
            echo "$ROOT/build/gpu-venv/bin/python"
            return 0
        fi
    fi
    return 1
}
if [ $TORCH = 0 ]; then
    result SKIP "torch_cuda (--no-torch)"
elif [ $SIM = 1 ]; then
    result SKIP "torch_cuda (--sim: PyTorch needs the real driver)"
elif PYT=$(find_torch); then
    echo "   torch: $("$PYT" -c 'import torch; print(torch.__version__, "CUDA", torch.version.cuda)')"
    for pin in 0 1; do
        mem=$([ $pin = 1 ] && echo pinned || echo pageable)
        run_case "torch_pin_memory$pin" --mem "$mem" --nvtx train_step --steps 10 --min-copies 10 -- \
            "$PYT" tests/gpu/torch_cuda.py --pin-memory $pin --steps 20 --workers 2
    done
    # DDP on NCCL, one GPU: communication has a share, NCCL's kernels named
    run_case "torch_ddp_nccl" --mem any --min-copies 0 --nvtx train_step --steps 10 --comm -- \
        "$PYT" tests/gpu/torch_ddp.py --steps 20
    # torch.profiler started during the traced run: gpustarve hands CUPTI over
    run_case "torch_profiler_inside" --expect-warning="another CUPTI client started" \
        --stdout-has='"cuda_kernel_events": [1-9]' --mem any --min-copies 0 --nvtx train_step -- \
        "$PYT" tests/gpu/torch_profiler.py --steps 12 --profile-from 4
    # The PyTorch example with no code changes: steps from the DataLoader
    # markers, pageable batch copies with pin_memory off and none with it on.
    if GS_TORCH_PYTHON="$PYT" bounded 150 tests/gpu/validate_torch_pin.sh --steps 20 \
        >"$WORK/torch_pin.out" 2>&1; then
        result PASS "examples/pytorch/train.py pin_memory off/on (validate_torch_pin.sh)"
    else
        sed 's/^/   | /' "$WORK/torch_pin.out" | tail -15
        result FAIL "examples/pytorch/train.py pin_memory off/on (validate_torch_pin.sh)"
    fi
else
    result SKIP "torch_cuda (no Python with torch + CUDA, and pip could not install one)"
fi

# ---- 3. the machine check -------------------------------------------------------------
# RATIONALE: on the simulator the card is configured as an H100 SXM that
# gives its datasheet (copies moving no bytes, so their time is the link's),
# and the quick check's sizes keep it to a few seconds.
CHECK_JSON=${GS_CHECK_OUT:-$ROOT/build/gpu-check.json}
CHECK_CMD=("${ENVS[@]}")
CHECK_ARGS=()
if [ $SIM = 1 ]; then
    CHECK_CMD+=(SIMCUDA_COPY_DATA=0 "SIMCUDA_DEVICE_NAME=NVIDIA H100 80GB HBM3" SIMCUDA_PCIE=5x16
                SIMCUDA_PCIE_MAX=5x16 SIMCUDA_H2D_PINNED_GBPS=50 SIMCUDA_D2H_GBPS=50
                SIMCUDA_D2D_GBPS=1450 SIMCUDA_GEMM_FP32_TFLOPS=52 SIMCUDA_GEMM_BF16_TFLOPS=760)
    CHECK_ARGS=(--quick --copy-size 16M --gemm-size 4096)
fi
if bounded 200 "${CHECK_CMD[@]}" "$GS" check "${CHECK_ARGS[@]}" -o "$CHECK_JSON" "$ROOT" \
    >"$WORK/check.out" 2>"$WORK/check.err"; then
    sed 's/^/   /' "$WORK/check.out"
    if grep -q '^gpu\.card ' "$WORK/check.out"; then
        result PASS "gpustarve check (its lines above, for docs/gpu-validation.md; JSON: $CHECK_JSON)"
    else
        result FAIL "gpustarve check (no GPU line: $(grep '^gpu ' "$WORK/check.out"))"
    fi
else
    sed 's/^/   | /' "$WORK/check.err" | tail -10
    result FAIL "gpustarve check"
fi

# ---- 4. the advice truth tests on this machine's cores ------------------------------------
# prints "PATH TORCH_VERSION" of the first Python with torch, numpy and pytest
find_truth_python() {
    local v
    for py in "${GS_TRUTH_PYTHON:-}" python3 /usr/bin/python3; do
        [ -n "$py" ] && command -v "$py" >/dev/null 2>&1 || continue
        if v=$(bounded 60 "$py" -c 'import torch, numpy, pytest; print(torch.__version__)' 2>/dev/null); then
            echo "$(command -v "$py") $v"
            return 0
        fi
    done
    return 1
}
if [ $TRUTH = 1 ]; then
    if found=$(find_truth_python); then
        TPY=${found%% *}
        echo "   truth tests: $(nproc) CPUs online, $(grep -c ^processor /proc/cpuinfo) in /proc/cpuinfo;" \
            "$TPY, torch ${found#* }"
        mkdir -p "$WORK/truth-tmp"
        bounded $(( $(left) - 10 )) env -u LD_PRELOAD GS_TRUTH_ALL=1 GS_TRUTH_PYTHON="$TPY" \
            GS_TRUTH_LOG="$WORK/truth.jsonl" "$TPY" -m pytest -v -rfEs -p no:cacheprovider \
            --basetemp="$WORK/truth-tmp" tests/e2e/test_advice_truth.py >"$WORK/truth.out" 2>&1
        [ -f "$WORK/truth.jsonl" ] && "$TPY" tests/gpu/truth_summary.py "$WORK/truth.jsonl"
        for regime in $("$TPY" -c 'import sys; sys.path[:0] = ["tests", "tests/e2e"]
import test_advice_truth as t; print(" ".join(t.REGIMES))'); do
            line=$(grep -m1 -F "::test_advice_holds[$regime] " "$WORK/truth.out")
            case $line in
            *" PASSED"*) result PASS "truth $regime" ;;
            *" SKIPPED"*) result SKIP "truth $regime (${line#* SKIPPED })" ;;
            *)
                grep -F "[$regime]" "$WORK/truth.out" | grep -E '^(FAILED|ERROR)' | cut -c1-400 |
                    sed 's/^/   | /'
                result FAIL "truth $regime" ;;
            esac
        done
        tail -3 "$WORK/truth.out" | sed 's/^/   | /'
    else
        result SKIP "truth (no Python with torch, numpy and pytest; set GS_TRUTH_PYTHON)"
    fi
fi

echo
echo "summary ($(( $(date +%s) - START )) s):"
for r in "${RESULTS[@]}"; do echo "  $r"; done
if [ $FAILED = 0 ]; then
    echo "PASS"
    exit 0
fi
echo "FAIL ($FAILED failed)"
exit 1
