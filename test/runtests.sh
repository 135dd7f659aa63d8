#!/bin/sh
# SPDX-License-Identifier: MIT
# Usage: runtests.sh BUILD_DIR...  where each BUILD_DIR is build/lib-<variant>
# holding test binaries in test/. Prints one TAP-style line per test and
# variant, the skips with their reasons, then "N passed, N failed".
# Exit status: 0 iff nothing failed and nothing skipped. A test exits 0
# (pass), 77 (skip) or anything else (fail); on skip its last "SKIP: reason"
# line is the reason. A skipped test tested nothing: with NOWAIT_TEST_DIR on
# tmpfs most tests skip, and that run must not look green. Set
# NOWAIT_ALLOW_SKIP=1 where a skip is expected (no 32-bit headers, say).

: "${ASAN_OPTIONS:=detect_leaks=1:abort_on_error=0}"
: "${UBSAN_OPTIONS:=print_stacktrace=1:halt_on_error=1}"
: "${TSAN_OPTIONS:=halt_on_error=1:second_deadlock_stack=1}"
export ASAN_OPTIONS UBSAN_OPTIONS TSAN_OPTIONS

# TSan maps its shadow at fixed addresses, which some kernels' ASLR layouts
# (large mmap_rnd_bits) collide with; running without ASLR avoids that.
norandom=
if setarch "$(uname -m)" -R true 2>/dev/null; then
	norandom="setarch $(uname -m) -R"
fi

passed=0 failed=0 skipped=0 skips=
for dir in "$@"; do
	dir=$(cd "$dir" && pwd) || exit 1
	variant=${dir##*/lib-}
	wrap=
	[ "$variant" = tsan ] && wrap=$norandom
	for t in "$dir"/test/*; do
		case $t in *.o) continue ;; esac
		[ -x "$t" ] || continue
		name=${t##*/}
		out=$(cd "$dir" && NOWAIT_TEST_DIR=${NOWAIT_TEST_DIR:-$dir} timeout 300 $wrap "$t" 2>&1)
		rc=$?
		case $rc in
		0)
			echo "ok - $name [$variant]"
			passed=$((passed + 1)) ;;
		77)
			reason=$(printf '%s\n' "$out" | sed -n 's/^SKIP: //p' | tail -n 1)
			echo "ok - $name [$variant] # SKIP $reason"
			skipped=$((skipped + 1))
			skips="$skips  $name [$variant]: $reason
" ;;
		*)
			echo "not ok - $name [$variant] (exit $rc)"
			printf '%s\n' "$out" | sed 's/^/#   /'
			failed=$((failed + 1)) ;;
		esac
	done
done
if [ "$skipped" -gt 0 ]; then
	echo "$skipped skipped:"
	printf '%s' "$skips"
fi
echo "$passed passed, $failed failed, $skipped skipped"
if [ "$skipped" -gt 0 ] && [ "${NOWAIT_ALLOW_SKIP:-0}" != 1 ]; then
	echo "skips fail the run (NOWAIT_ALLOW_SKIP=1 accepts them)"
	exit 1
fi
[ "$failed" -eq 0 ]
