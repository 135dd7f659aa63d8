// SPDX-License-Identifier: MIT
/*
 * A read whose first part is cached returns that prefix inline and the pool
 * reads the rest into the right place, also when the split falls inside an
 * iovec element.
 */
#include "helpers.h"

#include <stdlib.h>

#define SIZE (256 * 1024)
#define CACHED (64 * 1024)

/* False if the whole read hit inline after all. */
static bool read_split(struct nowait_ctx *ctx, struct nowait_file *f, char *buf,
		       size_t inline_bytes)
{
	struct iovec iov[3] = {
		{ buf, 1000 },
		{ buf + 1000, 100000 },
		{ buf + 101000, SIZE - 101000 },
	};
	struct nowait_req req = { 0 };
	struct nowait_stats before, after;
	ssize_t n;

	nowait_file_stats(f, &before);
	memset(buf, 0, SIZE);
	n = nowait_readv(f, &req, iov, 3, 0);
	if (n == SIZE)
		return false;
	CHECK(n == NOWAIT_QUEUED);
	CHECK(t_wait(ctx) == &req);
	CHECK(req.res == SIZE);
	CHECK(t_data_ok(buf, 0, SIZE));
	nowait_file_stats(f, &after);
	CHECK(after.partials == before.partials + 1);
	CHECK(after.bytes_inline - before.bytes_inline == inline_bytes);
	CHECK(after.bytes_pool - before.bytes_pool == SIZE - inline_bytes);
	return true;
}

int main(void)
{
	struct nowait_params p = { .preadv2 = t_preadv2 };
	struct nowait_ctx *ctx;
	struct nowait_file *f;
	char *buf = malloc(SIZE);
	int fd, tries;

	t_start(30);
	CHECK(buf);
	fd = t_file(SIZE);
	CHECK(nowait_create(&p, &ctx) == 0);
	CHECK(nowait_file_open(ctx, fd, &f) == 0);

	for (tries = 0;; tries++) {
		t_warm(fd, 0, SIZE);
		t_evict(fd, CACHED, SIZE - CACHED);
		CHECK(t_resident(fd, 0, CACHED) == CACHED / 4096);
		if (read_split(ctx, f, buf, CACHED))
			break;
		CHECK(tries < T_COLD_TRIES);
	}

	/* Deterministic: the kernel's prefix size is its choice, the seam's is not. */
	t_warm(fd, 0, SIZE);
	atomic_store(&t_nowait_limit, 50000);
	read_split(ctx, f, buf, 50000);

	CHECK(nowait_file_close(f) == 0);
	nowait_destroy(ctx);
	close(fd);
	free(buf);
	return 0;
}
