#!/usr/bin/env bash
# Run every test: on each kernel base (harness/lib.sh), the kernel
# conformance suite in the patched kernel under QEMU, the crash test and
# checkpatch on the series; then the library's and the server's tests on
# the host, the harness's own; and the Debian packages booted on Debian 12
# and 13 disks when their images and the kernel packages are made (make
# deb-check; else a skip).
#
#   harness/check.sh [--debug]
#
# --debug runs the guest suite on the debug kernel (KASAN, lockdep).
# NOWAIT_CHECK_BASES picks the bases (default both: "6.12 7.3"). A base whose port
# is partial names the tests of what it has in kernel/BASE/tests (globs of
# guest test programs, one a line, and "nowait-crash" for the crash test);
# without that file every test runs. Each kernel case's name starts with its
# base ("PASS 7.3/rw_flags.x86_64: ...").
# Ends with the line "N passed, N failed, N skipped".
set -uo pipefail
user_out=${NOWAIT_OUT:-}
. "$(dirname "$0")/lib.sh"
bases=${NOWAIT_CHECK_BASES:-$NOWAIT_BASES}
results_dir=$NOWAIT_OUT

kflags=()
[ "${1:-}" = --debug ] && kflags=(--debug)
results=$results_dir/results
mkdir -p "$results_dir"
: >"$results"

record() { printf '%s\n' "$*" >>"$results"; printf '%s\n' "$*"; }
# A kernel case of the current base: its name after the base.
record_k() {
	local line=$1
	case $line in
	PASS\ * | FAIL\ * | SKIP\ *) record "${line%% *} $NOWAIT_BASE/${line#* }" ;;
	*) record "$line" ;;
	esac
}

# The guest tests of the current base, as NOWAIT_TESTS wants them (globs
# joined by +); empty for all.
base_tests() {
	[ -f "$NOWAIT_KDIR/tests" ] || return 0
	grep -v '^\s*\(#\|$\)' "$NOWAIT_KDIR/tests" | grep -vx 'nowait-crash' | paste -sd+
}
base_has_crash_test() {
	[ ! -f "$NOWAIT_KDIR/tests" ] || grep -qx 'nowait-crash' "$NOWAIT_KDIR/tests"
}

# The kernel and guest image guest_suite built, for crash_test to boot too.
test_kernel=

guest_suite() {
	local kernel log=$NOWAIT_OUT/console-check.log rc=0 tests
	kernel=$("$NOWAIT_ROOT/harness/kernel.sh" "${kflags[@]}") || { record_k "FAIL kernel: build"; return 1; }
	guest_image >&2 || { record_k "FAIL guest image: tools, tests or initramfs (see above)"; return 1; }
	test_kernel=$kernel
	# The debug kernel is slow enough under TCG that ACPI's interrupt routing
	# methods hit the AML loop timeout (30 s per device, and no IRQ at the
	# end): route PCI interrupts from the BIOS tables instead. It also runs
	# the programs 3-5 times slower (KASAN, lockdep, kmemleak): nowait_alloc's
	# six nearly full filesystems took more than 300 s, the limit of a
	# program, on a loaded host. A NOWAIT_TEST_TIMEOUT given in NOWAIT_APPEND
	# comes later on the command line and wins (check-debug-long).
	local boot_limit=1200
	if [ ${#kflags[@]} -gt 0 ]; then
		export NOWAIT_MEM=3072 NOWAIT_APPEND="acpi=noirq NOWAIT_TEST_TIMEOUT=900 ${NOWAIT_APPEND:-}"
		boot_limit=4800
	fi
	tests=$(base_tests)
	[ -z "$tests" ] || say "$NOWAIT_BASE: the tests of $NOWAIT_KDIR/tests: $tests"
	NOWAIT_APPEND="${tests:+NOWAIT_TESTS=$tests }${NOWAIT_APPEND:-}" \
		"$NOWAIT_ROOT/harness/boot.sh" "$kernel" "$NOWAIT_OUT/initramfs.cpio" check "$log" "${NOWAIT_BOOT_TIMEOUT:-$boot_limit}" || rc=$?
	awk -f "$NOWAIT_ROOT/harness/tap.awk" "$log" | while IFS= read -r line; do record_k "$line"; done
	# What the stress program checked, per filesystem and ABI.
	tr -d '\r' <"$log" | grep -a '^# stress ' | sed 's/^# /  /' >&2 || true
	case $rc in
	0) record_k "PASS guest: clean console, status 0" ;;
	126)
		record_k "FAIL guest: kernel splat in the console (see $log.splats)"
		head -n 12 "$log.splats" | while IFS= read -r line; do record "    $line"; done
		;;
	*) record_k "FAIL guest: status $rc (console: $log)" ;;
	esac
}

# Flagged writes and fsync, a crash, and a second boot that checks them.
crash_test() {
	base_has_crash_test || {
		record_k "SKIP nowait-crash: not in $NOWAIT_KDIR/tests (it needs the flagged writes of a later part)"
		return 0
	}
	[ -n "$test_kernel" ] || { record_k "FAIL nowait-crash: no kernel or guest image (see the kernel suite)"; return 1; }
	"$NOWAIT_ROOT/harness/crash.sh" "$test_kernel" | while IFS= read -r line; do record_k "$line"; done
}

# The standard is no errors and no warnings under --strict; CHECK notes are
# printed for the reader but do not fail a patch (the series keeps the style
# of the code around it, e.g. (1 << n) among the I_* inode state bits).
checkpatch_series() {
	local p out
	while read -r p; do
		case $p in '' | '#'*) continue ;; esac
		# Debian's python3 first: spdxcheck.py, run on new files, imports
		# python3-ply and python3-git, which another python3 on PATH lacks.
		# OBSOLETE asks for no unnecessary changes to reiserfs, which
		# MAINTAINERS marks obsolete; the ->write_begin() signature
		# change must reach it too, or 6.12 no longer builds with it.
		out=$(cd "$NOWAIT_SRC" && PATH=/usr/bin:$PATH ./scripts/checkpatch.pl --strict -q \
			--ignore OBSOLETE "$NOWAIT_KDIR/patches/$p" 2>&1)
		if [ -z "$out" ] || printf '%s\n' "$out" | grep -q '^total: 0 errors, 0 warnings'; then
			record_k "PASS checkpatch: $p"
		else
			record_k "FAIL checkpatch: $p"
		fi
		[ -z "$out" ] || printf '%s\n' "$out" | head -20 >&2
	done <"$NOWAIT_KDIR/series"
}

library_suite() {
	make -s -C "$NOWAIT_ROOT" lib-check 2>&1 | while read -r line; do
		case $line in
		'ok - '*'# SKIP'*) record "SKIP lib: ${line#ok - }" ;;
		'ok - '*) record "PASS lib: ${line#ok - }" ;;
		'not ok - '*) record "FAIL lib: ${line#not ok - }" ;;
		*) printf '%s\n' "$line" >&2 ;;
		esac
	done
}

# What a user of the library gets from `make lib-install`: the example
# built from the staged header, pkg-config file and libraries (shared and
# static) must hash files as the in-tree build does.
library_install() {
	local stage=$results_dir/install-test pc want kind
	rm -rf "$stage"
	# LIBDIR defaults to the multiarch directory; the check stages in
	# /usr/lib, and pkg-config still finds liburing.pc (Requires.private)
	# on the system path.
	make -s -C "$NOWAIT_ROOT" lib-install DESTDIR="$stage" PREFIX=/usr LIBDIR=/usr/lib >&2 ||
		{ record "FAIL lib-install: make lib-install"; return 1; }
	pc=(env PKG_CONFIG_SYSROOT_DIR="$stage" PKG_CONFIG_LIBDIR="$stage/usr/lib/pkgconfig:$(pkg-config --variable pc_path pkg-config)" pkg-config)
	# The library builds in the clone's build/ (mk/libnowait.mk), whatever
	# NOWAIT_OUT says.
	want=$("$NOWAIT_ROOT/build/lib-plain/examples/nowait-sum" "$NOWAIT_ROOT/README.md" "$NOWAIT_ROOT/Makefile" | head -2)
	for kind in shared static; do
		local flags=() exe=$stage/nowait-sum-$kind
		[ "$kind" = static ] && flags=(--static)
		# shellcheck disable=SC2046 # pkg-config prints separate words
		if gcc -std=c11 -Wall -Wextra -Werror -o "$exe" "$NOWAIT_ROOT/examples/nowait-sum.c" 			$("${pc[@]}" --cflags --libs "${flags[@]}" nowait) ${flags:+-static} &&
			[ "$(LD_LIBRARY_PATH=$stage/usr/lib "$exe" "$NOWAIT_ROOT/README.md" "$NOWAIT_ROOT/Makefile" | head -2)" = "$want" ]; then
			record "PASS lib-install: example built with pkg-config ($kind) hashes like the tree build"
		else
			record "FAIL lib-install: example built with pkg-config ($kind)"
		fi
	done
	if [ -e "$stage/usr/share/man/man3/nowait_read.3" ] && [ -e "$stage/usr/share/man/man7/nowait.7" ]; then
		record "PASS lib-install: man pages installed"
	else
		record "FAIL lib-install: man pages missing"
	fi
}

# nowait-serve against real clients (curl, openssl), every mode, on the host.
serve_suite() {
	make -s -C "$NOWAIT_ROOT" serve >&2 || { record "FAIL serve: build"; return 1; }
	"$NOWAIT_ROOT/serve/test.sh" 2>&1 | while read -r line; do
		case $line in
		'ok - '*) record "PASS serve: ${line#ok - }" ;;
		'not ok - '*) record "FAIL serve: ${line#not ok - }" ;;
		*) printf '%s\n' "$line" >&2 ;;
		esac
	done
}

# The harness's own tests (harness/test/*.sh, TAP): the cache's cleanup.
harness_suite() {
	local t
	for t in "$NOWAIT_ROOT"/harness/test/*.sh; do
		"$t" 2>&1 | while read -r line; do
			case $line in
			'ok '*) record "PASS harness: $(basename "$t" .sh): ${line#ok * - }" ;;
			'not ok '*) record "FAIL harness: $(basename "$t" .sh): ${line#not ok * - }" ;;
			*) printf '%s\n' "$line" >&2 ;;
			esac
		done
		[ "${PIPESTATUS[0]}" = 0 ] || grep -q "^FAIL harness: $(basename "$t" .sh)" "$results" ||
			record "FAIL harness: $(basename "$t" .sh) exited without a failed case"
	done
}

# The Debian packages installed and booted on a Debian 12 disk (from the
# image of make regress) and a Debian 13 one (harness/deb-check.sh), on
# 6.12, the base Debian runs; each only when its image and the kernel
# packages are already made (a cold kernel package build takes 25
# minutes): else one SKIP line says so. NOWAIT_CHECK_DEBIAN (make
# CHECK_DEBIAN=) picks the releases.
deb_suite() {
	local rc debian
	[[ " $bases " == *" 6.12 "* ]] || { record "SKIP deb-check: 6.12 is not among the bases checked"; return 0; }
	for debian in ${NOWAIT_CHECK_DEBIAN:-bookworm trixie}; do
		NOWAIT_BASE=6.12 NOWAIT_OUT=$user_out "$NOWAIT_ROOT/harness/deb-check.sh" --if-cached "$debian" 2>&1 | while IFS= read -r line; do
			case $line in
			'PASS '* | 'FAIL '* | 'SKIP '*) record "$line" ;;
			*) printf '%s\n' "$line" >&2 ;;
			esac
		done
		rc=${PIPESTATUS[0]}
		[ "$rc" = 0 ] || grep -q "^FAIL deb-check/$debian" "$results" || record "FAIL deb-check/$debian: exited $rc without a failed case"
	done
}

phase "dependencies" "$NOWAIT_ROOT/harness/deps.sh" || { record "FAIL dependencies"; }
# The one network filesystem whose server cannot run in the guest, for
# every base's guest.
ceph_cluster || record "FAIL ceph: the cluster of harness/ceph.sh did not start"
for base in $bases; do
	NOWAIT_BASE=$base NOWAIT_OUT=$user_out
	# shellcheck source=harness/lib.sh
	. "$NOWAIT_ROOT/harness/lib.sh"
	test_kernel=
	phase "$base: kernel suite in QEMU" guest_suite
	phase "$base: crash test in QEMU" crash_test
	phase "$base: checkpatch" checkpatch_series
done
phase "libnowait" library_suite
phase "libnowait install" library_install
phase "nowait-serve" serve_suite
phase "harness" harness_suite
phase "Debian packages" deb_suite

pass=$(grep -c '^PASS' "$results")
fail=$(grep -c '^FAIL' "$results")
skip=$(grep -c '^SKIP' "$results")
if [ "$skip" -gt 0 ]; then
	echo "Skipped, with reasons:"
	grep '^SKIP' "$results" | sed 's/^SKIP /  /'
fi
if [ "$fail" -gt 0 ]; then
	# Each failed case with the diagnostics tap.awk kept under it.
	echo "Failed:"
	awk '/^FAIL / { keep = 1; print "  " substr($0, 6); next }
	     /^    / { if (keep) print; next } { keep = 0 }' "$results"
fi
say "total wall time: $(($(date +%s) - nowait_t0)) s"
echo "$pass passed, $fail failed, $skip skipped"
[ "$fail" -eq 0 ]
