// SPDX-License-Identifier: MIT
/*
 * nowait-hitcost: what libnowait adds to a cached read, without an event
 * loop, a schedule or misses around it. Each of THREADS threads reads its
 * own file (made and cached here, in DIR) through one shared context, back
 * to back: ROUNDS rounds of N reads of SIZE bytes at pseudo-random aligned
 * offsets, alternating nowait_read() and bare preadv2(RWF_NOWAIT) rounds,
 * so both see the same machine. Prints the median and the min-max over the
 * rounds of the ns per read of each, and their ratio.
 *
 *   nowait-hitcost [--dir DIR] [--threads T] [--size BYTES] [--reads N] [--rounds R] [--cold]
 *
 * --cold: before each read, write a line in every 64 bytes of COLD_BYTES
 * (twice this host's 4 MiB L2), so that every read finds L1 and L2 cold, as
 * an event loop's read after a sleep does (what the last level keeps
 * depends on the machine); each read is timed alone and a round's figure
 * is its median read, the walk left out.
 *
 * Under valgrind --tool=callgrind, --rounds 2 --reads 10000 gives the
 * instructions of each path per read (user space only: the system call's
 * kernel side is not counted), the same whatever else the machine runs;
 * with --cold, --cache-sim=yes and a simulated last level no larger than
 * COLD_BYTES (--LL=4194304,16,64), its data cache misses per read: the
 * cache lines each path finds cold.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <nowait.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#define FILE_SIZE (4u << 20)
#define MAX_THREADS 16
#define MAX_ROUNDS 101
#define COLD_BYTES (8u << 20)

static struct {
	const char *dir;
	unsigned threads, rounds;
	size_t size, reads;
	int cold;
} cfg = { "/tmp", 1, 21, 512, 200000, 0 };
static unsigned char *cold_buf;

static struct nowait_ctx *ctx;
static pthread_barrier_t barrier;

struct worker {
	pthread_t tid;
	int fd;
	struct nowait_file *nf;
	double lib_ns[MAX_ROUNDS], bare_ns[MAX_ROUNDS];
};

static void die(const char *what, int err)
{
	fprintf(stderr, "nowait-hitcost: %s: %s\n", what, strerror(err));
	exit(1);
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

/* Evicts what the last read left in the CPU caches (a write per line). */
static void chill(void)
{
	for (size_t i = 0; i < COLD_BYTES; i += 64)
		cold_buf[i]++;
}

/*
 * nowait_read() (lib) or preadv2(RWF_NOWAIT) of reads cached blocks: ns per
 * read, or with --cold the median of reads timed one by one.
 */
static double round_of(struct worker *w, void *buf, int lib)
{
	uint64_t x = 88172645463325252u, t0, blocks = FILE_SIZE / cfg.size;
	uint64_t *each = cfg.cold ? calloc(cfg.reads, sizeof(*each)) : NULL;
	double res;

	if (cfg.cold && !each)
		die("calloc", ENOMEM);
	t0 = now_ns();
	for (size_t i = 0; i < cfg.reads; i++) {
		off_t off;
		ssize_t n;

		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		off = (off_t)(x % blocks * cfg.size);
		if (each) {
			chill();
			t0 = now_ns();
		}
		if (lib) {
			struct nowait_req req;

			n = nowait_read(w->nf, &req, buf, cfg.size, off);
		} else {
			struct iovec iov = { buf, cfg.size };

			n = preadv2(w->fd, &iov, 1, off, RWF_NOWAIT);
		}
		if (n != (ssize_t)cfg.size)
			die(lib ? "nowait_read missed a cached block" : "preadv2(RWF_NOWAIT) missed a cached block",
			    n < 0 ? (int)(lib ? -n : errno) : EAGAIN);
		if (each)
			each[i] = now_ns() - t0;
	}
	if (!each)
		return (double)(now_ns() - t0) / (double)cfg.reads;
	qsort(each, cfg.reads, sizeof(*each), cmp_u64);
	res = (double)each[cfg.reads / 2];
	free(each);
	return res;
}

static void *work(void *arg)
{
	struct worker *w = arg;
	void *buf = aligned_alloc(4096, (cfg.size + 4095) / 4096 * 4096);

	if (!buf)
		die("aligned_alloc", ENOMEM);
	for (unsigned r = 0; r < cfg.rounds; r++) {
		pthread_barrier_wait(&barrier);
		w->lib_ns[r] = round_of(w, buf, 1);
		pthread_barrier_wait(&barrier);
		w->bare_ns[r] = round_of(w, buf, 0);
	}
	free(buf);
	return NULL;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static void spread(double *v, unsigned n, double *med, double *lo, double *hi)
{
	qsort(v, n, sizeof(*v), cmp);
	*med = v[n / 2], *lo = v[0], *hi = v[n - 1];
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "dir", 1, 0, 'd' }, { "threads", 1, 0, 't' }, { "size", 1, 0, 's' },
		{ "reads", 1, 0, 'n' }, { "rounds", 1, 0, 'r' }, { "cold", 0, 0, 'c' }, { 0, 0, 0, 0 }
	};
	struct worker w[MAX_THREADS];
	double lib[MAX_THREADS * MAX_ROUNDS], bare[MAX_THREADS * MAX_ROUNDS], ratio[MAX_ROUNDS];
	double m, lo, hi;
	int c, rc;

	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 'd': cfg.dir = optarg; break;
		case 't': cfg.threads = (unsigned)atoi(optarg); break;
		case 's': cfg.size = (size_t)atol(optarg); break;
		case 'n': cfg.reads = (size_t)atol(optarg); break;
		case 'r': cfg.rounds = (unsigned)atoi(optarg); break;
		case 'c': cfg.cold = 1; break;
		default:
			fprintf(stderr, "usage: nowait-hitcost [--dir DIR] [--threads T] [--size BYTES] "
				"[--reads N] [--rounds R] [--cold]\n");
			return 2;
		}
	}
	if (!cfg.threads || cfg.threads > MAX_THREADS || !cfg.rounds || cfg.rounds > MAX_ROUNDS ||
	    !cfg.size || cfg.size > FILE_SIZE || FILE_SIZE % cfg.size || !cfg.reads) {
		fprintf(stderr, "nowait-hitcost: threads 1-%d, rounds 1-%d, size a divisor of %u\n",
			MAX_THREADS, MAX_ROUNDS, FILE_SIZE);
		return 2;
	}
	if (cfg.cold && cfg.threads > 1) {
		fprintf(stderr, "nowait-hitcost: --cold with one thread (the walk would evict the other's lines too)\n");
		return 2;
	}
	if (cfg.cold && !(cold_buf = calloc(1, COLD_BYTES)))
		die("calloc", ENOMEM);
	if ((rc = nowait_create(NULL, &ctx)) < 0)
		die("nowait_create", -rc);
	pthread_barrier_init(&barrier, NULL, cfg.threads);
	for (unsigned i = 0; i < cfg.threads; i++) {
		static char block[65536];
		char path[4096];

		snprintf(path, sizeof(path), "%s/nowait-hitcost.XXXXXX", cfg.dir);
		if ((w[i].fd = mkstemp(path)) < 0)
			die(path, errno);
		unlink(path);
		memset(block, 'a' + (int)i, sizeof(block));
		for (size_t off = 0; off < FILE_SIZE; off += sizeof(block))
			if (pwrite(w[i].fd, block, sizeof(block), (off_t)off) != (ssize_t)sizeof(block))
				die("pwrite", errno);
		if ((rc = nowait_file_open(ctx, w[i].fd, &w[i].nf)) < 0)
			die("nowait_file_open", -rc);
	}
	for (unsigned i = 0; i < cfg.threads; i++)
		if ((rc = pthread_create(&w[i].tid, NULL, work, &w[i])))
			die("pthread_create", rc);
	for (unsigned i = 0; i < cfg.threads; i++)
		pthread_join(w[i].tid, NULL);
	/* Per round: the threads' mean, and the ratio of the two within the round. */
	for (unsigned r = 0; r < cfg.rounds; r++) {
		double l = 0, b = 0;

		for (unsigned i = 0; i < cfg.threads; i++)
			l += w[i].lib_ns[r], b += w[i].bare_ns[r];
		lib[r] = l / cfg.threads, bare[r] = b / cfg.threads, ratio[r] = l / b;
	}
	printf("nowait-hitcost: %u thread(s) on one context, %zu-byte cached reads, %u rounds of %zu%s\n",
	       cfg.threads, cfg.size, cfg.rounds, cfg.reads,
	       cfg.cold ? ", CPU caches cold before each (median read per round)" : "");
	spread(lib, cfg.rounds, &m, &lo, &hi);
	printf("  nowait_read()          %8.1f ns/read [%.1f-%.1f]\n", m, lo, hi);
	spread(bare, cfg.rounds, &m, &lo, &hi);
	printf("  preadv2(RWF_NOWAIT)    %8.1f ns/read [%.1f-%.1f]\n", m, lo, hi);
	spread(ratio, cfg.rounds, &m, &lo, &hi);
	printf("  ratio, within a round  %8.3fx [%.3f-%.3f]\n", m, lo, hi);
	for (unsigned i = 0; i < cfg.threads; i++) {
		nowait_file_close(w[i].nf);
		close(w[i].fd);
	}
	nowait_destroy(ctx);
	free(cold_buf);
	return 0;
}
