#!/bin/bash
# run.sh test|long — run the fuzz harnesses (tests/fuzz/rules.mk).
#
# Both modes first replay every committed input once: tests/data/ (traces of
# every format version, live files given to fuzz_reader with their 'L'
# prefix) and tests/fuzz/regress/ (hostile files that once crashed, hung or
# exhausted memory: each must now load within the limits; live-*.bin are
# live files with their 'L' already; import-*.json are PyTorch profiler
# documents whose numbers once overflowed, or whose nameless copy once gave
# memchr a NULL pointer), and fuzz_cmds also small
# PyTorch profiler traces for import (seed() below). Then:
#   test  a bounded, seeded run of each harness (a fixed number of inputs,
#         -seed=1): part of `make test`
#   long  FUZZ_SECONDS per harness (`make fuzz`); new inputs that reach new
#         code are kept in build/fuzz/corpus-*, crashes in build/fuzz/
# Limits: 10 s per input, 2 GiB of memory: a hostile file of a few hundred
# bytes must not cost more.
set -u
BUILD=${BUILD:-build}
OUT=$BUILD/fuzz
mode=${1:-test}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
limits=(-timeout=10 -rss_limit_mb=2048 -close_fd_mask=3)
fail=0

# corpus-<target>: the seeds (file names are content hashes, so reruns do not
# pile up copies). RATIONALE: inputs above 64 KiB (the 200,000-thread and
# 100,000-stream files) make slow seeds under the sanitizers; the e2e test
# test_hostile_trace_costs_bounded_time_and_memory runs them through the CLI.
seed() {
    local target=$1 dir=$OUT/corpus-$1
    mkdir -p "$dir"
    for f in "$root"/tests/data/v*/*.gst "$root"/tests/fuzz/regress/*; do
        [ -f "$f" ] && [ "$(stat -c %s "$f")" -le 65536 ] || continue
        cp "$f" "$dir/seed-$(sha1sum <"$f" | cut -c1-16)"
    done
    if [ "$target" = fuzz_cmds ]; then
        # small PyTorch profiler traces, for the import command: a synthetic
        # one (tests/import/mkkineto.py) gzip-, xz- and zstd-compressed, and
        # the small real ones when they are beside the repository
        # (tests/import/real_traces.py; GS_REAL_TRACES=DIR)
        local gen=$OUT/import-seeds real
        real=${GS_REAL_TRACES:-$root/../shared/data/real-gpu-traces}
        mkdir -p "$gen"
        "${PYTHON:-/usr/bin/python3}" "$root/tests/import/mkkineto.py" --steps 2 "$gen/t.json" &&
            gzip -n -c "$gen/t.json" >"$gen/t.json.gz" &&
            "${PYTHON:-/usr/bin/python3}" -c 'import lzma, sys; sys.stdout.buffer.write(lzma.compress(open(sys.argv[1], "rb").read()))' \
                "$gen/t.json" >"$gen/t.json.xz" &&
            zstd -q -f "$gen/t.json" -o "$gen/t.json.zst" ||
            echo "  note    $target: synthetic import seeds not made"
        for f in "$gen"/t.json* "$real"/*.json.gz; do
            [ -f "$f" ] && [ "$(stat -c %s "$f")" -le 65536 ] || continue
            cp "$f" "$dir/seed-import-$(sha1sum <"$f" | cut -c1-16)"
        done
    fi
    if [ "$target" = fuzz_reader ]; then
        for f in "$root"/tests/data/v*/*.live; do
            [ -f "$f" ] || continue
            { printf L; cat "$f"; } >"$dir/seed-live-$(sha1sum <"$f" | cut -c1-16)"
        done
    fi
}

for t in fuzz_reader fuzz_cmds; do
    seed "$t"
    # every seed and regression input, once
    if ! "$OUT/$t" "${limits[@]}" "$OUT/corpus-$t"/seed-* >"$OUT/$t.replay.log" 2>&1; then
        echo "  FAIL    $t (committed inputs)"; tail -30 "$OUT/$t.replay.log"; fail=1; continue
    fi
    echo "  ok      $t: $(ls "$OUT/corpus-$t"/seed-* | wc -l) committed inputs load within the limits"
    if [ "$mode" = long ]; then
        args=(-max_total_time="${FUZZ_SECONDS:-600}" -print_final_stats=1)
    else
        # RATIONALE: a count, not a time: the same inputs on a busy machine
        args=(-runs="${FUZZ_RUNS:-3000}" -seed=1)
    fi
    if "$OUT/$t" "${limits[@]}" "${args[@]}" -artifact_prefix="$OUT/$t-" "$OUT/corpus-$t" \
        >"$OUT/$t.log" 2>&1; then
        echo "  ok      $t: $(grep -Eo '#[0-9]+' "$OUT/$t.log" | tail -1 | tr -d '#') inputs, no crash, leak, hang or sanitizer report"
    else
        echo "  FAIL    $t (see $OUT/$t.log; the input is $OUT/$t-*)"; tail -40 "$OUT/$t.log"; fail=1
    fi
done
exit $fail
