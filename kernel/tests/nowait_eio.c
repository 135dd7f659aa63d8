// SPDX-License-Identifier: GPL-2.0
/*
 * RWF_NOWAIT reads of data the disk cannot return.
 *
 * The filesystem (ext4, xfs) is made on a device-mapper device over a loop
 * device over a sparse file in the guest's tmpfs, so nothing touches the
 * harness's disks. A test file is written and synced; FIEMAP says where its
 * data lies, and the dm table is reloaded with the "error" target over
 * exactly those sectors (metadata and journal stay readable, so the
 * filesystem itself sees no error). Then, with the file's pages evicted:
 *
 *  - a flagged read returns EAGAIN or EIO, however often it is repeated
 *    while the readahead the miss queued fails in its worker; never data,
 *    and the buffer is untouched;
 *  - the blocking retry, which does the I/O, returns EIO, buffer untouched;
 *  - a read that starts on a cached page returns that page only (a short
 *    read), and the bytes past it are untouched;
 *  - O_DIRECT fails with EIO (blocking) or EAGAIN/EIO (flagged; or
 *    EOPNOTSUPP where the dm device itself refuses REQ_NOWAIT bios);
 *  - once the table is linear again, blocking and flagged reads return the
 *    file's data: an error leaves no stale or zeroed page behind.
 *
 * Each case runs under alarm(): a read that hangs kills it. Guest only:
 * it makes loop and dm devices and mounts a filesystem.
 */
#include "kselftest_harness.h"
#include "nowait_test.h"

#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/sysmacros.h>
#include <linux/dm-ioctl.h>
#include <linux/fiemap.h>
#include <linux/fs.h>
#include <linux/loop.h>

#define FILE_SIZE	(256 * 1024)
#define CANARY		0xa5
#define MAX_EXT		8

struct eio_fs {
	const char *type;
	const char *mkfs;
	off_t dev_size;		/* mkfs.xfs wants 300 MB at least */
};

FIXTURE(eio) {
	char img[PATH_MAX];	/* the loop device's backing file */
	char mnt[128];
	char dm_name[64];
	char dm_dev[64];
	int loop;		/* loop device number, -1 if none */
	bool mounted;
	char file[256];
	uint64_t dev_sectors;
	struct { uint64_t start, len; } ext[MAX_EXT];	/* sectors */
	int next;
	int fd;
	uint32_t seed;
};

FIXTURE_VARIANT(eio) {
	struct eio_fs fs;
};

FIXTURE_VARIANT_ADD(eio, ext4) { .fs = { "ext4", "mkfs.ext4 -q -F", 64 << 20 } };
FIXTURE_VARIANT_ADD(eio, xfs)  { .fs = { "xfs", "mkfs.xfs -q -f", 320 << 20 } };

/* ---- device-mapper through its ioctls (no dmsetup in the guest) ---- */

struct dm_req {
	struct dm_ioctl io;
	char data[4096];
} __attribute__((aligned(8)));

static void dm_init(struct dm_req *r, const char *name)
{
	memset(r, 0, sizeof(*r));
	r->io.version[0] = DM_VERSION_MAJOR;
	r->io.data_size = sizeof(*r);
	r->io.data_start = sizeof(r->io);
	snprintf(r->io.name, sizeof(r->io.name), "%s", name);
}

static int dm_ioctl(unsigned long cmd, struct dm_req *r)
{
	int ctl = open("/dev/mapper/control", O_RDWR | O_CLOEXEC);
	int ret;

	if (ctl < 0)
		return -errno;
	ret = ioctl(ctl, cmd, r) ? -errno : 0;
	close(ctl);
	return ret;
}

/* Append one target to a DM_TABLE_LOAD request. */
static void dm_target(struct dm_req *r, size_t *pos, uint64_t start,
		      uint64_t len, const char *type, const char *params)
{
	struct dm_target_spec *t = (void *)(r->data + *pos);
	size_t n = sizeof(*t) + strlen(params) + 1;

	n = (n + 7) & ~(size_t)7;
	memset(t, 0, n);
	t->sector_start = start;
	t->length = len;
	t->next = (uint32_t)n;
	snprintf(t->target_type, sizeof(t->target_type), "%s", type);
	strcpy((char *)(t + 1), params);
	*pos += n;
	r->io.target_count++;
}

/*
 * Load the table, linear onto the loop device, with the error target over
 * the file's extents if @error, and resume it (which swaps it in).
 */
static int dm_set_table(FIXTURE_DATA(eio) *self, bool error)
{
	struct dm_req r;
	char lin[64];
	uint64_t at = 0;
	size_t pos = 0;
	int ret;

	dm_init(&r, self->dm_name);
	for (int i = 0; error && i < self->next; i++) {
		if (self->ext[i].start > at) {
			snprintf(lin, sizeof(lin), "/dev/loop%d %ju", self->loop, (uintmax_t)at);
			dm_target(&r, &pos, at, self->ext[i].start - at, "linear", lin);
		}
		dm_target(&r, &pos, self->ext[i].start, self->ext[i].len, "error", "");
		at = self->ext[i].start + self->ext[i].len;
	}
	snprintf(lin, sizeof(lin), "/dev/loop%d %ju", self->loop, (uintmax_t)at);
	dm_target(&r, &pos, at, self->dev_sectors - at, "linear", lin);
	ret = dm_ioctl(DM_TABLE_LOAD, &r);
	if (ret)
		return ret;
	dm_init(&r, self->dm_name);	/* flags 0: resume */
	return dm_ioctl(DM_DEV_SUSPEND, &r);
}

/* ---- setup: image, loop, dm, mkfs, mount, the file ---- */

/* Where the file's data lies on the device, in sectors, sorted. */
static bool file_extents(FIXTURE_DATA(eio) *self, char *why, size_t n)
{
	struct {
		struct fiemap fm;
		struct fiemap_extent ext[MAX_EXT];
	} m = { .fm = { .fm_length = FIEMAP_MAX_OFFSET, .fm_flags = FIEMAP_FLAG_SYNC,
			.fm_extent_count = MAX_EXT } };
	const unsigned int odd = FIEMAP_EXTENT_UNKNOWN | FIEMAP_EXTENT_DELALLOC |
				 FIEMAP_EXTENT_DATA_INLINE | FIEMAP_EXTENT_NOT_ALIGNED |
				 FIEMAP_EXTENT_ENCODED;

	if (ioctl(self->fd, FS_IOC_FIEMAP, &m)) {
		snprintf(why, n, "FIEMAP: %s", nowait_errname(errno));
		return false;
	}
	self->next = (int)m.fm.fm_mapped_extents;
	if (!self->next || self->next >= MAX_EXT) {
		snprintf(why, n, "FIEMAP: %d extents", self->next);
		return false;
	}
	for (int i = 0; i < self->next; i++) {
		if (m.ext[i].fe_flags & odd) {
			snprintf(why, n, "FIEMAP: extent flags 0x%x",
				 m.ext[i].fe_flags);
			return false;
		}
		self->ext[i].start = m.ext[i].fe_physical >> 9;
		self->ext[i].len = m.ext[i].fe_length >> 9;
	}
	for (int i = 1; i < self->next; i++)	/* insertion sort */
		for (int j = i; j > 0 && self->ext[j].start < self->ext[j - 1].start; j--) {
			__typeof__(self->ext[0]) t = self->ext[j];

			self->ext[j] = self->ext[j - 1];
			self->ext[j - 1] = t;
		}
	return true;
}

FIXTURE_SETUP(eio)
{
	char cmd[256], why[NOWAIT_WHY_MAX];
	struct dm_req r;
	int fd;

	self->loop = -1;
	self->fd = -1;
	self->mounted = false;
	self->img[0] = self->dm_name[0] = self->mnt[0] = '\0';
	if (!nowait_in_guest())
		SKIP(return, "guest only: makes loop and dm devices and mounts");

	snprintf(self->img, sizeof(self->img), "%s/tmpfs/nowait-eio.%d.img",
		 nowait_mnt(), getpid());
	fd = open(self->img, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	ASSERT_LE(0, fd) TH_LOG("%s: %s", self->img, nowait_errname(errno));
	ASSERT_EQ(0, ftruncate(fd, variant->fs.dev_size));
	close(fd);
	self->dev_sectors = (uint64_t)variant->fs.dev_size >> 9;
	self->loop = nowait_loop_attach(self->img);
	ASSERT_LE(0, self->loop) TH_LOG("loop: %s", nowait_errname(errno));

	snprintf(self->dm_name, sizeof(self->dm_name), "nowait-eio-%d", getpid());
	dm_init(&r, self->dm_name);
	ASSERT_EQ(0, dm_ioctl(DM_DEV_CREATE, &r)) TH_LOG("DM_DEV_CREATE");
	snprintf(self->dm_dev, sizeof(self->dm_dev), "/dev/dm-%u",
		 minor((dev_t)r.io.dev));
	self->next = 0;
	ASSERT_EQ(0, dm_set_table(self, false)) TH_LOG("linear table");
	for (int i = 0; i < 100 && access(self->dm_dev, F_OK); i++)
		nowait_msleep(10);	/* devtmpfs makes the node */

	snprintf(cmd, sizeof(cmd), "%s %s >/dev/null 2>&1", variant->fs.mkfs,
		 self->dm_dev);
	ASSERT_EQ(0, system(cmd)) TH_LOG("%s failed", cmd);
	snprintf(self->mnt, sizeof(self->mnt), "/tmp/nowait-eio.%d", getpid());
	ASSERT_EQ(0, mkdir(self->mnt, 0755));
	ASSERT_EQ(0, mount(self->dm_dev, self->mnt, variant->fs.type, 0, NULL))
		TH_LOG("mount %s: %s", self->dm_dev, nowait_errname(errno));
	self->mounted = true;

	snprintf(self->file, sizeof(self->file), "%s/file", self->mnt);
	self->fd = open(self->file, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	ASSERT_LE(0, self->fd);
	self->seed = (uint32_t)getpid();
	ASSERT_EQ(0, nowait_write_pattern(self->fd, 0, FILE_SIZE, self->seed));
	ASSERT_EQ(0, fsync(self->fd));
	ASSERT_TRUE(file_extents(self, why, sizeof(why))) TH_LOG("%s", why);
	ASSERT_TRUE(nowait_evict(self->fd, why, sizeof(why))) TH_LOG("%s", why);
	alarm(60);	/* nothing below may hang */
}

FIXTURE_TEARDOWN_PARENT(eio)
{
	struct dm_req r;

	if (self->mounted && umount(self->mnt))
		umount2(self->mnt, MNT_DETACH);
	if (self->mnt[0])
		rmdir(self->mnt);
	if (self->dm_name[0]) {
		dm_init(&r, self->dm_name);
		dm_ioctl(DM_DEV_REMOVE, &r);
	}
	if (self->loop >= 0)
		nowait_loop_detach(self->loop);
	if (self->img[0])
		unlink(self->img);
}

/* @buf holds the file's data for [0, n) and the canary after it. */
static ssize_t bad_byte(const unsigned char *buf, size_t len, ssize_t n,
			off_t off, uint32_t seed)
{
	ssize_t bad = n > 0 ? nowait_mismatch(buf, (size_t)n, (uint64_t)off, seed) : -1;

	if (bad >= 0)
		return bad;
	for (size_t i = n > 0 ? (size_t)n : 0; i < len; i++)
		if (buf[i] != CANARY)
			return (ssize_t)i;
	return -1;
}

#define READ_CHECKED(fd, len, off, flags, want_n) do {			\
	unsigned char buf_[2 * 4096];					\
	ssize_t n_, bad_;						\
	int e_;								\
	memset(buf_, CANARY, sizeof(buf_));				\
	n_ = nowait_preadv2((fd), buf_, (len), (off), (flags));		\
	e_ = errno;							\
	ASSERT_EQ((ssize_t)(want_n), n_)				\
		TH_LOG("read at %jd%s: %s", (intmax_t)(off),		\
		       (flags) ? " (NOWAIT)" : "",			\
		       n_ < 0 ? nowait_errname(e_) : "a byte count");	\
	bad_ = bad_byte(buf_, (len), n_, (off), self->seed);		\
	ASSERT_EQ(-1, bad_) TH_LOG("buffer byte %zd is neither the file's "	\
				   "nor the canary", bad_);		\
} while (0)

/* What the flagged reads of failing data returned, for the diagnostics. */
static int flagged_eagain, flagged_eio;

static void report(const char *fs, const char *test)
{
	printf("# eio %s/%s: flagged reads of failing data: %d EAGAIN, %d EIO\n",
	       fs, test, flagged_eagain, flagged_eio);
	fflush(stdout);
}

/* A failed read: -1 with an errno from @ok, and an untouched buffer. */
#define READ_FAILS(fd, off, flags, ok_a, ok_b) do {			\
	unsigned char buf_[4096];					\
	ssize_t n_;							\
	int e_;								\
	memset(buf_, CANARY, sizeof(buf_));				\
	n_ = nowait_preadv2((fd), buf_, sizeof(buf_), (off), (flags));	\
	e_ = errno;							\
	ASSERT_EQ(-1, n_) TH_LOG("read at %jd%s returned %zd bytes of a "	\
				 "failing disk", (intmax_t)(off),	\
				 (flags) ? " (NOWAIT)" : "", n_);	\
	ASSERT_TRUE(e_ == (ok_a) || e_ == (ok_b))			\
		TH_LOG("read at %jd%s: %s", (intmax_t)(off),		\
		       (flags) ? " (NOWAIT)" : "", nowait_errname(e_));	\
	if (flags)							\
		(*(e_ == EAGAIN ? &flagged_eagain : &flagged_eio))++;	\
	ASSERT_EQ(-1, bad_byte(buf_, sizeof(buf_), 0, 0, 0))		\
		TH_LOG("a failed read wrote into the buffer");		\
} while (0)

/* An uncached page on a failing disk: flagged EAGAIN/EIO, blocking EIO. */
TEST_F_TIMEOUT(eio, uncached, 120)
{
	const off_t off = 8 * 4096;

	ASSERT_EQ(0, dm_set_table(self, true));
	/* Repeated, so that some run while the queued readahead fails. */
	for (int i = 0; i < 5; i++) {
		READ_FAILS(self->fd, off, RWF_NOWAIT, EAGAIN, EIO);
		nowait_msleep(20);
	}
	READ_FAILS(self->fd, off, 0, EIO, EIO);
	READ_FAILS(self->fd, off, RWF_NOWAIT, EAGAIN, EIO);
	READ_FAILS(self->fd, off, 0, EIO, EIO);
	report(variant->fs.type, "uncached");
}

/* A read that starts on the one cached page returns that page only. */
TEST_F_TIMEOUT(eio, cached_prefix, 120)
{
	unsigned char *all = malloc(FILE_SIZE);
	char map[128], want[128];

	ASSERT_NE(NULL, all);
	ASSERT_EQ(FILE_SIZE, pread(self->fd, all, FILE_SIZE, 0));
	free(all);
	ASSERT_EQ(0, posix_fadvise(self->fd, 4096, 0, POSIX_FADV_DONTNEED));
	memset(want, '.', FILE_SIZE / 4096);
	want[0] = 'R';
	want[FILE_SIZE / 4096] = '\0';
	ASSERT_EQ(1, nowait_residency(self->fd, map, sizeof(map)));
	ASSERT_STREQ(want, map);

	ASSERT_EQ(0, dm_set_table(self, true));
	READ_CHECKED(self->fd, 8192, 0, RWF_NOWAIT, 4096);
	READ_CHECKED(self->fd, 8192, 0, 0, 4096);
	READ_CHECKED(self->fd, 8192, 2048, RWF_NOWAIT, 2048);
	READ_FAILS(self->fd, 4096, 0, EIO, EIO);
	READ_FAILS(self->fd, 4096, RWF_NOWAIT, EAGAIN, EIO);
	report(variant->fs.type, "cached_prefix");
}

/*
 * Whether the dm device itself refuses a REQ_NOWAIT bio (EOPNOTSUPP from
 * submit_bio_noacct()): a table with the error target in it does, since
 * that target does not declare DM_TARGET_NOWAIT. A block device's flagged
 * O_DIRECT read sends REQ_NOWAIT, so this asks the device directly.
 */
static bool device_refuses_nowait(const char *dev, off_t off, void *buf)
{
	int fd = open(dev, O_RDONLY | O_DIRECT | O_CLOEXEC);
	bool refuses;

	if (fd < 0)
		return false;
	refuses = nowait_preadv2(fd, buf, 4096, off, RWF_NOWAIT) < 0 &&
		  errno == EOPNOTSUPP;
	close(fd);
	return refuses;
}

/*
 * O_DIRECT goes to the disk: EIO, or EAGAIN/EIO when flagged. A flagged
 * read may also be EOPNOTSUPP where the device refuses REQ_NOWAIT bios and
 * the filesystem sends them (7.3's iomap_dio_read_simple() does, 6.12's
 * iomap does not): that is the device's answer, never data.
 */
TEST_F_TIMEOUT(eio, direct, 120)
{
	unsigned char *buf;
	bool refuses;
	ssize_t n;
	int fd, e;

	fd = open(self->file, O_RDONLY | O_DIRECT | O_CLOEXEC);
	ASSERT_LE(0, fd);
	buf = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, buf);
	ASSERT_EQ(0, dm_set_table(self, true));
	refuses = device_refuses_nowait(self->dm_dev, self->ext[0].start * 512,
					buf);
	printf("# eio %s/direct: the dm device %s REQ_NOWAIT bios\n",
	       variant->fs.type, refuses ? "refuses" : "takes");
	for (int flags = 0; flags <= RWF_NOWAIT; flags += RWF_NOWAIT) {
		memset(buf, CANARY, 4096);
		n = nowait_preadv2(fd, buf, 4096, 16 * 4096, flags);
		e = errno;
		ASSERT_EQ(-1, n) TH_LOG("O_DIRECT read%s of a failing disk: %zd",
					flags ? " (NOWAIT)" : "", n);
		ASSERT_TRUE(e == EIO ||
			    (flags && (e == EAGAIN || (refuses && e == EOPNOTSUPP))))
			TH_LOG("O_DIRECT read%s: %s (the device %s REQ_NOWAIT)",
			       flags ? " (NOWAIT)" : "", nowait_errname(e),
			       refuses ? "refuses" : "takes");
		ASSERT_EQ(-1, bad_byte(buf, 4096, 0, 0, 0));
		if (flags && e != EOPNOTSUPP)
			(*(e == EAGAIN ? &flagged_eagain : &flagged_eio))++;
	}
	close(fd);
	report(variant->fs.type, "direct");
}

/* After the disk recovers, the data is the file's: no page was poisoned. */
TEST_F_TIMEOUT(eio, recovers, 120)
{
	unsigned char *all = malloc(FILE_SIZE);

	ASSERT_NE(NULL, all);
	ASSERT_EQ(0, dm_set_table(self, true));
	READ_FAILS(self->fd, 8 * 4096, RWF_NOWAIT, EAGAIN, EIO);
	READ_FAILS(self->fd, 8 * 4096, 0, EIO, EIO);
	nowait_msleep(50);	/* let the queued readahead fail too */
	ASSERT_EQ(0, dm_set_table(self, false));
	READ_CHECKED(self->fd, 4096, 8 * 4096, 0, 4096);
	READ_CHECKED(self->fd, 4096, 8 * 4096, RWF_NOWAIT, 4096);
	ASSERT_EQ(FILE_SIZE, pread(self->fd, all, FILE_SIZE, 0));
	NOWAIT_ASSERT_PATTERN(all, FILE_SIZE, 0, self->seed);
	free(all);
}

TEST_HARNESS_MAIN
