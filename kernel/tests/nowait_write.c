// SPDX-License-Identifier: GPL-2.0
/*
 * RWF_NOWAIT writes: what a flagged pwritev2() of data in memory gets on
 * each filesystem, and that it never sleeps, whatever it answers.
 *
 * Before every case the file's mtime is set a day back, so that each write
 * has to update the times (fs/inode.c:file_modified_flags): without the
 * series that alone makes a NOWAIT write fail with EAGAIN on xfs, and on
 * ext4 and xfs for O_DIRECT. With it, the times are set in memory at once
 * and a stat() right after the write shows them; the part that needs a
 * transaction is left to a worker, and fsync() writes them as it always did.
 *
 * Where a filesystem does not take flagged buffered writes yet, the cases
 * pin down its answer (nowait_buffered_write_errno()) and that the refused
 * write changed nothing.
 */
#include "kselftest_harness.h"
#include "nowait_test.h"
#include "nowait_ring.h"

#include <sys/wait.h>

#define FILE_PAGES	4
#define MTIME_AGE	(24 * 3600)
#define RECORDS		64	/* O_APPEND records in append_records */
#define REC		4096
#define HOT_WRITES	2000

FIXTURE(write) {
	struct nowait_tfile f;
	size_t size;
	unsigned char *buf;	/* what the cases write: another seed */
	unsigned char *back;	/* what they read back */
	struct timespec old;	/* the aged mtime */
};

FIXTURE_VARIANT(write) {
	struct nowait_fs fs;
};

NOWAIT_FS_VARIANTS_RW(write)
/* overlayfs with its upper layer on tmpfs (the other one's is on ext4) */
FIXTURE_VARIANT_ADD(write, ovl_tmpfs) {
	.fs = NOWAIT_FS_("ovl-tmpfs", "overlay", OVERLAYFS_SUPER_MAGIC,
			 .sparse = true, .cache_pinned = true)
};

/*
 * The same for an aligned O_DIRECT overwrite of written blocks: ext4 and
 * xfs take it; btrfs refuses it with EAGAIN, since the write copies on
 * write and allocates (fs/btrfs/file.c:btrfs_write_check); and
 * FOP_BUFFER_WASYNC admits buffered writes only, so tmpfs, overlayfs, ext2,
 * vfat and exfat refuse it. By type: ext2 has ext4's magic.
 */
static int direct_errno(const struct nowait_fs *fs)
{
	if (!strcmp(fs->type, "ext4"))
		return 0;
	if (fs->magic == BTRFS_SUPER_MAGIC)
		return EAGAIN;
	if (fs->magic == TMPFS_MAGIC || fs->magic == OVERLAYFS_SUPER_MAGIC ||
	    fs->magic == MSDOS_SUPER_MAGIC || fs->magic == EXFAT_SUPER_MAGIC ||
	    !strcmp(fs->type, "ext2"))
		return EOPNOTSUPP;
	return nowait_buffered_write_errno(fs);
}

/* Set the mtime MTIME_AGE back; returns it as the filesystem stored it. */
static struct timespec age_mtime(struct __test_metadata *_metadata, int fd)
{
	struct timespec ts[2] = { { 0, UTIME_OMIT }, { 0, 0 } };
	struct stat st;

	ASSERT_EQ(0, clock_gettime(CLOCK_REALTIME, &ts[1]));
	ts[1].tv_sec -= MTIME_AGE;
	ASSERT_EQ(0, futimens(fd, ts));
	ASSERT_EQ(0, fstat(fd, &st));
	ASSERT_TRUE(st.st_mtim.tv_sec <= ts[1].tv_sec + 2)
		TH_LOG("setup: the mtime did not go back: %jd",
		       (intmax_t)st.st_mtim.tv_sec);
	return st.st_mtim;
}

FIXTURE_SETUP(write)
{
	self->size = FILE_PAGES * nowait_page();
	NOWAIT_TFILE_SETUP(&self->f, &variant->fs, (off_t)self->size);
	ASSERT_EQ(0, fsync(self->f.fd));
	self->buf = malloc(self->size);
	self->back = malloc(self->size);
	ASSERT_NE(NULL, self->buf);
	ASSERT_NE(NULL, self->back);
	/* touched, so that copying from or into them cannot fault */
	nowait_fill(self->buf, self->size, 0, self->f.seed + 1);
	memset(self->back, 0, self->size);
	NOWAIT_ASSERT_RESIDENCY(self->f.fd, "RRRR");
	self->old = age_mtime(_metadata, self->f.fd);
}

FIXTURE_TEARDOWN_PARENT(write)
{
	nowait_tfile_remove(&self->f);
}

/* The file holds @seed's pattern in [off, off + len). */
static void expect_content(struct __test_metadata *_metadata,
			   FIXTURE_DATA(write) *self, off_t off, size_t len,
			   uint32_t seed)
{
	NOWAIT_ASSERT_FILE_PATTERN(self->f.fd, self->back, len, off, seed);
}

/* A refused write changed neither the data nor the mtime. */
static void expect_untouched(struct __test_metadata *_metadata,
			     FIXTURE_DATA(write) *self)
{
	struct stat st;

	ASSERT_EQ(0, fstat(self->f.fd, &st));
	EXPECT_TRUE(nowait_ts_equal(st.st_mtim, self->old))
		TH_LOG("a refused write moved the mtime to %jd.%09ld",
		       (intmax_t)st.st_mtim.tv_sec, (long)st.st_mtim.tv_nsec);
	EXPECT_EQ((off_t)self->size, st.st_size);
	expect_content(_metadata, self, 0, self->size, self->f.seed);
}

/*
 * Overwrite the whole file with a flagged write (retried after a passing
 * EAGAIN). Returns false where the filesystem refuses it (@want, from
 * nowait_buffered_write_errno()), once it checked that the refused write
 * changed nothing.
 */
static bool write_whole(struct __test_metadata *_metadata,
			FIXTURE_DATA(write) *self, int want)
{
	if (want) {
		NOWAIT_ASSERT_ERRNO(NOWAIT_PWRITE(self->f.fd, self->buf,
						  self->size, 0, 0), want);
		expect_untouched(_metadata, self);
		return false;
	}
	(void)NOWAIT_WRITE_RETRYING(self->f.fd, self->buf, self->size, 0, 0);
	return true;
}

/*
 * Overwrite the whole cached file: written without sleeping, and the new
 * mtime is visible to the stat() right after it.
 */
TEST_F(write, cached_overwrite)
{
	struct stat st;

	if (!write_whole(_metadata, self,
			 nowait_buffered_write_errno(&variant->fs)))
		return;
	ASSERT_EQ(0, fstat(self->f.fd, &st));
	EXPECT_TRUE(nowait_ts_after(st.st_mtim, self->old))
		TH_LOG("stat() right after the write shows the old mtime %jd",
		       (intmax_t)st.st_mtim.tv_sec);
	EXPECT_TRUE(nowait_ts_after(st.st_ctim, self->old));
	expect_content(_metadata, self, 0, self->size, self->f.seed + 1);
}

/*
 * A logger's records: O_APPEND, a page each, into pages that do not exist
 * yet. Each is written by a flagged call that does not sleep, at the end,
 * in order.
 */
TEST_F(write, append_records)
{
	int want = nowait_buffered_write_errno(&variant->fs), eagains = 0;
	off_t end = (off_t)self->size;
	int afd;

	afd = open(self->f.path, O_WRONLY | O_APPEND | O_CLOEXEC);
	ASSERT_LE(0, afd) TH_LOG("open: %s", nowait_errname(errno));
	for (int i = 0; i < RECORDS; i++) {
		nowait_fill(self->buf, REC, (uint64_t)end, self->f.seed + 1);
		if (want) {
			NOWAIT_ASSERT_ERRNO(NOWAIT_PWRITE(afd, self->buf, REC,
							  -1, 0), want);
			continue;
		}
		eagains += NOWAIT_WRITE_RETRYING(afd, self->buf, REC, -1, 0);
		end += REC;
	}
	close(afd);
	if (want) {
		expect_untouched(_metadata, self);
		return;
	}
	ksft_print_msg("%d records, %d EAGAIN retries\n", RECORDS, eagains);
	for (off_t off = (off_t)self->size; off < end; off += REC)
		expect_content(_metadata, self, off, REC, self->f.seed + 1);
}

/*
 * A writer that only ever uses the flag, retrying 1 ms apart, gets on with
 * a new file written sequentially from offset 0: each write starts at EOF,
 * so nothing has to be read, zeroed or punched first. The review of v2 saw
 * btrfs refuse all three pages for 5 s.
 */
#define NEW_FILE_PAGES 3

TEST_F(write, flagged_only_writes_to_a_new_file)
{
	int want = nowait_buffered_write_errno(&variant->fs), eagains = 0;
	size_t page = nowait_page();
	char path[PATH_MAX + 8];
	int fd;

	if (want)
		SKIP(return, "%s refuses flagged buffered writes (%s)",
		     variant->fs.type, nowait_errname(want));
	snprintf(path, sizeof(path), "%s.new", self->f.path);
	/* Left by an earlier run that failed */
	(void)unlink(path);
	fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	ASSERT_LE(0, fd) TH_LOG("open %s: %s", path, nowait_errname(errno));
	ASSERT_EQ(0, fsync(fd));
	for (size_t i = 0; i < NEW_FILE_PAGES; i++)
		eagains += NOWAIT_WRITE_RETRYING(fd, self->buf + i * page, page,
						 (off_t)(i * page), 0);
	ksft_print_msg("%d pages, %d EAGAIN retries\n", NEW_FILE_PAGES, eagains);
	NOWAIT_ASSERT_FILE_PATTERN(fd, self->back, NEW_FILE_PAGES * page, 0,
				   self->f.seed + 1);
	close(fd);
	ASSERT_EQ(0, unlink(path));
}

/*
 * The mtime a flagged write set reaches the disk with fsync(): after close
 * and the eviction of the inode, the filesystem gives back the same mtime
 * and the new data.
 */
TEST_F(write, mtime_survives_fsync_and_eviction)
{
	struct stat st, after;

	if (!write_whole(_metadata, self,
			 nowait_buffered_write_errno(&variant->fs)))
		return;
	NOWAIT_NEED_EVICTABLE(&self->f);
	if (!nowait_in_guest())
		SKIP(return, "drop_caches is only used in the test guest");
	ASSERT_EQ(0, fstat(self->f.fd, &st));
	ASSERT_TRUE(nowait_ts_after(st.st_mtim, self->old));
	NOWAIT_TFILE_SYNC_AND_EVICT(&self->f);
	ASSERT_EQ(0, stat(self->f.path, &after));
	EXPECT_TRUE(nowait_ts_equal(st.st_mtim, after.st_mtim))
		TH_LOG("mtime %jd.%09ld after the write, %jd.%09ld after fsync and eviction",
		       (intmax_t)st.st_mtim.tv_sec, (long)st.st_mtim.tv_nsec,
		       (intmax_t)after.st_mtim.tv_sec,
		       (long)after.st_mtim.tv_nsec);
	self->f.fd = open(self->f.path, O_RDONLY | O_CLOEXEC);
	ASSERT_LE(0, self->f.fd);
	expect_content(_metadata, self, 0, self->size, self->f.seed + 1);
}

/*
 * RWF_NOWAIT with RWF_DSYNC, and on an O_DSYNC file: the sync after the
 * copy waits for writeback and the journal, so the write is refused with
 * EAGAIN before anything is copied (fs/read_write.c:
 * generic_write_checks_count), where the filesystem takes flagged writes.
 */
TEST_F(write, dsync_refused)
{
	int want = nowait_buffered_write_errno(&variant->fs);
	int dfd;

	if (!want)
		want = EAGAIN;
	NOWAIT_ASSERT_ERRNO(NOWAIT_PWRITE(self->f.fd, self->buf, self->size,
					  0, RWF_DSYNC), want);
	NOWAIT_ASSERT_ERRNO(NOWAIT_PWRITE(self->f.fd, self->buf, self->size,
					  0, RWF_SYNC), want);
	dfd = open(self->f.path, O_WRONLY | O_DSYNC | O_CLOEXEC);
	ASSERT_LE(0, dfd);
	NOWAIT_ASSERT_ERRNO(NOWAIT_PWRITE(dfd, self->buf, self->size, 0, 0),
			    want);
	close(dfd);
	expect_untouched(_metadata, self);
}

/*
 * A write by a user without CAP_FSETID to a setuid, setgid file has to
 * remove both bits (fs/inode.c:file_remove_privs_flags), which can sleep:
 * a flagged write is EAGAIN and changes nothing; the blocking retry
 * writes and removes them.
 */
TEST_F(write, setuid_file_refused)
{
	int want = nowait_buffered_write_errno(&variant->fs);
	struct stat st;
	pid_t pid;
	int status;

	if (fchmod(self->f.fd, 06777) || fstat(self->f.fd, &st) ||
	    (st.st_mode & 06000) != 06000)
		SKIP(return, "%s keeps no setuid and setgid bits",
		     variant->fs.type);
	self->old = age_mtime(_metadata, self->f.fd);
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		ssize_t r;

		if (setresgid(65534, 65534, 65534) ||
		    setresuid(65534, 65534, 65534))
			_exit(2);
		r = nowait_pwritev2(self->f.fd, self->buf, self->size, 0,
				    RWF_NOWAIT);
		if (r != -1 || errno != (want ? want : EAGAIN))
			_exit(3);
		_exit(0);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	ASSERT_EQ(0, WEXITSTATUS(status))
		TH_LOG("2: setresuid failed, 3: the flagged write was not refused with %s",
		       nowait_errname(want ? want : EAGAIN));
	ASSERT_EQ(0, fstat(self->f.fd, &st));
	EXPECT_EQ(06000, st.st_mode & 06000)
		TH_LOG("the refused write removed the bits: mode %o",
		       st.st_mode);
	expect_untouched(_metadata, self);

	/* the blocking retry, by the same user, removes them */
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		if (setresgid(65534, 65534, 65534) ||
		    setresuid(65534, 65534, 65534))
			_exit(2);
		_exit(nowait_pwritev2(self->f.fd, self->buf, self->size, 0,
				      0) == (ssize_t)self->size ? 0 : 3);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	ASSERT_EQ(0, WEXITSTATUS(status));
	ASSERT_EQ(0, fstat(self->f.fd, &st));
	EXPECT_EQ(0, st.st_mode & S_ISUID) TH_LOG("mode %o", st.st_mode);
}

/*
 * An aligned O_DIRECT overwrite of written, allocated blocks that are not
 * in the page cache (a cached page in the range is EAGAIN: it would have
 * to be written back and invalidated first, mm/filemap.c:
 * kiocb_invalidate_pages): ext4 and xfs take it now that the mtime
 * update does not refuse it.
 */
TEST_F(write, direct_overwrite)
{
	int want = direct_errno(&variant->fs);
	size_t pg = nowait_page();
	unsigned char *al;
	struct stat st;
	int dfd;

	if (!variant->fs.cache_pinned) {
		NOWAIT_EVICT(self->f.fd);
		NOWAIT_ASSERT_RESIDENCY(self->f.fd, "....");
	}
	dfd = open(self->f.path, O_WRONLY | O_DIRECT | O_CLOEXEC);
	if (dfd < 0 && errno == EINVAL)
		SKIP(return, "%s has no O_DIRECT", variant->fs.type);
	ASSERT_LE(0, dfd) TH_LOG("open: %s", nowait_errname(errno));
	al = aligned_alloc(pg, pg);
	ASSERT_NE(NULL, al);
	nowait_fill(al, pg, pg, self->f.seed + 1);
	/*
	 * A synchronous O_DIRECT write waits for its own I/O; the flag only
	 * promises no wait for locks, allocation or cached pages.
	 */
	if (want) {
		NOWAIT_ASSERT_ERRNO(nowait_pwritev2(dfd, al, pg, (off_t)pg,
						    RWF_NOWAIT), want);
		close(dfd);
		free(al);
		expect_untouched(_metadata, self);
		return;
	}
	(void)NOWAIT_WRITE_RETRYING(dfd, al, pg, (off_t)pg,
				    NOWAIT_RETRY_WAITS_FOR_IO);
	close(dfd);
	free(al);
	ASSERT_EQ(0, fstat(self->f.fd, &st));
	EXPECT_TRUE(nowait_ts_after(st.st_mtim, self->old))
		TH_LOG("stat() right after the write shows the old mtime %jd",
		       (intmax_t)st.st_mtim.tv_sec);
	expect_content(_metadata, self, (off_t)pg, pg, self->f.seed + 1);
}

/*
 * A buffered io_uring write of cached data: io_uring tries it with
 * IOCB_NOWAIT from the submitter where the file has FOP_BUFFER_WASYNC, and
 * where that attempt writes it, the completion is there when
 * io_uring_enter() returns. Everywhere else an io-wq worker writes it. An
 * attempt can meet a lock held for a moment (see NOWAIT_WRITE_RETRYING) and go
 * to a worker too, so up to URING_TRIES writes are made: one completed in
 * the submit is the proof, and on the stock tree none of them is.
 */
#define URING_TRIES 20

TEST_F(write, io_uring_write_completes_in_submit)
{
	bool want_inline = nowait_buffered_write_errno(&variant->fs) == 0;
	int res = 0, tries, in_submit = 0;
	struct ring ring;

	if (ring_init(&ring) < 0)
		SKIP(return, "no io_uring here: %s", nowait_errname(errno));
	for (tries = 1; tries <= URING_TRIES; tries++) {
		bool done;

		ASSERT_EQ(0, ring_rw(&ring, IORING_OP_WRITE, self->f.fd,
				     self->buf, (unsigned int)self->size, 0, 0));
		done = ring_reap(&ring, false, &res);
		if (!done)
			ASSERT_TRUE(ring_reap(&ring, true, &res));
		ASSERT_EQ((int)self->size, res) TH_LOG("res %d", res);
		in_submit += done;
		if (done || !want_inline)
			break;
		nowait_msleep(1);
	}
	if (want_inline)
		EXPECT_LT(0, in_submit)
			TH_LOG("none of %d cached writes completed during the submit",
			       URING_TRIES);
	expect_content(_metadata, self, 0, self->size, self->f.seed + 1);
}

/*
 * Many flagged overwrites in a row, the mtime aged every 100: none sleeps,
 * each is written by a flagged call, and the data is the last written.
 * Where the filesystem refuses them, it refuses every one the same way.
 */
TEST_F(write, hot_overwrites)
{
	int want = nowait_buffered_write_errno(&variant->fs), eagains = 0;
	size_t pg = nowait_page();

	for (int i = 0; i < HOT_WRITES; i++) {
		off_t off = (off_t)((size_t)(i % FILE_PAGES) * pg);

		if (i % 100 == 0)
			self->old = age_mtime(_metadata, self->f.fd);
		nowait_fill(self->buf, pg, (uint64_t)off, self->f.seed + 1);
		if (want) {
			NOWAIT_ASSERT_ERRNO(NOWAIT_PWRITE(self->f.fd, self->buf,
							  pg, off, 0), want);
			continue;
		}
		eagains += NOWAIT_WRITE_RETRYING(self->f.fd, self->buf, pg, off,
						 0);
	}
	if (want) {
		expect_untouched(_metadata, self);
		return;
	}
	ksft_print_msg("%d writes, %d EAGAIN retries\n", HOT_WRITES, eagains);
	expect_content(_metadata, self, 0, self->size, self->f.seed + 1);
}

TEST_HARNESS_MAIN
