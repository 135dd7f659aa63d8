#!/usr/bin/env bash
# make deb-check: the packages of make deb installed as a Debian user would,
# in the Debian 12 image of make regress, booted with its own kernel,
# initramfs-tools initrd and systemd. Prints "PASS deb-check: ..." and
# "FAIL deb-check: ..." lines, then "N passed, N failed".
#
#   harness/deb-check.sh [--if-cached]
#
# 1. The image: harness/regress-image.sh's tree, copied, with what a Debian
#    system boots with added by apt in a chroot (systemd-sysv, udev,
#    initramfs-tools, Debian's stock kernel linux-image-amd64, curl,
#    pkgconf); kept in $NOWAIT_CACHE/deb-check/base-HASH.
# 2. A copy of it gets build/deb/*.deb with `apt-get install ./*.deb`
#    (dependencies from the archive), which runs the kernel package's
#    hooks: initramfs-tools makes its initrd. Then the check's unit and
#    script (harness/deb-check/), a file to serve, and an ext4 image.
# 3. Boot 1: QEMU -kernel/-initrd from the image's /boot, the nowait kernel
#    (the newest, as grub would pick it), systemd as init. The guest prints
#    what it finds (harness/deb-check/guest.sh); this script asserts: uname
#    -r is the nowait release, the probe's ext4 and tmpfs rows are the
#    patched ones, nowait-serve started by systemctl serves the file over
#    TLS to curl (certificate checked) as its system user without
#    capabilities, pkg-config --libs nowait is -lnowait and the packaged
#    example builds, links libnowait.so.1 and hashes the file as the tree's
#    build does; then apt remove of the nowait kernel.
# 4. Boot 2: the newest kernel left in /boot (read from the image with
#    debugfs): it must be Debian's, boot to a running systemd, and the
#    probe's tmpfs row must be the stock one.
# --if-cached (make check): runs only when the regress image and the
# kernel packages are already made; otherwise prints one SKIP line and
# exits 0, so a skip is never counted as a pass.
set -uo pipefail
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/regress/lib.sh"

if_cached=
[ "${1:-}" = --if-cached ] && if_cached=--if-cached
out=$NOWAIT_OUT/deb-check
dc=$NOWAIT_CACHE/deb-check
mkdir -p "$out"
: >"$out/results"
pass() { echo "PASS deb-check: $*" | tee -a "$out/results"; }
fail() { echo "FAIL deb-check: $*" | tee -a "$out/results"; }
skip() { echo "SKIP deb-check: $*"; exit 0; }
check() { # check NAME WANT GOT
	if [ "$2" = "$3" ]; then pass "$1 ($3)"; else fail "$1: want '$2', got '$3'"; fi
}
finish() {
	local p f
	p=$(grep -c '^PASS' "$out/results")
	f=$(grep -c '^FAIL' "$out/results")
	echo "$p passed, $f failed"
	[ "$f" = 0 ]
	exit
}

# in_chroot DIR CMD...: CMD in DIR with /proc, /sys and /dev mounted for
# dpkg's maintainer scripts, and no service started (policy-rc.d).
in_chroot() {
	local d=$1 rc=0
	shift
	mount -t proc proc "$d/proc" && mount -t sysfs sys "$d/sys" && mount --bind /dev "$d/dev" &&
		mount --bind /dev/pts "$d/dev/pts" || { umount -R "$d/proc" "$d/sys" "$d/dev" 2>/dev/null; return 1; }
	printf '#!/bin/sh\nexit 101\n' >"$d/usr/sbin/policy-rc.d"
	chmod +x "$d/usr/sbin/policy-rc.d"
	cp /etc/resolv.conf "$d/etc/resolv.conf"
	chroot "$d" env DEBIAN_FRONTEND=noninteractive PATH=/usr/sbin:/usr/bin:/sbin:/bin "$@" || rc=$?
	rm -f "$d/usr/sbin/policy-rc.d"
	umount "$d/dev/pts" "$d/dev" "$d/sys" "$d/proc"
	return $rc
}

phase "dependencies" "$NOWAIT_ROOT/harness/deps.sh" >&2 || { fail "dependencies"; finish; }
# The regress image, and with --if-cached the kernel packages, must be there.
if [ -n "$if_cached" ]; then
	rootfs=$("$NOWAIT_ROOT/harness/regress-image.sh" --if-cached) || skip "the regress image is not made (make regress or make deb-check makes it)"
	"$NOWAIT_ROOT/harness/kernel-deb.sh" --if-cached >/dev/null ||
		skip "the kernel packages are not built for the tree (make deb builds them, about 25 min)"
else
	rootfs=$("$NOWAIT_ROOT/harness/regress-image.sh") || { fail "regress image"; finish; }
fi

# 1. The base image, made once per regress tree.
base_pkgs="systemd systemd-sysv udev initramfs-tools linux-image-amd64 curl pkgconf ca-certificates"
base=$dc/base-$( (basename "$rootfs"; echo "$base_pkgs") | sha256sum | cut -c1-12)
(
	cache_lock deb-check/base
	[ ! -e "$base/.complete" ] || exit 0
	say "image: $base from $rootfs + $base_pkgs"
	rm -rf --one-file-system "$base.tmp"
	cp -a "$rootfs" "$base.tmp"
	# shellcheck disable=SC2086 # one word per package
	in_chroot "$base.tmp" sh -c "apt-get update -q && apt-get install -y -q --no-install-recommends $base_pkgs" \
		>"$dc/base.log" 2>&1 || { tail -20 "$dc/base.log" >&2; exit 1; }
	echo '/dev/vda / ext4 defaults,errors=remount-ro 0 1' >"$base.tmp/etc/fstab"
	# As Debian's installer writes it: hostname -f (make-ssl-cert) resolves.
	printf '127.0.0.1\tlocalhost\n127.0.1.1\t%s\n' "$(cat "$base.tmp/etc/hostname")" >"$base.tmp/etc/hosts"
	# The serial console carries the check's output, not a login prompt.
	ln -sf /dev/null "$base.tmp/etc/systemd/system/serial-getty@ttyS0.service"
	touch "$base.tmp/.complete"
	for old in "$dc"/base-*; do
		[ "$old" = "$base.tmp" ] || rm -rf --one-file-system "$old"
	done
	mv "$base.tmp" "$base"
) || { fail "base image (log: $dc/base.log)"; finish; }

# The packages (the kernel's may wait for another kernel build).
deb_args=()
[ -z "$if_cached" ] || deb_args=(--no-kernel)
phase "packages" "$NOWAIT_ROOT/harness/deb.sh" "${deb_args[@]}" >/dev/null || { fail "make deb"; finish; }
debs=$NOWAIT_OUT/deb
release=$(ls "$debs"/linux-image-*-nowait*.deb | sed 's|.*/linux-image-||; s|_.*||' | head -1)
[ -n "$release" ] || { fail "no linux-image package in $debs"; finish; }
say "deb-check: nowait kernel $release ($(cat "$debs/kernel-version"))"

# 2. This run's image: the packages installed by apt.
work=$dc/work
rm -rf --one-file-system "$work"
cp -a "$base" "$work"
mkdir -p "$work/root/debs"
cp "$debs"/*.deb "$work/root/debs/"
if in_chroot "$work" sh -c 'cd /root/debs && apt-get install -y -q --no-install-recommends ./*.deb' >"$out/install.log" 2>&1; then
	pass "apt-get install ./*.deb: $(cd "$debs" && ls ./*.deb | sed 's|./||; s|_.*||' | paste -sd' ')"
else
	tail -20 "$out/install.log"
	fail "apt-get install ./*.deb (log: $out/install.log)"
	finish
fi
# What apt brought from the archive beside them.
grep -E '^(Get|Setting up)' "$out/install.log" | sed 's/^/  /' | head -40 >&2
for f in vmlinuz initrd.img; do
	[ -e "$work/boot/$f-$release" ] || fail "/boot/$f-$release missing after the install"
done
install -m 755 "$NOWAIT_ROOT/harness/deb-check/guest.sh" "$work/usr/local/sbin/nowait-deb-check"
install -m 644 "$NOWAIT_ROOT/harness/deb-check/nowait-deb-check.service" "$work/etc/systemd/system/"
ln -sf /etc/systemd/system/nowait-deb-check.service "$work/etc/systemd/system/multi-user.target.wants/"
# The file to serve, under the packaged default root.
mkdir -p "$work/srv/nowait-serve"
head -c 1048576 /dev/urandom >"$work/srv/nowait-serve/hello.bin"
chmod 755 "$work/srv/nowait-serve" && chmod 644 "$work/srv/nowait-serve/hello.bin"
want_sha=$(sha256sum <"$work/srv/nowait-serve/hello.bin" | cut -d' ' -f1)
make -s -C "$NOWAIT_ROOT" lib >&2
want_sum=$("$NOWAIT_ROOT/build/lib-plain/examples/nowait-sum" "$work/srv/nowait-serve/hello.bin" | head -1 |
	sed "s|$work||")
img=$out/root.img
rm -f "$img"
nice -n 19 mkfs.ext4 -q -F -L deb-check -d "$work" "$img" 6G || { fail "mkfs.ext4 of the image"; finish; }
rm -rf --one-file-system "$work"

# boot NAME KERNEL INITRD: QEMU on the image (written to: boot 2 sees what
# boot 1 left) with the kernel and initrd from its /boot; console in
# $out/NAME.log.
boot() {
	local log=$out/$1.log
	say "boot: $1: $2 (console: $log)"
	setsid nice -n 19 timeout -k 10 1200 qemu-system-x86_64 \
		-machine pc -accel tcg,thread=multi -cpu max -smp 2 -m 2048 \
		-display none -monitor none -no-reboot -serial "file:$log" \
		-kernel "$2" -initrd "$3" \
		-append "console=ttyS0 root=/dev/vda ro $NOWAIT_GUEST_ARGS nowait.debcheck=${1#boot}" \
		-drive "file=$img,if=none,id=root,format=raw,cache=unsafe" \
		-device virtio-blk-pci,drive=root,serial=root </dev/null &
	local qemu=$!
	regress_autogroup_nice "$qemu"
	wait "$qemu"
	say "boot: $1: QEMU exited $?"
	tr -d '\r' <"$log" >"$log.txt"
}
# from_image PATH DEST: a file of the image, with debugfs, without mounting it.
from_image() { debugfs -R "dump -p $1 $2" "$img" >/dev/null 2>&1 && [ -s "$2" ]; }
# value LOG KEY: the rest of the guest's "deb-check: KEY ..." line.
value() { sed -n "s/^deb-check: $2 //p" "$1" | head -1 | sed 's/[[:space:]]*$//'; }
# probe_cell LOG TARGET COLUMN: one cell of the probe's JSON.
probe_cell() {
	json_from "$1" "$1.probe.json" probe >/dev/null 2>&1 || { echo "no probe JSON"; return; }
	python3 -c 'import json, sys
d = json.load(open(sys.argv[1]))
t = [x for x in d["targets"] if x["label"] == sys.argv[2]]
print(t[0][sys.argv[3]]["text"] if t else "no row")' "$1.probe.json" "$2" "$3"
}

# newest_kernel: the newest kernel in the image's /boot, as grub would pick it.
newest_kernel() {
	debugfs -R "ls -p /boot" "$img" 2>/dev/null | awk -F/ '{print $6}' | sed -n 's/^vmlinuz-//p' | sort -V | tail -1
}
# boot_and_check N KVER: boot N with KVER's kernel and initrd from the
# image's /boot, and the checks every boot has; l is its console.
boot_and_check() {
	local n=$1 k=$2
	from_image "/boot/vmlinuz-$k" "$out/vmlinuz-$n" && from_image "/boot/initrd.img-$k" "$out/initrd-$n" ||
		{ fail "no kernel or initrd for $k in the image"; finish; }
	boot "boot$n" "$out/vmlinuz-$n" "$out/initrd-$n"
	l=$out/boot$n.log.txt
	check "boot $n reached the check" "$n done" "$(grep -o "^deb-check: phase $n done" "$l" | sed 's/^deb-check: phase //')"
	check "boot $n: uname -r" "$k" "$(value "$l" uname)"
	check "boot $n: init is systemd" systemd "$(value "$l" init)"
	check "boot $n: systemctl is-system-running" running "$(value "$l" system)"
	grep '^deb-check: failed-unit' "$l" >&2
}

# 3. The nowait kernel, the newest.
check "the newest kernel in the image's /boot is the nowait one" "$release" "$(newest_kernel)"
boot_and_check 1 "$release"
# The patched rows of README's table: ext4 write and every tmpfs read and
# write succeed; stock 6.12 fails them with EOPNOTSUPP.
for cell in "ext4 read_hit 16384" "ext4 read_miss EAGAIN" "ext4 write 16384" "ext4 odirect_read 4096" \
	"ext4 odirect_write EAGAIN" "tmpfs read_hit 16384" "tmpfs read_miss not evictable" "tmpfs write 16384" \
	"tmpfs odirect_read EOPNOTSUPP" "tmpfs odirect_write EOPNOTSUPP"; do
	set -- $cell
	check "nowait-probe $1 ${2}" "${*:3}" "$(probe_cell "$l" "$1" "$2")"
done
check "nowait-serve: the unit started" 0 "$(value "$l" serve-start)"
check "nowait-serve: curl over TLS (snakeoil certificate verified) got the file" "$want_sha" "$(value "$l" served-sha256)"
check "nowait-serve runs as its system user" _nowait-serve "$(value "$l" serve-user)"
check "nowait-serve has no effective capabilities" 0000000000000000 "$(value "$l" serve-caps)"
say "deb-check: $(value "$l" serve-exposure)"
check "pkg-config --libs nowait" -lnowait "$(value "$l" pkg-config-libs)"
check "the packaged example builds with pkg-config" 0 "$(value "$l" cc)"
check "the example hashes the file as the tree's build does" "$want_sum" "$(value "$l" sum)"
links=$(value "$l" sum-links)
case $links in
"libnowait.so.1 => /lib/x86_64-linux-gnu/libnowait.so.1" | "libnowait.so.1 => /usr/lib/x86_64-linux-gnu/libnowait.so.1")
	pass "the example links the packaged library ($links)" ;;
*) fail "the example links '$links', not the packaged libnowait.so.1" ;;
esac
check "apt-get remove linux-image-$release" 0 "$(value "$l" apt-remove)"

# 4. What apt remove left: the newest kernel in /boot, booted.
left=$(newest_kernel)
case $left in
'' | *nowait*) fail "after apt remove, the newest kernel in /boot is '$left'"; finish ;;
*) pass "after apt remove, the newest kernel in /boot is Debian's $left" ;;
esac
if debugfs -R "stat /lib/modules/$release" "$img" 2>/dev/null | grep -q Inode; then
	fail "/lib/modules/$release is still there"
else
	pass "/lib/modules/$release removed"
fi
boot_and_check 2 "$left"
check "nowait-probe on the stock kernel: tmpfs read hit" EOPNOTSUPP "$(probe_cell "$l" tmpfs read_hit)"
finish
