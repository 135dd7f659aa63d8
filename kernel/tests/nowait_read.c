// SPDX-License-Identifier: GPL-2.0
/*
 * RWF_NOWAIT buffered reads against the page cache, as the nowait series
 * makes them: on every filesystem that takes the flag (FMODE_NOWAIT or
 * FOP_BUFFER_RNOWAIT), through the overlay to an upper or a lower file.
 *
 * filemap_read() copies batches of contiguous cached folios and stops at
 * the first missing page; there a NOWAIT read queues the readahead to a
 * worker and fails with EAGAIN at once (filemap_get_pages()), and
 * filemap_read() returns the bytes already copied, or the error if none. A
 * read at or past EOF returns 0 before any page is looked up. shmem does
 * the same from shmem_file_read_iter(): a swapped-out page is a miss, a hole
 * reads as zeros.
 *
 * Every flagged call must return without sleeping, whatever it returns
 * (NOWAIT_PREAD), and every miss is deterministic: the file is written,
 * synced and evicted until no queued readahead brings pages back
 * (nowait_evict()), the wanted pages are read back one by one with
 * readahead off (POSIX_FADV_RANDOM reads exactly the requested pages,
 * mm/readahead.c force_page_cache_ra), and mincore must show exactly the
 * intended residency before the NOWAIT call, or the case fails as a setup
 * error. tmpfs pages cannot be evicted that way; they are swapped out
 * instead (nowait_shmem_residency()). Since the miss's readahead runs after
 * the call has returned, the result is exactly what was cached.
 */
#include "kselftest_harness.h"
#include "nowait_test.h"

#include <sys/mount.h>
#include <sys/xattr.h>

/* 8 full pages and a partial ninth, so EOF is not page aligned. */
#define FILE_PAGES 8
#define FILE_TAIL 123

/* How long a miss's readahead may take to bring the data in. */
#define READAHEAD_MS 2000

FIXTURE(nwread) {
	struct nowait_tfile f;
	size_t pg;
	off_t size;
	unsigned char *buf;
};

FIXTURE_VARIANT(nwread) {
	struct nowait_fs fs;
};

NOWAIT_FS_VARIANTS_READ(nwread)

FIXTURE_SETUP(nwread)
{
	self->pg = nowait_page();
	self->size = (off_t)(FILE_PAGES * self->pg + FILE_TAIL);
	NOWAIT_TFILE_SETUP(&self->f, &variant->fs, self->size);
	ASSERT_EQ(0, fsync(self->f.wfd));
	/*
	 * Touched up front so that copying into it cannot fault and sleep
	 * inside the call being measured.
	 */
	self->buf = malloc((size_t)self->size + self->pg);
	ASSERT_NE(NULL, self->buf);
	memset(self->buf, 0, (size_t)self->size + self->pg);
}

FIXTURE_TEARDOWN_PARENT(nwread)
{
	nowait_tfile_remove(&self->f);
}

#define RESIDENCY_TRIES 5

/*
 * Make exactly the pages marked 'R' in @want resident (one character per
 * page, as nowait_residency() prints it) and verify. On tmpfs the others
 * are swapped out; elsewhere the file is evicted and the 'R' pages read
 * back, again if a readahead that an earlier miss queued came in later
 * than nowait_evict() waited for it.
 */
static void set_residency(struct __test_metadata *_metadata,
			  FIXTURE_DATA(nwread) *self, const char *want)
{
	unsigned char one;
	char map[1025];

	if (self->f.fs->cache_pinned) {
		char why[NOWAIT_WHY_MAX];
		int r = nowait_shmem_residency(self->f.wfd, self->size,
					       self->f.seed, want, why,
					       sizeof(why));

		if (r > 0)
			NOWAIT_SKIP_CASE("cannot swap out tmpfs pages: %.900s",
					 why);
		ASSERT_EQ(0, r) TH_LOG("setup: %s", why);
	} else {
		for (int i = 0; i < RESIDENCY_TRIES; i++) {
			NOWAIT_EVICT(self->f.fd);
			ASSERT_EQ(0, posix_fadvise(self->f.fd, 0, 0,
						   POSIX_FADV_RANDOM));
			for (size_t p = 0; want[p]; p++) {
				if (want[p] != 'R')
					continue;
				ASSERT_EQ(1, pread(self->f.fd, &one, 1,
						   (off_t)(p * self->pg)));
			}
			if (nowait_residency(self->f.fd, map, sizeof(map)) >= 0 &&
			    !strcmp(map, want))
				break;
		}
	}
	NOWAIT_ASSERT_RESIDENCY(self->f.fd, want);
}

/*
 * Set the residency @want, then one NOWAIT read of the rest of the file
 * from @start (through f_pos if @use_pos); errno passes through.
 */
static ssize_t read_from(struct __test_metadata *_metadata,
			 FIXTURE_DATA(nwread) *self, const char *want,
			 off_t start, bool use_pos)
{
	set_residency(_metadata, self, want);
	if (use_pos) {
		ASSERT_EQ(start, lseek(self->f.fd, start, SEEK_SET));
	}
	return NOWAIT_PREAD(self->f.fd, self->buf,
			    (size_t)(self->size - start), use_pos ? -1 : start);
}

/*
 * An O_TMPFILE file. overlayfs opens its real file in ovl_tmpfile(), not in
 * ovl_open(), and what the series keeps for an open overlay file (struct
 * ovl_file, with the upper file) has to be made there too: fstests'
 * generic/091 found the close of such a file reading its real file as that
 * struct (a NULL pointer Oops in ovl_flush()). Written, synced, then a
 * flagged read hits, and mmap and close go through the overlay file.
 */
TEST_F(nwread, tmpfile_hit)
{
	const size_t len = 4 * self->pg;
	char dir[PATH_MAX];
	unsigned char *map;
	int fd;

	snprintf(dir, sizeof(dir), "%.2000s/%s", nowait_mnt(), variant->fs.dir);
	fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	if (fd < 0 && errno == EOPNOTSUPP)
		NOWAIT_SKIP_CASE("%s has no O_TMPFILE", variant->fs.type);
	ASSERT_LE(0, fd) TH_LOG("O_TMPFILE in %s: %s", dir,
				nowait_errname(errno));
	ASSERT_EQ(0, nowait_write_pattern(fd, 0, len, self->f.seed));
	ASSERT_EQ(0, fsync(fd));
	ASSERT_EQ((ssize_t)len, NOWAIT_PREAD(fd, self->buf, len, 0))
		TH_LOG("flagged read of the tmpfile: %s", nowait_errname(errno));
	NOWAIT_ASSERT_PATTERN(self->buf, len, 0, self->f.seed);
	map = mmap(NULL, len, PROT_READ, MAP_SHARED, fd, 0);
	ASSERT_NE(MAP_FAILED, map);
	EXPECT_EQ(0, memcmp(map, self->buf, len));
	munmap(map, len);
	ASSERT_EQ(0, close(fd));
}

/*
 * A hit is served whole, with the right bytes, and without sleeping. The
 * pages are read back after an eviction rather than after the write: the
 * folio of a written tail can stay partly uptodate, and a blocking read up
 * to EOF copies from it without reading it (7.3's exfat), so the flagged
 * read of a whole page there would be a miss. nowait_atime has the atime.
 */
TEST_F(nwread, cached_hit_whole_without_sleeping)
{
	ssize_t r;

	set_residency(_metadata, self, "RRRRRRRRR");
	memset(self->buf, 0, (size_t)self->size);

	r = NOWAIT_PREAD(self->f.fd, self->buf, (size_t)self->size + self->pg, 0);
	ASSERT_EQ(self->size, r) TH_LOG("errno %s", nowait_errname(errno));
	NOWAIT_ASSERT_PATTERN(self->buf, (size_t)self->size, 0, self->f.seed);
}

TEST_F(nwread, uncached_eagain)
{
	NOWAIT_ASSERT_ERRNO(read_from(_metadata, self, ".........", 0, false),
			    EAGAIN);
}

/* With offset -1 a failed read must leave f_pos where it was. */
TEST_F(nwread, uncached_eagain_keeps_position)
{
	const off_t start = (off_t)(2 * self->pg + 10);

	NOWAIT_ASSERT_ERRNO(read_from(_metadata, self, ".........", start, true),
			    EAGAIN);
	ASSERT_EQ(start, lseek(self->f.fd, 0, SEEK_CUR));
}

/*
 * Pages 0-2 cached, 3-4 not, 5-6 cached: exactly the three leading pages
 * come back, and nothing from past the gap.
 */
TEST_F(nwread, partial_returns_exact_cached_prefix)
{
	const ssize_t want = (ssize_t)(3 * self->pg);

	ASSERT_EQ(want, read_from(_metadata, self, "RRR..RR..", 0, false))
		TH_LOG("errno %s", nowait_errname(errno));
	NOWAIT_ASSERT_PATTERN(self->buf, (size_t)want, 0, self->f.seed);
}

/* Same, starting 100 bytes into page 1. */
TEST_F(nwread, partial_unaligned_start)
{
	const off_t start = (off_t)(self->pg + 100);
	const ssize_t want = (ssize_t)(3 * self->pg) - start;

	ASSERT_EQ(want, read_from(_metadata, self, "RRR..RR..", start, false))
		TH_LOG("errno %s", nowait_errname(errno));
	NOWAIT_ASSERT_PATTERN(self->buf, (size_t)want, start, self->f.seed);
}

/* A short read with offset -1 advances f_pos by exactly what it returned. */
TEST_F(nwread, partial_advances_position_by_prefix)
{
	const ssize_t want = (ssize_t)(2 * self->pg);
	unsigned char next;

	ASSERT_EQ(want, read_from(_metadata, self, "RR.......", 0, true))
		TH_LOG("errno %s", nowait_errname(errno));
	NOWAIT_ASSERT_PATTERN(self->buf, (size_t)want, 0, self->f.seed);
	ASSERT_EQ(want, lseek(self->f.fd, 0, SEEK_CUR));
	/* and a blocking read picks up exactly where it stopped */
	ASSERT_EQ(1, read(self->f.fd, &next, 1));
	NOWAIT_ASSERT_PATTERN(&next, 1, want, self->f.seed);
}

/* A miss on the first page is EAGAIN even though later pages are cached. */
TEST_F(nwread, leading_miss_eagain)
{
	NOWAIT_ASSERT_ERRNO(read_from(_metadata, self, ".RRRRRRRR", 0, false),
			    EAGAIN);
}

/*
 * At or past EOF the answer is 0; the partial last page gives exactly the
 * bytes up to EOF.
 */
TEST_F(nwread, eof_cached)
{
	const off_t tail = (off_t)(FILE_PAGES * self->pg);

	set_residency(_metadata, self, "RRRRRRRRR");
	ASSERT_EQ(FILE_TAIL, NOWAIT_PREAD(self->f.fd, self->buf, self->pg, tail));
	NOWAIT_ASSERT_PATTERN(self->buf, FILE_TAIL, tail, self->f.seed);
	ASSERT_EQ(0, NOWAIT_PREAD(self->f.fd, self->buf, self->pg, self->size));
	ASSERT_EQ(0, NOWAIT_PREAD(self->f.fd, self->buf, self->pg,
				  self->size + (off_t)self->pg));
}

/* Uncached too: EOF is decided before any page is looked up. */
TEST_F(nwread, eof_uncached)
{
	set_residency(_metadata, self, ".........");
	ASSERT_EQ(0, NOWAIT_PREAD(self->f.fd, self->buf, self->pg, self->size));
	ASSERT_EQ(0, NOWAIT_PREAD(self->f.fd, self->buf, self->pg,
				  self->size + 10 * (off_t)self->pg));
	ASSERT_EQ(self->size, lseek(self->f.fd, 0, SEEK_END));
	ASSERT_EQ(0, NOWAIT_PREAD(self->f.fd, self->buf, self->pg, -1));
	/* the EOF reads must not have queued any readahead */
	nowait_msleep(NOWAIT_SETTLE_MS);
	NOWAIT_ASSERT_RESIDENCY(self->f.fd, ".........");
}

/*
 * Before EOF a NOWAIT read never returns 0 (the 5.9/5.10 bug in the
 * preadv2(2) BUGS section): uncached it is EAGAIN, cached it is the byte.
 * Probed at the last byte of every page, including the partial one. Each
 * uncached probe queues readahead, which set_residency() waits out.
 */
TEST_F(nwread, never_zero_before_eof)
{
	const size_t np = FILE_PAGES + 1;

	for (int cached = 0; cached <= 1; cached++) {
		for (size_t i = 0; i < np; i++) {
			off_t off = (off_t)((i + 1) * self->pg) - 1;
			ssize_t r;

			if (off >= self->size)
				off = self->size - 1;
			if (cached) {
				ASSERT_EQ(1, pread(self->f.fd, self->buf, 1, off));
			} else {
				set_residency(_metadata, self, ".........");
			}
			self->buf[0] = (unsigned char)~nowait_pattern_byte(
				(uint64_t)off, self->f.seed);
			r = NOWAIT_PREAD(self->f.fd, self->buf, 1, off);
			if (!cached) {
				NOWAIT_ASSERT_ERRNO(r, EAGAIN);
				continue;
			}
			ASSERT_EQ(1, r) TH_LOG("cached page, offset %jd: errno %s",
					       (intmax_t)off,
					       nowait_errname(errno));
			NOWAIT_ASSERT_PATTERN(self->buf, 1, off, self->f.seed);
		}
	}
}

/*
 * The miss was not for nothing: its readahead, handed to a worker, brings
 * the requested pages in shortly after the EAGAIN, without any further
 * read by the caller, and the retry is a hit. Pages 3-6 are asked for.
 */
TEST_F(nwread, miss_readahead_brings_data)
{
	const off_t start = (off_t)(3 * self->pg + 50);
	const size_t len = 3 * self->pg;
	char map[1025];

	if (self->f.fs->cache_pinned)
		SKIP(return, "tmpfs cannot be evicted here: nowait_tmpfs checks its swap-in after a miss");
	set_residency(_metadata, self, ".........");
	NOWAIT_ASSERT_ERRNO(NOWAIT_PREAD(self->f.fd, self->buf, len, start),
			    EAGAIN);
	ASSERT_TRUE(nowait_wait_resident(self->f.fd, 3, 6, READAHEAD_MS, map,
					 sizeof(map)))
		TH_LOG("pages 3-6 still not all resident %d ms after the miss: %s",
		       READAHEAD_MS, map);
	ASSERT_EQ((ssize_t)len, NOWAIT_PREAD(self->f.fd, self->buf, len, start))
		TH_LOG("retry after the readahead: errno %s",
		       nowait_errname(errno));
	NOWAIT_ASSERT_PATTERN(self->buf, len, start, self->f.seed);
}

/*
 * Holes. @layout has one character per page: 'D' data (the pattern), '-'
 * a hole. The file is rebuilt from nothing, so the holes are never
 * written (vfat and exfat, which have no holes, write zeros there
 * themselves), and its size is restored by ftruncate, which leaves a hole
 * at the end when the last pages are '-'.
 */
static void make_sparse(struct __test_metadata *_metadata,
			FIXTURE_DATA(nwread) *self, const char *layout)
{
	ASSERT_EQ(0, ftruncate(self->f.wfd, 0));
	for (size_t i = 0; layout[i]; i++) {
		off_t off = (off_t)(i * self->pg);
		off_t end = off + (off_t)self->pg;

		if (layout[i] != 'D')
			continue;
		ASSERT_EQ(0, nowait_write_pattern(self->f.wfd, (uint64_t)off,
			(size_t)((end < self->size ? end : self->size) - off),
			self->f.seed));
	}
	ASSERT_EQ(0, ftruncate(self->f.wfd, self->size));
	ASSERT_EQ(0, fsync(self->f.wfd));
}

/* @buf holds [off, off + len) of a file laid out as @layout. */
static void check_sparse(struct __test_metadata *_metadata,
			 FIXTURE_DATA(nwread) *self, const char *layout,
			 const unsigned char *buf, off_t off, size_t len)
{
	for (size_t i = 0; i < len; i++) {
		uint64_t at = (uint64_t)off + i;
		bool data = layout[at / self->pg] == 'D';
		unsigned char want = data ? nowait_pattern_byte(at, self->f.seed) : 0;

		ASSERT_EQ(want, buf[i])
			TH_LOG("offset %ju, in %s: 0x%02x, want 0x%02x",
			       (uintmax_t)at, data ? "data" : "a hole", buf[i],
			       want);
	}
}

/*
 * Bring a sparse file into the cache, then read it all, and from inside
 * its first hole, with RWF_NOWAIT: the holes read as zeros, with no
 * EAGAIN. On tmpfs a hole has no page and needs none: it reads as zeros
 * without any read before, and mincore shows it is not cached. On the
 * other filesystems a hole is cached only once a read has zeroed a page
 * for it, so it is evicted first and brought back by a blocking read.
 */
static void check_holes(struct __test_metadata *_metadata,
			FIXTURE_DATA(nwread) *self, const char *layout)
{
	const off_t hole = (off_t)((strchr(layout, '-') - layout) *
				   self->pg) + 7;
	char resident[16];
	ssize_t r;

	make_sparse(_metadata, self, layout);
	if (self->f.fs->cache_pinned) {
		for (size_t i = 0; layout[i]; i++)
			resident[i] = layout[i] == 'D' ? 'R' : '.';
		resident[strlen(layout)] = '\0';
		NOWAIT_ASSERT_RESIDENCY(self->f.fd, resident);
	} else {
		NOWAIT_EVICT(self->f.fd);
		ASSERT_EQ(self->size, pread(self->f.fd, self->buf,
					    (size_t)self->size, 0));
		NOWAIT_ASSERT_RESIDENCY(self->f.fd, "RRRRRRRRR");
	}

	memset(self->buf, 0xff, (size_t)self->size + self->pg);
	r = NOWAIT_PREAD(self->f.fd, self->buf, (size_t)self->size + self->pg, 0);
	ASSERT_EQ(self->size, r) TH_LOG("errno %s", nowait_errname(errno));
	check_sparse(_metadata, self, layout, self->buf, 0, (size_t)r);

	memset(self->buf, 0xff, (size_t)self->size + self->pg);
	r = NOWAIT_PREAD(self->f.fd, self->buf, (size_t)self->size, hole);
	ASSERT_EQ(self->size - hole, r) TH_LOG("errno %s", nowait_errname(errno));
	check_sparse(_metadata, self, layout, self->buf, hole, (size_t)r);
	ASSERT_EQ(0, NOWAIT_PREAD(self->f.fd, self->buf, self->pg, self->size));
}

/* Pages 3-5 a hole between data. */
TEST_F(nwread, hole_in_middle_reads_zeros)
{
	check_holes(_metadata, self, "DDD---DDD");
}

/* Pages 6 to EOF a hole left by ftruncate, the partial last page too. */
TEST_F(nwread, hole_at_end_reads_zeros)
{
	check_holes(_metadata, self, "DDDDDD---");
}

/*
 * The progress guarantee: a range that gave EAGAIN to a flagged read is
 * served from the cache to the next flagged read once a blocking read of it
 * has completed, so a loop that retries with the flag after its thread pool
 * read the data never spins.
 */
TEST_F(nwread, served_after_a_blocking_read)
{
	const size_t len = (size_t)self->size;

	set_residency(_metadata, self, ".........");
	NOWAIT_ASSERT_ERRNO(NOWAIT_PREAD(self->f.fd, self->buf, len, 0),
			    EAGAIN);
	ASSERT_EQ(self->size, pread(self->f.fd, self->buf, len, 0));
	memset(self->buf, 0, len);
	ASSERT_EQ(self->size, NOWAIT_PREAD(self->f.fd, self->buf, len, 0))
		TH_LOG("after a blocking read of the same range: errno %s",
		       nowait_errname(errno));
	NOWAIT_ASSERT_PATTERN(self->buf, len, 0, self->f.seed);
}

/*
 * Flagged retries alone get through, with no blocking read between them,
 * where the page cache holds folios that are cached but not uptodate,
 * which readahead skips: the flagged read that finds one has it read by
 * a worker (->read_folio()), so every retry makes progress. Retry the
 * flagged read of [@off, @off + @len) every 10 ms until it returns all
 * @want bytes, for up to READAHEAD_MS.
 */
static void flagged_retries_get(struct __test_metadata *_metadata,
				FIXTURE_DATA(nwread) *self, off_t off,
				size_t len, ssize_t want)
{
	ssize_t r = -1;
	int tries;

	for (tries = 0; tries < READAHEAD_MS / 10; tries++) {
		memset(self->buf, 0xff, len);
		r = NOWAIT_PREAD(self->f.fd, self->buf, len, off);
		if (r == want)
			break;
		if (r < 0)
			NOWAIT_ASSERT_ERRNO(r, EAGAIN);
		nowait_msleep(10);
	}
	ASSERT_EQ(want, r)
		TH_LOG("%d flagged reads in %d ms, none served all %zd bytes: the last returned %zd (%s)",
		       tries, READAHEAD_MS, want, r,
		       r < 0 ? nowait_errname(errno) : "short");
	ksft_print_msg("served after %d flagged retries\n", tries);
}

/*
 * exfat's readahead does not read a range that crosses valid_size, which
 * a truncate down and up leaves below i_size: it leaves the folios cached
 * and not uptodate for ->read_folio() ("read it page by page"). The file
 * is truncated into its third page and extended again: the pattern, then
 * zeros.
 */
TEST_F(nwread, truncated_and_extended_served_by_flagged_retries)
{
	const off_t valid = (off_t)(2 * self->pg + 100);
	const size_t len = (size_t)self->size;

	if (self->f.fs->cache_pinned)
		SKIP(return, "tmpfs has no readahead to leave folios behind");
	ASSERT_EQ(0, ftruncate(self->f.wfd, valid));
	ASSERT_EQ(0, ftruncate(self->f.wfd, self->size));
	ASSERT_EQ(0, fsync(self->f.wfd));
	set_residency(_metadata, self, ".........");
	flagged_retries_get(_metadata, self, 0, len, self->size);
	NOWAIT_ASSERT_PATTERN(self->buf, (size_t)valid, 0, self->f.seed);
	for (size_t i = (size_t)valid; i < len; i++) {
		ASSERT_EQ(0, (int)self->buf[i])
			TH_LOG("offset %zu, past the truncation", i);
	}
}

/*
 * Where blocks are smaller than pages (vfat and exfat here: 512-byte
 * sectors), the write that made the file left the blocks of its last page
 * past EOF not uptodate, and so the folio, which is cached all the same.
 * Flagged reads of that page, up to EOF and past it, get its bytes.
 */
TEST_F(nwread, written_tail_served_by_flagged_retries)
{
	const off_t last = (off_t)(FILE_PAGES * self->pg);

	flagged_retries_get(_metadata, self, last, self->pg, FILE_TAIL);
	NOWAIT_ASSERT_PATTERN(self->buf, FILE_TAIL, last, self->f.seed);
	flagged_retries_get(_metadata, self, last, 2 * self->pg, FILE_TAIL);
	NOWAIT_ASSERT_PATTERN(self->buf, FILE_TAIL, last, self->f.seed);
}

/*
 * An overlay file opened before it was copied up still holds its lower
 * real file. The first read after the copy up has to open the upper one
 * (ovl_real_fdget_meta()), which can block: for a NOWAIT read that is
 * EAGAIN, without sleeping. A blocking read on the same fd opens it, keeps
 * it, and sees the upper layer's new bytes; from then on a NOWAIT read on
 * that fd is served from the upper file's cache (the progress guarantee),
 * as it is for a file opened after the copy up.
 */
FIXTURE(ovlcopy) {
	struct nowait_tfile f;
	char top[PATH_MAX];
	off_t size;
	unsigned char *buf;
};

FIXTURE_SETUP(ovlcopy)
{
	static const struct nowait_fs lower = NOWAIT_FS_OVL_LOWER;

	self->size = (off_t)(4 * nowait_page());
	NOWAIT_TFILE_SETUP(&self->f, &lower, self->size);
	snprintf(self->top, sizeof(self->top), "%.2000s/%s/%.1000s",
		 nowait_mnt(), lower.dir, strrchr(self->f.path, '/') + 1);
	self->buf = malloc((size_t)self->size);
	ASSERT_NE(NULL, self->buf);
	memset(self->buf, 0, (size_t)self->size);
}

/* The overlay name first (a whiteout then hides the lower file), then it. */
FIXTURE_TEARDOWN_PARENT(ovlcopy)
{
	if (self->f.path[0])
		unlink(self->top);
	nowait_tfile_remove(&self->f);
}

TEST_F(ovlcopy, copied_up_after_open_served_after_a_blocking_read)
{
	const size_t len = (size_t)self->size;
	const uint32_t seed2 = self->f.seed + 1;
	int fd;

	ASSERT_EQ(self->size, pread(self->f.fd, self->buf, len, 0));
	ASSERT_EQ(self->size, NOWAIT_PREAD(self->f.fd, self->buf, len, 0))
		TH_LOG("before the copy up: errno %s", nowait_errname(errno));

	fd = open(self->top, O_WRONLY | O_CLOEXEC);
	ASSERT_LE(0, fd) TH_LOG("copy up %s: %s", self->top,
				nowait_errname(errno));
	ASSERT_EQ(0, nowait_write_pattern(fd, 0, len, seed2));
	ASSERT_EQ(0, fsync(fd));
	close(fd);

	NOWAIT_ASSERT_ERRNO(NOWAIT_PREAD(self->f.fd, self->buf, len, 0),
			    EAGAIN);
	ASSERT_EQ(self->size, pread(self->f.fd, self->buf, len, 0));
	NOWAIT_ASSERT_PATTERN(self->buf, len, 0, seed2);
	memset(self->buf, 0, len);
	ASSERT_EQ(self->size, NOWAIT_PREAD(self->f.fd, self->buf, len, 0))
		TH_LOG("the fd opened before the copy up, after a blocking read: errno %s",
		       nowait_errname(errno));
	NOWAIT_ASSERT_PATTERN(self->buf, len, 0, seed2);

	fd = open(self->top, O_RDONLY | O_CLOEXEC);
	ASSERT_LE(0, fd);
	memset(self->buf, 0, len);
	ASSERT_EQ(self->size, NOWAIT_PREAD(fd, self->buf, len, 0))
		TH_LOG("opened after the copy up: errno %s",
		       nowait_errname(errno));
	NOWAIT_ASSERT_PATTERN(self->buf, len, 0, seed2);
	close(fd);
}

/*
 * A metacopy file (an upper inode with the lower file's data, as every file
 * of a composefs image is): its data is looked up, and verified, when the
 * file is opened, so a NOWAIT read of cached data is a hit. The overlay is
 * made here, on tmpfs, with metacopy=on; chmod copies up the metadata only.
 */
#define OVLMETA_PAGES 4

FIXTURE(ovlmeta) {
	char base[64];
	char dir[96];
	bool mounted;
	unsigned char *buf;
	size_t len;
};

FIXTURE_SETUP(ovlmeta)
{
	char lower[96], upper[96], work[96], opts[512], path[160];
	char meta[8];
	int fd;

	if (!nowait_in_guest())
		SKIP(return, "mounts an overlay: the test guest only");
	snprintf(self->base, sizeof(self->base), "/tmp/ovlmeta-%d",
		 (int)getpid());
	snprintf(lower, sizeof(lower), "%s/lower", self->base);
	snprintf(upper, sizeof(upper), "%s/upper", self->base);
	snprintf(work, sizeof(work), "%s/work", self->base);
	snprintf(self->dir, sizeof(self->dir), "%s/merged", self->base);
	ASSERT_EQ(0, mkdir(self->base, 0700));
	ASSERT_EQ(0, mkdir(lower, 0700));
	ASSERT_EQ(0, mkdir(upper, 0700));
	ASSERT_EQ(0, mkdir(work, 0700));
	ASSERT_EQ(0, mkdir(self->dir, 0700));

	self->len = OVLMETA_PAGES * nowait_page();
	snprintf(path, sizeof(path), "%s/file", lower);
	fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, nowait_write_pattern(fd, 0, self->len, 7));
	close(fd);

	snprintf(opts, sizeof(opts),
		 "lowerdir=%s,upperdir=%s,workdir=%s,metacopy=on", lower,
		 upper, work);
	ASSERT_EQ(0, mount("overlay", self->dir, "overlay", 0, opts))
		TH_LOG("setup: mount overlay %s: %s", opts,
		       nowait_errname(errno));
	self->mounted = true;

	snprintf(path, sizeof(path), "%s/file", self->dir);
	ASSERT_EQ(0, chmod(path, 0600));
	snprintf(path, sizeof(path), "%s/file", upper);
	ASSERT_LE(0, getxattr(path, "trusted.overlay.metacopy", meta,
			      sizeof(meta)))
		TH_LOG("setup: chmod did not make a metacopy upper file: %s",
		       nowait_errname(errno));
	self->buf = malloc(self->len);
	ASSERT_NE(NULL, self->buf);
	memset(self->buf, 0, self->len);
}

FIXTURE_TEARDOWN_PARENT(ovlmeta)
{
	char cmd[128];

	if (self->mounted)
		umount2(self->dir, MNT_DETACH);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", self->base);
	if (system(cmd))
		fprintf(stderr, "# teardown: %s failed\n", cmd);
}

TEST_F(ovlmeta, metacopy_cached_read_hits)
{
	char path[160];
	int fd;

	snprintf(path, sizeof(path), "%s/file", self->dir);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	ASSERT_LE(0, fd);
	ASSERT_EQ((ssize_t)self->len, pread(fd, self->buf, self->len, 0));
	memset(self->buf, 0, self->len);
	ASSERT_EQ((ssize_t)self->len, NOWAIT_PREAD(fd, self->buf, self->len, 0))
		TH_LOG("a cached read of a metacopy file: errno %s",
		       nowait_errname(errno));
	NOWAIT_ASSERT_PATTERN(self->buf, self->len, 0, 7);
	close(fd);
}

TEST_HARNESS_MAIN
