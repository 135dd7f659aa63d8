// SPDX-License-Identifier: GPL-2.0
/*
 * One stuck filesystem holds up no other.
 *
 * A flagged read that cannot be served hands the work its blocking retry
 * needs (readahead, a fuse attribute revalidation) to a worker. Series v2 ran
 * that work for every filesystem in one pool of 16 workers: revalidations
 * queued on a fuse mount whose daemon is stopped took all 16, and then a
 * blocking read on a healthy fuse mount waited 13 s for its own
 * revalidation, and umount of an unrelated ext2 waited 11 s, both until the
 * daemon went on (SIGCONT).
 *
 * Each case stops daemon A after STUCK_FILES flagged reads that each queue
 * a revalidation A cannot answer, then does one thing elsewhere, in a
 * thread: it must finish within LIMIT_MS while A is still stopped. After
 * GIVE_UP_MS the case lets A go on, so that a failure is reported rather
 * than hung.
 */
#include "kselftest_harness.h"
#include "nowait_test.h"

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/syscall.h>

#define STUCK_FILES	20
#define FILE_SIZE	65536
/* fuse attribute timeout of both daemons, and how long to outwait it */
#define ATTR_TIMEOUT	"1"
#define ATTR_WAIT_MS	1300
#define LIMIT_MS	1000
#define GIVE_UP_MS	15000

FIXTURE(isolation) {
	char src[2][64], mnt[2][64];
	pid_t daemon[2];
	int stuck[STUCK_FILES];
	int healthy;		/* the file on mount B */
	bool stopped;		/* daemon A */
	struct nowait_loopfs ext2;
	unsigned char buf[FILE_SIZE];
};

/* Write @name in @dir with FILE_SIZE bytes of the pattern. */
static bool make_file(const char *dir, const char *name)
{
	char path[128];
	int fd, err;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return false;
	err = nowait_write_pattern(fd, 0, FILE_SIZE, 1);
	close(fd);
	return !err;
}

/* Open @name on @mnt and read it whole, so its pages and attributes are cached. */
static int open_cached(const char *mnt, const char *name, unsigned char *buf)
{
	char path[128];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", mnt, name);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0 && pread(fd, buf, FILE_SIZE, 0) != FILE_SIZE) {
		close(fd);
		fd = -1;
	}
	return fd;
}

FIXTURE_SETUP(isolation)
{
	char name[32];

	self->healthy = -1;
	for (int k = 0; k < STUCK_FILES; k++)
		self->stuck[k] = -1;
	if (!nowait_in_guest())
		SKIP(return, "mounts fuse and stops its daemon: the test guest only");
	for (int i = 0; i < 2; i++) {
		snprintf(self->src[i], sizeof(self->src[i]), "/tmp/isolation-src%d.%d",
			 i, (int)getpid());
		snprintf(self->mnt[i], sizeof(self->mnt[i]), "/tmp/isolation-mnt%d.%d",
			 i, (int)getpid());
		ASSERT_EQ(0, mkdir(self->src[i], 0755));
		ASSERT_EQ(0, mkdir(self->mnt[i], 0755));
		self->daemon[i] = nowait_fused_start(self->src[i], self->mnt[i],
						     ATTR_TIMEOUT, "--auto-inval-data");
		ASSERT_LT(0, self->daemon[i]) TH_LOG("setup: nowait-fused did not start");
	}
	for (int k = 0; k < STUCK_FILES; k++) {
		snprintf(name, sizeof(name), "f%d", k);
		ASSERT_TRUE(make_file(self->src[0], name));
		self->stuck[k] = open_cached(self->mnt[0], name, self->buf);
		ASSERT_LE(0, self->stuck[k]) TH_LOG("setup: %s/%s", self->mnt[0], name);
	}
	ASSERT_TRUE(make_file(self->src[1], "healthy"));
	self->healthy = open_cached(self->mnt[1], "healthy", self->buf);
	ASSERT_LE(0, self->healthy);

}

FIXTURE_TEARDOWN(isolation)
{
	char cmd[160];

	if (self->stopped)
		kill(self->daemon[0], SIGCONT);
	for (int k = 0; k < STUCK_FILES; k++)
		if (self->stuck[k] >= 0)
			close(self->stuck[k]);
	if (self->healthy >= 0)
		close(self->healthy);
	nowait_loopfs_remove(&self->ext2);
	for (int i = 0; i < 2; i++) {
		if (!self->mnt[i][0])
			continue;
		if (umount(self->mnt[i]))
			umount2(self->mnt[i], MNT_DETACH);
		rmdir(self->mnt[i]);
		snprintf(cmd, sizeof(cmd), "rm -rf %s", self->src[i]);
		if (system(cmd))
			TH_LOG("teardown: could not remove %s", self->src[i]);
	}
}

/*
 * Let every attribute expire, stop daemon A, and queue a revalidation of
 * each of its files that it will not answer. In the case, not the setup:
 * a case that fails still has its teardown let A go on.
 */
static void stop_daemon_a(struct __test_metadata *_metadata,
			  FIXTURE_DATA(isolation) *self)
{
	nowait_msleep(ATTR_WAIT_MS);
	ASSERT_EQ(0, kill(self->daemon[0], SIGSTOP));
	self->stopped = true;
	for (int k = 0; k < STUCK_FILES; k++)
		NOWAIT_ASSERT_ERRNO(NOWAIT_PREAD(self->stuck[k], self->buf,
						 nowait_page(), 0), EAGAIN);
	/* Let the workers take up the revalidations A will not answer. */
	nowait_msleep(200);
}

/* Where a thread waits: its kernel stack, as a failed case's diagnostics */
static void log_stack(pid_t tid)
{
	char path[64], line[128];
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/task/%d/stack", (int)tid);
	f = fopen(path, "re");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f))
		printf("# waiting in: %s", line);
	fclose(f);
}

/*
 * A thread, not a child process: a child would close its copies of daemon
 * A's files at exit, and each close() of a fuse file asks the daemon
 * (FUSE_FLUSH).
 */
struct job {
	int (*fn)(void *arg);
	void *arg;
	int ret;
	pid_t tid;
	atomic_bool done;
};

static void *job_thread(void *p)
{
	struct job *job = p;

	job->tid = (pid_t)syscall(SYS_gettid);
	job->ret = job->fn(job->arg);
	atomic_store(&job->done, true);
	return NULL;
}

/*
 * Run @fn(@arg) in a thread while daemon A is stopped: its wall time in ms,
 * or -1 when it had not finished after GIVE_UP_MS (its kernel stack is
 * logged, A is let go on, and the thread joined). @fn's return goes to @ret.
 */
static long while_stuck(FIXTURE_DATA(isolation) *self, int (*fn)(void *),
			void *arg, int *ret)
{
	struct job job = { .fn = fn, .arg = arg, .ret = -1 };
	struct timespec t0, t1;
	unsigned int waited = 0;
	long ms = -1;
	pthread_t t;

	atomic_init(&job.done, false);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	if (pthread_create(&t, NULL, job_thread, &job))
		return -1;
	while (!atomic_load(&job.done) && waited < GIVE_UP_MS) {
		nowait_msleep(5);
		waited += 5;
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	if (atomic_load(&job.done)) {
		ms = (t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000;
	} else {
		log_stack(job.tid);
		kill(self->daemon[0], SIGCONT);
		self->stopped = false;
	}
	pthread_join(t, NULL);
	*ret = job.ret;
	return ms;
}

static int blocking_read(void *arg)
{
	static unsigned char buf[FILE_SIZE];

	return pread(*(int *)arg, buf, FILE_SIZE, 0) == FILE_SIZE ? 0 : 1;
}

static int unmount(void *arg)
{
	return umount((const char *)arg) ? errno : 0;
}

/*
 * A flagged read on healthy mount B queues B's own revalidation; the
 * blocking read after it waits for that one only.
 */
TEST_F(isolation, healthy_fuse_read_beside_a_stopped_daemon)
{
	long ms;
	int st;

	stop_daemon_a(_metadata, self);
	NOWAIT_ASSERT_ERRNO(NOWAIT_PREAD(self->healthy, self->buf, nowait_page(), 0),
			    EAGAIN);
	ms = while_stuck(self, blocking_read, &self->healthy, &st);
	ASSERT_LE(0, ms) TH_LOG("the blocking read on B waited for daemon A (%d s and more)",
				GIVE_UP_MS / 1000);
	ASSERT_EQ(0, st) TH_LOG("the blocking read on B failed");
	TH_LOG("the blocking read on B took %ld ms", ms);
	EXPECT_GE(LIMIT_MS, ms);
}

/* A flagged miss on an unrelated ext2, close(), then umount. */
TEST_F(isolation, unrelated_umount_beside_a_stopped_daemon)
{
	char why[NOWAIT_WHY_MAX], path[96];
	long ms;
	int fd, st;

	ASSERT_TRUE(nowait_loopfs_make(&self->ext2, "isolation-ext2", "ext2",
				       "mkfs.ext2 -q -F", 32 << 20, why, sizeof(why)))
		TH_LOG("setup: %s", why);
	snprintf(path, sizeof(path), "%s/file", self->ext2.dir);
	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, nowait_write_pattern(fd, 0, FILE_SIZE, 1));
	ASSERT_EQ(0, fsync(fd));
	NOWAIT_EVICT(fd);
	stop_daemon_a(_metadata, self);
	NOWAIT_ASSERT_ERRNO(NOWAIT_PREAD(fd, self->buf, nowait_page(), 0), EAGAIN);
	ASSERT_EQ(0, close(fd));
	ms = while_stuck(self, unmount, self->ext2.dir, &st);
	ASSERT_LE(0, ms) TH_LOG("umount of ext2 waited for fuse daemon A (%d s and more)",
				GIVE_UP_MS / 1000);
	ASSERT_EQ(0, st) TH_LOG("umount of ext2 failed: %s", nowait_errname(st));
	self->ext2.mounted = false;
	TH_LOG("umount of ext2 took %ld ms", ms);
	EXPECT_GE(LIMIT_MS, ms);
}

TEST_HARNESS_MAIN
