/* SPDX-License-Identifier: MIT */
/* Host plumbing for the benchmark: I/O throttling and page-cache control. */
#ifndef BENCH_SYS_H
#define BENCH_SYS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct throttle {
	bool active;		/* the process sits in our child cgroup */
	int version;		/* 1: blkio (v1), 2: io (v2) */
	unsigned maj, min;	/* whole disk the rule is set on */
	char disk[64];		/* its name, e.g. "vda" */
	char dir[1024];		/* the child cgroup */
	char home[2048];		/* cgroup.procs we came from */
	char rule[2048];		/* file the limit is written to */
};

/*
 * Puts this process (all its threads) into a new child cgroup of the I/O
 * controller, v2 "io" if available else v1 "blkio", for the whole disk that
 * holds dir. No limit is set yet. Returns 0 or -errno, with a message in
 * err (size errlen).
 */
int throttle_setup(struct throttle *t, const char *dir, char *err, size_t errlen);
/* iops 0 lifts the limit. */
int throttle_set(struct throttle *t, unsigned iops);
/* Moves the process back and removes the cgroup; async-signal-safe. */
void throttle_teardown(struct throttle *t);

/* Device facts for the report (any may be left empty/0). */
struct devinfo {
	unsigned maj, min;
	char disk[64];
	char fstype[32];
	char scheduler[128];
	unsigned read_ahead_kb;
	unsigned max_sectors_kb;
	unsigned nr_requests;	/* request slots per hardware queue: a saturated disk runs out */
};
void devinfo_get(const char *dir, struct devinfo *d);

/* Resident pages of [off, off+len) (len 0: to EOF) via mincore(2); -errno. */
long resident_pages(int fd, off_t off, off_t len, unsigned char **vecp, size_t *npages);
int evict(int fd, off_t off, off_t len);
/* sync, then echo 3 > /proc/sys/vm/drop_caches: page cache and slab. */
int drop_caches(void);

uint64_t now_ns(void);
void loadavg(double l[3]);

#endif
