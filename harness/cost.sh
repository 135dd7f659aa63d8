#!/usr/bin/env bash
# Stock against patched: what a cached 16 KiB call costs in guest
# instructions, for "no cost on the unflagged path" (issue 12, item 6). A
# plain pread, a flagged preadv2 hit and a plain pwrite over cached data, on
# ext4, xfs and tmpfs, counted by tools/nowait-cost in the guest under QEMU's
# -icount shift=0 (boot.sh's NOWAIT_ICOUNT=1: one guest instruction, one ns
# of the guest's clock), one vCPU. Wall time under TCG varies by about 30%
# between boots; instruction counts do not depend on the host's load.
#
#   harness/cost.sh [--stock BZIMAGE] [--patched BZIMAGE] [--boots N]
#
# Kernels come from harness/kernel.sh (built when needed, as for
# compare.sh) unless given; each is copied first, so that a build that
# replaces it meanwhile does not mix two pairs. --boots: boots per kernel,
# alternating stock and patched (default 3). NOWAIT_COST_ARGS passes options
# to nowait-cost (e.g. "--calls 4000 --reps 9").
# Writes build/cost/cost.md (the table) and cost.json, beside each boot's
# console and JSON. Exits 0 when every boot gave its figures, whether or not
# they meet the 1% goal (the table says).
set -euo pipefail
. "$(dirname "$0")/lib.sh"

stock='' patched='' boots=3
while [ $# -gt 0 ]; do
	case $1 in
	--stock) stock=$2; shift ;;
	--patched) patched=$2; shift ;;
	--boots) boots=$2; shift ;;
	*) die "usage: $0 [--stock BZIMAGE] [--patched BZIMAGE] [--boots N]" ;;
	esac
	shift
done
out=$NOWAIT_OUT/cost
rm -rf "$out" && mkdir -p "$out"

stock=$(kernel_for stock "$stock")
patched=$(kernel_for patched "$patched")
for name in stock patched; do
	kernel=${!name}
	mkdir -p "$out/$name"
	cp "$kernel" "$out/$name/bzImage"
	# harness/kernel.sh's note of the tree and config, when there is one.
	version=$(cat "$(dirname "$kernel")/version" 2>/dev/null || echo "unknown tree")
	echo "$version, built $(date -u -r "$kernel" +%FT%TZ), $kernel" >"$out/$name/version"
	say "cost: $name kernel: $(cat "$out/$name/version")"
done
# Same config, or the comparison says nothing about the series.
config() { sed 's/.*patch(es), //; s/, built .*//' "$out/$1/version"; }
[ "$(config stock)" = "$(config patched)" ] ||
	say "cost: warning: the two kernels' configs differ (see $out/*/version)"

guest_image

append=
[ -z "${NOWAIT_COST_ARGS:-}" ] || append="NOWAIT_COST_ARGS=$(echo "$NOWAIT_COST_ARGS" | tr ' ' ,)"
for i in $(seq "$boots"); do
	for name in stock patched; do
		log=$out/console-$name-$i.log
		NOWAIT_ICOUNT=1 NOWAIT_SMP=1 NOWAIT_APPEND="$append ${NOWAIT_APPEND:-}" \
			phase "cost ($name, boot $i of $boots)" nice -n 19 "$NOWAIT_ROOT/harness/boot.sh" \
			"$out/$name/bzImage" "$NOWAIT_OUT/initramfs.cpio" cost "$log" 1800
		json_from "$log" "$out/cost-$name-$i.json"
	done
done

python3 "$NOWAIT_ROOT/harness/cost-table.py" "$out" | tee "$out/cost.md"
say "cost: table in $out/cost.md, JSON in $out/cost.json"
