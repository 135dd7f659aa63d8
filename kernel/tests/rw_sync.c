// SPDX-License-Identifier: GPL-2.0
/*
 * RWF_DSYNC and RWF_SYNC.
 *
 * kiocb_set_rw_flags() turns them into IOCB_DSYNC and IOCB_SYNC|IOCB_DSYNC
 * (include/linux/fs.h:3631-3633); generic_write_sync() then writes the range
 * back before the write returns. Durability is checked from userspace by
 * its side effect: right after the flagged write, POSIX_FADV_DONTNEED must
 * be able to evict every page, because invalidation skips dirty and
 * under-writeback folios (mm/truncate.c mapping_evict_folio), and the bytes
 * read back from disk must be the new ones.
 *
 * DONTNEED also starts writeback of dirty pages itself (mm/fadvise.c,
 * __filemap_fdatawrite_range before the invalidation), so on a device that
 * completes I/O within that window even a plain write would look durable.
 * Each case first shows that a plain write is NOT evictable that way, and
 * skips if it is, since the check would then prove nothing.
 *
 * On reads 6.12 accepts both flags and ignores them (the read paths never
 * look at IOCB_DSYNC/IOCB_SYNC).
 */
#include "kselftest_harness.h"
#include "nowait_test.h"

#define FILE_PAGES 8

FIXTURE(sync) {
	struct nowait_tfile f;
	size_t pg;
	off_t size;
};

FIXTURE_VARIANT(sync) {
	struct nowait_fs fs;
};

NOWAIT_FS_VARIANTS(sync)

FIXTURE_SETUP(sync)
{
	self->pg = nowait_page();
	self->size = (off_t)(FILE_PAGES * self->pg);
	NOWAIT_TFILE_SETUP(&self->f, &variant->fs, self->size);
	ASSERT_EQ(0, fsync(self->f.fd));
}

FIXTURE_TEARDOWN_PARENT(sync)
{
	nowait_tfile_remove(&self->f);
}

/* DONTNEED without fsync; returns how many pages stayed resident. */
static ssize_t dontneed(struct __test_metadata *_metadata, int fd, char *map,
			size_t mapsz)
{
	ssize_t resident;

	ASSERT_EQ(0, posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED));
	resident = nowait_residency(fd, map, mapsz);
	ASSERT_LE(0, resident) TH_LOG("mincore: %s", nowait_errname(errno));
	return resident;
}

/*
 * Write [off, off + len) with @flag, then check it is durable: the write
 * returns the full count, DONTNEED evicts the whole file, and the bytes read
 * back (from disk) are the new ones while the rest of the file is intact.
 */
static void check_sync_write(struct __test_metadata *_metadata,
			     FIXTURE_DATA(sync) *self, int flag, off_t off,
			     size_t len)
{
	const uint32_t seed2 = self->f.seed + 1, seed3 = self->f.seed + 2;
	const off_t end = off + (off_t)len > self->size ? off + (off_t)len :
							  self->size;
	unsigned char *buf;
	char map[1025];
	struct stat st;

	/* the callers do nothing after this helper, so its SKIPs end the case */
	NOWAIT_NEED_EVICTABLE(&self->f);
	buf = malloc((size_t)end);
	ASSERT_NE(NULL, buf);

	/* control: a plain write must not be evictable by DONTNEED alone */
	ASSERT_EQ(0, nowait_write_pattern(self->f.fd, (uint64_t)off, len, seed2));
	if (dontneed(_metadata, self->f.fd, map, sizeof(map)) == 0) {
		free(buf);
		SKIP(return, "a plain write was evictable right away: this device finishes writeback too fast for eviction to prove durability");
	}
	ASSERT_EQ(0, fsync(self->f.fd));

	nowait_fill(buf, len, (uint64_t)off, seed3);
	ASSERT_EQ((ssize_t)len, nowait_pwritev2(self->f.fd, buf, len, off, flag));
	ASSERT_EQ(0, dontneed(_metadata, self->f.fd, map, sizeof(map)))
		TH_LOG("dirty after the flagged write: residency %s", map);

	ASSERT_EQ(0, fstat(self->f.fd, &st));
	ASSERT_EQ(end, st.st_size);
	memset(buf, 0, (size_t)end);
	ASSERT_EQ(end, pread(self->f.fd, buf, (size_t)end, 0));
	NOWAIT_ASSERT_PATTERN(buf, (size_t)off, 0, self->f.seed);
	NOWAIT_ASSERT_PATTERN(buf + off, len, off, seed3);
	NOWAIT_ASSERT_PATTERN(buf + off + len, (size_t)(end - off - (off_t)len),
			      off + (off_t)len, self->f.seed);
	free(buf);
}

TEST_F(sync, dsync_overwrite_is_durable)
{
	check_sync_write(_metadata, self, RWF_DSYNC, (off_t)self->pg,
			 3 * self->pg + 17);
}

TEST_F(sync, sync_overwrite_is_durable)
{
	check_sync_write(_metadata, self, RWF_SYNC, (off_t)self->pg,
			 3 * self->pg + 17);
}

/* Extending the file also makes the new size durable enough to read back. */
TEST_F(sync, dsync_extending_write_is_durable)
{
	check_sync_write(_metadata, self, RWF_DSYNC, self->size - 100,
			 2 * self->pg);
}

TEST_F(sync, sync_extending_write_is_durable)
{
	check_sync_write(_metadata, self, RWF_SYNC, self->size - 100,
			 2 * self->pg);
}

/* Accepted on reads: fs.h:3631-3633 sets the IOCB bits, reads ignore them. */
TEST_F(sync, dsync_and_sync_accepted_on_read)
{
	unsigned char buf[5000];

	ASSERT_EQ((ssize_t)sizeof(buf),
		  nowait_preadv2(self->f.fd, buf, sizeof(buf), 77, RWF_DSYNC));
	NOWAIT_ASSERT_PATTERN(buf, sizeof(buf), 77, self->f.seed);
	memset(buf, 0, sizeof(buf));
	ASSERT_EQ((ssize_t)sizeof(buf),
		  nowait_preadv2(self->f.fd, buf, sizeof(buf), 77, RWF_SYNC));
	NOWAIT_ASSERT_PATTERN(buf, sizeof(buf), 77, self->f.seed);
	memset(buf, 0, sizeof(buf));
	ASSERT_EQ((ssize_t)sizeof(buf),
		  nowait_preadv2(self->f.fd, buf, sizeof(buf), 77,
				 RWF_SYNC | RWF_DSYNC | RWF_NOWAIT));
	NOWAIT_ASSERT_PATTERN(buf, sizeof(buf), 77, self->f.seed);
}

TEST_HARNESS_MAIN
