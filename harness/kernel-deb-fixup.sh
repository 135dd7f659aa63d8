#!/usr/bin/env bash
# The linux-headers package of the kernel's bindeb-pkg, as Debian's own
# headers packages ship: rewrites DEB in place. bindeb-pkg (6.12's
# scripts/package/builddeb) ships the host programs that building an
# out-of-tree module runs (fixdep, modpost, objtool, ...) unstripped and
# without declaring the libraries they link, and the tree's .gitignore
# files; lintian calls these unstripped-binary-or-object (error),
# undeclared-elf-prerequisites and package-contains-vcs-control-file
# (warnings). This strips the ELF programs (strip --strip-unneeded, as
# dh_strip does), adds the Depends dpkg-shlibdeps finds for them (libc6,
# libelf1), removes the .gitignore files, and writes md5sums and
# Installed-Size again. A package that has been through it is left as is.
#
#   harness/kernel-deb-fixup.sh DEB
set -euo pipefail
. "$(dirname "$0")/lib.sh"

deb=$(realpath "$1")
if dpkg-deb -f "$deb" Depends | grep -q libelf1; then
	say "fixup: $(basename "$deb") was fixed before"
	exit 0
fi
t=$(mktemp -d "${TMPDIR:-/tmp}/nowait-deb-fixup.XXXXXX")
trap 'rm -rf "$t"' EXIT
p=$t/pkg
dpkg-deb -R "$deb" "$p"
find "$p/usr/src" -name .gitignore -type f -delete
elfs=()
while IFS= read -r -d '' f; do
	[ "$(head -c 4 "$f" | tail -c 3)" = ELF ] && elfs+=("$f")
done < <(find "$p/usr/src" -type f -perm -u+x -print0)
[ "${#elfs[@]}" -gt 0 ] || die "fixup: no ELF program in $(basename "$deb")"
strip --strip-unneeded --remove-section=.comment --remove-section=.note "${elfs[@]}"
# dpkg-shlibdeps reads debian/control for the package's name.
mkdir -p "$t/src/debian"
printf 'Source: linux-headers\n\nPackage: linux-headers\nArchitecture: any\n' >"$t/src/debian/control"
deps=$(cd "$t/src" && dpkg-shlibdeps -O "${elfs[@]}" 2>/dev/null | sed -n 's/^shlibs:Depends=//p')
[ -n "$deps" ] || die "fixup: dpkg-shlibdeps found no dependency"
if grep -q '^Depends:' "$p/DEBIAN/control"; then
	sed -i "s/^Depends: .*/&, $deps/" "$p/DEBIAN/control"
else
	sed -i "/^Description:/i Depends: $deps" "$p/DEBIAN/control"
fi
sed -i "s/^Installed-Size: .*/Installed-Size: $(du -sk --exclude=DEBIAN "$p" | cut -f1)/" "$p/DEBIAN/control"
(cd "$p" && find . -path ./DEBIAN -prune -o -type f -printf '%P\0' | sort -z | xargs -0 md5sum) >"$p/DEBIAN/md5sums"
dpkg-deb --root-owner-group -Zxz -b "$p" "$deb.new" >/dev/null
mv "$deb.new" "$deb"
say "fixup: $(basename "$deb"): ${#elfs[@]} programs stripped, Depends: $deps"
