// SPDX-License-Identifier: GPL-2.0
/*
 * What a NOWAIT miss leaves behind: nothing that outlives the syscall.
 *
 * A flagged read that misses hands its readahead to a worker. If that work
 * held the struct file, close() would no longer end the file: its flock()
 * lock, ->release() and fsnotify close event would wait for the worker, and
 * umount would fail with EBUSY until the worker dropped it. The series'
 * deferred work holds only the inode, and umount waits for it. So, right
 * after a miss and close(): another open file takes the lock at once, and
 * the filesystem unmounts at the first try.
 *
 * Each case gets a filesystem of its own on a loop device over an image in
 * /tmp, so that it can unmount it: ext2, and ext4 without extents (block
 * maps, as in the report that found this), and ext4.
 */
#include "kselftest_harness.h"
#include "nowait_test.h"

#include <sys/file.h>
#include <sys/mount.h>

#define IMAGE_MB 32
#define FILE_PAGES 64

FIXTURE(lifetime) {
	struct nowait_loopfs fs;
	char path[96];
	unsigned char *buf;
	size_t len;
};

FIXTURE_VARIANT(lifetime) {
	const char *type;	/* for mount(2) */
	const char *mkfs;	/* the command, before the image's path */
};

FIXTURE_VARIANT_ADD(lifetime, ext2) {
	.type = "ext2", .mkfs = "mkfs.ext2 -q -F",
};
FIXTURE_VARIANT_ADD(lifetime, ext4_blockmap) {
	.type = "ext4", .mkfs = "mkfs.ext4 -q -F -O ^extents,^64bit",
};
FIXTURE_VARIANT_ADD(lifetime, ext4) {
	.type = "ext4", .mkfs = "mkfs.ext4 -q -F",
};

FIXTURE_SETUP(lifetime)
{
	int fd;

	NOWAIT_LOOPFS_SETUP(&self->fs, "lifetime", variant->type, variant->mkfs,
			    (off_t)IMAGE_MB << 20);
	snprintf(self->path, sizeof(self->path), "%s/file", self->fs.dir);

	self->len = FILE_PAGES * nowait_page();
	self->buf = malloc(self->len);
	ASSERT_NE(NULL, self->buf);
	memset(self->buf, 0, self->len);
	fd = open(self->path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, nowait_write_pattern(fd, 0, self->len, 1));
	ASSERT_EQ(0, fsync(fd));
	close(fd);
}

FIXTURE_TEARDOWN_PARENT(lifetime)
{
	nowait_loopfs_remove(&self->fs);
}

/* Open the file, evict it, and make a flagged read that misses. */
static int open_and_miss(struct __test_metadata *_metadata,
			 FIXTURE_DATA(lifetime) *self)
{
	int fd = open(self->path, O_RDONLY | O_CLOEXEC);

	EXPECT_LE(0, fd);
	if (fd < 0)
		return -1;
	NOWAIT_EVICT(fd);
	NOWAIT_ASSERT_ERRNO(NOWAIT_PREAD(fd, self->buf, 4 * nowait_page(), 0),
			    EAGAIN);
	return fd;
}

/*
 * A case makes and mounts a filesystem and evicts its file more than once:
 * on the debug kernel under TCG the ext4 without extents took 27-29 s a
 * case (ext2 and ext4 4-8 s), past the harness's default 30 s. What the
 * cases check has no time in it; a hang still ends at the program's limit.
 */
#define LIFETIME_TIMEOUT_S 120

/* close() after a miss releases the flock() lock at once. */
TEST_F_TIMEOUT(lifetime, flock_released_by_close_after_miss, LIFETIME_TIMEOUT_S)
{
	int fd = open(self->path, O_RDONLY | O_CLOEXEC);
	int fd2;

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, flock(fd, LOCK_EX));
	/* The lock belongs to fd's open file; the miss is made through it. */
	NOWAIT_EVICT(fd);
	NOWAIT_ASSERT_ERRNO(NOWAIT_PREAD(fd, self->buf, 4 * nowait_page(), 0),
			    EAGAIN);
	ASSERT_EQ(0, close(fd));
	fd2 = open(self->path, O_RDONLY | O_CLOEXEC);
	ASSERT_LE(0, fd2);
	EXPECT_EQ(0, flock(fd2, LOCK_EX | LOCK_NB))
		TH_LOG("the lock outlived close(): %s", nowait_errname(errno));
	close(fd2);
}

/* umount right after a miss and close() succeeds at the first try. */
TEST_F_TIMEOUT(lifetime, umount_right_after_miss, LIFETIME_TIMEOUT_S)
{
	int fd;

	for (int round = 0; round < 3; round++) {
		fd = open_and_miss(_metadata, self);
		ASSERT_LE(0, fd);
		ASSERT_EQ(0, close(fd));
		ASSERT_EQ(0, umount2(self->fs.dir, 0))
			TH_LOG("round %d: umount right after a miss: %s", round,
			       nowait_errname(errno));
		self->fs.mounted = false;
		if (round == 2)
			break;
		ASSERT_EQ(0, mount(self->fs.dev, self->fs.dir, variant->type, 0,
				   NULL));
		self->fs.mounted = true;
	}
}

TEST_HARNESS_MAIN
