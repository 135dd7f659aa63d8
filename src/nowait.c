// SPDX-License-Identifier: MIT
#define _GNU_SOURCE
#include "nowait.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* Counters live in arrays indexed like the fields of struct nowait_stats. */
#define NCOUNTERS (sizeof(struct nowait_stats) / sizeof(uint64_t))
#define CTR(name) ((int)(offsetof(struct nowait_stats, name) / sizeof(uint64_t)))
#define RATIO_ONE 65536u	/* 1.0 in the fixed-point hit ratio */

struct queue {
	struct nowait_req *head, *tail;
};

#define CACHELINE 64

/*
 * Three groups, each on cache lines of its own: what every read only
 * reads; what the lock guards, which the pool and the reaper write; the
 * counters, which every read writes. Sharing a line would make each read
 * contend with the lock's traffic.
 */
struct nowait_ctx {
	struct nowait_params p;
	const int *alive;	/* 1, on a page a fork()ed child sees zeroed */
	int efd;
	atomic_int never;	/* counter of a context-wide reason to skip inline, or -1 */
	unsigned skip_below, resume_at;	/* hit ratio thresholds, percent * RATIO_ONE */
	unsigned nthreads;
	int stream_efd;			/* wakes the streamer; -1 until it runs */

	_Alignas(CACHELINE) pthread_mutex_t lock;
	pthread_cond_t wake;
	struct queue pending, done;	/* under lock */
	struct queue streams;		/* under lock: reads for the streamer */
	struct nowait_file *files;	/* under lock */
	bool stopping;			/* under lock */
	pthread_t streamer;

	_Alignas(CACHELINE) _Atomic uint64_t stats[NCOUNTERS];
	_Alignas(CACHELINE) pthread_t threads[];
};

/* The adaptive state of one direction, reads or writes, of a file. */
struct adapt {
	atomic_uint ratio;	/* decayed inline hit ratio */
	atomic_uint calls;	/* paces the re-probes while skipping */
	atomic_uint streak;	/* inline attempts in a row that hit in full */
	atomic_bool skipping;	/* below hit_ratio_min, not yet back at twice it */
	atomic_uint unsupported;	/* calls left to skip after EOPNOTSUPP */
};

struct nowait_file {
	struct nowait_ctx *ctx;
	int fd;
	atomic_int never;	/* counter of a reason never to try inline, or -1 */
	bool regular;
	bool stream;		/* pipe, socket or character device */
	bool append;		/* O_APPEND: where a write lands is known only as it runs */
	atomic_bool plain;	/* a stream that refuses RWF_NOWAIT: poll, then read */
	struct adapt rd, wr;
	atomic_uint inflight;	/* queued and not yet reaped */
	atomic_uint nwrites;	/* on the writes list */
	struct nowait_req *writes;	/* under ctx->lock: queued or running, oldest first */
	struct nowait_file *prev, *next;	/* under ctx->lock */
	_Atomic uint64_t stats[NCOUNTERS];
};

/*
 * A fork()ed child has the context's memory but none of its threads, and
 * shares its eventfd with the parent: its copy must not be used.
 */
static bool forked(const struct nowait_ctx *ctx)
{
	return !*ctx->alive;
}

static void count(struct nowait_file *f, int ctr, uint64_t n)
{
	atomic_fetch_add_explicit(&f->stats[ctr], n, memory_order_relaxed);
	atomic_fetch_add_explicit(&f->ctx->stats[ctr], n, memory_order_relaxed);
}

static void snapshot(_Atomic uint64_t *src, struct nowait_stats *stats)
{
	uint64_t v[NCOUNTERS];

	for (size_t i = 0; i < NCOUNTERS; i++)
		v[i] = atomic_load_explicit(&src[i], memory_order_relaxed);
	memcpy(stats, v, sizeof(v));
}

static void push(struct queue *q, struct nowait_req *req)
{
	req->next = NULL;
	if (q->tail)
		q->tail->next = req;
	else
		q->head = req;
	q->tail = req;
}

static struct nowait_req *pop(struct queue *q)
{
	struct nowait_req *req = q->head;

	if (req && !(q->head = req->next))
		q->tail = NULL;
	return req;
}

static void notify(int efd)
{
	uint64_t one = 1;
	/* Fails only when the counter is saturated, i.e. readable anyway. */
	ssize_t n = write(efd, &one, sizeof(one));

	(void)n;
}

/* 0 or -errno; EAGAIN is no error: the counter was already 0. */
static int drain(int efd)
{
	uint64_t v;

	return read(efd, &v, sizeof(v)) < 0 && errno != EAGAIN ? -errno : 0;
}

/*
 * One eventfd write per batch, not per completion: a completion that finds
 * others waiting was announced by the first of them, or by the reap that
 * left them behind (nowait_reap() signals again then).
 */
static void complete(struct nowait_ctx *ctx, struct nowait_req *req)
{
	bool first;

	pthread_mutex_lock(&ctx->lock);
	first = !ctx->done.head;
	push(&ctx->done, req);
	pthread_mutex_unlock(&ctx->lock);
	if (first)
		notify(ctx->efd);
}

/*
 * Plain blocking reads or writes (never RWF_NOWAIT: a would-block answer
 * there could only be requeued forever) of what the inline attempt left,
 * until the full length, EOF or a write that makes no progress. The first
 * call gets the request unchanged, so the kernel has the final word on
 * invalid ones.
 */
static void pool_io(struct nowait_ctx *ctx, struct nowait_req *req)
{
	ssize_t (*io)(int, const struct iovec *, int, off_t, int) =
		req->write ? ctx->p.pwritev2 : ctx->p.preadv2;
	size_t done = req->done;
	ssize_t n;
	int err = 0;

	do {
		const struct iovec *iov = req->iov;
		int cnt = req->iovcnt;
		size_t skip = done;
		struct iovec rest;

		while (cnt > 0 && skip >= iov->iov_len) {
			skip -= iov->iov_len;
			iov++;
			cnt--;
		}
		if (skip) {
			rest.iov_base = (char *)iov->iov_base + skip;
			rest.iov_len = iov->iov_len - skip;
			iov = &rest;
			cnt = 1;
		}
		/* A negative offset (-1: the file position) must reach the kernel as is. */
		n = io(req->file->fd, iov, cnt,
		       req->offset < 0 ? req->offset : req->offset + (off_t)done, 0);
		if (n < 0) {
			err = errno;
		} else if (n > 0) {
			done += n;
			count(req->file, req->write ? CTR(bytes_written_pool) : CTR(bytes_pool), n);
		}
	} while (n > 0 && done < req->want);
	/* Like read(2) and write(2): bytes already transferred win over a later error. */
	req->res = err && done == 0 ? -err : (ssize_t)done;
}

/*
 * EPERM from the inline attempt is a seccomp filter refusing the flag, for
 * every file, or an on-access scanner (fanotify) denying this one file. The
 * plain read of the same request tells them apart: the scanner denies it
 * too. Other errors of that read say nothing either way.
 */
static void judge_eperm(struct nowait_req *req)
{
	if (req->res == -EPERM)
		atomic_store(&req->file->never, CTR(fb_eperm));
	else if (req->res >= 0)
		atomic_store(&req->file->ctx->never, CTR(fb_eperm));
}

/*
 * Whether two writes of f may touch the same bytes. At offset -1 or on an
 * O_APPEND file, where a write lands is known only when it runs.
 */
static bool overlap(const struct nowait_file *f, const struct nowait_req *a,
		    const struct nowait_req *b)
{
	if (f->append || a->offset < 0 || b->offset < 0)
		return true;
	return a->offset < b->offset + (off_t)b->want && b->offset < a->offset + (off_t)a->want;
}

/* Takes req off its file's writes and starts those that waited only for it. */
static void finish_write(struct nowait_ctx *ctx, struct nowait_req *req)
{
	struct nowait_file *f = req->file;
	struct nowait_req **link, *w;

	pthread_mutex_lock(&ctx->lock);
	for (link = &f->writes; *link != req; link = &(*link)->wnext)
		;
	*link = req->wnext;
	for (w = req->wnext; w; w = w->wnext) {
		if (overlap(f, req, w) && !--w->blockers) {
			push(&ctx->pending, w);
			pthread_cond_signal(&ctx->wake);
		}
	}
	atomic_fetch_sub(&f->nwrites, 1);
	pthread_mutex_unlock(&ctx->lock);
}

static void *worker(void *arg)
{
	struct nowait_ctx *ctx = arg;

	for (;;) {
		struct nowait_req *req = NULL;

		pthread_mutex_lock(&ctx->lock);
		while (!ctx->stopping && !(req = pop(&ctx->pending)))
			pthread_cond_wait(&ctx->wake, &ctx->lock);
		pthread_mutex_unlock(&ctx->lock);
		if (!req)
			return NULL;
		pool_io(ctx, req);
		if (req->eperm)
			judge_eperm(req);
		if (req->write)
			finish_write(ctx, req);
		complete(ctx, req);
	}
}

/*
 * One read of a stream, like read(2): what is there, or EOF. False while it
 * would have to wait for data. The first try of a request on a stream that
 * refuses RWF_NOWAIT (old kernels' pipes, most character devices) waits for
 * poll(2) first, so that its plain read finds data.
 */
static bool stream_read(struct nowait_ctx *ctx, struct nowait_req *req, bool fresh)
{
	struct nowait_file *f = req->file;
	bool plain = atomic_load(&f->plain);
	ssize_t n;

	if (plain && fresh)
		return false;
	n = ctx->p.preadv2(f->fd, req->iov, req->iovcnt, req->offset, plain ? 0 : RWF_NOWAIT);
	if (n < 0 && errno == EAGAIN)
		return false;
	if (n < 0 && errno == EOPNOTSUPP && !plain) {
		atomic_store(&f->plain, true);
		return false;
	}
	if (n > 0)
		count(f, CTR(bytes_pool), n);
	req->res = n < 0 ? -errno : n;
	return true;
}

/*
 * Serves the reads of streams: a read waiting for data must not hold a pool
 * thread (the regular files' reads would queue behind it) nor a blocking
 * read(2) that nowait_destroy() could not end. One poll(2) covers them all.
 */
static void *streamer(void *arg)
{
	struct nowait_ctx *ctx = arg;
	struct queue wait = { 0 };
	struct nowait_req *req;
	struct pollfd *pfds = NULL;
	size_t npolled = 0, cap = 0;

	for (;;) {
		struct nowait_req *prev = NULL, *next;
		size_t i = 0, n = 0;
		bool stop;

		pthread_mutex_lock(&ctx->lock);
		stop = ctx->stopping;
		while ((req = pop(&ctx->streams)))
			push(&wait, req);
		pthread_mutex_unlock(&ctx->lock);
		if (stop)
			break;

		/* Requests past npolled arrived since the last poll: try them now. */
		for (req = wait.head; req; req = next, i++) {
			next = req->next;
			if ((i >= npolled || pfds[i + 1].revents) &&
			    stream_read(ctx, req, i >= npolled)) {
				if (prev)
					prev->next = next;
				else
					wait.head = next;
				complete(ctx, req);
			} else {
				prev = req;
				n++;
			}
		}
		wait.tail = prev;

		if (n + 1 > cap) {
			struct pollfd *p = realloc(pfds, (n + 1) * sizeof(*p));

			if (!p) {
				/* Without a slot a request could never be woken. */
				while ((req = pop(&wait))) {
					req->res = -ENOMEM;
					complete(ctx, req);
				}
				npolled = 0;
				continue;
			}
			pfds = p;
			cap = n + 1;
		}
		pfds[0] = (struct pollfd){ .fd = ctx->stream_efd, .events = POLLIN };
		i = 1;
		for (req = wait.head; req; req = req->next, i++)
			pfds[i] = (struct pollfd){ .fd = req->file->fd, .events = POLLIN };
		npolled = n;
		if (poll(pfds, n + 1, -1) < 0)
			for (i = 0; i <= n; i++)
				pfds[i].revents = 0;
		if (pfds[0].revents)
			drain(ctx->stream_efd);
	}
	while ((req = pop(&wait)))
		req->res = -ECANCELED;
	free(pfds);
	return NULL;
}

/* Pool threads must not run the caller's signal handlers (nor stop reads for them). */
static int spawn(struct nowait_ctx *ctx, pthread_t *thread, void *(*fn)(void *))
{
	sigset_t all, old;
	int err;

	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	err = ctx->p.thread_create(thread, NULL, fn, ctx);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return err;
}

static int start_streamer(struct nowait_ctx *ctx)
{
	int err = 0;

	pthread_mutex_lock(&ctx->lock);
	if (ctx->stream_efd < 0) {
		ctx->stream_efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
		if (ctx->stream_efd < 0)
			err = errno;
		else if ((err = spawn(ctx, &ctx->streamer, streamer)))
			close(ctx->stream_efd);
		if (err)
			ctx->stream_efd = -1;
	}
	pthread_mutex_unlock(&ctx->lock);
	return err;
}

/*
 * Cancels what has not started and the stream reads still waiting for data,
 * waits for the regular files' reads that have started, frees everything.
 */
static void teardown(struct nowait_ctx *ctx, unsigned nthreads)
{
	struct nowait_req *req;

	pthread_mutex_lock(&ctx->lock);
	ctx->stopping = true;
	while ((req = pop(&ctx->pending)))
		req->res = -ECANCELED;
	pthread_cond_broadcast(&ctx->wake);
	pthread_mutex_unlock(&ctx->lock);
	for (unsigned i = 0; i < nthreads; i++)
		pthread_join(ctx->threads[i], NULL);
	/* Writes still waiting for an earlier overlapping one never started. */
	for (struct nowait_file *f = ctx->files; f; f = f->next)
		for (req = f->writes; req; req = req->wnext)
			req->res = -ECANCELED;
	if (ctx->stream_efd >= 0) {
		notify(ctx->stream_efd);
		pthread_join(ctx->streamer, NULL);
		close(ctx->stream_efd);
	}
	while (ctx->files) {
		struct nowait_file *f = ctx->files;

		ctx->files = f->next;
		free(f);
	}
	pthread_cond_destroy(&ctx->wake);
	pthread_mutex_destroy(&ctx->lock);
	close(ctx->efd);
	munmap((void *)ctx->alive, (size_t)sysconf(_SC_PAGESIZE));
	free(ctx);
}

int nowait_create(const struct nowait_params *params, struct nowait_ctx **ctxp)
{
	struct nowait_params p = params ? *params : (struct nowait_params){ 0 };
	size_t page = (size_t)sysconf(_SC_PAGESIZE), size;
	struct nowait_ctx *ctx;
	int *alive;
	unsigned i;
	int err = 0;

	/* A field this version does not know yet is not silently ignored. */
	for (i = 0; i < sizeof(p.reserved) / sizeof(p.reserved[0]); i++)
		if (p.reserved[i])
			return -EINVAL;
	if (p.hit_ratio_min > 100 || p.decay_shift > 15 || p.threads > NOWAIT_MAX_THREADS)
		return -EINVAL;
	p.threads = p.threads ? p.threads : 4;
	p.hit_ratio_min = p.hit_ratio_min ? p.hit_ratio_min : 10;
	p.decay_shift = p.decay_shift ? p.decay_shift : 3;
	p.probe_interval = p.probe_interval ? p.probe_interval : 32;
	p.eopnotsupp_reprobe = p.eopnotsupp_reprobe ? p.eopnotsupp_reprobe : 1024;
	p.preadv2 = p.preadv2 ? p.preadv2 : preadv2;
	p.pwritev2 = p.pwritev2 ? p.pwritev2 : pwritev2;
	p.thread_create = p.thread_create ? p.thread_create : pthread_create;

	alive = mmap(NULL, page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (alive == MAP_FAILED)
		return -errno;
	size = sizeof(*ctx) + p.threads * sizeof(pthread_t);
	ctx = aligned_alloc(CACHELINE, (size + CACHELINE - 1) / CACHELINE * CACHELINE);
	if (ctx)
		memset(ctx, 0, size);
	if (!ctx || madvise(alive, page, MADV_WIPEONFORK) < 0) {
		err = ctx ? errno : ENOMEM;
		munmap(alive, page);
		free(ctx);
		return -err;
	}
	*alive = 1;
	ctx->alive = alive;
	ctx->p = p;
	/* Twice the minimum, or halfway to 100% where that is less. */
	ctx->skip_below = p.hit_ratio_min * RATIO_ONE;
	ctx->resume_at = 2 * ctx->skip_below;
	if (ctx->resume_at > (ctx->skip_below + 100 * RATIO_ONE) / 2)
		ctx->resume_at = (ctx->skip_below + 100 * RATIO_ONE) / 2;
	atomic_init(&ctx->never, -1);
	ctx->stream_efd = -1;
	ctx->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (ctx->efd < 0) {
		err = errno;
		munmap(alive, page);
		free(ctx);
		return -err;
	}
	pthread_mutex_init(&ctx->lock, NULL);
	pthread_cond_init(&ctx->wake, NULL);

	for (i = 0; i < p.threads && !err; i++)
		err = spawn(ctx, &ctx->threads[i], worker);
	if (err) {
		teardown(ctx, i - 1);
		return -err;
	}
	ctx->nthreads = p.threads;
	*ctxp = ctx;
	return 0;
}

void nowait_destroy(struct nowait_ctx *ctx)
{
	/*
	 * The child's copy of the lock may have been held at the fork and its
	 * lists may be half updated: close the descriptors, free nothing.
	 */
	if (forked(ctx)) {
		close(ctx->efd);
		if (ctx->stream_efd >= 0)
			close(ctx->stream_efd);
		return;
	}
	teardown(ctx, ctx->nthreads);
}

int nowait_fd(const struct nowait_ctx *ctx)
{
	return forked(ctx) ? -ECHILD : ctx->efd;
}

int nowait_reap(struct nowait_ctx *ctx, struct nowait_req **reqs, int max)
{
	bool more;
	int n = 0;

	if (forked(ctx))
		return -ECHILD;
	/*
	 * Drain before popping: a completion pushed after the drain is popped
	 * here, or left behind and signalled below, or finds the queue empty
	 * and signals itself.
	 */
	n = drain(ctx->efd);
	if (n)
		return n;
	pthread_mutex_lock(&ctx->lock);
	while (n < max && (reqs[n] = pop(&ctx->done)))
		n++;
	more = ctx->done.head;
	pthread_mutex_unlock(&ctx->lock);
	if (more)
		notify(ctx->efd);
	for (int i = 0; i < n; i++)
		atomic_fetch_sub(&reqs[i]->file->inflight, 1);
	return n;
}

int nowait_file_open(struct nowait_ctx *ctx, int fd, struct nowait_file **filep)
{
	struct nowait_file *f;
	struct stat st;
	bool stream;
	int fl, err;

	if (forked(ctx))
		return -ECHILD;
	if (fstat(fd, &st) < 0 || (fl = fcntl(fd, F_GETFL)) < 0)
		return -errno;
	/* Block devices are read like regular files: to the full length. */
	stream = S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode) || S_ISCHR(st.st_mode);
	if (stream && (err = start_streamer(ctx)))
		return -err;
	f = calloc(1, sizeof(*f));
	if (!f)
		return -ENOMEM;
	f->ctx = ctx;
	f->fd = fd;
	/*
	 * EAGAIN from a pipe or socket says nothing about the page cache, and
	 * RWF_NOWAIT on O_DIRECT may do the device I/O inline.
	 */
	atomic_init(&f->never, !S_ISREG(st.st_mode) ? CTR(fb_not_regular) :
			       fl & O_DIRECT ? CTR(fb_odirect) : -1);
	f->stream = stream;
	atomic_init(&f->rd.ratio, RATIO_ONE);
	atomic_init(&f->wr.ratio, RATIO_ONE);
	f->regular = S_ISREG(st.st_mode);
	f->append = fl & O_APPEND;
	pthread_mutex_lock(&ctx->lock);
	f->next = ctx->files;
	if (f->next)
		f->next->prev = f;
	ctx->files = f;
	pthread_mutex_unlock(&ctx->lock);
	*filep = f;
	return 0;
}

int nowait_file_close(struct nowait_file *f)
{
	struct nowait_ctx *ctx = f->ctx;

	if (forked(ctx))
		return -ECHILD;
	if (atomic_load(&f->inflight))
		return -EBUSY;
	pthread_mutex_lock(&ctx->lock);
	if (f->prev)
		f->prev->next = f->next;
	else
		ctx->files = f->next;
	if (f->next)
		f->next->prev = f->prev;
	pthread_mutex_unlock(&ctx->lock);
	free(f);
	return 0;
}

/*
 * hit: the share of an attempt's bytes served inline. Racing submitters may
 * lose a sample; the ratio is only a heuristic.
 */
static void sample(struct nowait_file *f, struct adapt *a, unsigned hit)
{
	unsigned shift = f->ctx->p.decay_shift;
	unsigned r = atomic_load_explicit(&a->ratio, memory_order_relaxed);

	atomic_store_explicit(&a->ratio, r - (r >> shift) + (hit >> shift),
			      memory_order_relaxed);
	if (hit == RATIO_ONE)
		atomic_fetch_add_explicit(&a->streak, 1, memory_order_relaxed);
	else
		atomic_store_explicit(&a->streak, 0, memory_order_relaxed);
}

/* The sample of an attempt that moved n of want bytes. */
static unsigned share(ssize_t n, size_t want)
{
	return (unsigned)((double)n / (double)want * RATIO_ONE);
}

/* The counter of the reason to send this call straight to the pool, or -1. */
static int bypass(struct nowait_file *f, struct adapt *a)
{
	struct nowait_ctx *ctx = f->ctx;
	int why = atomic_load_explicit(&ctx->never, memory_order_relaxed);
	unsigned left, calls, ratio, streak;
	bool skip, flip;

	if (why >= 0)
		return why;
	why = atomic_load_explicit(&f->never, memory_order_relaxed);
	if (why >= 0)
		return why;
	left = atomic_load(&a->unsupported);
	while (left && !atomic_compare_exchange_weak(&a->unsupported, &left, left - 1))
		;
	if (left)
		return CTR(fb_eopnotsupp);
	calls = atomic_fetch_add_explicit(&a->calls, 1, memory_order_relaxed) + 1;
	/*
	 * Hysteresis: a file that stopped hitting resumes the attempts only
	 * at resume_at, twice hit_ratio_min, and after two probe hits in a
	 * row. A cold read that raced its own I/O (the device finished before
	 * the miss returned) is a chance hit. The margin alone does not stop
	 * one: 18 misses leave 9.0%, just under the default minimum, and one
	 * hit lifts that to 20.4%; a second chance hit in a row is rare.
	 */
	skip = atomic_load_explicit(&a->skipping, memory_order_relaxed);
	ratio = atomic_load_explicit(&a->ratio, memory_order_relaxed) * 100;
	streak = atomic_load_explicit(&a->streak, memory_order_relaxed);
	flip = skip ? ratio >= ctx->resume_at && streak >= 2 : ratio < ctx->skip_below;
	if (flip) {
		skip = !skip;
		atomic_store_explicit(&a->skipping, skip, memory_order_relaxed);
	}
	if (skip && calls % ctx->p.probe_interval)
		return CTR(skipped);
	return -1;
}

static int failure(struct nowait_file *f, int err)
{
	switch (err) {
	case EAGAIN:
		sample(f, &f->rd, 0);
		return CTR(misses);
	case EOPNOTSUPP:
		/* Some file systems say it meaning "would block": re-probe now and then. */
		atomic_store(&f->rd.unsupported, f->ctx->p.eopnotsupp_reprobe);
		return CTR(fb_eopnotsupp);
	case ENOSYS:
		atomic_store(&f->ctx->never, CTR(fb_enosys));
		return CTR(fb_enosys);
	case EPERM:	/* whose: the pool's read tells, see judge_eperm() */
		return CTR(fb_eperm);
	case EINVAL:	/* about the request, not the flag: the pool decides */
		return CTR(fb_einval);
	default:	/* e.g. EIO where old kernels meant "unsupported": retry once */
		return CTR(fb_other_error);
	}
}

/*
 * Linux 5.9 and 5.10 could return 0 (so, short) from RWF_NOWAIT before end
 * of file: a short inline read is final only at or past the file size.
 */
static bool at_eof(struct nowait_file *f, off_t offset, ssize_t n)
{
	/* At offset -1 the read moved the file position past its bytes. */
	off_t end = offset >= 0 ? offset + n : lseek(f->fd, 0, SEEK_CUR);
	struct stat st;

	return end >= 0 && fstat(f->fd, &st) == 0 && end >= st.st_size;
}

static ssize_t queue(struct nowait_file *f, struct nowait_req *req, int why)
{
	struct nowait_ctx *ctx = f->ctx;

	count(f, why, 1);
	count(f, CTR(pool_jobs), 1);
	atomic_fetch_add(&f->inflight, 1);
	pthread_mutex_lock(&ctx->lock);
	if (f->stream) {
		push(&ctx->streams, req);
	} else {
		push(&ctx->pending, req);
		pthread_cond_signal(&ctx->wake);
	}
	pthread_mutex_unlock(&ctx->lock);
	if (f->stream)
		notify(ctx->stream_efd);
	return NOWAIT_QUEUED;
}

/*
 * Requests that no file accepts, as preadv2(2) would judge them: no pool
 * round trip to learn that.
 */
static bool invalid(const struct iovec *iov, int iovcnt, off_t offset, size_t *want)
{
	*want = 0;
	if (iovcnt < 0 || iovcnt > IOV_MAX || offset < -1)
		return true;
	for (int i = 0; i < iovcnt; i++) {
		if (iov[i].iov_len > (size_t)SSIZE_MAX - *want)
			return true;
		*want += iov[i].iov_len;
	}
	return false;
}

/* What reads and writes check and record first: 0, or -errno to return at once. */
static int prepare(struct nowait_file *f, struct nowait_req *req, const struct iovec *iov,
		   int iovcnt, off_t offset, bool write)
{
	if (forked(f->ctx))
		return -ECHILD;
	if (invalid(iov, iovcnt, offset, &req->want))
		return -EINVAL;
	req->file = f;
	req->iov = iov;
	req->iovcnt = iovcnt;
	req->offset = offset;
	req->done = 0;
	req->eperm = false;
	req->write = write;
	return 0;
}

/*
 * The adaptive decision and the inline attempt of a prepared read: the
 * byte count when it completed, else NOWAIT_QUEUED with the counter of the
 * reason in *why and the bytes already read in req->done.
 */
static ssize_t attempt_read(struct nowait_file *f, struct nowait_req *req, int *why)
{
	ssize_t n;

	*why = bypass(f, &f->rd);
	if (*why >= 0)
		return NOWAIT_QUEUED;
	n = f->ctx->p.preadv2(f->fd, req->iov, req->iovcnt, req->offset, RWF_NOWAIT);
	if (n < 0) {
		req->eperm = errno == EPERM;
		*why = failure(f, errno);
		return NOWAIT_QUEUED;
	}
	req->done = n;
	count(f, CTR(bytes_inline), n);
	if ((size_t)n == req->want || at_eof(f, req->offset, n)) {
		sample(f, &f->rd, RATIO_ONE);
		count(f, CTR(hits), 1);
		return n;
	}
	sample(f, &f->rd, share(n, req->want));
	*why = n ? CTR(partials) : CTR(fb_zero_before_eof);
	return NOWAIT_QUEUED;
}

static ssize_t submit_read(struct nowait_file *f, struct nowait_req *req,
			   const struct iovec *iov, int iovcnt, off_t offset)
{
	int why = prepare(f, req, iov, iovcnt, offset, false);
	ssize_t n;

	if (why)
		return why;
	n = attempt_read(f, req, &why);
	return n == NOWAIT_QUEUED ? queue(f, req, why) : n;
}

ssize_t nowait_try_readv(struct nowait_file *f, const struct iovec *iov, int iovcnt,
			 off_t offset, size_t *done)
{
	struct nowait_req req;
	int why = prepare(f, &req, iov, iovcnt, offset, false);
	ssize_t n;

	*done = 0;
	if (why)
		return why;
	n = attempt_read(f, &req, &why);
	*done = req.done;
	if (n != NOWAIT_QUEUED)
		return n;
	/*
	 * Without the library's pool there is no plain read to tell a
	 * denied file from a refused flag (judge_eperm()): assume the file.
	 */
	if (req.eperm)
		atomic_store(&f->never, CTR(fb_eperm));
	count(f, why, 1);
	count(f, CTR(pool_jobs), 1);
	return NOWAIT_BLOCKING;
}

ssize_t nowait_try_read(struct nowait_file *f, void *buf, size_t len, off_t offset,
			size_t *done)
{
	struct iovec iov = { buf, len };

	return nowait_try_readv(f, &iov, 1, offset, done);
}

/*
 * To the pool, behind every earlier write of the file it overlaps: those
 * run first, each before the next, whatever thread takes them.
 */
static ssize_t queue_write(struct nowait_file *f, struct nowait_req *req)
{
	struct nowait_ctx *ctx = f->ctx;
	struct nowait_req **tail;

	count(f, CTR(write_pool_jobs), 1);
	atomic_fetch_add(&f->inflight, 1);
	pthread_mutex_lock(&ctx->lock);
	req->blockers = 0;
	for (tail = &f->writes; *tail; tail = &(*tail)->wnext)
		req->blockers += overlap(f, *tail, req);
	req->wnext = NULL;
	*tail = req;
	atomic_fetch_add(&f->nwrites, 1);
	if (!req->blockers) {
		push(&ctx->pending, req);
		pthread_cond_signal(&ctx->wake);
	}
	pthread_mutex_unlock(&ctx->lock);
	return NOWAIT_QUEUED;
}

/* Whether req overlaps a write of its file not yet done; locks only if there is one. */
static bool behind(struct nowait_file *f, const struct nowait_req *req)
{
	bool found = false;

	if (!atomic_load(&f->nwrites))
		return false;
	pthread_mutex_lock(&f->ctx->lock);
	for (const struct nowait_req *w = f->writes; w && !found; w = w->wnext)
		found = overlap(f, w, req);
	pthread_mutex_unlock(&f->ctx->lock);
	return found;
}

static ssize_t submit_write(struct nowait_file *f, struct nowait_req *req,
			    const struct iovec *iov, int iovcnt, off_t offset)
{
	int err = prepare(f, req, iov, iovcnt, offset, true);
	ssize_t n;

	if (err)
		return err;
	/* Pipes and sockets would need a poll for room; devices are not served. */
	if (!f->regular)
		return -EOPNOTSUPP;
	/* An inline write must not overtake a queued one it overlaps. */
	if (behind(f, req) || bypass(f, &f->wr) >= 0)
		return queue_write(f, req);

	n = f->ctx->p.pwritev2(f->fd, iov, iovcnt, offset, RWF_NOWAIT);
	if (n < 0) {
		/*
		 * Kernels and file systems without nonblocking buffered writes
		 * say EOPNOTSUPP, or EAGAIN on every call: the policy learns
		 * either, as for reads.
		 */
		if (errno == EOPNOTSUPP)
			atomic_store(&f->wr.unsupported, f->ctx->p.eopnotsupp_reprobe);
		else
			sample(f, &f->wr, 0);
		return queue_write(f, req);
	}
	req->done = n;
	count(f, CTR(bytes_written_inline), n);
	sample(f, &f->wr, share(n, req->want));
	if ((size_t)n == req->want) {
		count(f, CTR(write_hits), 1);
		return n;
	}
	return queue_write(f, req);
}

/* Once queued, req is the pool's until reaped: no write to it here then. */
static ssize_t result(struct nowait_req *req, ssize_t n)
{
	if (n != NOWAIT_QUEUED)
		req->res = n;
	return n;
}

/* The iovec of a one-buffer call, kept in req where the pool finds it. */
static const struct iovec *single(struct nowait_req *req, const void *buf, size_t len)
{
	req->one.iov_base = (void *)buf;
	req->one.iov_len = len;
	return &req->one;
}

ssize_t nowait_writev(struct nowait_file *f, struct nowait_req *req,
		      const struct iovec *iov, int iovcnt, off_t offset)
{
	return result(req, submit_write(f, req, iov, iovcnt, offset));
}

ssize_t nowait_write(struct nowait_file *f, struct nowait_req *req,
		     const void *buf, size_t len, off_t offset)
{
	return nowait_writev(f, req, single(req, buf, len), 1, offset);
}

ssize_t nowait_readv(struct nowait_file *f, struct nowait_req *req,
		     const struct iovec *iov, int iovcnt, off_t offset)
{
	return result(req, submit_read(f, req, iov, iovcnt, offset));
}

ssize_t nowait_read(struct nowait_file *f, struct nowait_req *req,
		    void *buf, size_t len, off_t offset)
{
	return nowait_readv(f, req, single(req, buf, len), 1, offset);
}

int nowait_stats(struct nowait_ctx *ctx, struct nowait_stats *stats)
{
	if (forked(ctx))
		return -ECHILD;
	snapshot(ctx->stats, stats);
	return 0;
}

int nowait_file_stats(struct nowait_file *f, struct nowait_stats *stats)
{
	if (forked(f->ctx))
		return -ECHILD;
	snapshot(f->stats, stats);
	return 0;
}
