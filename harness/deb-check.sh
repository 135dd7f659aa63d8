#!/usr/bin/env bash
# make deb-check [DEBIAN=bookworm|trixie]: the packages of make deb
# installed as a Debian user would, on a Debian 12 (bookworm, the default)
# or 13 (trixie) disk that boots through its own grub with QEMU's BIOS,
# initramfs-tools initrd and systemd. Prints "PASS deb-check/RELEASE: ..."
# and "FAIL deb-check/RELEASE: ..." lines, then "N passed, N failed".
#
#   harness/deb-check.sh [--if-cached] [--kernel-debs DIR] [RELEASE]
#
# RELEASE: bookworm or trixie (default NOWAIT_DEBIAN, make DEBIAN=, else
# bookworm). --kernel-debs DIR tests the kernel packages in DIR (one of
# $NOWAIT_CACHE/deb/, say) instead of make deb's for the tree as it is.
#
# 1. The base tree, kept in $NOWAIT_CACHE/deb-check/base-HASH: on bookworm
#    the tree of make regress (harness/regress-image.sh), on trixie one of
#    mmdebstrap's (the regress list names bookworm's libraries); then by
#    apt in a chroot what a Debian system boots with: systemd-sysv, udev,
#    initramfs-tools, Debian's stock kernel linux-image-amd64, grub-pc,
#    curl, pkgconf. /etc/default/grub as an installer for a serial console
#    writes it.
# 2. A disk, MBR with one ext4 partition made from the base tree, attached
#    to a loop device and mounted: in a chroot on it, grub-install and
#    update-grub, as Debian's installer ends, then `apt-get install ./*.deb`
#    of build/deb (dependencies from the archive): the kernel package's
#    hooks make its initrd (initramfs-tools) and run update-grub, as on a
#    real machine. Then the check's unit and script (harness/deb-check/)
#    and a file to serve.
# 3. Boot 1: QEMU boots the disk (SeaBIOS, grub's default entry: the
#    newest kernel, the nowait one), systemd as init. The guest prints
#    what it finds (harness/deb-check/guest.sh); this script asserts: grub
#    booted the nowait kernel (BOOT_IMAGE, uname -r), the probe's ext4 and
#    tmpfs rows are the patched ones, nowait-serve started by systemctl
#    serves the file over TLS to curl (certificate checked) as its system
#    user without capabilities, pkg-config --libs nowait is -lnowait and
#    the packaged example builds, links libnowait.so.1 and hashes the file
#    as the tree's build does; an out-of-tree module builds against
#    linux-headers and loads; then apt remove of the nowait kernel, whose
#    hooks run update-grub again.
# 4. Boot 2: grub's default entry must now be Debian's kernel, boot to a
#    running systemd, and the probe's tmpfs row must be the stock one.
# --if-cached (make check): runs only when the base tree's source (the
# regress tree on bookworm, the base itself on trixie) and the kernel
# packages are already made; otherwise prints one SKIP line and exits 0,
# so a skip is never counted as a pass.
set -uo pipefail
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/regress/lib.sh"

if_cached='' kernel_debs=''
debian=${NOWAIT_DEBIAN:-bookworm}
while [ $# -gt 0 ]; do
	case $1 in
	--if-cached) if_cached=--if-cached ;;
	--kernel-debs) kernel_debs=$2 && shift ;;
	bookworm | trixie) debian=$1 ;;
	*) die "usage: deb-check.sh [--if-cached] [--kernel-debs DIR] [bookworm|trixie]" ;;
	esac
	shift
done
case $debian in
bookworm | trixie) ;;
*) die "NOWAIT_DEBIAN=$debian: bookworm or trixie" ;;
esac
out=$NOWAIT_OUT/deb-check/$debian
dc=$NOWAIT_CACHE/deb-check
mkdir -p "$out" "$dc"
: >"$out/results"
pass() { echo "PASS deb-check/$debian: $*" | tee -a "$out/results"; }
fail() { echo "FAIL deb-check/$debian: $*" | tee -a "$out/results"; }
skip() { echo "SKIP deb-check/$debian: $*"; exit 0; }
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

# mounts_for DIR: /proc, /sys and /dev (the host's, or with DEV a private
# one) in DIR for dpkg's maintainer scripts; umounts_for DIR undoes it.
mounts_for() {
	local d=$1
	mount -t proc proc "$d/proc" && mount -t sysfs sys "$d/sys" || return 1
	if [ -n "${2:-}" ]; then
		mount -t tmpfs -o mode=755 dev "$d/dev" || return 1
		mkdir -p "$d/dev/pts"
		for n in null zero full random urandom tty; do
			touch "$d/dev/$n" && mount --bind "/dev/$n" "$d/dev/$n" || return 1
		done
	else
		mount --bind /dev "$d/dev" || return 1
	fi
	mount --bind /dev/pts "$d/dev/pts"
}
umounts_for() { umount -R "$1/dev" "$1/sys" "$1/proc" 2>/dev/null; }
# in_chroot DIR CMD...: CMD in DIR (mounts_for done), no service started
# (policy-rc.d), the host's resolver for apt.
in_chroot() {
	local d=$1 rc=0
	shift
	printf '#!/bin/sh\nexit 101\n' >"$d/usr/sbin/policy-rc.d"
	chmod +x "$d/usr/sbin/policy-rc.d"
	cp /etc/resolv.conf "$d/etc/resolv.conf"
	chroot "$d" env DEBIAN_FRONTEND=noninteractive PATH=/usr/sbin:/usr/bin:/sbin:/bin "$@" || rc=$?
	rm -f "$d/usr/sbin/policy-rc.d"
	return $rc
}

phase "dependencies" "$NOWAIT_ROOT/harness/deps.sh" >&2 || { fail "dependencies"; finish; }

# 1. The base tree. What a Debian system boots with, and what the check's
# guest script calls (the regress tree has gcc, make, procps and kmod, and
# e2fsprogs, which trixie's minbase no longer has: the initrd's fsck.ext4).
base_pkgs="systemd systemd-sysv udev initramfs-tools linux-image-amd64 grub-pc curl pkgconf ca-certificates"
extra_pkgs="gcc libc6-dev make procps kmod e2fsprogs"
# As Debian's installer run on a serial console writes it: grub and the
# kernel's console on ttyS0 (no "quiet": the console log is the check's
# record), and the guests' arguments (NOWAIT_GUEST_ARGS in lib.sh).
grub_default='GRUB_TIMEOUT=1
GRUB_CMDLINE_LINUX_DEFAULT=""
GRUB_CMDLINE_LINUX="console=ttyS0,115200n8 '"$NOWAIT_GUEST_ARGS"'"
GRUB_TERMINAL=serial
GRUB_SERIAL_COMMAND="serial --unit=0 --speed=115200"'
if [ "$debian" = bookworm ]; then
	rootfs=$("$NOWAIT_ROOT/harness/regress-image.sh" $if_cached) ||
		{ [ -z "$if_cached" ] || skip "the regress image is not made (make regress or make deb-check makes it)"; fail "regress image"; finish; }
	from=$(basename "$rootfs")
else
	rootfs='' from=mmdebstrap-$debian
fi
base=$dc/base-$( (echo "$debian $from"; echo "$base_pkgs $extra_pkgs"; echo "$grub_default") | sha256sum | cut -c1-12)
if [ -n "$if_cached" ] && [ -z "$rootfs" ] && [ ! -e "$base/.complete" ]; then
	skip "the $debian base image is not made (make deb-check DEBIAN=$debian makes it, about 5 min)"
fi
[ -z "$if_cached" ] || "$NOWAIT_ROOT/harness/kernel-deb.sh" --if-cached >/dev/null ||
	skip "the kernel packages are not built for the tree (make deb builds them, about 25 min)"
(
	cache_lock deb-check/base
	if [ ! -e "$base/.complete" ]; then
		say "image: $base: $debian ${rootfs:-from mmdebstrap} + $base_pkgs"
		rm -rf --one-file-system "$base.tmp"
		if [ -n "$rootfs" ]; then
			cache_use "$rootfs" && cp -a "$rootfs" "$base.tmp"
		else
			mirror=http://deb.debian.org/debian
			nice -n 19 mmdebstrap --variant=minbase --mode=root --dpkgopt=force-unsafe-io \
				--include="$(echo "$extra_pkgs" | tr ' ' ,)" \
				--customize-hook='echo deb-check >"$1/etc/hostname"' \
				"$debian" "$base.tmp" \
				"deb $mirror $debian main" "deb $mirror $debian-updates main" \
				"deb http://deb.debian.org/debian-security $debian-security main"
		fi >"$dc/base-$debian.log" 2>&1 || { tail -20 "$dc/base-$debian.log" >&2; exit 1; }
		mounts_for "$base.tmp" || { umounts_for "$base.tmp"; exit 1; }
		# grub-pc asks where to install itself: nowhere here; the disk
		# of step 2 gets it.
		# shellcheck disable=SC2086 # one word per package
		in_chroot "$base.tmp" sh -c "echo 'grub-pc grub-pc/install_devices multiselect' | debconf-set-selections &&
			apt-get update -q && apt-get install -y -q --no-install-recommends $base_pkgs $extra_pkgs" \
			>>"$dc/base-$debian.log" 2>&1
		rc=$?
		umounts_for "$base.tmp"
		[ "$rc" = 0 ] || { tail -20 "$dc/base-$debian.log" >&2; exit 1; }
		printf '%s\n' "$grub_default" | while IFS= read -r line; do
			sed -i "/^#*${line%%=*}=/d" "$base.tmp/etc/default/grub"
			echo "$line" >>"$base.tmp/etc/default/grub"
		done
		# As Debian's installer writes it: hostname -f (make-ssl-cert) resolves.
		printf '127.0.0.1\tlocalhost\n127.0.1.1\t%s\n' "$(cat "$base.tmp/etc/hostname")" >"$base.tmp/etc/hosts"
		# The serial console carries the check's output, not a login prompt.
		ln -sf /dev/null "$base.tmp/etc/systemd/system/serial-getty@ttyS0.service"
		rm -f "$base.tmp/etc/resolv.conf"
		touch "$base.tmp/.complete"
		mv "$base.tmp" "$base"
		: >"$base.users"
	fi
	# This clone's base of another recipe goes, never another clone's.
	cache_claim "$base" "deb-check-$debian"
) || { fail "base image (log: $dc/base-$debian.log)"; finish; }
say "deb-check: $debian base $base"

# The packages (the kernel's may wait for another kernel build).
deb_args=()
[ -z "$if_cached$kernel_debs" ] || deb_args=(--no-kernel)
phase "packages" "$NOWAIT_ROOT/harness/deb.sh" "${deb_args[@]}" >/dev/null || { fail "make deb"; finish; }
debs=$NOWAIT_OUT/deb
if [ -n "$kernel_debs" ]; then
	# Kernel packages built before (a folder of $NOWAIT_CACHE/deb), as they are.
	rm -f "$debs"/linux-image-*.deb "$debs"/linux-headers-*.deb
	cp "$kernel_debs"/linux-*.deb "$debs/" && cp "$kernel_debs/version" "$debs/kernel-version" ||
		{ fail "no kernel packages in $kernel_debs"; finish; }
fi
release=$(ls "$debs"/linux-image-*-nowait*.deb | sed 's|.*/linux-image-||; s|_.*||' | head -1)
[ -n "$release" ] || { fail "no linux-image package in $debs"; finish; }
say "deb-check: nowait kernel $release ($(cat "$debs/kernel-version"))"

# 2. The disk: an MBR, one ext4 partition from 1 MiB made from the base
# tree (read under its use lock), 6 GiB.
img=$out/disk.img
part_off=1048576
uuid=$(cat /proc/sys/kernel/random/uuid)
rm -f "$img"
truncate -s $((part_off + 6 * 1024 * 1024 * 1024)) "$img"
parted -s "$img" mklabel msdos mkpart primary ext4 2048s 100% set 1 boot on 2>/dev/null ||
	{ fail "parted: the disk's partition table"; finish; }
(cache_use "$base" && nice -n 19 mkfs.ext4 -q -F -U "$uuid" -L deb-check -E offset=$part_off -d "$base" "$img" 6G) ||
	{ fail "mkfs.ext4 of the disk's partition"; finish; }
mnt=$out/mnt
loop=
cleanup() {
	umounts_for "$mnt"
	mountpoint -q "$mnt" && umount "$mnt"
	[ -z "$loop" ] || losetup -d "$loop"
	loop=
}
trap cleanup EXIT
loop=$(losetup -P -f --show "$img") || { fail "losetup of the disk"; finish; }
# The partition's node: losetup -P's scan does not always make it here
# (a kernel without udev); partx asks the kernel again.
for _ in $(seq 20); do [ -b "${loop}p1" ] && break; sleep 0.1; done
[ -b "${loop}p1" ] || partx -a "$loop" 2>/dev/null
mkdir -p "$mnt"
mount "${loop}p1" "$mnt" || { fail "mount ${loop}p1"; finish; }
echo "UUID=$uuid / ext4 errors=remount-ro 0 1" >"$mnt/etc/fstab"
mkdir -p "$mnt/root/debs"
cp "$debs"/*.deb "$mnt/root/debs/"
# The chroot's /dev has the disk, its partition and the by-uuid link udev
# makes on a real machine (update-grub writes root=UUID= only then).
mounts_for "$mnt" private || { fail "chroot mounts"; finish; }
for n in "$loop" "${loop}p1"; do touch "$mnt$n" && mount --bind "$n" "$mnt$n"; done
mkdir -p "$mnt/dev/disk/by-uuid" && ln -s "../../$(basename "$loop")p1" "$mnt/dev/disk/by-uuid/$uuid"
# on_disk NAME LOG CMD: CMD in the chroot on the disk, a case named NAME;
# the run stops if it fails.
on_disk() {
	if in_chroot "$mnt" sh -c "$3" >"$out/$2" 2>&1; then
		pass "$1"
	else
		tail -20 "$out/$2"
		fail "$1 (log: $out/$2)"
		finish
	fi
}
on_disk "grub-install $loop and update-grub in the image (grub-pc $(chroot "$mnt" dpkg-query -W -f='${Version}' grub-pc))" \
	grub-install.log "grub-install --target=i386-pc $loop && update-grub"
on_disk "apt-get install ./*.deb: $(cd "$debs" && ls ./*.deb | sed 's|./||; s|_.*||' | paste -sd' ')" \
	install.log 'cd /root/debs && apt-get install -y -q --no-install-recommends ./*.deb'
# What apt brought from the archive beside them.
grep -E '^(Get|Setting up)' "$out/install.log" | sed 's/^/  /' | head -40 >&2
for f in vmlinuz initrd.img; do
	[ -e "$mnt/boot/$f-$release" ] || fail "/boot/$f-$release missing after the install"
done
if grep -q 'update-grub\|Generating grub configuration' "$out/install.log"; then
	pass "the kernel package's hooks ran update-grub"
else
	fail "the kernel package's hooks did not run update-grub (log: $out/install.log)"
fi
install -m 755 "$NOWAIT_ROOT/harness/deb-check/guest.sh" "$mnt/usr/local/sbin/nowait-deb-check"
install -m 644 "$NOWAIT_ROOT/harness/deb-check/nowait-deb-check.service" "$mnt/etc/systemd/system/"
ln -sf /etc/systemd/system/nowait-deb-check.service "$mnt/etc/systemd/system/multi-user.target.wants/"
mkdir -p "$mnt/var/lib/nowait-deb-check" && echo 1 >"$mnt/var/lib/nowait-deb-check/phase"
# The file to serve, under the packaged default root.
mkdir -p "$mnt/srv/nowait-serve"
head -c 1048576 /dev/urandom >"$mnt/srv/nowait-serve/hello.bin"
chmod 755 "$mnt/srv/nowait-serve" && chmod 644 "$mnt/srv/nowait-serve/hello.bin"
want_sha=$(sha256sum <"$mnt/srv/nowait-serve/hello.bin" | cut -d' ' -f1)
make -s -C "$NOWAIT_ROOT" lib >&2
want_sum=$("$NOWAIT_ROOT/build/lib-plain/examples/nowait-sum" "$mnt/srv/nowait-serve/hello.bin" | head -1 |
	sed "s|$mnt||")
rm -f "$mnt/etc/resolv.conf"
cleanup
trap - EXIT

# boot NAME: QEMU boots the disk (written to: boot 2 sees what boot 1 left)
# with its BIOS, through the disk's MBR and grub; console in $out/NAME.log.
boot() {
	local log=$out/$1.log
	say "boot: $1 from the disk (console: $log)"
	setsid nice -n 19 timeout -k 10 1200 qemu-system-x86_64 \
		-machine pc -accel tcg,thread=multi -cpu max -smp 2 -m 2048 \
		-display none -monitor none -no-reboot -serial "file:$log" \
		-drive "file=$img,if=none,id=root,format=raw,cache=unsafe" \
		-device virtio-blk-pci,drive=root,serial=root,bootindex=1 </dev/null &
	local qemu=$!
	regress_autogroup_nice "$qemu"
	wait "$qemu"
	say "boot: $1: QEMU exited $?"
	# grub's menu is drawn with escape sequences: the text stays.
	tr -d '\r' <"$log" | sed 's/\x1b\[[0-9;?]*[a-zA-Z]//g' >"$log.txt"
}
# from_image PATH DEST: a file of the disk's partition, with debugfs, without mounting it.
from_image() { debugfs -R "dump -p $1 $2" "$img?offset=$part_off" >/dev/null 2>&1 && [ -s "$2" ]; }
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

# grub_default N: the kernel of grub's default entry (GRUB_DEFAULT=0: the
# first menuentry) in the disk's /boot/grub/grub.cfg, and its root=; the
# file is kept as $out/grub-N.cfg.
grub_default() {
	from_image /boot/grub/grub.cfg "$out/grub-$1.cfg" || { echo "no grub.cfg"; return; }
	awk '$1 == "linux" { sub(".*/vmlinuz-", "", $2); print $2, $3; exit }' "$out/grub-$1.cfg"
}
# boot_and_check N KVER: boot N, which grub must start with KVER, and the
# checks every boot has; l is its console.
boot_and_check() {
	local n=$1 k=$2
	check "boot $n: grub's default entry" "$k root=UUID=$uuid" "$(grub_default "$n")"
	boot "boot$n"
	l=$out/boot$n.log.txt
	if grep -q 'GNU GRUB' "$l"; then pass "boot $n: grub drew its menu on the serial console"; else fail "boot $n: no grub on the serial console"; fi
	check "boot $n reached the check" "$n done" "$(grep -o "^deb-check: phase $n done" "$l" | sed 's/^deb-check: phase //')"
	check "boot $n: grub booted /boot/vmlinuz-$k" "BOOT_IMAGE=/boot/vmlinuz-$k" "$(value "$l" cmdline | grep -o 'BOOT_IMAGE=[^ ]*')"
	check "boot $n: uname -r" "$k" "$(value "$l" uname)"
	check "boot $n: init is systemd" systemd "$(value "$l" init)"
	check "boot $n: systemctl is-system-running" running "$(value "$l" system)"
	grep '^deb-check: failed-unit' "$l" >&2
}

# 3. The nowait kernel, the newest: grub's default.
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
check "linux-headers: an out-of-tree module builds" 0 "$(value "$l" module-build)"
check "the module is for the nowait kernel" "$release" "$(value "$l" module-vermagic)"
check "the module loads" 0 "$(value "$l" module-load)"
check "apt-get remove linux-image-$release" 0 "$(value "$l" apt-remove)"
if grep -q '^deb-check: remove-log .*\(update-grub\|Generating grub configuration\)' "$l"; then
	pass "apt remove ran update-grub"
else
	fail "apt remove did not run update-grub"
fi

# 4. What apt remove left: grub's default entry, Debian's kernel, booted.
left=$(grub_default 2 | cut -d' ' -f1)
case $left in
'' | *nowait* | "no grub.cfg") fail "after apt remove, grub's default kernel is '$left'"; finish ;;
*) pass "after apt remove, grub's default kernel is Debian's $left" ;;
esac
if grep -q "nowait" "$out/grub-2.cfg"; then fail "grub.cfg still names the nowait kernel"; else pass "grub.cfg names no nowait kernel"; fi
if debugfs -R "stat /lib/modules/$release" "$img?offset=$part_off" 2>/dev/null | grep -q Inode; then
	fail "/lib/modules/$release is still there"
else
	pass "/lib/modules/$release removed"
fi
boot_and_check 2 "$left"
check "nowait-probe on the stock kernel: tmpfs read hit" EOPNOTSUPP "$(probe_cell "$l" tmpfs read_hit)"
finish
