# gpustarve — top-level build.  `make help` lists the targets.
#
# Layout (docs/architecture.md): trace/ is used by preload/, cupti/ and
# analyzer/; preload/ and cupti/ meet through sink/; the analyzer and the
# collector never include each other (make check-deps checks every #include).
# Everything is built under build/.

PREFIX   ?= /usr/local
BUILD    ?= build
CC       ?= cc
PYTHON   ?= /usr/bin/python3

ifeq ($(V),1)
Q :=
else
Q := @
endif

WARN     := -Wall -Wextra -Werror -Wno-unused-parameter
CSTD     := -std=gnu11
OPT      ?= -O2 -g
CFLAGS_COMMON := $(CSTD) $(WARN) $(OPT) -D_GNU_SOURCE -Itrace
LDLIBS_ZSTD   := -lzstd
# the analyzer: __cxa_demangle for kernel names (analyzer/load/an_kernels.c)
LDLIBS_AN     := $(LDLIBS_ZSTD) -lm -lstdc++

CUDA_HOME    ?= /usr/local/cuda
# The real CUDA runtime and CUPTI wheels from PyPI the GPU tests load (make
# gpu-wheels): CUDA 12.9 (cu12) and 13.2 (cu13), pinned.
GPU_WHEELS   ?= $(BUILD)/wheels
TRACE_SRC    := $(wildcard trace/*.c)
PRELOAD_SRC  := $(wildcard preload/*.c)
# cupti/ is compiled into the same .so when the CUDA headers are found; it
# loads libcupti at run time (nothing links CUDA).
HAVE_CUPTI   := $(if $(wildcard $(CUDA_HOME)/include/cupti_activity.h),1,)
CUPTI_SRC    := $(if $(HAVE_CUPTI),$(wildcard cupti/*.c),)
# The analyzer in layers (docs/architecture.md, "The analyzer's layers"):
# base/ <- load/ <- model/ -> decide/ -> base/; report/ over model/; machine/
# (what `check` measures) on base/ only; cmd/ on top. AN_LIB_SRC is the
# analysis library (no writer, no command), which the unit tests link; the
# importer (import/) is a part of its own.
AN_LIB_DIRS  := analyzer/base analyzer/load analyzer/decide analyzer/model analyzer/machine
AN_LIB_SRC   := $(wildcard $(addsuffix /*.c,$(AN_LIB_DIRS)))
REPORT_SRC   := $(wildcard analyzer/report/*.c)
CMD_SRC      := $(wildcard analyzer/cmd/*.c)
IMPORT_SRC   := $(wildcard import/*.c)
ANALYZER_SRC := $(AN_LIB_SRC) $(REPORT_SRC) $(CMD_SRC) $(IMPORT_SRC)
AN_HDR       := $(wildcard analyzer/*/*.h import/*.h)
# The one C++ file: the importer's JSON reader (simdjson), see
# import/import_json.cpp for why.
ANALYZER_CXX_SRC := $(wildcard import/*.cpp)
CXX      ?= g++
CXXFLAGS_IMPORT := -std=c++17 $(WARN) $(OPT) -D_GNU_SOURCE -Itrace -Iimport -fno-exceptions
LDLIBS_IMPORT   := -lsimdjson -lz -llzma -lstdc++

TRACE_PIC_OBJ := $(patsubst %.c,$(BUILD)/pic/%.o,$(TRACE_SRC))
PRELOAD_OBJ   := $(patsubst %.c,$(BUILD)/pic/%.o,$(PRELOAD_SRC) $(CUPTI_SRC))
TRACE_OBJ     := $(patsubst %.c,$(BUILD)/obj/%.o,$(TRACE_SRC))
ANALYZER_OBJ  := $(patsubst %.c,$(BUILD)/obj/%.o,$(ANALYZER_SRC)) \
                 $(patsubst %.cpp,$(BUILD)/obj/%.o,$(ANALYZER_CXX_SRC))

LIB := $(BUILD)/libgpustarve.so
CLI := $(BUILD)/gpustarve
# The Python side's frame-free call wrapper (python/gpustarve/_cwrap.c), a
# CPython extension built against the limited API (abi3) with Debian's
# python3-dev headers; found next to libgpustarve.so. Without the headers it
# is not built and the Python side uses its Python wrappers (docs/python.md).
# One start of $(PYTHON) at parse time gives its bytecode cache tag ("-":
# none) and its include folder.
PY_INFO    := $(shell $(PYTHON) -c 'import sys, sysconfig; print(sys.implementation.cache_tag or "-", sysconfig.get_paths()["include"])' 2>/dev/null)
PY_INCLUDE := $(wordlist 2,$(words $(PY_INFO)),$(PY_INFO))
HAVE_PYDEV := $(if $(wildcard $(PY_INCLUDE)/Python.h),1,)
CWRAP      := $(if $(HAVE_PYDEV),$(BUILD)/gpustarve_cwrap.abi3.so,)
# The Python side's bytecode, compiled beside its sources (python/**/__pycache__,
# ignored by git) so that no traced Python process compiles it at start-up:
# it cost the trainer of a torch program 5 ms a start (docs/python.md, "How
# it is loaded"). checked-hash: a source edited in the same second as its
# compile is still noticed. The targets are the .pyc files themselves (named
# by the interpreter's cache tag), so a removed __pycache__ is compiled
# again. Not built where there is no $(PYTHON).
PY_SRC     := python/sitecustomize.py $(wildcard python/gpustarve/*.py)
PYC_TAG    := $(filter-out -,$(firstword $(PY_INFO)))
PYC        := $(if $(PYC_TAG),$(foreach f,$(PY_SRC),$(dir $(f))__pycache__/$(basename $(notdir $(f))).$(PYC_TAG).pyc),)
PYC_FLAGS  := -q --invalidation-mode checked-hash
# what `make clean` removes of it (a test that runs clean names another)
PYCACHE    := $(addsuffix __pycache__,$(sort $(dir $(PY_SRC))))

# make -n (top level): the install step is all's first prerequisite, so
# that it is printed before any compile line ("Debian packages first")
DEPS_FIRST := $(if $(filter 0n,$(MAKELEVEL)$(findstring n,$(firstword -$(MAKEFLAGS)))),deps-would-install)

.PHONY: all
## all: install missing build packages, then build the CLI (build/gpustarve) and the preload library (build/libgpustarve.so)
all: $(DEPS_FIRST) $(LIB) $(CLI) $(CWRAP) $(PYC) unit-bins tool-bins hook-bins example-bins simcuda-bins cuda-example-bins

# ---- Debian packages first ------------------------------------------------
# What the goals need from Debian is installed while make reads this file,
# before any goal is considered: GNU make first brings every makefile it
# includes up to date, and when one changed it reads everything again. The
# rule below runs tools/deps.sh for the goals' package sets; the stamp it
# includes changes when something was installed (or on the first run).
# RATIONALE: not a prerequisite of the goals (`demo: deps all` starts the
# compiles beside the install under -j) nor an order-only one of every
# object (each new rule must remember it, and what is decided while this
# file is read -- the Python extension built with python3-dev's headers --
# would still be decided without the packages); the reread settles both.
# Sets: test for test, truth and test-*; check (the build's and pytest)
# for check; demo for demo and bench; fuzz;
# venv (python3-venv) for venv, gpu-wheels and peers; build for everything
# else; none for help and clean. Sub-makes, make -n/-q/-t and a reread
# install nothing (make -n prints the step first). DEPS_SH: the installer (the order test gives another;
# `make DEPS_SH=` installs nothing, for machines whose packages are kept
# by other means).
DEPS_SH    ?= ./tools/deps.sh
DEPS_GOALS := $(or $(MAKECMDGOALS),all)
DEPS_SETS  := $(strip $(if $(filter test truth test-%,$(DEPS_GOALS)),test) \
                      $(if $(filter check,$(DEPS_GOALS)),check) \
                      $(if $(filter demo bench,$(DEPS_GOALS)),demo) \
                      $(if $(filter fuzz,$(DEPS_GOALS)),fuzz) \
                      $(if $(filter venv gpu-wheels peers,$(DEPS_GOALS)),venv) \
                      $(if $(filter-out help clean check test truth test-% demo bench fuzz venv gpu-wheels peers,$(DEPS_GOALS)),build))
DEPS_EMPTY :=
DEPS_STAMP := $(BUILD)/.deps/$(subst $(DEPS_EMPTY) ,-,$(DEPS_SETS)).mk
ifneq ($(and $(DEPS_SETS),$(DEPS_SH)),)
ifeq ($(MAKELEVEL)$(findstring n,$(firstword -$(MAKEFLAGS)))$(findstring q,$(firstword -$(MAKEFLAGS)))$(findstring t,$(firstword -$(MAKEFLAGS))),0)
include $(DEPS_STAMP)
ifeq ($(MAKE_RESTARTS),)
$(DEPS_STAMP): FORCE
	$(Q)$(DEPS_SH) --stamp $@ $(DEPS_SETS)
endif
else ifneq ($(DEPS_FIRST),)
# make -n: the install step a real run takes before it compiles anything,
# printed (-n runs no recipe)
deps-would-install:
	$(DEPS_SH) --stamp $(DEPS_STAMP) $(DEPS_SETS)
endif
endif
.PHONY: deps-would-install
deps-would-install:
.PHONY: FORCE
FORCE:

# ---- preload library ----------------------------------------------------
# preload/ and cupti/ meet through sink/gs_sink.h only: cupti/ is compiled
# without -Ipreload, so a stray include of a collector header fails here.
PRELOAD_CFLAGS := $(CFLAGS_COMMON) -fPIC -fvisibility=hidden -Isink -Ipreload -pthread
CUPTI_CFLAGS   := $(CFLAGS_COMMON) -fPIC -fvisibility=hidden -Isink -Icupti -pthread \
                  -isystem $(CUDA_HOME)/include
$(BUILD)/pic/cupti/%.o: cupti/%.c $(wildcard trace/*.h sink/*.h cupti/*.h)
	@mkdir -p $(dir $@)
	@echo "  CC(pic) $<"
	$(Q)$(CC) $(CUPTI_CFLAGS) -c $< -o $@
$(BUILD)/pic/%.o: %.c $(wildcard trace/*.h sink/*.h preload/*.h)
	@mkdir -p $(dir $@)
	@echo "  CC(pic) $<"
	$(Q)$(CC) $(PRELOAD_CFLAGS) -c $< -o $@

# RATIONALE: a preloaded library's dependencies join the global scope that
# every symbol lookup of every library loaded later walks: with libzstd,
# libgcc_s, libunwind and liblzma there, `import torch` ran 33 M more
# instructions in the dynamic loader (docs/performance.md, "A Python
# process's start, by part"). So the library needs libc only: libzstd is
# linked in (its archive is position-independent; the version script keeps
# its symbols ours alone), and libunwind, whose archive is not, is not
# linked at all: `gpustarve run --stacks` preloads libgcc_s and libunwind
# after the library, and gs_stacks.c opens it otherwise.
LDLIBS_PRELOAD := -Wl,-Bstatic $(LDLIBS_ZSTD) -Wl,-Bdynamic -ldl
$(LIB): $(PRELOAD_OBJ) $(TRACE_PIC_OBJ) preload/libgpustarve.map
	@echo "  LD      $@"
	$(Q)$(CC) -shared -pthread -Wl,--version-script=preload/libgpustarve.map \
	    -Wl,-z,now -o $@ $(PRELOAD_OBJ) $(TRACE_PIC_OBJ) $(LDLIBS_PRELOAD)

# ---- Python extension (never linked with libpython: the interpreter that
# loads it provides the symbols) -------------------------------------------
$(BUILD)/gpustarve_cwrap.abi3.so: python/gpustarve/_cwrap.c
	@mkdir -p $(dir $@)
	@echo "  CC(py)  $@"
	$(Q)$(CC) $(CSTD) $(WARN) $(OPT) -fPIC -shared -fvisibility=hidden -isystem $(PY_INCLUDE) -o $@ $<

python/__pycache__/%.$(PYC_TAG).pyc: python/%.py
	@echo "  PYC     $<"
	$(Q)$(PYTHON) -m compileall $(PYC_FLAGS) $<

python/gpustarve/__pycache__/%.$(PYC_TAG).pyc: python/gpustarve/%.py
	@echo "  PYC     $<"
	$(Q)$(PYTHON) -m compileall $(PYC_FLAGS) $<

# ---- CLI ----------------------------------------------------------------
CLI_CFLAGS := $(CFLAGS_COMMON) -Ianalyzer -Iimport -pthread
$(BUILD)/obj/%.o: %.c $(wildcard trace/*.h) $(AN_HDR)
	@mkdir -p $(dir $@)
	@echo "  CC      $<"
	$(Q)$(CC) $(CLI_CFLAGS) -c $< -o $@

$(BUILD)/obj/%.o: %.cpp $(wildcard trace/*.h) $(AN_HDR)
	@mkdir -p $(dir $@)
	@echo "  CXX     $<"
	$(Q)$(CXX) $(CXXFLAGS_IMPORT) -c $< -o $@

# the datasheet table is assembled into the command (analyzer/machine/mc_datasheet.c)
$(BUILD)/obj/analyzer/machine/mc_datasheet.o $(BUILD)/san/obj/analyzer/machine/mc_datasheet.o: analyzer/machine/gpus.tsv

$(CLI): $(ANALYZER_OBJ) $(TRACE_OBJ)
	@echo "  LD      $@"
	$(Q)$(CC) -pthread -o $@ $^ $(LDLIBS_AN) $(LDLIBS_IMPORT)

# ---- unit tests (tests/unit/test_*.c, linked with trace/ and the analysis
# library AN_LIB_SRC, through one archive each build) -------------------------
AN_LIB    := $(BUILD)/libgs_analysis.a
$(AN_LIB): $(patsubst %.c,$(BUILD)/obj/%.o,$(TRACE_SRC) $(AN_LIB_SRC))
	@echo "  AR      $@"
	$(Q)rm -f $@ && ar rcs $@ $^
UNIT_DEPS := $(wildcard trace/*.h tests/unit/*.h) $(AN_HDR) tests/gs_check.h
UNIT_SRC  := $(wildcard tests/unit/test_*.c)
UNIT_BINS := $(patsubst tests/unit/%.c,$(BUILD)/tests/%,$(UNIT_SRC))
.PHONY: unit-bins
unit-bins: $(UNIT_BINS)
$(BUILD)/tests/test_%: tests/unit/test_%.c $(AN_LIB) $(UNIT_DEPS)
	@mkdir -p $(dir $@)
	@echo "  CC      $@"
	$(Q)$(CC) $(CFLAGS_COMMON) -Ianalyzer -Itests/unit -Itests -pthread -o $@ $< $(AN_LIB) $(LDLIBS_AN)
# test_clock includes the collector's clock file itself
$(BUILD)/tests/test_clock: preload/gs_clock.c preload/gs_clock.h preload/gs_preload.h

# Same tests built with AddressSanitizer + UBSan.
SAN_FLAGS  := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all
SAN_AN_LIB := $(BUILD)/san/libgs_analysis.a
$(BUILD)/san/obj/%.o: %.c $(wildcard trace/*.h) $(AN_HDR)
	@mkdir -p $(dir $@)
	@echo "  CC(san) $<"
	$(Q)$(CC) $(CLI_CFLAGS) -O1 $(SAN_FLAGS) -c $< -o $@
$(SAN_AN_LIB): $(patsubst %.c,$(BUILD)/san/obj/%.o,$(TRACE_SRC) $(AN_LIB_SRC))
	@echo "  AR(san) $@"
	$(Q)rm -f $@ && ar rcs $@ $^
SAN_BINS  := $(patsubst tests/unit/%.c,$(BUILD)/san/%,$(UNIT_SRC))
$(BUILD)/san/test_%: tests/unit/test_%.c $(SAN_AN_LIB) $(UNIT_DEPS)
	@mkdir -p $(dir $@)
	@echo "  CC(san) $@"
	$(Q)$(CC) $(CFLAGS_COMMON) -O1 $(SAN_FLAGS) -Ianalyzer -Itests/unit -Itests -pthread -o $@ $< $(SAN_AN_LIB) $(LDLIBS_AN)
$(BUILD)/san/test_clock: preload/gs_clock.c preload/gs_preload.h

# ---- test tools (tests/tools/*.c, linked with trace/) ---------------------
TOOL_BINS := $(BUILD)/tests/gs_mktrace $(BUILD)/tests/die_after_reads $(BUILD)/tests/pread_counted \
             $(BUILD)/tests/paced_steps $(BUILD)/tests/loader_parts
.PHONY: tool-bins
tool-bins: $(TOOL_BINS)
$(BUILD)/tests/die_after_reads: tests/tools/die_after_reads.c
	@mkdir -p $(dir $@)
	@echo "  CC      $@"
	$(Q)$(CC) $(CFLAGS_COMMON) -O0 -o $@ $<
$(BUILD)/tests/pread_counted: tests/tools/pread_counted.c
	@mkdir -p $(dir $@)
	@echo "  CC      $@"
	$(Q)$(CC) $(CFLAGS_COMMON) -pthread -o $@ $<
$(BUILD)/tests/paced_steps: tests/tools/paced_steps.c include/gpustarve.h
	@mkdir -p $(dir $@)
	@echo "  CC      $@"
	$(Q)$(CC) $(CFLAGS_COMMON) -Iinclude -o $@ $< -ldl
$(BUILD)/tests/loader_parts: tests/tools/loader_parts.c include/gpustarve.h
	@mkdir -p $(dir $@)
	@echo "  CC      $@"
	$(Q)$(CC) $(CFLAGS_COMMON) -Iinclude -pthread -o $@ $< -ldl
$(BUILD)/tests/gs_mktrace: tests/tools/gs_mktrace.c $(TRACE_SRC) $(wildcard trace/*.h)
	@mkdir -p $(dir $@)
	@echo "  CC      $@"
	$(Q)$(CC) $(CFLAGS_COMMON) -o $@ $< $(TRACE_SRC) $(LDLIBS_ZSTD) -lm

# ---- hook tests and examples (rules in their own folders) -----------------
include tests/hooks/rules.mk
include tests/simcuda/rules.mk
include examples/rules.mk
include examples/cuda.mk
include bench/rules.mk
include tests/fuzz/rules.mk
include tests/tsan/rules.mk

# ---- Python side: torch 2.x from PyPI, and its tests ---------------------------
VENV       ?= .venv
VENV_STAMP := $(VENV)/.gpustarve-installed
.PHONY: venv test-python
## venv: create .venv with current torch 2.x from PyPI (CUDA wheels: ~5.4 GB, ~70 s here; runs on CPU)
venv: $(VENV_STAMP)
$(VENV_STAMP):
	$(Q)rm -rf $(VENV)
	$(Q)$(PYTHON) -m venv $(VENV)
	$(Q)$(VENV)/bin/pip install -q torch numpy pillow pytest
	$(Q)touch $@

## test-python: Python side, C marker API and sweep (tests/python) with Debian's torch 1.13 and, when .venv exists, torch 2.x
test-python: $(LIB) $(CLI) $(PYC)
	$(Q)$(PYTHON) -m pytest -q -p no:cacheprovider tests/python $(PYTEST_ARGS)

# RATIONALE: pinned versions, so "real 12.x / 13.2 wheel" names one thing;
# --no-deps into a folder of their own, never into .venv.
GPU_WHEELS_CU12 := nvidia-cuda-runtime-cu12==12.9.79 nvidia-cuda-cupti-cu12==12.9.79
GPU_WHEELS_CU13 := nvidia-cuda-runtime==13.2.86 nvidia-cuda-cupti==13.2.86
.PHONY: gpu-wheels
## gpu-wheels: install the real CUDA 12.9 and 13.2 runtime + CUPTI wheels from PyPI into build/wheels/cu12, cu13 (~40 MB; for the no-driver and loading tests, and the 13.2 simulator headers)
gpu-wheels: $(GPU_WHEELS)/cu12/.installed $(GPU_WHEELS)/cu13/.installed
$(GPU_WHEELS)/cu12/.installed: $(VENV_STAMP)
	$(Q)rm -rf $(dir $@) && $(VENV)/bin/pip install -q --no-deps --target $(dir $@) $(GPU_WHEELS_CU12)
	$(Q)touch $@
$(GPU_WHEELS)/cu13/.installed: $(VENV_STAMP)
	$(Q)rm -rf $(dir $@) && $(VENV)/bin/pip install -q --no-deps --target $(dir $@) $(GPU_WHEELS_CU13)
	$(Q)touch $@

# ---- test ----------------------------------------------------------------
.PHONY: test test-unit test-san test-hooks test-cli test-analyzer test-e2e check-deps
## test: install missing test packages, .venv (torch 2.x) and the CUDA wheels, then run every test CI runs
test: all venv gpu-wheels
	$(Q)$(MAKE) --no-print-directory check-deps check-cycles test-unit test-san test-hooks test-simcuda test-cli test-analyzer test-check test-import test-e2e test-python test-fuzz test-san-collector test-tsan

# The fast loop before each commit: what needs no .venv, no wheel and no
# program traced under a sanitizer. RATIONALE: the build runs on every CPU
# whatever -j the caller gave, so `make check` alone is as fast as it can be.
CHECK_BINS := $(CLI) $(LIB) $(UNIT_BINS) $(TOOL_BINS)
.PHONY: check check-cycles
## check: the fast loop (51 s from a clean build on the quiet 2-CPU VM, about 3 minutes beside other builds): build, dependency arrows and circles, unit, analyzer and CLI tests; installs the build packages and pytest where missing; no .venv, no wheel
check:
	$(Q)$(MAKE) --no-print-directory -j$$(nproc) $(CHECK_BINS)
	$(Q)$(MAKE) --no-print-directory check-deps check-cycles test-unit test-analyzer test-cli

# The one circle of calls allowed in the collector: its lazy start-up.
# Start-up calls the lifecycle's set-up (gs_lifecycle_init), and the exec
# hook's failure path (gs_exec_failed) records through gs_enter, which starts
# the collector when no constructor has yet (gs_enter_slow;
# docs/architecture.md, "Dependencies"). Nothing else may join it.
CYCLES_ALLOW_COLLECTOR := preload/gs_lifecycle.c,preload/gs_startup.c
## check-cycles: no circle of calls between the analyzer's, importer's and trace reader's files, nor the collector's but its lazy start-up (nm over their objects)
check-cycles: $(ANALYZER_OBJ) $(TRACE_OBJ) $(PRELOAD_OBJ) $(TRACE_PIC_OBJ)
	$(Q)$(PYTHON) tools/check-cycles.py --self-test
	$(Q)$(PYTHON) tools/check-cycles.py $(filter $(BUILD)/obj/%.o,$^)
	$(Q)$(PYTHON) tools/check-cycles.py --allow $(CYCLES_ALLOW_COLLECTOR) $(filter $(BUILD)/pic/%.o,$^)

## check-deps: every #include follows the arrows between the parts (docs/architecture.md), a reversed arrow is caught, and every cited document is in the repository
check-deps:
	$(Q)$(PYTHON) tools/check-deps.py --self-test
	$(Q)$(PYTHON) tools/check-deps.py
	$(Q)$(PYTHON) tools/check-cites.py

## test-unit: C unit tests of the trace codec and reader
test-unit: $(UNIT_BINS)
	$(Q)set -e; for t in $(UNIT_BINS); do echo "  UNIT    $$t"; $$t; done

# The CLI built with AddressSanitizer + UBSan, for the analyzer tests.
SAN_CLI := $(BUILD)/san/gpustarve
SAN_CXX_OBJ := $(patsubst %.cpp,$(BUILD)/san/%.o,$(ANALYZER_CXX_SRC))
$(BUILD)/san/%.o: %.cpp $(wildcard trace/*.h) $(AN_HDR)
	@mkdir -p $(dir $@)
	@echo "  CXX(san) $<"
	$(Q)$(CXX) $(CXXFLAGS_IMPORT) -O1 $(SAN_FLAGS) -c $< -o $@
$(SAN_CLI): $(patsubst %.c,$(BUILD)/san/obj/%.o,$(ANALYZER_SRC) $(TRACE_SRC)) $(SAN_CXX_OBJ)
	@mkdir -p $(dir $@)
	@echo "  LD(san) $@"
	$(Q)$(CC) -O1 $(SAN_FLAGS) -pthread -o $@ $^ $(LDLIBS_AN) $(LDLIBS_IMPORT)

# The collector built with AddressSanitizer + UBSan: preloaded after the
# ASan runtime (ld.so needs it first), for the hook and end-to-end tests.
SAN_LIB      := $(BUILD)/san/libgpustarve.so
SAN_RUNTIME   = $(shell $(CC) -print-file-name=libasan.so)
SAN_PIC_OBJ  := $(patsubst %.c,$(BUILD)/san/pic/%.o,$(PRELOAD_SRC) $(CUPTI_SRC) $(TRACE_SRC))
$(BUILD)/san/pic/cupti/%.o: cupti/%.c $(wildcard trace/*.h sink/*.h cupti/*.h)
	@mkdir -p $(dir $@)
	@echo "  CC(san) $<"
	$(Q)$(CC) $(CUPTI_CFLAGS) -O1 $(SAN_FLAGS) -c $< -o $@
$(BUILD)/san/pic/%.o: %.c $(wildcard trace/*.h sink/*.h preload/*.h)
	@mkdir -p $(dir $@)
	@echo "  CC(san) $<"
	$(Q)$(CC) $(PRELOAD_CFLAGS) -O1 $(SAN_FLAGS) -c $< -o $@
$(SAN_LIB): $(SAN_PIC_OBJ) preload/libgpustarve.map
	@echo "  LD(san) $@"
	$(Q)$(CC) -shared -pthread $(SAN_FLAGS) -Wl,--version-script=preload/libgpustarve.map \
	    -Wl,-z,now -o $@ $(SAN_PIC_OBJ) $(LDLIBS_PRELOAD)
# RATIONALE: the traced programs are not instrumented and own their crash
# signals: ASan leaves SIGSEGV & co. to them (and to the collector's handler)
# and does not report their leaks; any report about the collector fails the
# run (exit status 99).
SAN_ENV = GS_SAN_LIB=$(abspath $(SAN_LIB)) GS_SAN_RUNTIME=$(SAN_RUNTIME) \
          ASAN_OPTIONS=detect_leaks=0:handle_segv=0:handle_sigbus=0:handle_sigfpe=0:handle_sigill=0:handle_abort=0:allow_user_segv_handler=1:exitcode=99 \
          UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1:exitcode=99

# the Python side finds its extension next to the preloaded library
SAN_CWRAP := $(if $(CWRAP),$(BUILD)/san/$(notdir $(CWRAP)),)
$(BUILD)/san/gpustarve_cwrap.abi3.so: $(CWRAP)
	@mkdir -p $(dir $@)
	$(Q)cp $< $@

## test-san-collector: the hook and end-to-end tests with libgpustarve.so built with AddressSanitizer and UBSan
test-san-collector: $(SAN_LIB) $(SAN_CWRAP) all
	$(Q)$(SAN_ENV) BUILD=$(BUILD) $(HK_DIR)/run.sh
	$(Q)$(SAN_ENV) $(PYTHON) -m pytest -q -p no:cacheprovider tests/e2e $(PYTEST_ARGS)

## test-san: unit tests, and the analyzer's tests against the CLI, under AddressSanitizer and UBSan
test-san: $(SAN_BINS) $(SAN_CLI)
	$(Q)set -e; for t in $(SAN_BINS); do echo "  SAN     $$t"; $$t; done
	$(Q)GS_CLI=$(abspath $(SAN_CLI)) $(PYTHON) -m pytest -q -p no:cacheprovider tests/analyzer $(PYTEST_ARGS)
	$(Q)GS_CLI=$(abspath $(SAN_CLI)) $(PYTHON) -m pytest -q -p no:cacheprovider tests/import $(PYTEST_ARGS)

## test-analyzer: report scenarios with known answers (pytest, tests/analyzer)
test-analyzer: $(CLI)
	$(Q)$(PYTHON) -m pytest -q -p no:cacheprovider tests/analyzer $(PYTEST_ARGS)

## test-check: gpustarve check: every GPU verdict on the simulated GPU, the CPU, memory, shm and storage lines against ground truth on this machine (cgroups, tmpfs and loop devices made as root; skipped, saying so, where they cannot be) (tests/check)
test-check: $(CLI) simcuda-bins
	$(Q)$(PYTHON) -m pytest -q -p no:cacheprovider tests/check $(PYTEST_ARGS)

## test-import: gpustarve import on real and generated PyTorch profiler traces, against the peers' committed figures (tests/import)
test-import: $(CLI)
	$(Q)$(PYTHON) -m pytest -q -p no:cacheprovider tests/import $(PYTEST_ARGS)

# The peers, torch-tb-profiler and Holistic Trace Analysis, from PyPI in their
# own environment (never the shared .venv). RATIONALE: not part of `make test`:
# they are ~400 MB of packages (6 min to install here) and their figures only
# change when the traces or their versions do; `make test` checks gpustarve
# against the committed figures, `make peers` regenerates them.
PEERS_VENV  := $(BUILD)/peers-venv
PEERS_STAMP := $(PEERS_VENV)/.gpustarve-peers
$(PEERS_STAMP):
	$(Q)rm -rf $(PEERS_VENV)
	$(Q)$(PYTHON) -m venv $(PEERS_VENV)
	$(Q)$(PEERS_VENV)/bin/pip install -q torch-tb-profiler==0.4.3 HolisticTraceAnalysis==0.5
	$(Q)touch $@
.PHONY: peers
## peers: install torch-tb-profiler 0.4.3 and HTA 0.5 in build/peers-venv, rerun them on the real GPU traces (tests/import/real_traces.py: GS_REAL_TRACES or ../shared/data/real-gpu-traces), rewrite tests/import/peers_golden.json
peers: $(PEERS_STAMP)
	$(Q)$(PEERS_VENV)/bin/python tests/import/peers.py

## test-cli: CLI golden and behaviour tests of gpustarve (pytest, tests/cli)
test-cli: $(CLI) $(TOOL_BINS)
	$(Q)$(PYTHON) -m pytest -q -p no:cacheprovider tests/cli $(PYTEST_ARGS)

## test-e2e: end-to-end tests (pytest): real programs under run, read back with dump
test-e2e: all
	$(Q)$(PYTHON) -m pytest -q -p no:cacheprovider tests/e2e $(PYTEST_ARGS)

## truth: every advice truth regime, those that do not hold run by run yet included, quiet and beside a competing load (docs/testing.md); GS_TRUTH_LOG=FILE logs each run
truth: all
	$(Q)GS_TRUTH_ALL=1 $(PYTHON) -m pytest -q -p no:cacheprovider tests/e2e/test_advice_truth.py $(PYTEST_ARGS)

# ---- demo, bench, install ---------------------------------------------------
.PHONY: demo bench install help clean
## demo: install missing packages, build, trace the example loops and print their reports
demo: all
	$(Q)./examples/demo.sh

## bench: install missing packages, build, measure hook overhead, trace size per event and DataLoader overhead
bench: all bench-bins
	$(Q)./bench/run.sh

## install: install gpustarve and libgpustarve.so under PREFIX (default /usr/local)
install: $(LIB) $(CLI) $(CWRAP)
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/lib/gpustarve
	install -m 755 $(CLI) $(DESTDIR)$(PREFIX)/bin/gpustarve
	install -m 755 $(LIB) $(DESTDIR)$(PREFIX)/lib/gpustarve/libgpustarve.so
	$(if $(CWRAP),install -m 755 $(CWRAP) $(DESTDIR)$(PREFIX)/lib/gpustarve/)
	install -d $(DESTDIR)$(PREFIX)/lib/gpustarve/python/gpustarve $(DESTDIR)$(PREFIX)/include
	install -m 644 python/sitecustomize.py $(DESTDIR)$(PREFIX)/lib/gpustarve/python/
	install -m 644 python/gpustarve/*.py $(DESTDIR)$(PREFIX)/lib/gpustarve/python/gpustarve/
	$(if $(PYC),$(PYTHON) -m compileall $(PYC_FLAGS) -s $(DESTDIR)/ -p / $(DESTDIR)$(PREFIX)/lib/gpustarve/python)
	install -m 644 include/gpustarve.h $(DESTDIR)$(PREFIX)/include/

## help: list the targets
help:
	@grep -h -E '^## ' $(MAKEFILE_LIST) | sed 's/^## /  /'

## clean: remove build/ and the Python side's bytecode (python/**/__pycache__)
clean:
	rm -rf $(BUILD) $(PYCACHE)
