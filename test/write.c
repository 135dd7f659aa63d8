// SPDX-License-Identifier: MIT
/*
 * Writes: a write the kernel takes without waiting completes inline; EAGAIN
 * on every call and EOPNOTSUPP are learnt per file as for reads; a write
 * never overtakes an earlier queued write it overlaps, inline or in the
 * pool, while writes elsewhere in the file go ahead; pipes are refused. On
 * this kernel, without the seam, every write lands either way.
 */
#include "helpers.h"

#include <errno.h>
#include <sched.h>

#define REPROBE 4

static atomic_int nowait_calls, nowait_errno, seq;
static atomic_bool gate_closed;
/* Per 4 KiB slot of the file: when its pool write started and ended, from 1. */
static atomic_int started[32], ended[32];

/*
 * Inline attempts succeed unless told to fail, as on a kernel with
 * nonblocking buffered writes. A pool write at offset 0 waits while the
 * gate is closed.
 */
static ssize_t seam(int fd, const struct iovec *iov, int iovcnt, off_t off, int flags)
{
	int slot = (int)(off / 4096) % 32, err;
	ssize_t n;

	if (flags & RWF_NOWAIT) {
		atomic_fetch_add(&nowait_calls, 1);
		err = atomic_load(&nowait_errno);
		if (err) {
			errno = err;
			return -1;
		}
		return pwritev2(fd, iov, iovcnt, off, flags & ~RWF_NOWAIT);
	}
	atomic_store(&started[slot], atomic_fetch_add(&seq, 1) + 1);
	while (off == 0 && atomic_load(&gate_closed))
		sched_yield();
	n = pwritev2(fd, iov, iovcnt, off, flags);
	atomic_store(&ended[slot], atomic_fetch_add(&seq, 1) + 1);
	return n;
}

static bool file_is(int fd, off_t off, size_t len, char c)
{
	char buf[8192];

	CHECK(len <= sizeof(buf) && pread(fd, buf, len, off) == (ssize_t)len);
	for (size_t i = 0; i < len; i++)
		if (buf[i] != c)
			return false;
	return true;
}

/* One write of len bytes of c; true if it completed inline. */
static bool write_one(struct nowait_ctx *ctx, struct nowait_file *f, off_t off, size_t len, char c)
{
	struct nowait_req req = { .res = -1 };
	char buf[8192];
	ssize_t n;

	memset(buf, c, len);
	n = nowait_write(f, &req, buf, len, off);
	if (n == NOWAIT_QUEUED)
		CHECK(t_wait(ctx) == &req);
	else
		CHECK(n == (ssize_t)len);
	CHECK(req.res == (ssize_t)len);
	return n != NOWAIT_QUEUED;
}

static void inline_and_fallbacks(struct nowait_ctx *ctx, int fd)
{
	struct nowait_file *f;
	struct nowait_stats st;
	int i, calls;

	CHECK(nowait_file_open(ctx, fd, &f) == 0);
	CHECK(write_one(ctx, f, 0, 4096, 'h'));
	CHECK(file_is(fd, 0, 4096, 'h'));

	/* EAGAIN on every call: 18 misses, then one probe per 32 writes. */
	atomic_store(&nowait_errno, EAGAIN);
	calls = atomic_load(&nowait_calls);
	for (i = 0; i < 64; i++)
		CHECK(!write_one(ctx, f, 4096, 4096, (char)('a' + i % 26)));
	CHECK(atomic_load(&nowait_calls) - calls >= 18);
	CHECK(atomic_load(&nowait_calls) - calls <= 18 + 64 / 32 + 1);
	CHECK(file_is(fd, 4096, 4096, (char)('a' + 63 % 26)));
	nowait_file_stats(f, &st);
	CHECK(st.write_hits == 1 && st.write_pool_jobs == 64);
	CHECK(st.bytes_written_inline == 4096 && st.bytes_written_pool == 64 * 4096);
	CHECK(st.hits == 0 && st.pool_jobs == 0);
	CHECK(nowait_file_close(f) == 0);

	/* EOPNOTSUPP: the next REPROBE writes skip the attempt. */
	CHECK(nowait_file_open(ctx, fd, &f) == 0);
	atomic_store(&nowait_errno, EOPNOTSUPP);
	calls = atomic_load(&nowait_calls);
	CHECK(!write_one(ctx, f, 0, 4096, 'o'));
	atomic_store(&nowait_errno, 0);
	for (i = 0; i < REPROBE; i++)
		CHECK(!write_one(ctx, f, 0, 4096, 'p'));
	CHECK(atomic_load(&nowait_calls) == calls + 1);
	CHECK(write_one(ctx, f, 0, 4096, 'q'));
	CHECK(file_is(fd, 0, 4096, 'q'));
	CHECK(nowait_file_close(f) == 0);
}

static void ordering(struct nowait_ctx *ctx, int fd)
{
	struct nowait_req w1 = { 0 }, w2 = { 0 }, w3 = { 0 }, *a, *b;
	char b1[8192], b2[4096], b3[4096];
	struct nowait_file *f;
	int calls;

	CHECK(nowait_file_open(ctx, fd, &f) == 0);
	memset(b1, 'A', sizeof(b1));
	memset(b2, 'B', sizeof(b2));
	memset(b3, 'C', sizeof(b3));
	for (int i = 0; i < 32; i++) {
		atomic_store(&started[i], 0);
		atomic_store(&ended[i], 0);
	}

	/* w1 [0, 8K) runs in the pool and stays there until the gate opens. */
	atomic_store(&gate_closed, true);
	atomic_store(&nowait_errno, EAGAIN);
	CHECK(nowait_write(f, &w1, b1, sizeof(b1), 0) == NOWAIT_QUEUED);
	while (!atomic_load(&started[0]))
		sched_yield();

	/* w2 [4K, 8K) overlaps it: no inline attempt, though one would succeed. */
	atomic_store(&nowait_errno, 0);
	calls = atomic_load(&nowait_calls);
	CHECK(nowait_write(f, &w2, b2, sizeof(b2), 4096) == NOWAIT_QUEUED);
	CHECK(atomic_load(&nowait_calls) == calls);

	/* w3 elsewhere goes to the pool after w2 and still completes first. */
	atomic_store(&nowait_errno, EAGAIN);
	CHECK(nowait_write(f, &w3, b3, sizeof(b3), 65536) == NOWAIT_QUEUED);
	CHECK(t_wait(ctx) == &w3 && w3.res == sizeof(b3));
	CHECK(!atomic_load(&started[1]));
	atomic_store(&nowait_errno, 0);

	atomic_store(&gate_closed, false);
	/* Completions are not ordered; the writes themselves are. */
	a = t_wait(ctx);
	b = t_wait(ctx);
	CHECK((a == &w1 && b == &w2) || (a == &w2 && b == &w1));
	CHECK(w1.res == sizeof(b1) && w2.res == sizeof(b2));
	CHECK(atomic_load(&started[1]) > atomic_load(&ended[0]));
	CHECK(file_is(fd, 0, 4096, 'A') && file_is(fd, 4096, 4096, 'B'));
	CHECK(file_is(fd, 65536, 4096, 'C'));
	CHECK(nowait_file_close(f) == 0);
}

static void real_kernel(int fd)
{
	struct nowait_ctx *ctx;
	struct nowait_file *f;

	CHECK(nowait_create(NULL, &ctx) == 0);
	CHECK(nowait_file_open(ctx, fd, &f) == 0);
	for (int i = 0; i < 8; i++)
		write_one(ctx, f, 98304 + (off_t)i * 4096, 4096, (char)('k' + i));
	for (int i = 0; i < 8; i++)
		CHECK(file_is(fd, 98304 + (off_t)i * 4096, 4096, (char)('k' + i)));
	CHECK(nowait_file_close(f) == 0);
	nowait_destroy(ctx);
}

int main(void)
{
	struct nowait_params p = {
		.pwritev2 = seam, .threads = 2, .eopnotsupp_reprobe = REPROBE,
	};
	struct nowait_req req = { 0 };
	struct nowait_ctx *ctx;
	struct nowait_file *f;
	char buf[16] = "x";
	int fd, fds[2];

	t_start(60);
	fd = t_file(128 * 1024);
	CHECK(nowait_create(&p, &ctx) == 0);
	inline_and_fallbacks(ctx, fd);
	ordering(ctx, fd);
	real_kernel(fd);

	CHECK(pipe(fds) == 0);
	CHECK(nowait_file_open(ctx, fds[1], &f) == 0);
	CHECK(nowait_write(f, &req, buf, 1, -1) == -EOPNOTSUPP && req.res == -EOPNOTSUPP);
	CHECK(nowait_file_close(f) == 0);
	CHECK(nowait_file_open(ctx, fd, &f) == 0);
	CHECK(nowait_write(f, &req, buf, 1, -2) == -EINVAL);
	CHECK(nowait_file_close(f) == 0);

	nowait_destroy(ctx);
	close(fds[0]);
	close(fds[1]);
	close(fd);
	return 0;
}
