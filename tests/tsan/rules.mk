# ThreadSanitizer stress tests of the collector's lock-free structures:
# built by the top-level Makefile (included from it). Each links the one
# preload/ file under test (and tests/tsan/tsan_stubs.c for what it calls
# but is not tested) with -fsanitize=thread.
TSAN_OUT   := $(BUILD)/tsan
TSAN_FLAGS := $(CFLAGS_COMMON) -O1 -g -fsanitize=thread -Ipreload -Itests/tsan -Itests -pthread
TSAN_BINS  := $(TSAN_OUT)/tsan_ring $(TSAN_OUT)/tsan_pinned $(TSAN_OUT)/tsan_strings $(TSAN_OUT)/tsan_fdtable
TSAN_DEPS  := tests/tsan/tsan_util.h tests/tsan/tsan_stubs.c tests/gs_check.h $(wildcard preload/*.h trace/*.h)

.PHONY: tsan-bins test-tsan
tsan-bins: $(TSAN_BINS)
$(TSAN_OUT)/tsan_ring: tests/tsan/tsan_ring.c preload/gs_ring.c $(TSAN_DEPS)
$(TSAN_OUT)/tsan_pinned: tests/tsan/tsan_pinned.c preload/gs_pinned.c $(TSAN_DEPS)
$(TSAN_OUT)/tsan_strings: tests/tsan/tsan_strings.c preload/gs_strings.c preload/gs_fdtable.c $(TSAN_DEPS)
$(TSAN_OUT)/tsan_fdtable: tests/tsan/tsan_fdtable.c preload/gs_fdtable.c $(TSAN_DEPS)
$(TSAN_BINS):
	@mkdir -p $(dir $@)
	@echo "  CC(tsan) $@"
	$(Q)$(CC) $(TSAN_FLAGS) -o $@ $(filter %.c,$^)

## test-tsan: ThreadSanitizer stress tests of the rings, pinned registry, string table and fd table
test-tsan: $(TSAN_BINS)
	$(Q)set -e; for t in $(TSAN_BINS); do echo "  TSAN    $$t"; \
	    TSAN_OPTIONS=halt_on_error=1:exitcode=66 $$t; done
