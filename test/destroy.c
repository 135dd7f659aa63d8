// SPDX-License-Identifier: MIT
/*
 * Destroying a context with work queued: the running job finishes, queued
 * ones end with -ECANCELED, unreaped completions and open files are freed.
 * Reads of pipes and sockets still waiting for data end with -ECANCELED:
 * destroy never waits for a peer. A write waiting for an earlier overlapping
 * one gets its final result too, and never runs if that one was cancelled.
 */
#include "helpers.h"

#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <sys/socket.h>

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

static atomic_int stream_calls;

static ssize_t counting_preadv2(int fd, const struct iovec *iov, int iovcnt, off_t off,
				int flags)
{
	atomic_fetch_add(&stream_calls, 1);
	return preadv2(fd, iov, iovcnt, off, flags);
}

static void idle_streams(void)
{
	struct nowait_params p = { .preadv2 = counting_preadv2, .threads = 1 };
	struct nowait_req reqs[3] = { { 0 } };
	char bufs[3][64];
	struct nowait_ctx *ctx;
	struct nowait_file *pf, *sf;
	int fds[2], sv[2];

	CHECK(pipe(fds) == 0 && socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
	CHECK(nowait_create(&p, &ctx) == 0);
	CHECK(nowait_file_open(ctx, fds[0], &pf) == 0);
	CHECK(nowait_file_open(ctx, sv[0], &sf) == 0);
	CHECK(nowait_read(pf, &reqs[0], bufs[0], sizeof(bufs[0]), -1) == NOWAIT_QUEUED);
	CHECK(nowait_read(pf, &reqs[1], bufs[1], sizeof(bufs[1]), -1) == NOWAIT_QUEUED);
	CHECK(nowait_read(sf, &reqs[2], bufs[2], sizeof(bufs[2]), -1) == NOWAIT_QUEUED);
	/*
	 * The first read of each file has been tried and found nothing: all
	 * three are waiting (the second pipe read behind the first, untried).
	 */
	while (atomic_load(&stream_calls) < 2)
		sched_yield();
	nowait_destroy(ctx);
	for (int i = 0; i < 3; i++)
		CHECK(reqs[i].res == -ECANCELED);
	close(fds[0]);
	close(fds[1]);
	close(sv[0]);
	close(sv[1]);
}

static atomic_bool w0_started, destroying;
static atomic_int main_tid;

/* Whether the main thread sleeps, as it does in destroy's pthread_join. */
static bool main_sleeps(void)
{
	char path[64], buf[512], *p;
	FILE *fp;
	size_t n;

	snprintf(path, sizeof(path), "/proc/self/task/%d/stat", atomic_load(&main_tid));
	fp = fopen(path, "r");
	CHECK(fp);
	n = fread(buf, 1, sizeof(buf) - 1, fp);
	fclose(fp);
	buf[n] = 0;
	p = strrchr(buf, ')');
	return p && p[1] && p[2] == 'S';
}

/*
 * Inline attempts miss. The write at 64 KiB holds the only pool thread
 * until destroy has (most likely) begun; the outcome checked below is the
 * same either way, the wait only makes the cancellation path the likely one.
 */
static ssize_t gated_pwritev2(int fd, const struct iovec *iov, int iovcnt, off_t off, int flags)
{
	if (flags & RWF_NOWAIT) {
		errno = EAGAIN;
		return -1;
	}
	if (off == 65536) {
		atomic_store(&w0_started, true);
		while (!atomic_load(&destroying) || !main_sleeps())
			sched_yield();
	}
	return pwritev2(fd, iov, iovcnt, off, flags);
}

static void held_write(void)
{
	struct nowait_params p = { .pwritev2 = gated_pwritev2, .threads = 1 };
	struct nowait_req w0 = { .res = 1 }, w1 = { .res = 1 }, w2 = { .res = 1 };
	char b0[4096] = "0", b1[8192] = "1", b2[4096] = "2";
	struct nowait_ctx *ctx;
	struct nowait_file *f;
	int fd = t_file(128 * 1024);

	atomic_store(&main_tid, gettid());
	CHECK(nowait_create(&p, &ctx) == 0);
	CHECK(nowait_file_open(ctx, fd, &f) == 0);
	CHECK(nowait_write(f, &w0, b0, sizeof(b0), 65536) == NOWAIT_QUEUED);
	while (!atomic_load(&w0_started))
		sched_yield();
	/* w1 waits for the pool thread, w2 for w1. */
	CHECK(nowait_write(f, &w1, b1, sizeof(b1), 0) == NOWAIT_QUEUED);
	CHECK(nowait_write(f, &w2, b2, sizeof(b2), 4096) == NOWAIT_QUEUED);
	atomic_store(&destroying, true);
	nowait_destroy(ctx);

	CHECK(w0.res == sizeof(b0));
	CHECK(w1.res == sizeof(b1) || w1.res == -ECANCELED);
	CHECK(w2.res == sizeof(b2) || w2.res == -ECANCELED);
	CHECK(w1.res != -ECANCELED || w2.res == -ECANCELED);
	close(fd);
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

	idle_streams();
	held_write();
	return 0;
}
