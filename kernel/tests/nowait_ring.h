/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * An io_uring driven by raw syscalls, with no liburing: the same code runs
 * as x86_64 and as i386 (the compat entry points), static, in the busybox
 * guest. Shared by nowait_io_uring, nowait_write and nowait-blockstat.
 */
#ifndef NOWAIT_RING_H
#define NOWAIT_RING_H

#include <dirent.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>
#include <linux/io_uring.h>

struct ring {
	int fd;
	unsigned int *sq_tail, *sq_mask, *sq_array;
	unsigned int *cq_head, *cq_tail, *cq_mask;
	struct io_uring_sqe *sqes;
	struct io_uring_cqe *cqes;
	void *sq_map, *cq_map;
	size_t sq_len, cq_len;
};

/* A ring is never torn down: it goes with its process. */

/* A ring of at least @entries submission slots; 0 or -1 with errno. */
static inline int ring_init_entries(struct ring *r, unsigned int entries)
{
	struct io_uring_params p = { 0 };

	r->fd = (int)syscall(__NR_io_uring_setup, entries, &p);
	if (r->fd < 0)
		return -1;
	r->sq_len = p.sq_off.array + p.sq_entries * sizeof(unsigned int);
	r->cq_len = p.cq_off.cqes + p.cq_entries * sizeof(struct io_uring_cqe);
	r->sq_map = mmap(NULL, r->sq_len, PROT_READ | PROT_WRITE,
			 MAP_SHARED | MAP_POPULATE, r->fd, IORING_OFF_SQ_RING);
	r->cq_map = mmap(NULL, r->cq_len, PROT_READ | PROT_WRITE,
			 MAP_SHARED | MAP_POPULATE, r->fd, IORING_OFF_CQ_RING);
	r->sqes = mmap(NULL, p.sq_entries * sizeof(struct io_uring_sqe), PROT_READ | PROT_WRITE,
		       MAP_SHARED | MAP_POPULATE, r->fd, IORING_OFF_SQES);
	if (r->sq_map == MAP_FAILED || r->cq_map == MAP_FAILED ||
	    r->sqes == MAP_FAILED)
		return -1;
	r->sq_tail = (unsigned int *)((char *)r->sq_map + p.sq_off.tail);
	r->sq_mask = (unsigned int *)((char *)r->sq_map + p.sq_off.ring_mask);
	r->sq_array = (unsigned int *)((char *)r->sq_map + p.sq_off.array);
	r->cq_head = (unsigned int *)((char *)r->cq_map + p.cq_off.head);
	r->cq_tail = (unsigned int *)((char *)r->cq_map + p.cq_off.tail);
	r->cq_mask = (unsigned int *)((char *)r->cq_map + p.cq_off.ring_mask);
	r->cqes = (struct io_uring_cqe *)((char *)r->cq_map + p.cq_off.cqes);
	return 0;
}

static inline int ring_init(struct ring *r)
{
	return ring_init_entries(r, 4);
}

/*
 * Queue one IORING_OP_READ or IORING_OP_WRITE tagged @user_data and submit
 * it; 0 or -errno from the enter.
 */
static inline int ring_rw_tagged(struct ring *r, __u8 opcode, int fd, void *buf,
				 unsigned int len, off_t off, __kernel_rwf_t flags,
				 __u64 user_data)
{
	unsigned int tail = *r->sq_tail, idx = tail & *r->sq_mask;
	struct io_uring_sqe *sqe = &r->sqes[idx];

	memset(sqe, 0, sizeof(*sqe));
	sqe->opcode = opcode;
	sqe->fd = fd;
	sqe->addr = (uintptr_t)buf;
	sqe->len = len;
	sqe->off = (__u64)off;
	sqe->rw_flags = flags;
	sqe->user_data = user_data;
	r->sq_array[idx] = idx;
	__atomic_store_n(r->sq_tail, tail + 1, __ATOMIC_RELEASE);
	if (syscall(__NR_io_uring_enter, r->fd, 1, 0, 0, NULL, 0) != 1)
		return -errno;
	return 0;
}

static inline int ring_rw(struct ring *r, __u8 opcode, int fd, void *buf,
			  unsigned int len, off_t off, __kernel_rwf_t flags)
{
	return ring_rw_tagged(r, opcode, fd, buf, len, off, flags, 0);
}

/*
 * Take the next completion, its result in @res and its tag in @user_data
 * (when not NULL); wait for one if @wait.
 */
static inline bool ring_reap_tagged(struct ring *r, bool wait, int *res,
				    __u64 *user_data)
{
	unsigned int head = *r->cq_head;

	if (head == __atomic_load_n(r->cq_tail, __ATOMIC_ACQUIRE)) {
		if (!wait)
			return false;
		if (syscall(__NR_io_uring_enter, r->fd, 0, 1,
			    IORING_ENTER_GETEVENTS, NULL, 0) < 0)
			return false;
		if (head == __atomic_load_n(r->cq_tail, __ATOMIC_ACQUIRE))
			return false;
	}
	*res = r->cqes[head & *r->cq_mask].res;
	if (user_data)
		*user_data = r->cqes[head & *r->cq_mask].user_data;
	__atomic_store_n(r->cq_head, head + 1, __ATOMIC_RELEASE);
	return true;
}

static inline bool ring_reap(struct ring *r, bool wait, int *res)
{
	return ring_reap_tagged(r, wait, res, NULL);
}

/* The io-wq workers of this process, by their thread name; -1 without /proc. */
static inline int ring_iowq_workers(void)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *de;
	int n = 0;

	if (!d)
		return -1;
	while ((de = readdir(d))) {
		char path[300], comm[32] = "";
		FILE *f;

		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%s/comm", de->d_name);
		f = fopen(path, "r");
		if (!f)
			continue;
		if (fgets(comm, sizeof(comm), f) && !strncmp(comm, "iou-wrk", 7))
			n++;
		fclose(f);
	}
	closedir(d);
	return n;
}

#endif /* NOWAIT_RING_H */
