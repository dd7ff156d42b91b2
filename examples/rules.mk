# Examples: built by the top-level Makefile (included from it).
EXAMPLE_BINS := $(BUILD)/examples/read_dataset
.PHONY: example-bins
example-bins: $(EXAMPLE_BINS)
$(BUILD)/examples/read_dataset: examples/read_dataset.c
	@mkdir -p $(dir $@)
	@echo "  CC      $@"
	$(Q)$(CC) $(CSTD) $(WARN) $(OPT) -pthread -o $@ $<
