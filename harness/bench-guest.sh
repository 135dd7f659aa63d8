#!/usr/bin/env bash
# libnowait's benchmark in the guest, stock kernel against patched, on tmpfs,
# on overlayfs (lower layer on xfs) and on ext4 with fragmented files, steady
# and with the disk saturated (guest/init's bench job); the disks sit behind
# a read throttle of NOWAIT_READ_IOPS (default 200) reads/s.
#
#   harness/bench-guest.sh [--stock BZIMAGE] [--patched BZIMAGE]
#                          [--fs "tmpfs ovl ext4 ext4-saturate"] [--timeout S]
#   (make bench-guest BENCH_GUEST_ARGS="...")
#
# Without --stock and --patched it builds both trees (harness/kernel.sh).
# --fs picks the targets (default all four); --timeout bounds each boot
# (default 2400 s). NOWAIT_BENCH_ARGS adds nowait-bench options (default:
# --duration 10). Writes build/bench-guest.md, and per kernel and target
# the JSON and a latency CDF plot as build/bench/guest-KERNEL-TARGET.{json,png}.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

stock="" patched="" targets="tmpfs ovl ext4 ext4-saturate" limit=2400
# shellcheck disable=SC2034 # stock and patched are read as ${!label}
while [ $# -gt 0 ]; do
	case $1 in
	--stock) stock=$2; shift ;;
	--patched) patched=$2; shift ;;
	--fs) targets=$2; shift ;;
	--timeout) limit=$2; shift ;;
	*) die "usage: $0 [--stock K] [--patched K] [--fs 'tmpfs ovl ext4 ext4-saturate'] [--timeout S]" ;;
	esac
	shift
done
iops=${NOWAIT_READ_IOPS:-200}
bench_args=${NOWAIT_BENCH_ARGS:---duration 10}
phase "dependencies" "$NOWAIT_ROOT/harness/deps.sh"
phase "benchmark build" make -s -C "$NOWAIT_ROOT" bench-build
guest_image

for name in stock patched; do
	kernel=$(kernel_for "$name" "${!name}")
	log=$NOWAIT_OUT/console-bench-$name.log
	# The benchmark's arguments travel as environment variables of init;
	# the kernel splits its command line at spaces, so they use + for a
	# space (commas stay commas: --modes and --mib take lists).
	NOWAIT_READ_IOPS=$iops NOWAIT_MEM=3072 \
		NOWAIT_APPEND="NOWAIT_BENCH_ARGS=${bench_args// /+} NOWAIT_BENCH_FS=${targets// /+}" \
		phase "benchmark ($name)" "$NOWAIT_ROOT/harness/boot.sh" \
		"$kernel" "$NOWAIT_OUT/initramfs.cpio" bench "$log" "$limit"
	for fs in $targets; do
		json=$NOWAIT_OUT/bench/guest-$name-$fs.json
		json_from "$log" "$json" "$fs"
		"$NOWAIT_ROOT/bench/plot.sh" "$json" "${json%.json}.png"
	done
done

python3 "$NOWAIT_ROOT/harness/bench-guest-table.py" "$NOWAIT_OUT/bench" "$iops" $targets |
	tee "$NOWAIT_OUT/bench-guest.md"
