// SPDX-License-Identifier: GPL-2.0
/*
 * preadv2/pwritev2 and the file position.
 *
 * An offset >= 0 goes through do_preadv/do_pwritev on a private copy of the
 * offset and must leave f_pos alone; offset -1 goes through do_readv/
 * do_writev, which read and advance f_pos (fs/read_write.c:1195-1203,
 * 1215-1223). On i386 the offset travels split in two 32-bit halves
 * (COMPAT_SYSCALL_DEFINE6(preadv2), fs/read_write.c:1262-1271), which the
 * high-offset case exercises.
 *
 * None of this depends on the filesystem, so every one the suite knows
 * runs it, through the overlay too (its file is an upper-layer file).
 */
#include "kselftest_harness.h"
#include "nowait_test.h"

#define FILE_PAGES 4
#define FILE_TAIL 1000

FIXTURE(pos) {
	struct nowait_tfile f;
	off_t size;
};

FIXTURE_VARIANT(pos) {
	struct nowait_fs fs;
};

NOWAIT_FS_VARIANTS_RW(pos)

FIXTURE_SETUP(pos)
{
	self->size = (off_t)(FILE_PAGES * nowait_page() + FILE_TAIL);
	NOWAIT_TFILE_SETUP(&self->f, &variant->fs, self->size);
}

FIXTURE_TEARDOWN_PARENT(pos)
{
	nowait_tfile_remove(&self->f);
}

static off_t cur_pos(int fd)
{
	return lseek(fd, 0, SEEK_CUR);
}

TEST_F(pos, pread_offset_keeps_position)
{
	unsigned char buf[5000];

	ASSERT_EQ(123, lseek(self->f.fd, 123, SEEK_SET));
	ASSERT_EQ((ssize_t)sizeof(buf),
		  nowait_preadv2(self->f.fd, buf, sizeof(buf), 8192, 0));
	NOWAIT_ASSERT_PATTERN(buf, sizeof(buf), 8192, self->f.seed);
	ASSERT_EQ(123, cur_pos(self->f.fd));
}

TEST_F(pos, pread_minus1_uses_and_advances_position)
{
	unsigned char buf[3000];

	ASSERT_EQ(5000, lseek(self->f.fd, 5000, SEEK_SET));
	ASSERT_EQ((ssize_t)sizeof(buf),
		  nowait_preadv2(self->f.fd, buf, sizeof(buf), -1, 0));
	NOWAIT_ASSERT_PATTERN(buf, sizeof(buf), 5000, self->f.seed);
	ASSERT_EQ(8000, cur_pos(self->f.fd));

	ASSERT_EQ((ssize_t)sizeof(buf),
		  nowait_preadv2(self->f.fd, buf, sizeof(buf), -1, 0));
	NOWAIT_ASSERT_PATTERN(buf, sizeof(buf), 8000, self->f.seed);
	ASSERT_EQ(11000, cur_pos(self->f.fd));
}

TEST_F(pos, pread_minus1_short_at_eof)
{
	unsigned char buf[100];

	ASSERT_EQ(self->size - 10, lseek(self->f.fd, -10, SEEK_END));
	ASSERT_EQ(10, nowait_preadv2(self->f.fd, buf, sizeof(buf), -1, 0));
	NOWAIT_ASSERT_PATTERN(buf, 10, self->size - 10, self->f.seed);
	ASSERT_EQ(self->size, cur_pos(self->f.fd));

	ASSERT_EQ(0, nowait_preadv2(self->f.fd, buf, sizeof(buf), -1, 0));
	ASSERT_EQ(self->size, cur_pos(self->f.fd));
}

TEST_F(pos, pwrite_offset_keeps_position)
{
	const uint32_t seed2 = self->f.seed + 1;
	unsigned char buf[1000];

	ASSERT_EQ(77, lseek(self->f.fd, 77, SEEK_SET));
	nowait_fill(buf, sizeof(buf), 12288, seed2);
	ASSERT_EQ((ssize_t)sizeof(buf),
		  nowait_pwritev2(self->f.fd, buf, sizeof(buf), 12288, 0));
	ASSERT_EQ(77, cur_pos(self->f.fd));

	memset(buf, 0, sizeof(buf));
	ASSERT_EQ((ssize_t)sizeof(buf), pread(self->f.fd, buf, sizeof(buf), 12288));
	NOWAIT_ASSERT_PATTERN(buf, sizeof(buf), 12288, seed2);
	/* the neighbours were not touched */
	ASSERT_EQ(1, pread(self->f.fd, buf, 1, 12287));
	NOWAIT_ASSERT_PATTERN(buf, 1, 12287, self->f.seed);
	ASSERT_EQ(1, pread(self->f.fd, buf, 1, 13288));
	NOWAIT_ASSERT_PATTERN(buf, 1, 13288, self->f.seed);
}

TEST_F(pos, pwrite_minus1_uses_and_advances_position)
{
	const uint32_t seed2 = self->f.seed + 1;
	unsigned char buf[2000];

	ASSERT_EQ(3000, lseek(self->f.fd, 3000, SEEK_SET));
	nowait_fill(buf, sizeof(buf), 3000, seed2);
	ASSERT_EQ((ssize_t)sizeof(buf),
		  nowait_pwritev2(self->f.fd, buf, sizeof(buf), -1, 0));
	ASSERT_EQ(5000, cur_pos(self->f.fd));

	memset(buf, 0, sizeof(buf));
	ASSERT_EQ((ssize_t)sizeof(buf), pread(self->f.fd, buf, sizeof(buf), 3000));
	NOWAIT_ASSERT_PATTERN(buf, sizeof(buf), 3000, seed2);
	ASSERT_EQ(1, pread(self->f.fd, buf, 1, 2999));
	NOWAIT_ASSERT_PATTERN(buf, 1, 2999, self->f.seed);
	ASSERT_EQ(1, pread(self->f.fd, buf, 1, 5000));
	NOWAIT_ASSERT_PATTERN(buf, 1, 5000, self->f.seed);
}

/* Odd-sized segments make an off-by-one in the iovec walk visible. */
TEST_F(pos, scatter_gather)
{
	const uint32_t seed2 = self->f.seed + 1;
	unsigned char a[7], b[4097], c[999];
	struct iovec iov[3] = {
		{ .iov_base = a, .iov_len = sizeof(a) },
		{ .iov_base = b, .iov_len = sizeof(b) },
		{ .iov_base = c, .iov_len = sizeof(c) },
	};
	const ssize_t total = sizeof(a) + sizeof(b) + sizeof(c);
	unsigned char back[sizeof(a) + sizeof(b) + sizeof(c)];

	ASSERT_EQ(total, preadv2(self->f.fd, iov, 3, 1001, 0));
	NOWAIT_ASSERT_PATTERN(a, sizeof(a), 1001, self->f.seed);
	NOWAIT_ASSERT_PATTERN(b, sizeof(b), 1001 + sizeof(a), self->f.seed);
	NOWAIT_ASSERT_PATTERN(c, sizeof(c), 1001 + sizeof(a) + sizeof(b),
			      self->f.seed);
	ASSERT_EQ(0, cur_pos(self->f.fd));

	nowait_fill(a, sizeof(a), 2002, seed2);
	nowait_fill(b, sizeof(b), 2002 + sizeof(a), seed2);
	nowait_fill(c, sizeof(c), 2002 + sizeof(a) + sizeof(b), seed2);
	ASSERT_EQ(total, pwritev2(self->f.fd, iov, 3, 2002, 0));
	ASSERT_EQ(0, cur_pos(self->f.fd));

	ASSERT_EQ(total, pread(self->f.fd, back, sizeof(back), 2002));
	NOWAIT_ASSERT_PATTERN(back, sizeof(back), 2002, seed2);
}

/*
 * With O_APPEND the write lands at EOF whatever the offset (the BUGS note
 * in pwrite(2)); an explicit offset still leaves f_pos alone, -1 moves it
 * to the new EOF.
 */
TEST_F(pos, o_append)
{
	const uint32_t seed2 = self->f.seed + 1;
	unsigned char buf[100], back[200];
	int afd;

	afd = open(self->f.path, O_RDWR | O_APPEND | O_CLOEXEC);
	ASSERT_LE(0, afd);

	nowait_fill(buf, sizeof(buf), (uint64_t)self->size, seed2);
	ASSERT_EQ((ssize_t)sizeof(buf),
		  nowait_pwritev2(afd, buf, sizeof(buf), 0, 0));
	ASSERT_EQ(0, cur_pos(afd));
	ASSERT_EQ(1, pread(afd, buf, 1, 0));
	NOWAIT_ASSERT_PATTERN(buf, 1, 0, self->f.seed);

	nowait_fill(buf, sizeof(buf), (uint64_t)self->size + 100, seed2);
	ASSERT_EQ((ssize_t)sizeof(buf),
		  nowait_pwritev2(afd, buf, sizeof(buf), -1, 0));
	ASSERT_EQ(self->size + 200, cur_pos(afd));

	ASSERT_EQ(200, pread(afd, back, sizeof(back), self->size));
	NOWAIT_ASSERT_PATTERN(back, sizeof(back), self->size, seed2);
	close(afd);
}

/*
 * An offset above 4 GiB must survive the compat lo/hi split on i386: a
 * truncated offset would land the data 4 GiB lower, inside the pattern.
 */
TEST_F(pos, offset_above_4g)
{
	const off_t big = ((off_t)5 << 30) + 3;
	const uint32_t seed2 = self->f.seed + 1;
	unsigned char buf[512];
	ssize_t w;

	/* exfat would write 5 GiB of zeros to fill the gap, vfat refuses */
	if (!self->f.fs->sparse)
		SKIP(return, "%s has no sparse files: no 5 GiB file here",
		     self->f.fs->type);
	nowait_fill(buf, sizeof(buf), (uint64_t)big, seed2);
	w = nowait_pwritev2(self->f.fd, buf, sizeof(buf), big, 0);
	if (w < 0 && (errno == EFBIG || errno == ENOSPC))
		SKIP(return, "no 5 GiB sparse file here: %s",
		     nowait_errname(errno));
	ASSERT_EQ((ssize_t)sizeof(buf), w);
	ASSERT_EQ(0, cur_pos(self->f.fd));

	memset(buf, 0, sizeof(buf));
	ASSERT_EQ((ssize_t)sizeof(buf),
		  nowait_preadv2(self->f.fd, buf, sizeof(buf), big, 0));
	NOWAIT_ASSERT_PATTERN(buf, sizeof(buf), big, seed2);

	/* offset -1 reaches the same bytes through f_pos */
	ASSERT_EQ(big, lseek(self->f.fd, big, SEEK_SET));
	memset(buf, 0, sizeof(buf));
	ASSERT_EQ((ssize_t)sizeof(buf),
		  nowait_preadv2(self->f.fd, buf, sizeof(buf), -1, 0));
	NOWAIT_ASSERT_PATTERN(buf, sizeof(buf), big, seed2);
	ASSERT_EQ(big + (off_t)sizeof(buf), cur_pos(self->f.fd));

	/* the 32-bit-truncated alias is still a hole */
	memset(buf, 0xff, sizeof(buf));
	ASSERT_EQ((ssize_t)sizeof(buf),
		  pread(self->f.fd, buf, sizeof(buf), big & 0xffffffff));
	for (size_t i = 0; i < sizeof(buf); i++) {
		ASSERT_EQ(0, buf[i]) TH_LOG("data at offset %jd",
					    (intmax_t)(big & 0xffffffff) +
					    (intmax_t)i);
	}
}

TEST_HARNESS_MAIN
