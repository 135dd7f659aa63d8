# Shared by the harness scripts: where things live, and how progress is printed.
# shellcheck shell=bash

NOWAIT_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# Everything large or slow to make lives outside the clone, so that CI reuses it.
NOWAIT_CACHE=${NOWAIT_CACHE:-/var/cache/nowait}
NOWAIT_CCACHE=$NOWAIT_CACHE/ccache
# The kernel base (NOWAIT_BASE, make BASE=): 6.12, Debian's linux-source-6.12,
# what Debian 12 and 13 run, with the backport series in kernel/6.12; or 7.3,
# linux-source-7.3 from trixie-backports, the upstream base, with the series
# in kernel/7.3. Each base has its own source tree and builds in the cache,
# and its own results in the clone: 6.12 in build/ (where they always were),
# 7.3 in build/7.3/.
NOWAIT_BASES="6.12 7.3"
NOWAIT_BASE=${NOWAIT_BASE:-6.12}
case $NOWAIT_BASE in
6.12) nowait_base_sfx= NOWAIT_SERIES=3 ;;
7.3) nowait_base_sfx=-7.3 NOWAIT_SERIES= ;;
*) printf 'NOWAIT_BASE=%s: no such base (%s)\n' "$NOWAIT_BASE" "$NOWAIT_BASES" >&2; exit 2 ;;
esac
# NOWAIT_SERIES: the version of the base's series (6.12: v3, docs/series-v3.md);
# the kernel packages of make deb are BASE.N-nowait$NOWAIT_SERIES
# (harness/kernel-deb.sh). 7.3 has no series yet.
export NOWAIT_BASE
KERNEL_PKG=linux-source-$NOWAIT_BASE
NOWAIT_KDIR=$NOWAIT_ROOT/kernel/$NOWAIT_BASE
NOWAIT_SRC=$NOWAIT_CACHE/linux$nowait_base_sfx
NOWAIT_KBUILD=$NOWAIT_CACHE/build$nowait_base_sfx
NOWAIT_OUT=${NOWAIT_OUT:-$NOWAIT_ROOT/build${nowait_base_sfx:+/$NOWAIT_BASE}}
# On every guest's kernel command line (harness/boot.sh, regress_boot).
# no5lvl: -cpu max offers LA57, and while identify_cpu() has cleared
# boot_cpu_data's capabilities, KASAN's bounds follow pgtable_l5_enabled()
# down to 4 levels and take a 5-level address that an interrupt touches
# for a wild access: a false report at 0.004 s of boot, stock kernel too
# (seen in crash.sh's first boot and in make regress-debug). The series
# has nothing to do with page-table levels.
NOWAIT_GUEST_ARGS="no5lvl"

nowait_t0=${nowait_t0:-$(date +%s)}

# What the kernel prints when it is unwell (grep -E): a guest job whose
# console has any of it fails (harness/boot.sh) or says so.
NOWAIT_SPLAT='BUG:|WARNING:|Oops|KASAN|UBSAN|possible circular locking|possible recursive locking|inconsistent lock state|lockdep|INFO: task .* blocked|general protection fault|Kernel panic|RCU stall|stack-protector|list_add corruption|list_del corruption'

say() { printf '[%4ds] %s\n' $(($(date +%s) - nowait_t0)) "$*" >&2; }
die() { say "error: $*"; exit 1; }

# phase NAME CMD...: run CMD and print its wall time.
phase() {
	local name=$1 t rc=0
	shift
	t=$(date +%s)
	say "== $name"
	"$@" || rc=$?
	if [ "$rc" = 0 ]; then
		say "== $name: $(($(date +%s) - t)) s"
	else
		say "== $name: $(($(date +%s) - t)) s, failed (exit $rc)"
	fi
	return "$rc"
}

# cache_lock NAME: wait for, then hold until the calling shell exits, the
# lock $NOWAIT_CACHE/NAME.lock (fd 8). Scripts that make something shared in
# the cache take it, so that two runs at once (make regress beside make
# serve-bench-guest) make it once: the second waits and finds it made.
cache_lock() {
	mkdir -p "$(dirname "$NOWAIT_CACHE/$1")"
	exec 8>"$NOWAIT_CACHE/$1.lock"
	flock 8
}

# Trees kept in the cache (regress-image.sh's rootfs-HASH, deb-check.sh's
# base-HASH) are named by a hash of what they hold, so that clones with
# different lists (a worktree that changes harness/regress/packages) each
# have their own, side by side. TREE.users names the clones that chose TREE
# and for what, one "CLONE SLOT" line each (SLOT: regress-bookworm,
# deb-check-trixie, ...); TREE.use is held shared by a run that reads TREE
# (cache_use). A tree is deleted only when no clone claims it any more and
# no run reads it (cache_claim).

# cache_use TREE: hold TREE.use shared until the calling shell exits, so
# that no cache_claim deletes TREE meanwhile; fails if TREE is gone.
cache_use() {
	local fd
	exec {fd}>"$1.use"
	flock -s "$fd"
	[ -e "$1/.complete" ] || { say "cache: $1 went away"; return 1; }
}

# cache_claim TREE SLOT [FILE...]: under the cache_lock of TREE's folder,
# after TREE is made or found: record that this clone ($NOWAIT_ROOT) uses
# TREE for SLOT, and take this clone's SLOT claim off the other trees of the
# folder with TREE's name before its hash. Claims of clones whose folder is
# gone are dropped too. A tree left without any claim, that no run reads
# (cache_use), is deleted, with its FILEs (%s: its hash; e.g. root-%s.img)
# unless a process has one open (a guest booted from it). Every other tree
# is spared: the trees of other clones' lists, a tree in use, and a tree made
# before claims were recorded (no TREE.users, or its "- made-before-claims"
# line once a clone claimed it), which is left to the user. A maker of
# TREE creates an empty TREE.users before claiming it.
cache_claim() {
	local tree=$1 slot=$2 dir name prefix other clone s left f hash
	shift 2
	dir=$(dirname "$tree")
	name=$(basename "$tree")
	prefix=${name%-*}
	# A tree made before claims existed may still serve a clone whose
	# code does not claim: it keeps a mark that nothing takes off.
	[ -e "$tree.users" ] || echo "- made-before-claims" >"$tree.users"
	grep -qxF "$NOWAIT_ROOT $slot" "$tree.users" || echo "$NOWAIT_ROOT $slot" >>"$tree.users"
	for other in "$dir/$prefix"-*; do
		[ -d "$other" ] && [ "$other" != "$tree" ] || continue
		case $other in *.tmp) continue ;; esac
		[ -e "$other.users" ] || { say "cache: $other has no claims recorded (made before them): kept"; continue; }
		left=$(while read -r clone s; do
			[ -n "$clone" ] || continue
			[ "$clone $s" != "$NOWAIT_ROOT $slot" ] || continue
			[ "$clone" = - ] || [ -d "$clone" ] || continue
			echo "$clone $s"
		done <"$other.users")
		if [ -n "$left" ]; then
			[ "$left" = "$(cat "$other.users")" ] || printf '%s\n' "$left" >"$other.users"
			continue
		fi
		hash=${other##*-}
		if flock -n -x "$other.use" rm -rf --one-file-system "$other"; then
			say "cache: $other deleted (no clone claims it any more)"
			rm -f "$other.users" "$other.use"
			for f in "$@"; do
				# shellcheck disable=SC2059 # the pattern is the caller's
				f=$dir/$(printf "$f" "$hash")
				[ -e "$f" ] || continue
				if fuser -s "$f" 2>/dev/null; then say "cache: $f is open: kept"; else rm -f "$f"; fi
			done
		else
			: >"$other.users"
			say "cache: $other is in use: kept for now"
		fi
	done
}

# ceph_cluster: start harness/ceph.sh's single-node cluster for the guest
# boots that follow (boot.sh sees NOWAIT_CEPH=1), and stop it when the
# calling script exits.
ceph_cluster() {
	phase "ceph cluster" "$NOWAIT_ROOT/harness/ceph.sh" start >/dev/null || return 1
	export NOWAIT_CEPH=1
	trap '"$NOWAIT_ROOT/harness/ceph.sh" stop >/dev/null' EXIT
}

# kbuild_logged LOG CMD...: run CMD, a kernel make, with its output in LOG,
# saying every 15 s how many kbuild steps are done; on failure, print its
# errors and fail.
kbuild_logged() {
	local log=$1 pid n last=0
	shift
	"$@" >"$log" 2>&1 &
	pid=$!
	while kill -0 "$pid" 2>/dev/null; do
		sleep 15
		n=$(grep -c '^  [A-Z]' "$log" 2>/dev/null || true)
		if [ "$n" != "$last" ]; then say "build: $n steps done"; last=$n; fi
	done
	if ! wait "$pid"; then
		grep -E 'error|Error' "$log" | head -20 >&2
		tail -5 "$log" >&2
		return 1
	fi
}

# json_from LOG OUT [NAME]: the JSON a guest job printed between its markers
# "nowait-json: begin[ NAME]" and "nowait-json: end". A kernel message
# printed meanwhile ("[  150.913491] clocksource: ...", up to its newline)
# can land inside a line of it on the shared console: such messages go.
json_from() {
	tr -d '\r' <"$1" | perl -0pe 's/\[ *[0-9]+\.[0-9]+\] [^\n]*\n//g' | sed -n "/^nowait-json: begin${3:+ $3}\$/,/^nowait-json: end/p" | sed '1d;$d' >"$2"
	[ -s "$2" ] || { say "no JSON${3:+ for $3} in $1"; return 1; }
}

# guest_image: build the tools and test programs and pack the initramfs that
# every guest job boots (harness/guest/init picks the job).
guest_image() {
	phase "tools build" make -s -C "$NOWAIT_ROOT/tools" O="$NOWAIT_OUT/tools" &&
		phase "tests build" make -s -C "$NOWAIT_ROOT/kernel/tests" O="$NOWAIT_OUT/tests" &&
		phase "initramfs" "$NOWAIT_ROOT/harness/initramfs.sh" "$NOWAIT_OUT/initramfs.cpio"
}

# kernel_tree stock|patched [debug]: build that tree (with the debug config:
# KASAN, lockdep); prints the path of its bzImage.
kernel_tree() {
	local flags=()
	[ "$1" = stock ] && flags+=(--stock)
	[ "${2:-}" = debug ] && flags+=(--debug)
	phase "kernel build ($1${2:+ $2})" "$NOWAIT_ROOT/harness/kernel.sh" "${flags[@]}"
}

# kernel_for stock|patched GIVEN [debug]: the bzImage a run boots: GIVEN when
# the caller named one (it must exist), else that tree built by kernel_tree.
kernel_for() {
	local k=$2
	[ -n "$k" ] || k=$(kernel_tree "$1" "${3:-}" | tail -n 1)
	[ -f "$k" ] || die "no $1 kernel $k"
	echo "$k"
}
