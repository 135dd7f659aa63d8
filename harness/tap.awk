# Turn the guest console into one result line per test case:
#   PASS|FAIL|SKIP <program>: <case>[ # reason]
# A program whose TAP stream stops short of its plan, or that exits with a
# status other than pass (0) or skip (4, KSFT_SKIP) without reporting a
# failed case, counts as one more failure: a crash must never look like a pass.
# A failed case is followed by the diagnostics it printed and the kernel's
# messages meanwhile (its "# " and "[ time]" lines, the last 12), indented, so
# that a summary of failures says why each failed (an OOM kill says nothing in
# the test's own output).
{ sub(/\r$/, "") }
/^nowait-test: begin / { prog = $3; plan = 0; seen = 0; failed = 0; ndiag = 0; next }
/^nowait-test: end / {
	if (prog == "") next
	if (plan && seen < plan) { print "FAIL " prog ": " (plan - seen) " of " plan " cases never reported"; failed = 1 }
	if ($4 != 0 && $4 != 4 && !failed) print "FAIL " prog ": exit status " $4
	prog = ""
	next
}
prog == "" { next }
/^1\.\.[0-9]+/ { plan = substr($1, 4) + 0; next }
/^# +RUN / { ndiag = 0; next }
/^# |^\[ *[0-9]+\.[0-9]+\]/ { diag[ndiag++ % 12] = $0; next }
/^(not )?ok [0-9]+/ {
	seen++
	line = $0
	verdict = "PASS"
	if (line ~ /^not ok/) { verdict = "FAIL"; failed = 1; sub(/^not ok [0-9]+ /, "", line) }
	else sub(/^ok [0-9]+ /, "", line)
	if (line ~ /# *SKIP/) verdict = (verdict == "FAIL") ? "FAIL" : "SKIP"
	print verdict " " prog ": " line
	if (verdict == "FAIL")
		for (i = (ndiag > 12 ? ndiag - 12 : 0); i < ndiag; i++)
			print "    " diag[i % 12]
	ndiag = 0
}
END { if (prog != "") print "FAIL " prog ": never finished (guest died or timed out)" }
