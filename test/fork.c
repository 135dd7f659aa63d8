// SPDX-License-Identifier: MIT
/*
 * After fork() the child's copy of a context is dead: every call returns
 * -ECHILD, nothing touches the eventfd the child shares with its parent, and
 * destroy only closes the child's descriptors. The parent goes on as before.
 * The same holds for the 1.1 calls, and for a shared pool's copy.
 */
#include "helpers.h"

#include <errno.h>
#include <poll.h>
#include <sys/wait.h>

static void child(struct nowait_ctx *ctx, struct nowait_file *f, int fd, struct nowait_pool *pool,
		  struct nowait_req *queued)
{
	struct nowait_ctx *other = NULL;

	struct nowait_req req = { 0 }, *done;
	struct nowait_stats st;
	struct nowait_file *g;
	struct iovec iov;
	char buf[4096];

	iov = (struct iovec){ buf, sizeof(buf) };
	CHECK(nowait_read(f, &req, buf, sizeof(buf), 0) == -ECHILD);
	CHECK(nowait_readv(f, &req, &iov, 1, 0) == -ECHILD);
	CHECK(nowait_reap(ctx, &done, 1) == -ECHILD);
	CHECK(nowait_fd(ctx) == -ECHILD);
	CHECK(nowait_file_open(ctx, fd, &g) == -ECHILD);
	CHECK(nowait_file_close(f) == -ECHILD);
	CHECK(nowait_stats(ctx, &st) == -ECHILD);
	CHECK(nowait_file_stats(f, &st) == -ECHILD);
	CHECK(nowait_cancel(ctx, queued) == -ECHILD);
	CHECK(nowait_backend(ctx) == -ECHILD);
	CHECK(nowait_file_set_class(f, NOWAIT_CLASS_BACKGROUND) == -ECHILD);
	CHECK(nowait_create(&(struct nowait_params){ .pool = pool }, &other) == -ECHILD && !other);
	CHECK(nowait_pool_destroy(pool) == -ECHILD);
	nowait_destroy(ctx);
}

int main(void)
{
	struct nowait_params p = { .preadv2 = t_preadv2 };
	struct nowait_ctx *ctx;
	struct nowait_file *f;
	struct nowait_req req = { 0 };
	struct nowait_pool *pool;
	struct pollfd pfd;
	char buf[4096];
	int fd, status;
	pid_t pid;

	t_start(30);
	fd = t_file(65536);
	CHECK(nowait_pool_create(NULL, &pool) == 0);
	p.pool = pool;
	CHECK(nowait_create(&p, &ctx) == 0);
	CHECK(nowait_file_open(ctx, fd, &f) == 0);

	/* A completion waiting in the eventfd across the fork. */
	atomic_store(&t_nowait_errno, EAGAIN);
	CHECK(nowait_read(f, &req, buf, sizeof(buf), 4096) == NOWAIT_QUEUED);
	pfd = (struct pollfd){ .fd = nowait_fd(ctx), .events = POLLIN };
	CHECK(poll(&pfd, 1, 10000) == 1);

	pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		child(ctx, f, fd, pool, &req);
		_exit(0);
	}
	CHECK(waitpid(pid, &status, 0) == pid);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);

	CHECK(poll(&pfd, 1, 0) == 1);
	CHECK(t_wait(ctx) == &req && req.res == sizeof(buf));
	CHECK(t_data_ok(buf, 4096, sizeof(buf)));
	CHECK(nowait_read(f, &req, buf, sizeof(buf), 8192) == NOWAIT_QUEUED);
	CHECK(t_wait(ctx) == &req && req.res == sizeof(buf));
	CHECK(t_data_ok(buf, 8192, sizeof(buf)));

	CHECK(nowait_file_close(f) == 0);
	nowait_destroy(ctx);
	CHECK(nowait_pool_destroy(pool) == 0);
	close(fd);
	return 0;
}
