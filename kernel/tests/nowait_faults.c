// SPDX-License-Identifier: GPL-2.0
/*
 * Systematic fault injection under RWF_NOWAIT reads and writes, and under
 * the work they defer (fs/nowait.c's workers).
 *
 * The caller's paths: for each flagged path of each filesystem (read of
 * cached data, read miss, read of a cached prefix, overwrite of cached data,
 * append, partial write of an evicted page), the 1st, 2nd, ... Nth fault
 * point of the call is failed through /proc/thread-self/fail-nth until the
 * call completes with none failed. The fault points are every slab and page
 * allocation the call makes, sleeping or not (failslab and fail_page_alloc
 * with ignore-gfp-wait, ignore-gfp-highmem and min-order relaxed, below),
 * and every bio it submits to the filesystem's device (its make-it-fail).
 * Each outcome must be one a caller is promised: the data (for a write: the
 * bytes, the size and a new mtime, as a reread shows), a short count with
 * exactly that prefix done, or EAGAIN or ENOMEM with nothing changed, not
 * even the mtime.
 *
 * The deferred workers: their allocations run in kworkers, whose fail-nth
 * the test writes too (/proc/PID/task/PID/fail-nth, as root): every unbound
 * kworker (kworker/u*, the pool fs/nowait.c's WQ_UNBOUND queue runs on) is
 * armed with the same N just before a flagged call queues its item, and
 * disarmed once the item's effect shows or a window passed. That is
 * systematic for the worker that runs the item, but not exclusive: any other
 * unbound work running in the window (the loop device's, writeback) counts
 * and fails its Nth fault point too, and a kworker created in the window is
 * not armed. N goes up until a window ends with no failure injected. Then the
 * blocking retry (or fsync) must see the file whole, as if the worker had
 * never run.
 *
 * At the end of each filesystem's case the filesystem is unmounted (a leaked
 * work item would keep umount waiting for ever: the alarm catches it),
 * checked by its fsck without repairing (ext4, ext2, xfs, btrfs, vfat,
 * exfat), mounted again and the file reread; with kmemleak (the debug
 * kernel) and NOWAIT_FAULTS_KMEMLEAK=1 (make faults-debug), a scan must find
 * nothing new. A kernel splat fails the job
 * (harness/boot.sh). Each path prints one line "# faults FS PATH ..." with
 * its counts, which harness/faults.sh turns into a table and JSON.
 *
 * Guest only: it writes the kernel's fault-injection knobs and makes loop
 * devices. NOWAIT_FAULTS_NTH=N runs only fail-nth N (with the injection's
 * stack trace in the console): the reproducer of one outcome.
 */
#include "kselftest_harness.h"
#include "nowait_test.h"

#include <dirent.h>
#include <sys/mount.h>

#define FILE_PAGES	16
/* A call with more fault points than this fails the case: it never ended */
#define CALL_NTH_MAX	400
/* Worker windows per path: background work may always be injected into */
#define WORKER_NTH_MAX	48
/* How long a worker window waits for the item's effect */
#define WINDOW_MS	500
/* The deferred times are logged 100 ms after the write (fs/inode.c) */
#define TIMES_WINDOW_MS	400
#define OLD_SEED	11
#define NEW_SEED	12
#define DEBUGFS		"/sys/kernel/debug"
#define KMEMLEAK	DEBUGFS "/kmemleak"
#define KMEMLEAK_PRIMED	"/tmp/nowait-faults.kmemleak"
/* The injected failures logged in full per path, beyond them counted */
#define BAD_LOGGED	5

struct fault_fs {
	const char *type;	/* of the filesystem under the file */
	const char *mkfs;	/* NULL: tmpfs, mounted of its own */
	int mb;			/* the loop device's size */
	const char *fsck;	/* checks without repairing; NULL: none */
	bool overlay;		/* the file is reached through an overlay on it */
	/*
	 * A network filesystem the guest mounted (harness/guest/netfs.sh):
	 * its read paths, in the caller only. Its client and server run
	 * unbound work too, so a worker window would fail their RPCs, not
	 * the series' items; it has no device to fsck.
	 */
	struct nowait_fs net;
};

FIXTURE(faults) {
	struct nowait_loopfs fs;
	char tmpfs_dir[64];	/* the tmpfs variant's own mount */
	char ovl_dir[96];	/* the overlay's mount, on fs */
	char dir[96];		/* where the file lives, as the test sees it */
	char path[160];
	int fd;
	int nth_fd;		/* /proc/thread-self/fail-nth, opened once */
	unsigned int only_nth;	/* NOWAIT_FAULTS_NTH, 0 for all */
	bool kmemleak;
	bool pinned;		/* tmpfs: its pages cannot be evicted */
	size_t pg;
	unsigned char *buf, *back;
	/* what the last worker path wrote, for the reread after umount */
	off_t last_off;
	size_t last_len;
};

FIXTURE_VARIANT(faults) {
	struct fault_fs fs;
};

FIXTURE_VARIANT_ADD(faults, ext4) {
	.fs = { "ext4", "mkfs.ext4 -q -F -b 4096", 64, "e2fsck -fn" },
};
FIXTURE_VARIANT_ADD(faults, xfs) {
	.fs = { "xfs", "mkfs.xfs -q -f", 320, "xfs_repair -n" },
};
FIXTURE_VARIANT_ADD(faults, btrfs) {
	.fs = { "btrfs", "mkfs.btrfs -q -f", 160, "btrfs check --readonly" },
};
FIXTURE_VARIANT_ADD(faults, ext2) {
	.fs = { "ext2", "mkfs.ext2 -q -F -b 4096", 64, "e2fsck -fn" },
};
FIXTURE_VARIANT_ADD(faults, vfat) {
	.fs = { "vfat", "mkfs.vfat", 64, "fsck.vfat -n" },
};
FIXTURE_VARIANT_ADD(faults, exfat) {
	.fs = { "exfat", "mkfs.exfat", 64, "fsck.exfat -n" },
};
FIXTURE_VARIANT_ADD(faults, tmpfs) {
	.fs = { "tmpfs", NULL, 0, NULL },
};
FIXTURE_VARIANT_ADD(faults, nfs4) {
	.fs = { "nfs4", .net = NOWAIT_FS_("nfs4", "nfs4", NFS_SUPER_MAGIC) },
};
FIXTURE_VARIANT_ADD(faults, fuse) {
	.fs = { "fuse", .net = NOWAIT_FS_("fuse", "fuse.nowait-fused", 0x65735546) },
};
/* Lower and upper layer on one ext4: its fsck checks what the overlay wrote */
FIXTURE_VARIANT_ADD(faults, ovl) {
	.fs = { "ext4", "mkfs.ext4 -q -F -b 4096", 64, "e2fsck -fn", true },
};

/* ---- the knobs ---- */

/*
 * Every allocation counts, not only the nonblocking ones (the defaults
 * ignore sleeping allocations, highmem ones, i.e. the page cache's folios,
 * and order 0 pages): a flagged call may answer ENOMEM wherever it
 * allocates. probability stays 0, so only fail-nth injects; verbose 0 keeps
 * thousands of stack traces off the console, 2 shows the one of a
 * reproducer. Returns false if failslab is missing.
 */
static bool fault_knobs(bool verbose)
{
	static const char *const slab[][2] = {
		{ "failslab/ignore-gfp-wait", "N" },
		{ "failslab/probability", "0" },
	};
	static const char *const page[][2] = {
		{ "fail_page_alloc/ignore-gfp-wait", "N" },
		{ "fail_page_alloc/ignore-gfp-highmem", "N" },
		{ "fail_page_alloc/min-order", "0" },
		{ "fail_page_alloc/probability", "0" },
	};
	static const char *const attrs[] = {
		"failslab", "fail_page_alloc", "fail_make_request",
	};
	char path[128];

	if (access(DEBUGFS "/failslab", F_OK))
		mount("debugfs", DEBUGFS, "debugfs", 0, NULL);
	for (size_t i = 0; i < sizeof(slab) / sizeof(slab[0]); i++) {
		snprintf(path, sizeof(path), DEBUGFS "/%s", slab[i][0]);
		if (!nowait_write_file(path, slab[i][1]))
			return false;
	}
	/* CONFIG_FAIL_PAGE_ALLOC: slab only without it (the table says so) */
	for (size_t i = 0; i < sizeof(page) / sizeof(page[0]); i++) {
		snprintf(path, sizeof(path), DEBUGFS "/%s", page[i][0]);
		nowait_write_file(path, page[i][1]);
	}
	for (size_t i = 0; i < sizeof(attrs) / sizeof(attrs[0]); i++) {
		snprintf(path, sizeof(path), DEBUGFS "/%s/verbose", attrs[i]);
		nowait_write_file(path, verbose ? "2" : "0");
	}
	return true;
}

/*
 * Put back the boot defaults of the knobs fault_knobs() changed, for the
 * test programs after this one (the crash test's failslab wants sleeping
 * allocations ignored).
 */
static void fault_knobs_restore(void)
{
	static const char *const defaults[][2] = {
		{ "failslab/ignore-gfp-wait", "Y" },
		{ "fail_page_alloc/ignore-gfp-wait", "Y" },
		{ "fail_page_alloc/ignore-gfp-highmem", "Y" },
		{ "fail_page_alloc/min-order", "1" },
		{ "failslab/verbose", "2" },
		{ "fail_page_alloc/verbose", "2" },
		{ "fail_make_request/verbose", "2" },
	};
	char path[128];

	for (size_t i = 0; i < sizeof(defaults) / sizeof(defaults[0]); i++) {
		snprintf(path, sizeof(path), DEBUGFS "/%s", defaults[i][0]);
		nowait_write_file(path, defaults[i][1]);
	}
}

/* The kinds of fault point there are, for the table. */
static const char *fault_kinds(void)
{
	bool page = !access(DEBUGFS "/fail_page_alloc", F_OK);
	bool req = !access(DEBUGFS "/fail_make_request", F_OK);

	return page && req ? "slab+page+bio" : page ? "slab+page" : req ? "slab+bio" : "slab";
}

/* make-it-fail of the filesystem's device: its bios count as fault points */
static void device_faults(FIXTURE_DATA(faults) *self, bool on)
{
	char path[96];

	if (self->fs.loop < 0)
		return;
	snprintf(path, sizeof(path), "/sys/block/loop%d/make-it-fail", self->fs.loop);
	nowait_write_file(path, on ? "1" : "0");
}

static void arm(int fd, unsigned int n)
{
	char v[16];
	int len = snprintf(v, sizeof(v), "%u", n);

	if (pwrite(fd, v, (size_t)len, 0) != len)
		abort();	/* a fault-injection kernel has the file */
}

/* Whether the armed failure was injected; disarms. */
static bool disarm(int fd)
{
	char v[16] = "";

	if (pread(fd, v, sizeof(v) - 1, 0) <= 0)
		abort();
	arm(fd, 0);
	return atoi(v) == 0;
}

/* ---- kmemleak ---- */

/* Scan; the number of leak reports it has, first lines in @first. */
static int kmemleak_scan(char *first, size_t n)
{
	char line[256];
	size_t used = 0;
	int leaks = 0;
	FILE *f;

	first[0] = '\0';
	/* Objects younger than 5 s are not reported: let the last ones age */
	nowait_msleep(5500);
	if (!nowait_write_file(KMEMLEAK, "scan"))
		return -1;
	f = fopen(KMEMLEAK, "re");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		if (strstr(line, "unreferenced object"))
			leaks++;
		if (leaks && leaks <= 2 && used + strlen(line) < n) {
			memcpy(first + used, line, strlen(line) + 1);
			used += strlen(line);
		}
	}
	fclose(f);
	return leaks;
}

/* ---- the file ---- */

static void fresh_file(struct __test_metadata *_metadata, FIXTURE_DATA(faults) *self)
{
	if (self->fd >= 0)
		close(self->fd);
	self->fd = open(self->path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	ASSERT_LE(0, self->fd) TH_LOG("open %s: %s", self->path, nowait_errname(errno));
	ASSERT_EQ(0, nowait_write_pattern(self->fd, 0, FILE_PAGES * self->pg, OLD_SEED));
	ASSERT_EQ(0, fsync(self->fd));
}

/* The file as a writer left it: [off, off + n) new, the rest old, @size long. */
static ssize_t file_differs(FIXTURE_DATA(faults) *self, off_t off, ssize_t n, off_t size)
{
	struct stat st;
	ssize_t got;

	if (fstat(self->fd, &st) || st.st_size != size)
		return -2;
	got = pread(self->fd, self->back, (size_t)size, 0);
	if (got != size)
		return -3;
	for (off_t i = 0; i < size; i++) {
		uint32_t seed = (n > 0 && i >= off && i < off + n) ? NEW_SEED : OLD_SEED;

		if (self->back[i] != nowait_pattern_byte((uint64_t)i, seed))
			return (ssize_t)i;
	}
	return -1;
}

static bool evict(FIXTURE_DATA(faults) *self, char *why, size_t n)
{
	if (self->pinned) {
		snprintf(why, n, "tmpfs pages cannot be evicted");
		return false;
	}
	return nowait_evict(self->fd, why, n);
}

/* Pages [0, keep) cached, the rest evicted. */
static bool cache_prefix(FIXTURE_DATA(faults) *self, size_t keep, char *why, size_t n)
{
	char map[FILE_PAGES + 1], want[FILE_PAGES + 1];

	if (!evict(self, why, n))
		return false;
	if (pread(self->fd, self->back, keep * self->pg, 0) != (ssize_t)(keep * self->pg))
		return false;
	/* A blocking read starts readahead past what it asked for */
	for (int i = 0; i < 20; i++) {
		posix_fadvise(self->fd, (off_t)(keep * self->pg), 0, POSIX_FADV_DONTNEED);
		nowait_residency(self->fd, map, sizeof(map));
		memset(want, '.', FILE_PAGES);
		memset(want, 'R', keep);
		want[FILE_PAGES] = '\0';
		if (!strcmp(map, want))
			return true;
		nowait_msleep(NOWAIT_SETTLE_MS);
	}
	snprintf(why, n, "residency %s, want %zu cached pages first", map, keep);
	return false;
}

/* ---- the paths ---- */

/*
 * WRITE_APPEND_PREALLOC appends into space fallocate(FALLOC_FL_KEEP_SIZE)
 * reserved past EOF, as a log file's writer does: where a plain flagged
 * append only queues work and fails (ext4 looks up the hole past EOF in a
 * worker, and a truncate forgets it again), this one is mapped from memory
 * and goes through, so its fault points are those of the write itself.
 */
enum path {
	READ_HIT, READ_MISS, READ_PREFIX,
	WRITE_CACHED, WRITE_APPEND, WRITE_APPEND_PREALLOC, WRITE_PARTIAL,
};

static const char *const path_name[] = {
	"read_hit", "read_miss", "read_prefix",
	"write_cached", "write_append", "write_append_prealloc", "write_partial",
};

/* The paths that start from evicted pages, which tmpfs cannot have */
static bool needs_eviction(enum path p)
{
	return p == READ_MISS || p == READ_PREFIX || p == WRITE_PARTIAL;
}

/* Where and how much each path reads or writes */
static void path_range(enum path p, size_t pg, off_t *off, size_t *len)
{
	switch (p) {
	default:
	case READ_HIT:		*off = 2 * pg; *len = 4 * pg; break;
	case READ_MISS:		*off = 4 * pg; *len = 4 * pg; break;
	case READ_PREFIX:	*off = 0; *len = 4 * pg; break;
	case WRITE_CACHED:	*off = 4 * pg; *len = 2 * pg; break;
	case WRITE_APPEND:
	case WRITE_APPEND_PREALLOC:	*off = FILE_PAGES * pg; *len = 2 * pg; break;
	case WRITE_PARTIAL:	*off = 5 * pg + 10; *len = 100; break;
	}
}

static bool is_write(enum path p)
{
	return p >= WRITE_CACHED;
}

/*
 * Put the file into the state the path starts from: its old content, the
 * page cache as the path wants it, and an mtime a day back. False with the
 * reason in @why when the filesystem cannot (tmpfs evicts nothing).
 */
static bool path_setup(FIXTURE_DATA(faults) *self, enum path p, struct timespec *mtime,
		       char *why, size_t n)
{
	struct timespec ts[2] = { { 0, UTIME_OMIT }, { 0, 0 } };
	bool ok = true;

	if (ftruncate(self->fd, FILE_PAGES * self->pg) ||
	    nowait_write_pattern(self->fd, 0, FILE_PAGES * self->pg, OLD_SEED)) {
		snprintf(why, n, "rewrite: %s", nowait_errname(errno));
		return false;
	}
	clock_gettime(CLOCK_REALTIME, &ts[1]);
	ts[1].tv_sec -= 24 * 3600;
	ts[1].tv_nsec = 0;
	if (futimens(self->fd, ts) || fsync(self->fd)) {
		snprintf(why, n, "futimens/fsync: %s", nowait_errname(errno));
		return false;
	}
	*mtime = ts[1];
	switch (p) {
	case READ_MISS:
	case WRITE_PARTIAL:
		ok = evict(self, why, n);
		break;
	case READ_PREFIX:
		ok = cache_prefix(self, 2, why, n);
		break;
	case WRITE_APPEND_PREALLOC:
		if (fallocate(self->fd, FALLOC_FL_KEEP_SIZE, FILE_PAGES * self->pg,
			      4 * self->pg)) {
			snprintf(why, n, "fallocate(KEEP_SIZE): %s", nowait_errname(errno));
			return false;
		}
		if (futimens(self->fd, ts)) {
			snprintf(why, n, "futimens: %s", nowait_errname(errno));
			return false;
		}
		/* the futimens() puts back the mtime fallocate() may have moved */
		break;
	default:	/* the whole file cached: it was just written */
		if (pread(self->fd, self->back, FILE_PAGES * self->pg, 0) !=
		    (ssize_t)(FILE_PAGES * self->pg))
			ok = false;
		break;
	}
	return ok;
}

struct tally {
	unsigned int calls, injected, bad;
	unsigned int data, shortc, eagain, enomem;
	/* refused, yet the mtime moved: counted apart, see judge() */
	unsigned int mtime_moved;
};

/*
 * Judge one outcome of path @p; returns NULL if it is one a caller is
 * promised, else what is wrong. @r and @e are the call's result and errno.
 */
static const char *judge(FIXTURE_DATA(faults) *self, enum path p, ssize_t r, int e,
			 const struct timespec *old_mtime, struct tally *t)
{
	static char what[256];
	off_t off;
	size_t len;
	struct stat st;
	ssize_t bad;

	path_range(p, self->pg, &off, &len);
	if (r < 0) {
		if (e != EAGAIN && e != ENOMEM) {
			snprintf(what, sizeof(what), "errno %s", nowait_errname(e));
			return what;
		}
		(*(e == EAGAIN ? &t->eagain : &t->enomem))++;
	} else if (r == 0 || (size_t)r > len) {
		snprintf(what, sizeof(what), "returned %zd of %zu", r, len);
		return what;
	} else {
		(*((size_t)r == len ? &t->data : &t->shortc))++;
	}
	if (!is_write(p)) {
		/* the buffer: the file's bytes for what was read, untouched past it */
		bad = r > 0 ? nowait_mismatch(self->buf, (size_t)r, (uint64_t)off, OLD_SEED) : -1;
		for (size_t i = r > 0 ? (size_t)r : 0; bad < 0 && i < len; i++)
			if (self->buf[i] != 0xa5)
				bad = (ssize_t)i;
		if (bad >= 0) {
			snprintf(what, sizeof(what), "buffer byte %zd wrong after %zd", bad, r);
			return what;
		}
		return NULL;
	}
	/* a write: exactly what it reports written, and the mtime with it */
	bad = file_differs(self, off, r, (p == WRITE_APPEND || p == WRITE_APPEND_PREALLOC) && r > 0 ? off + r :
			   (off_t)(FILE_PAGES * self->pg));
	if (bad != -1) {
		snprintf(what, sizeof(what), "after a write that returned %zd%s%s: %s %zd", r,
			 r < 0 ? " " : "", r < 0 ? nowait_errname(e) : "",
			 bad == -2 ? "wrong size" : bad == -3 ? "short reread" : "wrong byte at",
			 bad);
		return what;
	}
	if (fstat(self->fd, &st)) {
		snprintf(what, sizeof(what), "fstat: %s", nowait_errname(errno));
		return what;
	}
	if (r > 0 && !nowait_ts_after(st.st_mtim, *old_mtime)) {
		snprintf(what, sizeof(what), "wrote %zd bytes, mtime unchanged", r);
		return what;
	}
	/*
	 * A refused write whose mtime moved changed no byte: file_modified()
	 * runs before ->write_begin(), which may still refuse, in the blocking
	 * path too (a write that fails with ENOSPC or EFAULT). Counted and
	 * reported apart, and the first one logged, but not a bad outcome: the
	 * caller's retry sets the mtime anyway.
	 */
	if (r < 0 && !nowait_ts_equal(st.st_mtim, *old_mtime) && !t->mtime_moved++)
		printf("# faults: refused (%s), yet the mtime moved (first of the path)\n",
		       nowait_errname(e));
	return NULL;
}

static void report(const char *fs, const char *path, const char *phase, const struct tally *t,
		   const char *note)
{
	printf("# faults %s %s %s calls=%u injected=%u bad=%u data=%u short=%u eagain=%u enomem=%u mtime_moved=%u%s%s\n",
	       fs, path, phase, t->calls, t->injected, t->bad, t->data, t->shortc, t->eagain,
	       t->enomem, t->mtime_moved, note ? " note=" : "", note ? note : "");
	fflush(stdout);
}

static const char *variant_name(const FIXTURE_VARIANT(faults) *variant)
{
	return variant->fs.overlay ? "ovl" : variant->fs.type;
}

/*
 * The caller's path @p: fail its 1st, 2nd, ... fault point until a call
 * injects none. Returns the bad outcomes.
 */
static unsigned int caller_path(struct __test_metadata *_metadata, FIXTURE_DATA(faults) *self,
				const FIXTURE_VARIANT(faults) *variant, enum path p)
{
	struct tally t = { 0 };
	struct timespec mtime;
	char why[NOWAIT_WHY_MAX];
	off_t off;
	size_t len;
	unsigned int n = self->only_nth ? self->only_nth : 1;

	path_range(p, self->pg, &off, &len);
	printf("# faults: %s %s: caller\n", variant_name(variant), path_name[p]);
	fflush(stdout);
	if (self->pinned && needs_eviction(p)) {
		report(variant_name(variant), path_name[p], "caller", &t, "n/a(tmpfs-pinned)");
		return 0;
	}
	if (p == WRITE_APPEND_PREALLOC &&
	    fallocate(self->fd, FALLOC_FL_KEEP_SIZE, FILE_PAGES * self->pg, self->pg) &&
	    errno == EOPNOTSUPP) {
		report(variant_name(variant), path_name[p], "caller", &t, "n/a(no-fallocate)");
		return 0;
	}
	for (;; n++) {
		const char *wrong;
		ssize_t r;
		bool injected;
		int e;

		if (!path_setup(self, p, &mtime, why, sizeof(why))) {
			EXPECT_TRUE(false) TH_LOG("%s: setup: %s", path_name[p], why);
			return 1;
		}
		nowait_fill(self->buf, len, (uint64_t)off, is_write(p) ? NEW_SEED : 0);
		if (!is_write(p))
			memset(self->buf, 0xa5, len);
		device_faults(self, true);
		arm(self->nth_fd, n);
		r = is_write(p) ? nowait_pwritev2(self->fd, self->buf, len, off, RWF_NOWAIT) :
				  nowait_preadv2(self->fd, self->buf, len, off, RWF_NOWAIT);
		e = errno;
		injected = disarm(self->nth_fd);
		device_faults(self, false);
		t.calls++;
		t.injected += injected;
		wrong = judge(self, p, r, e, &mtime, &t);
		if (wrong) {
			t.bad++;
			if (t.bad <= BAD_LOGGED)
				TH_LOG("%s %s fail-nth %u%s: %s", variant_name(variant), path_name[p],
				       n, injected ? "" : " (nothing injected)", wrong);
		}
		if (!injected || self->only_nth)
			break;
		if (n == CALL_NTH_MAX) {
			t.bad++;
			TH_LOG("%s %s: still a fault point at fail-nth %u", variant_name(variant),
			       path_name[p], n);
			break;
		}
	}
	report(variant_name(variant), path_name[p], "caller", &t, NULL);
	return t.bad;
}

/* ---- the workers ---- */

static bool cycle_mount(FIXTURE_DATA(faults) *self, const FIXTURE_VARIANT(faults) *variant,
			bool crash, bool fsck, char *why, size_t n);
static bool can_crash(const FIXTURE_VARIANT(faults) *variant);

/*
 * After fsync(): the write's mtime is there, and, where the filesystem can
 * be crashed (ext4, xfs, the overlay's ext4), it is still there with the
 * data after a crash and a mount: whatever the worker that was to log the
 * times did, fsync() logged them. NULL, or what is wrong.
 */
static const char *durable(FIXTURE_DATA(faults) *self, const FIXTURE_VARIANT(faults) *variant,
			   const struct timespec *old_mtime, off_t off, size_t len)
{
	static char what[NOWAIT_WHY_MAX];
	struct stat st, back = { 0 };
	bool data_ok;

	if (fstat(self->fd, &st) || !nowait_ts_after(st.st_mtim, *old_mtime))
		return "the mtime of the write is lost";
	if (!can_crash(variant))
		return NULL;
	if (!cycle_mount(self, variant, true, false, what, sizeof(what)))
		return what;
	data_ok = file_differs(self, off, (ssize_t)len, FILE_PAGES * self->pg) == -1;
	if (fstat(self->fd, &back) || !nowait_ts_equal(st.st_mtim, back.st_mtim) || !data_ok) {
		snprintf(what, sizeof(what),
			 "after a crash the mtime is %jd.%09ld, fsync() had %jd.%09ld; the data %s",
			 (intmax_t)back.st_mtim.tv_sec, back.st_mtim.tv_nsec,
			 (intmax_t)st.st_mtim.tv_sec, st.st_mtim.tv_nsec,
			 data_ok ? "is there" : "is not what fsync() made durable");
		return what;
	}
	return NULL;
}

#define MAX_KWORKERS	256

/* Arm (n > 0) or disarm and count (n == 0) every unbound kworker. */
static unsigned int kworkers(pid_t *pids, int *npids, unsigned int n)
{
	unsigned int injected = 0;
	char path[96], comm[64], v[16];

	if (n) {
		DIR *d = opendir("/proc");
		struct dirent *de;

		*npids = 0;
		while (d && (de = readdir(d)) && *npids < MAX_KWORKERS) {
			pid_t pid = (pid_t)atoi(de->d_name);
			FILE *f;

			if (pid <= 0)
				continue;
			snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
			f = fopen(path, "re");
			if (!f)
				continue;
			if (fgets(comm, sizeof(comm), f) && !strncmp(comm, "kworker/u", 9))
				pids[(*npids)++] = pid;
			fclose(f);
		}
		if (d)
			closedir(d);
	}
	for (int i = 0; i < *npids; i++) {
		int fd;

		snprintf(path, sizeof(path), "/proc/%d/task/%d/fail-nth", (int)pids[i],
			 (int)pids[i]);
		fd = open(path, O_RDWR | O_CLOEXEC);
		if (fd < 0)
			continue;	/* it exited */
		if (n) {
			arm(fd, n);
		} else {
			memset(v, 0, sizeof(v));
			if (pread(fd, v, sizeof(v) - 1, 0) > 0 && atoi(v) == 0)
				injected++;
			arm(fd, 0);
		}
		close(fd);
	}
	return injected;
}

/*
 * A path whose flagged call queues work: the read of a miss (readahead),
 * the partial write of an evicted page (the folio's read), the overwrite of
 * cached data (the times' log). For N = 1, 2, ... the unbound kworkers'
 * Nth fault point fails while the item runs; then the blocking retry, or
 * fsync, must give or keep the file's data whole, and an overwrite must
 * keep its mtime.
 */
static unsigned int worker_path(struct __test_metadata *_metadata, FIXTURE_DATA(faults) *self,
				const FIXTURE_VARIANT(faults) *variant, enum path p)
{
	static pid_t pids[MAX_KWORKERS];
	struct tally t = { 0 };
	struct timespec mtime;
	char why[NOWAIT_WHY_MAX], map[FILE_PAGES + 1];
	unsigned int n = self->only_nth ? self->only_nth : 1;
	int npids = 0;
	off_t off;
	size_t len;

	path_range(p, self->pg, &off, &len);
	printf("# faults: %s %s: worker\n", variant_name(variant), path_name[p]);
	fflush(stdout);
	if (self->pinned && needs_eviction(p)) {
		report(variant_name(variant), path_name[p], "worker", &t, "n/a(tmpfs-pinned)");
		return 0;
	}
	for (;; n++) {
		unsigned int injected;
		const char *wrong = NULL;
		size_t first = (size_t)off / self->pg;
		ssize_t r;
		int e;

		if (!path_setup(self, p, &mtime, why, sizeof(why))) {
			EXPECT_TRUE(false) TH_LOG("%s: setup: %s", path_name[p], why);
			return 1;
		}
		nowait_fill(self->buf, len, (uint64_t)off, is_write(p) ? NEW_SEED : 0);
		kworkers(pids, &npids, n);
		r = is_write(p) ? nowait_pwritev2(self->fd, self->buf, len, off, RWF_NOWAIT) :
				  nowait_preadv2(self->fd, self->buf, len, off, RWF_NOWAIT);
		e = errno;
		if (p == WRITE_CACHED)
			nowait_msleep(TIMES_WINDOW_MS);
		else	/* the page the worker reads in, or the window's end */
			nowait_wait_resident(self->fd, first, first, WINDOW_MS, map, sizeof(map));
		injected = kworkers(pids, &npids, 0);
		t.calls++;
		t.injected += injected;
		/* what the flagged call itself returned (nothing was armed in it) */
		if (r < 0 && e != EAGAIN) {
			wrong = "the flagged call failed with an errno other than EAGAIN";
		} else if (p == READ_MISS) {
			/* the blocking retry reads what the worker did not */
			memset(self->buf, 0, len);
			if (pread(self->fd, self->buf, len, off) != (ssize_t)len ||
			    nowait_mismatch(self->buf, len, (uint64_t)off, OLD_SEED) != -1)
				wrong = "the blocking retry did not read the file's data";
			else
				t.data++;
		} else {
			/* the write, retried blocking if it was refused */
			if (r < 0 && pwrite(self->fd, self->buf, len, off) != (ssize_t)len)
				wrong = "the blocking retry of the write failed";
			else if (r >= 0 && (size_t)r < len &&
				 pwrite(self->fd, self->buf + r, len - (size_t)r, off + r) !=
					 (ssize_t)(len - (size_t)r))
				wrong = "the blocking write of the rest failed";
			else if (fsync(self->fd))
				wrong = "fsync failed";
			else if (file_differs(self, off, (ssize_t)len, FILE_PAGES * self->pg) != -1)
				wrong = "the file is not what was written";
			else
				wrong = durable(self, variant, &mtime, off, len);
			if (!wrong)
				t.data++;
			if (r < 0)
				t.eagain++;
			self->last_off = off;
			self->last_len = len;
		}
		if (wrong) {
			t.bad++;
			if (t.bad <= BAD_LOGGED)
				TH_LOG("%s %s worker fail-nth %u (%u injected; the call returned %zd%s%s): %s",
				       variant_name(variant), path_name[p], n, injected, r,
				       r < 0 ? " " : "", r < 0 ? nowait_errname(e) : "", wrong);
		}
		if (!injected || self->only_nth || n == WORKER_NTH_MAX)
			break;
	}
	report(variant_name(variant), path_name[p], "worker", &t,
	       n == WORKER_NTH_MAX && !self->only_nth ? "capped" : NULL);
	return t.bad;
}

/* ---- setup, and the end of each case ---- */

FIXTURE_SETUP(faults)
{
	const char *only = getenv("NOWAIT_FAULTS_NTH");
	char why[NOWAIT_WHY_MAX];

	self->fd = -1;
	self->nth_fd = -1;
	self->fs.image[0] = '\0';
	self->fs.loop = -1;
	self->tmpfs_dir[0] = self->ovl_dir[0] = self->path[0] = '\0';
	self->pg = nowait_page();
	self->only_nth = only ? (unsigned int)atoi(only) : 0;
	if (!nowait_in_guest())
		SKIP(return, "writes the kernel's fault-injection knobs: the test guest only");
	if (!fault_knobs(self->only_nth != 0))
		SKIP(return, "no failslab in debugfs (CONFIG_FAILSLAB, CONFIG_FAULT_INJECTION_DEBUG_FS)");
	self->nth_fd = open("/proc/thread-self/fail-nth", O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, self->nth_fd) TH_LOG("fail-nth: %s", nowait_errname(errno));
	/*
	 * A scan takes tens of seconds on the debug kernel under TCG: only the
	 * faults job asks for them (make faults-debug), not check-debug, whose
	 * programs have 300 s each.
	 */
	self->kmemleak = !access(KMEMLEAK, F_OK) && getenv("NOWAIT_FAULTS_KMEMLEAK");
	self->buf = malloc(FILE_PAGES * self->pg);
	self->back = malloc((FILE_PAGES + 2) * self->pg);
	ASSERT_TRUE(self->buf && self->back);

	if (variant->fs.net.dir) {
		if (!nowait_fs_check(&variant->fs.net, self->dir, sizeof(self->dir), why,
				     sizeof(why)))
			SKIP(return, "%.1000s", why);
	} else if (!variant->fs.mkfs) {
		snprintf(self->tmpfs_dir, sizeof(self->tmpfs_dir), "/tmp/faults-tmpfs.%d", getpid());
		ASSERT_EQ(0, mkdir(self->tmpfs_dir, 0700));
		ASSERT_EQ(0, mount("tmpfs", self->tmpfs_dir, "tmpfs", 0, "size=64m"))
			TH_LOG("mount tmpfs: %s", nowait_errname(errno));
		snprintf(self->dir, sizeof(self->dir), "%s", self->tmpfs_dir);
		self->pinned = true;
	} else {
		NOWAIT_LOOPFS_SETUP(&self->fs, "faults", variant->fs.type, variant->fs.mkfs,
				    (off_t)variant->fs.mb << 20);
		snprintf(self->dir, sizeof(self->dir), "%s", self->fs.dir);
	}
	if (variant->fs.overlay) {
		char opts[512];

		snprintf(self->ovl_dir, sizeof(self->ovl_dir), "/tmp/faults-ovl.%d", getpid());
		snprintf(opts, sizeof(opts), "lowerdir=%s/l,upperdir=%s/u,workdir=%s/w",
			 self->fs.dir, self->fs.dir, self->fs.dir);
		ASSERT_EQ(0, mkdir(self->ovl_dir, 0700));
		for (const char *sub = "luw"; *sub; sub++) {
			snprintf(why, sizeof(why), "%s/%c", self->fs.dir, *sub);
			ASSERT_EQ(0, mkdir(why, 0755));
		}
		ASSERT_EQ(0, mount("overlay", self->ovl_dir, "overlay", 0, opts))
			TH_LOG("mount overlay: %s", nowait_errname(errno));
		snprintf(self->dir, sizeof(self->dir), "%s", self->ovl_dir);
	}
	snprintf(self->path, sizeof(self->path), "%s/faults.%d", self->dir, getpid());
	fresh_file(_metadata, self);
	if (self->kmemleak && access(KMEMLEAK_PRIMED, F_OK)) {
		/*
		 * What leaked before the first case is not its doing; each case
		 * clears what its own scan found, so the next starts clean.
		 */
		kmemleak_scan(why, sizeof(why));
		nowait_write_file(KMEMLEAK, "clear");
		close(open(KMEMLEAK_PRIMED, O_WRONLY | O_CREAT | O_CLOEXEC, 0600));
	}
	alarm(0);
}

FIXTURE_TEARDOWN_PARENT(faults)
{
	fault_knobs_restore();
	if (variant->fs.net.dir && self->path[0])
		unlink(self->path);
	if (self->ovl_dir[0]) {
		umount2(self->ovl_dir, MNT_DETACH);
		rmdir(self->ovl_dir);
	}
	if (self->tmpfs_dir[0]) {
		umount2(self->tmpfs_dir, MNT_DETACH);
		rmdir(self->tmpfs_dir);
	}
	nowait_loopfs_remove(&self->fs);
}

/*
 * ext4's EXT4_IOC_SHUTDOWN and xfs's XFS_IOC_GOINGDOWN are one ioctl:
 * without flushing the log, the filesystem stops as a power cut would stop
 * it, and the next mount sees only what was durable.
 */
#define FAULTS_IOC_SHUTDOWN		_IOR('X', 125, __u32)
#define FAULTS_SHUTDOWN_NOLOGFLUSH	0x2

static bool can_crash(const FIXTURE_VARIANT(faults) *variant)
{
	return variant->fs.mkfs && (!strcmp(variant->fs.type, "ext4") ||
				    !strcmp(variant->fs.type, "xfs"));
}

/*
 * Close the file, unmount (umount waits for every running item of the
 * filesystem: the alarm catches one that never ends), optionally crash it
 * first (@crash) or fsck it in between (@fsck), mount again and reopen the
 * file. False with the step in @why.
 */
static bool cycle_mount(FIXTURE_DATA(faults) *self, const FIXTURE_VARIANT(faults) *variant,
			bool crash, bool fsck, char *why, size_t n)
{
	char cmd[256];
	__u32 how = FAULTS_SHUTDOWN_NOLOGFLUSH;
	int rc, dfd;

	close(self->fd);
	self->fd = -1;
	if (crash) {
		dfd = open(self->fs.dir, O_RDONLY | O_CLOEXEC);
		if (dfd < 0 || ioctl(dfd, FAULTS_IOC_SHUTDOWN, &how)) {
			snprintf(why, n, "shutdown %s: %s", self->fs.dir, nowait_errname(errno));
			return false;
		}
		close(dfd);
	}
	alarm(120);
	if (self->ovl_dir[0] && umount(self->ovl_dir)) {
		snprintf(why, n, "umount overlay: %s", nowait_errname(errno));
		return false;
	}
	if (umount(self->fs.dir)) {
		snprintf(why, n, "umount: %s", nowait_errname(errno));
		return false;
	}
	alarm(0);
	self->fs.mounted = false;
	if (fsck) {
		snprintf(cmd, sizeof(cmd), "%s %s >/tmp/faults-fsck.%d 2>&1", variant->fs.fsck,
			 self->fs.dev, getpid());
		rc = system(cmd);
		if (rc) {
			snprintf(cmd, sizeof(cmd), "tail -n 15 /tmp/faults-fsck.%d | sed 's/^/#   /'",
				 getpid());
			rc = system(cmd);
			snprintf(why, n, "%s %s: not clean", variant->fs.fsck, self->fs.dev);
			return false;
		}
	}
	if (mount(self->fs.dev, self->fs.dir, variant->fs.type, 0, NULL)) {
		snprintf(why, n, "mount: %s", nowait_errname(errno));
		return false;
	}
	self->fs.mounted = true;
	if (self->ovl_dir[0]) {
		snprintf(cmd, sizeof(cmd), "lowerdir=%s/l,upperdir=%s/u,workdir=%s/w",
			 self->fs.dir, self->fs.dir, self->fs.dir);
		if (mount("overlay", self->ovl_dir, "overlay", 0, cmd)) {
			snprintf(why, n, "mount overlay: %s", nowait_errname(errno));
			return false;
		}
	}
	self->fd = open(self->path, O_RDWR | O_CLOEXEC);
	if (self->fd < 0) {
		snprintf(why, n, "open %s: %s", self->path, nowait_errname(errno));
		return false;
	}
	return true;
}

/*
 * Unmount, fsck, mount again, reread the file as the last worker path left
 * it, and look for leaks.
 */
static void check_after(struct __test_metadata *_metadata, FIXTURE_DATA(faults) *self,
			const FIXTURE_VARIANT(faults) *variant)
{
	char why[2048];
	struct stat before, after;
	int leaks;

	ASSERT_EQ(0, fsync(self->fd));
	ASSERT_EQ(0, fstat(self->fd, &before));
	if (variant->fs.mkfs)
		ASSERT_TRUE(cycle_mount(self, variant, false, true, why, sizeof(why)))
			TH_LOG("%s", why);
	ASSERT_EQ(0, fstat(self->fd, &after));
	EXPECT_EQ(before.st_size, after.st_size);
	EXPECT_TRUE(nowait_ts_equal(before.st_mtim, after.st_mtim))
		TH_LOG("the mtime changed across umount: %jd.%09ld, then %jd.%09ld",
		       (intmax_t)before.st_mtim.tv_sec, before.st_mtim.tv_nsec,
		       (intmax_t)after.st_mtim.tv_sec, after.st_mtim.tv_nsec);
	/* the last worker path wrote its new bytes over the old file */
	EXPECT_EQ(-1, file_differs(self, self->last_off, (ssize_t)self->last_len,
				   FILE_PAGES * self->pg))
		TH_LOG("the file after umount and mount is not what was written");
	if (self->kmemleak) {
		leaks = kmemleak_scan(why, sizeof(why));
		EXPECT_EQ(0, leaks) TH_LOG("kmemleak: %d new reports; the first:\n%s", leaks, why);
		printf("# faults %s kmemleak leaks=%d\n", variant_name(variant), leaks);
		nowait_write_file(KMEMLEAK, "clear");
	}
}

TEST_F_TIMEOUT(faults, every_fault_point, 1800)
{
	unsigned int bad = 0;

	printf("# faults %s kinds=%s\n", variant_name(variant), fault_kinds());
	for (enum path p = READ_HIT; p <= WRITE_PARTIAL; p++)
		if (!variant->fs.net.dir || !is_write(p))
			bad += caller_path(_metadata, self, variant, p);
	if (variant->fs.net.dir) {
		EXPECT_EQ(0, bad) TH_LOG("%u outcomes a caller is not promised", bad);
		return;
	}
	bad += worker_path(_metadata, self, variant, READ_MISS);
	bad += worker_path(_metadata, self, variant, WRITE_CACHED);
	bad += worker_path(_metadata, self, variant, WRITE_PARTIAL);
	EXPECT_EQ(0, bad) TH_LOG("%u outcomes a caller is not promised", bad);
	check_after(_metadata, self, variant);
}

/* ---- I/O errors under the workers ---- */

/*
 * Every bio to the filesystem's device fails while @on: fail_make_request
 * with probability 100 for every task, and the device's make-it-fail. That
 * is dm-error over the whole device, at bio submission, with no dm device
 * to set up. Returns the number of failures it injected since it was
 * turned on (from fail_make_request's times, which counts down), or -1 if
 * the kernel has no fail_make_request.
 */
#define FMR		DEBUGFS "/fail_make_request"
#define FMR_TIMES	1000000

static long device_errors(int loop, bool on)
{
	char path[96], v[32] = "";
	long left = -1;
	FILE *f;

	if (access(FMR, F_OK))
		return -1;
	snprintf(path, sizeof(path), "/sys/block/loop%d/make-it-fail", loop);
	if (on) {
		snprintf(v, sizeof(v), "%d", FMR_TIMES);
		if (!nowait_write_file(FMR "/times", v) || !nowait_write_file(FMR "/interval", "1") ||
		    !nowait_write_file(FMR "/task-filter", "N") ||
		    !nowait_write_file(FMR "/verbose", "0") ||
		    !nowait_write_file(FMR "/probability", "100") || !nowait_write_file(path, "1"))
			return -1;
		return 0;
	}
	nowait_write_file(path, "0");
	nowait_write_file(FMR "/probability", "0");
	f = fopen(FMR "/times", "re");
	if (f && fgets(v, sizeof(v), f))
		left = atol(v);
	if (f)
		fclose(f);
	return left < 0 ? -1 : FMR_TIMES - left;
}

FIXTURE(faults_eio) {
	struct nowait_loopfs fs;
	char path[128];
	int fd;
	size_t pg;
	unsigned char *buf, *back;
};

FIXTURE_VARIANT(faults_eio) {
	const char *type;
	const char *mkfs;
	int mb;
};

FIXTURE_VARIANT_ADD(faults_eio, ext4) { "ext4", "mkfs.ext4 -q -F -b 4096", 64 };
FIXTURE_VARIANT_ADD(faults_eio, xfs) { "xfs", "mkfs.xfs -q -f", 320 };
FIXTURE_VARIANT_ADD(faults_eio, btrfs) { "btrfs", "mkfs.btrfs -q -f", 160 };
FIXTURE_VARIANT_ADD(faults_eio, ext2) { "ext2", "mkfs.ext2 -q -F -b 4096", 64 };
FIXTURE_VARIANT_ADD(faults_eio, vfat) { "vfat", "mkfs.vfat", 64 };
FIXTURE_VARIANT_ADD(faults_eio, exfat) { "exfat", "mkfs.exfat", 64 };

FIXTURE_SETUP(faults_eio)
{
	self->fd = -1;
	self->fs.image[0] = '\0';
	self->fs.loop = -1;
	self->pg = nowait_page();
	if (!nowait_in_guest())
		SKIP(return, "fails every bio of a loop device: the test guest only");
	if (access(DEBUGFS "/failslab", F_OK))
		mount("debugfs", DEBUGFS, "debugfs", 0, NULL);
	if (access(FMR, F_OK))
		SKIP(return, "no fail_make_request in debugfs (CONFIG_FAIL_MAKE_REQUEST)");
	self->buf = malloc(FILE_PAGES * self->pg);
	self->back = malloc(FILE_PAGES * self->pg);
	ASSERT_TRUE(self->buf && self->back);
	NOWAIT_LOOPFS_SETUP(&self->fs, "faults-eio", variant->type, variant->mkfs,
			    (off_t)variant->mb << 20);
	snprintf(self->path, sizeof(self->path), "%s/file", self->fs.dir);
	self->fd = open(self->path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
	ASSERT_LE(0, self->fd);
	ASSERT_EQ(0, nowait_write_pattern(self->fd, 0, FILE_PAGES * self->pg, OLD_SEED));
	ASSERT_EQ(0, fsync(self->fd));
	alarm(120);	/* nothing below may hang on a failing disk */
}

FIXTURE_TEARDOWN_PARENT(faults_eio)
{
	if (self->fs.loop >= 0)
		device_errors(self->fs.loop, false);
	fault_knobs_restore();
	nowait_loopfs_remove(&self->fs);
}

struct eio_tally {
	unsigned int calls, injected, bad;
};

#define EIO_BAD(t, fmt, ...) do {					\
	(t)->bad++;							\
	TH_LOG("%s: " fmt, variant->type, ##__VA_ARGS__);		\
} while (0)

/*
 * With the disk failing: the worker's readahead of a miss, and the worker's
 * read of the page a partial write needs, fail; flagged retries then give
 * EAGAIN or EIO, never data, and a partial write is never taken over a page
 * that was not read; the blocking retry gives EIO. A flagged overwrite of
 * cached data is taken, and the fsync() after it reports EIO, as does the
 * write-back of the times the worker logs. Once the disk works again, the
 * file reads back as it was where nothing was reported written.
 */
TEST_F_TIMEOUT(faults_eio, io_errors_under_workers, 300)
{
	struct eio_tally rd = { 0 }, wr = { 0 }, sy = { 0 };
	const off_t roff = 4 * self->pg, woff = 6 * self->pg + 10;
	char why[NOWAIT_WHY_MAX];
	ssize_t r;
	long inj;

	/* a miss: the worker's readahead fails */
	ASSERT_TRUE(nowait_evict(self->fd, why, sizeof(why))) TH_LOG("%s", why);
	ASSERT_EQ(0, device_errors(self->fs.loop, true));
	for (int i = 0; i < 5; i++, rd.calls++) {
		memset(self->buf, 0xa5, self->pg);
		r = nowait_preadv2(self->fd, self->buf, self->pg, roff, RWF_NOWAIT);
		if (r >= 0 || (errno != EAGAIN && errno != EIO))
			EIO_BAD(&rd, "flagged read %d of a failing disk: %zd (%s)", i, r,
				r < 0 ? nowait_errname(errno) : "bytes");
		nowait_msleep(50);	/* the worker's readahead runs and fails */
	}
	r = pread(self->fd, self->buf, self->pg, roff);
	rd.calls++;
	if (r != -1 || errno != EIO)
		EIO_BAD(&rd, "blocking retry of the miss: %zd (%s), want EIO", r,
			r < 0 ? nowait_errname(errno) : "bytes");
	inj = device_errors(self->fs.loop, false);
	rd.injected = (unsigned int)(inj > 0 ? inj : 0);
	ASSERT_EQ(0, device_errors(self->fs.loop, true));

	/* a partial write of an evicted page: the worker's read of it fails */
	nowait_fill(self->buf, 100, (uint64_t)woff, NEW_SEED);
	for (int i = 0; i < 5; i++, wr.calls++) {
		r = nowait_pwritev2(self->fd, self->buf, 100, woff, RWF_NOWAIT);
		if (r >= 0 || (errno != EAGAIN && errno != EIO))
			EIO_BAD(&wr, "flagged partial write %d over an unreadable page: %zd (%s)", i,
				r, r < 0 ? nowait_errname(errno) : "bytes");
		nowait_msleep(50);
	}
	r = pwrite(self->fd, self->buf, 100, woff);
	wr.calls++;
	if (r != -1 || errno != EIO)
		EIO_BAD(&wr, "blocking retry of the partial write: %zd (%s), want EIO", r,
			r < 0 ? nowait_errname(errno) : "bytes");
	inj = device_errors(self->fs.loop, false);
	wr.injected = (unsigned int)(inj > 0 ? inj : 0);

	/* the disk is back: the old data, nothing of the refused writes */
	r = pread(self->fd, self->back, FILE_PAGES * self->pg, 0);
	if (r != (ssize_t)(FILE_PAGES * self->pg) ||
	    nowait_mismatch(self->back, FILE_PAGES * self->pg, 0, OLD_SEED) != -1)
		EIO_BAD(&wr, "after the disk recovered the file is not its old data (%zd)", r);

	/* a flagged overwrite of cached data, and an fsync() on a failing disk */
	nowait_fill(self->buf, 2 * self->pg, 2 * self->pg, NEW_SEED);
	for (int i = 0; i < 200; i++) {
		r = nowait_pwritev2(self->fd, self->buf, 2 * self->pg, 2 * self->pg, RWF_NOWAIT);
		if (r >= 0 || errno != EAGAIN)
			break;
		nowait_msleep(1);
	}
	sy.calls++;
	if (r != (ssize_t)(2 * self->pg))
		EIO_BAD(&sy, "the flagged overwrite of cached data: %zd (%s)", r,
			r < 0 ? nowait_errname(errno) : "short");
	ASSERT_EQ(0, device_errors(self->fs.loop, true));
	nowait_msleep(TIMES_WINDOW_MS);	/* the worker logs the times, and fails */
	r = fsync(self->fd);
	sy.calls++;
	if (r != -1 || errno != EIO)
		EIO_BAD(&sy, "fsync() of a flagged write on a failing disk: %zd (%s), want EIO", r,
			r < 0 ? nowait_errname(errno) : "success");
	inj = device_errors(self->fs.loop, false);
	sy.injected = (unsigned int)(inj > 0 ? inj : 0);

	printf("# faults %s eio_read_miss worker calls=%u injected=%u bad=%u\n", variant->type,
	       rd.calls, rd.injected, rd.bad);
	printf("# faults %s eio_write_partial worker calls=%u injected=%u bad=%u\n", variant->type,
	       wr.calls, wr.injected, wr.bad);
	printf("# faults %s eio_fsync worker calls=%u injected=%u bad=%u\n", variant->type,
	       sy.calls, sy.injected, sy.bad);
	EXPECT_EQ(0, rd.bad + wr.bad + sy.bad);
	/* umount must not hang on what failed */
	close(self->fd);
	self->fd = -1;
	EXPECT_EQ(0, umount(self->fs.dir)) TH_LOG("umount: %s", nowait_errname(errno));
	self->fs.mounted = false;
}

TEST_HARNESS_MAIN
