// SPDX-License-Identifier: GPL-2.0
/*
 * RWF_NOWAIT reads and writes of shmem files: a file on tmpfs and a memfd.
 *
 * shmem_file_read_iter() looks each page up with shmem_get_folio_nowait()
 * for a NOWAIT read: a page in swap is a miss (EAGAIN, or the cached
 * prefix), and neither a swap-in nor an allocation happens in the caller:
 * a worker swaps the missed page in, so that the retry finds it in memory;
 * a hole, and a page fallocated but never written, read as zeros, with no
 * EAGAIN, as they do for a blocking read. A cached page is read without its
 * folio lock, as filemap_read() reads one, so a writer or a fault holding
 * the lock does not turn a hit into EAGAIN. fadvise cannot evict shmem, so
 * the misses here are real swap-outs (nowait_shmem_residency()): they need
 * an active swap area and the cgroup2 memory controller, and skip without.
 *
 * A NOWAIT write goes through shmem_write_begin(), which sees IOCB_NOWAIT:
 * a page in swap stops it (EAGAIN, or the bytes before it) and has the
 * worker swap it in, while a hole or a page past EOF is allocated without
 * waiting for reclaim.
 */
#include "kselftest_harness.h"
#include "nowait_test.h"

#include <sys/mman.h>

#define FILE_PAGES 8
#define FILE_TAIL 123
/* How long the worker may take to swap in the page a miss asked for */
#define SWAPIN_MS 2000

static const struct nowait_fs tmpfs = NOWAIT_FS_TMPFS;

FIXTURE(shm) {
	struct nowait_tfile f;
	size_t pg;
	off_t size;
	unsigned char *buf;
};

FIXTURE_VARIANT(shm) {
	bool memfd;
};

FIXTURE_VARIANT_ADD(shm, tmpfs) { .memfd = false };
FIXTURE_VARIANT_ADD(shm, memfd) { .memfd = true };

FIXTURE_SETUP(shm)
{
	self->pg = nowait_page();
	self->size = (off_t)(FILE_PAGES * self->pg + FILE_TAIL);
	if (variant->memfd) {
		self->f.path[0] = '\0';
		self->f.seed = (uint32_t)getpid();
		self->f.fs = &tmpfs;
		self->f.fd = self->f.wfd = memfd_create("nowait-test",
							MFD_CLOEXEC);
		ASSERT_LE(0, self->f.fd) TH_LOG("memfd_create: %s",
						nowait_errname(errno));
		ASSERT_EQ(0, nowait_write_pattern(self->f.fd, 0,
						  (size_t)self->size,
						  self->f.seed));
	} else {
		NOWAIT_TFILE_SETUP(&self->f, &tmpfs, self->size);
	}
	/* touched, so that copying into it cannot fault in a measured call */
	self->buf = malloc((size_t)self->size + 4 * self->pg);
	ASSERT_NE(NULL, self->buf);
	memset(self->buf, 0, (size_t)self->size + 4 * self->pg);
}

FIXTURE_TEARDOWN_PARENT(shm)
{
	nowait_tfile_remove(&self->f);
}

/* Swap out the pages marked '.' in @want, or skip if this system cannot. */
static void swap_out(struct __test_metadata *_metadata,
		     FIXTURE_DATA(shm) *self, const char *want)
{
	char why[NOWAIT_WHY_MAX];
	int r = nowait_shmem_residency(self->f.fd, self->size, self->f.seed,
				       want, why, sizeof(why));

	if (r > 0)
		NOWAIT_SKIP_CASE("%.900s", why);
	ASSERT_EQ(0, r) TH_LOG("setup: %s", why);
	NOWAIT_ASSERT_RESIDENCY(self->f.fd, want);
}

/* A blocking read of the whole file gives the pattern. */
static void check_blocking_read(struct __test_metadata *_metadata,
				FIXTURE_DATA(shm) *self)
{
	memset(self->buf, 0, (size_t)self->size);
	ASSERT_EQ(self->size, pread(self->f.fd, self->buf,
				    (size_t)self->size, 0));
	NOWAIT_ASSERT_PATTERN(self->buf, (size_t)self->size, 0, self->f.seed);
}

/* Wait for the worker to swap in the page a miss at @page asked for. */
static void wait_swapped_in(struct __test_metadata *_metadata,
			    FIXTURE_DATA(shm) *self, size_t page)
{
	char map[1025];

	ASSERT_TRUE(nowait_wait_resident(self->f.fd, page, page, SWAPIN_MS,
					 map, sizeof(map)))
		TH_LOG("page %zu still in swap %d ms after the miss: %s",
		       page, SWAPIN_MS, map);
}

/*
 * All in swap: EAGAIN, and the page each miss stopped at comes back by
 * itself, swapped in by the worker. A blocking read then gives the right
 * bytes, and the next NOWAIT read is a whole hit.
 */
TEST_F(shm, swapped_out_eagain_then_blocking_read)
{
	swap_out(_metadata, self, ".........");
	NOWAIT_ASSERT_ERRNO(NOWAIT_PREAD(self->f.fd, self->buf,
					 (size_t)self->size, 0), EAGAIN);
	NOWAIT_ASSERT_ERRNO(NOWAIT_PREAD(self->f.fd, self->buf, 1,
					 self->size - 1), EAGAIN);
	wait_swapped_in(_metadata, self, 0);
	wait_swapped_in(_metadata, self, FILE_PAGES);

	check_blocking_read(_metadata, self);
	memset(self->buf, 0, (size_t)self->size);
	ASSERT_EQ(self->size, NOWAIT_PREAD(self->f.fd, self->buf,
					   (size_t)self->size + self->pg, 0))
		TH_LOG("after the swap-in: errno %s", nowait_errname(errno));
	NOWAIT_ASSERT_PATTERN(self->buf, (size_t)self->size, 0, self->f.seed);
}

/*
 * Pages 2 and 5-8 in swap: a read stops right before the first of them
 * with exactly the bytes before it, from wherever it starts; one that
 * starts on a swapped-out page is EAGAIN. Each page a miss stopped at is
 * swapped in afterwards by the worker.
 */
TEST_F(shm, swapped_out_page_ends_read_at_prefix)
{
	const off_t mid = (off_t)(3 * self->pg + 10);
	ssize_t r;

	swap_out(_metadata, self, "RR.RR....");
	r = NOWAIT_PREAD(self->f.fd, self->buf, (size_t)self->size, 0);
	ASSERT_EQ((ssize_t)(2 * self->pg), r)
		TH_LOG("errno %s", nowait_errname(errno));
	NOWAIT_ASSERT_PATTERN(self->buf, (size_t)r, 0, self->f.seed);

	r = NOWAIT_PREAD(self->f.fd, self->buf, (size_t)self->size, mid);
	ASSERT_EQ((ssize_t)(5 * self->pg) - mid, r)
		TH_LOG("errno %s", nowait_errname(errno));
	NOWAIT_ASSERT_PATTERN(self->buf, (size_t)r, mid, self->f.seed);

	/* page 6, which no miss has asked the worker for yet */
	NOWAIT_ASSERT_ERRNO(NOWAIT_PREAD(self->f.fd, self->buf, self->pg,
					 (off_t)(6 * self->pg)), EAGAIN);
	wait_swapped_in(_metadata, self, 2);
	wait_swapped_in(_metadata, self, 5);
	wait_swapped_in(_metadata, self, 6);
	check_blocking_read(_metadata, self);
}

/*
 * A range fallocated past EOF has pages that were never written: they
 * read as zeros, with no EAGAIN, like a hole.
 */
TEST_F(shm, fallocated_range_reads_zeros)
{
	const size_t extra = 3 * self->pg;
	const off_t end = self->size + (off_t)extra;
	ssize_t r;

	ASSERT_EQ(0, fallocate(self->f.fd, 0, self->size, (off_t)extra))
		TH_LOG("fallocate: %s", nowait_errname(errno));
	memset(self->buf, 0xff, (size_t)end + self->pg);
	r = NOWAIT_PREAD(self->f.fd, self->buf, (size_t)end + self->pg, 0);
	ASSERT_EQ(end, r) TH_LOG("errno %s", nowait_errname(errno));
	NOWAIT_ASSERT_PATTERN(self->buf, (size_t)self->size, 0, self->f.seed);
	for (off_t i = self->size; i < end; i++) {
		ASSERT_EQ(0, self->buf[i]) TH_LOG("offset %jd", (intmax_t)i);
	}
}

/*
 * A hole, never read before and not in memory, reads as zeros at once:
 * pages 2-4 are punched out, and pages 7-8 are past a truncation that the
 * file is then extended over again.
 */
TEST_F(shm, holes_read_zeros_without_any_read)
{
	ssize_t r;

	ASSERT_EQ(0, fallocate(self->f.fd,
			       FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
			       (off_t)(2 * self->pg), (off_t)(3 * self->pg)));
	ASSERT_EQ(0, ftruncate(self->f.fd, (off_t)(7 * self->pg)));
	ASSERT_EQ(0, ftruncate(self->f.fd, self->size));
	NOWAIT_ASSERT_RESIDENCY(self->f.fd, "RR...RR..");

	memset(self->buf, 0xff, (size_t)self->size + self->pg);
	r = NOWAIT_PREAD(self->f.fd, self->buf, (size_t)self->size + self->pg, 0);
	ASSERT_EQ(self->size, r) TH_LOG("errno %s", nowait_errname(errno));
	for (off_t i = 0; i < self->size; i++) {
		size_t page = (size_t)i / self->pg;
		bool hole = (page >= 2 && page <= 4) || page >= 7;
		unsigned char want = hole ? 0 :
			nowait_pattern_byte((uint64_t)i, self->f.seed);

		ASSERT_EQ(want, self->buf[i])
			TH_LOG("offset %jd (%s)", (intmax_t)i,
			       hole ? "hole" : "data");
	}
}

/*
 * A cached page is a hit while another process holds its folio lock: here a
 * writer rewriting the page with its own bytes, which holds the lock from
 * shmem_write_begin() to shmem_write_end(). A trylock of the folio made a
 * share of these reads fail with EAGAIN (seen once in a whole-suite run as
 * "cached page: errno EAGAIN"); a reference is all an uptodate folio needs.
 */
#define LOCKED_READS 20000

TEST_F(shm, hit_while_a_writer_holds_the_folio_lock)
{
	volatile int *stop = mmap(NULL, sizeof(int), PROT_READ | PROT_WRITE,
				  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	unsigned long eagain = 0, writes = 0;
	unsigned char *page = malloc(self->pg);
	int status;
	pid_t pid;

	ASSERT_NE(MAP_FAILED, stop);
	ASSERT_NE(NULL, page);
	nowait_fill(page, self->pg, 0, self->f.seed);
	*stop = 0;
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		while (!*stop) {
			if (pwrite(self->f.wfd, page, self->pg, 0) !=
			    (ssize_t)self->pg)
				_exit(2);
			writes++;
		}
		_exit(writes ? 0 : 3);
	}
	for (int i = 0; i < LOCKED_READS; i++) {
		ssize_t r = NOWAIT_PREAD(self->f.fd, self->buf, self->pg, 0);

		if (r < 0 && errno == EAGAIN) {
			eagain++;
			continue;
		}
		ASSERT_EQ((ssize_t)self->pg, r)
			TH_LOG("read %d: errno %s", i, nowait_errname(errno));
		NOWAIT_ASSERT_PATTERN(self->buf, self->pg, 0, self->f.seed);
	}
	*stop = 1;
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
		TH_LOG("the writer failed: status %#x", status);
	EXPECT_EQ(0, eagain)
		TH_LOG("%lu of %d reads of a cached page failed with EAGAIN beside a writer",
		       eagain, LOCKED_READS);
	free(page);
}

/*
 * Pages 2 and 5 in swap: a flagged write stops before the first of them
 * and returns the bytes before it; a write that starts in a swapped-out
 * page, even a small one in its middle, is EAGAIN. Each page a write
 * stopped at is swapped in by the worker, and once a blocking read of the
 * file has completed (the progress guarantee: mincore() already counts a
 * page that is only in the swap cache, on its way in), the same flagged
 * write of the whole file is written at once.
 */
TEST_F(shm, write_stops_before_a_swapped_out_page)
{
	const off_t in_page5 = (off_t)(5 * self->pg + 10);
	unsigned char *back = malloc((size_t)self->size);
	ssize_t r;

	ASSERT_NE(NULL, back);

	swap_out(_metadata, self, "RR.RR.RRR");
	nowait_fill(self->buf, (size_t)self->size, 0, self->f.seed + 1);
	r = NOWAIT_PWRITE(self->f.fd, self->buf, (size_t)self->size, 0, 0);
	ASSERT_EQ((ssize_t)(2 * self->pg), r)
		TH_LOG("errno %s", nowait_errname(errno));
	NOWAIT_ASSERT_ERRNO(NOWAIT_PWRITE(self->f.fd, self->buf + in_page5, 100,
					  in_page5, 0), EAGAIN);
	wait_swapped_in(_metadata, self, 2);
	wait_swapped_in(_metadata, self, 5);
	ASSERT_EQ(self->size, pread(self->f.fd, back, (size_t)self->size, 0));
	free(back);

	r = NOWAIT_PWRITE(self->f.fd, self->buf, (size_t)self->size, 0, 0);
	ASSERT_EQ(self->size, r) TH_LOG("after the swap-in: errno %s",
					nowait_errname(errno));
	memset(self->buf, 0, (size_t)self->size);
	ASSERT_EQ(self->size, pread(self->f.fd, self->buf,
				    (size_t)self->size, 0));
	NOWAIT_ASSERT_PATTERN(self->buf, (size_t)self->size, 0,
			      self->f.seed + 1);
}

/*
 * A flagged write into a hole and one that extends the file by new pages
 * allocate them without sleeping, and read back what they wrote.
 */
TEST_F(shm, write_fills_a_hole_and_extends_the_file)
{
	const size_t pg = self->pg;
	const off_t end = self->size + (off_t)(2 * pg);

	ASSERT_EQ(0, fallocate(self->f.fd,
			       FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
			       (off_t)(2 * pg), (off_t)(3 * pg)));
	NOWAIT_ASSERT_RESIDENCY(self->f.fd, "RR...RRRR");
	nowait_fill(self->buf, (size_t)end, 0, self->f.seed + 1);
	ASSERT_EQ((ssize_t)pg, NOWAIT_PWRITE(self->f.fd, self->buf + 3 * pg, pg,
					     (off_t)(3 * pg), 0))
		TH_LOG("into the hole: errno %s", nowait_errname(errno));
	ASSERT_EQ(end - self->size,
		  NOWAIT_PWRITE(self->f.fd, self->buf + self->size,
				(size_t)(end - self->size), self->size, 0))
		TH_LOG("past EOF: errno %s", nowait_errname(errno));
	NOWAIT_ASSERT_RESIDENCY(self->f.fd, "RR.R.RRRRRR");

	memset(self->buf, 0xff, (size_t)end);
	ASSERT_EQ(end, pread(self->f.fd, self->buf, (size_t)end + pg, 0));
	for (off_t i = 0; i < end; i++) {
		size_t page = (size_t)i / pg;
		uint32_t seed = page == 3 || i >= self->size ?
			self->f.seed + 1 : self->f.seed;
		unsigned char want = page == 2 || page == 4 ? 0 :
			nowait_pattern_byte((uint64_t)i, seed);

		ASSERT_EQ(want, self->buf[i]) TH_LOG("offset %jd", (intmax_t)i);
	}
}

TEST_HARNESS_MAIN
