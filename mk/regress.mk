# make regress: the field's suites (fstests, LTP) on the stock and the patched
# kernel in a Debian guest; long (about two hours under TCG), not part of make check.
# make regress-debug: the same on both trees built with the debug config (KASAN,
# lockdep); results in build/regress-debug/.
# REGRESS_ARGS passes options to harness/regress.sh (e.g. --budget 1800 --jobs 2).
.PHONY: regress regress-debug
regress:
	harness/regress.sh $(REGRESS_ARGS)
regress-debug:
	harness/regress.sh --debug $(REGRESS_ARGS)
