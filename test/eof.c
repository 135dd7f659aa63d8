// SPDX-License-Identifier: MIT
/*
 * At or past the end of file, and across it, a cached read completes inline,
 * also at offset -1 (the file position).
 */
#include "helpers.h"

#define SIZE 100000

int main(void)
{
	struct nowait_params p = { .preadv2 = t_preadv2 };
	struct nowait_ctx *ctx;
	struct nowait_file *f;
	struct nowait_req req = { 0 };
	struct nowait_stats st;
	char buf[8192];
	int fd;

	t_start(30);
	fd = t_file(SIZE);
	t_warm(fd, 0, SIZE);
	CHECK(nowait_create(&p, &ctx) == 0);
	CHECK(nowait_file_open(ctx, fd, &f) == 0);

	CHECK(nowait_read(f, &req, buf, sizeof(buf), SIZE) == 0);
	CHECK(nowait_read(f, &req, buf, sizeof(buf), SIZE + 12345) == 0);
	CHECK(nowait_read(f, &req, buf, sizeof(buf), SIZE - 100) == 100);
	CHECK(t_data_ok(buf, SIZE - 100, 100));
	CHECK(lseek(fd, SIZE - 200, SEEK_SET) == SIZE - 200);
	CHECK(nowait_read(f, &req, buf, sizeof(buf), -1) == 200);
	CHECK(t_data_ok(buf, SIZE - 200, 200));
	CHECK(nowait_read(f, &req, buf, sizeof(buf), -1) == 0);

	nowait_stats(ctx, &st);
	CHECK(st.hits == 5 && st.pool_jobs == 0 && st.bytes_inline == 300);
	CHECK(atomic_load(&t_nowait_calls) == 5);

	CHECK(nowait_file_close(f) == 0);
	nowait_destroy(ctx);
	close(fd);
	return 0;
}
