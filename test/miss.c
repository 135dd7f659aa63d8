// SPDX-License-Identifier: MIT
/* An evicted range is queued and completes through the eventfd. */
#include "helpers.h"

int main(void)
{
	struct nowait_ctx *ctx;
	struct nowait_file *f;
	struct nowait_req req = { .user_data = &req };
	struct nowait_stats st;
	char buf[16384];
	ssize_t n;
	int fd, tries;

	t_start(30);
	fd = t_file(1 << 20);
	CHECK(nowait_create(NULL, &ctx) == 0);
	CHECK(nowait_file_open(ctx, fd, &f) == 0);

	for (tries = 0;; tries++) {
		t_evict(fd, 0, 1 << 20);
		n = nowait_read(f, &req, buf, sizeof(buf), 262144);
		if (n == NOWAIT_QUEUED)
			break;
		CHECK(n == sizeof(buf) && tries < T_COLD_TRIES);
	}
	CHECK(t_wait(ctx) == &req);
	CHECK(req.user_data == &req);
	CHECK(req.res == sizeof(buf));
	CHECK(t_data_ok(buf, 262144, sizeof(buf)));

	nowait_stats(ctx, &st);
	CHECK(st.misses == 1 && st.pool_jobs == 1 && st.hits == (uint64_t)tries);
	CHECK(st.bytes_inline == tries * sizeof(buf) && st.bytes_pool == sizeof(buf));

	CHECK(nowait_file_close(f) == 0);
	nowait_destroy(ctx);
	close(fd);
	return 0;
}
