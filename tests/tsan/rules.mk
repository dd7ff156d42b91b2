# ThreadSanitizer stress tests of the collector's lock-free structures:
# built by the top-level Makefile (included from it). Each links the one
# preload/ file under test (and tests/tsan/tsan_stubs.c for what it calls
# but is not tested) with -fsanitize=thread. tsan_load links the analyzer's
# library (AN_LIB_SRC) and trace/ to read a run on several threads.
TSAN_OUT   := $(BUILD)/tsan
TSAN_FLAGS := $(CFLAGS_COMMON) -O1 -g -fsanitize=thread -Ipreload -Itests/tsan -Itests -pthread
TSAN_BINS  := $(TSAN_OUT)/tsan_ring $(TSAN_OUT)/tsan_pinned $(TSAN_OUT)/tsan_strings $(TSAN_OUT)/tsan_fdtable
TSAN_LOAD  := $(TSAN_OUT)/tsan_load
TSAN_DEPS  := tests/tsan/tsan_util.h tests/tsan/tsan_stubs.c tests/gs_check.h $(wildcard preload/*.h trace/*.h)

.PHONY: tsan-bins test-tsan
tsan-bins: $(TSAN_BINS) $(TSAN_LOAD)
$(TSAN_OUT)/tsan_ring: tests/tsan/tsan_ring.c preload/gs_ring.c $(TSAN_DEPS)
$(TSAN_OUT)/tsan_pinned: tests/tsan/tsan_pinned.c preload/gs_pinned.c $(TSAN_DEPS)
$(TSAN_OUT)/tsan_strings: tests/tsan/tsan_strings.c preload/gs_strings.c preload/gs_fdtable.c $(TSAN_DEPS)
$(TSAN_OUT)/tsan_fdtable: tests/tsan/tsan_fdtable.c preload/gs_fdtable.c $(TSAN_DEPS)
$(TSAN_BINS):
	@mkdir -p $(dir $@)
	@echo "  CC(tsan) $@"
	$(Q)$(CC) $(TSAN_FLAGS) -o $@ $(filter %.c,$^)

$(TSAN_LOAD): tests/tsan/tsan_load.c $(AN_LIB_SRC) $(TRACE_SRC) tests/tsan/tsan_util.h tests/gs_check.h \
	    $(wildcard trace/*.h) $(AN_HDR)
	@mkdir -p $(dir $@)
	@echo "  CC(tsan) $@"
	$(Q)$(CC) $(CFLAGS_COMMON) -O1 -g -fsanitize=thread -Ianalyzer -Itests/tsan -Itests -pthread \
	    -o $@ tests/tsan/tsan_load.c $(AN_LIB_SRC) $(TRACE_SRC) $(LDLIBS_AN)

## test-tsan: ThreadSanitizer stress tests of the rings, pinned registry, string table and fd table, and of the analyzer reading a run on several threads
test-tsan: $(TSAN_BINS) $(TSAN_LOAD)
	$(Q)set -e; for t in $(TSAN_BINS); do echo "  TSAN    $$t"; \
	    TSAN_OPTIONS=halt_on_error=1:exitcode=66 $$t; done
	$(Q)d=$$(mktemp -d) && echo "  TSAN    $(TSAN_LOAD)" && rc=0 && \
	    { TSAN_OPTIONS=halt_on_error=1:exitcode=66 $(TSAN_LOAD) $$d || rc=$$?; } && \
	    rm -rf $$d && exit $$rc
