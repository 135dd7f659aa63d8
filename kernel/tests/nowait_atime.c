// SPDX-License-Identifier: GPL-2.0
/*
 * The atime update of an RWF_NOWAIT read.
 *
 * Every read ends in file_accessed(), and when relatime wants an update
 * (the atime is not newer than the mtime, or is a day old) touch_atime()
 * dirties the inode: ext4 starts a jbd2 handle, xfs and btrfs a
 * transaction, each of which can sleep. For a NOWAIT read the series sets
 * the atime in memory at once and defers only what sleeps
 * (touch_atime_nowait()): the inode is marked I_DIRTY_TIME, as on a lazytime
 * mount, where ->update_time() can do that without sleeping, and elsewhere
 * (btrfs) a worker redoes the update, one per inode (I_ATIME_QUEUED). So a
 * cached NOWAIT read must not sleep even when the atime is due; a stat()
 * right after it sees the new atime (POSIX: marked for update before the
 * next stat), but on btrfs, where it lands shortly after; and the atime
 * survives fsync(), close and the eviction of the inode.
 *
 * nowait_residency() maps the file, and mmap updates the atime itself, so
 * the residency is checked before the atime is set back, never after.
 */
#include "kselftest_harness.h"
#include "nowait_test.h"

#define FILE_PAGES 4
/* How long the queued update may take. */
#define ATIME_MS 2000
/* Old enough for relatime on its own, a whole day apart even on vfat. */
#define ATIME_AGE (3 * 24 * 3600)

FIXTURE(atime) {
	struct nowait_tfile f;
	off_t size;
	unsigned char *buf;
};

FIXTURE_VARIANT(atime) {
	struct nowait_fs fs;
};

/* An atime update of a lower-layer file goes nowhere: no ovl_lower here. */
NOWAIT_FS_VARIANTS_RW(atime)

FIXTURE_SETUP(atime)
{
	struct nowait_mount m;

	self->size = (off_t)(FILE_PAGES * nowait_page());
	NOWAIT_TFILE_SETUP(&self->f, &variant->fs, self->size);
	ASSERT_TRUE(nowait_find_mount(self->f.path, NULL, &m));
	if (nowait_has_opt(m.opts, "noatime"))
		SKIP(return, "%.500s is mounted noatime (%.400s)", m.mp,
		     m.opts);
	ASSERT_EQ(0, fsync(self->f.fd));
	self->buf = malloc((size_t)self->size);
	ASSERT_NE(NULL, self->buf);
	memset(self->buf, 0, (size_t)self->size);
	/* a just-written file is cached: the reads below are hits */
	NOWAIT_ASSERT_RESIDENCY(self->f.fd, "RRRR");
}

FIXTURE_TEARDOWN_PARENT(atime)
{
	nowait_tfile_remove(&self->f);
}

/*
 * Set the atime ATIME_AGE back, so that relatime wants an update on the
 * next read, and return it as the file system stored it.
 *
 * An update queued by an earlier read can still be running and land just
 * after futimens(): on vfat, whose atime has a granularity of a day and so
 * always looks older than a fresh mtime, every read of the hot loop queues
 * one. Then the stored atime is today's and the next read has nothing to
 * update, so set it back again until it stays old.
 */
static struct timespec age_atime(struct __test_metadata *_metadata,
				 FIXTURE_DATA(atime) *self)
{
	struct timespec ts[2] = { { 0, 0 }, { 0, UTIME_OMIT } };
	struct stat st;

	for (int tries = 0;; tries++) {
		ASSERT_EQ(0, clock_gettime(CLOCK_REALTIME, &ts[0]));
		ts[0].tv_sec -= ATIME_AGE;
		ASSERT_EQ(0, futimens(self->f.fd, ts));
		nowait_msleep(20);
		ASSERT_EQ(0, fstat(self->f.fd, &st));
		if (st.st_atim.tv_sec <= ts[0].tv_sec + 24 * 3600)
			break;
		ASSERT_LT(tries, 100)
			TH_LOG("setup: the atime did not stay set back: %jd",
			       (intmax_t)st.st_atim.tv_sec);
	}
	ASSERT_TRUE(st.st_atim.tv_sec < st.st_mtim.tv_sec)
		TH_LOG("setup: atime %jd is not older than mtime %jd",
		       (intmax_t)st.st_atim.tv_sec,
		       (intmax_t)st.st_mtim.tv_sec);
	return st.st_atim;
}

/* Poll stat until the atime moved past @old, for up to ATIME_MS. */
static void expect_atime_update(struct __test_metadata *_metadata,
				FIXTURE_DATA(atime) *self,
				struct timespec old, const char *after)
{
	struct stat st;

	for (int waited = 0;; waited += 10) {
		ASSERT_EQ(0, fstat(self->f.fd, &st));
		if (nowait_ts_after(st.st_atim, old) || waited >= ATIME_MS)
			break;
		nowait_msleep(10);
	}
	EXPECT_TRUE(nowait_ts_after(st.st_atim, old))
		TH_LOG("the atime update of %s was lost: atime still %jd.%09ld after %d ms",
		       after, (intmax_t)st.st_atim.tv_sec,
		       (long)st.st_atim.tv_nsec, ATIME_MS);
}

/* Only btrfs, whose ->update_time() needs a transaction, defers the update. */
static bool atime_deferred(const struct nowait_fs *fs)
{
	return fs->magic == BTRFS_SUPER_MAGIC;
}

/* One cached NOWAIT read with the atime due: no sleep, and the update. */
TEST_F(atime, cached_read_updates_atime)
{
	struct timespec old = age_atime(_metadata, self);
	struct stat st;

	ASSERT_EQ(self->size, NOWAIT_PREAD(self->f.fd, self->buf,
					   (size_t)self->size, 0))
		TH_LOG("errno %s", nowait_errname(errno));
	ASSERT_EQ(0, fstat(self->f.fd, &st));
	NOWAIT_ASSERT_PATTERN(self->buf, (size_t)self->size, 0, self->f.seed);
	if (!atime_deferred(&variant->fs))
		EXPECT_TRUE(nowait_ts_after(st.st_atim, old))
			TH_LOG("stat() right after a cached NOWAIT read shows the old atime %jd.%09ld",
			       (intmax_t)st.st_atim.tv_sec,
			       (long)st.st_atim.tv_nsec);
	expect_atime_update(_metadata, self, old, "a cached NOWAIT read");
}

/*
 * The atime set by a NOWAIT read reaches the disk: after fsync() and close,
 * the inode is evicted (drop_caches) and read back from the filesystem.
 */
TEST_F(atime, atime_survives_fsync_and_eviction)
{
	struct timespec old;
	struct stat st;

	NOWAIT_NEED_EVICTABLE(&self->f);
	if (!nowait_in_guest())
		SKIP(return, "drop_caches is only used in the test guest");
	old = age_atime(_metadata, self);
	ASSERT_EQ(self->size, NOWAIT_PREAD(self->f.fd, self->buf,
					   (size_t)self->size, 0))
		TH_LOG("errno %s", nowait_errname(errno));
	expect_atime_update(_metadata, self, old, "a cached NOWAIT read");
	NOWAIT_TFILE_SYNC_AND_EVICT(&self->f);
	ASSERT_EQ(0, stat(self->f.path, &st));
	EXPECT_TRUE(nowait_ts_after(st.st_atim, old))
		TH_LOG("after fsync and eviction the atime is the old %jd.%09ld again",
		       (intmax_t)st.st_atim.tv_sec, (long)st.st_atim.tv_nsec);
}

/*
 * A hot file read in a loop keeps at most one update queued, and none of
 * the reads sleeps; once that update is done the next one can be queued
 * again (I_ATIME_QUEUED is cleared, not left set), so setting the atime
 * back and reading again updates it a second time.
 */
TEST_F(atime, hot_loop_then_requeued)
{
	struct timespec old = age_atime(_metadata, self);

	for (int i = 0; i < 200; i++) {
		ASSERT_EQ(self->size, NOWAIT_PREAD(self->f.fd, self->buf,
						   (size_t)self->size, 0))
			TH_LOG("read %d: errno %s", i, nowait_errname(errno));
	}
	expect_atime_update(_metadata, self, old, "200 cached NOWAIT reads");

	old = age_atime(_metadata, self);
	ASSERT_EQ(self->size, NOWAIT_PREAD(self->f.fd, self->buf,
					   (size_t)self->size, 0))
		TH_LOG("errno %s", nowait_errname(errno));
	expect_atime_update(_metadata, self, old,
			    "a NOWAIT read after the first update was done");
}

TEST_HARNESS_MAIN
