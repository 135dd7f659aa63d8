// SPDX-License-Identifier: GPL-2.0
/*
 * RWF_* flag validation of preadv2/pwritev2, with the errno Debian's 6.12.118
 * returns. File:line references are into that tree as shipped (commit
 * 619f31839 in /var/cache/nowait/linux, before the series).
 *
 * The gate is kiocb_set_rw_flags() (include/linux/fs.h:3606-3643), called
 * from do_iter_readv_writev() (fs/read_write.c:826). Files without
 * ->read_iter/->write_iter take do_loop_readv_writev() instead
 * (fs/read_write.c:842-848). Everything fs/read_write.c checks before
 * those (offset, fd, access mode, seekability, zero length) wins over a bad
 * flag, and the order cases below pin that down.
 */
#include "kselftest_harness.h"
#include "nowait_test.h"

#include <sys/ioctl.h>
#include <linux/fs.h>

/* Not a flag in 6.12 nor in any later kernel so far. */
#define UNKNOWN_FLAG (1 << 30)

FIXTURE(flags) {
	struct nowait_tfile f;
	off_t size;
};

FIXTURE_VARIANT(flags) {
	struct nowait_fs fs;
};

NOWAIT_FS_VARIANTS(flags)

FIXTURE_SETUP(flags)
{
	self->size = (off_t)(2 * nowait_page());
	NOWAIT_TFILE_SETUP(&self->f, &variant->fs, self->size);
}

FIXTURE_TEARDOWN_PARENT(flags)
{
	nowait_tfile_remove(&self->f);
}

/* The file still holds exactly the setup pattern. */
static void assert_unchanged(struct __test_metadata *_metadata,
			     FIXTURE_DATA(flags) *self)
{
	unsigned char buf[65536];
	struct stat st;

	ASSERT_EQ(0, fstat(self->f.fd, &st));
	ASSERT_EQ(self->size, st.st_size);
	ASSERT_EQ(self->size, pread(self->f.fd, buf, (size_t)self->size, 0));
	NOWAIT_ASSERT_PATTERN(buf, (size_t)self->size, 0, self->f.seed);
}

/*
 * EOPNOTSUPP: include/linux/fs.h:3616-3617, flags & ~RWF_SUPPORTED.
 * Every bit above RWF_ATOMIC is unknown to 6.12. (0x80 became
 * RWF_DONTCACHE in 6.14 and 0x100 RWF_NOSIGNAL in 6.18, so this case
 * fails by design on those kernels.)
 */
TEST_F(flags, unknown_bits_read_eopnotsupp)
{
	unsigned char buf[64];

	for (int bit = 7; bit < 32; bit++) {
		int flag = (int)(1u << bit);
		ssize_t r = nowait_preadv2(self->f.fd, buf, sizeof(buf), 0, flag);
		int e = errno;

		EXPECT_EQ(-1, r) TH_LOG("flag 0x%x accepted", (unsigned int)flag);
		if (r == -1) {
			EXPECT_EQ(EOPNOTSUPP, e)
				TH_LOG("flag 0x%x: %s", (unsigned int)flag,
				       nowait_errname(e));
		}
	}
}

/* EOPNOTSUPP: include/linux/fs.h:3616-3617; nothing is written. */
TEST_F(flags, unknown_bit_write_eopnotsupp)
{
	unsigned char buf[64];

	memset(buf, 0xa5, sizeof(buf));
	NOWAIT_ASSERT_ERRNO(nowait_pwritev2(self->f.fd, buf, sizeof(buf), 0,
					    UNKNOWN_FLAG), EOPNOTSUPP);
	NOWAIT_ASSERT_ERRNO(nowait_pwritev2(self->f.fd, buf, sizeof(buf), -1,
					    UNKNOWN_FLAG | RWF_DSYNC),
			    EOPNOTSUPP);
	assert_unchanged(_metadata, self);
}

/* EOPNOTSUPP: the unknown-bit test (fs.h:3616) precedes the conflict (3618). */
TEST_F(flags, unknown_bit_checked_before_append_conflict)
{
	unsigned char buf[64];

	memset(buf, 0xa5, sizeof(buf));
	NOWAIT_ASSERT_ERRNO(nowait_pwritev2(self->f.fd, buf, sizeof(buf), 0,
					    UNKNOWN_FLAG | RWF_APPEND |
					    RWF_NOAPPEND), EOPNOTSUPP);
	assert_unchanged(_metadata, self);
}

/*
 * EINVAL: include/linux/fs.h:3618-3619, RWF_APPEND together with
 * RWF_NOAPPEND. The check does not look at the direction, so a read gets
 * it too, and it precedes the NOWAIT (3621) and ATOMIC (3625) checks.
 */
TEST_F(flags, append_with_noappend_einval)
{
	unsigned char buf[64];

	memset(buf, 0xa5, sizeof(buf));
	NOWAIT_ASSERT_ERRNO(nowait_pwritev2(self->f.fd, buf, sizeof(buf), 0,
					    RWF_APPEND | RWF_NOAPPEND), EINVAL);
	NOWAIT_ASSERT_ERRNO(nowait_pwritev2(self->f.fd, buf, sizeof(buf), -1,
					    RWF_APPEND | RWF_NOAPPEND |
					    RWF_NOWAIT), EINVAL);
	NOWAIT_ASSERT_ERRNO(nowait_preadv2(self->f.fd, buf, sizeof(buf), 0,
					   RWF_APPEND | RWF_NOAPPEND), EINVAL);
	NOWAIT_ASSERT_ERRNO(nowait_preadv2(self->f.fd, buf, sizeof(buf), 0,
					   RWF_APPEND | RWF_NOAPPEND |
					   RWF_ATOMIC), EINVAL);
	assert_unchanged(_metadata, self);
}

/* EOPNOTSUPP: include/linux/fs.h:3625-3627, RWF_ATOMIC with rw_type != WRITE. */
TEST_F(flags, atomic_read_eopnotsupp)
{
	unsigned char buf[64];

	NOWAIT_ASSERT_ERRNO(nowait_preadv2(self->f.fd, buf, sizeof(buf), 0,
					   RWF_ATOMIC), EOPNOTSUPP);
}

/*
 * EOPNOTSUPP: include/linux/fs.h:3628-3629, no FMODE_CAN_ATOMIC_WRITE; in
 * 6.12 only block devices set it (block/fops.c:625).
 */
TEST_F(flags, atomic_write_regular_file_eopnotsupp)
{
	unsigned char buf[512];

	memset(buf, 0xa5, sizeof(buf));
	NOWAIT_ASSERT_ERRNO(nowait_pwritev2(self->f.fd, buf, sizeof(buf), 0,
					    RWF_ATOMIC), EOPNOTSUPP);
	assert_unchanged(_metadata, self);
}

/*
 * 0, not EOPNOTSUPP: a zero-length request returns before the flags are
 * looked at (fs/read_write.c:1017-1018 read, 1055-1056 write). So an empty
 * preadv2 cannot be used to probe whether a flag is supported.
 */
TEST_F(flags, zero_length_skips_flag_check)
{
	unsigned char buf[1];

	ASSERT_EQ(0, nowait_preadv2(self->f.fd, buf, 0, 0, UNKNOWN_FLAG));
	ASSERT_EQ(0, nowait_pwritev2(self->f.fd, buf, 0, 0, UNKNOWN_FLAG));
	ASSERT_EQ(0, nowait_preadv2(self->f.fd, buf, 0, 0,
				    RWF_APPEND | RWF_NOAPPEND));
	assert_unchanged(_metadata, self);
}

/*
 * Accepted: RWF_HIPRI is in RWF_SUPPORTED (include/uapi/linux/fs.h:336)
 * and buffered I/O simply ignores IOCB_HIPRI.
 */
TEST_F(flags, hipri_buffered_accepted)
{
	const uint32_t seed2 = self->f.seed + 1;
	unsigned char buf[1000];

	ASSERT_EQ((ssize_t)sizeof(buf),
		  nowait_preadv2(self->f.fd, buf, sizeof(buf), 100, RWF_HIPRI));
	NOWAIT_ASSERT_PATTERN(buf, sizeof(buf), 100, self->f.seed);

	nowait_fill(buf, sizeof(buf), 100, seed2);
	ASSERT_EQ((ssize_t)sizeof(buf),
		  nowait_pwritev2(self->f.fd, buf, sizeof(buf), 100, RWF_HIPRI));
	memset(buf, 0, sizeof(buf));
	ASSERT_EQ((ssize_t)sizeof(buf), pread(self->f.fd, buf, sizeof(buf), 100));
	NOWAIT_ASSERT_PATTERN(buf, sizeof(buf), 100, seed2);
}

/*
 * Accepted: the filesystem sets FMODE_NOWAIT on open (ext4/file.c:894,
 * xfs_file.c:1249, btrfs/file.c:3795), so fs.h:3621-3623 lets RWF_NOWAIT
 * through; the freshly written file is in the page cache.
 */
TEST_F(flags, nowait_read_accepted)
{
	unsigned char buf[1000];

	memset(buf, 0, sizeof(buf));	/* no fault inside the measured call */
	ASSERT_EQ((ssize_t)sizeof(buf),
		  NOWAIT_PREAD(self->f.fd, buf, sizeof(buf), 100));
	NOWAIT_ASSERT_PATTERN(buf, sizeof(buf), 100, self->f.seed);
}

/*
 * RWF_APPEND becomes IOCB_APPEND (fs.h:3631), and generic_write_checks_count
 * moves the write to EOF (fs/read_write.c:1773-1774) whatever the offset.
 */
TEST_F(flags, rwf_append_writes_at_eof)
{
	const uint32_t seed2 = self->f.seed + 1;
	unsigned char buf[100];
	struct stat st;

	nowait_fill(buf, sizeof(buf), (uint64_t)self->size, seed2);
	ASSERT_EQ((ssize_t)sizeof(buf),
		  nowait_pwritev2(self->f.fd, buf, sizeof(buf), 0, RWF_APPEND));
	ASSERT_EQ(0, fstat(self->f.fd, &st));
	ASSERT_EQ(self->size + (off_t)sizeof(buf), st.st_size);
	ASSERT_EQ(0, lseek(self->f.fd, 0, SEEK_CUR));

	ASSERT_EQ((ssize_t)sizeof(buf),
		  pread(self->f.fd, buf, sizeof(buf), self->size));
	NOWAIT_ASSERT_PATTERN(buf, sizeof(buf), self->size, seed2);
	ASSERT_EQ((ssize_t)sizeof(buf), pread(self->f.fd, buf, sizeof(buf), 0));
	NOWAIT_ASSERT_PATTERN(buf, sizeof(buf), 0, self->f.seed);
}

/* RWF_NOAPPEND drops the fd's O_APPEND for one call (fs.h:3635-3638). */
TEST_F(flags, rwf_noappend_honours_offset)
{
	const uint32_t seed2 = self->f.seed + 1;
	unsigned char buf[100];
	struct stat st;
	int afd;

	afd = open(self->f.path, O_RDWR | O_APPEND | O_CLOEXEC);
	ASSERT_LE(0, afd);
	nowait_fill(buf, sizeof(buf), 100, seed2);
	ASSERT_EQ((ssize_t)sizeof(buf),
		  nowait_pwritev2(afd, buf, sizeof(buf), 100, RWF_NOAPPEND));
	ASSERT_EQ(0, fstat(afd, &st));
	ASSERT_EQ(self->size, st.st_size);
	memset(buf, 0, sizeof(buf));
	ASSERT_EQ((ssize_t)sizeof(buf), pread(afd, buf, sizeof(buf), 100));
	NOWAIT_ASSERT_PATTERN(buf, sizeof(buf), 100, seed2);
	close(afd);
}

/*
 * EPERM: include/linux/fs.h:3636-3637, RWF_NOAPPEND on an append-only
 * (chattr +a) inode.
 */
TEST_F(flags, noappend_on_append_only_inode_eperm)
{
	unsigned char buf[100];
	int attr, afd, e;
	ssize_t r;

	ASSERT_EQ(0, fsync(self->f.fd));
	if (ioctl(self->f.fd, FS_IOC_GETFLAGS, &attr))
		SKIP(return, "FS_IOC_GETFLAGS: %s", nowait_errname(errno));
	attr |= FS_APPEND_FL;
	if (ioctl(self->f.fd, FS_IOC_SETFLAGS, &attr))
		SKIP(return, "FS_IOC_SETFLAGS(APPEND): %s",
		     nowait_errname(errno));

	/* Clear the flag before any assertion, or the file cannot be unlinked. */
	afd = open(self->f.path, O_WRONLY | O_APPEND | O_CLOEXEC);
	e = errno;
	r = -2;
	if (afd >= 0) {
		memset(buf, 0xa5, sizeof(buf));
		r = nowait_pwritev2(afd, buf, sizeof(buf), 0, RWF_NOAPPEND);
		e = errno;
		close(afd);
	}
	attr &= ~FS_APPEND_FL;
	ASSERT_EQ(0, ioctl(self->f.fd, FS_IOC_SETFLAGS, &attr));

	ASSERT_LE(0, afd) TH_LOG("open(O_APPEND): %s", nowait_errname(e));
	ASSERT_EQ(-1, r);
	ASSERT_EQ(EPERM, e) TH_LOG("got %s", nowait_errname(e));
	assert_unchanged(_metadata, self);
}

/*
 * EBADF: the access mode is checked in vfs_readv/vfs_writev
 * (fs/read_write.c:1006-1007, 1044-1045) before the flags are.
 */
TEST_F(flags, ebadf_before_flag_checks)
{
	unsigned char buf[64];
	int rfd, wfd;

	rfd = open(self->f.path, O_RDONLY | O_CLOEXEC);
	ASSERT_LE(0, rfd);
	wfd = open(self->f.path, O_WRONLY | O_CLOEXEC);
	ASSERT_LE(0, wfd);
	memset(buf, 0xa5, sizeof(buf));
	NOWAIT_ASSERT_ERRNO(nowait_pwritev2(rfd, buf, sizeof(buf), 0,
					    UNKNOWN_FLAG), EBADF);
	NOWAIT_ASSERT_ERRNO(nowait_preadv2(wfd, buf, sizeof(buf), 0,
					   UNKNOWN_FLAG), EBADF);
	NOWAIT_ASSERT_ERRNO(nowait_preadv2(wfd, buf, sizeof(buf), -1,
					   RWF_APPEND | RWF_NOAPPEND), EBADF);
	close(rfd);
	close(wfd);
	assert_unchanged(_metadata, self);
}

/*
 * EINVAL: an offset below -1 is rejected before the fd is even looked up
 * (fs/read_write.c:1135-1136 read, 1158-1159 write).
 */
TEST(offset_below_minus1_einval_first)
{
	unsigned char buf[64];

	NOWAIT_ASSERT_ERRNO(nowait_preadv2(-1, buf, sizeof(buf), -2,
					   UNKNOWN_FLAG), EINVAL);
	NOWAIT_ASSERT_ERRNO(nowait_pwritev2(-1, buf, sizeof(buf), -2,
					    UNKNOWN_FLAG), EINVAL);
}

/* EBADF: fdget fails before any flag is looked at (fs/read_write.c:1079, 1133-1143). */
TEST(bad_fd_ebadf_before_flags)
{
	unsigned char buf[64];

	NOWAIT_ASSERT_ERRNO(nowait_preadv2(-1, buf, sizeof(buf), 0,
					   UNKNOWN_FLAG), EBADF);
	NOWAIT_ASSERT_ERRNO(nowait_preadv2(-1, buf, sizeof(buf), -1,
					   UNKNOWN_FLAG), EBADF);
	NOWAIT_ASSERT_ERRNO(nowait_pwritev2(-1, buf, sizeof(buf), 0,
					    UNKNOWN_FLAG), EBADF);
}

/*
 * ESPIPE: a pipe has no FMODE_PREAD/PWRITE (stream_open, fs/pipe.c:962-963)
 * and do_preadv/do_pwritev check that first (fs/read_write.c:1140-1142,
 * 1163-1165).
 */
TEST(pipe_offset_espipe_before_flags)
{
	unsigned char buf[64];
	int p[2];

	ASSERT_EQ(0, pipe2(p, O_CLOEXEC));
	memset(buf, 0xa5, sizeof(buf));
	NOWAIT_ASSERT_ERRNO(nowait_pwritev2(p[1], buf, sizeof(buf), 0,
					    UNKNOWN_FLAG), ESPIPE);
	NOWAIT_ASSERT_ERRNO(nowait_preadv2(p[0], buf, sizeof(buf), 0,
					   UNKNOWN_FLAG), ESPIPE);
	close(p[0]);
	close(p[1]);
}

/*
 * EOPNOTSUPP: include/linux/fs.h:3621-3623, RWF_NOWAIT on a file without
 * FMODE_NOWAIT, nor FOP_BUFFER_RNOWAIT with the series. A sysctl file has
 * ->read_iter (fs/proc/proc_sysctl.c:855) so it reaches kiocb_set_rw_flags,
 * and procfs sets neither: its reads are generated, not cached. Other
 * valid flags still pass, which shows the refusal is NOWAIT's.
 */
TEST(nowait_without_fmode_nowait_eopnotsupp)
{
	char plain[64], buf[64];
	ssize_t n;
	int fd;

	fd = open("/proc/sys/kernel/ostype", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		SKIP(return, "/proc/sys/kernel/ostype: %s",
		     nowait_errname(errno));
	n = nowait_preadv2(fd, plain, sizeof(plain), 0, 0);
	ASSERT_LT(0, n);
	NOWAIT_ASSERT_ERRNO(nowait_preadv2(fd, buf, sizeof(buf), 0, RWF_NOWAIT),
			    EOPNOTSUPP);
	NOWAIT_ASSERT_ERRNO(nowait_preadv2(fd, buf, sizeof(buf), -1,
					   RWF_NOWAIT), EOPNOTSUPP);
	ASSERT_EQ(n, nowait_preadv2(fd, buf, sizeof(buf), 0,
				    RWF_DSYNC | RWF_HIPRI));
	ASSERT_EQ(0, memcmp(plain, buf, (size_t)n));
	close(fd);
}

/*
 * EOPNOTSUPP for anything but RWF_HIPRI on a file with only ->read:
 * do_loop_readv_writev (fs/read_write.c:847-848). /proc/<pid>/stat uses
 * proc_single_file_operations, which has .read = seq_read and no
 * .read_iter (fs/proc/base.c:803-808).
 */
TEST(read_without_read_iter_allows_only_hipri)
{
	char buf[4096];
	int fd;

	fd = open("/proc/self/stat", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		SKIP(return, "/proc/self/stat: %s", nowait_errname(errno));
	NOWAIT_ASSERT_ERRNO(nowait_preadv2(fd, buf, sizeof(buf), -1, RWF_DSYNC),
			    EOPNOTSUPP);
	NOWAIT_ASSERT_ERRNO(nowait_preadv2(fd, buf, sizeof(buf), -1,
					   RWF_NOWAIT), EOPNOTSUPP);
	ASSERT_LT(0, nowait_preadv2(fd, buf, sizeof(buf), -1, RWF_HIPRI));
	close(fd);
}

/*
 * The filesystems that take RWF_NOWAIT through FOP_BUFFER_RNOWAIT rather
 * than FMODE_NOWAIT: kiocb_set_rw_flags() lets it through for buffered
 * reads (file_read_nowait()), and for buffered writes only where the
 * filesystem also sets FOP_BUFFER_WASYNC (file_write_nowait()): tmpfs. The
 * others' write paths, and O_DIRECT everywhere, still take i_rwsem and do
 * I/O without looking at IOCB_NOWAIT, so there the flag must stay refused
 * with EOPNOTSUPP, and nothing be written. overlayfs takes flagged writes
 * and hands them on to its upper file, on ext4 here, which takes them too.
 */
FIXTURE(rnowait) {
	struct nowait_tfile f;
	off_t size;
};

FIXTURE_VARIANT(rnowait) {
	struct nowait_fs fs;
};

NOWAIT_FS_VARIANTS_RNOWAIT(rnowait)

FIXTURE_SETUP(rnowait)
{
	self->size = (off_t)(2 * nowait_page());
	NOWAIT_TFILE_SETUP(&self->f, &variant->fs, self->size);
}

FIXTURE_TEARDOWN_PARENT(rnowait)
{
	nowait_tfile_remove(&self->f);
}

/* Accepted: a buffered read of cached data is served. */
TEST_F(rnowait, buffered_read_accepted)
{
	unsigned char buf[1000];

	memset(buf, 0, sizeof(buf));	/* no fault inside the measured call */
	ASSERT_EQ((ssize_t)sizeof(buf),
		  NOWAIT_PREAD(self->f.fd, buf, sizeof(buf), 100))
		TH_LOG("%s", nowait_errname(errno));
	NOWAIT_ASSERT_PATTERN(buf, sizeof(buf), 100, self->f.seed);
	ASSERT_EQ((ssize_t)sizeof(buf),
		  NOWAIT_PREAD(self->f.fd, buf, sizeof(buf), -1))
		TH_LOG("%s", nowait_errname(errno));
	NOWAIT_ASSERT_PATTERN(buf, sizeof(buf), 0, self->f.seed);
}

/*
 * EOPNOTSUPP for a write, at an offset, at f_pos and appending, and the
 * file unchanged; on tmpfs each is written instead, where it was asked to.
 */
TEST_F(rnowait, write_refused_unless_wasync)
{
	bool takes = nowait_buffered_write_errno(&variant->fs) == 0;
	unsigned char buf[100], back[100];
	struct stat st;

	memset(buf, 0xa5, sizeof(buf));
	if (takes) {
		/*
		 * Taken, not always at the first try: the append needs a new
		 * block, whose allocation fails with EAGAIN while metadata is
		 * locked or under writeback (vfat: the FAT block), and a
		 * flagged retry gets through.
		 */
		NOWAIT_WRITE_RETRYING(self->f.fd, buf, sizeof(buf), 0, 0);
		NOWAIT_WRITE_RETRYING(self->f.fd, buf, sizeof(buf), -1, 0);
		NOWAIT_WRITE_RETRYING(self->f.fd, buf, sizeof(buf), 0,
				      NOWAIT_RETRY_APPEND);
		ASSERT_EQ((off_t)sizeof(buf), lseek(self->f.fd, 0, SEEK_CUR));
		ASSERT_EQ(0, fstat(self->f.fd, &st));
		ASSERT_EQ(self->size + (off_t)sizeof(buf), st.st_size);
		ASSERT_EQ((ssize_t)sizeof(back),
			  pread(self->f.fd, back, sizeof(back), self->size));
		ASSERT_EQ(0, memcmp(buf, back, sizeof(buf)));
		return;
	}
	NOWAIT_ASSERT_ERRNO(nowait_pwritev2(self->f.fd, buf, sizeof(buf), 0,
					    RWF_NOWAIT), EOPNOTSUPP);
	NOWAIT_ASSERT_ERRNO(nowait_pwritev2(self->f.fd, buf, sizeof(buf), -1,
					    RWF_NOWAIT), EOPNOTSUPP);
	NOWAIT_ASSERT_ERRNO(nowait_pwritev2(self->f.fd, buf, sizeof(buf), 0,
					    RWF_NOWAIT | RWF_APPEND),
			    EOPNOTSUPP);
	ASSERT_EQ(0, lseek(self->f.fd, 0, SEEK_CUR));
	ASSERT_EQ(0, fstat(self->f.fd, &st));
	ASSERT_EQ(self->size, st.st_size);
	/* the same write without the flag goes through */
	ASSERT_EQ((ssize_t)sizeof(buf),
		  nowait_pwritev2(self->f.fd, buf, sizeof(buf), 0, 0));
}

/*
 * EOPNOTSUPP for an O_DIRECT read (IOCB_DIRECT is set before the flags are
 * checked), while the same read without the flag works: the refusal is
 * NOWAIT's, not O_DIRECT's.
 */
TEST_F(rnowait, odirect_read_refused)
{
	const size_t pg = nowait_page();
	unsigned char *buf;
	int dfd;

	ASSERT_EQ(0, fsync(self->f.fd));
	dfd = open(self->f.path, O_RDONLY | O_DIRECT | O_CLOEXEC);
	if (dfd < 0)
		SKIP(return, "open(O_DIRECT) on %s: %s", self->f.fs->type,
		     nowait_errname(errno));
	buf = aligned_alloc(pg, pg);
	ASSERT_NE(NULL, buf);
	memset(buf, 0, pg);
	NOWAIT_ASSERT_ERRNO(nowait_preadv2(dfd, buf, pg, 0, RWF_NOWAIT),
			    EOPNOTSUPP);
	NOWAIT_ASSERT_ERRNO(nowait_preadv2(dfd, buf, pg, -1, RWF_NOWAIT),
			    EOPNOTSUPP);
	ASSERT_EQ((ssize_t)pg, nowait_preadv2(dfd, buf, pg, 0, 0))
		TH_LOG("%s", nowait_errname(errno));
	NOWAIT_ASSERT_PATTERN(buf, pg, 0, self->f.seed);
	free(buf);
	close(dfd);
}

TEST_HARNESS_MAIN
