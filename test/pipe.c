// SPDX-License-Identifier: MIT
/*
 * Pipes never get the inline attempt (their EAGAIN says nothing about the
 * page cache); offset -1 reads at the current position until EOF.
 */
#include "helpers.h"

int main(void)
{
	struct nowait_params p = { .preadv2 = t_preadv2 };
	struct nowait_ctx *ctx;
	struct nowait_file *f;
	struct nowait_req req = { 0 };
	struct nowait_stats st;
	char data[3000], buf[8192];
	int fds[2];

	t_start(30);
	for (size_t i = 0; i < sizeof(data); i++)
		data[i] = (char)t_byte((off_t)i);
	CHECK(pipe(fds) == 0);
	CHECK(nowait_create(&p, &ctx) == 0);
	CHECK(nowait_file_open(ctx, fds[0], &f) == 0);

	CHECK(nowait_read(f, &req, buf, sizeof(buf), -1) == NOWAIT_QUEUED);
	CHECK(write(fds[1], data, 1000) == 1000);
	CHECK(write(fds[1], data + 1000, 2000) == 2000);
	close(fds[1]);
	CHECK(t_wait(ctx) == &req && req.res == sizeof(data));
	CHECK(t_data_ok(buf, 0, sizeof(data)));
	CHECK(atomic_load(&t_nowait_calls) == 0);
	nowait_stats(ctx, &st);
	CHECK(st.fb_not_regular == 1 && st.pool_jobs == 1);

	CHECK(nowait_file_close(f) == 0);
	nowait_destroy(ctx);
	close(fds[0]);
	return 0;
}
