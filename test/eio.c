// SPDX-License-Identifier: MIT
/*
 * An unexpected error from the inline attempt (old kernels said EIO for
 * "unsupported") is retried once in the pool, whose result stands.
 */
#include "helpers.h"

#include <errno.h>

int main(void)
{
	struct nowait_params p = { .preadv2 = t_preadv2 };
	struct nowait_ctx *ctx;
	struct nowait_file *f;
	struct nowait_req req = { 0 };
	struct nowait_stats st;
	char buf[4096];
	int fd;

	t_start(30);
	fd = t_file(65536);
	t_warm(fd, 0, 65536);
	CHECK(nowait_create(&p, &ctx) == 0);
	CHECK(nowait_file_open(ctx, fd, &f) == 0);

	atomic_store(&t_nowait_errno, EIO);
	CHECK(nowait_read(f, &req, buf, sizeof(buf), 0) == NOWAIT_QUEUED);
	CHECK(t_wait(ctx) == &req && req.res == sizeof(buf));
	CHECK(t_data_ok(buf, 0, sizeof(buf)));

	atomic_store(&t_pool_errno, EIO);
	CHECK(nowait_read(f, &req, buf, sizeof(buf), 0) == NOWAIT_QUEUED);
	CHECK(t_wait(ctx) == &req && req.res == -EIO);
	atomic_store(&t_nowait_errno, 0);

	/* Like read(2): bytes already read win over a later error. */
	atomic_store(&t_nowait_limit, 1000);
	CHECK(nowait_read(f, &req, buf, sizeof(buf), 0) == NOWAIT_QUEUED);
	CHECK(t_wait(ctx) == &req && req.res == 1000);
	CHECK(t_data_ok(buf, 0, 1000));
	atomic_store(&t_nowait_limit, 0);
	atomic_store(&t_pool_errno, 0);

	CHECK(nowait_read(f, &req, buf, sizeof(buf), 4096) == sizeof(buf));
	nowait_stats(ctx, &st);
	CHECK(st.fb_other_error == 2 && st.partials == 1 && st.hits == 1 && st.pool_jobs == 3);

	CHECK(nowait_file_close(f) == 0);
	nowait_destroy(ctx);
	close(fd);
	return 0;
}
