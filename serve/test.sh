#!/usr/bin/env bash
# nowait-serve's tests with real clients: curl over HTTP and HTTPS in every
# mode (sha256 of whole files and of ranges, keep-alive, HEAD), requests
# that try to leave the document root, malformed requests over a raw
# socket, and clients that stall. Prints "ok - ..." / "not ok - ..." lines
# and a TAP plan at the end; exits 1 if any failed.
#
#   serve/test.sh [path/to/nowait-serve]
#
# No timing is asserted: the waits below are liveness bounds, generous so
# that a loaded machine passes as an idle one does.
set -uo pipefail
. "$(dirname "$0")/lib.sh"

bin=${1:-$(dirname "$0")/../build/serve/nowait-serve}
work=$(mktemp -d /tmp/nowait-serve-test.XXXXXX)
tests=0 failed=0 server_pid=
cleanup() {
	[ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null
	exec 3>&- 4>&- 5>&- 2>/dev/null
	rm -rf "$work"
}
trap cleanup EXIT

check() {	# check DESCRIPTION COMMAND...
	local what=$1
	shift
	tests=$((tests + 1))
	if "$@"; then
		echo "ok - $what"
	else
		echo "not ok - $what"
		failed=$((failed + 1))
	fi
}

# ---- the document root and the files outside it ----
root=$work/root
mkdir -p "$root/sub" "$work/outside"
echo "secret outside the root" >"$work/outside/secret"
sizes=(0 1 4095 4096 65535 65536 65537 300001 1048589)
for s in "${sizes[@]}"; do head -c "$s" /dev/urandom >"$root/f$s"; done
cp "$root/f4096" "$root/sub/name with space"
echo '<p>hello</p>' >"$root/page.HTML"
echo 'p { }' >"$root/style.css"
touch -d '2020-02-03 04:05:06 UTC' "$root/f4096"
ln -s ../f65536 "$root/sub/link-inside"
ln -s "$work/outside/secret" "$root/link-absolute-out"
ln -s ../outside/secret "$root/link-relative-out"
ln -s ../../outside/secret "$root/sub/link-up-out"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 \
	-subj /CN=localhost -addext subjectAltName=IP:127.0.0.1,IP:::1,DNS:localhost -keyout "$work/key.pem" -out "$work/cert.pem" 2>/dev/null ||
	{ echo "not ok - openssl req made no certificate"; exit 1; }

sha() { sha256sum | cut -d' ' -f1; }
part() { tail -c +$(($2 + 1)) "$1" | head -c $(($3 - $2 + 1)); }	# FILE FIRST LAST
declare -A want
for s in "${sizes[@]}"; do want[f$s]=$(sha <"$root/f$s"); done

start_server() {	# MODE SCHEME [options]
	local mode=$1 scheme=$2 tls=()
	shift 2
	[ "$scheme" = https ] && tls=(--cert "$work/cert.pem" --key "$work/key.pem")
	: >"$work/out"
	"$bin" --root "$root" --port 0 --mode "$mode" --log "$work/log" "${tls[@]}" "$@" \
		>"$work/out" 2>"$work/err" &
	server_pid=$!
	port=$(listening_port "$work/out") || return 1
	base=$scheme://127.0.0.1:$port
	curl_opts=(-s --max-time 60 --cacert "$work/cert.pem" --path-as-is)
}

stop_server() {	# exit status 0, and nothing from the sanitizers
	kill -TERM "$server_pid" && wait "$server_pid"
	local rc=$?
	server_pid=
	[ $rc -eq 0 ] && ! grep -q 'Sanitizer\|runtime error' "$work/err"
}

# ---- curl: contents, ranges, keep-alive ----
whole_files_match() {
	local args=() s
	for s in "${sizes[@]}"; do args+=("$base/f$s" -o "$work/got-$s"); done
	# One invocation: curl reuses the connection, so this is keep-alive too.
	curl "${curl_opts[@]}" -w '%{http_code} %{num_connects}\n' "${args[@]}" >"$work/codes" || return 1
	[ "$(sort -u "$work/codes" | tr '\n' ' ')" = "200 0 200 1 " ] || return 1
	for s in "${sizes[@]}"; do
		[ "$(sha <"$work/got-$s")" = "${want[f$s]}" ] || return 1
	done
}

# The ranges asked for, as "size first last" with their sha256, computed
# once for every run below.
range_specs=() range_wants=() range_shas=()
for s in "${sizes[@]}"; do
	[ "$s" -gt 0 ] || continue
	for spec in "0-0" "1-$((s / 2))" "$((s / 3))-" "-1000" "-$((s + 5))" "0-$((s + 100))" "$((s - 1))-$((s - 1))"; do
		case $spec in
		-*) first=$((s > ${spec#-} ? s - ${spec#-} : 0)) last=$((s - 1)) ;;
		*-) first=${spec%-} last=$((s - 1)) ;;
		*) first=${spec%-*} last=${spec#*-} ;;
		esac
		[ "$last" -lt "$s" ] || last=$((s - 1))
		[ "$first" -le "$last" ] || continue
		range_specs+=("$s $spec")
		range_wants+=("$s $first $last")
		range_shas+=("$(part "$root/f$s" "$first" "$last" | sha)")
	done
done

ranges_match() {
	local i s spec first last args=() got headers
	for i in "${!range_specs[@]}"; do
		read -r s spec <<<"${range_specs[$i]}"
		[ "$i" -gt 0 ] && args+=(--next)
		args+=("${curl_opts[@]}" -r "$spec" -D "$work/headers-$i" -o "$work/range-$i" "$base/f$s")
	done
	# One curl for all: fast, and many requests on one keep-alive connection.
	curl "${args[@]}" || return 1
	# Few processes per check: they dominate the run time on a busy machine.
	mapfile -t got < <(for i in "${!range_specs[@]}"; do echo "$work/range-$i"; done |
		xargs sha256sum | cut -d' ' -f1)
	for i in "${!range_specs[@]}"; do
		read -r s first last <<<"${range_wants[$i]}"
		headers=$(tr -d '\r' <"$work/headers-$i")
		[[ $headers == "HTTP/1.1 206 "* ]] &&
			[[ ${headers,,} == *"content-range: bytes $first-$last/$s"* ]] &&
			[ "${got[$i]}" = "${range_shas[$i]}" ] ||
			{ echo "# bytes $first-$last of f$s" >&2; return 1; }
	done
}

status_of() {	# URL [curl options]: the status code
	local url=$1
	shift
	curl "${curl_opts[@]}" -o "$work/body" -w '%{http_code}' "$@" "$url"
}

unsatisfiable_range_is_416() {
	[ "$(status_of "$base/f65536" -r 65536- -D "$work/headers")" = 416 ] &&
		grep -qi '^Content-Range: bytes \*/65536' "$work/headers" &&
		[ "$(status_of "$base/f0" -r -5)" = 416 ] &&
		[ "$(status_of "$base/f4096" -r 9999-10000)" = 416 ]
}

head_has_length() {
	curl "${curl_opts[@]}" -I "$base/f300001" | tr -d '\r' | grep -qx 'Content-Length: 300001'
}

links_inside_and_odd_names_work() {
	[ "$(curl "${curl_opts[@]}" "$base/sub/link-inside" | sha)" = "${want[f65536]}" ] &&
		[ "$(curl "${curl_opts[@]}" "$base/sub/name%20with%20space" | sha)" = "${want[f4096]}" ] &&
		[ "$(curl "${curl_opts[@]}" "$base//sub/./link-inside?query=1" | sha)" = "${want[f65536]}" ]
}

# A refusal is a 4xx whose body is not the secret.
refused() {	# PATH EXPECTED_STATUS
	local code
	code=$(status_of "$base$1")
	[ "$code" = "$2" ] && ! grep -q secret "$work/body" ||
		{ echo "# $1: $code, wanted $2" >&2; return 1; }
}

paths_outside_refused() {
	refused /../outside/secret 403 &&
		refused /sub/../../outside/secret 403 &&
		refused /%2e%2e/outside/secret 403 &&
		refused /%2E%2E%2Foutside%2Fsecret 403 &&
		refused /sub/%2e%2e/%2e%2e/outside/secret 403 &&
		refused /.%2e/outside/secret 403 &&
		refused /link-absolute-out 403 &&
		refused /link-relative-out 403 &&
		refused /sub/link-up-out 403 &&
		refused /f4096%00.txt 400 &&
		refused /%00 400 &&
		refused /bad%zzescape 400 &&
		refused /missing 404 &&
		refused /sub 403 &&
		refused /sub/ 403
}

# ---- raw requests (plain HTTP only: the parser is the same under TLS) ----
raw_status() {	# REQUEST-BYTES (printf format): the status line's code
	local line
	exec 3<>"/dev/tcp/127.0.0.1/$port" || return 1
	# shellcheck disable=SC2059 # the request is the format
	printf "$1" >&3
	IFS= read -r -t 30 line <&3
	exec 3>&-
	line=${line#HTTP/1.1 }
	echo "${line%% *}"
}

expect_raw() {	# REQUEST STATUS
	local got
	got=$(raw_status "$1")
	[ "$got" = "$2" ] || { echo "# $(printf %q "${1:0:60}"): got '$got', wanted $2" >&2; return 1; }
}

malformed_requests_refused() {
	local big
	big=$(head -c 9000 /dev/zero | tr '\0' a)
	expect_raw 'GARBAGE\r\n\r\n' 400 &&
		expect_raw 'GET /f1 HTTP/1.1\r\n\r\n' 400 &&
		expect_raw 'GET /f1 HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n' 400 &&
		expect_raw 'GET /f1 HTTP/1.1\r\nHost: a\r\nno colon here\r\n\r\n' 400 &&
		expect_raw 'GET /f1 HTTP/1.1\r\nHost: a\r\n folded: header\r\n\r\n' 400 &&
		expect_raw 'GET /f1 HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\nhello' 400 &&
		expect_raw 'GET /f1 HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n' 400 &&
		expect_raw 'GET /f1\0x HTTP/1.1\r\nHost: a\r\n\r\n' 400 &&
		expect_raw 'GET http://a/f1 HTTP/1.1\r\nHost: a\r\n\r\n' 400 &&
		expect_raw 'GET /f1 HTTP/1.1 extra\r\nHost: a\r\n\r\n' 400 &&
		expect_raw 'GET /f1 HTTP/2.0\r\nHost: a\r\n\r\n' 505 &&
		expect_raw "GET /$big HTTP/1.1\r\nHost: a\r\n\r\n" 431 &&
		expect_raw 'POST /f1 HTTP/1.1\r\nHost: a\r\nContent-Length: 0\r\n\r\n' 405 &&
		expect_raw 'DELETE /f1 HTTP/1.1\r\nHost: a\r\n\r\n' 405 &&
		expect_raw 'BREW /f1 HTTP/1.1\r\nHost: a\r\n\r\n' 501 &&
		expect_raw 'GET /f1 HTTP/1.0\r\n\r\n' 200 &&
		expect_raw '\r\nGET /f1 HTTP/1.1\r\nHost: a\r\n\r\n' 200
}

# A request written a byte at a time (each its own segment, with
# TCP_NODELAY's help on our side): the header end is found however it is
# split, by the incremental scan.
byte_at_a_time_answered() {
	local req=$'\r\n\r\nGET /f1 HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n' i line
	exec 3<>"/dev/tcp/127.0.0.1/$port" || return 1
	for ((i = 0; i < ${#req}; i++)); do
		printf '%s' "${req:i:1}" >&3
		sleep 0.01
	done
	IFS= read -r -t 30 line <&3
	exec 3>&-
	[ "${line%$'\r'}" = "HTTP/1.1 200 OK" ]
}

# HTTP/1.0 with Connection: keep-alive gets it back and the connection
# stays open for a second request; without it, Connection: close.
http10_keep_alive() {
	local out
	exec 3<>"/dev/tcp/127.0.0.1/$port" || return 1
	printf 'GET /f1 HTTP/1.0\r\nConnection: keep-alive\r\n\r\nHEAD /f1 HTTP/1.0\r\n\r\n' >&3
	# The body ends without a newline: match anywhere in the line.
	out=$(timeout 30 cat <&3 | tr -d '\r' | grep -ao 'HTTP/1.1 200 OK\|^Connection: [a-z-]*')
	exec 3>&-
	[ "$out" = $'HTTP/1.1 200 OK\nConnection: keep-alive\nHTTP/1.1 200 OK\nConnection: close' ] ||
		{ echo "# got: $(tr '\n' '|' <<<"$out")" >&2; return 1; }
}

pipelined_requests_answered() {
	local n
	exec 3<>"/dev/tcp/127.0.0.1/$port" || return 1
	printf 'GET /f1 HTTP/1.1\r\nHost: a\r\n\r\nHEAD /f4096 HTTP/1.1\r\nHost: a\r\n\r\nGET /f1 HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n' >&3
	# The bodies end without a newline: count status lines anywhere.
	n=$(timeout 30 cat <&3 | grep -ao 'HTTP/1.1 200 OK' | wc -l)
	exec 3>&-
	[ "$n" = 3 ]
}

# A client that sent half a request, and one that asked for a big file and
# reads nothing, hold their connections while another client is served.
stalled_clients_do_not_stall_others() {
	local line ok=0
	exec 4<>"/dev/tcp/127.0.0.1/$port" || return 1
	exec 5<>"/dev/tcp/127.0.0.1/$port" || return 1
	if [ "$scheme" = http ]; then
		printf 'GET /f1 HTTP/1.1\r\nHo' >&4
		printf 'GET /f1048589 HTTP/1.1\r\nHost: a\r\n\r\n' >&5
	else
		printf '\026\003\001' >&4	# the start of a TLS record, then nothing
		head -c 1024 /dev/urandom >&5	# not TLS at all
	fi
	[ "$(curl "${curl_opts[@]}" "$base/f1048589" | sha)" = "${want[f1048589]}" ] && ok=1
	if [ "$scheme" = http ] && [ $ok = 1 ]; then
		printf 'st: a\r\n\r\n' >&4	# the stalled request completes and is answered
		IFS= read -r -t 30 line <&4
		[ "${line%$'\r'}" = "HTTP/1.1 200 OK" ] || ok=0
	fi
	exec 4>&- 5>&-
	[ $ok = 1 ]
}

header_of() {	# NAME: the value of a header in $work/headers
	tr -d '\r' <"$work/headers" | sed -n "s/^$1: //Ip" | head -n 1
}

# Date, Last-Modified, ETag and the media type; If-None-Match and
# If-Modified-Since answer 304 with no body when the file is unchanged.
validators_and_types() {
	local etag modified
	[ "$(status_of "$base/f4096" -D "$work/headers")" = 200 ] || return 1
	etag=$(header_of ETag) modified=$(header_of Last-Modified)
	[ "$modified" = "Mon, 03 Feb 2020 04:05:06 GMT" ] &&
		[[ $etag == '"'*'"' ]] &&
		[[ $(header_of Date) == ???,\ ??\ ???\ ????\ ??:??:??\ GMT ]] &&
		[ "$(header_of Content-Type)" = application/octet-stream ] ||
		{ echo "# headers: $(tr -d '\r' <"$work/headers" | tr '\n' '|')" >&2; return 1; }
	rm -f "$work/body"	# curl writes no file for an empty body
	[ "$(status_of "$base/f4096" -H "If-None-Match: $etag")" = 304 ] && [ ! -s "$work/body" ] &&
		[ "$(status_of "$base/f4096" -H "If-None-Match: \"x\", W/$etag")" = 304 ] &&
		[ "$(status_of "$base/f4096" -H 'If-None-Match: "other"')" = 200 ] &&
		[ "$(status_of "$base/f4096" -H "If-Modified-Since: $modified")" = 304 ] &&
		[ "$(status_of "$base/f4096" -H 'If-Modified-Since: Sun, 02 Feb 2020 00:00:00 GMT')" = 200 ] &&
		[ "$(status_of "$base/f4096" -H 'If-None-Match: "other"' -H "If-Modified-Since: $modified")" = 200 ] ||
		{ echo "# conditional requests" >&2; return 1; }
	status_of "$base/page.HTML" -D "$work/headers" >/dev/null && [ "$(header_of Content-Type)" = text/html ] &&
		status_of "$base/style.css" -D "$work/headers" >/dev/null && [ "$(header_of Content-Type)" = text/css ] ||
		{ echo "# content types" >&2; return 1; }
}

# Plain HTTP sent to the TLS port gets a plain 400, not a reset.
plain_http_to_tls_port_400() {
	[ "$(curl -s --max-time 20 -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/f1")" = 400 ]
}

log_says() {	# MODE: every request logged; pool never inline, adaptive inline for cached files
	local lines inline
	kill -0 "$server_pid" || return 1
	lines=$(grep -vc '^#' "$work/log")
	inline=$(grep -v '^#' "$work/log" | awk '$9 == "inline"' | wc -l)
	[ "$lines" -gt 0 ] || return 1
	case $1 in
	pool) [ "$inline" = 0 ] ;;
	adaptive | io_uring) [ "$inline" -gt 0 ] ;;
	sendfile) ! grep -v '^#' "$work/log" | awk '$9 == "inline" || $9 == "queued"' | grep -q . ;;
	esac
}

for run in pool:http pool:https adaptive:http adaptive:https io_uring:http io_uring:https sendfile:http; do
	mode=${run%:*} scheme=${run#*:}
	if ! start_server "$mode" "$scheme"; then
		check "$run: server starts" false
		continue
	fi
	check "$run: whole files, sha256 equal, one keep-alive connection" whole_files_match
	check "$run: ranges (first, middle, open, suffix, clamped), sha256 equal" ranges_match
	check "$run: unsatisfiable ranges get 416 with Content-Range */size" unsatisfiable_range_is_416
	check "$run: HEAD gives Content-Length and no body" head_has_length
	check "$run: symlink inside the root, %20, //, ./ and a query work" links_inside_and_odd_names_work
	check "$run: .., %2e%2e, %2f, NUL, symlinks out refused; directories 403" paths_outside_refused
	check "$run: Date, Last-Modified, ETag, content types; 304 for If-None-Match, If-Modified-Since" validators_and_types
	[ "$scheme" = https ] && check "$run: plain HTTP to the TLS port gets 400" plain_http_to_tls_port_400
	if [ "$scheme" = http ]; then
		check "$run: malformed requests 400/431/505, unknown methods 405/501" malformed_requests_refused
		check "$run: pipelined requests answered in order" pipelined_requests_answered
		check "$run: a request written a byte at a time is answered" byte_at_a_time_answered
		check "$run: HTTP/1.0 keep-alive is answered with Connection: keep-alive" http10_keep_alive
	fi
	check "$run: stalled clients do not stall another client" stalled_clients_do_not_stall_others
	check "$run: per-request log as the mode implies" log_says "$mode"
	check "$run: clean exit on SIGTERM, no sanitizer report" stop_server
	[ -s "$work/err" ] && sed 's/^/# /' "$work/err" | grep -v '^# nowait-serve: mode=' >&2
done

# Limits, in their own servers: idle connections time out, and at the
# connection cap an idle one makes room for a newcomer.
idle_connection_closed() {
	exec 3<>"/dev/tcp/127.0.0.1/$port" || return 1
	printf 'GET /f1 HTTP/1.1\r\n' >&3
	timeout 30 cat <&3 >/dev/null	# returns at EOF, when the server closed it
	local rc=$?
	exec 3>&-
	[ $rc -eq 0 ]
}
if start_server adaptive http --idle-timeout 1; then
	check "idle-timeout 1: a stalled connection is closed" idle_connection_closed
	check "idle-timeout 1: clean exit" stop_server
fi

cap_makes_room() {
	local fds=() i fd ok
	for i in 1 2 3 4 5 6; do
		exec {fd}<>"/dev/tcp/127.0.0.1/$port" || return 1
		fds+=("$fd")
	done
	[ "$(curl "${curl_opts[@]}" "$base/f65536" | sha)" = "${want[f65536]}" ]
	ok=$?
	for fd in "${fds[@]}"; do exec {fd}>&-; done
	return $ok
}
if start_server adaptive https --max-conns 3; then
	check "max-conns 3: six idle connections do not lock out a client" cap_makes_room
	check "max-conns 3: clean exit" stop_server
fi

# ---- hostile clients ----
# A FIFO under the root: asking for it must not stop the server (an open
# that waits for a writer, or a read that waits for data, in the loop).
fifo_does_not_freeze() {
	local pid ok=0
	mkfifo "$root/fifo" || return 1
	curl "${curl_opts[@]}" --max-time 20 -o /dev/null "$base/fifo" &
	pid=$!
	sleep 0.5
	[ "$(curl "${curl_opts[@]}" --max-time 10 "$base/f65536" | sha)" = "${want[f65536]}" ] &&
		[ "$(status_of "$base/fifo" --max-time 10)" = 404 ] && ok=1
	# A server stuck in open(2) would stay stuck: give it a writer.
	[ $ok = 1 ] || timeout 2 sh -c ": >'$root/fifo'"
	wait "$pid"
	rm -f "$root/fifo"
	[ $ok = 1 ]
}
if start_server adaptive https; then
	check "fifo under the root: 404, and another client is served meanwhile" fifo_does_not_freeze
	check "fifo: clean exit" stop_server
else
	check "fifo: server starts" false
fi

# Clients that send a byte of a request now and then (slowloris), each for
# at most SECONDS: started in the background, their pids in slow_pids.
slow_clients() {	# COUNT SECONDS
	local i
	slow_pids=()
	for i in $(seq "$1"); do
		(
			exec 3<>"/dev/tcp/127.0.0.1/$port" || exit 0
			# Under TLS: a handshake record of 512 bytes, then its bytes slowly.
			[ "$scheme" = https ] && printf '\026\003\001\002\000' >&3
			for _ in $(seq "$2"); do
				printf G >&3 2>/dev/null || exit 0
				sleep 1
			done
		) &
		slow_pids+=($!)
	done
}

# At the cap, slow partial requests make room for a newcomer.
slowloris_does_not_lock_out() {
	local ok=0
	slow_clients 12 15
	sleep 3
	[ "$(curl "${curl_opts[@]}" --max-time 10 "$base/f65536" | sha)" = "${want[f65536]}" ] && ok=1
	kill "${slow_pids[@]}" 2>/dev/null
	wait "${slow_pids[@]}" 2>/dev/null
	[ $ok = 1 ]
}
for scheme in http https; do
	if start_server adaptive "$scheme" --max-conns 8 --idle-timeout 60; then
		check "$scheme max-conns 8: twelve slowloris clients do not lock out a client" slowloris_does_not_lock_out
		check "$scheme slowloris: clean exit" stop_server
	else
		check "$scheme slowloris: server starts" false
	fi
done

# A header that keeps trickling in is closed at its deadline, not kept by
# every new byte as the idle timeout would be.
header_deadline_closes() {
	local start=$SECONDS rc
	exec 3<>"/dev/tcp/127.0.0.1/$port" || return 1
	( for _ in $(seq 30); do printf G >&3 2>/dev/null || exit 0; sleep 1; done ) &
	local writer=$!
	timeout 25 cat <&3 >/dev/null	# returns at EOF, when the server closed it
	rc=$?
	kill "$writer" 2>/dev/null
	wait "$writer" 2>/dev/null
	exec 3>&-
	[ $rc -eq 0 ] && [ $((SECONDS - start)) -le 20 ]
}
if start_server adaptive http --header-timeout 3 --idle-timeout 60; then
	check "header-timeout 3: a header sent a byte a second is closed" header_deadline_closes
	check "header-timeout: clean exit" stop_server
else
	check "header-timeout: server starts" false
fi

# A connection flood from one address (300 connections that send nothing,
# above the default --max-per-addr of 256) while a client on another
# address is served; the server refuses the excess.
flood_does_not_lock_out() {
	local fds=() i fd ok=1
	for i in $(seq 300); do
		exec {fd}<>"/dev/tcp/127.0.0.1/$port" || break
		fds+=("$fd")
	done
	[ "$(curl "${curl_opts[@]}" --max-time 20 --interface 127.0.0.2 "$base/f65536" | sha)" = "${want[f65536]}" ] || ok=0
	for fd in "${fds[@]}"; do exec {fd}>&-; done
	[ $ok = 1 ]
}
# The server's exit line has counter $1 at $2 or more.
exit_count_at_least() {
	local n
	n=$(sed -n "s/.* $1=\([0-9]*\).*/\1/p" "$work/err")
	[ "${n:-0}" -ge "$2" ] || { echo "# $1=${n:-none}" >&2; return 1; }
}
if start_server adaptive https; then
	check "flood: 300 idle connections from one address, another address served" flood_does_not_lock_out
	check "flood: clean exit" stop_server
	check "flood: at least the 44 connections above --max-per-addr refused" exit_count_at_least refused 44
else
	check "flood: server starts" false
fi

# Descriptor reuse under load: clients that hang up mid-body (their
# connection and file closed while reads may be in flight, the numbers
# going at once to the next connections and files) beside clients whose
# bodies must arrive intact.
fd_reuse_under_load() {
	local pids=() i ok=1
	for i in $(seq 40); do
		curl "${curl_opts[@]}" --max-time 0.0$((RANDOM % 9 + 1)) -o /dev/null "$base/f1048589" &
		pids+=($!)
		if [ $((i % 4)) = 0 ]; then
			curl "${curl_opts[@]}" -o "$work/reuse$i" "$base/f${sizes[$((i / 4 % ${#sizes[@]}))]}" &
			pids+=($!)
		fi
	done
	for i in "${pids[@]}"; do wait "$i"; done
	for i in $(seq 4 4 40); do
		[ "$(sha <"$work/reuse$i")" = "${want[f${sizes[$((i / 4 % ${#sizes[@]}))]}]}" ] ||
			{ echo "# reuse$i differs" >&2; ok=0; }
	done
	[ $ok = 1 ]
}
for run in pool:http adaptive:https io_uring:https; do
	if start_server "${run%:*}" "${run#*:}" --threads 2; then
		check "$run: clients hanging up mid-body beside intact ones (fd reuse under load)" fd_reuse_under_load
		check "$run: fd reuse under load: clean exit" stop_server
	else
		check "$run: fd reuse under load: server starts" false
	fi
done

# Connections from one address are limited; another address is served.
per_address_limit() {
	local fds=() i fd ok=1
	for i in 1 2 3 4 5 6; do
		exec {fd}<>"/dev/tcp/127.0.0.1/$port" || return 1
		fds+=("$fd")
	done
	sleep 0.5
	[ "$(curl "${curl_opts[@]}" --max-time 10 --interface 127.0.0.2 "$base/f65536" | sha)" = "${want[f65536]}" ] ||
		{ echo "# 127.0.0.2 not served" >&2; ok=0; }
	curl "${curl_opts[@]}" --max-time 10 -o /dev/null "$base/f1" &&
		{ echo "# a fifth connection from 127.0.0.1 was served" >&2; ok=0; }
	for fd in "${fds[@]}"; do exec {fd}>&-; done
	[ $ok = 1 ]
}
if start_server adaptive http --max-per-addr 4 --max-conns 100; then
	check "max-per-addr 4: a fifth connection refused, another address served" per_address_limit
	check "max-per-addr: clean exit" stop_server
else
	check "max-per-addr: server starts" false
fi

# Paths the dentry cache does not know (never looked up) are opened by the
# opener thread, not the loop: they are answered, and the exit line counts
# them.
uncached_paths_answered() {
	local i
	for i in 1 2 3; do
		[ "$(status_of "$base/never-looked-up-$RANDOM$RANDOM-$i")" = 404 ] || return 1
	done
	[ "$(curl "${curl_opts[@]}" "$base/f65536" | sha)" = "${want[f65536]}" ]
}
if start_server adaptive http; then
	check "uncached paths: 404s from the opener thread, and a file after them" uncached_paths_answered
	check "uncached paths: clean exit" stop_server
	check "uncached paths: the exit line counts three opens in the opener" exit_count_at_least opens_helper 3
else
	check "uncached paths: server starts" false
fi

# --workers 3: three loops on one port (SO_REUSEPORT); twelve parallel
# clients are answered, by more than one of them (all twelve on one of
# three has a chance of 3 in 3^12, 1 in 177147), and each exits cleanly.
workers_serve() {
	local pids=() i ok=1
	for i in $(seq 12); do
		curl "${curl_opts[@]}" -o "$work/w$i" "$base/f300001" &
		pids+=($!)
	done
	for i in "${pids[@]}"; do wait "$i" || ok=0; done
	for i in $(seq 12); do
		[ "$(sha <"$work/w$i")" = "${want[f300001]}" ] || ok=0
	done
	[ $ok = 1 ]
}
workers_shared_the_load() {
	local busy
	[ "$(grep -c '^nowait-serve: mode=adaptive worker=' "$work/err")" = 3 ] || return 1
	busy=$(grep '^nowait-serve: mode=adaptive worker=' "$work/err" | grep -vc ' requests=0 ')
	[ "$busy" -ge 2 ] || { echo "# $busy of 3 workers served" >&2; return 1; }
}
if start_server adaptive https --workers 3; then
	check "workers 3: twelve parallel clients, sha256 equal" workers_serve
	check "workers 3: clean exit" stop_server
	check "workers 3: three exit lines, at least two workers served" workers_shared_the_load
else
	check "workers 3: server starts" false
fi

# --access-log: one common-log-format line per response, appended.
access_log_lines() {
	local got
	curl "${curl_opts[@]}" -o /dev/null "$base/f4096" -o /dev/null "$base/missing" \
		-o /dev/null "$base/sub/name%20with%20space" &&
		curl "${curl_opts[@]}" -I -o /dev/null "$base/f1" &&
		[ "$(raw_status 'GARBAGE\r\n\r\n')" = 400 ]
}
access_log_says() {
	local re='^127\.0\.0\.1 - - \[[0-9]{2}/[A-Z][a-z]{2}/[0-9]{4}:[0-9]{2}:[0-9]{2}:[0-9]{2} \+0000\] '
	[ "$(wc -l <"$work/access")" = 6 ] &&
		grep -Eq "$re\"GET /f4096 HTTP/1.1\" 200 4096\$" "$work/access" &&
		grep -Eq "$re\"GET /missing HTTP/1.1\" 404 -\$" "$work/access" &&
		grep -Eq "$re\"GET /sub/name%20with%20space HTTP/1.1\" 200 4096\$" "$work/access" &&
		grep -Eq "$re\"HEAD /f1 HTTP/1.1\" 200 -\$" "$work/access" &&
		grep -Eq "$re\"-\" 400 -\$" "$work/access" &&
		grep -q '^# an older line' "$work/access" ||
		{ sed 's/^/# /' "$work/access" >&2; return 1; }
}
echo '# an older line' >"$work/access"
if start_server adaptive http --access-log "$work/access" --workers 2; then
	check "access-log: requests made" access_log_lines
	check "access-log: clean exit" stop_server
	check "access-log: a common-log-format line per response, appended" access_log_says
else
	check "access-log: server starts" false
fi

# IPv6: --bind ::1.
ipv6_served() {
	[ "$(curl "${curl_opts[@]}" --max-time 20 -g "https://[::1]:$port/f65536" | sha)" = "${want[f65536]}" ]
}
if ! ip -6 addr show dev lo 2>/dev/null | grep -q '::1'; then
	check "ipv6: loopback ::1 exists here" false
elif start_server adaptive https --bind ::1; then
	check "ipv6 --bind ::1: a file over HTTPS" ipv6_served
	check "ipv6: clean exit" stop_server
else
	check "ipv6: server starts" false
fi

# --probe-root: the log's cached column comes from the same path below
# another directory (overlayfs' lower layer in the benchmark): 1 for a file
# read there just before, -1 for one that is not there. The log is read
# after the server's exit has flushed it.
probe_root_decides_cached() {
	local got
	got=$(grep -v '^#' "$work/log" | awk '{ print $5 ":" $6 }' | tr '\n' ' ')
	[ "$got" = "65536:1 4096:-1 " ] || { echo "# log (body_bytes:cached): $got" >&2; return 1; }
}
mkdir -p "$work/probe"
cp "$root/f65536" "$work/probe/" && cat "$work/probe/f65536" >/dev/null
if start_server adaptive http --probe-root "$work/probe"; then
	curl "${curl_opts[@]}" -o /dev/null "$base/f65536" -o /dev/null "$base/f4096"
	check "probe-root: clean exit" stop_server
	check "probe-root: cached is the probe directory's" probe_root_decides_cached
fi

echo "1..$tests"
[ $failed -eq 0 ]
