/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Shared helpers for the RWF_NOWAIT conformance tests and nowait-probe.
 *
 * Nothing in here depends on kselftest_harness.h except the NOWAIT_*
 * macros at the end, which only expand inside the test programs.
 */
#ifndef NOWAIT_TEST_H
#define NOWAIT_TEST_H

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <unistd.h>
#include <linux/magic.h>

/*
 * Debian 12's userspace headers predate these; the values are the
 * kernel ABI (include/uapi/linux/fs.h:330,333 in 6.12).
 */
#ifndef RWF_NOAPPEND
#define RWF_NOAPPEND	0x00000020
#endif
#ifndef RWF_ATOMIC
#define RWF_ATOMIC	0x00000040
#endif

/* Room for a path plus a residency map in a failure or skip reason. */
#define NOWAIT_WHY_MAX (PATH_MAX + 1200)

/*
 * A filesystem under test: its directory name below $NOWAIT_MNT, its type
 * as /proc/self/mountinfo spells it, and its statfs(2) magic. The type name
 * is needed because ext2 and ext4 share a magic. cache_pinned marks a
 * filesystem whose pages userspace cannot evict (shmem without swap), so
 * that cases needing a cache miss or a writeback skip there.
 */
struct nowait_fs {
	const char *dir;
	const char *type;
	uint32_t magic;
	bool cache_pinned;
};

#define NOWAIT_FS_EXT4	{ "ext4",  "ext4",    EXT4_SUPER_MAGIC, false }
#define NOWAIT_FS_XFS	{ "xfs",   "xfs",     XFS_SUPER_MAGIC, false }
#define NOWAIT_FS_BTRFS	{ "btrfs", "btrfs",   BTRFS_SUPER_MAGIC, false }
#define NOWAIT_FS_TMPFS	{ "tmpfs", "tmpfs",   TMPFS_MAGIC, true }
#define NOWAIT_FS_VFAT	{ "vfat",  "vfat",    MSDOS_SUPER_MAGIC, false }
#define NOWAIT_FS_EXFAT	{ "exfat", "exfat",   EXFAT_SUPER_MAGIC, false }
#define NOWAIT_FS_EXT2	{ "ext2",  "ext2",    EXT2_SUPER_MAGIC, false }
#define NOWAIT_FS_OVL	{ "ovl",   "overlay", OVERLAYFS_SUPER_MAGIC, false }

/* The mounts the guest may provide, in the order nowait-probe lists them. */
static inline const struct nowait_fs *nowait_std_fs(size_t *n)
{
	static const struct nowait_fs all[] = {
		NOWAIT_FS_EXT4, NOWAIT_FS_XFS, NOWAIT_FS_BTRFS,
		NOWAIT_FS_TMPFS, NOWAIT_FS_VFAT, NOWAIT_FS_EXFAT,
		NOWAIT_FS_EXT2, NOWAIT_FS_OVL,
	};

	*n = sizeof(all) / sizeof(all[0]);
	return all;
}

static inline const char *nowait_mnt(void)
{
	const char *m = getenv("NOWAIT_MNT");

	return m && *m ? m : "/mnt";
}

static inline size_t nowait_page(void)
{
	return (size_t)sysconf(_SC_PAGESIZE);
}

static inline const char *nowait_errname(int e)
{
	static char unknown[32];
	const char *n = strerrorname_np(e);

	if (n)
		return n;
	snprintf(unknown, sizeof(unknown), "errno %d", e);
	return unknown;
}

/* mountinfo escapes space, tab, newline and backslash as \ooo. */
static inline void nowait_unescape(char *s)
{
	char *o = s;

	while (*s) {
		if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' &&
		    s[2] >= '0' && s[2] <= '7' && s[3] >= '0' && s[3] <= '7') {
			*o++ = (char)((s[1] - '0') << 6 | (s[2] - '0') << 3 |
				      (s[3] - '0'));
			s += 4;
		} else {
			*o++ = *s++;
		}
	}
	*o = '\0';
}

/*
 * Type of the mount that holds @path, from the longest matching mount point
 * in /proc/self/mountinfo. Returns false if /proc is unavailable.
 */
static inline bool nowait_mount_type(const char *path, char *type, size_t n)
{
	char real[PATH_MAX], line[4096];
	size_t best = 0;
	bool found = false;
	FILE *f;

	if (!realpath(path, real))
		return false;
	f = fopen("/proc/self/mountinfo", "re");
	if (!f)
		return false;
	while (fgets(line, sizeof(line), f)) {
		char mp[PATH_MAX], fstype[64];
		const char *sep = strstr(line, " - ");
		size_t len;

		if (!sep || sscanf(line, "%*s %*s %*s %*s %4095s", mp) != 1 ||
		    sscanf(sep + 3, "%63s", fstype) != 1)
			continue;
		nowait_unescape(mp);
		len = strlen(mp);
		if (strcmp(mp, "/") && (strncmp(real, mp, len) ||
					(real[len] && real[len] != '/')))
			continue;
		/* >= so that the last of several stacked mounts wins */
		if (len >= best) {
			best = len;
			snprintf(type, n, "%s", fstype);
			found = true;
		}
	}
	fclose(f);
	return found;
}

/*
 * Resolve $NOWAIT_MNT/<fs->dir> into @dir and check that it really is that
 * filesystem. Returns false with the reason in @why if it is not, so that
 * the caller reports a skip rather than testing the wrong filesystem.
 */
static inline bool nowait_fs_check(const struct nowait_fs *fs, char *dir,
				   size_t dirlen, char *why, size_t whylen)
{
	char type[64];
	struct statfs st;

	snprintf(dir, dirlen, "%s/%s", nowait_mnt(), fs->dir);
	if (statfs(dir, &st)) {
		snprintf(why, whylen, "%s: %s not mounted (statfs: %s)", dir,
			 fs->type, nowait_errname(errno));
		return false;
	}
	if ((uint32_t)st.f_type != fs->magic) {
		snprintf(why, whylen,
			 "%s: %s not mounted (f_type 0x%x, want 0x%x)", dir,
			 fs->type, (unsigned int)(uint32_t)st.f_type,
			 (unsigned int)fs->magic);
		return false;
	}
	if (nowait_mount_type(dir, type, sizeof(type)) &&
	    strcmp(type, fs->type)) {
		snprintf(why, whylen, "%s: mounted as %s, not %s", dir, type,
			 fs->type);
		return false;
	}
	return true;
}

/*
 * A position-dependent byte pattern: a read from the wrong offset, a stale
 * page or a zero-filled hole all show up as mismatches.
 */
static inline unsigned char nowait_pattern_byte(uint64_t off, uint32_t seed)
{
	uint32_t x = (uint32_t)off ^ (uint32_t)(off >> 32) ^
		     (seed * 0x9e3779b9u);

	x ^= x >> 15;
	x *= 0x2c1b3c6du;
	x ^= x >> 12;
	x *= 0x297a2d39u;
	x ^= x >> 15;
	return (unsigned char)x;
}

static inline void nowait_fill(unsigned char *buf, size_t len, uint64_t off,
			       uint32_t seed)
{
	for (size_t i = 0; i < len; i++)
		buf[i] = nowait_pattern_byte(off + i, seed);
}

/* Index of the first byte that differs from the pattern, or -1. */
static inline ssize_t nowait_mismatch(const unsigned char *buf, size_t len,
				      uint64_t off, uint32_t seed)
{
	for (size_t i = 0; i < len; i++)
		if (buf[i] != nowait_pattern_byte(off + i, seed))
			return (ssize_t)i;
	return -1;
}

static inline int nowait_write_pattern(int fd, uint64_t off, size_t len,
				       uint32_t seed)
{
	unsigned char buf[65536];

	while (len) {
		size_t n = len < sizeof(buf) ? len : sizeof(buf);
		ssize_t w;

		nowait_fill(buf, n, off, seed);
		w = pwrite(fd, buf, n, (off_t)off);
		if (w <= 0)
			return -1;
		off += (uint64_t)w;
		len -= (size_t)w;
	}
	return 0;
}

static inline size_t nowait_npages(off_t size)
{
	size_t pg = nowait_page();

	return ((size_t)size + pg - 1) / pg;
}

/*
 * Page-cache residency of the file's pages, one character per page in @map:
 * 'R' resident, '.' not. Returns the number of resident pages, or -1.
 * The mapping is never touched, so it neither faults pages in nor pins them
 * against eviction (mapped folios are skipped by invalidation).
 */
static inline ssize_t nowait_residency(int fd, char *map, size_t mapsz)
{
	unsigned char vec[1024];
	struct stat st;
	size_t np, len, resident = 0;
	void *p;

	if (fstat(fd, &st))
		return -1;
	np = nowait_npages(st.st_size);
	if (np + 1 > mapsz || np > sizeof(vec)) {
		errno = EFBIG;
		return -1;
	}
	map[np] = '\0';
	if (!np)
		return 0;
	len = np * nowait_page();
	p = mmap(NULL, len, PROT_READ, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		return -1;
	if (mincore(p, len, vec)) {
		int e = errno;

		munmap(p, len);
		errno = e;
		return -1;
	}
	munmap(p, len);
	for (size_t i = 0; i < np; i++) {
		map[i] = (vec[i] & 1) ? 'R' : '.';
		resident += vec[i] & 1;
	}
	return (ssize_t)resident;
}

/* Read the file to EOF, discarding the data. */
static inline void nowait_read_all(int fd)
{
	unsigned char buf[65536];
	off_t off = 0;
	ssize_t n;

	while ((n = pread(fd, buf, sizeof(buf), off)) > 0)
		off += n;
}

/*
 * Global fallback for pages DONTNEED could not drop. It drops every clean
 * page on the machine, so it only runs when NOWAIT_DROP_CACHES=1 (the
 * guest harness sets it; a shared host should not). Returns whether it ran.
 */
static inline bool nowait_drop_caches(void)
{
	const char *opt = getenv("NOWAIT_DROP_CACHES");
	bool done;
	int fd;

	if (!opt || strcmp(opt, "1"))
		return false;
	fd = open("/proc/sys/vm/drop_caches", O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	done = write(fd, "1", 1) == 1;
	close(fd);
	return done;
}

/*
 * Write back and evict every page of the file, then verify with mincore
 * that none is left. Returns false with the residency map in @why if some
 * page survived, so callers can tell a setup failure from a kernel result.
 */
static inline bool nowait_evict(int fd, char *why, size_t whylen)
{
	bool dropped = false;
	char map[1025];
	ssize_t r;
	int e;

	if (fsync(fd)) {
		snprintf(why, whylen, "fsync: %s", nowait_errname(errno));
		return false;
	}
	e = posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
	if (e) {
		snprintf(why, whylen, "fadvise(DONTNEED): %s",
			 nowait_errname(e));
		return false;
	}
	r = nowait_residency(fd, map, sizeof(map));
	if (r > 0) {
		/*
		 * Folios still locked by a readahead in flight (a NOWAIT miss
		 * starts one) are skipped by invalidation; a blocking read of
		 * the whole file waits for them.
		 */
		nowait_read_all(fd);
		posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
		r = nowait_residency(fd, map, sizeof(map));
	}
	if (r > 0 && nowait_drop_caches()) {
		dropped = true;
		r = nowait_residency(fd, map, sizeof(map));
	}
	if (r < 0) {
		snprintf(why, whylen, "mincore: %s", nowait_errname(errno));
		return false;
	}
	if (r > 0) {
		snprintf(why, whylen,
			 "not evictable: residency after fsync+DONTNEED%s is %s",
			 dropped ? "+drop_caches" : "", map);
		return false;
	}
	return true;
}

/*
 * Blocking detector: voluntary context switches of the calling thread.
 * A call that sleeps (waits for I/O, a mutex, a journal handle...) bumps
 * this; preemption does not, since that is counted in ru_nivcsw.
 */
static inline long nowait_nvcsw(void)
{
	struct rusage ru;

	if (getrusage(RUSAGE_THREAD, &ru))
		return -1;
	return ru.ru_nvcsw;
}

/*
 * Evaluate @expr, setting @slept if the thread slept in it; errno and the
 * value of @expr pass through.
 */
#define NOWAIT_MEASURE(slept, expr) ({					\
	long before_ = nowait_nvcsw();					\
	__typeof__(expr) val_ = (expr);					\
	int errno_ = errno;						\
	(slept) = nowait_nvcsw() != before_;				\
	errno = errno_;							\
	val_;								\
})

static inline ssize_t nowait_preadv2(int fd, void *buf, size_t len, off_t off,
				     int flags)
{
	struct iovec iov = { .iov_base = buf, .iov_len = len };

	return preadv2(fd, &iov, 1, off, flags);
}

static inline ssize_t nowait_pwritev2(int fd, const void *buf, size_t len,
				      off_t off, int flags)
{
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };

	return pwritev2(fd, &iov, 1, off, flags);
}

/* A scratch file inside the filesystem a test variant targets. */
struct nowait_tfile {
	char path[PATH_MAX];
	int fd;
	uint32_t seed;
	const struct nowait_fs *fs;
};

/*
 * Returns 1 (skip, reason in @why) if the filesystem is not there, -1 if
 * the file could not be created, 0 on success.
 */
static inline int nowait_tfile_open(struct nowait_tfile *t,
				    const struct nowait_fs *fs,
				    char *why, size_t whylen)
{
	char dir[PATH_MAX - 32];

	t->fd = -1;
	t->path[0] = '\0';
	t->seed = (uint32_t)getpid();
	t->fs = fs;
	if (!nowait_fs_check(fs, dir, sizeof(dir), why, whylen))
		return 1;
	snprintf(t->path, sizeof(t->path), "%s/nowait-test.XXXXXX", dir);
	t->fd = mkostemp(t->path, O_CLOEXEC);
	if (t->fd < 0) {
		snprintf(why, whylen, "mkostemp %s: %s", t->path,
			 nowait_errname(errno));
		t->path[0] = '\0';
		return -1;
	}
	return 0;
}

/*
 * Tests remove their file from FIXTURE_TEARDOWN_PARENT, i.e. in the parent
 * of the process that ran the case, with the fixture in shared memory. A
 * teardown in the test process itself is skipped after a failed ASSERT
 * at -O2 (the harness's `child` is not volatile across its longjmp), and
 * the file would be left behind. The fd belongs to the exited child.
 */
static inline void nowait_tfile_remove(const struct nowait_tfile *t)
{
	if (t->path[0])
		unlink(t->path);
}

/* ---- kselftest_harness glue: these expand only inside the tests. ---- */

/* The per-filesystem variants. Adding a filesystem is one line here. */
#define NOWAIT_FS_VARIANTS(fixture)					\
	FIXTURE_VARIANT_ADD(fixture, ext4)  { .fs = NOWAIT_FS_EXT4 };	\
	FIXTURE_VARIANT_ADD(fixture, xfs)   { .fs = NOWAIT_FS_XFS };	\
	FIXTURE_VARIANT_ADD(fixture, btrfs) { .fs = NOWAIT_FS_BTRFS };

/* Fixture setup: skip the case if the variant's filesystem is absent. */
#define NOWAIT_TFILE_SETUP(t, fs) do {					\
	char why_[NOWAIT_WHY_MAX];					\
	int r_ = nowait_tfile_open((t), (fs), why_, sizeof(why_));	\
	if (r_ > 0)							\
		SKIP(return, "%.1000s", why_);				\
	ASSERT_EQ(0, r_) TH_LOG("%s", why_);				\
} while (0)

/*
 * Skip a case that needs evictable page cache where there is none. It
 * returns from the calling function, so use it in the TEST_F body itself.
 */
#define NOWAIT_NEED_EVICTABLE(t) do {					\
	if ((t)->fs->cache_pinned)					\
		SKIP(return, "%s pages cannot be evicted from userspace",	\
		     (t)->fs->type);					\
} while (0)

/* Evict the whole file or fail the case as a setup error. */
#define NOWAIT_EVICT(fd) do {						\
	char why_[NOWAIT_WHY_MAX];					\
	bool ok_ = nowait_evict((fd), why_, sizeof(why_));		\
	ASSERT_TRUE(ok_) TH_LOG("setup: eviction failed: %s", why_);	\
} while (0)

/* Assert the exact residency map ('R'/'.' per page) before a NOWAIT call. */
#define NOWAIT_ASSERT_RESIDENCY(fd, want) do {				\
	char map_[1025];						\
	ssize_t r_ = nowait_residency((fd), map_, sizeof(map_));	\
	ASSERT_LE(0, r_) TH_LOG("mincore: %s", nowait_errname(errno));	\
	ASSERT_STREQ((want), map_)					\
		TH_LOG("setup: page-cache residency is not as intended");\
} while (0)

/* Assert that buf holds the file's pattern for [off, off + len). */
#define NOWAIT_ASSERT_PATTERN(buf, len, off, seed) do {			\
	ssize_t bad_ = nowait_mismatch((buf), (len), (off), (seed));	\
	ASSERT_EQ(-1, bad_) TH_LOG("wrong byte at file offset %jd",	\
				   (intmax_t)(off) + (intmax_t)bad_);	\
} while (0)

/* Assert a -1 return with the given errno, naming both on failure. */
#define NOWAIT_ASSERT_ERRNO(ret, err) do {				\
	ssize_t ret_ = (ret);						\
	int e_ = errno;							\
	ASSERT_EQ(-1, ret_) TH_LOG("want %s, got %zd",			\
				   nowait_errname(err), ret_);		\
	ASSERT_EQ((err), e_) TH_LOG("want %s, got %s",			\
				    nowait_errname(err),		\
				    nowait_errname(e_));		\
} while (0)

#endif /* NOWAIT_TEST_H */
