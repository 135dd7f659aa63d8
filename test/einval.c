// SPDX-License-Identifier: MIT
/*
 * EINVAL from the inline attempt belongs to the request: it goes to the pool
 * unchanged, plain preadv gives the answer, and nothing is latched. Requests
 * that no file accepts fail at once, with no attempt and no pool job.
 */
#include "helpers.h"

#include <errno.h>
#include <limits.h>

int main(void)
{
	struct nowait_params p = { .preadv2 = t_preadv2 };
	struct nowait_ctx *ctx;
	struct nowait_file *f;
	struct nowait_req req = { 0 };
	struct nowait_stats st;
	struct iovec iov, big[2];
	char buf[4096];
	int fd;

	t_start(30);
	fd = t_file(65536);
	t_warm(fd, 0, 65536);
	CHECK(nowait_create(&p, &ctx) == 0);
	CHECK(nowait_file_open(ctx, fd, &f) == 0);

	/* Injected: the pool's read succeeds. */
	atomic_store(&t_nowait_errno, EINVAL);
	CHECK(nowait_read(f, &req, buf, sizeof(buf), 0) == NOWAIT_QUEUED);
	CHECK(t_wait(ctx) == &req && req.res == sizeof(buf));
	CHECK(t_data_ok(buf, 0, sizeof(buf)));
	atomic_store(&t_nowait_errno, 0);
	CHECK(nowait_read(f, &req, buf, sizeof(buf), 4096) == sizeof(buf));

	/* Immediate: a bad offset, iovec count or total length. */
	CHECK(nowait_read(f, &req, buf, sizeof(buf), -2) == -EINVAL && req.res == -EINVAL);
	iov = (struct iovec){ buf, sizeof(buf) };
	CHECK(nowait_readv(f, &req, &iov, -1, 0) == -EINVAL);
	CHECK(nowait_readv(f, &req, &iov, IOV_MAX + 1, 0) == -EINVAL);
	big[0] = (struct iovec){ buf, SSIZE_MAX };
	big[1] = (struct iovec){ buf, 1 };
	CHECK(nowait_readv(f, &req, big, 2, 0) == -EINVAL);
	CHECK(nowait_read(f, &req, buf, sizeof(buf), 8192) == sizeof(buf));

	nowait_stats(ctx, &st);
	CHECK(st.fb_einval == 1 && st.hits == 2 && st.pool_jobs == 1);
	CHECK(atomic_load(&t_nowait_calls) == 3);

	CHECK(nowait_file_close(f) == 0);
	nowait_destroy(ctx);
	close(fd);
	return 0;
}
