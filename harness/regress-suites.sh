#!/usr/bin/env bash
# Build the field's suites for the regression guest, on the host (Debian 12,
# the guest's release), from snapshots of upstream kept in the cache, never
# in the clone:
#   fstests: a copy of $NOWAIT_CACHE/regress/src/fstests-COMMIT, built in
#            .../src/fstests-build-COMMIT (the guest runs it from /opt/suites/xfstests)
#   LTP:     the syscall tests of the read/write family, x86_64 into .../install/ltp-COMMIT,
#            i386 (gcc -m32) into .../install/ltp32-COMMIT
# The snapshots come from git mirrors: NOWAIT_FSTESTS_GIT, NOWAIT_LTP_GIT (a
# bare repository or URL; default the mirrors fetched for this machine, else upstream).
# NOWAIT_LTP_I386=0 leaves the i386 build out; NOWAIT_LTP=0 leaves LTP out
# (make crash-replay needs only fstests' src/log-writes/replay-log).
# Our tests in the suites' own form (harness/regress/upstream/{fstests,ltp}/*.patch,
# git format-patch files ready to post) are applied to the build copies, never
# to the exported snapshots: a changed series is reverted and re-applied in
# the copy, and make rebuilds only what it touched.
# Prints "fstests DIR", "ltp DIR", "ltp32 DIR" (the last when i386 built).
#
#   harness/regress-suites.sh
set -euo pipefail
. "$(dirname "$0")/lib.sh"

regress=$NOWAIT_CACHE/regress
src=$regress/src
inst=$regress/install
mkdir -p "$src" "$inst"
cache_lock regress/suites
jobs=$(nproc)

# The LTP directories under testcases/kernel/syscalls that the run uses.
LTP_DIRS="read write pread pwrite readv writev preadv pwritev preadv2 pwritev2 io_uring io_submit
	fsync fdatasync sync_file_range fallocate readahead mmap"

# snapshot NAME GIT: export GIT's HEAD to $src/NAME-COMMIT once; prints the directory.
snapshot() {
	local name=$1 git=$2 commit dir
	if [ -d "$git" ]; then
		commit=$(git --git-dir="$git" rev-parse HEAD)
	else
		local clone=$src/$name.git
		[ -d "$clone" ] || git clone -q --bare --depth 1 "$git" "$clone"
		git --git-dir="$clone" fetch -q --depth 1 origin HEAD
		git="$clone" commit=$(git --git-dir="$clone" rev-parse FETCH_HEAD)
	fi
	dir=$src/$name-${commit:0:12}
	if [ ! -e "$dir/.exported" ]; then
		rm -rf "$dir" && mkdir -p "$dir"
		git --git-dir="$git" archive "$commit" | tar -x -C "$dir"
		echo "$commit" >"$dir/.commit"
		touch "$dir/.exported"
	fi
	echo "$dir"
}

pick_git() { # pick_git MIRROR URL
	if [ -d "$1" ]; then echo "$1"; else echo "$2"; fi
}

upstream=$NOWAIT_ROOT/harness/regress/upstream
# series_sum SUITE: names the patch series of SUITE (its files' contents).
series_sum() {
	{ cat "$upstream/$1"/*.patch 2>/dev/null || true; } | sha256sum | cut -c1-12
}

# apply_series SUITE TREE: make TREE (a copy of a snapshot) carry exactly the
# current patches of SUITE. The patches last applied are kept in
# TREE/.nowait-series/ and reverted first, newest first, so that the tree
# is the snapshot again before the new series goes on.
apply_series() {
	local suite=$1 tree=$2 p sum
	sum=$(series_sum "$suite")
	[ "$(cat "$tree/.nowait-series/sum" 2>/dev/null)" = "$sum" ] && return 0
	if [ -d "$tree/.nowait-series" ]; then
		for p in $(ls -r "$tree/.nowait-series/"*.patch 2>/dev/null); do
			git -C "$tree" apply -R "$p" || { say "suites: cannot revert $(basename "$p") in $tree"; return 1; }
		done
	fi
	rm -rf "$tree/.nowait-series" && mkdir -p "$tree/.nowait-series"
	for p in "$upstream/$suite"/*.patch; do
		[ -e "$p" ] || continue
		git -C "$tree" apply "$p" || { say "suites: $suite: $(basename "$p") does not apply to $tree"; return 1; }
		cp "$p" "$tree/.nowait-series/"
		say "suites: $suite: applied $(basename "$p")"
	done
	echo "$sum" >"$tree/.nowait-series/sum"
}

fst=$(snapshot fstests "${NOWAIT_FSTESTS_GIT:-$(pick_git /work/.mirror/kdave+xfstests/repo https://git.kernel.org/pub/scm/fs/xfs/xfstests-dev.git)}")
fstb=$src/fstests-build-$(cut -c1-12 "$fst/.commit")
if [ ! -e "$fstb/.copied" ]; then
	rm -rf "$fstb" && cp -a "$fst" "$fstb" && touch "$fstb/.copied"
fi
apply_series fstests "$fstb" || die "the fstests patches do not apply"
fsum=$(series_sum fstests)
if [ "$(cat "$fstb/.built" 2>/dev/null)" != "$fsum" ]; then
	say "suites: building fstests in $fstb"
	(cd "$fstb" && nice -n 19 make -j"$jobs" >build.log 2>&1) || { tail -n 30 "$fstb/build.log" >&2; die "fstests build failed"; }
	echo "$fsum" >"$fstb/.built"
fi
say "suites: fstests $(cut -c1-12 "$fst/.commit") built, with $(ls "$upstream"/fstests/*.patch 2>/dev/null | wc -l) patches of ours"
echo "fstests $fstb"
[ "${NOWAIT_LTP:-1}" = 0 ] && exit 0

ltpsrc=$(snapshot ltp "${NOWAIT_LTP_GIT:-$(pick_git /work/.mirror/linux-test-project+ltp/repo https://github.com/linux-test-project/ltp.git)}")
ltpc=$(cut -c1-12 "$ltpsrc/.commit")
lsum=$(series_sum ltp)

# build_ltp ABI DEST: configure a copy of the LTP snapshot for ABI and build
# and install the library and LTP_DIRS into DEST.
build_ltp() {
	local abi=$1 dest=$2 tree=$src/ltp-build-$1-$ltpc d
	local -a conf=(--prefix="$dest")
	# Configured as a cross build: a host kernel without IA32 emulation cannot
	# run configure's i386 test programs.
	# libaio (io_submit*) is linked in statically: -L names a folder that
	# holds only the i386 libaio.a of libaio-dev:i386 (harness/deps.sh), so
	# the guest needs no i386 libaio of its own.
	local aio32=$src/ltp-libaio-i386
	if [ "$abi" = i386 ]; then
		mkdir -p "$aio32" && ln -sf /usr/lib/i386-linux-gnu/libaio.a "$aio32/libaio.a"
		conf+=(--host=i686-linux-gnu --build=x86_64-linux-gnu "CC=gcc -m32"
			CFLAGS=-m32 "LDFLAGS=-m32 -L$aio32" PKG_CONFIG_LIBDIR=/usr/lib/i386-linux-gnu/pkgconfig)
	fi
	[ "$(cat "$dest/.built" 2>/dev/null)" = "$lsum" ] && return 0
	if [ "$(cat "$tree/.configured" 2>/dev/null)" != "${conf[*]}" ]; then
		rm -rf "$tree" && cp -a "$ltpsrc" "$tree"
		apply_series ltp "$tree" || return 1
		say "suites: configuring LTP for $abi"
		(cd "$tree" && nice -n 19 make autotools && nice -n 19 ./configure "${conf[@]}") >"$tree/configure.log" 2>&1 ||
			{ tail -n 20 "$tree/configure.log" >&2; return 1; }
		echo "${conf[*]}" >"$tree/.configured"
	fi
	apply_series ltp "$tree" || return 1
	say "suites: building LTP ($abi): lib and $(echo $LTP_DIRS | wc -w) syscall directories"
	(
		cd "$tree"
		nice -n 19 make -j"$jobs" -C lib
		nice -n 19 make -j"$jobs" -C libs 2>/dev/null || true
		for d in $LTP_DIRS; do
			nice -n 19 make -j"$jobs" -C "testcases/kernel/syscalls/$d"
		done
		rm -rf "$dest"
		for d in $LTP_DIRS; do
			nice -n 19 make -C "testcases/kernel/syscalls/$d" install
		done
		mkdir -p "$dest/runtest" && cp runtest/syscalls "$dest/runtest/"
	) >"$tree/build.log" 2>&1 || { tail -n 30 "$tree/build.log" >&2; return 1; }
	echo "$lsum" >"$dest/.built"
}

build_ltp x86_64 "$inst/ltp-$ltpc" || die "LTP build (x86_64) failed"
say "suites: LTP $ltpc built (x86_64): $(ls "$inst/ltp-$ltpc/testcases/bin" | wc -l) programs"
echo "ltp $inst/ltp-$ltpc"
if [ "${NOWAIT_LTP_I386:-1}" = 0 ]; then
	say "suites: LTP i386 not built (NOWAIT_LTP_I386=0)"
elif build_ltp i386 "$inst/ltp32-$ltpc"; then
	say "suites: LTP $ltpc built (i386): $(ls "$inst/ltp32-$ltpc/testcases/bin" | wc -l) programs"
	echo "ltp32 $inst/ltp32-$ltpc"
else
	say "suites: LTP i386 build failed: see $src/ltp-build-i386-$ltpc/*.log; the run is x86_64 only"
fi
