// SPDX-License-Identifier: MIT
/*
 * On a file that never hits, the inline attempt is soon skipped except for
 * periodic probes; one chance hit does not bring the attempts back (the
 * ratio must reach twice hit_ratio_min); once the file is warm, the probes
 * notice and attempts (and hits) resume.
 */
#include "helpers.h"

#include <errno.h>

#define SIZE (1 << 20)
#define READS 128
#define PROBE 16

static void read_at(struct nowait_ctx *ctx, struct nowait_file *f, off_t off)
{
	struct nowait_req req = { 0 };
	char buf[4096];
	ssize_t n = nowait_read(f, &req, buf, sizeof(buf), off);

	if (n == NOWAIT_QUEUED) {
		CHECK(t_wait(ctx) == &req);
		n = req.res;
	}
	CHECK(n == sizeof(buf) && t_data_ok(buf, off, sizeof(buf)));
}

int main(void)
{
	struct nowait_params p = { .preadv2 = t_preadv2, .probe_interval = PROBE };
	struct nowait_ctx *ctx;
	struct nowait_file *f;
	struct nowait_stats st;
	uint64_t hits, misses;
	int calls;
	int fd, i, first_hit = -1;

	t_start(60);
	fd = t_file(SIZE);
	CHECK(nowait_create(&p, &ctx) == 0);
	CHECK(nowait_file_open(ctx, fd, &f) == 0);

	/*
	 * Never cached, by injection: real cold reads are not reliably misses
	 * (see T_COLD_TRIES).
	 */
	atomic_store(&t_nowait_errno, EAGAIN);
	for (i = 0; i < READS; i++)
		read_at(ctx, f, (off_t)i * 4096);
	nowait_file_stats(f, &st);
	/* (7/8)^18 < 10%: 18 misses, then one probe per PROBE reads. */
	CHECK(st.misses == (uint64_t)atomic_load(&t_nowait_calls));
	CHECK(st.misses + st.skipped == READS);
	CHECK(st.misses >= 18 && st.misses <= 18 + READS / PROBE + 1);

	/*
	 * One probe hits, by chance, and the misses go on: only the probes
	 * try, one per PROBE reads.
	 */
	atomic_store(&t_nowait_errno, 0);
	t_warm(fd, 0, SIZE);
	calls = atomic_load(&t_nowait_calls);
	for (i = 0; atomic_load(&t_nowait_calls) == calls; i++) {
		CHECK(i < PROBE);
		read_at(ctx, f, (off_t)i * 4096);
	}
	atomic_store(&t_nowait_errno, EAGAIN);
	nowait_file_stats(f, &st);
	misses = st.misses;
	for (i = 0; i < 4 * PROBE; i++)
		read_at(ctx, f, (off_t)i * 4096);
	nowait_file_stats(f, &st);
	CHECK(st.misses - misses == 4);

	/* Warm for good: after at most two probe hits, every read hits. */
	atomic_store(&t_nowait_errno, 0);
	hits = st.hits;
	for (i = 0; i < 3 * PROBE; i++) {
		read_at(ctx, f, (off_t)i * 4096);
		nowait_file_stats(f, &st);
		if (first_hit < 0 && st.hits > hits)
			first_hit = i;
		if (i >= 2 * PROBE)
			CHECK(st.hits == hits + 1);
		hits = st.hits;
	}
	CHECK(first_hit >= 0 && first_hit < PROBE);

	CHECK(nowait_file_close(f) == 0);
	nowait_destroy(ctx);
	close(fd);
	return 0;
}
