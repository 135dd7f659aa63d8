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
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <linux/fs.h>
#include <linux/loop.h>
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
 * as /proc/self/mountinfo spells it, and its statfs(2) magic (0: any). The type name
 * is needed because ext2 and ext4 share a magic.
 *
 * cache_pinned marks shmem: fadvise cannot drop its pages, only reclaim can,
 * and then they go to swap (see nowait_shmem_residency()). sparse marks a
 * filesystem where a write far past EOF leaves a hole rather than writing
 * zeros to the gap (vfat and exfat have no holes). lower marks the overlayfs
 * variant whose file lives in the lower layer: it is created there, and read
 * through the overlay.
 */
struct nowait_fs {
	const char *dir;
	const char *type;
	uint32_t magic;
	bool cache_pinned;
	bool sparse;
	bool lower;
};

#define NOWAIT_FS_(d, t, m, ...) \
	{ .dir = (d), .type = (t), .magic = (m), __VA_ARGS__ }
#define NOWAIT_FS_EXT4	NOWAIT_FS_("ext4", "ext4", EXT4_SUPER_MAGIC, .sparse = true)
#define NOWAIT_FS_XFS	NOWAIT_FS_("xfs", "xfs", XFS_SUPER_MAGIC, .sparse = true)
#define NOWAIT_FS_BTRFS	NOWAIT_FS_("btrfs", "btrfs", BTRFS_SUPER_MAGIC, .sparse = true)
#define NOWAIT_FS_TMPFS	NOWAIT_FS_("tmpfs", "tmpfs", TMPFS_MAGIC, .sparse = true, \
				   .cache_pinned = true)
#define NOWAIT_FS_VFAT	NOWAIT_FS_("vfat", "vfat", MSDOS_SUPER_MAGIC)
#define NOWAIT_FS_EXFAT	NOWAIT_FS_("exfat", "exfat", EXFAT_SUPER_MAGIC)
#define NOWAIT_FS_EXT2	NOWAIT_FS_("ext2", "ext2", EXT2_SUPER_MAGIC, .sparse = true)
#define NOWAIT_FS_OVL	NOWAIT_FS_("ovl", "overlay", OVERLAYFS_SUPER_MAGIC, \
				   .sparse = true)
#define NOWAIT_FS_OVL_LOWER NOWAIT_FS_("ovl", "overlay", OVERLAYFS_SUPER_MAGIC, \
				       .sparse = true, .lower = true)

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

/*
 * The network filesystems the guest's init mounts from its own servers:
 * knfsd (v3 and v4.2) and ksmbd over loopback, virtio-9p from QEMU, a
 * nowait-fused passthrough, ocfs2 in local mode on its own disk, and CephFS
 * from harness/ceph.sh's cluster on the host.
 */
static inline const struct nowait_fs *nowait_net_fs(size_t *n)
{
	static const struct nowait_fs all[] = {
		NOWAIT_FS_("nfs3", "nfs", NFS_SUPER_MAGIC),
		NOWAIT_FS_("nfs4", "nfs4", NFS_SUPER_MAGIC),
		NOWAIT_FS_("cifs", "cifs", 0xfe534d42 /* SMB2_SUPER_MAGIC */),
		NOWAIT_FS_("fuse", "fuse.nowait-fused", 0x65735546 /* FUSE_SUPER_MAGIC */),
		/* 9p's statfs reports the type of the server's filesystem */
		NOWAIT_FS_("9p", "9p", 0),
		NOWAIT_FS_("ocfs2", "ocfs2", 0x7461636f /* OCFS2_SUPER_MAGIC */),
		NOWAIT_FS_("ceph", "ceph", 0x00c36400 /* CEPH_SUPER_MAGIC */),
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

/* One line of /proc/self/mountinfo, unescaped. */
struct nowait_mount {
	char mp[PATH_MAX];
	char opts[1024];	/* per mount: rw,relatime,... */
	char type[64];
	char sopts[4096];	/* the superblock's: lowerdir=... for overlayfs */
};

/*
 * With @path, the mount that holds it: the longest mount point that is a
 * prefix of its real path, the last of several stacked there. Without, the
 * last mount of type @type. Returns false if there is none or /proc is
 * unavailable.
 */
static inline bool nowait_find_mount(const char *path, const char *type,
				     struct nowait_mount *m)
{
	char real[PATH_MAX], line[8192];
	struct nowait_mount cur;
	size_t best = 0;
	bool found = false;
	FILE *f;

	if (path && !realpath(path, real))
		return false;
	f = fopen("/proc/self/mountinfo", "re");
	if (!f)
		return false;
	while (fgets(line, sizeof(line), f)) {
		const char *sep = strstr(line, " - ");
		size_t len;

		if (!sep || sscanf(line, "%*s %*s %*s %*s %4095s %1023s",
				   cur.mp, cur.opts) != 2 ||
		    sscanf(sep + 3, "%63s %*s %4095s", cur.type, cur.sopts) != 2)
			continue;
		nowait_unescape(cur.mp);
		nowait_unescape(cur.sopts);
		if (!path) {
			if (type && !strcmp(cur.type, type)) {
				*m = cur;
				found = true;
			}
			continue;
		}
		len = strlen(cur.mp);
		if (strcmp(cur.mp, "/") && (strncmp(real, cur.mp, len) ||
					    (real[len] && real[len] != '/')))
			continue;
		if (len >= best) {
			best = len;
			*m = cur;
			found = true;
		}
	}
	fclose(f);
	return found;
}

/* Type of the mount that holds @path. */
static inline bool nowait_mount_type(const char *path, char *type, size_t n)
{
	struct nowait_mount m;

	if (!nowait_find_mount(path, NULL, &m))
		return false;
	snprintf(type, n, "%s", m.type);
	return true;
}

/* Whether the comma-separated option list @opts holds @opt. */
static inline bool nowait_has_opt(const char *opts, const char *opt)
{
	size_t n = strlen(opt);

	for (const char *p = opts; p; p = strchr(p, ',')) {
		if (*p == ',')
			p++;
		if (!strncmp(p, opt, n) && (p[n] == ',' || !p[n]))
			return true;
	}
	return false;
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
	if (fs->magic && (uint32_t)st.f_type != fs->magic) {
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

/*
 * Thaw @dir's filesystem in @seconds from a process of its own, so that a
 * kernel whose write waits for the thaw is seen sleeping instead of hanging
 * the caller for good. The child exits 0 if it did thaw it. Returns its
 * pid, or -1.
 */
static inline pid_t nowait_thaw_later(const char *dir, unsigned int seconds)
{
	pid_t pid = fork();

	if (!pid) {
		int dfd = open(dir, O_RDONLY | O_CLOEXEC);

		sleep(seconds);
		_exit(dfd >= 0 && !ioctl(dfd, FITHAW, 0) ? 0 : 1);
	}
	return pid;
}

static inline void nowait_msleep(unsigned int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
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
 * A NOWAIT miss hands its readahead to a worker (mm/filemap.c,
 * filemap_queue_nowait_ra()), so pages of the file can still arrive after
 * the call returned: eviction counts only once the file has stayed empty
 * for NOWAIT_SETTLE_MS. Folios that readahead still has locked are skipped
 * by DONTNEED, and mincore does not count them until they are uptodate;
 * they show up within the quiet period and are evicted on the next round.
 */
#define NOWAIT_SETTLE_MS	30
#define NOWAIT_EVICT_ROUNDS	40

/*
 * Write back and evict every page of the file, wait until no queued
 * readahead brings any back, and verify with mincore. Returns false with
 * the residency map in @why if some page stayed, so callers can tell a
 * setup failure from a kernel result.
 */
static inline bool nowait_evict(int fd, char *why, size_t whylen)
{
	bool dropped = false;
	char map[1025];
	ssize_t r = -1;
	int e;

	for (int round = 0; round < NOWAIT_EVICT_ROUNDS; round++) {
		if (fsync(fd)) {
			snprintf(why, whylen, "fsync: %s",
				 nowait_errname(errno));
			return false;
		}
		e = posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
		if (e) {
			snprintf(why, whylen, "fadvise(DONTNEED): %s",
				 nowait_errname(e));
			return false;
		}
		r = nowait_residency(fd, map, sizeof(map));
		if (r == 0) {
			nowait_msleep(NOWAIT_SETTLE_MS);
			r = nowait_residency(fd, map, sizeof(map));
			if (r == 0)
				return true;
		}
		if (r < 0)
			break;
		nowait_msleep(NOWAIT_SETTLE_MS / 3);
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
			 "not evictable: residency after %d rounds of fsync+DONTNEED%s is %s",
			 NOWAIT_EVICT_ROUNDS, dropped ? "+drop_caches" : "",
			 map);
		return false;
	}
	return true;
}

/*
 * Poll mincore for up to @ms milliseconds until every page in
 * [first, last] is resident; the final map is left in @map.
 */
static inline bool nowait_wait_resident(int fd, size_t first, size_t last,
					unsigned int ms, char *map,
					size_t mapsz)
{
	for (unsigned int waited = 0;; waited += 10) {
		ssize_t r = nowait_residency(fd, map, mapsz);
		size_t i = first;

		while (r >= 0 && i <= last && map[i] == 'R')
			i++;
		if (i > last)
			return true;
		if (r < 0 || waited >= ms)
			return false;
		nowait_msleep(10);
	}
}

/* Whether a swap area is active: /proc/swaps lists one below its header. */
static inline bool nowait_swap_active(void)
{
	char line[512];
	int lines = 0;
	FILE *f = fopen("/proc/swaps", "re");

	if (!f)
		return false;
	while (fgets(line, sizeof(line), f))
		lines++;
	fclose(f);
	return lines > 1;
}

/* Whether timestamp @a is later than @b, or the same. */
static inline bool nowait_ts_after(struct timespec a, struct timespec b)
{
	return a.tv_sec > b.tv_sec ||
	       (a.tv_sec == b.tv_sec && a.tv_nsec > b.tv_nsec);
}

static inline bool nowait_ts_equal(struct timespec a, struct timespec b)
{
	return a.tv_sec == b.tv_sec && a.tv_nsec == b.tv_nsec;
}

/*
 * Booted by the nowait harness (its job is on the kernel command line):
 * only there may a test reconfigure the machine (dm targets, cgroups).
 */
static inline bool nowait_in_guest(void)
{
	char line[4096] = "";
	FILE *f = fopen("/proc/cmdline", "re");

	if (f) {
		if (!fgets(line, sizeof(line), f))
			line[0] = '\0';
		fclose(f);
	}
	return strstr(line, "nowait.job=") != NULL;
}

/*
 * How far the mtime read back from the disk may be from the one stat()
 * showed before: vfat keeps 2 s and exfat 10 ms, but both show the
 * nanoseconds of the last update until the inode is read back
 * (tools/nowait-crash.c, tools/nowait-replay-check.c).
 */
static inline long long nowait_mtime_slack_ns(const char *dir)
{
	struct statfs sf;

	if (statfs(dir, &sf))
		return 0;
	switch ((uint32_t)sf.f_type) {
	case MSDOS_SUPER_MAGIC:
	case EXFAT_SUPER_MAGIC:
		return 2000000000LL;
	default:
		return 0;
	}
}

static inline bool nowait_write_file(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	bool ok;

	if (fd < 0)
		return false;
	ok = write(fd, text, strlen(text)) == (ssize_t)strlen(text);
	close(fd);
	return ok;
}

/* Write the pattern into the pages marked @mark in @map ('R'/'.' per page). */
static inline int nowait_write_pages(int fd, const char *map, char mark,
				     off_t size, uint32_t seed)
{
	const size_t pg = nowait_page();

	for (size_t i = 0; map[i]; i++) {
		off_t off = (off_t)(i * pg);
		size_t len = size - off < (off_t)pg ? (size_t)(size - off) : pg;

		if (map[i] == mark && off < size &&
		    nowait_write_pattern(fd, (uint64_t)off, len, seed))
			return -1;
	}
	return 0;
}

/*
 * memory.reclaim retries within one write, and cgroup v2 reclaim puts a
 * folio it finds still under writeback on the active list (mm/vmscan.c,
 * shrink_folio_list(), "Case 2"). Such a swap-cache folio is only
 * deactivated and freed once reclaim sees the inactive list as low, from
 * memcg statistics that are flushed every 2 s: that took up to 1.9 s in
 * QEMU. The bound leaves room for a few flushes.
 */
#define NOWAIT_RECLAIM_MS	8000
#define NOWAIT_RECLAIM_PAUSE_MS	20

/* The memory.stat counters that tell where a page stuck in reclaim is. */
static inline void nowait_memstat(const char *path, char *out, size_t n)
{
	static const char *const keys[] = {
		"shmem ", "active_anon ", "inactive_anon ", "unevictable ",
		"swapcached ", NULL,
	};
	char line[256];
	size_t used = 0;
	FILE *f = fopen(path, "re");

	out[0] = '\0';
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		for (int i = 0; keys[i]; i++) {
			if (strncmp(line, keys[i], strlen(keys[i])) || used >= n)
				continue;
			line[strcspn(line, "\n")] = '\0';
			used += (size_t)snprintf(out + used, n - used, "%s%s",
						 used ? ", " : "", line);
		}
	}
	fclose(f);
}

/*
 * Give a shmem (tmpfs, memfd) file of @size bytes the residency @want, one
 * 'R' or '.' per page, with the '.' pages really swapped out: fadvise
 * cannot drop shmem pages, only reclaim can.
 *
 * The file is rewritten with the pattern: the '.' pages by a child in a
 * memory cgroup of its own, the 'R' pages by the caller. Reclaim in that
 * cgroup (memory.reclaim) then takes exactly the '.' pages and nothing of
 * the caller's: a pre-touched buffer swapped out under the test would make
 * its reads fault and sleep. mincore counts a page that is still in the
 * swap cache as resident, though the file already holds a swap entry for
 * it; reclaim is repeated until the swap cache has let go of it too, so
 * that the map the test asserts is the one the kernel serves from.
 *
 * Returns 0, 1 when this system cannot swap the pages out (no swap, no
 * cgroup2 memory controller) or -1 on failure, with the reason in @why.
 */
static inline int nowait_shmem_residency(int fd, off_t size, uint32_t seed,
					 const char *want, char *why,
					 size_t whylen)
{
	char cg[PATH_MAX], file[PATH_MAX + 32], map[1025], amount[32];
	char stat[200];
	const size_t pg = nowait_page();
	struct nowait_mount m;
	size_t ndot = 0;
	int ret = -1, status;
	pid_t child;

	for (size_t i = 0; want[i]; i++)
		ndot += want[i] == '.';
	if (!nowait_swap_active()) {
		snprintf(why, whylen,
			 "no active swap (/proc/swaps): a shmem page only leaves memory for swap");
		return 1;
	}
	if (!nowait_find_mount(NULL, "cgroup2", &m)) {
		snprintf(why, whylen,
			 "no cgroup2 mount: shmem pages are swapped out by memory.reclaim");
		return 1;
	}
	snprintf(cg, sizeof(cg), "%.4000s/nowait-swap.%d", m.mp,
		 (int)getpid());
	if (mkdir(cg, 0755) && errno != EEXIST) {
		snprintf(why, whylen, "mkdir %s: %s", cg, nowait_errname(errno));
		return -1;
	}
	snprintf(file, sizeof(file), "%s/memory.reclaim", cg);
	if (access(file, W_OK)) {
		snprintf(why, whylen,
			 "%s/cgroup.subtree_control does not enable the memory controller",
			 m.mp);
		ret = 1;
		goto out;
	}

	if (ftruncate(fd, 0) || ftruncate(fd, size)) {
		snprintf(why, whylen, "ftruncate: %s", nowait_errname(errno));
		goto out;
	}
	if (ndot) {
		child = fork();
		if (child < 0) {
			snprintf(why, whylen, "fork: %s", nowait_errname(errno));
			goto out;
		}
		if (child == 0) {
			/* "0" moves the writer itself into the cgroup */
			snprintf(file, sizeof(file), "%s/cgroup.procs", cg);
			_exit(!nowait_write_file(file, "0") ||
			      nowait_write_pages(fd, want, '.', size, seed));
		}
		if (waitpid(child, &status, 0) != child ||
		    !WIFEXITED(status) || WEXITSTATUS(status)) {
			snprintf(why, whylen,
				 "the child could not join %s and write the pages to swap out",
				 cg);
			goto out;
		}
	}
	if (nowait_write_pages(fd, want, 'R', size, seed)) {
		snprintf(why, whylen, "write: %s", nowait_errname(errno));
		goto out;
	}

	snprintf(file, sizeof(file), "%s/memory.reclaim", cg);
	snprintf(amount, sizeof(amount), "%zu", (ndot ? ndot : 1) * pg);
	for (unsigned int waited = 0;; waited += NOWAIT_RECLAIM_PAUSE_MS) {
		ssize_t r = nowait_residency(fd, map, sizeof(map));

		if (r < 0) {
			snprintf(why, whylen, "mincore: %s",
				 nowait_errname(errno));
			goto out;
		}
		if (!strcmp(map, want)) {
			ret = 0;
			goto out;
		}
		if (waited >= NOWAIT_RECLAIM_MS)
			break;
		/* EAGAIN when less than asked for was freed: look again */
		nowait_write_file(file, amount);
		nowait_msleep(NOWAIT_RECLAIM_PAUSE_MS);
	}
	snprintf(file, sizeof(file), "%s/memory.stat", cg);
	nowait_memstat(file, stat, sizeof(stat));
	snprintf(why, whylen,
		 "residency after %d ms of memory.reclaim is %s, want %s (memory.stat: %s)",
		 NOWAIT_RECLAIM_MS, map, want, stat);
out:
	rmdir(cg);
	return ret;
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

/*
 * A layer of the overlay mounted at @dir, from its superblock options:
 * @layer "lowerdir" gives the first lower layer (lowerdir=a:b, or
 * lowerdir+=a with the new mount API), "upperdir" the upper one.
 */
static inline bool nowait_ovl_layer(const char *dir, const char *layer,
				    char *path, size_t n, char *why,
				    size_t whylen)
{
	struct nowait_mount m;
	const char *p;
	size_t len;

	if (!nowait_find_mount(dir, NULL, &m)) {
		snprintf(why, whylen, "%s: not in /proc/self/mountinfo", dir);
		return false;
	}
	p = strstr(m.sopts, layer);
	if (!p || !(p = strchr(p, '='))) {
		snprintf(why, whylen, "%s: no %s in its options %.1000s", dir,
			 layer, m.sopts);
		return false;
	}
	p++;
	len = strcspn(p, ",:");
	snprintf(path, n, "%.*s", (int)len, p);
	return true;
}

/* A scratch file inside the filesystem a test variant targets. */
struct nowait_tfile {
	char path[PATH_MAX];	/* unlinked at teardown */
	int fd;			/* what the case reads */
	int wfd;		/* what setup writes: fd, or the lower file */
	uint32_t seed;
	const struct nowait_fs *fs;
};

/*
 * Create the file and write @size bytes of its pattern. For a lower-layer
 * file (fs->lower) the file is made and written in the overlay's lower
 * directory under a fresh name, synced, and only then opened read-only
 * through the overlay, whose first lookup of the name finds it there: a
 * lower layer is not to change under an overlay that already looked at it.
 * @wfd is then the lower file itself, for setup that reshapes it; the cases
 * read through @fd.
 *
 * Returns 1 (skip, reason in @why) if the filesystem is not there, -1 if
 * the file could not be made, 0 on success.
 */
static inline int nowait_tfile_open(struct nowait_tfile *t,
				    const struct nowait_fs *fs, off_t size,
				    char *why, size_t whylen)
{
	char dir[PATH_MAX - 32], lower[PATH_MAX - 32], top[PATH_MAX];

	t->fd = t->wfd = -1;
	t->path[0] = '\0';
	t->seed = (uint32_t)getpid();
	t->fs = fs;
	if (!nowait_fs_check(fs, dir, sizeof(dir), why, whylen))
		return 1;
	if (fs->lower && !nowait_ovl_layer(dir, "lowerdir", lower,
					   sizeof(lower), why, whylen))
		return 1;
	snprintf(t->path, sizeof(t->path), "%s/nowait-test.XXXXXX",
		 fs->lower ? lower : dir);
	t->wfd = mkostemp(t->path, O_CLOEXEC);
	if (t->wfd < 0) {
		snprintf(why, whylen, "mkostemp %s: %s", t->path,
			 nowait_errname(errno));
		t->path[0] = '\0';
		return -1;
	}
	if (nowait_write_pattern(t->wfd, 0, (size_t)size, t->seed)) {
		snprintf(why, whylen, "write %s: %s", t->path,
			 nowait_errname(errno));
		return -1;
	}
	t->fd = t->wfd;
	if (!fs->lower)
		return 0;
	if (fsync(t->wfd)) {
		snprintf(why, whylen, "fsync %s: %s", t->path,
			 nowait_errname(errno));
		return -1;
	}
	snprintf(top, sizeof(top), "%s/%s", dir, strrchr(t->path, '/') + 1);
	t->fd = open(top, O_RDONLY | O_CLOEXEC);
	if (t->fd < 0) {
		snprintf(why, whylen, "open %s: %s", top, nowait_errname(errno));
		return -1;
	}
	/* and the overlay serves it from there: nothing in the upper layer */
	if (nowait_ovl_layer(dir, "upperdir", lower, sizeof(lower), why,
			     whylen)) {
		snprintf(top, sizeof(top), "%s/%s", lower,
			 strrchr(t->path, '/') + 1);
		if (!access(top, F_OK)) {
			snprintf(why, whylen, "%s: copied up on open", top);
			return -1;
		}
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

/*
 * Attach @img to a free loop device and return its number, or -1. The
 * device node appears in devtmpfs shortly after LOOP_CTL_GET_FREE made the
 * device, so its open is retried for up to a second.
 */
static inline int nowait_loop_attach(const char *img)
{
	char dev[64];
	int ctl, n, fd = -1, bfd;

	ctl = open("/dev/loop-control", O_RDWR | O_CLOEXEC);
	if (ctl < 0)
		return -1;
	n = ioctl(ctl, LOOP_CTL_GET_FREE);
	close(ctl);
	if (n < 0)
		return -1;
	snprintf(dev, sizeof(dev), "/dev/loop%d", n);
	for (int i = 0; i < 100 && fd < 0; i++) {	/* devtmpfs makes the node */
		fd = open(dev, O_RDWR | O_CLOEXEC);
		if (fd < 0)
			nowait_msleep(10);
	}
	bfd = open(img, O_RDWR | O_CLOEXEC);
	if (fd < 0 || bfd < 0 || ioctl(fd, LOOP_SET_FD, bfd))
		n = -1;
	if (bfd >= 0)
		close(bfd);
	if (fd >= 0)
		close(fd);
	return n;
}

static inline void nowait_loop_detach(int n)
{
	char dev[64];
	int fd;

	snprintf(dev, sizeof(dev), "/dev/loop%d", n);
	fd = open(dev, O_RDWR | O_CLOEXEC);
	if (fd >= 0) {
		ioctl(fd, LOOP_CLR_FD, 0);
		close(fd);
	}
}

/*
 * Start a nowait-fused (tools/) of the case's own, showing @src on @mnt, with
 * attributes cached for @attr_timeout seconds and @opts; its pid, or -1.
 * The command returns once the mount answers.
 */
static inline pid_t nowait_fused_start(const char *src, const char *mnt,
				       const char *attr_timeout,
				       const char *opts)
{
	char cmd[512], pidfile[96], line[32];
	pid_t pid;
	FILE *f;
	int st;

	snprintf(pidfile, sizeof(pidfile), "%s.pid", mnt);
	snprintf(cmd, sizeof(cmd),
		 "nowait-fused --attr-timeout %s --pidfile %s %s %s %s",
		 attr_timeout, pidfile, opts, src, mnt);
	st = system(cmd);
	if (!WIFEXITED(st) || WEXITSTATUS(st))
		return -1;
	f = fopen(pidfile, "re");
	if (!f)
		return -1;
	if (!fgets(line, sizeof(line), f))
		line[0] = '\0';
	fclose(f);
	unlink(pidfile);
	pid = (pid_t)atoi(line);
	return pid > 0 ? pid : -1;
}

/*
 * A filesystem of a case's own, for cases that mount it again, freeze it or
 * shut it down: made by @mkfs (a command, before the device) on a loop
 * device over an image of @size bytes in /tmp, and mounted as @type on
 * /tmp/<name>.<pid>. Guest only.
 */
struct nowait_loopfs {
	char image[64];
	char dev[32];
	char dir[64];
	int loop;		/* loop device number, -1 if none */
	bool mounted;
};

/* Returns false with the step that failed in @why. */
static inline bool nowait_loopfs_make(struct nowait_loopfs *fs,
				      const char *name, const char *type,
				      const char *mkfs, off_t size, char *why,
				      size_t whylen)
{
	char cmd[256];
	int fd;

	fs->loop = -1;
	fs->mounted = false;
	snprintf(fs->image, sizeof(fs->image), "/tmp/%s.%d.img", name,
		 (int)getpid());
	snprintf(fs->dir, sizeof(fs->dir), "/tmp/%s.%d", name, (int)getpid());
	fd = open(fs->image, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0 || ftruncate(fd, size)) {
		snprintf(why, whylen, "image %s: %s", fs->image,
			 nowait_errname(errno));
		if (fd >= 0)
			close(fd);
		return false;
	}
	close(fd);
	fs->loop = nowait_loop_attach(fs->image);
	if (fs->loop < 0) {
		snprintf(why, whylen, "loop device: %s", nowait_errname(errno));
		return false;
	}
	snprintf(fs->dev, sizeof(fs->dev), "/dev/loop%d", fs->loop);
	snprintf(cmd, sizeof(cmd), "%s %s >/dev/null 2>&1", mkfs, fs->dev);
	if (system(cmd)) {
		snprintf(why, whylen, "%s failed", cmd);
		return false;
	}
	if (mkdir(fs->dir, 0700) || mount(fs->dev, fs->dir, type, 0, NULL)) {
		snprintf(why, whylen, "mount %s on %s: %s", type, fs->dir,
			 nowait_errname(errno));
		return false;
	}
	fs->mounted = true;
	return true;
}

/* Undo nowait_loopfs_make(), whatever state a failed case left it in. */
static inline void nowait_loopfs_remove(struct nowait_loopfs *fs)
{
	int dfd;

	if (!fs->image[0])	/* never made: the case skipped first */
		return;
	dfd = fs->mounted ? open(fs->dir, O_RDONLY | O_CLOEXEC) : -1;
	if (dfd >= 0) {
		ioctl(dfd, FITHAW, 0);	/* umount would wait for the thaw */
		close(dfd);
	}
	if (fs->mounted && umount(fs->dir))
		umount2(fs->dir, MNT_DETACH);
	rmdir(fs->dir);
	if (fs->loop >= 0)
		nowait_loop_detach(fs->loop);
	unlink(fs->image);
}

/*
 * What a flagged buffered write of cached data in the test guest gets with
 * the series (0: it is written):
 * - xfs writes it: its write path honours IOCB_NOWAIT (iomap), and the
 *   times no longer need a transaction first;
 * - ext4 (delalloc), ext2 (both with 4 KiB blocks) and tmpfs write it
 *   (FOP_BUFFER_WASYNC), and so does overlayfs, which hands the write on to
 *   its upper file, on ext4 or on tmpfs in the guest;
 * - btrfs writes it: it sets the times in memory, and copies on write with
 *   space reserved without flushing (nowait_block_write has its EAGAINs);
 * - vfat and exfat write it (FOP_BUFFER_WASYNC): they map blocks from FAT
 *   blocks in memory and allocate a cluster without sleeping.
 */
static inline int nowait_buffered_write_errno(const struct nowait_fs *fs)
{
	switch (fs->magic) {
	case XFS_SUPER_MAGIC:
	case TMPFS_MAGIC:
	case OVERLAYFS_SUPER_MAGIC:
	case BTRFS_SUPER_MAGIC:
	case EXT4_SUPER_MAGIC:	/* and ext2's */
	case MSDOS_SUPER_MAGIC:
	case EXFAT_SUPER_MAGIC:
		return 0;
	default:
		return EOPNOTSUPP;
	}
}

/* ---- kselftest_harness glue: these expand only inside the tests. ---- */

/*
 * One flagged write that must not sleep, whatever it returns; @flags are
 * added to RWF_NOWAIT, and the result and errno pass through.
 */
#define NOWAIT_PWRITE(fd, buf, len, off, flags) ({			\
	bool slept_;							\
	ssize_t r_ = NOWAIT_MEASURE(slept_, nowait_pwritev2((fd), (buf), \
					(len), (off), RWF_NOWAIT | (flags))); \
	int e_ = errno;							\
	EXPECT_FALSE(slept_)						\
		TH_LOG("an RWF_NOWAIT write of %zu bytes at offset %jd slept (it returned %zd%s%s)", \
		       (size_t)(len), (intmax_t)(off), r_,		\
		       r_ < 0 ? ", " : "", r_ < 0 ? nowait_errname(e_) : ""); \
	errno = e_;							\
	r_;								\
})

/*
 * A flagged write of data in memory, retried 1 ms apart while it gets
 * EAGAIN, with nothing but flagged calls in between: whatever the first
 * tries queued, or a lock someone held for a moment (writeback, the worker
 * that writes the times of an earlier flagged write), has to let a later
 * one through. Any other answer fails the case, and so does a short write
 * unless @how has NOWAIT_RETRY_SHORT_OK: then the next tries write the
 * rest. Never sleeps (NOWAIT_PWRITE), but with NOWAIT_RETRY_WAITS_FOR_IO,
 * for a synchronous O_DIRECT write, which sleeps on its own I/O. @off -1 is
 * the file position (O_APPEND); NOWAIT_RETRY_APPEND adds RWF_APPEND, which
 * appends whatever @off says. Evaluates to the number of EAGAINs.
 */
#define NOWAIT_RETRY_SHORT_OK		1
#define NOWAIT_RETRY_WAITS_FOR_IO	2
#define NOWAIT_RETRY_APPEND		4
#define NOWAIT_RETRY_MAX		2000
#define NOWAIT_WRITE_RETRYING(fd, buf, len, off, how) ({		\
	const unsigned char *b_ = (const unsigned char *)(buf);	\
	size_t l_ = (len);						\
	off_t o_ = (off);						\
	int eagains_ = 0;						\
	while (l_) {							\
		ssize_t r_ = ((how) & NOWAIT_RETRY_WAITS_FOR_IO) ?	\
			nowait_pwritev2((fd), b_, l_, o_, RWF_NOWAIT) :	\
			NOWAIT_PWRITE((fd), b_, l_, o_,			\
				      ((how) & NOWAIT_RETRY_APPEND) ?	\
				      RWF_APPEND : 0);			\
									\
		if (r_ > 0) {						\
			ASSERT_TRUE(r_ == (ssize_t)l_ ||		\
				    ((how) & NOWAIT_RETRY_SHORT_OK))	\
				TH_LOG("a short write: %zd of %zu", r_, l_); \
			ASSERT_GE(l_, (size_t)r_);			\
			b_ += r_;					\
			l_ -= (size_t)r_;				\
			if (o_ != -1)					\
				o_ += r_;				\
			continue;					\
		}							\
		ASSERT_EQ(-1, r_) TH_LOG("wrote nothing, and no error"); \
		ASSERT_EQ(EAGAIN, errno)				\
			TH_LOG("errno %s", nowait_errname(errno));	\
		ASSERT_LT(eagains_, NOWAIT_RETRY_MAX)			\
			TH_LOG("still EAGAIN after %d flagged tries, 1 ms apart", \
			       NOWAIT_RETRY_MAX);			\
		eagains_++;						\
		nowait_msleep(1);					\
	}								\
	eagains_;							\
})

/*
 * The per-filesystem variants. Adding a filesystem is one line here.
 * NOWAIT_FS_VARIANTS: the filesystems whose files carry FMODE_NOWAIT.
 * NOWAIT_FS_VARIANTS_RNOWAIT: those that take RWF_NOWAIT for buffered reads
 * only, through FOP_BUFFER_RNOWAIT. _RW: both, for cases that read and
 * write through the test file. _READ: also the overlay's lower-layer file,
 * for cases that only read it (a write through the overlay copies it up).
 */
#define NOWAIT_FS_VARIANTS(fixture)					\
	FIXTURE_VARIANT_ADD(fixture, ext4)  { .fs = NOWAIT_FS_EXT4 };	\
	FIXTURE_VARIANT_ADD(fixture, xfs)   { .fs = NOWAIT_FS_XFS };	\
	FIXTURE_VARIANT_ADD(fixture, btrfs) { .fs = NOWAIT_FS_BTRFS };

#define NOWAIT_FS_VARIANTS_RNOWAIT(fixture)				\
	FIXTURE_VARIANT_ADD(fixture, tmpfs) { .fs = NOWAIT_FS_TMPFS };	\
	FIXTURE_VARIANT_ADD(fixture, vfat)  { .fs = NOWAIT_FS_VFAT };	\
	FIXTURE_VARIANT_ADD(fixture, exfat) { .fs = NOWAIT_FS_EXFAT };	\
	FIXTURE_VARIANT_ADD(fixture, ext2)  { .fs = NOWAIT_FS_EXT2 };	\
	FIXTURE_VARIANT_ADD(fixture, ovl)   { .fs = NOWAIT_FS_OVL };

#define NOWAIT_FS_VARIANTS_RW(fixture)					\
	NOWAIT_FS_VARIANTS(fixture)					\
	NOWAIT_FS_VARIANTS_RNOWAIT(fixture)

#define NOWAIT_FS_VARIANTS_READ(fixture)				\
	NOWAIT_FS_VARIANTS_RW(fixture)					\
	FIXTURE_VARIANT_ADD(fixture, ovl_lower) { .fs = NOWAIT_FS_OVL_LOWER };

/*
 * Fixture setup: make the file with @size bytes of pattern, or skip the
 * case if the variant's filesystem is absent.
 */
#define NOWAIT_TFILE_SETUP(t, fs, size) do {				\
	char why_[NOWAIT_WHY_MAX];					\
	int r_ = nowait_tfile_open((t), (fs), (size), why_, sizeof(why_)); \
	if (r_ > 0)							\
		SKIP(return, "%.1000s", why_);				\
	ASSERT_EQ(0, r_) TH_LOG("%s", why_);				\
} while (0)

/*
 * Fixture setup: a filesystem of the case's own (nowait_loopfs_make()), or
 * skip the case outside the test guest.
 */
#define NOWAIT_LOOPFS_SETUP(fs, name, type, mkfs, size) do {		\
	char why_[NOWAIT_WHY_MAX];					\
	if (!nowait_in_guest())						\
		SKIP(return, "makes and mounts a loop device: the test guest only"); \
	ASSERT_TRUE(nowait_loopfs_make((fs), (name), (type), (mkfs),	\
				       (size), why_, sizeof(why_)))	\
		TH_LOG("setup: %s", why_);				\
} while (0)

/*
 * Skip from anywhere in a TEST_F case, helpers included: the case's
 * process ends at once, and the harness reports the skip it recorded.
 */
#define NOWAIT_SKIP_CASE(fmt, ...) SKIP(_exit(0), fmt, ##__VA_ARGS__)

/*
 * One RWF_NOWAIT preadv2() that must not sleep, whatever it returns: a hit,
 * a miss (EAGAIN), a short read of the cached prefix, a hole and EOF are
 * all answered without waiting for anything. The caller's buffer must be
 * touched already, or copying into it could fault and sleep. The result
 * and errno pass through for the caller to check.
 */
#define NOWAIT_PREAD(fd, buf, len, off) ({				\
	bool slept_;							\
	ssize_t r_ = NOWAIT_MEASURE(slept_, nowait_preadv2((fd), (buf),	\
					(len), (off), RWF_NOWAIT));	\
	int e_ = errno;							\
	EXPECT_FALSE(slept_)						\
		TH_LOG("an RWF_NOWAIT read of %zu bytes at offset %jd slept (it returned %zd%s%s)", \
		       (size_t)(len), (intmax_t)(off), r_,		\
		       r_ < 0 ? ", " : "",				\
		       r_ < 0 ? nowait_errname(e_) : "");		\
	errno = e_;							\
	r_;								\
})

/*
 * fsync() and close the test file, then drop the page cache, dentries and
 * inodes (drop_caches 3): what a read of the path sees next is what the
 * filesystem wrote, not what memory held. drop_caches evicts only a clean
 * inode, and ext4's fsync() leaves the inode dirty until the flusher comes
 * (its metadata is in the journal by then), so a stat() there may still see
 * the inode in memory; syncfs() first would evict it, but would also write
 * what fsync() left out. What reached the disk after fsync() alone is
 * checked over a real crash by harness/crash.sh.
 */
#define NOWAIT_TFILE_SYNC_AND_EVICT(t) do {				\
	ASSERT_EQ(0, fsync((t)->fd));					\
	ASSERT_EQ(0, close((t)->fd));					\
	if ((t)->wfd == (t)->fd)					\
		(t)->wfd = -1;						\
	(t)->fd = -1;							\
	ASSERT_TRUE(nowait_write_file("/proc/sys/vm/drop_caches", "3"));\
} while (0)

/*
 * Skip a case that needs evictable page cache where there is none. It
 * returns from the calling function, so use it in the TEST_F body itself.
 */
#define NOWAIT_NEED_EVICTABLE(t) do {					\
	if ((t)->fs->cache_pinned)					\
		SKIP(return, "%s pages cannot be evicted by fadvise",	\
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

/* The file holds @seed's pattern in [off, off + len), read into @back. */
#define NOWAIT_ASSERT_FILE_PATTERN(fd, back, len, off, seed) do {	\
	ASSERT_EQ((ssize_t)(len), pread((fd), (back), (len), (off)));	\
	NOWAIT_ASSERT_PATTERN((back), (len), (off), (seed));		\
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
