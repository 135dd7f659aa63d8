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
# The filesystems' mkfs; their fsck, which nowait_faults (after its injected
# failures) and the crash-replay job (on each replayed state) run without
# repairing; and dm-log-writes' control (dmsetup), for crash-replay.
for tool in mkfs.ext4 mkfs.ext2 mke2fs mkfs.xfs mkfs.btrfs mkfs.vfat mkfs.exfat trinity \
	e2fsck xfs_repair btrfs fsck.vfat fsck.exfat dmsetup; do
	copy_with_libs "$(command -v "$tool" || echo "/sbin/$tool")"
done
# fstests' replay-log, when harness/crash-replay.sh found it built
# (harness/regress-suites.sh): NOWAIT_REPLAY_LOG names it.
[ -z "${NOWAIT_REPLAY_LOG:-}" ] || copy_with_libs "$NOWAIT_REPLAY_LOG"

# The network filesystems' servers and tools (guest/netfs.sh starts them):
# tc for netem, knfsd's rpcbind, rpc.nfsd, rpc.mountd, exportfs and nfsdcld, ksmbd's
# user-space half, mkfs.ocfs2; with the files they read.
for tool in tc rpcbind rpc.nfsd rpc.mountd exportfs nfsdcld mkfs.ocfs2 /usr/libexec/ksmbd.tools; do
	copy_with_libs "$(command -v "$tool" || echo "/sbin/$tool")"
done
# ksmbd.tools is one program that acts on the name it was called by.
for name in ksmbd.mountd ksmbd.control; do ln -s ksmbd.tools "$root/sbin/$name"; done
mkdir -p "$root"/etc/ksmbd "$root"/var/lib/nfs/{v4recovery,nfsdcld,rpc_pipefs} "$root"/run/rpcbind "$root"/usr/lib/x86_64-linux-gnu
cp -r /usr/lib/x86_64-linux-gnu/tc "$root/usr/lib/x86_64-linux-gnu/"
cp /etc/services /etc/protocols /etc/rpc "$root/etc/"
cp "$NOWAIT_ROOT/harness/guest/netfs.sh" "$root/etc/netfs.sh"
cp "$NOWAIT_ROOT/harness/guest/crash-replay.sh" "$root/etc/crash-replay.sh"
touch "$root"/var/lib/nfs/{etab,rmtab,xtab}
# rpcbind drops its privileges to _rpc; ksmbd's user nowait needs a uid.
cat >"$root/etc/passwd" <<'END'
root:x:0:0:root:/:/bin/sh
_rpc:x:100:65534::/run/rpcbind:/bin/false
statd:x:101:65534::/var/lib/nfs:/bin/false
nowait:x:1000:1000::/tmp:/bin/false
nobody:x:65534:65534:nobody:/nonexistent:/bin/false
END
cat >"$root/etc/group" <<'END'
root:x:0:
nowait:x:1000:
nogroup:x:65534:
END
printf '%s\n' 'passwd: files' 'group: files' 'shadow: files' 'hosts: files' \
	'services: files' 'protocols: files' 'rpc: files' 'netgroup: files' >"$root/etc/nsswitch.conf"
printf '127.0.0.1\tlocalhost nowait-guest\n' >"$root/etc/hosts"
echo nowait-guest >"$root/etc/hostname"
# mkfs.ocfs2 looks for its device in /etc/mtab.
ln -s ../proc/mounts "$root/etc/mtab"
# No IPv6 in the guest's kernel: only the IPv4 and local transports.
cat >"$root/etc/netconfig" <<'END'
udp        tpi_clts      v     inet     udp     -       -
tcp        tpi_cots_ord  v     inet     tcp     -       -
local      tpi_cots_ord  -     loopback  -      -       -
unix       tpi_cots_ord  -     loopback  -      -       -
END
echo '/mnt/ext4/export-nfs *(rw,sync,no_root_squash,no_subtree_check,fsid=1)' >"$root/etc/exports"
cat >"$root/etc/ksmbd/ksmbd.conf" <<'END'
[global]
	server min protocol = SMB2_10
	guest account = nobody
[nowait]
	path = /mnt/ext4/export-smb
	read only = no
	valid users = nowait
	force user = root
	force group = root
END
ksmbd.adduser -a nowait -p nowait-smb-pass -c "$root/etc/ksmbd/ksmbd.conf" \
	-i "$root/etc/ksmbd/ksmbdpwd.db" >/dev/null

cp "$NOWAIT_OUT"/tests/*.x86_64 "$NOWAIT_OUT"/tests/*.i386 "$root/tests/"
# The opt-in programs (kernel/tests/Makefile's OPT_AREAS), for their own jobs.
mkdir -p "$root/tests-opt"
cp "$NOWAIT_OUT"/tests/opt/*.x86_64 "$NOWAIT_OUT"/tests/opt/*.i386 "$root/tests-opt/"
cp "$NOWAIT_OUT"/tools/nowait-* "$root/bin/"
ln -s nowait-probe.x86_64 "$root/bin/nowait-probe"
# The benchmark, for the bench job, when harness/bench-guest.sh built it.
bench=$NOWAIT_OUT/bench/nowait-bench.static
[ -e "$bench" ] && cp "$bench" "$root/bin/nowait-bench"

(cd "$root" && find . | cpio --quiet -o -H newc) >"$out"
say "initramfs: $out, $(du -m "$out" | cut -f1) MiB, $(ls "$root/tests" | wc -l) test programs"
