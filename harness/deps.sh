#!/usr/bin/env bash
# Install the Debian packages nowait needs; does nothing when all are there.
# --deb: only what make deb needs (harness/deb.sh), for a user who builds the
# packages and none of the test rigs.
#
#   harness/deps.sh [--deb]
set -euo pipefail
. "$(dirname "$0")/lib.sh"

deb_pkgs=(
	# the 6.12 tree, its build (the kernel's bindeb-pkg) and the packaging
	linux-source-6.12 build-essential bc bison flex libelf-dev libssl-dev
	ccache cpio xz-utils rsync git kmod dpkg-dev debhelper fakeroot lintian
	# debian/control's Build-Depends
	liburing-dev pkgconf
)

# The two kernel bases: 6.12 from Debian 12's archive (what Debian 12 and 13
# run), 7.3 from trixie-backports (the upstream base), reached through the
# suite below.
pkgs=(
	linux-source-6.12 linux-source-7.3 build-essential bc bison flex libelf-dev libssl-dev
	ccache cpio xz-utils rsync git gcc-multilib
	qemu-system-x86 busybox-static
	e2fsprogs xfsprogs btrfs-progs dosfstools exfatprogs
	# make crash-replay: dm-log-writes' control in the guest
	dmsetup
	liburing-dev fio gnuplot-nox jq pkgconf python3 trinity
	python3-ply python3-git
	# nowait-serve's tests and bench; nginx is the bench's peer, run by
	# serve/bench.sh as its own process (see below for the package's service)
	curl openssl wrk nginx
	# make deb and deb-check: the packages and lintian; deb-check's disk
	# (parted), the cache's cleanup (fuser)
	"${deb_pkgs[@]}" parted psmisc
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
[ "${1:-}" != --deb ] || pkgs=("${deb_pkgs[@]}")
# make regress's i386 LTP links libaio in statically (harness/regress-suites.sh):
# Debian's i386 package, through multiarch.
[ "${1:-}" = --deb ] || pkgs+=(libaio-dev:i386)
if [ "${1:-}" != --deb ] && ! dpkg --print-foreign-architectures | grep -qx i386; then
	say "packages: adding the i386 architecture (libaio-dev:i386)"
	dpkg --add-architecture i386
fi
# trixie-backports, pinned: apt takes nothing from it but linux-source-7.3
# (priority -1 for the rest), so adding the suite upgrades nothing else on the
# machine. linux-source-7.3 depends on binutils and xz-utils only.
backports_suite() {
	local src=/etc/apt/sources.list.d/nowait-trixie-backports.sources
	local pin=/etc/apt/preferences.d/nowait-trixie-backports
	[ -f "$src" ] && [ -f "$pin" ] && return
	say "packages: adding trixie-backports (pinned to linux-source-7.3 only)"
	cat >"$src" <<-EOF
		Types: deb
		URIs: http://deb.debian.org/debian
		Suites: trixie-backports
		Components: main
		Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
	EOF
	cat >"$pin" <<-EOF
		Package: *
		Pin: release n=trixie-backports
		Pin-Priority: -1

		Package: linux-source-7.3
		Pin: release n=trixie-backports
		Pin-Priority: 500
	EOF
}
[ "${1:-}" = --deb ] || backports_suite
mapfile -t pkgs < <(printf '%s\n' "${pkgs[@]}" | awk '!seen[$0]++')
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
