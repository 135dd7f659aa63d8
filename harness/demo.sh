#!/usr/bin/env bash
# The main job: build the patched kernel, boot it, and print what preadv2 and
# pwritev2 with RWF_NOWAIT do on each filesystem (table, and JSON in build/).
#
#   harness/demo.sh [--stock]
#
# --stock does the same with the Debian tree as shipped, for comparison.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

name=patched
[ "${1:-}" = --stock ] && name=stock

phase "dependencies" "$NOWAIT_ROOT/harness/deps.sh"
kernel=$(kernel_tree "$name")
guest_image
ceph_cluster || say "ceph: no cluster, so no ceph row"
log=$NOWAIT_OUT/console-demo-$name.log
phase "boot and probe" "$NOWAIT_ROOT/harness/boot.sh" "$kernel" "$NOWAIT_OUT/initramfs.cpio" demo "$log" 600

json=$NOWAIT_OUT/probe-$name.json
json_from "$log" "$json"
echo
echo "RWF_NOWAIT on $(cat "$NOWAIT_OUT/$name/version"):"
tr -d '\r' <"$log" | sed -n '/^nowait-demo: begin/,/^nowait-json: begin/p' | sed '1d;$d'
echo
say "JSON: $json"
