#!/usr/bin/env bash
# libnowait's benchmark in the guest, stock kernel against patched, on tmpfs
# and on overlayfs (lower layer on xfs behind a disk throttled to
# NOWAIT_READ_IOPS, default 200, reads/s): the filesystems where the stock
# tree answers RWF_NOWAIT with EOPNOTSUPP and the patched one reads inline.
#
#   harness/bench-guest.sh      (make bench-guest)
#
# NOWAIT_BENCH_ARGS adds nowait-bench options (default: --duration 10).
# Writes build/bench-guest.md, and per kernel and filesystem the JSON and a
# latency CDF plot as build/bench/guest-KERNEL-FS.{json,png}.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

iops=${NOWAIT_READ_IOPS:-200}
bench_args=${NOWAIT_BENCH_ARGS:---duration 10}
phase "dependencies" "$NOWAIT_ROOT/harness/deps.sh"
phase "benchmark build" make -s -C "$NOWAIT_ROOT" bench-build
guest_image

for name in stock patched; do
	kernel=$(kernel_tree "$name")
	log=$NOWAIT_OUT/console-bench-$name.log
	# The benchmark's arguments travel as an environment variable of init;
	# the kernel splits its command line at spaces, so they use commas.
	NOWAIT_READ_IOPS=$iops NOWAIT_MEM=3072 NOWAIT_APPEND="NOWAIT_BENCH_ARGS=${bench_args// /,}" \
		phase "benchmark ($name)" "$NOWAIT_ROOT/harness/boot.sh" \
		"$kernel" "$NOWAIT_OUT/initramfs.cpio" bench "$log" 2400
	for fs in tmpfs ovl; do
		json=$NOWAIT_OUT/bench/guest-$name-$fs.json
		json_from "$log" "$json" "$fs"
		"$NOWAIT_ROOT/bench/plot.sh" "$json" "${json%.json}.png"
	done
done

python3 "$NOWAIT_ROOT/harness/bench-guest-table.py" "$NOWAIT_OUT/bench" "$iops" | tee "$NOWAIT_OUT/bench-guest.md"
