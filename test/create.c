// SPDX-License-Identifier: MIT
/*
 * Context creation fails cleanly: bad parameters (a pool above
 * NOWAIT_MAX_THREADS too) give EINVAL, and a pool
 * thread that cannot be created gives EAGAIN after the ones already started
 * are stopped and joined. The thread_create hook sees every thread the
 * library starts, the one for pipes too, so it can name them.
 */
#include "helpers.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>

static atomic_int calls, fail_at;

static int flaky_create(pthread_t *thread, const pthread_attr_t *attr,
			void *(*fn)(void *), void *arg)
{
	if (atomic_fetch_add(&calls, 1) + 1 == atomic_load(&fail_at))
		return EAGAIN;
	return pthread_create(thread, attr, fn, arg);
}

static int named_create(pthread_t *thread, const pthread_attr_t *attr,
			void *(*fn)(void *), void *arg)
{
	int err = pthread_create(thread, attr, fn, arg);

	/* A name is a nicety: failing to set it must not fail the pool. */
	if (!err)
		pthread_setname_np(*thread, "nowait-test");
	return err;
}

/* Threads of this process called nowait-test. */
static int named(void)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;
	char path[300], comm[32];
	int n = 0;

	CHECK(d);
	while ((e = readdir(d))) {
		FILE *fp;

		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%s/comm", e->d_name);
		fp = fopen(path, "r");
		if (!fp)
			continue;	/* a thread that just ended */
		n += fgets(comm, sizeof(comm), fp) && !strcmp(comm, "nowait-test\n");
		fclose(fp);
	}
	closedir(d);
	return n;
}

static void names(void)
{
	struct nowait_params p = { .thread_create = named_create, .threads = 3 };
	struct nowait_ctx *ctx;
	struct nowait_file *f;
	int fds[2];

	CHECK(pipe(fds) == 0);
	CHECK(nowait_create(&p, &ctx) == 0);
	CHECK(named() == 3);
	CHECK(nowait_file_open(ctx, fds[0], &f) == 0);
	CHECK(named() == 4);
	nowait_destroy(ctx);
	close(fds[0]);
	close(fds[1]);
}

static int threads(void)
{
	DIR *d = opendir("/proc/self/task");
	int n = 0;

	CHECK(d);
	while (readdir(d))
		n++;
	closedir(d);
	return n;
}

/* A joined thread may linger in /proc/self/task for a moment. */
static bool threads_settle(int n)
{
	for (int i = 0; i < 200 && threads() != n; i++)
		usleep(5000);
	return threads() == n;
}

int main(void)
{
	struct nowait_params p = { .thread_create = flaky_create, .threads = 4 };
	struct nowait_ctx *ctx = NULL;
	int before;

	t_start(30);
	CHECK(nowait_create(&(struct nowait_params){ .hit_ratio_min = 101 }, &ctx) == -EINVAL);
	CHECK(nowait_create(&(struct nowait_params){ .decay_shift = 16 }, &ctx) == -EINVAL);
	/* 32-bit: the allocation size of a larger pool may wrap. */
	CHECK(nowait_create(&(struct nowait_params){ .threads = NOWAIT_MAX_THREADS + 1 },
			    &ctx) == -EINVAL);
	CHECK(nowait_create(&(struct nowait_params){ .threads = -1u }, &ctx) == -EINVAL);

	/* After a first pool, so that runtime helper threads (TSan's) exist. */
	CHECK(nowait_create(&p, &ctx) == 0);
	before = threads() - 4;
	nowait_destroy(ctx);
	CHECK(threads_settle(before));
	ctx = NULL;
	for (int at = 1; at <= 4; at++) {
		atomic_store(&calls, 0);
		atomic_store(&fail_at, at);
		CHECK(nowait_create(&p, &ctx) == -EAGAIN);
		CHECK(!ctx && atomic_load(&calls) == at);
		CHECK(threads_settle(before));
	}

	names();
	return 0;
}
