# Simulated GPU (tests/simcuda/): a stand-in libcudart.so.13 and libcupti.so.13
# built from the CUDA headers, and their contract tests.  Included from the
# top-level Makefile; uses $(BUILD) $(Q) $(CC) $(CSTD) $(WARN) $(OPT).
# Needs the CUDA toolkit headers (SIMCUDA_CUDA_HOME, default $(CUDA_HOME) or
# /usr/local/cuda); without them simcuda-bins and test-simcuda say so and pass.

SIMCUDA_CUDA_HOME ?= $(or $(CUDA_HOME),/usr/local/cuda)
SIMCUDA_INC   := $(SIMCUDA_CUDA_HOME)/include
SIMCUDA_DIR   := $(BUILD)/simcuda
SIMCUDA_GEN   := $(SIMCUDA_DIR)/gen
SIMCUDA_LIBS  := $(SIMCUDA_DIR)/libcudart.so.13 $(SIMCUDA_DIR)/libcupti.so.13
SIMCUDA_TESTS := $(SIMCUDA_DIR)/test_simcuda $(SIMCUDA_DIR)/sim_inject.so
SIMCUDA_CFLAGS := $(CSTD) $(WARN) $(OPT) -fPIC -pthread \
                  -I$(SIMCUDA_INC) -I$(SIMCUDA_GEN) -Itests/simcuda
SIMCUDA_HAVE_HEADERS := $(wildcard $(SIMCUDA_INC)/cuda_runtime_api.h $(SIMCUDA_INC)/cupti_activity.h)

.PHONY: simcuda-bins test-simcuda
ifeq ($(words $(SIMCUDA_HAVE_HEADERS)),2)

## simcuda-bins: build the simulated GPU (build/simcuda/libcudart.so.13, libcupti.so.13) and its tests
simcuda-bins: $(SIMCUDA_LIBS) $(SIMCUDA_TESTS)

$(SIMCUDA_GEN)/sim_errnames.h $(SIMCUDA_GEN)/sim_cuptinames.h &: tests/simcuda/gen_names.sh
	@mkdir -p $(SIMCUDA_GEN)
	@echo "  GEN     $(SIMCUDA_GEN)"
	$(Q)sh tests/simcuda/gen_names.sh $(SIMCUDA_INC) $(SIMCUDA_GEN)

$(SIMCUDA_DIR)/libcudart.so.13: tests/simcuda/sim_cudart.c tests/simcuda/simcuda_link.h \
		tests/simcuda/libcudart.map $(SIMCUDA_GEN)/sim_errnames.h
	@echo "  LD      $@"
	$(Q)$(CC) $(SIMCUDA_CFLAGS) -shared -Wl,-soname,libcudart.so.13 \
	    -Wl,--version-script=tests/simcuda/libcudart.map -o $@ $< -ldl

$(SIMCUDA_DIR)/libcupti.so.13: tests/simcuda/sim_cupti.c tests/simcuda/simcuda_link.h \
		tests/simcuda/libcupti.map $(SIMCUDA_GEN)/sim_cuptinames.h
	@echo "  LD      $@"
	$(Q)$(CC) $(SIMCUDA_CFLAGS) -shared -Wl,-soname,libcupti.so.13 \
	    -Wl,--version-script=tests/simcuda/libcupti.map -o $@ $< -ldl

# The injection library the tests load through CUDA_INJECTION64_PATH: a
# miniature collector (buffers, timestamp callback, record copies).
$(SIMCUDA_DIR)/sim_inject.so: tests/simcuda/sim_inject.c tests/simcuda/sim_inject.h $(SIMCUDA_DIR)/libcupti.so.13
	@echo "  LD      $@"
	$(Q)$(CC) $(SIMCUDA_CFLAGS) -shared -o $@ $< $(SIMCUDA_DIR)/libcupti.so.13

$(SIMCUDA_DIR)/test_simcuda: tests/simcuda/test_simcuda.c tests/simcuda/sim_inject.h tests/gs_check.h \
		$(SIMCUDA_DIR)/libcudart.so.13 $(SIMCUDA_DIR)/libcupti.so.13
	@echo "  CC      $@"
	$(Q)$(CC) $(SIMCUDA_CFLAGS) -Itests -o $@ $< $(SIMCUDA_DIR)/libcudart.so.13 $(SIMCUDA_DIR)/libcupti.so.13 -ldl -lm

SIMCUDA_TEST_ENV := LD_LIBRARY_PATH=$(SIMCUDA_DIR) \
    CUDA_INJECTION64_PATH=$(abspath $(SIMCUDA_DIR)/sim_inject.so) \
    SIMCUDA_KERNEL_US='sim_kern_a=20000,sim_kern_b=5000,sim_kern_zero=0,*=1000' \
    SIMCUDA_H2D_PINNED_GBPS=1 SIMCUDA_H2D_PAGEABLE_GBPS=0.5 SIMCUDA_D2H_GBPS=2

## test-simcuda: contract tests of the simulated GPU, and train_loop run against it
test-simcuda: simcuda-bins cuda-example-bins
	@echo "  SIMCUDA $(SIMCUDA_DIR)/test_simcuda"
	$(Q)$(SIMCUDA_TEST_ENV) $(SIMCUDA_DIR)/test_simcuda
	$(Q)$(SIMCUDA_TEST_ENV) SIMCUDA_CUPTI_BUSY=1 $(SIMCUDA_DIR)/test_simcuda busy
	$(Q)SIMCUDA_DIR=$(SIMCUDA_DIR) BUILD=$(BUILD) sh tests/simcuda/test_symbols.sh $(SIMCUDA_CUDA_HOME)
	$(Q)if [ -x $(BUILD)/examples/train_loop ]; then \
	    SIMCUDA_DIR=$(SIMCUDA_DIR) BUILD=$(BUILD) sh tests/simcuda/test_train_loop.sh; \
	else echo "  SKIP    train_loop (not built: nvcc missing)"; fi

else
simcuda-bins:
	@echo "  SKIP    simcuda: no CUDA headers under $(SIMCUDA_INC)"
test-simcuda:
	@echo "  SKIP    test-simcuda: no CUDA headers under $(SIMCUDA_INC)"
endif
