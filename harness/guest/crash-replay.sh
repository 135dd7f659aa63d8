# The crash-replay job (harness/crash-replay.sh), sourced by the guest's
# init as /etc/crash-replay.sh; busybox sh. For each filesystem of
# NOWAIT_REPLAY_FS: record nowait-replay-load on it through dm-log-writes
# (its own disk; the log on the disk whose serial is logw), then replay
# the log with fstests' replay-log onto a sparse image in /tmp, state by
# state: every FLUSH and FUA entry, every mark of the workload, and the
# entry halfway between each two of those (a crash that kept a prefix of
# the writes since the last flush). At each state, on a copy of the image:
# fsck, mount, nowait-replay-check verify (what fsync promised by then).
# Filesystems with a journal are mounted before fsck (their fsck reports a
# journal not yet replayed); the others are checked as the crash left them.
# NOWAIT_REPLAY_STATES caps the states per filesystem (evenly spread).
# Then the checker's self-test on the last state: a promised file changed
# on purpose must be reported, and so must 64 KiB of metadata zeroed.
# One JSON object per filesystem between "nowait-json: begin replay-FS"
# and "nowait-json: end"; progress lines "nowait-replay: ...".

replay_seed=${NOWAIT_REPLAY_SEED:-1}
replay_ops=${NOWAIT_REPLAY_OPS:-10}
replay_threads=${NOWAIT_REPLAY_THREADS:-4}
replay_max=${NOWAIT_REPLAY_STATES:-100000}
dmname=nwlog

disk_with_serial() {
	for blk in /sys/block/vd*; do
		[ "$(cat "$blk/serial" 2>/dev/null)" = "$1" ] && echo "/dev/${blk##*/}" && return 0
	done
	return 1
}

# Size of the recorded filesystem, in MiB: small, so that images and the
# log stay small; xfs and btrfs at their mkfs minimums.
replay_mib() {
	case $1 in xfs) echo 300 ;; btrfs) echo 256 ;; *) echo 128 ;; esac
}

# No discard at mkfs: replay-log would zero a file image's whole range.
# ext4 and ext2 with 4 KiB blocks: below 512 MiB mke2fs picks 1 KiB, and
# the series takes flagged writes only where a block is a page (ext4
# delalloc, ext2), refusing them with EOPNOTSUPP elsewhere as stock does.
replay_mkfs() {
	case $1 in
	ext4) mkfs.ext4 -q -F -b 4096 -E nodiscard "$2" ;;
	ext2) mkfs.ext2 -q -F -b 4096 -E nodiscard "$2" ;;
	xfs) mkfs.xfs -q -f -K "$2" ;;
	btrfs) mkfs.btrfs -q -f -K "$2" ;;
	vfat) mkfs.vfat "$2" >/dev/null ;;
	exfat) mkfs.exfat "$2" >/dev/null ;;
	esac
}

replay_journaled() {
	case $1 in ext4 | xfs | btrfs) return 0 ;; *) return 1 ;; esac
}

# replay_fsck FS DEV OUT: the read-only check; its exit status.
replay_fsck() {
	case $1 in
	ext4 | ext2) e2fsck -fn "$2" ;;
	xfs) xfs_repair -n "$2" ;;
	btrfs) btrfs check "$2" ;;
	vfat) fsck.vfat -n "$2" ;;
	exfat) fsck.exfat -n "$2" ;;
	esac >"$3" 2>&1
}

# replay_findings FS OUT RC: how many problems fsck's output names: every
# line that is not the tool's banner, pass list, summary or the indented
# detail of a line before. Not counted: vfat's and exfat's dirty flag,
# which the kernel sets at mount and a crash always leaves (fsck.vfat exits
# 1 for it alone), fsck.vfat's complaint that the guest has no iconv, and
# fsck.exfat's summary lines.
# xfs_repair and btrfs check print their progress whatever they find: one
# for failing.
replay_findings() {
	case $1 in
	ext4 | ext2) grep -vE '^e2fsck [0-9]|^Pass [1-5]|: [0-9]+/[0-9]+ files|^$|^Warning: skipping journal recovery|^Running additional passes' "$2" | grep -c . ;;
	vfat) grep -vE '^fsck\.fat [0-9]|[0-9]+ files, [0-9]+/[0-9]+ clusters|^Leaving filesystem unchanged|^$|^ |^Dirty bit is set|conversion from|internal CP850 conversion' "$2" | grep -c . ;;
	# fsck.exfat names each problem on an "ERROR:" line, then sums up
	exfat) grep -c '^ERROR:' "$2" ;;
	*) [ "$3" = 0 ] && echo 0 || echo 1 ;;
	esac
}

# replay_index LOG: every entry of the log as "ENTRY FLAGS" (flags in hex).
replay_index() {
	# No such mark: replay-log walks the whole log and prints each entry.
	replay-log -vv --log "$1" --find --end-mark nowait-no-such-mark 2>/dev/null |
		sed -n 's/^seek entry \([0-9]*\)@[0-9]*: [0-9]*, size [0-9]*, flags \(0x[0-9a-f]*\).*/\1 \2/p'
}

# replay_states INDEX MKFS_ENTRY MAX: the states to check, one a line,
# "ENTRY KIND MARKS" (MARKS: the workload's marks the state holds).
# Flags: 1 FLUSH, 2 FUA, 8 MARK.
replay_states() {
	awk -v from="$2" -v max="$3" '
	function add(e, k) { if (!(e in kind)) { kind[e] = k; list[n++] = e } }
	function hex(s,  v, i) {
		v = 0
		for (i = 3; i <= length(s); i++) v = v * 16 + index("0123456789abcdef", substr(s, i, 1)) - 1
		return v
	}
	{ e = $1 + 0; f = hex($2) }
	e < from { next }
	{
		# The first mark is mkfs; the workload marks count from 1 after it.
		if (and(f, 8)) { marks_at[e] = m++; add(e, "mark") }
		else if (and(f, 2)) add(e, "fua")
		else if (and(f, 1)) add(e, "flush")
		last = e
	}
	END {
		add(last, "end")
		# sort the entries, then the halfway states between neighbours
		for (i = 0; i < n; i++) s[i] = list[i]
		for (i = 1; i < n; i++) { v = s[i]; for (j = i - 1; j >= 0 && s[j] > v; j--) s[j + 1] = s[j]; s[j + 1] = v }
		c = n
		for (i = 1; i < c; i++) if (s[i] - s[i - 1] >= 2) { mid = int((s[i] + s[i - 1]) / 2); add(mid, "between") }
		for (i = 0; i < n; i++) s[i] = list[i]
		for (i = 1; i < n; i++) { v = s[i]; for (j = i - 1; j >= 0 && s[j] > v; j--) s[j + 1] = s[j]; s[j + 1] = v }
		step = n > max ? n / max : 1
		for (x = 0; x < n; x += step) {
			e = s[int(x)]
			# marks held at entry e: the last mark at or before it
			held = 0
			for (k in marks_at) if (k + 0 <= e && marks_at[k] > held) held = marks_at[k]
			print e, kind[e], held
		}
	}' "$1"
}

replay_fs() {
	fs=$1 base=/tmp/replay-$1
	dev=$(disk_with_serial "$fs") || { echo "nowait-replay: $fs: no disk"; return 1; }
	mib=$(replay_mib "$fs")
	journal="$base.journal"
	echo "nowait-replay: $fs: recording on $dev through dm-log-writes, log on $logdev"
	# A failed filesystem before this one may have left its device.
	umount /mnt/replay-rec 2>/dev/null
	dmsetup remove --noudevsync "$dmname" 2>/dev/null
	# No udev in the guest: dmsetup makes the /dev/mapper node itself.
	dmsetup create --noudevsync "$dmname" --table "0 $((mib * 2048)) log-writes $dev $logdev" &&
		dmsetup mknodes "$dmname" || return 1
	replay_mkfs "$fs" /dev/mapper/$dmname || return 1
	dmsetup message "$dmname" 0 mark mkfs || return 1
	mkdir -p /mnt/replay-rec /mnt/replay-chk
	mount -t "$fs" /dev/mapper/$dmname /mnt/replay-rec || return 1
	nowait-replay-load --dm "$dmname" --journal "$journal" --seed "$replay_seed" \
		--threads "$replay_threads" --ops "$replay_ops" --json "$base.load.json" \
		/mnt/replay-rec/w || { umount /mnt/replay-rec; dmsetup remove --noudevsync "$dmname"; return 1; }
	umount /mnt/replay-rec && dmsetup remove --noudevsync "$dmname" || return 1
	# What each fsync promised, on the console too: a broken state can be
	# read against it after the guest is gone.
	sed "s/^/nowait-replay: $fs: journal: /" "$journal"

	replay_index "$logdev" >"$base.index"
	entries=$(wc -l <"$base.index")
	mkfs_entry=$(replay-log --log "$logdev" --find --end-mark mkfs | cut -d@ -f1)
	# The journal's order of marks is the log's: the last one must sit
	# where replay-log finds it by name.
	last=$(tail -n 1 "$journal" | cut -d' ' -f2)
	want=$(replay-log --log "$logdev" --find --end-mark "nw$last" | cut -d@ -f1)
	replay_states "$base.index" "$mkfs_entry" "$replay_max" >"$base.states"
	got=$(awk -v w="$want" '$1 == w { print $3 }' "$base.states")
	if [ -n "$got" ] && [ "$got" != "$last" ]; then
		echo "nowait-replay: $fs: mark nw$last is entry $want, but the index counts $got marks there"
		return 1
	fi
	nstates=$(wc -l <"$base.states")
	echo "nowait-replay: $fs: $entries log entries, mkfs mark at $mkfs_entry, last mark nw$last at $want; checking $nstates states:" \
		"$(awk '{ k[$2]++ } END { for (x in k) printf "%s %d ", x, k[x] }' "$base.states")"

	img="$base.img" chk=/tmp/replay-chk.img
	rm -f "$img" && truncate -s "$((mib))M" "$img"
	prev=-1 i=0
	printf '{"fs": "%s", "entries": %d, "load": %s, "states": [' "$fs" "$entries" "$(cat "$base.load.json")" >"$base.json"
	sep=
	while read -r entry kind held <&3; do
		i=$((i + 1))
		replay-log --log "$logdev" --replay "$img" --start-entry $((prev + 1)) \
			--limit $((entry - prev)) >/dev/null || { echo "nowait-replay: $fs: replay to $entry failed"; return 1; }
		prev=$entry last_held=$held
		nowait-replay-check copy "$img" "$chk" || return 1
		loop=$(losetup -f) && losetup "$loop" "$chk" || return 1
		mounted=1 fsck_rc=0 checked=0 broken=0
		if replay_journaled "$fs"; then
			mount -t "$fs" "$loop" /mnt/replay-chk >/tmp/replay-mount.out 2>&1 || mounted=0
			[ "$mounted" = 1 ] && nowait-replay-check verify "$journal" "$held" /mnt/replay-chk/w >/tmp/replay-verify.out
			[ "$mounted" = 1 ] && umount /mnt/replay-chk
			replay_fsck "$fs" "$loop" /tmp/replay-fsck.out || fsck_rc=$?
		else
			replay_fsck "$fs" "$loop" /tmp/replay-fsck.out || fsck_rc=$?
			mount -t "$fs" "$loop" /mnt/replay-chk >/tmp/replay-mount.out 2>&1 || mounted=0
			[ "$mounted" = 1 ] && nowait-replay-check verify "$journal" "$held" /mnt/replay-chk/w >/tmp/replay-verify.out
			[ "$mounted" = 1 ] && umount /mnt/replay-chk
		fi
		losetup -d "$loop"
		findings=$(replay_findings "$fs" /tmp/replay-fsck.out "$fsck_rc")
		if [ "$mounted" = 1 ]; then
			counts=$(sed -n 's/^nowait-replay-check: \([0-9]*\) promises checked, \([0-9]*\) broken$/\1 \2/p' /tmp/replay-verify.out)
			checked=${counts% *} broken=${counts#* }
			# No summary line: the checker itself failed; a broken state.
			[ -n "$counts" ] || checked=0 broken=-1
		fi
		line="nowait-replay: $fs: state $i/$nstates, entry $entry ($kind, $held marks): fsck $fsck_rc ($findings findings), mounted $mounted, promises $checked checked, $broken broken"
		echo "$line"
		if [ "$fsck_rc" != 0 ] || [ "$mounted" != 1 ] || [ "$broken" != 0 ]; then
			sed 's/^/nowait-replay:   fsck: /' /tmp/replay-fsck.out | head -n 8
			[ "$mounted" = 1 ] || sed 's/^/nowait-replay:   mount: /' /tmp/replay-mount.out | head -n 3
			grep -v 'promises checked' /tmp/replay-verify.out 2>/dev/null | sed 's/^/nowait-replay:   /' | head -n 5
		fi
		printf '%s{"entry": %d, "kind": "%s", "marks": %d, "fsck_rc": %d, "findings": %d, "mounted": %d, "checked": %d, "broken": %d}' \
			"$sep" "$entry" "$kind" "$held" "$fsck_rc" "$findings" "$mounted" "$checked" "$broken" >>"$base.json"
		sep=", "
		rm -f /tmp/replay-verify.out
	done 3<"$base.states"
	replay_selftest "$fs" "$img" "$journal" "$last_held"
	rm -f "$img" "$chk"
}

# replay_selftest FS IMG JOURNAL MARKS: the checks must see a broken state.
# A promised file grown by a byte on a copy of the last state: verify must
# say so. The 67 KiB after the first sector zeroed (ext2/4: the
# superblock; xfs: the AG headers; btrfs: the superblock; vfat: the start
# of the first FAT, where the files' chains are; exfat: the boot region,
# its checksum): fsck must say so.
replay_selftest() {
	fs=$1 img=$2 journal=$3 held=$4 data=0 meta=0 base=/tmp/replay-$1
	chk=/tmp/replay-chk.img
	victim=$(nowait-replay-check live "$journal" "$held")
	nowait-replay-check copy "$img" "$chk" && loop=$(losetup -f) && losetup "$loop" "$chk" || return 1
	if mount -t "$fs" "$loop" /mnt/replay-chk; then
		echo x >>"/mnt/replay-chk/w/$victim"
		nowait-replay-check verify "$journal" "$held" /mnt/replay-chk/w >/tmp/replay-verify.out || data=1
		umount /mnt/replay-chk
	fi
	losetup -d "$loop"
	nowait-replay-check copy "$img" "$chk" &&
		dd if=/dev/zero of="$chk" bs=512 seek=1 count=135 conv=notrunc 2>/dev/null &&
		loop=$(losetup -f) && losetup "$loop" "$chk" || return 1
	replay_fsck "$fs" "$loop" /tmp/replay-fsck.out || meta=1
	losetup -d "$loop"
	echo "nowait-replay: $fs: self-test: a promised file ($victim) changed on purpose $( [ $data = 1 ] && echo flagged || echo 'NOT flagged'), metadata zeroed on purpose $( [ $meta = 1 ] && echo flagged || echo 'NOT flagged')"
	printf '], "selftest": {"data_flagged": %d, "fsck_flagged": %d}}\n' "$data" "$meta" >>"$base.json"
	[ "$data" = 1 ] && [ "$meta" = 1 ]
}

replay_all() {
	logdev=$(disk_with_serial logw) || { echo "nowait-replay: no log disk (serial logw)"; return 1; }
	echo "nowait-replay: begin, seed $replay_seed, $replay_threads threads, $replay_ops operations each"
	rc=0
	for fs in $(echo "${NOWAIT_REPLAY_FS:-ext4+xfs+btrfs+ext2+vfat+exfat}" | tr + ' '); do
		if replay_fs "$fs"; then
			echo "nowait-json: begin replay-$fs"
			cat "/tmp/replay-$fs.json"
			echo "nowait-json: end"
		else
			echo "nowait-replay: $fs: failed"
			rc=1
		fi
	done
	echo "nowait-replay: end"
	return $rc
}
