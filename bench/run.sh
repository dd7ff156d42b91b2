#!/bin/sh
# bench/run.sh — `make bench`: runs every benchmark and prints its figures.
# A figure worth keeping becomes a row of bench/results/*.jsonl, with its date,
# commit, machine and load (docs/performance.md; bench/results/show.py).
set -eu
"${PYTHON:-/usr/bin/python3}" bench/bench_cuda.py
"${PYTHON:-/usr/bin/python3}" bench/bench_stacks.py
"${PYTHON:-/usr/bin/python3}" bench/bench_report.py
"${PYTHON:-/usr/bin/python3}" bench/bench_import.py
"${PYTHON:-/usr/bin/python3}" bench/bench_cost.py
"${PYTHON:-/usr/bin/python3}" bench/bench_worker_fetch.py # a DataLoader worker's batch markers
"${PYTHON:-/usr/bin/python3}" bench/bench_next.py        # what a DataLoader next() pays in the trainer
"${PYTHON:-/usr/bin/python3}" bench/bench_pyfork.py      # what each forked Python worker pays
build/bench/clock_cost # two clock reads are in every hooked call
# the threads' own clocks: a batch boundary's sample, periodic sampling
# (docs/performance.md, "Thread CPU samples")
d=$(mktemp -d)
build/gpustarve run -o "$d/run" -- build/bench/cpustat_cost 16 5
rm -rf "$d"
exec "${PYTHON:-/usr/bin/python3}" bench/bench_collector.py "$@"
