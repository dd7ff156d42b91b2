# Benchmarks: built by the top-level Makefile (included from it).
.PHONY: bench-bins
bench-bins:
