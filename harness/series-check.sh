#!/usr/bin/env bash
# Build every prefix of kernel/series (1..N patches): each must compile and
# link on its own. Prefixes that leave the headers as a longer prefix has
# them are mostly ccache hits.
#
#   harness/series-check.sh     (make series-check)
set -euo pipefail
. "$(dirname "$0")/lib.sh"

n=$(grep -cv '^\s*\(#\|$\)' "$NOWAIT_ROOT/kernel/series")
failed=0
for k in $(seq 1 "$n"); do
	if phase "prefix $k/$n" "$NOWAIT_ROOT/harness/kernel.sh" --upto "$k" >/dev/null; then
		echo "ok - series prefix $k/$n builds"
	else
		echo "not ok - series prefix $k/$n does not build"
		failed=1
	fi
done
exit "$failed"
