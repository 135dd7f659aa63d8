// SPDX-License-Identifier: MIT
/*
 * Closing the fd with reads in flight: each read completes with its data or
 * fails with EBADF; the library's file handle stays busy until all are reaped.
 */
#include "helpers.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>

#define N 256
#define LEN 16384

int main(void)
{
	struct nowait_params p = { .preadv2 = t_preadv2, .threads = 2 };
	struct nowait_req *reqs = calloc(N, sizeof(*reqs));
	char *bufs = malloc((size_t)N * LEN);
	struct nowait_ctx *ctx;
	struct nowait_file *f;
	int fd, tmp, i, ok = 0, ebadf = 0;

	t_start(60);
	CHECK(reqs && bufs);
	tmp = t_file((size_t)N * LEN);
	t_evict(tmp, 0, (size_t)N * LEN);
	/* Far above the lowest free number, so no later open reuses it. */
	fd = fcntl(tmp, F_DUPFD_CLOEXEC, 512);
	CHECK(fd >= 0);
	close(tmp);
	CHECK(nowait_create(&p, &ctx) == 0);
	CHECK(nowait_file_open(ctx, fd, &f) == 0);

	atomic_store(&t_nowait_errno, EAGAIN);
	for (i = 0; i < N; i++)
		CHECK(nowait_read(f, &reqs[i], bufs + (size_t)i * LEN, LEN,
				  (off_t)i * LEN) == NOWAIT_QUEUED);
	close(fd);
	CHECK(nowait_file_close(f) == -EBUSY);

	for (i = 0; i < N; i++) {
		struct nowait_req *req = t_wait(ctx);
		size_t k = (size_t)(req - reqs);

		if (req->res == -EBADF) {
			ebadf++;
		} else {
			CHECK(req->res == LEN);
			CHECK(t_data_ok(bufs + k * LEN, (off_t)k * LEN, LEN));
			ok++;
		}
	}
	printf("%d completed, %d EBADF\n", ok, ebadf);
	CHECK(ebadf > 0);
	CHECK(nowait_file_close(f) == 0);
	nowait_destroy(ctx);
	free(reqs);
	free(bufs);
	return 0;
}
