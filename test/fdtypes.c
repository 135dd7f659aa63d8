// SPDX-License-Identifier: MIT
/*
 * Descriptors that are neither regular files nor pipes or sockets: eventfd,
 * timerfd, signalfd, inotify, a pty, character devices. Their reads wait
 * for readiness in the streamer, never in a blocking read of a shared
 * thread: while one waits, a disk read behind it (one pool thread, or
 * io_uring) and a pipe read of the same context complete; once ready it
 * completes with the data; a waiting one is cancelled, and destroy with
 * one waiting returns at once. Both backends.
 */
#include "helpers.h"

#include <errno.h>
#include <fcntl.h>
#include <pty.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/timerfd.h>

static int backend;

/* Inline attempts of the disk file miss, so its read goes to the backend. */
static ssize_t miss_preadv2(int fd, const struct iovec *iov, int iovcnt, off_t off, int flags)
{
	struct stat st;

	if ((flags & RWF_NOWAIT) && fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
		errno = EAGAIN;
		return -1;
	}
	return preadv2(fd, iov, iovcnt, off, flags);
}

struct ctx_env {
	struct nowait_ctx *ctx;
	struct nowait_file *disk, *pipe;
	int disk_fd, pipe_fds[2];
};

static void env_open(struct ctx_env *e)
{
	struct nowait_params p = { .threads = 1, .backend = backend, .preadv2 = miss_preadv2 };

	CHECK(nowait_create(&p, &e->ctx) == 0);
	CHECK(nowait_backend(e->ctx) == backend);
	e->disk_fd = t_file(65536);
	CHECK(pipe(e->pipe_fds) == 0);
	CHECK(nowait_file_open(e->ctx, e->disk_fd, &e->disk) == 0);
	CHECK(nowait_file_open(e->ctx, e->pipe_fds[0], &e->pipe) == 0);
}

/* While something else of the context waits: a disk read and a pipe read complete. */
static void others_complete(struct ctx_env *e)
{
	struct nowait_req d = { 0 }, p = { 0 };
	char dbuf[4096], pbuf[8];

	CHECK(nowait_read(e->disk, &d, dbuf, sizeof(dbuf), 8192) == NOWAIT_QUEUED);
	CHECK(t_wait(e->ctx) == &d && d.res == sizeof(dbuf) && t_data_ok(dbuf, 8192, sizeof(dbuf)));
	CHECK(nowait_read(e->pipe, &p, pbuf, sizeof(pbuf), -1) == NOWAIT_QUEUED);
	CHECK(write(e->pipe_fds[1], "p", 1) == 1);
	CHECK(t_wait(e->ctx) == &p && p.res == 1 && pbuf[0] == 'p');
}

/* A read of f waits, others complete meanwhile; ready() makes it complete with want bytes. */
static void waits_then_reads(struct ctx_env *e, struct nowait_file *f, void *buf, size_t len,
			     void (*ready)(void *), void *arg, ssize_t want)
{
	struct nowait_req r = { 0 };

	CHECK(nowait_read(f, &r, buf, len, -1) == NOWAIT_QUEUED);
	others_complete(e);
	ready(arg);
	CHECK(t_wait(e->ctx) == &r);
	if (r.res != want)
		t_fail("res %zd, wanted %zd", r.res, want);
}

/* A waiting read cancelled, then another left waiting for destroy to end. */
static void cancel_and_destroy(struct ctx_env *e, struct nowait_file *f, void *buf, size_t len)
{
	struct nowait_req r = { 0 }, last = { 0 };

	CHECK(nowait_read(f, &r, buf, len, -1) == NOWAIT_QUEUED);
	CHECK(nowait_cancel(e->ctx, &r) == 0);
	CHECK(t_wait(e->ctx) == &r && r.res == -ECANCELED);
	CHECK(nowait_read(f, &last, buf, len, -1) == NOWAIT_QUEUED);
	CHECK(nowait_destroy(e->ctx) == 0);
	CHECK(last.res == -ECANCELED);
	close(e->disk_fd);
	close(e->pipe_fds[0]);
	close(e->pipe_fds[1]);
}

static void eventfd_ready(void *arg)
{
	uint64_t one = 1;

	CHECK(write(*(int *)arg, &one, sizeof(one)) == sizeof(one));
}

static void test_eventfd(void)
{
	struct ctx_env e;
	struct nowait_file *f;
	uint64_t v = 0;
	int fd = eventfd(0, EFD_CLOEXEC);	/* blocking */

	env_open(&e);
	CHECK(fd >= 0 && nowait_file_open(e.ctx, fd, &f) == 0);
	waits_then_reads(&e, f, &v, sizeof(v), eventfd_ready, &fd, sizeof(v));
	CHECK(v == 1);
	cancel_and_destroy(&e, f, &v, sizeof(v));
	close(fd);
}

static void timerfd_ready(void *arg)
{
	struct itimerspec its = { .it_value = { 0, 20 * 1000000 } };

	CHECK(timerfd_settime(*(int *)arg, 0, &its, NULL) == 0);
}

static void test_timerfd(void)
{
	struct ctx_env e;
	struct nowait_file *f;
	uint64_t ticks = 0;
	int fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC);

	env_open(&e);
	CHECK(fd >= 0 && nowait_file_open(e.ctx, fd, &f) == 0);
	waits_then_reads(&e, f, &ticks, sizeof(ticks), timerfd_ready, &fd, sizeof(ticks));
	CHECK(ticks == 1);
	cancel_and_destroy(&e, f, &ticks, sizeof(ticks));
	close(fd);
}

static void signal_ready(void *arg)
{
	(void)arg;
	CHECK(kill(getpid(), SIGUSR1) == 0);
}

static void test_signalfd(void)
{
	struct signalfd_siginfo si = { 0 };
	struct ctx_env e;
	struct nowait_file *f;
	sigset_t set;
	int fd;

	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	CHECK(sigprocmask(SIG_BLOCK, &set, NULL) == 0);
	fd = signalfd(-1, &set, SFD_CLOEXEC);
	env_open(&e);
	CHECK(fd >= 0 && nowait_file_open(e.ctx, fd, &f) == 0);
	waits_then_reads(&e, f, &si, sizeof(si), signal_ready, NULL, sizeof(si));
	CHECK(si.ssi_signo == SIGUSR1);
	cancel_and_destroy(&e, f, &si, sizeof(si));
	close(fd);
}

static void inotify_ready(void *arg)
{
	char path[4200];
	int fd;

	snprintf(path, sizeof(path), "%s/new", (const char *)arg);
	fd = open(path, O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
	CHECK(fd >= 0);
	close(fd);
	unlink(path);
}

static void test_inotify(void)
{
	char dir[4096], buf[4096] __attribute__((aligned(8)));
	const char *base = getenv("NOWAIT_TEST_DIR");
	struct ctx_env e;
	struct nowait_file *f;
	int fd = inotify_init1(IN_CLOEXEC);

	snprintf(dir, sizeof(dir), "%s/nowait-inotify-XXXXXX", base ? base : "/var/tmp");
	CHECK(mkdtemp(dir));
	CHECK(fd >= 0 && inotify_add_watch(fd, dir, IN_CREATE) >= 0);
	env_open(&e);
	CHECK(nowait_file_open(e.ctx, fd, &f) == 0);
	/* inotify refuses RWF_NOWAIT: read plainly once ready, one event "new". */
	waits_then_reads(&e, f, buf, sizeof(buf), inotify_ready, dir,
			 (ssize_t)(sizeof(struct inotify_event) + 16));
	CHECK(!strcmp(((struct inotify_event *)buf)->name, "new"));
	cancel_and_destroy(&e, f, buf, sizeof(buf));
	close(fd);
	rmdir(dir);
}

/*
 * A blocking pty master with two reads queued and one line there: the
 * first gets it, the second waits without blocking the streamer.
 */
static void test_pty(void)
{
	struct nowait_req first = { 0 }, second = { 0 };
	struct ctx_env e;
	struct nowait_file *f;
	char buf[2][64];
	int master, slave;

	if (openpty(&master, &slave, NULL, NULL, NULL) < 0)
		t_fail("openpty: %s", strerror(errno));
	env_open(&e);
	CHECK(nowait_file_open(e.ctx, master, &f) == 0);
	CHECK(nowait_read(f, &first, buf[0], sizeof(buf[0]), -1) == NOWAIT_QUEUED);
	CHECK(nowait_read(f, &second, buf[1], sizeof(buf[1]), -1) == NOWAIT_QUEUED);
	others_complete(&e);
	CHECK(write(slave, "line", 4) == 4);
	CHECK(t_wait(e.ctx) == &first && first.res == 4 && !memcmp(buf[0], "line", 4));
	others_complete(&e);
	CHECK(nowait_cancel(e.ctx, &second) == 0);
	CHECK(t_wait(e.ctx) == &second && second.res == -ECANCELED);
	cancel_and_destroy(&e, f, buf[1], sizeof(buf[1]));
	close(master);
	close(slave);
}

/* Devices without a poll method: one RWF_NOWAIT read, its answer the result. */
static void test_chardev(void)
{
	struct nowait_req r = { 0 };
	struct ctx_env e;
	struct nowait_file *zero, *null;
	char buf[64];
	int zfd = open("/dev/zero", O_RDONLY | O_CLOEXEC), nfd = open("/dev/null", O_RDONLY | O_CLOEXEC);

	CHECK(zfd >= 0 && nfd >= 0);
	env_open(&e);
	CHECK(nowait_file_open(e.ctx, zfd, &zero) == 0);
	CHECK(nowait_file_open(e.ctx, nfd, &null) == 0);
	memset(buf, 1, sizeof(buf));
	CHECK(nowait_read(zero, &r, buf, sizeof(buf), -1) == NOWAIT_QUEUED);
	CHECK(t_wait(e.ctx) == &r && r.res == sizeof(buf) && !buf[0] && !buf[63]);
	CHECK(nowait_read(null, &r, buf, sizeof(buf), -1) == NOWAIT_QUEUED);
	CHECK(t_wait(e.ctx) == &r && r.res == 0);
	others_complete(&e);
	CHECK(nowait_destroy(e.ctx) == 0);
	close(e.disk_fd);
	close(e.pipe_fds[0]);
	close(e.pipe_fds[1]);
	close(zfd);
	close(nfd);
}

int main(void)
{
	struct nowait_params p = { .backend = NOWAIT_BACKEND_IO_URING };
	struct nowait_ctx *probe;
	int backends[2] = { NOWAIT_BACKEND_THREADS, NOWAIT_BACKEND_IO_URING }, n = 2;

	t_start(120);
	/* Where io_uring cannot be set up, backend.c says why; threads only then. */
	if (nowait_create(&p, &probe) == 0)
		CHECK(nowait_destroy(probe) == 0);
	else
		n = 1;
	for (int i = 0; i < n; i++) {
		backend = backends[i];
		printf("backend %d\n", backend);
		test_eventfd();
		test_timerfd();
		test_signalfd();
		test_inotify();
		test_pty();
		test_chardev();
	}
	return 0;
}
