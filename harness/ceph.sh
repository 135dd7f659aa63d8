#!/usr/bin/env bash
# A throw-away single-node CephFS for a guest's kernel ceph client, from
# Debian's own packages (harness/deps.sh): one mon, one mgr (ceph -s and
# ceph fs status need it), one memstore OSD, one MDS, and a CephFS "nowait".
#
#   harness/ceph.sh [start]   a fresh cluster; prints the guest's mount line
#   harness/ceph.sh status    ceph -s and ceph fs status nowait
#   harness/ceph.sh stop      stops every daemon it started
#
# Where it listens, and why not on 127.0.0.1: the kernel client checks that
# the address a daemon announces is the one it dialed (messenger_v1.c
# process_banner(), messenger_v2.c process_server_ident()), and it dials the
# OSD and MDS at the addresses in the maps. A cluster on 127.0.0.1 reached by
# the guest as 10.0.2.2 fails with "wrong peer at address", and 127.0.0.1 in
# a map means the guest's own loopback. So every daemon binds and announces
# $addr, which is on the loopback of a network namespace of our own: nothing
# outside it can reach the cluster, and the host's network is not touched.
# The guest's QEMU must run in that namespace, with a slirp network that does
# not contain $addr (slirp rewrites its own 10.0.2.x aliases to 127.0.0.1
# and connects to any other address as it is):
#
#   ip netns exec nowait-ceph qemu-system-x86_64 ... \
#       -netdev user,id=n0,net=10.0.3.0/24 -device virtio-net-pci,netdev=n0
#
# and the guest (CONFIG_VIRTIO_NET=y) sets up eth0 as 10.0.3.15/24 with
# 10.0.3.2 as its default route, then mounts with the line printed at the end.
#
# Everything lives in $NOWAIT_CACHE/ceph and is made anew at each start: the
# OSD keeps its objects in memory (memstore), so there is nothing to keep.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

ns=nowait-ceph
addr=10.0.2.2
dir=$NOWAIT_CACHE/ceph
conf=$dir/ceph.conf

inns() { ip netns exec "$ns" "$@"; }
ceph_() { inns ceph -c "$conf" "$@"; }

# The daemons' pids: those noted when they started (a daemon removes its pid
# file before it has finished exiting), and anything else left in our
# namespace whose name says it is a ceph daemon.
daemon_pids() {
	local p
	{
		cat "$dir"/run/*.pid "$dir/pids" 2>/dev/null || true
		[ ! -e "/run/netns/$ns" ] || ip netns pids "$ns"
	} | sort -un | while read -r p; do
		case $(cat "/proc/$p/comm" 2>/dev/null) in ceph-*) echo "$p" ;; esac
	done
}

# daemon NAME CMD...: start a daemon in the namespace and note its pid.
daemon() {
	local name=$1
	shift
	q inns "$@" -c "$conf"
	# ceph-mgr's parent returns before the child has written its pid file.
	wait_for "$name's pid file" test -s "$dir/run/$name.pid"
	cat "$dir/run/$name.pid" >>"$dir/pids"
}

stop() {
	local pids
	pids=$(daemon_pids)
	if [ -n "$pids" ]; then
		say "ceph: stopping $(echo "$pids" | tr "\n" " ")"
		# All at once: an MDS sent SIGTERM alone while its mon was up hung
		# in its shutdown here for over ten minutes; with the mon going too
		# every daemon is gone in about 8 s.
		# shellcheck disable=SC2086
		kill $pids 2>/dev/null || true
		for _ in $(seq 60); do
			pids=$(daemon_pids)
			[ -z "$pids" ] && break
			sleep 0.5
		done
		if [ -n "$pids" ]; then
			say "ceph: killing $(echo "$pids" | tr "\n" " ")"
			# shellcheck disable=SC2086
			kill -9 $pids 2>/dev/null || true
			sleep 1
		fi
	fi
	if [ -e "/run/netns/$ns" ]; then
		[ -z "$(ip netns pids "$ns")" ] ||
			die "ceph: netns $ns still holds pids $(ip netns pids "$ns" | tr '\n' ' ')(a guest?); stop them first"
		ip netns del "$ns"
	fi
	rm -f "$dir"/run/* "$dir/pids"
	say "ceph: stopped"
}

status() {
	# Without this, ceph waits five minutes for a mon that is not there.
	[ -e "/run/netns/$ns" ] || die "ceph: not running (no netns $ns)"
	ceph_ -s
	ceph_ fs status nowait
}

# wait_for WHAT CMD...: retry CMD for up to two minutes.
wait_for() {
	local what=$1 end=$(($(date +%s) + 120))
	shift
	until "$@" >/dev/null 2>&1; do
		[ "$(date +%s)" -lt "$end" ] || die "ceph: $what did not happen in 120 s (logs: $dir/log)"
		sleep 0.5
	done
}

# q CMD...: run CMD quietly; its chatter is shown only when it fails.
q() {
	local out
	out=$("$@" 2>&1) || { printf '%s\n' "$out" >&2; return 1; }
}

# rw CONF KEYRING: write a file as client.guest through libcephfs, sync it to
# the OSD, read it back and remove it. Debian 12's cephfs-shell cannot do it:
# it passes use_ipython to cmd2 2.4, which no longer takes it.
rw() {
	# /usr/bin/python3: not a pyenv python that PATH may put first
	inns /usr/bin/python3 - "$@" <<-'EOF'
		import sys, cephfs
		data = b"nowait\n" * 1000
		fs = cephfs.LibCephFS(conffile=sys.argv[1], auth_id="guest",
		                      conf={"keyring": sys.argv[2]})
		fs.mount(filesystem_name=b"nowait")
		fd = fs.open(b"/hello.txt", "w", 0o644)
		fs.write(fd, data, 0)
		fs.fsync(fd, 0)
		fs.close(fd)
		fd = fs.open(b"/hello.txt", "r")
		back = fs.read(fd, 0, len(data) + 1)
		fs.close(fd)
		fs.unlink(b"/hello.txt")
		fs.unmount()
		fs.shutdown()
		sys.exit(0 if back == data else "read back %d bytes, not the %d written" % (len(back), len(data)))
	EOF
}

start() {
	local fsid key osd_uuid rss t0
	t0=$(date +%s)
	"$NOWAIT_ROOT/harness/deps.sh"
	stop
	rm -rf "$dir"
	mkdir -p "$dir"/{run,log,keys,mon.a,mgr.x,osd.0,mds.a,guest}
	chmod 700 "$dir"

	ip netns add "$ns"
	inns ip link set lo up
	inns ip addr add "$addr/32" dev lo

	fsid=$(cat /proc/sys/kernel/random/uuid)
	# size 1 pools, no redundancy warning, and a low-disk warning that does
	# not fire on a build machine's disk (30% free by default).
	cat >"$conf" <<-EOF
		[global]
		fsid = $fsid
		mon host = [v2:$addr:3300,v1:$addr:6789]
		public addr = $addr
		cluster addr = $addr
		run dir = $dir/run
		pid file = $dir/run/\$name.pid
		admin socket = $dir/run/\$name.asok
		log file = $dir/log/\$name.log
		keyring = $dir/keys/\$name.keyring
		auth allow insecure global id reclaim = false
		osd pool default size = 1
		osd pool default min size = 1
		osd pool default pg autoscale mode = off
		mon allow pool size one = true
		mon warn on pool no redundancy = false
		mon data avail warn = 2
		mon data avail crit = 1
		osd objectstore = memstore
		memstore device bytes = 1073741824
		mon data = $dir/\$name
		mgr data = $dir/\$name
		osd data = $dir/\$name
		mds data = $dir/\$name
	EOF

	say "ceph: mon.a on $addr (netns $ns), fsid $fsid"
	ceph-authtool --create-keyring "$dir/keys/mon.a.keyring" --gen-key -n mon. --cap mon 'allow *' >/dev/null
	ceph-authtool --create-keyring "$dir/keys/client.admin.keyring" --gen-key -n client.admin \
		--cap mon 'allow *' --cap osd 'allow *' --cap mds 'allow *' --cap mgr 'allow *' >/dev/null
	ceph-authtool "$dir/keys/mon.a.keyring" --import-keyring "$dir/keys/client.admin.keyring" >/dev/null
	monmaptool --create --fsid "$fsid" --addv a "[v2:$addr:3300,v1:$addr:6789]" "$dir/monmap" >/dev/null
	q ceph-mon -c "$conf" --mkfs -i a --monmap "$dir/monmap" --keyring "$dir/keys/mon.a.keyring"
	daemon mon.a ceph-mon -i a
	wait_for "mon quorum" ceph_ --connect-timeout 5 mon stat

	say "ceph: mgr.x"
	ceph_ auth get-or-create mgr.x mon 'allow profile mgr' osd 'allow *' mds 'allow *' \
		-o "$dir/keys/mgr.x.keyring"
	daemon mgr.x ceph-mgr -i x

	say "ceph: osd.0 (memstore, 1 GiB)"
	osd_uuid=$(cat /proc/sys/kernel/random/uuid)
	q ceph_ osd new "$osd_uuid"
	ceph_ auth get-or-create osd.0 mon 'allow profile osd' mgr 'allow profile osd' osd 'allow *' \
		-o "$dir/keys/osd.0.keyring"
	q inns ceph-osd -c "$conf" -i 0 --mkfs --osd-uuid "$osd_uuid"
	daemon osd.0 ceph-osd -i 0

	say "ceph: mds.a, pools, CephFS nowait"
	ceph_ auth get-or-create mds.a mon 'allow profile mds' osd 'allow rwx' mds 'allow' \
		mgr 'allow profile mds' -o "$dir/keys/mds.a.keyring"
	daemon mds.a ceph-mds -i a
	q ceph_ osd pool create nowait_metadata 8
	q ceph_ osd pool create nowait_data 8
	q ceph_ fs new nowait nowait_metadata nowait_data
	# One MDS and no standby is what we want, not a warning.
	ceph_ fs set nowait standby_count_wanted 0

	# The guest's key may use this filesystem and nothing else.
	q ceph_ fs authorize nowait client.guest / rw
	q ceph_ auth get client.guest -o "$dir/guest/ceph.client.guest.keyring"
	key=$(ceph_ auth get-key client.guest)
	printf '%s\n' "$key" >"$dir/guest/guest.secret"
	printf '[global]\nfsid = %s\nmon host = [v2:%s:3300,v1:%s:6789]\n' \
		"$fsid" "$addr" "$addr" >"$dir/guest/ceph.conf"

	wait_for "mds.a up:active" sh -c "ip netns exec $ns ceph -c $conf mds stat | grep -q up:active"
	wait_for "HEALTH_OK" sh -c "ip netns exec $ns ceph -c $conf health | grep -q HEALTH_OK"
	say "ceph: up in $(($(date +%s) - t0)) s (deps check included)"

	# From the host side, without the host kernel's ceph module or FUSE.
	rw "$conf" "$dir/guest/ceph.client.guest.keyring"
	say "ceph: client.guest wrote, synced and read back 7000 bytes through libcephfs"

	for p in $(daemon_pids); do
		rss=$(awk '/^VmRSS/ {print $2}' "/proc/$p/status")
		say "ceph: $(cat "/proc/$p/comm") pid $p rss $((rss / 1024)) MiB"
	done
	say "ceph: guest files in $dir/guest; QEMU must run in netns $ns (see the top of $0)"
	echo "mount -t ceph $addr:6789:/ /mnt/ceph -o name=guest,secret=$key,fs=nowait"
	echo "mount -t ceph guest@$fsid.nowait=/ /mnt/ceph -o mon_addr=$addr:6789,secret=$key"
}

[ "$(id -u)" = 0 ] || die "ceph: run as root (network namespace)"
case ${1:-start} in
start) start ;;
stop) stop ;;
status) status ;;
*) die "usage: $0 [start|status|stop]" ;;
esac
