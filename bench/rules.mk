# Benchmarks: built by the top-level Makefile (included from it).
BENCH_BINS := $(BUILD)/bench/pread_loop
.PHONY: bench-bins
bench-bins: $(BENCH_BINS)
$(BUILD)/bench/pread_loop: bench/pread_loop.c
	@mkdir -p $(dir $@)
	@echo "  CC      $@"
	$(Q)$(CC) $(CSTD) $(WARN) -O2 -o $@ $<
