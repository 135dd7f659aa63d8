// SPDX-License-Identifier: MIT
/*
 * On a file that never hits, the inline attempt is soon skipped except for
 * periodic probes; one chance hit does not bring the attempts back (the
 * ratio must reach twice hit_ratio_min, after two probe hits in a row), not
 * even right after the ratio fell below the minimum; once the file is warm,
 * the probes notice and attempts (and hits) resume.
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

/* Reads until one is tried inline (a probe, within PROBE reads): its index. */
static int until_probe(struct nowait_ctx *ctx, struct nowait_file *f)
{
	int calls = atomic_load(&t_nowait_calls), i;

	for (i = 0; atomic_load(&t_nowait_calls) == calls; i++) {
		CHECK(i < PROBE);
		read_at(ctx, f, (off_t)i * 4096);
	}
	return i - 1;
}

/*
 * 18 misses leave the ratio at 9.0%, just under the minimum; one probe hit
 * lifts it to 20.4%, past twice the minimum. The cold reads that follow
 * must still be tried only by the probes.
 */
static void chance_hit(struct nowait_ctx *ctx, int fd)
{
	struct nowait_file *f;
	struct nowait_stats st;
	int i, calls;

	CHECK(nowait_file_open(ctx, fd, &f) == 0);
	atomic_store(&t_nowait_errno, EAGAIN);
	for (i = 0; i < 18; i++)
		read_at(ctx, f, (off_t)i * 4096);
	nowait_file_stats(f, &st);
	CHECK(st.misses == 18 && st.skipped == 0);
	atomic_store(&t_nowait_errno, 0);
	CHECK(until_probe(ctx, f) > 0);
	nowait_file_stats(f, &st);
	CHECK(st.hits == 1 && st.misses == 18);

	atomic_store(&t_nowait_errno, EAGAIN);
	calls = atomic_load(&t_nowait_calls);
	for (i = 0; i < 4 * PROBE; i++)
		read_at(ctx, f, (off_t)i * 4096);
	CHECK(atomic_load(&t_nowait_calls) - calls == 4);
	atomic_store(&t_nowait_errno, 0);
	CHECK(nowait_file_close(f) == 0);
}

int main(void)
{
	struct nowait_params p = { .preadv2 = t_preadv2, .probe_interval = PROBE };
	struct nowait_ctx *ctx;
	struct nowait_file *f;
	struct nowait_stats st;
	uint64_t hits, misses;
	int fd, i, first_hit = -1;

	t_start(60);
	fd = t_file(SIZE);
	t_warm(fd, 0, SIZE);
	CHECK(nowait_create(&p, &ctx) == 0);
	chance_hit(ctx, fd);
	atomic_store(&t_nowait_calls, 0);
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
	until_probe(ctx, f);
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
