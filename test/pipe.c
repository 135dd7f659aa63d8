// SPDX-License-Identifier: MIT
/*
 * Pipes and sockets never get the inline attempt (their EAGAIN says nothing
 * about the page cache). Their reads complete like read(2), with what is
 * there, and a read waiting for data holds no pool thread.
 */
#include "helpers.h"

#include <errno.h>
#include <sys/socket.h>

static char data[4096];

static void read_stream(struct nowait_ctx *ctx, struct nowait_file *f, size_t len,
			ssize_t want)
{
	struct nowait_req req = { 0 };
	char buf[8192];

	CHECK(nowait_read(f, &req, buf, len, -1) == NOWAIT_QUEUED);
	CHECK(t_wait(ctx) == &req && req.res == want);
	CHECK(want <= 0 || t_data_ok(buf, 0, (size_t)want));
}

int main(void)
{
	/* Two threads: the two idle stream reads below would take both. */
	struct nowait_params p = { .preadv2 = t_preadv2, .threads = 2 };
	struct nowait_req idle[2] = { { 0 } }, disk = { 0 }, *done;
	struct nowait_ctx *ctx;
	struct nowait_file *pf, *sf, *rf, *old;
	struct nowait_stats st;
	char bufs[2][4096], dbuf[4096];
	int fds[2], sv[2], ofds[2], fd;

	t_start(60);
	for (size_t i = 0; i < sizeof(data); i++)
		data[i] = (char)t_byte((off_t)i);
	fd = t_file(65536);
	CHECK(pipe(fds) == 0 && pipe(ofds) == 0);
	CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
	CHECK(nowait_create(&p, &ctx) == 0);
	CHECK(nowait_file_open(ctx, fds[0], &pf) == 0);
	CHECK(nowait_file_open(ctx, sv[0], &sf) == 0);
	CHECK(nowait_file_open(ctx, fd, &rf) == 0);

	/* What is there, not the length asked for. */
	CHECK(write(fds[1], data, 1000) == 1000);
	read_stream(ctx, pf, 8192, 1000);
	CHECK(send(sv[1], data, 6, 0) == 6);
	read_stream(ctx, sf, 4096, 6);

	/* Both wait for data; a disk read behind them still completes. */
	CHECK(nowait_read(pf, &idle[0], bufs[0], sizeof(bufs[0]), -1) == NOWAIT_QUEUED);
	CHECK(nowait_read(sf, &idle[1], bufs[1], sizeof(bufs[1]), -1) == NOWAIT_QUEUED);
	atomic_store(&t_nowait_errno, EAGAIN);
	CHECK(nowait_read(rf, &disk, dbuf, sizeof(dbuf), 4096) == NOWAIT_QUEUED);
	CHECK(t_wait(ctx) == &disk && disk.res == sizeof(dbuf));
	CHECK(t_data_ok(dbuf, 4096, sizeof(dbuf)));
	atomic_store(&t_nowait_errno, 0);

	/* Data arrive: each waiting read gets them. */
	CHECK(write(fds[1], data, 2000) == 2000);
	CHECK(t_wait(ctx) == &idle[0] && idle[0].res == 2000);
	CHECK(t_data_ok(bufs[0], 0, 2000));
	CHECK(send(sv[1], data, 300, 0) == 300);
	CHECK(t_wait(ctx) == &idle[1] && idle[1].res == 300);
	CHECK(t_data_ok(bufs[1], 0, 300));

	/* An offset on a pipe is the kernel's ESPIPE; then EOF is 0. */
	CHECK(nowait_read(pf, &disk, dbuf, sizeof(dbuf), 0) == NOWAIT_QUEUED);
	CHECK((done = t_wait(ctx)) == &disk && disk.res == -ESPIPE);
	close(fds[1]);
	read_stream(ctx, pf, 4096, 0);
	CHECK(shutdown(sv[1], SHUT_WR) == 0);
	read_stream(ctx, sf, 4096, 0);

	/*
	 * A stream that refuses RWF_NOWAIT (pipes before Linux 5.8) is
	 * polled, then read plainly.
	 */
	CHECK(nowait_file_open(ctx, ofds[0], &old) == 0);
	atomic_store(&t_nowait_errno, EOPNOTSUPP);
	CHECK(nowait_read(old, &idle[0], bufs[0], sizeof(bufs[0]), -1) == NOWAIT_QUEUED);
	CHECK(write(ofds[1], data, 500) == 500);
	CHECK(t_wait(ctx) == &idle[0] && idle[0].res == 500);
	CHECK(t_data_ok(bufs[0], 0, 500));
	atomic_store(&t_nowait_errno, 0);

	nowait_file_stats(pf, &st);
	CHECK(st.fb_not_regular == 4 && st.pool_jobs == 4 && st.hits == 0);
	CHECK(st.bytes_pool == 3000);

	CHECK(nowait_file_close(pf) == 0);
	CHECK(nowait_file_close(sf) == 0);
	CHECK(nowait_file_close(rf) == 0);
	CHECK(nowait_file_close(old) == 0);
	nowait_destroy(ctx);
	close(fds[0]);
	close(ofds[0]);
	close(ofds[1]);
	close(sv[0]);
	close(sv[1]);
	close(fd);
	return 0;
}
