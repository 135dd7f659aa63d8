#!/usr/bin/env bash
# Run the tests that pin down the v2 review's findings on a kernel with v1
# of the series: there they must fail, as they pass on v2. v1 is taken from
# the repository's history (the last commit before v2), applied by this
# clone's harness in a worktree under the cache, and built like any tree
# (ccache keeps a second run short).
#
#   harness/against-v1.sh     (make against-v1; build/against-v1.txt)
set -euo pipefail
. "$(dirname "$0")/lib.sh"

v1=c6c5d57	# "nowait.h: comments for NOWAIT_BLOCKING...": the last of v1
wt=$NOWAIT_CACHE/v1-tree
out=$NOWAIT_OUT/against-v1.txt log=$NOWAIT_OUT/console-against-v1.log

git -C "$NOWAIT_ROOT" cat-file -e "$v1^{commit}" 2>/dev/null ||
	die "commit $v1 (series v1) is not in this clone's history: clone without --depth"
# A fresh worktree of this clone each time: another clone may have left one.
rm -rf "$wt"
git -C "$NOWAIT_ROOT" worktree prune
git -C "$NOWAIT_ROOT" worktree add -q --detach "$wt" HEAD
# This clone's harness and config, v1's patches.
git -C "$wt" rm -q -r kernel/patches kernel/series
git -C "$wt" checkout -q "$v1" -- kernel/patches kernel/series
say "v1: $(grep -cv '^\s*\(#\|$\)' "$wt/kernel/series") patches from $v1"
kernel=$(phase "kernel build (v1)" env NOWAIT_OUT="$wt/build" "$wt/harness/kernel.sh")
guest_image >&2
rc=0
NOWAIT_APPEND="NOWAIT_TESTS=nowait_[laitrw]* ${NOWAIT_APPEND:-}" \
	"$NOWAIT_ROOT/harness/boot.sh" "$kernel" "$NOWAIT_OUT/initramfs.cpio" check "$log" 1800 || rc=$?
awk -f "$NOWAIT_ROOT/harness/tap.awk" "$log" >"$out"
say "v1 run: status $rc, $(grep -c '^PASS' "$out") passed, $(grep -c '^FAIL' "$out") failed; $out"
# The cases each finding has (README, "Series v2"); each must fail on v1.
for c in lifetime.ext2.umount_right_after_miss lifetime.ext4_blockmap.umount_right_after_miss \
	lifetime.ext4.flock_released_by_close_after_miss atime.ext4.cached_read_updates_atime \
	shm.tmpfs.hit_while_a_writer_holds_the_folio_lock ovlcopy.copied_up_after_open_served_after_a_blocking_read \
	ovlmeta.metacopy_cached_read_hits write.xfs.cached_overwrite write.xfs.direct_overwrite; do
	for abi in x86_64 i386; do
		r=$(grep -E "^(PASS|FAIL|SKIP) [a-z_]+\.$abi: $c\$" "$out" | cut -d' ' -f1)
		echo "${r:-none} on v1: $c ($abi)"
	done
done
