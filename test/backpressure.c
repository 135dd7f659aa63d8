// SPDX-License-Identifier: MIT
/*
 * max_inflight (1.2): with that many requests in the library, reads and
 * writes return -EAGAIN without trying, and nothing is queued; reaping one
 * makes room. Requests count until reaped, whether they wait in the pool,
 * run, wait for data on a stream, or sit completed on the done queue.
 */
#include "helpers.h"

#include <errno.h>
#include <sys/stat.h>

/* The gate seam for regular files; the pipe's reads are real. */
static ssize_t gated_files(int fd, const struct iovec *iov, int iovcnt, off_t off, int flags)
{
	struct stat st;

	if (fstat(fd, &st) == 0 && !S_ISREG(st.st_mode))
		return preadv2(fd, iov, iovcnt, off, flags);
	return t_gated_preadv2(fd, iov, iovcnt, off, flags);
}

int main(void)
{
	struct nowait_params p = { .preadv2 = gated_files, .pwritev2 = t_gated_pwritev2,
				   .threads = 1, .max_inflight = 3 };
	struct nowait_req r[4] = { { 0 } }, w = { 0 }, s = { 0 };
	struct nowait_stats st;
	struct nowait_ctx *ctx;
	struct nowait_file *f, *pf;
	char buf[4][4096], wbuf[4096] = "w", sbuf[8];
	int fd, fds[2], calls;

	t_start(60);
	fd = t_file(65536);
	CHECK(pipe(fds) == 0);
	CHECK(nowait_create(&p, &ctx) == 0);
	CHECK(nowait_file_open(ctx, fd, &f) == 0);
	CHECK(nowait_file_open(ctx, fds[0], &pf) == 0);
	t_gate_close(1);
	CHECK(nowait_read(f, &r[0], buf[0], 4096, 0) == NOWAIT_QUEUED);
	t_gate_wait(1);		/* running */
	CHECK(nowait_read(f, &r[1], buf[1], 4096, 4096) == NOWAIT_QUEUED);	/* queued */
	CHECK(nowait_read(pf, &s, sbuf, sizeof(sbuf), -1) == NOWAIT_QUEUED);	/* waits for data */
	/* Three in the library: refused, untried, unqueued, res set. */
	CHECK(nowait_stats(ctx, &st) == 0);
	calls = (int)st.pool_jobs;
	CHECK(nowait_read(f, &r[2], buf[2], 4096, 8192) == -EAGAIN && r[2].res == -EAGAIN);
	CHECK(nowait_write(f, &w, wbuf, sizeof(wbuf), 32768) == -EAGAIN);
	CHECK(nowait_read(pf, &r[3], buf[3], 4096, -1) == -EAGAIN);
	CHECK(nowait_stats(ctx, &st) == 0 && (int)st.pool_jobs == calls && st.write_pool_jobs == 0);
	t_gate_open();
	/* Completed but not reaped: still counted. */
	CHECK(write(fds[1], "s", 1) == 1);
	/* All three transferred (then they complete, unreaped); -EAGAIN either way. */
	do {
		usleep(10000);
		CHECK(nowait_stats(ctx, &st) == 0);
	} while (st.bytes_pool < 2 * 4096 + 1);
	usleep(50000);
	CHECK(nowait_read(f, &r[2], buf[2], 4096, 8192) == -EAGAIN);
	/* Reaping one makes room for one. */
	CHECK(t_wait(ctx)->res > 0);
	CHECK(nowait_read(f, &r[2], buf[2], 4096, 8192) == NOWAIT_QUEUED);
	CHECK(nowait_read(f, &r[3], buf[3], 4096, 12288) == -EAGAIN);
	for (int i = 0; i < 3; i++)
		CHECK(t_wait(ctx)->res > 0);
	CHECK(t_data_ok(buf[0], 0, 4096) && t_data_ok(buf[1], 4096, 4096) &&
	      t_data_ok(buf[2], 8192, 4096) && sbuf[0] == 's');
	CHECK(nowait_write(f, &w, wbuf, sizeof(wbuf), 32768) == NOWAIT_QUEUED);
	CHECK(t_wait(ctx) == &w && w.res == sizeof(wbuf));
	CHECK(nowait_destroy(ctx) == 0);
	close(fd);
	close(fds[0]);
	close(fds[1]);
	return 0;
}
