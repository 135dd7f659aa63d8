// SPDX-License-Identifier: MIT
/*
 * Closing the caller's fd with requests in flight, and the number going to
 * another file or connection at once (the lowest free number is reused):
 * the library holds its own reference, so the queued reads still read the
 * first file, the queued writes still land in it, a socket read still
 * waits on its own connection, and none touches the newcomer.
 */
#include "helpers.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/stat.h>

#define N 64
#define LEN 16384

/* The newcomer that gets the number fd had: a file of 'v' bytes. */
static int victim_at(int fd, size_t size)
{
	int v = t_file(size);

	/* Usually it gets the number anyway, as the lowest free one. */
	if (v != fd) {
		CHECK(dup2(v, fd) == fd);
		close(v);
	}
	return fd;
}

static void reads(void)
{
	struct nowait_params p = { .preadv2 = t_gated_preadv2, .threads = 2 };
	struct nowait_req *reqs = calloc(N, sizeof(*reqs));
	char *bufs = malloc((size_t)N * LEN);
	struct nowait_ctx *ctx;
	struct nowait_file *f;
	struct stat st;
	int fd;

	CHECK(reqs && bufs);
	fd = t_file((size_t)N * LEN);
	CHECK(nowait_create(&p, &ctx) == 0);
	CHECK(nowait_file_open(ctx, fd, &f) == 0);
	t_gate_close(2);
	for (int i = 0; i < N; i++)
		CHECK(nowait_read(f, &reqs[i], bufs + (size_t)i * LEN, LEN,
				  (off_t)i * LEN) == NOWAIT_QUEUED);
	t_gate_wait(2);		/* two running, the rest queued */
	close(fd);
	fd = victim_at(fd, 4096);
	CHECK(pwrite(fd, "victim", 6, 0) == 6);
	t_gate_open();
	for (int i = 0; i < N; i++) {
		struct nowait_req *req = t_wait(ctx);
		size_t k = (size_t)(req - reqs);

		CHECK(req->res == LEN);
		CHECK(t_data_ok(bufs + k * LEN, (off_t)k * LEN, LEN));
	}
	CHECK(fstat(fd, &st) == 0 && st.st_size == 4096);
	CHECK(nowait_file_close(f) == 0);
	CHECK(nowait_destroy(ctx) == 0);
	close(fd);
	free(reqs);
	free(bufs);
}

static void writes(void)
{
	struct nowait_params p = { .pwritev2 = t_gated_pwritev2, .threads = 2 };
	struct nowait_req reqs[N] = { { 0 } };
	static char line[N][64], back[64];
	struct nowait_ctx *ctx;
	struct nowait_file *f;
	struct stat st;
	int fd = t_file(4096), first = dup(fd);

	CHECK(first >= 0);
	CHECK(nowait_create(&p, &ctx) == 0);
	CHECK(nowait_file_open(ctx, fd, &f) == 0);
	t_gate_close(2);
	for (int i = 0; i < N; i++) {
		snprintf(line[i], sizeof(line[i]), "log line %d of the first file\n", i);
		CHECK(nowait_write(f, &reqs[i], line[i], sizeof(line[i]),
				   8192 + (off_t)i * 64) == NOWAIT_QUEUED);
	}
	t_gate_wait(2);
	close(fd);
	fd = victim_at(fd, 36);
	t_gate_open();
	for (int i = 0; i < N; i++)
		CHECK(t_wait(ctx)->res == 64);
	CHECK(fstat(fd, &st) == 0 && st.st_size == 36);
	for (int i = 0; i < N; i++) {
		CHECK(pread(first, back, sizeof(back), 8192 + (off_t)i * 64) == sizeof(back));
		CHECK(!memcmp(back, line[i], sizeof(back)));
	}
	CHECK(nowait_file_close(f) == 0);
	CHECK(nowait_destroy(ctx) == 0);
	close(fd);
	close(first);
}

/*
 * A read waits on connection A; A's fd is closed and connection B gets the
 * number. B's request is B's: its owner reads it, the old read does not.
 * The old read still reads A, and can be cancelled.
 */
static void sockets(void)
{
	static const char secret[] = "client B's private request";
	struct nowait_req r = { 0 }, r2 = { 0 };
	struct nowait_ctx *ctx;
	struct nowait_file *f;
	char buf[64], got[64];
	int a[2], b[2], num;

	CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, a) == 0);
	CHECK(nowait_create(NULL, &ctx) == 0);
	CHECK(nowait_file_open(ctx, a[0], &f) == 0);
	CHECK(nowait_read(f, &r, buf, sizeof(buf), -1) == NOWAIT_QUEUED);
	num = a[0];
	close(a[0]);
	CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, b) == 0);
	if (b[0] != num) {
		CHECK(dup2(b[0], num) == num);
		close(b[0]);
		b[0] = num;
	}
	CHECK(send(b[1], secret, sizeof(secret), 0) == sizeof(secret));
	usleep(100000);		/* time for a wrong read to happen */
	CHECK(recv(b[0], got, sizeof(got), MSG_DONTWAIT) == sizeof(secret));
	CHECK(!memcmp(got, secret, sizeof(secret)));
	/* Still waiting, on A. */
	CHECK(send(a[1], "A", 1, 0) == 1);
	CHECK(t_wait(ctx) == &r && r.res == 1 && buf[0] == 'A');
	/* Another read of A, cancelled: it never completes with data. */
	CHECK(nowait_read(f, &r2, buf, sizeof(buf), -1) == NOWAIT_QUEUED);
	CHECK(nowait_cancel(ctx, &r2) == 0);
	CHECK(t_wait(ctx) == &r2 && r2.res == -ECANCELED);
	CHECK(nowait_file_close(f) == 0);
	/* The library's reference is gone: A's peer sees EOF. */
	CHECK(recv(a[1], got, sizeof(got), 0) == 0);
	CHECK(nowait_destroy(ctx) == 0);
	close(a[1]);
	close(b[0]);
	close(b[1]);
}

int main(void)
{
	t_start(60);
	reads();
	writes();
	sockets();
	return 0;
}
