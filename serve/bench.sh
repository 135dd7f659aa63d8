#!/usr/bin/env bash
# make serve-bench: wrk against nowait-serve in each mode and against nginx,
# the server in a cgroup whose page cache is smaller than the file set and
# whose disk reads are throttled, so that Zipf-popular files hit and the
# rest miss; then an open-loop constant-rate load (serve/pace.py) on the
# same server.
#
#   serve/bench.sh [--quick] [--reps N] [--conns "8 32"] [--duration S]
#                  [--warmup S] [--mem-mib M] [--iops N] [--files N]
#                  [--zipf S] [--threads N]
#                  [--modes "pool adaptive io_uring sendfile nginx-https nginx-aio nginx-http"]
#                  [--rate R] [--open-duration S] [--open-conns N]
#                  [--data DIR] [--out DIR] [--bin PATH] [--label TEXT]
#                  [--disk NAME | --no-io-limit] [--no-report] [--data-only]
#                  [--probe-root DIR] [--nginx PATH] [--estimate]
#
# Must run as root (cgroups). pool, adaptive and io_uring serve HTTPS (the
# case libnowait is for: the server must read the bytes to encrypt them);
# sendfile serves plain HTTP, the zero-copy reference. The nginx modes are
# Debian's nginx (harness/deps.sh installs it), configured here in a
# directory of the run's own and started as this script's own process in
# the same cgroup (never a system-wide nginx; --nginx names the binary,
# default the one on PATH): nginx-https serves HTTPS
# with reads in its event loop (sendfile off: no kTLS), nginx-aio HTTPS
# with `aio threads` (a pool of --threads threads, as nowait-serve's), and
# nginx-http plain HTTP with sendfile; one worker process (nowait-serve
# runs one event loop) with 1024 connections (as --max-conns), reads of the
# same 64 KiB (output_buffers 1 64k),
# keep-alive without a request limit, a buffered access log (nowait-serve
# writes its --log). Modes run interleaved within each repetition, in an
# order rotated by one each repetition, so a ratio compares runs minutes
# apart, not a mode's first run with another's last. Writes
# build/serve-bench/{bench.txt,bench.json,bench.png} and per-run logs.
#
# Each run: evict every file, start the server, a closed-loop warm-up
# (wrk), the closed-loop measurement (wrk, --duration), then, when --rate
# is not 0, the open-loop one on the same server: serve/pace.py sends
# --rate requests a second for --open-duration seconds (default
# --duration) over at most --open-conns connections (default: the run's
# connection count), latency from the time each request was due (see
# serve/pace.py for the coordinated-omission caveat), each request classed
# hit or miss by the client's cachestat(2) of the file just before it is
# sent. CPU per request: utime+stime (/proc/PID/stat) of every process in
# the server's cgroup (nginx: master and worker) over each window.
#
# --data DIR: the file set's directory (default OUT/data; made when it does
# not hold --files files). --out DIR: where runs and tables go (default
# build/serve-bench). --bin: the server (default build/serve/nowait-serve).
# --label TEXT: what the data sits on, for the tables' header. --disk NAME:
# the block device whose reads the cgroup throttles (default the one under
# --data; needed where that is not a disk, e.g. overlayfs). --no-io-limit:
# no read throttle in the cgroup, only its memory limit: the disk is slowed
# elsewhere (harness/serve-bench-guest.sh throttles the guest's virtio disk
# in QEMU). --no-report: leave OUT/runs and OUT/setup.txt for
# serve/bench-report.py to read later (no gnuplot needed). --data-only:
# make the file set and exit. --probe-root DIR: passed to the server, which
# asks the page cache about the same path below DIR (overlayfs: the lower
# layer, since an overlay file's own mapping never holds pages). --estimate: print the seconds the runs take
# (with 10 s a run to start, evict and stop, 60 s to make the file set: the
# figures of a TCG guest) and exit.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

top=$(cd "$(dirname "$0")/.." && pwd)
out=$top/build/serve-bench
bin=$top/build/serve/nowait-serve
reps=3 conns="8 32" duration=20 warmup=10 mem_mib=128 iops=200 nfiles=1200 zipf=1.0 threads=4
modes="pool adaptive io_uring sendfile nginx-https nginx-aio nginx-http"
rate=40 open_duration="" open_conns="" nginx=nginx
data="" label="" disk="" io_limit=1 report=1 data_only=0 estimate=0 probe=()
while [ $# -gt 0 ]; do
	case $1 in
	--quick) reps=1 conns=16 duration=8 warmup=4 ;;
	--reps) reps=$2; shift ;;
	--conns) conns=$2; shift ;;
	--duration) duration=$2; shift ;;
	--warmup) warmup=$2; shift ;;
	--mem-mib) mem_mib=$2; shift ;;
	--iops) iops=$2; shift ;;
	--files) nfiles=$2; shift ;;
	--zipf) zipf=$2; shift ;;
	--threads) threads=$2; shift ;;
	--modes) modes=$2; shift ;;
	--rate) rate=$2; shift ;;
	--open-duration) open_duration=$2; shift ;;
	--open-conns) open_conns=$2; shift ;;
	--nginx) nginx=$2; shift ;;
	--data) data=$2; shift ;;
	--out) out=$2; shift ;;
	--bin) bin=$2; shift ;;
	--label) label=$2; shift ;;
	--disk) disk=$2; shift ;;
	--no-io-limit) io_limit=0 ;;
	--no-report) report=0 ;;
	--data-only) data_only=1 ;;
	--estimate) estimate=1 ;;
	--probe-root) probe=(--probe-root "$2"); shift ;;
	*) sed -n '2,/^set /{/^set /d;s/^# \{0,1\}//p}' "$0" >&2; exit 2 ;;
	esac
	shift
done
open_duration=${open_duration:-$duration}
[ "$rate" != 0 ] || open_duration=0
if [ "$estimate" = 1 ]; then
	echo $((reps * $(wc -w <<<"$conns") * $(wc -w <<<"$modes") * (warmup + duration + open_duration + 10) + 60))
	exit 0
fi
[ "$(id -u)" = 0 ] || { echo "serve-bench: needs root for the cgroup limits" >&2; exit 1; }
tools="wrk openssl python3"
case " $modes " in *" nginx-"*) tools+=" $nginx" ;; esac
[ "$report" = 0 ] || [ "$data_only" = 1 ] || tools+=" gnuplot"
for tool in $tools; do
	command -v $tool >/dev/null || { echo "serve-bench: no $tool (harness/deps.sh installs it)" >&2; exit 1; }
done
# Absolute: nginx resolves relative paths in its configuration against its -p prefix.
out=$(realpath -m "$out")
data=$(realpath -m "${data:-$out/data}")
runs=$out/runs
mkdir -p "$data"

# ---- the file set: sizes log-uniform in [16 KiB, 1 MiB], random bytes ----
# Popularity follows the file number (f00000 is the most popular), sizes
# are drawn independently, so popular files are not systematically small.
if [ "$(cat "$data/.made" 2>/dev/null)" != "$nfiles" ]; then
	echo "serve-bench: creating $nfiles files in $data" >&2
	rm -f "$data"/f*
	python3 - "$data" "$nfiles" <<'EOF'
import os, random, sys
d, n = sys.argv[1], int(sys.argv[2])
rng = random.Random(11)
for i in range(n):
    size = int(round(16384 * 64 ** rng.random()))
    with open(f"{d}/f{i:05d}", "wb") as f:
        f.write(os.urandom(size))
EOF
	# Written back now, so that the eviction before each run drops every page.
	sync
	echo "$nfiles" >"$data/.made"
fi
[ "$data_only" = 0 ] || exit 0
mkdir -p "$runs"
rm -f "$runs"/*
total_mib=$(du -sm "$data" | cut -f1)

openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 \
	-subj /CN=localhost -addext subjectAltName=IP:127.0.0.1 \
	-keyout "$out/key.pem" -out "$out/cert.pem" 2>/dev/null

# ---- cgroups: page cache limit and read IOPS throttle for the server ----
# cgroup v2 with memory (and io, for the throttle) where offered, else v1
# memory + blkio (this project's Firecracker host mounts v1 for both; see
# bench/README.md).
majmin="" io_what="no read limit in the cgroup"
if [ "$io_limit" = 1 ]; then
	if [ -z "$disk" ]; then
		source=$(findmnt -no SOURCE -T "$data")
		disk=$(lsblk -no PKNAME "$source" 2>/dev/null || true)
		disk=${disk:-$(basename "$source")}
	fi
	[ -e "/sys/class/block/$disk/dev" ] ||
		{ echo "serve-bench: $data is not on a block device ($disk): name one with --disk, or --no-io-limit" >&2; exit 1; }
	majmin=$(cat "/sys/class/block/$disk/dev")
	io_what="$iops read IOPS on $disk"
fi
name=nowait-serve-bench.$$
if grep -qw memory /sys/fs/cgroup/cgroup.controllers 2>/dev/null &&
	{ [ "$io_limit" = 0 ] || grep -qw io /sys/fs/cgroup/cgroup.controllers; }; then
	echo "+memory" >/sys/fs/cgroup/cgroup.subtree_control
	cg_dirs=(/sys/fs/cgroup/$name)
	mkdir "${cg_dirs[0]}"
	echo $((mem_mib << 20)) >"${cg_dirs[0]}/memory.max"
	cg_kind="v2 memory.max"
	if [ "$io_limit" = 1 ]; then
		echo "+io" >/sys/fs/cgroup/cgroup.subtree_control
		# io.max is blk-throttle's file: absent without CONFIG_BLK_DEV_THROTTLING.
		echo "$majmin riops=$iops" >"${cg_dirs[0]}/io.max" ||
			{ rmdir "${cg_dirs[0]}"; echo "serve-bench: no io.max in the cgroup: use --no-io-limit with a disk slowed elsewhere" >&2; exit 1; }
		cg_kind+=" + io.max riops"
	fi
else
	cg_dirs=(/sys/fs/cgroup/memory/$name)
	[ "$io_limit" = 0 ] || cg_dirs+=(/sys/fs/cgroup/blkio/$name)
	mkdir "${cg_dirs[@]}"
	echo $((mem_mib << 20)) >"${cg_dirs[0]}/memory.limit_in_bytes"
	cg_kind="v1 memory.limit_in_bytes"
	if [ "$io_limit" = 1 ]; then
		echo "$majmin $iops" >"${cg_dirs[1]}/blkio.throttle.read_iops_device"
		cg_kind+=" + blkio.throttle.read_iops_device"
	fi
fi
server=
ngx_dir=$(mktemp -d /tmp/nowait-serve-bench-nginx.XXXXXX)
cleanup() {
	[ -n "$server" ] && kill "$server" 2>/dev/null && wait "$server" 2>/dev/null
	for d in "${cg_dirs[@]}"; do rmdir "$d" 2>/dev/null || true; done
	rm -rf "$ngx_dir"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# Every run starts with none of the files cached, anywhere.
evict() {
	python3 - "$data" <<'EOF'
import os, sys
for name in os.listdir(sys.argv[1]):
    fd = os.open(os.path.join(sys.argv[1], name), os.O_RDONLY)
    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    os.close(fd)
EOF
}

# utime + stime of every process in the server's cgroup, in clock ticks
# (a process's own, all its threads included).
cpu_ticks() {
	local pid sum=0 t
	for pid in $(cat "${cg_dirs[0]}/cgroup.procs"); do
		t=$(awk '{ print $14 + $15 }' "/proc/$pid/stat" 2>/dev/null) && sum=$((sum + t))
	done
	echo "$sum"
}

free_port() {
	python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# nginx's configuration for MODE on PORT, in the run's own directory: no
# file of the system's nginx is read or written (-p, -c, -e, the temp paths).
nginx_conf() {	# MODE PORT ACCESSLOG
	local mode=$1 port=$2 listen ssl="" io
	case $mode in
	nginx-https) listen="$port ssl" io="sendfile off; aio off;" ;;
	nginx-aio) listen="$port ssl" io="sendfile off; aio threads=nowait;" ;;
	nginx-http) listen=$port io="sendfile on; aio off;" ;;
	esac
	[ "$mode" = nginx-http ] ||
		ssl="ssl_certificate $out/cert.pem; ssl_certificate_key $out/key.pem; ssl_protocols TLSv1.2 TLSv1.3;"
	cat <<EOF
worker_processes 1;
daemon off;
master_process on;
user root;
pid $ngx_dir/nginx.pid;
error_log $ngx_dir/error.log warn;
thread_pool nowait threads=$threads;
events { worker_connections 1024; }
http {
	default_type application/octet-stream;
	log_format bench '\$msec \$status \$body_bytes_sent \$request_time "\$request"';
	access_log $3 bench buffer=64k flush=1s;
	client_body_temp_path $ngx_dir/client_body;
	proxy_temp_path $ngx_dir/proxy;
	fastcgi_temp_path $ngx_dir/fastcgi;
	uwsgi_temp_path $ngx_dir/uwsgi;
	scgi_temp_path $ngx_dir/scgi;
	keepalive_requests 1000000000;
	keepalive_timeout 30s;
	output_buffers 1 64k;
	server {
		listen 127.0.0.1:$listen;
		$ssl
		root $data;
		$io
		location / { }
	}
}
EOF
}

# Waits until something accepts connections on 127.0.0.1:PORT (10 s).
wait_listening() {	# PORT
	for _ in $(seq 100); do
		(exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0
		sleep 0.1
	done
	return 1
}

run_one() {	# REP MODE CONNS
	local rep=$1 mode=$2 c=$3 scheme=https tls procs=() port t0 t1 c0 c1 tag
	local open="- - -" o0 o1 oc0 oc1 what
	tag=$mode-c$c-r$rep
	case $mode in sendfile | nginx-http) scheme=http ;; esac
	tls=(--cert "$out/cert.pem" --key "$out/key.pem")
	[ "$scheme" = http ] && tls=()
	for d in "${cg_dirs[@]}"; do procs+=("$d/cgroup.procs"); done
	evict
	# The shell joins the cgroups, then becomes the server.
	if [ "${mode#nginx-}" != "$mode" ]; then
		port=$(free_port)
		nginx_conf "$mode" "$port" "$runs/$tag.log" >"$ngx_dir/nginx.conf"
		cp "$ngx_dir/nginx.conf" "$runs/$tag.nginx.conf"
		CG_PROCS="${procs[*]}" sh -c 'for p in $CG_PROCS; do echo $$ >"$p"; done; exec "$@"' sh \
			nice -n 19 "$nginx" -p "$ngx_dir" -c "$ngx_dir/nginx.conf" -e "$ngx_dir/error.log" \
			>"$runs/$tag.out" 2>"$runs/$tag.err" &
		server=$!
		wait_listening "$port" ||
			{ echo "serve-bench: nginx did not start: $(cat "$runs/$tag.err" "$ngx_dir/error.log")" >&2; exit 1; }
	else
		CG_PROCS="${procs[*]}" sh -c 'for p in $CG_PROCS; do echo $$ >"$p"; done; exec "$@"' sh \
			nice -n 19 "$bin" --root "$data" --port 0 --mode "$mode" --threads "$threads" "${tls[@]}" "${probe[@]}" \
			--log "$runs/$tag.log" >"$runs/$tag.out" 2>"$runs/$tag.err" &
		server=$!
		port=$(listening_port "$runs/$tag.out") ||
			{ echo "serve-bench: server did not start: $(cat "$runs/$tag.err")" >&2; exit 1; }
	fi
	local url=$scheme://127.0.0.1:$port/
	nice -n 19 wrk -t2 -c"$c" -d"${warmup}s" --timeout 30s -s "$top/serve/zipf.lua" "$url" -- "$nfiles" "$zipf" \
		>"$runs/$tag.warmup" 2>&1
	t0=$(date +%s%N) c0=$(cpu_ticks)
	nice -n 19 wrk -t2 -c"$c" -d"${duration}s" --timeout 30s -s "$top/serve/zipf.lua" "$url" -- "$nfiles" "$zipf" \
		>"$runs/$tag.wrk" 2>&1
	t1=$(date +%s%N) c1=$(cpu_ticks)
	what=$(grep -h 'Requests/sec' "$runs/$tag.wrk" | tr -s ' ')
	if [ "$rate" != 0 ]; then
		o0=$(date +%s%N) oc0=$(cpu_ticks)
		nice -n 19 python3 "$top/serve/pace.py" "$url" --rate "$rate" --duration "$open_duration" \
			--conns "${open_conns:-$c}" --files "$nfiles" --zipf "$zipf" --probe "$probe_dir" \
			--log "$runs/$tag.pace" >"$runs/$tag.open" 2>"$runs/$tag.open-err" ||
			echo "serve-bench: pace.py failed: $(tail -3 "$runs/$tag.open-err")" >&2
		o1=$(date +%s%N) oc1=$(cpu_ticks)
		open="$o0 $o1 $(((oc1 - oc0) * 1000 / $(getconf CLK_TCK)))"
		what+="; open loop $rate/s: $(python3 -c 'import json, sys
try:
    r = json.load(open(sys.argv[1]))
    print("p99 %.0f us, hit p99 %s us" % (r["p99_us"] or 0, "%.0f" % r["hit_p99_us"] if r["hit_p99_us"] else "-"))
except Exception as e:
    print("no result (%s)" % e)' "$runs/$tag.open")"
	fi
	kill -TERM "$server"
	wait "$server" || true
	server=
	echo "$rep $mode $c $t0 $t1 $(((c1 - c0) * 1000 / $(getconf CLK_TCK))) $open" >>"$runs/index"
	printf 'serve-bench: rep %s %-11s c=%-3s %s\n' "$rep" "$mode" "$c" "$what" >&2
}

probe_dir=${probe[1]:-$data}
echo "serve-bench: $nfiles files, $total_mib MiB${label:+ on $label}; cgroup $cg_kind: ${mem_mib} MiB, $io_what" >&2
read -ra mode_list <<<"$modes"
for rep in $(seq "$reps"); do
	for c in $conns; do
		# Rotated by one each repetition: no mode always runs first or last.
		r=$(((rep - 1) % ${#mode_list[@]}))
		for mode in "${mode_list[@]:r}" "${mode_list[@]:0:r}"; do run_one "$rep" "$mode" "$c"; done
	done
done
setup="$nfiles files ($total_mib MiB, 16 KiB-1 MiB log-uniform)${label:+ on $label}, Zipf s=$zipf; server cgroup: $cg_kind, page cache+memory ${mem_mib} MiB, $io_what; libnowait pool and nginx thread_pool $threads threads; wrk -t2 --timeout 30s, warm-up ${warmup}s, measured ${duration}s; open loop $([ "$rate" = 0 ] && echo "off" || echo "serve/pace.py $rate req/s for ${open_duration}s on at most ${open_conns:-$conns} connections"); $reps repetitions, modes interleaved; pool/adaptive/io_uring/nginx-https/nginx-aio over HTTPS, sendfile/nginx-http over HTTP; $("$nginx" -v 2>&1 | sed 's/.*version: //'); $(nproc) CPUs, kernel $(uname -r)"
echo "$setup" >"$out/setup.txt"
[ "$report" = 1 ] || exit 0
python3 "$top/serve/bench-report.py" --runs "$runs" --out "$out" --setup "$setup"
cat "$out/bench.txt"
