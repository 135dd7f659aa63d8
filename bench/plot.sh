#!/bin/sh
# SPDX-License-Identifier: MIT
# plot.sh BENCH.json OUT.png: latency CDFs from nowait-bench's JSON, one
# panel per class (f1, f2, f3, the whole mix), a line per mode, log x axis;
# then the rate ramp (mix p99 against arrival rate) and the logging run's
# write latency CDF, where the JSON has them.
# Needs jq and gnuplot (Debian: jq, gnuplot-nox). Runs on the host; the
# JSON can come from a guest.
set -eu
[ $# -eq 2 ] || { echo "usage: $0 BENCH.json OUT.png" >&2; exit 2; }
json=$1 png=$2
command -v jq >/dev/null || { echo "plot.sh: jq not found" >&2; exit 1; }
command -v gnuplot >/dev/null || { echo "plot.sh: gnuplot not found" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM

modes=$(jq -r '.modes | keys_unsorted[]' "$json")
for m in $modes; do
	for c in f1 f2 f3 all; do
		jq -r --arg m "$m" --arg c "$c" \
			'.modes[$m].classes[$c].lat.cdf[] | "\(.[0]) \(.[1])"' "$json" >"$tmp/$c.$m"
	done
done
for m in $(jq -r '(.ramp.modes // {}) | keys_unsorted[]' "$json"); do
	jq -r --arg m "$m" '.ramp.modes[$m].steps[] | "\(.rate) \(.p99_us)"' "$json" >"$tmp/ramp.$m"
done
for m in $(jq -r '(.log.modes // {}) | keys_unsorted[]' "$json"); do
	jq -r --arg m "$m" '.log.modes[$m].lat.cdf[] | "\(.[0]) \(.[1])"' "$json" >"$tmp/log.$m"
done
bound=$(jq -r '.ramp.p99_bound_ms // 0' "$json")

# plot_cmd PREFIX STYLE: a gnuplot plot command with a line per mode that has
# a file $tmp/PREFIX<mode>, in the same mode order in every panel, so that each
# mode keeps its colour.
plot_cmd() {
	sep="plot"
	for m in $modes; do
		[ -f "$tmp/$1$m" ] || continue
		printf "%s '%s' using 1:2 with %s lw 2 title '%s' noenhanced" "$sep" "$tmp/$1$m" "$2" "$m"
		sep=","
	done
}

title=$(jq -r '"\(.system.kernel), \(.storage.fs) on \(.storage.disk), " +
	(if .storage.throttle then "\(.storage.read_iops_limit) read IOPS (cgroup)" else "no cgroup throttle" end) +
	", \(.workload.rate | floor) req/s open loop, pool \(.workload.threads) threads, load \(.system.load_start[0])"' "$json")

{
	echo "set terminal png size 1400,1500 font ',10'"
	echo "set output '$png'"
	echo "set multiplot layout 3,2 title \"nowait-bench latency CDF (from scheduled arrival): $title\" noenhanced"
	echo "set logscale x"
	echo "set format x '10^{%T}'"
	echo "set xlabel 'latency (us)'"
	echo "set ylabel 'fraction of reads'"
	echo "set yrange [0:1]"
	echo "set grid"
	echo "set key bottom right"
	for c in f1 f2 f3 all; do
		case $c in
		f1) t='f1: 73% zipf random, mostly cached';;
		f2) t='f2: 18% uniform random, mostly uncached';;
		f3) t='f3: 9% sequential, cold';;
		all) t='all classes (the mix)';;
		esac
		echo "set title '$t'"
		plot_cmd "$c." lines
		echo
	done
	if ls "$tmp"/log.* >/dev/null 2>&1; then
		echo "set title 'logging: 4 KiB O_APPEND records, write latency' noenhanced"
		plot_cmd log. lines
		echo
	fi
	if ls "$tmp"/ramp.* >/dev/null 2>&1; then
		echo "set title 'rate ramp: mix p99 against arrival rate (bound $bound ms)'"
		echo "unset logscale x"
		echo "set format x '%g'"
		echo "set logscale y"
		echo "set format y '10^{%T}'"
		echo "set autoscale y"
		echo "set xlabel 'arrivals per second'"
		echo "set ylabel 'p99 (us)'"
		echo "set key top left"
		plot_cmd ramp. linespoints
		echo ", $bound * 1000 with lines dt 2 lc rgb 'black' title 'bound'"
	fi
	echo "unset multiplot"
} >"$tmp/plot.gp"
gnuplot "$tmp/plot.gp"
echo "wrote $png"
