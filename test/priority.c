// SPDX-License-Identifier: MIT
/*
 * Two classes: a pool thread takes the oldest interactive request first,
 * and a background one only when no interactive one is queued, or after
 * 16 interactive ones in a row went ahead of it. One thread, held at the
 * gate while the queue fills, makes the order of completions the order in
 * which requests were taken.
 */
#include "helpers.h"

#include <errno.h>

#define N 24

static struct nowait_req reqs[N];
static char bufs[N][512];

/* Queues the requests of cls[] (after one that holds the thread) and returns their completion order. */
static void run(const int *cls, int n, int *order)
{
	struct nowait_params p = { .preadv2 = t_gated_preadv2, .threads = 1 };
	struct nowait_req first = { 0 };
	struct nowait_ctx *ctx;
	struct nowait_file *f[2];
	char buf[512];
	int fd = t_file(65536);

	CHECK(nowait_create(&p, &ctx) == 0);
	CHECK(nowait_file_open(ctx, fd, &f[0]) == 0);
	CHECK(nowait_file_open(ctx, fd, &f[1]) == 0);
	CHECK(nowait_file_set_class(f[1], NOWAIT_CLASS_BACKGROUND) == 0);
	t_gate_close(1);
	CHECK(nowait_read(f[0], &first, buf, sizeof(buf), 0) == NOWAIT_QUEUED);
	t_gate_wait(1);
	for (int i = 0; i < n; i++) {
		reqs[i].user_data = &order[i];
		CHECK(nowait_read(f[cls[i]], &reqs[i], bufs[i], sizeof(bufs[i]),
				  (off_t)i * 512) == NOWAIT_QUEUED);
	}
	t_gate_open();
	CHECK(t_wait(ctx) == &first && first.res == sizeof(buf));
	for (int i = 0; i < n; i++) {
		struct nowait_req *r = t_wait(ctx);
		int idx = (int)(r - reqs);

		CHECK(r->res == 512 && t_data_ok(bufs[idx], (off_t)idx * 512, 512));
		order[i] = idx;
	}
	nowait_destroy(ctx);
	close(fd);
}

int main(void)
{
	struct nowait_ctx *ctx;
	struct nowait_file *f;
	int cls[N], order[N];
	int fd;

	t_start(60);
	CHECK(nowait_create(NULL, &ctx) == 0);
	fd = t_file(4096);
	CHECK(nowait_file_open(ctx, fd, &f) == 0);
	CHECK(nowait_file_set_class(f, 2) == -EINVAL);
	CHECK(nowait_file_set_class(f, -1) == -EINVAL);
	nowait_destroy(ctx);
	close(fd);

	/* Four background, then three interactive: those three overtake all four. */
	for (int i = 0; i < 7; i++)
		cls[i] = i < 4;
	run(cls, 7, order);
	for (int i = 0; i < 7; i++)
		CHECK(order[i] == (i < 3 ? 4 + i : i - 3));

	/* One background behind 20 interactive: it goes after the 16th. */
	for (int i = 0; i < 21; i++)
		cls[i] = i == 0;
	run(cls, 21, order);
	for (int i = 0; i < 21; i++)
		CHECK(order[i] == (i < 16 ? i + 1 : i == 16 ? 0 : i));
	return 0;
}
