// SPDX-License-Identifier: GPL-2.0
/*
 * RWF_NOWAIT buffered writes on the filesystems that map or allocate blocks
 * in the write: ext4 (delayed allocation) and ext2, both with 4 KiB blocks
 * on buffer heads, vfat (512-byte blocks, 4 KiB clusters in the guest),
 * exfat (512-byte blocks, 32 KiB clusters) and btrfs, which copies on
 * write. The paths where a flagged write would have slept before the
 * series, and what it does instead (fs/buffer.c:block_write_folio_nowait,
 * fs/ext4/inode.c:ext4_da_write_begin_nowait, fs/ext2/inode.c:
 * ext2_get_block_nowait, fs/fat/inode.c:fat_write_begin_nowait,
 * fs/exfat/inode.c:exfat_write_begin_nowait,
 * fs/btrfs/file.c:btrfs_buffered_write).
 *
 * The fixture "write" uses the guest's ext4, ext2, vfat, exfat and btrfs
 * disks:
 *  - a write to part of a page that is not cached fails with EAGAIN, and
 *    the read it needs is queued: the page becomes resident without any
 *    blocking call, and a flagged retry then writes; the same for a page
 *    of a hole;
 *  - a write of a whole page that is not cached reads nothing;
 *  - after the inode was evicted, the block mappings are not in memory
 *    (ext4's extent status tree; ext2's indirect blocks, past the 12 blocks
 *    the inode maps itself; vfat's FAT blocks, past the first cluster;
 *    btrfs's extent maps, whose fs tree leaves may still be cached): the
 *    lookup is queued where it would sleep, and flagged retries alone get
 *    the write done;
 *  - a write that starts past EOF: on ext4 EAGAIN (the zeroing of the old
 *    last block needs a journal handle), on vfat and exfat too (the gap is
 *    zeroed by writes of its own), on btrfs too (the hole extent needs a
 *    transaction), and the blocking retry writes it; ext2 writes it, and
 *    the gap reads as zeros;
 *  - appends into a new page past EOF, which is zeroed, not read; appends
 *    into new blocks: ext2 allocates them, and a new indirect block past
 *    the first 12 and past the next 1024, from the in-memory bitmap, and
 *    vfat a new cluster for each page, exfat one for every eight (into a
 *    FAT chain once the next cluster is taken, which a worker writes);
 *    after the bitmap (the FAT) was evicted, a worker reads it for the
 *    retry;
 *  - a write into a hole of exfat, past valid_size: EAGAIN, and a worker
 *    zeroes up to it, as a blocking write would first;
 *  - overwrites of pages under writeback never sleep.
 *
 * The fixture "iomap" takes xfs's partial write of an evicted page: flagged
 * retries alone must get it through (fs/iomap/buffered-io.c queues the
 * page's read).
 *
 * The fixture "own_fs" makes its own ext4 (struct nowait_loopfs), so that
 * it can shut it down as a crash would (EXT4_IOC_SHUTDOWN without flushing
 * the log) and mount it again: an append that ends inside a block already
 * on disk moves the on-disk size, which a flagged write leaves to a worker;
 * after fsync() or fdatasync() the new size and data must survive the crash
 * all the same.
 *
 * The fixture "frozen" makes one to freeze: there a flagged write is EAGAIN
 * at once, where the blocking one waits for the thaw, whether it comes from
 * pwritev2() (fs/read_write.c:vfs_writev), aio or io_uring
 * (include/linux/fs.h:kiocb_start_write), directly or through an overlay
 * whose upper layer is frozen.
 */
#include "kselftest_harness.h"
#include "nowait_test.h"
#include "nowait_ring.h"

#include <signal.h>
#include <sys/wait.h>
#include <linux/aio_abi.h>

#define FILE_PAGES	4
#define PART_OFF	10	/* the partial write: bytes 10..109 of page 1 */
#define PART_LEN	100
#define HEAD		100	/* own_fs, frozen: the start of the file, written first */
#define TAIL		100	/* own_fs: the flagged append after it */
#define EXT2_INODE_BLOCKS 12	/* fs/ext2/ext2.h: EXT2_NDIR_BLOCKS */
#define EXT2_PER_BLOCK	1024	/* block numbers in a 4 KiB indirect block */
#define UNDER_WRITEBACK_WRITES	200

/* include/uapi/linux/ext4.h, not in Debian 12's linux-libc-dev */
#define NOWAIT_EXT4_IOC_SHUTDOWN		_IOR('X', 125, __u32)
#define NOWAIT_EXT4_GOING_FLAGS_NOLOGFLUSH	0x2

FIXTURE(write) {
	struct nowait_tfile f;
	size_t page;
	unsigned char *buf;	/* what the cases write: another seed */
	unsigned char *back;
};

FIXTURE_VARIANT(write) {
	struct nowait_fs fs;
	/* The pages whose blocks the inode itself maps, once it is read */
	int inode_pages;
	/* What a flagged write that starts past EOF gets (0: written) */
	int past_eof_errno;
	/*
	 * After the inode is evicted, the first flagged write may go through:
	 * btrfs looks its extent maps up in fs tree leaves that are often
	 * still cached. ext4 and ext2 must look their mappings up first.
	 */
	bool evicted_may_write;
};

FIXTURE_VARIANT_ADD(write, ext4) {
	.fs = NOWAIT_FS_EXT4, .past_eof_errno = EAGAIN,
};

FIXTURE_VARIANT_ADD(write, ext2) {
	.fs = NOWAIT_FS_EXT2, .inode_pages = EXT2_INODE_BLOCKS,
};

/* The first cluster's place is in the directory entry, not in the FAT */
FIXTURE_VARIANT_ADD(write, vfat) {
	.fs = NOWAIT_FS_VFAT, .inode_pages = 1, .past_eof_errno = EAGAIN,
};

/*
 * A contiguous exfat file is mapped without the FAT (ALLOC_NO_FAT_CHAIN),
 * and its 32 KiB clusters leave room past EOF for the appends of the
 * evicted cases, so these may go through at once.
 */
FIXTURE_VARIANT_ADD(write, exfat) {
	.fs = NOWAIT_FS_EXFAT, .past_eof_errno = EAGAIN,
	.evicted_may_write = true,
};

FIXTURE_VARIANT_ADD(write, btrfs) {
	.fs = NOWAIT_FS_BTRFS, .past_eof_errno = EAGAIN,
	.evicted_may_write = true,
};

FIXTURE_SETUP(write)
{
	self->page = nowait_page();
	NOWAIT_TFILE_SETUP(&self->f, &variant->fs,
			   (off_t)(FILE_PAGES * self->page));
	/*
	 * syncfs(), not fsync(): btrfs keeps the extents of files that
	 * earlier cases removed pinned until a transaction commits, and a
	 * flagged write reserves only space that is free without a commit.
	 */
	ASSERT_EQ(0, syncfs(self->f.fd));
	self->buf = malloc(FILE_PAGES * self->page);
	self->back = malloc(FILE_PAGES * self->page);
	ASSERT_NE(NULL, self->buf);
	ASSERT_NE(NULL, self->back);
	nowait_fill(self->buf, FILE_PAGES * self->page, 0, self->f.seed + 1);
	memset(self->back, 0, FILE_PAGES * self->page);
}

FIXTURE_TEARDOWN_PARENT(write)
{
	nowait_tfile_remove(&self->f);
}

/* Close the file, evict its inode and every clean page, and open it again */
static void evict_inode(struct __test_metadata *_metadata,
			FIXTURE_DATA(write) *self)
{
	/*
	 * syncfs() first: fsync() leaves an ext4 inode dirty until the
	 * flusher comes (its metadata is in the journal), and drop_caches
	 * evicts no dirty inode.
	 */
	ASSERT_EQ(0, syncfs(self->f.fd));
	NOWAIT_TFILE_SYNC_AND_EVICT(&self->f);
	self->f.fd = open(self->f.path, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, self->f.fd);
}

/*
 * 100 bytes into page 1, evicted: its old contents must be read first.
 * EAGAIN, the page comes in without a blocking call, and the retry writes
 * exactly those bytes.
 */
TEST_F(write, partial_write_of_an_evicted_page_queues_its_read)
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
	NOWAIT_WRITE_RETRYING(self->f.fd, self->buf + off, PART_LEN, off,
			      NOWAIT_RETRY_SHORT_OK);
	NOWAIT_ASSERT_FILE_PATTERN(self->f.fd, self->back, (size_t)off, 0,
				   self->f.seed);
	NOWAIT_ASSERT_FILE_PATTERN(self->f.fd, self->back, PART_LEN, off,
				   self->f.seed + 1);
	NOWAIT_ASSERT_FILE_PATTERN(self->f.fd, self->back,
				   FILE_PAGES * self->page - (size_t)(off + PART_LEN),
				   off + PART_LEN, self->f.seed);
}

/* A whole evicted page is overwritten at once, and nothing is read. */
TEST_F(write, whole_page_write_of_an_evicted_page_reads_nothing)
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
 * After the inode is evicted, the mappings of blocks past those the inode
 * maps itself are not in memory, and looking one up may read metadata: the
 * first flagged write there is EAGAIN and queues the lookup, and flagged
 * retries alone then get through. On ext2 the file grows past its first 12
 * blocks first, so that the write needs an indirect block. On btrfs the
 * first write may go through (evicted_may_write).
 */
TEST_F(write, evicted_inode_needs_no_blocking_retry)
{
	const off_t off = variant->inode_pages * (off_t)self->page;
	const size_t len = FILE_PAGES * self->page;
	char want[EXT2_INODE_BLOCKS + FILE_PAGES + 1];
	int eagains;

	nowait_fill(self->buf, len, (uint64_t)off, self->f.seed + 1);
	if (off) {
		nowait_fill(self->back, len, (uint64_t)off, self->f.seed);
		ASSERT_EQ((ssize_t)len, pwrite(self->f.fd, self->back, len,
					       off));
	}
	evict_inode(_metadata, self);
	memset(want, '.', sizeof(want) - 1);
	want[variant->inode_pages + FILE_PAGES] = '\0';
	NOWAIT_ASSERT_RESIDENCY(self->f.fd, want);
	if (!variant->evicted_may_write) {
		NOWAIT_ASSERT_ERRNO(NOWAIT_PWRITE(self->f.fd, self->buf, len,
						  off, 0), EAGAIN);
	}
	eagains = NOWAIT_WRITE_RETRYING(self->f.fd, self->buf, len, off,
					NOWAIT_RETRY_SHORT_OK);
	ksft_print_msg("%d more EAGAIN before the write went through\n",
		       eagains);
	NOWAIT_ASSERT_FILE_PATTERN(self->f.fd, self->back, len, off,
				   self->f.seed + 1);
}

/* @len bytes at @off read as zeros. */
static void expect_zeros(struct __test_metadata *_metadata,
			 FIXTURE_DATA(write) *self, off_t off, size_t len)
{
	size_t i = 0;

	ASSERT_EQ((ssize_t)len, pread(self->f.fd, self->back, len, off));
	while (i < len && !self->back[i])
		i++;
	ASSERT_EQ(len, i)
		TH_LOG("byte %jd is not zero", (intmax_t)off + (intmax_t)i);
}

/*
 * A write that starts past EOF leaves a gap. ext4 zeroes the end of the
 * old last block in a journal handle, and btrfs fills the gap with a hole
 * extent in a transaction: EAGAIN, and the file is unchanged; the blocking
 * retry writes it. ext2 leaves a hole, and writes it.
 */
TEST_F(write, write_past_eof)
{
	const off_t eof = FILE_PAGES * (off_t)self->page;
	const off_t off = eof + PART_OFF;
	struct stat st;

	nowait_fill(self->buf, PART_LEN, (uint64_t)off, self->f.seed + 1);
	if (variant->past_eof_errno) {
		NOWAIT_ASSERT_ERRNO(NOWAIT_PWRITE(self->f.fd, self->buf,
						  PART_LEN, off, 0),
				    variant->past_eof_errno);
		ASSERT_EQ(0, fstat(self->f.fd, &st));
		ASSERT_EQ(eof, st.st_size);
		ASSERT_EQ(PART_LEN, pwrite(self->f.fd, self->buf, PART_LEN,
					   off));
	} else {
		ASSERT_EQ(PART_LEN, NOWAIT_PWRITE(self->f.fd, self->buf,
						  PART_LEN, off, 0));
	}
	ASSERT_EQ(0, fstat(self->f.fd, &st));
	ASSERT_EQ(off + PART_LEN, st.st_size);
	expect_zeros(_metadata, self, eof, PART_OFF);
	NOWAIT_ASSERT_FILE_PATTERN(self->f.fd, self->back, PART_LEN, off,
				   self->f.seed + 1);
}

/*
 * Page-sized appends into new blocks, through the first indirect block
 * (after the 12 blocks the inode maps) and the double indirect one (after
 * 1024 more): each new indirect block is allocated without sleeping.
 * ext4 reserves delayed blocks and has no indirect blocks to allocate.
 */
TEST_F(write, appends_allocate_indirect_blocks)
{
	const off_t end = (EXT2_INODE_BLOCKS + EXT2_PER_BLOCK + 4) *
			  (off_t)self->page;
	int eagains = 0;

	for (off_t off = FILE_PAGES * (off_t)self->page; off < end;
	     off += (off_t)self->page) {
		nowait_fill(self->buf, self->page, (uint64_t)off,
			    self->f.seed + 1);
		eagains += NOWAIT_WRITE_RETRYING(self->f.fd, self->buf,
						 self->page, off, 0);
	}
	ksft_print_msg("%jd pages appended, %d EAGAIN retries\n",
		       (intmax_t)(end / (off_t)self->page - FILE_PAGES), eagains);
	for (off_t off = FILE_PAGES * (off_t)self->page; off < end;
	     off += (off_t)self->page)
		NOWAIT_ASSERT_FILE_PATTERN(self->f.fd, self->back, self->page,
					   off, self->f.seed + 1);
}

/*
 * With the block bitmaps evicted (the inode too), the first allocating
 * flagged write is EAGAIN on ext2, and the bitmap is read by a worker: the
 * flagged retries alone get through. ext4 reserves delayed blocks without
 * the bitmap, but its first write is EAGAIN too: the mapping of the new
 * block is not in the evicted inode's extent status tree. btrfs reserves
 * space and looks up no extent map past EOF: it writes at once.
 */
TEST_F(write, evicted_bitmap_needs_no_blocking_retry)
{
	const off_t eof = FILE_PAGES * (off_t)self->page;
	int eagains;

	nowait_fill(self->buf, self->page, (uint64_t)eof, self->f.seed + 1);
	evict_inode(_metadata, self);
	if (variant->evicted_may_write) {
		ASSERT_EQ((ssize_t)self->page,
			  NOWAIT_PWRITE(self->f.fd, self->buf, self->page,
					eof, 0));
	} else {
		NOWAIT_ASSERT_ERRNO(NOWAIT_PWRITE(self->f.fd, self->buf,
						  self->page, eof, 0), EAGAIN);
	}
	eagains = NOWAIT_WRITE_RETRYING(self->f.fd, self->buf, self->page,
					eof, 0);
	ksft_print_msg("%d EAGAIN before the append went through\n", eagains);
	NOWAIT_ASSERT_FILE_PATTERN(self->f.fd, self->back, self->page, eof,
				   self->f.seed + 1);
}

/*
 * Appends at EOF, which is page aligned: the first goes into a page past
 * EOF that does not exist yet, which is zeroed, not read; the second
 * continues inside that page. Flagged retries alone write them.
 */
TEST_F(write, appends_into_a_new_page)
{
	const off_t eof = FILE_PAGES * (off_t)self->page;
	struct stat st;
	int eagains;

	nowait_fill(self->buf, 2 * PART_LEN, (uint64_t)eof, self->f.seed + 1);
	eagains = NOWAIT_WRITE_RETRYING(self->f.fd, self->buf, PART_LEN, eof, 0);
	eagains += NOWAIT_WRITE_RETRYING(self->f.fd, self->buf + PART_LEN,
					 PART_LEN, eof + PART_LEN, 0);
	ksft_print_msg("%d EAGAIN before the appends went through\n", eagains);
	ASSERT_EQ(0, fstat(self->f.fd, &st));
	ASSERT_EQ(eof + 2 * PART_LEN, st.st_size);
	NOWAIT_ASSERT_FILE_PATTERN(self->f.fd, self->back, 2 * PART_LEN, eof,
				   self->f.seed + 1);
	/* and the zeroed rest of the page is not in the file */
	ASSERT_EQ(0, pread(self->f.fd, self->back, 1, eof + 2 * PART_LEN));
}

/*
 * Two pages of hole after the data, made by ftruncate() and synced, then
 * evicted: 100 bytes into the first page of the hole are EAGAIN, the page
 * is read (as zeros) by a worker, and the retry writes; the rest of the
 * page still reads as zeros. On exfat the hole lies past valid_size, and
 * the worker writes the zeros up to the write instead.
 */
TEST_F(write, partial_write_into_an_evicted_hole)
{
	const off_t hole = FILE_PAGES * (off_t)self->page;
	const off_t off = hole + PART_OFF;
	char map[FILE_PAGES + 3];
	struct stat st;

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
	ASSERT_EQ(0, fstat(self->f.fd, &st));
	ASSERT_EQ(hole + 2 * (off_t)self->page, st.st_size);
	expect_zeros(_metadata, self, hole, PART_OFF);
	NOWAIT_ASSERT_FILE_PATTERN(self->f.fd, self->back, PART_LEN, off,
				   self->f.seed + 1);
	expect_zeros(_metadata, self, off + PART_LEN,
		     2 * self->page - PART_OFF - PART_LEN);
}

/*
 * Dirty the file, start its writeback, and overwrite it with flagged
 * writes while it is in flight (on btrfs, its ordered extents): none
 * sleeps (each NOWAIT_PWRITE checks), whatever it answers, and in the end
 * flagged writes alone have written the file.
 */
TEST_F(write, overwrite_under_writeback_never_sleeps)
{
	const size_t len = FILE_PAGES * self->page;
	int written = 0, refused = 0;

	for (int i = 0; i < UNDER_WRITEBACK_WRITES; i++) {
		ssize_t r;

		ASSERT_EQ((ssize_t)len, pwrite(self->f.fd, self->back, len, 0));
		ASSERT_EQ(0, sync_file_range(self->f.fd, 0, (off_t)len,
					     SYNC_FILE_RANGE_WRITE));
		r = NOWAIT_PWRITE(self->f.fd, self->buf, len, 0, 0);
		if (r > 0) {
			ASSERT_GE(len, (size_t)r);
			written++;
			continue;
		}
		ASSERT_EQ(-1, r);
		ASSERT_EQ(EAGAIN, errno)
			TH_LOG("errno %s", nowait_errname(errno));
		refused++;
	}
	ksft_print_msg("%d flagged overwrites during writeback: %d wrote, %d EAGAIN\n",
		       UNDER_WRITEBACK_WRITES, written, refused);
	ASSERT_EQ(0, fsync(self->f.fd));
	NOWAIT_WRITE_RETRYING(self->f.fd, self->buf, len, 0, 0);
	NOWAIT_ASSERT_FILE_PATTERN(self->f.fd, self->back, len, 0,
				   self->f.seed + 1);
}

/*
 * xfs (iomap): a flagged write to part of an evicted page added the page to
 * the cache and failed, and nothing read it (readahead skips cached pages),
 * so flagged retries alone never got through, where ext4's did. Now the
 * page's read is queued, and the retries get through.
 */
FIXTURE(iomap) {
	struct nowait_tfile f;
	unsigned char buf[PART_LEN];
};

FIXTURE_SETUP(iomap)
{
	NOWAIT_TFILE_SETUP(&self->f, &(struct nowait_fs)NOWAIT_FS_XFS,
			   (off_t)(FILE_PAGES * nowait_page()));
	ASSERT_EQ(0, syncfs(self->f.fd));
	nowait_fill(self->buf, PART_LEN, nowait_page() + PART_OFF, self->f.seed + 1);
}

FIXTURE_TEARDOWN_PARENT(iomap)
{
	nowait_tfile_remove(&self->f);
}

TEST_F(iomap, partial_write_of_an_evicted_page_gets_through)
{
	const off_t off = (off_t)nowait_page() + PART_OFF;
	unsigned char back[PART_LEN];
	int eagains;

	NOWAIT_EVICT(self->f.fd);
	NOWAIT_ASSERT_RESIDENCY(self->f.fd, "....");
	eagains = NOWAIT_WRITE_RETRYING(self->f.fd, self->buf, PART_LEN, off, 0);
	TH_LOG("written after %d EAGAIN", eagains);
	ASSERT_EQ(PART_LEN, pread(self->f.fd, back, PART_LEN, off));
	ASSERT_EQ(0, memcmp(back, self->buf, PART_LEN));
	NOWAIT_ASSERT_FILE_PATTERN(self->f.fd, back, PART_OFF, nowait_page(),
				   self->f.seed);
}

FIXTURE(own_fs) {
	struct nowait_loopfs fs;
	char file[96];
	uint32_t seed;
};

FIXTURE_SETUP(own_fs)
{
	NOWAIT_LOOPFS_SETUP(&self->fs, "ext4-write", "ext4",
			    "mkfs.ext4 -q -F -b 4096", 64 << 20);
	snprintf(self->file, sizeof(self->file), "%s/log", self->fs.dir);
	self->seed = (uint32_t)getpid();
	alarm(60);	/* nothing below may hang */
}

FIXTURE_TEARDOWN_PARENT(own_fs)
{
	nowait_loopfs_remove(&self->fs);
}

/*
 * HEAD bytes written and synced, so that their block is on disk; then a
 * flagged append of TAIL bytes into the same block, which moves the
 * on-disk size; @sync_fn; then a crash: the filesystem is shut down without
 * flushing its log, and mounted again, which replays what was committed.
 */
static void append_sync_crash(struct __test_metadata *_metadata,
			      FIXTURE_DATA(own_fs) *self, int (*sync_fn)(int))
{
	unsigned char buf[HEAD + TAIL];
	__u32 how = NOWAIT_EXT4_GOING_FLAGS_NOLOGFLUSH;
	struct stat st;
	int fd;

	fd = open(self->file, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, nowait_write_pattern(fd, 0, HEAD, self->seed));
	ASSERT_EQ(0, fsync(fd));
	nowait_fill(buf, sizeof(buf), 0, self->seed);
	NOWAIT_WRITE_RETRYING(fd, buf + HEAD, TAIL, HEAD, NOWAIT_RETRY_SHORT_OK);
	ASSERT_EQ(0, fstat(fd, &st));
	ASSERT_EQ(HEAD + TAIL, st.st_size);
	ASSERT_EQ(0, sync_fn(fd));
	ASSERT_EQ(0, ioctl(fd, NOWAIT_EXT4_IOC_SHUTDOWN, &how))
		TH_LOG("EXT4_IOC_SHUTDOWN: %s", nowait_errname(errno));
	close(fd);
	ASSERT_EQ(0, umount(self->fs.dir));
	self->fs.mounted = false;
	ASSERT_EQ(0, mount(self->fs.dev, self->fs.dir, "ext4", 0, NULL))
		TH_LOG("mount after the shutdown: %s", nowait_errname(errno));
	self->fs.mounted = true;

	fd = open(self->file, O_RDONLY | O_CLOEXEC);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, fstat(fd, &st));
	EXPECT_EQ(HEAD + TAIL, st.st_size)
		TH_LOG("the size the flagged append set did not survive");
	memset(buf, 0, sizeof(buf));
	ASSERT_EQ(st.st_size, pread(fd, buf, sizeof(buf), 0));
	NOWAIT_ASSERT_PATTERN(buf, (size_t)st.st_size, 0, self->seed);
	close(fd);
}

TEST_F(own_fs, append_into_a_written_block_survives_fdatasync)
{
	append_sync_crash(_metadata, self, fdatasync);
}

TEST_F(own_fs, append_into_a_written_block_survives_fsync)
{
	append_sync_crash(_metadata, self, fsync);
}

/*
 * A frozen filesystem holds writers until it is thawed, which an
 * administrator or a snapshot tool decides. A flagged write there must get
 * EAGAIN at once, through each way a server submits one: pwritev2() (which
 * took the freeze protection in vfs_writev()), aio's io_submit() and
 * io_uring (kiocb_start_write()); and the same through an overlay whose
 * upper layer is frozen (vfs_iter_write() and vfs_iocb_iter_write() on the
 * upper file). Thawed, the same flagged write goes through.
 */
enum submit { SUBMIT_PWRITEV2, SUBMIT_AIO, SUBMIT_IO_URING };

#define THAW_AFTER	10	/* s: the watchdog's thaw, if the write waits */

FIXTURE(frozen) {
	struct nowait_loopfs fs;
	char merged[64];	/* the overlay on fs's lower/, upper/, work/ */
	bool ovl_mounted;
	aio_context_t aio;
	struct ring ring;
	uint32_t seed;
};

/*
 * The _direct variants check the freeze protection alone, which is the
 * VFS's whatever the filesystem does with flagged writes: O_DIRECT
 * overwrites of a file written beforehand, where only the write to the
 * frozen filesystem is flagged, and the writes before the freeze and
 * after the thaw are blocking. (A kernel without nonblocking timestamps
 * refuses every flagged write that changes ext4's mtime.)
 */
FIXTURE_VARIANT(frozen) {
	enum submit how;
	bool direct;
};

FIXTURE_VARIANT_ADD(frozen, pwritev2) {
	.how = SUBMIT_PWRITEV2,
};

FIXTURE_VARIANT_ADD(frozen, aio) {
	.how = SUBMIT_AIO,
};

FIXTURE_VARIANT_ADD(frozen, io_uring) {
	.how = SUBMIT_IO_URING,
};

FIXTURE_VARIANT_ADD(frozen, pwritev2_direct) {
	.how = SUBMIT_PWRITEV2,
	.direct = true,
};

FIXTURE_VARIANT_ADD(frozen, aio_direct) {
	.how = SUBMIT_AIO,
	.direct = true,
};

FIXTURE_VARIANT_ADD(frozen, io_uring_direct) {
	.how = SUBMIT_IO_URING,
	.direct = true,
};

FIXTURE_SETUP(frozen)
{
	self->merged[0] = '\0';
	NOWAIT_LOOPFS_SETUP(&self->fs, "ext4-frozen", "ext4",
			    "mkfs.ext4 -q -F -b 4096", 64 << 20);
	if (variant->how == SUBMIT_AIO)
		ASSERT_EQ(0, syscall(__NR_io_setup, 1, &self->aio))
			TH_LOG("setup: io_setup: %s", nowait_errname(errno));
	if (variant->how == SUBMIT_IO_URING)
		ASSERT_EQ(0, ring_init(&self->ring))
			TH_LOG("setup: io_uring_setup: %s", nowait_errname(errno));
	self->seed = (uint32_t)getpid();
}

FIXTURE_TEARDOWN_PARENT(frozen)
{
	int dfd = self->fs.mounted ? open(self->fs.dir, O_RDONLY | O_CLOEXEC) : -1;

	if (dfd >= 0) {
		ioctl(dfd, FITHAW, 0);	/* the overlay's umount syncs it */
		close(dfd);
	}
	if (self->ovl_mounted && umount(self->merged))
		umount2(self->merged, MNT_DETACH);
	if (self->merged[0])
		rmdir(self->merged);
	nowait_loopfs_remove(&self->fs);
}

/*
 * One RWF_NOWAIT write of @len bytes at @off, submitted the variant's way
 * and reaped: the bytes written or -errno. Sets @slept if the task slept,
 * in the submission or in waiting for its completion.
 */
static ssize_t frozen_submit(FIXTURE_DATA(frozen) *self, enum submit how,
			     int fd, const void *buf, size_t len, off_t off,
			     bool *slept)
{
	struct iocb cb = { 0 }, *cbs[1] = { &cb };
	struct io_event ev;
	long before = nowait_nvcsw();
	ssize_t ret;
	int res;

	switch (how) {
	case SUBMIT_AIO:
		cb.aio_fildes = (__u32)fd;
		cb.aio_lio_opcode = IOCB_CMD_PWRITE;
		cb.aio_buf = (uintptr_t)buf;
		cb.aio_nbytes = len;
		cb.aio_offset = off;
		cb.aio_rw_flags = RWF_NOWAIT;
		if (syscall(__NR_io_submit, self->aio, 1, cbs) != 1)
			ret = -errno;
		else if (syscall(__NR_io_getevents, self->aio, 1, 1, &ev,
				 NULL) != 1)
			ret = -errno;
		else
			ret = (ssize_t)ev.res;
		break;
	case SUBMIT_IO_URING:
		ret = ring_rw(&self->ring, IORING_OP_WRITE, fd, (void *)buf,
			      (unsigned int)len, off, RWF_NOWAIT);
		if (!ret)
			ret = ring_reap(&self->ring, true, &res) ? res : -EIO;
		break;
	default:
		ret = nowait_pwritev2(fd, buf, len, off, RWF_NOWAIT);
		if (ret < 0)
			ret = -errno;
		break;
	}
	*slept = nowait_nvcsw() != before;
	return ret;
}

/*
 * Write @len bytes at @off with flagged writes submitted the variant's way,
 * retried 1 ms apart while EAGAIN, and the rest of a short one blocking.
 * None may sleep. Returns the tries the first write took.
 */
static int frozen_write_retrying(struct __test_metadata *_metadata,
				 FIXTURE_DATA(frozen) *self, enum submit how,
				 int fd, const unsigned char *buf, size_t len,
				 off_t off)
{
	bool slept;
	ssize_t ret = -EAGAIN;
	int tries;

	for (tries = 0; tries < NOWAIT_RETRY_MAX && ret == -EAGAIN; tries++) {
		if (tries)
			usleep(1000);
		ret = frozen_submit(self, how, fd, buf, len, off, &slept);
		EXPECT_FALSE(slept) TH_LOG("a flagged write at %jd slept",
					   (intmax_t)off);
	}
	EXPECT_LT(0, ret) TH_LOG("a flagged write at %jd, %d tries: %s",
				 (intmax_t)off, tries,
				 ret < 0 ? nowait_errname((int)-ret) : "0 bytes");
	if (ret <= 0)
		return tries;
	if ((size_t)ret < len)
		EXPECT_EQ((ssize_t)len - ret,
			  pwrite(fd, buf + ret, len - (size_t)ret, off + ret));
	return tries;
}

#define DIRECT_LEN	4096	/* frozen, _direct variants: one block */

/*
 * @file on the loop filesystem, or on the overlay whose upper layer it is,
 * gets its first @len bytes by flagged writes, which sets up what they need
 * (through an overlay, the first asynchronous one has a worker create the
 * completion workqueue its retry needs: fs/backing-file.c:
 * backing_aio_init_wq). Then the loop filesystem is frozen, and a flagged
 * write of @len more is EAGAIN at once and writes nothing; thawed, the same
 * flagged write goes through. With @direct, the writes are O_DIRECT
 * overwrites of a file of 2 * @len bytes written beforehand, and only the
 * one to the frozen filesystem is flagged.
 */
static void frozen_write(struct __test_metadata *_metadata,
			 FIXTURE_DATA(frozen) *self, enum submit how,
			 bool direct, const char *file)
{
	size_t len = direct ? DIRECT_LEN : HEAD;
	off_t size_before = direct ? 2 * DIRECT_LEN : HEAD;
	unsigned char *buf, *back;
	struct stat st;
	bool slept;
	ssize_t ret;
	pid_t watchdog;
	int fd, dfd, tries;

	ASSERT_EQ(0, posix_memalign((void **)&buf, DIRECT_LEN, 2 * len));
	ASSERT_EQ(0, posix_memalign((void **)&back, DIRECT_LEN, 2 * len));
	nowait_fill(buf, 2 * len, 0, self->seed);
	if (direct) {
		fd = open(file, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
		ASSERT_LE(0, fd) TH_LOG("open %s: %s", file, nowait_errname(errno));
		memset(back, 0, 2 * len);
		ASSERT_EQ((ssize_t)(2 * len), pwrite(fd, back, 2 * len, 0));
		ASSERT_EQ(0, fsync(fd));
		close(fd);
	}
	fd = open(file, O_RDWR | O_CREAT | O_CLOEXEC | (direct ? O_DIRECT : 0), 0600);
	ASSERT_LE(0, fd) TH_LOG("open %s: %s", file, nowait_errname(errno));
	if (direct) {
		ASSERT_EQ((ssize_t)len, pwrite(fd, buf, len, 0));
	} else {
		tries = frozen_write_retrying(_metadata, self, how, fd, buf, len, 0);
		ksft_print_msg("before the freeze, the first flagged write went through at try %d\n",
			       tries);
	}
	ASSERT_EQ(0, fstat(fd, &st));
	ASSERT_EQ(size_before, st.st_size);

	dfd = open(self->fs.dir, O_RDONLY | O_CLOEXEC);
	ASSERT_LE(0, dfd);
	ASSERT_EQ(0, ioctl(dfd, FIFREEZE, 0))
		TH_LOG("FIFREEZE: %s", nowait_errname(errno));
	watchdog = nowait_thaw_later(self->fs.dir, THAW_AFTER);
	ASSERT_LT(0, watchdog);
	ret = frozen_submit(self, how, fd, buf + len, len, (off_t)len, &slept);
	kill(watchdog, SIGKILL);
	waitpid(watchdog, NULL, 0);
	EXPECT_EQ(0, ioctl(dfd, FITHAW, 0))
		TH_LOG("the watchdog thawed the filesystem: the flagged write waited %d s for it",
		       THAW_AFTER);
	close(dfd);
	EXPECT_FALSE(slept) TH_LOG("the flagged write to a frozen filesystem slept");
	EXPECT_EQ(-EAGAIN, ret)
		TH_LOG("the flagged write to a frozen filesystem returned %zd%s%s",
		       ret, ret < 0 ? ", " : "",
		       ret < 0 ? nowait_errname((int)-ret) : "");
	ASSERT_EQ(0, fstat(fd, &st));
	ASSERT_EQ(size_before, st.st_size) TH_LOG("the refused write changed the size");

	if (direct) {
		ASSERT_EQ((ssize_t)len, pwrite(fd, buf + len, len, (off_t)len));
	} else {
		tries = frozen_write_retrying(_metadata, self, how, fd, buf + len,
					      len, (off_t)len);
		ksft_print_msg("after the thaw, the flagged write went through at try %d\n",
			       tries);
	}
	ASSERT_EQ(0, fstat(fd, &st));
	ASSERT_EQ((off_t)(2 * len), st.st_size);
	NOWAIT_ASSERT_FILE_PATTERN(fd, back, 2 * len, 0, self->seed);
	close(fd);
	free(buf);
	free(back);
}

TEST_F(frozen, flagged_write_is_eagain_at_once)
{
	char file[96];

	snprintf(file, sizeof(file), "%s/log", self->fs.dir);
	frozen_write(_metadata, self, variant->how, variant->direct, file);
}

TEST_F(frozen, flagged_overlayfs_write_is_eagain_at_once)
{
	static const char *const layer[] = { "lower", "upper", "work" };
	char path[128], opts[400], file[96];

	if (variant->direct)
		SKIP(return, "overlayfs takes no flagged O_DIRECT write (EOPNOTSUPP); the buffered variants cover it");

	for (size_t i = 0; i < sizeof(layer) / sizeof(layer[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", self->fs.dir, layer[i]);
		ASSERT_EQ(0, mkdir(path, 0700));
	}
	snprintf(self->merged, sizeof(self->merged), "/tmp/ovl-frozen.%d",
		 (int)getpid());
	ASSERT_EQ(0, mkdir(self->merged, 0700));
	snprintf(opts, sizeof(opts),
		 "lowerdir=%s/lower,upperdir=%s/upper,workdir=%s/work",
		 self->fs.dir, self->fs.dir, self->fs.dir);
	ASSERT_EQ(0, mount("overlay", self->merged, "overlay", 0, opts))
		TH_LOG("mount overlay %s: %s", opts, nowait_errname(errno));
	self->ovl_mounted = true;
	snprintf(file, sizeof(file), "%s/log", self->merged);
	frozen_write(_metadata, self, variant->how, variant->direct, file);
}

TEST_HARNESS_MAIN
