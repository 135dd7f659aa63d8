#!/usr/bin/env bash
# The main job: build the patched kernel, boot it, and print what preadv2 and
# pwritev2 with RWF_NOWAIT do on each filesystem (table, and JSON in build/).
#
#   harness/demo.sh [--stock]
#
# --stock does the same with the Debian tree as shipped, for comparison.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

kflags=()
[ "${1:-}" = --stock ] && kflags=(--stock)

phase "dependencies" "$NOWAIT_ROOT/harness/deps.sh"
kernel=$(phase "kernel build" "$NOWAIT_ROOT/harness/kernel.sh" "${kflags[@]}")
name=$(basename "$(dirname "$kernel")")
phase "probe build" make -s -C "$NOWAIT_ROOT/tools" O="$NOWAIT_OUT/tools"
# The initramfs wants the test programs too; the demo boots the same image as the tests.
phase "tests build" make -s -C "$NOWAIT_ROOT/kernel/tests" O="$NOWAIT_OUT/tests"
phase "initramfs" "$NOWAIT_ROOT/harness/initramfs.sh" "$NOWAIT_OUT/initramfs.cpio"
log=$NOWAIT_OUT/console-demo-$name.log
phase "boot and probe" "$NOWAIT_ROOT/harness/boot.sh" "$kernel" "$NOWAIT_OUT/initramfs.cpio" demo "$log" 600

json=$NOWAIT_OUT/probe-$name.json
json_from "$log" "$json"
echo
echo "RWF_NOWAIT on $(cat "$NOWAIT_OUT/$name/version"):"
tr -d '\r' <"$log" | sed -n '/^nowait-demo: begin/,/^nowait-json: begin/p' | sed '1d;$d'
echo
say "JSON: $json"
