# Hook tests: built by the top-level Makefile (included from it).
# Each tests/hooks/hk_*.c is one program (linked with trace/ and hk_util.c);
# lib*.c files become small shared libraries the programs link against.
HK_DIR   := tests/hooks
HK_OUT   := $(BUILD)/tests/hooks
HK_SRC   := $(filter-out $(HK_DIR)/hk_util.c,$(wildcard $(HK_DIR)/hk_*.c))
# hk_cupti_decode, hk_nvtx_abi: the CUPTI record decoder, the CUDA types
# and the NVTX ABI that preload/ declares itself, against the real headers;
# only where the CUDA headers are (HAVE_CUPTI).
ifeq ($(HAVE_CUPTI),)
HK_SRC   := $(filter-out $(HK_DIR)/hk_cupti_decode.c $(HK_DIR)/hk_nvtx_abi.c,$(HK_SRC))
endif
HK_BINS  := $(patsubst $(HK_DIR)/%.c,$(HK_OUT)/%,$(HK_SRC))
HK_LIBS  := $(HK_OUT)/libhk_ctor.so
HK_CFLAGS := $(CFLAGS_COMMON) -I$(HK_DIR) -Itests -pthread

# The CUPTI decoder compiled against the CUPTI 13.2 headers of the pinned
# wheel (make gpu-wheels), where they are: its _Static_asserts then also
# check Kernel11 and Device6. A compile-only check.
HK_CUPTI132_INC := $(GPU_WHEELS)/cu13/nvidia/cu13/include
ifneq ($(HAVE_CUPTI),)
ifneq ($(wildcard $(HK_CUPTI132_INC)/cupti_activity.h),)
HK_LIBS  += $(HK_OUT)/gs_cupti_decode.13.2.o
endif
endif
$(HK_OUT)/gs_cupti_decode.13.2.o: cupti/gs_cupti_decode.c cupti/gs_cupti.h
	@mkdir -p $(dir $@)
	@echo "  CC      $@ (CUPTI 13.2 layouts)"
	$(Q)$(CC) $(CFLAGS_COMMON) -Icupti -isystem $(HK_CUPTI132_INC) -c -o $@ $<

.PHONY: hook-bins test-hooks
## hook-bins: build the hook test programs (build/tests/hooks/)
hook-bins: $(HK_BINS) $(HK_LIBS)

$(HK_OUT)/libhk_%.so: $(HK_DIR)/libhk_%.c
	@mkdir -p $(dir $@)
	@echo "  CC(so)  $@"
	$(Q)$(CC) $(HK_CFLAGS) -fPIC -shared -o $@ $<

# hk_ctor links the library whose constructor calls hooks before ours runs.
$(HK_OUT)/hk_ctor: LDEXTRA = -L$(HK_OUT) -lhk_ctor -Wl,-rpath,'$$ORIGIN'
$(HK_OUT)/hk_ctor: $(HK_OUT)/libhk_ctor.so

# hk_secure links the collector itself (a set-group-ID program ignores
# LD_PRELOAD); an absolute rpath, as ld.so ignores $ORIGIN in secure mode.
$(HK_OUT)/hk_secure: LDEXTRA = -L$(BUILD) -lgpustarve -Wl,-rpath,$(abspath $(BUILD))
$(HK_OUT)/hk_secure: $(LIB)

$(HK_OUT)/hk_nvtx_abi: HK_CFLAGS += -Ipreload -isystem $(CUDA_HOME)/include
$(HK_OUT)/hk_nvtx_abi: preload/gs_nvtx_abi.h

$(HK_OUT)/hk_cupti_decode: HK_CFLAGS += -Ipreload -Icupti -isystem $(CUDA_HOME)/include
$(HK_OUT)/hk_cupti_decode: LDEXTRA = cupti/gs_cupti_decode.c
$(HK_OUT)/hk_cupti_decode: cupti/gs_cupti_decode.c cupti/gs_cupti.h preload/gs_cuda_types.h

$(HK_OUT)/hk_%: $(HK_DIR)/hk_%.c $(HK_DIR)/hk_util.c $(HK_DIR)/hk_util.h tests/gs_check.h $(TRACE_SRC) $(wildcard trace/*.h)
	@mkdir -p $(dir $@)
	@echo "  CC      $@"
	$(Q)$(CC) $(HK_CFLAGS) -o $@ $< $(HK_DIR)/hk_util.c $(TRACE_SRC) $(LDEXTRA) $(LDLIBS_ZSTD) -ldl

## test-hooks: run the hook tests under LD_PRELOAD=build/libgpustarve.so
test-hooks: hook-bins $(LIB)
	$(Q)BUILD=$(BUILD) $(HK_DIR)/run.sh
