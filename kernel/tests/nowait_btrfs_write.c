// SPDX-License-Identifier: GPL-2.0
/*
 * RWF_NOWAIT buffered writes on btrfs, which copies on write: the paths of
 * fs/btrfs/file.c:btrfs_buffered_write where a flagged write would sleep,
 * and what it does instead.
 *
 * On the guest's btrfs disk:
 *  - a write to part of a page that is not cached and lies below EOF fails
 *    with EAGAIN, and the read it needs is queued: the page becomes
 *    resident without any blocking call, and a flagged retry writes;
 *  - a write of a whole page that is not cached reads nothing;
 *  - after the inode was evicted, the extent maps of the file are not in
 *    memory, and the fs tree search that finds them can wait for a tree
 *    lock or read a leaf: it fails with EAGAIN where it would, a worker
 *    does it, and flagged retries alone get the write done;
 *  - a write into a new page past EOF zeroes the rest of the page and reads
 *    nothing, and so does an append into that page once it is cached;
 *  - a write to part of a hole that is not cached is EAGAIN too (the
 *    extent map that says it is a hole may have to be read), and the retry
 *    finds it zeroed;
 *  - a write that starts past EOF is EAGAIN (btrfs_cont_expand() fills the
 *    gap in a transaction), changes nothing, and the blocking retry writes;
 *  - an overwrite of pages under writeback never sleeps: it is EAGAIN while
 *    the ordered extent is in flight, where the blocking write waits for it.
 *
 * Each case syncs the filesystem first: freed extents stay pinned until a
 * transaction commits, and a flagged write only reserves space that is
 * free without flushing or committing.
 */
#include "kselftest_harness.h"
#include "nowait_test.h"

#define FILE_PAGES	4
#define PART_OFF	10	/* a partial write: bytes 10..109 of a page */
#define PART_LEN	100
#define UNDER_WRITEBACK_WRITES	200

FIXTURE(btrfs) {
	struct nowait_tfile f;
	size_t page;
	unsigned char *buf;	/* what the cases write: another seed */
	unsigned char *back;
};

FIXTURE_VARIANT(btrfs) {
	struct nowait_fs fs;
};

FIXTURE_VARIANT_ADD(btrfs, btrfs) { .fs = NOWAIT_FS_BTRFS };

FIXTURE_SETUP(btrfs)
{
	self->page = nowait_page();
	NOWAIT_TFILE_SETUP(&self->f, &variant->fs,
			   (off_t)(FILE_PAGES * self->page));
	ASSERT_EQ(0, syncfs(self->f.fd));
	self->buf = malloc(FILE_PAGES * self->page);
	self->back = malloc(FILE_PAGES * self->page);
	ASSERT_NE(NULL, self->buf);
	ASSERT_NE(NULL, self->back);
	nowait_fill(self->buf, FILE_PAGES * self->page, 0, self->f.seed + 1);
	memset(self->back, 0, FILE_PAGES * self->page);
}

FIXTURE_TEARDOWN_PARENT(btrfs)
{
	nowait_tfile_remove(&self->f);
}

/* The file's size is @size. */
static void expect_size(struct __test_metadata *_metadata,
			FIXTURE_DATA(btrfs) *self, off_t size)
{
	struct stat st;

	ASSERT_EQ(0, fstat(self->f.fd, &st));
	ASSERT_EQ(size, st.st_size);
}

/* @len bytes at @off read as zeros. */
static void expect_zeros(struct __test_metadata *_metadata,
			 FIXTURE_DATA(btrfs) *self, off_t off, size_t len)
{
	size_t i = 0;

	ASSERT_EQ((ssize_t)len, pread(self->f.fd, self->back, len, off));
	while (i < len && !self->back[i])
		i++;
	ASSERT_EQ(len, i)
		TH_LOG("byte %jd is not zero", (intmax_t)off + (intmax_t)i);
}

/*
 * 100 bytes into page 1, evicted: its old contents must be read first.
 * EAGAIN, the page comes in without a blocking call, and the retry writes
 * exactly those bytes.
 */
TEST_F(btrfs, partial_write_of_an_evicted_page_queues_its_read)
{
	const off_t off = (off_t)self->page + PART_OFF;
	char map[FILE_PAGES + 1];

	NOWAIT_EVICT(self->f.fd);
	NOWAIT_ASSERT_RESIDENCY(self->f.fd, "....");
	NOWAIT_ASSERT_ERRNO(NOWAIT_PWRITE(self->f.fd, self->buf + off,
					  PART_LEN, off, 0), EAGAIN);
	ASSERT_TRUE(nowait_wait_resident(self->f.fd, 1, 1, 10000, map,
					 sizeof(map)))
		TH_LOG("page 1 not read 10 s after the refused write: %s", map);
	NOWAIT_WRITE_RETRYING(self->f.fd, self->buf + off, PART_LEN, off, 0);
	NOWAIT_ASSERT_FILE_PATTERN(self->f.fd, self->back, (size_t)off, 0,
				   self->f.seed);
	NOWAIT_ASSERT_FILE_PATTERN(self->f.fd, self->back, PART_LEN, off,
				   self->f.seed + 1);
	NOWAIT_ASSERT_FILE_PATTERN(self->f.fd, self->back,
				   FILE_PAGES * self->page - (size_t)(off + PART_LEN),
				   off + PART_LEN, self->f.seed);
}

/* A whole evicted page is overwritten by the first try, and nothing is read. */
TEST_F(btrfs, whole_page_write_of_an_evicted_page_reads_nothing)
{
	const off_t off = 2 * (off_t)self->page;

	NOWAIT_EVICT(self->f.fd);
	NOWAIT_ASSERT_RESIDENCY(self->f.fd, "....");
	ASSERT_EQ((ssize_t)self->page,
		  NOWAIT_PWRITE(self->f.fd, self->buf + off, self->page, off, 0));
	NOWAIT_ASSERT_RESIDENCY(self->f.fd, "..R.");
	NOWAIT_ASSERT_FILE_PATTERN(self->f.fd, self->back, self->page, off,
				   self->f.seed + 1);
}

/*
 * The whole of page 1 after the inode was evicted (syncfs, drop_caches 3):
 * nothing to read, but the extent maps below EOF must be looked up in the
 * fs tree, whose leaves drop_caches may have evicted too. No flagged try
 * sleeps, and retries alone get through.
 */
TEST_F(btrfs, evicted_inode_needs_no_blocking_retry)
{
	const off_t off = (off_t)self->page;
	int eagains;

	ASSERT_EQ(0, syncfs(self->f.fd));
	NOWAIT_TFILE_SYNC_AND_EVICT(&self->f);
	self->f.fd = open(self->f.path, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, self->f.fd);
	NOWAIT_ASSERT_RESIDENCY(self->f.fd, "....");
	eagains = NOWAIT_WRITE_RETRYING(self->f.fd, self->buf + off, self->page,
					off, 0);
	ksft_print_msg("%d EAGAIN before the write went through\n", eagains);
	NOWAIT_ASSERT_FILE_PATTERN(self->f.fd, self->back, self->page, off,
				   self->f.seed + 1);
	NOWAIT_ASSERT_FILE_PATTERN(self->f.fd, self->back, (size_t)off, 0,
				   self->f.seed);
}

/*
 * Appends at EOF, which is page aligned: the first goes into a page past
 * EOF that does not exist yet, which is zeroed, not read; the second
 * continues inside that page, now cached. Both by the first try.
 */
TEST_F(btrfs, appends_into_a_new_page)
{
	const off_t eof = FILE_PAGES * (off_t)self->page;

	nowait_fill(self->buf, 2 * PART_LEN, (uint64_t)eof, self->f.seed + 1);
	ASSERT_EQ(PART_LEN, NOWAIT_PWRITE(self->f.fd, self->buf, PART_LEN,
					  eof, 0));
	ASSERT_EQ(PART_LEN, NOWAIT_PWRITE(self->f.fd, self->buf + PART_LEN,
					  PART_LEN, eof + PART_LEN, 0));
	expect_size(_metadata, self, eof + 2 * PART_LEN);
	NOWAIT_ASSERT_FILE_PATTERN(self->f.fd, self->back, 2 * PART_LEN, eof,
				   self->f.seed + 1);
	/* and the zeroed rest of the page is not in the file */
	ASSERT_EQ(0, pread(self->f.fd, self->back, 1, eof + 2 * PART_LEN));
}

/*
 * Two pages of hole after the data, made by ftruncate() and synced, then
 * evicted: 100 bytes into the first page of the hole are EAGAIN, the page
 * is read (as zeros) by a worker, and the retry writes; the rest of the
 * page still reads as zeros.
 */
TEST_F(btrfs, partial_write_into_an_evicted_hole)
{
	const off_t hole = FILE_PAGES * (off_t)self->page;
	const off_t off = hole + PART_OFF;
	char map[FILE_PAGES + 3];

	ASSERT_EQ(0, ftruncate(self->f.fd, hole + 2 * (off_t)self->page));
	ASSERT_EQ(0, syncfs(self->f.fd));
	NOWAIT_EVICT(self->f.fd);
	NOWAIT_ASSERT_RESIDENCY(self->f.fd, "......");
	nowait_fill(self->buf, PART_LEN, (uint64_t)off, self->f.seed + 1);
	NOWAIT_ASSERT_ERRNO(NOWAIT_PWRITE(self->f.fd, self->buf, PART_LEN,
					  off, 0), EAGAIN);
	ASSERT_TRUE(nowait_wait_resident(self->f.fd, FILE_PAGES, FILE_PAGES,
					 10000, map, sizeof(map)))
		TH_LOG("the hole's page not read 10 s after the refused write: %s",
		       map);
	NOWAIT_WRITE_RETRYING(self->f.fd, self->buf, PART_LEN, off, 0);
	expect_size(_metadata, self, hole + 2 * (off_t)self->page);
	expect_zeros(_metadata, self, hole, PART_OFF);
	NOWAIT_ASSERT_FILE_PATTERN(self->f.fd, self->back, PART_LEN, off,
				   self->f.seed + 1);
	expect_zeros(_metadata, self, off + PART_LEN,
		     2 * self->page - PART_OFF - PART_LEN);
}

/*
 * A write that starts past EOF leaves a gap that btrfs_cont_expand() fills
 * with a hole extent in a transaction: EAGAIN, the file is unchanged, and
 * the blocking retry writes it over a gap of zeros.
 */
TEST_F(btrfs, write_past_eof_is_refused)
{
	const off_t eof = FILE_PAGES * (off_t)self->page;
	const off_t off = eof + PART_OFF;

	nowait_fill(self->buf, PART_LEN, (uint64_t)off, self->f.seed + 1);
	NOWAIT_ASSERT_ERRNO(NOWAIT_PWRITE(self->f.fd, self->buf, PART_LEN,
					  off, 0), EAGAIN);
	expect_size(_metadata, self, eof);
	ASSERT_EQ(PART_LEN, pwrite(self->f.fd, self->buf, PART_LEN, off));
	expect_size(_metadata, self, off + PART_LEN);
	expect_zeros(_metadata, self, eof, PART_OFF);
	NOWAIT_ASSERT_FILE_PATTERN(self->f.fd, self->back, PART_LEN, off,
				   self->f.seed + 1);
}

/*
 * Dirty the file, start its writeback, and overwrite it with flagged
 * writes while the ordered extents are in flight: none sleeps (each
 * NOWAIT_PWRITE checks), whatever it answers, and once writeback is done
 * the last of them has written the file.
 */
TEST_F(btrfs, overwrite_under_writeback_never_sleeps)
{
	const size_t len = FILE_PAGES * self->page;
	int written = 0, refused = 0;

	for (int i = 0; i < UNDER_WRITEBACK_WRITES; i++) {
		ssize_t r;

		ASSERT_EQ((ssize_t)len, pwrite(self->f.fd, self->back, len, 0));
		ASSERT_EQ(0, sync_file_range(self->f.fd, 0, (off_t)len,
					     SYNC_FILE_RANGE_WRITE));
		r = NOWAIT_PWRITE(self->f.fd, self->buf, len, 0, 0);
		if (r == (ssize_t)len) {
			written++;
			continue;
		}
		ASSERT_EQ(-1, r) TH_LOG("a short write: %zd of %zu", r, len);
		ASSERT_EQ(EAGAIN, errno)
			TH_LOG("errno %s", nowait_errname(errno));
		refused++;
	}
	ksft_print_msg("%d flagged overwrites during writeback: %d written, %d EAGAIN\n",
		       UNDER_WRITEBACK_WRITES, written, refused);
	ASSERT_EQ(0, fsync(self->f.fd));
	NOWAIT_WRITE_RETRYING(self->f.fd, self->buf, len, 0, 0);
	NOWAIT_ASSERT_FILE_PATTERN(self->f.fd, self->back, len, 0,
				   self->f.seed + 1);
}

TEST_HARNESS_MAIN
