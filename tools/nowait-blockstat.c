// SPDX-License-Identifier: MIT
/*
 * nowait-blockstat: do preadv2(RWF_NOWAIT) misses sleep in the caller, is
 * the readahead they hand off done (the cold phase's offsets replayed
 * --settle seconds later), and how much does a failed flagged read speed up
 * the blocking read that retries it?  And do buffered io_uring reads of cold
 * data sleep inside io_uring_enter(), which should hand them to io-wq?
 * With --netfs, for a network filesystem behind a slow server, it runs the
 * cold and the warm phase only: the others time the server's disk.
 * With --write, the same questions for flagged writes under dirty pressure
 * on one filesystem, the cost of a flagged write against a plain one, and
 * how much of a logger's output the flagged call writes inline.
 * With --hostile, whether flagged reads, overwrites and appends sleep on a
 * nearly full, frozen or short-queued filesystem, or beside a stalled FUSE
 * daemon (the setups of the v3 review).
 * Runs as root (it writes /proc/sys/vm/drop_caches, and --write the dirty
 * limits, which it puts back).  It is a measurement, not a test: it exits 0
 * whatever the figures are, 77 when the filesystem refuses RWF_NOWAIT reads
 * (--write counts a refusal as its answer), 1 on a setup error.
 *
 * Build: gcc -std=gnu11 -Wall -Wextra -Werror -O2 -static [-m32]
 */
#define _FILE_OFFSET_BITS 64
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <inttypes.h>
#include <linux/fiemap.h>
#include <linux/fs.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/uio.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "nowait_ring.h"
#include "nowait_test.h"

#ifndef RWF_NOWAIT
#define RWF_NOWAIT 0x00000008	/* uapi value; older glibc headers lack it */
#endif

#define PAGE 4096		/* mincore() granule on x86 */
#define IO (16 * 1024)		/* every measured read */
#define EXTENT (64 * 1024)	/* setup allocation step */
#define WCHUNK (1024 * 1024)	/* setup write size */
#define SKIP 77

enum cls { HIT, SHORT, MISS, OTHER };

struct phase {
	const char *name;
	unsigned n[4];		/* calls per enum cls */
	unsigned slept;
	int other_errno;	/* last errno counted as OTHER; 0: a 0 return */
	double cached;		/* % of both files resident before the calls */
	int64_t *ns[4];		/* latencies per class, sorted after the run */
};

/* Cold buffered IORING_OP_READs, each submitted alone. */
struct uring {
	unsigned calls, in_submit, by_worker, other, slept;
	int other_res;		/* last completion counted as other */
	int64_t *submit_ns;	/* io_uring_enter() submitting it, sorted */
};

struct retry {
	unsigned samples;
	int64_t *cold, *flagged, *after, *waited;	/* ns, one per sample */
	unsigned miss_b, slept_b, miss_c, slept_c;
};

static _Noreturn void vdie(int err, const char *fmt, va_list ap)
{
	fputs("nowait-blockstat: ", stderr);
	vfprintf(stderr, fmt, ap);
	if (err)
		fprintf(stderr, ": %s", strerror(err));
	fputc('\n', stderr);
	exit(1);
}

static _Noreturn void die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vdie(0, fmt, ap);
}

static _Noreturn void die_sys(const char *fmt, ...)
{
	int err = errno;
	va_list ap;

	va_start(ap, fmt);
	vdie(err, fmt, ap);
}

static void *xcalloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size);

	if (!p)
		die("out of memory");
	return p;
}

/* splitmix64: tiny and well spread; the caller owns the state. */
static uint64_t rnd(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/* A random 16 KiB-aligned slot in either file. */
static void pick(uint64_t *s, const int fd[2], off_t size, int *f, off_t *off)
{
	uint64_t r = rnd(s) % (2 * (uint64_t)(size / IO));

	*f = fd[r & 1];
	*off = (off_t)(r >> 1) * IO;
}

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static long nvcsw(void)
{
	struct rusage ru;

	getrusage(RUSAGE_THREAD, &ru);
	return ru.ru_nvcsw;
}

static void drop_caches(void)
{
	int fd;

	/* sync first: dirty pages and inodes would survive the drop. */
	sync();
	fd = open("/proc/sys/vm/drop_caches", O_WRONLY);
	/* 3 = page cache and slab, so the extent tree's buffers go too. */
	if (fd < 0 || write(fd, "3", 1) != 1)
		die_sys("writing /proc/sys/vm/drop_caches (needs root)");
	close(fd);
}

/*
 * One flagged read or write of @len bytes.  A voluntary context switch
 * during the call means the caller slept; rusage is read outside the timed
 * window so its cost does not count.
 */
static enum cls flagged_rw(bool write, int fd, void *buf, size_t len, off_t off,
			   int64_t *ns, bool *slept, int *err, ssize_t *done)
{
	struct iovec iov = { buf, len };
	long cs = nvcsw();
	int64_t t = now_ns();
	ssize_t n = write ? pwritev2(fd, &iov, 1, off, RWF_NOWAIT) :
			    preadv2(fd, &iov, 1, off, RWF_NOWAIT);

	*err = errno;
	*ns = now_ns() - t;
	*slept = nvcsw() > cs;
	if (done)
		*done = n;
	if (n == (ssize_t)len)
		return HIT;
	if (n > 0)
		return SHORT;
	if (n < 0 && *err == EAGAIN)
		return MISS;
	/* n == 0 inside the file is the 5.9/5.10 spurious-EOF bug: OTHER. */
	if (n == 0)
		*err = 0;
	return OTHER;
}

static enum cls flagged(int fd, void *buf, off_t off, int64_t *ns, bool *slept,
			int *err)
{
	return flagged_rw(false, fd, buf, IO, off, ns, slept, err, NULL);
}

static int64_t plain_read(int fd, void *buf, off_t off)
{
	int64_t t = now_ns();

	if (pread(fd, buf, IO, off) != IO)
		die_sys("pread at %lld", (long long)off);
	return now_ns() - t;
}

static uint64_t extents(int fd)
{
	struct fiemap fm = { .fm_length = FIEMAP_MAX_OFFSET };

	/* fm_extent_count 0 asks only for the count. */
	return ioctl(fd, FS_IOC_FIEMAP, &fm) ? 0 : fm.fm_mapped_extents;
}

static double cached_pct(const int fd[2], off_t size)
{
	size_t pages = size / PAGE, in = 0;
	unsigned char *vec = xcalloc(pages, 1);

	for (int f = 0; f < 2; f++) {
		void *p = mmap(NULL, size, PROT_READ, MAP_SHARED, fd[f], 0);

		if (p == MAP_FAILED || mincore(p, size, vec))
			die_sys("mmap/mincore");
		for (size_t i = 0; i < pages; i++)
			in += vec[i] & 1;
		munmap(p, size);
	}
	free(vec);
	return 100.0 * in / (2 * pages);
}

/*
 * Both files get a fragmented extent tree, so a cold read has to fetch
 * extent blocks before it can start its data I/O.  Interleaved 4 KiB
 * writes do not achieve that on ext4: mballoc's per-inode preallocation
 * maps each file in 8 MiB runs whatever the write order (25 extents per
 * 160 MiB file on 6.18, fsync every 16 steps or not).  fallocate() of one extent's worth is not
 * normalized, so allocating A and B in alternating 64 KiB steps leaves
 * each file with SIZE*16 extents of 64 KiB (the extent size that 16
 * interleaved 4 KiB steps per fsync was meant to produce).  The data are
 * written afterwards, which turns the unwritten extents into written ones
 * without merging them.
 */
static void setup(const int fd[2], off_t size)
{
	struct stat st[2];
	char *chunk = xcalloc(1, WCHUNK);
	long long mib = size >> 20, every = mib / 4 ? mib / 4 : 1;

	if (fstat(fd[0], &st[0]) || fstat(fd[1], &st[1]))
		die_sys("fstat");
	if (st[0].st_size == size && st[1].st_size == size) {
		fprintf(stderr, "setup: reusing existing files\n");
		free(chunk);
		return;
	}
	if (ftruncate(fd[0], 0) || ftruncate(fd[1], 0))
		die_sys("ftruncate");
	/* Many small extents; a filesystem that cannot preallocate gets none */
	for (off_t off = 0; off < size; off += EXTENT)
		for (int f = 0; f < 2; f++)
			if (fallocate(fd[f], 0, off, EXTENT)) {
				if (errno != EOPNOTSUPP)
					die_sys("fallocate");
				off = size;
				break;
			}
	for (int f = 0; f < 2; f++) {
		/* Non-zero data: nothing may treat a block as a hole. */
		memset(chunk, 'A' + f, WCHUNK);
		for (off_t off = 0; off < size; off += WCHUNK) {
			if (pwrite(fd[f], chunk, WCHUNK, off) != WCHUNK)
				die_sys("setup write");
			if (((off + WCHUNK) >> 20) % every == 0)
				fprintf(stderr, "setup: file %c, %lld/%lld MiB\n", 'A' + f,
					(long long)(off + WCHUNK) >> 20, mib);
		}
		if (fsync(fd[f]))
			die_sys("fsync");
	}
	free(chunk);
}

static int cmp64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return (x > y) - (x < y);
}

/*
 * Nearest-rank percentile of a sorted array: the smallest sample with at
 * least p% of the samples at or below it, i.e. element ceil(p/100 * n) - 1.
 * No interpolation, so every figure is a latency that was really observed;
 * p = 100 is the maximum.  Returns -1 for an empty set.
 */
static double pct_us(const int64_t *v, size_t n, unsigned p)
{
	size_t rank = (n * p + 99) / 100;

	if (!n)
		return -1;
	return v[rank ? rank - 1 : 0] / 1000.0;
}

static void phase_alloc(struct phase *ph, unsigned calls)
{
	for (int c = 0; c < 4; c++)
		ph->ns[c] = xcalloc(calls, sizeof(int64_t));
}

/* Count one flagged call of the phase. */
static void phase_add(struct phase *ph, enum cls c, int64_t ns, bool slept,
		      int err)
{
	ph->ns[c][ph->n[c]++] = ns;
	ph->slept += slept;
	if (c == OTHER)
		ph->other_errno = err;
}

static void phase_sort(struct phase *ph)
{
	for (int c = 0; c < 4; c++)
		qsort(ph->ns[c], ph->n[c], sizeof(int64_t), cmp64);
}

static unsigned phase_calls(const struct phase *ph)
{
	return ph->n[HIT] + ph->n[SHORT] + ph->n[MISS] + ph->n[OTHER];
}

static void run_phase(struct phase *ph, const int fd[2], off_t size,
		      unsigned calls, uint64_t seed, void *buf)
{
	ph->cached = cached_pct(fd, size);
	phase_alloc(ph, calls);
	for (unsigned i = 0; i < calls; i++) {
		int f, err;
		off_t off;
		int64_t ns;
		bool slept;
		enum cls c;

		pick(&seed, fd, size, &f, &off);
		c = flagged(f, buf, off, &ns, &slept, &err);
		phase_add(ph, c, ns, slept, err);
	}
	phase_sort(ph);
}

/* A flagged read at a random offset, for the retry samples to follow. */
static void miss_at(const int fd[2], off_t size, uint64_t *seed, void *buf,
		    int *f, off_t *off, int64_t *ns, unsigned *miss,
		    unsigned *slept)
{
	bool s;
	int err;

	pick(seed, fd, size, f, off);
	*miss += flagged(*f, buf, *off, ns, &s, &err) == MISS;
	*slept += s;
}

static void run_retry(struct retry *r, const int fd[2], off_t size,
		      uint64_t seed, void *buf)
{
	const struct timespec ms = { 0, 1000000 };
	unsigned k = r->samples;
	int64_t ns_c;	/* (c)'s flagged call: same as (b)'s, not reported */

	r->cold = xcalloc(k, sizeof(int64_t));
	r->flagged = xcalloc(k, sizeof(int64_t));
	r->after = xcalloc(k, sizeof(int64_t));
	r->waited = xcalloc(k, sizeof(int64_t));
	for (unsigned i = 0; i < k; i++) {
		int f;
		off_t off;

		drop_caches();
		pick(&seed, fd, size, &f, &off);
		r->cold[i] = plain_read(f, buf, off);

		drop_caches();
		miss_at(fd, size, &seed, buf, &f, &off, &r->flagged[i],
			&r->miss_b, &r->slept_b);
		r->after[i] = plain_read(f, buf, off);

		drop_caches();
		miss_at(fd, size, &seed, buf, &f, &off, &ns_c,
			&r->miss_c, &r->slept_c);
		nanosleep(&ms, NULL);
		r->waited[i] = plain_read(f, buf, off);
	}
	qsort(r->cold, k, sizeof(int64_t), cmp64);
	qsort(r->flagged, k, sizeof(int64_t), cmp64);
	qsort(r->after, k, sizeof(int64_t), cmp64);
	qsort(r->waited, k, sizeof(int64_t), cmp64);
}

/*
 * io_uring's inline attempt of a cold read: it must hand the read to an
 * io-wq worker without sleeping in the submitter (the caller's event loop).
 */
static void run_uring(struct uring *u, const int fd[2], off_t size,
		      unsigned calls, uint64_t seed, void *buf)
{
	struct ring ring;

	if (ring_init(&ring) < 0)
		die_sys("io_uring_setup");
	/*
	 * Not counted: the first miss creates the io-wq worker, and that
	 * allocates, as it does once in any program.
	 */
	if (ring_rw(&ring, IORING_OP_READ, fd[0], buf, IO, size - IO, 0) ||
	    !ring_reap(&ring, true, &(int){ 0 }))
		die_sys("io_uring warm-up read");
	u->submit_ns = xcalloc(calls, sizeof(int64_t));
	for (unsigned i = 0; i < calls; i++) {
		long cs;
		int64_t t;
		int f, err, res = 0;
		off_t off;
		bool done;

		pick(&seed, fd, size, &f, &off);
		cs = nvcsw();
		t = now_ns();
		err = ring_rw(&ring, IORING_OP_READ, f, buf, IO, off, 0);
		u->submit_ns[u->calls++] = now_ns() - t;
		u->slept += nvcsw() > cs;
		if (err)
			die("io_uring_enter: %s", strerror(-err));
		done = ring_reap(&ring, false, &res);
		if (!done && !ring_reap(&ring, true, &res))
			die_sys("io_uring_enter (wait)");
		if (res != IO) {
			u->other++;
			u->other_res = res;
		} else if (done) {
			u->in_submit++;
		} else {
			u->by_worker++;
		}
	}
	qsort(u->submit_ns, u->calls, sizeof(int64_t), cmp64);
}

static void print_us(double us)
{
	if (us < 0)
		printf(" %8s", "-");
	else
		printf(" %8.0f", us);
}

/* One retry figure; with cold, also its ratio to the cold read (a). */
static void retry_row(const char *label, const int64_t *v, unsigned k,
		      const int64_t *cold)
{
	printf("%-46s", label);
	print_us(pct_us(v, k, 50));
	print_us(pct_us(v, k, 90));
	if (cold)
		printf(" %8.2f %8.2f", pct_us(v, k, 50) / pct_us(cold, k, 50),
		       pct_us(v, k, 90) / pct_us(cold, k, 90));
	printf("\n");
}

static void print_table(const struct phase *ph, int nph, const struct uring *u,
			const struct retry *r)
{
	printf("\n%-10s %6s %6s %6s %6s %6s %6s %6s | %-26s | %s\n", "", "",
	       "", "", "", "", "", "", "EAGAIN latency, us", "hit latency, us");
	printf("%-10s %6s %6s %6s %6s %6s %6s %6s | %8s %8s %8s | %8s %8s %8s\n",
	       "phase", "cached", "calls", "hits", "short", "EAGAIN", "other",
	       "slept", "p50", "p99", "max", "p50", "p99", "max");
	for (int i = 0; i < nph; i++) {
		const struct phase *p = &ph[i];

		printf("%-10s %5.1f%% %6u %6u %6u %6u %6u %6u |", p->name,
		       p->cached, phase_calls(p), p->n[HIT], p->n[SHORT],
		       p->n[MISS], p->n[OTHER], p->slept);
		print_us(pct_us(p->ns[MISS], p->n[MISS], 50));
		print_us(pct_us(p->ns[MISS], p->n[MISS], 99));
		print_us(pct_us(p->ns[MISS], p->n[MISS], 100));
		printf(" |");
		print_us(pct_us(p->ns[HIT], p->n[HIT], 50));
		print_us(pct_us(p->ns[HIT], p->n[HIT], 99));
		print_us(pct_us(p->ns[HIT], p->n[HIT], 100));
		printf("\n");
		if (p->n[OTHER])
			printf("%-10s other: last was %s\n", "",
			       p->other_errno ? strerror(p->other_errno) :
			       "a 0 return before EOF");
	}
	printf("cached: share of both files in the page cache before the calls;\n"
	       "slept: calls during which the thread made a voluntary context switch.\n");
	if (!u)
		return;

	printf("\n%-10s %6s %9s %9s %6s %6s | %8s %8s %8s\n", "io_uring", "calls",
	       "in submit", "by io-wq", "other", "slept", "p50 us", "p99 us",
	       "max us");
	printf("%-10s %6u %9u %9u %6u %6u |", "cold", u->calls, u->in_submit,
	       u->by_worker, u->other, u->slept);
	print_us(pct_us(u->submit_ns, u->calls, 50));
	print_us(pct_us(u->submit_ns, u->calls, 99));
	print_us(pct_us(u->submit_ns, u->calls, 100));
	printf("\n");
	if (u->other)
		printf("%-10s other: last completion was %d\n", "", u->other_res);
	printf("io_uring: buffered IORING_OP_READs of cold data, one per io_uring_enter();\n"
	       "slept and the latencies are those of the submitting io_uring_enter().\n");

	char title[64];

	snprintf(title, sizeof(title), "retry: %u samples, each after drop_caches",
		 r->samples);
	printf("\n%-46s %8s %8s %8s %8s\n", title, "p50 us", "p90 us",
	       "p50/(a)", "p90/(a)");
	retry_row("(a) blocking read, cold", r->cold, r->samples, NULL);
	retry_row("(b) blocking read right after a flagged miss", r->after,
		  r->samples, r->cold);
	retry_row("    the flagged call before it", r->flagged, r->samples, NULL);
	retry_row("(c) blocking read 1 ms after a flagged miss", r->waited,
		  r->samples, r->cold);
	printf("flagged calls: (b) %u/%u EAGAIN, %u slept; (c) %u/%u EAGAIN, %u slept\n",
	       r->miss_b, r->samples, r->slept_b, r->miss_c, r->samples, r->slept_c);
	printf("(a) pread of 16 KiB after drop_caches: extent-tree lookup plus data I/O.\n"
	       "(b) the same pread issued at once after preadv2(RWF_NOWAIT) at the same\n"
	       "    offset returned EAGAIN; a ratio below 1 is the head start the miss gave\n"
	       "    (its readahead already in flight), ~1 means the miss did no work.\n"
	       "    The flagged call's own time is the row below (b), not part of it.\n"
	       "(c) as (b), but the pread starts 1 ms after the miss, as when a thread pool\n"
	       "    picks it up; the 1 ms is not counted.\n");
}

static void json_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			fprintf(f, "\\%c", *s);
		else if ((unsigned char)*s < 0x20)
			fprintf(f, "\\u%04x", *s);
		else
			fputc(*s, f);
	}
	fputc('"', f);
}

/* A phase's "other_errno" value: its last other errno, or null without one */
static void json_other_errno(FILE *f, const struct phase *p)
{
	if (p->n[OTHER])
		json_str(f, p->other_errno ? nowait_errname(p->other_errno) : "0");
	else
		fputs("null", f);
}

/* A number with @prec decimals; a negative one is null (not measured). */
static void json_num(FILE *f, const char *key, double v, int prec,
		     const char *sep)
{
	if (v < 0)
		fprintf(f, "\"%s\": null%s", key, sep);
	else
		fprintf(f, "\"%s\": %.*f%s", key, prec, v, sep);
}

static void json_us(FILE *f, const char *key, double us, const char *sep)
{
	json_num(f, key, us, 1, sep);
}

static void json_dist(FILE *f, const char *key, const int64_t *v, size_t n,
		      unsigned p, const char *sep)
{
	fprintf(f, "\"%s\": {\"n\": %zu, ", key, n);
	json_us(f, "p50", pct_us(v, n, 50), ", ");
	json_us(f, p == 90 ? "p90" : "p99", pct_us(v, n, p), ", ");
	json_us(f, "max", pct_us(v, n, 100), "}");
	fputs(sep, f);
}

/* A JSON report, up to its "dir" member. */
static FILE *json_open(const char *path, const char *release, const char *dir)
{
	FILE *f = fopen(path, "w");

	if (!f)
		die_sys("%s", path);
	fprintf(f, "{\n  \"release\": ");
	json_str(f, release);
	fprintf(f, ",\n  \"dir\": ");
	json_str(f, dir);
	return f;
}

static void write_json(const char *path, const char *release, const char *dir,
		       unsigned mib, uint64_t seed, const uint64_t ext[2],
		       const struct phase *ph, int nph, const struct uring *u,
		       const struct retry *r)
{
	FILE *f = json_open(path, release, dir);
	unsigned k = r ? r->samples : 0;

	fprintf(f, ",\n  \"size_mib\": %u, \"io_bytes\": %d, \"seed\": %" PRIu64
		", \"extents\": [%" PRIu64 ", %" PRIu64 "],\n  \"phases\": [\n",
		mib, IO, seed, ext[0], ext[1]);
	for (int i = 0; i < nph; i++) {
		const struct phase *p = &ph[i];

		fprintf(f, "    {\"name\": \"%s\", \"cached_pct\": %.1f, "
			"\"calls\": %u, \"hits\": %u, \"short\": %u, "
			"\"eagain\": %u, \"other\": %u, \"slept\": %u,\n     ",
			p->name, p->cached, phase_calls(p), p->n[HIT],
			p->n[SHORT], p->n[MISS], p->n[OTHER],
			p->slept);
		json_dist(f, "eagain_us", p->ns[MISS], p->n[MISS], 99, ", ");
		json_dist(f, "hit_us", p->ns[HIT], p->n[HIT], 99, "}");
		fputs(i + 1 < nph ? ",\n" : "\n", f);
	}
	if (!u) {
		fprintf(f, "  ],\n  \"uring\": null, \"retry\": null\n}\n");
		goto out;
	}
	fprintf(f, "  ],\n  \"uring\": {\"calls\": %u, \"in_submit\": %u, "
		"\"by_worker\": %u, \"other\": %u, \"slept\": %u,\n    ",
		u->calls, u->in_submit, u->by_worker, u->other, u->slept);
	json_dist(f, "submit_us", u->submit_ns, u->calls, 99, "},\n");
	fprintf(f, "  \"retry\": {\"samples\": %u,\n    ", k);
	json_dist(f, "cold_us", r->cold, k, 90, ",\n    ");
	json_dist(f, "after_miss_us", r->after, k, 90, ",\n    ");
	json_dist(f, "flagged_miss_us", r->flagged, k, 90, ",\n    ");
	json_dist(f, "after_miss_1ms_us", r->waited, k, 90, ",\n    ");
	fprintf(f, "\"after_miss_eagain\": %u, \"after_miss_slept\": %u, "
		"\"after_miss_1ms_eagain\": %u, \"after_miss_1ms_slept\": %u,\n"
		"    \"ratio_p50\": %.3f, \"ratio_p90\": %.3f, "
		"\"ratio_1ms_p50\": %.3f, \"ratio_1ms_p90\": %.3f}\n}\n",
		r->miss_b, r->slept_b, r->miss_c, r->slept_c,
		pct_us(r->after, k, 50) / pct_us(r->cold, k, 50),
		pct_us(r->after, k, 90) / pct_us(r->cold, k, 90),
		pct_us(r->waited, k, 50) / pct_us(r->cold, k, 50),
		pct_us(r->waited, k, 90) / pct_us(r->cold, k, 90));
out:
	if (fclose(f))
		die_sys("%s", path);
}

/*
 * --write: flagged 16 KiB pwritev2() calls on one filesystem, while another
 * process dirties memory under a small vm.dirty_bytes.  Three phases:
 * overwrites of cached data, O_APPEND appends (EOF never page-aligned, so
 * each fills a cached partial page and goes on into new ones) and
 * page-aligned extensions into new pages; then a logger: 4 KiB O_APPEND
 * records at a steady rate, written inline by the flagged call or handed
 * to a thread.  Before the pressure starts, the cost of a flagged write
 * that succeeds against a plain one.  Whatever the kernel answers is
 * counted: EOPNOTSUPP filesystems show as such.
 */
#define WFILE (16 << 20)	/* overwrite file; growing files wrap here */
#define APPEND_HEAD 1000	/* append phase: EOF is never page-aligned */
#define REC 4096		/* logging workload record */
#define DIRTY_CHUNK (256 * 1024)	/* the dirtier's plain writes... */
#define DIRTY_RING (16 << 20)	/* ...cycling through a file this big */
#define COST_ROUNDS_MAX 64

enum wkind { OVERWRITE, APPEND, EXTEND };

/* The dirtier's progress and its /proc/vmstat samples: shared memory. */
struct dirty_stats {
	_Atomic uint64_t bytes;		/* written by the dirtier */
	_Atomic uint64_t samples;	/* of /proc/vmstat, every 10 ms */
	_Atomic uint64_t over;		/* dirty + writeback at or over freerun */
	_Atomic uint64_t max_kib;	/* highest dirty + writeback */
};

/* The dirtier across one phase. */
struct pressure {
	uint64_t bytes, samples, over;
};

struct wphase {
	struct phase ph;	/* n[HIT]: written in full */
	struct pressure p;
};

/* Flagged against plain overwrites of cached data, in rounds. */
struct wcost {
	unsigned rounds, pairs, valid, discarded;
	int refused;		/* errno of the last flagged call that failed */
	double ratio[COST_ROUNDS_MAX];	/* per valid round, sorted */
	double plain_us[COST_ROUNDS_MAX], flagged_us[COST_ROUNDS_MAX];
};

struct wlog {
	unsigned rate, records, late, handed;
	double seconds;
	bool length_ok;		/* the file holds every record at the end */
	struct phase ph;	/* n[HIT]: written inline */
	struct pressure p;
};

/* The sysctls --write changes, to put back at exit. */
static const char *const dirty_knobs[] = {
	"dirty_bytes", "dirty_background_bytes", "dirty_ratio",
	"dirty_background_ratio",
};
static char dirty_saved[4][32];
static bool dirty_changed;
static pid_t dirtier_pid[2];	/* the dirtier and its sampler */
static struct dirty_stats *dstats;

static void sysctl_vm(const char *knob, char *val, size_t n, bool set)
{
	char path[128];
	int fd;
	ssize_t len;

	snprintf(path, sizeof(path), "/proc/sys/vm/%s", knob);
	fd = open(path, set ? O_WRONLY : O_RDONLY);
	if (fd < 0)
		die_sys("%s", path);
	len = set ? write(fd, val, strlen(val)) : read(fd, val, n - 1);
	if (len < 0)
		die_sys("%s", path);
	if (!set)
		val[len] = '\0';
	close(fd);
}

/*
 * Put the dirty limits back: a byte limit where one was set, else the
 * ratio (writing one zeroes the other).
 */
static void dirty_restore(void)
{
	for (int i = 0; i < 2; i++)
		if (dirtier_pid[i] > 0) {
			kill(dirtier_pid[i], SIGKILL);
			waitpid(dirtier_pid[i], NULL, 0);
			dirtier_pid[i] = 0;
		}
	if (!dirty_changed)
		return;
	dirty_changed = false;
	for (int i = 0; i < 2; i++)
		sysctl_vm(dirty_knobs[atoi(dirty_saved[i]) ? i : i + 2],
			  dirty_saved[atoi(dirty_saved[i]) ? i : i + 2], 0, true);
}

static void dirty_limit(unsigned mib)
{
	char v[32];

	for (int i = 0; i < 4; i++)
		sysctl_vm(dirty_knobs[i], dirty_saved[i], sizeof(dirty_saved[i]),
			  false);
	dirty_changed = true;
	snprintf(v, sizeof(v), "%llu", (unsigned long long)mib << 18);
	sysctl_vm("dirty_background_bytes", v, 0, true);
	snprintf(v, sizeof(v), "%llu", (unsigned long long)mib << 20);
	sysctl_vm("dirty_bytes", v, 0, true);
}

/* Pages dirty and under writeback, and the freerun line of the limits. */
static bool dirty_now(uint64_t *pages, uint64_t *freerun)
{
	static const char *const keys[] = {
		"nr_dirty", "nr_writeback", "nr_dirty_threshold",
		"nr_dirty_background_threshold",
	};
	unsigned long long v[4] = { 0 };
	unsigned found = 0;
	char line[128], key[64];
	unsigned long long x;
	FILE *f = fopen("/proc/vmstat", "re");

	if (!f)
		return false;
	while (fgets(line, sizeof(line), f))
		for (int i = 0; i < 4; i++)
			if (sscanf(line, "%63s %llu", key, &x) == 2 &&
			    !strcmp(key, keys[i])) {
				v[i] = x;
				found |= 1u << i;
			}
	fclose(f);
	*pages = v[0] + v[1];
	/* balance_dirty_pages() throttles nobody below this line */
	*freerun = (v[2] + v[3]) / 2;
	return found == 15;
}

/*
 * Another process dirtying memory: plain 256 KiB overwrites round a 16 MiB
 * file, @fd, written whole before (so that allocating it, which reads
 * metadata from the throttled disk on vfat, does not pace the dirtier), for
 * as long as the measurement runs.  It sleeps in balance_dirty_pages() as
 * any writer over the limit does.  A third process samples /proc/vmstat
 * every 10 ms, so that the pressure is known whether the dirtier is
 * writing or throttled.
 */
static void dirtier_start(int fd)
{
	char *chunk;

	dstats = mmap(NULL, sizeof(*dstats), PROT_READ | PROT_WRITE,
		      MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (dstats == MAP_FAILED)
		die_sys("mmap");
	chunk = xcalloc(1, DIRTY_CHUNK);
	memset(chunk, 'D', DIRTY_CHUNK);
	dirtier_pid[0] = fork();
	if (dirtier_pid[0] < 0)
		die_sys("fork");
	if (!dirtier_pid[0])
		for (off_t off = 0;; off = (off + DIRTY_CHUNK) % DIRTY_RING) {
			if (pwrite(fd, chunk, DIRTY_CHUNK, off) != DIRTY_CHUNK) {
				perror("nowait-blockstat: dirtier");
				_exit(1);
			}
			dstats->bytes += DIRTY_CHUNK;
		}
	free(chunk);
	dirtier_pid[1] = fork();
	if (dirtier_pid[1] < 0)
		die_sys("fork");
	if (dirtier_pid[1])
		return;
	for (;; usleep(10000)) {
		uint64_t pages, freerun;

		if (!dirty_now(&pages, &freerun))
			continue;
		dstats->samples++;
		dstats->over += pages >= freerun;
		if (pages * (PAGE / 1024) > dstats->max_kib)
			dstats->max_kib = pages * (PAGE / 1024);
	}
}

static struct pressure pressure_now(void)
{
	for (int i = 0; i < 2; i++)
		if (waitpid(dirtier_pid[i], NULL, WNOHANG))
			die("the dirtier or its sampler stopped");
	return (struct pressure){ dstats->bytes, dstats->samples, dstats->over };
}

static struct pressure pressure_since(struct pressure a)
{
	struct pressure b = pressure_now();

	return (struct pressure){ b.bytes - a.bytes, b.samples - a.samples,
				  b.over - a.over };
}

/*
 * -1 when the phase was over before a tenth of a second's samples (as one
 * that is refused with EOPNOTSUPP is): too few to tell.
 */
#define PRESSURE_MIN_SAMPLES 10

static double pressure_pct(const struct pressure *p)
{
	if (p->samples < PRESSURE_MIN_SAMPLES)
		return -1;
	return 100.0 * p->over / p->samples;
}

static int wopen(const char *dir, const char *name, int flags, char *path,
		 size_t n)
{
	int fd;

	snprintf(path, n, "%s/%s", dir, name);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC | flags, 0644);
	if (fd < 0)
		die_sys("open %s", path);
	return fd;
}

static void wfill(int fd, off_t len, char c)
{
	char *chunk = xcalloc(1, WCHUNK);

	memset(chunk, c, WCHUNK);
	for (off_t off = 0; off < len; off += WCHUNK) {
		size_t n = len - off < WCHUNK ? (size_t)(len - off) : WCHUNK;

		if (pwrite(fd, chunk, n, off) != (ssize_t)n)
			die_sys("setup write");
	}
	if (fsync(fd))
		die_sys("fsync");
	free(chunk);
}

static off_t wslot(uint64_t *seed)
{
	return (off_t)(rnd(seed) % (WFILE / IO)) * IO;
}

/* One phase of flagged 16 KiB writes of one kind; growing files wrap. */
static void run_wphase(struct wphase *w, int fd, enum wkind kind,
		       unsigned calls, uint64_t seed, void *buf)
{
	off_t start = kind == APPEND ? APPEND_HEAD : 0, size = start;
	struct pressure p0;

	if (kind != OVERWRITE) {
		if (ftruncate(fd, 0))
			die_sys("ftruncate");
		wfill(fd, start, 'H');
	}
	phase_alloc(&w->ph, calls);
	p0 = pressure_now();
	for (unsigned i = 0; i < calls; i++) {
		off_t off = kind == OVERWRITE ? wslot(&seed) :
			    kind == APPEND ? -1 : size;
		int64_t ns;
		ssize_t done;
		bool slept;
		int err;
		enum cls c;

		/* Not timed: a blocking truncate back to the start. */
		if (kind != OVERWRITE && size + IO > WFILE) {
			if (ftruncate(fd, start))
				die_sys("ftruncate");
			size = start;
			off = kind == APPEND ? -1 : size;
		}
		c = flagged_rw(true, fd, buf, IO, off, &ns, &slept, &err, &done);
		phase_add(&w->ph, c, ns, slept, err);
		if (done > 0)
			size += done;
	}
	w->p = pressure_since(p0);
	phase_sort(&w->ph);
}

static int64_t timed_write(int fd, void *buf, off_t off, int flags,
			   ssize_t *n, int *err)
{
	struct iovec iov = { buf, IO };
	int64_t t = now_ns();

	*n = pwritev2(fd, &iov, 1, off, flags);
	*err = errno;
	return now_ns() - t;
}

static int cmpd(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/*
 * The cost of a flagged write that succeeds: in each round, pairs of a
 * plain and a flagged 16 KiB overwrite of cached data (random slots; which
 * goes first alternates), and the ratio of the two medians.  A pair whose
 * flagged call did not write all is left out; a round with fewer than half
 * its pairs left has no ratio.  Both calls are pwritev2(), flags 0 against
 * RWF_NOWAIT, so the flag is all that differs.
 */
static void run_cost(struct wcost *c, int fd, uint64_t seed, void *buf)
{
	int64_t *plain = xcalloc(c->pairs, sizeof(int64_t));
	int64_t *flag = xcalloc(c->pairs, sizeof(int64_t));

	for (unsigned r = 0; r < c->rounds; r++) {
		unsigned n = 0;

		for (unsigned i = 0; i < c->pairs; i++) {
			off_t a = wslot(&seed), b = wslot(&seed);
			ssize_t np, nf;
			int64_t tp, tf;
			int ep, ef;

			if ((i + r) & 1) {
				tf = timed_write(fd, buf, a, RWF_NOWAIT, &nf, &ef);
				tp = timed_write(fd, buf, b, 0, &np, &ep);
			} else {
				tp = timed_write(fd, buf, a, 0, &np, &ep);
				tf = timed_write(fd, buf, b, RWF_NOWAIT, &nf, &ef);
			}
			if (np != IO) {
				errno = ep;
				die_sys("plain write");
			}
			if (nf != IO) {
				c->discarded++;
				c->refused = nf < 0 ? ef : 0;
				continue;
			}
			plain[n] = tp;
			flag[n++] = tf;
		}
		if (n < c->pairs / 2)
			continue;
		qsort(plain, n, sizeof(int64_t), cmp64);
		qsort(flag, n, sizeof(int64_t), cmp64);
		c->plain_us[c->valid] = pct_us(plain, n, 50);
		c->flagged_us[c->valid] = pct_us(flag, n, 50);
		c->ratio[c->valid] = c->flagged_us[c->valid] / c->plain_us[c->valid];
		c->valid++;
	}
	qsort(c->ratio, c->valid, sizeof(double), cmpd);
	qsort(c->plain_us, c->valid, sizeof(double), cmpd);
	qsort(c->flagged_us, c->valid, sizeof(double), cmpd);
	free(plain);
	free(flag);
}

/* Median of a sorted array of doubles; -1 when empty. */
static double median(const double *v, unsigned n)
{
	if (!n)
		return -1;
	return n & 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* The logger's thread: writes what the flagged call left, blocking. */
struct handoff {
	int pipe, fd;
	unsigned errors;
};

static void *handoff_main(void *arg)
{
	struct handoff *h = arg;
	char *rec = xcalloc(1, REC);
	uint32_t len;

	memset(rec, 'l', REC);
	while (read(h->pipe, &len, sizeof(len)) == sizeof(len))
		if (write(h->fd, rec, len) != (ssize_t)len)
			h->errors++;
	free(rec);
	return NULL;
}

/*
 * A logger: one 4 KiB O_APPEND record every 1/rate s (absolute deadlines,
 * no catching up in bursts), each tried with RWF_NOWAIT; what the flagged
 * call did not write goes down a pipe to a thread that writes it blocking.
 */
static void run_log(struct wlog *l, const char *path, void *buf)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND, 0644);
	int64_t period = 1000000000 / l->rate, next, t0;
	struct handoff h = { .fd = open(path, O_WRONLY | O_APPEND) };
	struct pressure p0;
	struct stat st;
	pthread_t th;
	int pfd[2];

	if (fd < 0 || h.fd < 0)
		die_sys("open %s", path);
	if (pipe(pfd))
		die_sys("pipe");
	h.pipe = pfd[0];
	if ((errno = pthread_create(&th, NULL, handoff_main, &h)))
		die_sys("pthread_create");
	phase_alloc(&l->ph, l->records);
	p0 = pressure_now();
	t0 = next = now_ns();
	for (unsigned i = 0; i < l->records; i++, next += period) {
		struct timespec ts = { next / 1000000000, next % 1000000000 };
		uint32_t rest;
		int64_t ns;
		ssize_t done;
		bool slept;
		int err;
		enum cls c;

		while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL))
			;
		l->late += now_ns() - next > period;
		c = flagged_rw(true, fd, buf, REC, -1, &ns, &slept, &err, &done);
		phase_add(&l->ph, c, ns, slept, err);
		if (c == HIT)
			continue;
		rest = REC - (done > 0 ? done : 0);
		if (write(pfd[1], &rest, sizeof(rest)) != sizeof(rest))
			die_sys("pipe write");
		l->handed++;
	}
	close(pfd[1]);
	pthread_join(th, NULL);
	l->seconds = (now_ns() - t0) / 1e9;
	l->p = pressure_since(p0);
	phase_sort(&l->ph);
	l->length_ok = !h.errors && !fstat(fd, &st) &&
		       st.st_size == (off_t)l->records * REC;
	close(pfd[0]);
	close(h.fd);
	close(fd);
}

static void print_wrow(const char *name, const struct phase *p,
		       const struct pressure *pr)
{
	printf("%-10s %6u %7u %6u %6u %6u %6u |", name, phase_calls(p),
	       p->n[HIT], p->n[SHORT], p->n[MISS], p->n[OTHER], p->slept);
	print_us(pct_us(p->ns[HIT], p->n[HIT], 50));
	print_us(pct_us(p->ns[HIT], p->n[HIT], 99));
	print_us(pct_us(p->ns[HIT], p->n[HIT], 100));
	print_us(pct_us(p->ns[MISS], p->n[MISS], 99));
	if (pressure_pct(pr) >= 0)
		printf(" | %5.1f%%", pressure_pct(pr));
	else
		printf(" | %6s", "-");
	printf(" %6.1f\n", pr->bytes / 1048576.0);
	if (p->n[OTHER])
		printf("%-10s other: last was %s\n", "",
		       p->other_errno ? nowait_errname(p->other_errno) :
		       "a 0 return");
}

static void print_wtables(const struct wphase *w, int nw, const struct wcost *c,
			  const struct wlog *l)
{
	printf("\n%-10s %6s %7s %6s %6s %6s %6s | %-26s %8s | %-14s\n", "", "",
	       "", "", "", "", "", "written latency, us", "EAGAIN",
	       "dirtier");
	printf("%-10s %6s %7s %6s %6s %6s %6s | %8s %8s %8s %8s | %6s %6s\n",
	       "phase", "calls", "written", "short", "EAGAIN", "other", "slept",
	       "p50", "p99", "max", "p99 us", "over", "MiB");
	for (int i = 0; i < nw; i++)
		print_wrow(w[i].ph.name, &w[i].ph, &w[i].p);
	print_wrow("log", &l->ph, &l->p);
	printf("written: the flagged call wrote all 16 KiB (log: the 4 KiB record);\n"
	       "over: the 10 ms samples with dirty + writeback at or over the freerun\n"
	       "line of balance_dirty_pages() (-: fewer than %d), MiB: what the\n"
	       "dirtier wrote meanwhile.\n", PRESSURE_MIN_SAMPLES);
	printf("log: %u records at %u/s in %.1f s (%u late), %u handed to the thread,"
	       " %.1f%% inline; file length %s\n", l->records, l->rate, l->seconds,
	       l->late, l->handed,
	       l->records ? 100.0 * l->ph.n[HIT] / l->records : 0,
	       l->length_ok ? "right" : "WRONG");
	printf("\ncost of a flagged 16 KiB overwrite that succeeds, %u rounds of %u pairs:\n",
	       c->rounds, c->pairs);
	if (!c->valid) {
		printf("  no round with enough flagged writes that succeeded (last: %s)\n",
		       c->refused ? nowait_errname(c->refused) : "short");
		return;
	}
	printf("  flagged/plain p50 ratio: median %.3f, min %.3f, max %.3f "
	       "(%u rounds; %u pairs left out); plain p50 %.1f us, flagged %.1f us\n",
	       median(c->ratio, c->valid), c->ratio[0], c->ratio[c->valid - 1],
	       c->valid, c->discarded, median(c->plain_us, c->valid),
	       median(c->flagged_us, c->valid));
}

static void json_wphase(FILE *f, const char *name, const struct phase *p,
			const struct pressure *pr)
{
	fprintf(f, "{\"name\": \"%s\", \"calls\": %u, \"written\": %u, "
		"\"short\": %u, \"eagain\": %u, \"other\": %u, \"other_errno\": ",
		name, phase_calls(p), p->n[HIT], p->n[SHORT], p->n[MISS],
		p->n[OTHER]);
	json_other_errno(f, p);
	fprintf(f, ", \"slept\": %u,\n     ", p->slept);
	json_dist(f, "written_us", p->ns[HIT], p->n[HIT], 99, ", ");
	json_dist(f, "eagain_us", p->ns[MISS], p->n[MISS], 99, ",\n     ");
	json_num(f, "pressure_pct", pressure_pct(pr), 1, ", ");
	fprintf(f, "\"pressure_samples\": %" PRIu64 ", \"pressure_over\": %"
		PRIu64 ", \"dirtier_mib\": %.1f}", pr->samples, pr->over,
		pr->bytes / 1048576.0);
}

static void write_wjson(const char *path, const char *release, const char *dir,
			const char *dirty_dir, unsigned dirty_mib,
			const struct wphase *w, int nw, const struct wcost *c,
			const struct wlog *l)
{
	FILE *f = json_open(path, release, dir);

	fprintf(f, ",\n  \"dirty_dir\": ");
	json_str(f, dirty_dir);
	fprintf(f, ",\n  \"io_bytes\": %d, \"dirty_bytes\": %u, "
		"\"dirty_background_bytes\": %u, \"dirty_max_kib\": %" PRIu64
		",\n  \"phases\": [\n", IO, dirty_mib << 20, dirty_mib << 18,
		(uint64_t)dstats->max_kib);
	for (int i = 0; i < nw; i++) {
		fputs("    ", f);
		json_wphase(f, w[i].ph.name, &w[i].ph, &w[i].p);
		fputs(i + 1 < nw ? ",\n" : "\n", f);
	}
	fprintf(f, "  ],\n  \"log\": {\"rate\": %u, \"record_bytes\": %d, "
		"\"seconds\": %.1f, \"late\": %u, \"handed\": %u, "
		"\"length_ok\": %s, \"inline_pct\": %.1f,\n    \"calls\": ",
		l->rate, REC, l->seconds, l->late, l->handed,
		l->length_ok ? "true" : "false",
		l->records ? 100.0 * l->ph.n[HIT] / l->records : 0);
	json_wphase(f, "log", &l->ph, &l->p);
	fprintf(f, "},\n  \"cost\": {\"rounds\": %u, \"pairs\": %u, "
		"\"valid_rounds\": %u, \"discarded\": %u, \"refused\": ",
		c->rounds, c->pairs, c->valid, c->discarded);
	if (c->valid || !c->discarded)
		fputs("null", f);
	else
		json_str(f, c->refused ? nowait_errname(c->refused) : "short");
	fputs(",\n    ", f);
	json_num(f, "ratio_median", median(c->ratio, c->valid), 3, ", ");
	json_num(f, "ratio_min", c->valid ? c->ratio[0] : -1, 3, ", ");
	json_num(f, "ratio_max", c->valid ? c->ratio[c->valid - 1] : -1, 3,
		 ",\n    ");
	json_us(f, "plain_p50_us", median(c->plain_us, c->valid), ", ");
	json_us(f, "flagged_p50_us", median(c->flagged_us, c->valid), "}\n}\n");
	if (fclose(f))
		die_sys("%s", path);
}

struct wopts {
	const char *dir, *dirty_dir, *json;
	unsigned calls, dirty_mib, rounds, pairs, rate, seconds;
	uint64_t seed;
};

static int write_main(const struct wopts *o, const char *release)
{
	struct wphase w[3] = { { .ph.name = "overwrite" },
			       { .ph.name = "append" },
			       { .ph.name = "extend" } };
	struct wcost c = { .rounds = o->rounds, .pairs = o->pairs };
	struct wlog l = { .rate = o->rate, .records = o->rate * o->seconds,
			  .ph.name = "log" };
	char path[5][4096];
	int fd[4];
	char buf[IO] __attribute__((aligned(PAGE)));

	memset(buf, 'W', sizeof(buf));
	if (mkdir(o->dir, 0755) && errno != EEXIST)
		die_sys("mkdir %s", o->dir);
	if (mkdir(o->dirty_dir, 0755) && errno != EEXIST)
		die_sys("mkdir %s", o->dirty_dir);
	fd[0] = wopen(o->dir, "wstat-overwrite", 0, path[0], sizeof(path[0]));
	fd[1] = wopen(o->dir, "wstat-append", O_APPEND, path[1], sizeof(path[1]));
	fd[2] = wopen(o->dir, "wstat-extend", 0, path[2], sizeof(path[2]));
	fd[3] = wopen(o->dirty_dir, "wstat-dirtier", 0, path[4], sizeof(path[4]));
	snprintf(path[3], sizeof(path[3]), "%s/wstat-log", o->dir);
	/* Written, so cached: every overwrite is of data in memory. */
	wfill(fd[0], WFILE, 'O');
	wfill(fd[3], DIRTY_RING, 'D');
	printf("nowait-blockstat --write on %s: %s, flagged 16 KiB writes, %u per phase, "
	       "vm.dirty_bytes %u MiB, dirtier in %s, seed %" PRIu64 "\n",
	       release, o->dir, o->calls, o->dirty_mib, o->dirty_dir, o->seed);
	fflush(stdout);

	/* The cost first, with the machine's own dirty limits and no dirtier. */
	run_cost(&c, fd[0], o->seed + 5, buf);

	atexit(dirty_restore);
	dirty_limit(o->dirty_mib);
	dirtier_start(fd[3]);
	/* Until the dirty pages first reach the freerun line (at most 10 s). */
	for (int i = 0; i < 1000 && !dstats->over; i++)
		usleep(10000);
	for (int k = 0; k < 3; k++)
		run_wphase(&w[k], fd[k], k, o->calls, o->seed + k, buf);
	run_log(&l, path[3], buf);
	dirty_restore();

	print_wtables(w, 3, &c, &l);
	if (o->json)
		write_wjson(o->json, release, o->dir, o->dirty_dir, o->dirty_mib,
			    w, 3, &c, &l);
	for (int k = 0; k < 4; k++)
		close(fd[k]);
	for (int k = 0; k < 5; k++)
		unlink(path[k]);
	return 0;
}

static _Noreturn void usage(void)
{
	fprintf(stderr, "usage: nowait-blockstat [--dir DIR] [--size MIB] "
		"[--calls N] [--samples K] [--seed S] [--settle SEC] [--netfs]\n"
		"                        [--json FILE]\n"
		"       nowait-blockstat --write [--dir DIR] [--dirty-dir DIR] "
		"[--dirty-mib MIB] [--calls N]\n"
		"                        [--rounds R] [--pairs P] [--log-rate N] "
		"[--log-seconds S] [--seed S] [--json FILE]\n"
		"       nowait-blockstat --hostile LABEL [--dir DIR] [--fill PCT] [--freeze]\n"
		"                        [--stall-fuse FUSEDIR:DAEMON_PID] [--calls N] [--seed S] "
		"[--json FILE]\n");
	exit(2);
}

static unsigned long long number(const char *s, unsigned long long min)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno || end == s || *end || *s == '-' || v < min || v > UINT32_MAX)
		usage();
	return v;
}

/*
 * --hostile: the setups of the v3 review, where v2's flagged calls slept.
 * Flagged 16 KiB reads, overwrites and appends, one of each in turn, on a
 * filesystem that is nearly full (--fill PCT), behind a short device
 * queue (the guest sets nr_requests), frozen (--freeze), or beside a FUSE
 * mount whose daemon is stopped with revalidations queued (--stall-fuse).
 * A flagged call that is refused is retried without the flag, as a server
 * would, but for writes to a frozen filesystem, which would wait for the
 * thaw; the retry is not measured.  The question is only whether a flagged
 * call slept: each counts as slept when the caller switched voluntarily.
 */
enum hkind { H_READ, H_OVERWRITE, H_APPEND, H_KINDS };
static const char *const hkind_name[H_KINDS] = { "read", "overwrite", "append" };

struct hostile {
	const char *label, *dir, *stall;
	unsigned fill, calls;
	bool freeze;
	uint64_t seed;
	unsigned enospc;	/* a blocking append refused: the filesystem is full */
	double used_pct;	/* of the filesystem, before the calls */
	struct phase ph[H_KINDS];
};

static int frozen_fd = -1;
static pid_t stopped_daemon, thaw_watchdog;
static bool thawed_by_watchdog;

static void hostile_undo(void)
{
	int status;

	if (thaw_watchdog > 0) {
		kill(thaw_watchdog, SIGKILL);
		if (waitpid(thaw_watchdog, &status, 0) == thaw_watchdog &&
		    WIFEXITED(status) && WEXITSTATUS(status) == 0)
			thawed_by_watchdog = true;
		thaw_watchdog = 0;
	}
	if (frozen_fd >= 0 && !thawed_by_watchdog && ioctl(frozen_fd, FITHAW, 0))
		perror("nowait-blockstat: FITHAW");
	frozen_fd = -1;
	if (stopped_daemon > 0)
		kill(stopped_daemon, SIGCONT);
	stopped_daemon = 0;
}

static double used_pct(const char *dir)
{
	struct statvfs sv;

	if (statvfs(dir, &sv) || !sv.f_blocks)
		die_sys("statvfs %s", dir);
	return 100.0 * (double)(sv.f_blocks - sv.f_bfree) / (double)sv.f_blocks;
}

/* Fill @dir's filesystem to @pct percent with one file of zeroes. */
static void hostile_fill(const char *dir, unsigned pct)
{
	static char chunk[WCHUNK];
	char path[4096];
	int fd;

	snprintf(path, sizeof(path), "%s/blockstat-filler", dir);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0)
		die_sys("open %s", path);
	while (used_pct(dir) < pct)
		if (write(fd, chunk, sizeof(chunk)) != (ssize_t)sizeof(chunk))
			break;	/* ENOSPC before pct: as full as it gets */
	if (fsync(fd))
		die_sys("fsync %s", path);
	close(fd);
}

/*
 * Stop the FUSE daemon @pid and leave one revalidation per file of @dir's
 * blockstat-stall-N files queued that it will not answer: their attributes
 * expire (the mount's attr_timeout is 1 s), and a flagged read of each then
 * queues its revalidation and fails.
 */
static void hostile_stall(const char *spec, void *buf)
{
	char dir[4096], path[4200];
	const char *colon = strrchr(spec, ':');
	int fds[20];

	if (!colon || colon == spec || (size_t)(colon - spec) >= sizeof(dir))
		usage();
	memcpy(dir, spec, (size_t)(colon - spec));
	dir[colon - spec] = 0;
	for (int k = 0; k < 20; k++) {
		snprintf(path, sizeof(path), "%s/blockstat-stall-%d", dir, k);
		fds[k] = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
		if (fds[k] < 0 || pwrite(fds[k], buf, PAGE, 0) != PAGE ||
		    pread(fds[k], buf, PAGE, 0) != PAGE)
			die_sys("%s", path);
	}
	usleep(1500 * 1000);
	stopped_daemon = (pid_t)number(colon + 1, 1);
	if (kill(stopped_daemon, SIGSTOP))
		die_sys("SIGSTOP %d", (int)stopped_daemon);
	for (int k = 0; k < 20; k++) {
		struct iovec iov = { buf, PAGE };

		preadv2(fds[k], &iov, 1, 0, RWF_NOWAIT);	/* EAGAIN: queued */
	}
	usleep(200 * 1000);
}

static void hostile_call(struct hostile *h, enum hkind k, int fd, int afd,
			 off_t size, void *buf)
{
	off_t off = (off_t)(rnd(&h->seed) % (uint64_t)(size / IO)) * IO;
	bool write = k != H_READ, slept;
	int64_t ns;
	int err;
	ssize_t n;
	enum cls c;

	if (k == H_APPEND) {
		if (h->enospc)
			return;
		fd = afd;
		off = lseek(afd, 0, SEEK_END);
	}
	c = flagged_rw(write, fd, buf, IO, off, &ns, &slept, &err, NULL);
	phase_add(&h->ph[k], c, ns, slept, err);
	if (c == HIT || (write && h->freeze))
		return;
	n = write ? pwrite(fd, buf, IO, off) : pread(fd, buf, IO, off);
	/* Appends stop at a full filesystem; overwrites go on (btrfs: COW). */
	if (k == H_APPEND && n < 0 && errno == ENOSPC)
		h->enospc++;
}

static void hostile_main(struct hostile *h, const char *release, const char *json)
{
	char path[4096], apath[4096];
	char buf[IO] __attribute__((aligned(PAGE)));
	off_t size = (off_t)32 << 20;
	int fd, afd;

	memset(buf, 'h', sizeof(buf));
	atexit(hostile_undo);
	if (mkdir(h->dir, 0755) && errno != EEXIST)
		die_sys("mkdir %s", h->dir);
	snprintf(path, sizeof(path), "%s/blockstat-hostile", h->dir);
	snprintf(apath, sizeof(apath), "%s/blockstat-hostile-append", h->dir);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
	afd = open(apath, O_RDWR | O_CREAT | O_TRUNC, 0644);
	if (fd < 0 || afd < 0)
		die_sys("open %s", path);
	wfill(fd, size, 'h');
	if (fsync(fd))
		die_sys("fsync %s", path);
	if (h->fill)
		hostile_fill(h->dir, h->fill);
	h->used_pct = used_pct(h->dir);
	if (h->stall)
		hostile_stall(h->stall, buf);
	/* Half the reads miss: the file's first half is dropped. */
	posix_fadvise(fd, 0, size / 2, POSIX_FADV_DONTNEED);
	if (h->freeze) {
		frozen_fd = open(h->dir, O_RDONLY | O_DIRECTORY);
		if (frozen_fd < 0 || ioctl(frozen_fd, FIFREEZE, 0))
			die_sys("FIFREEZE %s", h->dir);
		/*
		 * A kernel whose flagged write waits for the thaw (stock:
		 * vfs_writev()'s file_start_write()) then shows it as a call
		 * that slept instead of hanging the phase.
		 */
		thaw_watchdog = nowait_thaw_later(h->dir, 30);
		if (thaw_watchdog < 0)
			die_sys("fork");
	}
	for (int k = 0; k < H_KINDS; k++)
		phase_alloc(&h->ph[k], h->calls);
	for (unsigned i = 0; i < h->calls * H_KINDS; i++)
		hostile_call(h, (enum hkind)(i % H_KINDS), fd, afd, size, buf);
	hostile_undo();
	for (int k = 0; k < H_KINDS; k++)
		phase_sort(&h->ph[k]);

	printf("nowait-blockstat --hostile %s on %s: %s, %.1f%% used%s%s\n", h->label,
	       release, h->dir, h->used_pct, h->enospc ? ", full (ENOSPC)" : "",
	       thawed_by_watchdog ? ", thawed by the 30 s watchdog" : "");
	for (int k = 0; k < H_KINDS; k++) {
		const struct phase *p = &h->ph[k];

		printf("  %-9s %6u calls: %6u done, %6u EAGAIN, %4u other, %4u slept, p99 ",
		       hkind_name[k], phase_calls(p), p->n[HIT] + p->n[SHORT], p->n[MISS],
		       p->n[OTHER], p->slept);
		print_us(pct_us(p->ns[HIT], p->n[HIT], 99));
		putchar('\n');
	}
	if (json) {
		FILE *f = json_open(json, release, h->dir);

		fprintf(f, ",\n  \"hostile\": ");
		json_str(f, h->label);
		fprintf(f, ",\n  \"used_pct\": %.1f, \"enospc\": %u, \"thawed_by_watchdog\": %s,"
			"\n  \"calls\": {", h->used_pct, h->enospc,
			thawed_by_watchdog ? "true" : "false");
		for (int k = 0; k < H_KINDS; k++) {
			const struct phase *p = &h->ph[k];

			fprintf(f, "%s\n    \"%s\": {\"calls\": %u, \"done\": %u, \"eagain\": %u, "
				"\"other\": %u, \"other_errno\": ", k ? "," : "", hkind_name[k],
				phase_calls(p), p->n[HIT] + p->n[SHORT], p->n[MISS], p->n[OTHER]);
			json_other_errno(f, p);
			fprintf(f, ", \"slept\": %u, ", p->slept);
			json_dist(f, "done_us", p->ns[HIT], p->n[HIT], 99, ", ");
			json_dist(f, "eagain_us", p->ns[MISS], p->n[MISS], 99, "}");
		}
		fprintf(f, "\n  }\n}\n");
		fclose(f);
	}
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "dir", required_argument, NULL, 'd' },
		{ "size", required_argument, NULL, 'm' },
		{ "calls", required_argument, NULL, 'n' },
		{ "samples", required_argument, NULL, 'k' },
		{ "seed", required_argument, NULL, 's' },
		{ "settle", required_argument, NULL, 'w' },
		{ "json", required_argument, NULL, 'j' },
		{ "netfs", no_argument, NULL, 'S' },
		{ "write", no_argument, NULL, 'W' },
		{ "dirty-dir", required_argument, NULL, 'D' },
		{ "dirty-mib", required_argument, NULL, 'M' },
		{ "rounds", required_argument, NULL, 'r' },
		{ "pairs", required_argument, NULL, 'p' },
		{ "log-rate", required_argument, NULL, 'R' },
		{ "log-seconds", required_argument, NULL, 'T' },
		{ "hostile", required_argument, NULL, 'H' },
		{ "fill", required_argument, NULL, 'F' },
		{ "freeze", no_argument, NULL, 'Z' },
		{ "stall-fuse", required_argument, NULL, 'U' },
		{ 0 }
	};
	/* --write: 3 phases of 4000, so 12,000 flagged writes per filesystem */
	struct wopts wo = { .dirty_mib = 4, .rounds = 9, .pairs = 400,
			    .rate = 250, .seconds = 16 };
	struct hostile h = { 0 };
	bool write_mode = false, calls_set = false;
	bool netfs = false;
	const char *dir = "/mnt/ext4", *json = NULL;
	unsigned mib = 160, calls = 2000, samples = 50, settle = 20;
	uint64_t seed = 1, ext[2];
	struct phase ph[4] = { { .name = "cold" }, { .name = "replay" },
			       { .name = "cold-again" }, { .name = "warm" } };
	struct retry r = { 0 };
	struct uring u = { 0 };
	struct utsname uts;
	char path[2][4096];
	int fd[2], o;
	off_t size;
	/* Aligned and pre-faulted: a fault on the buffer is a sleep too. */
	char buf[IO] __attribute__((aligned(PAGE)));

	while ((o = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (o) {
		case 'd': dir = optarg; break;
		case 'm': mib = number(optarg, 1); break;
		case 'n': calls = number(optarg, 1); calls_set = true; break;
		case 'k': samples = number(optarg, 1); break;
		case 's': seed = number(optarg, 0); break;
		case 'w': settle = number(optarg, 0); break;
		case 'j': json = optarg; break;
		case 'S': netfs = true; break;
		case 'W': write_mode = true; break;
		case 'D': wo.dirty_dir = optarg; break;
		case 'M': wo.dirty_mib = number(optarg, 1); break;
		case 'r': wo.rounds = number(optarg, 1); break;
		case 'p': wo.pairs = number(optarg, 2); break;
		case 'R': wo.rate = number(optarg, 1); break;
		case 'T': wo.seconds = number(optarg, 1); break;
		case 'H': h.label = optarg; break;
		case 'F': h.fill = number(optarg, 1); break;
		case 'Z': h.freeze = true; break;
		case 'U': h.stall = optarg; break;
		default: usage();
		}
	}
	if (optind != argc || wo.rounds > COST_ROUNDS_MAX ||
	    wo.dirty_mib > 1024 || wo.rate > 1000000)
		usage();
	uname(&uts);
	if (h.label) {
		if (h.fill > 99)
			usage();
		h.dir = dir;
		h.calls = calls_set ? calls : 1000;
		h.seed = seed;
		hostile_main(&h, uts.release, json);
		return 0;
	}
	if (write_mode) {
		wo.dir = dir;
		wo.dirty_dir = wo.dirty_dir ? wo.dirty_dir : dir;
		wo.json = json;
		wo.calls = calls_set ? calls : 4000;
		wo.seed = seed;
		return write_main(&wo, uts.release);
	}
	size = (off_t)mib << 20;
	r.samples = samples;
	memset(buf, 0, sizeof(buf));

	if (mkdir(dir, 0755) && errno != EEXIST)
		die_sys("mkdir %s", dir);
	for (int f = 0; f < 2; f++) {
		snprintf(path[f], sizeof(path[f]), "%s/blockstat-%c", dir, 'A' + f);
		fd[f] = open(path[f], O_RDWR | O_CREAT, 0644);
		if (fd[f] < 0)
			die_sys("open %s", path[f]);
	}
	/* Ask before spending minutes on setup. */
	{
		struct iovec iov = { buf, IO };

		if (preadv2(fd[0], &iov, 1, 0, RWF_NOWAIT) < 0 && errno == EOPNOTSUPP) {
			printf("nowait-blockstat: RWF_NOWAIT reads give EOPNOTSUPP on %s: skipped\n",
			       dir);
			return SKIP;
		}
	}
	setup(fd, size);
	ext[0] = extents(fd[0]);
	ext[1] = extents(fd[1]);
	printf("nowait-blockstat on %s: %s, 2 files x %u MiB (%" PRIu64 " + %"
	       PRIu64 " extents), %u flagged 16 KiB reads per phase, seed %" PRIu64 "\n",
	       uts.release, dir, mib, ext[0], ext[1], calls, seed);

	/*
	 * A network filesystem with a slow server: the client's sleeps are
	 * the question, so only the cold and the warm phase; the others time
	 * the server's disk.
	 */
	if (netfs) {
		ph[1] = ph[3];
		drop_caches();
		run_phase(&ph[0], fd, size, calls, seed, buf);
		for (int f = 0; f < 2; f++)
			for (off_t off = 0; off < size; off += IO)
				plain_read(fd[f], buf, off);
		run_phase(&ph[1], fd, size, calls, seed + 2, buf);
		print_table(ph, 2, NULL, NULL);
		if (json)
			write_json(json, uts.release, dir, mib, seed, ext, ph,
				   2, NULL, NULL);
		return 0;
	}

	/* cold-again has a seed of its own: it is not a replay. */
	drop_caches();
	run_phase(&ph[0], fd, size, calls, seed, buf);
	/*
	 * The same offsets again, once the work the misses handed off had
	 * time to run: its hits are the readahead that was not lost.
	 */
	sleep(settle);
	run_phase(&ph[1], fd, size, calls, seed, buf);
	drop_caches();
	run_phase(&ph[2], fd, size, calls, seed + 1, buf);
	for (int f = 0; f < 2; f++)
		for (off_t off = 0; off < size; off += IO)
			plain_read(fd[f], buf, off);
	run_phase(&ph[3], fd, size, calls, seed + 2, buf);
	run_retry(&r, fd, size, seed + 3, buf);
	drop_caches();
	run_uring(&u, fd, size, calls, seed + 4, buf);

	print_table(ph, 4, &u, &r);
	if (json)
		write_json(json, uts.release, dir, mib, seed, ext, ph, 4, &u,
			   &r);
	return 0;
}
