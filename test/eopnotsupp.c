// SPDX-License-Identifier: MIT
/*
 * EOPNOTSUPP stops inline attempts on that file only, and only for
 * eopnotsupp_reprobe reads: some file systems mean "would block" by it.
 */
#include "helpers.h"

#include <errno.h>

#define REPROBE 4

int main(void)
{
	struct nowait_params p = { .preadv2 = t_preadv2, .eopnotsupp_reprobe = REPROBE };
	struct nowait_ctx *ctx;
	struct nowait_file *f, *other;
	struct nowait_req req = { 0 };
	struct nowait_stats st;
	char buf[4096];
	int fd, i;

	t_start(30);
	fd = t_file(65536);
	t_warm(fd, 0, 65536);
	CHECK(nowait_create(&p, &ctx) == 0);
	CHECK(nowait_file_open(ctx, fd, &f) == 0);
	CHECK(nowait_file_open(ctx, fd, &other) == 0);

	atomic_store(&t_nowait_errno, EOPNOTSUPP);
	CHECK(nowait_read(f, &req, buf, sizeof(buf), 0) == NOWAIT_QUEUED);
	CHECK(t_wait(ctx) == &req && req.res == sizeof(buf));
	CHECK(t_data_ok(buf, 0, sizeof(buf)));
	atomic_store(&t_nowait_errno, 0);

	CHECK(nowait_read(other, &req, buf, sizeof(buf), 0) == sizeof(buf));
	CHECK(atomic_load(&t_nowait_calls) == 2);

	for (i = 0; i < REPROBE; i++) {
		CHECK(nowait_read(f, &req, buf, sizeof(buf), 4096) == NOWAIT_QUEUED);
		CHECK(t_wait(ctx) == &req && req.res == sizeof(buf));
	}
	CHECK(atomic_load(&t_nowait_calls) == 2);
	CHECK(nowait_read(f, &req, buf, sizeof(buf), 8192) == sizeof(buf));
	CHECK(t_data_ok(buf, 8192, sizeof(buf)));
	CHECK(atomic_load(&t_nowait_calls) == 3);

	nowait_file_stats(f, &st);
	CHECK(st.fb_eopnotsupp == 1 + REPROBE && st.hits == 1 && st.pool_jobs == 1 + REPROBE);

	CHECK(nowait_file_close(f) == 0);
	CHECK(nowait_file_close(other) == 0);
	nowait_destroy(ctx);
	close(fd);
	return 0;
}
