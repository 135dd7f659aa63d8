// SPDX-License-Identifier: MIT
/*
 * Shared pools (nowait_pool_create()): they start min_threads, grow on
 * demand up to max_threads, each new thread through the thread_create
 * hook, and shrink back to min_threads once idle; the gauges in
 * nowait_stats() show queued and running requests and the threads. Two
 * contexts share one: destroying one cancels only its own queued requests
 * and waits only for its own running ones. A pool in use refuses to go.
 */
#include "helpers.h"

#include <errno.h>
#include <sched.h>

static atomic_int created;

static int counting_create(pthread_t *thread, const pthread_attr_t *attr,
			   void *(*fn)(void *), void *arg)
{
	atomic_fetch_add(&created, 1);
	return pthread_create(thread, attr, fn, arg);
}

static struct nowait_stats gauges(struct nowait_ctx *ctx)
{
	struct nowait_stats st;

	CHECK(nowait_stats(ctx, &st) == 0);
	return st;
}

/*
 * Idle threads end after idle_ms, and a thread counts as running until just
 * after its completion was posted: waits for both, within the test's alarm.
 */
static void settle(struct nowait_ctx *ctx, uint64_t threads)
{
	struct nowait_stats st;

	do {
		sched_yield();
		st = gauges(ctx);
	} while (st.pool_threads != threads || st.pool_running);
}

static void params(void)
{
	struct nowait_pool *pool = NULL;
	struct nowait_ctx *ctx = NULL;

	CHECK(nowait_pool_create(&(struct nowait_pool_params){ .min_threads = 5 }, &pool) == -EINVAL);
	CHECK(nowait_pool_create(&(struct nowait_pool_params){ .max_threads = NOWAIT_MAX_THREADS + 1 },
				 &pool) == -EINVAL);
	CHECK(nowait_pool_create(&(struct nowait_pool_params){ .reserved[7] = 1 }, &pool) == -EINVAL);
	CHECK(!pool);
	CHECK(nowait_pool_create(NULL, &pool) == 0);
	CHECK(nowait_create(&(struct nowait_params){ .pool = pool,
						     .backend = NOWAIT_BACKEND_IO_URING }, &ctx) == -EINVAL);
	CHECK(nowait_create(&(struct nowait_params){ .pool = pool }, &ctx) == 0);
	CHECK(nowait_backend(ctx) == NOWAIT_BACKEND_THREADS);
	CHECK(gauges(ctx).pool_threads == 0);
	CHECK(nowait_pool_destroy(pool) == -EBUSY);
	nowait_destroy(ctx);
	CHECK(nowait_pool_destroy(pool) == 0);
}

static void grow_shrink(void)
{
	struct nowait_pool_params pp = { .min_threads = 1, .max_threads = 3, .idle_ms = 1,
					 .thread_create = counting_create };
	struct nowait_params p = { .preadv2 = t_gated_preadv2 };
	struct nowait_req r[5] = { { 0 } };
	char buf[5][4096];
	struct nowait_pool *pool;
	struct nowait_ctx *ctx;
	struct nowait_file *f;
	struct nowait_stats st;
	int fd = t_file(65536);

	CHECK(nowait_pool_create(&pp, &pool) == 0);
	CHECK(atomic_load(&created) == 1);
	p.pool = pool;
	CHECK(nowait_create(&p, &ctx) == 0);
	CHECK(nowait_file_open(ctx, fd, &f) == 0);
	CHECK(gauges(ctx).pool_threads == 1);

	t_gate_close(3);
	for (int i = 0; i < 5; i++) {
		CHECK(nowait_read(f, &r[i], buf[i], sizeof(buf[i]), i * 4096) == NOWAIT_QUEUED);
		if (i == 2)
			t_gate_wait(3);		/* the pool grew to 3, each running one */
	}
	st = gauges(ctx);
	CHECK(st.pool_threads == 3 && st.pool_running == 3 && st.pool_queued == 2);
	CHECK(atomic_load(&created) == 3);
	t_gate_open();
	for (int i = 0; i < 5; i++) {
		struct nowait_req *done = t_wait(ctx);
		int idx = (int)(done - r);

		CHECK(done->res == 4096 && t_data_ok(buf[idx], idx * 4096, 4096));
	}
	settle(ctx, 1);
	CHECK(gauges(ctx).pool_queued == 0);

	/* Grows again, into the slots of the threads that ended. */
	t_gate_close(2);
	CHECK(nowait_read(f, &r[0], buf[0], 4096, 0) == NOWAIT_QUEUED);
	CHECK(nowait_read(f, &r[1], buf[1], 4096, 4096) == NOWAIT_QUEUED);
	t_gate_wait(2);
	CHECK(gauges(ctx).pool_threads == 2 && atomic_load(&created) == 4);
	t_gate_open();
	t_wait(ctx);
	t_wait(ctx);
	nowait_destroy(ctx);
	CHECK(nowait_pool_destroy(pool) == 0);
	close(fd);
}

/* A holds the one thread; B's reads queue behind it; destroying B cancels them. */
static void shared(void)
{
	struct nowait_pool_params pp = { .max_threads = 1 };
	struct nowait_params p = { .preadv2 = t_gated_preadv2 };
	struct nowait_req ra = { 0 }, rb[2] = { { 0 } }, rc = { 0 };
	char a[4096], b[2][4096], c[4096];
	struct nowait_pool *pool;
	struct nowait_ctx *ca, *cb, *cc;
	struct nowait_file *fa, *fb, *fc;
	int fd = t_file(65536);

	CHECK(nowait_pool_create(&pp, &pool) == 0);
	p.pool = pool;
	CHECK(nowait_create(&p, &ca) == 0);
	CHECK(nowait_create(&p, &cb) == 0);
	CHECK(nowait_create(&p, &cc) == 0);
	CHECK(nowait_file_open(ca, fd, &fa) == 0);
	CHECK(nowait_file_open(cb, fd, &fb) == 0);
	CHECK(nowait_file_open(cc, fd, &fc) == 0);
	t_gate_close(1);
	CHECK(nowait_read(fa, &ra, a, sizeof(a), 0) == NOWAIT_QUEUED);
	t_gate_wait(1);
	CHECK(nowait_read(fb, &rb[0], b[0], sizeof(b[0]), 4096) == NOWAIT_QUEUED);
	CHECK(nowait_read(fc, &rc, c, sizeof(c), 12288) == NOWAIT_QUEUED);
	CHECK(nowait_read(fb, &rb[1], b[1], sizeof(b[1]), 8192) == NOWAIT_QUEUED);
	CHECK(gauges(ca).pool_queued == 3 && gauges(cb).pool_running == 1);
	/* Returns with A's read still held: B has nothing running. */
	nowait_destroy(cb);
	CHECK(rb[0].res == -ECANCELED && rb[1].res == -ECANCELED);
	CHECK(gauges(ca).pool_queued == 1);
	t_gate_open();
	CHECK(t_wait(ca) == &ra && ra.res == 4096 && t_data_ok(a, 0, 4096));
	CHECK(t_wait(cc) == &rc && rc.res == 4096 && t_data_ok(c, 12288, 4096));
	nowait_destroy(ca);
	nowait_destroy(cc);
	CHECK(nowait_pool_destroy(pool) == 0);
	close(fd);
}

int main(void)
{
	t_start(60);
	params();
	grow_shrink();
	shared();
	return 0;
}
