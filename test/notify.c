// SPDX-License-Identifier: MIT
/*
 * Completions that pile up before a reap cost one eventfd write, not one
 * each, and every one of them is still reaped.
 */
#include "helpers.h"

#include <errno.h>
#include <sched.h>
#include <stdio.h>

#define N 8

static atomic_int efd;
static atomic_ullong seen;
static atomic_bool looked;

/* The eventfd's counter, as /proc shows it, without reading it. */
static unsigned long long efd_count(int fd)
{
	char path[64], line[256];
	unsigned long long v = ~0ull;
	FILE *fp;

	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", fd);
	fp = fopen(path, "r");
	CHECK(fp);
	while (fgets(line, sizeof(line), fp))
		if (sscanf(line, "eventfd-count: %llx", &v) == 1)
			break;
	fclose(fp);
	return v;
}

/*
 * Every attempt misses. The one pool thread reads in queue order, so when
 * it reaches read N, reads 0 .. N-1 have all been completed and signalled.
 */
static ssize_t seam(int fd, const struct iovec *iov, int iovcnt, off_t off, int flags)
{
	if (flags & RWF_NOWAIT) {
		errno = EAGAIN;
		return -1;
	}
	if (off == N * 4096) {
		atomic_store(&seen, efd_count(atomic_load(&efd)));
		atomic_store(&looked, true);
	}
	return preadv2(fd, iov, iovcnt, off, flags);
}

int main(void)
{
	struct nowait_params p = { .preadv2 = seam, .threads = 1 };
	struct nowait_req reqs[N + 1] = { { 0 } };
	char bufs[N + 1][4096];
	struct nowait_ctx *ctx;
	struct nowait_file *f;
	int fd, i;

	t_start(30);
	fd = t_file((N + 1) * 4096);
	CHECK(nowait_create(&p, &ctx) == 0);
	CHECK(nowait_file_open(ctx, fd, &f) == 0);
	atomic_store(&efd, nowait_fd(ctx));

	for (i = 0; i <= N; i++)
		CHECK(nowait_read(f, &reqs[i], bufs[i], 4096, (off_t)i * 4096) == NOWAIT_QUEUED);
	/* No reap before the pool looked: a reap re-arms the signal. */
	while (!atomic_load(&looked))
		sched_yield();
	CHECK(atomic_load(&seen) == 1);
	for (i = 0; i <= N; i++) {
		struct nowait_req *req = t_wait(ctx);
		size_t k = (size_t)(req - reqs);

		CHECK(k <= N && req->res == 4096 && t_data_ok(bufs[k], (off_t)k * 4096, 4096));
	}

	CHECK(nowait_file_close(f) == 0);
	nowait_destroy(ctx);
	close(fd);
	return 0;
}
