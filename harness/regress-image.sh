#!/usr/bin/env bash
# Build the regression guest's Debian 12 root filesystem with mmdebstrap, from
# the archive apt uses, into $NOWAIT_CACHE/regress/rootfs-HASH (HASH: of
# harness/regress/packages, or of the list NOWAIT_REGRESS_PACKAGES names, so
# the tree is rebuilt only when the list changes).
# dpkg runs with force-unsafe-io: the tree is remade, never repaired, and
# fsync per file made the first build take 30 minutes on a shared host.
# Prints the tree's path. The trees of other clones' lists are kept beside
# it (cache_claim in harness/lib.sh). --if-cached prints it only when the
# tree is already made, and otherwise exits 3 without making it (make
# check's deb-check).
#
#   harness/regress-image.sh [--if-cached]
set -euo pipefail
. "$(dirname "$0")/lib.sh"

regress=$NOWAIT_CACHE/regress
list=${NOWAIT_REGRESS_PACKAGES:-$NOWAIT_ROOT/harness/regress/packages}
pkgs=$(sed 's/#.*//' "$list" | tr -s ' \n' '\n' | sed '/^$/d' | sort -u)
hash=$(printf '%s\n' "$pkgs" | sha256sum | cut -c1-12)
root=$regress/rootfs-$hash
cache_lock regress/rootfs
if [ -e "$root/.complete" ]; then
	say "image: $root is up to date ($(printf '%s\n' "$pkgs" | wc -l) packages)"
	cache_claim "$root" regress-bookworm root-%s.img
	echo "$root"
	exit 0
fi
[ "${1:-}" != --if-cached ] || { say "image: $root not made yet"; exit 3; }
command -v mmdebstrap >/dev/null || die "mmdebstrap missing: run harness/deps.sh"
# The same archive as the host's apt: deb.debian.org, bookworm, its updates and security.
mirror=$(apt-get indextargets --format '$(REPO_URI)' 'Created-By: Packages' 2>/dev/null |
	grep -m1 -E 'debian/?$' || echo http://deb.debian.org/debian/)
security=${mirror%/debian/}/debian-security
case $mirror in *deb.debian.org*) security=http://deb.debian.org/debian-security ;; esac
say "image: mmdebstrap bookworm from $mirror into $root ($(printf '%s\n' "$pkgs" | wc -l) packages)"
rm -rf "$root.tmp"
nice -n 19 mmdebstrap --variant=minbase --mode=root --dpkgopt=force-unsafe-io \
	--include="$(printf '%s\n' "$pkgs" | paste -sd,)" \
	--customize-hook='chroot "$1" sh -c "groupadd -f fsgqa; useradd -m -g fsgqa fsgqa; useradd -m fsgqa2; useradd -m 123456-fsgqa; groupadd -f nobody || true; echo regress >/etc/hostname"' \
	bookworm "$root.tmp" \
	"deb $mirror bookworm main" "deb $mirror bookworm-updates main" \
	"deb $security bookworm-security main" >&2
touch "$root.tmp/.complete"
rm -rf "$root" && mv "$root.tmp" "$root"
: >"$root.users"
# This clone's tree of its previous list goes, with its image, unless a run
# reads it or another clone (a worktree with another list) still claims it.
cache_claim "$root" regress-bookworm root-%s.img
say "image: done, $(du -sh "$root" | cut -f1)"
echo "$root"
