#!/usr/bin/env bash
# Systematic fault injection under RWF_NOWAIT calls and their deferred
# workers (issue 35; kernel/tests/nowait_faults.c): the guest runs
# nowait_faults in both ABIs, and this prints its table (calls tried,
# failures injected, bad outcomes per filesystem, path and phase) and writes
# it as JSON. On the debug kernel each filesystem's case also asks kmemleak
# for new leaks, and KASAN and lockdep watch.
#
#   harness/faults.sh [--debug] [--kernel BZIMAGE]   (make faults, make faults-debug)
#
# --kernel boots that image instead of building the patched tree.
# NOWAIT_FAULTS_NTH=N (environment) runs only fail-nth N, with the stack of
# each injected failure in the console (those not marked __GFP_NOWARN), and
# NOWAIT_FAULTS_SELECT the kselftest options, commas for spaces ("-v,ext4":
# that filesystem only): the reproducer of one outcome.
# Output: build/faults[-debug].json, the console in build/console-faults[-debug].log.
# Fails on a failed case, a bad outcome, a leak or a kernel splat.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

debug='' kernel=''
while [ $# -gt 0 ]; do
	case $1 in
	--debug) debug=debug ;;
	--kernel) kernel=$2; shift ;;
	*) die "usage: $0 [--debug] [--kernel BZIMAGE]" ;;
	esac
	shift
done
sfx=${debug:+-debug}
phase "dependencies" "$NOWAIT_ROOT/harness/deps.sh"
kernel=$(kernel_for patched "$kernel" ${debug:+"$debug"})
guest_image
log=$NOWAIT_OUT/console-faults$sfx.log json=$NOWAIT_OUT/faults$sfx.json
append="NOWAIT_TEST_TIMEOUT=${NOWAIT_FAULTS_TIMEOUT:-2400}"
# NOWAIT_FAULTS_ABI=x86_64|i386 runs one build of the program, not both.
prog=nowait_faults.${NOWAIT_FAULTS_ABI:-*}
if [ -n "${NOWAIT_FAULTS_SELECT:-}" ]; then
	append="$append NOWAIT_TESTS=$prog@$NOWAIT_FAULTS_SELECT"
elif [ -n "${NOWAIT_FAULTS_ABI:-}" ]; then
	append="$append NOWAIT_TESTS=$prog"
fi
[ -z "${NOWAIT_FAULTS_NTH:-}" ] || append="$append NOWAIT_FAULTS_NTH=$NOWAIT_FAULTS_NTH"
# The debug kernel: more memory, acpi=noirq (see check.sh --debug), and
# kmemleak scans after each filesystem.
[ -z "$debug" ] || { export NOWAIT_MEM=3072; append="acpi=noirq NOWAIT_FAULTS_KMEMLEAK=1 $append"; }
rc=0
NOWAIT_APPEND="$append ${NOWAIT_APPEND:-}" phase "nowait_faults in QEMU" \
	"$NOWAIT_ROOT/harness/boot.sh" "$kernel" "$NOWAIT_OUT/initramfs.cpio" faults "$log" \
	"${NOWAIT_BOOT_TIMEOUT:-5400}" || rc=$?
tr -d '\r' <"$log" >"$log.txt"
# A kernel message printed meanwhile can land inside a row on the shared
# console (as in json_from): the table reads the console without them.
perl -0pe 's/\[ *[0-9]+\.[0-9]+\] [^\n]*\n//g' "$log.txt" >"$log.rows"
python3 "$NOWAIT_ROOT/harness/faults-table.py" "$log.rows" "$json"
results=$(awk -f "$NOWAIT_ROOT/harness/tap.awk" "$log.txt")
printf '%s\n' "$results"
fails=$(printf '%s\n' "$results" | grep -c '^FAIL' || true)
passes=$(printf '%s\n' "$results" | grep -c '^PASS' || true)
case $rc in
0) ;;
126) say "faults: kernel splat in the console:"; head -n 12 "$log.splats" >&2 ;;
*) say "faults: guest status $rc (console: $log)" ;;
esac
say "faults: $passes cases passed, $fails failed, guest status $rc; JSON in $json"
[ "$rc" = 0 ] && [ "$fails" = 0 ] && [ "$passes" -gt 0 ]
