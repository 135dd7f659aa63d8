// SPDX-License-Identifier: GPL-2.0
/*
 * nowait-crash: do RWF_NOWAIT writes survive a crash as fsync() promised?
 *
 *   nowait-crash write DIR...   before the crash (the guest then reboots
 *                               with sysrq b, no clean shutdown)
 *   nowait-crash check DIR...   after it, on the same disks: TAP
 *
 * In each DIR, `write` makes a file of FILE_PAGES pages of one pattern and
 * syncs it, sets its mtime a day back, then:
 *   - overwrites pages 0-3 with a flagged buffered write,
 *   - evicts the file and overwrites page 4 with a flagged O_DIRECT write,
 *   - fsync()s, and records what each write returned and the mtime stat()
 *     showed then, in a second file, itself synced;
 *   - overwrites pages 8-11 with a flagged write that nothing syncs.
 * `check` wants, after the crash: every synced write there and every
 * refused one absent, the recorded mtime (or, where the unsynced write was
 * taken, its later one), and pages 8-11 each either old or new (lost is
 * allowed, torn or garbage is not).
 *
 * Where a filesystem refuses a flagged write (EOPNOTSUPP, EAGAIN), the
 * check is that the refusal left the file as it was.
 *
 * With no worker to log the times (ext4, xfs): a flagged write leaves its
 * mtime for a worker to log. failslab (fault injection, for this task only)
 * fails the allocation of that worker's item during a flagged overwrite of
 * cached data; a control file gets the same write blocking. Then
 * sync_file_range() writes both files' data back (it writes no metadata),
 * an fsync() of a third file commits the journal (forces xfs's log) with
 * whatever the two logged, and the guest crashes. `check` wants the
 * flagged write refused with nothing changed (EAGAIN: no worker, no
 * write), or taken with its mtime no worse than the control's. Series v2
 * took it and lost the mtime. An overwrite, not an append: an append's
 * new size is logged when its data is written back, times included.
 */
#include "nowait_die.h"
#include "nowait_test.h"

#include <stdarg.h>

#define FILE_PAGES	16
#define SEED_OLD	1
#define SEED_NEW	2
#define SEED_UNSYNCED	3
#define UNSYNCED_MTIME_NS	(60 * 1000000000LL)
#define EXPECT_NAME	"nowait-crash.expect"
#define DATA_NAME	"nowait-crash.data"
#define NOWORKER_NAME	"nowait-crash.noworker"	/* no worker for its times */
#define CONTROL_NAME	"nowait-crash.control"	/* the same, blocking */
#define BARRIER_NAME	"nowait-crash.barrier"	/* synced after both */
#define SYNC_DATA	(SYNC_FILE_RANGE_WAIT_BEFORE | SYNC_FILE_RANGE_WRITE | \
			 SYNC_FILE_RANGE_WAIT_AFTER)
#define SMALL		1000	/* bytes in the files before the writes */
#define OVERWRITE	100	/* bytes overwritten at offset 0 */
#define FAILSLAB	"/sys/kernel/debug/failslab"

struct record {
	int buffered;		/* bytes written, or -errno */
	int direct;
	long long mtime_sec;
	long mtime_nsec;
};

static void sync_dir(const char *dir)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (fd < 0 || fsync(fd))
		die("fsync %s", dir);
	close(fd);
}

static int flagged(int fd, const void *buf, size_t len, off_t off)
{
	ssize_t r = nowait_pwritev2(fd, buf, len, off, RWF_NOWAIT);

	return r < 0 ? -errno : (int)r;
}

/* Write @line as the whole record @expect, and sync it */
static void write_record(const char *expect, const char *line)
{
	int fd = open(expect, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

	if (fd < 0 || write(fd, line, strlen(line)) != (ssize_t)strlen(line) ||
	    fsync(fd))
		die("write %s", expect);
	close(fd);
}

/* Fail this task's allocations that cannot sleep, or stop; false if not possible. */
static bool fail_nowait_allocs(bool on)
{
	static const char *const setup[][2] = {
		{ FAILSLAB "/probability", "100" }, { FAILSLAB "/interval", "1" },
		{ FAILSLAB "/times", "-1" }, { FAILSLAB "/task-filter", "Y" },
		{ FAILSLAB "/ignore-gfp-wait", "Y" }, { FAILSLAB "/verbose", "0" },
	};

	if (on) {
		if (access(FAILSLAB, F_OK))
			mount("debugfs", "/sys/kernel/debug", "debugfs", 0, NULL);
		for (size_t i = 0; i < sizeof(setup) / sizeof(setup[0]); i++)
			if (!nowait_write_file(setup[i][0], setup[i][1]))
				return false;
	}
	return nowait_write_file("/proc/thread-self/make-it-fail", on ? "1" : "0");
}

/*
 * Whether @dir is a filesystem whose flagged writes defer their times to the
 * worker (ext4, xfs; ext2 shares ext4's magic and runs the case too), and whose flagged write of cached data allocates nothing else that
 * failslab would fail: btrfs's does (its extent states), so there the case
 * could not skip the worker alone.
 */
static bool defers_times(const char *dir)
{
	struct statfs sf;

	if (statfs(dir, &sf))
		return false;
	switch ((uint32_t)sf.f_type) {
	case EXT4_SUPER_MAGIC:
	case XFS_SUPER_MAGIC:
		return true;
	default:
		return false;
	}
}

/* A file of SMALL bytes of the old pattern, synced, its mtime a day back. */
static int small_file(const char *dir, const char *name)
{
	struct timespec ts[2] = { { 0, UTIME_OMIT }, { 0, 0 } };
	char path[PATH_MAX];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	clock_gettime(CLOCK_REALTIME, &ts[1]);
	ts[1].tv_sec -= 24 * 3600;
	if (fd < 0 || nowait_write_pattern(fd, 0, SMALL, SEED_OLD) ||
	    futimens(fd, ts) || fsync(fd))
		die("setup %s", path);
	return fd;
}

/*
 * The no-worker case, before the record is written: both files, synced,
 * their last page cached, as a logger's is.
 */
static void noworker_setup(const char *dir)
{
	unsigned char buf[SMALL];
	int fd = small_file(dir, NOWORKER_NAME), cfd = small_file(dir, CONTROL_NAME);

	sync_dir(dir);
	if (pread(fd, buf, SMALL, 0) != SMALL || pread(cfd, buf, SMALL, 0) != SMALL)
		die("read back %s", dir);
	close(cfd);
	close(fd);
}

/*
 * After the record, which expects the flagged write refused: nothing may
 * sync either file's metadata between the writes and the crash. A flagged
 * write that was taken rewrites the record and syncs it, which commits
 * what either file logged, alike, as the barrier does.
 */
static void noworker_writes(const char *dir, const char *expect,
			   const char *first_line)
{
	unsigned char buf[SMALL];
	char path[PATH_MAX], line[256];
	int fd, cfd, over;

	snprintf(path, sizeof(path), "%s/" NOWORKER_NAME, dir);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	snprintf(path, sizeof(path), "%s/" CONTROL_NAME, dir);
	cfd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0 || cfd < 0)
		die("open %s", dir);
	if (!fail_nowait_allocs(true))
		die("failslab (CONFIG_FAILSLAB, debugfs)");
	nowait_fill(buf, OVERWRITE, 0, SEED_NEW);
	over = flagged(fd, buf, OVERWRITE, 0);
	fail_nowait_allocs(false);

	if (pwrite(cfd, buf, OVERWRITE, 0) != OVERWRITE)
		die("control overwrite");
	/* The data of both, and no metadata */
	if (sync_file_range(fd, 0, 0, SYNC_DATA) || sync_file_range(cfd, 0, 0, SYNC_DATA))
		die("sync_file_range %s", dir);
	close(cfd);
	close(fd);
	printf("nowait-crash: %s: no worker: flagged overwrite %d\n", dir, over);
	if (over == -EAGAIN)
		return;
	snprintf(line, sizeof(line), "%s%d\n", first_line, over);
	write_record(expect, line);
}

static void write_dir(const char *dir)
{
	size_t pg = nowait_page(), size = FILE_PAGES * pg;
	struct timespec ts[2] = { { 0, UTIME_OMIT }, { 0, 0 } };
	char path[PATH_MAX], expect[PATH_MAX], line[256], first_line[256];
	unsigned char *buf, *al;
	struct record rec;
	struct stat st;
	int fd, dfd;

	snprintf(path, sizeof(path), "%s/" DATA_NAME, dir);
	snprintf(expect, sizeof(expect), "%s/" EXPECT_NAME, dir);
	buf = malloc(size);
	al = aligned_alloc(pg, pg);
	if (!buf || !al)
		die("malloc");
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0 || nowait_write_pattern(fd, 0, size, SEED_OLD) || fsync(fd))
		die("setup %s", path);
	sync_dir(dir);
	clock_gettime(CLOCK_REALTIME, &ts[1]);
	ts[1].tv_sec -= 24 * 3600;
	if (futimens(fd, ts) || fsync(fd))
		die("futimens %s", path);

	nowait_fill(buf, 4 * pg, 0, SEED_NEW);
	rec.buffered = flagged(fd, buf, 4 * pg, 0);
	rec.direct = -EINVAL;
	/* A cached page in the range of a flagged O_DIRECT write is EAGAIN. */
	if (fsync(fd) || posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED))
		die("evict %s", path);
	dfd = open(path, O_WRONLY | O_DIRECT | O_CLOEXEC);
	if (dfd >= 0) {
		nowait_fill(al, pg, 4 * pg, SEED_NEW);
		rec.direct = flagged(dfd, al, pg, (off_t)(4 * pg));
		close(dfd);
	}
	if (fsync(fd) || fstat(fd, &st))
		die("fsync %s", path);
	rec.mtime_sec = (long long)st.st_mtim.tv_sec;
	rec.mtime_nsec = st.st_mtim.tv_nsec;

	snprintf(line, sizeof(line), "%d %d %lld %ld\n", rec.buffered,
		 rec.direct, rec.mtime_sec, rec.mtime_nsec);
	strcpy(first_line, line);
	if (defers_times(dir)) {
		noworker_setup(dir);
		snprintf(line + strlen(line), sizeof(line) - strlen(line),
			 "%d\n", -EAGAIN);
	}
	write_record(expect, line);
	sync_dir(dir);
	if (defers_times(dir))
		noworker_writes(dir, expect, first_line);

	/* Not synced: may be lost, must not be torn into garbage. */
	nowait_fill(buf, 4 * pg, 8 * pg, SEED_UNSYNCED);
	flagged(fd, buf, 4 * pg, (off_t)(8 * pg));
	printf("nowait-crash: %s: buffered %d, O_DIRECT %d, mtime %lld.%09ld\n",
	       dir, rec.buffered, rec.direct, rec.mtime_sec, rec.mtime_nsec);
	close(fd);
	free(al);
	free(buf);
}

static int test_no;

static bool report(bool ok, const char *dir, const char *fmt, ...)
{
	va_list ap;

	printf("%s %d %s: ", ok ? "ok" : "not ok", ++test_no, dir);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	return ok;
}

/* Whether page @p holds @seed's pattern. */
static bool page_is(const unsigned char *buf, size_t pg, size_t p,
		    uint32_t seed)
{
	return nowait_mismatch(buf + p * pg, pg, p * pg, seed) < 0;
}

static bool check_dir(const char *dir)
{
	size_t pg = nowait_page(), size = FILE_PAGES * pg;
	char path[PATH_MAX], expect[PATH_MAX], line[256] = "";
	struct record rec;
	unsigned char *buf;
	struct stat st;
	bool ok = true, unsynced_ok;
	long long diff;
	FILE *f;
	int fd;

	snprintf(path, sizeof(path), "%s/" DATA_NAME, dir);
	snprintf(expect, sizeof(expect), "%s/" EXPECT_NAME, dir);
	f = fopen(expect, "r");
	if (!f || !fgets(line, sizeof(line), f) ||
	    sscanf(line, "%d %d %lld %ld", &rec.buffered, &rec.direct,
		   &rec.mtime_sec, &rec.mtime_nsec) != 4)
		return report(false, dir, "no record of the writes (%s)",
			      f ? "unreadable" : strerror(errno));
	fclose(f);
	buf = malloc(size);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (!buf || fd < 0 || fstat(fd, &st) ||
	    pread(fd, buf, size, 0) != (ssize_t)size) {
		free(buf);
		return report(false, dir, "%s: unreadable or short", path);
	}
	close(fd);

	for (size_t p = 0; p < FILE_PAGES; p++) {
		uint32_t want = SEED_OLD;

		if (p < 4 && rec.buffered == (int)(4 * pg))
			want = SEED_NEW;
		if (p == 4 && rec.direct == (int)pg)
			want = SEED_NEW;
		if (p >= 8 && p < 12 && page_is(buf, pg, p, SEED_UNSYNCED))
			continue;	/* the unsynced write survived */
		if (!page_is(buf, pg, p, want)) {
			ok = report(false, dir, "page %zu is not what %s", p,
				    want == SEED_NEW ? "the synced flagged write wrote" :
						       "was there before");
			break;
		}
	}
	if (ok)
		report(true, dir, "data: flagged writes (buffered %d, O_DIRECT %d) as fsync left them, unsynced pages old or new",
		       rec.buffered, rec.direct);
	diff = ((long long)st.st_mtim.tv_sec - rec.mtime_sec) * 1000000000LL +
	       st.st_mtim.tv_nsec - rec.mtime_nsec;
	/*
	 * Where the filesystem takes flagged buffered writes, the unsynced one
	 * after the record moved the mtime too, and that may have reached the
	 * disk before the crash (a journal commit, the deferred-time worker):
	 * a later mtime, by at most the minute the rest of `write` can take,
	 * is that write's. An earlier one is the synced update lost.
	 */
	unsynced_ok = rec.buffered > 0 && diff > 0 && diff <= UNSYNCED_MTIME_NS;
	ok &= report(llabs(diff) <= nowait_mtime_slack_ns(dir) || unsynced_ok, dir,
		     "mtime %lld.%09ld after the crash, %lld.%09ld after fsync before it%s",
		     (long long)st.st_mtim.tv_sec, (long)st.st_mtim.tv_nsec,
		     rec.mtime_sec, rec.mtime_nsec,
		     unsynced_ok ? " (the unsynced write's)" : "");
	free(buf);
	return ok;
}

/* The second line of @dir's record, the no-worker case's, or false */
static bool noworker_record(const char *dir, int *over)
{
	char expect[PATH_MAX], line[256];
	bool found = false;
	FILE *f;

	snprintf(expect, sizeof(expect), "%s/" EXPECT_NAME, dir);
	f = fopen(expect, "r");
	if (!f)
		return false;
	if (fgets(line, sizeof(line), f) && fgets(line, sizeof(line), f))
		found = sscanf(line, "%d", over) == 1;
	fclose(f);
	return found;
}

/* Size and mtime of @name in @dir, and whether its data is the new writes' */
static bool small_state(const char *dir, const char *name, struct stat *st,
			bool *data_new)
{
	unsigned char buf[2 * SMALL];
	char path[PATH_MAX];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || fstat(fd, st))
		return false;
	n = pread(fd, buf, sizeof(buf), 0);
	close(fd);
	*data_new = n >= OVERWRITE &&
		    nowait_mismatch(buf, OVERWRITE, 0, SEED_NEW) < 0;
	return true;
}

static bool check_noworker(const char *dir, int over)
{
	struct stat fst, cst;
	bool fnew, cnew, ok;

	if (!small_state(dir, NOWORKER_NAME, &fst, &fnew) ||
	    !small_state(dir, CONTROL_NAME, &cst, &cnew))
		return report(false, dir, "no worker: a file is unreadable (%s)",
			      strerror(errno));
	if (over == -EAGAIN) {
		/* Refused: nothing changed, the day-old mtime included */
		ok = !fnew && fst.st_size == SMALL &&
		     fst.st_mtim.tv_sec < time(NULL) - 3600;
		return report(ok, dir, "no worker: the flagged overwrite was refused (EAGAIN); the file kept size %jd, mtime %lld, %s data",
			      (intmax_t)fst.st_size, (long long)fst.st_mtim.tv_sec,
			      fnew ? "new" : "old");
	}
	if (over != OVERWRITE)
		return report(false, dir, "no worker: the flagged overwrite got %d", over);
	/* Taken: no worse than the control, what it kept the file keeps */
	ok = (fst.st_size >= cst.st_size) && (fnew || !cnew) &&
	     (fst.st_mtim.tv_sec > cst.st_mtim.tv_sec - 2);
	return report(ok, dir, "no worker: the flagged overwrite was taken; flagged file size %jd, mtime %lld, data %s; blocking control size %jd, mtime %lld, data %s",
		      (intmax_t)fst.st_size, (long long)fst.st_mtim.tv_sec,
		      fnew ? "new" : "old", (intmax_t)cst.st_size,
		      (long long)cst.st_mtim.tv_sec, cnew ? "new" : "old");
}

/*
 * The journal's commit, or xfs's log force, that the two files of the
 * no-worker case share: an fsync() of a third file writes out what
 * either logged before it (and nothing that is only dirty in memory), so
 * that what the crash keeps depends on what each file's writes logged.
 */
static void log_barrier(const char *dir)
{
	char path[PATH_MAX];
	int fd;

	snprintf(path, sizeof(path), "%s/" BARRIER_NAME, dir);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0 || write(fd, "x", 1) != 1 || fsync(fd))
		die("barrier %s", path);
	close(fd);
}

int main(int argc, char **argv)
{
	bool ok = true;

	if (argc < 3 || (strcmp(argv[1], "write") && strcmp(argv[1], "check"))) {
		fprintf(stderr, "usage: nowait-crash write|check DIR...\n");
		return 2;
	}
	if (!strcmp(argv[1], "write")) {
		for (int i = 2; i < argc; i++)
			write_dir(argv[i]);
		for (int i = 2; i < argc; i++)
			if (defers_times(argv[i]))
				log_barrier(argv[i]);
		return 0;
	}
	int cases = 0, over;

	for (int i = 2; i < argc; i++)
		cases += 2 + noworker_record(argv[i], &over);
	printf("1..%d\n", cases);
	for (int i = 2; i < argc; i++) {
		ok &= check_dir(argv[i]);
		if (noworker_record(argv[i], &over))
			ok &= check_noworker(argv[i], over);
	}
	return ok ? 0 : 1;
}
