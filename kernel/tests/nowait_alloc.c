// SPDX-License-Identifier: GPL-2.0
/*
 * Flagged writes that allocate, where allocating is hard: they must not
 * sleep, and a caller that only ever retries with the flag must get on.
 *
 * - A nearly full filesystem: ext4 starts writeback of the whole filesystem
 *   and waits for it once half of its free space is dirty (its "nonda
 *   switch"); series v2 let a flagged ext4 write sleep 11.9 s there. Each
 *   case fills a filesystem of its own to FILL_PCT %, shortens its device
 *   queue to 4 requests, and appends with the flag up to the end of its
 *   space: no call may sleep. ext4 and ext2 get 4 KiB blocks, the size
 *   their flagged writes need (on 64 MiB mke2fs would choose 1 KiB).
 * - vfat with the free clusters past two full FAT blocks, none of them in
 *   memory: v2's worker read only the first FAT block the search starts
 *   in, and flagged appends failed for ever (300 of 300, 10 ms apart).
 * - exfat with a file whose last cluster is the volume's last: the search
 *   for the next cluster has to start again at the first, which v2's
 *   flagged path never did.
 *
 * Each case gets a filesystem of its own on a loop device over an image in
 * /tmp (nowait_loopfs).
 */
#include "kselftest_harness.h"
#include "nowait_test.h"

#include <sys/mount.h>

#define CHUNK		(64 * 1024)
#define FILL_PCT	60
/* Flagged appends at most, for the nearly full cases */
#define MAX_CALLS	2000
/* EAGAINs in a row after which the filesystem counts as full */
#define FULL_EAGAINS	500
/* Filling 38 MiB and 2000 calls take minutes on the debug kernel */
#define NEARFULL_TIMEOUT_S	300

FIXTURE(nearfull) {
	struct nowait_loopfs fs;
	unsigned char buf[CHUNK];
};

FIXTURE_VARIANT(nearfull) {
	const char *type;
	const char *mkfs;
	int image_mb;
};

FIXTURE_VARIANT_ADD(nearfull, ext4) {
	.type = "ext4", .mkfs = "mkfs.ext4 -q -F -b 4096", .image_mb = 64,
};
FIXTURE_VARIANT_ADD(nearfull, ext2) {
	.type = "ext2", .mkfs = "mkfs.ext2 -q -F -b 4096", .image_mb = 64,
};
FIXTURE_VARIANT_ADD(nearfull, vfat) {
	.type = "vfat", .mkfs = "mkfs.vfat", .image_mb = 64,
};
FIXTURE_VARIANT_ADD(nearfull, exfat) {
	.type = "exfat", .mkfs = "mkfs.exfat", .image_mb = 64,
};

/* Write @len bytes of the pattern to a new file @name in @dir, and fsync it. */
static int fill_file(const char *dir, const char *name, off_t len)
{
	char path[128];
	int fd, err;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return -1;
	err = nowait_write_pattern(fd, 0, len, 2);
	if (!err)
		err = fsync(fd);
	close(fd);
	return err ? -1 : 0;
}

/* The loop device's request queue: @n requests (4, the least blk-mq takes). */
static bool short_queue(const struct nowait_loopfs *fs, int n)
{
	char path[96], val[16];

	snprintf(path, sizeof(path), "/sys/block/loop%d/queue/nr_requests", fs->loop);
	snprintf(val, sizeof(val), "%d", n);
	return nowait_write_file(path, val);
}

FIXTURE_SETUP(nearfull)
{
	NOWAIT_LOOPFS_SETUP(&self->fs, "nearfull", variant->type, variant->mkfs,
			    (off_t)variant->image_mb << 20);
	ASSERT_TRUE(short_queue(&self->fs, 4)) TH_LOG("setup: nr_requests");
	ASSERT_EQ(0, fill_file(self->fs.dir, "fill",
			       ((off_t)variant->image_mb << 20) * FILL_PCT / 100))
		TH_LOG("setup: fill to %d%%: %s", FILL_PCT, nowait_errname(errno));
	nowait_fill(self->buf, sizeof(self->buf), 0, 3);
}

FIXTURE_TEARDOWN_PARENT(nearfull)
{
	nowait_loopfs_remove(&self->fs);
}

/*
 * Flagged 64 KiB appends to a new file until the filesystem refuses more,
 * with nothing but flagged calls, 1 ms apart after an EAGAIN, until
 * FULL_EAGAINS in a row. None may sleep. A full filesystem answers EAGAIN
 * (vfat, exfat, ext4: the blocking retry reports ENOSPC) or ENOSPC (ext2),
 * which a blocking write must then get too.
 */
TEST_F_TIMEOUT(nearfull, flagged_appends_never_sleep, NEARFULL_TIMEOUT_S)
{
	char path[96];
	struct statfs st;
	int fd, calls, eagains = 0, in_a_row = 0;
	off_t size = 0;

	snprintf(path, sizeof(path), "%s/log", self->fs.dir);
	fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
	ASSERT_LE(0, fd);
	for (calls = 1; calls <= MAX_CALLS; calls++) {
		ssize_t r = NOWAIT_PWRITE(fd, self->buf, CHUNK, size, 0);

		if (r > 0) {
			size += r;
			in_a_row = 0;
			continue;
		}
		ASSERT_EQ(-1, r);
		if (errno == ENOSPC) {
			/* Only where a blocking write would get it too */
			r = pwrite(fd, self->buf, CHUNK, size);
			EXPECT_TRUE(r == -1 && errno == ENOSPC)
				TH_LOG("a flagged write got ENOSPC, a blocking one %zd (%s)",
				       r, r < 0 ? nowait_errname(errno) : "written");
			break;
		}
		ASSERT_EQ(EAGAIN, errno) TH_LOG("errno %s", nowait_errname(errno));
		eagains++;
		if (++in_a_row == FULL_EAGAINS)
			break;
		nowait_msleep(1);
	}
	ASSERT_EQ(0, fstatfs(fd, &st));
	close(fd);
	TH_LOG("%s: %jd MiB appended in %d calls, %d EAGAIN, %jd%% of the blocks in use at the end",
	       variant->type, (intmax_t)(size >> 20), calls > MAX_CALLS ? MAX_CALLS : calls, eagains,
	       (intmax_t)(100 - 100 * (intmax_t)st.f_bfree / (intmax_t)st.f_blocks));
	/* The case reached the hard part: the fill and the appends. */
	EXPECT_LE((off_t)variant->image_mb << 20 >> 3, size);
}

/*
 * vfat, FAT16 with 512-byte sectors and 2 KiB clusters: a 1 MiB file takes
 * the clusters of FAT blocks 0 and 1 (256 entries each). After a remount
 * none of them is in memory, and the first free cluster is two blocks past
 * where the search starts.
 */
FIXTURE(fatsearch) {
	struct nowait_loopfs fs;
	unsigned char buf[4096];
};

FIXTURE_SETUP(fatsearch)
{
	NOWAIT_LOOPFS_SETUP(&self->fs, "fatsearch", "vfat",
			    "mkfs.vfat -F 16 -S 512 -s 4", 32 << 20);
	nowait_fill(self->buf, sizeof(self->buf), 0, 4);
}

FIXTURE_TEARDOWN_PARENT(fatsearch)
{
	nowait_loopfs_remove(&self->fs);
}

static void remount(struct __test_metadata *_metadata, struct nowait_loopfs *fs,
		    const char *type)
{
	ASSERT_EQ(0, umount(fs->dir)) TH_LOG("umount: %s", nowait_errname(errno));
	fs->mounted = false;
	ASSERT_EQ(0, mount(fs->dev, fs->dir, type, 0, NULL))
		TH_LOG("mount: %s", nowait_errname(errno));
	fs->mounted = true;
}

TEST_F(fatsearch, flagged_append_gets_past_full_fat_blocks)
{
	char path[96];
	int fd, eagains;

	ASSERT_EQ(0, fill_file(self->fs.dir, "big", 1 << 20));
	remount(_metadata, &self->fs, "vfat");
	snprintf(path, sizeof(path), "%s/new", self->fs.dir);
	fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
	ASSERT_LE(0, fd);
	eagains = NOWAIT_WRITE_RETRYING(fd, self->buf, sizeof(self->buf), 0, 0);
	TH_LOG("the first flagged append got %d EAGAIN first", eagains);
	close(fd);
}

/*
 * exfat: "x" is made a FAT chain (its clusters are split by "b") and grown
 * with blocking writes until the volume is full, so its last cluster is the
 * volume's last; then "a", at the start of the volume, is removed. The next
 * cluster of "x" is found only by starting again from the first cluster.
 */
FIXTURE(exfatend) {
	struct nowait_loopfs fs;
	unsigned char buf[4096];
};

FIXTURE_SETUP(exfatend)
{
	NOWAIT_LOOPFS_SETUP(&self->fs, "exfatend", "exfat", "mkfs.exfat", 8 << 20);
	nowait_fill(self->buf, sizeof(self->buf), 0, 5);
}

FIXTURE_TEARDOWN_PARENT(exfatend)
{
	nowait_loopfs_remove(&self->fs);
}

TEST_F(exfatend, flagged_append_at_the_end_of_the_volume)
{
	char path[96];
	int fd, eagains;
	off_t size = 64 << 10;
	ssize_t r;

	ASSERT_EQ(0, fill_file(self->fs.dir, "a", 256 << 10));
	ASSERT_EQ(0, fill_file(self->fs.dir, "x", size));
	ASSERT_EQ(0, fill_file(self->fs.dir, "b", 64 << 10));
	snprintf(path, sizeof(path), "%s/x", self->fs.dir);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	ASSERT_LE(0, fd);
	while ((r = pwrite(fd, self->buf, sizeof(self->buf), size)) ==
	       (ssize_t)sizeof(self->buf))
		size += r;
	ASSERT_TRUE(r >= 0 || errno == ENOSPC)
		TH_LOG("filling the volume: %s", nowait_errname(errno));
	/* A short last write: keep whole blocks */
	ASSERT_EQ(0, ftruncate(fd, size));
	ASSERT_EQ(0, fsync(fd));
	close(fd);
	snprintf(path, sizeof(path), "%s/a", self->fs.dir);
	ASSERT_EQ(0, unlink(path));
	remount(_metadata, &self->fs, "exfat");

	snprintf(path, sizeof(path), "%s/x", self->fs.dir);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	ASSERT_LE(0, fd);
	eagains = NOWAIT_WRITE_RETRYING(fd, self->buf, sizeof(self->buf), size, 0);
	TH_LOG("the first flagged append got %d EAGAIN first", eagains);
	close(fd);
}

TEST_HARNESS_MAIN
