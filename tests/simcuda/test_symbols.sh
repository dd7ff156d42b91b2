#!/bin/sh
# test_symbols.sh CUDA_HOME — in every mode, the simulated libraries carry
# the real sonames and version nodes, export nothing the real libraries lack
# (apart from the private __simcuda_* link), and every symbol an nvcc-built
# example imports from libcudart is there. The real libraries compared with:
# the toolkit's (13.0; the driver against its stub), and the pinned wheels
# of `make gpu-wheels` (12.9, 13.2) where they are.
# Env: BUILD, SIMCUDA_DIR, GPU_WHEELS.
set -u
CUDA_HOME=${1:-/usr/local/cuda}
BUILD=${BUILD:-build}
SIMCUDA_DIR=${SIMCUDA_DIR:-$BUILD/simcuda}
GPU_WHEELS=${GPU_WHEELS:-$BUILD/wheels}
pass=0 fail=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
check() {
    if [ "$2" -eq 0 ]; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL symbols: $1" >&2; fi
}
exports() {  # exports LIB VERSION -> sorted names defined under VERSION ("Base": unversioned)
    objdump -T "$1" | awk -v v="$2" 'NF >= 3 && $0 !~ /UND/ && ($(NF-1) == v || (v == "Base" && $(NF-1) ~ /^(Base|\(Base\))$/)) { print $NF }' | sort -u
}
# lib_check OURS REAL NAME VERSION [MIN]: MIN exports at least (default 11)
lib_check() {
    ours=$1 real=$2 lib=$3 ver=$4 min=${5:-11}
    [ -e "$ours" ] || { echo "  SKIP    symbols: $ours not built"; return; }
    check "$ours soname" "$(objdump -p "$ours" | grep -q "SONAME *$lib\$"; echo $?)"
    if [ "$ver" != Base ]; then
        check "$ours version node" "$(objdump -p "$ours" | grep -q "0x01 .* $ver\$"; echo $?)"
    fi
    n=$(exports "$ours" "$ver" | wc -l)
    check "$ours exports under version $ver ($n)" "$( [ "$n" -ge "$min" ]; echo $?)"
    if [ -e "$real" ]; then
        exports "$real" "$ver" > "$tmp/real"
        extra=$(exports "$ours" "$ver" | grep -v '^__simcuda_' | comm -23 - "$tmp/real" | tr '\n' ' ')
        check "$ours exports only names of $real (extra: $extra)" "$( [ -z "$extra" ]; echo $?)"
    else
        echo "  SKIP    symbols: no $real to compare $ours with"
    fi
}
real13() { [ -e "$CUDA_HOME/lib64/$1" ] && echo "$CUDA_HOME/lib64/$1" || echo "$CUDA_HOME/lib/$1"; }
W12=$GPU_WHEELS/cu12/nvidia
W13=$GPU_WHEELS/cu13/nvidia/cu13/lib
lib_check "$SIMCUDA_DIR/libcudart.so.13" "$(real13 libcudart.so.13)" libcudart.so.13 libcudart.so.13
lib_check "$SIMCUDA_DIR/libcupti.so.13" "$(real13 libcupti.so.13)" libcupti.so.13 libcupti.so.13
lib_check "$SIMCUDA_DIR/cu12/libcudart.so.12" "$W12/cuda_runtime/lib/libcudart.so.12" libcudart.so.12 libcudart.so.12
lib_check "$SIMCUDA_DIR/cu12/libcupti.so.12" "$W12/cuda_cupti/lib/libcupti.so.12" libcupti.so.12 libcupti.so.12
lib_check "$SIMCUDA_DIR/cu13.2/libcudart.so.13" "$W13/libcudart.so.13" libcudart.so.13 libcudart.so.13
lib_check "$SIMCUDA_DIR/cu13.2/libcupti.so.13" "$W13/libcupti.so.13" libcupti.so.13 libcupti.so.13
# the check's libraries (13.0 mode): cuBLAS and NCCL against the toolkit's;
# no NVML comes without a driver, so only its soname is checked
lib_check "$SIMCUDA_DIR/libcublas.so.13" "$(real13 libcublas.so.13)" libcublas.so.13 libcublas.so.13 6
lib_check "$SIMCUDA_DIR/libnccl.so.2" "$(real13 libnccl.so.2)" libnccl.so.2 Base 6
if [ -e "$SIMCUDA_DIR/libnvidia-ml.so.1" ]; then
    check "libnvidia-ml.so.1 soname" "$(objdump -p "$SIMCUDA_DIR/libnvidia-ml.so.1" | grep -q "SONAME *libnvidia-ml.so.1\$"; echo $?)"
fi
for d in "$SIMCUDA_DIR" "$SIMCUDA_DIR/cu12" "$SIMCUDA_DIR/cu13.2"; do
    [ -e "$d/libcuda.so.1" ] || continue
    check "$d/libcuda.so.1 soname" "$(objdump -p "$d/libcuda.so.1" | grep -q "SONAME *libcuda.so.1\$"; echo $?)"
    stub=$CUDA_HOME/lib64/stubs/libcuda.so
    if [ -e "$stub" ]; then
        nm -D --defined-only "$stub" | awk '{ print $NF }' | sort -u > "$tmp/stub"
        extra=$(nm -D --defined-only "$d/libcuda.so.1" | awk '{ print $NF }' | grep -v '^__simcuda_\|^_init$\|^_fini$' |
                sort -u | comm -23 - "$tmp/stub" | tr '\n' ' ')
        check "$d/libcuda.so.1 exports only names of the driver stub (extra: $extra)" "$( [ -z "$extra" ]; echo $?)"
    fi
done
if [ -x "$BUILD/examples/train_loop" ]; then
    exports "$SIMCUDA_DIR/libcudart.so.13" libcudart.so.13 > "$tmp/ours"
    missing=$(nm -D "$BUILD/examples/train_loop" | awk '$1 == "U" && $2 ~ /@libcudart\.so\.13$/ { sub(/@.*/, "", $2); print $2 }' |
              sort -u | comm -23 - "$tmp/ours")
    check "train_loop imports all exported (missing: $missing)" "$( [ -z "$missing" ]; echo $?)"
fi
echo "$pass passed, $fail failed (symbols)"
[ "$fail" -eq 0 ]
