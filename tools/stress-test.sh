#!/bin/sh
# tools/stress-test.sh — run the whole test suite several times in a row with
# CPU burners beside it, to show that no test depends on an idle machine
# (docs/testing.md).
#
#   tools/stress-test.sh [RUNS [BURNERS]]     default: 3 runs, 2 burners
#
# Each burner is a shell busy loop at the tests' own priority. Each run is
# `make -k test` (every target runs, so one failure does not hide others);
# its output goes to $LOGDIR/run-N.log (LOGDIR defaults to a new directory
# under ${TMPDIR:-/tmp}). Prints one line per run and exits 0 only when every
# run passed. A round worth keeping becomes rows of bench/results/stress.jsonl
# (commit, date, machine, result, duration; docs/testing.md, "The stress check").
set -u
RUNS=${1:-3}
BURNERS=${2:-2}
cd "$(dirname "$0")/.." || exit 2
LOGDIR=${LOGDIR:-$(mktemp -d "${TMPDIR:-/tmp}/gs-stress.XXXXXX")}
mkdir -p "$LOGDIR"

pids=""
stop_burners() {
    for p in $pids; do kill "$p" 2>/dev/null; done
    pids=""
}
trap stop_burners EXIT
trap 'stop_burners; exit 130' INT TERM
i=0
while [ "$i" -lt "$BURNERS" ]; do
    sh -c 'while :; do :; done' &
    pids="$pids $!"
    i=$((i + 1))
done

echo "stress-test: $RUNS runs of make -k test beside $BURNERS CPU burners on $(nproc) CPUs; logs in $LOGDIR"
failed=0
n=1
while [ "$n" -le "$RUNS" ]; do
    start=$(date +%s)
    make -k test >"$LOGDIR/run-$n.log" 2>&1
    rc=$?
    secs=$(($(date +%s) - start))
    if [ "$rc" = 0 ]; then
        echo "run $n: passed ($secs s)"
    else
        failed=$((failed + 1))
        echo "run $n: FAILED, exit status $rc ($secs s); failures:"
        grep -E '^(FAILED|FAIL|  FAIL) |^FAIL |[0-9]+ failed' "$LOGDIR/run-$n.log" | sed 's/^/    /'
    fi
    n=$((n + 1))
done
echo "stress-test: $((RUNS - failed)) of $RUNS runs passed"
[ "$failed" = 0 ]
