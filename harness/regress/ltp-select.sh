#!/usr/bin/env bash
# LTP's runtest lines (from runtest/syscalls) of the read/write family for
# harness/regress.sh, the read side first (what the series changes), so that a
# run cut short by its time budget has covered it: preadv2*, preadv*, pread*,
# read*, readv*, readahead*, io_uring*, io_submit*, mmap* (all of them: most
# map files, the rest are cheap), then pwritev2*, pwritev*, pwrite*, write*,
# writev*, fsync*, fdatasync*, sync_file_range*, fallocate*.
# preadv2* includes preadv204, ours (harness/regress/upstream/ltp/0002-*,
# applied to the build by harness/regress-suites.sh): RWF_NOWAIT buffered
# reads on every filesystem LTP formats (hit, miss EAGAIN without sleeping,
# cached prefix, data after a blocking read and after the miss's readahead).
#
#   harness/regress/ltp-select.sh RUNTEST
runtest=${1:?usage: $0 runtest/syscalls}
for p in preadv2 preadv pread read readv readahead io_uring io_submit mmap \
	pwritev2 pwritev pwrite write writev fsync fdatasync sync_file_range fallocate; do
	# NAME is P and two digits (and _64, or _01 for variants): preadv* must not pick preadv2*.
	grep -E "^${p}[0-9]{2}(_64|_0[0-9])?[[:space:]]" "$runtest"
done
