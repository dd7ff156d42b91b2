# Examples: built by the top-level Makefile (included from it).
.PHONY: example-bins
example-bins:
