#!/bin/bash
# /init of the regression guest (Debian 12 root on /dev/vda, read-only
# snapshot): run the suite named on the kernel command line, write results to
# the disk with serial "results", print a line per test to the console, and
# power off with the job's status through guest-exit.
#
#   regress.suite=fstests|ltp|serve|shell  regress.budget=SECONDS  regress.fs="ext4 xfs ..."
#
# Each console line "regress: SUITE FS TEST STATUS SECONDS" is one result;
# STATUS is pass, fail, notrun or timeout. The host reads the results disk
# back for the failures' details. The serve suite (harness/serve-bench-guest.sh)
# runs serve/bench.sh on each of tmpfs, ext4 and overlay and leaves its runs
# on the results disk, for the host to make the tables.
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export HOME=/root LANG=C.UTF-8
R=/opt/suites/regress

mountpoint -q /proc || mount -t proc proc /proc
mountpoint -q /sys || mount -t sysfs sys /sys
mountpoint -q /dev || mount -t devtmpfs dev /dev
mkdir -p /dev/pts /dev/shm
mount -t devpts devpts /dev/pts
mount -t tmpfs shm /dev/shm
mount -t tmpfs tmp /tmp
mount -t tmpfs run /run
mount -o remount,rw / 2>/dev/null
mkdir -p /sys/fs/cgroup && mount -t cgroup2 cgroup2 /sys/fs/cgroup 2>/dev/null
hostname regress
ln -sf /proc/self/fd /dev/fd 2>/dev/null
ln -sf /proc/mounts /etc/mtab 2>/dev/null
echo "regress: init at $(cut -d' ' -f1 /proc/uptime) s, kernel $(uname -r)"

suite=shell budget=3600 fslist="" label=kernel
for arg in $(cat /proc/cmdline); do
	case $arg in
	regress.suite=*) suite=${arg#*=} ;;
	regress.budget=*) budget=${arg#*=} ;;
	regress.fs=*) fslist=${arg#*=}; fslist=${fslist//,/ } ;;
	regress.label=*) label=${arg#*=} ;;
	esac
done
echo "regress: $label kernel, suite $suite, budget ${budget}s"

dev_of() { # the /dev node of the virtio disk with serial $1
	local b
	for b in /sys/block/vd*; do
		[ "$(cat "$b/serial" 2>/dev/null)" = "$1" ] && { echo "/dev/${b##*/}"; return 0; }
	done
	return 1
}
now() { cut -d. -f1 /proc/uptime; }
left() { echo $((budget - $(now))); }
result() { echo "regress: $*"; echo "$*" >>/results/results.txt; sync; }

RES=$(dev_of results) || { echo "regress: no results disk"; $R/guest-exit 3; }
mkfs.ext4 -q -F "$RES" && mkdir -p /results && mount "$RES" /results || $R/guest-exit 3
{ uname -a; cat /proc/cmdline; } >/results/kernel.txt

mkfs_dev() { # mkfs_dev FS DEV
	case $1 in
	ext4) mkfs.ext4 -q -F "$2" ;;
	xfs) mkfs.xfs -q -f "$2" ;;
	btrfs) mkfs.btrfs -q -f "$2" >/dev/null ;;
	vfat) mkfs.vfat "$2" >/dev/null ;;
	exfat) mkfs.exfat "$2" >/dev/null ;;
	esac
}

# Unmount what a run left under /mnt/test and /mnt/scratch, deepest first
# (overlay's mount sits on its base): a mounted test disk makes the next
# filesystem's mkfs fail.
umount_all() {
	local m
	for m in $(awk '$2 ~ "^/mnt/(test|scratch)" {print $2}' /proc/mounts | sort -r); do
		umount "$m" 2>/dev/null || umount -l "$m"
	done
}

run_fstests() {
	local fs base tests t0 rc
	cd /opt/suites/xfstests || return 3
	# No udev and no System V semaphores in the guest: libdevmapper makes
	# the /dev/mapper nodes of the dm-flakey tests itself (generic/790), or
	# their mounts find none; and every dmsetup call warns "Kernel not
	# configured for semaphores" on stderr, into the test's output, which a
	# wrapper on PATH (where fstests finds dmsetup) leaves out. The wrapper
	# also turns each node into the symlink to ../dm-N that udev would make:
	# fstests finds a device's sysfs directory (xfs's error settings in
	# /sys/fs/xfs/dm-N) by the name the symlink resolves to.
	export DM_DISABLE_UDEV=1
	mkdir -p /run/regress-bin
	cat >/run/regress-bin/dmsetup <<-EOF
		#!/bin/sh
		err=\$(mktemp)
		$(command -v dmsetup) "\$@" 2>"\$err"
		rc=\$?
		grep -v 'Kernel not configured for semaphores' "\$err" >&2
		rm -f "\$err"
		for node in /dev/mapper/*; do
			[ -b "\$node" ] && [ ! -L "\$node" ] || continue
			dm=\$(basename "\$(readlink -f /sys/dev/block/\$(stat -c %Hr:%Lr "\$node"))")
			[ -b "/dev/\$dm" ] && ln -sf "../\$dm" "\$node"
		done
		exit \$rc
	EOF
	chmod +x /run/regress-bin/dmsetup
	export PATH=/run/regress-bin:$PATH
	TESTDEV=$(dev_of test) SCRATCHDEV=$(dev_of scratch) || { echo "regress: no test/scratch disks"; return 3; }
	mkdir -p /mnt/test /mnt/scratch
	for tier in 1 2 3; do
	for fs in $fslist; do
		tests=$(sed 's/#.*//' "$R/fstests.$tier.$fs" 2>/dev/null | tr -s ' \n' ' ')
		[ -n "${tests// /}" ] || continue
		if [ "$(left)" -lt 120 ]; then
			echo "regress: fstests $fs tier $tier: budget spent, not started"
			continue
		fi
		base=$fs opts=()
		unset FSTYP TEST_DEV SCRATCH_DEV OVL_BASE_FSTYP MKFS_OPTIONS MOUNT_OPTIONS
		export TEST_DIR=/mnt/test SCRATCH_MNT=/mnt/scratch
		export RESULT_BASE=/results/fstests/$fs/t$tier SOAK_DURATION=${SOAK_DURATION:-30}
		case $fs in
		tmpfs) export FSTYP=tmpfs TEST_DEV=tmpfs_test SCRATCH_DEV=tmpfs_scratch ;;
		overlay) base=xfs; opts=(-overlay) ;;
		esac
		if [ "$fs" != tmpfs ]; then
			export FSTYP=$base TEST_DEV=$TESTDEV SCRATCH_DEV=$SCRATCHDEV
			mkfs_dev "$base" "$TEST_DEV" || { echo "regress: fstests $fs: mkfs failed"; continue; }
			# check -overlay mounts the scratch base before any test:
			# it must hold a filesystem already (else "upper fs needs
			# to support d_type" and nothing runs).
			if [ "$fs" = overlay ]; then
				mkfs_dev "$base" "$SCRATCH_DEV" || { echo "regress: fstests $fs: mkfs of scratch failed"; continue; }
			fi
		fi
		umount_all
		mkdir -p "$RESULT_BASE"
		echo "regress: fstests $fs tier $tier: $(echo $tests | wc -w) tests, $(left) s of budget left"
		t0=$(now)
		timeout -k 30 "$(left)" ./check "${opts[@]}" -R xunit $tests </dev/null 2>&1 |
			tee "$RESULT_BASE/console.txt"
		rc=${PIPESTATUS[0]}
		[ "$rc" = 124 ] || [ "$rc" = 137 ] && echo "regress: fstests $fs: timed out (budget) after $(($(now) - t0)) s"
		echo "regress: fstests $fs: done in $(($(now) - t0)) s (check exit $rc)"
		echo "fstests $fs rc=$rc seconds=$(($(now) - t0))" >>/results/runs.txt
		umount_all
		sync
	done
	done
}

# LTP: each line of $R/ltp.runtest is "NAME COMMAND..." as in LTP's runtest
# files; ABI tags the line (x86_64 or i386, from /opt/suites/ltp and /opt/suites/ltp32).
run_ltp() {
	local abi root name cmd rc st t0 lim LTPTMP
	LTPTMP=$(dev_of ltp) || { echo "regress: no ltp disk"; return 3; }
	mkfs.ext4 -q -F "$LTPTMP" && mkdir -p /ltp-tmp && mount "$LTPTMP" /ltp-tmp || return 3
	mkdir -p /results/ltp
	# The LTP library's defaults under TCG: per-test timeouts scaled up, capped runtimes down.
	export LTP_TIMEOUT_MUL=${LTP_TIMEOUT_MUL:-4} LTP_RUNTIME_MUL=${LTP_RUNTIME_MUL:-0.25}
	export LTP_COLORIZE_OUTPUT=0
	for abi in x86_64 i386; do
		root=/opt/suites/ltp; [ $abi = i386 ] && root=/opt/suites/ltp32
		[ -d $root/testcases/bin ] || { echo "regress: ltp $abi: not built, skipped"; continue; }
		while read -r name cmd; do
			case $name in '' | '#'*) continue ;; esac
			# NAME_64 is the same program as NAME where off_t is 64-bit already.
			[ $abi = x86_64 ] && [ "${name%_64}" != "$name" ] && continue
			if [ "$(left)" -lt 60 ]; then
				result "ltp-$abi all $name notrun 0 budget"
				continue
			fi
			rm -rf /ltp-tmp/* 2>/dev/null
			lim=$(left); [ "$lim" -gt 900 ] && lim=900
			t0=$(now)
			rc=0
			(
				export LTPROOT=$root TMPDIR=/ltp-tmp PATH=$root/testcases/bin:$PATH
				cd /ltp-tmp && exec timeout -k 10 "$lim" bash -c "$cmd"
			) </dev/null >"/results/ltp/$abi-$name.log" 2>&1 || rc=$?
			case $rc in
			0) st=pass ;;
			32) st=notrun ;; # TCONF only
			124 | 137) st=timeout ;;
			*) st=fail ;;
			esac
			result "ltp-$abi all $name $st $(($(now) - t0)) rc=$rc"
			[ $st = fail ] || [ $st = timeout ] && tail -n 25 "/results/ltp/$abi-$name.log" | sed "s/^/regress-log: $name: /"
		done <"$R/ltp.runtest"
	done
	umount /ltp-tmp
}

# nowait-serve's benchmark (harness/serve-bench-guest.sh): serve/bench.sh on
# each filesystem of regress.fs (tmpfs, ext4, overlay), with the options in
# $R/serve.args (one a line); a filesystem whose runs would not fit in the
# budget left (bench.sh --estimate) is skipped.
# The data disk (serial "data") is the slow one: the host throttles its
# reads (QEMU's throttling.iops-read), so the guest's cgroup limits only
# memory. ext4 is made on it; overlay's lower layer is that ext4's file set,
# its upper and work directories beside it; tmpfs is a mount of its own.
# Each filesystem's runs go to /results/serve/FS/; one not measured says why
# in its file "skipped".
S=/opt/suites/serve
serve_ext4() { # the data disk's ext4 on /mnt/serve-ext4, made once
	mountpoint -q /mnt/serve-ext4 && return 0
	local dev
	dev=$(dev_of data) || { echo "no data disk"; return 1; }
	mkdir -p /mnt/serve-ext4
	# Inode tables and journal written now, not by ext4lazyinit during a run.
	mkfs.ext4 -q -F -E lazy_itable_init=0,lazy_journal_init=0 "$dev" && mount "$dev" /mnt/serve-ext4 ||
		{ echo "mkfs or mount of ext4 on $dev failed"; return 1; }
}
run_serve() {
	local fs out data label why args=() probe=() need rc st t0
	[ -r "$R/serve.args" ] && mapfile -t args <"$R/serve.args"
	need=$("$S/bench.sh" --estimate "${args[@]}")
	# memory.max counts the page cache: cgroup v2 (mounted above).
	grep -qw memory /sys/fs/cgroup/cgroup.controllers 2>/dev/null ||
		{ echo "regress: serve: no cgroup v2 memory controller"; return 3; }
	# Server and wrk meet on 127.0.0.1; nothing else brings lo up here.
	busybox ip link set lo up || { echo "regress: serve: cannot bring lo up"; return 3; }
	for fs in $fslist; do
		out=/results/serve/$fs why="" probe=()
		mkdir -p "$out"
		if [ "$(left)" -lt "$need" ]; then
			why="budget: $(left) s left, a filesystem needs about $need s"
		else
			case $fs in
			tmpfs)
				mkdir -p /mnt/serve-tmpfs
				mount -t tmpfs -o size=1g serve /mnt/serve-tmpfs || why="mount of tmpfs failed"
				data=/mnt/serve-tmpfs/data
				label="tmpfs: no disk, every file stays in memory" ;;
			ext4)
				why=$(serve_ext4) || true
				data=/mnt/serve-ext4/data
				label="ext4 on the virtio disk (reads throttled by QEMU)" ;;
			overlay)
				why=$(serve_ext4) || true
				data=/mnt/serve-ovl
				# cachestat of an overlay file sees no pages: the log asks the lower file.
				probe=(--probe-root /mnt/serve-ext4/data)
				label="overlayfs, lower layer the file set on ext4 on the virtio disk (reads throttled by QEMU)"
				# The file set goes in the lower layer first (made by
				# the ext4 run already, unless ext4 is not in the list).
				[ -n "$why" ] || "$S/bench.sh" --data /mnt/serve-ext4/data --data-only "${args[@]}" ||
					why="making the file set failed"
				mkdir -p /mnt/serve-ext4/ovl/upper /mnt/serve-ext4/ovl/work /mnt/serve-ovl
				[ -n "$why" ] || mount -t overlay overlay \
					-o lowerdir=/mnt/serve-ext4/data,upperdir=/mnt/serve-ext4/ovl/upper,workdir=/mnt/serve-ext4/ovl/work \
					/mnt/serve-ovl || why="mount of overlay failed" ;;
			*) why="not a filesystem of this benchmark (tmpfs, ext4, overlay)" ;;
			esac
		fi
		if [ -n "$why" ]; then
			echo "$why" >"$out/skipped"
			result "serve $fs all skipped 0 $why"
			continue
		fi
		echo "regress: serve $fs: $(left) s of budget left"
		t0=$(now)
		"$S/bench.sh" --data "$data" --out "$out" --bin "$S/nowait-serve" --label "$label" \
			--no-io-limit --no-report "${probe[@]}" "${args[@]}" </dev/null 2>&1 | tee "$out/console.txt"
		rc=${PIPESTATUS[0]}
		case $rc in 0) st=pass ;; *) st=fail ;; esac
		result "serve $fs all $st $(($(now) - t0)) rc=$rc"
		case $fs in
		overlay) umount /mnt/serve-ovl ;;
		tmpfs) umount /mnt/serve-tmpfs ;;
		esac
	done
	mountpoint -q /mnt/serve-ext4 && umount /mnt/serve-ext4
	return 0
}

status=0
case $suite in
fstests) run_fstests || status=$? ;;
ltp) run_ltp || status=$? ;;
serve) run_serve || status=$? ;;
shell) setsid -c /bin/bash -l </dev/ttyS0 >/dev/ttyS0 2>&1 ;;
*) echo "regress: unknown suite $suite"; status=2 ;;
esac
dmesg >/results/dmesg.txt
echo "regress: $suite done at $(now) s, status $status"
sync
umount /results
$R/guest-exit "$status"
