#!/usr/bin/env bash
# trinity on the read and write entry points, in the guest, on the debug
# kernel (KASAN, lockdep, DEBUG_ATOMIC_SLEEP), CALLS split over the
# filesystems; a splat, or a trinity run that did not finish, fails it.
#
#   harness/fuzz.sh [CALLS]     (make fuzz; default 20000 calls)
set -euo pipefail
. "$(dirname "$0")/lib.sh"

calls=${1:-20000}
phase "dependencies" "$NOWAIT_ROOT/harness/deps.sh"
kernel=$(phase "kernel build (debug)" "$NOWAIT_ROOT/harness/kernel.sh" --debug)
guest_image
log=$NOWAIT_OUT/console-fuzz.log
rc=0
# acpi=noirq: see check.sh --debug
NOWAIT_MEM=3072 NOWAIT_APPEND="acpi=noirq nowait.fuzz_calls=$calls" phase "trinity, $calls calls" \
	"$NOWAIT_ROOT/harness/boot.sh" "$kernel" "$NOWAIT_OUT/initramfs.cpio" fuzz "$log" 3600 || rc=$?
tr -d '\r' <"$log" | sed -n '/^nowait-fuzz: begin/,/^nowait-fuzz: end/p'
splats=$(wc -l <"$log.splats" 2>/dev/null || echo 0)
calls=$(tr -d '\r' <"$log" | sed -n 's/^nowait-fuzz: \([0-9]*\) calls in all$/\1/p')
say "fuzz: ${calls:-no} trinity calls, guest status $rc, $splats splat line(s) in the console ($log)"
exit "$rc"
