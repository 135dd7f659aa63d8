// SPDX-License-Identifier: MIT
/*
 * Destroying a context with work queued: the running job finishes, queued
 * ones end with -ECANCELED, unreaped completions and open files are freed.
 */
#include "helpers.h"

#include <errno.h>
#include <sched.h>

#define N 8

static atomic_int started;

/* Every inline attempt misses; pool reads are slow enough to destroy under. */
static ssize_t slow_preadv2(int fd, const struct iovec *iov, int iovcnt, off_t off, int flags)
{
	if (flags & RWF_NOWAIT) {
		errno = EAGAIN;
		return -1;
	}
	atomic_store(&started, 1);
	usleep(200000);
	return preadv2(fd, iov, iovcnt, off, flags);
}

int main(void)
{
	struct nowait_params p = { .preadv2 = slow_preadv2, .threads = 1 };
	struct nowait_req reqs[N] = { 0 };
	char bufs[N][4096];
	struct nowait_ctx *ctx;
	struct nowait_file *f;
	int fd, i;

	t_start(30);
	fd = t_file(N * 4096);
	CHECK(nowait_create(&p, &ctx) == 0);
	CHECK(nowait_file_open(ctx, fd, &f) == 0);

	CHECK(nowait_read(f, &reqs[0], bufs[0], 4096, 0) == NOWAIT_QUEUED);
	while (!atomic_load(&started))
		sched_yield();
	for (i = 1; i < N; i++)
		CHECK(nowait_read(f, &reqs[i], bufs[i], 4096, (off_t)i * 4096) == NOWAIT_QUEUED);
	nowait_destroy(ctx);

	CHECK(reqs[0].res == 4096 && t_data_ok(bufs[0], 0, 4096));
	for (i = 1; i < N; i++)
		CHECK(reqs[i].res == -ECANCELED);
	close(fd);
	return 0;
}
