# samepage: KSM for Linux 6.12, rewritten. User-facing targets:
#   make demo          build our kernel, boot it, show KSM merging live (ksmtop),
#                      then plot the run into build/logs/ksm-demo/demo.png
#   make test          build our kernel, boot it, run every suite
#   make test KSM=n    the same with CONFIG_KSM off: must fail (negative check)
#   make test DEBUG=kasan  the suites on our kernel with KASAN, lockdep,
#                      DEBUG_VM, DEBUG_LIST and SLUB debugging (slower)
#   make test SOAK=600 ksm_stress alone for that many seconds (any kernel
#                      flavour; with DEBUG=kasan, the soak; not in CI)
#   make test-stock    the suites on the pristine kernel (same config)
#   make bench         stock and ours side by side, ratios and a plot
#   make abi-diff      one KSM workload on stock and ours: what a user sees, diffed
#   make series        generate the patch series from kernel/ into build/series,
#                      checked (checkpatch, kernel-doc, git am); CHECK=build also
#                      builds the tree after every patch; PREV=REV range-diffs
#   make refresh       take edits made in build/src-ksm into kernel/ (DIFF=NAME
#                      names the diff for a pristine file no diff owns yet)
#   make matrix        build and boot our tree under every kernel configuration
#                      of kernel/config/matrix/ (about two hours; not in CI)
#   make deb           Debian packages (linux-image, linux-headers) of our
#                      kernel with Debian's configuration of FLAVOUR= (amd64,
#                      cloud-amd64, rt-amd64) into build/deb/FLAVOUR; not in CI
#   make deb-check     boot the packaged kernel of FLAVOUR (default cloud-amd64)
#                      with its zram module loaded, run tests/plan-matrix
#   make rt-latency    a real-time task's wake-up latency while KSM merges,
#                      unmerges and migrates: ours beside stock, both built
#                      with Debian's PREEMPT_RT configuration; not in CI
#   make kernel | stock-kernel | guest | deps | clean

SHELL := /bin/bash
S := scripts
# make deb FLAVOUR=NAME: Debian's flavour, not the test kernel's flavour.
FLAVOUR_DEB := $(if $(filter command line,$(origin FLAVOUR)),$(FLAVOUR),amd64)
FLAVOUR := $(if $(filter n,$(KSM)),noksm,$(if $(filter kasan,$(DEBUG)),ksm-kasan,ksm))
# SOAK=SECONDS: the soak plan, each test (and the whole boot) bounded to
# match; KASAN's kernel runs the suites several times slower.
RUN_ENV := $(if $(SOAK),APPEND="samepage.plan=plan-soak samepage.soak=$(SOAK) samepage.limit=$$(($(SOAK) * 3 + 300))" TIMEOUT=$$(($(SOAK) * 3 + 900))) \
	$(if $(filter kasan,$(DEBUG)),$(if $(SOAK),,TIMEOUT=6000 APPEND=samepage.limit=1800))

.PHONY: all demo test test-stock bench abi-diff series refresh matrix deb deb-check rt-latency \
	kernel stock-kernel noksm-kernel guest deps clean guest-progs

all: test

deps:
	@$(S)/install-deps.sh

kernel: deps
	@$(S)/build-kernel.sh ksm

stock-kernel: deps
	@$(S)/build-kernel.sh stock

noksm-kernel: deps
	@$(S)/build-kernel.sh noksm

guest: deps
	@$(S)/prepare-tree.sh
	@$(S)/build-guest.sh

test: deps
	@$(S)/build-kernel.sh $(FLAVOUR)
	@$(S)/export-series.sh --check $(FLAVOUR)
	@$(S)/build-guest.sh
	@$(RUN_ENV) $(S)/run-tests.sh $(FLAVOUR)

test-stock: deps
	@$(S)/build-kernel.sh stock
	@$(S)/build-guest.sh
	@$(S)/run-tests.sh stock

demo: deps
	@$(S)/build-kernel.sh ksm
	@$(S)/build-guest.sh
	@$(S)/boot.sh ksm demo
	@$(S)/demo-plot.sh

bench: deps
	@$(S)/build-kernel.sh stock-bench
	@$(S)/build-kernel.sh ksm-bench
	@$(S)/build-guest.sh
	@$(S)/bench.sh

abi-diff: deps
	@$(S)/build-kernel.sh stock
	@$(S)/build-kernel.sh ksm
	@$(S)/build-guest.sh
	@$(S)/abi-diff.sh

series: deps
	@$(S)/prepare-tree.sh
	@$(S)/export-series.sh

refresh:
	@$(S)/refresh.sh $(DIFF)

matrix: deps
	@$(S)/prepare-tree.sh
	@$(S)/matrix.sh $(CONFIGS)

deb:
	@$(S)/install-deps.sh deb
	@FLAVOUR=$(FLAVOUR_DEB) $(S)/deb.sh

deb-check: deps
	@FLAVOUR=$(if $(filter command line,$(origin FLAVOUR)),$(FLAVOUR),cloud-amd64) $(S)/deb-check.sh

rt-latency: deps
	@RUNS=$(or $(RUNS),1) $(S)/rt-latency.sh

clean:
	rm -rf build

# Guest programs: static C, one binary per source file, into $(GUEST_BIN).
# GUEST_CC: the compiler, with any target flags (build-guest.sh passes
# "gcc -m32 ..." for an i386 guest).
GUEST_BIN ?= build/guest/root/guest/bin
GUEST_CC ?= gcc
HDR ?= build/guest/hdr/include
GUEST_CFLAGS := -static -O2 -Wall -Wextra -Werror -Wno-unused-parameter \
	-D_GNU_SOURCE -isystem $(HDR) -Itests/lib
GUEST_SRCS := $(wildcard tests/*.c bench/*.c)
GUEST_LIB := $(wildcard tests/lib/*.c)
GUEST_HDRS := $(wildcard tests/lib/*.h)
# The series' own user tools (kernel/tree/tools/mm/), libc only: built
# without the test library, as the kernel's tools/mm/Makefile builds them.
GUEST_KTOOLS := kernel/tree/tools/mm/ksmtop.c

guest-progs: $(patsubst %.c,$(GUEST_BIN)/%,$(notdir $(GUEST_SRCS) $(GUEST_KTOOLS)))

define guest_rule
$(GUEST_BIN)/$(basename $(notdir $(1))): $(1) $(GUEST_LIB) $(GUEST_HDRS)
	@mkdir -p $(GUEST_BIN)
	$(GUEST_CC) $(GUEST_CFLAGS) -o $$@ $(1) $(GUEST_LIB) -lpthread -lnuma
endef
$(foreach s,$(GUEST_SRCS),$(eval $(call guest_rule,$(s))))

define guest_ktool_rule
$(GUEST_BIN)/$(basename $(notdir $(1))): $(1)
	@mkdir -p $(GUEST_BIN)
	$(GUEST_CC) $(GUEST_CFLAGS) -o $$@ $(1)
endef
$(foreach s,$(GUEST_KTOOLS),$(eval $(call guest_ktool_rule,$(s))))
