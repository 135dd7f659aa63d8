// SPDX-License-Identifier: MIT
/*
 * 10,000 requests in flight at once, reaped from an epoll loop in batches
 * smaller than what is pending (the eventfd must stay readable).
 */
#include "helpers.h"

#include <errno.h>
#include <stdlib.h>
#include <sys/epoll.h>

#define N 10000
#define LEN 1024
#define BATCH 64

int main(void)
{
	struct nowait_params p = { .preadv2 = t_preadv2 };
	struct nowait_req *reqs = calloc(N, sizeof(*reqs)), *done[BATCH];
	struct epoll_event ev = { .events = EPOLLIN };
	char *bufs = malloc((size_t)N * LEN), *seen = calloc(N, 1);
	struct nowait_ctx *ctx;
	struct nowait_file *f;
	struct nowait_stats st;
	int fd, ep, i, n, reaped = 0;

	t_start(120);
	CHECK(reqs && bufs && seen);
	fd = t_file((size_t)N * LEN);
	CHECK(nowait_create(&p, &ctx) == 0);
	CHECK(nowait_file_open(ctx, fd, &f) == 0);
	ep = epoll_create1(EPOLL_CLOEXEC);
	CHECK(ep >= 0 && epoll_ctl(ep, EPOLL_CTL_ADD, nowait_fd(ctx), &ev) == 0);

	/* Every attempt misses, so all of them are queued before any is reaped. */
	atomic_store(&t_nowait_errno, EAGAIN);
	for (i = 0; i < N; i++) {
		reqs[i].user_data = &seen[i];
		CHECK(nowait_read(f, &reqs[i], bufs + (size_t)i * LEN, LEN,
				  (off_t)i * LEN) == NOWAIT_QUEUED);
	}
	CHECK(nowait_file_close(f) == -EBUSY);

	while (reaped < N) {
		CHECK(epoll_wait(ep, &ev, 1, 10000) == 1);
		n = nowait_reap(ctx, done, BATCH);
		CHECK(n >= 0);
		for (int j = 0; j < n; j++) {
			char *s = done[j]->user_data;

			i = (int)(s - seen);
			CHECK(!*s && done[j] == &reqs[i]);
			*s = 1;
			CHECK(done[j]->res == LEN);
			CHECK(t_data_ok(bufs + (size_t)i * LEN, (off_t)i * LEN, LEN));
		}
		reaped += n;
	}

	nowait_stats(ctx, &st);
	CHECK(st.pool_jobs == N && st.misses + st.skipped == N);
	CHECK(st.bytes_pool == (uint64_t)N * LEN);
	CHECK(nowait_file_close(f) == 0);
	nowait_destroy(ctx);
	close(ep);
	close(fd);
	free(reqs);
	free(bufs);
	free(seen);
	return 0;
}
