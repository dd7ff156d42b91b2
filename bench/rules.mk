# Benchmarks: built by the top-level Makefile (included from it).
BENCH_BINS := $(BUILD)/bench/pread_loop
.PHONY: bench-bins
bench-bins: $(BENCH_BINS)
$(BUILD)/bench/pread_loop: bench/pread_loop.c bench/bench_median.h bench/bench_clock.h
	@mkdir -p $(dir $@)
	@echo "  CC      $@"
	$(Q)$(CC) $(CSTD) $(WARN) -O2 -pthread -o $@ $<

# cpustat_cost: the threads' own clocks: a batch boundary's CPU sample and
# the periodic sampling of idle threads (docs/performance.md).
BENCH_BINS += $(BUILD)/bench/cpustat_cost
bench-bins: $(BUILD)/bench/cpustat_cost
$(BUILD)/bench/cpustat_cost: bench/cpustat_cost.c bench/bench_median.h bench/bench_clock.h include/gpustarve.h
	@mkdir -p $(dir $@)
	@echo "  CC      $@"
	$(Q)$(CC) $(CSTD) $(WARN) -O2 -Iinclude -pthread -o $@ $< -ldl

# bench_cuda: the cudaMemcpyAsync hook's cost on the simulated runtime (needs
# the CUDA headers and build/simcuda; skipped without them).
ifneq ($(HAVE_CUPTI),)
BENCH_BINS += $(BUILD)/bench/bench_cuda
bench-bins: $(BUILD)/bench/bench_cuda
$(BUILD)/bench/bench_cuda: bench/bench_cuda.c bench/bench_median.h bench/bench_clock.h $(BUILD)/simcuda/libcudart.so.13
	@mkdir -p $(dir $@)
	@echo "  CC      $@"
	$(Q)$(CC) $(CSTD) $(WARN) -O2 -isystem $(CUDA_HOME)/include -o $@ $< \
	    $(BUILD)/simcuda/libcudart.so.13 -ldl
endif

# gen_bigtrace: large generated runs for bench/bench_report.py (report
# throughput and peak memory); written through the trace API.
BENCH_BINS += $(BUILD)/bench/gen_bigtrace
bench-bins: $(BUILD)/bench/gen_bigtrace
$(BUILD)/bench/gen_bigtrace: bench/gen_bigtrace.c $(TRACE_SRC) $(wildcard trace/*.h)
	@mkdir -p $(dir $@)
	@echo "  CC      $@"
	$(Q)$(CC) $(CFLAGS_COMMON) -o $@ $< $(TRACE_SRC) $(LDLIBS_ZSTD) -lm

# json_libs: the JSON libraries the import's parser was chosen against
# (docs/import.md); built only when their -dev packages are installed.
ifneq ($(wildcard /usr/include/yajl/yajl_parse.h /usr/include/cjson/cJSON.h /usr/include/json-c/json.h),)
BENCH_BINS += $(BUILD)/bench/json_libs
bench-bins: $(BUILD)/bench/json_libs
$(BUILD)/bench/json_libs: bench/json_libs.c
	@mkdir -p $(dir $@)
	@echo "  CC      $@"
	$(Q)$(CC) $(CSTD) $(WARN) -O2 -o $@ $< -lyajl -lcjson -ljson-c
endif

# frame_cost: the writer's encoding and zstd compression per event, by level,
# on the raw frames of a real trace (bench/bench_cost.py).
BENCH_BINS += $(BUILD)/bench/frame_cost
bench-bins: $(BUILD)/bench/frame_cost
$(BUILD)/bench/frame_cost: bench/frame_cost.c bench/bench_median.h bench/bench_clock.h $(TRACE_SRC) $(wildcard trace/*.h)
	@mkdir -p $(dir $@)
	@echo "  CC      $@"
	$(Q)$(CC) $(CFLAGS_COMMON) -o $@ $< $(TRACE_SRC) $(LDLIBS_ZSTD) -lm

# clock_cost: what one read of the hooks' clock costs (rdtsc, fenced forms,
# clock_gettime): two of them are in every hooked call.
BENCH_BINS += $(BUILD)/bench/clock_cost
bench-bins: $(BUILD)/bench/clock_cost
$(BUILD)/bench/clock_cost: bench/clock_cost.c bench/bench_clock.h
	@mkdir -p $(dir $@)
	@echo "  CC      $@"
	$(Q)$(CC) $(CSTD) $(WARN) -O2 -o $@ $<

# fork_cost: what a forked worker costs traced and untraced, its start and
# end, faults counted (bench/bench_collector.py, docs/performance.md
# "Forked workers").
BENCH_BINS += $(BUILD)/bench/fork_cost
bench-bins: $(BUILD)/bench/fork_cost
$(BUILD)/bench/fork_cost: bench/fork_cost.c
	@mkdir -p $(dir $@)
	@echo "  CC      $@"
	$(Q)$(CC) $(CSTD) $(WARN) -O2 -o $@ $<

# idle_thread.so: preloaded, it starts one thread that sleeps; what the
# presence of a second thread costs a program (bench_collector.py --only
# startup, docs/performance.md "A Python process's start, by part").
BENCH_BINS += $(BUILD)/bench/idle_thread.so
bench-bins: $(BUILD)/bench/idle_thread.so
$(BUILD)/bench/idle_thread.so: bench/idle_thread.c
	@mkdir -p $(dir $@)
	@echo "  CC      $@"
	$(Q)$(CC) $(CSTD) $(WARN) -O2 -fPIC -shared -pthread -o $@ $<
