// SPDX-License-Identifier: MIT
/*
 * The inline-only call, for servers with a pool of their own: it completes
 * a cached read, or says NOWAIT_BLOCKING with the bytes it already read,
 * and never queues, posts or reads anything blocking itself; the adaptive
 * policy, EOF, EPERM and pipes behave as for nowait_read().
 */
#include "helpers.h"

#include <errno.h>
#include <poll.h>

#define SIZE 65536

int main(void)
{
	struct nowait_params p = { .preadv2 = t_preadv2 };
	struct nowait_ctx *ctx;
	struct nowait_file *f, *g, *pf;
	struct nowait_stats st;
	struct pollfd pfd;
	struct iovec iov[2];
	char buf[8192];
	size_t done;
	int fd, fds[2], i, calls;

	t_start(30);
	fd = t_file(SIZE);
	t_warm(fd, 0, SIZE);
	CHECK(pipe(fds) == 0);
	CHECK(nowait_create(&p, &ctx) == 0);
	CHECK(nowait_file_open(ctx, fd, &f) == 0);
	CHECK(nowait_file_open(ctx, fd, &g) == 0);
	CHECK(nowait_file_open(ctx, fds[0], &pf) == 0);
	/* The pool must never run: its reads would fail. */
	atomic_store(&t_pool_errno, EIO);

	CHECK(nowait_try_read(f, buf, 4096, 4096, &done) == 4096 && done == 4096);
	CHECK(t_data_ok(buf, 4096, 4096));
	iov[0] = (struct iovec){ buf, 100 };
	iov[1] = (struct iovec){ buf + 100, 8000 };
	CHECK(nowait_try_readv(f, iov, 2, SIZE - 50, &done) == 50 && done == 50);
	CHECK(nowait_try_read(f, buf, 4096, SIZE, &done) == 0 && done == 0);

	/* A cached prefix stays in the buffer; the caller reads the rest. */
	atomic_store(&t_nowait_limit, 1000);
	CHECK(nowait_try_read(f, buf, 4096, 0, &done) == NOWAIT_BLOCKING && done == 1000);
	CHECK(t_data_ok(buf, 0, 1000));
	atomic_store(&t_nowait_limit, 0);

	/* Misses: after 18 the attempt is skipped but for probes. */
	atomic_store(&t_nowait_errno, EAGAIN);
	calls = atomic_load(&t_nowait_calls);
	for (i = 0; i < 64; i++)
		CHECK(nowait_try_read(g, buf, 4096, 0, &done) == NOWAIT_BLOCKING && done == 0);
	CHECK(atomic_load(&t_nowait_calls) - calls >= 18);
	CHECK(atomic_load(&t_nowait_calls) - calls <= 18 + 64 / 32 + 1);

	/* EPERM: this file stops trying, the others go on. */
	atomic_store(&t_nowait_errno, EPERM);
	CHECK(nowait_try_read(f, buf, 4096, 0, &done) == NOWAIT_BLOCKING);
	atomic_store(&t_nowait_errno, 0);
	calls = atomic_load(&t_nowait_calls);
	CHECK(nowait_try_read(f, buf, 4096, 0, &done) == NOWAIT_BLOCKING);
	CHECK(atomic_load(&t_nowait_calls) == calls);

	/* Pipes are the caller's to read; invalid requests fail at once. */
	CHECK(nowait_try_read(pf, buf, 4096, -1, &done) == NOWAIT_BLOCKING && done == 0);
	CHECK(nowait_try_read(f, buf, 4096, -2, &done) == -EINVAL);
	CHECK(atomic_load(&t_nowait_calls) == calls);

	pfd = (struct pollfd){ .fd = nowait_fd(ctx), .events = POLLIN };
	CHECK(poll(&pfd, 1, 0) == 0);
	nowait_file_stats(f, &st);
	CHECK(st.hits == 3 && st.partials == 1 && st.fb_eperm == 2 && st.pool_jobs == 3);
	CHECK(st.bytes_pool == 0);

	CHECK(nowait_file_close(f) == 0);
	CHECK(nowait_file_close(g) == 0);
	CHECK(nowait_file_close(pf) == 0);
	nowait_destroy(ctx);
	close(fds[0]);
	close(fds[1]);
	close(fd);
	return 0;
}
