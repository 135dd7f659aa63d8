#!/usr/bin/env bash
# The crash test: flagged writes and fsync in one boot, then a reboot with
# no clean shutdown (sysrq b); a second boot on the same disk images checks
# that what fsync promised is there, and that nothing is torn
# (tools/nowait-crash.c says what exactly).
#
#   harness/crash.sh KERNEL
#
# Needs the guest image (guest_image in lib.sh). Prints one line per case,
# "PASS|FAIL nowait-crash: ...", as harness/tap.awk does for the suite.
set -uo pipefail
. "$(dirname "$0")/lib.sh"

kernel=${1:?usage: $0 KERNEL}
image=$NOWAIT_OUT/initramfs.cpio
log1=$NOWAIT_OUT/console-crash-write.log log2=$NOWAIT_OUT/console-crash-check.log

rc=0
"$NOWAIT_ROOT/harness/boot.sh" "$kernel" "$image" crash-write "$log1" 600 || rc=$?
# sysrq b ends the guest without reporting a status: boot.sh says 125.
if [ "$rc" != 125 ] || ! grep -aq 'nowait-crash: rebooting without a clean shutdown, status 0' "$log1"; then
	echo "FAIL nowait-crash: the first boot did not write and crash (status $rc, console $log1)"
	exit 1
fi
tr -d '\r' <"$log1" | grep -a '^nowait-crash: /mnt' | sed 's/^/  /' >&2

rc=0
NOWAIT_KEEP_DISKS=1 NOWAIT_APPEND="nowait.keep=1 ${NOWAIT_APPEND:-}" \
	"$NOWAIT_ROOT/harness/boot.sh" "$kernel" "$image" crash-check "$log2" 600 || rc=$?
awk -f "$NOWAIT_ROOT/harness/tap.awk" "$log2"
case $rc in
0) ;;
126) echo "FAIL nowait-crash: kernel splat in the console after the crash (see $log2.splats)" ;;
*) echo "FAIL nowait-crash: the second boot ended with status $rc (console $log2)" ;;
esac
