# Hook tests: built by the top-level Makefile (included from it).
.PHONY: hook-bins
hook-bins:
test-hooks: hook-bins
