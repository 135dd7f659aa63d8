// SPDX-License-Identifier: MIT
/*
 * nowait-blockstat: do preadv2(RWF_NOWAIT) misses sleep in the caller, is
 * the readahead they hand off done (the cold phase's offsets replayed
 * --settle seconds later), and how much does a failed flagged read speed up
 * the blocking read that retries it?  And do buffered io_uring reads of cold
 * data sleep inside io_uring_enter(), which should hand them to io-wq?
 * With --netfs, for a network filesystem behind a slow server, it runs the
 * cold and the warm phase only: the others time the server's disk.
 * Runs as root (it writes /proc/sys/vm/drop_caches).  It is a
 * measurement, not a test: it exits 0 whatever the figures are, 77 when the
 * filesystem refuses RWF_NOWAIT, 1 on a setup error.
 *
 * Build: gcc -std=gnu11 -Wall -Wextra -Werror -O2 -static [-m32]
 */
#define _FILE_OFFSET_BITS 64
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
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
#include <sys/uio.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "nowait_ring.h"

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
 * One flagged read.  A voluntary context switch during the call means the
 * caller slept; rusage is read outside the timed window so its cost does
 * not count.
 */
static enum cls flagged(int fd, void *buf, off_t off, int64_t *ns, bool *slept,
			int *err)
{
	struct iovec iov = { buf, IO };
	long cs = nvcsw();
	int64_t t = now_ns();
	ssize_t n = preadv2(fd, &iov, 1, off, RWF_NOWAIT);

	*err = errno;
	*ns = now_ns() - t;
	*slept = nvcsw() > cs;
	if (n == IO)
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

static void run_phase(struct phase *ph, const int fd[2], off_t size,
		      unsigned calls, uint64_t seed, void *buf)
{
	ph->cached = cached_pct(fd, size);
	for (int c = 0; c < 4; c++)
		ph->ns[c] = xcalloc(calls, sizeof(int64_t));
	for (unsigned i = 0; i < calls; i++) {
		int f, err;
		off_t off;
		int64_t ns;
		bool slept;
		enum cls c;

		pick(&seed, fd, size, &f, &off);
		c = flagged(f, buf, off, &ns, &slept, &err);
		ph->ns[c][ph->n[c]++] = ns;
		ph->slept += slept;
		if (c == OTHER)
			ph->other_errno = err;
	}
	for (int c = 0; c < 4; c++)
		qsort(ph->ns[c], ph->n[c], sizeof(int64_t), cmp64);
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
		       p->cached, p->n[HIT] + p->n[SHORT] + p->n[MISS] + p->n[OTHER],
		       p->n[HIT], p->n[SHORT], p->n[MISS], p->n[OTHER], p->slept);
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

static void json_us(FILE *f, const char *key, double us, const char *sep)
{
	if (us < 0)
		fprintf(f, "\"%s\": null%s", key, sep);
	else
		fprintf(f, "\"%s\": %.1f%s", key, us, sep);
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

static void write_json(const char *path, const char *release, const char *dir,
		       unsigned mib, uint64_t seed, const uint64_t ext[2],
		       const struct phase *ph, int nph, const struct uring *u,
		       const struct retry *r)
{
	FILE *f = fopen(path, "w");
	unsigned k = r ? r->samples : 0;

	if (!f)
		die_sys("%s", path);
	fprintf(f, "{\n  \"release\": ");
	json_str(f, release);
	fprintf(f, ",\n  \"dir\": ");
	json_str(f, dir);
	fprintf(f, ",\n  \"size_mib\": %u, \"io_bytes\": %d, \"seed\": %" PRIu64
		", \"extents\": [%" PRIu64 ", %" PRIu64 "],\n  \"phases\": [\n",
		mib, IO, seed, ext[0], ext[1]);
	for (int i = 0; i < nph; i++) {
		const struct phase *p = &ph[i];

		fprintf(f, "    {\"name\": \"%s\", \"cached_pct\": %.1f, "
			"\"calls\": %u, \"hits\": %u, \"short\": %u, "
			"\"eagain\": %u, \"other\": %u, \"slept\": %u,\n     ",
			p->name, p->cached,
			p->n[HIT] + p->n[SHORT] + p->n[MISS] + p->n[OTHER],
			p->n[HIT], p->n[SHORT], p->n[MISS], p->n[OTHER],
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

static _Noreturn void usage(void)
{
	fprintf(stderr, "usage: nowait-blockstat [--dir DIR] [--size MIB] "
		"[--calls N] [--samples K] [--seed S] [--settle SEC] [--netfs]\n"
		"                        [--json FILE]\n");
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
		{ 0 }
	};
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
		case 'n': calls = number(optarg, 1); break;
		case 'k': samples = number(optarg, 1); break;
		case 's': seed = number(optarg, 0); break;
		case 'w': settle = number(optarg, 0); break;
		case 'j': json = optarg; break;
		case 'S': netfs = true; break;
		default: usage();
		}
	}
	if (optind != argc)
		usage();
	size = (off_t)mib << 20;
	r.samples = samples;
	memset(buf, 0, sizeof(buf));
	uname(&uts);

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
