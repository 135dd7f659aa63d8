// SPDX-License-Identifier: MIT
/*
 * nowait-sum FILE...: reads the files concurrently through libnowait from
 * one epoll loop, one 64 KiB read in flight per file, then prints each
 * file's size and FNV-1a hash and the library's counters.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <nowait.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

struct job {
	const char *name;
	int fd;
	struct nowait_file *file;
	struct nowait_req req;
	off_t off;
	uint64_t hash;
	int err;
	char buf[65536];
};

static void consume(struct job *j, size_t n)
{
	for (size_t i = 0; i < n; i++)
		j->hash = (j->hash ^ (unsigned char)j->buf[i]) * 0x100000001b3;
	j->off += (off_t)n;
}

/* Reads on while they hit inline; true while a read is queued. */
static bool advance(struct job *j)
{
	for (;;) {
		ssize_t n = nowait_read(j->file, &j->req, j->buf, sizeof(j->buf), j->off);

		if (n == NOWAIT_QUEUED)
			return true;
		if (n <= 0) {
			j->err = (int)-n;
			return false;
		}
		consume(j, (size_t)n);
	}
}

int main(int argc, char **argv)
{
	struct epoll_event ev = { .events = EPOLLIN };
	struct nowait_req *done[16];
	struct nowait_stats st;
	struct nowait_ctx *ctx;
	struct job *jobs;
	int ep, err, i, n, pending = 0, status = 0;

	if (argc < 2) {
		fprintf(stderr, "usage: %s FILE...\n", argv[0]);
		return 2;
	}
	jobs = calloc((size_t)argc - 1, sizeof(*jobs));
	err = jobs ? nowait_create(NULL, &ctx) : -ENOMEM;
	if (err) {
		fprintf(stderr, "nowait_create: %s\n", strerror(-err));
		return 1;
	}
	ep = epoll_create1(EPOLL_CLOEXEC);
	if (ep < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, nowait_fd(ctx), &ev) < 0) {
		perror("epoll");
		return 1;
	}

	for (i = 0; i < argc - 1; i++) {
		struct job *j = &jobs[i];

		j->name = argv[i + 1];
		j->hash = 0xcbf29ce484222325;
		j->req.user_data = j;
		j->fd = open(j->name, O_RDONLY | O_CLOEXEC);
		err = j->fd < 0 ? errno : -nowait_file_open(ctx, j->fd, &j->file);
		if (err)
			j->err = err;
		else
			pending += advance(j);
	}

	while (pending) {
		if (epoll_wait(ep, &ev, 1, -1) < 0) {
			if (errno == EINTR)
				continue;
			perror("epoll_wait");
			return 1;
		}
		n = nowait_reap(ctx, done, 16);
		for (i = 0; i < n; i++) {
			struct job *j = done[i]->user_data;

			pending--;
			if (j->req.res <= 0)
				j->err = (int)-j->req.res;
			else
				consume(j, (size_t)j->req.res);
			if (j->req.res > 0)
				pending += advance(j);
		}
	}

	for (i = 0; i < argc - 1; i++) {
		struct job *j = &jobs[i];

		if (j->err) {
			fprintf(stderr, "%s: %s\n", j->name, strerror(j->err));
			status = 1;
		} else {
			printf("%016" PRIx64 " %12jd %s\n", j->hash, (intmax_t)j->off, j->name);
		}
		if (j->file)
			nowait_file_close(j->file);
		if (j->fd >= 0)
			close(j->fd);
	}
	nowait_stats(ctx, &st);
	fprintf(stderr, "hits %" PRIu64 " misses %" PRIu64 " partials %" PRIu64
		" skipped %" PRIu64 " pool jobs %" PRIu64 " bytes inline %" PRIu64
		" pool %" PRIu64 "\n", st.hits, st.misses, st.partials, st.skipped,
		st.pool_jobs, st.bytes_inline, st.bytes_pool);
	nowait_destroy(ctx);
	close(ep);
	free(jobs);
	return status;
}
