# nowait-bench: the seed's fio mix as an open-loop benchmark of libnowait
# (pool / fast / adaptive / lib_uring) against io_uring, bounded and not.
# See bench/README.md.
#   bench         build, run on this host (root: cgroup throttle), write
#                 build/bench/{bench.txt,bench.json,bench.png}: 5 rotated
#                 runs per mode, the rate ramp, the logging run (~10 min)
#   bench-quick   the same with --quick (seconds, for development)
#   bench-saturate  the same data with --scenario saturate: cold reads at twice
#                 the disk's read IOPS, build/bench/bench-saturate.{txt,json,png}
#   bench-build   build/bench/nowait-bench, the static nowait-bench.static and nowait-hitcost
#   bench-guest   the benchmark in QEMU on tmpfs, overlayfs and fragmented ext4
#                 (steady and saturated), stock kernel against patched:
#                 build/bench-guest.md, build/bench/guest-*; BENCH_GUEST_ARGS
#                 e.g. "--stock K --patched K --fs 'ext4 ext4-saturate'"
#   bench-hitcost build/bench/nowait-hitcost and run it: libnowait's cost per
#                 cached read against bare preadv2(RWF_NOWAIT), 1 and 2 threads
#                 on one context, 512 B and 16 KiB (HITCOST_ARGS adds options)
#   bench-clean   remove the binaries and results (keeps the data files)
# BENCH_ARGS adds options, e.g. make bench BENCH_ARGS="--fragment 64" or
# BENCH_ARGS="--scenario saturate".

bn_default_goal := $(.DEFAULT_GOAL)

BN_TOP := $(abspath $(dir $(lastword $(MAKEFILE_LIST)))..)
BN_OUT := $(BN_TOP)/build/bench
BN_LIB := $(BN_TOP)/build/lib-plain/libnowait.a
BN_SRC := $(addprefix $(BN_TOP)/bench/,nowait-bench.c hist.c sys.c)
BN_HDR := $(addprefix $(BN_TOP)/bench/,hist.h sys.h) $(BN_TOP)/include/nowait.h
BN_CFLAGS := -std=c11 -Wall -Wextra -Werror -O2 -g -pthread -D_FILE_OFFSET_BITS=64 \
	-I$(BN_TOP)/include -I$(BN_TOP)/bench
BN_LIBS := -luring -lm -lpthread
BENCH_DIR ?= $(BN_OUT)/data
BENCH_ARGS ?=
BENCH_GUEST_ARGS ?=
HITCOST_ARGS ?=

$(BN_OUT)/nowait-bench: $(BN_SRC) $(BN_HDR) $(BN_LIB)
	@mkdir -p $(@D)
	$(CC) $(BN_CFLAGS) $(BN_SRC) $(BN_LIB) $(BN_LIBS) -o $@

# For a QEMU guest with a busybox initramfs: no shared libraries there.
$(BN_OUT)/nowait-bench.static: $(BN_SRC) $(BN_HDR) $(BN_LIB)
	@mkdir -p $(@D)
	$(CC) $(BN_CFLAGS) -static $(BN_SRC) $(BN_LIB) $(BN_LIBS) -o $@

$(BN_OUT)/nowait-hitcost: $(BN_TOP)/bench/hitcost.c $(BN_TOP)/include/nowait.h $(BN_LIB)
	@mkdir -p $(@D)
	$(CC) $(BN_CFLAGS) $< $(BN_LIB) $(BN_LIBS) -o $@

.PHONY: bench bench-quick bench-saturate bench-build bench-guest bench-clean bench-hitcost
bench-build: $(BN_OUT)/nowait-bench $(BN_OUT)/nowait-bench.static $(BN_OUT)/nowait-hitcost

bench-hitcost: $(BN_OUT)/nowait-hitcost
	for t in 1 2; do for s in 512 16384; do \
		$(BN_OUT)/nowait-hitcost --threads $$t --size $$s $(HITCOST_ARGS) || exit 1; done; done

bench: bench-build
	$(BN_OUT)/nowait-bench --dir $(BENCH_DIR) --json $(BN_OUT)/bench.json \
		--txt $(BN_OUT)/bench.txt $(BENCH_ARGS)
	$(BN_TOP)/bench/plot.sh $(BN_OUT)/bench.json $(BN_OUT)/bench.png

bench-quick: bench-build
	$(BN_OUT)/nowait-bench --quick --dir $(BENCH_DIR) --json $(BN_OUT)/bench-quick.json \
		--txt $(BN_OUT)/bench-quick.txt $(BENCH_ARGS)
	$(BN_TOP)/bench/plot.sh $(BN_OUT)/bench-quick.json $(BN_OUT)/bench-quick.png

bench-saturate: bench-build
	$(BN_OUT)/nowait-bench --scenario saturate --dir $(BENCH_DIR) --json $(BN_OUT)/bench-saturate.json \
		--txt $(BN_OUT)/bench-saturate.txt $(BENCH_ARGS)
	$(BN_TOP)/bench/plot.sh $(BN_OUT)/bench-saturate.json $(BN_OUT)/bench-saturate.png

bench-guest:
	$(BN_TOP)/harness/bench-guest.sh $(BENCH_GUEST_ARGS)

bench-clean:
	rm -f $(BN_OUT)/nowait-bench $(BN_OUT)/nowait-bench.static $(BN_OUT)/nowait-hitcost $(BN_OUT)/bench*.json \
		$(BN_OUT)/bench*.txt $(BN_OUT)/bench*.png $(BN_OUT)/guest-*

clean: bench-clean

.DEFAULT_GOAL := $(bn_default_goal)
