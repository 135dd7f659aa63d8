// SPDX-License-Identifier: GPL-2.0
/*
 * Buffered io_uring reads on the filesystems the series enables.
 *
 * io_uring first issues a read with IOCB_NOWAIT from the submitting task
 * and hands it to an io-wq worker ("iou-wrk-<pid>") only if that attempt
 * would block. In 6.12 it makes the attempt only on FMODE_NOWAIT files
 * (io_file_supports_nowait(), io_uring/rw.c): every read of tmpfs,
 * overlayfs, vfat, exfat or ext2 went to a worker, cached or not. With
 * FOP_BUFFER_RNOWAIT a cached read completes during io_uring_enter() and
 * no worker is created; a miss still goes to a worker and returns the
 * data; RWF_NOWAIT in the SQE makes a miss complete with -EAGAIN.
 *
 * A miss must not sleep in the submitter either. On ext4, xfs and btrfs
 * (FOP_BUFFER_RASYNC) io_uring retries a failed IOCB_NOWAIT attempt at once
 * with IOCB_WAITQ, and that retry used to submit the readahead itself,
 * sleeping inside io_uring_enter() on extent reads and request slots. With
 * the series the first attempt only adds the folios, without sleeping, and
 * a worker reads them; the retry waits for them with a callback, so such a
 * miss needs no io-wq worker either (v3 up to its patch 71 sent every one
 * there).
 *
 * The ring is driven by raw syscalls, so the same code runs as x86_64 and
 * as i386 (the compat entry points).
 */
#include "kselftest_harness.h"
#include "nowait_test.h"

#include "nowait_ring.h"


#define FILE_PAGES 4

FIXTURE(uring) {
	struct nowait_tfile f;
	struct ring ring;
	size_t len;
	unsigned char *buf;
};

FIXTURE_VARIANT(uring) {
	struct nowait_fs fs;
};

NOWAIT_FS_VARIANTS_READ(uring)

FIXTURE_SETUP(uring)
{
	self->len = FILE_PAGES * nowait_page();
	NOWAIT_TFILE_SETUP(&self->f, &variant->fs, (off_t)self->len);
	ASSERT_EQ(0, fsync(self->f.wfd));
	self->buf = malloc(self->len);
	ASSERT_NE(NULL, self->buf);
	memset(self->buf, 0, self->len);
	if (ring_init(&self->ring) < 0)
		SKIP(return, "no io_uring here: %s", nowait_errname(errno));
}

FIXTURE_TEARDOWN_PARENT(uring)
{
	nowait_tfile_remove(&self->f);
}

/* The whole file in the page cache, read there by plain pread. */
static void make_cached(struct __test_metadata *_metadata,
			FIXTURE_DATA(uring) *self)
{
	ASSERT_EQ((ssize_t)self->len,
		  pread(self->f.fd, self->buf, self->len, 0));
	NOWAIT_ASSERT_RESIDENCY(self->f.fd, "RRRR");
	memset(self->buf, 0, self->len);
}

TEST_F(uring, cached_read_completes_in_submit)
{
	bool in_submit;
	int res = 0;

	make_cached(_metadata, self);
	ASSERT_EQ(0, ring_iowq_workers());
	ASSERT_EQ(0, ring_rw(&self->ring, IORING_OP_READ, self->f.fd,
			     self->buf, (unsigned int)self->len, 0, 0));
	/* Completed before io_uring_enter() returned: by the submitter. */
	in_submit = ring_reap(&self->ring, false, &res);
	EXPECT_TRUE(in_submit)
		TH_LOG("a cached read was not completed during the submit");
	EXPECT_EQ(0, ring_iowq_workers())
		TH_LOG("a cached read was handed to an io-wq worker");
	if (!in_submit)
		ASSERT_TRUE(ring_reap(&self->ring, true, &res));
	ASSERT_EQ((int)self->len, res) TH_LOG("res %d", res);
	NOWAIT_ASSERT_PATTERN(self->buf, self->len, 0, self->f.seed);
}

/*
 * Evict the whole file and read it through the ring with @flags; *res is
 * the completion's. The caller skips first where nothing can be evicted.
 */
static void read_evicted(struct __test_metadata *_metadata,
			 FIXTURE_DATA(uring) *self, __kernel_rwf_t flags,
			 int *res)
{
	NOWAIT_EVICT(self->f.fd);
	NOWAIT_ASSERT_RESIDENCY(self->f.fd, "....");
	ASSERT_EQ(0, ring_rw(&self->ring, IORING_OP_READ, self->f.fd,
			     self->buf, (unsigned int)self->len, 0, flags));
	ASSERT_TRUE(ring_reap(&self->ring, true, res));
}

TEST_F(uring, miss_is_read_by_a_worker)
{
	int res = 0;

	NOWAIT_NEED_EVICTABLE(&self->f);
	read_evicted(_metadata, self, 0, &res);
	ASSERT_EQ((int)self->len, res) TH_LOG("res %d", res);
	NOWAIT_ASSERT_PATTERN(self->buf, self->len, 0, self->f.seed);
}

TEST_F(uring, nowait_miss_is_eagain)
{
	int res = 0;

	NOWAIT_NEED_EVICTABLE(&self->f);
	read_evicted(_metadata, self, RWF_NOWAIT, &res);
	ASSERT_EQ(-EAGAIN, res) TH_LOG("res %d", res);
}

/*
 * A cold read sleeps 0 times inside io_uring_enter(). The first miss makes
 * the io-wq worker, which may allocate and so sleep; the measured ones after
 * it find the worker there.
 */
#define COLD_SUBMITS 5

TEST_F(uring, miss_does_not_sleep_in_submit)
{
	int res = 0, slept_calls = 0;

	NOWAIT_NEED_EVICTABLE(&self->f);
	read_evicted(_metadata, self, 0, &res);
	ASSERT_EQ((int)self->len, res) TH_LOG("warm-up: res %d", res);
	for (int i = 0; i < COLD_SUBMITS; i++) {
		bool slept;
		int r;

		NOWAIT_EVICT(self->f.fd);
		NOWAIT_ASSERT_RESIDENCY(self->f.fd, "....");
		memset(self->buf, 0, self->len);
		r = NOWAIT_MEASURE(slept, ring_rw(&self->ring, IORING_OP_READ,
						  self->f.fd, self->buf,
						  (unsigned int)self->len,
						  0, 0));
		ASSERT_EQ(0, r) TH_LOG("submit: %s", nowait_errname(-r));
		slept_calls += slept;
		ASSERT_TRUE(ring_reap(&self->ring, true, &res));
		ASSERT_EQ((int)self->len, res) TH_LOG("res %d", res);
		NOWAIT_ASSERT_PATTERN(self->buf, self->len, 0, self->f.seed);
	}
	EXPECT_EQ(0, slept_calls)
		TH_LOG("%d of %d cold reads slept inside io_uring_enter()",
		       slept_calls, COLD_SUBMITS);
}

/*
 * io_uring waits for a locked folio with a callback only on files with
 * FOP_BUFFER_RASYNC; the other filesystems' misses go to io-wq by design.
 */
static bool has_async_buffered_reads(const struct nowait_fs *fs)
{
	/* ext2 has ext4's magic, and no FOP_BUFFER_RASYNC */
	return !strcmp(fs->type, "ext4") || fs->magic == XFS_SUPER_MAGIC ||
	       fs->magic == BTRFS_SUPER_MAGIC;
}

TEST_F(uring, async_miss_needs_no_iowq_worker)
{
	int res = 0;

	if (!has_async_buffered_reads(&variant->fs))
		SKIP(return, "%s: io_uring reads its misses in io-wq (no FOP_BUFFER_RASYNC)",
		     variant->fs.type);
	NOWAIT_NEED_EVICTABLE(&self->f);
	ASSERT_EQ(0, ring_iowq_workers());
	for (int i = 0; i < COLD_SUBMITS; i++) {
		memset(self->buf, 0, self->len);
		read_evicted(_metadata, self, 0, &res);
		ASSERT_EQ((int)self->len, res) TH_LOG("res %d", res);
		NOWAIT_ASSERT_PATTERN(self->buf, self->len, 0, self->f.seed);
	}
	EXPECT_EQ(0, ring_iowq_workers())
		TH_LOG("%d io-wq worker(s) after %d cold reads", ring_iowq_workers(),
		       COLD_SUBMITS);
}

TEST_HARNESS_MAIN
