// SPDX-License-Identifier: MIT
/*
 * Stream reads cancelled while their data arrives: a writer thread sends
 * numbered bytes into 8 sockets while this thread submits reads, cancels
 * some at random and reaps. Each request completes exactly once, with
 * -ECANCELED or bytes; a cancelled read takes no data, so every socket's
 * bytes arrive complete and in order across its reads.
 */
#include "helpers.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>

#define SOCKS 8
#define PER_SOCK 200000	/* bytes the writer sends into each */
#define DEPTH 4		/* reads in flight per socket */

static int peer[SOCKS];

static void *writer(void *arg)
{
	unsigned char chunk[7];

	(void)arg;
	for (int off = 0; off < PER_SOCK; off += (int)sizeof(chunk)) {
		for (int s = 0; s < SOCKS; s++) {
			int n = PER_SOCK - off < (int)sizeof(chunk) ? PER_SOCK - off : (int)sizeof(chunk);

			for (int i = 0; i < n; i++)
				chunk[i] = t_byte(off + i);
			CHECK(send(peer[s], chunk, (size_t)n, 0) == n);
		}
		if (off % 700 == 0)
			usleep(100);
	}
	return NULL;
}

struct slot {
	struct nowait_req req;
	int sock;
	bool busy;
	unsigned char buf[64];
};

int main(void)
{
	static struct slot slots[SOCKS][DEPTH];
	struct nowait_ctx *ctx;
	struct nowait_file *f[SOCKS];
	int got[SOCKS] = { 0 }, done = 0, cancelled = 0, completions = 0;
	pthread_t w;
	unsigned seed = 1;

	t_start(120);
	CHECK(nowait_create(NULL, &ctx) == 0);
	for (int s = 0; s < SOCKS; s++) {
		int sv[2];

		CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
		peer[s] = sv[1];
		CHECK(nowait_file_open(ctx, sv[0], &f[s]) == 0);
		close(sv[0]);	/* the library's own reference keeps it */
		for (int d = 0; d < DEPTH; d++)
			slots[s][d].sock = s;
	}
	CHECK(pthread_create(&w, NULL, writer, NULL) == 0);
	while (done < SOCKS) {
		struct nowait_req *reqs[16];
		int n;

		/*
		 * Keep every socket's reads in flight; reads complete in
		 * submission order per socket, so bytes arrive in order across
		 * the ones that got data.
		 */
		for (int s = 0; s < SOCKS; s++) {
			for (int d = 0; d < DEPTH && got[s] < PER_SOCK; d++) {
				struct slot *sl = &slots[s][d];

				if (sl->busy)
					continue;
				sl->req.user_data = sl;
				CHECK(nowait_read(f[s], &sl->req, sl->buf, 1 + rand_r(&seed) % 64, -1) ==
				      NOWAIT_QUEUED);
				sl->busy = true;
			}
		}
		for (int k = 0; k < 3; k++) {
			struct slot *sl = &slots[rand_r(&seed) % SOCKS][rand_r(&seed) % DEPTH];
			int r;

			if (!sl->busy)
				continue;
			r = nowait_cancel(ctx, &sl->req);
			CHECK(r == 0 || r == -EALREADY);
		}
		n = nowait_reap(ctx, reqs, 16);
		CHECK(n >= 0);
		if (n == 0) {
			struct nowait_req *one = t_wait(ctx);

			reqs[0] = one;
			n = 1;
		}
		for (int i = 0; i < n; i++) {
			struct slot *sl = reqs[i]->user_data;
			int s = sl->sock;

			CHECK(sl->busy);
			sl->busy = false;
			completions++;
			if (sl->req.res == -ECANCELED) {
				cancelled++;
				continue;
			}
			CHECK(sl->req.res > 0);
			if (!t_data_ok(sl->buf, got[s], (size_t)sl->req.res))
				t_fail("socket %d: bytes %d.. out of order", s, got[s]);
			got[s] += (int)sl->req.res;
			CHECK(got[s] <= PER_SOCK);
			if (got[s] == PER_SOCK)
				done++;
		}
	}
	CHECK(pthread_join(w, NULL) == 0);
	/* Reads still in flight on finished sockets wait for data: destroy cancels them. */
	CHECK(nowait_destroy(ctx) == 0);
	for (int s = 0; s < SOCKS; s++)
		for (int d = 0; d < DEPTH; d++)
			CHECK(!slots[s][d].busy || slots[s][d].req.res == -ECANCELED);
	printf("%d completions, %d cancelled\n", completions, cancelled);
	CHECK(cancelled > 0);
	for (int s = 0; s < SOCKS; s++)
		close(peer[s]);
	return 0;
}
