// SPDX-License-Identifier: MIT
/*
 * The miss backends. AUTO picks io_uring where it works and no hook asks
 * for threads; THREADS and IO_URING force one. Both serve reads, the rest
 * of short ones and ordered writes alike (O_DIRECT sends every request to
 * the backend). Where io_uring_setup fails, as under a seccomp filter
 * (EPERM) or on a kernel without it (ENOSYS), AUTO falls back to threads
 * and IO_URING fails with that error. Built without liburing (the nouring
 * variant), IO_URING is ENOSYS and AUTO threads.
 */
#include "helpers.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#define SIZE (1 << 20)

/* Reads and writes through a context with this backend; the file is SIZE bytes plus 100. */
static void serve(int fd, int backend)
{
	struct nowait_params p = { .backend = backend };
	struct nowait_req r[3] = { { 0 } };
	struct nowait_ctx *ctx;
	struct nowait_file *f;
	struct nowait_stats st;
	char path[64], *buf = aligned_alloc(4096, 3 * 16384);
	int dfd;

	CHECK(buf);
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	dfd = open(path, O_RDWR | O_DIRECT);
	if (dfd < 0 && errno == EINVAL)
		t_skip("O_DIRECT not supported by this file system");
	CHECK(dfd >= 0);
	CHECK(nowait_create(&p, &ctx) == 0);
	CHECK(nowait_backend(ctx) == backend);
	CHECK(nowait_file_open(ctx, dfd, &f) == 0);

	CHECK(nowait_read(f, &r[0], buf, 16384, 4096) == NOWAIT_QUEUED);
	/* Across end of file: 4096 + 100 bytes there, then EOF. */
	CHECK(nowait_read(f, &r[1], buf + 16384, 16384, SIZE - 4096) == NOWAIT_QUEUED);
	for (int i = 0; i < 2; i++) {
		struct nowait_req *done = t_wait(ctx);

		if (done == &r[0])
			CHECK(r[0].res == 16384 && t_data_ok(buf, 4096, 16384));
		else
			CHECK(done == &r[1] && r[1].res == 4196);
	}
	CHECK(t_data_ok(buf + 16384, SIZE - 4096, 4196));

	/* Overlapping writes land in order, away from what the next call reads. */
	memset(buf, 'a', 16384);
	memset(buf + 16384, 'b', 16384);
	CHECK(nowait_write(f, &r[0], buf, 16384, 262144) == NOWAIT_QUEUED);
	CHECK(nowait_write(f, &r[1], buf + 16384, 16384, 262144) == NOWAIT_QUEUED);
	CHECK(t_wait(ctx) == &r[0] && r[0].res == 16384);
	CHECK(t_wait(ctx) == &r[1] && r[1].res == 16384);
	CHECK(pread(dfd, buf + 32768, 16384, 262144) == 16384);
	CHECK(!memcmp(buf + 32768, buf + 16384, 16384));

	nowait_stats(ctx, &st);
	CHECK(st.fb_odirect == 2 && st.pool_jobs == 2 && st.write_pool_jobs == 2);
	CHECK(st.bytes_pool == 16384 + 4196 && st.bytes_written_pool == 32768);
	CHECK(st.pool_queued == 0);
	/*
	 * A pool thread counts as running until just after it posted its
	 * completion; the ring's count drops before reaping returns.
	 */
	if (backend == NOWAIT_BACKEND_IO_URING)
		CHECK(st.pool_running == 0);
	CHECK(st.pool_threads == (backend == NOWAIT_BACKEND_THREADS ? 4 : 0));
	nowait_destroy(ctx);
	close(dfd);
	free(buf);
}

/* In a child, with io_uring_setup refused by a seccomp filter: the exit status says how it went. */
static int refused(int err)
{
	struct sock_filter code[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_io_uring_setup, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (unsigned)err),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { .len = sizeof(code) / sizeof(code[0]), .filter = code };
	struct nowait_ctx *ctx = NULL;
	pid_t pid = fork();
	int status;

	CHECK(pid >= 0);
	if (pid == 0) {
		if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) ||
		    prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog))
			_exit(T_SKIP);
		if (nowait_create(&(struct nowait_params){ .backend = NOWAIT_BACKEND_IO_URING },
				  &ctx) != -err || ctx)
			_exit(2);
		if (nowait_create(NULL, &ctx) || nowait_backend(ctx) != NOWAIT_BACKEND_THREADS)
			_exit(3);
		nowait_destroy(ctx);
		_exit(0);
	}
	CHECK(waitpid(pid, &status, 0) == pid && WIFEXITED(status));
	return WEXITSTATUS(status);
}

int main(void)
{
	struct nowait_ctx *ctx;
	int fd, rc;

	t_start(60);
#ifdef T_NO_URING
	/* Built without liburing: IO_URING is ENOSYS, AUTO is threads. */
	CHECK(nowait_create(&(struct nowait_params){ .backend = NOWAIT_BACKEND_IO_URING }, &ctx) ==
	      -ENOSYS);
	CHECK(nowait_create(NULL, &ctx) == 0);
	CHECK(nowait_backend(ctx) == NOWAIT_BACKEND_THREADS);
	CHECK(nowait_destroy(ctx) == 0);
	fd = t_file(SIZE + 100);
	serve(fd, NOWAIT_BACKEND_THREADS);
	close(fd);
	return 0;
#endif
	/* First, while this process has no threads to lose in the fork. */
	rc = refused(EPERM);
	if (rc == T_SKIP)
		t_skip("cannot install a seccomp filter here");
	CHECK(rc == 0);
	CHECK(refused(ENOSYS) == 0);

	CHECK(nowait_create(&(struct nowait_params){ .backend = 3 }, &ctx) == -EINVAL);
	/* A hook the pool's reads must go through asks for threads. */
	CHECK(nowait_create(&(struct nowait_params){ .preadv2 = t_preadv2 }, &ctx) == 0);
	CHECK(nowait_backend(ctx) == NOWAIT_BACKEND_THREADS);
	nowait_destroy(ctx);

	fd = t_file(SIZE + 100);
	serve(fd, NOWAIT_BACKEND_THREADS);
	if (nowait_create(&(struct nowait_params){ .backend = NOWAIT_BACKEND_IO_URING }, &ctx))
		t_skip("io_uring is not available here: the threads backend passed");
	nowait_destroy(ctx);
	CHECK(nowait_create(NULL, &ctx) == 0);
	CHECK(nowait_backend(ctx) == NOWAIT_BACKEND_IO_URING);
	nowait_destroy(ctx);
	serve(fd, NOWAIT_BACKEND_IO_URING);
	close(fd);
	return 0;
}
