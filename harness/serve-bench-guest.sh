#!/usr/bin/env bash
# nowait-serve's benchmark in the Debian 12 regression guest (the image of
# harness/regress.sh), the stock kernel and then the patched one, each on
# tmpfs, ext4 on a virtio disk, and overlayfs with its lower layer on that
# ext4: serve/bench.sh in the guest, the tables on the host.
#
#   harness/serve-bench-guest.sh [--stock BZIMAGE] [--patched BZIMAGE]
#                                [--kernels "stock patched"] [--fs "tmpfs ext4 overlay"]
#                                [--iops N] [--budget SECONDS] [--jobs 2] [-- BENCH.SH OPTIONS]
#
# Kernels not given are built (harness/kernel.sh [--stock]); given ones
# (kernel_for in harness/lib.sh) are booted as they are, nothing rebuilds:
#   --stock /var/cache/nowait/kernels/stock-6.12-bzImage \
#   --patched /var/cache/nowait/kernels/v3-6.12-bzImage
# With only one kernel at hand, --kernels patched (or stock) boots that one.
# The page cache limit is the server's memory cgroup in the guest (v2
# memory.max); the slow disk is QEMU's: reads from the data disk are
# throttled to --iops per second (default 50) by QEMU's
# throttling.iops-read, as harness/boot.sh does with NOWAIT_READ_IOPS. Not
# io.max in the guest: the test kernels have no CONFIG_BLK_DEV_THROTTLING,
# and a throttle in the device holds whichever task issues the read (a pool
# thread on stock, the series' readahead worker on patched) the same way.
# Options after -- go to serve/bench.sh (default below: 600 files, 64 MiB
# cgroup, 5 interleaved repetitions at 16 connections of every mode, nginx's
# included, 5 s warm-up, 10 s of wrk, then 15 s of serve/pace.py's open
# loop at 8 requests/s: under TCG an HTTPS response costs tens of ms of
# guest CPU, so the rate must stay under every server's capacity).
# --budget: guest seconds per boot (default: what bench.sh --estimate says
# for every filesystem, plus 120); a filesystem that would not fit is
# reported as skipped, with the reason. --kernels: boot only these, and make
# the tables from every kernel's results found. --jobs 2 boots both kernels
# at once (each guest then shares the host's CPUs with the other: half
# the wall time, both under the same load). The guests run at the lowest
# CPU weight (harness/regress/lib.sh); beside a kernel build that leaves
# TCG a few percent of a CPU, and an HTTPS response takes seconds:
# NOWAIT_GUEST_NICE=0 gives them a fair share.
# The server and libnowait (linked in statically) are built on the host,
# the same Debian 12 as the guest, and shipped on the job disk with
# serve/bench.sh. Writes build/serve-bench-guest/serve-bench-guest.{md,json,png}
# and, per kernel, build/serve-bench-guest/KERNEL/ (console, the results
# disk read back: results/serve/FS/{runs/,bench.txt,bench.json,bench.png}).
set -euo pipefail
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/regress/lib.sh"

stock="" patched=""
kernels="stock patched" fslist="tmpfs ext4 overlay" iops=50 budget="" jobs=1
bench_args=(--files 600 --mem-mib 64 --reps 5 --conns 16 --warmup 5 --duration 10
	--rate 8 --open-duration 15)
# shellcheck disable=SC2034 # stock and patched are read as ${!label}
while [ $# -gt 0 ]; do
	case $1 in
	--stock) stock=$2; shift ;;
	--patched) patched=$2; shift ;;
	--kernels) kernels=$2; shift ;;
	--fs) fslist=$2; shift ;;
	--iops) iops=$2; shift ;;
	--budget) budget=$2; shift ;;
	--jobs) jobs=$2; shift ;;
	--) shift; bench_args=("$@"); break ;;
	*) sed -n '2,/^set /{/^set /d;s/^# \{0,1\}//p}' "$0" >&2; exit 2 ;;
	esac
	shift
done
# The nginx shipped on the job disk (below).
bench_args+=(--nginx /opt/suites/serve/nginx)
for label in $kernels; do
	k=$(kernel_for "$label" "${!label}")
	printf -v "$label" '%s' "$k"
done
out=$NOWAIT_OUT/serve-bench-guest
mkdir -p "$out"
t0=$(date +%s)
per_fs=$("$NOWAIT_ROOT/serve/bench.sh" --estimate "${bench_args[@]}")
budget=${budget:-$((per_fs * $(wc -w <<<"$fslist") + 120))}

phase "packages" "$NOWAIT_ROOT/harness/deps.sh"
phase "server build" make -s -C "$NOWAIT_ROOT" serve
rootfs=$("$NOWAIT_ROOT/harness/regress-image.sh")
rootimg=$(regress_root_image "$rootfs")

# The job disk: the regression guest's launcher files, and serve/ as the
# guest runs it (bench.sh finds lib.sh and zipf.lua beside itself).
job=$out/job
regress_job_dir "$job/regress"
printf '%s\n' "${bench_args[@]}" >"$job/regress/serve.args"
mkdir -p "$job/serve"
cp "$NOWAIT_ROOT"/serve/{bench.sh,lib.sh,zipf.lua,pace.py} "$NOWAIT_ROOT/build/serve/nowait-serve" "$job/serve/"
# nginx, the peer: the host's Debian 12 binary (harness/deps.sh installs the
# package), whose libraries the guest image has (libssl3, libpcre2, zlib,
# libcrypt); shipped like the server rather than added to the image's
# package list, whose change would make a second tree and image for this
# clone beside the one make regress uses (cache_claim in lib.sh).
cp "$(command -v nginx)" "$job/serve/nginx"
rm -f "$out/job.img"
mkfs.ext4 -q -F -L serve-job -d "$job" "$out/job.img" 64M >&2
say "serve-bench-guest: bench.sh ${bench_args[*]}; about ${per_fs} s per filesystem, budget ${budget}s per boot; data disk reads throttled to $iops IOPS"

# One kernel after the other unless --jobs 2: then each has the machine alone.
boot_kernel() {	# LABEL
	local label=$1 k=${!1}
	regress_boot "$out/$label" "$k" "$rootimg" "$out/job.img" "$budget" \
		"regress.suite=serve regress.fs=$(tr ' ' , <<<"$fslist") regress.label=$label" \
		"data:2G:throttling.iops-read=$iops" results:1G
	sha256sum "$k" | cut -c1-16 >"$out/$label/bzImage.sha256"
	grep -aEn "$NOWAIT_SPLAT" "$out/$label/console.log" >"$out/$label/splats" || true
	grep -a '^regress: serve ' "$out/$label/console.log" | sed "s/^/$label: /" >&2 || say "$label: no serve result lines"
}
for label in $kernels; do
	if [ "$jobs" -ge 2 ]; then
		boot_kernel "$label" &
		sleep 5
	else
		boot_kernel "$label"
	fi
done
wait

setup="Debian 12 guest, QEMU TCG (autogroup nice ${NOWAIT_GUEST_NICE:-19}), 2 vCPUs, 2 GiB, data disk reads throttled to $iops IOPS by QEMU; bench.sh ${bench_args[*]}"
for label in stock patched; do
	[ -e "$out/$label/results/kernel.txt" ] &&
		setup+="; $label: $(head -1 "$out/$label/results/kernel.txt" | cut -d' ' -f3,4) (bzImage sha256 $(cat "$out/$label/bzImage.sha256" 2>/dev/null)…)"
done
python3 "$NOWAIT_ROOT/serve/bench-report.py" --guest "$out" --setup "$setup"
say "serve-bench-guest: $(($(date +%s) - t0)) s; $out/serve-bench-guest.{md,json,png}"
