# Sourced by serve/test.sh and serve/bench.sh.

# Prints the port nowait-serve --port 0 wrote to OUTFILE (its stdout) once
# it is listening; fails after 10 s.
listening_port() {	# OUTFILE
	local port
	for _ in $(seq 100); do
		port=$(sed -n 's/.*:\([0-9]*\) mode .*/\1/p' "$1")
		[ -n "$port" ] && { echo "$port"; return 0; }
		sleep 0.1
	done
	return 1
}
