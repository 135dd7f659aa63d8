#!/usr/bin/env bash
# Tests of the cache's tree cleanup (cache_claim in harness/lib.sh) through
# harness/regress-image.sh: two clones with different package lists keep
# their trees side by side across each other's rebuilds; a clone's own stale
# tree goes with its image, unless a run reads it or a guest has its image
# open; a tree made before claims existed is kept. TAP on stdout.
#
#   harness/test/cache-claim.sh
#
# Runs in a temporary NOWAIT_CACHE with a stand-in mmdebstrap that makes a
# one-file tree (the real one takes minutes and the archive), and copies of
# harness/ as the clones (NOWAIT_ROOT is where lib.sh lies).
set -uo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
t=$(mktemp -d /tmp/nowait-cache-claim.XXXXXX)
trap 'rm -rf "$t"' EXIT
export NOWAIT_CACHE=$t/cache
mkdir -p "$t/bin" "$NOWAIT_CACHE"
cat >"$t/bin/mmdebstrap" <<'EOF'
#!/bin/sh
# The stand-in: the target is the argument after the suite.
for a; do
	[ -n "${next:-}" ] && { mkdir -p "$a" && echo "$inc" >"$a/packages"; exit 0; }
	case $a in --include=*) inc=${a#--include=} ;; bookworm) next=1 ;; esac
done
exit 1
EOF
chmod +x "$t/bin/mmdebstrap"
export PATH=$t/bin:$PATH
n=0 failed=0
ok() { n=$((n + 1)); echo "ok $n - $*"; }
notok() { n=$((n + 1)); failed=1; echo "not ok $n - $*"; }
assert() { # assert NAME CMD...
	local name=$1
	shift
	if "$@"; then ok "$name"; else notok "$name"; fi
}
clone() { # clone NAME LIST...: a clone whose harness/regress/packages is LIST
	local c=$1
	shift
	rm -rf "${t:?}/$c" && mkdir -p "$t/$c"
	cp -a "$here" "$t/$c/harness"
	printf '%s\n' "$@" >"$t/$c/harness/regress/packages"
}
relist() { local c=$1; shift; printf '%s\n' "$@" >"$t/$c/harness/regress/packages"; }
image() { "$t/$1/harness/regress-image.sh" 2>>"$t/log"; }
# An image of the tree, as regress_root_image would write it.
img_of() { echo "$NOWAIT_CACHE/regress/root-${1##*-}.img"; }

clone a bash
clone b bash less
ta=$(image a) && touch "$(img_of "$ta")"
assert "clone a made its tree" test -e "$ta/.complete"
tb=$(image b) && touch "$(img_of "$tb")"
assert "clone b's list made another tree" test "$ta" != "$tb" -a -e "$tb/.complete"
assert "a's tree survived b's build" test -e "$ta/.complete" -a -e "$(img_of "$ta")"
relist a bash gawk
ta2=$(image a)
assert "a's new list made a new tree" test "$ta2" != "$ta" -a -e "$ta2/.complete"
assert "a's stale tree is gone" test ! -e "$ta"
assert "a's stale tree's image is gone" test ! -e "$(img_of "$ta")"
assert "b's tree and image survived a's rebuild" test -e "$tb/.complete" -a -e "$(img_of "$tb")"
assert "b finds its tree made" test "$(image b)" = "$tb"
assert "a's new tree survived b's run" test -e "$ta2/.complete"

# Two clones on one list share its tree: one moving on leaves it to the other.
clone c bash less
assert "c shares b's tree" test "$(image c)" = "$tb"
relist b bash less sed
tb2=$(image b)
assert "b's old tree, still c's, survived b's rebuild" test -e "$tb/.complete"
relist c bash less sed
assert "c moved to b's new tree" test "$(image c)" = "$tb2"
assert "the old tree, claimed by nobody, is gone" test ! -e "$tb"

# A tree being read (cache_use) or whose image a guest has open is kept.
relist b bash less sed grep
relist c bash less sed grep
exec 6>"$tb2.use"
flock -s 6
tb3=$(image b)
tb3c=$(image c)
assert "b and c moved to one new tree" test "$tb3" = "$tb3c" -a "$tb3" != "$tb2"
assert "the tree being read is kept" test -e "$tb2/.complete"
exec 6>&-
touch "$(img_of "$tb2")"
exec 5<"$(img_of "$tb2")"
image a >/dev/null
assert "once read no more, it goes at the next run" test ! -e "$tb2"
assert "its image, open, is kept" test -e "$(img_of "$tb2")"
exec 5<&-

# A tree from before claims (no .users) is kept; so is b's when a clone is
# deleted; a deleted clone's claim goes.
mkdir -p "$NOWAIT_CACHE/regress/rootfs-0123456789ab" && touch "$NOWAIT_CACHE/regress/rootfs-0123456789ab/.complete"
clone d bash xz-utils
td=$(image d)
rm -rf "${t:?}/d"
relist a bash gawk make
ta3=$(image a)
assert "a tree made before claims is kept" test -e "$NOWAIT_CACHE/regress/rootfs-0123456789ab/.complete"
# A clone (of the list that made it) claims it, then moves on: the tree may
# still serve a clone whose code does not claim, and stays.
clone e bash e-list
mv "$NOWAIT_CACHE/regress/rootfs-0123456789ab" "$NOWAIT_CACHE/regress/rootfs-$(printf '%s\n' bash e-list | sort -u | sha256sum | cut -c1-12)"
te=$(image e)
relist e bash e-list2
image e >/dev/null
assert "a tree made before claims stays after its one claimer moved on" test -e "$te/.complete"
assert "the tree of a deleted clone is gone" test ! -e "$td"
assert "b's tree survived it all" test -e "$tb3/.complete" -a -e "$ta3/.complete"
[ "$failed" = 0 ] || sed 's/^/# /' "$t/log"
echo "1..$n"
exit "$failed"
