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
 */
#include "nowait_test.h"

#include <stdarg.h>

#define FILE_PAGES	16
#define SEED_OLD	1
#define SEED_NEW	2
#define SEED_UNSYNCED	3
#define UNSYNCED_MTIME_NS	(60 * 1000000000LL)
#define EXPECT_NAME	"nowait-crash.expect"
#define DATA_NAME	"nowait-crash.data"

struct record {
	int buffered;		/* bytes written, or -errno */
	int direct;
	long long mtime_sec;
	long mtime_nsec;
};

static void die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fprintf(stderr, "nowait-crash: ");
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, ": %s\n", strerror(errno));
	va_end(ap);
	exit(1);
}

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

static void write_dir(const char *dir)
{
	size_t pg = nowait_page(), size = FILE_PAGES * pg;
	struct timespec ts[2] = { { 0, UTIME_OMIT }, { 0, 0 } };
	char path[PATH_MAX], expect[PATH_MAX], line[256];
	unsigned char *buf, *al;
	struct record rec;
	struct stat st;
	int fd, dfd, efd;

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

	efd = open(expect, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	snprintf(line, sizeof(line), "%d %d %lld %ld\n", rec.buffered,
		 rec.direct, rec.mtime_sec, rec.mtime_nsec);
	if (efd < 0 || write(efd, line, strlen(line)) != (ssize_t)strlen(line) ||
	    fsync(efd))
		die("write %s", expect);
	close(efd);
	sync_dir(dir);

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

/*
 * How far the mtime read back from the disk may be from the one stat()
 * showed before: vfat keeps 2 s and exfat 10 ms, but both show the
 * nanoseconds of the last update until the inode is read back.
 */
static long long granularity_ns(const char *dir)
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
	ok &= report(llabs(diff) <= granularity_ns(dir) || unsynced_ok, dir,
		     "mtime %lld.%09ld after the crash, %lld.%09ld after fsync before it%s",
		     (long long)st.st_mtim.tv_sec, (long)st.st_mtim.tv_nsec,
		     rec.mtime_sec, rec.mtime_nsec,
		     unsynced_ok ? " (the unsynced write's)" : "");
	free(buf);
	return ok;
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
		return 0;
	}
	printf("1..%d\n", 2 * (argc - 2));
	for (int i = 2; i < argc; i++)
		ok &= check_dir(argv[i]);
	return ok ? 0 : 1;
}
