/* SPDX-License-Identifier: MIT */
/* Shared by the tests: scratch files, page-cache control, the errno seam. */
#ifndef TEST_HELPERS_H
#define TEST_HELPERS_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>
#include "nowait.h"

#define T_SKIP 77
#define T_RETURN_ZERO (-1)	/* for t_nowait_errno: the 5.9/5.10 bug */
/*
 * On 6.x a RWF_NOWAIT miss starts the read I/O itself, and when that
 * finishes before the kernel looks again (often, on a busy VM) the "miss"
 * hits: tests that need a real miss retry up to this many times.
 */
#define T_COLD_TRIES 20

#define CHECK(cond) \
	do { \
		if (!(cond)) \
			t_fail("%s:%d: %s", __FILE__, __LINE__, #cond); \
	} while (0)

_Noreturn void t_fail(const char *fmt, ...);
_Noreturn void t_skip(const char *fmt, ...);
void t_start(unsigned seconds);

int t_file(size_t size);
uint8_t t_byte(off_t off);
bool t_data_ok(const void *buf, off_t off, size_t len);
size_t t_resident(int fd, off_t off, size_t len);
void t_evict(int fd, off_t off, size_t len);
void t_warm(int fd, off_t off, size_t len);

struct nowait_req *t_wait(struct nowait_ctx *ctx);

/* The errno seam: t_preadv2 stands in for preadv2(2). */
extern atomic_int t_nowait_calls;	/* inline attempts seen */
extern atomic_int t_nowait_errno;	/* nonzero: fail inline attempts */
extern atomic_int t_pool_errno;		/* nonzero: fail pool reads */
extern atomic_size_t t_nowait_limit;	/* nonzero: cap inline reads (short) */
ssize_t t_preadv2(int fd, const struct iovec *iov, int iovcnt, off_t off, int flags);

/*
 * The gate seam: inline attempts miss (EAGAIN), and the next n pool
 * transfers after t_gate_close(n) wait until t_gate_open(), so a test
 * knows which requests hold threads and which are still queued.
 */
void t_gate_close(int n);
void t_gate_wait(int n);	/* until n transfers are waiting at the gate */
void t_gate_open(void);
ssize_t t_gated_preadv2(int fd, const struct iovec *iov, int iovcnt, off_t off, int flags);
ssize_t t_gated_pwritev2(int fd, const struct iovec *iov, int iovcnt, off_t off, int flags);

#endif
