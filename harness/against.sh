#!/usr/bin/env bash
# Run the tests that pin down a review's findings on the series as it was
# before the fixes: there they must fail, as they pass on the series of
# this clone. The old series is taken from the repository's history (the
# last commit before the fixes), applied by this clone's harness in a
# worktree under the cache, and built like any tree (ccache keeps a second
# run short).
#
#   harness/against.sh v1|v2     (make against-v1, against-v2;
#                                 build/against-VERSION.txt)
#
# v1: the v2 review's findings, fixed by series v2.
# v2: the v3 review's findings, fixed by the patches after the 52 of v2.
set -euo pipefail
# Both old series are on 6.12.
export NOWAIT_BASE=6.12
. "$(dirname "$0")/lib.sh"

version=${1:-}
case $version in
v1)
	old=c6c5d57	# "nowait.h: comments for NOWAIT_BLOCKING...": the last of v1
	tests='nowait_[laitrw]*'
	cases="lifetime.ext2.umount_right_after_miss lifetime.ext4_blockmap.umount_right_after_miss
		lifetime.ext4.flock_released_by_close_after_miss atime.ext4.cached_read_updates_atime
		shm.tmpfs.hit_while_a_writer_holds_the_folio_lock
		ovlcopy.copied_up_after_open_served_after_a_blocking_read
		ovlmeta.metacopy_cached_read_hits write.xfs.cached_overwrite write.xfs.direct_overwrite"
	;;
v2)
	old=a913378	# "harness: the guests' shared kernel arguments...": the last of v2
	tests='nowait_alloc*+nowait_isolation*+nowait_block_write*'
	cases="isolation.healthy_fuse_read_beside_a_stopped_daemon
		isolation.unrelated_umount_beside_a_stopped_daemon
		nearfull.ext4.flagged_appends_never_sleep
		fatsearch.flagged_append_gets_past_full_fat_blocks
		exfatend.flagged_append_at_the_end_of_the_volume
		iomap.partial_write_of_an_evicted_page_gets_through"
	;;
*) die "usage: $0 v1|v2" ;;
esac
wt=$NOWAIT_CACHE/$version-tree
out=$NOWAIT_OUT/against-$version.txt log=$NOWAIT_OUT/console-against-$version.log

git -C "$NOWAIT_ROOT" cat-file -e "$old^{commit}" 2>/dev/null ||
	die "commit $old (series $version) is not in this clone's history: clone without --depth"
# A fresh worktree of this clone each time: another clone may have left one.
rm -rf "$wt"
git -C "$NOWAIT_ROOT" worktree prune
git -C "$NOWAIT_ROOT" worktree add -q --detach "$wt" HEAD
# This clone's harness and config, the old series' patches (kept in
# kernel/ before kernel/6.12/ was made).
git -C "$wt" rm -q -r kernel/6.12
git -C "$wt" checkout -q "$old" -- kernel/patches kernel/series
mkdir -p "$wt/kernel/6.12"
git -C "$wt" mv kernel/patches kernel/series kernel/6.12/
say "$version: $(grep -cv '^\s*\(#\|$\)' "$wt/kernel/6.12/series") patches from $old"
kernel=$(phase "kernel build ($version)" env NOWAIT_OUT="$wt/build" "$wt/harness/kernel.sh")
guest_image >&2
rc=0
NOWAIT_APPEND="NOWAIT_TESTS=$tests ${NOWAIT_APPEND:-}" \
	"$NOWAIT_ROOT/harness/boot.sh" "$kernel" "$NOWAIT_OUT/initramfs.cpio" check "$log" 1800 || rc=$?
awk -f "$NOWAIT_ROOT/harness/tap.awk" "$log" >"$out"
say "$version run: status $rc, $(grep -c '^PASS' "$out") passed, $(grep -c '^FAIL' "$out") failed; $out"
# v2's metadata finding: the crash test's skipped-worker case, per filesystem.
if [ "$version" = v2 ]; then
	"$NOWAIT_ROOT/harness/crash.sh" "$kernel" >"$NOWAIT_OUT/against-v2-crash.txt" || true
	grep 'no worker:' "$NOWAIT_OUT/against-v2-crash.txt" | sed "s/^\(PASS\|FAIL\) /\1 on v2: /" || echo "none on v2: nowait-crash no worker"
fi
# Each finding's case must fail on the old series.
for c in $cases; do
	for abi in x86_64 i386; do
		r=$(grep -E "^(PASS|FAIL|SKIP) [a-z_]+\.$abi: $c\$" "$out" | cut -d' ' -f1)
		echo "${r:-none} on $version: $c ($abi)"
	done
done
