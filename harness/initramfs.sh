#!/usr/bin/env bash
# Pack the guest's initramfs: busybox, the mkfs tools with their shared
# libraries, the test programs (x86_64 and i386) and the capability probe.
#
#   harness/initramfs.sh OUT.cpio
set -euo pipefail
. "$(dirname "$0")/lib.sh"

out=${1:?usage: $0 OUT.cpio}
root=$NOWAIT_OUT/initramfs
rm -rf "$root"
mkdir -p "$root"/{bin,sbin,dev,proc,sys,tmp,mnt,tests}

cp /bin/busybox "$root/bin/busybox"
cp "$NOWAIT_ROOT/harness/guest/init" "$root/init"
gcc -O2 -Wall -Wextra -Werror -static -o "$root/bin/guest-exit" "$NOWAIT_ROOT/harness/guest/exit.c"

# Dynamically linked tools: copy each with every library it loads.
copy_with_libs() {
	local tool=$1 lib
	cp "$tool" "$root/sbin/"
	for lib in $(ldd "$tool" | grep -o '/[^ ]*'); do
		[ -e "$root$lib" ] || { mkdir -p "$root$(dirname "$lib")" && cp -L "$lib" "$root$lib"; }
	done
}
for tool in mkfs.ext4 mkfs.ext2 mke2fs mkfs.xfs mkfs.btrfs mkfs.vfat mkfs.exfat trinity; do
	copy_with_libs "$(command -v "$tool" || echo "/sbin/$tool")"
done

cp "$NOWAIT_OUT"/tests/*.x86_64 "$NOWAIT_OUT"/tests/*.i386 "$root/tests/"
cp "$NOWAIT_OUT"/tools/nowait-* "$root/bin/"
ln -s nowait-probe.x86_64 "$root/bin/nowait-probe"
# The benchmark, for the bench job, when harness/bench-guest.sh built it.
bench=$NOWAIT_OUT/bench/nowait-bench.static
[ -e "$bench" ] && cp "$bench" "$root/bin/nowait-bench"

(cd "$root" && find . | cpio --quiet -o -H newc) >"$out"
say "initramfs: $out, $(du -m "$out" | cut -f1) MiB, $(ls "$root/tests" | wc -l) test programs"
