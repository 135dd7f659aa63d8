#!/usr/bin/env bash
# Boot a test kernel in QEMU and run one guest job; the console goes to LOG.
#
#   harness/boot.sh KERNEL INITRAMFS JOB LOG [TIMEOUT_S]
#
# JOB is check, demo, blockstat, blockstat-write, blockstat-netfs, blockstat-hostile,
# bench, cost, uring-qd,
# fuzz, faults, crash-write, crash-check or shell (see guest/init). Each filesystem the
# guest makes gets its own sparse virtio disk, and the guest's two 9p mounts share one
# host directory, $NOWAIT_OUT/9p-export (guest/netfs.sh); NOWAIT_READ_IOPS, when set, throttles
# reads from every disk to that many per second, a slow disk that makes
# every miss and every metadata read expensive; NOWAIT_WRITE_BPS limits
# writes to that many bytes per second, so that writeback falls behind and
# dirty pages stay at the limit. NOWAIT_APPEND adds to the
# kernel command line (e.g. nowait.fuzz_calls=N for the fuzz job).
# NOWAIT_ICOUNT=1 runs the guest under -icount shift=0,align=off,sleep=off:
# one vCPU thread (icount excludes multi-threaded TCG), and a guest clock
# that advances exactly one ns per executed guest instruction and jumps over
# idle time, so clock deltas in the guest count instructions (the cost job).
# NOWAIT_SMP sets the number of vCPUs (default 2). NOWAIT_EXTRA_DISKS adds raw
# disks, "SERIAL:SIZE ..." (the crash-replay job's log: logw:2G). The exit status is the
# guest's, or 124 when the boot timed out, or 125 when the guest ended without
# reporting one. A kernel splat in the console fails the boot even when the
# job passed.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

kernel=${1:?usage: $0 KERNEL INITRAMFS JOB LOG [TIMEOUT_S]}
initramfs=${2:?} job=${3:?} log=${4:?} limit=${5:-900}
disks=$NOWAIT_OUT/disks
mkdir -p "$disks"

drives=()
throttle=${NOWAIT_READ_IOPS:+,throttling.iops-read=$NOWAIT_READ_IOPS}${NOWAIT_WRITE_BPS:+,throttling.bps-write=$NOWAIT_WRITE_BPS}
for fs in ext4 xfs btrfs vfat exfat ext2 swap ocfs2; do
	# NOWAIT_KEEP_DISKS=1: the filesystems of the last boot, for a job
	# that checks what survived it (with nowait.keep=1 for the guest).
	if [ "${NOWAIT_KEEP_DISKS:-0}" != 1 ]; then
		rm -f "$disks/$fs.img"
		truncate -s 1G "$disks/$fs.img"
	fi
	drives+=(-drive "file=$disks/$fs.img,if=none,id=$fs,format=raw,cache=none,aio=threads$throttle"
		-device "virtio-blk-pci,drive=$fs,serial=$fs")
done
for extra in ${NOWAIT_EXTRA_DISKS:-}; do
	name=${extra%%:*}
	rm -f "$disks/$name.img"
	truncate -s "${extra#*:}" "$disks/$name.img"
	drives+=(-drive "file=$disks/$name.img,if=none,id=$name,format=raw,cache=none,aio=threads"
		-device "virtio-blk-pci,drive=$name,serial=$name")
done

# Three virtfs exports of one host directory, for the guest's /mnt/9p
# (cache=loose), /mnt/9p-none (cache=none) and /mnt/9p-slow (cache=loose,
# a slow server: QEMU serves NOWAIT_9P_SLOW_IOPS reads/s, default 5, the
# only way to slow the 9p server down, which is QEMU itself); empty at each
# boot unless NOWAIT_KEEP_DISKS=1. NOWAIT_READ_IOPS throttles the reads of
# the other two as it does the disks', so that every network filesystem's
# server is behind the same slow storage.
export9p=$NOWAIT_OUT/9p-export
[ "${NOWAIT_KEEP_DISKS:-0}" = 1 ] || rm -rf "$export9p"
mkdir -p "$export9p"
for tag in nowait9p nowait9pnone nowait9pslow; do
	throttle9p=${NOWAIT_READ_IOPS:+,throttling.iops-read=$NOWAIT_READ_IOPS}
	[ "$tag" = nowait9pslow ] && throttle9p=,throttling.iops-read=${NOWAIT_9P_SLOW_IOPS:-5}
	drives+=(-fsdev "local,id=$tag,path=$export9p,security_model=none$throttle9p"
		-device "virtio-9p-pci,fsdev=$tag,mount_tag=$tag")
done

# NOWAIT_CEPH=1: the cluster of harness/ceph.sh is up. QEMU then runs in its
# network namespace, where slirp reaches the daemons at 10.0.2.2 as they
# are (its own network is 10.0.3.0/24), and the guest gets the key.
netns=() net=() ceph_append=
if [ "${NOWAIT_CEPH:-0}" = 1 ]; then
	netns=(ip netns exec nowait-ceph)
	net=(-netdev user,id=n0,net=10.0.3.0/24 -device virtio-net-pci,netdev=n0)
	ceph_append="nowait.ceph=$(cat "$NOWAIT_CACHE/ceph/guest/guest.secret")"
fi

accel=tcg,thread=multi icount=()
[ "${NOWAIT_KVM:-0}" = 1 ] && accel=kvm
if [ "${NOWAIT_ICOUNT:-0}" = 1 ]; then
	accel=tcg,thread=single icount=(-icount shift=0,align=off,sleep=off)
fi
mem=${NOWAIT_MEM:-2048} smp=${NOWAIT_SMP:-2}
say "boot: $(basename "$(dirname "$kernel")") kernel, job $job, $accel${icount[*]:+ ${icount[*]}}, $smp vCPU(s), ${mem} MiB, timeout ${limit}s, console in $log"
run_qemu() {
	rc=0
	timeout -k 10 "$limit" "${netns[@]}" qemu-system-x86_64 \
		-machine pc -accel "$accel" "${icount[@]}" -cpu max -smp "$smp" -m "$mem" \
		-display none -monitor none -no-reboot \
		-serial "file:$log" \
		-device isa-debug-exit,iobase=0xf4,iosize=0x04 \
		-kernel "$kernel" -initrd "$initramfs" \
		-append "console=ttyS0 loglevel=5 panic=-1 $NOWAIT_GUEST_ARGS nowait.job=$job $ceph_append ${NOWAIT_APPEND:-}" \
		"${drives[@]}" "${net[@]}" </dev/null || rc=$?
}

run_qemu
# Multi-threaded TCG has been seen to crash a guest while it brings up its
# second CPU (an int3 oops in sched_clock_cpu, before init ran): an
# emulator race, not the code under test. Such a boot is tried once more,
# and says so; a guest that reached init is never retried.
if [ "$rc" != 1 ] && ! grep -aq 'nowait-guest: init at' "$log"; then
	say "boot: the guest died before init (exit $rc); first lines of its console:"
	grep -aE 'Oops|BUG|panic' "$log" | head -3 >&2 || true
	mv "$log" "$log.first-boot"
	say "boot: booting once more"
	run_qemu
fi

case $rc in
124 | 137) say "boot: timed out after ${limit}s"; status=124 ;;
0) say "boot: the guest ended without a status (panic or power-off)"; status=125 ;;
*) status=$(((rc - 1) / 2)) ;;
esac
say "boot: guest $(grep -ao 'init at [0-9.]* s' "$log" | head -1 || echo 'never started'), job status $status"

# What the kernel prints when it is unwell; any one of them fails the run.
if grep -aEn "$NOWAIT_SPLAT" "$log" >"$log.splats"; then
	say "boot: kernel splat in the console:"
	head -20 "$log.splats" >&2
	[ "$status" = 0 ] && status=126
fi
exit "$status"
