# Systematic fault injection (issue 35): every fault point of each flagged
# read and write path failed in turn (fail-nth), the same for the deferred
# workers, and I/O errors under them; a table and build/faults.json.
# faults-debug runs it on the debug kernel, with kmemleak. FAULTS_ARGS adds
# options (--kernel BZIMAGE boots that image instead of building).
#   harness/faults.sh, kernel/tests/nowait_faults.c, docs/tests.md
.PHONY: faults faults-debug
FAULTS_ARGS ?=
faults:
	harness/faults.sh $(FAULTS_ARGS)
faults-debug:
	harness/faults.sh --debug $(FAULTS_ARGS)
