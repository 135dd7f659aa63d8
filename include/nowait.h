/* SPDX-License-Identifier: MIT */
/*
 * libnowait: try a buffered read inline with preadv2(RWF_NOWAIT), hand what
 * is left to a thread pool, and learn per file when trying is a waste.
 * See nowait(7).
 *
 * The structs below have reserved space so that later versions can add
 * fields without changing their size: keep it zeroed.
 */
#ifndef NOWAIT_H
#define NOWAIT_H

#include <pthread.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

/*
 * The library is built with a 64-bit off_t, so the caller must be too: on
 * i386 without -D_FILE_OFFSET_BITS=64 (pkg-config --cflags nowait adds it)
 * struct nowait_req would be 4 bytes smaller than the library's, which
 * would write past it.
 */
/* A negative array size where off_t is not 64 bits: any C or C++ standard, no warning. */
typedef char nowait_needs_file_offset_bits_64[sizeof(off_t) == 8 ? 1 : -1];

/*
 * The anonymous unions and structs below are C11 and a GNU extension of
 * C99 and C++: __extension__ keeps -pedantic quiet with GCC and Clang.
 */
#if defined(__GNUC__) || defined(__clang__)
#define NOWAIT_EXTENSION __extension__
#else
#define NOWAIT_EXTENSION
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* The version of this header; nowait_version() says the library's (1.2). */
#define NOWAIT_VERSION_MAJOR 1
#define NOWAIT_VERSION_MINOR 2
#define NOWAIT_VERSION_PATCH 0
#define NOWAIT_VERSION \
	(NOWAIT_VERSION_MAJOR * 10000 + NOWAIT_VERSION_MINOR * 100 + NOWAIT_VERSION_PATCH)

/*
 * Returned by nowait_read(), nowait_readv(), nowait_write() and
 * nowait_writev() when the request went to the pool. Errno values lie in
 * [-4095, -1] and byte counts are >= 0, so this value is neither.
 */
#define NOWAIT_QUEUED ((ssize_t)-4096)

/*
 * Returned by nowait_try_read() and nowait_try_readv() when the rest of the
 * read needs a blocking read, which the caller does (in its own pool).
 * Neither a byte count nor an errno value, nor NOWAIT_QUEUED.
 */
#define NOWAIT_BLOCKING ((ssize_t)-4097)

/* The most pool threads nowait_create() and nowait_pool_create() accept. */
#define NOWAIT_MAX_THREADS 1024

/* nowait_params.backend: what serves the reads and writes that miss (1.1). */
#define NOWAIT_BACKEND_AUTO	0	/* io_uring if it works, else threads */
#define NOWAIT_BACKEND_THREADS	1	/* the pool */
#define NOWAIT_BACKEND_IO_URING	2	/* io_uring, or nowait_create() fails */

/* nowait_file_set_class(): whose queued requests a pool thread takes first (1.1). */
#define NOWAIT_CLASS_INTERACTIVE 0	/* the default */
#define NOWAIT_CLASS_BACKGROUND	1	/* scans, backups: only when no interactive one waits */

struct nowait_ctx;
struct nowait_file;
struct nowait_pool;

/* A pool several contexts can share (1.1). Zero in any field selects the default shown. */
struct nowait_pool_params {
	unsigned min_threads;	/* started at once and kept while idle: 0 */
	unsigned max_threads;	/* grown to on demand, at most NOWAIT_MAX_THREADS: 4 */
	unsigned idle_ms;	/* a thread above min_threads idle this long ends: 10000 */
	unsigned reserved32;	/* must be zero */
	/* As in struct nowait_params: starts each pool thread, so it can name or pin it. */
	int (*thread_create)(pthread_t *thread, const pthread_attr_t *attr,
			     void *(*fn)(void *), void *arg);
	uint64_t reserved[8];	/* must be zero */
};

/* Zero in any field selects the default shown. */
struct nowait_params {
	unsigned threads;		/* private pool size, or io-wq bound: 4, at most NOWAIT_MAX_THREADS */
	unsigned hit_ratio_min;		/* percent; skip inline below it, resume at 2x: 10 */
	unsigned decay_shift;		/* new sample weighs 1/2^shift: 3 */
	unsigned probe_interval;	/* while skipping, try every Nth read: 32 */
	unsigned eopnotsupp_reprobe;	/* reads skipped after EOPNOTSUPP: 1024 */
	/*
	 * The real preadv2(2), pwritev2(2) and pthread_create(3) when NULL:
	 * seams for tests, and the hook that can name or pin the library's
	 * threads.
	 */
	ssize_t (*preadv2)(int fd, const struct iovec *iov, int iovcnt,
			   off_t offset, int flags);
	ssize_t (*pwritev2)(int fd, const struct iovec *iov, int iovcnt,
			    off_t offset, int flags);
	int (*thread_create)(pthread_t *thread, const pthread_attr_t *attr,
			     void *(*fn)(void *), void *arg);
	/*
	 * 1.1 fields take what was reserved space, so the struct keeps its
	 * size and layout on every target; the rest must be zero.
	 */
	NOWAIT_EXTENSION union {
		NOWAIT_EXTENSION struct {
			struct nowait_pool *pool;	/* a shared pool instead of a private one: NULL */
			unsigned backend;		/* NOWAIT_BACKEND_*: AUTO */
			/*
			 * 1.2: back-pressure. With this many requests in the
			 * library (queued, running, waiting for data, or not
			 * yet reaped), reads and writes return -EAGAIN without
			 * trying: 0, no limit. A 1.1 library ignores it: check
			 * nowait_version() >= 10200 first.
			 */
			unsigned max_inflight;
		};
		uint64_t reserved[8];
	};
};

/*
 * Caller-owned. Once a call returned NOWAIT_QUEUED, the request, its iovec
 * array and its buffers must stay valid and untouched until nowait_reap()
 * returns it (or nowait_destroy() returns).
 */
struct nowait_req {
	void *user_data;	/* the caller's, never touched by the library */
	ssize_t res;		/* on completion: bytes read, or -errno */
	/* private to the library */
	struct nowait_file *file;
	const struct iovec *iov;
	int iovcnt;
	off_t offset;
	size_t want;
	size_t done;
	struct iovec one;
	struct nowait_req *next;
	struct nowait_req *wnext;	/* the file's queued writes */
	unsigned blockers;	/* earlier overlapping writes not done */
	int eperm;		/* the inline attempt said EPERM */
	int write;
	/* 1.1: in what was reserved space, keeping the 1.0 size and layout */
	NOWAIT_EXTENSION union {
		NOWAIT_EXTENSION struct {
			int state;		/* queued, running, done, ... */
			struct iovec rest;	/* io_uring: what is left to transfer */
		};
		uint64_t reserved[4];	/* room for later private fields */
	};
};

/* Reads counted by how they were served; every read counts in exactly one
 * of hits or the pool reasons (misses .. fb_other_error). */
struct nowait_stats {
	uint64_t hits;			/* completed inline (including EOF) */
	uint64_t misses;		/* inline EAGAIN */
	uint64_t partials;		/* inline short read, rest to the pool */
	uint64_t skipped;		/* adaptive policy skipped the attempt */
	uint64_t fb_eopnotsupp;
	uint64_t fb_enosys;
	uint64_t fb_eperm;
	uint64_t fb_einval;
	uint64_t fb_odirect;
	uint64_t fb_not_regular;
	uint64_t fb_zero_before_eof;
	uint64_t fb_other_error;
	uint64_t pool_jobs;
	uint64_t bytes_inline;
	uint64_t bytes_pool;
	/* Writes: each counts in write_hits or write_pool_jobs. */
	uint64_t write_hits;		/* completed inline */
	uint64_t write_pool_jobs;	/* handed to the pool (all or the rest) */
	uint64_t bytes_written_inline;
	uint64_t bytes_written_pool;
	/*
	 * 1.1: gauges, the state of the context's backend at the call (zero
	 * in nowait_file_stats()). A shared pool's count every context's.
	 */
	uint64_t pool_queued;		/* waiting for a pool thread */
	uint64_t pool_running;		/* in a pool thread, or in flight in io_uring */
	uint64_t pool_threads;		/* pool threads now (0 with io_uring) */
	uint64_t reserved[9];		/* zero; room for more counters */
};

int nowait_create(const struct nowait_params *params, struct nowait_ctx **ctxp);
int nowait_destroy(struct nowait_ctx *ctx);	/* 1.2: int, was void */
int nowait_fd(const struct nowait_ctx *ctx);
int nowait_reap(struct nowait_ctx *ctx, struct nowait_req **reqs, int max);

int nowait_file_open(struct nowait_ctx *ctx, int fd, struct nowait_file **filep);
int nowait_file_close(struct nowait_file *file);

ssize_t nowait_read(struct nowait_file *file, struct nowait_req *req,
		    void *buf, size_t len, off_t offset);
ssize_t nowait_readv(struct nowait_file *file, struct nowait_req *req,
		     const struct iovec *iov, int iovcnt, off_t offset);
ssize_t nowait_try_read(struct nowait_file *file, void *buf, size_t len, off_t offset,
			size_t *done);
ssize_t nowait_try_readv(struct nowait_file *file, const struct iovec *iov, int iovcnt,
			 off_t offset, size_t *done);
ssize_t nowait_write(struct nowait_file *file, struct nowait_req *req,
		     const void *buf, size_t len, off_t offset);
ssize_t nowait_writev(struct nowait_file *file, struct nowait_req *req,
		      const struct iovec *iov, int iovcnt, off_t offset);

int nowait_stats(struct nowait_ctx *ctx, struct nowait_stats *stats);
int nowait_file_stats(struct nowait_file *file, struct nowait_stats *stats);

/* 1.1 */
int nowait_pool_create(const struct nowait_pool_params *params, struct nowait_pool **poolp);
int nowait_pool_destroy(struct nowait_pool *pool);
int nowait_backend(const struct nowait_ctx *ctx);
int nowait_cancel(struct nowait_ctx *ctx, struct nowait_req *req);
int nowait_file_set_class(struct nowait_file *file, int cls);

/* 1.2: the running library's version, encoded as NOWAIT_VERSION is. */
int nowait_version(void);

#ifdef __cplusplus
}
#endif

#endif
