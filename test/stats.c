// SPDX-License-Identifier: MIT
/*
 * The context's counters are the sum of its files', closed files included:
 * hits and bytes read inline, misses, pool jobs and the bytes the pool
 * read, from two threads on two files at once. A closed file's counts stay
 * in the context's; the file opened next (which reuses the closed one's
 * memory) starts from zero. nowait_file_stats() of a file sees its own
 * reads only.
 */
#include "helpers.h"

#include <errno.h>
#include <pthread.h>

#define SIZE (1 << 20)
#define BS 4096
#define HITS 2000
#define MISSES 40

struct reader {
	struct nowait_ctx *ctx;
	struct nowait_file *f;
};

/* Inline hits only: t_nowait_errno stays 0 while the threads run. */
static void *hit_reads(void *arg)
{
	struct reader *r = arg;
	char buf[BS];

	for (int i = 0; i < HITS; i++) {
		struct nowait_req req = { 0 };
		off_t off = (off_t)(i % (SIZE / BS)) * BS;

		CHECK(nowait_read(r->f, &req, buf, BS, off) == BS);
		CHECK(t_data_ok(buf, off, BS));
	}
	return NULL;
}

/* MISSES reads that the seam fails inline with EAGAIN, served by the pool. */
static void miss_reads(struct nowait_ctx *ctx, struct nowait_file *f)
{
	char buf[BS];

	atomic_store(&t_nowait_errno, EAGAIN);
	for (int i = 0; i < MISSES; i++) {
		struct nowait_req req = { 0 };
		ssize_t n = nowait_read(f, &req, buf, BS, (off_t)i * BS);

		if (n == NOWAIT_QUEUED) {
			CHECK(t_wait(ctx) == &req);
			n = req.res;
		}
		CHECK(n == BS && t_data_ok(buf, (off_t)i * BS, BS));
	}
	atomic_store(&t_nowait_errno, 0);
}

int main(void)
{
	/* probe_interval 1: the misses never make the policy skip an attempt. */
	struct nowait_params p = { .preadv2 = t_preadv2, .probe_interval = 1 };
	struct nowait_ctx *ctx;
	struct reader r[2];
	struct nowait_stats st, f0, f1, c;
	pthread_t tid[2];
	int fd[2];

	t_start(60);
	CHECK(nowait_create(&p, &ctx) == 0);
	for (int i = 0; i < 2; i++) {
		fd[i] = t_file(SIZE);
		t_warm(fd[i], 0, SIZE);
		r[i].ctx = ctx;
		CHECK(nowait_file_open(ctx, fd[i], &r[i].f) == 0);
	}
	for (int i = 0; i < 2; i++)
		CHECK(pthread_create(&tid[i], NULL, hit_reads, &r[i]) == 0);
	for (int i = 0; i < 2; i++)
		CHECK(pthread_join(tid[i], NULL) == 0);
	miss_reads(ctx, r[1].f);

	CHECK(nowait_file_stats(r[0].f, &f0) == 0);
	CHECK(f0.hits == HITS && f0.bytes_inline == (uint64_t)HITS * BS);
	CHECK(f0.misses == 0 && f0.pool_jobs == 0 && f0.bytes_pool == 0);
	CHECK(nowait_file_stats(r[1].f, &f1) == 0);
	CHECK(f1.hits == HITS && f1.misses == MISSES && f1.pool_jobs == MISSES);
	CHECK(f1.bytes_pool == (uint64_t)MISSES * BS);
	CHECK(nowait_stats(ctx, &c) == 0);
	CHECK(c.hits == 2 * HITS && c.bytes_inline == 2ull * HITS * BS);
	CHECK(c.misses == MISSES && c.pool_jobs == MISSES && c.bytes_pool == (uint64_t)MISSES * BS);

	/* Closed, its counts stay in the context's. */
	CHECK(nowait_file_close(r[1].f) == 0);
	CHECK(nowait_stats(ctx, &st) == 0);
	CHECK(st.hits == c.hits && st.misses == c.misses && st.pool_jobs == c.pool_jobs);
	CHECK(st.bytes_inline == c.bytes_inline && st.bytes_pool == c.bytes_pool);

	/* The next file reuses the closed one's memory and starts at zero. */
	CHECK(nowait_file_open(ctx, fd[1], &r[1].f) == 0);
	CHECK(nowait_file_stats(r[1].f, &f1) == 0);
	CHECK(f1.hits == 0 && f1.misses == 0 && f1.bytes_pool == 0 && f1.bytes_inline == 0);
	hit_reads(&r[1]);
	CHECK(nowait_stats(ctx, &st) == 0);
	CHECK(st.hits == c.hits + HITS && st.bytes_inline == c.bytes_inline + (uint64_t)HITS * BS);
	CHECK(st.misses == c.misses && st.bytes_pool == c.bytes_pool);

	for (int i = 0; i < 2; i++) {
		CHECK(nowait_file_close(r[i].f) == 0);
		close(fd[i]);
	}
	CHECK(nowait_destroy(ctx) == 0);
	return 0;
}
