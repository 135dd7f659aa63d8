#!/usr/bin/env bash
# Check every prefix of the base's series (kernel/BASE/series, 1..N patches): at each one, every
# object file the applied patches touch must compile with -Werror, including
# those of filesystems the test config leaves out (minix, udf, hfs...); the
# full series then builds the whole kernel image.
#
#   [NOWAIT_BASE=7.3] harness/series-check.sh [--from K]    (make series-check [BASE=7.3])
#
# --from K starts at prefix K: a run over a long series can be split into
# parts (1..K-1 checked before, K..N now), and one that stopped resumed.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

from=1
case ${1:-} in
--from) from=${2:?--from needs a prefix number} ;;
'') ;;
*) die "usage: $0 [--from K]" ;;
esac
n=$(grep -cv '^\s*\(#\|$\)' "$NOWAIT_KDIR/series")
failed=0
for k in $(seq "$from" "$n"); do
	if phase "prefix $k/$n" "$NOWAIT_ROOT/harness/kernel.sh" --upto "$k" --touched; then
		echo "ok - series prefix $k/$n: touched objects compile"
	else
		echo "not ok - series prefix $k/$n: touched objects do not compile"
		failed=1
	fi
done
if phase "full series" "$NOWAIT_ROOT/harness/kernel.sh" >/dev/null; then
	echo "ok - series $n/$n: kernel image builds"
else
	echo "not ok - series $n/$n: kernel image does not build"
	failed=1
fi
exit "$failed"
