# nowait: a kernel patch series for RWF_NOWAIT, the harness that proves it,
# and libnowait.  `make demo` and `make check` are the two commands in README.md.

.PHONY: all demo demo-stock check check-debug check-debug-long kernel kernel-debug compare cost fuzz series-check against-v1 against-v2 deb deb-check
all: lib

# BASE=7.3 runs the kernel targets on linux-source-7.3 instead of 6.12
# (harness/lib.sh); make check runs both bases, or CHECK_BASES="...".
ifdef BASE
export NOWAIT_BASE := $(BASE)
endif
ifdef CHECK_BASES
export NOWAIT_CHECK_BASES := $(CHECK_BASES)
endif
# DEBIAN=trixie runs deb-check on Debian 13 instead of 12 (bookworm); make
# check runs it on both when their images are made, or CHECK_DEBIAN="...".
ifdef DEBIAN
export NOWAIT_DEBIAN := $(DEBIAN)
endif
ifdef CHECK_DEBIAN
export NOWAIT_CHECK_DEBIAN := $(CHECK_DEBIAN)
endif

# Build the patched kernel, boot it in QEMU, print the capability table.
demo:
	harness/demo.sh

# The same on the Debian tree as shipped.
demo-stock:
	harness/demo.sh --stock

# Every test; ends with "N passed, N failed, N skipped".
check:
	harness/check.sh

# The kernel suite on the debug kernel (KASAN, lockdep), then the rest.
check-debug:
	harness/check.sh --debug

# Before resolving a reliability change: check-debug with the stress
# program running STRESS_SECONDS per ABI instead of 16 + 4.
STRESS_SECONDS ?= 240
check-debug-long:
	NOWAIT_BOOT_TIMEOUT=5400 NOWAIT_APPEND="NOWAIT_STRESS_SECONDS=$(STRESS_SECONDS) NOWAIT_TEST_TIMEOUT=$$(($(STRESS_SECONDS) * 3 + 300))" \
		harness/check.sh --debug

# Stock against patched: probe tables and the blocking detector.
# COMPARE_ARGS passes options to harness/compare.sh (e.g. --parts "probe netfs").
compare:
	harness/compare.sh $(COMPARE_ARGS)

# Stock against patched: instructions per cached 16 KiB pread, flagged hit
# and pwrite on ext4, xfs and tmpfs, under QEMU's -icount (build/cost/).
# COST_ARGS passes options to harness/cost.sh (e.g. --boots 5).
cost:
	harness/cost.sh $(COST_ARGS)

# trinity in the guest on the debug kernel.
fuzz:
	harness/fuzz.sh

# Every prefix of the series builds; SERIES_FROM=K starts at prefix K.
series-check:
	harness/series-check.sh $(if $(SERIES_FROM),--from $(SERIES_FROM))

# The tests of a review's findings on the series before its fixes, where
# they must fail: the v2 review's on v1, the v3 review's on v2.
against-v1 against-v2:
	harness/against.sh $(@:against-%=%)

# Debian packages in build/deb/: libnowait1, libnowait-dev, nowait-serve and
# nowait-tools (debian/, lintian-clean), and the patched kernel's
# linux-image and linux-headers (bindeb-pkg, harness/kernel-deb.sh).
deb:
	harness/deb.sh

# The packages installed with apt on a Debian 12 disk (the image of make
# regress; DEBIAN=trixie: Debian 13), booted by its own grub, initrd and
# systemd: the nowait kernel, the probe, nowait-serve by systemctl, the
# library, then apt remove and the stock kernel (harness/deb-check.sh;
# builds what it needs, once).
deb-check:
	harness/deb-check.sh

kernel:
	harness/kernel.sh

kernel-debug:
	harness/kernel.sh --debug

-include mk/*.mk

# Crash states replayed (dm-log-writes, fstests' replay-log): every FLUSH,
# FUA and mark of a recorded workload of flagged writes on six filesystems,
# fsck and fsync's promises at each, stock against patched (build/crash-replay/).
# Long: not part of make check. CRASH_REPLAY_ARGS passes options to
# harness/crash-replay.sh (e.g. --fs "ext4 xfs" --states 50 --seed 7).
.PHONY: crash-replay
crash-replay:
	harness/crash-replay.sh $(CRASH_REPLAY_ARGS)
