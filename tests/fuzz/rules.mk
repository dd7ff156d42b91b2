# Fuzz harnesses (libFuzzer, clang): built by the top-level Makefile (included
# from it). fuzz_reader drives the trace reader, fuzz_cmds every command that
# loads traces (dump, report, compare) in-process; both under ASan + UBSan.
# tests/fuzz/run.sh runs them: a bounded run in `make test` (test-fuzz), a
# longer one on demand (`make fuzz FUZZ_SECONDS=600`).
FUZZ_CC    ?= clang
FUZZ_CXX   ?= clang++
FUZZ_OUT   := $(BUILD)/fuzz
FUZZ_FLAGS := -std=gnu11 -g -O1 -D_GNU_SOURCE -Wall -Wextra -Wno-unused-parameter \
              -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all -Itrace
FUZZ_BINS  := $(FUZZ_OUT)/fuzz_reader $(FUZZ_OUT)/fuzz_cmds
FUZZ_SECONDS ?= 600

.PHONY: fuzz-bins test-fuzz fuzz
fuzz-bins: $(FUZZ_BINS)

# mk_hostile writes tests/fuzz/regress/ (built with the tools: make tool-bins)
tool-bins: $(BUILD)/tests/mk_hostile
$(BUILD)/tests/mk_hostile: tests/fuzz/mk_hostile.c $(TRACE_SRC) $(wildcard trace/*.h)
	@mkdir -p $(dir $@)
	@echo "  CC      $@"
	$(Q)$(CC) $(CFLAGS_COMMON) -o $@ $< $(TRACE_SRC) $(LDLIBS_ZSTD) -lm

$(FUZZ_OUT)/fuzz_reader: tests/fuzz/fuzz_reader.c $(TRACE_SRC) $(wildcard trace/*.h)
	@mkdir -p $(dir $@)
	@echo "  CC(fuzz) $@"
	$(Q)$(FUZZ_CC) $(FUZZ_FLAGS) -o $@ $< $(TRACE_SRC) $(LDLIBS_ZSTD)

# the import command's C++ JSON reader, built with the fuzzer's sanitizers
FUZZ_CXX_OBJ := $(patsubst %.cpp,$(FUZZ_OUT)/%.o,$(ANALYZER_CXX_SRC))
$(FUZZ_OUT)/%.o: %.cpp $(wildcard trace/*.h) $(AN_HDR)
	@mkdir -p $(dir $@)
	@echo "  CXX(fuzz) $<"
	$(Q)$(FUZZ_CXX) -std=c++17 -g -O1 -D_GNU_SOURCE -Itrace -Iimport -fno-exceptions \
	    -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize=vptr,function -fno-sanitize-recover=all \
	    -c $< -o $@

$(FUZZ_OUT)/fuzz_cmds: tests/fuzz/fuzz_cmds.c $(TRACE_SRC) $(filter-out analyzer/cmd/main.c,$(ANALYZER_SRC)) $(FUZZ_CXX_OBJ) $(wildcard trace/*.h) $(AN_HDR)
	@mkdir -p $(dir $@)
	@echo "  CC(fuzz) $@"
	$(Q)$(FUZZ_CC) $(FUZZ_FLAGS) -Ianalyzer -Iimport -pthread -o $@ $< $(TRACE_SRC) \
	    $(filter-out analyzer/cmd/main.c,$(ANALYZER_SRC)) $(FUZZ_CXX_OBJ) $(LDLIBS_AN) $(LDLIBS_IMPORT)

## test-fuzz: the fuzz harnesses over the committed traces and hostile files, then a bounded run
test-fuzz: $(FUZZ_BINS)
	$(Q)BUILD=$(BUILD) PYTHON=$(PYTHON) tests/fuzz/run.sh test

## fuzz: a longer fuzz run of each harness (FUZZ_SECONDS each, default 600), seeded with the committed traces
fuzz: $(FUZZ_BINS)
	$(Q)BUILD=$(BUILD) PYTHON=$(PYTHON) FUZZ_SECONDS=$(FUZZ_SECONDS) tests/fuzz/run.sh long
