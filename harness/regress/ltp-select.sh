#!/usr/bin/env bash
# LTP's runtest lines (from runtest/syscalls) of the read/write family for
# harness/regress.sh: read*, write*, pread*, pwrite*, readv*, writev*, preadv*,
# pwritev*, preadv2*, pwritev2*, io_uring*, io_submit*, fsync*, fdatasync*,
# sync_file_range*, fallocate*, readahead*, mmap* (the mmap tests are all
# run: most map files, and the rest are cheap).
#
#   harness/regress/ltp-select.sh RUNTEST
grep -E '^(read|write|pread|pwrite|readv|writev|preadv|pwritev|preadv2|pwritev2|io_uring|io_submit|fsync|fdatasync|sync_file_range|fallocate|readahead|mmap)[0-9_]' "${1:?usage: $0 runtest/syscalls}"
