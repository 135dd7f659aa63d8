// SPDX-License-Identifier: MIT
#define _GNU_SOURCE
#include "nowait.h"

#include <errno.h>
#include <fcntl.h>
#ifndef NOWAIT_NO_URING
#include <liburing.h>
#else
/*
 * Built without liburing (make NW_URING=no): the ring never comes up
 * (io_uring_queue_init says ENOSYS, so AUTO is threads and IO_URING fails),
 * and nothing else below is reached; these only let it compile.
 */
struct io_uring { int ring_fd; };
struct io_uring_sqe { int unused; };
struct io_uring_cqe { int res; };
static int io_uring_queue_init(unsigned n, struct io_uring *r, unsigned fl)
{
	(void)n, (void)r, (void)fl;
	return -ENOSYS;
}
static void io_uring_queue_exit(struct io_uring *r) { (void)r; }
static int io_uring_register_eventfd(struct io_uring *r, int fd) { (void)r, (void)fd; return -ENOSYS; }
static int io_uring_register_iowq_max_workers(struct io_uring *r, unsigned *w)
{
	(void)r, (void)w;
	return -ENOSYS;
}
static struct io_uring_sqe *io_uring_get_sqe(struct io_uring *r) { (void)r; return NULL; }
static int io_uring_submit(struct io_uring *r) { (void)r; return -ENOSYS; }
static int io_uring_submit_and_wait(struct io_uring *r, unsigned n) { (void)r, (void)n; return -ENOSYS; }
static unsigned io_uring_sq_ready(const struct io_uring *r) { (void)r; return 0; }
static int io_uring_peek_cqe(struct io_uring *r, struct io_uring_cqe **c) { (void)r, (void)c; return -EAGAIN; }
static void io_uring_cqe_seen(struct io_uring *r, struct io_uring_cqe *c) { (void)r, (void)c; }
static void *io_uring_cqe_get_data(const struct io_uring_cqe *c) { (void)c; return NULL; }
static void io_uring_sqe_set_data(struct io_uring_sqe *s, void *d) { (void)s, (void)d; }
static void io_uring_prep_readv(struct io_uring_sqe *s, int fd, const struct iovec *v, unsigned n,
				off_t o)
{
	(void)s, (void)fd, (void)v, (void)n, (void)o;
}
static void io_uring_prep_writev(struct io_uring_sqe *s, int fd, const struct iovec *v, unsigned n,
				 off_t o)
{
	(void)s, (void)fd, (void)v, (void)n, (void)o;
}
static void io_uring_prep_cancel64(struct io_uring_sqe *s, uint64_t d, int fl)
{
	(void)s, (void)d, (void)fl;
}
#endif
#include <limits.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* Counters live in arrays indexed like the fields of struct nowait_stats. */
#define NCOUNTERS (sizeof(struct nowait_stats) / sizeof(uint64_t))
#define CTR(name) ((int)(offsetof(struct nowait_stats, name) / sizeof(uint64_t)))
#define RATIO_ONE 65536u	/* 1.0 in the fixed-point hit ratio */
#define STREAK_MAX 2	/* the resume rule asks for two full hits in a row: no need to count on */

struct queue {
	struct nowait_req *head, *tail;
};

/* Files in a line, linked by their qnext: the streamer's to-do, or the closed ones. */
struct files {
	struct nowait_file *head, *tail;
};

/*
 * Where a request is (req->state), each change under the lock named. The
 * states in the library are unlikely values, so that a second submission
 * of a request still in the library is refused (-EBUSY) even when the
 * caller did not zero the struct before its first one.
 */
enum {
	ST_IDLE = 0,		/* not in the library: completed inline, or reaped */
	ST_QUEUED = 0x6e770a01,	/* in a pool queue (pool lock) */
	ST_BLOCKED,		/* a write behind an earlier overlapping one (ctx lock) */
	ST_RUNNING,		/* in a pool thread (pool lock), or in io_uring (ctx lock) */
	ST_STREAM,		/* a stream read waiting for data, on its file's queue (ctx lock) */
	ST_STREAM_BUSY,		/* the streamer is reading it now, unlocked (ctx lock) */
	ST_DONE,		/* on the done queue (ctx lock) */
};

/*
 * Changes are made under the locks named above; reads that are not under
 * them (a second submission, which must not race with the library's own
 * change) are atomic, as are the changes, so no access is a data race.
 */
static void set_state(struct nowait_req *req, int state)
{
	__atomic_store_n(&req->state, state, __ATOMIC_RELEASE);
}

static int get_state(const struct nowait_req *req)
{
	return __atomic_load_n(&req->state, __ATOMIC_ACQUIRE);
}

/* nowait_file.magic: a registered file, and one nowait_file_close() closed. */
#define FILE_OPEN 0x6e77f11eu
#define FILE_CLOSED 0x6e77deadu

/*
 * While background requests wait, a pool thread takes at most this many
 * interactive ones in a row before one of them: a busy server delays a
 * scan, but never stops it.
 */
#define BACKGROUND_EVERY 16
#define RING_ENTRIES 256

#define CACHELINE 64

struct slot {
	struct nowait_pool *pool;
	pthread_t thread;
	bool started;	/* under pool lock; written by grow() only */
	bool exited;	/* under pool lock: started, then ended (idle), not yet joined */
};

/*
 * Threads that serve the regular files' queued requests of one or more
 * contexts. Grows on demand up to max, and threads above min end after
 * idle_ms without work.
 */
struct nowait_pool {
	const int *alive;	/* see forked() */
	unsigned min, max, idle_ms;
	int (*thread_create)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);
	bool shared;		/* made by nowait_pool_create() */

	_Alignas(CACHELINE) pthread_mutex_t lock;
	pthread_cond_t wake;	/* work queued, or stopping */
	pthread_cond_t quiet;	/* a context's running count or the thread count fell */
	struct queue q[2];	/* by class, interactive first */
	unsigned streak;	/* interactive requests taken while background ones waited */
	unsigned queued, running, nthreads, nidle;
	unsigned users;		/* contexts */
	bool stopping;
	struct slot slots[];
};

/*
 * Two groups, each on cache lines of its own: what every read only reads;
 * what the lock guards, which the pool and the reaper write. Sharing a line
 * would make each read contend with the lock's traffic. What a hit reads
 * is on the first line (alive to p's preadv2, decay_shift and
 * probe_interval, see ctx_hot_line_check below): a loop that slept between
 * two reads finds one line of the context cold, not two.
 */
struct nowait_ctx {
	const int *alive;	/* 1, on a page a fork()ed child sees zeroed */
	atomic_int never;	/* counter of a context-wide reason to skip inline, or -1 */
	unsigned skip_below, resume_at;	/* hit ratio thresholds, percent * RATIO_ONE */
	unsigned max_inflight;	/* p.max_inflight, here on the first line */
	struct nowait_params p;
	int efd;
	struct nowait_pool *pool;	/* NULL with io_uring */
	int stream_efd;			/* wakes the streamer; -1 until it runs */
	int stream_epfd;		/* the streams' readiness; -1 until the streamer runs */

	_Alignas(CACHELINE) pthread_mutex_t lock;	/* error checking: see refuse_destroy() */
	struct queue done;		/* under lock */
	struct files todo;		/* under lock: streams whose first read to try */
	pthread_cond_t stream_idle;	/* under lock: a read left ST_STREAM_BUSY */
	struct nowait_file *files;	/* under lock */
	struct files closed;		/* under lock: for reuse, oldest first */
	bool stopping;			/* under lock */
	unsigned running;		/* under the pool's lock: in its threads */
	bool uring;			/* the ring below is the backend */
	struct io_uring ring;		/* under lock */
	unsigned ring_inflight;		/* under lock */
	atomic_uint inflight;		/* queued and not yet reaped, for max_inflight */
	bool cancel_done;		/* under lock: the ring answered the cancel below */
	int cancel_res;			/* under lock: its answer */
	pthread_t streamer;

	/*
	 * The context's counters are its files' (nowait_stats() adds up the
	 * open ones under the lock) plus these, the closed files' counts: a
	 * read adds to one set of counters, its file's, not to a second one
	 * that every thread of the context shares (with one such set, two
	 * threads on one context were 35% slower a hit; with a shard per file,
	 * every hit still paid twice the atomic additions).
	 */
	uint64_t retired[NCOUNTERS];	/* under lock */
};

/* The adaptive state of one direction, reads or writes, of a file. */
struct adapt {
	atomic_uint ratio;	/* decayed inline hit ratio */
	atomic_uint calls;	/* paces the re-probes while skipping */
	atomic_uint streak;	/* inline attempts in a row that hit in full */
	atomic_bool skipping;	/* below hit_ratio_min, not yet back at twice it */
	atomic_uint unsupported;	/* calls left to skip after EOPNOTSUPP */
};

/*
 * The struct stays allocated until the context is destroyed: a closed one
 * waits on ctx->closed for reuse, so that a second nowait_file_close() (or
 * a stale epoll event) finds it closed instead of freed memory.
 */
struct nowait_file {
	/* What a read reads, up to rd: the first line (see file_hot_line_check). */
	struct nowait_ctx *ctx;
	int fd;			/* the library's own duplicate, never the caller's number */
	unsigned magic;		/* FILE_OPEN or FILE_CLOSED, under ctx->lock */
	atomic_int never;	/* counter of a reason never to try inline, or -1 */
	bool regular;
	bool stream;		/* anything but a regular file or block device: read when ready */
	bool nopoll;		/* a stream epoll refuses (/dev/zero): RWF_NOWAIT or an error */
	bool append;		/* O_APPEND: where a write lands is known only as it runs */
	atomic_bool plain;	/* a stream that refuses RWF_NOWAIT: poll, then read what is there */
	struct adapt rd, wr;
	struct queue sq;	/* under ctx->lock: its stream reads, oldest first */
	struct nowait_file *qnext;	/* under ctx->lock: on ctx->todo or ctx->closed */
	bool on_todo;		/* under ctx->lock */
	atomic_int cls;		/* NOWAIT_CLASS_* of its queued requests */
	atomic_uint inflight;	/* queued and not yet reaped */
	atomic_uint nwrites;	/* on the writes list */
	struct nowait_req *writes;	/* under ctx->lock: queued or running, oldest first */
	struct nowait_file *prev, *next;	/* under ctx->lock */
	/*
	 * Its counters in two sets on lines of their own: what the submitting
	 * thread counts (hits, misses, bytes read inline, the reasons a read
	 * went to the pool), and the bytes that the pool, the ring's reaper or
	 * the streamer moved, so that a pool thread finishing a miss does not
	 * take the line of the counters the next hit adds to.
	 */
	_Alignas(CACHELINE) _Atomic uint64_t stats[NCOUNTERS];
	_Alignas(CACHELINE) _Atomic uint64_t done_stats[NCOUNTERS];
};

/* The layouts above keep what a hit reads on one line of each struct. */
typedef char ctx_hot_line_check[offsetof(struct nowait_ctx, p) +
				offsetof(struct nowait_params, preadv2) + sizeof(void *) <= CACHELINE ? 1 : -1];
typedef char file_hot_line_check[offsetof(struct nowait_file, rd) + sizeof(struct adapt) <= CACHELINE ? 1 : -1];

/*
 * A fork()ed child has the context's memory but none of its threads, and
 * shares its eventfd with the parent: its copy must not be used.
 */
static bool forked(const struct nowait_ctx *ctx)
{
	return !*ctx->alive;
}

/* A page holding 1 that a fork()ed child sees as 0; NULL and errno on failure. */
static int *alive_page(void)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	int *alive = mmap(NULL, page, PROT_READ | PROT_WRITE,
			  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (alive == MAP_FAILED)
		return NULL;
	if (madvise(alive, page, MADV_WIPEONFORK) < 0) {
		int err = errno;

		munmap(alive, page);
		errno = err;
		return NULL;
	}
	*alive = 1;
	return alive;
}

static void free_alive_page(const int *alive)
{
	munmap((void *)alive, (size_t)sysconf(_SC_PAGESIZE));
}

/*
 * Where counter ctr lives in a file's set: as in struct nowait_stats but
 * for misses and bytes_inline, swapped, so that the two a hit adds to
 * (hits and bytes_inline) share the set's first line. Its own inverse.
 */
static int slot(int ctr)
{
	return ctr == CTR(misses) ? CTR(bytes_inline) : ctr == CTR(bytes_inline) ? CTR(misses) : ctr;
}

/* Counts in the submitting thread's set (see struct nowait_file). */
static void count(struct nowait_file *f, int ctr, uint64_t n)
{
	atomic_fetch_add_explicit(&f->stats[slot(ctr)], n, memory_order_relaxed);
}

/* The bytes a queued request moved, counted where it completed. */
static void count_done(struct nowait_req *req, uint64_t n)
{
	int ctr = req->write ? CTR(bytes_written_pool) : CTR(bytes_pool);

	atomic_fetch_add_explicit(&req->file->done_stats[slot(ctr)], n, memory_order_relaxed);
}

/* Adds a file's set of counters to v, in struct nowait_stats' order. */
static void tally(const _Atomic uint64_t *src, uint64_t *v)
{
	for (size_t i = 0; i < NCOUNTERS; i++)
		v[i] += atomic_load_explicit(&src[slot((int)i)], memory_order_relaxed);
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
 * Under ctx->lock. One eventfd write per batch, not per completion: a
 * completion that finds others waiting was announced by the first of them,
 * or by the reap that left them behind (nowait_reap() signals again then).
 * True when the caller must notify.
 */
static bool finish(struct nowait_ctx *ctx, struct nowait_req *req)
{
	bool first = !ctx->done.head;

	set_state(req, ST_DONE);
	push(&ctx->done, req);
	return first;
}

/*
 * The part of req's iovec past its first done bytes: a pointer into it,
 * with *rest holding the first, partly done, element when there is one.
 */
static const struct iovec *remaining(const struct nowait_req *req, size_t done,
				     struct iovec *rest, int *cnt)
{
	const struct iovec *iov = req->iov;

	*cnt = req->iovcnt;
	while (*cnt > 0 && done >= iov->iov_len) {
		done -= iov->iov_len;
		iov++;
		(*cnt)--;
	}
	if (!done)
		return iov;
	rest->iov_base = (char *)iov->iov_base + done;
	rest->iov_len = iov->iov_len - done;
	*cnt = 1;
	return rest;
}

/* A negative offset (-1: the file position) must reach the kernel as is. */
static off_t offset_at(const struct nowait_req *req, size_t done)
{
	return req->offset < 0 ? req->offset : req->offset + (off_t)done;
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
		struct iovec rest;
		int cnt;
		const struct iovec *iov = remaining(req, done, &rest, &cnt);

		n = io(req->file->fd, iov, cnt, offset_at(req, done), 0);
		if (n < 0) {
			err = errno;
		} else if (n > 0) {
			done += n;
			count_done(req, n);
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
	uint64_t a0 = (uint64_t)a->offset, b0 = (uint64_t)b->offset;

	if (f->append || a->offset < 0 || b->offset < 0)
		return true;
	/* Unsigned: an offset near INT64_MAX plus a length would overflow off_t. */
	return a0 < b0 + b->want && b0 < a0 + a->want;
}

static void dispatch(struct nowait_ctx *ctx, struct nowait_req *req);

/*
 * Under ctx->lock: takes req off its file's writes and starts those that
 * waited only for it, unless the context is being destroyed (they end
 * with -ECANCELED then).
 */
static void release_write(struct nowait_ctx *ctx, struct nowait_req *req)
{
	struct nowait_file *f = req->file;
	struct nowait_req **link, *w;

	for (link = &f->writes; *link != req; link = &(*link)->wnext)
		;
	*link = req->wnext;
	for (w = req->wnext; w; w = w->wnext)
		if (overlap(f, req, w) && !--w->blockers && !ctx->stopping)
			dispatch(ctx, w);
	atomic_fetch_sub(&f->nwrites, 1);
}

/* Under ctx->lock: the end of a request that is done, or will never run. */
static bool retire(struct nowait_ctx *ctx, struct nowait_req *req)
{
	if (req->write)
		release_write(ctx, req);
	return finish(ctx, req);
}

/* Pool threads must not run the caller's signal handlers (nor stop reads for them). */
static int spawn(int (*create)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *),
		 pthread_t *thread, void *(*fn)(void *), void *arg)
{
	sigset_t all, old;
	int err;

	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	err = create(thread, NULL, fn, arg);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return err;
}

/*
 * The oldest interactive request, or the oldest background one when no
 * interactive one waits or BACKGROUND_EVERY of them went first.
 */
static struct nowait_req *take(struct nowait_pool *pool)
{
	bool bg = pool->q[NOWAIT_CLASS_BACKGROUND].head &&
		  (!pool->q[NOWAIT_CLASS_INTERACTIVE].head || pool->streak >= BACKGROUND_EVERY);
	struct nowait_req *req = pop(&pool->q[bg]);

	if (!req)
		return NULL;
	pool->streak = !bg && pool->q[NOWAIT_CLASS_BACKGROUND].head ? pool->streak + 1 : 0;
	pool->queued--;
	set_state(req, ST_RUNNING);
	return req;
}

/* In a pool thread: the transfer, then the completion. */
static void serve(struct nowait_ctx *ctx, struct nowait_req *req)
{
	bool first;

	pool_io(ctx, req);
	if (req->eperm)
		judge_eperm(req);
	pthread_mutex_lock(&ctx->lock);
	first = retire(ctx, req);
	pthread_mutex_unlock(&ctx->lock);
	if (first)
		notify(ctx->efd);
}

/* Under pool->lock: waits for work; ETIMEDOUT when this thread may end. */
static int idle_wait(struct nowait_pool *pool)
{
	struct timespec t;

	if (pool->nthreads <= pool->min) {
		pthread_cond_wait(&pool->wake, &pool->lock);
		return 0;
	}
	clock_gettime(CLOCK_MONOTONIC, &t);
	t.tv_sec += pool->idle_ms / 1000;
	t.tv_nsec += (long)(pool->idle_ms % 1000) * 1000000;
	if (t.tv_nsec >= 1000000000) {
		t.tv_sec++;
		t.tv_nsec -= 1000000000;
	}
	return pthread_cond_timedwait(&pool->wake, &pool->lock, &t);
}

static void *worker(void *arg)
{
	struct slot *slot = arg;
	struct nowait_pool *pool = slot->pool;
	bool expired = false;

	pthread_mutex_lock(&pool->lock);
	for (;;) {
		struct nowait_req *req = take(pool);
		struct nowait_ctx *ctx;

		if (!req) {
			if (pool->stopping || (expired && pool->nthreads > pool->min))
				break;
			pool->nidle++;
			expired = idle_wait(pool) == ETIMEDOUT;
			pool->nidle--;
			continue;
		}
		expired = false;
		/* Once complete, req may be reaped and freed: keep its context. */
		ctx = req->file->ctx;
		ctx->running++;
		pool->running++;
		pthread_mutex_unlock(&pool->lock);
		serve(ctx, req);
		pthread_mutex_lock(&pool->lock);
		pool->running--;
		/* The context may be destroyed once this reaches 0: last touch. */
		if (!--ctx->running)
			pthread_cond_broadcast(&pool->quiet);
	}
	pool->nthreads--;
	slot->exited = true;
	pthread_mutex_unlock(&pool->lock);
	return NULL;
}

/* Under pool->lock: one more thread, in a free slot or one whose thread ended. */
static int grow(struct nowait_pool *pool)
{
	struct slot *slot = pool->slots;
	int err;

	while (slot->started && !slot->exited)
		slot++;
	/* It only returns, and needs no lock for that. */
	if (slot->exited)
		pthread_join(slot->thread, NULL);
	slot->exited = false;
	err = spawn(pool->thread_create, &slot->thread, worker, slot);
	slot->started = !err;
	pool->nthreads += !err;
	return err;
}

/*
 * Under ctx->lock (the lock order is ctx, then pool). Starts a thread if
 * every idle one is spoken for. False when there is no thread to run req.
 */
static bool pool_push(struct nowait_pool *pool, struct nowait_req *req, int cls)
{
	bool ok;

	pthread_mutex_lock(&pool->lock);
	/* Failing to grow is fine while some thread will get to it. */
	if (pool->queued >= pool->nidle && pool->nthreads < pool->max)
		grow(pool);
	ok = pool->nthreads > 0;
	if (ok) {
		push(&pool->q[cls], req);
		set_state(req, ST_QUEUED);
		pool->queued++;
		pthread_cond_signal(&pool->wake);
	}
	pthread_mutex_unlock(&pool->lock);
	return ok;
}

/*
 * Under ctx->lock: what is left of req to io_uring. A submission the
 * kernel did not take (ENOMEM) stays in the ring and goes with the next
 * one, or with nowait_reap(); only a full ring refuses.
 */
static int ring_submit(struct nowait_ctx *ctx, struct nowait_req *req)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&ctx->ring);
	const struct iovec *iov;
	int cnt;

	if (!sqe)
		return -EAGAIN;
	iov = remaining(req, req->done, &req->rest, &cnt);
	if (req->write)
		io_uring_prep_writev(sqe, req->file->fd, iov, cnt, offset_at(req, req->done));
	else
		io_uring_prep_readv(sqe, req->file->fd, iov, cnt, offset_at(req, req->done));
	io_uring_sqe_set_data(sqe, req);
	set_state(req, ST_RUNNING);
	ctx->ring_inflight++;
	io_uring_submit(&ctx->ring);
	return 0;
}

/* Under ctx->lock: req to the backend, or to the done queue if it refuses. */
static void dispatch(struct nowait_ctx *ctx, struct nowait_req *req)
{
	int err = ctx->uring ? ring_submit(ctx, req) :
		  pool_push(ctx->pool, req, atomic_load(&req->file->cls)) ? 0 : -EAGAIN;

	if (!err)
		return;
	req->res = req->done ? (ssize_t)req->done : err;
	if (retire(ctx, req))
		notify(ctx->efd);
}

/*
 * Under ctx->lock: the ring's completions onto the done queue. Like the
 * pool, a transfer goes on until the full length, EOF or an error.
 */
static void ring_reap(struct nowait_ctx *ctx)
{
	struct io_uring_cqe *cqe;

	if (io_uring_sq_ready(&ctx->ring))
		io_uring_submit(&ctx->ring);
	while (io_uring_peek_cqe(&ctx->ring, &cqe) == 0) {
		struct nowait_req *req = io_uring_cqe_get_data(cqe);
		int n = cqe->res;

		io_uring_cqe_seen(&ctx->ring, cqe);
		if ((void *)req == &ctx->cancel_res) {	/* ring_cancel()'s answer */
			ctx->cancel_res = n;
			ctx->cancel_done = true;
			continue;
		}
		ctx->ring_inflight--;
		if (n > 0) {
			req->done += n;
			count_done(req, n);
			if (req->done < req->want && !ctx->stopping && !ring_submit(ctx, req))
				continue;
		}
		req->res = n < 0 && !req->done ? n : (ssize_t)req->done;
		if (req->eperm)
			judge_eperm(req);
		retire(ctx, req);
	}
}

/*
 * The streams' reads (pipes, sockets, FIFOs, ttys, character devices,
 * eventfd, timerfd, signalfd, inotify, ...): none may hold a pool thread
 * while it waits for data, nor a blocking read(2) that nowait_destroy()
 * could not end. One thread waits for all of them with epoll(7): each file
 * queues its reads, only the first is tried, and a file whose first read
 * would block is armed (EPOLLONESHOT) until its descriptor is readable, so
 * an event costs the same however many reads wait.
 */

static void files_push(struct files *q, struct nowait_file *f)
{
	f->qnext = NULL;
	if (q->tail)
		q->tail->qnext = f;
	else
		q->head = f;
	q->tail = f;
}

static struct nowait_file *files_pop(struct files *q)
{
	struct nowait_file *f = q->head;

	if (f && !(q->head = f->qnext))
		q->tail = NULL;
	return f;
}

/* Under ctx->lock: f's first read is to be tried. True when the streamer must be woken. */
static bool todo_add(struct nowait_ctx *ctx, struct nowait_file *f)
{
	bool wake = !ctx->todo.head;

	if (f->on_todo || f->magic != FILE_OPEN)
		return false;
	f->on_todo = true;
	files_push(&ctx->todo, f);
	return wake;
}

static struct nowait_file *todo_pop(struct nowait_ctx *ctx)
{
	struct nowait_file *f = files_pop(&ctx->todo);

	if (f)
		f->on_todo = false;
	return f;
}

static void todo_remove(struct nowait_ctx *ctx, struct nowait_file *f)
{
	struct nowait_file *prev = NULL;

	if (!f->on_todo)
		return;
	for (struct nowait_file **link = &ctx->todo.head; *link; prev = *link, link = &(*link)->qnext) {
		if (*link == f) {
			*link = f->qnext;
			if (ctx->todo.tail == f)
				ctx->todo.tail = prev;
			break;
		}
	}
	f->on_todo = false;
}

/*
 * For a stream that refuses RWF_NOWAIT: the first non-empty buffer of req,
 * cut to the bytes the kernel says are there (FIONREAD), so that a plain
 * read returns at once (a tty in raw mode with VMIN would wait for more).
 * 1 with *one set, 0 when nothing is there yet, or -errno: -EOPNOTSUPP when
 * the descriptor can say neither, so that a read could block.
 */
static int plain_span(const struct nowait_file *f, const struct nowait_req *req,
		      struct iovec *one)
{
	struct pollfd pfd = { .fd = f->fd, .events = POLLIN };
	int avail = 0;

	*one = (struct iovec){ 0 };
	for (int i = 0; i < req->iovcnt; i++) {
		if (req->iov[i].iov_len) {
			*one = req->iov[i];
			break;
		}
	}
	if (!one->iov_len)
		return 1;	/* nothing asked: read(2) of 0 bytes returns at once */
	if (ioctl(f->fd, FIONREAD, &avail) < 0)
		return -EOPNOTSUPP;
	if (avail > 0) {
		if ((size_t)avail < one->iov_len)
			one->iov_len = (size_t)avail;
		return 1;
	}
	/* Nothing there: only a hung-up or failed descriptor answers at once (EOF, EIO). */
	if (poll(&pfd, 1, 0) == 1 && (pfd.revents & (POLLHUP | POLLERR)))
		return 1;
	return 0;
}

/*
 * Under ctx->lock: asks io_uring to cancel req (IORING_OP_ASYNC_CANCEL) and
 * waits for the answer, which comes at once. 0 when req will complete with
 * -ECANCELED, -EBUSY when its transfer runs and will complete normally,
 * -EALREADY when it completed.
 */
static int ring_cancel(struct nowait_ctx *ctx, struct nowait_req *req)
{
	/*
	 * Not found while still ST_RUNNING: its completion was posted but
	 * not reaped, and ring_reap() resubmitted the rest: ask once more. A
	 * buffered read waiting for its pages is not found either: it runs.
	 */
	for (int tries = 0; tries < 2 && get_state(req) == ST_RUNNING; tries++) {
		struct io_uring_sqe *sqe = io_uring_get_sqe(&ctx->ring);

		if (!sqe) {
			io_uring_submit(&ctx->ring);
			sqe = io_uring_get_sqe(&ctx->ring);
			if (!sqe)
				return -EBUSY;
		}
		io_uring_prep_cancel64(sqe, (uint64_t)(uintptr_t)req, 0);
		io_uring_sqe_set_data(sqe, &ctx->cancel_res);
		ctx->cancel_done = false;
		while (!ctx->cancel_done) {
			int err = io_uring_submit_and_wait(&ctx->ring, 1);

			if (err < 0 && err != -EINTR && err != -EAGAIN)
				return -EBUSY;
			ring_reap(ctx);
		}
		if (ctx->cancel_res == 0)
			return 0;
		if (ctx->cancel_res != -ENOENT)
			return -EBUSY;
	}
	return get_state(req) == ST_RUNNING ? -EBUSY : -EALREADY;
}

/*
 * One read of a stream, unlocked, like read(2): what is there, 0 at EOF, or
 * an error, into req->res. False while it would have to wait for data.
 */
static bool stream_read(struct nowait_ctx *ctx, struct nowait_file *f, struct nowait_req *req)
{
	struct iovec one;
	ssize_t n;
	int ready;

	if (!atomic_load(&f->plain)) {
		n = ctx->p.preadv2(f->fd, req->iov, req->iovcnt, req->offset, RWF_NOWAIT);
		if (n < 0 && errno == EAGAIN && !f->nopoll)
			return false;
		if (n >= 0 || errno != EOPNOTSUPP || f->nopoll)
			goto done;
		atomic_store(&f->plain, true);
	}
	ready = plain_span(f, req, &one);
	if (!ready)
		return false;
	if (ready < 0) {
		req->res = ready;
		return true;
	}
	n = ctx->p.preadv2(f->fd, &one, 1, req->offset, 0);
done:
	if (n > 0)
		count_done(req, n);
	req->res = n < 0 ? -errno : n;
	return true;
}

/* Under ctx->lock: wakes f's streamer read when f is readable. 0 or -errno. */
static int arm(struct nowait_ctx *ctx, struct nowait_file *f)
{
	struct epoll_event ev = { .events = EPOLLIN | EPOLLRDHUP | EPOLLONESHOT, .data.ptr = f };

	return epoll_ctl(ctx->stream_epfd, EPOLL_CTL_MOD, f->fd, &ev) ? -errno : 0;
}

/*
 * Under ctx->lock, dropped around each read: f's reads in order, until one
 * would block (then f is armed) or none is left.
 */
static void service(struct nowait_ctx *ctx, struct nowait_file *f)
{
	struct nowait_req *req;

	while ((req = f->sq.head)) {
		bool done;

		set_state(req, ST_STREAM_BUSY);
		pthread_mutex_unlock(&ctx->lock);
		done = stream_read(ctx, f, req);
		pthread_mutex_lock(&ctx->lock);
		pthread_cond_broadcast(&ctx->stream_idle);
		if (!done) {
			int err = arm(ctx, f);

			if (!err) {
				set_state(req, ST_STREAM);
				return;
			}
			req->res = err;	/* without the arm, it would never be woken */
		}
		pop(&f->sq);
		if (finish(ctx, req))
			notify(ctx->efd);
	}
}

static void *streamer(void *arg)
{
	struct nowait_ctx *ctx = arg;
	struct epoll_event ev[64];
	bool stop = false;

	while (!stop) {
		int n = epoll_wait(ctx->stream_epfd, ev, 64, -1);
		struct nowait_file *f;

		pthread_mutex_lock(&ctx->lock);
		for (int i = 0; i < n; i++) {
			if (ev[i].data.ptr)
				todo_add(ctx, ev[i].data.ptr);	/* a closed one is skipped */
			else
				drain(ctx->stream_efd);
		}
		while (!ctx->stopping && (f = todo_pop(ctx)))
			service(ctx, f);
		stop = ctx->stopping;
		pthread_mutex_unlock(&ctx->lock);
	}
	return NULL;
}

static int start_streamer(struct nowait_ctx *ctx)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = NULL };
	int err = 0;

	pthread_mutex_lock(&ctx->lock);
	if (ctx->stream_efd < 0) {
		ctx->stream_epfd = epoll_create1(EPOLL_CLOEXEC);
		ctx->stream_efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
		if (ctx->stream_epfd < 0 || ctx->stream_efd < 0 ||
		    epoll_ctl(ctx->stream_epfd, EPOLL_CTL_ADD, ctx->stream_efd, &ev))
			err = errno;
		else
			err = spawn(ctx->p.thread_create, &ctx->streamer, streamer, ctx);
		if (err) {
			if (ctx->stream_epfd >= 0)
				close(ctx->stream_epfd);
			if (ctx->stream_efd >= 0)
				close(ctx->stream_efd);
			ctx->stream_efd = ctx->stream_epfd = -1;
		}
	}
	pthread_mutex_unlock(&ctx->lock);
	return err;
}

/*
 * An error-checking mutex: locking it again in the thread that holds it
 * says EDEADLK instead of hanging, which is how a nowait_destroy() called
 * from a thread_create hook (run under these locks) is refused.
 */
static void checked_mutex_init(pthread_mutex_t *m)
{
	pthread_mutexattr_t a;

	pthread_mutexattr_init(&a);
	pthread_mutexattr_settype(&a, PTHREAD_MUTEX_ERRORCHECK);
	pthread_mutex_init(m, &a);
	pthread_mutexattr_destroy(&a);
}

/* Under pool->lock: whether the calling thread is one of the pool's. */
static bool in_pool_thread(const struct nowait_pool *pool)
{
	for (unsigned i = 0; i < pool->max; i++)
		if (pool->slots[i].started && !pool->slots[i].exited &&
		    pthread_equal(pool->slots[i].thread, pthread_self()))
			return true;
	return false;
}

/* Stops and joins the threads of a pool no context uses any more, and frees it. */
static void pool_free(struct nowait_pool *pool)
{
	pthread_mutex_lock(&pool->lock);
	pool->stopping = true;
	pthread_cond_broadcast(&pool->wake);
	pthread_mutex_unlock(&pool->lock);
	/* No grow() now: no context uses the pool. */
	for (unsigned i = 0; i < pool->max; i++)
		if (pool->slots[i].started)
			pthread_join(pool->slots[i].thread, NULL);
	pthread_cond_destroy(&pool->quiet);
	pthread_cond_destroy(&pool->wake);
	pthread_mutex_destroy(&pool->lock);
	free_alive_page(pool->alive);
	free(pool);
}

/* A pool with its min threads started; 0 or an errno value. */
static int pool_new(unsigned min, unsigned max, unsigned idle_ms,
		    int (*create)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *),
		    struct nowait_pool **poolp)
{
	struct nowait_pool *pool;
	pthread_condattr_t ca;
	size_t size = sizeof(*pool) + max * sizeof(struct slot);
	int err = 0;

	pool = aligned_alloc(CACHELINE, (size + CACHELINE - 1) / CACHELINE * CACHELINE);
	if (!pool)
		return ENOMEM;
	memset(pool, 0, size);
	pool->alive = alive_page();
	if (!pool->alive) {
		err = errno;
		free(pool);
		return err;
	}
	pool->min = min;
	pool->max = max;
	pool->idle_ms = idle_ms;
	pool->thread_create = create ? create : pthread_create;
	for (unsigned i = 0; i < max; i++)
		pool->slots[i].pool = pool;
	checked_mutex_init(&pool->lock);
	/* Idle timeouts must not move with the wall clock. */
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&pool->wake, &ca);
	pthread_condattr_destroy(&ca);
	pthread_cond_init(&pool->quiet, NULL);
	pthread_mutex_lock(&pool->lock);
	while (pool->nthreads < min && !err)
		err = grow(pool);
	pthread_mutex_unlock(&pool->lock);
	if (err) {
		pool_free(pool);
		return err;
	}
	*poolp = pool;
	return 0;
}

/* Under pool->lock: takes ctx's queued requests out of q; they end with -ECANCELED. */
static void pool_drop(struct nowait_pool *pool, struct queue *q, struct nowait_ctx *ctx)
{
	struct nowait_req *req = q->head, *prev = NULL;

	q->tail = NULL;
	for (; req; req = req->next) {
		if (req->file->ctx == ctx) {
			req->res = -ECANCELED;
			set_state(req, ST_IDLE);
			pool->queued--;
			if (prev)
				prev->next = req->next;
			else
				q->head = req->next;
		} else {
			prev = req;
		}
	}
	q->tail = prev;
}

/* Closes the descriptors of the open files and frees them, then the closed ones. */
static void free_files(struct nowait_ctx *ctx)
{
	struct nowait_file *f;

	while ((f = ctx->files)) {
		ctx->files = f->next;
		close(f->fd);
		free(f);
	}
	while ((f = files_pop(&ctx->closed)))
		free(f);
}

/*
 * Cancels what has not started and the stream reads still waiting for data,
 * waits for the regular files' transfers that have started, frees everything.
 */
static void teardown(struct nowait_ctx *ctx)
{
	struct nowait_pool *pool = ctx->pool;
	struct nowait_req *req;

	pthread_mutex_lock(&ctx->lock);
	ctx->stopping = true;
	/* Every transfer in the kernel must end before the caller frees its buffers. */
	while (ctx->uring && ctx->ring_inflight) {
		io_uring_submit_and_wait(&ctx->ring, 1);
		ring_reap(ctx);
	}
	pthread_mutex_unlock(&ctx->lock);
	if (pool) {
		pthread_mutex_lock(&pool->lock);
		pool_drop(pool, &pool->q[NOWAIT_CLASS_INTERACTIVE], ctx);
		pool_drop(pool, &pool->q[NOWAIT_CLASS_BACKGROUND], ctx);
		while (ctx->running)
			pthread_cond_wait(&pool->quiet, &pool->lock);
		pool->users--;
		pthread_mutex_unlock(&pool->lock);
		if (!pool->shared)
			pool_free(pool);
	}
	if (ctx->stream_efd >= 0) {
		notify(ctx->stream_efd);
		pthread_join(ctx->streamer, NULL);
		close(ctx->stream_efd);
		close(ctx->stream_epfd);
	}
	for (struct nowait_file *f = ctx->files; f; f = f->next) {
		/* Writes still waiting for an earlier overlapping one never started. */
		for (req = f->writes; req; req = req->wnext) {
			req->res = -ECANCELED;
			set_state(req, ST_IDLE);
		}
		/* Stream reads still waiting for data: destroy never waits for a peer. */
		while ((req = pop(&f->sq))) {
			req->res = -ECANCELED;
			set_state(req, ST_IDLE);
		}
	}
	/* Completed but never reaped: free for the caller to submit again. */
	while ((req = pop(&ctx->done)))
		set_state(req, ST_IDLE);
	free_files(ctx);
	if (ctx->uring)
		io_uring_queue_exit(&ctx->ring);
	pthread_cond_destroy(&ctx->stream_idle);
	pthread_mutex_destroy(&ctx->lock);
	close(ctx->efd);
	free_alive_page(ctx->alive);
	free(ctx);
}

/*
 * A ring whose completions signal the context's eventfd, and whose io-wq
 * runs at most as many blocking transfers at once as the pool would have
 * threads (IORING_REGISTER_IOWQ_MAX_WORKERS, Linux 5.15; unbounded before).
 */
static int ring_init(struct nowait_ctx *ctx)
{
	unsigned workers[2] = { ctx->p.threads, ctx->p.threads };
	int err = io_uring_queue_init(RING_ENTRIES, &ctx->ring, 0);

	if (err)
		return err;
	err = io_uring_register_eventfd(&ctx->ring, ctx->efd);
	if (err) {
		io_uring_queue_exit(&ctx->ring);
		return err;
	}
	io_uring_register_iowq_max_workers(&ctx->ring, workers);
	return 0;
}

/*
 * Whether a reserved slot past the fields this version knows is set. The
 * padding after them is not looked at: a caller that sets fields one by one
 * may leave it undefined.
 */
static bool unknown_fields(const struct nowait_params *p)
{
	size_t known = offsetof(struct nowait_params, max_inflight) + sizeof(p->max_inflight) -
		       offsetof(struct nowait_params, reserved);

	for (size_t i = (known + 7) / 8; i < sizeof(p->reserved) / sizeof(p->reserved[0]); i++)
		if (p->reserved[i])
			return true;
	return false;
}

/*
 * The backend, or a negative errno value. AUTO tries io_uring only when
 * the caller set no hook that the pool's threads or its plain reads must
 * go through, and no shared pool: those ask for threads.
 */
static int pick_backend(struct nowait_ctx *ctx, const struct nowait_params *asked)
{
	int err;

	if (asked->backend == NOWAIT_BACKEND_THREADS ||
	    (asked->backend == NOWAIT_BACKEND_AUTO &&
	     (asked->pool || asked->preadv2 || asked->pwritev2 || asked->thread_create)))
		return NOWAIT_BACKEND_THREADS;
	err = ring_init(ctx);
	if (!err)
		return NOWAIT_BACKEND_IO_URING;
	/* ENOSYS, or EPERM from seccomp or kernel.io_uring_disabled, or no memory. */
	return asked->backend == NOWAIT_BACKEND_AUTO ? NOWAIT_BACKEND_THREADS : err;
}

int nowait_create(const struct nowait_params *params, struct nowait_ctx **ctxp)
{
	const struct nowait_params asked = params ? *params : (struct nowait_params){ 0 };
	struct nowait_params p = asked;
	struct nowait_pool *shared = p.pool;
	struct nowait_ctx *ctx;
	int err = 0, backend;

	/* A field this version does not know yet is not silently ignored. */
	if (unknown_fields(&p) || p.backend > NOWAIT_BACKEND_IO_URING ||
	    (p.pool && p.backend == NOWAIT_BACKEND_IO_URING))
		return -EINVAL;
	if (p.hit_ratio_min > 100 || p.decay_shift > 15 || p.threads > NOWAIT_MAX_THREADS)
		return -EINVAL;
	if (shared && !*shared->alive)
		return -ECHILD;
	p.threads = p.threads ? p.threads : 4;
	p.hit_ratio_min = p.hit_ratio_min ? p.hit_ratio_min : 10;
	p.decay_shift = p.decay_shift ? p.decay_shift : 3;
	p.probe_interval = p.probe_interval ? p.probe_interval : 32;
	p.eopnotsupp_reprobe = p.eopnotsupp_reprobe ? p.eopnotsupp_reprobe : 1024;
	p.preadv2 = p.preadv2 ? p.preadv2 : preadv2;
	p.pwritev2 = p.pwritev2 ? p.pwritev2 : pwritev2;
	p.thread_create = p.thread_create ? p.thread_create : pthread_create;

	ctx = aligned_alloc(CACHELINE, (sizeof(*ctx) + CACHELINE - 1) / CACHELINE * CACHELINE);
	if (!ctx)
		return -ENOMEM;
	memset(ctx, 0, sizeof(*ctx));
	ctx->alive = alive_page();
	if (!ctx->alive) {
		err = errno;
		free(ctx);
		return -err;
	}
	ctx->p = p;
	ctx->max_inflight = p.max_inflight;
	/* Twice the minimum, or halfway to 100% where that is less. */
	ctx->skip_below = p.hit_ratio_min * RATIO_ONE;
	ctx->resume_at = 2 * ctx->skip_below;
	if (ctx->resume_at > (ctx->skip_below + 100 * RATIO_ONE) / 2)
		ctx->resume_at = (ctx->skip_below + 100 * RATIO_ONE) / 2;
	atomic_init(&ctx->never, -1);
	ctx->stream_efd = ctx->stream_epfd = -1;
	ctx->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (ctx->efd < 0) {
		err = errno;
		goto fail;
	}
	checked_mutex_init(&ctx->lock);
	pthread_cond_init(&ctx->stream_idle, NULL);
	backend = pick_backend(ctx, &asked);
	if (backend < 0) {
		err = -backend;
		goto fail_efd;
	}
	ctx->uring = backend == NOWAIT_BACKEND_IO_URING;
	if (shared) {
		pthread_mutex_lock(&shared->lock);
		shared->users++;
		pthread_mutex_unlock(&shared->lock);
		ctx->pool = shared;
	} else if (!ctx->uring) {
		/* A private pool: all its threads from the start, as in 1.0. */
		err = pool_new(p.threads, p.threads, 0, p.thread_create, &ctx->pool);
		if (err)
			goto fail_efd;
	}
	*ctxp = ctx;
	return 0;

fail_efd:
	pthread_cond_destroy(&ctx->stream_idle);
	pthread_mutex_destroy(&ctx->lock);
	close(ctx->efd);
fail:
	free_alive_page(ctx->alive);
	free(ctx);
	return -err;
}

/*
 * -EDEADLK when destroy would wait for the calling thread itself: it is
 * one of the context's threads (a preadv2, pwritev2 or thread_create hook
 * running there), or it holds one of the locks (a thread_create hook).
 */
static int refuse_destroy(struct nowait_ctx *ctx)
{
	struct nowait_pool *pool = ctx->pool;
	bool mine;

	if (pthread_mutex_lock(&ctx->lock))
		return -EDEADLK;
	mine = ctx->stream_efd >= 0 && pthread_equal(ctx->streamer, pthread_self());
	if (!mine && pool) {
		if (pthread_mutex_lock(&pool->lock)) {
			mine = true;
		} else {
			mine = in_pool_thread(pool);
			pthread_mutex_unlock(&pool->lock);
		}
	}
	pthread_mutex_unlock(&ctx->lock);
	return mine ? -EDEADLK : 0;
}

int nowait_destroy(struct nowait_ctx *ctx)
{
	int err;

	/*
	 * The child's copy of the lock may have been held at the fork and its
	 * lists may be half updated: close the descriptors, free nothing.
	 */
	if (forked(ctx)) {
		close(ctx->efd);
		if (ctx->stream_efd >= 0)
			close(ctx->stream_efd);
		if (ctx->stream_epfd >= 0)
			close(ctx->stream_epfd);
		if (ctx->uring)
			close(ctx->ring.ring_fd);
		return 0;
	}
	err = refuse_destroy(ctx);
	if (err)
		return err;
	teardown(ctx);
	return 0;
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
	 * and signals itself. The ring signals the eventfd for each of its
	 * completions, and they reach the done queue only here.
	 */
	n = drain(ctx->efd);
	if (n)
		return n;
	pthread_mutex_lock(&ctx->lock);
	if (ctx->uring)
		ring_reap(ctx);
	while (n < max && (reqs[n] = pop(&ctx->done))) {
		set_state(reqs[n], ST_IDLE);
		n++;
	}
	more = ctx->done.head;
	pthread_mutex_unlock(&ctx->lock);
	if (more)
		notify(ctx->efd);
	for (int i = 0; i < n; i++)
		atomic_fetch_sub(&reqs[i]->file->inflight, 1);
	if (n > 0)
		atomic_fetch_sub_explicit(&ctx->inflight, (unsigned)n, memory_order_relaxed);
	return n;
}

/*
 * Under ctx->lock: the oldest closed file struct, or a new one, zeroed.
 * Reuse is oldest first, so that a file just closed is the last to become
 * another one (and a second close of it says EBADF meanwhile).
 */
static struct nowait_file *file_alloc(struct nowait_ctx *ctx)
{
	struct nowait_file *f = files_pop(&ctx->closed);

	/* Its counters are on lines of their own: sizeof is a multiple of CACHELINE. */
	if (!f && !(f = aligned_alloc(CACHELINE, sizeof(*f))))
		return NULL;
	memset(f, 0, sizeof(*f));
	return f;
}

/*
 * Under ctx->lock: f to the list of closed files, for file_alloc(), its
 * counts to the context's. No request of f is in the library any more.
 */
static void file_retire(struct nowait_ctx *ctx, struct nowait_file *f)
{
	tally(f->stats, ctx->retired);
	tally(f->done_stats, ctx->retired);
	f->magic = FILE_CLOSED;
	files_push(&ctx->closed, f);
}

/*
 * A stream goes into the streamer's epoll set, disarmed until a read of it
 * must wait. One epoll refuses (no poll method: /dev/zero, /dev/null) gets
 * RWF_NOWAIT reads only. 0 or -errno.
 */
static int stream_register(struct nowait_ctx *ctx, struct nowait_file *f)
{
	struct epoll_event ev = { .events = EPOLLONESHOT, .data.ptr = f };
	int err = start_streamer(ctx);

	if (err)
		return -err;
	if (!epoll_ctl(ctx->stream_epfd, EPOLL_CTL_ADD, f->fd, &ev))
		return 0;
	if (errno != EPERM)
		return -errno;
	f->nopoll = true;
	return 0;
}

int nowait_file_open(struct nowait_ctx *ctx, int fd, struct nowait_file **filep)
{
	struct nowait_file *f;
	struct stat st;
	int fl, err, own;

	if (forked(ctx))
		return -ECHILD;
	if (fstat(fd, &st) < 0 || (fl = fcntl(fd, F_GETFL)) < 0)
		return -errno;
	/*
	 * The library's own reference to the file: a request never reaches
	 * whatever file the caller's number names later, after a close(2).
	 */
	own = fcntl(fd, F_DUPFD_CLOEXEC, 0);
	if (own < 0)
		return -errno;
	pthread_mutex_lock(&ctx->lock);
	f = file_alloc(ctx);
	pthread_mutex_unlock(&ctx->lock);
	if (!f) {
		close(own);
		return -ENOMEM;
	}
	f->ctx = ctx;
	f->fd = own;
	/*
	 * Block devices are read like regular files: to the full length.
	 * Anything else (pipes, sockets, ttys, character devices, eventfd,
	 * timerfd, signalfd, inotify, ...) may wait for data forever: a stream.
	 */
	f->regular = S_ISREG(st.st_mode);
	f->stream = !f->regular && !S_ISBLK(st.st_mode);
	if (f->stream && (err = stream_register(ctx, f))) {
		close(own);
		pthread_mutex_lock(&ctx->lock);
		file_retire(ctx, f);
		pthread_mutex_unlock(&ctx->lock);
		return err;
	}
	/*
	 * EAGAIN from a pipe or socket says nothing about the page cache, and
	 * RWF_NOWAIT on O_DIRECT may do the device I/O inline.
	 */
	atomic_init(&f->never, !S_ISREG(st.st_mode) ? CTR(fb_not_regular) :
			       fl & O_DIRECT ? CTR(fb_odirect) : -1);
	atomic_init(&f->rd.ratio, RATIO_ONE);
	atomic_init(&f->wr.ratio, RATIO_ONE);
	f->append = fl & O_APPEND;
	pthread_mutex_lock(&ctx->lock);
	f->magic = FILE_OPEN;
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
	pthread_mutex_lock(&ctx->lock);
	if (f->magic != FILE_OPEN) {
		pthread_mutex_unlock(&ctx->lock);
		return -EBADF;
	}
	if (atomic_load(&f->inflight)) {
		pthread_mutex_unlock(&ctx->lock);
		return -EBUSY;
	}
	if (f->prev)
		f->prev->next = f->next;
	else
		ctx->files = f->next;
	if (f->next)
		f->next->prev = f->prev;
	if (f->stream) {
		todo_remove(ctx, f);
		if (!f->nopoll)
			epoll_ctl(ctx->stream_epfd, EPOLL_CTL_DEL, f->fd, NULL);
	}
	close(f->fd);
	file_retire(ctx, f);
	pthread_mutex_unlock(&ctx->lock);
	return 0;
}

int nowait_file_set_class(struct nowait_file *f, int cls)
{
	if (forked(f->ctx))
		return -ECHILD;
	if (cls != NOWAIT_CLASS_INTERACTIVE && cls != NOWAIT_CLASS_BACKGROUND)
		return -EINVAL;
	atomic_store(&f->cls, cls);
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
	unsigned next = r - (r >> shift) + (hit >> shift);
	unsigned streak = atomic_load_explicit(&a->streak, memory_order_relaxed);

	/*
	 * Plain loads and stores, no read-modify-write: on a file that keeps
	 * hitting, the ratio stays put and the streak is at its cap, so a hit
	 * writes nothing here, and a racing sample may be lost (see above).
	 */
	if (next != r)
		atomic_store_explicit(&a->ratio, next, memory_order_relaxed);
	if (hit != RATIO_ONE)
		streak = 0;
	else if (streak < STREAK_MAX)
		streak++;
	else
		return;
	atomic_store_explicit(&a->streak, streak, memory_order_relaxed);
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
	if (!skip)
		return -1;
	/* Counted only while skipping: a hit does no read-modify-write here. */
	calls = atomic_fetch_add_explicit(&a->calls, 1, memory_order_relaxed) + 1;
	return calls % ctx->p.probe_interval ? CTR(skipped) : -1;
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
	bool wake = false;

	count(f, why, 1);
	count(f, CTR(pool_jobs), 1);
	atomic_fetch_add(&f->inflight, 1);
	atomic_fetch_add_explicit(&ctx->inflight, 1, memory_order_relaxed);
	pthread_mutex_lock(&ctx->lock);
	if (f->stream) {
		/* Behind its file's earlier reads; the first is tried at once. */
		set_state(req, ST_STREAM);
		if (!f->sq.head)
			wake = todo_add(ctx, f);
		push(&f->sq, req);
	} else {
		dispatch(ctx, req);
	}
	pthread_mutex_unlock(&ctx->lock);
	if (wake)
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
	if (f->magic != FILE_OPEN)
		return -EBADF;
	if (invalid(iov, iovcnt, offset, &req->want))
		return -EINVAL;
	req->file = f;
	req->iov = iov;
	req->iovcnt = iovcnt;
	req->offset = offset;
	req->done = 0;
	req->eperm = false;
	req->write = write;
	set_state(req, ST_IDLE);
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

/* Whether max_inflight requests are in the library: back-pressure, -EAGAIN. */
static bool full(const struct nowait_ctx *ctx)
{
	return ctx->max_inflight &&
	       atomic_load_explicit(&ctx->inflight, memory_order_relaxed) >= ctx->max_inflight;
}

static ssize_t submit_read(struct nowait_file *f, struct nowait_req *req,
			   const struct iovec *iov, int iovcnt, off_t offset)
{
	int why = prepare(f, req, iov, iovcnt, offset, false);
	ssize_t n;

	if (why)
		return why;
	if (full(f->ctx))
		return -EAGAIN;
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
	atomic_fetch_add_explicit(&ctx->inflight, 1, memory_order_relaxed);
	pthread_mutex_lock(&ctx->lock);
	req->blockers = 0;
	for (tail = &f->writes; *tail; tail = &(*tail)->wnext)
		req->blockers += overlap(f, *tail, req);
	req->wnext = NULL;
	*tail = req;
	atomic_fetch_add(&f->nwrites, 1);
	if (req->blockers)
		set_state(req, ST_BLOCKED);
	else
		dispatch(ctx, req);
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
	if (full(f->ctx))
		return -EAGAIN;
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

/*
 * A request the library still has (queued, running, waiting for data, or
 * completed and not reaped) submitted again: refused before anything of it
 * is written, res included, since another thread may be writing it.
 */
static bool in_library(const struct nowait_req *req)
{
	switch (get_state(req)) {
	case ST_QUEUED:
	case ST_BLOCKED:
	case ST_RUNNING:
	case ST_STREAM:
	case ST_STREAM_BUSY:
	case ST_DONE:
		return true;
	default:
		return false;
	}
}

ssize_t nowait_writev(struct nowait_file *f, struct nowait_req *req,
		      const struct iovec *iov, int iovcnt, off_t offset)
{
	if (in_library(req))
		return -EBUSY;
	return result(req, submit_write(f, req, iov, iovcnt, offset));
}

ssize_t nowait_write(struct nowait_file *f, struct nowait_req *req,
		     const void *buf, size_t len, off_t offset)
{
	if (in_library(req))
		return -EBUSY;
	return nowait_writev(f, req, single(req, buf, len), 1, offset);
}

ssize_t nowait_readv(struct nowait_file *f, struct nowait_req *req,
		     const struct iovec *iov, int iovcnt, off_t offset)
{
	if (in_library(req))
		return -EBUSY;
	return result(req, submit_read(f, req, iov, iovcnt, offset));
}

ssize_t nowait_read(struct nowait_file *f, struct nowait_req *req,
		    void *buf, size_t len, off_t offset)
{
	if (in_library(req))
		return -EBUSY;
	return nowait_readv(f, req, single(req, buf, len), 1, offset);
}

int nowait_stats(struct nowait_ctx *ctx, struct nowait_stats *stats)
{
	struct nowait_pool *pool = ctx->pool;
	uint64_t v[NCOUNTERS] = { 0 };

	if (forked(ctx))
		return -ECHILD;
	pthread_mutex_lock(&ctx->lock);
	memcpy(v, ctx->retired, sizeof(v));
	for (struct nowait_file *f = ctx->files; f; f = f->next) {
		tally(f->stats, v);
		tally(f->done_stats, v);
	}
	pthread_mutex_unlock(&ctx->lock);
	memcpy(stats, v, sizeof(v));
	if (pool) {
		pthread_mutex_lock(&pool->lock);
		stats->pool_queued = pool->queued;
		stats->pool_running = pool->running;
		stats->pool_threads = pool->nthreads;
		pthread_mutex_unlock(&pool->lock);
	} else {
		pthread_mutex_lock(&ctx->lock);
		stats->pool_running = ctx->ring_inflight;
		pthread_mutex_unlock(&ctx->lock);
	}
	return 0;
}

int nowait_file_stats(struct nowait_file *f, struct nowait_stats *stats)
{
	uint64_t v[NCOUNTERS] = { 0 };

	if (forked(f->ctx))
		return -ECHILD;
	tally(f->stats, v);
	tally(f->done_stats, v);
	memcpy(stats, v, sizeof(v));
	return 0;
}

int nowait_backend(const struct nowait_ctx *ctx)
{
	if (forked(ctx))
		return -ECHILD;
	return ctx->uring ? NOWAIT_BACKEND_IO_URING : NOWAIT_BACKEND_THREADS;
}

/* Takes req out of q if it is there. */
static void unlink_req(struct queue *q, struct nowait_req *req)
{
	struct nowait_req *prev = NULL;

	for (struct nowait_req **link = &q->head; *link; prev = *link, link = &(*link)->next) {
		if (*link == req) {
			*link = req->next;
			if (q->tail == req)
				q->tail = prev;
			return;
		}
	}
}

/*
 * Under ctx->lock: takes a stream read waiting for data off its file's
 * queue. If it was the first, the next one is tried now.
 */
static void stream_unlink(struct nowait_ctx *ctx, struct nowait_req *req)
{
	struct nowait_file *f = req->file;
	bool first = f->sq.head == req;

	unlink_req(&f->sq, req);
	if (first && f->sq.head && todo_add(ctx, f))
		notify(ctx->stream_efd);
}

/*
 * A request still in a pool queue, a write still waiting for an earlier
 * overlapping one, or a stream read waiting for data completes at once
 * with -ECANCELED; one in io_uring is cancelled there (IORING_OP_ASYNC_CANCEL).
 * Under ctx->lock and, for the pool's queue, the pool's lock: the state
 * cannot change under us.
 */
int nowait_cancel(struct nowait_ctx *ctx, struct nowait_req *req)
{
	struct nowait_pool *pool = ctx->pool;
	int state, err;

	if (forked(ctx))
		return -ECHILD;
	if (req->file->ctx != ctx)
		return -EINVAL;
	pthread_mutex_lock(&ctx->lock);
	/*
	 * The streamer is reading it, unlocked and without blocking: wait for
	 * the outcome, unless this is the streamer (a preadv2 hook).
	 */
	while (get_state(req) == ST_STREAM_BUSY && !pthread_equal(ctx->streamer, pthread_self()))
		pthread_cond_wait(&ctx->stream_idle, &ctx->lock);
	if (pool)
		pthread_mutex_lock(&pool->lock);
	state = get_state(req);
	if (state == ST_QUEUED) {
		unlink_req(&pool->q[NOWAIT_CLASS_INTERACTIVE], req);
		unlink_req(&pool->q[NOWAIT_CLASS_BACKGROUND], req);
		pool->queued--;
	}
	if (pool)
		pthread_mutex_unlock(&pool->lock);
	if (state == ST_STREAM)
		stream_unlink(ctx, req);
	if (state == ST_QUEUED || state == ST_BLOCKED || state == ST_STREAM) {
		bool first;

		req->res = -ECANCELED;
		first = retire(ctx, req);
		pthread_mutex_unlock(&ctx->lock);
		if (first)
			notify(ctx->efd);
		return 0;
	}
	err = state == ST_RUNNING && ctx->uring ? ring_cancel(ctx, req) :
	      state == ST_RUNNING || state == ST_STREAM_BUSY ? -EBUSY : -EALREADY;
	pthread_mutex_unlock(&ctx->lock);
	return err;
}

int nowait_pool_create(const struct nowait_pool_params *params, struct nowait_pool **poolp)
{
	struct nowait_pool_params p = params ? *params : (struct nowait_pool_params){ 0 };
	unsigned max = p.max_threads ? p.max_threads : 4;
	int err;

	for (size_t i = 0; i < sizeof(p.reserved) / sizeof(p.reserved[0]); i++)
		if (p.reserved[i])
			return -EINVAL;
	if (p.reserved32 || max > NOWAIT_MAX_THREADS || p.min_threads > max)
		return -EINVAL;
	err = pool_new(p.min_threads, max, p.idle_ms ? p.idle_ms : 10000, p.thread_create, poolp);
	if (err)
		return -err;
	(*poolp)->shared = true;
	return 0;
}

int nowait_pool_destroy(struct nowait_pool *pool)
{
	unsigned users;
	bool self;

	/* As for a context: the child's copy is dead, and freeing it is unsafe. */
	if (!*pool->alive)
		return -ECHILD;
	if (pthread_mutex_lock(&pool->lock))
		return -EDEADLK;
	users = pool->users;
	self = in_pool_thread(pool);
	pthread_mutex_unlock(&pool->lock);
	if (users)
		return -EBUSY;
	if (self)
		return -EDEADLK;
	pool_free(pool);
	return 0;
}

int nowait_version(void)
{
	return NOWAIT_VERSION;
}
