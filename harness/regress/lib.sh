# Sourced (after harness/lib.sh) by the scripts that boot the Debian 12
# regression guest: harness/regress.sh (fstests, LTP) and
# harness/serve-bench-guest.sh (nowait-serve's benchmark). The guest boots
# the root image with /usr/sbin/regress-init, which mounts the job disk
# (serial "suites") on /opt/suites and runs its regress/guest.sh; the suite
# comes from the kernel command line (regress.suite=...).
# shellcheck shell=bash

# regress_root_image ROOTFS: the tree of harness/regress-image.sh as a 4 GiB
# ext4 image with the launcher, written once per tree (writing it takes
# minutes on a busy disk), under the cache lock (in a subshell, which lets
# it go); prints its path.
regress_root_image() {
	local rootfs=$1 img old
	img=$NOWAIT_CACHE/regress/root-$(basename "$rootfs" | sed 's/^rootfs-//').img
	(
		cache_lock regress/root-image
		[ ! -e "$img" ] || exit 0
		cache_use "$rootfs"
		say "image: writing $img"
		# Images whose tree is gone (regress-image.sh deletes a tree's
		# image with it), unless a guest has one open.
		for old in "$NOWAIT_CACHE"/regress/root-*.img; do
			[ -e "$old" ] && [ ! -d "$NOWAIT_CACHE/regress/rootfs-$(basename "$old" .img | sed 's/^root-//')" ] || continue
			fuser -s "$old" 2>/dev/null || rm -f "$old"
		done
		nice -n 19 mkfs.ext4 -q -F -L regress-root -d "$rootfs" "$img.tmp" 4G >&2
		debugfs -w -R "write $NOWAIT_ROOT/harness/regress/init /usr/sbin/regress-init" "$img.tmp" >/dev/null
		debugfs -w -R "sif /usr/sbin/regress-init mode 0100755" "$img.tmp" >/dev/null
		mv "$img.tmp" "$img"
	) || return
	echo "$img"
}

# regress_job_dir DIR: a fresh DIR with what every job disk holds in its
# regress/ folder: the guest's job script and guest-exit.
regress_job_dir() {
	rm -rf "$1" && mkdir -p "$1"
	gcc -O2 -static -o "$1/guest-exit" "$NOWAIT_ROOT/harness/guest/exit.c"
	cp "$NOWAIT_ROOT/harness/regress/guest.sh" "$1/guest.sh"
}

# regress_autogroup_nice PID: give the session PID started (setsid) the
# lowest weight against other sessions' autogroups: `nice` alone only ranks
# a process inside its own autogroup, so a nice-19 QEMU would still take
# half the CPUs from a kernel build in another session. NOWAIT_GUEST_NICE
# (default 19) sets another weight, for a measurement that must not be
# starved (0: a fair share beside the other sessions).
regress_autogroup_nice() {
	local p=$1 child
	for _ in $(seq 20); do
		[ "$(ps -o sid= -p "$p" 2>/dev/null | tr -d ' ')" = "$p" ] && break
		# setsid forked (it was a group leader): its child leads the session.
		child=$(pgrep -P "$p" | head -1 || true)
		[ -n "$child" ] && p=$child
		sleep 0.1
	done
	if [ -w "/proc/$p/autogroup" ]; then
		echo "${NOWAIT_GUEST_NICE:-19}" >"/proc/$p/autogroup" 2>/dev/null ||
			say "boot: could not set the autogroup of $p"
	fi
}

# regress_boot DIR KERNEL ROOTIMG JOBIMG BUDGET APPEND DISK...: boot KERNEL in
# QEMU (TCG, 2 vCPUs, 2 GiB) on ROOTIMG and JOBIMG (both snapshots, so that
# both kernels share them), with per-boot sparse virtio disks DISK =
# SERIAL:SIZE[:DRIVE-OPTIONS] in DIR/disks (DRIVE-OPTIONS are QEMU -drive
# options, e.g. throttling.iops-read=50), found in the guest by serial.
# APPEND adds to the kernel command line (regress.suite=..., regress.budget=
# is added from BUDGET, guest seconds). QEMU gets BUDGET + 300 s. The console
# goes to DIR/console.log, QEMU's exit status to DIR/qemu-rc, and the disk
# with serial "results" is read back into DIR/results with debugfs, without
# mounting it.
regress_boot() {
	local dir=$1 kernel=$2 rootimg=$3 jobimg=$4 budget=$5 append=$6 name rc=0 spec
	shift 6
	name=$(basename "$dir")
	rm -rf "$dir" && mkdir -p "$dir/disks"
	# shellcheck disable=SC2054 # QEMU's option lists are comma-separated
	local -a drives=(-drive "file=$rootimg,if=none,id=root,format=raw,snapshot=on"
		-device virtio-blk-pci,drive=root,serial=root
		-drive "file=$jobimg,if=none,id=suites,format=raw,snapshot=on"
		-device virtio-blk-pci,drive=suites,serial=suites)
	for spec in "$@"; do
		local serial=${spec%%:*} rest=${spec#*:} opts=""
		local size=${rest%%:*}
		[ "$rest" != "$size" ] && opts=,${rest#*:}
		truncate -s "$size" "$dir/disks/$serial.img"
		drives+=(-drive "file=$dir/disks/$serial.img,if=none,id=$serial,format=raw,cache=unsafe,aio=threads$opts"
			-device "virtio-blk-pci,drive=$serial,serial=$serial")
	done
	cp "$kernel" "$dir/bzImage"
	local try
	for try in 1 2; do
		local again=""
		[ "$try" = 2 ] && again=" (second try)"
		say "boot: $name: kernel $kernel, budget ${budget}s, console in $dir/console.log$again"
		rc=0
		setsid nice -n "${NOWAIT_GUEST_NICE:-19}" timeout -k 10 $((budget + 300)) qemu-system-x86_64 \
			-machine pc -accel tcg,thread=multi -cpu max -smp 2 -m 2048 \
			-display none -monitor none -no-reboot -serial "file:$dir/console.log" \
			-device isa-debug-exit,iobase=0xf4,iosize=0x04 \
			-kernel "$dir/bzImage" \
			-append "console=ttyS0 loglevel=4 panic=-1 no_timer_check acpi=noirq $NOWAIT_GUEST_ARGS root=/dev/vda rw rootfstype=ext4 init=/usr/sbin/regress-init regress.budget=$budget $append" \
			"${drives[@]}" </dev/null &
		local qemu=$!
		regress_autogroup_nice "$qemu"
		# A starved guest has been seen to hang before init: the boot is
		# ended when init has not started within the budget's first
		# quarter, and tried once more. (acpi=noirq above: the PIIX
		# machine's _PRT is an AML loop that the guest ran for every PCI
		# device; a KASAN kernel with two more guests on the host hit
		# ACPI's 30-second loop timeout on each, and never reached init.
		# The MP table and the PIIX router route PCI interrupts instead.)
		local waited=0
		while kill -0 "$qemu" 2>/dev/null && ! grep -aq '^regress: init at' "$dir/console.log" 2>/dev/null; do
			sleep 10
			waited=$((waited + 10))
			if [ "$waited" -ge $((budget / 4)) ]; then
				say "boot: $name: no init after ${waited}s; ending this boot"
				kill "$qemu" 2>/dev/null || true
				break
			fi
		done
		wait "$qemu" || rc=$?
		grep -aq '^regress: init at' "$dir/console.log" 2>/dev/null && break
		mv "$dir/console.log" "$dir/console.log.try$try"
	done
	case $rc in
	124 | 137) say "boot: $name: QEMU timed out" ;;
	0) say "boot: $name: the guest ended without a status" ;;
	*) say "boot: $name: guest status $(((rc - 1) / 2))" ;;
	esac
	echo "$rc" >"$dir/qemu-rc"
	mkdir -p "$dir/results"
	if [ -e "$dir/disks/results.img" ]; then
		debugfs -R "rdump / $dir/results" "$dir/disks/results.img" >/dev/null 2>&1 ||
			say "boot: $name: could not read the results disk"
	fi
	rm -f "$dir/disks/"*.img
}
