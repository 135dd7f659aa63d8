// SPDX-License-Identifier: MIT
/*
 * ENOSYS (no preadv2), and EPERM that the pool's plain read does not get (a
 * seccomp filter refusing the flag), stop inline attempts for the whole
 * context, on every file; the reads still succeed through the pool. EPERM
 * that the plain read gets too (an on-access scanner denying one file) stops
 * them on that file only.
 */
#include "helpers.h"

#include <errno.h>

/* Stats of the context and of the file opened second. */
static void latch(int err, struct nowait_stats *ctx_st, struct nowait_stats *file_st)
{
	struct nowait_params p = { .preadv2 = t_preadv2 };
	struct nowait_ctx *ctx;
	struct nowait_file *f[2];
	struct nowait_req req = { 0 };
	char buf[4096];
	int fd = t_file(65536);

	t_warm(fd, 0, 65536);
	atomic_store(&t_nowait_calls, 0);
	CHECK(nowait_create(&p, &ctx) == 0);
	CHECK(nowait_file_open(ctx, fd, &f[0]) == 0);
	CHECK(nowait_file_open(ctx, fd, &f[1]) == 0);

	atomic_store(&t_nowait_errno, err);
	CHECK(nowait_read(f[0], &req, buf, sizeof(buf), 0) == NOWAIT_QUEUED);
	CHECK(t_wait(ctx) == &req && req.res == sizeof(buf));
	CHECK(t_data_ok(buf, 0, sizeof(buf)));
	atomic_store(&t_nowait_errno, 0);

	for (int i = 0; i < 2; i++) {
		CHECK(nowait_read(f[i], &req, buf, sizeof(buf), 4096) == NOWAIT_QUEUED);
		CHECK(t_wait(ctx) == &req && req.res == sizeof(buf));
		CHECK(t_data_ok(buf, 4096, sizeof(buf)));
	}
	CHECK(atomic_load(&t_nowait_calls) == 1);
	nowait_stats(ctx, ctx_st);
	nowait_file_stats(f[1], file_st);
	CHECK(ctx_st->pool_jobs == 3 && ctx_st->hits == 0);

	/* The files are left open on purpose: destroy frees them. */
	nowait_destroy(ctx);
	close(fd);
}

static void one_file(void)
{
	struct nowait_params p = { .preadv2 = t_preadv2 };
	struct nowait_ctx *ctx;
	struct nowait_file *denied, *other;
	struct nowait_req req = { 0 };
	struct nowait_stats st;
	char buf[4096];
	int fd = t_file(65536);

	t_warm(fd, 0, 65536);
	atomic_store(&t_nowait_calls, 0);
	CHECK(nowait_create(&p, &ctx) == 0);
	CHECK(nowait_file_open(ctx, fd, &denied) == 0);
	CHECK(nowait_file_open(ctx, fd, &other) == 0);

	atomic_store(&t_nowait_errno, EPERM);
	atomic_store(&t_pool_errno, EPERM);
	CHECK(nowait_read(denied, &req, buf, sizeof(buf), 0) == NOWAIT_QUEUED);
	CHECK(t_wait(ctx) == &req && req.res == -EPERM);
	atomic_store(&t_nowait_errno, 0);
	atomic_store(&t_pool_errno, 0);

	CHECK(nowait_read(other, &req, buf, sizeof(buf), 4096) == sizeof(buf));
	CHECK(t_data_ok(buf, 4096, sizeof(buf)));
	CHECK(nowait_read(denied, &req, buf, sizeof(buf), 4096) == NOWAIT_QUEUED);
	CHECK(t_wait(ctx) == &req && req.res == sizeof(buf));
	CHECK(atomic_load(&t_nowait_calls) == 2);
	nowait_file_stats(denied, &st);
	CHECK(st.fb_eperm == 2 && st.pool_jobs == 2);
	nowait_stats(ctx, &st);
	CHECK(st.fb_eperm == 2 && st.hits == 1);

	nowait_destroy(ctx);
	close(fd);
}

int main(void)
{
	struct nowait_stats c, f;

	t_start(30);
	latch(ENOSYS, &c, &f);
	CHECK(c.fb_enosys == 3 && f.fb_enosys == 1);
	latch(EPERM, &c, &f);
	CHECK(c.fb_eperm == 3 && f.fb_eperm == 1);
	one_file();
	return 0;
}
