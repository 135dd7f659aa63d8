// SPDX-License-Identifier: GPL-2.0
/*
 * nowait-replay-load: the workload that make crash-replay records with
 * dm-log-writes and replays state by state (harness/crash-replay.sh).
 *
 *   nowait-replay-load --dm NAME --journal FILE [--seed N] [--threads N]
 *                      [--ops N] [--json FILE] DIR
 *
 * THREADS threads each own two files in DIR and do OPS operations on them:
 * overwrites and appends written with pwritev2(RWF_NOWAIT) first and the
 * rest blocking when the flag is refused or the write is short (what a
 * caller of the flag does), truncates up and down, renames, and fsync()s
 * of the file and of DIR. After each fsync the thread sends a mark to the
 * dm-log-writes device NAME and writes a promise to the journal: the
 * file's name, size, contents' sum and mtime (tools/nowait_replay.h has
 * the format); before a file changes again, a mark that withdraws it.
 * fsyncs take turns (fsync_lock says why); everything else overlaps.
 * Marks are sent one at a time, under one lock, so their order in the log
 * is the journal's. Each thread's operations follow from the seed alone;
 * how the threads interleave does not. The seed is printed.
 */
#include "nowait_die.h"
#include "nowait_test.h"
#include "nowait_replay.h"

#include <linux/dm-ioctl.h>
#include <pthread.h>
#include <stdarg.h>

#define FILES_PER_THREAD	2
#define MAX_THREADS		16
#define MAX_WRITE		(48 * 1024)
#define MAX_FILE		(384 * 1024)	/* past it, appends become truncates */
#define FSYNC_PERCENT		35

struct counts {
	long flagged_whole;	/* the flagged write took everything */
	long flagged_short;	/* took part; the rest went blocking */
	long eagain;		/* refused with EAGAIN; all blocking */
	long eopnotsupp;	/* refused with EOPNOTSUPP; all blocking */
	long overwrites, appends, truncates, renames, fsyncs;
};

struct file {
	int fd;
	char name[64];
	unsigned int gen;
	off_t size;
	long promise;		/* the promise that holds for it, or 0 */
};

struct thread {
	pthread_t tid;
	unsigned int no;
	uint64_t rng;
	struct file files[FILES_PER_THREAD];
	struct counts counts;
};

static const char *dir, *dm_name;
static int dir_fd, dm_fd;
static FILE *journal;
static long marks, promises;
static int ops = 40;
static pthread_mutex_t mark_lock = PTHREAD_MUTEX_INITIALIZER;
/*
 * One fsync at a time, up to its promise's mark. dm-log-writes logs a
 * completed write only with the first flush submitted after it, and a
 * mark at once: with two threads' flushes in flight, a write that the
 * first flush to complete made durable can be logged with the other one,
 * after the first thread's mark, and the replay at that mark would lack
 * it though no crash could (seen on ext2 and exfat, stock kernel: a
 * promised size read back as 0 until the other flush's entry). The
 * writes, truncates and renames of the other threads still run beside it.
 */
static pthread_mutex_t fsync_lock = PTHREAD_MUTEX_INITIALIZER;

/* xorshift64*: each thread's own sequence, from the seed alone */
static uint32_t rnd(struct thread *t, uint32_t below)
{
	t->rng ^= t->rng >> 12;
	t->rng ^= t->rng << 25;
	t->rng ^= t->rng >> 27;
	return (uint32_t)((t->rng * 0x2545f4914f6cdd1dull) >> 32) % below;
}

/* `dmsetup message NAME 0 mark TEXT`, without a process per mark */
static void dm_mark(const char *text)
{
	union {
		struct dm_ioctl io;
		char raw[sizeof(struct dm_ioctl) + sizeof(struct dm_target_msg) + 64];
	} b;
	struct dm_target_msg *msg = (void *)(b.raw + sizeof(struct dm_ioctl));

	memset(&b, 0, sizeof(b));
	b.io.version[0] = DM_VERSION_MAJOR;
	b.io.data_size = sizeof(b);
	b.io.data_start = sizeof(struct dm_ioctl);
	snprintf(b.io.name, sizeof(b.io.name), "%s", dm_name);
	snprintf(msg->message, 64, "mark %s", text);
	if (ioctl(dm_fd, DM_TARGET_MSG, &b.io))
		die("mark %s on %s", text, dm_name);
}

/*
 * The next mark, and its journal line, under the lock that keeps the
 * log's order of marks the journal's. Returns the mark's number.
 */
static long send_mark(const char *fmt, ...)
{
	char text[32];
	va_list ap;
	long n;

	pthread_mutex_lock(&mark_lock);
	n = ++marks;
	snprintf(text, sizeof(text), NOWAIT_REPLAY_MARK_PREFIX "%ld", n);
	dm_mark(text);
	fprintf(journal, "%c %ld ", fmt[0], n);
	va_start(ap, fmt);
	vfprintf(journal, fmt + 1, ap);
	va_end(ap);
	if (fflush(journal))
		die("journal");
	pthread_mutex_unlock(&mark_lock);
	return n;
}

static void withdraw(struct file *f)
{
	if (f->promise)
		send_mark("D%ld\n", f->promise);
	f->promise = 0;
}

/* fsync the file and its directory, then promise what it holds. */
static void promise(struct thread *t, struct file *f)
{
	struct stat st;
	uint64_t hash;
	long id;

	pthread_mutex_lock(&fsync_lock);
	if (fsync(f->fd) || fsync(dir_fd))
		die("fsync %s", f->name);
	if (fstat(f->fd, &st) || st.st_size != f->size ||
	    !nowait_replay_hash_fd(f->fd, st.st_size, &hash))
		die("read back %s (size %jd, expected %jd)", f->name,
		    (intmax_t)st.st_size, (intmax_t)f->size);
	pthread_mutex_lock(&mark_lock);
	id = ++promises;
	pthread_mutex_unlock(&mark_lock);
	send_mark("P%ld %s %jd %016llx %lld %ld\n", id, f->name,
		  (intmax_t)st.st_size, (unsigned long long)hash,
		  (long long)st.st_mtim.tv_sec, st.st_mtim.tv_nsec);
	pthread_mutex_unlock(&fsync_lock);
	f->promise = id;
	t->counts.fsyncs++;
}

/* A caller of the flag: RWF_NOWAIT first, whatever it left blocking. */
static void flagged_write(struct thread *t, struct file *f,
			  const unsigned char *buf, size_t len, off_t off)
{
	ssize_t n = nowait_pwritev2(f->fd, buf, len, off, RWF_NOWAIT);

	if (n == (ssize_t)len) {
		t->counts.flagged_whole++;
		return;
	}
	if (n > 0)
		t->counts.flagged_short++;
	else if (n < 0 && errno == EAGAIN)
		t->counts.eagain++;
	else if (n < 0 && errno == EOPNOTSUPP)
		t->counts.eopnotsupp++;
	else
		die("flagged write of %zu at %jd to %s returned %zd", len,
		    (intmax_t)off, f->name, n);
	if (n < 0)
		n = 0;
	if (pwrite(f->fd, buf + n, len - (size_t)n, off + n) != (ssize_t)(len - (size_t)n))
		die("write %s", f->name);
}

static void do_write(struct thread *t, struct file *f, bool append,
		     unsigned char *buf, uint32_t seed)
{
	size_t len = 1 + rnd(t, MAX_WRITE);
	off_t off = append || !f->size ? f->size : (off_t)rnd(t, (uint32_t)f->size);

	nowait_fill(buf, len, (uint64_t)off, seed);
	flagged_write(t, f, buf, len, off);
	if (off + (off_t)len > f->size)
		f->size = off + (off_t)len;
	if (append)
		t->counts.appends++;
	else
		t->counts.overwrites++;
}

static void do_truncate(struct thread *t, struct file *f)
{
	off_t to = rnd(t, (uint32_t)(f->size + 16384));

	if (ftruncate(f->fd, to))
		die("truncate %s", f->name);
	f->size = to;
	t->counts.truncates++;
}

static void file_name(struct thread *t, struct file *f, unsigned int i)
{
	snprintf(f->name, sizeof(f->name), "t%uf%ug%u", t->no, i, f->gen);
}

static void do_rename(struct thread *t, struct file *f, unsigned int i)
{
	char old[sizeof(f->name)];

	memcpy(old, f->name, sizeof(old));
	f->gen++;
	file_name(t, f, i);
	if (renameat(dir_fd, old, dir_fd, f->name))
		die("rename %s to %s", old, f->name);
	t->counts.renames++;
}

static void *run(void *arg)
{
	struct thread *t = arg;
	unsigned char *buf = malloc(MAX_WRITE);

	if (!buf)
		die("malloc");
	for (unsigned int i = 0; i < FILES_PER_THREAD; i++) {
		struct file *f = &t->files[i];

		file_name(t, f, i);
		f->fd = openat(dir_fd, f->name, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		if (f->fd < 0)
			die("create %s", f->name);
		promise(t, f);
	}
	for (int op = 0; op < ops; op++) {
		unsigned int i = rnd(t, FILES_PER_THREAD);
		struct file *f = &t->files[i];
		uint32_t kind = rnd(t, 100);
		/* Unique per write, so that no two writes leave the same bytes */
		uint32_t seed = (t->no + 1) * 1000003u + (uint32_t)op;

		withdraw(f);
		if (kind < 35)
			do_write(t, f, false, buf, seed);
		else if (kind < 65 && f->size < MAX_FILE)
			do_write(t, f, true, buf, seed);
		else if (kind < 80)
			do_truncate(t, f);
		else if (kind < 90)
			do_rename(t, f, i);
		if (kind >= 90 || rnd(t, 100) < FSYNC_PERCENT)
			promise(t, f);
	}
	for (unsigned int i = 0; i < FILES_PER_THREAD; i++) {
		if (!t->files[i].promise)
			promise(t, &t->files[i]);
		close(t->files[i].fd);
	}
	free(buf);
	return NULL;
}

static void write_json(const char *path, unsigned long long seed, int nthreads,
		       const struct counts *c)
{
	FILE *f = fopen(path, "w");

	if (!f)
		die("open %s", path);
	fprintf(f, "{\"seed\": %llu, \"threads\": %d, \"ops_per_thread\": %d, "
		"\"marks\": %ld, \"promises\": %ld, \"flagged_whole\": %ld, "
		"\"flagged_short\": %ld, \"eagain\": %ld, \"eopnotsupp\": %ld, "
		"\"overwrites\": %ld, \"appends\": %ld, \"truncates\": %ld, "
		"\"renames\": %ld, \"fsyncs\": %ld}\n",
		seed, nthreads, ops, marks, promises, c->flagged_whole,
		c->flagged_short, c->eagain, c->eopnotsupp, c->overwrites,
		c->appends, c->truncates, c->renames, c->fsyncs);
	fclose(f);
}

int main(int argc, char **argv)
{
	unsigned long long seed = 1;
	const char *journal_path = NULL, *json = NULL;
	static struct thread threads[MAX_THREADS];
	struct counts sum = { 0 };
	int nthreads = 4, i;

	for (i = 1; i < argc - 1 && argv[i][0] == '-'; i += 2) {
		if (!strcmp(argv[i], "--dm"))
			dm_name = argv[i + 1];
		else if (!strcmp(argv[i], "--journal"))
			journal_path = argv[i + 1];
		else if (!strcmp(argv[i], "--json"))
			json = argv[i + 1];
		else if (!strcmp(argv[i], "--seed"))
			seed = strtoull(argv[i + 1], NULL, 0);
		else if (!strcmp(argv[i], "--threads"))
			nthreads = atoi(argv[i + 1]);
		else if (!strcmp(argv[i], "--ops"))
			ops = atoi(argv[i + 1]);
		else
			break;
	}
	if (i != argc - 1 || !dm_name || !journal_path || nthreads < 1 ||
	    nthreads > MAX_THREADS || ops < 1) {
		fprintf(stderr, "usage: nowait-replay-load --dm NAME --journal FILE [--seed N] [--threads 1-%d] [--ops N] [--json FILE] DIR\n",
			MAX_THREADS);
		return 2;
	}
	dir = argv[i];
	if (mkdir(dir, 0755) && errno != EEXIST)
		die("mkdir %s", dir);
	dir_fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	dm_fd = open("/dev/mapper/control", O_RDWR | O_CLOEXEC);
	journal = fopen(journal_path, "w");
	if (dir_fd < 0 || dm_fd < 0 || !journal)
		die("open %s, /dev/mapper/control or %s", dir, journal_path);
	/* The directory itself, before any promise names a file in it */
	{
		char parent[PATH_MAX];
		int pfd;

		snprintf(parent, sizeof(parent), "%s/..", dir);
		pfd = open(parent, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (pfd < 0 || fsync(dir_fd) || fsync(pfd))
			die("fsync %s", parent);
		close(pfd);
	}
	printf("nowait-replay-load: seed %llu, %d threads, %d operations each, in %s\n",
	       seed, nthreads, ops, dir);
	for (i = 0; i < nthreads; i++) {
		threads[i].no = (unsigned int)i;
		threads[i].rng = (seed + 1) * 0x9e3779b97f4a7c15ull + (uint64_t)i * 0xbf58476d1ce4e5b9ull;
		if (!threads[i].rng)
			threads[i].rng = 1;
		if (pthread_create(&threads[i].tid, NULL, run, &threads[i]))
			die("pthread_create");
	}
	for (i = 0; i < nthreads; i++) {
		const struct counts *c = &threads[i].counts;

		pthread_join(threads[i].tid, NULL);
		sum.flagged_whole += c->flagged_whole;
		sum.flagged_short += c->flagged_short;
		sum.eagain += c->eagain;
		sum.eopnotsupp += c->eopnotsupp;
		sum.overwrites += c->overwrites;
		sum.appends += c->appends;
		sum.truncates += c->truncates;
		sum.renames += c->renames;
		sum.fsyncs += c->fsyncs;
	}
	fclose(journal);
	printf("nowait-replay-load: %ld marks, %ld promises; writes: %ld flagged whole, %ld flagged short, %ld EAGAIN, %ld EOPNOTSUPP; %ld overwrites, %ld appends, %ld truncates, %ld renames\n",
	       marks, promises, sum.flagged_whole, sum.flagged_short, sum.eagain,
	       sum.eopnotsupp, sum.overwrites, sum.appends, sum.truncates, sum.renames);
	if (json)
		write_json(json, seed, nthreads, &sum);
	return 0;
}
