# CUDA examples: built with nvcc when it exists (included from the top-level
# Makefile).  Programs link the CUDA runtime dynamically (-cudart shared), so
# they run against a real libcudart.so.13 or the simulated one in
# build/simcuda (LD_LIBRARY_PATH).  Uses $(BUILD) and $(Q).
#
# NVCC: the compiler (default $(CUDA_HOME)/bin/nvcc, else nvcc on PATH).
# CUDA_EXAMPLE_ARCH: extra -gencode/-arch flags; the default (nvcc's own
# default target, with PTX) also runs on newer GPUs through the JIT.

CUDA_EXAMPLE_HOME ?= $(or $(CUDA_HOME),/usr/local/cuda)
NVCC ?= $(firstword $(wildcard $(CUDA_EXAMPLE_HOME)/bin/nvcc) $(shell command -v nvcc 2>/dev/null))
CUDA_EXAMPLE_ARCH ?=
# RATIONALE: no -Werror here: nvcc's generated host stubs change between
# toolkits and host compilers, and a warning in them must not break the build.
CUDA_EXAMPLE_FLAGS := -cudart shared -O2 -g -lineinfo -std=c++17 $(CUDA_EXAMPLE_ARCH) \
                      -Xcompiler -Wall,-Wextra,-Wno-unused-parameter
CUDA_EXAMPLE_BINS := $(BUILD)/examples/train_loop

.PHONY: cuda-example-bins
ifneq ($(NVCC),)
## cuda-example-bins: build the CUDA examples (build/examples/train_loop) with nvcc
cuda-example-bins: $(CUDA_EXAMPLE_BINS)

$(BUILD)/examples/train_loop: examples/train_loop.cu include/gpustarve.h
	@mkdir -p $(dir $@)
	@echo "  NVCC    $@"
	$(Q)$(NVCC) $(CUDA_EXAMPLE_FLAGS) -Iinclude -o $@ $< -lpthread -ldl
else
cuda-example-bins:
	@echo "  SKIP    CUDA examples: nvcc not found"
endif
