#!/usr/bin/env bash
# Stock against patched, on the same config and the same QEMU disks: the
# capability probe's table for each, and the blocking detector on ext4
# behind a disk throttled to NOWAIT_READ_IOPS (default 200) reads/s, and on
# each network filesystem with its server behind that disk (and 50 ms of
# netem delay for nfs and cifs); and flagged writes on every local
# filesystem under dirty pressure (nowait-blockstat --write, in the same
# boot as the ext4 reads).
#
#   harness/compare.sh [--parts "probe blockstat netfs uring hostile"] [--stock BZIMAGE]
#                      [--patched BZIMAGE]                     (make compare)
#
# --parts runs only these boots on each kernel: probe (the capability
# table), blockstat (ext4 reads and every local filesystem's writes, the
# long one), netfs (the network filesystems) and uring (cold buffered
# io_uring reads at queue depth 1, 8 and 32 on ext4 and xfs, disk not
# throttled: tools/nowait-uring-qd.c) and hostile (the blocking detector's
# hostile phases: every local filesystem 92% full, behind a 4-request
# queue, frozen, and ext4 and xfs beside a stopped FUSE daemon; reads
# throttled as for blockstat); the tables of the others are left out.
# Default: all five. --stock and --patched boot the given kernels
# instead of building the trees.
#
# Writes build/compare.md (the tables in README.md come from it), the JSON
# of every run beside it, and build/compare-write.json, the write figures
# stock against patched.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

iops=${NOWAIT_READ_IOPS:-200}
# Writes to the disks of the blocking detector's boot, in bytes/s: slower
# than the guest dirties memory even when a loaded host starves it, so its
# flagged writes meet dirty pages at the limit (the setup of the ext4 read
# files, 320 MiB, takes some 80 s longer for it).
wbps=${NOWAIT_WRITE_BPS:-4194304}
parts="probe blockstat netfs uring hostile"
given_stock= given_patched=
while [ $# -gt 0 ]; do
	case $1 in
	--parts) parts=$2; shift ;;
	--stock) given_stock=$2; shift ;;
	--patched) given_patched=$2; shift ;;
	*) die "usage: $0 [--parts \"probe blockstat netfs uring hostile\"] [--stock BZIMAGE] [--patched BZIMAGE]" ;;
	esac
	shift
done
for part in $parts; do
	case $part in probe | blockstat | netfs | uring | hostile) ;; *) die "compare: no part $part (probe, blockstat, netfs, uring, hostile)" ;; esac
done
wanted() { [[ " $parts " == *" $1 "* ]]; }
phase "dependencies" "$NOWAIT_ROOT/harness/deps.sh"
guest_image
# Only the probe's and the network filesystems' boots use the cluster.
if wanted probe || wanted netfs; then
	ceph_cluster || say "ceph: no cluster, so no ceph row"
fi

# A part left out must not leave an earlier run's JSON to be tabled.
for name in stock patched; do
	wanted probe || rm -f "$NOWAIT_OUT/probe-$name.json"
	wanted blockstat || rm -f "$NOWAIT_OUT/blockstat-$name.json" "$NOWAIT_OUT/blockstat-write-$name.json"
	wanted netfs || rm -f "$NOWAIT_OUT/blockstat-netfs-$name.json"
	wanted uring || rm -f "$NOWAIT_OUT/uring-qd-$name.json"
	wanted hostile || rm -f "$NOWAIT_OUT/blockstat-hostile-$name.json"
done
for name in stock patched; do
	given=$given_stock
	[ "$name" = patched ] && given=$given_patched
	kernel=$(kernel_for "$name" "$given")
	if wanted probe; then
		log=$NOWAIT_OUT/console-probe-$name.log
		phase "probe ($name)" "$NOWAIT_ROOT/harness/boot.sh" "$kernel" "$NOWAIT_OUT/initramfs.cpio" demo "$log" 600
		json_from "$log" "$NOWAIT_OUT/probe-$name.json"
	fi
	if wanted blockstat; then
		log=$NOWAIT_OUT/console-blockstat-$name.log
		NOWAIT_READ_IOPS=$iops NOWAIT_WRITE_BPS=$wbps phase "blocking detector ($name)" "$NOWAIT_ROOT/harness/boot.sh" \
			"$kernel" "$NOWAIT_OUT/initramfs.cpio" blockstat "$log" 2700
		json_from "$log" "$NOWAIT_OUT/blockstat-$name.json"
		json_from "$log" "$NOWAIT_OUT/blockstat-write-$name.json" write
	fi
	if wanted netfs; then
		log=$NOWAIT_OUT/console-blockstat-netfs-$name.log
		NOWAIT_READ_IOPS=$iops phase "blocking detector, network filesystems ($name)" \
			"$NOWAIT_ROOT/harness/boot.sh" "$kernel" "$NOWAIT_OUT/initramfs.cpio" blockstat-netfs "$log" 1800
		json_from "$log" "$NOWAIT_OUT/blockstat-netfs-$name.json"
	fi
	if wanted uring; then
		log=$NOWAIT_OUT/console-uring-qd-$name.log
		phase "io_uring queue depth ($name)" "$NOWAIT_ROOT/harness/boot.sh" \
			"$kernel" "$NOWAIT_OUT/initramfs.cpio" uring-qd "$log" 1800
		json_from "$log" "$NOWAIT_OUT/uring-qd-$name.json"
	fi
	if wanted hostile; then
		log=$NOWAIT_OUT/console-blockstat-hostile-$name.log
		NOWAIT_READ_IOPS=$iops phase "blocking detector, hostile setups ($name)" \
			"$NOWAIT_ROOT/harness/boot.sh" "$kernel" "$NOWAIT_OUT/initramfs.cpio" blockstat-hostile "$log" 2400
		json_from "$log" "$NOWAIT_OUT/blockstat-hostile-$name.json" hostile
	fi
done

python3 "$NOWAIT_ROOT/harness/compare-tables.py" "$NOWAIT_OUT" "$iops" "$wbps" | tee "$NOWAIT_OUT/compare.md"
