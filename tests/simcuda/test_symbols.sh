#!/bin/sh
# test_symbols.sh CUDA_HOME — the simulated libraries carry the real sonames
# and version nodes, export nothing the real libraries lack (apart from the
# private __simcuda_* link), and every symbol an nvcc-built example imports
# from libcudart is there.  Env: BUILD, SIMCUDA_DIR.
set -u
CUDA_HOME=${1:-/usr/local/cuda}
BUILD=${BUILD:-build}
SIMCUDA_DIR=${SIMCUDA_DIR:-$BUILD/simcuda}
pass=0 fail=0
check() {
    if [ "$2" -eq 0 ]; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL symbols: $1" >&2; fi
}
exports() {  # exports LIB VERSION -> sorted names defined under VERSION
    objdump -T "$1" | awk -v v="$2" 'NF >= 3 && $0 !~ /UND/ && $(NF-1) == v { print $NF }' | sort -u
}
for lib in libcudart.so.13 libcupti.so.13; do
    ours=$SIMCUDA_DIR/$lib
    real=$CUDA_HOME/lib64/$lib
    [ -e "$real" ] || real=$CUDA_HOME/lib/$lib
    check "$lib soname" "$(objdump -p "$ours" | grep -q "SONAME *$lib\$"; echo $?)"
    check "$lib version node" "$(objdump -p "$ours" | grep -q "0x01 .* $lib\$"; echo $?)"
    n=$(exports "$ours" "$lib" | wc -l)
    check "$lib exports under version $lib ($n)" "$( [ "$n" -gt 10 ]; echo $?)"
    if [ -e "$real" ]; then
        extra=$(exports "$ours" "$lib" | grep -v '^__simcuda_' | comm -23 - "$(exports "$real" "$lib" > "$SIMCUDA_DIR/.real.$lib"; echo "$SIMCUDA_DIR/.real.$lib")")
        rm -f "$SIMCUDA_DIR/.real.$lib"
        check "$lib exports only real names (extra: $extra)" "$( [ -z "$extra" ]; echo $?)"
    fi
done
if [ -x "$BUILD/examples/train_loop" ]; then
    missing=$(nm -D "$BUILD/examples/train_loop" | awk '$1 == "U" && $2 ~ /@libcudart\.so\.13$/ { sub(/@.*/, "", $2); print $2 }' |
              sort -u | comm -23 - "$(exports "$SIMCUDA_DIR/libcudart.so.13" libcudart.so.13 > "$SIMCUDA_DIR/.ours"; echo "$SIMCUDA_DIR/.ours")")
    rm -f "$SIMCUDA_DIR/.ours"
    check "train_loop imports all exported (missing: $missing)" "$( [ -z "$missing" ]; echo $?)"
fi
echo "$pass passed, $fail failed (symbols)"
[ "$fail" -eq 0 ]
