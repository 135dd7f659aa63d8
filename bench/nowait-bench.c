// SPDX-License-Identifier: MIT
/*
 * nowait-bench: the seed's measurement (Tanski's 2015 fio mix of 16 KiB
 * reads) as an open-loop benchmark of one event loop reading through
 *   pool         every read handed to libnowait's pool (inline attempt off),
 *   fast         libnowait, inline attempt on every read (adaptive off),
 *   adaptive     libnowait defaults, thread pool for misses,
 *   lib_uring    libnowait defaults, io_uring for misses,
 *   uring_bound  liburing, buffered reads, io-wq bounded to the pool's threads,
 *   io_uring     the same, io-wq unbounded,
 * each repeated in rotated order, then a rate ramp per mode and a logging
 * (O_APPEND write) workload. --fragment splits the cold files' extents so
 * that a miss must read extent blocks; --scenario saturate adds cold reads
 * beyond the disk's read IOPS.
 * See bench/README.md for the method and the choices made.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <linux/fiemap.h>
#include <linux/fs.h>
#include <liburing.h>
#include <math.h>
#include <nowait.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "hist.h"
#include "sys.h"

#define BS 16384u
#define MIB (1024.0 * 1024.0)

enum { F1, F2, F3, NCLS, ALL = NCLS };
static const char *const cls_name[] = { "f1", "f2", "f3", "all" };
static const char *const cls_desc[] = {
	"zipf random, mostly cached", "uniform random, mostly uncached", "sequential, cold", "the mix",
};

enum { M_POOL, M_FAST, M_ADAPTIVE, M_LIBURING, M_URING_B, M_URING, NMODES };
static const char *const mode_name[] = {
	"pool", "fast", "adaptive", "lib_uring", "uring_bound", "io_uring",
};

/* The raw io_uring modes: the loop drives a ring of its own. */
static bool raw_uring(int mode)
{
	return mode == M_URING || mode == M_URING_B;
}

#define MAX_REPS 15
#define RAMP_STEPS 6
static const double ramp_factor[RAMP_STEPS] = { 0.5, 1, 1.5, 2, 3, 4 };

struct cfg {
	const char *dir, *json, *txt;
	double duration;	/* s per mode, measured */
	double warmup;		/* s per mode before that, not measured */
	unsigned reps;		/* runs per mode, in rotated order */
	double ramp_s;		/* measured s per ramp step; 0: no ramp */
	double p99_bound_ms;	/* the ramp's latency bound */
	double log_rate;	/* 4 KiB O_APPEND records per second; 0: no logging run */
	double rate;		/* req/s; 0: calibrate */
	double util;		/* calibration target */
	double max_rate;	/* cap on the calibrated rate (CPU, not I/O, bound) */
	double calib_s;
	unsigned threads;
	unsigned iops;		/* throttle limit */
	bool throttle;
	bool drop;		/* drop_caches on reset */
	bool quick;
	bool prepare;		/* --prepare: only create the data files */
	unsigned fragment;	/* f2, f3: extents split every this many KiB; 0: not fragmented */
	int scenario;		/* SC_* */
	double sat_x;		/* saturate: extra f2 reads/s, in multiples of the disk's IOPS */
	double sat_rate;	/* those reads/s, once the disk's IOPS are known; 0: none */
	double theta;
	double f1_hit;		/* intended f1 hit ratio */
	double mix[NCLS];
	unsigned mib[NCLS];
	uint64_t seed;
	unsigned spin_us;
	bool mode_on[NMODES];
};

struct file {
	char path[4096];
	int fd;
	uint64_t nblocks;
	long extents;		/* by FIEMAP; -1 where the filesystem has none (tmpfs) */
};

enum { SC_STEADY, SC_SATURATE, NSCEN };
static const char *const scen_name[] = { "steady", "saturate" };

struct op {
	uint64_t t;		/* ns after the phase start */
	uint32_t blk;
	uint8_t cls;
};

struct residency {
	double pages[NCLS];	/* % of the file's pages resident */
	double ops_f1;		/* % of scheduled f1 reads whose 16 KiB are resident */
};

struct result {
	bool ran, incomplete;
	struct hist h[NCLS + 1];
	struct hist lateness;	/* actual submit - scheduled arrival */
	uint64_t bytes[NCLS + 1];
	uint64_t last_done[NCLS + 1];	/* ns after t0 */
	uint64_t errors, shorts;
	uint64_t inline_done[NCLS];	/* completed during submission */
	uint64_t max_inflight;
	bool have_stats;
	struct nowait_stats st[NCLS];	/* of the measured part: less st0 */
	struct nowait_stats st0[NCLS];	/* at the end of the warm-up */
	struct residency before, after;
	double cpu_s, wall_s, load[3];
};

static struct cfg cfg = {
	.duration = 6, .warmup = 2, .reps = 5, .ramp_s = 3, .p99_bound_ms = 100, .log_rate = 500,
	.util = 0.6, .max_rate = 2000, .calib_s = 3, .threads = 4, .iops = 200,
	.throttle = true, .theta = 1.2, .f1_hit = 0.90, .sat_x = 2,
	.mix = { 73, 18, 9 }, .mib = { 256, 1024, 1024 }, .seed = 1, .spin_us = 300,
	.mode_on = { true, true, true, true, true, true },
};
static struct file files[NCLS];
static struct throttle thr;
static volatile sig_atomic_t stop;

static void die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fputs("nowait-bench: ", stderr);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	throttle_teardown(&thr);
	exit(1);
}

static void on_signal(int sig)
{
	if (stop) {	/* second time: leave now */
		throttle_teardown(&thr);
		_exit(128 + sig);
	}
	stop = 1;
}

static void on_exit_cleanup(void)
{
	throttle_teardown(&thr);
}

/* ---- random numbers: xoshiro256** seeded by splitmix64 ------------------ */

struct rng {
	uint64_t s[4];
};

static uint64_t splitmix(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static void rng_seed(struct rng *r, uint64_t seed)
{
	for (int i = 0; i < 4; i++)
		r->s[i] = splitmix(&seed);
}

static uint64_t rotl(uint64_t x, int k)
{
	return (x << k) | (x >> (64 - k));
}

static uint64_t rng_next(struct rng *r)
{
	uint64_t *s = r->s, res = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;

	s[2] ^= s[0];
	s[3] ^= s[1];
	s[1] ^= s[2];
	s[0] ^= s[3];
	s[2] ^= t;
	s[3] = rotl(s[3], 45);
	return res;
}

/* Uniform in [0, 1). */
static double rng_unit(struct rng *r)
{
	return (double)(rng_next(r) >> 11) * 0x1.0p-53;
}

/* ---- fio's zipf (lib/zipf.c), with its rank scattering ------------------- */

struct zipf {
	uint64_t n;
	double theta, zetan, zeta2, alpha, eta;
	uint64_t rand_off;
};

static void zipf_init(struct zipf *z, uint64_t n, double theta, struct rng *r)
{
	z->n = n;
	z->theta = theta;
	z->zetan = 0;
	for (uint64_t i = 0; i < n; i++)
		z->zetan += pow(1.0 / (double)(i + 1), theta);
	z->zeta2 = pow(1.0, theta) + pow(0.5, theta);
	z->alpha = 1.0 / (1.0 - theta);
	z->eta = (1.0 - pow(2.0 / (double)n, 1.0 - theta)) / (1.0 - z->zeta2 / z->zetan);
	z->rand_off = rng_next(r);
}

/* fio's __hash_long() on 64-bit: multiplication by GOLDEN_RATIO_PRIME. */
static uint64_t zipf_block(const struct zipf *z, uint64_t rank)
{
	return ((rank - 1) * 0x9e37fffffffc0001ull + z->rand_off) % z->n;
}

static uint64_t zipf_next(struct zipf *z, struct rng *r)
{
	double u = rng_unit(r), rz = u * z->zetan;
	uint64_t val;

	if (rz < 1.0)
		val = 1;
	else if (rz < 1.0 + pow(0.5, z->theta))
		val = 2;
	else
		val = 1 + (uint64_t)((double)z->n * pow(z->eta * u - z->eta + 1.0, z->alpha));
	if (val > z->n)
		val = z->n;
	return zipf_block(z, val);
}

/* ---- the data set ------------------------------------------------------- */

/* Extents of an open file by FIEMAP, or -1 where the filesystem has none (tmpfs). */
static long extent_count(int fd)
{
	struct fiemap fm = { .fm_length = FIEMAP_MAX_OFFSET };

	/* fm_extent_count 0 asks for the count only. */
	return ioctl(fd, FS_IOC_FIEMAP, &fm) ? -1 : (long)fm.fm_mapped_extents;
}

/*
 * Splits the file's extents every frag_kib: the last 4 KiB of each step is
 * punched out and allocated again unwritten, which no filesystem merges with
 * the written data beside it, so the file has two extents per step and its
 * extent tree spills out of the inode (ext4 keeps 4 extents there, xfs a
 * few dozen): a cold read must fetch extent blocks before its data.
 * Interleaving two files' allocations does not do it reliably: on ext4 each
 * file's allocation goal follows its own last extent, and on a disk whose
 * free space is fragmented the two files grow in separate places (20
 * extents for 64 MiB instead of 1024 on 6.18).
 */
static void fragment(const struct file *f, int fd, unsigned frag_kib)
{
	uint64_t step = (uint64_t)frag_kib << 10;

	for (uint64_t end = step; end <= f->nblocks * BS; end += step)
		if (fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t)(end - 4096), 4096) < 0 ||
		    fallocate(fd, FALLOC_FL_KEEP_SIZE, (off_t)(end - 4096), 4096) < 0) {
			if (errno != EOPNOTSUPP)
				die("fallocate %s: %s", f->path, strerror(errno));
			fprintf(stderr, "no hole punching here: %s is not fragmented\n", f->path);
			return;
		}
}

/* Writes the file (random bytes, no two MiB alike) under a temporary name,
 * fragments it when frag_kib is not 0, and renames it into place. */
static void create_file(const struct file *f, unsigned frag_kib)
{
	size_t chunk = 1 << 20;
	char *buf = malloc(chunk), tmp[4200];
	struct rng r;
	int fd;

	if (!buf)
		die("out of memory");
	rng_seed(&r, 42);
	for (size_t i = 0; i < chunk / 8; i++)
		((uint64_t *)buf)[i] = rng_next(&r);
	snprintf(tmp, sizeof(tmp), "%s.tmp", f->path);
	fprintf(stderr, "creating %s (%" PRIu64 " MiB%s)\n", f->path, f->nblocks * BS >> 20,
		frag_kib ? ", fragmented" : "");
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		die("create %s: %s", tmp, strerror(errno));
	for (uint64_t off = 0; off < f->nblocks * BS; off += chunk) {
		((uint64_t *)buf)[0] = off;	/* no two MiB alike */
		if (pwrite(fd, buf, chunk, (off_t)off) != (ssize_t)chunk)
			die("write %s: %s", tmp, strerror(errno));
		if (stop)
			die("interrupted");
	}
	if (fsync(fd) < 0)
		die("fsync %s: %s", tmp, strerror(errno));
	if (frag_kib) {
		fragment(f, fd, frag_kib);
		if (fsync(fd) < 0)
			die("fsync %s: %s", tmp, strerror(errno));
	}
	evict(fd, 0, 0);
	close(fd);
	if (rename(tmp, f->path) < 0)
		die("rename %s: %s", tmp, strerror(errno));
	free(buf);
}

/*
 * Can the file be reused: the right size, fully allocated, and laid out as
 * asked? Fragmented means two extents per frag_kib (fragment()); not fragmented,
 * long extents (ext4 ends one at 128 MiB at the most). Where FIEMAP does not
 * work (tmpfs) there is no layout to check.
 */
static bool file_ok(const struct file *f, unsigned frag_kib)
{
	uint64_t size = f->nblocks * BS;
	struct stat st;
	long ext;
	int fd;

	if (stat(f->path, &st) < 0 || (uint64_t)st.st_size != size || (uint64_t)st.st_blocks * 512 < size)
		return false;
	fd = open(f->path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	ext = extent_count(fd);
	close(fd);
	if (ext < 0)
		return true;
	if (frag_kib)
		return (uint64_t)ext >= size / ((uint64_t)frag_kib << 10);
	return (uint64_t)ext <= (size >> 24) + 4;
}

/* The data set, reused where it is as asked; the cold files f2 and f3 fragmented (--fragment). */
static void make_data(void)
{
	for (int c = 0; c < NCLS; c++) {
		unsigned frag = c == F1 ? 0 : cfg.fragment;

		snprintf(files[c].path, sizeof(files[c].path), "%s/%s", cfg.dir, cls_name[c]);
		files[c].nblocks = ((uint64_t)cfg.mib[c] << 20) / BS;
		if (!file_ok(&files[c], frag))
			create_file(&files[c], frag);
		files[c].fd = open(files[c].path, O_RDONLY | O_CLOEXEC);
		if (files[c].fd < 0)
			die("open %s: %s", files[c].path, strerror(errno));
		files[c].extents = extent_count(files[c].fd);
	}
}

/* ---- workload ----------------------------------------------------------- */

static struct op *ops;
static size_t nops;
static uint64_t *f1_hot;	/* f1 blocks made resident on every reset */
static size_t nf1_hot, nf1_cold;
static double f1_cold_mass;	/* the rest's share of f1's zipf probability */

static int cmp_u64(const void *a, const void *b, void *arg)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	(void)arg;
	return x < y ? -1 : x > y;
}

static int cmp_mass(const void *a, const void *b, void *arg)
{
	const double *m = arg;
	double x = m[*(const uint64_t *)a], y = m[*(const uint64_t *)b];

	return x < y ? -1 : x > y;
}

/*
 * The saturation scenario: cold f2 reads at cfg.sat_rate, a Poisson process
 * of their own through the measured part (not the warm-up), merged into
 * the schedule; the base schedule stays the steady scenario's.
 */
static void add_saturation(void)
{
	size_t cap = (size_t)(cfg.sat_rate * cfg.duration * 1.2) + 1024, n = 0, a = 0, b = 0;
	struct op *extra = malloc(cap * sizeof(*extra)), *all;
	double t = cfg.warmup;
	struct rng r;

	if (!extra)
		die("out of memory");
	rng_seed(&r, cfg.seed + 0x5a7);
	for (;; n++) {
		t += -log(1.0 - rng_unit(&r)) / cfg.sat_rate;
		if (t >= cfg.warmup + cfg.duration)
			break;
		if (n == cap && !(extra = realloc(extra, (cap *= 2) * sizeof(*extra))))
			die("out of memory");
		extra[n] = (struct op){ .t = (uint64_t)(t * 1e9), .cls = F2,
					.blk = (uint32_t)(rng_next(&r) % files[F2].nblocks) };
	}
	all = malloc((nops + n) * sizeof(*all));
	if (!all)
		die("out of memory");
	for (size_t k = 0; k < nops + n; k++)
		all[k] = b == n || (a < nops && ops[a].t <= extra[b].t) ? ops[a++] : extra[b++];
	free(ops);
	free(extra);
	ops = all;
	nops += n;
}

/*
 * Poisson arrivals at cfg.rate for cfg.duration, classes drawn by cfg.mix;
 * the same schedule (fixed seed) for every mode. Also picks the f1 blocks to
 * keep cold: the least likely ones, up to 1 - f1_hit of the probability;
 * the others are the hot set, read into the cache on every reset.
 */
static void make_schedule(void)
{
	double wsum = cfg.mix[F1] + cfg.mix[F2] + cfg.mix[F3], t = 0;
	uint64_t n1 = files[F1].nblocks, seq = 0;
	size_t cap = (size_t)(cfg.rate * (cfg.warmup + cfg.duration) * 1.2) + 1024;
	struct rng r;
	struct zipf z;
	double *mass;

	rng_seed(&r, cfg.seed);
	zipf_init(&z, n1, cfg.theta, &r);
	ops = malloc(cap * sizeof(*ops));
	if (!ops)
		die("out of memory");
	for (nops = 0;; nops++) {
		double u;

		t += -log(1.0 - rng_unit(&r)) / cfg.rate;
		if (t >= cfg.warmup + cfg.duration)
			break;
		if (nops == cap && !(ops = realloc(ops, (cap *= 2) * sizeof(*ops))))
			die("out of memory");
		ops[nops].t = (uint64_t)(t * 1e9);
		u = rng_unit(&r) * wsum;
		if (u < cfg.mix[F1]) {
			ops[nops].cls = F1;
			ops[nops].blk = (uint32_t)zipf_next(&z, &r);
		} else if (u < cfg.mix[F1] + cfg.mix[F2]) {
			ops[nops].cls = F2;
			ops[nops].blk = (uint32_t)(rng_next(&r) % files[F2].nblocks);
		} else {
			ops[nops].cls = F3;
			ops[nops].blk = (uint32_t)(seq++ % files[F3].nblocks);
		}
	}

	if (cfg.sat_rate > 0)
		add_saturation();

	/* Exact zipf probability of each f1 block, then the cold set. */
	uint64_t *order;
	size_t nz = 0;

	mass = calloc(n1, sizeof(*mass));
	order = malloc(n1 * sizeof(*order));
	if (!mass || !order)
		die("out of memory");
	for (uint64_t k = 1; k <= n1; k++)
		mass[zipf_block(&z, k)] += pow(1.0 / (double)k, cfg.theta) / z.zetan;
	for (uint64_t b = 0; b < n1; b++)
		if (mass[b] > 0)
			order[nz++] = b;
	qsort_r(order, nz, sizeof(*order), cmp_mass, mass);
	f1_cold_mass = 0;
	size_t cold = 0;
	while (cold < nz && f1_cold_mass + mass[order[cold]] <= 1.0 - cfg.f1_hit)
		f1_cold_mass += mass[order[cold++]];
	nf1_hot = nz - cold;
	nf1_cold = n1 - nf1_hot;
	f1_hot = malloc((nf1_hot + 1) * sizeof(*f1_hot));
	if (!f1_hot)
		die("out of memory");
	memcpy(f1_hot, order + cold, nf1_hot * sizeof(*f1_hot));
	qsort_r(f1_hot, nf1_hot, sizeof(*f1_hot), cmp_u64, NULL);
	free(order);
	free(mass);
}

/* ---- page cache state --------------------------------------------------- */

static void measure_residency(struct residency *res)
{
	for (int c = 0; c < NCLS; c++) {
		unsigned char *vec = NULL;
		size_t npages = 0;
		long n = resident_pages(files[c].fd, 0, 0, c == F1 ? &vec : NULL, &npages);

		if (n < 0) {
			res->pages[c] = -1;
			if (c == F1)
				res->ops_f1 = -1;
			continue;
		}
		res->pages[c] = 100.0 * (double)n / (double)(files[c].nblocks * (BS / 4096));
		if (c == F1) {
			size_t hit = 0, all = 0, ppb = BS / 4096;

			for (size_t i = 0; i < nops; i++) {
				bool in = true;

				if (ops[i].cls != F1)
					continue;
				all++;
				for (size_t p = 0; p < ppb; p++)
					in = in && (vec[ops[i].blk * ppb + p] & 1);
				hit += in;
			}
			res->ops_f1 = all ? 100.0 * (double)hit / (double)all : 0;
			free(vec);
		}
	}
}

/*
 * f1: only its hot set resident, f2 and f3 cold; the same before every mode.
 * f1 is evicted whole and the hot blocks read back one by one through a
 * POSIX_FADV_RANDOM descriptor (no readahead): DONTNEED on a 16 KiB range
 * cannot drop part of a large folio, so evicting the cold blocks out of a
 * fully read file would leave most of them resident.
 */
static void reset_cache(struct residency *res)
{
	void *buf = aligned_alloc(4096, BS);
	int wfd;

	if (!buf)
		die("out of memory");
	if (thr.active)
		throttle_set(&thr, 0);
	/* Page cache and slab: with fragmented files, the extent blocks and
	 * ext4's extent status cache go too, so that a miss reads metadata. */
	if (cfg.drop && drop_caches() < 0)
		fprintf(stderr, "warning: drop_caches failed (not root?)\n");
	for (int tries = 0; tries < 3; tries++) {
		evict(files[F1].fd, 0, 0);
		evict(files[F2].fd, 0, 0);
		evict(files[F3].fd, 0, 0);
		wfd = open(files[F1].path, O_RDONLY | O_CLOEXEC);
		if (wfd < 0)
			die("open %s: %s", files[F1].path, strerror(errno));
		posix_fadvise(wfd, 0, 0, POSIX_FADV_RANDOM);
		for (size_t i = 0; i < nf1_hot; i++)
			if (pread(wfd, buf, BS, (off_t)(f1_hot[i] * BS)) != (ssize_t)BS)
				die("warm %s: %s", files[F1].path, strerror(errno));
		close(wfd);
		measure_residency(res);
		if (res->pages[F2] < 1 && res->pages[F3] < 1 &&
		    fabs(res->ops_f1 - 100.0 * (1 - f1_cold_mass)) < 2)
			break;
		usleep(200000);
	}
	free(buf);
}

/* ---- the event loop ----------------------------------------------------- */

/* pool mode: libnowait whose preadv2 says ENOSYS to RWF_NOWAIT, so the
 * context latches "never inline" on its first read; pool reads pass. */
static ssize_t no_inline_preadv2(int fd, const struct iovec *iov, int cnt, off_t off, int flags)
{
	if (flags & RWF_NOWAIT) {
		errno = ENOSYS;
		return -1;
	}
	return preadv2(fd, iov, cnt, off, flags);
}

/* pool mode for writes: the inline attempt always refused, as for reads. */
static ssize_t no_inline_pwritev2(int fd, const struct iovec *iov, int cnt, off_t off, int flags)
{
	if (flags & RWF_NOWAIT) {
		errno = EOPNOTSUPP;
		return -1;
	}
	return pwritev2(fd, iov, cnt, off, flags);
}

/* The libnowait context of a mode (not the raw io_uring ones). */
static struct nowait_params lib_params(int mode)
{
	struct nowait_params p = { .threads = cfg.threads, .backend = NOWAIT_BACKEND_THREADS };

	if (mode == M_POOL) {
		p.preadv2 = no_inline_preadv2;
		p.pwritev2 = no_inline_pwritev2;
	} else if (mode == M_FAST) {
		p.probe_interval = 1;	/* "every 1st read probes": never skip */
	} else if (mode == M_LIBURING) {
		p.backend = NOWAIT_BACKEND_IO_URING;
	}
	return p;
}

/* Like for like: at most as many blocking transfers at once as the pool has threads. */
static void bound_ring(int mode, struct io_uring *ring)
{
	unsigned workers[2] = { cfg.threads, cfg.threads };
	int rc;

	if (mode == M_URING_B && (rc = io_uring_register_iowq_max_workers(ring, workers)) < 0)
		die("IORING_REGISTER_IOWQ_MAX_WORKERS: %s", strerror(-rc));
}

struct loop {
	int mode, ep;
	uint64_t t0, warm;	/* warm: ns after t0 where measuring starts */
	struct result *res;
	size_t done, inflight;
	/* libnowait */
	struct nowait_ctx *ctx;
	struct nowait_file *nf[NCLS];
	struct nowait_req *reqs;
	/* io_uring */
	struct io_uring ring;
	/* buffers: a stack of free ones, and every one allocated */
	void **free_bufs, **all_bufs;
	size_t nfree, nall, cap;
	void **buf_of;		/* per op */
};

static void *get_buf(struct loop *l)
{
	void *b;

	if (l->nfree)
		return l->free_bufs[--l->nfree];
	if (l->nall == l->cap) {
		l->cap = l->cap ? l->cap * 2 : 256;
		l->free_bufs = realloc(l->free_bufs, l->cap * sizeof(void *));
		l->all_bufs = realloc(l->all_bufs, l->cap * sizeof(void *));
		if (!l->free_bufs || !l->all_bufs)
			die("out of memory");
	}
	b = aligned_alloc(4096, BS);
	if (!b)
		die("out of memory");
	memset(b, 0, BS);
	l->all_bufs[l->nall++] = b;
	return b;
}

static void complete(struct loop *l, size_t i, uint64_t now, ssize_t res)
{
	struct result *r = l->res;
	uint64_t due = l->t0 + ops[i].t, lat = now > due ? now - due : 0;
	int c = ops[i].cls;

	l->free_bufs[l->nfree++] = l->buf_of[i];
	l->done++;
	l->inflight--;
	/* Warm-up: the page cache, the pool and the policy settle; not measured. */
	if (ops[i].t < l->warm)
		return;
	hist_add(&r->h[c], lat);
	hist_add(&r->h[ALL], lat);
	if (res < 0)
		r->errors++;
	else if ((size_t)res < BS)
		r->shorts++;
	if (res > 0) {
		r->bytes[c] += (uint64_t)res;
		r->bytes[ALL] += (uint64_t)res;
	}
	if (now - l->t0 > r->last_done[c])
		r->last_done[c] = now - l->t0;
	if (now - l->t0 > r->last_done[ALL])
		r->last_done[ALL] = now - l->t0;
}

static void uring_drain(struct loop *l, size_t just_submitted)
{
	struct io_uring_cqe *cqe;
	uint64_t now = 0;

	while (io_uring_peek_cqe(&l->ring, &cqe) == 0) {
		size_t i = (size_t)(uintptr_t)io_uring_cqe_get_data(cqe);
		ssize_t res = cqe->res;

		io_uring_cqe_seen(&l->ring, cqe);
		if (!now)
			now = now_ns();
		if (i == just_submitted && ops[i].t >= l->warm)
			l->res->inline_done[ops[i].cls]++;
		complete(l, i, now, res);
	}
}

static void submit(struct loop *l, size_t i)
{
	const struct op *op = &ops[i];
	void *buf = get_buf(l);
	off_t off = (off_t)op->blk * BS;

	l->buf_of[i] = buf;
	l->inflight++;
	if (l->inflight > l->res->max_inflight)
		l->res->max_inflight = l->inflight;
	if (raw_uring(l->mode)) {
		struct io_uring_sqe *sqe = io_uring_get_sqe(&l->ring);

		if (!sqe) {
			io_uring_submit(&l->ring);
			sqe = io_uring_get_sqe(&l->ring);
			if (!sqe)
				die("io_uring: no SQE");
		}
		io_uring_prep_read(sqe, files[op->cls].fd, buf, BS, (uint64_t)off);
		io_uring_sqe_set_data(sqe, (void *)(uintptr_t)i);
		int rc = io_uring_submit(&l->ring);
		if (rc < 0)
			die("io_uring_submit: %s", strerror(-rc));
		uring_drain(l, i);
	} else {
		struct nowait_req *req = &l->reqs[i];
		ssize_t n;

		req->user_data = (void *)(uintptr_t)i;
		n = nowait_read(l->nf[op->cls], req, buf, BS, off);
		if (n != NOWAIT_QUEUED) {
			if (op->t >= l->warm)
				l->res->inline_done[op->cls]++;
			complete(l, i, now_ns(), n);
		}
	}
}

static void reap(struct loop *l)
{
	if (raw_uring(l->mode)) {
		uring_drain(l, SIZE_MAX);
		return;
	}
	for (;;) {
		struct nowait_req *done[64];
		int n = nowait_reap(l->ctx, done, 64);
		uint64_t now = now_ns();

		if (n < 0)
			die("nowait_reap: %s", strerror(-n));
		for (int k = 0; k < n; k++)
			complete(l, (size_t)(uintptr_t)done[k]->user_data, now, done[k]->res);
		if (n < 64)
			break;
	}
}

static double cpu_seconds(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
	       (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
}

/*
 * One run of a mode over the current schedule. give_up_s: seconds after the
 * last arrival to stop waiting for completions (an overloaded ramp step).
 */
static void run_mode(int mode, struct result *r, double give_up_s)
{
	struct epoll_event ev = { .events = EPOLLIN };
	uint64_t spin = (uint64_t)cfg.spin_us * 1000, drain_deadline = 0;
	struct loop l = { .mode = mode, .res = r, .warm = (uint64_t)(cfg.warmup * 1e9) };
	bool warm_snap = false;
	size_t next = 0;
	double cpu0;
	int fd;

	memset(r, 0, sizeof(*r));
	for (int c = 0; c <= NCLS; c++)
		hist_init(&r->h[c]);
	hist_init(&r->lateness);
	reset_cache(&r->before);
	fprintf(stderr, "mode %-8s: f1 %.1f%% of scheduled reads resident, f2 %.2f%% f3 %.2f%% pages resident\n",
		mode_name[mode], r->before.ops_f1, r->before.pages[F2], r->before.pages[F3]);

	l.buf_of = calloc(nops, sizeof(void *));
	l.ep = epoll_create1(EPOLL_CLOEXEC);
	if (!l.buf_of || l.ep < 0)
		die("setup: %s", strerror(errno));
	for (int k = 0; k < 256; k++)	/* fault the first buffers in */
		get_buf(&l);
	l.nfree = l.nall;
	memcpy(l.free_bufs, l.all_bufs, l.nall * sizeof(void *));

	if (raw_uring(mode)) {
		struct io_uring_params p = { .flags = IORING_SETUP_CQSIZE, .cq_entries = 16384 };
		int rc = io_uring_queue_init_params(1024, &l.ring, &p);

		if (rc < 0)
			die("io_uring_queue_init: %s", strerror(-rc));
		bound_ring(mode, &l.ring);
		/*
		 * The ring fd polls readable while CQEs wait: the loop sleeps on
		 * it. (An eventfd would fire for the inline completions too, and
		 * io_uring_register_eventfd_async() misses task_work ones.)
		 */
		fd = l.ring.ring_fd;
	} else {
		struct nowait_params p = lib_params(mode);
		int rc;

		rc = nowait_create(&p, &l.ctx);
		if (rc < 0)
			die("nowait_create: %s", strerror(-rc));
		for (int c = 0; c < NCLS; c++)
			if ((rc = nowait_file_open(l.ctx, files[c].fd, &l.nf[c])) < 0)
				die("nowait_file_open: %s", strerror(-rc));
		l.reqs = calloc(nops, sizeof(*l.reqs));
		if (!l.reqs)
			die("out of memory");
		fd = nowait_fd(l.ctx);
	}
	if (epoll_ctl(l.ep, EPOLL_CTL_ADD, fd, &ev) < 0)
		die("epoll_ctl: %s", strerror(errno));

	if (thr.active && throttle_set(&thr, cfg.iops) < 0)
		die("cannot set the throttle in %s", thr.rule);
	loadavg(r->load);
	cpu0 = cpu_seconds();
	l.t0 = now_ns() + 2000000;
	while (l.done < nops && !stop) {
		struct epoll_event evs[4];
		struct timespec ts, *tsp = NULL;
		uint64_t now = now_ns();
		int n;

		while (next < nops && l.t0 + ops[next].t <= now) {
			if (!warm_snap && ops[next].t >= l.warm) {
				warm_snap = true;
				for (int c = 0; l.ctx && c < NCLS; c++)
					nowait_file_stats(l.nf[c], &r->st0[c]);
			}
			if (ops[next].t >= l.warm)
				hist_add(&r->lateness, now - (l.t0 + ops[next].t));
			submit(&l, next++);
			now = now_ns();
		}
		if (l.done == nops)
			break;
		if (next < nops) {
			uint64_t due = l.t0 + ops[next].t, wait = due > now ? due - now : 0;

			wait = wait > spin ? wait - spin : 0;
			ts.tv_sec = (time_t)(wait / 1000000000u);
			ts.tv_nsec = (long)(wait % 1000000000u);
			tsp = &ts;
		} else {
			if (!drain_deadline)
				drain_deadline = now + (uint64_t)(give_up_s * 1e9);
			if (now > drain_deadline) {
				r->incomplete = true;
				fprintf(stderr, "mode %s: %zu reads still in flight %.0f s after the last arrival; giving up\n",
					mode_name[mode], l.inflight, give_up_s);
				break;
			}
			ts.tv_sec = 1;
			ts.tv_nsec = 0;
			tsp = &ts;
		}
		n = epoll_pwait2(l.ep, evs, 4, tsp, NULL);
		if (n < 0 && errno != EINTR)
			die("epoll_pwait2: %s", strerror(errno));
		if (n > 0)
			reap(&l);
	}
	r->wall_s = (double)(now_ns() - l.t0) / 1e9;
	if (stop)
		r->incomplete = true;
	if (thr.active)
		throttle_set(&thr, 0);

	if (raw_uring(mode)) {
		/* Reads still in the kernel would land in freed buffers. */
		while (l.inflight) {
			struct io_uring_cqe *cqe;

			if (io_uring_wait_cqe(&l.ring, &cqe))
				break;
			io_uring_cqe_seen(&l.ring, cqe);
			l.inflight--;
		}
		io_uring_queue_exit(&l.ring);
	} else {
		r->have_stats = true;
		for (int c = 0; c < NCLS; c++) {
			uint64_t *end = (uint64_t *)&r->st[c], *start = (uint64_t *)&r->st0[c];

			nowait_file_stats(l.nf[c], &r->st[c]);
			for (size_t k = 0; k < sizeof(r->st[c]) / sizeof(uint64_t); k++)
				end[k] -= start[k];
		}
		nowait_destroy(l.ctx);
		free(l.reqs);
	}
	r->cpu_s = cpu_seconds() - cpu0;
	measure_residency(&r->after);
	close(l.ep);
	for (size_t k = 0; k < l.nall; k++)
		free(l.all_bufs[k]);
	free(l.all_bufs);
	free(l.free_bufs);
	free(l.buf_of);
	r->ran = true;
}

/* ---- the logging workload: 4 KiB O_APPEND records at a steady rate ------ */

struct logres {
	bool ran;
	struct hist h;		/* from the scheduled time of each record */
	uint64_t errors, inline_done, n;
	struct nowait_stats st;
};

static void log_done(struct logres *lr, uint64_t due, uint64_t warm, ssize_t res)
{
	uint64_t now = now_ns();

	if (due < warm)
		return;
	hist_add(&lr->h, now > due ? now - due : 0);
	lr->errors += res != 4096;
}

/*
 * A server's access log: one record every 1/log_rate s, appended through
 * the mode's path (libnowait writes at offset -1 on an O_APPEND file are
 * ordered one after the other; raw io_uring writes at -1 are not).
 */
static void run_log(int mode, struct logres *lr)
{
	size_t n = (size_t)((cfg.warmup + cfg.duration) * cfg.log_rate), done = 0, inflight = 0;
	uint64_t gap = (uint64_t)(1e9 / cfg.log_rate), t0, warm;
	struct nowait_req *reqs = calloc(n, sizeof(*reqs));
	char *buf = aligned_alloc(4096, 4096), path[4200];
	struct nowait_ctx *ctx = NULL;
	struct nowait_file *nf = NULL;
	struct io_uring ring;
	int fd, efd;

	memset(lr, 0, sizeof(*lr));
	hist_init(&lr->h);
	snprintf(path, sizeof(path), "%s/log", cfg.dir);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0644);
	if (fd < 0 || !reqs || !buf)
		die("log setup: %s", strerror(errno));
	memset(buf, 'l', 4096);
	if (raw_uring(mode)) {
		int rc = io_uring_queue_init(1024, &ring, 0);

		if (rc < 0)
			die("io_uring_queue_init: %s", strerror(-rc));
		bound_ring(mode, &ring);
		efd = ring.ring_fd;
	} else {
		struct nowait_params p = lib_params(mode);
		int rc;

		if ((rc = nowait_create(&p, &ctx)) < 0 || (rc = nowait_file_open(ctx, fd, &nf)) < 0)
			die("nowait: %s", strerror(-rc));
		efd = nowait_fd(ctx);
	}
	t0 = now_ns() + 1000000;
	warm = t0 + (uint64_t)(cfg.warmup * 1e9);
	for (size_t next = 0; done < n && !stop;) {
		uint64_t now = now_ns();
		struct pollfd pfd = { .fd = efd, .events = POLLIN };
		struct timespec ts = { 0, 0 };

		while (next < n && t0 + next * gap <= now) {
			uint64_t due = t0 + next * gap;

			inflight++;
			if (raw_uring(mode)) {
				struct io_uring_sqe *sqe = io_uring_get_sqe(&ring);

				if (!sqe)
					die("io_uring: no SQE");
				io_uring_prep_write(sqe, fd, buf, 4096, (uint64_t)-1);
				io_uring_sqe_set_data(sqe, (void *)(uintptr_t)due);
				io_uring_submit(&ring);
			} else {
				ssize_t r;

				reqs[next].user_data = (void *)(uintptr_t)due;
				r = nowait_write(nf, &reqs[next], buf, 4096, -1);
				if (r != NOWAIT_QUEUED) {
					lr->inline_done += due >= warm;
					log_done(lr, due, warm, r);
					inflight--;
					done++;
				}
			}
			next++;
		}
		if (next < n) {
			uint64_t due = t0 + next * gap;

			now = now_ns();
			ts.tv_nsec = due > now ? (long)(due - now) : 0;
		} else {
			ts.tv_sec = 1;
		}
		if (inflight)
			ppoll(&pfd, 1, &ts, NULL);
		else if (ts.tv_sec || ts.tv_nsec)
			nanosleep(&ts, NULL);
		if (raw_uring(mode)) {
			struct io_uring_cqe *cqe;

			while (io_uring_peek_cqe(&ring, &cqe) == 0) {
				log_done(lr, (uint64_t)(uintptr_t)io_uring_cqe_get_data(cqe), warm, cqe->res);
				io_uring_cqe_seen(&ring, cqe);
				inflight--;
				done++;
			}
		} else {
			struct nowait_req *got[64];
			int k;

			while ((k = nowait_reap(ctx, got, 64)) > 0)
				for (int i = 0; i < k; i++) {
					log_done(lr, (uint64_t)(uintptr_t)got[i]->user_data, warm, got[i]->res);
					inflight--;
					done++;
				}
		}
	}
	lr->n = lr->h.n;
	if (raw_uring(mode)) {
		io_uring_queue_exit(&ring);
	} else {
		nowait_file_stats(nf, &lr->st);
		nowait_destroy(ctx);
	}
	close(fd);
	unlink(path);
	free(reqs);
	free(buf);
	lr->ran = true;
}

/* ---- repeats, the summary, the rate ramp --------------------------------- */

static struct result runs[MAX_REPS][NMODES];

/* What the summary reports of each run, by index. */
enum { S_F1_P50, S_F1_P99, S_MEAN, S_P99, S_F2_MIB, S_WASTED, NSTAT };
static const char *const stat_name[] = { "f1_p50_us", "f1_p99_us", "mix_mean_us", "mix_p99_us",
					 "f2_mib_s", "f2_wasted_pct" };

static double wasted_pct(const struct result *r, int c);
static double tput_mib(const struct result *r, int c);

static double run_stat(const struct result *r, int k)
{
	switch (k) {
	case S_F1_P50: return (double)hist_pct(&r->h[F1], 50) / 1e3;
	case S_F1_P99: return (double)hist_pct(&r->h[F1], 99) / 1e3;
	case S_MEAN: return hist_mean(&r->h[ALL]) / 1e3;
	case S_P99: return (double)hist_pct(&r->h[ALL], 99) / 1e3;
	case S_F2_MIB: return tput_mib(r, F2);
	default: return wasted_pct(r, F2);
	}
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

struct spread {
	double med, min, max;
};

/* Median (the lower middle one for an even count: always a run's value), min, max. */
static struct spread spread_of(int m, int k)
{
	double v[MAX_REPS];
	unsigned n = 0;

	for (unsigned i = 0; i < cfg.reps; i++)
		if (runs[i][m].ran)
			v[n++] = run_stat(&runs[i][m], k);
	if (!n)
		return (struct spread){ -1, -1, -1 };
	qsort(v, n, sizeof(v[0]), cmp_double);
	return (struct spread){ v[(n - 1) / 2], v[0], v[n - 1] };
}

/* The run whose mix mean is the median one: its CDF and details are reported. */
static const struct result *median_run(int m)
{
	double med = spread_of(m, S_MEAN).med;

	for (unsigned i = 0; i < cfg.reps; i++)
		if (runs[i][m].ran && run_stat(&runs[i][m], S_MEAN) == med)
			return &runs[i][m];
	return NULL;
}

struct ramp {
	unsigned n;
	double rate[RAMP_STEPS], p99_us[RAMP_STEPS], mean_us[RAMP_STEPS];
	bool ok[RAMP_STEPS];
	double capacity;	/* the highest rate that kept p99 under the bound; 0: none */
};

static struct ramp ramps[NMODES];

/* Regenerates the schedule at another rate (and length). */
static void reschedule(double rate, double warmup, double duration)
{
	cfg.rate = rate;
	cfg.warmup = warmup;
	cfg.duration = duration;
	free(ops);
	free(f1_hot);
	make_schedule();
}

/*
 * Raises the arrival rate in steps from half the base rate until p99 of the mix
 * exceeds the bound or the run cannot finish: the mode's capacity is the
 * last rate that passed. Below saturation every mode's throughput is the
 * arrival rate, so only this tells the modes' capacities apart.
 */
static void ramp_mode(int m, double base, struct result *scratch)
{
	struct ramp *rp = &ramps[m];

	for (int i = 0; i < RAMP_STEPS && !stop; i++) {
		reschedule(base * ramp_factor[i], 1, cfg.ramp_s);
		run_mode(m, scratch, 2);
		rp->rate[i] = cfg.rate;
		rp->p99_us[i] = (double)hist_pct(&scratch->h[ALL], 99) / 1e3;
		rp->mean_us[i] = hist_mean(&scratch->h[ALL]) / 1e3;
		rp->ok[i] = !scratch->incomplete && !scratch->errors &&
			    rp->p99_us[i] <= cfg.p99_bound_ms * 1e3;
		rp->n = i + 1;
		fprintf(stderr, "ramp %-11s %6.0f req/s: p99 %.0f us %s\n", mode_name[m], cfg.rate,
			rp->p99_us[i], rp->ok[i] ? "ok" : "over the bound");
		if (!rp->ok[i])
			break;
		rp->capacity = cfg.rate;
	}
}

/* ---- reference points: bare pread, and the calibration ----------------- */

struct bare {
	struct hist pread, nowait;	/* back to back */
	struct hist paced;	/* at f1's arrival times, from the scheduled arrival */
	struct hist paced_nw;	/* the same with preadv2(RWF_NOWAIT) */
	struct hist paced_lib;	/* the same through nowait_read() (adaptive, idle pool) */
	double paced_s;
	int nowait_errno;	/* why a flagged read failed, e.g. EOPNOTSUPP on stock tmpfs */
};

/* Cached 16 KiB reads of f1's hot blocks, one thread, nothing else running. */
static void measure_bare(struct bare *b)
{
	void *buf = aligned_alloc(4096, BS);
	size_t k = 0, target = cfg.quick ? 5000 : 20000;
	unsigned char *vec;
	size_t npages;
	long n;

	hist_init(&b->pread);
	hist_init(&b->nowait);
	n = resident_pages(files[F1].fd, 0, 0, &vec, &npages);
	if (n < 0 || !buf)
		die("bare pread setup failed");
	for (int pass = 0; pass < 2; pass++) {
		size_t got = 0;

		for (size_t i = 0; got < target; i = (i + 1) % nops) {
			struct iovec iov = { buf, BS };
			uint64_t t1, t2;
			ssize_t r;

			if (ops[i].cls != F1 || !(vec[ops[i].blk * (BS / 4096)] & 1))
				continue;
			t1 = now_ns();
			if (pass == 0)
				r = pread(files[F1].fd, buf, BS, (off_t)ops[i].blk * BS);
			else
				r = preadv2(files[F1].fd, &iov, 1, (off_t)ops[i].blk * BS, RWF_NOWAIT);
			t2 = now_ns();
			if (r == (ssize_t)BS)
				hist_add(pass == 0 ? &b->pread : &b->nowait, t2 - t1);
			else if (r < 0 && pass == 1 && !b->nowait_errno)
				b->nowait_errno = errno;
			got++;
			if (++k > 100 * target)
				break;	/* nothing resident: give up */
		}
	}
	free(vec);
	free(buf);
}

/*
 * The same cached reads issued the way the event loop issues them: at f1's
 * scheduled arrivals (other classes skipped), sleeping in epoll_pwait2 and
 * spinning the last spin_us before each, timed from the scheduled arrival.
 * Context for the bare-pread target: cache and wake-up effects of pacing.
 * Three kinds in turn, arrival by arrival, so that each sees the same
 * machine: pread, preadv2(RWF_NOWAIT), and nowait_read() through an
 * adaptive context whose pool stays idle (the library's own cost per hit,
 * without the misses of the mix). Three times paced_s, so each kind has
 * as many samples as one would alone.
 */
static void measure_bare_paced(struct bare *b)
{
	uint64_t spin = (uint64_t)cfg.spin_us * 1000, t0, limit;
	void *buf = aligned_alloc(4096, BS);
	struct nowait_params p = lib_params(M_ADAPTIVE);
	struct nowait_ctx *ctx;
	struct nowait_file *nf;
	unsigned char *vec;
	size_t npages, k = 0;
	int ep = epoll_create1(EPOLL_CLOEXEC);

	hist_init(&b->paced);
	hist_init(&b->paced_nw);
	hist_init(&b->paced_lib);
	b->paced_s = cfg.quick ? 2 : 5;
	if (b->paced_s > cfg.duration)
		b->paced_s = cfg.duration;
	limit = (uint64_t)(3 * b->paced_s * 1e9);
	if (!buf || ep < 0 || resident_pages(files[F1].fd, 0, 0, &vec, &npages) < 0)
		die("paced pread setup failed");
	if (nowait_create(&p, &ctx) < 0 || nowait_file_open(ctx, files[F1].fd, &nf) < 0)
		die("paced nowait_read setup failed");
	t0 = now_ns() + 1000000;
	for (size_t i = 0; i < nops && !stop; i++) {
		struct epoll_event ev;
		struct iovec iov = { buf, BS };
		struct nowait_req req;
		uint64_t due = t0 + ops[i].t, now;
		off_t off = (off_t)ops[i].blk * BS;
		ssize_t r;

		if (ops[i].t >= limit)
			break;
		if (ops[i].cls != F1 || !(vec[ops[i].blk * (BS / 4096)] & 1))
			continue;
		while ((now = now_ns()) < due) {
			uint64_t wait = due - now > spin ? due - now - spin : 0;
			struct timespec ts = { (time_t)(wait / 1000000000u), (long)(wait % 1000000000u) };

			epoll_pwait2(ep, &ev, 1, &ts, NULL);
		}
		switch (k++ % 3) {
		case 0:
			if (pread(files[F1].fd, buf, BS, off) == (ssize_t)BS)
				hist_add(&b->paced, now_ns() - due);
			break;
		case 1:
			if (preadv2(files[F1].fd, &iov, 1, off, RWF_NOWAIT) == (ssize_t)BS)
				hist_add(&b->paced_nw, now_ns() - due);
			break;
		default:
			r = nowait_read(nf, &req, buf, BS, off);
			if (r == (ssize_t)BS) {
				hist_add(&b->paced_lib, now_ns() - due);
			} else if (r == NOWAIT_QUEUED) {	/* not resident after all: not timed */
				struct nowait_req *got;
				struct pollfd pfd = { nowait_fd(ctx), POLLIN, 0 };

				while (nowait_reap(ctx, &got, 1) == 0)
					poll(&pfd, 1, -1);
			}
			break;
		}
	}
	nowait_file_close(nf);
	nowait_destroy(ctx);
	close(ep);
	free(vec);
	free(buf);
}

struct calib {
	double capacity;	/* cold 16 KiB random reads/s at pool concurrency */
	double mean_lat_us;
	double io_per_req;
	double rate;
	bool capped;
};

struct calib_thread {
	pthread_t tid;
	uint64_t deadline, n, lat;
	unsigned id;
};

static void *calib_worker(void *arg)
{
	struct calib_thread *t = arg;
	void *buf = aligned_alloc(4096, BS);
	struct rng r;

	rng_seed(&r, cfg.seed * 1000 + t->id + 7);
	while (buf && now_ns() < t->deadline && !stop) {
		uint64_t t1 = now_ns();

		if (pread(files[F2].fd, buf, BS, (off_t)(rng_next(&r) % files[F2].nblocks) * BS) != (ssize_t)BS)
			break;
		t->lat += now_ns() - t1;
		t->n++;
	}
	free(buf);
	return NULL;
}

static void calibrate(struct calib *c, const struct devinfo *d)
{
	struct calib_thread *t = calloc(cfg.threads, sizeof(*t));
	uint64_t start, n = 0, lat = 0;
	double ra = d->read_ahead_kb ? d->read_ahead_kb * 1024.0 : 128 * 1024.0;

	if (!t)
		die("out of memory");
	evict(files[F2].fd, 0, 0);
	if (thr.active && throttle_set(&thr, cfg.iops) < 0)
		die("cannot set the throttle in %s", thr.rule);
	start = now_ns();
	for (unsigned i = 0; i < cfg.threads; i++) {
		t[i].deadline = start + (uint64_t)(cfg.calib_s * 1e9);
		t[i].id = i;
		if (pthread_create(&t[i].tid, NULL, calib_worker, &t[i]))
			die("pthread_create failed");
	}
	for (unsigned i = 0; i < cfg.threads; i++) {
		pthread_join(t[i].tid, NULL);
		n += t[i].n;
		lat += t[i].lat;
	}
	c->capacity = (double)n / ((double)(now_ns() - start) / 1e9);
	c->mean_lat_us = n ? (double)lat / (double)n / 1e3 : 0;
	if (thr.active)
		throttle_set(&thr, 0);
	evict(files[F2].fd, 0, 0);
	free(t);
	/* Device reads per request: f1 misses, every f2 read, f3 per readahead. */
	double w = cfg.mix[F1] + cfg.mix[F2] + cfg.mix[F3];
	if (ra < BS)
		ra = BS;
	if (d->max_sectors_kb && ra > d->max_sectors_kb * 1024.0)
		ra = d->max_sectors_kb * 1024.0;
	/* Fragmented f3: a readahead window takes a device read per extent. */
	if (cfg.fragment && ra > cfg.fragment * 1024.0)
		ra = cfg.fragment * 1024.0;
	c->io_per_req = (cfg.mix[F1] * (1.0 - cfg.f1_hit) + cfg.mix[F2] + cfg.mix[F3] * BS / ra) / w;
	c->rate = cfg.util * c->capacity / c->io_per_req;
	if (c->rate > cfg.max_rate) {
		c->rate = cfg.max_rate;
		c->capped = true;
	}
}

/* ---- report ------------------------------------------------------------- */

static FILE *txt_out;

static void out(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	if (txt_out) {
		va_start(ap, fmt);
		vfprintf(txt_out, fmt, ap);
		va_end(ap);
	}
}

static const char *fmt_ns(double ns, char *buf)
{
	if (ns < 1e6)
		sprintf(buf, "%.1fus", ns / 1e3);
	else if (ns < 1e9)
		sprintf(buf, "%.2fms", ns / 1e6);
	else
		sprintf(buf, "%.2fs", ns / 1e9);
	return buf;
}

/* Seconds from the end of the warm-up to the last measured completion of class c. */
static double measured_s(const struct result *r, int c)
{
	return (double)r->last_done[c] / 1e9 - cfg.warmup;
}

static double tput_mib(const struct result *r, int c)
{
	return measured_s(r, c) > 0 ? (double)r->bytes[c] / MIB / measured_s(r, c) : 0;
}

static double tput_iops(const struct result *r, int c)
{
	return measured_s(r, c) > 0 ? (double)r->h[c].n / measured_s(r, c) : 0;
}

static uint64_t attempts(const struct nowait_stats *s)
{
	return s->hits + s->misses + s->partials + s->fb_zero_before_eof;
}

/* The library's inline hit ratio (of attempts), io_uring's inline-completion
 * ratio, or -1. */
static double observed_hit(const struct result *r, int mode, int c)
{
	if (raw_uring(mode))
		return r->h[c].n ? 100.0 * (double)r->inline_done[c] / (double)r->h[c].n : -1;
	if (!r->have_stats || !attempts(&r->st[c]))
		return -1;
	return 100.0 * (double)r->st[c].hits / (double)attempts(&r->st[c]);
}

static double wasted_pct(const struct result *r, int c)
{
	if (!r->have_stats || !r->h[c].n)
		return -1;
	return 100.0 * (double)(r->st[c].misses + r->st[c].partials + r->st[c].fb_zero_before_eof) /
	       (double)r->h[c].n;
}

static double ratio(double a, double b)
{
	return b > 0 ? a / b : 0;
}

static const double pcts[] = { 50, 90, 99, 99.9 };

static void report_table(struct result *res, const struct bare *b)
{
	const struct result *pool = res[M_POOL].ran ? &res[M_POOL] : NULL;
	char s[8][32];

	out("\n%-3s %-8s %7s %9s %9s %9s %9s %9s %9s %7s %6s %6s %6s %6s %7s %7s\n",
	    "cls", "mode", "reads", "p50", "p90", "p99", "p99.9", "max", "mean", "MiB/s", "IOPS",
	    "p50x", "meanx", "tputx", "hit%", "wasted%");
	for (int c = 0; c <= NCLS; c++) {
		for (int m = 0; m < NMODES; m++) {
			const struct result *r = &res[m];
			const struct hist *h = &r->h[c];
			double hit = c < NCLS ? observed_hit(r, m, c) : -1;
			double waste = c < NCLS ? wasted_pct(r, c) : -1;
			char hs[16], ws[16];

			if (!r->ran)
				continue;
			snprintf(hs, sizeof(hs), hit < 0 ? "-" : "%.1f", hit);
			snprintf(ws, sizeof(ws), waste < 0 || m == M_POOL ? "-" : "%.1f", waste);
			out("%-3s %-8s %7" PRIu64 " %9s %9s %9s %9s %9s %9s %7.2f %6.0f %6.2f %6.2f %6.3f %6s %7s\n",
			    cls_name[c], mode_name[m], h->n,
			    fmt_ns((double)hist_pct(h, 50), s[0]), fmt_ns((double)hist_pct(h, 90), s[1]),
			    fmt_ns((double)hist_pct(h, 99), s[2]), fmt_ns((double)hist_pct(h, 99.9), s[3]),
			    fmt_ns((double)h->max, s[4]), fmt_ns(hist_mean(h), s[5]),
			    tput_mib(r, c), tput_iops(r, c),
			    pool ? ratio((double)hist_pct(h, 50), (double)hist_pct(&pool->h[c], 50)) : 0,
			    pool ? ratio(hist_mean(h), hist_mean(&pool->h[c])) : 0,
			    pool ? ratio(tput_mib(r, c), tput_mib(pool, c)) : 0, hs, ws);
		}
		out("\n");
	}
	out("p50x, meanx: this mode / pool (lower is better); tputx: MiB/s / pool's.\n"
	    "hit%%: libnowait inline hits / inline attempts (fast, adaptive); io_uring: reads completed\n"
	    "  during submission; wasted%%: inline attempts that did not complete the read, %% of reads.\n\n");

	out("per mode: cache state at start (intended f1 %.1f%% of reads resident, f2/f3 0%%) and after;\n"
	    "  submit lateness (actual submission - scheduled arrival); CPU of the whole process\n",
	    100.0 * (1.0 - f1_cold_mass));
	for (int m = 0; m < NMODES; m++) {
		const struct result *r = &res[m];

		if (!r->ran)
			continue;
		out("  %-8s start f1 %5.1f%% reads (%5.1f%% pages) f2 %5.2f%% f3 %5.2f%% | end f1 %5.1f%% f2 %5.2f%% f3 %5.2f%% | "
		    "late p50 %s p99 %s | cpu %.1f%% | inflight max %" PRIu64 " | load %.2f%s%s\n",
		    mode_name[m], r->before.ops_f1, r->before.pages[F1], r->before.pages[F2], r->before.pages[F3],
		    r->after.pages[F1], r->after.pages[F2], r->after.pages[F3],
		    fmt_ns((double)hist_pct(&r->lateness, 50), s[0]), fmt_ns((double)hist_pct(&r->lateness, 99), s[1]),
		    100.0 * r->cpu_s / r->wall_s, r->max_inflight, r->load[0],
		    r->errors || r->shorts ? " | ERRORS/SHORT READS" : "", r->incomplete ? " | INCOMPLETE" : "");
		if (r->have_stats && m != M_POOL)
			for (int c = 0; c < NCLS; c++)
				out("           %s: hits %" PRIu64 " misses %" PRIu64 " partials %" PRIu64
				    " skipped %" PRIu64 " pool_jobs %" PRIu64 " eopnotsupp %" PRIu64 "\n",
				    cls_name[c], r->st[c].hits, r->st[c].misses, r->st[c].partials,
				    r->st[c].skipped, r->st[c].pool_jobs, r->st[c].fb_eopnotsupp);
	}

	out("\nmix mean response time:");
	for (int m = 0; m < NMODES; m++)
		if (res[m].ran) {
			out("  %s %s", mode_name[m], fmt_ns(hist_mean(&res[m].h[ALL]), s[0]));
			if (pool && m != M_POOL)
				out(" (%+.1f%%)", 100.0 * (ratio(hist_mean(&res[m].h[ALL]), hist_mean(&pool->h[ALL])) - 1));
		}
	out("\nbare pread, cached 16 KiB, idle, back to back: p50 %s p99 %s (n=%" PRIu64 "); ",
	    fmt_ns((double)hist_pct(&b->pread, 50), s[0]), fmt_ns((double)hist_pct(&b->pread, 99), s[1]),
	    b->pread.n);
	if (b->nowait.n)
		out("preadv2(RWF_NOWAIT) p50 %s\n", fmt_ns((double)hist_pct(&b->nowait, 50), s[2]));
	else
		out("preadv2(RWF_NOWAIT) failed: %s\n", b->nowait_errno ? strerror(b->nowait_errno) : "no hit");
	out("bare pread paced like the loop (f1's arrivals for %.0f s, from scheduled arrival): p50 %s p99 %s (n=%" PRIu64 ")\n",
	    3 * b->paced_s, fmt_ns((double)hist_pct(&b->paced, 50), s[0]), fmt_ns((double)hist_pct(&b->paced, 99), s[1]),
	    b->paced.n);
	out("  in turn with it: preadv2(RWF_NOWAIT) p50 %s p99 %s (n=%" PRIu64 "); ",
	    fmt_ns((double)hist_pct(&b->paced_nw, 50), s[0]), fmt_ns((double)hist_pct(&b->paced_nw, 99), s[1]),
	    b->paced_nw.n);
	out("nowait_read() hits, idle pool: p50 %s p99 %s (n=%" PRIu64 ")\n",
	    fmt_ns((double)hist_pct(&b->paced_lib, 50), s[0]), fmt_ns((double)hist_pct(&b->paced_lib, 99), s[1]),
	    b->paced_lib.n);
}

static const char *verdict(bool ok)
{
	return ok ? "met" : "NOT met";
}

struct target {
	const char *what;
	char value[128];
	bool ok, known;
};

/* The targets, on the medians of the repeated runs and on the ramp. */
static int eval_targets(const struct bare *b, struct target *t)
{
	int n = 0;

	if (cfg.mode_on[M_ADAPTIVE] && b->paced.n) {
		double x = ratio(spread_of(M_ADAPTIVE, S_F1_P50).med * 1e3, (double)hist_pct(&b->paced, 50));

		t[n].what = "f1 p50 (adaptive) within 1.2x of bare pread paced like the loop";
		snprintf(t[n].value, sizeof(t[n].value), "%.2fx (%.2fx of back-to-back pread)", x,
			 ratio(spread_of(M_ADAPTIVE, S_F1_P50).med * 1e3, (double)hist_pct(&b->pread, 50)));
		t[n].ok = x <= 1.2;
		t[n++].known = true;
	}
	if (cfg.mode_on[M_ADAPTIVE] && b->paced_nw.n) {
		double f1 = spread_of(M_ADAPTIVE, S_F1_P50).med * 1e3;
		double x = ratio(f1, (double)hist_pct(&b->paced_nw, 50));

		t[n].what = "f1 p50 (adaptive) within 1.2x of bare preadv2(RWF_NOWAIT) paced like the loop";
		snprintf(t[n].value, sizeof(t[n].value),
			 "%.2fx (paced nowait_read() hits alone: %.2fx of it)", x,
			 ratio((double)hist_pct(&b->paced_lib, 50), (double)hist_pct(&b->paced_nw, 50)));
		t[n].ok = x <= 1.2;
		t[n++].known = true;
	}
	for (int u = M_URING_B; u <= M_URING; u++) {
		double a = spread_of(M_ADAPTIVE, S_MEAN).med, x = spread_of(u, S_MEAN).med;

		if (!cfg.mode_on[M_ADAPTIVE] || !cfg.mode_on[u])
			continue;
		t[n].what = u == M_URING_B ? "mix mean (adaptive) no worse than io_uring bounded"
					   : "mix mean (adaptive) no worse than io_uring unbounded";
		snprintf(t[n].value, sizeof(t[n].value), "%.1f us vs %.1f us (medians)", a, x);
		t[n].ok = a <= x;
		t[n++].known = true;
	}
	if (cfg.ramp_s > 0 && cfg.mode_on[M_ADAPTIVE] && cfg.mode_on[M_POOL]) {
		t[n].what = "capacity (adaptive) at least the pool's";
		snprintf(t[n].value, sizeof(t[n].value), "%.0f vs %.0f req/s (p99 <= %g ms)",
			 ramps[M_ADAPTIVE].capacity, ramps[M_POOL].capacity, cfg.p99_bound_ms);
		t[n].ok = ramps[M_ADAPTIVE].capacity >= ramps[M_POOL].capacity;
		t[n++].known = true;
	}
	if (cfg.mode_on[M_ADAPTIVE]) {
		struct spread w = spread_of(M_ADAPTIVE, S_WASTED);

		t[n].what = "wasted f2 inline attempts (adaptive) <= 5% of f2 reads";
		snprintf(t[n].value, sizeof(t[n].value), "%.2f%% (median; %.2f-%.2f)", w.med, w.min, w.max);
		t[n].ok = w.med <= 5;
		t[n++].known = true;
	}
	return n;
}

static void report_summary(void)
{
	static const char *const head[] = { "f1 p50", "f1 p99", "mix mean", "mix p99", "f2 MiB/s", "f2 wasted%" };

	out("\nover %u runs per mode, mode order rotated each run: median [min-max]\n%-11s", cfg.reps, "mode");
	for (int k = 0; k < NSTAT; k++)
		out(" %-24s", head[k]);
	out("\n");
	for (int m = 0; m < NMODES; m++) {
		if (!cfg.mode_on[m])
			continue;
		out("%-11s", mode_name[m]);
		for (int k = 0; k < NSTAT; k++) {
			struct spread x = spread_of(m, k);
			char cell[64];

			if (x.med < 0 || (k == S_WASTED && (m == M_POOL || raw_uring(m) || m == M_LIBURING)))
				snprintf(cell, sizeof(cell), "-");
			else
				snprintf(cell, sizeof(cell), k >= S_F2_MIB ? "%.2f [%.2f-%.2f]" : "%.1f [%.1f-%.1f]",
					 x.med, x.min, x.max);
			out(" %-24s", cell);
		}
		out("\n");
	}
	out("latencies in us from scheduled arrival; the detailed table below is each mode's median-mean run.\n");
}

static void report_ramp(void)
{
	out("\nrate ramp: %g s per step after 1 s warm-up, capacity = highest rate with mix p99 <= %g ms\n",
	    cfg.ramp_s, cfg.p99_bound_ms);
	for (int m = 0; m < NMODES; m++) {
		if (!cfg.mode_on[m])
			continue;
		out("  %-11s capacity %6.0f req/s |", mode_name[m], ramps[m].capacity);
		for (unsigned i = 0; i < ramps[m].n; i++)
			out(" %.0f:%.0fus%s", ramps[m].rate[i], ramps[m].p99_us[i], ramps[m].ok[i] ? "" : "(over)");
		out("\n");
	}
}

static void report_log(const struct logres *lr)
{
	char s[4][32];

	out("\nlogging: 4 KiB O_APPEND records at %.0f/s for %.0f s (after %.0f s warm-up), one run per mode,\n"
	    "  latency from each record's scheduled time\n", cfg.log_rate, cfg.duration, cfg.warmup);
	for (int m = 0; m < NMODES; m++) {
		if (!lr[m].ran)
			continue;
		out("  %-11s n %6" PRIu64 " p50 %9s p99 %9s max %9s mean %9s inline %5.1f%%%s\n", mode_name[m], lr[m].n,
		    fmt_ns((double)hist_pct(&lr[m].h, 50), s[0]), fmt_ns((double)hist_pct(&lr[m].h, 99), s[1]),
		    fmt_ns((double)lr[m].h.max, s[2]), fmt_ns(hist_mean(&lr[m].h), s[3]),
		    lr[m].n ? 100.0 * (double)lr[m].inline_done / (double)lr[m].n : 0,
		    lr[m].errors ? " ERRORS" : "");
	}
}

static void json_hist(FILE *f, const struct hist *h)
{
	uint64_t cum = 0;
	bool first = true;

	fprintf(f, "{\"n\": %" PRIu64 ", \"mean_us\": %.3f, \"min_us\": %.3f, \"max_us\": %.3f", h->n,
		hist_mean(h) / 1e3, h->n ? (double)h->min / 1e3 : 0, (double)h->max / 1e3);
	for (size_t i = 0; i < sizeof(pcts) / sizeof(pcts[0]); i++)
		fprintf(f, ", \"p%g_us\": %.3f", pcts[i], (double)hist_pct(h, pcts[i]) / 1e3);
	fprintf(f, ", \"cdf\": [");
	for (unsigned i = 0; i < PLAT_NR; i++) {
		if (!h->plat[i])
			continue;
		cum += h->plat[i];
		fprintf(f, "%s[%.3f,%.6f]", first ? "" : ",", (double)hist_idx_to_val(i) / 1e3,
			(double)cum / (double)h->n);
		first = false;
	}
	fprintf(f, "]}");
}

static void write_json(const char *path, const struct result *res, const struct bare *b,
		       const struct calib *cal, const struct devinfo *d, const double load0[3],
		       const double load1[3], const struct target *t, int nt, const struct logres *lr)
{
	FILE *f = fopen(path, "w");
	struct utsname u;

	if (!f) {
		fprintf(stderr, "warning: cannot write %s: %s\n", path, strerror(errno));
		return;
	}
	uname(&u);
	fprintf(f, "{\n\"tool\": \"nowait-bench\",\n");
	fprintf(f, "\"system\": {\"kernel\": \"%s\", \"machine\": \"%s\", \"cpus\": %ld, "
		"\"load_start\": [%.2f, %.2f, %.2f], \"load_end\": [%.2f, %.2f, %.2f]},\n",
		u.release, u.machine, sysconf(_SC_NPROCESSORS_ONLN), load0[0], load0[1], load0[2],
		load1[0], load1[1], load1[2]);
	fprintf(f, "\"storage\": {\"dir\": \"%s\", \"fs\": \"%s\", \"disk\": \"%s\", \"dev\": \"%u:%u\", "
		"\"scheduler\": \"%s\", \"read_ahead_kb\": %u, \"nr_requests\": %u, \"throttle\": %s, \"cgroup\": \"%s\", "
		"\"read_iops_limit\": %u, \"drop_caches\": %s},\n",
		cfg.dir, d->fstype, d->disk, d->maj, d->min, d->scheduler, d->read_ahead_kb, d->nr_requests,
		cfg.throttle ? "true" : "false",
		!cfg.throttle ? "none" : thr.version == 2 ? "v2 io.max riops" : "v1 blkio.throttle.read_iops_device",
		cfg.throttle ? cfg.iops : 0, cfg.drop ? "true" : "false");
	fprintf(f, "\"workload\": {\"block\": %u, \"threads\": %u, \"duration_s\": %.1f, \"rate\": %.1f, "
		"\"reads\": %zu, \"seed\": %" PRIu64 ", \"zipf_theta\": %.2f, \"mix\": [%.0f, %.0f, %.0f], "
		"\"mib\": [%u, %u, %u], \"f1_intended_hit_pct\": %.2f, \"f1_cold_blocks\": %zu, \"spin_us\": %u, "
		"\"fragment_kib\": %u, \"extents\": [%ld, %ld, %ld], \"scenario\": \"%s\", \"saturate_rate\": %.1f},\n",
		BS, cfg.threads, cfg.duration, cfg.rate, nops, cfg.seed, cfg.theta, cfg.mix[F1], cfg.mix[F2],
		cfg.mix[F3], cfg.mib[F1], cfg.mib[F2], cfg.mib[F3], 100.0 * (1 - f1_cold_mass), nf1_cold,
		cfg.spin_us, cfg.fragment, files[F1].extents, files[F2].extents, files[F3].extents,
		scen_name[cfg.scenario], cfg.sat_rate);
	fprintf(f, "\"calibration\": {\"cold_read_capacity_iops\": %.1f, \"cold_read_mean_us\": %.1f, "
		"\"io_per_request\": %.4f, \"util\": %.2f, \"rate\": %.1f, \"calibrated\": %s, "
		"\"capped_by_max_rate\": %s},\n",
		cal->capacity, cal->mean_lat_us, cal->io_per_req, cfg.util, cfg.rate,
		cal->capacity > 0 ? "true" : "false", cal->capped ? "true" : "false");
	fprintf(f, "\"bare\": {\"pread\": ");
	json_hist(f, &b->pread);
	fprintf(f, ", \"preadv2_nowait\": ");
	json_hist(f, &b->nowait);
	fprintf(f, ", \"preadv2_nowait_errno\": %d", b->nowait_errno);
	fprintf(f, ", \"paced_pread\": ");
	json_hist(f, &b->paced);
	fprintf(f, ", \"paced_preadv2_nowait\": ");
	json_hist(f, &b->paced_nw);
	fprintf(f, ", \"paced_nowait_read\": ");
	json_hist(f, &b->paced_lib);
	fprintf(f, "},\n\"modes\": {\n");
	bool firstm = true;
	for (int m = 0; m < NMODES; m++) {
		const struct result *r = &res[m], *p = res[M_POOL].ran ? &res[M_POOL] : NULL;

		if (!r->ran)
			continue;
		fprintf(f, "%s\"%s\": {\"incomplete\": %s, \"errors\": %" PRIu64 ", \"short_reads\": %" PRIu64
			", \"wall_s\": %.3f, \"cpu_s\": %.3f, \"load1\": %.2f, \"max_inflight\": %" PRIu64 ",\n",
			firstm ? "" : ",\n", mode_name[m], r->incomplete ? "true" : "false", r->errors, r->shorts,
			r->wall_s, r->cpu_s, r->load[0], r->max_inflight);
		firstm = false;
		fprintf(f, "  \"residency_start\": {\"f1_reads_pct\": %.2f, \"f1_pages_pct\": %.2f, "
			"\"f2_pages_pct\": %.3f, \"f3_pages_pct\": %.3f},\n",
			r->before.ops_f1, r->before.pages[F1], r->before.pages[F2], r->before.pages[F3]);
		fprintf(f, "  \"residency_end\": {\"f1_reads_pct\": %.2f, \"f1_pages_pct\": %.2f, "
			"\"f2_pages_pct\": %.3f, \"f3_pages_pct\": %.3f},\n",
			r->after.ops_f1, r->after.pages[F1], r->after.pages[F2], r->after.pages[F3]);
		fprintf(f, "  \"lateness\": {\"p50_us\": %.3f, \"p99_us\": %.3f, \"max_us\": %.3f},\n",
			(double)hist_pct(&r->lateness, 50) / 1e3, (double)hist_pct(&r->lateness, 99) / 1e3,
			(double)r->lateness.max / 1e3);
		fprintf(f, "  \"classes\": {\n");
		for (int c = 0; c <= NCLS; c++) {
			const struct hist *h = &r->h[c];

			fprintf(f, "    \"%s\": {\"desc\": \"%s\", \"mib_s\": %.3f, \"iops\": %.1f, \"bytes\": %" PRIu64,
				cls_name[c], cls_desc[c], tput_mib(r, c), tput_iops(r, c), r->bytes[c]);
			if (p)
				fprintf(f, ", \"p50_vs_pool\": %.4f, \"mean_vs_pool\": %.4f, \"tput_vs_pool\": %.4f",
					ratio((double)hist_pct(h, 50), (double)hist_pct(&p->h[c], 50)),
					ratio(hist_mean(h), hist_mean(&p->h[c])), ratio(tput_mib(r, c), tput_mib(p, c)));
			if (c < NCLS) {
				double hit = observed_hit(r, m, c), w = wasted_pct(r, c);

				fprintf(f, ", \"inline_completed\": %" PRIu64, r->inline_done[c]);
				if (hit >= 0)
					fprintf(f, ", \"observed_hit_pct\": %.3f", hit);
				if (r->have_stats) {
					const struct nowait_stats *s = &r->st[c];

					if (w >= 0 && m != M_POOL)
						fprintf(f, ", \"wasted_inline_pct\": %.3f", w);
					fprintf(f, ", \"lib\": {\"hits\": %" PRIu64 ", \"misses\": %" PRIu64
						", \"partials\": %" PRIu64 ", \"skipped\": %" PRIu64
						", \"pool_jobs\": %" PRIu64 ", \"fb_enosys\": %" PRIu64
						", \"fb_eopnotsupp\": %" PRIu64 "}",
						s->hits, s->misses, s->partials, s->skipped, s->pool_jobs, s->fb_enosys,
						s->fb_eopnotsupp);
				}
			}
			if (c == ALL && p && m != M_POOL)
				fprintf(f, ", \"mean_reduction_vs_pool_pct\": %.3f",
					100.0 * (1 - ratio(hist_mean(h), hist_mean(&p->h[c]))));
			fprintf(f, ",\n      \"lat\": ");
			json_hist(f, h);
			fprintf(f, "}%s\n", c < NCLS ? "," : "");
		}
		fprintf(f, "  }}");
	}
	fprintf(f, "\n},\n\"summary\": {\"reps\": %u, \"rotated\": true, \"warmup_s\": %.1f, \"modes\": {", cfg.reps,
		cfg.warmup);
	firstm = true;
	for (int m = 0; m < NMODES; m++) {
		if (!cfg.mode_on[m])
			continue;
		fprintf(f, "%s\n  \"%s\": {", firstm ? "" : ",", mode_name[m]);
		firstm = false;
		for (int k = 0; k < NSTAT; k++) {
			struct spread x = spread_of(m, k);

			fprintf(f, "%s\"%s\": {\"median\": %.3f, \"min\": %.3f, \"max\": %.3f, \"runs\": [",
				k ? ", " : "", stat_name[k], x.med, x.min, x.max);
			for (unsigned i = 0; i < cfg.reps; i++)
				fprintf(f, "%s%.3f", i ? ", " : "", runs[i][m].ran ? run_stat(&runs[i][m], k) : -1);
			fprintf(f, "]}");
		}
		fprintf(f, "}");
	}
	fprintf(f, "\n}},\n\"ramp\": {\"step_s\": %.1f, \"p99_bound_ms\": %.1f, \"modes\": {", cfg.ramp_s,
		cfg.p99_bound_ms);
	firstm = true;
	for (int m = 0; m < NMODES; m++) {
		if (!cfg.mode_on[m] || !ramps[m].n)
			continue;
		fprintf(f, "%s\n  \"%s\": {\"capacity\": %.1f, \"steps\": [", firstm ? "" : ",", mode_name[m],
			ramps[m].capacity);
		firstm = false;
		for (unsigned i = 0; i < ramps[m].n; i++)
			fprintf(f, "%s{\"rate\": %.1f, \"p99_us\": %.1f, \"mean_us\": %.1f, \"ok\": %s}",
				i ? ", " : "", ramps[m].rate[i], ramps[m].p99_us[i], ramps[m].mean_us[i],
				ramps[m].ok[i] ? "true" : "false");
		fprintf(f, "]}");
	}
	fprintf(f, "\n}},\n\"log\": {\"rate\": %.1f, \"record\": 4096, \"modes\": {", cfg.log_rate);
	firstm = true;
	for (int m = 0; m < NMODES; m++) {
		if (!lr[m].ran)
			continue;
		fprintf(f, "%s\n  \"%s\": {\"errors\": %" PRIu64 ", \"inline\": %" PRIu64 ", \"lat\": ",
			firstm ? "" : ",", mode_name[m], lr[m].errors, lr[m].inline_done);
		json_hist(f, &lr[m].h);
		fprintf(f, "}");
		firstm = false;
	}
	fprintf(f, "\n}},\n\"targets\": [\n");
	for (int i = 0; i < nt; i++)
		fprintf(f, "  {\"target\": \"%s\", \"value\": \"%s\", \"met\": %s}%s\n", t[i].what, t[i].value,
			t[i].ok ? "true" : "false", i + 1 < nt ? "," : "");
	fprintf(f, "]\n}\n");
	fclose(f);
}

/* ---- main --------------------------------------------------------------- */

static void usage(FILE *f)
{
	fprintf(f,
		"usage: nowait-bench [options]\n"
		"  --dir DIR          data files f1,f2,f3 live here (default build/bench/data)\n"
		"  --json FILE        write results as JSON (plot with bench/plot.sh FILE PNG)\n"
		"  --txt FILE         also write the report table to FILE\n"
		"  --quick            short run (2 runs of 3 s per mode, 1 s calibration, short ramp)\n"
		"  --duration S       measured seconds per run (default 6)\n"
		"  --warmup S         seconds before that, not measured (default 2)\n"
		"  --reps N           runs per mode, mode order rotated each time (default 5, max 15)\n"
		"  --ramp-s S         seconds per rate-ramp step; 0: no ramp (default 3)\n"
		"  --p99-bound-ms MS  the ramp's bound on the mix p99 (default 100)\n"
		"  --log-rate R       4 KiB O_APPEND records/s of the logging run; 0: none (default 500)\n"
		"  --rate R           arrivals per second (default: calibrated)\n"
		"  --util U           calibrated rate = U * cold-read capacity / device reads per request (0.6)\n"
		"  --max-rate R       cap on the calibrated rate (default 2000: the CPUs, not the disk, limit)\n"
		"  --iops N           cgroup read-IOPS limit on the data's disk (default 200)\n"
		"  --no-throttle      no cgroup (e.g. in a guest whose disk QEMU throttles)\n"
		"  --drop-caches      also echo 3 > /proc/sys/vm/drop_caches on every reset (on with --fragment)\n"
		"  --threads N        pool size for pool/fast/adaptive (default 4, libnowait's)\n"
		"  --modes LIST       comma-separated subset of pool,fast,adaptive,lib_uring,uring_bound,io_uring\n"
		"  --theta T          f1 zipf theta (default 1.2)\n"
		"  --f1-hit P         intended f1 hit ratio, 0..1 (default 0.90)\n"
		"  --mib A,B,C        sizes of f1,f2,f3 in MiB (default 256,1024,1024)\n"
		"  --seed N           schedule seed (default 1)\n"
		"  --spin-us N        busy-poll this long before each arrival (default 300)\n"
		"  --fragment KIB     split f2's and f3's extents every KIB (a multiple of 4; default 0: not\n"
		"                     fragmented), so that a cold read needs extent blocks; drops caches on reset\n"
		"  --scenario NAME    steady (default), or saturate: add cold f2 reads at --saturate-x times\n"
		"                     the disk's read IOPS through the measured part (no ramp, no logging)\n"
		"  --saturate-x F     saturate's extra reads/s over the calibrated IOPS (or --iops) (default 2)\n"
		"  --prepare          create the data files (or check them) and exit\n");
}

static void parse_modes(const char *s)
{
	char *dup = strdup(s), *save = NULL;

	memset(cfg.mode_on, 0, sizeof(cfg.mode_on));
	for (char *tok = strtok_r(dup, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		int m;

		for (m = 0; m < NMODES && strcmp(tok, mode_name[m]); m++)
			;
		if (m == NMODES)
			die("unknown mode '%s'", tok);
		cfg.mode_on[m] = true;
	}
	free(dup);
}

int main(int argc, char **argv)
{
	enum { O_DIR = 256, O_JSON, O_TXT, O_QUICK, O_DUR, O_RATE, O_UTIL, O_MAXRATE, O_IOPS, O_NOTHR, O_DROP,
	       O_THREADS, O_MODES, O_THETA, O_F1HIT, O_MIB, O_SEED, O_SPIN, O_PREPARE, O_HELP,
	       O_WARMUP, O_REPS, O_RAMP, O_BOUND, O_LOGRATE, O_FRAG, O_SCEN, O_SATX };
	static const struct option lo[] = {
		{ "dir", 1, 0, O_DIR }, { "json", 1, 0, O_JSON }, { "txt", 1, 0, O_TXT },
		{ "quick", 0, 0, O_QUICK }, { "duration", 1, 0, O_DUR }, { "rate", 1, 0, O_RATE },
		{ "util", 1, 0, O_UTIL }, { "max-rate", 1, 0, O_MAXRATE }, { "iops", 1, 0, O_IOPS }, { "no-throttle", 0, 0, O_NOTHR },
		{ "drop-caches", 0, 0, O_DROP }, { "threads", 1, 0, O_THREADS }, { "modes", 1, 0, O_MODES },
		{ "theta", 1, 0, O_THETA }, { "f1-hit", 1, 0, O_F1HIT }, { "mib", 1, 0, O_MIB },
		{ "seed", 1, 0, O_SEED }, { "spin-us", 1, 0, O_SPIN }, { "prepare", 0, 0, O_PREPARE },
		{ "help", 0, 0, O_HELP }, { "warmup", 1, 0, O_WARMUP }, { "reps", 1, 0, O_REPS },
		{ "ramp-s", 1, 0, O_RAMP }, { "p99-bound-ms", 1, 0, O_BOUND }, { "log-rate", 1, 0, O_LOGRATE },
		{ "fragment", 1, 0, O_FRAG }, { "scenario", 1, 0, O_SCEN }, { "saturate-x", 1, 0, O_SATX },
		{ 0, 0, 0, 0 },
	};
	bool dur_set = false, reps_set = false, ramp_set = false, warm_set = false, log_set = false;
	static struct result res[NMODES];
	static struct logres logs[NMODES];
	static struct bare bare;
	struct calib cal = { 0 };
	struct devinfo dev;
	struct target tg[16];
	double load0[3], load1[3];
	char err[512], s[4][32];
	int o, nt;

	cfg.dir = "build/bench/data";
	while ((o = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
		switch (o) {
		case O_DIR: cfg.dir = optarg; break;
		case O_JSON: cfg.json = optarg; break;
		case O_TXT: cfg.txt = optarg; break;
		case O_QUICK: cfg.quick = true; break;
		case O_DUR: cfg.duration = atof(optarg); dur_set = true; break;
		case O_RATE: cfg.rate = atof(optarg); break;
		case O_UTIL: cfg.util = atof(optarg); break;
		case O_MAXRATE: cfg.max_rate = atof(optarg); break;
		case O_IOPS: cfg.iops = (unsigned)atoi(optarg); break;
		case O_NOTHR: cfg.throttle = false; break;
		case O_DROP: cfg.drop = true; break;
		case O_THREADS: cfg.threads = (unsigned)atoi(optarg); break;
		case O_MODES: parse_modes(optarg); break;
		case O_THETA: cfg.theta = atof(optarg); break;
		case O_F1HIT: cfg.f1_hit = atof(optarg); break;
		case O_MIB:
			if (sscanf(optarg, "%u,%u,%u", &cfg.mib[F1], &cfg.mib[F2], &cfg.mib[F3]) != 3)
				die("--mib wants A,B,C");
			break;
		case O_SEED: cfg.seed = strtoull(optarg, NULL, 0); break;
		case O_SPIN: cfg.spin_us = (unsigned)atoi(optarg); break;
		case O_PREPARE: cfg.prepare = true; break;
		case O_WARMUP: cfg.warmup = atof(optarg); warm_set = true; break;
		case O_REPS: cfg.reps = (unsigned)atoi(optarg); reps_set = true; break;
		case O_RAMP: cfg.ramp_s = atof(optarg); ramp_set = true; break;
		case O_BOUND: cfg.p99_bound_ms = atof(optarg); break;
		case O_LOGRATE: cfg.log_rate = atof(optarg); log_set = true; break;
		case O_FRAG: cfg.fragment = (unsigned)atoi(optarg); break;
		case O_SCEN:
			for (cfg.scenario = 0; cfg.scenario < NSCEN && strcmp(optarg, scen_name[cfg.scenario]);
			     cfg.scenario++)
				;
			if (cfg.scenario == NSCEN)
				die("unknown scenario '%s' (steady, saturate)", optarg);
			break;
		case O_SATX: cfg.sat_x = atof(optarg); break;
		case O_HELP: case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (optind < argc) {
		usage(stderr);
		return 2;
	}
	if (cfg.quick) {
		if (!dur_set)
			cfg.duration = 3;
		if (!warm_set)
			cfg.warmup = 1;
		if (!reps_set)
			cfg.reps = 2;
		if (!ramp_set)
			cfg.ramp_s = 1;
		cfg.calib_s = 1;
	}
	/* Saturation is its own scenario: the ramp and the logging run are the steady one's. */
	if (cfg.scenario == SC_SATURATE) {
		if (!ramp_set)
			cfg.ramp_s = 0;
		if (!log_set)
			cfg.log_rate = 0;
	}
	/* Without the drop, extent blocks read once stay cached for every later run. */
	if (cfg.fragment)
		cfg.drop = true;
	if (cfg.reps < 1 || cfg.reps > MAX_REPS || cfg.warmup < 0 || cfg.ramp_s < 0 || cfg.p99_bound_ms <= 0 ||
	    cfg.log_rate < 0)
		die("bad option value (reps 1..%d, warmup, ramp-s, log-rate >= 0, p99-bound-ms > 0)", MAX_REPS);
	if (cfg.duration <= 0 || cfg.threads == 0 || cfg.theta <= 1.0 || cfg.f1_hit < 0 ||
	    cfg.f1_hit > 1 || cfg.util <= 0 || (cfg.throttle && cfg.iops == 0))
		die("bad option value (theta must be > 1, f1-hit in 0..1, iops > 0)");
	for (int c = 0; c < NCLS; c++)
		if (cfg.mib[c] < 1)
			die("--mib: sizes must be >= 1");
	if (cfg.fragment % 4 || cfg.sat_x <= 0)
		die("bad option value (fragment a multiple of 4 KiB, saturate-x > 0)");

	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	signal(SIGHUP, on_signal);
	atexit(on_exit_cleanup);
	prctl(PR_SET_TIMERSLACK, 1UL);
	if (cfg.txt && !(txt_out = fopen(cfg.txt, "w")))
		die("cannot write %s: %s", cfg.txt, strerror(errno));

	if (mkdir(cfg.dir, 0755) < 0 && errno != EEXIST)
		die("mkdir %s: %s", cfg.dir, strerror(errno));
	make_data();
	if (cfg.prepare)
		return 0;
	devinfo_get(cfg.dir, &dev);
	if (cfg.throttle && throttle_setup(&thr, cfg.dir, err, sizeof(err)) < 0)
		die("throttle: %s (run as root, or pass --no-throttle)", err);
	loadavg(load0);

	/* The schedule needs the rate, the calibration needs f1's cold set
	 * for the hit estimate only: build a provisional schedule first. */
	double want_rate = cfg.rate;
	if (!want_rate)
		cfg.rate = 100;
	make_schedule();
	{
		struct residency r0;

		reset_cache(&r0);
		measure_bare(&bare);
	}
	if (!want_rate) {
		calibrate(&cal, &dev);
		cfg.rate = cal.rate;
	}
	if (cfg.scenario == SC_SATURATE)
		cfg.sat_rate = cfg.sat_x * (cal.capacity > 0 ? cal.capacity : cfg.iops);
	reschedule(cfg.rate, cfg.warmup, cfg.duration);
	{
		struct residency r0;

		reset_cache(&r0);
		measure_bare_paced(&bare);
	}

	struct utsname un;

	uname(&un);
	out("nowait-bench: Linux %s, %ld CPUs; %s on %s (%u:%u), scheduler %s, read_ahead %u KiB, nr_requests %u; "
	    "load %.2f %.2f %.2f\n",
	    un.release, sysconf(_SC_NPROCESSORS_ONLN), dev.fstype, dev.disk[0] ? dev.disk : "?", dev.maj, dev.min, dev.scheduler,
	    dev.read_ahead_kb, dev.nr_requests, load0[0], load0[1], load0[2]);
	if (!cfg.throttle)
		out("storage: no cgroup throttle (--no-throttle)\n");
	else
		out("storage: cgroup %s %s: %u read IOPS on %u:%u during calibration and measurement only\n",
		    thr.version == 2 ? "v2 io.max riops" : "v1 blkio.throttle.read_iops_device", thr.dir,
		    cfg.iops, thr.maj, thr.min);
	out("workload: 16 KiB reads, f1 %.0f%% zipf(%.2f) over %u MiB (intended %.1f%% hits, %zu cold blocks), "
	    "f2 %.0f%% uniform over %u MiB (cold), f3 %.0f%% sequential over %u MiB (cold)\n",
	    cfg.mix[F1], cfg.theta, cfg.mib[F1], 100.0 * (1 - f1_cold_mass), nf1_cold, cfg.mix[F2], cfg.mib[F2],
	    cfg.mix[F3], cfg.mib[F3]);
	out("layout: extents by FIEMAP f1 %ld, f2 %ld, f3 %ld (-1: no FIEMAP); %s; caches %s on every reset\n",
	    files[F1].extents, files[F2].extents, files[F3].extents,
	    cfg.fragment ? "f2 and f3 fragmented" : "not fragmented",
	    cfg.drop ? "dropped (page cache and slab)" : "not dropped");
	if (cfg.fragment)
		out("  (the last 4 KiB of every %u KiB unwritten: 2 extents each; ext4 keeps 4 in the inode, 340 per "
		    "extent block)\n", cfg.fragment);
	if (cal.capacity > 0)
		out("calibration: cold random 16 KiB reads at concurrency %u: %.0f IOPS (mean %s); "
		    "%.3f device reads/request -> rate %.0f req/s (util %.2f%s)\n",
		    cfg.threads, cal.capacity, fmt_ns(cal.mean_lat_us * 1e3, s[0]), cal.io_per_req, cfg.rate, cfg.util,
		    cal.capped ? ", capped by --max-rate" : "");
	else
		out("rate: %.0f req/s (given)\n", cfg.rate);
	if (cfg.sat_rate > 0)
		out("scenario saturate: + cold f2 reads at %.0f/s (%.1fx the disk's %.0f read IOPS%s) through the "
		    "measured part\n", cfg.sat_rate, cfg.sat_x, cfg.sat_rate / cfg.sat_x,
		    cal.capacity > 0 ? ", calibrated" : ", --iops");
	out("open loop: Poisson arrivals, %zu reads per run (%.0f s measured after %.0f s warm-up), seed %" PRIu64
	    ", latency from scheduled arrival; pool size %u; %u runs of each mode, first order:", nops,
	    cfg.duration, cfg.warmup, cfg.seed, cfg.threads, cfg.reps);
	int order[NMODES], non = 0;

	for (int m = 0; m < NMODES; m++)
		if (cfg.mode_on[m])
			out(" %s", mode_name[order[non++] = m]);
	out(", then rotated by one each run\n");
	fflush(stdout);

	/* Rotated, so that no mode always runs first (cold) or after a given one. */
	for (unsigned k = 0; k < cfg.reps && !stop; k++)
		for (int j = 0; j < non && !stop; j++)
			run_mode(order[(j + (int)k) % non], &runs[k][order[(j + (int)k) % non]], 60);
	for (int m = 0; m < NMODES; m++) {
		const struct result *r = median_run(m);

		if (r)
			res[m] = *r;
	}
	if (cfg.ramp_s > 0) {
		double base = cfg.rate, warm = cfg.warmup, dur = cfg.duration;
		static struct result scratch;

		for (int j = 0; j < non && !stop; j++)
			ramp_mode(order[j], base, &scratch);
		reschedule(base, warm, dur);
	}
	for (int j = 0; cfg.log_rate > 0 && j < non && !stop; j++)
		run_log(order[j], &logs[order[j]]);
	loadavg(load1);
	throttle_teardown(&thr);
	if (stop)
		fprintf(stderr, "interrupted: partial results\n");

	report_summary();
	report_table(res, &bare);
	if (cfg.ramp_s > 0)
		report_ramp();
	if (cfg.log_rate > 0)
		report_log(logs);
	nt = eval_targets(&bare, tg);
	out("\ntargets (reported, not asserted):\n");
	for (int i = 0; i < nt; i++)
		out("  %-55s %-40s %s\n", tg[i].what, tg[i].value, verdict(tg[i].ok));
	out("load average: start %.2f %.2f %.2f, end %.2f %.2f %.2f\n", load0[0], load0[1], load0[2], load1[0],
	    load1[1], load1[2]);
	if (cfg.json)
		write_json(cfg.json, res, &bare, &cal, &dev, load0, load1, tg, nt, logs);
	if (txt_out)
		fclose(txt_out);
	return stop ? 130 : 0;
}
