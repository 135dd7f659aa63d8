/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the crash-replay workload (nowait-replay-load) and its checker
 * (nowait-replay-check) agree on: the journal of marks, and how a file's
 * contents are summed. harness/crash-replay.sh says how they are used.
 *
 * The workload numbers every dm-log-writes mark it sends, 1, 2, 3, ...,
 * and sends them one at a time, so that the Nth mark in the log after
 * the "mkfs" mark is the journal's mark N. Each journal line is one mark:
 *
 *   P MARK ID PATH SIZE HASH MTIME_SEC MTIME_NSEC
 *       promise ID: fsync() of PATH (and of its directory) returned, and
 *       the file then had SIZE bytes summing to HASH and that mtime;
 *   D MARK ID
 *       promise ID no longer holds: its file is about to change.
 *
 * At a replayed state that holds the first N marks, every promise made
 * and not yet withdrawn by mark N must be on the disk as it was made.
 */
#ifndef NOWAIT_REPLAY_H
#define NOWAIT_REPLAY_H

#include <stdint.h>
#include <stdio.h>
#include <unistd.h>

#define NOWAIT_REPLAY_MARK_PREFIX	"nw"	/* dm mark names: nw1, nw2, ... */

/* FNV-1a, 64 bits: enough to tell a file's contents from another's. */
static inline uint64_t nowait_replay_hash(uint64_t h, const unsigned char *buf,
					  size_t len)
{
	for (size_t i = 0; i < len; i++) {
		h ^= buf[i];
		h *= 0x100000001b3ull;
	}
	return h;
}

#define NOWAIT_REPLAY_HASH_INIT	0xcbf29ce484222325ull

/* The sum of @fd's first @size bytes; false if it has fewer. */
static inline int nowait_replay_hash_fd(int fd, off_t size, uint64_t *hash)
{
	unsigned char buf[65536];
	uint64_t h = NOWAIT_REPLAY_HASH_INIT;
	off_t off = 0;

	while (off < size) {
		size_t want = size - off < (off_t)sizeof(buf) ? (size_t)(size - off) : sizeof(buf);
		ssize_t n = pread(fd, buf, want, off);

		if (n <= 0)
			return 0;
		h = nowait_replay_hash(h, buf, (size_t)n);
		off += n;
	}
	*hash = h;
	return 1;
}

#endif
