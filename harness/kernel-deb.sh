#!/usr/bin/env bash
# The patched kernel of NOWAIT_BASE (make BASE=) as Debian packages, with the kernel's own bindeb-pkg:
# linux-image-R and linux-headers-R, R = 6.12.N-nowaitS (Debian's base
# version, then the series version S of NOWAIT_SERIES in harness/lib.sh),
# package version the same. Copies them to build/deb/ and prints their paths.
#
#   harness/kernel-deb.sh [--if-cached]
#
# --if-cached builds nothing and takes no lock: it copies the packages when
# they are already built for what the tree holds, and otherwise exits 3.
# It builds what the series tree $NOWAIT_SRC holds, as harness/kernel.sh
# left it: it never applies or removes a patch there (another run of
# kernel.sh may be applying changed ones), and it runs make in that tree
# only under kernel.sh's lock (cache_lock kernel-build), waiting for it.
# The config is the test kernel's (x86_64_defconfig + nowait.config) with
# kernel/config/deb.config on top, in a build folder of its own,
# $NOWAIT_KBUILD/deb/obj (6.12: /var/cache/nowait/build/deb/obj): modules
# on, which changes every object, so its first build is a cold one (about
# 25 minutes on 2 cores) and shares nothing with the test kernels' objects.
# The headers package goes through harness/kernel-deb-fixup.sh (stripped
# host programs, their Depends, no .gitignore), for lintian.
# The packages are kept in $NOWAIT_CACHE/deb/BASE-KEY, KEY a hash of the
# tree's content, the release and the config fragments, and a later run with
# the same KEY builds nothing.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

deb_version=$(dpkg-query -W -f='${Version}' "$KERNEL_PKG")
frags=("$NOWAIT_ROOT/kernel/config/nowait.config" "$NOWAIT_ROOT/kernel/config/deb.config")
[ -n "$NOWAIT_SERIES" ] || die "base $NOWAIT_BASE has no series version yet (NOWAIT_SERIES in harness/lib.sh)"
top=$NOWAIT_KBUILD/deb
build=$top/obj
out=$NOWAIT_OUT/deb
git_q=(git -C "$NOWAIT_SRC")

# --if-cached only reads the tree's commit with git, which needs no lock:
# make check must not wait behind a kernel build to find out it skips.
[ "${1:-}" = --if-cached ] || cache_lock kernel-build
[ -d "$NOWAIT_SRC/.git" ] || die "no series tree in $NOWAIT_SRC: run harness/kernel.sh first"
[ -z "$("${git_q[@]}" status --porcelain --untracked-files=no)" ] ||
	die "$NOWAIT_SRC has uncommitted changes (a git am stopped half-way?): not building from it"
head=$("${git_q[@]}" rev-parse HEAD)
# The key follows the tree's content, not its commit: kernel.sh re-applies
# the same patches as new commits (another engineer's run did twice today).
tree=$("${git_q[@]}" rev-parse 'HEAD^{tree}')
applied=$("${git_q[@]}" rev-list --count base..HEAD)
in_series=$(grep -cvE '^[[:space:]]*(#|$)' "$NOWAIT_KDIR/series")
[ "$applied" = "$in_series" ] ||
	say "warning: the tree holds $applied patch(es), kernel/series lists $in_series: building what the tree holds"
sublevel=$(sed -n 's/^SUBLEVEL = //p' "$NOWAIT_SRC/Makefile")
base=$(sed -n 's/^VERSION = //p' "$NOWAIT_SRC/Makefile").$(sed -n 's/^PATCHLEVEL = //p' "$NOWAIT_SRC/Makefile").$sublevel
release=$base-nowait$NOWAIT_SERIES
key=$( (echo "$tree $release $deb_version"; cat "${frags[@]}") | sha256sum | cut -c1-12)
keep=$NOWAIT_CACHE/deb/$NOWAIT_BASE-$key

if ! ls "$keep"/linux-image-"$release"_*.deb >/dev/null 2>&1; then
	[ "${1:-}" != --if-cached ] || { say "kernel packages for tree $tree (commit $head, $release) not built yet"; exit 3; }
	mkdir -p "$build"
	# The release string, from the series version.
	printf 'CONFIG_LOCALVERSION="-nowait%s"\n' "$NOWAIT_SERIES" >"$top/release.config"
	make -s -C "$NOWAIT_SRC" O="$build" x86_64_defconfig >/dev/null
	(cd "$NOWAIT_SRC" && ./scripts/kconfig/merge_config.sh -m -O "$build" "$build/.config" \
		"${frags[@]}" "$top/release.config" >"$build/merge.log")
	make -s -C "$NOWAIT_SRC" O="$build" olddefconfig >/dev/null
	# A symbol that did not take is an error, as in kernel.sh; deb.config
	# comes last and wins over nowait.config.
	while read -r line; do
		grep -qx "$line" "$build/.config" || die "config: $line did not take ($(grep "^${line%%=*}=" "$build/.config" || echo unset))"
	done < <(cat "${frags[@]}" "$top/release.config" | grep '^CONFIG_.*=' | tac | awk -F= '!seen[$1]++')
	log=$top/build.log
	rm -f "$top"/*.deb "$top"/*.buildinfo "$top"/*.changes
	mkdir -p "$NOWAIT_CCACHE"
	export CCACHE_DIR=$NOWAIT_CCACHE CCACHE_MAXSIZE=8G CCACHE_SLOPPINESS=time_macros
	# LOCALVERSION= (empty) as in kernel.sh: else setlocalversion adds "+"
	# for a git tree that is not at a release tag (6.12.118-nowait3+).
	export KBUILD_BUILD_USER=nowait KBUILD_BUILD_HOST=nowait KBUILD_BUILD_TIMESTAMP="2025-01-01" LOCALVERSION=
	export KDEB_PKGVERSION=$release KDEB_CHANGELOG_DIST=bookworm DEBEMAIL=maintainers@users.noreply.a-seed-bf62e07a.example DEBFULLNAME="nowait maintainers"
	say "build: make -j2 bindeb-pkg in $build ($release: $applied patch(es) on $KERNEL_PKG $deb_version; log: $log)"
	kbuild_logged "$log" nice -n 10 make -C "$NOWAIT_SRC" O="$build" CC="ccache gcc" -j2 bindeb-pkg ||
		die "kernel package build failed"
	rm -rf "$keep.tmp" && mkdir -p "$keep.tmp"
	[ "$(cat "$build/include/config/kernel.release")" = "$release" ] ||
		die "the kernel calls itself $(cat "$build/include/config/kernel.release"), not $release"
	mv "$top"/linux-image-"$release"_*.deb "$top"/linux-headers-"$release"_*.deb "$keep.tmp/"
	"$NOWAIT_ROOT/harness/kernel-deb-fixup.sh" "$keep.tmp/linux-headers-${release}"_*.deb
	echo "$KERNEL_PKG $deb_version, $applied patch(es) (commit $head, tree $tree), series v$NOWAIT_SERIES on base $NOWAIT_BASE, config nowait.config + deb.config" >"$keep.tmp/version"
	rm -rf "$keep" && mv "$keep.tmp" "$keep"
	say "build: done; $(ls "$keep"/*.deb | wc -l) packages in $keep"
else
	say "kernel packages for tree $tree (commit $head, $release) already built: $keep"
	# Kept before the headers' fixup existed: fixed in place, under the lock.
	[ "${1:-}" = --if-cached ] || "$NOWAIT_ROOT/harness/kernel-deb-fixup.sh" "$keep"/linux-headers-"$release"_*.deb
fi
mkdir -p "$out"
rm -f "$out"/linux-image-*.deb "$out"/linux-headers-*.deb
cp "$keep"/*.deb "$keep/version" "$out/"
mv "$out/version" "$out/kernel-version"
ls "$out"/linux-*.deb
