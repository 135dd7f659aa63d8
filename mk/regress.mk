# make regress: the field's suites (fstests, LTP) on the stock and the patched
# kernel in a Debian guest; long (about two hours under TCG), not part of make check.
# REGRESS_ARGS passes options to harness/regress.sh (e.g. --budget 1800 --jobs 2).
.PHONY: regress
regress:
	harness/regress.sh $(REGRESS_ARGS)
