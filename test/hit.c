// SPDX-License-Identifier: MIT
/*
 * A cached read completes inline, returns the byte count (in req->res too)
 * and posts nothing.
 */
#include "helpers.h"

#include <poll.h>

int main(void)
{
	struct nowait_ctx *ctx;
	struct nowait_file *f;
	struct nowait_req req = { .res = -1 }, *done;
	struct nowait_stats st;
	struct pollfd pfd;
	char buf[16384];
	int fd;

	t_start(30);
	fd = t_file(1 << 20);
	t_warm(fd, 0, 1 << 20);
	CHECK(nowait_create(NULL, &ctx) == 0);
	CHECK(nowait_file_open(ctx, fd, &f) == 0);

	CHECK(nowait_read(f, &req, buf, sizeof(buf), 8192) == sizeof(buf));
	CHECK(req.res == sizeof(buf));
	CHECK(t_data_ok(buf, 8192, sizeof(buf)));
	pfd = (struct pollfd){ .fd = nowait_fd(ctx), .events = POLLIN };
	CHECK(poll(&pfd, 1, 100) == 0);
	CHECK(nowait_reap(ctx, &done, 1) == 0);

	nowait_stats(ctx, &st);
	CHECK(st.hits == 1 && st.pool_jobs == 0 && st.bytes_inline == sizeof(buf));
	nowait_file_stats(f, &st);
	CHECK(st.hits == 1 && st.pool_jobs == 0 && st.bytes_inline == sizeof(buf));

	CHECK(nowait_file_close(f) == 0);
	nowait_destroy(ctx);
	close(fd);
	return 0;
}
