// SPDX-License-Identifier: MIT
/*
 * Linux 5.9/5.10 could return 0 from RWF_NOWAIT before end of file: that 0
 * is a miss for the pool to resolve, except at or past the file size.
 */
#include "helpers.h"

#define SIZE 65536

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
	fd = t_file(SIZE);
	CHECK(nowait_create(&p, &ctx) == 0);
	CHECK(nowait_file_open(ctx, fd, &f) == 0);
	atomic_store(&t_nowait_errno, T_RETURN_ZERO);

	CHECK(nowait_read(f, &req, buf, sizeof(buf), 8192) == NOWAIT_QUEUED);
	CHECK(t_wait(ctx) == &req);
	CHECK(req.res == sizeof(buf));
	CHECK(t_data_ok(buf, 8192, sizeof(buf)));
	nowait_stats(ctx, &st);
	CHECK(st.fb_zero_before_eof == 1 && st.pool_jobs == 1);

	CHECK(nowait_read(f, &req, buf, sizeof(buf), SIZE) == 0);
	nowait_stats(ctx, &st);
	CHECK(st.hits == 1 && st.pool_jobs == 1);

	CHECK(nowait_file_close(f) == 0);
	nowait_destroy(ctx);
	close(fd);
	return 0;
}
