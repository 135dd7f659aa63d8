// SPDX-License-Identifier: MIT
/* O_DIRECT files never get the inline attempt: it may do device I/O inline. */
#include "helpers.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>

int main(void)
{
	struct nowait_params p = { .preadv2 = t_preadv2 };
	struct nowait_ctx *ctx;
	struct nowait_file *f;
	struct nowait_req req = { 0 };
	struct nowait_stats st;
	char path[64], *buf = aligned_alloc(4096, 16384);
	int fd, dfd;

	t_start(30);
	CHECK(buf);
	fd = t_file(1 << 20);
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	dfd = open(path, O_RDONLY | O_DIRECT);
	if (dfd < 0 && errno == EINVAL)
		t_skip("O_DIRECT not supported by this file system");
	CHECK(dfd >= 0);
	t_warm(fd, 0, 1 << 20);
	CHECK(nowait_create(&p, &ctx) == 0);
	CHECK(nowait_file_open(ctx, dfd, &f) == 0);

	CHECK(nowait_read(f, &req, buf, 16384, 4096) == NOWAIT_QUEUED);
	CHECK(t_wait(ctx) == &req && req.res == 16384);
	CHECK(t_data_ok(buf, 4096, 16384));
	CHECK(atomic_load(&t_nowait_calls) == 0);
	nowait_stats(ctx, &st);
	CHECK(st.fb_odirect == 1 && st.pool_jobs == 1);

	CHECK(nowait_file_close(f) == 0);
	nowait_destroy(ctx);
	close(dfd);
	close(fd);
	free(buf);
	return 0;
}
