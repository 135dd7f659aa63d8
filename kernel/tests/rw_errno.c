// SPDX-License-Identifier: GPL-2.0
/*
 * The errno contract of preadv2(2) and pwritev2(2), with and without
 * RWF_NOWAIT, on every filesystem the guest makes, as the patched 6.12 tree
 * in /var/cache/nowait/linux answers it. docs/errno-contract.md is this
 * file's table (`rw_errno.x86_64 --table` prints it).
 *
 * Each row below is one way to call the two syscalls, and holds the one
 * answer each of its four calls must get: preadv2, preadv2 with RWF_NOWAIT,
 * pwritev2, pwritev2 with RWF_NOWAIT. An answer is a list of terms
 * "keys=result", the first whose key names the filesystem, the ABI or "*"
 * wins; a result is an errno name or a byte count. So an answer that
 * differs per filesystem says exactly how.
 *
 * The order in which the kernel looks at things decides most answers:
 *   1. offset < -1: EINVAL, before the fd (fs/read_write.c:do_preadv)
 *   2. the fd: EBADF for closed and O_PATH fds (fdget), ESPIPE without
 *      FMODE_PREAD/PWRITE (do_preadv), offset -1 uses f_pos (do_readv)
 *   3. access mode: EBADF (fs/read_write.c:vfs_readv, vfs_writev)
 *   4. the iovec: EINVAL for iovcnt > UIO_MAXIOV or an iov_len that is
 *      negative as ssize_t, EFAULT for an unreadable iovec or a range
 *      access_ok() refuses; the total is capped at MAX_RW_COUNT, never an
 *      error (lib/iov_iter.c:iovec_from_user, __import_iovec)
 *   5. zero bytes in total: 0, before any flag is looked at (vfs_readv)
 *   6. no ->read_iter (directories): only RWF_HIPRI, else EOPNOTSUPP
 *      (fs/read_write.c:do_loop_readv_writev)
 *   7. the flags (include/linux/fs.h:kiocb_set_rw_flags): unknown bits
 *      EOPNOTSUPP; RWF_NOWAIT EOPNOTSUPP unless the file has FMODE_NOWAIT
 *      (ext4, xfs, btrfs, pipes) or, with the series, the read is buffered
 *      and the file_operations declare FOP_BUFFER_RNOWAIT, or the write is
 *      buffered and they declare FOP_BUFFER_WASYNC (tmpfs, overlayfs)
 *   8. the filesystem's ->read_iter/->write_iter, then copying the data.
 *
 * Where the filesystem decides (O_DIRECT, NOWAIT writes), the setup pins
 * down what it decides on: the file is fully written and, for O_DIRECT,
 * written back and evicted; before every call its mtime is set into the
 * past, so that every NOWAIT write has to update it (fs/inode.c:
 * file_modified_flags) instead of depending on whether the last write fell
 * in the same clock tick.
 */
#include "kselftest_harness.h"
#include "nowait_test.h"

#include <pthread.h>
#include <sys/time.h>

#define SIZE	8192		/* the test file: two pages of pattern */
#define LEN	4096		/* what one call asks for */
#define BAD	(-100000L)	/* a run's invariant broke; c->why says how */

#ifdef __i386__
#define ABI "i386"
#else
#define ABI "x86_64"
#endif

/* What one call of a row sees. */
struct ctx {
	const struct nowait_fs *fs;
	const char *path;	/* the test file, SIZE bytes of pattern */
	int fd;			/* it, O_RDWR */
	uint32_t seed;
	unsigned char *buf;	/* two pages, then an unmapped guard page */
	unsigned char *none;	/* an unmapped page */
	unsigned char *ro;	/* a read-only page */
	char why[256];
};

struct row {
	const char *name;
	long (*run)(struct ctx *c, bool wr, int flags);
	bool odirect;		/* evict the file before each call */
	const char *want[4];	/* preadv2, +NOWAIT, pwritev2, +NOWAIT */
	const char *src;	/* where the answers come from */
};

/*
 * A NOWAIT buffered write is written on every filesystem here: xfs, its
 * times updated without a transaction (fs/inode.c:file_modified_flags with
 * S_NOWAIT), and ext4 (fs/ext4/inode.c:ext4_da_write_begin_nowait), ext2
 * (fs/buffer.c:block_write_begin_nowait), vfat
 * (fs/fat/inode.c:fat_write_begin_nowait), exfat
 * (fs/exfat/inode.c:exfat_write_begin_nowait) and tmpfs
 * (mm/shmem.c:shmem_write_begin), which declare FOP_BUFFER_WASYNC, and
 * overlayfs, whose upper layer is ext4 here; btrfs sets the times in memory
 * and copies on write with reservations that do not flush
 * (fs/btrfs/file.c:btrfs_buffered_write). Before the series only xfs and
 * btrfs took the flag (FMODE_NOWAIT, include/linux/fs.h:kiocb_set_rw_flags),
 * and refused the write with EAGAIN.
 */

/* noinline: the compiler must not see the bad arguments the rows pass */
/*
 * A NOWAIT write can meet a lock someone holds for a moment (on xfs the
 * ILOCK, taken by the worker that logs the times of an earlier flagged
 * write, or by the AIL): EAGAIN, which a caller retries. A filesystem
 * whose answer is EAGAIN gives it to every try.
 */
#define WRITE_TRIES 20

__attribute__((noinline))
static long call(int fd, bool wr, const struct iovec *iov, int cnt, off_t off,
		 int flags)
{
	for (int tries = 1;; tries++) {
		ssize_t r = wr ? pwritev2(fd, iov, cnt, off, flags)
			       : preadv2(fd, iov, cnt, off, flags);

		if (r >= 0)
			return r;
		if (errno != EAGAIN || !wr || !(flags & RWF_NOWAIT) ||
		    tries == WRITE_TRIES)
			return -errno;
		nowait_msleep(1);
	}
}

/* A successful read must return the file's pattern. */
static long checked(struct ctx *c, long r, const unsigned char *buf,
		    off_t off)
{
	ssize_t bad;

	if (r <= 0)
		return r;
	bad = nowait_mismatch(buf, (size_t)r, (uint64_t)off, c->seed);
	if (bad < 0)
		return r;
	snprintf(c->why, sizeof(c->why), "read %ld bytes, wrong at offset %jd",
		 r, (intmax_t)off + (intmax_t)bad);
	return BAD;
}

static long run_plain(struct ctx *c, bool wr, int fl)
{
	struct iovec iov = { c->buf, LEN };

	if (wr)
		return call(c->fd, wr, &iov, 1, 0, fl);
	return checked(c, call(c->fd, wr, &iov, 1, 0, fl), c->buf, 0);
}

/*
 * At EOF (the page after the file's last one is not cached), and 1 MiB
 * past it: both must answer alike. A write there extends the file.
 */
static long run_at_eof(struct ctx *c, bool wr, int fl)
{
	struct iovec iov = { c->buf, LEN };
	long r = call(c->fd, wr, &iov, 1, SIZE, fl), r2;

	if (wr)
		return r;
	r2 = call(c->fd, wr, &iov, 1, SIZE + (1 << 20), fl);
	if (r2 != r) {
		snprintf(c->why, sizeof(c->why), "at EOF %ld, 1 MiB past it %ld",
			 r, r2);
		return BAD;
	}
	return r;
}

/* Each bit that 6.12 does not know, alone: all must answer alike. */
static long run_flags_unknown(struct ctx *c, bool wr, int fl)
{
	struct iovec iov = { c->buf, LEN };
	long first = 0;

	for (int bit = 7; bit < 32; bit++) {
		long r = call(c->fd, wr, &iov, 1, 0, fl | (int)(1u << bit));

		if (bit == 7)
			first = r;
		if (r != first) {
			snprintf(c->why, sizeof(c->why),
				 "bit %d: %ld, bit 7: %ld", bit, r, first);
			return BAD;
		}
	}
	return first;
}

/* flags = -1 holds RWF_NOWAIT already: both columns make the same call. */
static long run_flags_all(struct ctx *c, bool wr, int fl)
{
	struct iovec iov = { c->buf, LEN };

	(void)fl;
	return call(c->fd, wr, &iov, 1, 0, -1);
}

static long run_iovcnt_0(struct ctx *c, bool wr, int fl)
{
	struct iovec iov = { c->buf, LEN };

	return call(c->fd, wr, &iov, 0, 0, fl);
}

static long run_iovcnt_neg(struct ctx *c, bool wr, int fl)
{
	struct iovec iov = { c->buf, LEN };

	return call(c->fd, wr, &iov, -1, 0, fl);
}

static long run_iovcnt_over(struct ctx *c, bool wr, int fl)
{
	static struct iovec iov[IOV_MAX + 1];

	for (int i = 0; i <= IOV_MAX; i++)
		iov[i] = (struct iovec){ c->buf, 1 };
	return call(c->fd, wr, iov, IOV_MAX + 1, 0, fl);
}

/*
 * SSIZE_MAX + 1 bytes in two segments. On x86_64 no such range passes
 * access_ok(), so it is EFAULT; a compat task's segments do, and the total
 * is cut to MAX_RW_COUNT: the read stops at EOF (SIZE), the write at the
 * guard page after the two mapped pages of buf (SIZE) -- except on btrfs,
 * which faults the whole chunk in before copying and fails it
 * (fs/btrfs/file.c:btrfs_buffered_write).
 */
static long run_iovlen_overflow(struct ctx *c, bool wr, int fl)
{
	struct iovec iov[2] = { { c->buf, SSIZE_MAX }, { c->buf, 1 } };
	long r;

	nowait_fill(c->buf, SIZE, 0, c->seed);
	r = call(c->fd, wr, iov, 2, 0, fl);
	return wr ? r : checked(c, r, c->buf, 0);
}

static long run_iov_null(struct ctx *c, bool wr, int fl)
{
	return call(c->fd, wr, NULL, 1, 0, fl);
}

/* Two segments, so that the array path (iovec_from_user) is the one used. */
static long run_iov_unmapped(struct ctx *c, bool wr, int fl)
{
	return call(c->fd, wr, (const struct iovec *)c->none, 2, 0, fl);
}

static long run_buf_unmapped(struct ctx *c, bool wr, int fl)
{
	struct iovec iov = { c->none, LEN };

	return call(c->fd, wr, &iov, 1, 0, fl);
}

static long run_buf_readonly(struct ctx *c, bool wr, int fl)
{
	struct iovec iov = { c->ro, LEN };

	return call(c->fd, wr, &iov, 1, 0, fl);
}

static long run_offset_negative(struct ctx *c, bool wr, int fl)
{
	const off_t offs[] = { -2, -4096, INT64_MIN };
	struct iovec iov = { c->buf, LEN };
	long first = call(c->fd, wr, &iov, 1, offs[0], fl);

	for (size_t i = 1; i < sizeof(offs) / sizeof(offs[0]); i++) {
		long r = call(c->fd, wr, &iov, 1, offs[i], fl);

		if (r != first) {
			snprintf(c->why, sizeof(c->why),
				 "offset %jd: %ld, offset -2: %ld",
				 (intmax_t)offs[i], r, first);
			return BAD;
		}
	}
	return first;
}

/* Read through an O_WRONLY fd, write through an O_RDONLY one. */
static long run_fd_wrong_mode(struct ctx *c, bool wr, int fl)
{
	struct iovec iov = { c->buf, LEN };
	int fd = open(c->path, (wr ? O_RDONLY : O_WRONLY) | O_CLOEXEC);
	long r;

	if (fd < 0)
		return -errno;
	r = call(fd, wr, &iov, 1, 0, fl);
	close(fd);
	return r;
}

/* The mount's root directory; a directory cannot be opened for writing. */
static long run_directory(struct ctx *c, bool wr, int fl)
{
	struct iovec iov = { c->buf, LEN };
	char dir[PATH_MAX];
	long r;
	int fd;

	snprintf(dir, sizeof(dir), "%s/%s", nowait_mnt(), c->fs->dir);
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	r = call(fd, wr, &iov, 1, 0, fl);
	close(fd);
	return r;
}

/* A FIFO next to the test file, O_RDWR|O_NONBLOCK; -errno of mkfifo. */
static int fifo_open(struct ctx *c)
{
	char path[PATH_MAX];
	int fd;

	snprintf(path, sizeof(path), "%s.fifo", c->path);
	if (mkfifo(path, 0600) && errno != EEXIST)
		return -errno;
	fd = open(path, O_RDWR | O_NONBLOCK | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

static long run_fifo_offset(struct ctx *c, bool wr, int fl)
{
	struct iovec iov = { c->buf, 64 };
	int fd = fifo_open(c);
	long r;

	if (fd < 0)
		return fd;
	r = call(fd, wr, &iov, 1, 0, fl);
	close(fd);
	return r;
}

/* At f_pos (-1): a read finds 64 bytes queued, a write queues 64. */
static long run_fifo_current(struct ctx *c, bool wr, int fl)
{
	struct iovec iov = { c->buf, 64 };
	int fd = fifo_open(c);
	long r;

	if (fd < 0)
		return fd;
	nowait_fill(c->buf, 64, 0, c->seed);
	if (!wr && write(fd, c->buf, 64) != 64) {
		close(fd);
		return -errno;
	}
	memset(c->buf, 0, 64);
	r = call(fd, wr, &iov, 1, -1, fl);
	close(fd);
	return wr ? r : checked(c, r, c->buf, 0);
}

/* At f_pos: a read of an empty FIFO, a write to a full one. */
static long run_fifo_would_block(struct ctx *c, bool wr, int fl)
{
	struct iovec iov = { c->buf, 64 };
	int fd = fifo_open(c);
	long r;

	if (fd < 0)
		return fd;
	if (wr) {
		fcntl(fd, F_SETPIPE_SZ, 4096);
		while (write(fd, c->buf, 64) == 64)
			;
	}
	r = call(fd, wr, &iov, 1, -1, fl);
	close(fd);
	return r;
}

static long run_o_path(struct ctx *c, bool wr, int fl)
{
	struct iovec iov = { c->buf, LEN };
	int fd = open(c->path, O_PATH | O_CLOEXEC);
	long r;

	if (fd < 0)
		return -errno;
	r = call(fd, wr, &iov, 1, 0, fl);
	if (r != call(fd, wr, &iov, 1, -1, fl)) {
		snprintf(c->why, sizeof(c->why), "offsets 0 and -1 differ");
		r = BAD;
	}
	close(fd);
	return r;
}

static long run_closed_fd(struct ctx *c, bool wr, int fl)
{
	struct iovec iov = { c->buf, LEN };
	int fd = dup(c->fd);

	close(fd);
	return call(fd, wr, &iov, 1, 0, fl);
}

static long odirect_call(struct ctx *c, bool wr, int fl, unsigned char *buf,
			 off_t off)
{
	struct iovec iov = { buf, LEN };
	int fd = open(c->path, O_RDWR | O_DIRECT | O_CLOEXEC);
	long r;

	if (fd < 0)
		return -errno;
	nowait_fill(buf, LEN, (uint64_t)off, c->seed);
	r = call(fd, wr, &iov, 1, off, fl);
	close(fd);
	return wr ? r : checked(c, r, buf, off);
}

static long run_odirect_buf(struct ctx *c, bool wr, int fl)
{
	return odirect_call(c, wr, fl, c->buf + 1, 0);
}

static long run_odirect_off(struct ctx *c, bool wr, int fl)
{
	return odirect_call(c, wr, fl, c->buf, 1);
}

/*
 * Two threads share one fd (so fdget_pos() serialises f_pos) and each
 * reads or writes 512-byte records at offset -1 until the file is done.
 */
#define REC	512
#define NREC	128

struct shared {
	int fd, flags;
	bool wr;
	int tid;
	long bytes, err;
	unsigned char seen[NREC];	/* reads: which records came back */
};

static void *shared_worker(void *arg)
{
	struct shared *s = arg;
	unsigned char rec[REC];
	struct iovec iov = { rec, REC };

	for (int seq = 0; ; seq++) {
		long r;

		if (s->wr) {
			if (seq == NREC / 2)
				break;
			/* Header: who wrote it; body: a pattern of (tid, seq). */
			nowait_fill(rec, REC, 0, (uint32_t)(s->tid << 16 | seq));
			rec[0] = (unsigned char)s->tid;
			rec[1] = (unsigned char)seq;
		}
		r = call(s->fd, s->wr, &iov, 1, -1, s->flags);
		if (r == 0 && !s->wr)
			break;
		if (r != REC) {
			s->err = r;
			break;
		}
		s->bytes += r;
		if (!s->wr) {
			/* Which record is this? The pattern says. */
			for (int i = 0; i < NREC; i++)
				if (nowait_mismatch(rec, REC, (uint64_t)i * REC,
						    s->flags + 7) < 0)
					s->seen[i]++;
		}
	}
	return NULL;
}

static long run_shared_pos(struct ctx *c, bool wr, int fl)
{
	struct shared s[2] = { { .tid = 1 }, { .tid = 2 } };
	char path[PATH_MAX];
	pthread_t th[2];
	long total = 0;
	off_t pos;
	int fd;

	snprintf(path, sizeof(path), "%s.shared", c->path);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	if (!wr && nowait_write_pattern(fd, 0, NREC * REC, (uint32_t)fl + 7)) {
		close(fd);
		return -EIO;
	}
	struct timespec old[2] = { { 0, UTIME_OMIT }, { 1000000000, 0 } };
	futimens(fd, old);
	for (int i = 0; i < 2; i++) {
		s[i].fd = fd;
		s[i].wr = wr;
		s[i].flags = fl;
		pthread_create(&th[i], NULL, shared_worker, &s[i]);
	}
	for (int i = 0; i < 2; i++)
		pthread_join(th[i], NULL);
	pos = lseek(fd, 0, SEEK_CUR);

	for (int i = 0; i < 2; i++) {
		if (s[i].err) {
			/* A refusal: both threads get it and nothing moves. */
			long e = s[i].err;

			close(fd);
			if (s[!i].err != e || s[!i].bytes || s[i].bytes || pos) {
				snprintf(c->why, sizeof(c->why),
					 "thread %d: %ld after %ld bytes, thread %d: %ld after %ld, f_pos %jd",
					 i, e, s[i].bytes, !i, s[!i].err,
					 s[!i].bytes, (intmax_t)pos);
				return BAD;
			}
			return e;
		}
		total += s[i].bytes;
	}
	if (pos != total) {
		snprintf(c->why, sizeof(c->why), "f_pos %jd after %ld bytes",
			 (intmax_t)pos, total);
		close(fd);
		return BAD;
	}
	if (!wr) {
		for (int i = 0; i < NREC; i++) {
			if (s[0].seen[i] + s[1].seen[i] != 1) {
				snprintf(c->why, sizeof(c->why),
					 "record %d read %d times", i,
					 s[0].seen[i] + s[1].seen[i]);
				close(fd);
				return BAD;
			}
		}
	} else {
		/* Every record whole, each (thread, seq) exactly once. */
		unsigned char rec[REC], seen[2][NREC / 2] = { { 0 } };

		for (int i = 0; i < NREC; i++) {
			int tid, seq;

			if (pread(fd, rec, REC, (off_t)i * REC) != REC) {
				close(fd);
				return -EIO;
			}
			tid = rec[0];
			seq = rec[1];
			rec[0] = nowait_pattern_byte(0, (uint32_t)(tid << 16 | seq));
			rec[1] = nowait_pattern_byte(1, (uint32_t)(tid << 16 | seq));
			if (tid < 1 || tid > 2 || seq >= NREC / 2 ||
			    seen[tid - 1][seq]++ ||
			    nowait_mismatch(rec, REC, 0,
					    (uint32_t)(tid << 16 | seq)) >= 0) {
				snprintf(c->why, sizeof(c->why),
					 "record %d: torn, misplaced or repeated (tid %d seq %d)",
					 i, tid, seq);
				close(fd);
				return BAD;
			}
		}
	}
	close(fd);
	return total;
}

#define ROWS(X)								\
	X(plain) X(at_eof) X(flags_unknown) X(flags_all) X(iovcnt_0) X(iovcnt_neg)	\
	X(iovcnt_over) X(iovlen_overflow) X(iov_null) X(iov_unmapped)	\
	X(buf_unmapped) X(buf_readonly) X(offset_negative)		\
	X(fd_wrong_mode) X(directory) X(fifo_offset) X(fifo_current)	\
	X(fifo_would_block) X(o_path) X(closed_fd) X(odirect_buf)	\
	X(odirect_off) X(shared_pos)

#define ROW_ENUM(n) ROW_##n,
enum { ROWS(ROW_ENUM) NROWS };

#define NOFIFO "vfat,exfat=EPERM "	/* no ->mknod: fs/namei.c:vfs_mknod */

static const struct row rows[NROWS] = {
	[ROW_plain] = { "plain", run_plain, false,
		{ "4096", "4096", "4096", "4096" },
		"4096 bytes at offset 0 of a cached 8192-byte file; NOWAIT "
		"reads on tmpfs, vfat, exfat, ext2, ovl are the series' "
		"FOP_BUFFER_RNOWAIT (include/linux/fs.h:kiocb_buffered_read_nowait)" },
	[ROW_at_eof] = { "at_eof", run_at_eof, false,
		{ "0", "0", "4096", "4096" },
		"offset 8192 (EOF) and EOF + 1 MiB, where no page is cached: "
		"mm/filemap.c:filemap_read checks i_size before it looks for "
		"pages, so a flagged read is 0, not EAGAIN, and queues no "
		"readahead; mm/shmem.c:shmem_file_read_iter checks i_size per page" },
	[ROW_flags_unknown] = { "flags_unknown", run_flags_unknown, false,
		{ "EOPNOTSUPP", "EOPNOTSUPP", "EOPNOTSUPP", "EOPNOTSUPP" },
		"each of bits 7-31 alone: include/linux/fs.h:kiocb_set_rw_flags "
		"(flags & ~RWF_SUPPORTED)" },
	[ROW_flags_all] = { "flags_all", run_flags_all, false,
		{ "EOPNOTSUPP", "EOPNOTSUPP", "EOPNOTSUPP", "EOPNOTSUPP" },
		"flags = -1: include/linux/fs.h:kiocb_set_rw_flags, the "
		"unknown bits are checked before APPEND|NOAPPEND" },
	[ROW_iovcnt_0] = { "iovcnt_0", run_iovcnt_0, false,
		{ "0", "0", "0", "0" },
		"fs/read_write.c:vfs_readv/vfs_writev return 0 for an empty "
		"request before the flags are looked at" },
	[ROW_iovcnt_neg] = { "iovcnt_neg", run_iovcnt_neg, false,
		{ "EINVAL", "EINVAL", "EINVAL", "EINVAL" },
		"iovcnt -1 is 0xffffffff > UIO_MAXIOV: lib/iov_iter.c:iovec_from_user" },
	[ROW_iovcnt_over] = { "iovcnt_over", run_iovcnt_over, false,
		{ "EINVAL", "EINVAL", "EINVAL", "EINVAL" },
		"iovcnt IOV_MAX + 1: lib/iov_iter.c:iovec_from_user" },
	[ROW_iovlen_overflow] = { "iovlen_overflow", run_iovlen_overflow, false,
		{ "x86_64=EFAULT i386=8192", "x86_64=EFAULT i386=8192",
		  "x86_64=EFAULT btrfs=EFAULT i386=8192",
		  "x86_64=EFAULT btrfs=EFAULT i386=8192" },
		"{SSIZE_MAX, 1}: lib/iov_iter.c:__import_iovec, access_ok() "
		"fails on x86_64; for i386 the total is cut to MAX_RW_COUNT, "
		"the read ends at EOF, the write at the guard page (btrfs "
		"prefaults the chunk: fs/btrfs/file.c:btrfs_buffered_write)" },
	[ROW_iov_null] = { "iov_null", run_iov_null, false,
		{ "EFAULT", "EFAULT", "EFAULT", "EFAULT" },
		"iov NULL, iovcnt 1: lib/iov_iter.c:copy_iovec_from_user" },
	[ROW_iov_unmapped] = { "iov_unmapped", run_iov_unmapped, false,
		{ "EFAULT", "EFAULT", "EFAULT", "EFAULT" },
		"iov on an unmapped page, iovcnt 2: lib/iov_iter.c:copy_iovec_from_user" },
	[ROW_buf_unmapped] = { "buf_unmapped", run_buf_unmapped, false,
		{ "EFAULT", "EFAULT", "EFAULT", "EFAULT" },
		"the copy faults: mm/filemap.c:filemap_read, "
		"mm/shmem.c:shmem_file_read_iter, mm/filemap.c:generic_perform_write; "
		"a NOWAIT write is refused before the copy" },
	[ROW_buf_readonly] = { "buf_readonly", run_buf_readonly, false,
		{ "EFAULT", "EFAULT", "4096", "4096" },
		"a PROT_READ page: reads fault in the copy (mm/filemap.c:filemap_read), "
		"writes only read it" },
	[ROW_offset_negative] = { "offset_negative", run_offset_negative, false,
		{ "EINVAL", "EINVAL", "EINVAL", "EINVAL" },
		"offsets -2, -4096, INT64_MIN: fs/read_write.c:do_preadv/do_pwritev" },
	[ROW_fd_wrong_mode] = { "fd_wrong_mode", run_fd_wrong_mode, false,
		{ "EBADF", "EBADF", "EBADF", "EBADF" },
		"read on O_WRONLY, write on O_RDONLY: fs/read_write.c:vfs_readv/vfs_writev" },
	[ROW_directory] = { "directory", run_directory, false,
		{ "EISDIR", "EOPNOTSUPP", "EBADF", "EBADF" },
		"O_RDONLY directory fd: no ->read_iter, so "
		"fs/read_write.c:do_loop_readv_writev refuses any flag but "
		"RWF_HIPRI, else fs/libfs.c:generic_read_dir; writes: vfs_writev" },
	[ROW_fifo_offset] = { "fifo_offset", run_fifo_offset, false,
		{ NOFIFO "*=ESPIPE", NOFIFO "*=ESPIPE", NOFIFO "*=ESPIPE",
		  NOFIFO "*=ESPIPE" },
		"FIFO O_RDWR|O_NONBLOCK, offset 0: stream_open() clears "
		"FMODE_PREAD/PWRITE (fs/pipe.c:fifo_open), fs/read_write.c:do_preadv" },
	[ROW_fifo_current] = { "fifo_current", run_fifo_current, false,
		{ NOFIFO "*=64", NOFIFO "*=EOPNOTSUPP", NOFIFO "*=64",
		  NOFIFO "*=EOPNOTSUPP" },
		"offset -1: fs/pipe.c:pipe_read/pipe_write; a FIFO, unlike "
		"pipe2(), never gets FMODE_NOWAIT (fs/pipe.c:__do_pipe_flags)" },
	[ROW_fifo_would_block] = { "fifo_would_block", run_fifo_would_block, false,
		{ NOFIFO "*=EAGAIN", NOFIFO "*=EOPNOTSUPP", NOFIFO "*=EAGAIN",
		  NOFIFO "*=EOPNOTSUPP" },
		"offset -1, empty (read) or full (write): O_NONBLOCK in "
		"fs/pipe.c:pipe_read/pipe_write" },
	[ROW_o_path] = { "o_path", run_o_path, false,
		{ "EBADF", "EBADF", "EBADF", "EBADF" },
		"offsets 0 and -1: fdget() skips FMODE_PATH files (fs/file.c:__fget_light)" },
	[ROW_closed_fd] = { "closed_fd", run_closed_fd, false,
		{ "EBADF", "EBADF", "EBADF", "EBADF" },
		"fs/read_write.c:do_preadv/do_pwritev" },
	[ROW_odirect_buf] = { "odirect_buf", run_odirect_buf, true,
		{ "btrfs,tmpfs=4096 *=EINVAL",
		  "ext4,xfs=EINVAL btrfs=EAGAIN *=EOPNOTSUPP",
		  "btrfs,tmpfs=4096 *=EINVAL",
		  "ext4,xfs=EINVAL btrfs=EAGAIN *=EOPNOTSUPP" },
		"O_DIRECT, buffer at page + 1, evicted file: fs/iomap/direct-io.c:"
		"iomap_dio_bio_iter (ext4, xfs, ext2, ovl on ext4), "
		"fs/direct-io.c:__blockdev_direct_IO (vfat, exfat reads), "
		"fs/exfat/file.c:exfat_file_write_iter; btrfs falls back to "
		"buffered (fs/btrfs/direct-io.c:btrfs_direct_read/write, a NOWAIT "
		"miss or btrfs_write_check is EAGAIN), tmpfs O_DIRECT is "
		"buffered (mm/shmem.c:shmem_file_open); NOWAIT with O_DIRECT "
		"needs FMODE_NOWAIT" },
	[ROW_odirect_off] = { "odirect_off", run_odirect_off, true,
		{ "btrfs,tmpfs=4096 *=EINVAL",
		  "ext4,xfs=EINVAL btrfs=EAGAIN *=EOPNOTSUPP",
		  "btrfs,tmpfs=4096 *=EINVAL",
		  "ext4,xfs=EINVAL btrfs=EAGAIN *=EOPNOTSUPP" },
		"O_DIRECT at offset 1, evicted file: as odirect_buf, but xfs "
		"checks the sector alignment first (fs/xfs/xfs_file.c:xfs_file_dio_write)" },
	[ROW_shared_pos] = { "shared_pos", run_shared_pos, false,
		{ "65536", "65536", "65536", "65536" },
		"two threads, one fd, offset -1, 512-byte records of a cached "
		"64 KiB file: fdget_pos() serialises f_pos (fs/file.c), every "
		"call moves a whole record, each record once, f_pos ends at the total" },
};

static const struct { const char *name; int e; } errnos[] = {
	{ "EAGAIN", EAGAIN }, { "EBADF", EBADF }, { "EFAULT", EFAULT },
	{ "EINVAL", EINVAL }, { "EISDIR", EISDIR }, { "EOPNOTSUPP", EOPNOTSUPP },
	{ "EPERM", EPERM }, { "ESPIPE", ESPIPE },
};

/* A byte count, or an errno name as -errno; 1 if it is neither. */
static long want_result(const char *res)
{
	if (res[0] != 'E')
		return strtol(res, NULL, 10);
	for (size_t i = 0; i < sizeof(errnos) / sizeof(errnos[0]); i++)
		if (!strcmp(res, errnos[i].name))
			return -errnos[i].e;
	return 1;
}

/* The answer @spec gives for filesystem @fs under ABI; 1 if none does. */
static long want(const char *spec, const char *fs)
{
	char buf[256], *save = NULL;

	snprintf(buf, sizeof(buf), "%s", spec);
	for (char *t = strtok_r(buf, " ", &save); t; t = strtok_r(NULL, " ", &save)) {
		char *res = strchr(t, '='), *ksave = NULL;
		bool match = false;

		if (!res)	/* a bare result: any filesystem */
			return want_result(t);
		*res++ = '\0';
		for (char *k = strtok_r(t, ",", &ksave); k; k = strtok_r(NULL, ",", &ksave))
			match |= !strcmp(k, "*") || !strcmp(k, fs) || !strcmp(k, ABI);
		if (match)
			return want_result(res);
	}
	return 1;
}

static const char *show(long v, char *buf, size_t n)
{
	if (v == BAD)
		return "invariant broken";
	if (v < 0)
		return nowait_errname((int)-v);
	snprintf(buf, n, "%ld", v);
	return buf;
}

/* Counters shared by the forked cases, printed when the program ends. */
static struct { long cases, mismatches; } *tally;

/* fsync, drop the file's pages, and check that none is left. */
static bool evict(int fd, char *why, size_t n)
{
	char map[64];

	if (nowait_evict(fd, why, n))
		return true;
	if (!nowait_in_guest())
		return false;
	/* The guest may drop every clean page; nowait_evict() asks for the env. */
	int dc = open("/proc/sys/vm/drop_caches", O_WRONLY | O_CLOEXEC);

	if (dc >= 0) {
		if (write(dc, "3", 1) != 1)
			snprintf(why, n, "drop_caches: %s", nowait_errname(errno));
		close(dc);
	}
	if (nowait_residency(fd, map, sizeof(map)) == 0)
		return true;
	snprintf(why, n, "residency after drop_caches: %s", map);
	return false;
}

/*
 * The test file: SIZE bytes of pattern in the variant's filesystem. Made by
 * hand rather than with nowait_tfile_open(), whose shape is still moving.
 */
FIXTURE(rw) {
	char path[PATH_MAX];
	int fd;
	uint32_t seed;
};

FIXTURE_VARIANT(rw) {
	struct nowait_fs fs;
};

NOWAIT_FS_VARIANTS_RW(rw)

FIXTURE_SETUP(rw)
{
	char dir[PATH_MAX - 32], tmpl[PATH_MAX], why[NOWAIT_WHY_MAX];

	self->path[0] = '\0';
	if (!nowait_fs_check(&variant->fs, dir, sizeof(dir), why, sizeof(why)))
		SKIP(return, "%.1000s", why);
	snprintf(tmpl, sizeof(tmpl), "%s/rw-errno.XXXXXX", dir);
	self->fd = mkostemp(tmpl, O_CLOEXEC);
	ASSERT_LE(0, self->fd) TH_LOG("mkostemp %s: %s", tmpl,
				      nowait_errname(errno));
	memcpy(self->path, tmpl, sizeof(tmpl));
	self->seed = (uint32_t)getpid();
}

FIXTURE_TEARDOWN_PARENT(rw)
{
	char p[PATH_MAX + 16];

	if (!self->path[0])
		return;
	snprintf(p, sizeof(p), "%s.fifo", self->path);
	unlink(p);
	snprintf(p, sizeof(p), "%s.shared", self->path);
	unlink(p);
	unlink(self->path);
}

static void run_row(struct __test_metadata *_metadata,
		    FIXTURE_DATA(rw) *self, const struct nowait_fs *fs, int r)
{
	static const char *const col[4] = {
		"preadv2", "preadv2(NOWAIT)", "pwritev2", "pwritev2(NOWAIT)" };
	const struct row *row = &rows[r];
	size_t pg = nowait_page();
	unsigned char *m;
	struct ctx c = { .fs = fs, .path = self->path, .fd = self->fd,
			 .seed = self->seed };

	/* buf: two pages and a guard; none: unmapped; ro: read-only. */
	m = mmap(NULL, 5 * pg, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, m);
	c.buf = m;
	c.none = m + 2 * pg;
	c.ro = m + 4 * pg;
	ASSERT_EQ(0, munmap(c.none, 2 * pg));
	ASSERT_EQ(0, mprotect(c.ro, pg, PROT_READ));

	for (int i = 0; i < 4; i++) {
		struct timespec old[2] = { { 0, UTIME_OMIT }, { 1000000000, 0 } };
		char a[32], b[32], why[NOWAIT_WHY_MAX];
		long exp = want(row->want[i], fs->dir), got;

		ASSERT_NE(1, exp) TH_LOG("%s: no answer for %s in \"%s\"",
					 row->name, fs->dir, row->want[i]);
		/* Writes earlier in the row must not leak into this call. */
		ASSERT_EQ(0, nowait_write_pattern(c.fd, 0, SIZE, c.seed));
		ASSERT_EQ(0, ftruncate(c.fd, SIZE));
		ASSERT_EQ(0, futimens(c.fd, old));
		if (row->odirect && !fs->cache_pinned)
			ASSERT_TRUE(evict(c.fd, why, sizeof(why)))
				TH_LOG("setup: %s", why);
		c.why[0] = '\0';
		got = row->run(&c, i >= 2, (i & 1) ? RWF_NOWAIT : 0);
		__atomic_add_fetch(&tally->cases, 1, __ATOMIC_RELAXED);
		if (got != exp)
			__atomic_add_fetch(&tally->mismatches, 1, __ATOMIC_RELAXED);
		EXPECT_EQ(exp, got)
			TH_LOG("%s %s on %s: want %s, got %s %s", row->name,
			       col[i], fs->type, show(exp, a, sizeof(a)),
			       show(got, b, sizeof(b)), c.why);
	}
	munmap(c.buf, 2 * pg);
	munmap(c.ro, pg);
}

#define ROW_TEST(n) TEST_F(rw, n) { run_row(_metadata, self, &variant->fs, ROW_##n); }
ROWS(ROW_TEST)

/* The rows as the markdown table of docs/errno-contract.md. */
static void print_table(void)
{
	printf("| case | preadv2 | preadv2 RWF_NOWAIT | pwritev2 | pwritev2 RWF_NOWAIT | why |\n");
	printf("|---|---|---|---|---|---|\n");
	for (int r = 0; r < NROWS; r++) {
		printf("| `%s` |", rows[r].name);
		for (int i = 0; i < 4; i++) {
			char buf[256], *save = NULL;
			const char *sep = " ";

			snprintf(buf, sizeof(buf), "%s", rows[r].want[i]);
			for (char *t = strtok_r(buf, " ", &save); t;
			     t = strtok_r(NULL, " ", &save)) {
				char *res = strchr(t, '=');

				if (!res)
					res = t, t = "*";
				else
					*res++ = '\0';
				if (!strcmp(t, "*"))
					printf("%s%s%s", sep, strchr(rows[r].want[i], ' ') ? "others: " : "", res);
				else
					printf("%s%s: %s", sep, t, res);
				sep = "; ";
			}
			printf(" |");
		}
		printf(" ");
		for (const char *p = rows[r].src; *p; p++)
			printf(*p == '|' ? "\\|" : "%c", *p);
		printf(" |\n");
	}
}

static void print_tally(void)
{
	printf("# rw_errno." ABI ": %ld cases checked (%d rows x 4 calls per filesystem), %ld mismatched\n",
	       tally->cases, NROWS, tally->mismatches);
	fflush(stdout);
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "--table")) {
		print_table();
		return 0;
	}
	tally = mmap(NULL, sizeof(*tally), PROT_READ | PROT_WRITE,
		     MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (tally == MAP_FAILED)
		return KSFT_FAIL;
	atexit(print_tally);
	return test_harness_run(argc, argv);
}
