# Simulated GPU (tests/simcuda/): a stand-in libcudart, libcupti and libcuda
# built from the CUDA headers, in three modes, and their contract tests.
# Included from the top-level Makefile; uses $(BUILD) $(Q) $(CC) $(CSTD)
# $(WARN) $(OPT) and $(GPU_WHEELS) (where `make gpu-wheels` puts the real
# CUDA wheels).
#
#   mode   folder                 sonames                     CUPTI API  records
#   13.0   build/simcuda          libcudart.so.13 libcupti.so.13  130001  Kernel10 Memcpy6 Memset4 Sync2 Device5
#   12.x   build/simcuda/cu12     libcudart.so.12 libcupti.so.12  26      Kernel9  Memcpy5 Memset4 Sync1 Device5
#   13.2   build/simcuda/cu13.2   libcudart.so.13 libcupti.so.13  130202  Kernel11 Memcpy6 Memset4 Sync2 Device6
#
# Each folder also holds libcuda.so.1 (the simulated driver), sim_step, a
# training loop in C linked against that folder's libcudart (NVTX headers
# from the toolkit: the wheel has none), and cuda_calls (tests/gpu/), which
# the no-driver tests run against the real wheels' libcudart. 13.0 and 12.x
# build from the toolkit headers (SIMCUDA_CUDA_HOME, default $(CUDA_HOME) or
# /usr/local/cuda), which still declare the CUDA 12 record versions; 13.2
# from the CUPTI 13.2 headers of the pinned nvidia-cuda-cupti wheel (made by
# `make gpu-wheels`), and is skipped, saying so, until they are there.
# Without the toolkit headers simcuda-bins and test-simcuda say so and pass.

SIMCUDA_CUDA_HOME ?= $(or $(CUDA_HOME),/usr/local/cuda)
SIMCUDA_INC   := $(SIMCUDA_CUDA_HOME)/include
SIMCUDA_INC132 ?= $(GPU_WHEELS)/cu13/nvidia/cu13/include
SIMCUDA_DIR   := $(BUILD)/simcuda
SIMCUDA_GEN   := $(SIMCUDA_DIR)/gen
SIMCUDA_BASE_CFLAGS := $(CSTD) $(WARN) $(OPT) -fPIC -pthread -Itests/simcuda
SIMCUDA_CFLAGS := $(SIMCUDA_BASE_CFLAGS) -I$(SIMCUDA_INC) -I$(SIMCUDA_GEN)
SIMCUDA_HAVE_HEADERS := $(wildcard $(SIMCUDA_INC)/cuda_runtime_api.h $(SIMCUDA_INC)/cupti_activity.h)
SIMCUDA_HAVE_132 := $(wildcard $(SIMCUDA_INC132)/cupti_activity.h)

SIMCUDA_MODE12 := -DSIMCUDA_CUDA12=1 -DSIMCUDA_CUDART_SONAME='"libcudart.so.12"' \
    -DSIMCUDA_CUPTI_SONAME='"libcupti.so.12"' -DSIMCUDA_RUNTIME_VERSION=12080 \
    -DSIMCUDA_DRIVER_VERSION=12080 -DSIMCUDA_CUPTI_VERSION=26 \
    -DSIMCUDA_REC_KERNEL=CUpti_ActivityKernel9 -DSIMCUDA_REC_MEMCPY=CUpti_ActivityMemcpy5 \
    -DSIMCUDA_REC_SYNC=CUpti_ActivitySynchronization
SIMCUDA_MODE132 := -DSIMCUDA_RUNTIME_VERSION=13020 -DSIMCUDA_DRIVER_VERSION=13020 \
    -DSIMCUDA_REC_KERNEL=CUpti_ActivityKernel11 -DSIMCUDA_REC_DEVICE=CUpti_ActivityDevice6

# $(call simcuda_mode,FOLDER,INCLUDE,MAJOR,DEFINES): the three libraries and
# sim_step of one mode.
define simcuda_mode
$(1)/gen/sim_errnames.h $(1)/gen/sim_cuptinames.h &: tests/simcuda/gen_names.sh
	@mkdir -p $(1)/gen
	@echo "  GEN     $(1)/gen"
	$$(Q)sh tests/simcuda/gen_names.sh $(2) $(1)/gen

$(1)/libcudart.so.$(3): tests/simcuda/sim_cudart.c tests/simcuda/sim_coll.c tests/simcuda/sim_coll.h \
		tests/simcuda/simcuda_link.h tests/simcuda/libcudart.map $(1)/gen/sim_errnames.h
	@echo "  LD      $$@"
	$$(Q)sed 's/libcudart\.so\.13/libcudart.so.$(3)/' tests/simcuda/libcudart.map > $(1)/libcudart.map
	$$(Q)$$(CC) $$(SIMCUDA_BASE_CFLAGS) -I$(2) -I$(1)/gen $(4) -shared -Wl,-soname,libcudart.so.$(3) \
	    -Wl,--version-script=$(1)/libcudart.map -o $$@ $$< tests/simcuda/sim_coll.c -ldl

$(1)/libcupti.so.$(3): tests/simcuda/sim_cupti.c tests/simcuda/simcuda_link.h \
		tests/simcuda/libcupti.map $(1)/gen/sim_cuptinames.h
	@echo "  LD      $$@"
	$$(Q)sed 's/libcupti\.so\.13/libcupti.so.$(3)/' tests/simcuda/libcupti.map > $(1)/libcupti.map
	$$(Q)$$(CC) $$(SIMCUDA_BASE_CFLAGS) -I$(2) -I$(1)/gen $(4) -shared -Wl,-soname,libcupti.so.$(3) \
	    -Wl,--version-script=$(1)/libcupti.map -o $$@ $$< -ldl

$(1)/libcuda.so.1: tests/simcuda/sim_cuda.c tests/simcuda/simcuda_link.h
	@mkdir -p $(1)
	@echo "  LD      $$@"
	$$(Q)$$(CC) $$(SIMCUDA_BASE_CFLAGS) -I$(2) $(4) -shared -Wl,-soname,libcuda.so.1 -o $$@ $$< -ldl

$(1)/sim_step: tests/simcuda/sim_step.c $(1)/libcudart.so.$(3) $(1)/libcuda.so.1 $(1)/libcupti.so.$(3)
	@echo "  CC      $$@"
	$$(Q)$$(CC) $$(CSTD) $$(WARN) $$(OPT) -pthread -I$(2) -I$$(SIMCUDA_INC) $(4) -o $$@ $$< \
	    $(1)/libcudart.so.$(3) $(1)/libcuda.so.1 $(1)/libcupti.so.$(3) -ldl

$(1)/cuda_calls: tests/gpu/cuda_calls.c $(1)/libcudart.so.$(3)
	@echo "  CC      $$@"
	$$(Q)$$(CC) $$(CSTD) $$(WARN) $$(OPT) -o $$@ $$< $(1)/libcudart.so.$(3)
endef

SIMCUDA_LIBS  := $(SIMCUDA_DIR)/libcudart.so.13 $(SIMCUDA_DIR)/libcupti.so.13 \
                 $(SIMCUDA_DIR)/libcuda.so.1 $(SIMCUDA_DIR)/sim_step $(SIMCUDA_DIR)/cuda_calls \
                 $(SIMCUDA_DIR)/cu12/libcudart.so.12 $(SIMCUDA_DIR)/cu12/libcupti.so.12 \
                 $(SIMCUDA_DIR)/cu12/libcuda.so.1 $(SIMCUDA_DIR)/cu12/sim_step \
                 $(SIMCUDA_DIR)/cu12/cuda_calls
ifneq ($(SIMCUDA_HAVE_132),)
SIMCUDA_LIBS  += $(SIMCUDA_DIR)/cu13.2/libcudart.so.13 $(SIMCUDA_DIR)/cu13.2/libcupti.so.13 \
                 $(SIMCUDA_DIR)/cu13.2/libcuda.so.1 $(SIMCUDA_DIR)/cu13.2/sim_step \
                 $(SIMCUDA_DIR)/cu13.2/cuda_calls
endif
# The stand-in cuBLAS, NVML and NCCL `gpustarve check` loads (13.0 mode only:
# the check looks for the cuBLAS of the runtime's major).
SIMCUDA_LIBS  += $(SIMCUDA_DIR)/libcublas.so.13 $(SIMCUDA_DIR)/libnvidia-ml.so.1 \
                 $(SIMCUDA_DIR)/libnccl.so.2
SIMCUDA_TESTS := $(SIMCUDA_DIR)/test_simcuda $(SIMCUDA_DIR)/sim_inject.so

.PHONY: simcuda-bins test-simcuda
ifeq ($(words $(SIMCUDA_HAVE_HEADERS)),2)

## simcuda-bins: build the simulated GPU in its modes (build/simcuda{,/cu12,/cu13.2}) and its tests
simcuda-bins: $(SIMCUDA_LIBS) $(SIMCUDA_TESTS)
ifeq ($(SIMCUDA_HAVE_132),)
	@echo "  SKIP    simcuda 13.2 mode: no CUPTI 13.2 headers under $(SIMCUDA_INC132) (make gpu-wheels)"
endif

$(eval $(call simcuda_mode,$(SIMCUDA_DIR),$(SIMCUDA_INC),13,))
$(eval $(call simcuda_mode,$(SIMCUDA_DIR)/cu12,$(SIMCUDA_INC),12,$(SIMCUDA_MODE12)))
$(eval $(call simcuda_mode,$(SIMCUDA_DIR)/cu13.2,$(SIMCUDA_INC132),13,$(SIMCUDA_MODE132)))

$(SIMCUDA_DIR)/libcublas.so.13: tests/simcuda/sim_cublas.c tests/simcuda/simcuda_link.h \
		tests/simcuda/libcublas.map
	@mkdir -p $(dir $@)
	@echo "  LD      $@"
	$(Q)$(CC) $(SIMCUDA_CFLAGS) -shared -Wl,-soname,libcublas.so.13 \
	    -Wl,--version-script=tests/simcuda/libcublas.map -o $@ $< -ldl
$(SIMCUDA_DIR)/libnvidia-ml.so.1: tests/simcuda/sim_nvml.c
	@mkdir -p $(dir $@)
	@echo "  LD      $@"
	$(Q)$(CC) $(SIMCUDA_BASE_CFLAGS) -shared -Wl,-soname,libnvidia-ml.so.1 -o $@ $<
$(SIMCUDA_DIR)/libnccl.so.2: tests/simcuda/sim_nccl.c tests/simcuda/simcuda_link.h
	@mkdir -p $(dir $@)
	@echo "  LD      $@"
	$(Q)$(CC) $(SIMCUDA_CFLAGS) -shared -Wl,-soname,libnccl.so.2 -o $@ $< -ldl

# The injection library the tests load through CUDA_INJECTION64_PATH: a
# miniature collector (buffers, timestamp callback, record copies).
$(SIMCUDA_DIR)/sim_inject.so: tests/simcuda/sim_inject.c tests/simcuda/sim_inject.h $(SIMCUDA_DIR)/libcupti.so.13
	@echo "  LD      $@"
	$(Q)$(CC) $(SIMCUDA_CFLAGS) -shared -o $@ $< $(SIMCUDA_DIR)/libcupti.so.13

$(SIMCUDA_DIR)/test_simcuda: tests/simcuda/test_simcuda.c tests/simcuda/sim_inject.h tests/gs_check.h \
		$(SIMCUDA_DIR)/libcudart.so.13 $(SIMCUDA_DIR)/libcupti.so.13 $(SIMCUDA_DIR)/libcuda.so.1
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
	$(Q)SIMCUDA_DIR=$(SIMCUDA_DIR) BUILD=$(BUILD) GPU_WHEELS=$(GPU_WHEELS) sh tests/simcuda/test_symbols.sh $(SIMCUDA_CUDA_HOME)
	$(Q)if [ -x $(BUILD)/examples/train_loop ]; then \
	    SIMCUDA_DIR=$(SIMCUDA_DIR) BUILD=$(BUILD) sh tests/simcuda/test_train_loop.sh; \
	else echo "  SKIP    train_loop (not built: nvcc missing)"; fi

else
simcuda-bins:
	@echo "  SKIP    simcuda: no CUDA headers under $(SIMCUDA_INC)"
test-simcuda:
	@echo "  SKIP    test-simcuda: no CUDA headers under $(SIMCUDA_INC)"
endif
