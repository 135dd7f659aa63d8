// SPDX-License-Identifier: MIT
/*
 * Misuse that is detected with an error instead of corrupting anything:
 * a request submitted again while the library still has it (-EBUSY, and it
 * completes once), a second nowait_file_close() and a read of a closed file
 * (-EBADF), nowait_destroy() from one of the context's own threads or under
 * its locks (-EDEADLK). And overlapping writes near INT64_MAX are ordered
 * without a signed overflow.
 */
#include "helpers.h"

#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <sys/stat.h>

/* Whether a completion is posted within ms: the eventfd becomes readable. */
static bool completion_within(struct nowait_ctx *ctx, int ms)
{
	struct pollfd pfd = { .fd = nowait_fd(ctx), .events = POLLIN };

	return poll(&pfd, 1, ms) == 1;
}

static void double_submit(void)
{
	struct nowait_params p = { .preadv2 = t_gated_preadv2, .pwritev2 = t_gated_pwritev2,
				   .threads = 1 };
	struct nowait_req r[3] = { { 0 } }, w[2] = { { 0 } }, *got[4];
	char buf[3][4096], wbuf[2][4096] = { "a", "b" };
	struct nowait_ctx *ctx;
	struct nowait_file *f;
	int fd = t_file(65536);

	CHECK(nowait_create(&p, &ctx) == 0);
	CHECK(nowait_file_open(ctx, fd, &f) == 0);
	t_gate_close(1);
	CHECK(nowait_read(f, &r[0], buf[0], 4096, 0) == NOWAIT_QUEUED);
	t_gate_wait(1);		/* r[0] runs, held at the gate */
	CHECK(nowait_read(f, &r[1], buf[1], 4096, 4096) == NOWAIT_QUEUED);	/* queued */
	CHECK(nowait_write(f, &w[0], wbuf[0], 4096, 32768) == NOWAIT_QUEUED);	/* queued */
	CHECK(nowait_write(f, &w[1], wbuf[1], 4096, 32768) == NOWAIT_QUEUED);	/* blocked */
	/* Running, queued and blocked requests, each submitted again. */
	CHECK(nowait_read(f, &r[0], buf[0], 4096, 8192) == -EBUSY);
	CHECK(nowait_read(f, &r[1], buf[1], 4096, 8192) == -EBUSY);
	CHECK(nowait_readv(f, &r[1], &(struct iovec){ buf[1], 10 }, 1, 0) == -EBUSY);
	CHECK(nowait_write(f, &w[0], wbuf[0], 4096, 0) == -EBUSY);
	CHECK(nowait_write(f, &w[1], wbuf[1], 4096, 0) == -EBUSY);
	CHECK(nowait_read(f, &w[1], buf[2], 4096, 0) == -EBUSY);
	t_gate_open();
	/* Each completes once, with its first submission's result. */
	for (int i = 0; i < 4; i++) {
		got[i] = t_wait(ctx);
		CHECK(got[i]->res == 4096);
	}
	CHECK(!completion_within(ctx, 200));
	CHECK(t_data_ok(buf[0], 0, 4096) && t_data_ok(buf[1], 4096, 4096));
	/* Completed and not yet reaped: still the library's. */
	CHECK(nowait_read(f, &r[2], buf[2], 4096, 12288) == NOWAIT_QUEUED);
	CHECK(completion_within(ctx, 10000));
	CHECK(nowait_read(f, &r[2], buf[2], 4096, 0) == -EBUSY);
	CHECK(t_wait(ctx) == &r[2] && r[2].res == 4096 && t_data_ok(buf[2], 12288, 4096));
	/* Reaped: free to go again. */
	CHECK(nowait_read(f, &r[0], buf[0], 4096, 16384) == NOWAIT_QUEUED);
	CHECK(t_wait(ctx) == &r[0] && r[0].res == 4096 && t_data_ok(buf[0], 16384, 4096));
	CHECK(nowait_destroy(ctx) == 0);
	close(fd);
}

static void double_close(void)
{
	struct nowait_req r = { 0 };
	struct nowait_ctx *ctx;
	struct nowait_file *f, *g;
	char buf[16];
	size_t done;
	int fd = t_file(4096);

	CHECK(nowait_create(NULL, &ctx) == 0);
	CHECK(nowait_file_open(ctx, fd, &f) == 0);
	CHECK(nowait_file_open(ctx, fd, &g) == 0);
	CHECK(nowait_file_close(f) == 0);
	CHECK(nowait_file_close(f) == -EBADF);
	CHECK(nowait_read(f, &r, buf, sizeof(buf), 0) == -EBADF);
	CHECK(nowait_write(f, &r, buf, sizeof(buf), 0) == -EBADF);
	CHECK(nowait_try_read(f, buf, sizeof(buf), 0, &done) == -EBADF);
	/* The other handle of the same descriptor is unaffected. */
	t_warm(fd, 0, 4096);
	CHECK(nowait_read(g, &r, buf, sizeof(buf), 0) == sizeof(buf) && t_data_ok(buf, 0, 16));
	CHECK(nowait_file_close(g) == 0);
	CHECK(nowait_file_close(g) == -EBADF);
	CHECK(nowait_destroy(ctx) == 0);
	close(fd);
}

/* ---- destroy from a hook ---- */

static struct nowait_ctx *_Atomic hook_ctx;	/* armed: the next hook call destroys it */
static atomic_int hook_said = 1;	/* what that destroy returned */

static void destroy_once(void)
{
	struct nowait_ctx *ctx = atomic_exchange(&hook_ctx, NULL);

	if (ctx)
		atomic_store(&hook_said, nowait_destroy(ctx));
}

/*
 * Inline attempts on regular files (in the caller's own thread, where a
 * destroy is not detected) miss; every other call is in a library thread.
 */
static ssize_t destroying_preadv2(int fd, const struct iovec *iov, int iovcnt, off_t off,
				  int flags)
{
	struct stat st;

	if ((flags & RWF_NOWAIT) && fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
		errno = EAGAIN;
		return -1;
	}
	destroy_once();
	return preadv2(fd, iov, iovcnt, off, flags);
}

/*
 * The library calls it with every signal blocked: let the alarm of
 * t_start() through, so that a deadlock here fails instead of hanging.
 */
static int destroying_create(pthread_t *t, const pthread_attr_t *a, void *(*fn)(void *), void *arg)
{
	sigset_t alarm_only, old;

	sigemptyset(&alarm_only);
	sigaddset(&alarm_only, SIGALRM);
	pthread_sigmask(SIG_UNBLOCK, &alarm_only, &old);
	destroy_once();
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return pthread_create(t, a, fn, arg);
}

/* In a pool thread (a regular file) and in the streamer (a pipe): -EDEADLK. */
static void destroy_in_own_thread(int backend, bool stream)
{
	struct nowait_params p = { .preadv2 = destroying_preadv2, .threads = 1, .backend = backend };
	struct nowait_req r = { 0 };
	struct nowait_ctx *ctx;
	struct nowait_file *f;
	char buf[4096];
	int fd = t_file(65536), fds[2];

	CHECK(pipe(fds) == 0);
	CHECK(nowait_create(&p, &ctx) == 0);
	CHECK(nowait_file_open(ctx, stream ? fds[0] : fd, &f) == 0);
	atomic_store(&hook_said, 1);
	hook_ctx = ctx;
	if (stream)
		CHECK(write(fds[1], "x", 1) == 1);
	CHECK(nowait_read(f, &r, buf, stream ? 1 : sizeof(buf), stream ? -1 : 0) == NOWAIT_QUEUED);
	CHECK(t_wait(ctx) == &r && r.res == (stream ? 1 : (ssize_t)sizeof(buf)));
	if (stream || backend == NOWAIT_BACKEND_THREADS)
		CHECK(atomic_load(&hook_said) == -EDEADLK);
	hook_ctx = NULL;
	CHECK(nowait_destroy(ctx) == 0);
	close(fd);
	close(fds[0]);
	close(fds[1]);
}

/* In a thread_create hook, run under the context's lock (the streamer's start). */
static void destroy_in_thread_create(void)
{
	struct nowait_params p = { .thread_create = destroying_create, .threads = 1 };
	struct nowait_ctx *ctx;
	struct nowait_file *f;
	int fds[2];

	CHECK(pipe(fds) == 0);
	CHECK(nowait_create(&p, &ctx) == 0);
	atomic_store(&hook_said, 1);
	hook_ctx = ctx;
	CHECK(nowait_file_open(ctx, fds[0], &f) == 0);
	CHECK(atomic_load(&hook_said) == -EDEADLK);
	CHECK(nowait_destroy(ctx) == 0);
	close(fds[0]);
	close(fds[1]);
}

/* ---- overlapping writes near INT64_MAX ---- */

#define FAR_A (INT64_MAX - 100)
#define FAR_B (INT64_MAX - 50)

static atomic_bool far_held, far_release;

/* Inline attempts miss; the pool's write at FAR_A waits for the release. Nothing is written. */
static ssize_t far_pwritev2(int fd, const struct iovec *iov, int iovcnt, off_t off, int flags)
{
	(void)fd;
	if (flags & RWF_NOWAIT) {
		errno = EAGAIN;
		return -1;
	}
	if (off == FAR_A) {
		atomic_store(&far_held, true);
		while (!atomic_load(&far_release))
			sched_yield();
	}
	return (ssize_t)iov[iovcnt - 1].iov_len;
}

/* B [FAR_B, +10) lies inside A [FAR_A, +4096): it waits for A, on two threads too. */
static void far_overlap(void)
{
	struct nowait_params p = { .pwritev2 = far_pwritev2, .threads = 2 };
	struct nowait_req a = { 0 }, b = { 0 };
	static char abuf[4096], bbuf[10];
	struct nowait_ctx *ctx;
	struct nowait_file *f;
	int fd = t_file(4096);

	CHECK(nowait_create(&p, &ctx) == 0);
	CHECK(nowait_file_open(ctx, fd, &f) == 0);
	CHECK(nowait_write(f, &a, abuf, sizeof(abuf), FAR_A) == NOWAIT_QUEUED);
	while (!atomic_load(&far_held))
		sched_yield();
	CHECK(nowait_write(f, &b, bbuf, sizeof(bbuf), FAR_B) == NOWAIT_QUEUED);
	CHECK(!completion_within(ctx, 300));
	atomic_store(&far_release, true);
	CHECK(t_wait(ctx) == &a && a.res == sizeof(abuf));
	CHECK(t_wait(ctx) == &b && b.res == sizeof(bbuf));
	CHECK(nowait_destroy(ctx) == 0);
	close(fd);
}

int main(void)
{
	struct nowait_params p = { .backend = NOWAIT_BACKEND_IO_URING };
	struct nowait_ctx *probe;
	bool uring = nowait_create(&p, &probe) == 0;

	t_start(60);
	if (uring)
		CHECK(nowait_destroy(probe) == 0);
	double_submit();
	double_close();
	destroy_in_own_thread(NOWAIT_BACKEND_THREADS, false);
	destroy_in_own_thread(NOWAIT_BACKEND_THREADS, true);
	if (uring)
		destroy_in_own_thread(NOWAIT_BACKEND_IO_URING, true);
	destroy_in_thread_create();
	far_overlap();
	return 0;
}
