#!/usr/bin/env bash
# make deb: the Debian packages of nowait into build/deb/:
#   libnowait1, libnowait-dev, nowait-serve, nowait-tools  (debian/, dpkg-buildpackage)
#   linux-image-R, linux-headers-R, R = 6.12.N-nowaitS       (harness/kernel-deb.sh)
# then lintian on the userspace packages, which must report no error and
# no warning (overrides, each with its reason, are in debian/), and on the
# kernel packages, likewise (build/deb/lintian-kernel.txt).
#
#   harness/deb.sh [--no-kernel]
#
# dpkg-buildpackage runs in a copy of the clone's files (tracked and
# untracked, less what .gitignore names) under build/deb/src, so that it
# writes its packages there and leaves the clone's own build/ alone.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

kernel=1
[ "${1:-}" = --no-kernel ] && kernel=0
out=$NOWAIT_OUT/deb
src=$out/src/nowait

phase "dependencies" "$NOWAIT_ROOT/harness/deps.sh" --deb >&2
rm -rf "$out/src" && mkdir -p "$src"
(cd "$NOWAIT_ROOT" && git ls-files -z -co --exclude-standard | rsync -a --from0 --files-from=- ./ "$src/")
say "userspace: dpkg-buildpackage -us -uc -b in $src"
(cd "$src" && DEB_BUILD_OPTIONS="parallel=2 ${DEB_BUILD_OPTIONS:-}" dpkg-buildpackage -us -uc -b >"$out/userspace-build.log" 2>&1) ||
	{ tail -30 "$out/userspace-build.log" >&2; die "dpkg-buildpackage failed (log: $out/userspace-build.log)"; }
rm -f "$out"/libnowait*.deb "$out"/nowait-*.deb
for p in libnowait1 libnowait-dev nowait-serve nowait-tools; do
	cp "$out"/src/"${p}"_*.deb "$out/"
done
changes=$(ls "$out"/src/nowait_*.changes)
# Lintian refuses nothing by its exit status unless told: errors and
# warnings fail make deb. The root warning is about lintian itself.
say "lintian: $(basename "$changes")"
lintian --fail-on error,warning --display-info --show-overrides "$changes" 2>&1 |
	grep -v 'running with root privileges is not recommended' | tee "$out/lintian.txt" >&2 ||
	die "lintian: errors or warnings (see $out/lintian.txt)"
say "lintian: $(grep -c '^E:' "$out/lintian.txt" || true) error(s), $(grep -c '^W:' "$out/lintian.txt" || true) warning(s), $(grep -c '^I:' "$out/lintian.txt" || true) info, $(grep -c '^O:' "$out/lintian.txt" || true) overridden"
if [ "$kernel" = 1 ]; then
	# A machine without the series tree gets one, as kernel.sh makes it;
	# where there is one, kernel-deb.sh builds it as it is.
	[ -d "$NOWAIT_SRC/.git" ] || phase "series tree" "$NOWAIT_ROOT/harness/kernel.sh" --prepare >&2
	"$NOWAIT_ROOT/harness/kernel-deb.sh" >/dev/null
	# The kernel packages too: no error nor warning (the headers' fixes:
	# harness/kernel-deb-fixup.sh). Infos are listed in the report.
	say "lintian: $(cd "$out" && ls linux-*.deb | paste -sd' ')"
	rc=0
	nice -n 10 lintian --fail-on error,warning --display-info "$out"/linux-*.deb >"$out/lintian-kernel.raw" 2>&1 || rc=$?
	grep -v 'running with root privileges is not recommended' "$out/lintian-kernel.raw" >"$out/lintian-kernel.txt" || true
	rm -f "$out/lintian-kernel.raw"
	[ "$rc" = 0 ] ||
		{ grep -E '^(E|W):' "$out/lintian-kernel.txt" >&2; die "lintian: errors or warnings in the kernel packages (see $out/lintian-kernel.txt)"; }
	say "lintian, kernel: $(grep -c '^E:' "$out/lintian-kernel.txt" || true) error(s), $(grep -c '^W:' "$out/lintian-kernel.txt" || true) warning(s), $(grep -c '^I:' "$out/lintian-kernel.txt" || true) info"
fi
ls "$out"/*.deb
