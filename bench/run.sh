#!/bin/sh
# bench/run.sh — `make bench`: runs every benchmark and prints its figures.
set -eu
"${PYTHON:-/usr/bin/python3}" bench/bench_cuda.py
"${PYTHON:-/usr/bin/python3}" bench/bench_stacks.py
"${PYTHON:-/usr/bin/python3}" bench/bench_report.py
"${PYTHON:-/usr/bin/python3}" bench/bench_import.py
"${PYTHON:-/usr/bin/python3}" bench/bench_cost.py
exec "${PYTHON:-/usr/bin/python3}" bench/bench_collector.py "$@"
