#!/usr/bin/env bash
# Build a test kernel from Debian's linux-source of the base (NOWAIT_BASE,
# harness/lib.sh: 6.12 or 7.3) with that base's series (kernel/BASE/series)
# applied.
#
#   [NOWAIT_BASE=7.3] harness/kernel.sh [--debug] [--stock] [--upto N] [--touched | --prepare]
#
# --stock builds the tree without the series, --upto N with its first N patches.
# --touched compiles only the object files of the C files the applied patches
# change, whether or not the config builds them (kbuild compiles a single
# object on request), instead of the kernel image: it is how every prefix of
# the series is checked without a full build per prefix. --prepare only
# unpacks the tree and applies the series, for harness/kernel-deb.sh on a
# machine that has no tree yet.
# The source is a git tree under $NOWAIT_CACHE, reset to the pristine Debian
# tree before the series is applied with git am; objects go to a build folder
# per variant there too, and ccache keeps its cache beside them. The stock
# kernel has a git worktree of its own at the pristine tree and its own build
# folders, so that building it never touches the patched tree's files: a
# switch back would otherwise rebuild everything that includes fs.h. The
# image is copied to build/<name>/bzImage in the clone, and that path is
# printed.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

variant=default name=patched upto= touched= prepare=
while [ $# -gt 0 ]; do
	case $1 in
	--debug) variant=debug ;;
	--stock) upto=0 ;;
	--upto) upto=$2; shift ;;
	--touched) touched=1 ;;
	--prepare) prepare=1 ;;
	*) die "usage: $0 [--debug] [--stock] [--upto N] [--touched | --prepare]" ;;
	esac
	shift
done

deb_version=$(dpkg-query -W -f='${Version}' "$KERNEL_PKG")
tarball=/usr/src/$KERNEL_PKG.tar.xz
git_q=(git -C "$NOWAIT_SRC" -c user.name=nowait -c user.email=nowait@localhost)

unpack_source() {
	if [ "$(cat "$NOWAIT_SRC/.nowait-debian-version" 2>/dev/null)" = "$deb_version" ]; then
		say "source: $KERNEL_PKG $deb_version already unpacked in $NOWAIT_SRC"
		return
	fi
	say "source: unpacking $tarball ($deb_version) into $NOWAIT_SRC"
	rm -rf "$NOWAIT_SRC" "$NOWAIT_SRC.tmp"
	mkdir -p "$NOWAIT_SRC.tmp"
	tar -xJf "$tarball" -C "$NOWAIT_SRC.tmp" --strip-components=1
	mv "$NOWAIT_SRC.tmp" "$NOWAIT_SRC"
	"${git_q[@]}" init -q -b debian
	"${git_q[@]}" add -A -f
	"${git_q[@]}" commit -q -m "Debian $KERNEL_PKG $deb_version"
	"${git_q[@]}" tag base
	echo "$deb_version" >"$NOWAIT_SRC/.nowait-debian-version"
	echo .nowait-debian-version >>"$NOWAIT_SRC/.git/info/exclude"
}

# The patches to apply, one name a line: the whole series, or its first $upto.
series_patches() {
	awk -v n="${upto:--1}" '/^[[:space:]]*(#|$)/ { next } n >= 0 && c >= n { exit } { c++; print }' \
		"$NOWAIT_KDIR/series"
}

apply_series() {
	local n=0 p c id keep=base
	local -a want have
	# Only the diffs count (git patch-id), so that a reworded changelog
	# changes nothing in the tree.
	mapfile -t want < <(series_patches | while read -r p; do
		git patch-id --stable <"$NOWAIT_KDIR/patches/$p" | cut -d' ' -f1
	done)
	# Keep the longest prefix of what the tree holds that the series still
	# starts with, and apply the rest on it: git checkout rewrites only the
	# files that differ, so make rebuilds only what the changed patches
	# touch. Re-applying everything would touch fs.h and rebuild the whole
	# kernel, from ccache but for many minutes.
	"${git_q[@]}" am --abort >/dev/null 2>&1 || true
	if [ -z "$("${git_q[@]}" status --porcelain --untracked-files=no)" ]; then
		mapfile -t have < <("${git_q[@]}" rev-list --reverse base..HEAD)
		for c in "${have[@]}"; do
			[ "$n" -lt "${#want[@]}" ] || break
			id=$("${git_q[@]}" show "$c" | git patch-id --stable | cut -d' ' -f1)
			[ "$id" = "${want[$n]}" ] || break
			keep=$c
			n=$((n + 1))
		done
	fi
	"${git_q[@]}" checkout -q -f --detach "$keep"
	"${git_q[@]}" clean -q -f -d -x -e .nowait-debian-version
	[ "$n" -eq 0 ] || say "series: $n patch(es) already applied"
	while read -r p; do
		"${git_q[@]}" am -q "$NOWAIT_KDIR/patches/$p" >/dev/null 2>&1 || {
			"${git_q[@]}" am --abort >/dev/null 2>&1 || true
			die "patch $p does not apply"
		}
		say "series: applied $p"
		n=$((n + 1))
	done < <(series_patches | tail -n +$((n + 1)))
	say "series: $n patch(es) on $KERNEL_PKG $deb_version"
}

# The pristine tree as a worktree of the series tree, made again when the
# Debian package changes. Its objects cannot share ccache entries with the
# patched tree's (the source path is part of every compile command), so the
# first stock build is a cold one.
stock_worktree() {
	local stock=$NOWAIT_SRC-stock
	if [ "$(cat "$stock/.nowait-debian-version" 2>/dev/null)" != "$deb_version" ]; then
		say "source: pristine worktree $stock"
		rm -rf "$stock"
		"${git_q[@]}" worktree prune
		"${git_q[@]}" worktree add -q -f --detach "$stock" base
		echo "$deb_version" >"$stock/.nowait-debian-version"
	fi
	NOWAIT_SRC=$stock
	git_q=(git -C "$NOWAIT_SRC")
	"${git_q[@]}" checkout -q -f --detach base
	"${git_q[@]}" clean -q -f -d -x -e .nowait-debian-version
	name=stock
}

configure() {
	local frags=("$NOWAIT_ROOT/kernel/config/nowait.config")
	# What only one base has (6.12's NFS_V4_1, folded into NFS_V4 since).
	[ -f "$NOWAIT_KDIR/config" ] && frags+=("$NOWAIT_KDIR/config")
	[ "$variant" = debug ] && frags+=("$NOWAIT_ROOT/kernel/config/debug.config")
	mkdir -p "$build"
	make -s -C "$NOWAIT_SRC" O="$build" x86_64_defconfig >/dev/null
	(cd "$NOWAIT_SRC" && ./scripts/kconfig/merge_config.sh -m -O "$build" "$build/.config" "${frags[@]}" >"$build/merge.log")
	make -s -C "$NOWAIT_SRC" O="$build" olddefconfig >/dev/null
	# merge_config.sh only warns when a symbol did not take; a test kernel that
	# silently lacks xfs or KASAN is worse than no kernel.
	# A later fragment overrides an earlier one, so the last value counts.
	local line sym
	while read -r line; do
		sym=${line%%=*}
		grep -qx "$line" "$build/.config" || die "config: $line did not take ($(grep "^$sym=" "$build/.config" || echo unset))"
	done < <(cat "${frags[@]}" | grep '^CONFIG_.*=' | tac | awk -F= '!seen[$1]++')
}

build() {
	local jobs log=$build/build.log
	jobs=$(nproc)
	mkdir -p "$NOWAIT_CCACHE"
	export CCACHE_DIR=$NOWAIT_CCACHE CCACHE_MAXSIZE=8G CCACHE_SLOPPINESS=time_macros
	# Fixed build stamps keep ccache hits across rebuilds.
	export KBUILD_BUILD_USER=nowait KBUILD_BUILD_HOST=nowait KBUILD_BUILD_TIMESTAMP="2025-01-01" LOCALVERSION=
	say "build: make -j$jobs bzImage in $build (log: $log)"
	kbuild_logged "$log" make -C "$NOWAIT_SRC" O="$build" CC="ccache gcc" -j"$jobs" bzImage ||
		die "kernel build failed"
	say "build: $(grep -c '^  [A-Z]' "$log") steps; ccache: $(ccache -s 2>/dev/null | grep -iE 'hits|hit rate' | head -1 | tr -s ' ')"
}

# The objects of the C files the applied patches change, but for those
# that cannot be built alone on x86: ramfs's nommu file operations (no MMU;
# the series adds one initializer there), hostfs (User-mode Linux only) and
# i915 (out of the test config; its objects take their include paths from
# drivers/gpu/drm/i915/Makefile), where the ->write_begin() change edits
# one call each.
build_touched() {
	local objs
	objs=$("${git_q[@]}" diff --name-only base HEAD -- '*.c' ':!fs/ramfs/file-nommu.c' \
		':!fs/hostfs/*' ':!drivers/gpu/drm/i915/*' | sed 's/\.c$/.o/')
	[ -n "$objs" ] || return 0
	say "build: $(echo "$objs" | wc -w) object(s) the series touches"
	# shellcheck disable=SC2086
	make -s -C "$NOWAIT_SRC" O="$build" CC="ccache gcc" -j"$(nproc)" $objs
}

# One kernel build at a time on this machine, whoever asks: two at once
# on two cores take longer than one after the other, and the series tree
# is shared.
cache_lock kernel-build
unpack_source
build=$NOWAIT_KBUILD/$variant
if [ "$upto" = 0 ]; then
	stock_worktree
	build=$NOWAIT_KBUILD/stock-$variant
else
	apply_series
fi
[ -z "$prepare" ] || exit 0
[ "$variant" = debug ] && name=$name-debug
configure
if [ -n "$touched" ]; then
	export CCACHE_DIR=$NOWAIT_CCACHE
	build_touched
	exit
fi
build
mkdir -p "$NOWAIT_OUT/$name"
cp "$build/arch/x86/boot/bzImage" "$NOWAIT_OUT/$name/bzImage"
echo "$KERNEL_PKG $deb_version, $(cd "$NOWAIT_SRC" && git log --oneline base..HEAD | wc -l) patch(es), $variant config" >"$NOWAIT_OUT/$name/version"
echo "$NOWAIT_OUT/$name/bzImage"
