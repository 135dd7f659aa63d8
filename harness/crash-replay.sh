#!/usr/bin/env bash
# make crash-replay: crash states replayed, stock kernel against patched.
# On each kernel, one guest boot (job crash-replay, harness/guest/crash-replay.sh)
# records tools/nowait-replay-load (flagged writes with blocking fallback,
# appends, overwrites, truncates, renames, fsyncs, several threads) through
# dm-log-writes on ext4, xfs, btrfs, ext2, vfat and exfat, replays the log
# with fstests' replay-log to every FLUSH and FUA entry, every mark and the
# entries halfway between them, and at each state runs fsck and checks
# that what fsync promised is there (tools/nowait-replay-check.c).
#
#   harness/crash-replay.sh [--stock BZIMAGE] [--patched BZIMAGE]
#       [--fs "ext4 xfs ..."] [--seed N] [--ops N] [--threads N] [--states N]
#       [--kernels "stock patched"] [--out DIR]
#
# --states caps the states checked per filesystem (default: all of them).
# Without --stock/--patched the trees are built (harness/kernel.sh).
# Writes DIR (default build/crash-replay)/{crash-replay.md,crash-replay.json} and
# prints the table; fails when the patched kernel has a broken state on a
# filesystem with a journal, or more broken states than stock on one
# without, or a self-test of the checks was not flagged.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

stock="" patched="" fslist="ext4 xfs btrfs ext2 vfat exfat" seed=1 ops=10 threads=4 states=""
kernels="stock patched" out=$NOWAIT_OUT/crash-replay
while [ $# -gt 0 ]; do
	case $1 in
	--stock) stock=$2; shift 2 ;;
	--patched) patched=$2; shift 2 ;;
	--fs) fslist=$2; shift 2 ;;
	--seed) seed=$2; shift 2 ;;
	--ops) ops=$2; shift 2 ;;
	--threads) threads=$2; shift 2 ;;
	--states) states=$2; shift 2 ;;
	--kernels) kernels=$2; shift 2 ;;
	--out) out=$2; shift 2 ;;
	*) die "unknown option $1 (see the head of $0)" ;;
	esac
done
rm -rf "$out" && mkdir -p "$out"

# fstests' replay-log, from the fstests build make regress uses.
suites=$(NOWAIT_LTP=0 phase "fstests build" "$NOWAIT_ROOT/harness/regress-suites.sh")
replay_log=$(awk '$1 == "fstests" { print $2 }' <<<"$suites")/src/log-writes/replay-log
[ -x "$replay_log" ] || die "no replay-log in the fstests build ($replay_log)"
NOWAIT_REPLAY_LOG=$replay_log guest_image
image=$NOWAIT_OUT/initramfs.cpio

# watch LOG PID: every 30 s, the guest's latest progress line.
watch() {
	local last=
	while kill -0 "$2" 2>/dev/null; do
		sleep 30
		local line
		line=$(tr -d '\r' <"$1" 2>/dev/null | grep -a '^nowait-replay: ' | grep -av '^nowait-replay:   ' | tail -n 1 || true)
		[ -z "$line" ] || [ "$line" = "$last" ] || say "${line#nowait-replay: }"
		last=$line
	done
}

rc=0
for k in $kernels; do
	given=$stock
	[ "$k" = patched ] && given=$patched
	kernel=$(kernel_for "$k" "$given")
	log=$out/console-$k.log
	say "crash-replay: $k kernel $kernel, filesystems $fslist, seed $seed"
	NOWAIT_EXTRA_DISKS="logw:2G" \
		NOWAIT_APPEND="NOWAIT_REPLAY_SEED=$seed NOWAIT_REPLAY_OPS=$ops NOWAIT_REPLAY_THREADS=$threads NOWAIT_REPLAY_FS=$(tr ' ' + <<<"$fslist")${states:+ NOWAIT_REPLAY_STATES=$states} ${NOWAIT_APPEND:-}" \
		"$NOWAIT_ROOT/harness/boot.sh" "$kernel" "$image" crash-replay "$log" "${NOWAIT_BOOT_TIMEOUT:-7200}" &
	boot=$!
	watch "$log" "$boot" &
	watcher=$!
	brc=0
	wait "$boot" || brc=$?
	kill "$watcher" 2>/dev/null || true
	wait "$watcher" 2>/dev/null || true
	[ "$brc" = 0 ] || { say "crash-replay: $k boot ended with status $brc (console $log)"; rc=1; }
	tr -d '\r' <"$log" | grep -a '^nowait-replay: .*\(self-test\|failed\|log entries\|load:\)' | sed 's/^/  /' >&2 || true
	tr -d '\r' <"$log" | grep -a '^nowait-replay-load: ' | sed 's/^/  /' >&2 || true
	for fs in $fslist; do
		json_from "$log" "$out/$k-$fs.json" "replay-$fs" || rc=1
	done
done

python3 "$NOWAIT_ROOT/harness/crash-replay-table.py" "$out" "$fslist" "$kernels" || rc=1
exit "$rc"
