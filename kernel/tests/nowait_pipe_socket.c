// SPDX-License-Identifier: GPL-2.0
/*
 * RWF_NOWAIT on pipes and AF_UNIX sockets.
 *
 * Anonymous pipes and sockets carry FMODE_NOWAIT (fs/pipe.c:993-994,
 * net/socket.c:477). With offset -1, IOCB_NOWAIT acts like O_NONBLOCK for
 * one call (pipe_read/pipe_write, fs/pipe.c:356-357, 557-558;
 * sock_read_iter/sock_write_iter set MSG_DONTWAIT, net/socket.c:1118-1119,
 * 1143-1144). Both are stream_open()ed, so an explicit offset is ESPIPE
 * (fs/read_write.c:1140-1142, 1163-1165). A named FIFO shares the pipe
 * code but fifo_open() sets no FMODE_NOWAIT.
 *
 * All descriptors stay blocking: if NOWAIT were ignored the call would
 * hang, so every case runs under a short alarm that turns a hang into a
 * failure (SIGALRM) instead of waiting out the harness timeout.
 */
#include "kselftest_harness.h"
#include "nowait_test.h"

#include <signal.h>
#include <sys/socket.h>

#define HANG_SECONDS 5

static void assert_blocking(struct __test_metadata *_metadata, int fd)
{
	int fl = fcntl(fd, F_GETFL);

	ASSERT_LE(0, fl);
	ASSERT_EQ(0, fl & O_NONBLOCK) TH_LOG("NOWAIT changed the file's flags");
}

FIXTURE(pipe) {
	int rd, wr;
	size_t cap;
};

FIXTURE_SETUP(pipe)
{
	int p[2], cap;

	ASSERT_EQ(0, pipe2(p, O_CLOEXEC));
	self->rd = p[0];
	self->wr = p[1];
	cap = fcntl(self->wr, F_GETPIPE_SZ);
	ASSERT_LT(0, cap);
	self->cap = (size_t)cap;
	alarm(HANG_SECONDS);
}

FIXTURE_TEARDOWN(pipe)
{
	close(self->rd);
	close(self->wr);
}

/* Fill every slot with full pages, so not even one more byte fits. */
static void fill_pipe(struct __test_metadata *_metadata,
		      FIXTURE_DATA(pipe) *self, size_t bytes)
{
	unsigned char page[4096];

	memset(page, 0x5a, sizeof(page));
	for (size_t done = 0; done < bytes; done += sizeof(page)) {
		ASSERT_EQ((ssize_t)sizeof(page),
			  write(self->wr, page, sizeof(page)));
	}
}

TEST_F(pipe, read_empty_eagain_without_sleeping)
{
	unsigned char buf[64];
	bool slept;

	NOWAIT_ASSERT_ERRNO(NOWAIT_MEASURE(slept,
		nowait_preadv2(self->rd, buf, sizeof(buf), -1, RWF_NOWAIT)),
		EAGAIN);
	EXPECT_FALSE(slept) TH_LOG("the NOWAIT read slept");
	assert_blocking(_metadata, self->rd);
}

TEST_F(pipe, read_returns_available_data)
{
	unsigned char out[100], in[4096];

	nowait_fill(out, sizeof(out), 0, 7);
	ASSERT_EQ((ssize_t)sizeof(out), write(self->wr, out, sizeof(out)));
	ASSERT_EQ((ssize_t)sizeof(out),
		  nowait_preadv2(self->rd, in, sizeof(in), -1, RWF_NOWAIT));
	NOWAIT_ASSERT_PATTERN(in, sizeof(out), 0, 7);
	/* drained: the next one is EAGAIN again, not 0 (writer still open) */
	NOWAIT_ASSERT_ERRNO(nowait_preadv2(self->rd, in, sizeof(in), -1,
					   RWF_NOWAIT), EAGAIN);
}

TEST_F(pipe, explicit_offset_espipe)
{
	unsigned char buf[64];

	memset(buf, 0, sizeof(buf));
	NOWAIT_ASSERT_ERRNO(nowait_preadv2(self->rd, buf, sizeof(buf), 0,
					   RWF_NOWAIT), ESPIPE);
	NOWAIT_ASSERT_ERRNO(nowait_pwritev2(self->wr, buf, sizeof(buf), 0,
					    RWF_NOWAIT), ESPIPE);
	NOWAIT_ASSERT_ERRNO(nowait_preadv2(self->rd, buf, sizeof(buf), 0, 0),
			    ESPIPE);
}

TEST_F(pipe, write_full_eagain_without_sleeping)
{
	unsigned char byte = 1, page[4096];
	bool slept;

	fill_pipe(_metadata, self, self->cap);
	NOWAIT_ASSERT_ERRNO(NOWAIT_MEASURE(slept,
		nowait_pwritev2(self->wr, &byte, 1, -1, RWF_NOWAIT)), EAGAIN);
	EXPECT_FALSE(slept) TH_LOG("the NOWAIT write slept");
	assert_blocking(_metadata, self->wr);

	/* room for one page again: the same call now succeeds */
	ASSERT_EQ((ssize_t)sizeof(page), read(self->rd, page, sizeof(page)));
	ASSERT_EQ(1, nowait_pwritev2(self->wr, &byte, 1, -1, RWF_NOWAIT));
}

/* When only part fits, NOWAIT returns the part (fs/pipe.c:557-561). */
TEST_F(pipe, write_partial_when_nearly_full)
{
	unsigned char buf[8192];

	fill_pipe(_metadata, self, self->cap - 4096);
	memset(buf, 0x33, sizeof(buf));
	ASSERT_EQ(4096, nowait_pwritev2(self->wr, buf, sizeof(buf), -1,
					RWF_NOWAIT));
	NOWAIT_ASSERT_ERRNO(nowait_pwritev2(self->wr, buf, 1, -1, RWF_NOWAIT),
			    EAGAIN);
}

/*
 * EOPNOTSUPP: include/linux/fs.h:3621-3623. A FIFO opened by name goes
 * through fifo_open(), which never sets FMODE_NOWAIT, unlike pipe2().
 */
TEST(named_fifo_nowait_eopnotsupp)
{
	const char *tmp = getenv("TMPDIR");
	char path[PATH_MAX];
	unsigned char buf[16];
	int fd, e;

	snprintf(path, sizeof(path), "%s/nowait-fifo.%d",
		 tmp && *tmp ? tmp : "/tmp", (int)getpid());
	if (mkfifo(path, 0600))
		SKIP(return, "mkfifo %.900s: %s", path, nowait_errname(errno));
	/* O_RDWR: a FIFO open that cannot block on the other end */
	fd = open(path, O_RDWR | O_CLOEXEC);
	e = errno;
	unlink(path);
	ASSERT_LE(0, fd) TH_LOG("open %s: %s", path, nowait_errname(e));
	alarm(HANG_SECONDS);
	memset(buf, 0x11, sizeof(buf));
	NOWAIT_ASSERT_ERRNO(nowait_preadv2(fd, buf, sizeof(buf), -1,
					   RWF_NOWAIT), EOPNOTSUPP);
	NOWAIT_ASSERT_ERRNO(nowait_pwritev2(fd, buf, sizeof(buf), -1,
					    RWF_NOWAIT), EOPNOTSUPP);
	ASSERT_EQ((ssize_t)sizeof(buf),
		  nowait_pwritev2(fd, buf, sizeof(buf), -1, 0));
	close(fd);
}

FIXTURE(unix_stream) {
	int a, b;
};

FIXTURE_SETUP(unix_stream)
{
	int sv[2];

	ASSERT_EQ(0, socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv));
	self->a = sv[0];
	self->b = sv[1];
	alarm(HANG_SECONDS);
}

FIXTURE_TEARDOWN(unix_stream)
{
	close(self->a);
	close(self->b);
}

TEST_F(unix_stream, read_empty_eagain_without_sleeping)
{
	unsigned char buf[64];
	bool slept;

	NOWAIT_ASSERT_ERRNO(NOWAIT_MEASURE(slept,
		nowait_preadv2(self->a, buf, sizeof(buf), -1, RWF_NOWAIT)),
		EAGAIN);
	EXPECT_FALSE(slept) TH_LOG("the NOWAIT read slept");
	assert_blocking(_metadata, self->a);
}

TEST_F(unix_stream, read_returns_available_data)
{
	unsigned char out[300], in[4096];

	nowait_fill(out, sizeof(out), 0, 9);
	ASSERT_EQ((ssize_t)sizeof(out), write(self->b, out, sizeof(out)));
	ASSERT_EQ((ssize_t)sizeof(out),
		  nowait_preadv2(self->a, in, sizeof(in), -1, RWF_NOWAIT));
	NOWAIT_ASSERT_PATTERN(in, sizeof(out), 0, 9);
	NOWAIT_ASSERT_ERRNO(nowait_preadv2(self->a, in, sizeof(in), -1,
					   RWF_NOWAIT), EAGAIN);
}

TEST_F(unix_stream, explicit_offset_espipe)
{
	unsigned char buf[64];

	memset(buf, 0, sizeof(buf));
	NOWAIT_ASSERT_ERRNO(nowait_preadv2(self->a, buf, sizeof(buf), 0,
					   RWF_NOWAIT), ESPIPE);
	NOWAIT_ASSERT_ERRNO(nowait_pwritev2(self->a, buf, sizeof(buf), 0,
					    RWF_NOWAIT), ESPIPE);
}

/*
 * Fill the peer's receive queue until NOWAIT says EAGAIN; a blocking
 * socket would otherwise hang here. The bound is far above any default
 * AF_UNIX buffer with a 4 KiB SO_SNDBUF.
 */
TEST_F(unix_stream, write_full_eagain_then_drains)
{
	const int sndbuf = 4096;
	unsigned char buf[1024];
	size_t sent = 0, got = 0;
	ssize_t r = 0;

	ASSERT_EQ(0, setsockopt(self->b, SOL_SOCKET, SO_SNDBUF, &sndbuf,
				sizeof(sndbuf)));
	memset(buf, 0x77, sizeof(buf));
	while (sent < (64u << 20)) {
		r = nowait_pwritev2(self->b, buf, sizeof(buf), -1, RWF_NOWAIT);
		if (r <= 0)
			break;
		sent += (size_t)r;
	}
	NOWAIT_ASSERT_ERRNO(r, EAGAIN);
	ASSERT_LT(0, sent);
	assert_blocking(_metadata, self->b);

	while (got < sent) {
		r = nowait_preadv2(self->a, buf, sizeof(buf), -1, RWF_NOWAIT);
		ASSERT_LT(0, r) TH_LOG("got %zu of %zu: %s", got, sent,
				       nowait_errname(errno));
		got += (size_t)r;
	}
	ASSERT_EQ(sent, got);
}

TEST_HARNESS_MAIN
