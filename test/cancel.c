// SPDX-License-Identifier: MIT
/*
 * nowait_cancel(): a request still queued for the pool, or a write waiting
 * for an earlier overlapping one, completes at once with -ECANCELED, and a
 * later write that waited only for the cancelled one runs, and so does a
 * read of a pipe or socket waiting for data. A request in a pool thread is
 * -EBUSY; one already completed (inline, or reaped) is -EALREADY; another
 * context's is -EINVAL.
 */
#include "helpers.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/socket.h>

static void reads(void)
{
	struct nowait_params p = { .preadv2 = t_gated_preadv2, .threads = 1 };
	struct nowait_req r[3] = { { 0 } };
	char buf[3][4096];
	struct nowait_ctx *ctx, *other;
	struct nowait_file *f;
	int fd = t_file(65536);

	CHECK(nowait_create(&p, &ctx) == 0);
	CHECK(nowait_create(&p, &other) == 0);
	CHECK(nowait_file_open(ctx, fd, &f) == 0);

	t_gate_close(1);
	for (int i = 0; i < 3; i++)
		CHECK(nowait_read(f, &r[i], buf[i], sizeof(buf[i]), i * 4096) == NOWAIT_QUEUED);
	t_gate_wait(1);		/* r[0] holds the only thread; r[1], r[2] are queued */
	CHECK(nowait_cancel(ctx, &r[1]) == 0);
	CHECK(nowait_cancel(ctx, &r[1]) == -EALREADY);
	CHECK(nowait_cancel(ctx, &r[0]) == -EBUSY);
	CHECK(nowait_cancel(other, &r[2]) == -EINVAL);
	CHECK(t_wait(ctx) == &r[1] && r[1].res == -ECANCELED);
	CHECK(nowait_cancel(ctx, &r[1]) == -EALREADY);
	t_gate_open();
	CHECK(t_wait(ctx) == &r[0] && r[0].res == 4096 && t_data_ok(buf[0], 0, 4096));
	CHECK(t_wait(ctx) == &r[2] && r[2].res == 4096 && t_data_ok(buf[2], 8192, 4096));
	CHECK(nowait_cancel(ctx, &r[2]) == -EALREADY);
	nowait_destroy(other);
	nowait_destroy(ctx);
	close(fd);
}

/*
 * A read waiting for data on a pipe or an idle socket is cancelled at once;
 * a later read of the same stream gets the data. The gate seam would refuse
 * the streams' reads too: the real preadv2 here.
 */
static void stream_read(bool sock)
{
	struct nowait_req r = { 0 }, r2 = { 0 };
	struct nowait_ctx *ctx;
	struct nowait_file *f;
	char buf[16];
	int fds[2];

	CHECK(sock ? socketpair(AF_UNIX, SOCK_STREAM, 0, fds) == 0 : pipe(fds) == 0);
	CHECK(nowait_create(NULL, &ctx) == 0);
	CHECK(nowait_file_open(ctx, fds[0], &f) == 0);
	CHECK(nowait_read(f, &r, buf, sizeof(buf), -1) == NOWAIT_QUEUED);
	CHECK(nowait_file_close(f) == -EBUSY);
	CHECK(nowait_cancel(ctx, &r) == 0);
	CHECK(nowait_cancel(ctx, &r) == -EALREADY);
	CHECK(t_wait(ctx) == &r && r.res == -ECANCELED);
	CHECK(nowait_read(f, &r2, buf, sizeof(buf), -1) == NOWAIT_QUEUED);
	CHECK(write(fds[1], "x", 1) == 1);
	CHECK(t_wait(ctx) == &r2 && r2.res == 1 && buf[0] == 'x');
	CHECK(nowait_file_close(f) == 0);
	CHECK(nowait_destroy(ctx) == 0);
	close(fds[0]);
	close(fds[1]);
}

/* Of two reads waiting on one stream, cancelling the first leaves the second first. */
static void second_read(void)
{
	struct nowait_req r[2] = { { 0 } };
	struct nowait_ctx *ctx;
	struct nowait_file *f;
	char buf[2][16];
	int fds[2];

	CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, fds) == 0);
	CHECK(nowait_create(NULL, &ctx) == 0);
	CHECK(nowait_file_open(ctx, fds[0], &f) == 0);
	CHECK(nowait_read(f, &r[0], buf[0], sizeof(buf[0]), -1) == NOWAIT_QUEUED);
	CHECK(nowait_read(f, &r[1], buf[1], sizeof(buf[1]), -1) == NOWAIT_QUEUED);
	CHECK(nowait_cancel(ctx, &r[0]) == 0);
	CHECK(t_wait(ctx) == &r[0] && r[0].res == -ECANCELED);
	CHECK(send(fds[1], "yz", 2, 0) == 2);
	CHECK(t_wait(ctx) == &r[1] && r[1].res == 2 && !memcmp(buf[1], "yz", 2));
	CHECK(nowait_destroy(ctx) == 0);
	close(fds[0]);
	close(fds[1]);
}

/* w0 [0, 4 KiB) runs; w1 [0, 8 KiB) waits for it; w2 [4, 8 KiB) waits for w1 only. */
static void writes(void)
{
	struct nowait_params p = { .pwritev2 = t_gated_pwritev2, .threads = 1 };
	struct nowait_req w[3] = { { 0 } };
	static char b0[4096], b1[8192], b2[4096], back[8192];
	struct nowait_ctx *ctx;
	struct nowait_file *f;
	int fd = t_file(65536);

	memset(b0, 'a', sizeof(b0));
	memset(b1, 'b', sizeof(b1));
	memset(b2, 'c', sizeof(b2));
	CHECK(nowait_create(&p, &ctx) == 0);
	CHECK(nowait_file_open(ctx, fd, &f) == 0);
	t_gate_close(1);
	CHECK(nowait_write(f, &w[0], b0, sizeof(b0), 0) == NOWAIT_QUEUED);
	t_gate_wait(1);
	CHECK(nowait_write(f, &w[1], b1, sizeof(b1), 0) == NOWAIT_QUEUED);
	CHECK(nowait_write(f, &w[2], b2, sizeof(b2), 4096) == NOWAIT_QUEUED);
	CHECK(nowait_cancel(ctx, &w[1]) == 0);
	CHECK(t_wait(ctx) == &w[1] && w[1].res == -ECANCELED);
	t_gate_open();
	for (int i = 0; i < 2; i++) {
		struct nowait_req *done = t_wait(ctx);

		CHECK((done == &w[0] || done == &w[2]) && done->res == 4096);
	}
	CHECK(pread(fd, back, sizeof(back), 0) == sizeof(back));
	CHECK(!memcmp(back, b0, 4096) && !memcmp(back + 4096, b2, 4096));
	nowait_destroy(ctx);
	close(fd);
}

/*
 * Through io_uring: a completed request is -EALREADY; requests still queued
 * in the kernel (O_DSYNC writes waiting for the one io-wq worker) are
 * cancelled with IORING_OP_ASYNC_CANCEL, and a cancel that says 0 is a
 * request that ends with -ECANCELED, -EBUSY one that ends normally.
 */
static void ring(void)
{
	struct nowait_params p = { .backend = NOWAIT_BACKEND_IO_URING, .threads = 1,
				   .pwritev2 = t_gated_pwritev2 };
	enum { N = 32, L = 65536 };
	static struct nowait_req w[N];
	static char data[L];
	static int said[N];
	struct nowait_req r = { 0 };
	struct nowait_ctx *ctx;
	struct nowait_file *f, *wf;
	char buf[4096], path[64];
	int fd = t_file(65536), wfd, cancelled = 0;

	if (nowait_create(&p, &ctx) != 0)
		return;		/* no io_uring here: backend.c says why */
	CHECK(nowait_file_open(ctx, fd, &f) == 0);
	t_warm(fd, 0, 4096);
	CHECK(nowait_read(f, &r, buf, sizeof(buf), 0) == sizeof(buf));
	CHECK(nowait_cancel(ctx, &r) == -EALREADY);

	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	wfd = open(path, O_WRONLY | O_DSYNC);
	CHECK(wfd >= 0);
	CHECK(nowait_file_open(ctx, wfd, &wf) == 0);
	for (int i = 0; i < N; i++)
		CHECK(nowait_write(wf, &w[i], data, L, (off_t)i * L) == NOWAIT_QUEUED);
	for (int i = N - 1; i >= 0; i--) {
		said[i] = nowait_cancel(ctx, &w[i]);
		CHECK(said[i] == 0 || said[i] == -EBUSY || said[i] == -EALREADY);
		cancelled += !said[i];
	}
	for (int i = 0; i < N; i++) {
		struct nowait_req *done = t_wait(ctx);
		int k = (int)(done - w);

		CHECK(k >= 0 && k < N);
		CHECK(said[k] == 0 ? done->res == -ECANCELED : done->res == L);
	}
	printf("io_uring: %d of %d writes cancelled\n", cancelled, N);
	CHECK(cancelled > 0);
	CHECK(nowait_destroy(ctx) == 0);
	close(wfd);
	close(fd);
}

int main(void)
{
	t_start(60);
	reads();
	stream_read(false);
	stream_read(true);
	second_read();
	writes();
	ring();
	return 0;
}
