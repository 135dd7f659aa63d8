// SPDX-License-Identifier: MIT
#include "helpers.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/statfs.h>
#include <unistd.h>

atomic_int t_nowait_calls;
atomic_int t_nowait_errno;
atomic_int t_pool_errno;
atomic_size_t t_nowait_limit;

static _Noreturn void vquit(int code, const char *tag, const char *fmt, va_list ap)
{
	printf("%s: ", tag);
	vprintf(fmt, ap);
	printf("\n");
	fflush(stdout);
	exit(code);
}

void t_fail(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vquit(1, "FAIL", fmt, ap);
}

void t_skip(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vquit(T_SKIP, "SKIP", fmt, ap);
}

/* A hung test must fail, not stall the run: SIGALRM's default action kills it. */
void t_start(unsigned seconds)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	alarm(seconds);
}

uint8_t t_byte(off_t off)
{
	return (uint8_t)(off ^ (off >> 8) ^ (off >> 16) ^ 0x5a);
}

bool t_data_ok(const void *buf, off_t off, size_t len)
{
	const uint8_t *p = buf;

	for (size_t i = 0; i < len; i++)
		if (p[i] != t_byte(off + (off_t)i))
			return false;
	return true;
}

/*
 * An unlinked file filled with t_byte(), on a file system where page-cache
 * eviction and RWF_NOWAIT work: tmpfs (maybe /tmp) has neither.
 */
int t_file(size_t size)
{
	const char *dir = getenv("NOWAIT_TEST_DIR");
	char path[4096];
	uint8_t buf[65536];
	struct statfs sfs;
	int fd;

	dir = dir ? dir : "/var/tmp";
	if (statfs(dir, &sfs) < 0)
		t_fail("statfs %s: %s", dir, strerror(errno));
	if (sfs.f_type == TMPFS_MAGIC || sfs.f_type == OVERLAYFS_SUPER_MAGIC)
		t_skip("%s is on %s: no eviction or RWF_NOWAIT there; set NOWAIT_TEST_DIR",
		       dir, sfs.f_type == TMPFS_MAGIC ? "tmpfs" : "overlayfs");
	snprintf(path, sizeof(path), "%s/nowait-test-XXXXXX", dir);
	fd = mkstemp(path);
	if (fd < 0)
		t_fail("mkstemp %s: %s", path, strerror(errno));
	unlink(path);
	for (size_t off = 0; off < size; off += sizeof(buf)) {
		size_t n = size - off < sizeof(buf) ? size - off : sizeof(buf);

		for (size_t i = 0; i < n; i++)
			buf[i] = t_byte((off_t)(off + i));
		if (pwrite(fd, buf, n, (off_t)off) != (ssize_t)n)
			t_fail("pwrite: %s", strerror(errno));
	}
	return fd;
}

/* Pages of [off, off + len) in the page cache; off must be page aligned. */
size_t t_resident(int fd, off_t off, size_t len)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE), pages = (len + page - 1) / page, n = 0;
	unsigned char *vec = malloc(pages);
	void *map = mmap(NULL, len, PROT_READ, MAP_SHARED, fd, off);

	if (!vec || map == MAP_FAILED || mincore(map, len, vec) < 0)
		t_fail("mincore: %s", strerror(errno));
	for (size_t i = 0; i < pages; i++)
		n += vec[i] & 1;
	munmap(map, len);
	free(vec);
	return n;
}

/*
 * Makes the next read of the range a miss, or skips the test if it cannot.
 * Pages still being read ahead by an earlier read escape both eviction
 * (locked) and mincore (not uptodate), so give such I/O a moment first.
 */
void t_evict(int fd, off_t off, size_t len)
{
	usleep(10000);
	if (fdatasync(fd) < 0 || posix_fadvise(fd, off, (off_t)len, POSIX_FADV_DONTNEED))
		t_fail("evict: %s", strerror(errno));
	if (t_resident(fd, off, len))
		t_skip("cannot evict from the page cache here (fadvise DONTNEED left pages)");
}

void t_warm(int fd, off_t off, size_t len)
{
	char buf[65536];

	for (size_t done = 0; done < len;) {
		size_t n = len - done < sizeof(buf) ? len - done : sizeof(buf);

		if (pread(fd, buf, n, off + (off_t)done) != (ssize_t)n)
			t_fail("pread: %s", strerror(errno));
		done += n;
	}
	CHECK(t_resident(fd, off, len) == (len + 4095) / 4096);
}

struct nowait_req *t_wait(struct nowait_ctx *ctx)
{
	struct pollfd pfd = { .fd = nowait_fd(ctx), .events = POLLIN };
	struct nowait_req *req;

	for (;;) {
		if (poll(&pfd, 1, 10000) != 1)
			t_fail("no completion within 10 s");
		if (nowait_reap(ctx, &req, 1) == 1)
			return req;
	}
}

ssize_t t_preadv2(int fd, const struct iovec *iov, int iovcnt, off_t off, int flags)
{
	struct iovec capped[16];
	size_t limit = atomic_load(&t_nowait_limit);
	int err;

	if (!(flags & RWF_NOWAIT)) {
		err = atomic_load(&t_pool_errno);
	} else {
		atomic_fetch_add(&t_nowait_calls, 1);
		err = atomic_load(&t_nowait_errno);
		if (err == T_RETURN_ZERO)
			return 0;
		if (limit && iovcnt > 0 && iovcnt <= 16) {
			int n = 0;

			for (; n < iovcnt && limit; n++) {
				capped[n] = iov[n];
				if (capped[n].iov_len > limit)
					capped[n].iov_len = limit;
				limit -= capped[n].iov_len;
			}
			iov = capped;
			iovcnt = n;
		}
	}
	if (err) {
		errno = err;
		return -1;
	}
	return preadv2(fd, iov, iovcnt, off, flags);
}

static pthread_mutex_t gate_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t gate_cond = PTHREAD_COND_INITIALIZER;
static int gate_held, gate_waiting;
static bool gate_closed;

void t_gate_close(int n)
{
	pthread_mutex_lock(&gate_lock);
	gate_closed = true;
	gate_held = n;
	pthread_mutex_unlock(&gate_lock);
}

void t_gate_wait(int n)
{
	pthread_mutex_lock(&gate_lock);
	while (gate_waiting < n)
		pthread_cond_wait(&gate_cond, &gate_lock);
	pthread_mutex_unlock(&gate_lock);
}

void t_gate_open(void)
{
	pthread_mutex_lock(&gate_lock);
	gate_closed = false;
	gate_held = 0;
	pthread_cond_broadcast(&gate_cond);
	pthread_mutex_unlock(&gate_lock);
}

/* 0, or -1 with errno EAGAIN for an inline attempt; waits at a closed gate. */
static int gate(int flags)
{
	if (flags & RWF_NOWAIT) {
		errno = EAGAIN;
		return -1;
	}
	pthread_mutex_lock(&gate_lock);
	if (gate_held > 0) {
		gate_held--;
		gate_waiting++;
		pthread_cond_broadcast(&gate_cond);
		while (gate_closed)
			pthread_cond_wait(&gate_cond, &gate_lock);
		gate_waiting--;
	}
	pthread_mutex_unlock(&gate_lock);
	return 0;
}

ssize_t t_gated_preadv2(int fd, const struct iovec *iov, int iovcnt, off_t off, int flags)
{
	return gate(flags) ? -1 : preadv2(fd, iov, iovcnt, off, flags);
}

ssize_t t_gated_pwritev2(int fd, const struct iovec *iov, int iovcnt, off_t off, int flags)
{
	return gate(flags) ? -1 : pwritev2(fd, iov, iovcnt, off, flags);
}
