#!/usr/bin/env bash
# Install the Debian packages nowait needs; does nothing when all are there.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

pkgs=(
	linux-source-6.12 build-essential bc bison flex libelf-dev libssl-dev
	ccache cpio xz-utils rsync git gcc-multilib
	qemu-system-x86 busybox-static
	e2fsprogs xfsprogs btrfs-progs dosfstools exfatprogs
	liburing-dev fio gnuplot-nox jq pkgconf python3 trinity
	python3-ply python3-git
	# nowait-serve's tests and bench; nginx is the bench's peer, run by
	# serve/bench.sh as its own process (see below for the package's service)
	curl openssl wrk nginx
	# make regress: the Debian guest (mmdebstrap), fstests and LTP built on the host
	mmdebstrap autoconf automake libtool libaio-dev xfslibs-dev uuid-dev
	libattr1-dev libacl1-dev libgdbm-dev libcap-dev
	# the guest's network filesystems (guest/netfs.sh): knfsd's and ksmbd's
	# user-space halves, tc for netem, mkfs.ocfs2
	nfs-kernel-server nfs-common rpcbind ksmbd-tools iproute2 ocfs2-tools
	# harness/ceph.sh: a single-node CephFS on the host for the guest's kernel
	# client, and libcephfs's Python binding for its read/write check
	ceph-mon ceph-mgr ceph-osd ceph-mds ceph-common python3-cephfs
)
# make regress's i386 LTP links libaio in statically (harness/regress-suites.sh):
# Debian's i386 package, through multiarch.
pkgs+=(libaio-dev:i386)
if ! dpkg --print-foreign-architectures | grep -qx i386; then
	say "packages: adding the i386 architecture (libaio-dev:i386)"
	dpkg --add-architecture i386
fi
missing=()
for p in "${pkgs[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
	say "packages: all ${#pkgs[@]} installed"
	exit 0
fi
say "packages: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -q
apt-get install -y -q --no-install-recommends "${missing[@]}"
# Debian's nginx package starts a system-wide nginx on port 80 where an init
# system lets it: the benchmark runs its own, so the one this install started
# is stopped and disabled (an nginx that was installed before is left alone).
if printf '%s\n' "${missing[@]}" | grep -qx nginx && command -v systemctl >/dev/null &&
	systemctl is-active -q nginx 2>/dev/null; then
	say "packages: stopping and disabling the nginx service the package started (serve/bench.sh runs its own)"
	systemctl disable --now nginx
fi
