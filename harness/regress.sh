#!/usr/bin/env bash
# The field's regression suites, fstests and LTP, on the stock and the patched
# kernel in QEMU (TCG) on a Debian 12 guest; writes build/regress/regress.md
# (tables per filesystem, stock against patched, each failure classified) and
# build/regress/regress.json.
#
#   harness/regress.sh [--stock BZIMAGE] [--patched BZIMAGE] [--debug] [--suites "ltp fstests"]
#                      [--fs "tmpfs overlay ext4 ..."] [--tiers "1 2 3"] [--budget SECONDS]
#                      [--jobs N] [--tests "generic/788 generic/789 preadv204"]
#
# Kernels not given are built (harness/kernel.sh [--stock]), so that the run
# works from a fresh clone. --debug (make regress-debug): both trees with the
# debug config (KASAN, lockdep, DEBUG_ATOMIC_SLEEP), results in
# build/regress-debug/; no cost measurement (a debug kernel's instruction
# counts say nothing about the shipped one), and a kernel splat on the
# patched kernel that stock does not have fails the run.
# --tiers: the tiers of harness/regress/fstests-select.sh to run (default
# "1 2", about 90 minutes of fstests on an idle host; tier 3 took 1834 s on
# ext4 alone, with four guests on two CPUs). --budget: guest seconds each
# boot may spend on its suite (default 6600: tiers 1 and 2 took about
# 5300 s on an idle host, timed in parts, and a host that also ran other
# guests cut them short at 5400); tests it does not reach are reported as
# not reached, never as passed. A suite that ends sooner ends its boot.
# --boots "stock-ltp ...": run only these boots (e.g. one that failed), keep
# the others' results, and make the tables from all of them.
# --tests LIST runs just these tests instead of the selections: NAME/NNN
# names an fstests test (run on every filesystem of --fs), anything else an
# LTP runtest line (preadv204); the suites are those the list names, unless
# --suites says otherwise.
# --jobs N runs up to N boots at once (default 2: the two kernels side by
# side, the same selection in the same window; 4: both suites too).
# After the suites, harness/cost.sh measures the same two kernels' unflagged
# path in instructions (issue 12, item 6), and its table and JSON go to
# build/regress/cost.{md,json}; --no-cost leaves it out.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/regress/lib.sh"

stock="" patched="" debug=""
suites="ltp fstests"
fslist="tmpfs overlay ext4 xfs btrfs vfat exfat"
tiers="1 2" budget=6600 jobs=2 boots="" cost=1 tests="" suites_given=0
while [ $# -gt 0 ]; do
	case $1 in
	--stock) stock=$2; shift ;;
	--patched) patched=$2; shift ;;
	--suites) suites=$2; suites_given=1; shift ;;
	--fs) fslist=$2; shift ;;
	--tiers) tiers=$2; shift ;;
	--budget) budget=$2; shift ;;
	--jobs) jobs=$2; shift ;;
	--boots) boots=$2; shift ;;
	--no-cost) cost=0 ;;
	--debug) debug=debug cost=0 ;;
	--tests) tests=$(tr ',' ' ' <<<"$2"); shift ;;
	*) die "usage: $0 [--stock K] [--patched K] [--debug] [--suites S] [--fs F] [--tiers T] [--budget S] [--jobs N] [--boots 'LABEL-SUITE ...'] [--tests 'TEST ...'] [--no-cost]" ;;
	esac
	shift
done
fst_tests="" ltp_tests=""
for t in $tests; do
	case $t in */*) fst_tests+=" $t" ;; *) ltp_tests+=" $t" ;; esac
done
if [ -n "$tests" ] && [ "$suites_given" = 0 ]; then
	suites=""
	[ -z "$ltp_tests" ] || suites+=" ltp"
	[ -z "$fst_tests" ] || suites+=" fstests"
fi
# wanted LABEL SUITE: does this run boot LABEL's kernel for SUITE?
wanted() {
	[[ " $suites " == *" $2 "* ]] && { [ -z "$boots" ] || [[ " $boots " == *" $1-$2 "* ]]; }
}
# The kernels a wanted boot needs, built one after the other when not given.
for label in stock patched; do
	for suite in $suites; do
		wanted $label "$suite" || continue
		k=$(kernel_for "$label" "${!label}" $debug)
		printf -v "$label" '%s' "$k"
	done
done
out=$NOWAIT_OUT/regress${debug:+-debug}
mkdir -p "$out"
t0=$(date +%s)

phase "packages" "$NOWAIT_ROOT/harness/deps.sh"
rootfs=$("$NOWAIT_ROOT/harness/regress-image.sh")
suitelist=$("$NOWAIT_ROOT/harness/regress-suites.sh")
fstests=$(awk '$1 == "fstests" {print $2}' <<<"$suitelist")
ltp=$(awk '$1 == "ltp" {print $2}' <<<"$suitelist")
ltp32=$(awk '$1 == "ltp32" {print $2}' <<<"$suitelist")

# The guest's job files: the fstests selection per filesystem and LTP's runtest lines.
jobdir=$out/job
regress_job_dir "$jobdir"
for tier in 1 2 3; do
	for fs in $fslist; do
		if [ -n "$tests" ]; then
			[ $tier != 1 ] || for t in $fst_tests; do echo "$t # --tests"; done
		elif [[ " $tiers " == *" $tier "* ]]; then
			"$NOWAIT_ROOT/harness/regress/fstests-select.sh" "$fs" $tier
		fi >"$jobdir/fstests.$tier.$fs"
	done
done
if [ -z "$tests" ]; then
	"$NOWAIT_ROOT/harness/regress/ltp-select.sh" "$ltp/runtest/syscalls"
else
	for t in $ltp_tests; do
		grep -E "^$t[[:space:]]" "$ltp/runtest/syscalls" || die "--tests: no LTP runtest line $t"
	done
fi >"$jobdir/ltp.runtest"
say "selection: fstests $(cat "$jobdir"/fstests.* | sed 's/#.*//' | wc -w) test runs over $(echo $fslist | wc -w) filesystems, LTP $(grep -c . "$jobdir/ltp.runtest") tests per ABI"

# Two images, both booted as snapshots so that both kernels share them. The
# root: the Debian tree and a launcher (regress_root_image). The suites:
# fstests, LTP and the job, remade when any of them changes; the launcher
# mounts it on /opt/suites and runs its regress/guest.sh.
rootimg=$(regress_root_image "$rootfs")
# The builds' .built files name the patch series of ours they carry.
key=$( (echo "$fstests $ltp $ltp32"; cat "$fstests/.built" "$ltp/.built" "$jobdir"/*) | sha256sum | cut -c1-12)
suitesimg=$NOWAIT_CACHE/regress/suites-$key.img
# Under the cache lock, in a subshell that lets it go: the stage folder is
# shared, as the root image is (regress_root_image).
(
	cache_lock regress/suites-image
	[ ! -e "$suitesimg" ] || exit 0
	stage=$NOWAIT_CACHE/regress/stage
	say "image: writing $suitesimg"
	rm -rf "$stage" && mkdir -p "$stage"
	# fstests runs from its build tree; its objects and sources are not needed.
	rsync -a --exclude '*.o' --exclude '*.lo' --exclude '.libs' --exclude '*.c' "$fstests/" "$stage/xfstests/"
	cp -a "$ltp" "$stage/ltp"
	[ -z "$ltp32" ] || cp -a "$ltp32" "$stage/ltp32"
	cp -a "$jobdir" "$stage/regress"
	rm -f "$NOWAIT_CACHE"/regress/suites-*.img
	nice -n 19 mkfs.ext4 -q -F -L regress-suites -d "$stage" "$suitesimg.tmp" 2G >&2
	mv "$suitesimg.tmp" "$suitesimg"
	rm -rf "$stage"
)
say "image: $rootimg, $suitesimg"

# boot LABEL KERNEL SUITE: one guest run; results in $out/LABEL-SUITE/.
boot() {
	local label=$1 kernel=$2 suite=$3 dir=$out/$1-$3
	regress_boot "$dir" "$kernel" "$rootimg" "$suitesimg" "$budget" \
		"regress.suite=$suite regress.fs=$(echo $fslist | tr ' ' ,) regress.label=$label" \
		test:4G scratch:4G ltp:6G results:1G
	say "boot: $label $suite: $(grep -ac '^regress: [a-z0-9-]* ' "$dir/console.log" || true) console result lines"
}

# Boots: each suite on each kernel, up to --jobs at once; stock and patched
# of a suite side by side when jobs >= 2, so that both see the same machine.
running=0
for suite in $suites; do
	for label in stock patched; do
		wanted $label "$suite" || continue
		kernel=$stock
		[ $label = patched ] && kernel=$patched
		if [ "$running" -ge "$jobs" ]; then
			wait -n || true
			running=$((running - 1))
		fi
		boot "$label" "$kernel" "$suite" &
		running=$((running + 1))
		sleep 5
	done
done
wait

status=0 cost_status=0
if [ "$cost" = 1 ]; then
	if phase "cost of the unflagged path" "$NOWAIT_ROOT/harness/cost.sh" --stock "$stock" --patched "$patched"; then
		cp "$NOWAIT_OUT/cost/cost.md" "$NOWAIT_OUT/cost/cost.json" "$out/"
		grep -q '^Unflagged paths: all within' "$out/cost.md" ||
			say "regress: the unflagged path costs more than 1% more on the patched kernel (see $out/cost.md)"
	else
		cost_status=1
	fi
fi
# shellcheck disable=SC2086 # one argument per suite
NOWAIT_SPLAT=$NOWAIT_SPLAT python3 "$NOWAIT_ROOT/harness/regress/table.py" "$out" "$NOWAIT_ROOT/harness/regress/known.txt" $suites || status=$?
[ "$cost" = 0 ] || [ ! -e "$out/cost.md" ] || cat "$out/cost.md"
say "regress: $(($(date +%s) - t0)) s; tables in $out/regress.md, JSON in $out/regress.json"
[ "$status" = 0 ] || say "regress: new failures on the patched kernel (see the table)"
[ "$cost_status" = 0 ] || { say "regress: the cost measurement failed (consoles in $NOWAIT_OUT/cost/)"; status=1; }
exit "$status"
