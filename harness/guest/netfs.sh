# The network filesystems' servers and mounts, sourced by /init (as
# /etc/netfs.sh) once the disks are mounted, before the job runs:
#
#   /mnt/nfs3, /mnt/nfs4    knfsd's export of /mnt/ext4/export-nfs, NFSv3
#   /mnt/nfs4-fsc           (nolock), NFSv4.2, and NFSv4.2 with fscache (fsc)
#                           when the kernel has it, over 127.0.0.1
#   /mnt/cifs, /mnt/cifs-none  ksmbd's share "nowait" of /mnt/ext4/export-smb,
#                           SMB 3.1.1, cache=strict and cache=none
#   /mnt/9p, /mnt/9p-none,  the host's $NOWAIT_OUT/9p-export (boot.sh),
#   /mnt/9p-slow            virtio, cache=loose, cache=none, and cache=loose
#                           through an export QEMU serves at a few reads/s
#   /mnt/fuse               nowait-fused, passthrough of /mnt/ext4/export-fuse
#   /mnt/ceph, /mnt/ceph-b  CephFS "nowait" of harness/ceph.sh on the host, two
#                           clients (noshare), when boot.sh ran with NOWAIT_CEPH=1
#
# Each one starts only when the kernel has what it needs (else it is
# skipped); a failure prints "nowait-guest: SERVICE: REASON" and the rest
# goes on. No server start or
# mount can hang the guest: each runs under timeout. Each service prints the
# seconds it took.
# shellcheck shell=sh

netfs_fail() {
	echo "nowait-guest: $1: $2"
	return 1
}

# A service the kernel (or the QEMU command line) does not provide.
netfs_skip() {
	echo "nowait-guest: $1: $2"
	return 2
}

# netfs_has FS: the kernel knows filesystem FS.
netfs_has() {
	grep -q "[[:space:]]$1\$" /proc/filesystems
}

# netfs_run SERVICE FUNCTION: run FUNCTION, print its time and outcome
# (FUNCTION returns 0: up, 2: skipped, else failed).
netfs_run() {
	netfs_t0=$(cut -d' ' -f1 /proc/uptime)
	"$2"
	case $? in
	0) netfs_st=up ;;
	2) netfs_st=skipped ;;
	*) netfs_st=failed ;;
	esac
	echo "nowait-guest: $1: $netfs_st, $(awk -v a="$netfs_t0" -v b="$(cut -d' ' -f1 /proc/uptime)" \
		'BEGIN { printf "%.2f", b - a }') s"
}

# netfs_mount TRIES TYPE OPTS SOURCE DIR: mount, again every 0.2 s while it
# fails (a server may take a moment to listen), each try at most 20 s.
netfs_mount() {
	netfs_tries=$1
	shift
	mkdir -p "$4"
	while ! timeout -s KILL 20 mount -t "$1" -o "$2" "$3" "$4" 2>/tmp/netfs-mount.err; do
		netfs_tries=$((netfs_tries - 1))
		if [ "$netfs_tries" -le 0 ]; then
			echo "nowait-guest: mount $4: $(cat /tmp/netfs-mount.err)"
			return 1
		fi
		sleep 0.2
	done
	echo "nowait-guest: mounted $4: $(grep " $4 " /proc/mounts | cut -d' ' -f1,3,4 | cut -c1-200)"
}

netfs_lo() {
	[ -e /sys/class/net/lo ] || netfs_skip loopback "no networking in this kernel" || return 2
	ip link set lo up || netfs_fail loopback "ip link set lo up failed"
}

netfs_knfsd() {
	netfs_has nfsd || netfs_skip knfsd "no nfsd in this kernel" || return 2
	netfs_has nfs || netfs_skip knfsd "no nfs client in this kernel" || return 2
	[ -d /mnt/ext4 ] || netfs_fail knfsd "no /mnt/ext4 to export" || return 1
	mkdir -p /mnt/ext4/export-nfs
	netfs_rc=0
	mount -t nfsd nfsd /proc/fs/nfsd || netfs_fail knfsd "cannot mount /proc/fs/nfsd" || return 1
	timeout -s KILL 10 rpcbind || netfs_fail knfsd "rpcbind failed" || return 1
	# nfsd asks nfsdcld for its clients of earlier boots, and without it
	# waits 1 s for it before it falls back to /var/lib/nfs/v4recovery.
	mount -t rpc_pipefs rpc_pipefs /var/lib/nfs/rpc_pipefs &&
		timeout -s KILL 10 nfsdcld || netfs_fail knfsd "nfsdcld failed (nfsd will wait 1 s for it)"
	timeout -s KILL 10 exportfs -r || netfs_fail knfsd "exportfs -r failed" || return 1
	timeout -s KILL 10 rpc.mountd || netfs_fail knfsd "rpc.mountd failed" || return 1
	# A short NFSv4 grace period and lease (10 s, the least nfsd takes),
	# set before the threads start; then the grace period is ended at
	# once: no client of an earlier boot has state to reclaim.
	echo 10 >/proc/fs/nfsd/nfsv4gracetime && echo 10 >/proc/fs/nfsd/nfsv4leasetime ||
		netfs_fail knfsd "cannot set the NFSv4 grace and lease times" || netfs_rc=1
	timeout -s KILL 30 rpc.nfsd 4 || netfs_fail knfsd "rpc.nfsd failed" || return 1
	# EBUSY: over already (nfsdcld knew of no client to wait for).
	echo Y 2>/dev/null >/proc/fs/nfsd/v4_end_grace || [ "$(cat /proc/fs/nfsd/v4_end_grace)" = Y ] ||
		netfs_fail knfsd "cannot end the grace period" || netfs_rc=1
	# No rpc.statd: NFSv3 locks stay local (nolock).
	# A long attribute cache (actimeo=600), so that a test's hit does not
	# turn into a revalidation when the guest is slow; a change on the
	# server is still seen at the next open (close-to-open consistency).
	netfs_mount 5 nfs vers=3,nolock,actimeo=600,addr=127.0.0.1 \
		127.0.0.1:/mnt/ext4/export-nfs /mnt/nfs3 || netfs_fail knfsd "NFSv3 mount failed" || netfs_rc=1
	netfs_mount 5 nfs vers=4.2,actimeo=600,addr=127.0.0.1,clientaddr=127.0.0.1 \
		127.0.0.1:/mnt/ext4/export-nfs /mnt/nfs4 || netfs_fail knfsd "NFSv4.2 mount failed" || netfs_rc=1
	# The same with fscache (fsc; no cache is bound, so its reads go
	# through netfs to the server), on a superblock of its own.
	if [ -e /proc/fs/fscache ]; then
		netfs_mount 5 nfs vers=4.2,actimeo=600,fsc,nosharecache,addr=127.0.0.1,clientaddr=127.0.0.1 \
			127.0.0.1:/mnt/ext4/export-nfs /mnt/nfs4-fsc || netfs_fail knfsd "NFSv4.2 fsc mount failed" || netfs_rc=1
	fi
	return $netfs_rc
}

netfs_ksmbd() {
	[ -d /sys/class/ksmbd-control ] || netfs_skip ksmbd "no ksmbd in this kernel" || return 2
	netfs_has cifs || netfs_skip ksmbd "no cifs client in this kernel" || return 2
	[ -d /mnt/ext4 ] || netfs_fail ksmbd "no /mnt/ext4 to share" || return 1
	mkdir -p /mnt/ext4/export-smb /run
	timeout -s KILL 10 ksmbd.mountd || netfs_fail ksmbd "ksmbd.mountd failed" || return 1
	# The kernel half listens on port 445 (0x01BD) once ksmbd.mountd has
	# handed it the configuration; it binds its socket to each interface,
	# which the kernel refuses without CONFIG_NETDEVICES.
	netfs_tries=50
	until grep -q '^ *[0-9]*: [0-9A-F:]*:01BD [0-9A-F:]* 0A' /proc/net/tcp /proc/net/tcp6 2>/dev/null; do
		if dmesg | grep -q 'ksmbd: Failed to set SO_BINDTODEVICE'; then
			netfs_fail ksmbd "the kernel cannot listen on 445 (SO_BINDTODEVICE: needs CONFIG_NETDEVICES=y)"
			return 1
		fi
		netfs_tries=$((netfs_tries - 1))
		[ "$netfs_tries" -gt 0 ] || netfs_fail ksmbd "nothing listens on port 445 after 10 s" || return 1
		sleep 0.2
	done
	# The password is also in harness/initramfs.sh (ksmbd.adduser).
	netfs_opts=vers=3.1.1,username=nowait,password=nowait-smb-pass,ip=127.0.0.1
	netfs_mount 5 cifs "$netfs_opts" //127.0.0.1/nowait /mnt/cifs ||
		netfs_fail ksmbd "cifs mount failed" || return 1
	netfs_mount 5 cifs "$netfs_opts,cache=none" //127.0.0.1/nowait /mnt/cifs-none ||
		netfs_fail ksmbd "second cifs mount (cache=none) failed"
}

netfs_9p() {
	netfs_has 9p || netfs_skip 9p "no 9p in this kernel" || return 2
	netfs_tags=$(cat /sys/bus/virtio/drivers/9pnet_virtio/virtio*/mount_tag 2>/dev/null | tr '\0' ' ')
	case " $netfs_tags " in
	*" nowait9p "*) ;;
	*) netfs_skip 9p "no virtfs export tagged nowait9p (boot.sh)"; return 2 ;;
	esac
	netfs_mount 1 9p trans=virtio,version=9p2000.L,cache=loose nowait9p /mnt/9p ||
		netfs_fail 9p "mount failed" || return 1
	netfs_mount 1 9p trans=virtio,version=9p2000.L,cache=none nowait9pnone /mnt/9p-none ||
		netfs_fail 9p "mount of nowait9pnone failed" || return 1
	netfs_mount 1 9p trans=virtio,version=9p2000.L,cache=loose nowait9pslow /mnt/9p-slow ||
		netfs_fail 9p "mount of nowait9pslow failed"
}

netfs_fuse() {
	netfs_has fuse || netfs_skip fuse "no fuse in this kernel" || return 2
	[ -d /mnt/ext4 ] || netfs_fail fuse "no /mnt/ext4 for its source" || return 1
	# The connections' abort files, for tests that kill their own daemon.
	netfs_has fusectl && mount -t fusectl fusectl /sys/fs/fuse/connections
	mkdir -p /mnt/ext4/export-fuse /mnt/fuse /run
	timeout -s KILL 10 nowait-fused --auto-inval-data --attr-timeout 1 \
		--pidfile /run/nowait-fused.pid /mnt/ext4/export-fuse /mnt/fuse ||
		netfs_fail fuse "nowait-fused failed" || return 1
	echo "nowait-guest: mounted /mnt/fuse: nowait-fused pid $(cat /run/nowait-fused.pid)"
}

# CephFS from the host: harness/ceph.sh runs the cluster in a network
# namespace where it is 10.0.2.2, and boot.sh runs QEMU there with a slirp
# network of 10.0.3.0/24 and puts the client key on the command line. Two
# mounts, /mnt/ceph-b with noshare: two clients, whose caps the MDS keeps
# coherent, so a test can change a file behind the first one's back.
netfs_ceph() {
	netfs_has ceph || netfs_skip ceph "no ceph in this kernel" || return 2
	netfs_key=
	for netfs_arg in $(cat /proc/cmdline); do
		case $netfs_arg in nowait.ceph=*) netfs_key=${netfs_arg#nowait.ceph=} ;; esac
	done
	if [ -z "$netfs_key" ]; then
		# nowait_netfs skips its ceph cases on this mark, with the reason
		mkdir -p /run &&
			echo "no cluster: boot with NOWAIT_CEPH=1 after harness/ceph.sh start" >/run/nowait-no-ceph
		netfs_skip ceph "no cluster for this boot (NOWAIT_CEPH=1 with harness/ceph.sh)"
		return 2
	fi
	[ -e /sys/class/net/eth0 ] || netfs_fail ceph "no eth0 (virtio-net)" || return 1
	ip addr add 10.0.3.15/24 dev eth0 && ip link set eth0 up &&
		ip route add default via 10.0.3.2 || netfs_fail ceph "cannot configure eth0" || return 1
	netfs_opts=name=guest,secret=$netfs_key,mds_namespace=nowait
	netfs_mount 5 ceph "$netfs_opts" 10.0.2.2:6789:/ /mnt/ceph || return 1
	netfs_mount 5 ceph "$netfs_opts,noshare" 10.0.2.2:6789:/ /mnt/ceph-b || return 1
}

netfs_t_all=$(cut -d' ' -f1 /proc/uptime)
netfs_run loopback netfs_lo
netfs_run knfsd netfs_knfsd
netfs_run ksmbd netfs_ksmbd
netfs_run 9p netfs_9p
netfs_run fuse netfs_fuse
netfs_run ceph netfs_ceph
echo "nowait-guest: network filesystems done in $(awk -v a="$netfs_t_all" \
	-v b="$(cut -d' ' -f1 /proc/uptime)" 'BEGIN { printf "%.2f", b - a }') s"
